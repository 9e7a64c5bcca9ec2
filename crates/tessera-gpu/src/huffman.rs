//! Canonical Huffman on the GPU (`docs/format/huffman.md`, "GPU notes"): histogram, encoding
//! byte-identical to [`tessera_codecs::huffman::encode`], and block-parallel decoding that
//! matches [`tessera_codecs::huffman::decode`] byte for byte and error variant for variant.
//!
//! A column of bytes is cut into chunks of `chunk_bytes` bytes (a multiple of [`SEG_BYTES`],
//! at most 2^24; the last chunk may be shorter), each one payload of the format. How the
//! kernels work is told at the top of `kernels/huffman.cu`. The host's share:
//! - encoding, one pipeline for the whole column: one histogram launch for all chunks, one
//!   download of every chunk's 256-entry histogram, the CPU encoder's own per-chunk decision
//!   ([`tessera_codecs::huffman::plan_chunks`]: package-merge, canonical codes, raw or mode 2;
//!   all cores) so that every payload's length and place are known before a bit is packed, one
//!   upload of every chunk's descriptor, code table and preamble, then the packing launches;
//!   [`EncodeScratch::time_phases`] times the three phases with CUDA events;
//! - decoding: it checks each chunk's header and payload length (§7 steps 1-4) on the host,
//!   the kernels check everything else and leave a status per chunk; on any flag the host
//!   re-runs the CPU decoder on that chunk and returns its exact [`Error`].
//!
//! Invariants: every kernel argument points into a buffer sized here from checked header
//! fields and the caller's output size; every public function synchronizes before returning.

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg};
use tessera_codecs::huffman as cpu;
use tessera_format::{Error, Result, MAX_CHUNK_VALUES};

use crate::kernels::Module;
use crate::layout::{ITEMS, STATUS_OK, THREADS};
use crate::runtime::{cuda, Gpu};

/// Input bytes per encoder segment (`HF_SEG_BYTES`): chunk sizes are multiples of it.
pub const SEG_BYTES: usize = 32768;
/// Threads of the encoder kernels (`HF_ENC_THREADS`).
pub const ENC_THREADS: u32 = 256;
/// Bytes per encoder thread and sub-tile (`HF_ENC_ITEMS`, `HF_SUBTILE_BYTES`).
pub const ENC_ITEMS: usize = 16;
pub const SUBTILE_BYTES: usize = 4096;
/// Threads of the decoder and 4096-bit blocks per decoder thread block (`HF_DEC_*`).
pub const DEC_THREADS: u32 = 128;
pub const DEC_GROUP: usize = 128;
/// Output bytes staged per decoder thread between two warp-wide flushes (`HF_OUT_SLOT`).
pub const OUT_SLOT: usize = 128;
/// Output slot stride in bytes (`HF_OUT_STRIDE`: odd in words, so lanes hit distinct banks).
pub const OUT_STRIDE: usize = 132;
/// Staged stream words per block (`HF_STAGE_STRIDE`): its 128 and the next block's first 3.
pub const STAGE_STRIDE: usize = 131;
/// Entries of the multi-symbol table (`HF_MULTI_SIZE`, indexed by 12 bits) and of the
/// single-symbol table (`HF_SINGLE_SIZE`, indexed by 13 bits).
pub const MULTI_SIZE: usize = 1 << cpu::MULTI_BITS;
pub const SINGLE_SIZE: usize = 1 << cpu::MAX_CODE_LENGTH;
/// Words of one chunk's decode tables (`HF_TABLE_WORDS`: the multi-symbol table, then the
/// single-symbol table's u16 entries two per word).
pub const TABLE_WORDS: usize = MULTI_SIZE + SINGLE_SIZE / 2;
/// Words a sub-tile's codes can fill (`HF_STAGE_WORDS`).
pub const STAGE_WORDS: usize = SUBTILE_BYTES * cpu::MAX_CODE_LENGTH as usize / 32 + 2;
/// u32 words per descriptor row and the fields `hf_find_row` searches (`HF_*_ROW_WORDS`, ...).
pub const ENC_ROW_WORDS: usize = 10;
pub const ENC_EDGE_BASE: usize = 8;
pub const DEC_ROW_WORDS: usize = 12;
pub const DEC_FIRST_BLOCK: usize = 7;
pub const DEC_FIRST_GROUP: usize = 8;
/// Bytes a raw-copy thread block moves (`HF_RAW_PIECE`).
pub const RAW_PIECE: usize = 16384;
/// Encoder edge records (`HF_EDGE_*`).
pub const EDGE_SPILL_SHIFT: u32 = 25;
pub const EDGE_COUNT_MASK: u32 = 0x1FF_FFFF;
/// Status codes of the Huffman kernels (`HF_ST_*`).
pub const ST_TABLE: u32 = 1;
pub const ST_INFO: u32 = 2;
pub const ST_COUNT_SUM: u32 = 3;
pub const ST_CODE: u32 = 4;
pub const ST_END: u32 = 5;
pub const ST_RANGE: u32 = 6;

/// Dynamic shared memory of `huff_decode_blocks`: the multi-symbol table (16 KiB), the group's
/// stream (65.5 KiB), output slots (16.5 KiB). The 16 KiB single-symbol table is read from
/// global memory through L1 (block tails and 13-bit codes only), which keeps two thread blocks
/// per H100 SM.
pub const DEC_SMEM_BYTES: u32 =
    (4 * MULTI_SIZE + 4 * DEC_GROUP * STAGE_STRIDE + DEC_THREADS as usize * OUT_STRIDE) as u32;

const HEADER_WORDS: usize = cpu::HEADER_BYTES / 4;
const LENGTHS_WORDS: usize = cpu::CODE_LENGTHS_BYTES / 4;
const PREAMBLE_WORDS: usize = HEADER_WORDS + LENGTHS_WORDS;
const BLOCK_BITS: u64 = cpu::BLOCK_BITS as u64;
const SCAN_TILE: usize = THREADS as usize * ITEMS;

