//! An ORC file's streams decoded on the GPU with the batched CODAG decoders of
//! `tessera_gpu::codag` (one warp per chunk), `docs/gpu/orc.md`. The file's bytes go to the
//! device once; every launch after that reads slices of device buffers
//! ([`codag::DeviceTable`]):
//!
//! 1. **upload**: the whole file, one copy;
//! 2. **inflate**: every ZLIB compression chunk of every selected stream, one Deflate launch
//!    reading the uploaded file, each chunk writing a slot of the block size in one device
//!    buffer, so a stream whose chunks all inflate to the block size (what ORC writers do for
//!    all but a stream's last chunk) lies contiguous there; chunks stored as they are
//!    (`isOriginal`) are device-to-device copies into their slots; a stream with a short chunk
//!    in the middle is compacted by device copies. SNAPPY, LZ4 and ZSTD chunks are
//!    decompressed on the CPU in parallel and uploaded;
//! 3. **walk**: the host cuts every RLE stream into pieces of about [`TARGET_VALUES`] values at
//!    run boundaries (`split`: run headers read, payloads skipped, nothing decoded), so a
//!    stripe's stream becomes hundreds of warp chunks with known output offsets. The host
//!    needs the stream's bytes for that: an uncompressed file's bytes are at hand; inflated
//!    streams are copied back from the device (PRESENT and RLE value streams only);
//! 4. **present**: every PRESENT stream's pieces, one byte-RLE launch; its output comes back
//!    (one bit a row) for each column's non-null count, which the value streams' counts are;
//! 5. **rle**: every boolean/tinyint stream's pieces (byte RLE) and every integer-like stream's
//!    pieces (DATA of integers, dates and timestamps, SECONDARY of timestamps and decimals,
//!    LENGTH of strings and binaries and dictionaries, dictionary ids): one launch per decoder,
//!    each stream's values contiguous in that decoder's output buffer.
//!
//! After step 5 every stream is decoded and resident on the GPU ([`GpuReport::
//! seconds_to_resident`]). For Arrow batches on the host, the decoded values and the streams
//! no decoder touched (float and double values, string bytes, dictionaries) are copied to the
//! host, where nulls are scattered, dictionary entries gathered and timestamps combined into
//! Arrow arrays by the same code as the CPU path (`cpu.rs`), so both paths give the same arrays
//! and errors. [`read_device`] instead builds Arrow's layout on the device
//! (`tessera_gpu::orc_layout`: validity, null scatter, narrowing, timestamps, booleans,
//! strings) and leaves one [`GpuArrowArray`] per column there. A chunk the GPU flags is re-decoded by the CPU reference for its exact error
//! (`codag::cpu_error`), reported with its stripe, column and stream.

use std::collections::HashMap;
use std::ops::Range;
use std::time::Instant;

use arrow_array::RecordBatch;
use rayon::prelude::*;
use tessera::arrow::GpuArrowArray;
use tessera_gpu::codag::{self, Chunk, ChunkDesc, Decoder, DeviceTable};
use tessera_gpu::orc_layout::{self, ColumnStripe, Scatter};
use tessera_gpu::{CudaSlice, Gpu, PinnedBuffer};

use crate::compress::{self, Compression};
use crate::cpu::{stream_err, Predecoded, MAX_VALUES_PER_BYTE};
use crate::error::{OrcError, Result};
use crate::file::{OrcType, StripeLayout};
use crate::proto::{encoding_kind, stream_kind};
use crate::schema::arrow_type;
use crate::split::{split, RleKind};
use crate::OrcReader;

/// Values per integer piece: enough pieces per stream to fill the GPU (a stripe of ~3 M rows
/// gives ~170 pieces per stream), each long enough that a warp's setup is a small part of it.
pub const TARGET_VALUES: usize = 16 * 1024;
/// Output bytes per byte-RLE piece (booleans: 8 a byte).
pub const TARGET_BYTES: usize = 8 * 1024;
/// Zero bytes after every uploaded buffer: the last chunk's last word.
const PAD: usize = 16;

/// What the GPU produced for one column of one stripe.
#[derive(Debug, Default)]
pub(crate) struct ColumnDecoded {
    /// Streams decompressed (by the GPU's Deflate or the CPU's Snappy/LZ4/ZSTD), by kind; the
    /// streams in `pre` are here as empty placeholders (their values are in `pre`).
    pub inflated: HashMap<i32, Vec<u8>>,
    /// Streams decoded by the GPU's RLE decoders.
    pub pre: Predecoded,
}

/// Seconds of each phase of one [`read_batches`] (wall clock on the host, each phase waited
/// for before the next).
#[derive(Debug, Default, Clone, Copy)]
pub struct Phases {
    /// Stripe footers parsed, the file's bytes copied to the device.
    pub upload: f64,
    /// Compression chunks inflated on the device (or decompressed on the CPU and uploaded).
    pub inflate: f64,
    /// PRESENT and value streams copied to the host (inflated files only) and walked.
    pub walk: f64,
    /// PRESENT streams decoded, their bits copied back and counted.
    pub present: f64,
    /// Byte-RLE, RLE v1 and RLE v2 launches, their statuses checked.
    pub rle: f64,
    /// Decoded values and untouched streams copied to the host.
    pub download: f64,
    /// Arrow arrays built on the host (nulls, dictionaries, timestamps).
    pub assemble: f64,
    /// Arrow arrays built on the device ([`read_device`]; the download and assemble phases
    /// are then 0).
    pub to_arrow: f64,
}

