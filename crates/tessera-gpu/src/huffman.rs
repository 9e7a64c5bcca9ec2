//! Canonical Huffman on the GPU (`docs/format/huffman.md`, "GPU notes"): histogram, encoding
//! byte-identical to [`tessera_codecs::huffman::encode`], and block-parallel decoding that
//! matches [`tessera_codecs::huffman::decode`] byte for byte and error variant for variant.
//!
//! A column of bytes is cut into chunks of `chunk_bytes` bytes (a multiple of [`SEG_BYTES`],
//! at most 2^24; the last chunk may be shorter), each one payload of the format. How the
//! kernels work is told at the top of `kernels/huffman.cu`. The host's share:
//! - encoding: after the histogram launch it downloads one 256-entry histogram per chunk, runs
//!   the CPU's own package-merge (`code_lengths`) and `canonical_codes` on every chunk (one
//!   thread per core), decides raw or huffman exactly as the CPU encoder does (same formula), so
//!   it knows every payload's length and place before a bit is packed;
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
/// Words of one chunk's decode tables (`HF_TABLE_WORDS`: 4096 multi-symbol entries and 4096
/// u16 single-symbol entries).
pub const TABLE_WORDS: usize = 6144;
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

/// Dynamic shared memory of `huff_decode_blocks`: tables, the group's stream, output slots.
pub const DEC_SMEM_BYTES: u32 =
    (4 * TABLE_WORDS + 4 * DEC_GROUP * STAGE_STRIDE + DEC_THREADS as usize * OUT_STRIDE) as u32;

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
    pub reserved: u32,
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
// checks the sizes; the kernels index them as u32 rows of 10, 10 and 6 words).
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
    /// `MODE_RAW` or `MODE_HUFFMAN` (checked header field).
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

/// Device scratch of [`encode_device`], grown on demand and reused.
#[derive(Debug, Default)]
pub struct EncodeScratch {
    seg_hist: Option<CudaSlice<u32>>,
    chunk_hist: Option<CudaSlice<u32>>,
    seg_bits: Option<CudaSlice<u32>>,
    codes: Option<CudaSlice<u32>>,
    preamble: Option<CudaSlice<u32>>,
    edges: Option<CudaSlice<u32>>,
    descs: Option<CudaSlice<HfEncChunk>>,
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

fn raw_len(n: usize) -> usize {
    cpu::HEADER_BYTES + 4 * n.div_ceil(4)
}

fn huffman_len(stream_bits: u64) -> u64 {
    (cpu::HEADER_BYTES + cpu::CODE_LENGTHS_BYTES) as u64
        + 4 * stream_bits.div_ceil(BLOCK_BITS)
        + 4 * stream_bits.div_ceil(32)
}

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

/// The host's plan of one chunk.
struct ChunkPlan {
    lengths: [u8; 256],
    codes: [u32; 256],
    stream_bits: u64,
    huffman: bool,
}

fn plan_chunk(hist: &[u32]) -> Result<ChunkPlan> {
    let mut h = [0u64; 256];
    for (o, &x) in h.iter_mut().zip(hist) {
        *o = x as u64;
    }
    let n: u64 = h.iter().sum();
    let lengths = cpu::code_lengths(&h, cpu::MAX_CODE_LENGTH)?;
    let stream_bits: u64 = h.iter().zip(&lengths).map(|(&f, &l)| f * l as u64).sum();
    let huffman = n > 0 && huffman_len(stream_bits) < raw_len(n as usize) as u64;
    let rev = cpu::canonical_codes(&lengths);
    let mut codes = [0u32; 256];
    for s in 0..256 {
        codes[s] = rev[s] | (lengths[s] as u32) << 16;
    }
    Ok(ChunkPlan {
        lengths,
        codes,
        stream_bits,
        huffman,
    })
}

/// Plans every chunk, one thread per core.
fn plan_chunks(hists: &[u32]) -> Result<Vec<ChunkPlan>> {
    let chunks = hists.len() / 256;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(chunks)
        .max(1);
    let per = chunks.div_ceil(threads);
    let parts: Vec<Result<Vec<ChunkPlan>>> = std::thread::scope(|s| {
        let handles: Vec<_> = hists
            .chunks(per * 256)
            .map(|part| s.spawn(move || part.chunks_exact(256).map(plan_chunk).collect()))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::Gpu("a planning thread panicked".into())))
            })
            .collect()
    });
    let mut out = Vec::with_capacity(chunks);
    for p in parts {
        out.extend(p?);
    }
    Ok(out)
}

