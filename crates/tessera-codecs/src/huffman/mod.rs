//! Canonical Huffman coding of bytes (`docs/format/huffman.md`, after Lyfar and Kulakov,
//! *Parallel Huffman encoding on GPU and its use in MySQL*).
//!
//! A chunk payload is either **raw** (the bytes, when Huffman would not be smaller) or
//! **huffman**: a table of 256 code lengths (canonical codes), a `block_info` entry per block,
//! and the bit stream cut into blocks of [`BLOCK_BITS`] bits. `block_info` carries the block's
//! symbol count and the number of bits by which its last code spills into the next block, so
//! every block decodes on its own and finds its output offset by an exclusive prefix sum of the
//! symbol counts (the paper's block decoding). Two huffman layouts exist (§2):
//! - **mode 2** (what the encoder writes): codes of at most [`MAX_CODE_LENGTH`] = 13 bits, one
//!   little-endian u16 of `block_info` per block, padded to a whole word;
//! - **mode 1** (format version 1 files, decoded only): codes of at most
//!   [`MAX_CODE_LENGTH_V1`] = 12 bits, one u32 of `block_info` per block.
//!
//! Modules: `code` (histogram, package-merge, canonical codes, the per-chunk plan the GPU
//! encoder shares), `encode`, `decode` (the reference decoder, which reads like the spec, and
//! the fast one with a multi-symbol table). Both decoders treat the payload as hostile:
//! `parse` validates the header, the code lengths and every `block_info` entry before any bit
//! is decoded, nothing is allocated from a header field, and both fail with the same
//! [`tessera_format::Error`] variant on the same input.

mod code;
mod codec;
mod decode;
mod encode;

pub(crate) use codec::CODEC;

pub use code::{
    canonical_codes, code_lengths, histogram, plan_chunk, plan_chunks, ChunkPlan, PARALLEL_MIN,
};
pub use decode::{decode, decode_reference};
pub use encode::{encode, encode_v1, encoded_size};

use tessera_format::{Error, Result, MAX_CHUNK_VALUES};

/// Codec id reserved for Huffman in the container (`huffman.md` §1; not yet in `CodecId`).
pub const CODEC_ID: u8 = 32;
/// Logical type id reserved for `bytes` (`huffman.md` §1; not yet in `LogicalType`).
pub const LOGICAL_TYPE_BYTES: u8 = 9;

/// Alphabet size: symbols are bytes (§2).
pub const SYMBOLS: usize = 256;
/// Longest code of mode 2 (§3), the encoder's limit. The fast decoders (CPU and GPU) resolve
/// codes of up to [`MULTI_BITS`] bits through a multi-symbol table of `2^12` 4-byte entries
/// (16 KiB: a GPU thread block's shared memory, a CPU core's L1) and the rare 13-bit codes
/// through a single-symbol table of `2^13` 2-byte entries.
pub const MAX_CODE_LENGTH: u32 = 13;
/// Longest code of mode 1 (format version 1).
pub const MAX_CODE_LENGTH_V1: u32 = 12;
/// Index bits of the fast decoders' multi-symbol table (§8).
pub const MULTI_BITS: u32 = 12;
/// Bits per block of the stream (§5): 128 words, one GPU thread's unit of decoding.
pub const BLOCK_BITS: u32 = 4096;
/// Most symbols a block can hold: every code starting in it is at least 1 bit long (§4).
pub const MAX_BLOCK_SYMBOLS: u32 = BLOCK_BITS;

/// Header field `mode` (§2): raw bytes.
pub const MODE_RAW: u32 = 0;
/// Header field `mode` (§2): huffman, format version 1 layout (12-bit codes, u32 `block_info`).
/// Decoded, never written.
pub const MODE_HUFFMAN_V1: u32 = 1;
/// Header field `mode` (§2): huffman, 13-bit codes and u16 `block_info` (what the encoder
/// writes).
pub const MODE_HUFFMAN: u32 = 2;

/// Bytes of the header (§2): `mode`, `total_count`, `block_bits`, `stream_bits`.
pub const HEADER_BYTES: usize = 16;
/// Bytes of the code-length table (§3).
pub const CODE_LENGTHS_BYTES: usize = SYMBOLS;