impl Phases {
    /// `(name, seconds)` of every phase, in order.
    pub fn pairs(&self) -> [(&'static str, f64); 8] {
        [
            ("upload", self.upload),
            ("inflate", self.inflate),
            ("walk", self.walk),
            ("present", self.present),
            ("rle", self.rle),
            ("download", self.download),
            ("assemble", self.assemble),
            ("to_arrow", self.to_arrow),
        ]
    }
}

/// What one [`read_batches`] did.
#[derive(Debug, Default, Clone)]
pub struct GpuReport {
    /// Chunks of the one Deflate launch.
    pub deflate_chunks: usize,
    /// Compression chunks stored as they are (copied on the device).
    pub original_chunks: usize,
    /// Streams with a short compression chunk before their last, compacted on the device.
    pub compacted_streams: usize,
    /// Pieces of PRESENT streams (the first byte-RLE launch).
    pub present_chunks: usize,
    /// Pieces of boolean and tinyint DATA streams (second byte-RLE launch).
    pub byte_rle_chunks: usize,
    /// Pieces of RLE v1 streams.
    pub rle_v1_chunks: usize,
    /// Pieces of RLE v2 streams.
    pub rle_v2_chunks: usize,
    /// Streams cut into pieces (PRESENT and value streams).
    pub rle_streams: usize,
    /// Bytes copied to the device (the file, plus CPU-decompressed streams).
    pub uploaded_bytes: usize,
    /// Bytes of inflated streams copied back to the host for the walk.
    pub walk_download_bytes: usize,
    /// Bytes of decoded stream data the RLE launches left on the GPU.
    pub resident_bytes: usize,
    /// Bytes copied to the host for the Arrow batches.
    pub arrow_download_bytes: usize,
    /// Seconds of each phase.
    pub phases: Phases,
    /// Seconds from the file's bytes in host memory to every stream decoded on the GPU.
    pub seconds_to_resident: f64,
    /// Seconds to the Arrow batches on the host, or ([`read_device`]) to the Arrow arrays on
    /// the device.
    pub seconds_total: f64,
}

const STREAMS: [(i32, &str); 5] = [
    (stream_kind::PRESENT, "PRESENT"),
    (stream_kind::DATA, "DATA"),
    (stream_kind::LENGTH, "LENGTH"),
    (stream_kind::SECONDARY, "SECONDARY"),
    (stream_kind::DICTIONARY_DATA, "DICTIONARY_DATA"),
];

fn stream_name(kind: i32) -> &'static str {
    STREAMS
        .iter()
        .find(|s| s.0 == kind)
        .map(|s| s.1)
        .unwrap_or("?")
}

/// Where a stream came from: stripe, selected column, stream kind.
type Tag = (usize, usize, i32);

/// Device buffers the launches read.
const FILE: usize = 0;
const INFLATED: usize = 1;
const EXTRA: usize = 2;

/// A compressed stream's slots in the inflated buffer: its first slot's byte, and per chunk its
/// slot and its Deflate chunk (`None`: stored as it is).
type StreamSlots = (Tag, usize, Vec<(usize, Option<usize>)>);

/// Where a stream's (decompressed) bytes lie on the device.
#[derive(Debug, Clone, Copy)]
struct Loc {
    buf: usize,
    start: usize,
    len: usize,
}

/// One chunk of a launch: its row, the stream it belongs to, its bytes on the host.
struct Planned {
    desc: ChunkDesc,
    tag: Tag,
    /// Index into the host copies of the streams (for the CPU's verdict on a flagged chunk).
    host: usize,
    bytes: Range<usize>,
}

/// A stream to decode: where it is on the device and on the host (`hosts[host]` from byte
/// `host_off`), its output elements, signed, which decoder.
struct Job {
    tag: Tag,
    loc: Loc,
    host: usize,
    host_off: usize,
    count: usize,
    signed: bool,
    decoder: Decoder,
}

/// How [`read_batches_with`] cuts streams.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Values per integer piece (at least; a piece ends at the first run boundary after them).
    pub target_values: usize,
    /// Output bytes per byte-RLE piece.
    pub target_bytes: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            target_values: TARGET_VALUES,
            target_bytes: TARGET_BYTES,
        }
    }
}

struct Ctx<'r, 'f> {
    gpu: &'r Gpu,
    reader: &'r OrcReader<'f>,
    opts: Options,
}

impl Ctx<'_, '_> {
    fn place(&self, t: Tag, e: OrcError) -> OrcError {
        let col = &self.reader.file.columns()[self.reader.cols[t.1]];
        stream_err(t.0, col, stream_name(t.2), e)
    }

    fn count_err(&self, t: Tag, n: usize, bytes: usize) -> OrcError {
        self.place(
            t,
            OrcError::malformed(
                "stream",
                format!("{n} values announced, {bytes} bytes cannot hold them"),
            ),
        )
    }

    /// Decodes every planned chunk (one launch per input buffer) into `out`; checks every
    /// chunk's status (and, for the ORC decoders, that it made exactly its value count);
    /// returns each chunk's output length.
    fn launch(
        &self,
        decoder: Decoder,
        plan: &[Planned],
        bufs: &[Option<CudaSlice<u8>>],
        hosts: &[&[u8]],
        out: &mut CudaSlice<u8>,
    ) -> Result<Vec<usize>> {
        let mut lens = vec![0usize; plan.len()];
        let mut tables = Vec::new();
        for (b, buf) in bufs.iter().enumerate() {
            let idx: Vec<usize> = (0..plan.len())
                .filter(|&i| (plan[i].desc.reserved as usize) == b)
                .collect();
            if idx.is_empty() {
                continue;
            }
            let Some(buf) = buf else {
                return Err(OrcError::Codec(tessera_format::Error::Gpu(
                    "a chunk reads a device buffer that was not made".into(),
                )));
            };
            let descs: Vec<ChunkDesc> = idx
                .iter()
                .map(|&i| ChunkDesc {
                    reserved: 0,
                    ..plan[i].desc
                })
                .collect();
            let t = DeviceTable::new(self.gpu, decoder, buf.len(), &descs)?;
            t.enqueue(self.gpu, buf, out)?;
            tables.push((idx, t));
        }
        for (idx, t) in &tables {
            let res = t.results(self.gpu)?;
            for (r, &i) in res.iter().zip(idx) {
                let p = &plan[i];
                let chunk = Chunk {
                    input: &hosts[p.host][p.bytes.clone()],
                    out_cap: p.desc.out_cap as usize,
                    signed: p.desc.param & 1 == 1,
                };
                if r.status != 0 {
                    let e = codag::cpu_error(decoder, &chunk, i, r.status);
                    return Err(self.place(p.tag, OrcError::Codec(e)));
                }
                if decoder != Decoder::Deflate && r.out_len != chunk.out_cap {
                    let e = tessera_format::Error::CountMismatch {
                        what: "values the GPU decoded",
                        expected: chunk.out_cap as u64,
                        found: r.out_len as u64,
                    };
                    return Err(self.place(p.tag, OrcError::Codec(e)));
                }
                lens[i] = r.out_len;
            }
        }
        Ok(lens)
    }
}

