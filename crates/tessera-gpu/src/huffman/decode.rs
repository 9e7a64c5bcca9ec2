//! Decoding: the host checks each chunk's header and payload length (§7 steps 1-4), the
//! kernels everything else; a flagged chunk is decoded again by the CPU decoder for its exact
//! error.

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use tessera_codecs::huffman as cpu;
use tessera_codecs::huffman::{huffman_len, raw_len};
use tessera_format::{Error, Result, MAX_CHUNK_VALUES};

use super::{
    chunk_len, words_to_bytes, ChunkInfo, HfDecChunk, HfRawChunk, HuffmanEncoded, BLOCK_BITS,
    DEC_SLAB, DEC_SMEM_BYTES, DEC_THREADS, RAW_PIECE, TABLE_WORDS,
};
use crate::kernels::Module;
use crate::primitives::scan;
use crate::runtime::buffer::{GpuBuffer, Pack};
use crate::runtime::{cuda, Gpu};

/// A chunk status that reports nothing (`TS_STATUS_OK` in common.cuh).
const STATUS_OK: u64 = u64::MAX;
/// Threads of `huff_decode_tables` (one thread block per chunk), `huff_decode_counts` (one
/// thread per 4096-bit block) and `huff_copy_raw` (one thread block per [`RAW_PIECE`] bytes):
/// their `__launch_bounds__(256)`.
const AUX_THREADS: u32 = 256;
/// Most thread blocks of `huff_decode_counts`; past them its threads stride over the blocks.
/// 2^16 thread blocks of 256 threads cover 16 Mi blocks a round, so the cap only bounds the
/// grid.
const MAX_COUNTS_GRID: u32 = 1 << 16;

/// The device tables and scratch of one decode of a [`HuffmanEncoded`] (its chunk tables
/// uploaded once), so that repeated decodes time only the kernels.
#[derive(Debug)]
pub struct DecodePlan {
    huff: Vec<usize>,
    d_huff: Option<GpuBuffer<HfDecChunk>>,
    d_raw: Option<GpuBuffer<HfRawChunk>>,
    n_raw: u32,
    total_blocks: u32,
    total_slabs: u32,
    total_pieces: u32,
    tables: GpuBuffer<u32>,
    counts: GpuBuffer<u32>,
    offsets: GpuBuffer<u32>,
    partials: GpuBuffer<u32>,
    status: GpuBuffer<u64>,
    /// Whether `status` still holds the all-ones it was uploaded with (a packed upload,
    /// [`upload_packed`]): the first decode then needs no fill.
    status_fresh: bool,
}

/// The host part of a [`DecodePlan`]: the chunk rows of each kind and their totals.
struct HostPlan {
    huff: Vec<usize>,
    hd: Vec<HfDecChunk>,
    rd: Vec<HfRawChunk>,
    blocks: u64,
    slabs: u64,
    pieces: u64,
}

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

/// Checks each chunk's header and payload length on the host (a bad header gives the CPU
/// decoder's error) and lays the chunks' whole payload words back to back.
fn check_chunks<'p>(payloads: &[&'p [u8]], counts: &[usize]) -> Result<CheckedChunks<'p>> {
    if payloads.len() != counts.len() {
        return Err(Error::InvalidArgument(format!(
            "{} payloads for {} chunk sizes",
            payloads.len(),
            counts.len()
        )));
    }
    let mut chunks = Vec::with_capacity(payloads.len());
    let mut pieces: Vec<&[u8]> = Vec::with_capacity(payloads.len());
    let mut total_words = 0usize;
    for (&p, &count) in payloads.iter().zip(counts) {
        let Some((mode, stream_bits)) = check_header(p, count) else {
            return Err(cpu_error(p, count, "header"));
        };
        let words = p.len() / 4;
        chunks.push(ChunkInfo {
            word_offset: total_words,
            words,
            count,
            mode,
            stream_bits,
        });
        pieces.push(&p[..words * 4]);
        total_words += words;
    }
    Ok(CheckedChunks {
        chunks,
        pieces,
        total_words,
    })
}