const _: () = assert!(SUBTILE_BYTES == ENC_THREADS as usize * ENC_ITEMS);
const _: () = assert!(SEG_BYTES % SUBTILE_BYTES == 0);
const _: () = assert!(MAX_CHUNK_VALUES as usize % SEG_BYTES == 0);
const _: () = assert!(DEC_GROUP == DEC_THREADS as usize);
// Two decoder thread blocks fit an H100 SM (228 KiB, 1 KiB reserved per block).
const _: () = assert!(2 * (DEC_SMEM_BYTES as usize + 1024) <= 228 * 1024);

/// A chunk to encode (`struct HfEncChunk` in huffman.cuh).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HfEncChunk {
    pub in_offset: u64,
    pub out_word: u64,
    pub count: u32,
    pub mode: u32,
    pub stream_bits: u32,
    pub block_count: u32,
    pub edge_base: u32,
    pub info_words: u32,
}

impl HfEncChunk {
    /// The row as the kernels read it: `ENC_ROW_WORDS` little-endian u32 words.
    fn words(&self) -> [u32; ENC_ROW_WORDS] {
        [
            self.in_offset as u32,
            (self.in_offset >> 32) as u32,
            self.out_word as u32,
            (self.out_word >> 32) as u32,
            self.count,
            self.mode,
            self.stream_bits,
            self.block_count,
            self.edge_base,
            self.info_words,
        ]
    }
}

/// A huffman-mode chunk to decode (`struct HfDecChunk`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HfDecChunk {
    pub payload_word: u64,
    pub out_index: u64,
    pub total_count: u32,
    pub stream_bits: u32,
    pub block_count: u32,
    pub first_block: u32,
    pub first_group: u32,
    pub table: u32,
    /// `MODE_HUFFMAN_V1` or `MODE_HUFFMAN`.
    pub mode: u32,
    /// Words of `block_info`.
    pub info_words: u32,
}

/// A raw-mode chunk to copy (`struct HfRawChunk`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HfRawChunk {
    pub payload_word: u64,
    pub out_index: u64,
    pub total_count: u32,
    pub first_piece: u32,
}

// SAFETY (all three): plain-old-data, `#[repr(C)]`, laid out like the CUDA structs (a test
// checks the sizes; the kernels index them as u32 rows of 10, 12 and 6 words).
unsafe impl DeviceRepr for HfEncChunk {}
unsafe impl DeviceRepr for HfDecChunk {}
unsafe impl DeviceRepr for HfRawChunk {}

/// One chunk of a column held on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkInfo {
    /// First payload word in [`HuffmanEncoded::words`].
    pub word_offset: usize,
    /// Payload length in words.
    pub words: usize,
    /// Bytes the chunk decodes to.
    pub count: usize,
    /// `MODE_RAW`, `MODE_HUFFMAN_V1` or `MODE_HUFFMAN` (checked header field).
    pub mode: u32,
    /// Checked header field (0 for raw).
    pub stream_bits: u32,
}

/// Chunk payloads on the device, back to back, with their checked headers on the host.
#[derive(Debug)]
pub struct HuffmanEncoded {
    pub words: CudaSlice<u32>,
    /// Words used in `words`.
    pub total_words: usize,
    /// Bytes per chunk (the last may hold fewer).
    pub chunk_bytes: usize,
    /// Bytes of the column.
    pub bytes: usize,
    pub chunks: Vec<ChunkInfo>,
}

impl HuffmanEncoded {
    /// Bytes of all payloads.
    pub fn payload_bytes(&self) -> usize {
        4 * self.total_words
    }
}

/// Device scratch of [`encode_device`], grown on demand and reused; optionally the phase
/// timings of the last call.
#[derive(Debug, Default)]
pub struct EncodeScratch {
    seg_hist: Option<CudaSlice<u32>>,
    chunk_hist: Option<CudaSlice<u32>>,
    seg_bits: Option<CudaSlice<u32>>,
    /// Descriptors, code tables and preambles of every chunk, uploaded at once.
    tables: Option<CudaSlice<u32>>,
    edges: Option<CudaSlice<u32>>,
    /// Record CUDA events between the phases of [`encode_device`] (off for end-to-end timing).
    pub time_phases: bool,
    /// Phase timings of the last [`encode_device`] call with `time_phases` set.
    pub timings: Option<EncodeTimings>,
}

/// Where one [`encode_device`] call spent its time (CUDA events on the stream, milliseconds).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EncodeTimings {
    /// The histogram launch.
    pub histogram_ms: f64,
    /// From the histogram's end to the upload's end: the histogram download, code construction
    /// on the host, the descriptor and output allocation, the table upload (the GPU idles).
    pub host_ms: f64,
    /// Of `host_ms`, the host's code construction alone ([`cpu::plan_chunks`], wall clock).
    pub plan_ms: f64,
    /// Segment bit counts, packing, headers and block_info.
    pub pack_ms: f64,
    /// Chunks planned.
    pub chunks: usize,
}

/// The device tables and scratch of one decode of a [`HuffmanEncoded`] (its chunk tables
/// uploaded once), so that repeated decodes time only the kernels.
#[derive(Debug)]
pub struct DecodePlan {
    huff: Vec<usize>,
    d_huff: Option<CudaSlice<HfDecChunk>>,
    d_raw: Option<CudaSlice<HfRawChunk>>,
    n_raw: u32,
    total_blocks: u32,
    total_groups: u32,
    total_pieces: u32,
    tables: CudaSlice<u32>,
    counts: CudaSlice<u32>,
    offsets: CudaSlice<u32>,
    partials: CudaSlice<u32>,
    status: CudaSlice<u64>,
}