/// Mode 1 `block_info` word fields (§4.1).
pub(crate) const V1_COUNT_MASK: u32 = 0xFFFF;
pub(crate) const V1_SPILL_SHIFT: u32 = 16;
pub(crate) const V1_SPILL_MASK: u32 = 0xFF;
pub(crate) const V1_RESERVED_SHIFT: u32 = 24;
/// Mode 2 `block_info` u16 fields (§4): `symbol_count - 1` in bits 0..11, `spill` in 12..15
/// (blocks before the last); the last block's entry is its `symbol_count`.
pub const COUNT_BITS: u32 = 12;
pub const COUNT_MASK: u32 = (1 << COUNT_BITS) - 1;

const _: () = assert!(BLOCK_BITS % 32 == 0);
const _: () = assert!(MAX_BLOCK_SYMBOLS <= V1_COUNT_MASK);
const _: () = assert!(MAX_CODE_LENGTH_V1 - 1 <= V1_SPILL_MASK);
// Mode 2: counts 1..=4096 as count - 1 in 12 bits, spills 0..=12 in the 4 bits above.
const _: () = assert!(MAX_BLOCK_SYMBOLS - 1 <= COUNT_MASK);
const _: () = assert!(MAX_CODE_LENGTH - 1 < 1 << (16 - COUNT_BITS));
// The last entry holds 0..=4096 in 16 bits.
const _: () = assert!(MAX_BLOCK_SYMBOLS <= u16::MAX as u32);
const _: () = assert!(SYMBOLS <= 1 << MAX_CODE_LENGTH_V1);
const _: () = assert!(MAX_CODE_LENGTH <= 2 * MULTI_BITS);

/// Raw bytes a chunk must hold for `auto` to try Huffman: the size of the tables a decoder
/// builds per chunk before its first symbol (`docs/format/huffman.md` §8: 16 KiB + 16 KiB, on
/// the CPU and on the GPU). Below it the tables cost more to build than the chunk's bytes
/// cost to decode with LLL or plain, on every device; small dictionaries of a table are the
/// common case (figures: `docs/decisions/0036-huffman-auto-on-small-chunks.md`).
pub const AUTO_MIN_BYTES: usize = 32 << 10;

/// Worst-case payload size for `n` input bytes: the raw payload, because the encoder stores
/// raw whenever Huffman is not strictly smaller (§2).
pub fn max_encoded_len(n: usize) -> usize {
    raw_len(n)
}

/// Bytes of a raw payload of `n` bytes.
#[inline]
pub fn raw_len(n: usize) -> usize {
    HEADER_BYTES + 4 * n.div_ceil(4)
}

/// Bytes of `block_info` for `block_count` blocks in `mode` (1 or 2): a word per block in
/// mode 1, a u16 per block padded to a whole word in mode 2.
#[inline]
pub fn block_info_bytes(mode: u32, block_count: u64) -> u64 {
    if mode == MODE_HUFFMAN_V1 {
        4 * block_count
    } else {
        4 * block_count.div_ceil(2)
    }
}

/// Bytes of a huffman payload in `mode` (1 or 2) whose stream is `stream_bits` long (§2).
#[inline]
pub fn huffman_len(mode: u32, stream_bits: u64) -> u64 {
    let blocks = stream_bits.div_ceil(BLOCK_BITS as u64);
    (HEADER_BYTES + CODE_LENGTHS_BYTES) as u64
        + block_info_bytes(mode, blocks)
        + 4 * stream_bits.div_ceil(32)
}

#[inline(always)]
pub(crate) fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// A validated payload (§7 steps 1-5).
#[derive(Debug)]
pub(crate) enum Parsed<'a> {
    /// A raw payload: exactly `total_count` bytes.
    Raw(&'a [u8]),
    Huffman(Stream<'a>),
}

/// A validated huffman payload (mode 1 or 2). Every `block_info` entry has passed its checks
/// and the symbol counts add up to `total_count`.
#[derive(Debug)]
pub(crate) struct Stream<'a> {
    /// [`MODE_HUFFMAN_V1`] or [`MODE_HUFFMAN`].
    pub mode: u32,
    /// The mode's longest code.
    pub max_len: u32,
    pub lengths: &'a [u8; SYMBOLS],
    /// `block_info`: `block_count` words (mode 1) or u16 entries (mode 2).
    pub block_info: &'a [u8],
    /// The stream words, `ceil(stream_bits / 32)` of them.
    pub bits: &'a [u8],
    pub stream_bits: u64,
    pub block_count: usize,
}

/// `(symbol_count, spill)` of a mode 2 entry `e` (§4); `last`: the chunk's last block, whose
/// entry is its symbol count.
#[inline(always)]
pub fn block_entry(e: u32, last: bool) -> (u32, u32) {
    if last {
        (e, 0)
    } else {
        ((e & COUNT_MASK) + 1, e >> COUNT_BITS)
    }
}