/// [`check_chunks`]'s chunks and their payloads' whole words.
struct CheckedChunks<'p> {
    chunks: Vec<ChunkInfo>,
    /// Each payload's whole words, in order.
    pieces: Vec<&'p [u8]>,
    total_words: usize,
}

/// Uploads chunk payloads (chunk `c` decodes to `counts[c]` bytes) after checking each
/// header and payload length on the host. A bad header gives the CPU decoder's error.
pub fn upload_chunks(gpu: &Gpu, payloads: &[&[u8]], counts: &[usize]) -> Result<HuffmanEncoded> {
    let CheckedChunks {
        chunks,
        pieces,
        total_words,
    } = check_chunks(payloads, counts)?;
    Ok(HuffmanEncoded {
        words: gpu.upload_words(&pieces, total_words)?.into(),
        total_words,
        chunk_bytes: counts.first().copied().unwrap_or(0),
        bytes: counts.iter().sum(),
        chunks,
    })
}

/// Prepares the decode of `enc`: chunk tables on the device, scratch.
pub fn plan_decode(gpu: &Gpu, enc: &HuffmanEncoded) -> Result<DecodePlan> {
    let HostPlan {
        huff,
        hd,
        rd,
        blocks,
        slabs,
        pieces,
    } = plan_host(&enc.chunks, enc.total_words)?;
    let n_huff = huff.len();
    Ok(DecodePlan {
        d_huff: if hd.is_empty() {
            None
        } else {
            Some(gpu.upload(&hd)?.into())
        },
        d_raw: if rd.is_empty() {
            None
        } else {
            Some(gpu.upload(&rd)?.into())
        },
        n_raw: rd.len() as u32,
        total_blocks: blocks as u32,
        total_slabs: slabs as u32,
        total_pieces: pieces as u32,
        tables: gpu.alloc(n_huff * TABLE_WORDS)?.into(),
        counts: gpu.alloc(blocks as usize)?.into(),
        offsets: gpu.alloc(blocks as usize + 1)?.into(),
        partials: gpu.alloc(scan::partials_len(blocks))?.into(),
        status: gpu.alloc(n_huff)?.into(),
        status_fresh: false,
        huff,
    })
}

/// [`upload_chunks`] and [`plan_decode`] in one while uploads are staged: the payloads, the
/// chunk rows, the decoder's scratch and its status words (all ones) in one device allocation
/// filled by one staged copy, each a view of it, instead of an allocation and a copy each.
/// `None` when uploads are not staged.
fn upload_packed(
    gpu: &Gpu,
    payloads: &[&[u8]],
    counts: &[usize],
) -> Result<Option<(HuffmanEncoded, DecodePlan)>> {
    let CheckedChunks {
        chunks,
        pieces,
        total_words,
    } = check_chunks(payloads, counts)?;
    let h = plan_host(&chunks, total_words)?;
    let n_huff = h.huff.len();
    let blocks = h.blocks as usize;
    let status = vec![0xFFu8; n_huff.max(1) * 8];
    let mut pack = Pack::default();
    let words_at = pack.place(&pieces, 4);
    let hd_at = pack.place_values(&h.hd);
    let rd_at = pack.place_values(&h.rd);
    let counts_at = pack.reserve::<u32>(blocks);
    let offsets_at = pack.reserve::<u32>(blocks + 1);
    let partials_at = pack.reserve::<u32>(scan::partials_len(h.blocks));
    let status_at = pack.place(&[&status], 8);
    // The tables (32 KiB a chunk) are written whole by `huff_decode_tables` before any read:
    // room after the copied parts, not zeros copied over.
    let tables_at = pack.tail((n_huff * TABLE_WORDS).max(1) * 4);
    let Some(arena) = gpu.upload_pack(&pack)? else {
        return Ok(None);
    };
    let enc = HuffmanEncoded {
        words: arena.view(gpu, words_at, total_words.max(1))?,
        total_words,
        chunk_bytes: counts.first().copied().unwrap_or(0),
        bytes: counts.iter().sum(),
        chunks,
    };
    let plan = DecodePlan {
        d_huff: if h.hd.is_empty() {
            None
        } else {
            Some(arena.view(gpu, hd_at, h.hd.len())?)
        },
        d_raw: if h.rd.is_empty() {
            None
        } else {
            Some(arena.view(gpu, rd_at, h.rd.len())?)
        },
        n_raw: h.rd.len() as u32,
        total_blocks: h.blocks as u32,
        total_slabs: h.slabs as u32,
        total_pieces: h.pieces as u32,
        tables: arena.view(gpu, tables_at, (n_huff * TABLE_WORDS).max(1))?,
        counts: arena.view(gpu, counts_at, blocks.max(1))?,
        offsets: arena.view(gpu, offsets_at, blocks + 1)?,
        partials: arena.view(gpu, partials_at, scan::partials_len(h.blocks))?,
        status: arena.view(gpu, status_at, n_huff.max(1))?,
        status_fresh: true,
        huff: h.huff,
    };
    Ok(Some((enc, plan)))
}