/// Cuts a job's stream into pieces; each piece's output goes to `out_base` + the values before
/// it. `reserved` of each row names the input buffer until [`Ctx::launch`] clears it.
fn plan_job(ctx: &Ctx<'_, '_>, job: &Job, host: &[u8], out_base: usize) -> Result<Vec<Planned>> {
    let (kind, target) = match job.decoder {
        Decoder::OrcByteRle => (RleKind::Byte, ctx.opts.target_bytes),
        Decoder::OrcRleV1 => (RleKind::V1, ctx.opts.target_values),
        _ => (RleKind::V2, ctx.opts.target_values),
    };
    let host = &host[job.host_off..job.host_off + job.loc.len];
    let pieces =
        split(kind, host, job.count, target).map_err(|e| ctx.place(job.tag, OrcError::Codec(e)))?;
    let mut at = out_base;
    let mut plan = Vec::with_capacity(pieces.len());
    for p in pieces {
        plan.push(Planned {
            desc: ChunkDesc {
                in_start: (job.loc.start + p.bytes.start) as u64,
                out_start: at as u64,
                in_len: u32::try_from(p.bytes.len()).map_err(|_| {
                    ctx.place(job.tag, OrcError::malformed("stream", "piece over 4 GiB"))
                })?,
                out_cap: u32::try_from(p.values).map_err(|_| {
                    ctx.place(
                        job.tag,
                        OrcError::malformed("stream", "piece over 2^32 values"),
                    )
                })?,
                param: job.signed as u32,
                reserved: job.loc.buf as u32,
            },
            tag: job.tag,
            host: job.host,
            bytes: job.host_off + p.bytes.start..job.host_off + p.bytes.end,
        });
        at += p.values;
    }
    Ok(plan)
}

fn elapsed(t: &mut Instant) -> f64 {
    let s = t.elapsed().as_secs_f64();
    *t = Instant::now();
    s
}

/// Reads the reader's columns with every stream decoded on the GPU: one batch per stripe.
pub fn read_batches(gpu: &Gpu, reader: &OrcReader<'_>) -> Result<(Vec<RecordBatch>, GpuReport)> {
    read_batches_with(gpu, reader, Options::default())
}

/// Every stream of the reader's columns decoded and resident on the GPU (steps 1-5 of the
/// module's list), what the Arrow builders on the host ([`read_batches_with`]) and on the
/// device ([`read_device`]) start from.
struct Resident {
    t0: Instant,
    tp: Instant,
    layouts: Vec<StripeLayout>,
    streams: Vec<(Tag, Range<usize>)>,
    bufs: Vec<Option<CudaSlice<u8>>>,
    locs: HashMap<Tag, Loc>,
    cpu_inflated: Vec<Vec<u8>>,
    cpu_of: HashMap<Tag, usize>,
    present_jobs: Vec<Job>,
    present_bases: Vec<usize>,
    present_out: CudaSlice<u8>,
    present_bits: Vec<u8>,
    nonnull: Vec<Vec<usize>>,
    jobs: Vec<Job>,
    /// Per decoder of [`DECODERS`]: its jobs (indices into `jobs`), their first output
    /// elements, the output buffer.
    outs: Vec<(Vec<usize>, Vec<usize>, CudaSlice<u8>)>,
    rep: GpuReport,
}

/// The decoders of the value streams' launches, in launch order.
const DECODERS: [Decoder; 3] = [Decoder::OrcByteRle, Decoder::OrcRleV1, Decoder::OrcRleV2];

/// [`read_batches`] with streams cut as `opts` says.
pub fn read_batches_with(
    gpu: &Gpu,
    reader: &OrcReader<'_>,
    opts: Options,
) -> Result<(Vec<RecordBatch>, GpuReport)> {
    let r = resident(gpu, reader, opts, None)?;
    to_host(gpu, reader, r)
}