fn grow<T: DeviceRepr>(
    gpu: &Gpu,
    buf: &mut Option<CudaSlice<T>>,
    len: usize,
) -> Result<CudaSlice<T>> {
    match buf.take() {
        Some(b) if b.len() >= len.max(1) => Ok(b),
        _ => gpu.alloc::<T>(len.max(1)),
    }
}

use cpu::{huffman_len, raw_len};

fn check_chunk_bytes(chunk_bytes: usize) -> Result<()> {
    if chunk_bytes == 0 || chunk_bytes % SEG_BYTES != 0 || chunk_bytes > MAX_CHUNK_VALUES as usize {
        return Err(Error::InvalidArgument(format!(
            "GPU huffman chunks must be a multiple of {SEG_BYTES} bytes and at most {MAX_CHUNK_VALUES}, got {chunk_bytes}"
        )));
    }
    Ok(())
}

/// Byte count of chunk `c` of a column of `n` bytes.
fn chunk_len(n: usize, chunk_bytes: usize, c: usize) -> usize {
    n.saturating_sub(c * chunk_bytes).min(chunk_bytes)
}

fn words_to_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

// ---------------------------------------------------------------------------------------------
// Histogram
// ---------------------------------------------------------------------------------------------

/// Launches the histogram over `n` bytes of `data`: per segment (when `seg_hist` is given) and
/// per chunk of `chunk_bytes` into `chunk_hist` (zeroed here).
fn launch_histogram(
    gpu: &Gpu,
    data: &CudaSlice<u8>,
    n: usize,
    chunk_bytes: usize,
    seg_hist: Option<&CudaSlice<u32>>,
    chunk_hist: &mut CudaSlice<u32>,
) -> Result<()> {
    gpu.fill_bytes(chunk_hist, 0)?;
    let segs = n.div_ceil(SEG_BYTES);
    if segs == 0 {
        return Ok(());
    }
    let f = gpu.function(Module::Huffman, "huff_histogram")?;
    let (d, n64, spc) = (gpu.ptr(data), n as u64, (chunk_bytes / SEG_BYTES) as u32);
    let sh = seg_hist.map_or(0u64, |b| gpu.ptr(b));
    let ch = gpu.ptr(chunk_hist);
    // SAFETY: matches huff_histogram(data, n, segs_per_chunk, seg_hist, chunk_hist); `data`
    // holds n bytes; seg_hist (when given) 256 words per segment; chunk_hist 256 per chunk of
    // the column (the callers size both from n and chunk_bytes).
    unsafe { gpu.launch(&f, segs as u32, ENC_THREADS, &[&d, &n64, &spc, &sh, &ch]) }
}

/// Byte frequencies of the first `n` bytes of `data` on the device, equal to
/// [`tessera_codecs::huffman::histogram`].
pub fn histogram_device(gpu: &Gpu, data: &CudaSlice<u8>, n: usize) -> Result<[u64; 256]> {
    if n > data.len() {
        return Err(Error::InvalidArgument(
            "histogram longer than the device buffer".into(),
        ));
    }
    let cb = MAX_CHUNK_VALUES as usize;
    let chunks = n.div_ceil(cb).max(1);
    let mut hist = gpu.alloc::<u32>(chunks * 256)?;
    launch_histogram(gpu, data, n, cb, None, &mut hist)?;
    let mut h = vec![0u32; chunks * 256];
    gpu.download(&hist, &mut h)?;
    let mut out = [0u64; 256];
    for part in h.chunks_exact(256) {
        for (o, &x) in out.iter_mut().zip(part) {
            *o += x as u64;
        }
    }
    Ok(out)
}

