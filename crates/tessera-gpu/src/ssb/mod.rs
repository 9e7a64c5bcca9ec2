//! Star-join queries (the Star Schema Benchmark) on compressed columns, on the GPU.
//!
//! - [`plan`]: a query as data (filters, dimension joins through hash tables, group by,
//!   aggregate); the CPU executor in `tessera-ssb` runs the same plans.
//! - [`codegen`]: a plan's kernels emitted from the operators of `kernels/ssb/ops.cuh`
//!   (load-and-decode a tile of any codec, filter, hash build and probe, aggregate), compiled by
//!   NVRTC once per process and cached.
//! - here: tables uploaded to the device as they are stored (each chunk with the codec auto
//!   chose for it, or plain), the build kernels that fill the join hash tables on the device,
//!   and the probe kernel that decodes the fact table's tiles inside the query and aggregates
//!   into a dense array of (sum, count) per group. The decoded columns never exist in memory.

pub mod codegen;
mod coproc;
pub mod lanes;
pub mod plan;

pub use coproc::CoprocPhases;

use std::collections::HashMap;

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule, CudaSlice, DeviceRepr, PinnedHostSlice};
use tessera_format::{CodecId, Error, LogicalType, Result};

use crate::int::layout::{ChunkDesc, StatusKey, TILE_VALUES};
use crate::int::{chunk_error, chunk_shape, ChunkRef, ChunkShape};
use crate::runtime::buffer::GpuBuffer;
use crate::runtime::{cuda, Gpu, KernelArg};
use plan::{QueryPlan, QueryResult};

/// One chunk of an uploaded column, as the kernels read it (`SsbChunk` in `ops.cuh`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct SsbChunk {
    desc: ChunkDesc,
    codec: u32,
    pad: u32,
}

// SAFETY: plain old data of fixed layout (repr(C), no padding beyond the explicit field).
unsafe impl DeviceRepr for SsbChunk {}

/// A u32 column on the device, chunks as stored.
#[derive(Debug)]
pub struct SsbColumn {
    /// The chunks' payloads, 4-byte aligned (the kernels read them as u32 words): a buffer of
    /// its own when resident, a view of the call's one allocation in coprocessor mode. None when
    /// they were not kept at upload (the column has a resident copy, the handle's programs are
    /// `lanes` ones, and [`Gpu::ssb_set_keep_stored`] is off): only `lanes` programs can read
    /// the column then.
    words: Option<GpuBuffer<u8>>,
    chunks: GpuBuffer<SsbChunk>,
    status: GpuBuffer<u64>,
    shapes: Vec<Option<ChunkShape>>,
    counts: Vec<u32>,
    bytes: u64,
    /// The codec of every chunk when they all have the same (`SsbChunk::codec`).
    uniform: Option<u32>,
    /// Every chunk is FOR and every tile passed the FOR loader's checks when the column became
    /// resident ([`Gpu::ssb_upload_column`]): programs of [`codegen::Loader::Upfront`] may read
    /// its tiles' metadata unchecked (`SSB_FOR_CHECKED` in `ops.cuh`).
    for_checked: bool,
    /// The column's resident copy in the lane layout (every chunk FOR) or the run-start layout
    /// (every chunk RFOR), made at upload when every chunk decodes ([`lanes`]): what programs of
    /// [`codegen::Loader::Lanes`] and [`codegen::Loader::LanesVote`] read instead of the chunks.
    lanes: Option<LaneCopy>,
}

/// A resident copy of a column in the lane or run-start layout: its own words and chunk table
/// (codec [`codegen::FOR_LANES`] or [`codegen::RFOR_STARTS`]); the per-chunk status words are
/// the column's.
#[derive(Debug)]
struct LaneCopy {
    words: GpuBuffer<u32>,
    chunks: GpuBuffer<SsbChunk>,
    bytes: u64,
    /// What the generator is given for the column ([`codegen::lanes_code`] with the bit_width
    /// range of its tiles, or [`codegen::RFOR_STARTS`]).
    code: u32,
}

impl SsbColumn {
    /// Bytes of the stored chunks' payloads (what the column takes on the device as stored;
    /// the chunk table aside), whether or not they were kept ([`Self::stored_kept`]).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// Payload bytes the column holds on the device now: the stored chunks if kept, plus the
    /// resident copy if it has one.
    pub fn device_bytes(&self) -> u64 {
        (if self.stored_kept() { self.bytes } else { 0 }) + self.lane_bytes().unwrap_or(0)
    }
    /// Whether the stored chunks were kept on the device at upload (else only `lanes` programs,
    /// which read the resident copy, can read the column).
    pub fn stored_kept(&self) -> bool {
        self.words.is_some()
    }
    /// Values in the column.
    pub fn values(&self) -> u64 {
        self.counts.iter().map(|&c| c as u64).sum()
    }
    /// Whether every chunk is FOR and every tile passed the loader's checks at upload (the
    /// column's FOR tiles may then be loaded without them). False when the stored chunks were
    /// not kept: nothing was checked, and no loader reads them.
    pub fn for_checked(&self) -> bool {
        self.for_checked
    }
    /// Bytes of the column's lane-layout or run-start copy on the device, if it has one (made at
    /// upload for a column of FOR or of RFOR chunks).
    pub fn lane_bytes(&self) -> Option<u64> {
        self.lanes.as_ref().map(|l| l.bytes)
    }
    /// The codec the generator specializes this column's loads to: with `lanes` (a program of a
    /// loader that reads the copies, [`codegen::Loader::lanes`]) the lane layout's code when the
    /// column has that copy;
    /// [`codegen::FOR_CHECKED`] for a column whose FOR tiles were checked at upload; else the
    /// codec all chunks share.
    fn codegen_codec(&self, lanes: bool) -> Option<u32> {
        if let (true, Some(l)) = (lanes, &self.lanes) {
            return Some(l.code);
        }
        if self.for_checked {
            Some(codegen::FOR_CHECKED)
        } else {
            self.uniform
        }
    }
}

