//! CODAG: standard formats decoded on the GPU one warp per chunk (kernels in `kernels/codag/`,
//! how they work in `docs/gpu/codag.md`), after Park et al., *CODAG: Characterizing and
//! Optimizing Decompression Algorithms for GPUs*.
//!
//! A batch is any number of independent chunks of one [`Decoder`]: ORC integer streams (RLE v1,
//! RLE v2), byte-RLE (and boolean) streams, or raw Deflate streams. The host lays the chunks'
//! bytes out 4-byte aligned in one buffer, writes a table of (input offset, input length, output
//! offset, output capacity) rows ([`ChunkDesc`]), and one launch decodes them all, a warp per
//! chunk. Each chunk gets a status, its output length and the input bytes it used
//! ([`ChunkResult`]).
//!
//! Errors: the kernels flag a chunk whenever the CPU reference rejects it (`tessera_codecs::orc`,
//! `tessera_codecs::deflate`); the host then re-runs that reference on the flagged chunk so the
//! error is the CPU's exact [`Error`], wrapped in [`Error::InChunk`] with the chunk's index. A
//! chunk the GPU flags and the CPU accepts is reported as [`Error::Gpu`] (a disagreement: a
//! bug). Nothing is allocated from a stream's contents: the output size is the caller's.

use cudarc::driver::{CudaSlice, DeviceRepr};
use tessera_codecs::{deflate as cpu_deflate, orc as cpu_orc};
use tessera_format::{Error, Result};

use crate::kernels::Module;
use crate::runtime::Gpu;

mod gzip;
pub mod spans;
pub use gzip::{
    gunzip, gunzip_many, gunzip_many_with_report, gunzip_single, GunzipManyReport, GunzipReport,
    MANY_ALONE_BYTES, MANY_LAUNCH_BYTES, SPAN_BYTES, SPAN_MIN_BYTES,
};

/// Warps per thread block (`CODAG_WARPS`).
pub const WARPS: u32 = 4;
/// Status names by code (`CODAG_ST_*` in `warp_decoder.cuh`).
pub const STATUS_NAMES: [&str; 11] = [
    "ok",
    "input truncated",
    "output past the chunk's capacity",
    "bad header",
    "bad varint",
    "patch index past the run",
    "Deflate block type 3",
    "stored block LEN != ~NLEN",
    "bad Huffman table",
    "no Huffman code",
    "distance before the start of the output",
];

/// Deflate kernels other than the default `codag_deflate` (the speculative loop, decision 0039,
/// with fused matches and two pending sets on blocks whose code expects mostly lengths,
/// decisions 0047 and 0048) that `TESSERA_CODAG_DEFLATE_KERNEL` selects, for measurements: the
/// default before, with one pending set (`codag_deflate_f1`), the speculative loop without fused
/// matches (`codag_deflate_spec`), with them on every block (`codag_deflate_fused`), the span
/// path's block loop (`codag_deflate_ref`), the batch loop (`codag_deflate_batch`), and the batch
/// loop on the lean tables at 40 warps per SM (`codag_deflate_w40`; decision 0034).
/// Variants under measurement are added here and to `kernels/codag/codag.cu`; the bench times
/// every one against the default (`TESSERA_CODAG_COMPARE_REF`).
pub const DEFLATE_VARIANTS: [&str; 6] = [
    "codag_deflate_f1",
    "codag_deflate_spec",
    "codag_deflate_fused",
    "codag_deflate_ref",
    "codag_deflate_batch",
    "codag_deflate_w40",
];

/// Which decoder a batch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoder {
    /// ORC integer RLE v1 (`i64` outputs).
    OrcRleV1,
    /// ORC integer RLE v2 (`i64` outputs).
    OrcRleV2,
    /// ORC byte RLE (bytes; a boolean stream's packed bytes too).
    OrcByteRle,
    /// Raw Deflate (RFC 1951), bytes.
    Deflate,
}