/// Byte frequencies of `data`, computed on the GPU.
pub fn histogram(gpu: &Gpu, data: &[u8]) -> Result<[u64; 256]> {
    let d = gpu.upload(data)?;
    histogram_device(gpu, &d, data.len())
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

fn event(gpu: &Gpu) -> Result<cudarc::driver::CudaEvent> {
    let e = gpu
        .ctx
        .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(cuda("creating an event"))?;
    e.record(&gpu.stream).map_err(cuda("recording an event"))?;
    Ok(e)
}

fn elapsed(a: &cudarc::driver::CudaEvent, b: &cudarc::driver::CudaEvent) -> Result<f64> {
    Ok(a.elapsed_ms(b).map_err(cuda("reading an event timer"))? as f64)
}

/// Encodes the first `n` bytes of `data` (on the device) into chunks of `chunk_bytes` bytes
/// (a multiple of [`SEG_BYTES`], at most 2^24; an empty input gives one empty chunk): the
/// histogram launch, one download of all histograms, the host's plan of every chunk (all
/// cores), one upload of all tables, the packing launches; waits for them.
pub fn encode_device(
    gpu: &Gpu,
    data: &CudaSlice<u8>,
    n: usize,
    chunk_bytes: usize,
    scratch: &mut EncodeScratch,
) -> Result<HuffmanEncoded> {
    check_chunk_bytes(chunk_bytes)?;
    if n > data.len() {
        return Err(Error::InvalidArgument(
            "more bytes than the device buffer holds".into(),
        ));
    }
    let chunks = n.div_ceil(chunk_bytes).max(1);
    let segs = n.div_ceil(SEG_BYTES);
    let spc = (chunk_bytes / SEG_BYTES) as u32;
    if segs > u32::MAX as usize / 2 {
        return Err(Error::InvalidArgument(
            "column too large for one GPU encode".into(),
        ));
    }
    let timing = scratch.time_phases;
    let e0 = timing.then(|| event(gpu)).transpose()?;

    // 1. Histograms, one launch; one download.
    let seg_hist = grow(gpu, &mut scratch.seg_hist, segs * 256)?;
    let mut chunk_hist = grow(gpu, &mut scratch.chunk_hist, chunks * 256)?;
    launch_histogram(gpu, data, n, chunk_bytes, Some(&seg_hist), &mut chunk_hist)?;
    let e1 = timing.then(|| event(gpu)).transpose()?;
    let mut hists = vec![0u32; chunks * 256];
    gpu.download(&chunk_hist, &mut hists)?;

    // 2. Plans (the CPU encoder's own decision, all cores), payload places; one table of
    //    descriptors (ENC_ROW_WORDS per chunk), codes (256 per chunk, `code | length << 16`)
    //    and preambles (68 per chunk).
    let t_plan = std::time::Instant::now();
    let plans = cpu::plan_chunks(&hists);
    let plan_ms = t_plan.elapsed().as_secs_f64() * 1e3;
    let codes_at = chunks * ENC_ROW_WORDS;
    let pre_at = codes_at + chunks * 256;
    let mut table = vec![0u32; pre_at + chunks * PREAMBLE_WORDS];
    let mut infos = Vec::with_capacity(chunks);
    let (mut word, mut edge) = (0usize, 0usize);
    for (c, p) in plans.iter().enumerate() {
        let count = chunk_len(n, chunk_bytes, c);
        debug_assert_eq!(p.count, count as u64);
        let nb = p.block_count() as usize;
        let words = p.payload_len() as usize / 4;
        let (mode, sb) = if p.huffman {
            (cpu::MODE_HUFFMAN, p.stream_bits as u32)
        } else {
            (cpu::MODE_RAW, 0)
        };
        let desc = HfEncChunk {
            in_offset: (c * chunk_bytes) as u64,
            out_word: word as u64,
            count: count as u32,
            mode,
            stream_bits: sb,
            block_count: nb as u32,
            edge_base: edge as u32,
            info_words: (cpu::block_info_bytes(cpu::MODE_HUFFMAN, nb as u64) / 4) as u32,
        };
        table[c * ENC_ROW_WORDS..(c + 1) * ENC_ROW_WORDS].copy_from_slice(&desc.words());
        infos.push(ChunkInfo {
            word_offset: word,
            words,
            count,
            mode,
            stream_bits: sb,
        });
        for (s, o) in table[codes_at + c * 256..codes_at + (c + 1) * 256]
            .iter_mut()
            .enumerate()
        {
            *o = p.codes[s] | (p.lengths[s] as u32) << 16;
        }
        let pre = &mut table[pre_at + c * PREAMBLE_WORDS..pre_at + (c + 1) * PREAMBLE_WORDS];
        pre[..4].copy_from_slice(&[
            mode,
            count as u32,
            if p.huffman { cpu::BLOCK_BITS } else { 0 },
            sb,
        ]);
        for (i, q) in p.lengths.chunks_exact(4).enumerate() {
            pre[4 + i] = u32::from_le_bytes([q[0], q[1], q[2], q[3]]);
        }
        word += words;
        edge += nb;
    }
    if edge > u32::MAX as usize / 2 {
        return Err(Error::InvalidArgument(
            "column too large for one GPU encode".into(),
        ));
    }
    let total_words = word;
    let total_blocks = edge as u32;

    let mut d_table = grow(gpu, &mut scratch.tables, table.len())?;
    let seg_bits = grow(gpu, &mut scratch.seg_bits, segs)?;
    let edges = grow(gpu, &mut scratch.edges, edge)?;
    gpu.stream
        .memcpy_htod(&table, &mut d_table.slice_mut(..table.len()))
        .map_err(cuda("copying to the device"))?;
    let out = gpu.alloc::<u32>(total_words)?;
    let e2 = timing.then(|| event(gpu)).transpose()?;

    // 3. Segment bits, packing, headers and block_info.
    let f_bits = gpu.function(Module::Huffman, "huff_seg_bits")?;
    let f_pack = gpu.function(Module::Huffman, "huff_encode_pack")?;
    let f_finish = gpu.function(Module::Huffman, "huff_encode_finish")?;
    let base = gpu.ptr(&d_table);
    let (p_descs, p_codes, p_pre) = (base, base + 4 * codes_at as u64, base + 4 * pre_at as u64);
    let (p_data, p_sh, p_bits, p_edges, p_out) = (
        gpu.ptr(data),
        gpu.ptr(&seg_hist),
        gpu.ptr(&seg_bits),
        gpu.ptr(&edges),
        gpu.ptr(&out),
    );
    let n_segs = segs as u32;
    let n_chunks = chunks as u32;
    let finish_items = (chunks * PREAMBLE_WORDS).max(edge);
    let finish_grid = finish_items.div_ceil(ENC_THREADS as usize).clamp(1, 4096) as u32;
    // SAFETY: argument lists match huffman.cu. d_table holds the descriptors (ENC_ROW_WORDS
    // words per chunk, 8-byte aligned at the buffer's start), the code tables (256 words per
    // chunk) and the preambles (68 per chunk); seg_hist holds 256 words per segment (written by
    // the histogram launch), seg_bits one per segment; every segment lies in `data` (n bytes);
    // `out` holds the sum of the planned payload lengths, and each chunk's words (out_word ..
    // out_word + words) are what the kernels write: the packing writes the stream words [0,
    // ceil(stream_bits / 32)) after the chunk's info_words of huffman chunks and ceil(count / 4)
    // data words of raw ones, the finish kernel the preamble and the info_words block_info
    // words; edges holds one record per block.
    unsafe {
        if segs > 0 {
            gpu.launch(
                &f_bits,
                n_segs.div_ceil(ENC_THREADS / 32),
                ENC_THREADS,
                &[&p_sh, &n_segs, &spc, &p_codes, &p_bits],
            )?;
            gpu.launch(
                &f_pack,
                n_segs,
                ENC_THREADS,
                &[&p_data, &p_descs, &spc, &p_bits, &p_codes, &p_out, &p_edges],
            )?;
        }
        gpu.launch(
            &f_finish,
            finish_grid,
            ENC_THREADS,
            &[&p_descs, &n_chunks, &p_pre, &p_edges, &total_blocks, &p_out],
        )?;
    }
    let e3 = timing.then(|| event(gpu)).transpose()?;
    gpu.synchronize()?;
    scratch.timings = match (e0, e1, e2, e3) {
        (Some(e0), Some(e1), Some(e2), Some(e3)) => Some(EncodeTimings {
            histogram_ms: elapsed(&e0, &e1)?,
            host_ms: elapsed(&e1, &e2)?,
            plan_ms,
            pack_ms: elapsed(&e2, &e3)?,
            chunks,
        }),
        _ => None,
    };
    scratch.seg_hist = Some(seg_hist);
    scratch.chunk_hist = Some(chunk_hist);
    scratch.seg_bits = Some(seg_bits);
    scratch.tables = Some(d_table);
    scratch.edges = Some(edges);
    Ok(HuffmanEncoded {
        words: out,
        total_words,
        chunk_bytes,
        bytes: n,
        chunks: infos,
    })
}

/// The chunk payloads of a device-encoded column, on the host.
pub fn download_encoded(gpu: &Gpu, enc: &HuffmanEncoded) -> Result<Vec<Vec<u8>>> {
    let mut words = vec![0u32; enc.total_words];
    gpu.download(&enc.words, &mut words)?;
    enc.chunks
        .iter()
        .map(|c| {
            words
                .get(c.word_offset..c.word_offset + c.words)
                .map(words_to_bytes)
                .ok_or_else(|| Error::Gpu("GPU huffman chunk table is inconsistent".into()))
        })
        .collect()
}

/// Encodes `data` (at most 2^24 bytes) as one chunk on the GPU: the bytes
/// [`tessera_codecs::huffman::encode`] writes.
pub fn encode(gpu: &Gpu, data: &[u8]) -> Result<Vec<u8>> {
    if data.len() > MAX_CHUNK_VALUES as usize {
        return Err(Error::InvalidArgument(format!(
            "huffman chunk of {} bytes (allowed 0..={MAX_CHUNK_VALUES})",
            data.len()
        )));
    }
    let cb = data.len().max(1).next_multiple_of(SEG_BYTES);
    let mut chunks = encode_chunks(gpu, data, cb)?;
    chunks
        .pop()
        .filter(|_| chunks.is_empty())
        .ok_or_else(|| Error::Gpu("GPU huffman encode gave more than one chunk".into()))
}

/// Encodes `data` on the GPU in chunks of `chunk_bytes` bytes: one payload per chunk, each what
/// the CPU encoder writes for that chunk.
pub fn encode_chunks(gpu: &Gpu, data: &[u8], chunk_bytes: usize) -> Result<Vec<Vec<u8>>> {
    check_chunk_bytes(chunk_bytes)?;
    let d = gpu.upload(data)?;
    let mut scratch = EncodeScratch::default();
    let enc = encode_device(gpu, &d, data.len(), chunk_bytes, &mut scratch)?;
    download_encoded(gpu, &enc)
}

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

fn word(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]])
}

