//! The decoders (`huffman.md` §6-7): a reference decoder that reads like the spec and a fast
//! decoder; both must produce the same bytes or fail with the same error variant.
//!
//! Both start from [`parse`], which has validated the header, the code lengths (complete, or
//! one symbol of length 1) and every `block_info` word, and checked that the symbol counts add
//! up to the output length. So `out` is never indexed past its end, whatever the stream holds.
//! Bits past the end of the payload read as 0 (a block that runs there fails its end check).
//!
//! - The reference decoder walks each block bit by bit with the canonical decoding rule
//!   (first code and count per length, as in zlib's `puff.c`).
//! - The fast decoder resolves codes through a table of `2^MULTI_BITS` (4096) 32-bit entries
//!   indexed by the next 12 stream bits: each entry holds up to three symbols whose codes lie
//!   wholly in those 12 bits, their count and their total length, so skewed data (short codes)
//!   decodes several symbols per lookup. An entry with no symbol means the next code is 13 bits
//!   long (mode 2 only) or no code: a `2^13`-entry single-symbol table, indexed by the next 13
//!   bits, tells which. One 64-bit load of the stream feeds four lookups (at most 52 bits). It
//!   is used while at least 12 symbols remain in the block; the tail decodes one symbol per
//!   single-table lookup. Mode 1 tables (codes of at most 12 bits) are built the same way. Blocks are independent: large inputs decode their blocks on all
//!   cores, each block writing at its exclusive prefix sum of symbol counts, which is the GPU
//!   scheme of the paper on the CPU. Errors are reported for the first failing block in block
//!   order, as the reference does.

use rayon::prelude::*;
use tessera_format::{Error, Result};

use super::code::canonical_codes;
use super::{parse, Parsed, Stream, MAX_CODE_LENGTH, MULTI_BITS, SYMBOLS};

/// Decodes `payload` into `out`, whose length is the expected byte count (fast decoder).
pub fn decode(payload: &[u8], out: &mut [u8]) -> Result<()> {
    match parse(payload, out.len())? {
        Parsed::Raw(bytes) => {
            out.copy_from_slice(bytes);
            Ok(())
        }
        Parsed::Huffman(s) => decode_fast(&s, out),
    }
}

/// Decodes `payload` into `out` with the reference decoder (`huffman.md` §6, bit by bit).
pub fn decode_reference(payload: &[u8], out: &mut [u8]) -> Result<()> {
    let s = match parse(payload, out.len())? {
        Parsed::Raw(bytes) => {
            out.copy_from_slice(bytes);
            return Ok(());
        }
        Parsed::Huffman(s) => s,
    };
    // Canonical decoding: count[len] codes of each length, symbols sorted by (length, value).
    // Lengths are at most the mode's limit (parse checked them).
    let mut count = vec![0i64; s.max_len as usize + 1];
    let mut sorted = Vec::with_capacity(SYMBOLS);
    for len in 1..=s.max_len as u8 {
        for sym in 0..SYMBOLS {
            if s.lengths[sym] == len {
                count[len as usize] += 1;
                sorted.push(sym as u8);
            }
        }
    }
    let bit = |p: u64| -> i64 {
        let byte = (p / 8) as usize;
        s.bits.get(byte).map_or(0, |&b| (b >> (p % 8) & 1) as i64)
    };
    let mut at = 0usize;
    for k in 0..s.block_count {
        let (symbols, _) = s.info(k);
        let (start, end) = s.range(k);
        let mut pos = start;
        for _ in 0..symbols {
            // Read the code's bits one at a time, first bit most significant, until the value
            // falls among the codes of the current length.
            let (mut code, mut first, mut index) = (0i64, 0i64, 0i64);
            let mut found = None;
            for (len, &n) in count.iter().enumerate().skip(1) {
                code |= bit(pos + len as u64 - 1);
                if code - first < n {
                    found = Some((sorted[(index + code - first) as usize], len));
                    break;
                }
                index += n;
                first = (first + n) << 1;
                code <<= 1;
            }
            let Some((sym, len)) = found else {
                return Err(Error::InvalidCode {
                    block: k as u64,
                    bit_offset: pos,
                });
            };
            out[at] = sym;
            at += 1;
            pos += len as u64;
        }
        if pos != end {
            return Err(Error::BlockEndMismatch {
                block: k as u64,
                expected: end,
                found: pos,
            });
        }
    }
    Ok(())
}

const MULTI_SIZE: usize = 1 << MULTI_BITS;
const MULTI_MASK: u64 = MULTI_SIZE as u64 - 1;
const SINGLE_SIZE: usize = 1 << MAX_CODE_LENGTH;
const SINGLE_MASK: u64 = SINGLE_SIZE as u64 - 1;
/// Multi-symbol entry fields: symbols in bytes 0..=2, count in bits 24..=25, total length in
/// bits 26..=29. A count of 0 means no code of at most 12 bits starts at these bits.
const ENTRY_COUNT_SHIFT: u32 = 24;
const ENTRY_BITS_SHIFT: u32 = 26;
/// Decode blocks on all cores from this many blocks on.
const PARALLEL_BLOCKS: usize = 64;