/// Where a column's chunks lie in its word buffer (the same on the host and the device).
#[derive(Debug, Clone)]
struct ColumnLayout {
    table: Vec<SsbChunk>,
    shapes: Vec<Option<ChunkShape>>,
    counts: Vec<u32>,
    words: usize,
}

impl ColumnLayout {
    /// The codec of every chunk when they all have the same: what the generator specializes the
    /// column's loads to (codegen::Codecs).
    fn uniform(&self) -> Option<u32> {
        let first = self.table.first()?.codec;
        self.table.iter().all(|c| c.codec == first).then_some(first)
    }
}

fn column_layout(chunks: &[ChunkRef<'_>]) -> Result<ColumnLayout> {
    let mut words = 0usize;
    let mut table = Vec::with_capacity(chunks.len());
    let mut shapes = Vec::with_capacity(chunks.len());
    for (i, c) in chunks.iter().enumerate() {
        let shape = chunk_shape(LogicalType::U32, c)
            .map_err(|e| e.in_chunk("(ssb column)", i, c.codec.name()))?;
        let codec = match c.codec {
            CodecId::Plain => 0,
            CodecId::For => 1,
            CodecId::Dfor => 2,
            CodecId::Rfor => 3,
            other => {
                return Err(Error::InvalidArgument(format!(
                    "codec {} cannot be queried on the GPU",
                    other.name()
                )))
            }
        };
        // Plain chunks start on a 16-byte boundary (aligned rows for the loads).
        if codec == 0 {
            words = words.next_multiple_of(4);
        }
        table.push(SsbChunk {
            desc: ChunkDesc {
                payload_word: words as u64,
                out_index: 0,
                payload_words: (c.payload.len() / 4) as u32,
                total_count: c.value_count,
                first_tile: 0,
                first_slab: 0,
            },
            codec,
            pad: 0,
        });
        words += c.payload.len() / 4;
        shapes.push(shape);
    }
    Ok(ColumnLayout {
        table,
        shapes,
        counts: chunks.iter().map(|c| c.value_count).collect(),
        words,
    })
}

/// A u32 column in page-locked host memory, laid out as on the device (coprocessor mode).
pub struct SsbHostColumn {
    pinned: PinnedHostSlice<u8>,
    layout: ColumnLayout,
}

impl std::fmt::Debug for SsbHostColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SsbHostColumn")
            .field("bytes", &self.pinned.len())
            .finish_non_exhaustive()
    }
}

impl SsbHostColumn {
    /// Bytes shipped per upload.
    pub fn bytes(&self) -> u64 {
        self.layout.words as u64 * 4
    }
}

fn find_host<'a>(
    cols: &[(String, &'a SsbHostColumn)],
    table: &str,
    name: &str,
) -> Result<&'a SsbHostColumn> {
    cols.iter()
        .find(|(n, _)| n == name)
        .map(|(_, c)| *c)
        .ok_or_else(|| Error::InvalidArgument(format!("no column {table}.{name}")))
}

/// Columns of one table on the device, chunked alike.
#[derive(Debug)]
pub struct SsbTable {
    columns: Vec<(String, SsbColumn)>,
    tiles_per_chunk: u32,
    total_tiles: u32,
    rows: u64,
}

impl SsbTable {
    /// Rows of the table.
    pub fn rows(&self) -> u64 {
        self.rows
    }
    /// (name, device bytes) per column.
    pub fn column_bytes(&self) -> Vec<(String, u64)> {
        self.columns
            .iter()
            .map(|(n, c)| (n.clone(), c.bytes))
            .collect()
    }
    /// (name, device bytes of the lane-layout copy) per column that has one ([`lanes`]).
    pub fn column_lane_bytes(&self) -> Vec<(String, u64)> {
        self.columns
            .iter()
            .filter_map(|(n, c)| Some((n.clone(), c.lane_bytes()?)))
            .collect()
    }
    /// Chunks per column.
    fn chunk_count(&self) -> usize {
        self.columns.first().map_or(0, |(_, c)| c.counts.len())
    }
    /// Tiles of the chunks `range` (every chunk but the last holds `tiles_per_chunk` tiles).
    fn tiles_in(&self, range: std::ops::Range<usize>) -> Result<u32> {
        let n = self.chunk_count();
        if range.start > range.end || range.end > n {
            return Err(Error::InvalidArgument(format!(
                "chunks {range:?} of a table of {n} chunks"
            )));
        }
        let before = |c: usize| -> u64 {
            if c >= n {
                self.total_tiles as u64
            } else {
                c as u64 * self.tiles_per_chunk as u64
            }
        };
        Ok((before(range.end) - before(range.start)) as u32)
    }
    fn column(&self, name: &str) -> Result<&SsbColumn> {
        self.columns
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c)
            .ok_or_else(|| Error::InvalidArgument(format!("no column {name} on the device")))
    }
}

/// A join's hash table on the device.
#[derive(Debug)]
pub struct SsbHashTable {
    slots: GpuBuffer<u64>,
    bits: u32,
}

/// Folder of a PTX cache of generated programs (opt-in, for runs that start many processes on
/// the same queries, such as the tests and benches of one GPU session): each program's PTX is
/// kept under the checksum of its text and arch, so NVRTC compiles it once across processes.
pub const PTX_CACHE_ENV: &str = "TESSERA_SSB_PTX_CACHE";