/// §7 steps 1-4 on the host: `Some((mode, stream_bits))` when the header and payload length
/// are valid for `count` bytes, `None` when the CPU decoder must say what is wrong.
fn check_header(payload: &[u8], count: usize) -> Option<(u32, u32)> {
    let len = payload.len();
    if len % 4 != 0 || len < cpu::HEADER_BYTES {
        return None;
    }
    let (mode, total, block_bits, sb) = (
        word(payload, 0),
        word(payload, 1),
        word(payload, 2),
        word(payload, 3),
    );
    if total > MAX_CHUNK_VALUES || total as usize != count {
        return None;
    }
    match mode {
        cpu::MODE_RAW if block_bits == 0 && sb == 0 && len == raw_len(count) => Some((mode, 0)),
        cpu::MODE_HUFFMAN | cpu::MODE_HUFFMAN_V1
            if block_bits == cpu::BLOCK_BITS && len as u64 == huffman_len(mode, sb as u64) =>
        {
            Some((mode, sb))
        }
        _ => None,
    }
}

/// The CPU decoder's error for a chunk the GPU (or the host check) rejected.
fn cpu_error(payload: &[u8], count: usize, why: &str) -> Error {
    let mut scratch = vec![0u8; count];
    match cpu::decode(payload, &mut scratch) {
        Err(e) => e,
        Ok(()) => Error::Gpu(format!(
            "GPU huffman decoder rejected a chunk the CPU decoder accepts ({why})"
        )),
    }
}

/// Uploads chunk payloads (chunk `c` decodes to `counts[c]` bytes) after checking each
/// header and payload length on the host. A bad header gives the CPU decoder's error.
pub fn upload_chunks(gpu: &Gpu, payloads: &[&[u8]], counts: &[usize]) -> Result<HuffmanEncoded> {
    if payloads.len() != counts.len() {
        return Err(Error::InvalidArgument(format!(
            "{} payloads for {} chunk sizes",
            payloads.len(),
            counts.len()
        )));
    }
    let mut chunks = Vec::with_capacity(payloads.len());
    let mut all = Vec::new();
    for (&p, &count) in payloads.iter().zip(counts) {
        let Some((mode, stream_bits)) = check_header(p, count) else {
            return Err(cpu_error(p, count, "header"));
        };
        chunks.push(ChunkInfo {
            word_offset: all.len(),
            words: p.len() / 4,
            count,
            mode,
            stream_bits,
        });
        all.extend(
            p.chunks_exact(4)
                .map(|q| u32::from_le_bytes([q[0], q[1], q[2], q[3]])),
        );
    }
    let bytes = counts.iter().sum();
    Ok(HuffmanEncoded {
        words: gpu.upload(&all)?,
        total_words: all.len(),
        chunk_bytes: counts.first().copied().unwrap_or(0),
        bytes,
        chunks,
    })
}