/// The fast decoder's lookup tables.
struct Tables {
    /// Indexed by the next 12 stream bits: up to three symbols (see the field constants).
    multi: Vec<u32>,
    /// Indexed by the next 13 stream bits: `symbol | length << 8` of the first code, length 0
    /// when no code starts there.
    single: Vec<u16>,
}

fn build_tables(lengths: &[u8; SYMBOLS]) -> Tables {
    let codes = canonical_codes(lengths);
    let mut single = vec![0u16; SINGLE_SIZE];
    for sym in 0..SYMBOLS {
        let len = lengths[sym] as usize;
        if len == 0 {
            continue;
        }
        // Every index whose low `len` bits are the (bit-reversed) code starts with it.
        for i in (codes[sym] as usize..SINGLE_SIZE).step_by(1 << len) {
            single[i] = sym as u16 | (len as u16) << 8;
        }
    }
    let mut multi = vec![0u32; MULTI_SIZE];
    for (i, e) in multi.iter_mut().enumerate() {
        let (mut used, mut n, mut syms) = (0u32, 0u32, 0u32);
        while n < 3 {
            // `i >> used` < 2^12: its entry is right for codes of at most 12 - used bits, the
            // only ones that fit.
            let s = single[i >> used];
            let len = (s >> 8) as u32;
            if len == 0 || used + len > MULTI_BITS {
                break;
            }
            syms |= ((s & 0xFF) as u32) << (8 * n);
            n += 1;
            used += len;
        }
        *e = syms | n << ENTRY_COUNT_SHIFT | used << ENTRY_BITS_SHIFT;
    }
    Tables { multi, single }
}

/// At least 56 stream bits from bit `pos`, the bit at `pos` at bit 0; bits past the payload
/// read as 0.
#[inline(always)]
fn peek(bits: &[u8], pos: u64) -> u64 {
    let byte = (pos >> 3) as usize;
    let word = match bits.get(byte..byte + 8) {
        Some(b) => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        None => {
            let mut b = [0u8; 8];
            for (i, d) in b.iter_mut().enumerate() {
                *d = bits.get(byte.wrapping_add(i)).copied().unwrap_or(0);
            }
            u64::from_le_bytes(b)
        }
    };
    word >> (pos & 7)
}

fn decode_fast(s: &Stream<'_>, out: &mut [u8]) -> Result<()> {
    let t = build_tables(s.lengths);
    if s.block_count < PARALLEL_BLOCKS {
        let mut at = 0;
        for k in 0..s.block_count {
            let n = s.info(k).0 as usize;
            decode_block(s, &t, k, &mut out[at..at + n])?;
            at += n;
        }
        return Ok(());
    }
    // Each block's output starts at the exclusive prefix sum of the symbol counts before it.
    let mut parts = Vec::with_capacity(s.block_count);
    let mut rest = out;
    for k in 0..s.block_count {
        let (part, tail) = rest.split_at_mut(s.info(k).0 as usize);
        parts.push(part);
        rest = tail;
    }
    let results: Vec<Result<()>> = parts
        .into_par_iter()
        .enumerate()
        .map(|(k, part)| decode_block(s, &t, k, part))
        .collect();
    results.into_iter().collect()
}

/// Decodes block `k` into `out` (exactly its symbol count) and checks where it ends.
#[inline(always)]
fn decode_block(s: &Stream<'_>, t: &Tables, k: usize, out: &mut [u8]) -> Result<()> {
    let (start, end) = s.range(k);
    let bits = s.bits;
    let invalid = |pos: u64| Error::InvalidCode {
        block: k as u64,
        bit_offset: pos,
    };
    let mut pos = start;
    let mut at = 0usize;
    // Four lookups of up to three symbols each (at most 4 * 13 = 52 of the 56 bits a peek
    // gives): run while 12 symbols remain.
    while out.len() - at >= 12 {
        let mut w = peek(bits, pos);
        for _ in 0..4 {
            let e = t.multi[(w & MULTI_MASK) as usize];
            let n = (e >> ENTRY_COUNT_SHIFT & 3) as usize;
            if n == 0 {
                // A 13-bit code, or none.
                let e = t.single[(w & SINGLE_MASK) as usize];
                let len = (e >> 8) as u32;
                if len == 0 {
                    return Err(invalid(pos));
                }
                out[at] = e as u8;
                at += 1;
                pos += len as u64;
                w >>= len;
                continue;
            }
            let used = e >> ENTRY_BITS_SHIFT;
            out[at..at + 3].copy_from_slice(&e.to_le_bytes()[..3]);
            at += n;
            pos += used as u64;
            w >>= used;
        }
    }
    while at < out.len() {
        let e = t.single[(peek(bits, pos) & SINGLE_MASK) as usize];
        let len = e >> 8;
        if len == 0 {
            return Err(invalid(pos));
        }
        out[at] = e as u8;
        at += 1;
        pos += len as u64;
    }
    if pos != end {
        return Err(Error::BlockEndMismatch {
            block: k as u64,
            expected: end,
            found: pos,
        });
    }
    Ok(())
}