/// The chunk rows of a decode of `chunks` (payloads in `total_words` words), checked.
fn plan_host(chunks: &[ChunkInfo], total_words: usize) -> Result<HostPlan> {
    let mut huff = Vec::new();
    let mut hd = Vec::new();
    let mut rd = Vec::new();
    let (mut blocks, mut slabs, mut pieces, mut out) = (0u64, 0u64, 0u64, 0u64);
    for (c, ch) in chunks.iter().enumerate() {
        if ch.word_offset + ch.words > total_words || ch.count > MAX_CHUNK_VALUES as usize {
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
                first_slab: slabs as u32,
                table: huff.len() as u32,
                mode: ch.mode,
                info_words: (cpu::block_info_bytes(ch.mode, nb) / 4) as u32,
            });
            huff.push(c);
            blocks += nb;
            slabs += nb.div_ceil(DEC_SLAB as u64);
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
    Ok(HostPlan {
        huff,
        hd,
        rd,
        blocks,
        slabs,
        pieces,
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
    enqueue_planned(gpu, enc, plan, out)?;
    let mut status = vec![STATUS_OK; plan.huff.len()];
    if !status.is_empty() {
        gpu.download(&plan.status, &mut status)?;
    } else {
        gpu.synchronize()?;
    }
    check_planned(gpu, enc, plan, &status)
}

/// The device address and byte length of a plan's status words (one u64 a Huffman chunk),
/// which [`enqueue_planned`] fills.
pub(crate) fn planned_status(gpu: &Gpu, plan: &DecodePlan) -> (u64, usize) {
    (gpu.ptr(&plan.status), plan.huff.len() * 8)
}

/// Queues [`decode_planned`]'s launches without waiting; [`check_planned`] reads the verdict
/// from the status words once they are back on the host.
pub(crate) fn enqueue_planned(
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
        // A packed upload left the words all ones for the first decode; later ones refill them.
        if !std::mem::take(&mut plan.status_fresh) {
            gpu.fill_bytes(&mut plan.status, 0xFF)?;
        }
        let f_tables = gpu.function(Module::Huffman, "huff_decode_tables")?;
        let f_counts = gpu.function(Module::Huffman, "huff_decode_counts")?;
        let f_blocks = gpu.function(Module::Huffman, "huff_decode_blocks")?;
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
        let counts_grid = nb.div_ceil(AUX_THREADS).clamp(1, MAX_COUNTS_GRID);
        // SAFETY: argument lists match huffman.cu. d_huff holds n_huff rows whose
        // payload_word + words lie in enc.words (checked by plan_decode) and whose headers
        // were checked on the host; tables hold TABLE_WORDS per huffman chunk, counts nb
        // words, offsets nb + 1, partials scan::partials_len(nb), status one per huffman chunk;
        // every output range (out_index .. + total_count) lies in `out` (checked above). The
        // decoder's dynamic shared memory is DEC_SMEM_BYTES, as the kernel lays it out.
        unsafe {
            gpu.launch(
                &f_tables,
                n_huff,
                AUX_THREADS,
                &[&p_chunks, &p_words, &p_tables, &p_status],
            )?;
            if nb > 0 {
                gpu.launch(
                    &f_counts,
                    counts_grid,
                    AUX_THREADS,
                    &[&p_chunks, &n_huff, &p_words, &nb, &p_counts, &p_status],
                )?;
                // Each block's output offset (`offsets[nb]` the total).
                scan::offsets_u32(gpu, p_counts, u64::from(nb), p_offsets, p_partials)?;
                let _op = crate::runtime::trace::count(crate::runtime::trace::Op::Launch);
                let mut b = gpu.stream.launch_builder(&f_blocks);
                b.arg(&p_chunks)
                    .arg(&n_huff)
                    .arg(&p_words)
                    .arg(&p_tables)
                    .arg(&p_offsets)
                    .arg(&p_out)
                    .arg(&p_status);
                b.launch(LaunchConfig {
                    grid_dim: (plan.total_slabs.max(1), 1, 1),
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
                    AUX_THREADS,
                    &[&p_raw, &plan.n_raw, &p_words, &p_out],
                )?;
            }
        }
    }
    Ok(())
}

/// The first corrupt chunk's CPU error from a plan's status words (`status`, read back after
/// [`enqueue_planned`]; fewer words than chunks is an error, never a panic).
pub(crate) fn check_planned(
    gpu: &Gpu,
    enc: &HuffmanEncoded,
    plan: &DecodePlan,
    status: &[u64],
) -> Result<()> {
    if status.len() < plan.huff.len() {
        return Err(Error::Gpu(format!(
            "{} Huffman status words read back, {} chunks",
            status.len(),
            plan.huff.len()
        )));
    }
    if let Some(i) = status[..plan.huff.len()]
        .iter()
        .position(|&s| s != STATUS_OK)
    {
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

/// Canonical Huffman chunks of bytes (and utf8 text) columns, all of a column's in one launch
/// sequence.
#[derive(Debug)]
pub struct HuffmanDecoder;

struct HuffmanBatch {
    enc: HuffmanEncoded,
    plan: Box<DecodePlan>,
}

impl crate::codec::GpuDecoder for HuffmanDecoder {
    fn name(&self) -> &'static str {
        "huffman"
    }

    fn serves(&self, codec: tessera_format::CodecId, ty: tessera_format::LogicalType) -> bool {
        codec == tessera_format::CodecId::Huffman && ty == tessera_format::LogicalType::Bytes
    }

    fn upload<'a>(
        &self,
        gpu: &Gpu,
        _ty: tessera_format::LogicalType,
        chunks: &[crate::ChunkRef<'a>],
    ) -> Result<Box<dyn crate::codec::GpuBatch + 'a>> {
        let payloads: Vec<&[u8]> = chunks.iter().map(|c| c.payload).collect();
        let counts: Vec<usize> = chunks.iter().map(|c| c.value_count as usize).collect();
        if let Some((enc, plan)) = upload_packed(gpu, &payloads, &counts)? {
            return Ok(Box::new(HuffmanBatch {
                enc,
                plan: Box::new(plan),
            }));
        }
        let enc = upload_chunks(gpu, &payloads, &counts)?;
        let plan = Box::new(plan_decode(gpu, &enc)?);
        Ok(Box::new(HuffmanBatch { enc, plan }))
    }
}

impl crate::codec::GpuBatch for HuffmanBatch {
    fn decoded_bytes(&self) -> usize {
        self.enc.bytes
    }

    fn decode(&mut self, gpu: &Gpu, out: &mut CudaSlice<u8>) -> Result<()> {
        decode_planned(gpu, &self.enc, &mut self.plan, out)
    }

    fn enqueue(&mut self, gpu: &Gpu, out: &mut CudaSlice<u8>) -> Result<Option<(u64, usize)>> {
        enqueue_planned(gpu, &self.enc, &mut self.plan, out)?;
        Ok(Some(planned_status(gpu, &self.plan)))
    }

    fn check(&self, gpu: &Gpu, status: &[u8]) -> Result<()> {
        let words: Vec<u64> = status
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            .collect();
        check_planned(gpu, &self.enc, &self.plan, &words)
    }
}
