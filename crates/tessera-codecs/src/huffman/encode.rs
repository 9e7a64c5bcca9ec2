//! The encoder (`huffman.md` §2-5): histogram, code lengths limited to `MAX_CODE_LENGTH` (13),
//! canonical codes ([`plan_chunk`]); then either the raw payload or the mode 2 huffman payload,
//! whichever is smaller (raw on ties). Mode 1 is never written.
//!
//! The stream is written through a 64-bit accumulator, least significant bit first, one 32-bit
//! word flushed at a time; codes are stored bit-reversed ([`canonical_codes`]) so the code's
//! first bit comes first in the stream. `block_info` is built on the way: a code belongs to the
//! block in which its first bit lies; if it ends past that block's right edge, the excess is the
//! block's `spill` (at most `MAX_CODE_LENGTH - 1` bits, since a code starts inside its block).
//! The loop only touches `block_info` when a code reaches the next block edge, which closes the
//! block; the last block's entry (its plain symbol count, possibly 0) is written after the
//! loop. The stream is written into the pre-sized output, so the per-byte work is a table
//! lookup, a shift and an OR.
//! Output is deterministic: the same bytes always give the same payload.
//!
//! [`canonical_codes`]: super::canonical_codes

use tessera_format::{Error, Result, MAX_CHUNK_VALUES};

use super::code::{histogram, plan_chunk_mode, ChunkPlan};
use super::{
    block_info_bytes, huffman_len, BLOCK_BITS, COUNT_BITS, HEADER_BYTES, MAX_BLOCK_SYMBOLS,
    MODE_HUFFMAN, MODE_HUFFMAN_V1, MODE_RAW, V1_SPILL_SHIFT,
};

fn plan(data: &[u8], mode: u32) -> Result<ChunkPlan> {
    if data.len() > MAX_CHUNK_VALUES as usize {
        return Err(Error::InvalidArgument(format!(
            "huffman chunk of {} bytes (allowed 0..={MAX_CHUNK_VALUES})",
            data.len()
        )));
    }
    Ok(plan_chunk_mode(&histogram(data), mode))
}

/// Exact payload size [`encode`] produces for `data`, without writing it.
pub fn encoded_size(data: &[u8]) -> Result<usize> {
    Ok(plan(data, MODE_HUFFMAN)?.payload_len() as usize)
}

/// Appends the chunk payload for `data` (at most `MAX_CHUNK_VALUES` bytes) to `out`: raw or
/// mode 2.
pub fn encode(data: &[u8], out: &mut Vec<u8>) -> Result<()> {
    encode_mode(data, out, MODE_HUFFMAN)
}

/// Appends the payload format version 1 wrote for `data`: raw or mode 1 (12-bit codes, a u32
/// `block_info` word per block). Only for compatibility tests and fuzzing of the mode 1
/// decoders; files are written with [`encode`].
#[doc(hidden)]
pub fn encode_v1(data: &[u8], out: &mut Vec<u8>) -> Result<()> {
    encode_mode(data, out, MODE_HUFFMAN_V1)
}

fn encode_mode(data: &[u8], out: &mut Vec<u8>, mode: u32) -> Result<()> {
    let p = plan(data, mode)?;
    let n = data.len() as u32;
    if !p.huffman {
        for w in [MODE_RAW, n, 0, 0] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(data);
        out.resize(out.len() + (4 - data.len() % 4) % 4, 0);
        return Ok(());
    }
    let base = out.len();
    let total = huffman_len(mode, p.stream_bits) as usize;
    for w in [mode, n, BLOCK_BITS, p.stream_bits as u32] {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(&p.lengths);
    let block_count = p.block_count() as usize;
    let info_at = out.len();
    let info_len = block_info_bytes(mode, block_count as u64) as usize;
    let bits_at = info_at + info_len;
    // block_info (its padding entry included) and the stream start zeroed.
    out.resize(base + total, 0);

    // (symbol_count, spill) per block.
    let mut info = vec![(0u32, 0u32); block_count];
    let stream = &mut out[bits_at..];
    let mut acc = 0u64; // pending bits, the oldest at bit 0
    let mut pending = 0u32; // < 32 between symbols
    let mut at = 0usize; // next stream byte to write
    let mut pos = 0u64; // stream bit position of the next code; always < next_edge here
    let mut block = 0usize;
    let mut next_edge = BLOCK_BITS as u64;
    let mut first = 0usize; // index of the current block's first symbol
    for (i, &b) in data.iter().enumerate() {
        let len = p.lengths[b as usize] as u32;
        let end = pos + len as u64;
        if end >= next_edge {
            // This code starts in `block` and is its last: close the block.
            info[block] = ((i + 1 - first) as u32, (end - next_edge) as u32);
            block += 1;
            first = i + 1;
            next_edge += BLOCK_BITS as u64;
        }
        pos = end;
        acc |= (p.codes[b as usize] as u64) << pending;
        pending += len;
        if pending >= 32 {
            stream[at..at + 4].copy_from_slice(&(acc as u32).to_le_bytes());
            at += 4;
            acc >>= 32;
            pending -= 32;
        }
    }
    // The last block, unless its last code closed it exactly at the stream's end: the symbols
    // after the last closed block (0 when the previous block's last code spills to the end).
    if block < block_count {
        info[block] = ((data.len() - first) as u32, 0);
    }
    if pending > 0 {
        stream[at..at + 4].copy_from_slice(&(acc as u32).to_le_bytes());
    }
    for (k, &(count, spill)) in info.iter().enumerate() {
        if mode == MODE_HUFFMAN_V1 {
            let w = count | spill << V1_SPILL_SHIFT;
            out[info_at + 4 * k..info_at + 4 * k + 4].copy_from_slice(&w.to_le_bytes());
            continue;
        }
        let e = if k + 1 == block_count {
            debug_assert!(count <= MAX_BLOCK_SYMBOLS && spill == 0);
            count
        } else {
            debug_assert!((1..=MAX_BLOCK_SYMBOLS).contains(&count));
            (count - 1) | spill << COUNT_BITS
        };
        out[info_at + 2 * k..info_at + 2 * k + 2].copy_from_slice(&(e as u16).to_le_bytes());
    }
    debug_assert_eq!(pos, p.stream_bits);
    debug_assert_eq!(out.len() - base, total);
    debug_assert!(HEADER_BYTES <= total);
    Ok(())
}
