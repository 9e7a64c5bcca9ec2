//! The chunk header and `block_starts` (`int-common.md` §1, §3, §4), shared by FOR, DFOR, RFOR.
//!
//! Encoding writes the 4-word header and a zeroed `block_starts` array, then patches each entry
//! as blocks are appended. Decoding ([`parse`]) validates, before any block is read: word
//! alignment, the header constants, `total_count` against the caller's count and the limit,
//! that `block_starts` is present, non-decreasing, inside the data area, and that the payload
//! ends exactly at `block_starts[block_count]` (checked first: `Truncated` if the payload is
//! shorter, `TrailingBytes` if longer). After it returns, [`Layout::block`] can hand out
//! every block's word range without further checks. Nothing is allocated from header fields.

use super::word::read_u32;
use tessera_format::{Error, Result, MAX_CHUNK_VALUES};

/// Words of the chunk header.
pub(crate) const HEADER_WORDS: usize = 4;

/// The constant header fields of one codec, plus what the data area holds before block 0.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    pub block_size: u32,
    pub miniblock_count: u32,
    pub tile_blocks: u32,
    /// Words that must precede `block_starts[0]` in the data area (DFOR: the first tile's
    /// `first_value`; FOR, RFOR: 0).
    pub lead_words: usize,
}

/// `ceil(n / block_size)`.
#[inline]
pub(crate) fn block_count(n: usize, shape: &Shape) -> usize {
    n.div_ceil(shape.block_size as usize)
}

/// Bytes of header plus `block_starts` for `n` values.
#[inline]
pub(crate) fn prefix_bytes(n: usize, shape: &Shape) -> usize {
    4 * (HEADER_WORDS + block_count(n, shape) + 1)
}

/// An encoder's handle on the `block_starts` array it patches.
#[derive(Debug)]
pub(crate) struct Writer {
    /// Byte offset of `block_starts[0]` in the output vector.
    starts_pos: usize,
    /// Byte offset of the data area in the output vector.
    pub data_pos: usize,
}

impl Writer {
    /// Appends the header and a zeroed `block_starts` for `n` values.
    pub(crate) fn begin(out: &mut Vec<u8>, shape: &Shape, n: usize) -> Writer {
        let bc = block_count(n, shape);
        for w in [
            shape.block_size,
            shape.miniblock_count,
            n as u32,
            shape.tile_blocks,
        ] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        let starts_pos = out.len();
        out.resize(starts_pos + 4 * (bc + 1), 0);
        Writer {
            starts_pos,
            data_pos: out.len(),
        }
    }

    /// Sets `block_starts[k]` to the current end of the data area.
    #[inline]
    pub(crate) fn mark(&self, out: &mut [u8], k: usize) {
        let words = ((out.len() - self.data_pos) / 4) as u32;
        let at = self.starts_pos + 4 * k;
        out[at..at + 4].copy_from_slice(&words.to_le_bytes());
    }
}

/// A validated payload: the data area and its `block_starts`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout<'a> {
    pub block_count: usize,
    /// `block_starts`, `block_count + 1` words.
    starts: &'a [u8],
    /// The data area, exactly `block_starts[block_count]` words.
    pub data: &'a [u8],
    /// Byte offset of the data area in the payload (for error offsets).
    pub data_offset: usize,
}

impl Layout<'_> {
    /// `block_starts[k]` in words (validated: `<= data.len() / 4`).
    #[inline(always)]
    pub(crate) fn start(&self, k: usize) -> usize {
        read_u32(self.starts, 4 * k) as usize
    }

    /// Byte range `[block_starts[k], block_starts[k+1])` of block `k` in the data area.
    #[inline(always)]
    pub(crate) fn block(&self, k: usize) -> (usize, usize) {
        (4 * self.start(k), 4 * self.start(k + 1))
    }
}

/// Validates the header and `block_starts` of `payload` (int-common §1, §3, §4, §7); `count`
/// is the value count the caller (the container's chunk directory) expects.
pub(crate) fn parse<'a>(payload: &'a [u8], shape: &Shape, count: usize) -> Result<Layout<'a>> {
    let len = payload.len();
    if len % 4 != 0 {
        return Err(Error::Misaligned { len: len as u64 });
    }
    if len < 4 * HEADER_WORDS {
        return Err(Error::truncated("chunk header", 0, 4 * HEADER_WORDS, len));
    }
    let field = |i: usize| read_u32(payload, 4 * i);
    let constants = [
        ("block_size", 0, shape.block_size),
        ("miniblock_count", 1, shape.miniblock_count),
        ("tile_blocks", 3, shape.tile_blocks),
    ];
    for (name, i, expected) in constants {
        let found = field(i);
        if found != expected {
            return Err(Error::InvalidHeader {
                field: name,
                offset: 4 * i as u64,
                expected: expected.to_string(),
                found: found as u64,
            });
        }
    }
    let total = field(2);
    if total > MAX_CHUNK_VALUES {
        return Err(Error::InvalidHeader {
            field: "total_count",
            offset: 8,
            expected: format!("<= {MAX_CHUNK_VALUES}"),
            found: total as u64,
        });
    }
    if total as usize != count {
        return Err(Error::CountMismatch {
            what: "chunk header total_count vs directory value count",
            expected: count as u64,
            found: total as u64,
        });
    }
    let bc = block_count(count, shape);
    let starts_off = 4 * HEADER_WORDS;
    let starts_len = 4 * (bc + 1);
    let data_offset = starts_off + starts_len;
    if len < data_offset {
        return Err(Error::truncated(
            "block_starts",
            starts_off,
            starts_len,
            len - starts_off,
        ));
    }
    let starts = &payload[starts_off..data_offset];
    let data = &payload[data_offset..];
    let data_words = (data.len() / 4) as u64;
    // block_starts[block_count] is the data area's declared length: the payload must end
    // exactly there. Checked first, so a cut-off payload reads as truncated, not as a bad offset.
    let end = read_u32(starts, 4 * bc) as u64;
    if end > data_words {
        return Err(Error::Truncated {
            what: "data area (block_starts[block_count])",
            offset: data_offset as u64,
            needed: 4 * end,
            available: 4 * data_words,
        });
    }
    if end < data_words {
        return Err(Error::TrailingBytes {
            what: "data area (block_starts[block_count])",
            offset: (data_offset as u64) + 4 * end,
            count: 4 * (data_words - end),
        });
    }
    // Block 0 may not start before the lead words (DFOR's first `first_value`); an empty chunk
    // has no tile, so its single `block_starts` entry is 0.
    let mut prev = if bc > 0 { shape.lead_words as u64 } else { 0 };
    for k in 0..=bc {
        let found = read_u32(starts, 4 * k) as u64;
        if found < prev || found > end {
            return Err(Error::BlockStartOutOfRange {
                block: k as u64,
                found,
                min: prev,
                max: end,
            });
        }
        prev = found;
    }
    Ok(Layout {
        block_count: bc,
        starts,
        data,
        data_offset,
    })
}