impl Decoder {
    fn kernel(self) -> &'static str {
        match self {
            Decoder::OrcRleV1 => "codag_orc_rle_v1",
            Decoder::OrcRleV2 => "codag_orc_rle_v2",
            Decoder::OrcByteRle => "codag_orc_byte_rle",
            // The previous block loop and the measured variants stay selectable so a run can
            // time them against the default on one build.
            Decoder::Deflate => match std::env::var("TESSERA_CODAG_DEFLATE_KERNEL") {
                Ok(k) => DEFLATE_VARIANTS
                    .iter()
                    .find(|v| **v == k)
                    .copied()
                    .unwrap_or("codag_deflate"),
                Err(_) => "codag_deflate",
            },
        }
    }
    /// Bytes of one output element.
    pub fn elem_bytes(self) -> usize {
        match self {
            Decoder::OrcRleV1 | Decoder::OrcRleV2 => 8,
            Decoder::OrcByteRle | Decoder::Deflate => 1,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Decoder::OrcRleV1 => "orc-rle-v1",
            Decoder::OrcRleV2 => "orc-rle-v2",
            Decoder::OrcByteRle => "orc-byte-rle",
            Decoder::Deflate => "deflate",
        }
    }
}

/// One chunk of a batch.
#[derive(Debug, Clone, Copy)]
pub struct Chunk<'a> {
    /// The chunk's compressed bytes.
    pub input: &'a [u8],
    /// Output elements: ORC decoders must produce exactly this many, Deflate at most this many.
    pub out_cap: usize,
    /// ORC integer streams: signed (zigzag) rather than unsigned.
    pub signed: bool,
}

/// One row of the chunk table (`struct CodagChunk` in `warp_decoder.cuh`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkDesc {
    /// First input byte (a multiple of 4).
    pub in_start: u64,
    /// First output element.
    pub out_start: u64,
    /// Input bytes.
    pub in_len: u32,
    /// Output elements.
    pub out_cap: u32,
    /// Bit 0: signed.
    pub param: u32,
    /// Zero.
    pub reserved: u32,
}

// SAFETY: plain-old-data, `#[repr(C)]`, laid out like the CUDA struct (32 bytes).
unsafe impl DeviceRepr for ChunkDesc {}

/// What the kernel reports for one chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkResult {
    /// `CODAG_ST_*` code; 0 is success ([`STATUS_NAMES`]).
    pub status: u32,
    /// Output elements written.
    pub out_len: usize,
    /// Input bytes used (Deflate: up to the end of the final block).
    pub in_used: usize,
}

/// A batch on the device, ready to decode: its chunks laid out in one uploaded buffer, and
/// their [`DeviceTable`].
pub struct DeviceBatch {
    bytes: CudaSlice<u8>,
    table: DeviceTable,
    in_len: usize,
}

impl std::fmt::Debug for DeviceBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBatch")
            .field("table", &self.table)
            .field("in_len", &self.in_len)
            .finish_non_exhaustive()
    }
}

