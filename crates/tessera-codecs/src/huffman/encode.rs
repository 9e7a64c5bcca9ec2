//! The encoder (`huffman.md` §2-5): histogram, code lengths limited to `MAX_CODE_LENGTH`,
//! canonical codes; then either the raw payload or the huffman payload, whichever is smaller
//! (raw on ties).
//!
//! The stream is written through a 64-bit accumulator, least significant bit first, one 32-bit
//! word flushed at a time; codes are stored bit-reversed ([`canonical_codes`]) so the code's
//! first bit comes first in the stream. `block_info` is built on the way: a code belongs to the
//! block in which its first bit lies; if it ends past that block's right edge, the excess is the
//! block's `spill` (at most `MAX_CODE_LENGTH - 1` bits, since a code starts inside its block).
//! The loop only touches `block_info` when a code reaches the next block edge, which closes the
//! block; the stream is written into the pre-sized output, so the per-byte work is a table
//! lookup, a shift and an OR.
//! Output is deterministic: the same bytes always give the same payload.

use tessera_format::{Error, Result, MAX_CHUNK_VALUES};

use super::code::{canonical_codes, histogram, limited_code_lengths};
use super::{
    huffman_len, raw_len, BLOCK_BITS, HEADER_BYTES, MODE_HUFFMAN, MODE_RAW, SPILL_SHIFT, SYMBOLS,
};

/// The encoder's plan: the code lengths and the stream length they give.
struct Plan {
    lengths: [u8; SYMBOLS],
    stream_bits: u64,
    /// Whether the huffman payload is strictly smaller than the raw one.
    huffman: bool,
}

fn plan(data: &[u8]) -> Result<Plan> {
    if data.len() > MAX_CHUNK_VALUES as usize {
        return Err(Error::InvalidArgument(format!(
            "huffman chunk of {} bytes (allowed 0..={MAX_CHUNK_VALUES})",
            data.len()
        )));
    }
    let hist = histogram(data);
    let lengths = limited_code_lengths(&hist);
    let stream_bits: u64 = hist.iter().zip(&lengths).map(|(&f, &l)| f * l as u64).sum();
    let huffman = !data.is_empty() && huffman_len(stream_bits) < raw_len(data.len()) as u64;
    Ok(Plan {
        lengths,
        stream_bits,
        huffman,
    })
}

/// Exact payload size [`encode`] produces for `data`, without writing it.
pub fn encoded_size(data: &[u8]) -> Result<usize> {
    let p = plan(data)?;
    Ok(if p.huffman {
        huffman_len(p.stream_bits) as usize
    } else {
        raw_len(data.len())
    })
}

/// Appends the chunk payload for `data` (at most `MAX_CHUNK_VALUES` bytes) to `out`.
pub fn encode(data: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let p = plan(data)?;
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
    let total = huffman_len(p.stream_bits) as usize;
    for w in [MODE_HUFFMAN, n, BLOCK_BITS, p.stream_bits as u32] {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(&p.lengths);
    let block_count = p.stream_bits.div_ceil(BLOCK_BITS as u64) as usize;
    let info_at = out.len();
    out.resize(info_at + 4 * block_count, 0);

    let codes = canonical_codes(&p.lengths);
    let mut info = vec![0u32; block_count];
    let bits_at = out.len();
    out.resize(base + total, 0);
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
            info[block] = (i + 1 - first) as u32 | ((end - next_edge) as u32) << SPILL_SHIFT;
            block += 1;
            first = i + 1;
            next_edge += BLOCK_BITS as u64;
        }
        pos = end;
        acc |= (codes[b as usize] as u64) << pending;
        pending += len;
        if pending >= 32 {
            stream[at..at + 4].copy_from_slice(&(acc as u32).to_le_bytes());
            at += 4;
            acc >>= 32;
            pending -= 32;
        }
    }
    if first < data.len() {
        info[block] = (data.len() - first) as u32;
    }
    if pending > 0 {
        stream[at..at + 4].copy_from_slice(&(acc as u32).to_le_bytes());
    }
    for (k, w) in info.iter().enumerate() {
        let at = info_at + 4 * k;
        out[at..at + 4].copy_from_slice(&w.to_le_bytes());
    }
    debug_assert_eq!(pos, p.stream_bits);
    debug_assert_eq!(out.len() - base, total);
    debug_assert!(HEADER_BYTES <= total);
    Ok(())
}