impl Stream<'_> {
    /// `(symbol_count, spill)` of block `k`.
    #[inline(always)]
    pub(crate) fn info(&self, k: usize) -> (u32, u32) {
        if self.mode == MODE_HUFFMAN_V1 {
            let w = read_u32(self.block_info, 4 * k);
            (w & V1_COUNT_MASK, w >> V1_SPILL_SHIFT & V1_SPILL_MASK)
        } else {
            let e = u16::from_le_bytes([self.block_info[2 * k], self.block_info[2 * k + 1]]);
            block_entry(e as u32, k + 1 == self.block_count)
        }
    }

    /// Bit range `[start, end)` of the codes of block `k` (§6): from its left edge plus the
    /// previous block's spill to its right edge plus its own spill (the last block: to
    /// `stream_bits`).
    #[inline(always)]
    pub(crate) fn range(&self, k: usize) -> (u64, u64) {
        let edge = k as u64 * BLOCK_BITS as u64;
        let start = if k == 0 {
            0
        } else {
            edge + self.info(k - 1).1 as u64
        };
        let end = if k + 1 == self.block_count {
            self.stream_bits
        } else {
            edge + BLOCK_BITS as u64 + self.info(k).1 as u64
        };
        (start, end)
    }
}

/// Validates `payload` (§7 steps 1-5) for `count` output bytes.
pub(crate) fn parse(payload: &[u8], count: usize) -> Result<Parsed<'_>> {
    let len = payload.len();
    if len % 4 != 0 {
        return Err(Error::Misaligned { len: len as u64 });
    }
    if len < HEADER_BYTES {
        return Err(Error::truncated("huffman header", 0, HEADER_BYTES, len));
    }
    let mode = read_u32(payload, 0);
    let total = read_u32(payload, 4);
    let block_bits = read_u32(payload, 8);
    let stream_bits = read_u32(payload, 12);
    if mode != MODE_RAW && mode != MODE_HUFFMAN_V1 && mode != MODE_HUFFMAN {
        return Err(invalid(
            "mode",
            0,
            "0 (raw), 1 (huffman v1) or 2 (huffman)",
            mode,
        ));
    }
    if total > MAX_CHUNK_VALUES {
        return Err(invalid(
            "total_count",
            4,
            &format!("<= {MAX_CHUNK_VALUES}"),
            total,
        ));
    }
    if total as usize != count {
        return Err(Error::CountMismatch {
            what: "huffman total_count",
            expected: count as u64,
            found: total as u64,
        });
    }
    let total = total as usize;
    if mode == MODE_RAW {
        if block_bits != 0 {
            return Err(invalid("block_bits", 8, "0 (raw)", block_bits));
        }
        if stream_bits != 0 {
            return Err(invalid("stream_bits", 12, "0 (raw)", stream_bits));
        }
        check_len(len, raw_len(total) as u64, "raw bytes")?;
        return Ok(Parsed::Raw(&payload[HEADER_BYTES..HEADER_BYTES + total]));
    }
    if block_bits != BLOCK_BITS {
        return Err(invalid(
            "block_bits",
            8,
            &BLOCK_BITS.to_string(),
            block_bits,
        ));
    }
    let stream_bits = stream_bits as u64;
    check_len(len, huffman_len(mode, stream_bits), "huffman stream")?;
    let block_count = stream_bits.div_ceil(BLOCK_BITS as u64) as usize;
    let max_len = if mode == MODE_HUFFMAN_V1 {
        MAX_CODE_LENGTH_V1
    } else {
        MAX_CODE_LENGTH
    };

    // §3: code lengths, then completeness.
    let lengths: &[u8; SYMBOLS] = payload[HEADER_BYTES..HEADER_BYTES + CODE_LENGTHS_BYTES]
        .try_into()
        .map_err(|_| Error::truncated("code lengths", HEADER_BYTES, CODE_LENGTHS_BYTES, len))?;
    for (s, &l) in lengths.iter().enumerate() {
        if l as u32 > max_len {
            return Err(invalid(
                "code length",
                HEADER_BYTES + s,
                &format!("0..={max_len}"),
                l as u32,
            ));
        }
    }
    let used = lengths.iter().filter(|&&l| l > 0).count();
    let kraft = code::kraft_sum(lengths);
    let complete = 1u64 << MAX_CODE_LENGTH;
    let single = used == 1 && kraft == complete / 2;
    if kraft != complete && !single {
        return Err(Error::InvalidHeader {
            field: "code lengths (Kraft sum in units of 2^-13)",
            offset: HEADER_BYTES as u64,
            expected: format!("{complete}, or one symbol of length 1"),
            found: kraft,
        });
    }

    // §4: block_info entries.
    let info_at = HEADER_BYTES + CODE_LENGTHS_BYTES;
    let info_len = block_info_bytes(mode, block_count as u64) as usize;
    let block_info = &payload[info_at..info_at + info_len];
    let symbols = if mode == MODE_HUFFMAN_V1 {
        check_info_v1(block_info, block_count, info_at)?
    } else {
        check_info_v2(block_info, block_count, info_at)?
    };
    if symbols != total as u64 {
        return Err(Error::CountMismatch {
            what: "sum of block symbol counts",
            expected: total as u64,
            found: symbols,
        });
    }
    let bits_at = info_at + info_len;
    Ok(Parsed::Huffman(Stream {
        mode,
        max_len,
        lengths,
        block_info,
        bits: &payload[bits_at..],
        stream_bits,
        block_count,
    }))
}