/// Encodes the first `n` bytes of `data` (on the device) into chunks of `chunk_bytes` bytes
/// (a multiple of [`SEG_BYTES`], at most 2^24; an empty input gives one empty chunk). Queues
/// the histogram, waits for it, plans on the host, queues the packing and waits for it.
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

    // 1. Histograms.
    let seg_hist = grow(gpu, &mut scratch.seg_hist, segs * 256)?;
    let mut chunk_hist = grow(gpu, &mut scratch.chunk_hist, chunks * 256)?;
    launch_histogram(gpu, data, n, chunk_bytes, Some(&seg_hist), &mut chunk_hist)?;
    let mut hists = vec![0u32; chunks * 256];
    gpu.download(&chunk_hist, &mut hists)?;

    // 2. Plans, payload places, descriptors.
    let plans = plan_chunks(&hists)?;
    let mut descs = Vec::with_capacity(chunks);
    let mut infos = Vec::with_capacity(chunks);
    let mut codes = vec![0u32; chunks * 256];
    let mut preamble = vec![0u32; chunks * PREAMBLE_WORDS];
    let (mut word, mut edge) = (0usize, 0usize);
    for (c, p) in plans.iter().enumerate() {
        let count = chunk_len(n, chunk_bytes, c);
        let (mode, sb, nb, words) = if p.huffman {
            let nb = p.stream_bits.div_ceil(BLOCK_BITS) as usize;
            (
                cpu::MODE_HUFFMAN,
                p.stream_bits as u32,
                nb,
                huffman_len(p.stream_bits) as usize / 4,
            )
        } else {
            (cpu::MODE_RAW, 0, 0, raw_len(count) / 4)
        };
        descs.push(HfEncChunk {
            in_offset: (c * chunk_bytes) as u64,
            out_word: word as u64,
            count: count as u32,
            mode,
            stream_bits: sb,
            block_count: nb as u32,
            edge_base: edge as u32,
            reserved: 0,
        });
        infos.push(ChunkInfo {
            word_offset: word,
            words,
            count,
            mode,
            stream_bits: sb,
        });
        codes[c * 256..(c + 1) * 256].copy_from_slice(&p.codes);
        let pre = &mut preamble[c * PREAMBLE_WORDS..(c + 1) * PREAMBLE_WORDS];
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

    let mut d_codes = grow(gpu, &mut scratch.codes, codes.len())?;
    let mut d_pre = grow(gpu, &mut scratch.preamble, preamble.len())?;
    let mut d_descs = grow(gpu, &mut scratch.descs, descs.len())?;
    let seg_bits = grow(gpu, &mut scratch.seg_bits, segs)?;
    let edges = grow(gpu, &mut scratch.edges, edge)?;
    {
        let h2d = cuda("copying to the device");
        gpu.stream
            .memcpy_htod(&codes, &mut d_codes.slice_mut(..codes.len()))
            .map_err(&h2d)?;
        gpu.stream
            .memcpy_htod(&preamble, &mut d_pre.slice_mut(..preamble.len()))
            .map_err(&h2d)?;
        gpu.stream
            .memcpy_htod(&descs, &mut d_descs.slice_mut(..descs.len()))
            .map_err(&h2d)?;
    }
    let out = gpu.alloc::<u32>(total_words)?;

    // 3. Segment bits, packing, headers and block_info.
    let f_bits = gpu.function(Module::Huffman, "huff_seg_bits")?;
    let f_pack = gpu.function(Module::Huffman, "huff_encode_pack")?;
    let f_finish = gpu.function(Module::Huffman, "huff_encode_finish")?;
    let (p_data, p_sh, p_bits, p_codes, p_pre, p_descs, p_edges, p_out) = (
        gpu.ptr(data),
        gpu.ptr(&seg_hist),
        gpu.ptr(&seg_bits),
        gpu.ptr(&d_codes),
        gpu.ptr(&d_pre),
        gpu.ptr(&d_descs),
        gpu.ptr(&edges),
        gpu.ptr(&out),
    );
    let n_segs = segs as u32;
    let n_chunks = chunks as u32;
    let finish_items = (chunks * PREAMBLE_WORDS).max(edge);
    let finish_grid = finish_items.div_ceil(ENC_THREADS as usize).clamp(1, 4096) as u32;
    // SAFETY: argument lists match huffman.cu. seg_hist holds 256 words per segment (written
    // by the histogram launch), seg_bits one per segment, codes 256 per chunk, preamble 68 per
    // chunk, descs one per chunk; every segment lies in `data` (n bytes); `out` holds the sum
    // of the planned payload lengths, and each chunk's words (out_word .. out_word + words)
    // are what the kernels write: the packing writes the stream words [0, ceil(stream_bits /
    // 32)) of huffman chunks and ceil(count / 4) data words of raw ones, the finish kernel
    // the preamble and block_count block_info words; edges holds one record per block.
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
    gpu.synchronize()?;
    scratch.seg_hist = Some(seg_hist);
    scratch.chunk_hist = Some(chunk_hist);
    scratch.seg_bits = Some(seg_bits);
    scratch.codes = Some(d_codes);
    scratch.preamble = Some(d_pre);
    scratch.descs = Some(d_descs);
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
        cpu::MODE_HUFFMAN
            if block_bits == cpu::BLOCK_BITS && len as u64 == huffman_len(sb as u64) =>
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
        if ch.mode == cpu::MODE_HUFFMAN {
            let nb = (ch.stream_bits as u64).div_ceil(BLOCK_BITS);
            if ch.words as u64 * 4 != huffman_len(ch.stream_bits as u64) {
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
            });
            huff.push(c);
            blocks += nb;
            groups += nb.div_ceil(DEC_GROUP as u64);
        } else {
            if ch.words != raw_len(ch.count) / 4 {
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
            ("TABLE_SIZE", 1 << cpu::MAX_CODE_LENGTH),
            ("BLOCK_BITS", cpu::BLOCK_BITS as u64),
            ("BLOCK_WORDS", cpu::BLOCK_BITS as u64 / 32),
            ("MAX_SPILL", cpu::MAX_CODE_LENGTH as u64 - 1),
            ("HEADER_WORDS", HEADER_WORDS as u64),
            ("LENGTHS_WORDS", LENGTHS_WORDS as u64),
            ("MODE_RAW", cpu::MODE_RAW as u64),
            ("MODE_HUFFMAN", cpu::MODE_HUFFMAN as u64),
            ("ENTRY_COUNT_SHIFT", 24),
            ("ENTRY_BITS_SHIFT", 26),
            ("SEG_BYTES", SEG_BYTES as u64),
            ("ENC_THREADS", ENC_THREADS as u64),
            ("ENC_ITEMS", ENC_ITEMS as u64),
            ("SUBTILE_BYTES", SUBTILE_BYTES as u64),
            ("HALO_BYTES", 32),
            ("STAGE_WORDS", SUBTILE_BYTES as u64 * 12 / 32 + 2),
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
        // Edge records hold a count up to 2^24 and a spill up to 11.
        assert!(MAX_CHUNK_VALUES as u64 <= EDGE_COUNT_MASK as u64);
        assert!((cpu::MAX_CODE_LENGTH as u64 - 1) << EDGE_SPILL_SHIFT <= u32::MAX as u64);
    }

    #[test]
    fn chunk_structs_have_the_cuda_layout() {
        assert_eq!(std::mem::size_of::<HfEncChunk>(), 40);
        assert_eq!(std::mem::size_of::<HfDecChunk>(), 40);
        assert_eq!(std::mem::size_of::<HfRawChunk>(), 24);
        assert_eq!(std::mem::align_of::<HfDecChunk>(), 8);
    }

    #[test]
    fn host_header_check_agrees_with_the_cpu_decoder() {
        for data in [&b""[..], b"aab", &[7u8; 5000], b"hello huffman hello gpu"] {
            let mut p = Vec::new();
            cpu::encode(data, &mut p).expect("encodes");
            assert!(check_header(&p, data.len()).is_some());
            assert!(check_header(&p, data.len() + 1).is_none());
            assert!(check_header(&p[..p.len() - 4], data.len()).is_none());
        }
    }
}