/// The table and the padded input image of a batch.
pub fn layout(chunks: &[Chunk<'_>]) -> Result<(Vec<ChunkDesc>, Vec<u8>, usize)> {
    let mut descs = Vec::with_capacity(chunks.len());
    let mut bytes = Vec::new();
    let mut out = 0usize;
    for (c, ch) in chunks.iter().enumerate() {
        let too_big =
            |what: &str| Error::InvalidArgument(format!("CODAG chunk {c}: {what} over 2^32 - 1"));
        let in_len = u32::try_from(ch.input.len()).map_err(|_| too_big("input bytes"))?;
        let out_cap = u32::try_from(ch.out_cap).map_err(|_| too_big("output elements"))?;
        let at = bytes.len().next_multiple_of(16);
        bytes.resize(at, 0);
        bytes.extend_from_slice(ch.input);
        descs.push(ChunkDesc {
            in_start: at as u64,
            out_start: out as u64,
            in_len,
            out_cap,
            param: ch.signed as u32,
            reserved: 0,
        });
        out = out
            .checked_add(ch.out_cap)
            .ok_or_else(|| too_big("total output"))?;
    }
    // The kernel reads whole words: the last chunk's last word must exist.
    bytes.resize(bytes.len().next_multiple_of(16) + 16, 0);
    Ok((descs, bytes, out))
}

impl DeviceBatch {
    /// Lays the chunks out and uploads them with their table.
    pub fn upload(gpu: &Gpu, decoder: Decoder, chunks: &[Chunk<'_>]) -> Result<DeviceBatch> {
        let (descs, bytes, _) = layout(chunks)?;
        let table = DeviceTable::new(gpu, decoder, bytes.len(), &descs)?;
        Ok(DeviceBatch {
            bytes: gpu.upload(&bytes)?,
            table,
            in_len: chunks.iter().map(|c| c.input.len()).sum(),
        })
    }
    /// Output bytes the batch needs (every chunk's capacity).
    pub fn out_bytes(&self) -> usize {
        self.table.out_bytes()
    }
    /// Compressed bytes of all chunks.
    pub fn in_bytes(&self) -> usize {
        self.in_len
    }
    /// Chunks in the batch.
    pub fn chunk_count(&self) -> usize {
        self.table.descs.len()
    }
    /// Where chunk `c`'s output starts, in elements.
    pub fn out_start(&self, c: usize) -> usize {
        self.table.descs[c].out_start as usize
    }
}

/// Queues the decode of every chunk of `batch` into `out` (at least `batch.out_bytes()`, 8-byte
/// aligned as device allocations are) on the main stream.
pub fn enqueue(gpu: &Gpu, batch: &DeviceBatch, out: &mut CudaSlice<u8>) -> Result<()> {
    batch.table.enqueue(gpu, &batch.bytes, out)
}

/// Waits for the batch and returns each chunk's result.
pub fn results(gpu: &Gpu, batch: &DeviceBatch) -> Result<Vec<ChunkResult>> {
    batch.table.results(gpu)
}

/// A batch whose input already lies on the device: chunks are byte ranges of one device buffer
/// (a file uploaded once, or the output of an earlier batch, e.g. inflated streams decoded by
/// an RLE decoder in place), so nothing goes back to the host between launches. Chunks may start
/// at any byte and may share input bytes; each writes its own output range.
pub struct DeviceTable {
    decoder: Decoder,
    table: CudaSlice<ChunkDesc>,
    status: CudaSlice<u32>,
    out_lens: CudaSlice<u32>,
    in_used: CudaSlice<u32>,
    descs: Vec<ChunkDesc>,
    in_len: usize,
    out_elems: usize,
}

impl std::fmt::Debug for DeviceTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceTable")
            .field("decoder", &self.decoder)
            .field("chunks", &self.descs.len())
            .field("in_len", &self.in_len)
            .field("out_elems", &self.out_elems)
            .finish_non_exhaustive()
    }
}