/// `staged`: the file's bytes already in pinned host memory (uploaded from there at the link's
/// full speed) instead of the file's own pageable bytes.
fn resident(
    gpu: &Gpu,
    reader: &OrcReader<'_>,
    opts: Options,
    staged: Option<&PinnedBuffer>,
) -> Result<Resident> {
    let t0 = Instant::now();
    let mut tp = t0;
    let ctx = Ctx { gpu, reader, opts };
    let file = reader.file;
    let bytes = file.bytes();
    let bs = file.block_size();
    let ns = file.stripes().len();
    let nc = reader.cols.len();
    let layouts: Vec<StripeLayout> = (0..ns)
        .into_par_iter()
        .map(|s| file.stripe_layout(s))
        .collect::<Result<_>>()?;
    let mut rep = GpuReport::default();

    // Every selected stream, in file order.
    let mut streams: Vec<(Tag, Range<usize>)> = Vec::new();
    for (s, l) in layouts.iter().enumerate() {
        for (k, &ci) in reader.cols.iter().enumerate() {
            let id = file.columns()[ci].id;
            for (kind, _) in STREAMS {
                if let Some(r) = l.streams.get(&(id, kind)) {
                    streams.push(((s, k, kind), r.clone()));
                }
            }
        }
    }

    // 1. The file on the device.
    let mut bufs: Vec<Option<CudaSlice<u8>>> = vec![None, None, None];
    bufs[FILE] = Some(match staged {
        None => codag::upload_padded(gpu, bytes, PAD)?,
        Some(h) => {
            if h.len() < bytes.len() {
                return Err(OrcError::Codec(tessera_format::Error::InvalidArgument(
                    "the pinned staging buffer is shorter than the file".into(),
                )));
            }
            let mut d = gpu.alloc::<u8>(bytes.len() + PAD)?;
            gpu.fill_bytes(&mut d, 0)?;
            gpu.enqueue_upload(h, bytes.len(), &mut d)?;
            d
        }
    });
    rep.uploaded_bytes = bytes.len();
    rep.phases.upload = elapsed(&mut tp);

    // 2. Decompression: each stream's bytes on the device (`locs`) and, where the host has
    // them without a copy back, on the host (`host_of`: index into `hosts`).
    let mut locs: HashMap<Tag, Loc> = HashMap::new();
    let mut cpu_inflated: Vec<Vec<u8>> = Vec::new();
    let mut cpu_of: HashMap<Tag, usize> = HashMap::new();
    match file.compression() {
        Compression::None => {
            for (t, r) in &streams {
                locs.insert(
                    *t,
                    Loc {
                        buf: FILE,
                        start: r.start,
                        len: r.len(),
                    },
                );
            }
        }
        Compression::Zlib => {
            let mut plan = Vec::new();
            let mut copies = Vec::new(); // (file offset, slot, len)
            let mut slots: Vec<StreamSlots> = Vec::new();
            let mut slot = 0usize;
            for (t, r) in &streams {
                let cs = compress::chunks(&bytes[r.clone()], bs).map_err(|e| ctx.place(*t, e))?;
                let base = slot;
                let mut parts = Vec::with_capacity(cs.len());
                for c in cs {
                    let at = r.start + c.range.start;
                    if c.original {
                        copies.push((at, slot, c.range.len()));
                        parts.push((slot, None));
                        rep.original_chunks += 1;
                    } else {
                        parts.push((slot, Some(plan.len())));
                        plan.push(Planned {
                            desc: ChunkDesc {
                                in_start: at as u64,
                                out_start: slot as u64,
                                in_len: c.range.len() as u32,
                                out_cap: bs as u32,
                                param: 0,
                                reserved: FILE as u32,
                            },
                            tag: *t,
                            host: 0,
                            bytes: at..at + c.range.len(),
                        });
                    }
                    slot += bs;
                }
                slots.push((*t, base, parts));
            }
            rep.deflate_chunks = plan.len();
            let mut infl = gpu.alloc::<u8>(slot + PAD)?;
            gpu.fill_bytes(&mut infl, 0)?;
            let hosts: [&[u8]; 1] = [bytes];
            let lens = ctx.launch(Decoder::Deflate, &plan, &bufs, &hosts, &mut infl)?;
            let file_buf = bufs[FILE].as_ref().expect("uploaded above");
            for &(at, to, len) in &copies {
                gpu.copy_within_device(file_buf, at, &mut infl, to, len)?;
            }
            let orig_len: HashMap<usize, usize> =
                copies.iter().map(|&(_, to, len)| (to, len)).collect();
            let mut compact: Vec<(Tag, Vec<(usize, usize)>)> = Vec::new();
            for (t, base, parts) in slots {
                let ls: Vec<(usize, usize)> = parts
                    .iter()
                    .map(|&(sl, p)| match p {
                        Some(i) => (sl, lens[i]),
                        None => (sl, orig_len.get(&sl).copied().unwrap_or(0)),
                    })
                    .collect();
                let full = ls.iter().rev().skip(1).all(|&(_, l)| l == bs);
                if full {
                    let len = ls.iter().map(|p| p.1).sum();
                    locs.insert(
                        t,
                        Loc {
                            buf: INFLATED,
                            start: base,
                            len,
                        },
                    );
                } else {
                    compact.push((t, ls));
                }
            }
            if !compact.is_empty() {
                rep.compacted_streams = compact.len();
                let total: usize = compact.iter().flat_map(|c| &c.1).map(|p| p.1).sum();
                let mut extra = gpu.alloc::<u8>(total + PAD)?;
                gpu.fill_bytes(&mut extra, 0)?;
                let mut at = 0usize;
                for (t, ls) in compact {
                    let start = at;
                    for (sl, l) in ls {
                        gpu.copy_within_device(&infl, sl, &mut extra, at, l)?;
                        at += l;
                    }
                    locs.insert(
                        t,
                        Loc {
                            buf: EXTRA,
                            start,
                            len: at - start,
                        },
                    );
                }
                bufs[EXTRA] = Some(extra);
            }
            bufs[INFLATED] = Some(infl);
        }
        c => {
            let done: Vec<(Tag, Vec<u8>)> = streams
                .par_iter()
                .map(|(t, r)| {
                    compress::decompress(c, bs, &bytes[r.clone()])
                        .map(|v| (*t, v.into_owned()))
                        .map_err(|e| ctx.place(*t, e))
                })
                .collect::<Result<_>>()?;
            let mut all = Vec::new();
            for (t, v) in done {
                locs.insert(
                    t,
                    Loc {
                        buf: EXTRA,
                        start: all.len(),
                        len: v.len(),
                    },
                );
                all.extend_from_slice(&v);
                cpu_of.insert(t, cpu_inflated.len());
                cpu_inflated.push(v);
            }
            bufs[EXTRA] = Some(codag::upload_padded(gpu, &all, PAD)?);
            rep.uploaded_bytes += all.len();
        }
    }
    gpu.synchronize()?;
    rep.phases.inflate = elapsed(&mut tp);

    // 3.-4. PRESENT streams: walked, decoded, their bits back on the host for the counts.
    let rows_of = |s: usize| {
        usize::try_from(layouts[s].rows)
            .map_err(|_| OrcError::malformed("stripe", "row count over the address space"))
    };
    let mut present_jobs = Vec::new();
    for s in 0..ns {
        let rows = rows_of(s)?;
        for k in 0..nc {
            let t = (s, k, stream_kind::PRESENT);
            if let Some(&loc) = locs.get(&t) {
                if rows > loc.len.saturating_mul(MAX_VALUES_PER_BYTE) {
                    return Err(ctx.count_err(t, rows, loc.len));
                }
                present_jobs.push(Job {
                    tag: t,
                    loc,
                    host: 0,
                    host_off: 0,
                    count: rows.div_ceil(8),
                    signed: false,
                    decoder: Decoder::OrcByteRle,
                });
            }
        }
    }
    let present_host = fetch_hosts(gpu, &mut present_jobs, &bufs, &cpu_of, &mut rep)?;
    let mut present_out = gpu.alloc::<u8>(present_jobs.iter().map(|j| j.count).sum::<usize>())?;
    let present_plan = {
        let hosts = host_list(bytes, &cpu_inflated, &present_host);
        let (plan, bases) = plan_all(&ctx, &present_jobs, &hosts)?;
        rep.phases.walk += elapsed(&mut tp);
        rep.present_chunks = plan.len();
        ctx.launch(Decoder::OrcByteRle, &plan, &bufs, &hosts, &mut present_out)?;
        bases
    };
    let mut present_bits = vec![0u8; present_jobs.iter().map(|j| j.count).sum()];
    gpu.download(&present_out, &mut present_bits)?;
    let mut nonnull = vec![vec![0usize; nc]; ns];
    for (s, row) in nonnull.iter_mut().enumerate() {
        row.fill(rows_of(s)?);
    }
    for (j, &base) in present_jobs.iter().zip(&present_plan) {
        let rows = nonnull[j.tag.0][j.tag.1];
        let b = &present_bits[base..base + j.count];
        let full = rows / 8;
        let mut ones: usize = b[..full].iter().map(|x| x.count_ones() as usize).sum();
        if rows % 8 != 0 {
            ones += (b[full] >> (8 - rows % 8)).count_ones() as usize;
        }
        nonnull[j.tag.0][j.tag.1] = ones;
    }
    rep.phases.present = elapsed(&mut tp);

    // 3., 5. Value streams: walked, then one launch per decoder.
    let mut jobs: Vec<Job> = Vec::new();
    for (s, l) in layouts.iter().enumerate() {
        for (k, &ci) in reader.cols.iter().enumerate() {
            let c = &file.columns()[ci];
            let Some(&(enc, dict)) = l.encodings.get(c.id as usize) else {
                continue; // the CPU assembly reports the missing encoding
            };
            let v2 = matches!(enc, encoding_kind::DIRECT_V2 | encoding_kind::DICTIONARY_V2);
            let dict_enc = matches!(
                enc,
                encoding_kind::DICTIONARY | encoding_kind::DICTIONARY_V2
            );
            let ints = if v2 {
                Decoder::OrcRleV2
            } else {
                Decoder::OrcRleV1
            };
            let n = nonnull[s][k];
            let want: Vec<(i32, usize, Decoder, bool)> = match &c.ty {
                OrcType::Boolean => {
                    vec![(stream_kind::DATA, n.div_ceil(8), Decoder::OrcByteRle, false)]
                }
                OrcType::Byte => vec![(stream_kind::DATA, n, Decoder::OrcByteRle, false)],
                OrcType::Short | OrcType::Int | OrcType::Long | OrcType::Date => {
                    vec![(stream_kind::DATA, n, ints, true)]
                }
                OrcType::Timestamp => vec![
                    (stream_kind::DATA, n, ints, true),
                    (stream_kind::SECONDARY, n, ints, false),
                ],
                OrcType::Decimal { .. } => vec![(stream_kind::SECONDARY, n, ints, true)],
                OrcType::String | OrcType::Binary if dict_enc => vec![
                    (stream_kind::DATA, n, ints, false),
                    (stream_kind::LENGTH, dict as usize, ints, false),
                ],
                OrcType::String | OrcType::Binary => vec![(stream_kind::LENGTH, n, ints, false)],
                _ => vec![],
            };
            for (kind, count, decoder, signed) in want {
                let t = (s, k, kind);
                let Some(&loc) = locs.get(&t) else {
                    continue; // the CPU assembly reports the missing stream
                };
                let per_byte = if c.ty == OrcType::Boolean {
                    MAX_VALUES_PER_BYTE / 8
                } else {
                    MAX_VALUES_PER_BYTE
                };
                if count > loc.len.saturating_mul(per_byte) {
                    return Err(ctx.count_err(t, count, loc.len));
                }
                jobs.push(Job {
                    tag: t,
                    loc,
                    host: 0,
                    host_off: 0,
                    count,
                    signed,
                    decoder,
                });
            }
        }
    }
    let value_host = fetch_hosts(gpu, &mut jobs, &bufs, &cpu_of, &mut rep)?;
    let decoders = DECODERS;
    // Per decoder: its jobs (indices into `jobs`), their output bases, the output buffer.
    let mut outs: Vec<(Vec<usize>, Vec<usize>, CudaSlice<u8>)> = Vec::new();
    {
        let hosts = host_list(bytes, &cpu_inflated, &value_host);
        let mut plans = Vec::new();
        for d in decoders {
            let idx: Vec<usize> = (0..jobs.len()).filter(|&i| jobs[i].decoder == d).collect();
            let these: Vec<&Job> = idx.iter().map(|&i| &jobs[i]).collect();
            let (plan, bases) = plan_refs(&ctx, &these, &hosts)?;
            plans.push((d, idx, bases, plan));
        }
        rep.rle_streams = present_jobs.len() + jobs.len();
        rep.phases.walk += elapsed(&mut tp);
        for (d, idx, bases, plan) in plans {
            let elems: usize = idx.iter().map(|&i| jobs[i].count).sum();
            let mut out = gpu.alloc::<u8>(elems * d.elem_bytes())?;
            match d {
                Decoder::OrcByteRle => rep.byte_rle_chunks = plan.len(),
                Decoder::OrcRleV1 => rep.rle_v1_chunks = plan.len(),
                _ => rep.rle_v2_chunks = plan.len(),
            }
            ctx.launch(d, &plan, &bufs, &hosts, &mut out)?;
            rep.resident_bytes += elems * d.elem_bytes();
            outs.push((idx, bases, out));
        }
    }
    gpu.synchronize()?;
    rep.resident_bytes += present_bits.len();
    rep.phases.rle = elapsed(&mut tp);
    rep.seconds_to_resident = t0.elapsed().as_secs_f64();
    Ok(Resident {
        t0,
        tp,
        layouts,
        streams,
        bufs,
        locs,
        cpu_inflated,
        cpu_of,
        present_jobs,
        present_bases: present_plan,
        present_out,
        present_bits,
        nonnull,
        jobs,
        outs,
        rep,
    })
}