/// Prepares the decode of `enc`: chunk tables on the device, scratch.
pub fn plan_decode(gpu: &Gpu, enc: &HuffmanEncoded) -> Result<DecodePlan> {
    let mut huff = Vec::new();
    let mut hd = Vec::new();
    let mut rd = Vec::new();
    let (mut blocks, mut groups, mut pieces, mut out) = (0u64, 0u64, 0u64, 0u64);
    for (c, ch) in enc.chunks.iter().enumerate() {
        if ch.word_offset + ch.words > enc.total_words || ch.count > MAX_CHUNK_VALUES as usize {
            return Err(Error::InvalidArgument("inconsistent chunk table".into()));
        }
        if ch.mode == cpu::MODE_HUFFMAN || ch.mode == cpu::MODE_HUFFMAN_V1 {
            let nb = (ch.stream_bits as u64).div_ceil(BLOCK_BITS);
            if ch.words as u64 * 4 != huffman_len(ch.mode, ch.stream_bits as u64) {
                return Err(Error::InvalidArgument("inconsistent chunk table".into()));
            }
            hd.push(HfDecChunk {
                payload_word: ch.word_offset as u64,
                out_index: out,
                total_count: ch.count as u32,
                stream_bits: ch.stream_bits,
                block_count: nb as u32,
                first_block: blocks as u32,
                first_group: groups as u32,
                table: huff.len() as u32,
                mode: ch.mode,
                info_words: (cpu::block_info_bytes(ch.mode, nb) / 4) as u32,
            });
            huff.push(c);
            blocks += nb;
            groups += nb.div_ceil(DEC_GROUP as u64);
        } else {
            if ch.mode != cpu::MODE_RAW || ch.words != raw_len(ch.count) / 4 {
                return Err(Error::InvalidArgument("inconsistent chunk table".into()));
            }
            if ch.count > 0 {
                rd.push(HfRawChunk {
                    payload_word: ch.word_offset as u64,
                    out_index: out,
                    total_count: ch.count as u32,
                    first_piece: pieces as u32,
                });
                pieces += ch.count.div_ceil(RAW_PIECE) as u64;
            }
        }
        out += ch.count as u64;
    }
    if blocks >= u32::MAX as u64 / 2 {
        return Err(Error::InvalidArgument(
            "column too large for one GPU decode".into(),
        ));
    }
    let n_huff = huff.len();
    Ok(DecodePlan {
        d_huff: if hd.is_empty() {
            None
        } else {
            Some(gpu.upload(&hd)?)
        },
        d_raw: if rd.is_empty() {
            None
        } else {
            Some(gpu.upload(&rd)?)
        },
        n_raw: rd.len() as u32,
        total_blocks: blocks as u32,
        total_groups: groups as u32,
        total_pieces: pieces as u32,
        tables: gpu.alloc(n_huff * TABLE_WORDS)?,
        counts: gpu.alloc(blocks as usize)?,
        offsets: gpu.alloc(blocks as usize + 1)?,
        partials: gpu.alloc((blocks as usize).div_ceil(SCAN_TILE))?,
        status: gpu.alloc(n_huff)?,
        huff,
    })
}