impl DeviceTable {
    /// Checks `chunks` against an input buffer of `input_len` bytes (every word the kernel
    /// reads for a chunk lies inside it) and uploads the table. `in_start` may be any byte;
    /// `out_start` and `out_cap` are in output elements.
    pub fn new(
        gpu: &Gpu,
        decoder: Decoder,
        input_len: usize,
        chunks: &[ChunkDesc],
    ) -> Result<DeviceTable> {
        let mut out_elems = 0u64;
        for (c, d) in chunks.iter().enumerate() {
            let skew = d.in_start & 3;
            let words_end = (d.in_start - skew)
                .checked_add((u64::from(d.in_len) + skew).next_multiple_of(4))
                .filter(|&e| e <= input_len as u64);
            if words_end.is_none() || d.in_len > u32::MAX - 3 {
                return Err(Error::InvalidArgument(format!(
                    "CODAG chunk {c}: input bytes {}..+{} (with their words) outside the device \
                     buffer of {input_len} bytes",
                    d.in_start, d.in_len
                )));
            }
            let end = d
                .out_start
                .checked_add(u64::from(d.out_cap))
                .ok_or_else(|| Error::InvalidArgument(format!("CODAG chunk {c}: output end")))?;
            out_elems = out_elems.max(end);
        }
        let out_elems = usize::try_from(out_elems)
            .map_err(|_| Error::InvalidArgument("CODAG output over the address space".into()))?;
        let n = chunks.len();
        Ok(DeviceTable {
            decoder,
            table: gpu.upload(chunks)?,
            status: gpu.alloc::<u32>(n)?,
            out_lens: gpu.alloc::<u32>(n)?,
            in_used: gpu.alloc::<u32>(n)?,
            descs: chunks.to_vec(),
            in_len: input_len,
            out_elems,
        })
    }
    /// Output bytes the table needs (the end of the last output range).
    pub fn out_bytes(&self) -> usize {
        self.out_elems * self.decoder.elem_bytes()
    }
    /// The chunks' rows.
    pub fn descs(&self) -> &[ChunkDesc] {
        &self.descs
    }
    /// Queues the decode of every chunk from `input` (the buffer the table was checked
    /// against) into `out` on the main stream.
    pub fn enqueue(&self, gpu: &Gpu, input: &CudaSlice<u8>, out: &mut CudaSlice<u8>) -> Result<()> {
        if input.len() < self.in_len || out.len() < self.out_bytes() {
            return Err(Error::InvalidArgument(format!(
                "CODAG device batch: input of {} bytes ({} checked), output of {} bytes ({} \
                 needed)",
                input.len(),
                self.in_len,
                out.len(),
                self.out_bytes()
            )));
        }
        let n = self.descs.len() as u32;
        if n == 0 {
            return Ok(());
        }
        let f = gpu.function(Module::Codag, self.decoder.kernel())?;
        let grid = n.div_ceil(WARPS).min(i32::MAX as u32);
        let (d_in, d_table, d_out) = (gpu.ptr(input), gpu.ptr(&self.table), gpu.ptr(out));
        let (d_st, d_len, d_used) = (
            gpu.ptr(&self.status),
            gpu.ptr(&self.out_lens),
            gpu.ptr(&self.in_used),
        );
        // SAFETY: the arguments match `codag_*(const u8*, const CodagChunk*, u32, T*, u32*,
        // u32*, u32*)`; every chunk's words lie inside `input` (checked in `new` against
        // `in_len`, and `input` is at least that long), every output range inside `out` (checked
        // above), one result word per chunk; all outlive the launch (callers synchronize before
        // dropping them).
        unsafe {
            gpu.launch(
                &f,
                grid,
                WARPS * 32,
                &[&d_in, &d_table, &n, &d_out, &d_st, &d_len, &d_used],
            )
        }
    }
    /// Waits for the launch and returns each chunk's result.
    pub fn results(&self, gpu: &Gpu) -> Result<Vec<ChunkResult>> {
        let n = self.descs.len();
        let (mut st, mut len, mut used) = (vec![0u32; n], vec![0u32; n], vec![0u32; n]);
        gpu.download(&self.status, &mut st)?;
        gpu.download(&self.out_lens, &mut len)?;
        gpu.download(&self.in_used, &mut used)?;
        Ok((0..n)
            .map(|c| ChunkResult {
                status: st[c],
                out_len: len[c] as usize,
                in_used: used[c] as usize,
            })
            .collect())
    }
}

/// Copies `bytes` to a new device buffer with `pad` zero bytes after them, so chunks that end
/// near the end of `bytes` have the whole words a [`DeviceTable`] reads. Large inputs go
/// through the handle's page-locked ring ([`Gpu::upload_pageable`]).
pub fn upload_padded(gpu: &Gpu, bytes: &[u8], pad: usize) -> Result<CudaSlice<u8>> {
    let len = bytes
        .len()
        .checked_add(pad)
        .ok_or_else(|| Error::InvalidArgument("upload size over the address space".into()))?;
    let mut d = gpu.alloc::<u8>(len)?;
    gpu.fill_bytes(&mut d, 0)?;
    gpu.upload_pageable(bytes, &mut d)?;
    Ok(d)
}