/// The PTX of a generated program (text from [`codegen::program`]): from the cache folder when [`PTX_CACHE_ENV`] names one and it
/// holds the program, else compiled (and then stored there, written to a temporary name and
/// renamed, so a concurrent reader never sees part of a file).
pub fn program_ptx(source: &str, arch: &str) -> Result<cudarc::nvrtc::Ptx> {
    let dir = std::env::var_os(PTX_CACHE_ENV).map(std::path::PathBuf::from);
    // Keyed by the operators' headers too (kernels/ssb/ssb.cu with every header it includes):
    // a program's text only names them.
    let headers = match dir {
        Some(_) => crate::kernels::source(crate::kernels::Module::Ssb)?,
        None => String::new(),
    };
    let key =
        tessera_format::container::checksum(format!("{arch}\n{headers}\n{source}").as_bytes());
    let path = dir
        .as_ref()
        .map(|d| d.join(format!("{key:016x}-{arch}.ptx")));
    // The file holds the program's text before its PTX, so a checksum collision cannot load
    // another program's kernels.
    if let Some(text) = path.as_ref().and_then(|p| std::fs::read_to_string(p).ok()) {
        if let Some(ptx) = text.strip_prefix(source) {
            if ptx.contains(".entry") {
                return Ok(cudarc::nvrtc::Ptx::from_src(ptx.to_string()));
            }
        }
    }
    let ptx = crate::kernels::compile_generated(codegen::GENERATED_FILE, source, arch)?;
    if let (Some(dir), Some(path)) = (dir, path) {
        let tmp = dir.join(format!("{key:016x}-{arch}.{}.tmp", std::process::id()));
        // A cache that cannot be written costs only the compilation next time.
        if std::fs::create_dir_all(&dir).is_ok()
            && std::fs::write(&tmp, format!("{source}{}", ptx.to_src())).is_ok()
        {
            let _ = std::fs::rename(&tmp, &path);
        }
    }
    Ok(ptx)
}

/// Most thread blocks per SM of the persistent query grid (each loops over tiles).
const BLOCKS_PER_SM: u32 = 16;

/// Loaded generated modules, by source text.
#[derive(Default)]
struct ModuleCache(HashMap<String, Arc<CudaModule>>);

/// How this handle generates query programs (set by [`Gpu::ssb_set_options`]).
struct OptionsState(codegen::Options);

/// Whether uploads keep the stored chunks beside a resident copy ([`Gpu::ssb_set_keep_stored`]).
struct KeepStored(bool);

enum Arg {
    P(u64),
    U(u32),
}