/// Decodes `enc` into `out` (at least `enc.bytes` bytes) with a prepared plan. Corrupt chunks
/// give the CPU decoder's error for the first of them.
pub fn decode_planned(
    gpu: &Gpu,
    enc: &HuffmanEncoded,
    plan: &mut DecodePlan,
    out: &mut CudaSlice<u8>,
) -> Result<()> {
    let total: usize = enc.chunks.iter().map(|c| c.count).sum();
    if out.len() < total {
        return Err(Error::InvalidArgument(format!(
            "output of {} bytes for {total} decoded bytes",
            out.len()
        )));
    }
    let (p_words, p_out) = (gpu.ptr(&enc.words), gpu.ptr(out));
    if let Some(d_huff) = &plan.d_huff {
        gpu.fill_bytes(&mut plan.status, 0xFF)?;
        let f_tables = gpu.function(Module::Huffman, "huff_decode_tables")?;
        let f_counts = gpu.function(Module::Huffman, "huff_decode_counts")?;
        let f_blocks = gpu.function(Module::Huffman, "huff_decode_blocks")?;
        let f_reduce = gpu.function(Module::Scan, "scan_reduce_u32")?;
        let f_partials = gpu.function(Module::Scan, "scan_partials_u32")?;
        let f_apply = gpu.function(Module::Scan, "scan_apply_u32")?;
        f_blocks
            .set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                DEC_SMEM_BYTES as i32,
            )
            .map_err(cuda("allowing the huffman decoder its shared memory"))?;
        let n_huff = plan.huff.len() as u32;
        let nb = plan.total_blocks;
        let (p_chunks, p_tables, p_counts, p_offsets, p_partials, p_status) = (
            gpu.ptr(d_huff),
            gpu.ptr(&plan.tables),
            gpu.ptr(&plan.counts),
            gpu.ptr(&plan.offsets),
            gpu.ptr(&plan.partials),
            gpu.ptr(&plan.status),
        );
        let scan_grid = (nb as usize).div_ceil(SCAN_TILE) as u32;
        let counts_grid = nb.div_ceil(256).clamp(1, 1 << 16);
        // SAFETY: argument lists match huffman.cu and scan.cu. d_huff holds n_huff rows whose
        // payload_word + words lie in enc.words (checked by plan_decode) and whose headers
        // were checked on the host; tables hold TABLE_WORDS per huffman chunk, counts nb
        // words, offsets nb + 1, partials ceil(nb / SCAN_TILE), status one per huffman chunk;
        // every output range (out_index .. + total_count) lies in `out` (checked above). The
        // decoder's dynamic shared memory is DEC_SMEM_BYTES, as the kernel lays it out.
        unsafe {
            gpu.launch(
                &f_tables,
                n_huff,
                256,
                &[&p_chunks, &p_words, &p_tables, &p_status],
            )?;
            if nb > 0 {
                gpu.launch(
                    &f_counts,
                    counts_grid,
                    256,
                    &[&p_chunks, &n_huff, &p_words, &nb, &p_counts, &p_status],
                )?;
                gpu.launch(
                    &f_reduce,
                    scan_grid,
                    THREADS,
                    &[&p_counts, &nb, &p_partials],
                )?;
                gpu.launch(&f_partials, 1, THREADS, &[&p_partials, &scan_grid])?;
                gpu.launch(
                    &f_apply,
                    scan_grid,
                    THREADS,
                    &[&p_counts, &nb, &p_partials, &p_offsets],
                )?;
                let mut b = gpu.stream.launch_builder(&f_blocks);
                b.arg(&p_chunks)
                    .arg(&n_huff)
                    .arg(&p_words)
                    .arg(&p_tables)
                    .arg(&p_offsets)
                    .arg(&p_out)
                    .arg(&p_status);
                b.launch(LaunchConfig {
                    grid_dim: (plan.total_groups.max(1), 1, 1),
                    block_dim: (DEC_THREADS, 1, 1),
                    shared_mem_bytes: DEC_SMEM_BYTES,
                })
                .map_err(cuda("launching the huffman decoder"))?;
            }
        }
    }
    if let Some(d_raw) = &plan.d_raw {
        if plan.total_pieces > 0 {
            let f = gpu.function(Module::Huffman, "huff_copy_raw")?;
            let p_raw = gpu.ptr(d_raw);
            // SAFETY: matches huff_copy_raw(raws, n_raw, words, out); each raw row's payload
            // (4 + ceil(count / 4) words) lies in enc.words and its output range in `out`.
            unsafe {
                gpu.launch(
                    &f,
                    plan.total_pieces,
                    256,
                    &[&p_raw, &plan.n_raw, &p_words, &p_out],
                )?;
            }
        }
    }
    let mut status = vec![STATUS_OK; plan.huff.len()];
    if !status.is_empty() {
        gpu.download(&plan.status, &mut status)?;
    } else {
        gpu.synchronize()?;
    }
    if let Some(i) = status.iter().position(|&s| s != STATUS_OK) {
        let c = plan.huff[i];
        let ch = enc.chunks[c];
        let mut words = vec![0u32; ch.words];
        gpu.stream
            .memcpy_dtoh(
                &enc.words.slice(ch.word_offset..ch.word_offset + ch.words),
                &mut words,
            )
            .map_err(cuda("copying from the device"))?;
        gpu.synchronize()?;
        return Err(cpu_error(
            &words_to_bytes(&words),
            ch.count,
            &format!("chunk {c}, status {:#x}", status[i]),
        ));
    }
    Ok(())
}

/// Decodes `enc` into `out` (at least `enc.bytes` bytes) on the device.
pub fn decode_device(gpu: &Gpu, enc: &HuffmanEncoded, out: &mut CudaSlice<u8>) -> Result<()> {
    let mut plan = plan_decode(gpu, enc)?;
    decode_planned(gpu, enc, &mut plan, out)
}

/// Decodes chunk payloads into `out`: chunk `c` gives bytes `c * chunk_bytes ..` (the last
/// chunk the rest). Errors are the CPU decoder's for the first corrupt chunk.
pub fn decode_chunks(
    gpu: &Gpu,
    payloads: &[&[u8]],
    chunk_bytes: usize,
    out: &mut [u8],
) -> Result<()> {
    let n = out.len();
    if chunk_bytes == 0 || payloads.len() != n.div_ceil(chunk_bytes).max(1) {
        return Err(Error::InvalidArgument(format!(
            "{} payloads for {n} bytes in chunks of {chunk_bytes}",
            payloads.len()
        )));
    }
    let counts: Vec<usize> = (0..payloads.len())
        .map(|c| chunk_len(n, chunk_bytes, c))
        .collect();
    let enc = upload_chunks(gpu, payloads, &counts)?;
    let mut d_out = gpu.alloc::<u8>(n)?;
    decode_device(gpu, &enc, &mut d_out)?;
    gpu.download(&d_out, out)
}