/// Copies `dst.len()` bytes of `src` from byte `at` to the host (waits for the stream).
pub fn download_range(gpu: &Gpu, src: &CudaSlice<u8>, at: usize, dst: &mut [u8]) -> Result<()> {
    if dst.is_empty() {
        return Ok(());
    }
    let view = src
        .try_slice(at..at.saturating_add(dst.len()))
        .ok_or_else(|| Error::InvalidArgument("download range outside the device buffer".into()))?;
    gpu.stream
        .memcpy_dtoh(&view, dst)
        .map_err(crate::runtime::cuda("copying from the device"))?;
    gpu.synchronize()
}

/// The CPU reference's verdict on a chunk the GPU flagged.
pub fn cpu_error(decoder: Decoder, chunk: &Chunk<'_>, c: usize, status: u32) -> Error {
    let verdict = match decoder {
        Decoder::OrcRleV1 => {
            cpu_orc::decode_rle_v1(chunk.input, chunk.signed, &mut vec![0; chunk.out_cap])
                .map(|_| ())
        }
        Decoder::OrcRleV2 => {
            cpu_orc::decode_rle_v2(chunk.input, chunk.signed, &mut vec![0; chunk.out_cap])
                .map(|_| ())
        }
        Decoder::OrcByteRle => {
            cpu_orc::decode_byte_rle(chunk.input, &mut vec![0; chunk.out_cap]).map(|_| ())
        }
        Decoder::Deflate => cpu_deflate::inflate(chunk.input, chunk.out_cap).map(|_| ()),
    };
    match verdict {
        Err(e) => Error::InChunk {
            column: String::new(),
            chunk: c as u64,
            codec: decoder.name(),
            source: Box::new(e),
        },
        Ok(()) => Error::Gpu(format!(
            "CODAG {}: the GPU flagged chunk {c} ({}), the CPU decoder accepts it",
            decoder.name(),
            STATUS_NAMES
                .get(status as usize)
                .unwrap_or(&"unknown status")
        )),
    }
}

