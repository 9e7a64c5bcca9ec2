//! Encoding, one pipeline for the whole column (module docs of `huffman`): histograms, the
//! host's plan of every chunk, one upload of every table, the packing launches.

use cudarc::driver::CudaSlice;
use tessera_codecs::huffman as cpu;
use tessera_format::{Error, Result, MAX_CHUNK_VALUES};

use super::histogram::launch_histogram;
use super::{
    check_chunk_bytes, chunk_len, grow, words_to_bytes, ChunkInfo, HfEncChunk, HuffmanEncoded,
    ENC_ROW_WORDS, ENC_THREADS, PREAMBLE_WORDS, STRIP_BYTES,
};
use crate::kernels::Module;
use crate::runtime::{cuda, Gpu};

/// Most thread blocks of `huff_encode_finish`; past them its threads stride over the preamble
/// words and edge records. 4096 thread blocks of 256 threads cover 1 Mi items a round, more
/// than the SMs run at once.
const MAX_FINISH_GRID: usize = 4096;

/// Device scratch of [`encode_device`], grown on demand and reused.
#[derive(Debug, Default)]
pub struct EncodeScratch {
    strip_hist: Option<CudaSlice<u32>>,
    chunk_hist: Option<CudaSlice<u32>>,
    strip_bits: Option<CudaSlice<u32>>,
    /// Descriptors, code tables and preambles of every chunk, uploaded at once.
    tables: Option<CudaSlice<u32>>,
    edges: Option<CudaSlice<u32>>,
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
    /// Strip bit counts, packing, headers and block_info.
    pub pack_ms: f64,
    /// Chunks planned.
    pub chunks: usize,
}

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
/// (a multiple of [`STRIP_BYTES`], at most 2^24; an empty input gives one empty chunk): the
/// histogram launch, one download of all histograms, the host's plan of every chunk (all
/// cores), one upload of all tables, the packing launches; waits for them.
pub fn encode_device(
    gpu: &Gpu,
    data: &CudaSlice<u8>,
    n: usize,
    chunk_bytes: usize,
    scratch: &mut EncodeScratch,
) -> Result<HuffmanEncoded> {
    encode_device_phases(gpu, data, n, chunk_bytes, scratch, false).map(|(enc, _)| enc)
}

/// [`encode_device`], with CUDA events recorded between its phases when `timing` (the
/// benchmarks' phase timings, `bench_hooks::huffman`): `Some` timings exactly then.
pub(crate) fn encode_device_phases(
    gpu: &Gpu,
    data: &CudaSlice<u8>,
    n: usize,
    chunk_bytes: usize,
    scratch: &mut EncodeScratch,
    timing: bool,
) -> Result<(HuffmanEncoded, Option<EncodeTimings>)> {
    check_chunk_bytes(chunk_bytes)?;
    if n > data.len() {
        return Err(Error::InvalidArgument(
            "more bytes than the device buffer holds".into(),
        ));
    }
    let chunks = n.div_ceil(chunk_bytes).max(1);
    let strips = n.div_ceil(STRIP_BYTES);
    let spc = (chunk_bytes / STRIP_BYTES) as u32;
    if strips > u32::MAX as usize / 2 {
        return Err(Error::InvalidArgument(
            "column too large for one GPU encode".into(),
        ));
    }
    let e0 = timing.then(|| event(gpu)).transpose()?;

    // 1. Histograms, one launch; one download.
    let strip_hist = grow(gpu, &mut scratch.strip_hist, strips * 256)?;
    let mut chunk_hist = grow(gpu, &mut scratch.chunk_hist, chunks * 256)?;
    launch_histogram(
        gpu,
        data,
        n,
        chunk_bytes,
        Some(&strip_hist),
        &mut chunk_hist,
    )?;
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
    let strip_bits = grow(gpu, &mut scratch.strip_bits, strips)?;
    let edges = grow(gpu, &mut scratch.edges, edge)?;
    gpu.stream
        .memcpy_htod(&table, &mut d_table.slice_mut(..table.len()))
        .map_err(cuda("copying to the device"))?;
    let out = gpu.alloc::<u32>(total_words)?;
    let e2 = timing.then(|| event(gpu)).transpose()?;

    // 3. Strip bits, packing, headers and block_info.
    let f_bits = gpu.function(Module::Huffman, "huff_strip_bits")?;
    let f_pack = gpu.function(Module::Huffman, "huff_encode_pack")?;
    let f_finish = gpu.function(Module::Huffman, "huff_encode_finish")?;
    let base = gpu.ptr(&d_table);
    let (p_descs, p_codes, p_pre) = (base, base + 4 * codes_at as u64, base + 4 * pre_at as u64);
    let (p_data, p_sh, p_bits, p_edges, p_out) = (
        gpu.ptr(data),
        gpu.ptr(&strip_hist),
        gpu.ptr(&strip_bits),
        gpu.ptr(&edges),
        gpu.ptr(&out),
    );
    let n_strips = strips as u32;
    let n_chunks = chunks as u32;
    let finish_items = (chunks * PREAMBLE_WORDS).max(edge);
    let finish_grid = finish_items
        .div_ceil(ENC_THREADS as usize)
        .clamp(1, MAX_FINISH_GRID) as u32;
    // SAFETY: argument lists match huffman.cu. d_table holds the descriptors (ENC_ROW_WORDS
    // words per chunk, 8-byte aligned at the buffer's start), the code tables (256 words per
    // chunk) and the preambles (68 per chunk); strip_hist holds 256 words per strip (written by
    // the histogram launch), strip_bits one per strip; every strip lies in `data` (n bytes);
    // `out` holds the sum of the planned payload lengths, and each chunk's words (out_word ..
    // out_word + words) are what the kernels write: the packing writes the stream words [0,
    // ceil(stream_bits / 32)) after the chunk's info_words of huffman chunks and ceil(count / 4)
    // data words of raw ones, the finish kernel the preamble and the info_words block_info
    // words; edges holds one record per block.
    unsafe {
        if strips > 0 {
            gpu.launch(
                &f_bits,
                n_strips.div_ceil(ENC_THREADS / 32),
                ENC_THREADS,
                &[&p_sh, &n_strips, &spc, &p_codes, &p_bits],
            )?;
            gpu.launch(
                &f_pack,
                n_strips,
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
    let timings = match (e0, e1, e2, e3) {
        (Some(e0), Some(e1), Some(e2), Some(e3)) => Some(EncodeTimings {
            histogram_ms: elapsed(&e0, &e1)?,
            host_ms: elapsed(&e1, &e2)?,
            plan_ms,
            pack_ms: elapsed(&e2, &e3)?,
            chunks,
        }),
        _ => None,
    };
    scratch.strip_hist = Some(strip_hist);
    scratch.chunk_hist = Some(chunk_hist);
    scratch.strip_bits = Some(strip_bits);
    scratch.tables = Some(d_table);
    scratch.edges = Some(edges);
    let enc = HuffmanEncoded {
        words: out.into(),
        total_words,
        chunk_bytes,
        bytes: n,
        chunks: infos,
    };
    Ok((enc, timings))
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
    let cb = data.len().max(1).next_multiple_of(STRIP_BYTES);
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
