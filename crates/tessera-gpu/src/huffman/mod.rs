//! Canonical Huffman on the GPU (`docs/format/huffman.md`, "GPU notes"): histogram
//! (`histogram.rs`), encoding byte-identical to [`tessera_codecs::huffman::encode`]
//! (`encode.rs`), and block-parallel decoding that matches [`tessera_codecs::huffman::decode`]
//! byte for byte and error variant for variant (`decode.rs`).
//!
//! A column of bytes is cut into chunks of `chunk_bytes` bytes (a multiple of [`STRIP_BYTES`],
//! at most 2^24; the last chunk may be shorter), each one payload of the format. How the
//! kernels work is told at the top of `kernels/huffman/huffman.cu`. The host's share:
//! - encoding, one pipeline for the whole column: one histogram launch for all chunks, one
//!   download of every chunk's 256-entry histogram, the CPU encoder's own per-chunk decision
//!   ([`tessera_codecs::huffman::plan_chunks`]: package-merge, canonical codes, raw or mode 2;
//!   all cores) so that every payload's length and place are known before a bit is packed, one
//!   upload of every chunk's descriptor, code table and preamble, then the packing launches
//!   (`bench_hooks::huffman` times the three phases with CUDA events);
//! - decoding: it checks each chunk's header and payload length (§7 steps 1-4) on the host,
//!   the kernels check everything else and leave a status per chunk; on any flag the host
//!   re-runs the CPU decoder on that chunk and returns its exact [`Error`].
//!
//! Invariants: every kernel argument points into a buffer sized here from checked header
//! fields and the caller's output size; every public function synchronizes before returning.

use cudarc::driver::{CudaSlice, DeviceRepr};
use tessera_codecs::huffman as cpu;
use tessera_format::{Error, Result, MAX_CHUNK_VALUES};

use crate::runtime::Gpu;

pub(crate) mod decode;
pub(crate) mod encode;
pub(crate) mod histogram;

pub use decode::{
    decode, decode_chunks, decode_device, decode_planned, plan_decode, upload_chunks, DecodePlan,
    HuffmanDecoder,
};
pub use encode::{download_encoded, encode, encode_chunks, encode_device, EncodeScratch};
pub use histogram::{histogram, histogram_device};

/// Input bytes per encoder strip (`HF_STRIP_BYTES`): chunk sizes are multiples of it.
pub const STRIP_BYTES: usize = 32768;
/// Threads of the encoder kernels (`HF_ENC_THREADS`).
pub const ENC_THREADS: u32 = 256;
/// Bytes per encoder thread and sub-tile (`HF_ENC_ITEMS`, `HF_SUBTILE_BYTES`).
pub const ENC_ITEMS: usize = 16;
pub const SUBTILE_BYTES: usize = 4096;
/// Threads of the decoder and 4096-bit blocks per decoder thread block (`HF_DEC_*`).
pub const DEC_THREADS: u32 = 128;
pub const DEC_SLAB: usize = 128;
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
pub const DEC_FIRST_SLAB: usize = 8;
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

/// Dynamic shared memory of `huff_decode_blocks`: the multi-symbol table (16 KiB), the slab's
/// stream (65.5 KiB), output slots (16.5 KiB). The 16 KiB single-symbol table is read from
/// global memory through L1 (block tails and 13-bit codes only), which keeps two thread blocks
/// per H100 SM.
pub const DEC_SMEM_BYTES: u32 =
    (4 * MULTI_SIZE + 4 * DEC_SLAB * STAGE_STRIDE + DEC_THREADS as usize * OUT_STRIDE) as u32;

const HEADER_WORDS: usize = cpu::HEADER_BYTES / 4;
const LENGTHS_WORDS: usize = cpu::CODE_LENGTHS_BYTES / 4;
const PREAMBLE_WORDS: usize = HEADER_WORDS + LENGTHS_WORDS;
const BLOCK_BITS: u64 = cpu::BLOCK_BITS as u64;

const _: () = assert!(SUBTILE_BYTES == ENC_THREADS as usize * ENC_ITEMS);
const _: () = assert!(STRIP_BYTES % SUBTILE_BYTES == 0);
const _: () = assert!(MAX_CHUNK_VALUES as usize % STRIP_BYTES == 0);
const _: () = assert!(DEC_SLAB == DEC_THREADS as usize);
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
    pub first_slab: u32,
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
    pub words: crate::GpuBuffer<u32>,
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

/// `buf` if it holds `len` items, else a new buffer of `len` (scratch grown on demand).
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

fn check_chunk_bytes(chunk_bytes: usize) -> Result<()> {
    if chunk_bytes == 0 || chunk_bytes % STRIP_BYTES != 0 || chunk_bytes > MAX_CHUNK_VALUES as usize
    {
        return Err(Error::InvalidArgument(format!(
            "GPU huffman chunks must be a multiple of {STRIP_BYTES} bytes and at most {MAX_CHUNK_VALUES}, got {chunk_bytes}"
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

#[cfg(test)]
mod tests {
    use super::*;

    fn defines() -> std::collections::HashMap<String, String> {
        crate::kernels::header("huffman/huffman.cuh")
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
            ("STRIP_BYTES", STRIP_BYTES as u64),
            ("ENC_THREADS", ENC_THREADS as u64),
            ("ENC_ITEMS", ENC_ITEMS as u64),
            ("SUBTILE_BYTES", SUBTILE_BYTES as u64),
            ("HALO_BYTES", 32),
            ("STAGE_WORDS", STAGE_WORDS as u64),
            ("ENC_ROW_WORDS", ENC_ROW_WORDS as u64),
            ("ENC_EDGE_BASE", ENC_EDGE_BASE as u64),
            ("DEC_ROW_WORDS", DEC_ROW_WORDS as u64),
            ("DEC_FIRST_BLOCK", DEC_FIRST_BLOCK as u64),
            ("DEC_FIRST_SLAB", DEC_FIRST_SLAB as u64),
            ("EDGE_SPILL_SHIFT", EDGE_SPILL_SHIFT as u64),
            ("EDGE_COUNT_MASK", EDGE_COUNT_MASK as u64),
            ("DEC_THREADS", DEC_THREADS as u64),
            ("DEC_SLAB", DEC_SLAB as u64),
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
            std::mem::offset_of!(HfDecChunk, first_slab),
            4 * DEC_FIRST_SLAB
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
}