/// Decodes one chunk payload into `out` (its length is the expected byte count) on the GPU:
/// the bytes [`tessera_codecs::huffman::decode`] gives, or its error.
pub fn decode(gpu: &Gpu, payload: &[u8], out: &mut [u8]) -> Result<()> {
    let enc = upload_chunks(gpu, &[payload], &[out.len()])?;
    let mut d_out = gpu.alloc::<u8>(out.len())?;
    decode_device(gpu, &enc, &mut d_out)?;
    gpu.download(&d_out, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defines() -> std::collections::HashMap<String, String> {
        crate::kernels::header("huffman.cuh")
            .expect("huffman.cuh is embedded")
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                (it.next() == Some("#define")).then_some(())?;
                let name = it.next()?.strip_prefix("HF_")?.to_string();
                Some((name, it.next().unwrap_or("").to_string()))
            })
            .collect()
    }

    #[test]
    fn host_constants_match_huffman_cuh() {
        let d = defines();
        let pairs: &[(&str, u64)] = &[
            ("SYMBOLS", cpu::SYMBOLS as u64),
            ("MAX_CODE_LENGTH", cpu::MAX_CODE_LENGTH as u64),
            ("MAX_CODE_LENGTH_V1", cpu::MAX_CODE_LENGTH_V1 as u64),
            ("MULTI_BITS", cpu::MULTI_BITS as u64),
            ("MULTI_SIZE", MULTI_SIZE as u64),
            ("SINGLE_SIZE", SINGLE_SIZE as u64),
            ("BLOCK_BITS", cpu::BLOCK_BITS as u64),
            ("BLOCK_WORDS", cpu::BLOCK_BITS as u64 / 32),
            ("MAX_SPILL", cpu::MAX_CODE_LENGTH as u64 - 1),
            ("MAX_SPILL_V1", cpu::MAX_CODE_LENGTH_V1 as u64 - 1),
            ("COUNT_BITS", cpu::COUNT_BITS as u64),
            ("COUNT_MASK", cpu::COUNT_MASK as u64),
            ("HEADER_WORDS", HEADER_WORDS as u64),
            ("LENGTHS_WORDS", LENGTHS_WORDS as u64),
            ("MODE_RAW", cpu::MODE_RAW as u64),
            ("MODE_HUFFMAN_V1", cpu::MODE_HUFFMAN_V1 as u64),
            ("MODE_HUFFMAN", cpu::MODE_HUFFMAN as u64),
            ("ENTRY_COUNT_SHIFT", 24),
            ("ENTRY_BITS_SHIFT", 26),
            ("SEG_BYTES", SEG_BYTES as u64),
            ("ENC_THREADS", ENC_THREADS as u64),
            ("ENC_ITEMS", ENC_ITEMS as u64),
            ("SUBTILE_BYTES", SUBTILE_BYTES as u64),
            ("HALO_BYTES", 32),
            ("STAGE_WORDS", STAGE_WORDS as u64),
            ("ENC_ROW_WORDS", ENC_ROW_WORDS as u64),
            ("ENC_EDGE_BASE", ENC_EDGE_BASE as u64),
            ("DEC_ROW_WORDS", DEC_ROW_WORDS as u64),
            ("DEC_FIRST_BLOCK", DEC_FIRST_BLOCK as u64),
            ("DEC_FIRST_GROUP", DEC_FIRST_GROUP as u64),
            ("EDGE_SPILL_SHIFT", EDGE_SPILL_SHIFT as u64),
            ("EDGE_COUNT_MASK", EDGE_COUNT_MASK as u64),
            ("DEC_THREADS", DEC_THREADS as u64),
            ("DEC_GROUP", DEC_GROUP as u64),
            ("OUT_SLOT", OUT_SLOT as u64),
            ("OUT_STRIDE", OUT_STRIDE as u64),
            ("STAGE_STRIDE", STAGE_STRIDE as u64),
            ("TABLE_WORDS", TABLE_WORDS as u64),
            ("ST_TABLE", ST_TABLE as u64),
            ("ST_INFO", ST_INFO as u64),
            ("ST_COUNT_SUM", ST_COUNT_SUM as u64),
            ("ST_CODE", ST_CODE as u64),
            ("ST_END", ST_END as u64),
            ("ST_RANGE", ST_RANGE as u64),
            ("RAW_PIECE", RAW_PIECE as u64),
        ];
        for &(k, v) in pairs {
            let s = d
                .get(k)
                .unwrap_or_else(|| panic!("HF_{k} missing from huffman.cuh"));
            let got = match s.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).expect("hex"),
                None => s.parse().expect("decimal"),
            };
            assert_eq!(got, v, "HF_{k}");
        }
        for (k, v) in &d {
            if v.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                assert!(pairs.iter().any(|(p, _)| p == k), "HF_{k} has no host twin");
            }
        }
        // Edge records hold a count up to 2^24 and a spill up to 12.
        assert!(MAX_CHUNK_VALUES as u64 <= EDGE_COUNT_MASK as u64);
        assert!((cpu::MAX_CODE_LENGTH as u64 - 1) << EDGE_SPILL_SHIFT <= u32::MAX as u64);
        // Every word a sub-tile's 4096 codes fill, plus the words straddling its ends.
        assert!(SUBTILE_BYTES * cpu::MAX_CODE_LENGTH as usize / 32 + 1 < STAGE_WORDS);
    }

    #[test]
    fn chunk_structs_have_the_cuda_layout() {
        assert_eq!(std::mem::size_of::<HfEncChunk>(), 4 * ENC_ROW_WORDS);
        assert_eq!(std::mem::size_of::<HfDecChunk>(), 4 * DEC_ROW_WORDS);
        assert_eq!(
            std::mem::offset_of!(HfEncChunk, edge_base),
            4 * ENC_EDGE_BASE
        );
        assert_eq!(
            std::mem::offset_of!(HfDecChunk, first_block),
            4 * DEC_FIRST_BLOCK
        );
        assert_eq!(
            std::mem::offset_of!(HfDecChunk, first_group),
            4 * DEC_FIRST_GROUP
        );
        let d = HfEncChunk {
            in_offset: 0x1_0000_0002,
            out_word: 3,
            count: 4,
            mode: 5,
            stream_bits: 6,
            block_count: 7,
            edge_base: 8,
            info_words: 9,
        };
        assert_eq!(d.words(), [2, 1, 3, 0, 4, 5, 6, 7, 8, 9]);
        assert_eq!(std::mem::size_of::<HfRawChunk>(), 24);
        assert_eq!(std::mem::align_of::<HfDecChunk>(), 8);
    }

    #[test]
    fn host_header_check_agrees_with_the_cpu_decoder() {
        for data in [&b""[..], b"aab", &[7u8; 5000], b"hello huffman hello gpu"] {
            for v1 in [false, true] {
                let mut p = Vec::new();
                if v1 {
                    cpu::encode_v1(data, &mut p).expect("encodes");
                } else {
                    cpu::encode(data, &mut p).expect("encodes");
                }
                assert!(check_header(&p, data.len()).is_some());
                assert!(check_header(&p, data.len() + 1).is_none());
                assert!(check_header(&p[..p.len() - 4], data.len()).is_none());
            }
        }
    }
}