/// To Arrow on the host: decoded values and the streams no decoder touched copied back, the
/// arrays built by the CPU path's code.
fn to_host(
    gpu: &Gpu,
    reader: &OrcReader<'_>,
    r: Resident,
) -> Result<(Vec<RecordBatch>, GpuReport)> {
    let Resident {
        t0,
        mut tp,
        layouts,
        streams,
        bufs,
        locs,
        mut cpu_inflated,
        cpu_of,
        present_jobs,
        present_bases: present_plan,
        present_bits,
        jobs,
        outs,
        mut rep,
        ..
    } = r;
    let file = reader.file;
    let (ns, nc) = (layouts.len(), reader.cols.len());
    let decoders = DECODERS;
    let mut dec: Vec<Vec<ColumnDecoded>> = (0..ns)
        .map(|_| (0..nc).map(|_| ColumnDecoded::default()).collect())
        .collect();
    for (j, &base) in present_jobs.iter().zip(&present_plan) {
        let d = &mut dec[j.tag.0][j.tag.1];
        d.pre
            .bytes
            .insert(j.tag.2, present_bits[base..base + j.count].to_vec());
        d.inflated.insert(j.tag.2, Vec::new());
    }
    for (d, (idx, bases, out)) in decoders.iter().zip(&outs) {
        for (&i, &base) in idx.iter().zip(bases) {
            let j = &jobs[i];
            let slot = &mut dec[j.tag.0][j.tag.1];
            if *d == Decoder::OrcByteRle {
                let mut v = vec![0u8; j.count];
                codag::download_range(gpu, out, base, &mut v)?;
                rep.arrow_download_bytes += v.len();
                slot.pre.bytes.insert(j.tag.2, v);
            } else {
                let mut v = vec![0i64; j.count];
                codag::download_range(gpu, out, base * 8, bytemuck::cast_slice_mut(&mut v))?;
                rep.arrow_download_bytes += v.len() * 8;
                slot.pre.ints.insert(j.tag.2, v);
            }
            slot.inflated.insert(j.tag.2, Vec::new());
        }
    }
    if file.compression() != Compression::None {
        for (t, _) in &streams {
            let slot = &mut dec[t.0][t.1];
            if slot.inflated.contains_key(&t.2) {
                continue;
            }
            let v = if let Some(&i) = cpu_of.get(t) {
                std::mem::take(&mut cpu_inflated[i])
            } else {
                let Some(&loc) = locs.get(t) else {
                    continue; // every stream has a location; the assembly reports a missing one
                };
                let mut v = vec![0u8; loc.len];
                let b = bufs[loc.buf].as_ref().expect("made with its locations");
                codag::download_range(gpu, b, loc.start, &mut v)?;
                rep.arrow_download_bytes += v.len();
                v
            };
            slot.inflated.insert(t.2, v);
        }
    }
    rep.phases.download = elapsed(&mut tp);
    let batches = dec
        .par_iter()
        .enumerate()
        .map(|(s, d)| reader.assemble(s, &layouts[s], Some(d)))
        .collect::<Result<Vec<_>>>()?;
    rep.phases.assemble = elapsed(&mut tp);
    rep.seconds_total = t0.elapsed().as_secs_f64();
    Ok((batches, rep))
}