/// Decodes a batch on the GPU and returns each chunk's output (ORC integers as `i64` bit
/// patterns in little-endian bytes, bytes as they are) or its typed error.
pub fn decode_chunks(
    gpu: &Gpu,
    decoder: Decoder,
    chunks: &[Chunk<'_>],
) -> Result<Vec<Result<Vec<u8>>>> {
    Ok(decode_chunks_with_results(gpu, decoder, chunks)?
        .into_iter()
        .map(|(_, r)| r)
        .collect())
}

/// One launch over a batch's chunks with its output image copied back to the host.
pub(crate) struct HostImage {
    /// Each chunk's result.
    pub results: Vec<ChunkResult>,
    /// The whole output image.
    pub host: Vec<u8>,
    /// Where each chunk's output starts in `host`, in bytes.
    pub out_at: Vec<usize>,
    /// Bytes per output element.
    pub elem_bytes: usize,
}

impl HostImage {
    /// Chunk `c`'s output bytes, `None` when the kernel flagged it (or the result lies outside
    /// the image).
    pub fn output(&self, c: usize) -> Option<&[u8]> {
        let r = self.results.get(c)?;
        if r.status != 0 {
            return None;
        }
        let at = *self.out_at.get(c)?;
        self.host
            .get(at..at.checked_add(r.out_len.checked_mul(self.elem_bytes)?)?)
    }
}

/// Decodes `chunks` in one launch and copies the output image back.
pub(crate) fn decode_to_host(
    gpu: &Gpu,
    decoder: Decoder,
    chunks: &[Chunk<'_>],
) -> Result<HostImage> {
    let batch = DeviceBatch::upload(gpu, decoder, chunks)?;
    let mut out = gpu.alloc::<u8>(batch.out_bytes().max(8))?;
    enqueue(gpu, &batch, &mut out)?;
    let results = results(gpu, &batch)?;
    let mut host = vec![0u8; batch.out_bytes()];
    gpu.download(&out, &mut host)?;
    let elem_bytes = decoder.elem_bytes();
    let out_at = (0..chunks.len())
        .map(|c| batch.out_start(c) * elem_bytes)
        .collect();
    Ok(HostImage {
        results,
        host,
        out_at,
        elem_bytes,
    })
}

/// [`decode_chunks`] with each chunk's [`ChunkResult`] (input bytes used, output length).
pub fn decode_chunks_with_results(
    gpu: &Gpu,
    decoder: Decoder,
    chunks: &[Chunk<'_>],
) -> Result<Vec<(ChunkResult, Result<Vec<u8>>)>> {
    let img = decode_to_host(gpu, decoder, chunks)?;
    Ok(img
        .results
        .iter()
        .enumerate()
        .map(|(c, r)| match img.output(c) {
            Some(data) => (*r, Ok(data.to_vec())),
            None => (*r, Err(cpu_error(decoder, &chunks[c], c, r.status))),
        })
        .collect())
}

/// ORC integer chunks (`(stream, values)`, all signed or all unsigned) decoded on the GPU; the
/// first bad chunk's error.
pub fn decode_orc_ints(
    gpu: &Gpu,
    v2: bool,
    signed: bool,
    chunks: &[(&[u8], usize)],
) -> Result<Vec<Vec<i64>>> {
    let cs: Vec<Chunk<'_>> = chunks
        .iter()
        .map(|&(input, n)| Chunk {
            input,
            out_cap: n,
            signed,
        })
        .collect();
    let dec = if v2 {
        Decoder::OrcRleV2
    } else {
        Decoder::OrcRleV1
    };
    decode_chunks(gpu, dec, &cs)?
        .into_iter()
        .map(|r| {
            r.map(|b| {
                b.chunks_exact(8)
                    .map(|w| i64::from_le_bytes(w.try_into().unwrap_or([0; 8])))
                    .collect()
            })
        })
        .collect()
}

/// Raw Deflate streams (`(stream, most output bytes)`) inflated on the GPU in one launch; the
/// first bad chunk's error.
pub fn inflate_batch(gpu: &Gpu, chunks: &[(&[u8], usize)]) -> Result<Vec<Vec<u8>>> {
    let cs: Vec<Chunk<'_>> = chunks
        .iter()
        .map(|&(input, out_cap)| Chunk {
            input,
            out_cap,
            signed: false,
        })
        .collect();
    decode_chunks(gpu, Decoder::Deflate, &cs)?
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_desc_is_32_bytes_and_status_names_match_the_kernel() {
        assert_eq!(std::mem::size_of::<ChunkDesc>(), 32);
        let h = crate::kernels::header("codag/warp_decoder.cuh").expect("embedded");
        let codes: Vec<u32> = h
            .lines()
            .filter_map(|l| l.strip_prefix("#define CODAG_ST_"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
            .collect();
        assert_eq!(codes, (0..STATUS_NAMES.len() as u32).collect::<Vec<_>>());
        assert!(h.contains(&format!("#define CODAG_WARPS {WARPS}")));
    }

    #[test]
    fn layout_aligns_chunks_and_pads_the_last_word() {
        let a = [1u8; 5];
        let b = [2u8; 3];
        let (d, bytes, out) = layout(&[
            Chunk {
                input: &a,
                out_cap: 7,
                signed: true,
            },
            Chunk {
                input: &b,
                out_cap: 2,
                signed: false,
            },
        ])
        .expect("fits");
        assert_eq!((d[0].in_start, d[1].in_start), (0, 16));
        assert_eq!((d[0].out_start, d[1].out_start, out), (0, 7, 9));
        assert_eq!((d[0].param, d[1].param), (1, 0));
        assert!(bytes.len() >= 16 + 4);
        assert_eq!(&bytes[16..19], &b);
    }
}