impl Gpu {
    /// Checks a u32 column's chunks (headers as the decoders check them) and copies them to the
    /// device as they are: compressed chunks keep their codec, plain chunks their values.
    pub fn ssb_upload_column(&self, chunks: &[ChunkRef<'_>]) -> Result<SsbColumn> {
        let l = column_layout(chunks)?;
        // The payloads go to the device as they are, each copied straight from its host bytes
        // into its place (no staging copy on the host).
        let mut dev = self.alloc::<u8>(l.words * 4)?;
        for (c, t) in chunks.iter().zip(&l.table) {
            let at = t.desc.payload_word as usize * 4;
            let len = t.desc.payload_words as usize * 4;
            if len > 0 {
                let mut view = dev.slice_mut(at..at + len);
                self.stream
                    .memcpy_htod(&c.payload[..len], &mut view)
                    .map_err(cuda("copying to the device"))?;
            }
        }
        let mut col = self.ssb_column(dev, l)?;
        col.lanes = self.ssb_lane_copy(chunks, &col)?;
        // A handle that runs `lanes` programs reads the copy alone: the stored chunks are
        // freed unless kept on purpose (to run other loaders on the same upload), and then
        // there is nothing for the FOR tiles' check (only `upfront` programs use it).
        if col.lanes.is_some() && self.ssb_options().loader.lanes() && !self.ssb_keep_stored() {
            col.words = None;
        } else {
            col.for_checked = self.ssb_check_for(&col)?;
        }
        Ok(col)
    }

    /// Whether [`Self::ssb_upload_column`] keeps a column's stored chunks on the device beside
    /// its resident copy when the handle's programs are `lanes` ones (off by default: the copy
    /// is all they read). Turn it on before uploading to run other loaders on the same columns
    /// ([`Self::ssb_set_options`]), as the bench and the tests that compare loaders do.
    pub fn ssb_set_keep_stored(&self, keep: bool) -> Result<()> {
        self.with_state::<KeepStored, _>(|s| {
            *s = Some(KeepStored(keep));
            Ok(())
        })
    }

    /// See [`Self::ssb_set_keep_stored`].
    pub fn ssb_keep_stored(&self) -> bool {
        self.with_state::<KeepStored, _>(|s| Ok(s.as_ref().map(|k| k.0)))
            .ok()
            .flatten()
            .unwrap_or(false)
    }

    /// The resident copy of a column of FOR chunks (lane layout) or of RFOR chunks (run-start
    /// layout), [`lanes`]: each chunk decoded on the host (all cores) and laid out again, every
    /// chunk starting on a 128-byte edge. None for other columns, and for a column with a chunk
    /// that does not decode: the queries then read its chunks, whose loaders report the
    /// corruption.
    fn ssb_lane_copy(&self, chunks: &[ChunkRef<'_>], col: &SsbColumn) -> Result<Option<LaneCopy>> {
        use rayon::prelude::*;
        type Encode = fn(&[u32]) -> Result<lanes::LaneChunk>;
        let (codec, chunk_codec, encode): (CodecId, u32, Encode) = match col.uniform {
            Some(1) => (CodecId::For, codegen::FOR_LANES, lanes::encode),
            Some(3) => (CodecId::Rfor, codegen::RFOR_STARTS, lanes::encode_runs),
            _ => return Ok(None),
        };
        if chunks.is_empty() {
            return Ok(None);
        }
        let encoded: Result<Vec<lanes::LaneChunk>> = chunks
            .par_iter()
            .map(|c| {
                let mut v = vec![0u32; c.value_count as usize];
                tessera_codecs::int::decode(codec, c.payload, &mut v)?;
                encode(&v)
            })
            .collect();
        let Ok(encoded) = encoded else {
            return Ok(None);
        };
        let mut table = Vec::with_capacity(encoded.len());
        let mut at = 0usize;
        for (e, c) in encoded.iter().zip(chunks) {
            let Ok(payload_words) = u32::try_from(e.words.len()) else {
                return Ok(None);
            };
            table.push(SsbChunk {
                desc: ChunkDesc {
                    payload_word: at as u64,
                    out_index: 0,
                    payload_words,
                    total_count: c.value_count,
                    first_tile: 0,
                    first_slab: 0,
                },
                codec: chunk_codec,
                pad: 0,
            });
            at = (at + e.words.len()).next_multiple_of(32);
        }
        // Each chunk copied straight from its encoding into its place (no staging copy on the
        // host), as ssb_upload_column places the stored chunks.
        let mut dev = self.alloc::<u32>(at.max(1))?;
        for (e, t) in encoded.iter().zip(&table) {
            let a = t.desc.payload_word as usize;
            if !e.words.is_empty() {
                let mut view = dev.slice_mut(a..a + e.words.len());
                self.stream
                    .memcpy_htod(&e.words, &mut view)
                    .map_err(cuda("copying to the device"))?;
            }
        }
        let widths = encoded
            .iter()
            .filter(|e| !e.words.is_empty())
            .map(|e| e.widths)
            .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
            .unwrap_or((0, 0));
        Ok(Some(LaneCopy {
            words: dev.into(),
            chunks: self.upload(&table)?.into(),
            bytes: encoded.iter().map(|e| e.words.len() as u64 * 4).sum(),
            code: if chunk_codec == codegen::FOR_LANES {
                codegen::lanes_code(widths.0, widths.1)
            } else {
                chunk_codec
            },
        }))
    }

    /// Overwrites word `word` of chunk `chunk` of the column's lane-layout copy with `value`
    /// (for tests of the lane loader's checks: a hostile tile table must be reported, never
    /// read past its chunk). Errors when the column has no copy or the word is not the chunk's.
    #[doc(hidden)]
    pub fn ssb_poke_lane_word(
        &self,
        col: &mut SsbColumn,
        chunk: usize,
        word: usize,
        value: u32,
    ) -> Result<()> {
        let l = col
            .lanes
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("the column has no lane copy".into()))?;
        let mut table = vec![SsbChunk::default(); l.chunks.len()];
        self.download(&l.chunks, &mut table)?;
        let d = table
            .get(chunk)
            .filter(|t| word < t.desc.payload_words as usize)
            .ok_or_else(|| Error::InvalidArgument(format!("no word {word} in chunk {chunk}")))?
            .desc;
        let at = d.payload_word as usize + word;
        let mut view = l.words.slice_mut(at..at + 1);
        self.stream
            .memcpy_htod(&[value], &mut view)
            .map_err(cuda("copying to the device"))?;
        Ok(())
    }

    /// Checks every tile of a column of FOR chunks as the FOR loader does (`ssb_check_for` in
    /// `kernels/ssb/ssb.cu`) and says whether all passed. A column that fails is kept: the
    /// queries load it with the checks, which report the corrupt block as an error, so a
    /// program reads a column's tiles unchecked only when this found every one sound. Other
    /// codecs: false, nothing launched.
    fn ssb_check_for(&self, c: &SsbColumn) -> Result<bool> {
        let Some(words) = c.words.as_ref().filter(|_| c.uniform == Some(1)) else {
            return Ok(false);
        };
        if c.counts.is_empty() {
            return Ok(false);
        }
        let tile = TILE_VALUES as u64;
        // Chunks may differ in size here (the table's chunking is checked later): every chunk
        // gets as many tile indexes as the largest has tiles, and the kernel skips the ones past
        // a chunk's values.
        let per_chunk = c
            .counts
            .iter()
            .map(|&n| (n as u64).div_ceil(tile))
            .max()
            .unwrap_or(0)
            .max(1);
        let total = u32::try_from(per_chunk * c.counts.len() as u64)
            .map_err(|_| Error::InvalidArgument("more than 2^32 tiles".into()))?;
        let per_chunk = per_chunk as u32;
        let n = c.counts.len();
        self.fill_bytes_raw(self.ptr(&c.status), 0xFF, n * 8)?;
        let f = self.function(crate::kernels::Module::Ssb, "ssb_check_for")?;
        let args = [
            Arg::P(self.ptr(words)),
            Arg::P(self.ptr(&c.chunks)),
            Arg::P(self.ptr(&c.status)),
            Arg::U(per_chunk),
            Arg::U(total),
        ];
        self.launch_args(&f, self.grid(total), &args)?;
        let mut keys = vec![0u64; n];
        self.download(&c.status, &mut keys)?;
        // The queries reset the status words before each launch; reset them here too, so no
        // report of this check is ever read as a query's.
        self.fill_bytes_raw(self.ptr(&c.status), 0xFF, n * 8)?;
        Ok(keys.iter().all(|&k| k == u64::MAX))
    }

    fn ssb_column(&self, words: CudaSlice<u8>, l: ColumnLayout) -> Result<SsbColumn> {
        Ok(SsbColumn {
            words: Some(words.into()),
            chunks: self.upload(&l.table)?.into(),
            status: self.alloc::<u64>(l.counts.len().max(1))?.into(),
            uniform: l.uniform(),
            for_checked: false,
            lanes: None,
            shapes: l.shapes,
            bytes: l.words as u64 * 4,
            counts: l.counts,
        })
    }

    /// Checks a u32 column's chunks as [`Self::ssb_upload_column`] does and lays them out in
    /// page-locked host memory exactly as they will lie on the device, so that shipping the
    /// column is one asynchronous DMA copy ([`Self::ssb_upload_pinned`]).
    pub fn ssb_pin_column(&self, chunks: &[ChunkRef<'_>]) -> Result<SsbHostColumn> {
        let l = column_layout(chunks)?;
        // SAFETY: every byte is written below before the buffer is read (zeros, then the
        // payloads). Not write-combined: the host fills it once, the device reads it many times.
        let mut pinned = unsafe {
            self.ctx
                .alloc_pinned_with_flags::<u8>((l.words * 4).max(4), 0)
        }
        .map_err(cuda("allocating pinned host memory"))?;
        {
            let host = pinned
                .as_mut_slice()
                .map_err(cuda("mapping pinned host memory"))?;
            host.fill(0);
            for (c, t) in chunks.iter().zip(&l.table) {
                let at = t.desc.payload_word as usize * 4;
                let len = t.desc.payload_words as usize * 4;
                host[at..at + len].copy_from_slice(&c.payload[..len]);
            }
        }
        Ok(SsbHostColumn { pinned, layout: l })
    }

    /// Ships a pinned column to the device: one asynchronous copy on the query stream (the
    /// queries queued after it wait for it; the host does not).
    pub fn ssb_upload_pinned(&self, h: &SsbHostColumn) -> Result<SsbColumn> {
        let mut dev = self.alloc::<u8>(h.pinned.len())?;
        self.stream
            .memcpy_htod(&h.pinned, &mut dev)
            .map_err(cuda("copying to the device"))?;
        self.ssb_column(dev, h.layout.clone())
    }

    /// Host-to-device copy rate in GB/s of `bytes` bytes from pageable and from page-locked host
    /// memory (median of `runs` copies each, timed from the host around copy and sync).
    pub fn ssb_link_gbps(&self, bytes: usize, runs: usize) -> Result<(f64, f64)> {
        let pageable = vec![1u8; bytes];
        // SAFETY: filled before it is read.
        let mut pinned = unsafe { self.ctx.alloc_pinned_with_flags::<u8>(bytes.max(1), 0) }
            .map_err(cuda("allocating pinned host memory"))?;
        pinned
            .as_mut_slice()
            .map_err(cuda("mapping pinned host memory"))?
            .fill(1);
        let mut dev = self.alloc::<u8>(bytes.max(1))?;
        let mut time = |pinned_src: bool| -> Result<f64> {
            let mut v = Vec::new();
            for _ in 0..runs.max(1) + 1 {
                let t = std::time::Instant::now();
                if pinned_src {
                    self.stream.memcpy_htod(&pinned, &mut dev)
                } else {
                    self.stream.memcpy_htod(&pageable, &mut dev)
                }
                .map_err(cuda("copying to the device"))?;
                self.synchronize()?;
                v.push(t.elapsed().as_secs_f64());
            }
            v.remove(0);
            v.sort_by(f64::total_cmp);
            Ok(bytes as f64 / v[v.len() / 2] / 1e9)
        };
        let pageable_gbps = time(false)?;
        let pinned_gbps = time(true)?;
        Ok((pageable_gbps, pinned_gbps))
    }

    /// Groups uploaded columns into a table: all must be chunked alike, every chunk but the
    /// last holding the same multiple of 512 values (so tile t of every column covers the same
    /// rows).
    pub fn ssb_table(&self, columns: Vec<(String, SsbColumn)>) -> Result<SsbTable> {
        let first = columns
            .first()
            .ok_or_else(|| Error::InvalidArgument("a table needs a column".into()))?;
        let counts = first.1.counts.clone();
        for (n, c) in &columns {
            if c.counts != counts {
                return Err(Error::InvalidArgument(format!(
                    "column {n} is chunked differently from {}",
                    first.0
                )));
            }
        }
        let tile = TILE_VALUES as u32;
        let per_chunk = counts.first().copied().unwrap_or(0);
        if counts.len() > 1
            && (per_chunk % tile != 0
                || per_chunk == 0
                || counts[..counts.len() - 1].iter().any(|&c| c != per_chunk))
        {
            return Err(Error::InvalidArgument(format!(
                "every chunk but the last must hold the same multiple of {tile} values"
            )));
        }
        let tiles_per_chunk = per_chunk.div_ceil(tile).max(1);
        let total: u64 = match counts.split_last() {
            Some((last, rest)) => {
                rest.len() as u64 * tiles_per_chunk as u64 + last.div_ceil(tile) as u64
            }
            None => 0,
        };
        let total_tiles = u32::try_from(total)
            .map_err(|_| Error::InvalidArgument("more than 2^32 tiles".into()))?;
        Ok(SsbTable {
            rows: counts.iter().map(|&c| c as u64).sum(),
            columns,
            tiles_per_chunk,
            total_tiles,
        })
    }

    fn ssb_function(&self, source: &str, name: &str) -> Result<CudaFunction> {
        let cached = self.with_state::<ModuleCache, _>(|c| {
            Ok(c.as_ref().and_then(|c| c.0.get(source).cloned()))
        })?;
        let module = match cached {
            Some(m) => m,
            None => {
                let ptx = program_ptx(source, &self.info.arch)?;
                let m = self
                    .ctx
                    .load_module(ptx)
                    .map_err(cuda("loading a generated kernel module"))?;
                self.with_state::<ModuleCache, _>(|c| {
                    c.get_or_insert_with(ModuleCache::default)
                        .0
                        .insert(source.to_string(), m.clone());
                    Ok(())
                })?;
                m
            }
        };
        module
            .load_function(name)
            .map_err(|e| Error::Gpu(format!("generated kernel {name} missing: {e}")))
    }

    /// Compiles (once per process) and loads the program of `p`, so that timed runs exclude
    /// NVRTC and the driver's JIT. The program for codecs unknown (every load generic); see
    /// [`Self::ssb_prepare_on`] for the one [`Self::ssb_run`] runs on given tables.
    pub fn ssb_prepare(&self, p: &QueryPlan) -> Result<()> {
        let prog = codegen::program(p);
        self.ssb_function(&prog.source, "ssb_probe")?;
        Ok(())
    }

    /// Compiles and loads the program [`Self::ssb_run`] runs for `p` on these tables (its loads
    /// specialized to their columns' codecs).
    pub fn ssb_prepare_on(
        &self,
        p: &QueryPlan,
        fact: &SsbTable,
        dims: &HashMap<String, SsbTable>,
    ) -> Result<()> {
        let prog = self.ssb_program(p, fact, dims);
        self.ssb_function(&prog.source, "ssb_probe")?;
        Ok(())
    }

    /// Sets how this handle generates query programs from now on (the loader, the thread blocks
    /// per SM); by default [`codegen::Options::from_env`]. For measuring alternatives in one
    /// process.
    pub fn ssb_set_options(&self, o: codegen::Options) -> Result<()> {
        self.with_state::<OptionsState, _>(|s| {
            *s = Some(OptionsState(o));
            Ok(())
        })
    }

    /// How this handle generates query programs now.
    pub fn ssb_options(&self) -> codegen::Options {
        self.with_state::<OptionsState, _>(|s| Ok(s.as_ref().map(|o| o.0)))
            .ok()
            .flatten()
            .unwrap_or_else(codegen::Options::from_env)
    }

    /// The program of `p` for these tables: each load specialized to the column's codec where
    /// all its chunks share one.
    fn ssb_program(
        &self,
        p: &QueryPlan,
        fact: &SsbTable,
        dims: &HashMap<String, SsbTable>,
    ) -> codegen::Program {
        let lanes = self.ssb_options().loader.lanes();
        let codecs = |side: codegen::Side<'_>, col: &str| -> Option<u32> {
            let t = match side {
                codegen::Side::Fact => fact,
                codegen::Side::Dim(name) => dims.get(name)?,
            };
            t.column(col).ok()?.codegen_codec(lanes)
        };
        codegen::program_with(p, &codecs, self.ssb_options())
    }

    /// Thread blocks for `tiles` tiles: a warp per tile (ops.cuh), at most the persistent grid.
    fn grid(&self, tiles: u32) -> u32 {
        let warps = crate::int::layout::THREADS / 32;
        tiles
            .div_ceil(warps)
            .clamp(1, self.info.sm_count.max(1) * BLOCKS_PER_SM)
    }

    /// Sets the per-chunk status words of `names` to "no report" before a kernel reads them.
    fn reset_status(&self, t: &SsbTable, names: &[String]) -> Result<()> {
        for n in names {
            let c = t.column(n)?;
            self.fill_bytes_raw(self.ptr(&c.status), 0xFF, c.counts.len().max(1) * 8)?;
        }
        Ok(())
    }

    /// The kernel arguments of columns `names` from chunk `first_chunk` on: the chunk table and
    /// status pointers start at that chunk (the payload offsets in the table are absolute, so
    /// the words pointer stays the column's), so a launch over a chunk range reads only it.
    fn column_args_from(
        &self,
        t: &SsbTable,
        names: &[String],
        first_chunk: usize,
        args: &mut Vec<Arg>,
    ) -> Result<()> {
        let lanes = self.ssb_options().loader.lanes();
        for n in names {
            let c = t.column(n)?;
            if first_chunk > c.counts.len() {
                return Err(Error::InvalidArgument(format!(
                    "chunk {first_chunk} of a column of {} chunks",
                    c.counts.len()
                )));
            }
            // The buffers the program reads: the lane-layout copy for a lanes program (the
            // generator chose its loader from the same option, ssb_program).
            let (words, chunks) = match (&c.lanes, lanes, &c.words) {
                (Some(l), true, _) => (self.ptr(&l.words), &l.chunks),
                (_, _, Some(w)) => (self.ptr(w), &c.chunks),
                (_, _, None) => {
                    return Err(Error::InvalidArgument(format!(
                        "column {n}: its stored chunks were not kept at upload, so only `lanes` \
                         programs can read it (Gpu::ssb_set_keep_stored before uploading keeps them)"
                    )))
                }
            };
            args.push(Arg::P(words));
            args.push(Arg::P(
                self.ptr(chunks) + (first_chunk * std::mem::size_of::<SsbChunk>()) as u64,
            ));
            args.push(Arg::P(self.ptr(&c.status) + (first_chunk * 8) as u64));
        }
        Ok(())
    }

    fn launch_args(&self, f: &CudaFunction, grid: u32, args: &[Arg]) -> Result<()> {
        let refs: Vec<&dyn KernelArg> = args
            .iter()
            .map(|a| match a {
                Arg::P(p) => p as &dyn KernelArg,
                Arg::U(u) => u as &dyn KernelArg,
            })
            .collect();
        // SAFETY: the arguments follow the generated kernel's parameter list (codegen module
        // docs): every pointer is a live device buffer of this handle (columns checked at
        // upload, chunk tables and status of their length, hash tables of 2^bits slots,
        // aggregate arrays of n_groups values), alive until the caller synchronizes.
        unsafe { self.launch(f, grid, crate::int::layout::THREADS, &refs) }
    }

    /// Queues the build of join `index`'s hash table from dimension table `dim`.
    fn enqueue_build(
        &self,
        prog: &codegen::Program,
        p: &QueryPlan,
        index: usize,
        dim: &SsbTable,
        qs: &CudaSlice<u64>,
    ) -> Result<SsbHashTable> {
        let k = prog
            .builds
            .get(index)
            .ok_or_else(|| Error::InvalidArgument(format!("{}: no join {index}", p.name)))?;
        let f = self.ssb_function(&prog.source, &format!("ssb_build_{index}"))?;
        let bits = plan::hash_bits(dim.rows as usize);
        let mut slots = self.alloc::<u64>(1usize << bits)?;
        self.fill_bytes(&mut slots, 0xFF)?;
        self.reset_status(dim, &k.columns)?;
        let table = SsbHashTable {
            slots: slots.into(),
            bits,
        };
        self.launch_build(&f, prog, p, index, dim, &table, self.ptr(qs))?;
        Ok(table)
    }

    /// Launches build kernel `f` of join `index` from `dim` into `table` (its slots already
    /// empty, the columns' status words already reset).
    #[allow(clippy::too_many_arguments)]
    fn launch_build(
        &self,
        f: &CudaFunction,
        prog: &codegen::Program,
        p: &QueryPlan,
        index: usize,
        dim: &SsbTable,
        table: &SsbHashTable,
        qs: u64,
    ) -> Result<()> {
        let (j, k) = p
            .joins
            .get(index)
            .zip(prog.builds.get(index))
            .ok_or_else(|| Error::InvalidArgument(format!("{}: no join {index}", p.name)))?;
        if table.slots.len() < 1usize << table.bits {
            return Err(Error::InvalidArgument(format!(
                "a hash table of {} slots for 2^{} slots",
                table.slots.len(),
                table.bits
            )));
        }
        let mut args = Vec::new();
        self.column_args_from(dim, &k.columns, 0, &mut args)?;
        let (base, card) = j.payload.as_ref().map_or((0, 1), |g| (g.base, g.card));
        args.extend([
            Arg::U(dim.tiles_per_chunk),
            Arg::U(dim.total_tiles),
            Arg::P(self.ptr(&table.slots)),
            Arg::U(table.bits),
            Arg::U(base),
            Arg::U(card),
            Arg::P(qs),
        ]);
        if dim.total_tiles > 0 {
            self.launch_args(f, self.grid(dim.total_tiles), &args)?;
        }
        Ok(())
    }

    /// Queues the probe of `p` over `fact` into `sums` and `counts` (zeroed here).
    #[allow(clippy::too_many_arguments)]
    fn enqueue_probe(
        &self,
        prog: &codegen::Program,
        p: &QueryPlan,
        fact: &SsbTable,
        tables: &[SsbHashTable],
        sums: &mut CudaSlice<u64>,
        counts: &mut CudaSlice<u64>,
        qs: &CudaSlice<u64>,
    ) -> Result<()> {
        self.fill_bytes(sums, 0)?;
        self.fill_bytes(counts, 0)?;
        self.reset_status(fact, &prog.probe.columns)?;
        let chunks = fact.chunk_count();
        let f = self.ssb_function(&prog.source, "ssb_probe")?;
        let out = [self.ptr(sums), self.ptr(counts), self.ptr(qs)];
        self.launch_probe(&f, prog, p, fact, tables, 0..chunks, out)
    }

    /// Launches probe kernel `f` of `p` over the chunks `range` of `fact`, adding into the
    /// aggregate `[sums, counts, query status]` (device addresses of `p.groups()` sums and
    /// counts, not zeroed: the ranges of one query add up, and the status word).
    #[allow(clippy::too_many_arguments)]
    fn launch_probe(
        &self,
        f: &CudaFunction,
        prog: &codegen::Program,
        p: &QueryPlan,
        fact: &SsbTable,
        tables: &[SsbHashTable],
        range: std::ops::Range<usize>,
        [sums, counts, qs]: [u64; 3],
    ) -> Result<()> {
        if tables.len() != p.joins.len() {
            return Err(Error::InvalidArgument(format!(
                "{} hash tables for {} joins",
                tables.len(),
                p.joins.len()
            )));
        }
        let tiles = fact.tiles_in(range.clone())?;
        let mut args = Vec::new();
        self.column_args_from(fact, &prog.probe.columns, range.start, &mut args)?;
        for t in tables {
            args.push(Arg::P(self.ptr(&t.slots)));
            args.push(Arg::U(t.bits));
        }
        args.extend([
            Arg::U(fact.tiles_per_chunk),
            Arg::U(tiles),
            Arg::P(sums),
            Arg::P(counts),
            Arg::U(p.groups() as u32),
            Arg::P(qs),
        ]);
        if tiles > 0 {
            self.launch_args(f, self.grid(tiles), &args)?;
        }
        Ok(())
    }

    /// Builds every join's hash table from `dims` (by table name) on the device and runs `p`
    /// over `fact`: all kernels queued back to back, then the statuses checked and the groups
    /// read back.
    pub fn ssb_run(
        &self,
        p: &QueryPlan,
        fact: &SsbTable,
        dims: &HashMap<String, SsbTable>,
    ) -> Result<QueryResult> {
        Ok(self.ssb_run_timed(p, fact, dims)?.0)
    }

    /// [`Self::ssb_run`], with the GPU time (ms, CUDA events) from the first build to the end
    /// of the probe: the query's kernels and their buffers' fills, not the checks and the read
    /// back.
    pub fn ssb_run_timed(
        &self,
        p: &QueryPlan,
        fact: &SsbTable,
        dims: &HashMap<String, SsbTable>,
    ) -> Result<(QueryResult, f32)> {
        p.check()?;
        let prog = self.ssb_program(p, fact, dims);
        let groups = p.groups() as usize;
        let mut sums = self.alloc::<u64>(groups)?;
        let mut counts = self.alloc::<u64>(groups)?;
        let mut qs = self.alloc::<u64>(1)?;
        self.fill_bytes(&mut qs, 0xFF)?;
        let mut dim_tables = Vec::with_capacity(p.joins.len());
        for j in &p.joins {
            dim_tables.push(dims.get(&j.table).ok_or_else(|| {
                Error::InvalidArgument(format!("no table {} on the device", j.table))
            })?);
        }
        let (tables, ms) = self.timed(|| {
            let mut tables = Vec::with_capacity(p.joins.len());
            for (i, d) in dim_tables.iter().enumerate() {
                tables.push(self.enqueue_build(&prog, p, i, d, &qs)?);
            }
            self.enqueue_probe(&prog, p, fact, &tables, &mut sums, &mut counts, &qs)?;
            Ok(tables)
        })?;
        drop(tables);
        for (d, k) in dim_tables.iter().zip(&prog.builds) {
            self.check_columns(d, &k.columns)?;
        }
        self.check_columns(fact, &prog.probe.columns)?;
        self.check_query_status(&qs, &p.name)?;
        Ok((self.read_groups(&sums, &counts)?, ms))
    }

    /// The groups a query reached, from its dense arrays: compacted on the device
    /// (`ssb_compact_groups`), so that only the reached groups cross the link, then sorted by
    /// group index.
    fn read_groups(&self, sums: &CudaSlice<u64>, counts: &CudaSlice<u64>) -> Result<QueryResult> {
        let groups = sums.len().min(counts.len());
        let n_groups = u32::try_from(groups)
            .map_err(|_| Error::InvalidArgument(format!("{groups} groups: more than 2^32")))?;
        let out = self.alloc::<u64>(3 * groups)?;
        let mut n = self.alloc::<u32>(1)?;
        self.fill_bytes(&mut n, 0)?;
        // SAFETY: `sums` and `counts` hold `n_groups` values, `out` 3 * `n_groups` and `n`
        // one, all live until the download below has waited.
        unsafe {
            self.launch_compact(
                [self.ptr(sums), self.ptr(counts)],
                n_groups,
                self.ptr(&out),
                self.ptr(&n),
            )
        }?;
        let mut reached = [0u32];
        self.download(&n, &mut reached)?;
        let reached = reached[0] as usize;
        if reached > groups {
            return Err(Error::Gpu(format!(
                "{reached} groups reached of {groups}: the compaction overran"
            )));
        }
        let mut triples = vec![0u64; 3 * reached];
        self.download(&out, &mut triples)?;
        Ok(groups_from(&triples))
    }

    /// Queues the compaction of the dense aggregate `[sums, counts]` (device addresses of
    /// `n_groups` values each) into `(group, sum, count)` triples at `out`, their number at the
    /// u32 at `n` (zeroed by the caller).
    ///
    /// # Safety
    /// `out` must address `3 * n_groups` live u64 values and the buffers must outlive the
    /// kernel; the kernel writes a triple only below `n_groups`.
    unsafe fn launch_compact(
        &self,
        [sums, counts]: [u64; 2],
        n_groups: u32,
        out: u64,
        n: u64,
    ) -> Result<()> {
        let f = self.function(crate::kernels::Module::Ssb, "ssb_compact_groups")?;
        let grid = n_groups
            .div_ceil(256)
            .clamp(1, self.info.sm_count.max(1) * 8);
        // SAFETY: forwarded (the caller's contract).
        unsafe {
            self.launch(
                &f,
                grid,
                256,
                &[
                    &sums as &dyn KernelArg,
                    &counts,
                    &n_groups,
                    &out,
                    &n_groups,
                    &n,
                ],
            )
        }
    }

    /// The loaders' per-chunk reports of the columns a kernel read, as the decoders' errors.
    fn check_columns(&self, t: &SsbTable, names: &[String]) -> Result<()> {
        for n in names {
            let c = t.column(n)?;
            let mut keys = vec![0u64; c.counts.len()];
            self.download(&c.status, &mut keys)?;
            column_status(n, c, &keys)?;
        }
        Ok(())
    }

    fn check_query_status(&self, qs: &CudaSlice<u64>, what: &str) -> Result<()> {
        let mut k = [0u64];
        self.download(qs, &mut k)?;
        query_status(k[0], what)
    }
}

/// Column `name`'s per-chunk status words `keys` (as its loaders left them) as the decoders'
/// errors: the first chunk that reported one.
fn column_status(name: &str, c: &SsbColumn, keys: &[u64]) -> Result<()> {
    for (i, (&k, shape)) in keys.iter().zip(&c.shapes).enumerate() {
        if let Some(shape) = shape {
            if let Some(e) = chunk_error(LogicalType::U32, shape, StatusKey::decode(k), None) {
                return Err(e.in_chunk(name, i, shape.codec.name()));
            }
        }
    }
    Ok(())
}

/// A query's status word (`u64::MAX`: nothing to report) as an error naming `what`.
fn query_status(k: u64, what: &str) -> Result<()> {
    if k == u64::MAX {
        return Ok(());
    }
    let (code, detail) = (k >> 32, k as u32);
    let why = match code {
        1 => format!("dimension key {detail} appears twice"),
        2 => format!("group key value {detail} outside its domain"),
        3 => format!("hash table full inserting key {detail}"),
        4 => format!("group index {detail} past the aggregate"),
        5 => "dimension key 2^32 - 1 is reserved".to_string(),
        6 => format!("unknown chunk codec {detail}"),
        7 => format!("a chunk of codec {detail} where the program was generated for another codec"),
        8 => format!(
            "chunk {detail}'s resident copy is corrupt (lane layout or run-start layout: a tile's bit_width, flags or bits past the chunk)"
        ),
        _ => format!("status {k:#x}"),
    };
    Err(Error::InvalidArgument(format!("{what}: {why}")))
}

/// The groups of `reached` (group, sum, count) triples the compaction wrote, sorted by group.
fn groups_from(triples: &[u64]) -> QueryResult {
    let mut g: Vec<(u64, i64, u64)> = triples
        .chunks_exact(3)
        .map(|t| (t[0], t[1] as i64, t[2]))
        .collect();
    g.sort_unstable_by_key(|t| t.0);
    QueryResult { groups: g }
}