/// Mode 1 `block_info` words (§4.1), in order; returns the sum of the symbol counts.
fn check_info_v1(block_info: &[u8], block_count: usize, info_at: usize) -> Result<u64> {
    let mut symbols = 0u64;
    for k in 0..block_count {
        let w = read_u32(block_info, 4 * k);
        let at = info_at + 4 * k;
        if w >> V1_RESERVED_SHIFT != 0 {
            return Err(invalid(
                "block_info reserved bits",
                at,
                "0",
                w >> V1_RESERVED_SHIFT,
            ));
        }
        let spill = w >> V1_SPILL_SHIFT & V1_SPILL_MASK;
        let last = k + 1 == block_count;
        let max_spill = if last { 0 } else { MAX_CODE_LENGTH_V1 - 1 };
        if spill > max_spill {
            return Err(invalid(
                "block_info spill",
                at,
                &format!("0..={max_spill}"),
                spill,
            ));
        }
        let n = w & V1_COUNT_MASK;
        if n > MAX_BLOCK_SYMBOLS {
            return Err(invalid(
                "block_info symbol_count",
                at,
                &format!("0..={MAX_BLOCK_SYMBOLS}"),
                n,
            ));
        }
        symbols += n as u64;
    }
    Ok(symbols)
}

/// Mode 2 `block_info` entries (§4), in order, then the padding entry; returns the sum of the
/// symbol counts.
fn check_info_v2(block_info: &[u8], block_count: usize, info_at: usize) -> Result<u64> {
    let entry = |k: usize| u16::from_le_bytes([block_info[2 * k], block_info[2 * k + 1]]) as u32;
    let mut symbols = 0u64;
    for k in 0..block_count {
        let e = entry(k);
        let at = info_at + 2 * k;
        let last = k + 1 == block_count;
        if last {
            if e > MAX_BLOCK_SYMBOLS {
                return Err(invalid(
                    "block_info symbol_count",
                    at,
                    &format!("0..={MAX_BLOCK_SYMBOLS} (last block)"),
                    e,
                ));
            }
        } else if e >> COUNT_BITS > MAX_CODE_LENGTH - 1 {
            return Err(invalid(
                "block_info spill",
                at,
                &format!("0..={}", MAX_CODE_LENGTH - 1),
                e >> COUNT_BITS,
            ));
        }
        symbols += block_entry(e, last).0 as u64;
    }
    if block_count % 2 == 1 && entry(block_count) != 0 {
        return Err(invalid(
            "block_info padding",
            info_at + 2 * block_count,
            "0",
            entry(block_count),
        ));
    }
    Ok(symbols)
}

fn invalid(field: &'static str, offset: usize, expected: &str, found: u32) -> Error {
    Error::InvalidHeader {
        field,
        offset: offset as u64,
        expected: expected.to_string(),
        found: found as u64,
    }
}

/// The payload must be exactly `needed` bytes long.
fn check_len(len: usize, needed: u64, what: &'static str) -> Result<()> {
    let len = len as u64;
    if len < needed {
        Err(Error::Truncated {
            what,
            offset: HEADER_BYTES as u64,
            needed,
            available: len,
        })
    } else if len > needed {
        Err(Error::TrailingBytes {
            what,
            offset: needed,
            count: len - needed,
        })
    } else {
        Ok(())
    }
}