/// The host bytes of each job's stream: the file's for an uncompressed file, the CPU's
/// decompression for SNAPPY/LZ4/ZSTD, else a copy back from the device (returned). Sets each
/// job's `host` index into [`host_list`]'s list.
fn fetch_hosts(
    gpu: &Gpu,
    jobs: &mut [Job],
    bufs: &[Option<CudaSlice<u8>>],
    cpu_of: &HashMap<Tag, usize>,
    rep: &mut GpuReport,
) -> Result<Vec<Vec<u8>>> {
    let first_down = 1 + cpu_of.len();
    let mut down = Vec::new();
    for j in jobs.iter_mut() {
        if j.loc.buf == FILE {
            (j.host, j.host_off) = (0, j.loc.start);
        } else if let Some(&i) = cpu_of.get(&j.tag) {
            (j.host, j.host_off) = (1 + i, 0);
        } else {
            let mut v = vec![0u8; j.loc.len];
            let b = bufs[j.loc.buf].as_ref().expect("made with its locations");
            codag::download_range(gpu, b, j.loc.start, &mut v)?;
            rep.walk_download_bytes += v.len();
            (j.host, j.host_off) = (first_down + down.len(), 0);
            down.push(v);
        }
    }
    Ok(down)
}

/// The host copies jobs index: the file, the CPU-decompressed streams, the downloaded ones.
fn host_list<'a>(file: &'a [u8], cpu: &'a [Vec<u8>], down: &'a [Vec<u8>]) -> Vec<&'a [u8]> {
    std::iter::once(file)
        .chain(cpu.iter().map(|v| v.as_slice()))
        .chain(down.iter().map(|v| v.as_slice()))
        .collect()
}

fn plan_all(
    ctx: &Ctx<'_, '_>,
    jobs: &[Job],
    hosts: &[&[u8]],
) -> Result<(Vec<Planned>, Vec<usize>)> {
    let refs: Vec<&Job> = jobs.iter().collect();
    plan_refs(ctx, &refs, hosts)
}

/// Every job walked (in parallel), its pieces' outputs placed one stream after another; the
/// pieces and each job's first output element.
fn plan_refs(
    ctx: &Ctx<'_, '_>,
    jobs: &[&Job],
    hosts: &[&[u8]],
) -> Result<(Vec<Planned>, Vec<usize>)> {
    let mut bases = Vec::with_capacity(jobs.len());
    let mut at = 0usize;
    for j in jobs {
        bases.push(at);
        at += j.count;
    }
    let plans: Vec<Vec<Planned>> = jobs
        .par_iter()
        .zip(&bases)
        .map(|(j, &b)| plan_job(ctx, j, hosts[j.host], b))
        .collect::<Result<_>>()?;
    Ok((plans.into_iter().flatten().collect(), bases))
}

/// One selected column of the whole file (every stripe's rows back to back) as an Arrow array
/// in GPU memory.
#[derive(Debug)]
pub struct DeviceColumn {
    /// The column's name.
    pub name: String,
    /// The array: the type the CPU path gives ([`crate::arrow_type`]), validity present when
    /// some stripe has a PRESENT stream (as the CPU path's null buffers).
    pub array: GpuArrowArray,
    /// Null rows.
    pub null_count: u64,
}

/// Reads the reader's columns into GPU-resident Arrow arrays, one per column covering every
/// stripe: every stream decoded on the GPU as [`read_batches`] does, then Arrow's layout built
/// on the device (`tessera_gpu::orc_layout`: PRESENT to validity, values scattered to their
/// rows, integers narrowed, timestamps combined, strings gathered). Nothing but status words
/// and totals comes back to the host. Downloaded, each array equals the concatenation of the
/// CPU path's arrays of that column. Decimal columns give [`OrcError::Unsupported`].
pub fn read_device(gpu: &Gpu, reader: &OrcReader<'_>) -> Result<(Vec<DeviceColumn>, GpuReport)> {
    let r = resident(gpu, reader, Options::default(), None)?;
    to_device(gpu, reader, r)
}

/// [`read_device`] uploading the file from `staged`, pinned host memory holding the file's
/// bytes (what [`crate::OrcFile::bytes`] returns; the caller copies them there once).
pub fn read_device_staged(
    gpu: &Gpu,
    reader: &OrcReader<'_>,
    staged: &PinnedBuffer,
) -> Result<(Vec<DeviceColumn>, GpuReport)> {
    let r = resident(gpu, reader, Options::default(), Some(staged))?;
    to_device(gpu, reader, r)
}

fn to_device(
    gpu: &Gpu,
    reader: &OrcReader<'_>,
    r: Resident,
) -> Result<(Vec<DeviceColumn>, GpuReport)> {
    let mut tp = r.tp;
    let mut rep = r.rep.clone();
    let file = reader.file;
    let addr = |b: &CudaSlice<u8>| orc_layout_addr(gpu, b);
    // Where each decoded stream lies: device address and elements.
    let mut decoded: HashMap<Tag, (u64, u64)> = HashMap::new();
    let pbase = addr(&r.present_out);
    for (j, &b) in r.present_jobs.iter().zip(&r.present_bases) {
        decoded.insert(j.tag, (pbase + b as u64, j.count as u64));
    }
    for (d, (idx, bases, out)) in DECODERS.iter().zip(&r.outs) {
        let base = addr(out);
        for (&i, &b) in idx.iter().zip(bases) {
            let j = &r.jobs[i];
            decoded.insert(j.tag, (base + (b * d.elem_bytes()) as u64, j.count as u64));
        }
    }
    let raw = |t: Tag| -> (u64, u64) {
        match r.locs.get(&t) {
            Some(l) => match &r.bufs[l.buf] {
                Some(b) => (addr(b) + l.start as u64, l.len as u64),
                None => (0, 0),
            },
            None => (0, 0),
        }
    };
    let mut cols = Vec::with_capacity(reader.cols.len());
    for (k, &ci) in reader.cols.iter().enumerate() {
        let c = &file.columns()[ci];
        let place = |s: usize, stream: &'static str, e: tessera_format::Error| {
            stream_err(s, c, stream, OrcError::Codec(e))
        };
        let data_type = arrow_type(&c.ty).ok_or_else(|| OrcError::UnsupportedType {
            column: c.name.clone(),
            ty: format!("{:?}", c.ty),
        })?;
        let mut parts = Vec::with_capacity(r.layouts.len());
        let (mut row, mut dict_base) = (0u64, 0u64);
        let mut any_present = false;
        for (s, l) in r.layouts.iter().enumerate() {
            let mut g = ColumnStripe {
                row_start: row,
                rows: l.rows,
                dict_base,
                ..ColumnStripe::default()
            };
            row = row
                .checked_add(l.rows)
                .ok_or_else(|| OrcError::malformed("file", "row count overflows"))?;
            if let Some(&(p, n)) = decoded.get(&(s, k, stream_kind::PRESENT)) {
                (g.present, g.present_len) = (p, n);
                any_present = true;
            }
            let dec = |kind: i32| decoded.get(&(s, k, kind)).copied().unwrap_or((0, 0));
            let dict_enc = matches!(
                l.encodings.get(c.id as usize).map(|e| e.0),
                Some(encoding_kind::DICTIONARY | encoding_kind::DICTIONARY_V2)
            );
            match &c.ty {
                OrcType::Boolean => {
                    g.values = dec(stream_kind::DATA).0;
                    // Bits: one a valid row.
                    g.values_len = if g.values == 0 {
                        0
                    } else {
                        r.nonnull[s][k] as u64
                    };
                }
                OrcType::Float | OrcType::Double => {
                    let w = if c.ty == OrcType::Float { 4 } else { 8 };
                    let (p, n) = raw((s, k, stream_kind::DATA));
                    (g.values, g.values_len) = (p, n / w);
                }
                OrcType::Timestamp => {
                    if !crate::cpu::utc_zone(&l.writer_timezone) {
                        return Err(stream_err(
                            s,
                            c,
                            "DATA",
                            OrcError::Unsupported(format!(
                                "timestamps written in time zone {} (this reader reads UTC/GMT \
                                 files)",
                                l.writer_timezone
                            )),
                        ));
                    }
                    (g.values, g.values_len) = dec(stream_kind::DATA);
                    (g.aux, g.aux_len) = dec(stream_kind::SECONDARY);
                }
                OrcType::String | OrcType::Binary if dict_enc => {
                    (g.values, g.values_len) = dec(stream_kind::DATA);
                    (g.dict, g.dict_len) = dec(stream_kind::LENGTH);
                    (g.aux, g.aux_len) = raw((s, k, stream_kind::DICTIONARY_DATA));
                    g.is_dict = 1;
                    // Entries the stripe announces (its LENGTH stream decoded exactly these).
                    g.dict_len = l.encodings.get(c.id as usize).map_or(0, |e| e.1 as u64);
                    if g.dict == 0 && g.dict_len > 0 {
                        return Err(place(
                            s,
                            "LENGTH",
                            tessera_format::Error::InvalidArgument("stream missing".into()),
                        ));
                    }
                    dict_base += g.dict_len;
                }
                OrcType::String | OrcType::Binary => {
                    (g.values, g.values_len) = dec(stream_kind::LENGTH);
                    (g.aux, g.aux_len) = raw((s, k, stream_kind::DATA));
                }
                OrcType::Decimal { .. } | OrcType::Unsupported(_) => {
                    return Err(OrcError::Unsupported(format!(
                        "column {}: {:?} columns are not built on the device",
                        c.name, c.ty
                    )))
                }
                _ => (g.values, g.values_len) = dec(stream_kind::DATA),
            }
            parts.push(g);
        }
        let whole = |e: tessera_format::Error| OrcError::Stream {
            stripe: 0,
            column: c.name.clone(),
            stream: "DATA",
            source: Box::new(OrcError::Codec(e)),
        };
        // SAFETY: every address above is a live device buffer of `r` (the uploaded file, the
        // inflated streams, the decoders' outputs) at an offset whose given length lies inside
        // it; `r` outlives the launches below.
        let v = unsafe { orc_layout::validity(gpu, &parts, row) }.map_err(whole)?;
        let (values, offsets) = match &c.ty {
            OrcType::Boolean => (orc_layout::scatter_bool(gpu, &v).map_err(whole)?, None),
            OrcType::String | OrcType::Binary => {
                let (o, b) =
                    orc_layout::strings(gpu, &v, &parts, c.ty == OrcType::String).map_err(whole)?;
                (b, Some(o))
            }
            ty => {
                let mode = match ty {
                    OrcType::Byte => Scatter::Byte,
                    OrcType::Short => Scatter::I16,
                    OrcType::Int | OrcType::Date => Scatter::I32,
                    OrcType::Long => Scatter::I64,
                    OrcType::Float => Scatter::F32,
                    OrcType::Double => Scatter::F64,
                    _ => Scatter::TimestampNs,
                };
                (orc_layout::scatter(gpu, &v, mode).map_err(whole)?, None)
            }
        };
        let null_count = v.null_count;
        cols.push(DeviceColumn {
            name: c.name.clone(),
            array: GpuArrowArray {
                data_type,
                len: row,
                validity: any_present.then_some(v.bits.into()),
                offsets: offsets.map(Into::into),
                values: values.into(),
                dictionary: None,
            },
            null_count,
        });
    }
    gpu.synchronize()?;
    rep.phases.to_arrow = elapsed(&mut tp);
    rep.seconds_total = r.t0.elapsed().as_secs_f64();
    Ok((cols, rep))
}

fn orc_layout_addr(gpu: &Gpu, b: &CudaSlice<u8>) -> u64 {
    tessera_gpu::arrow_layout::device_address(gpu, b)
}

/// A device array copied to the host as an Arrow array (validity, offsets and values
/// downloaded as they are, the layout checked by Arrow): what a consumer of
/// [`read_device`]'s arrays sees, and how the tests compare them with the CPU path's.
pub fn download_array(gpu: &Gpu, a: &GpuArrowArray) -> Result<arrow_array::ArrayRef> {
    let down = |b: &CudaSlice<u8>| -> Result<arrow_buffer::Buffer> {
        let mut v = vec![0u8; b.len()];
        gpu.download(b, &mut v)?;
        Ok(arrow_buffer::Buffer::from_vec(v))
    };
    let len = usize::try_from(a.len)
        .map_err(|_| OrcError::malformed("device array", "length over the address space"))?;
    let mut b = arrow_data::ArrayData::builder(a.data_type.clone()).len(len);
    if let Some(v) = &a.validity {
        b = b.null_bit_buffer(Some(down(v)?));
    }
    if let Some(o) = &a.offsets {
        b = b.add_buffer(down(o)?);
    }
    b = b.add_buffer(down(&a.values)?);
    Ok(arrow_array::make_array(b.build()?))
}
