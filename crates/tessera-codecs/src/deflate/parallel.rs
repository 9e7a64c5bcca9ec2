//! One Deflate stream decoded in parallel: speculative two-pass decoding (the method of pugz
//! and rapidgzip), the way a single-member gzip file written by ordinary `gzip` gets more than
//! one core.
//!
//! A Deflate stream has no markers: where a block starts is known only by decoding up to it, and
//! a block's back-references reach up to 32 KiB into the output before it. So:
//! 1. **Find** ([`find_block_start`]): the stream is cut into *spans* of `span_bytes`; in
//!    each (but the first, which starts at bit 0) the first bit offset where a dynamic-Huffman
//!    block header parses with complete codes, and whose whole block then decodes, is the
//!    span's block candidate start. False block candidates are rare and only cost time.
//! 2. **Decode** every span from its block candidate at once, into 16-bit symbols: a byte, or
//!    a *marker* naming a byte of the unknown 32 KiB window before the span. A span stops at
//!    the first block boundary that equals a later block candidate; decoding from a true block
//!    start can only stop at true block starts, so the spans chained from bit 0 cover the
//!    stream, and a false block candidate is simply decoded past by the span before it.
//! 3. **Resolve** the chain in order: each span's markers are replaced from the last 32 KiB
//!    of the output before it.
//!
//! The result equals sequential inflation (the tests compare it with `miniz_oxide`); hostile
//! input gets the same kinds of errors, every read is bounded, and outputs are bounded by the
//! caller's limit; where this decoder fails, [`super::gzip_decompress`] lets the sequential one
//! give the reference error. The algorithm is the one a GPU needs (a warp per span, the header search
//! parallel over bit offsets); this is its CPU form.

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;
use tessera_format::{Error, Result};

/// Back-references reach at most this far (RFC 1951 §3.2.5).
const WINDOW: usize = 32 * 1024;
/// Symbols at or above this are markers: `MARKER | i` is byte `i` of the 32 KiB window before
/// the span (byte 0 is the farthest back).
const MARKER: u16 = 0x8000;
/// Largest code length (RFC 1951 §3.2.7).
const MAX_BITS: usize = 15;

/// Base lengths and extra bits of length symbols 257..285 (RFC 1951 §3.2.5).
const LEN_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEN_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
/// Base distances and extra bits of distance symbols 0..29.
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];
/// Order of the code length code's lengths (RFC 1951 §3.2.7).
const CL_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

fn bad(what: &'static str, bit: u64) -> Error {
    Error::InvalidHeader {
        field: "Deflate data (RFC 1951)",
        offset: bit / 8,
        expected: what.into(),
        found: bit,
    }
}

fn truncated(bit: u64) -> Error {
    Error::Truncated {
        what: "Deflate stream",
        offset: bit / 8,
        needed: 1,
        available: 0,
    }
}

/// A bit reader, least significant bit first, over a 64-bit buffer; reads past the end give
/// zeros, which `skip` and `take` refuse.
struct Bits<'a> {
    data: &'a [u8],
    /// Bits consumed from the start of `data`.
    pos: u64,
    end: u64,
    /// The next `have` bits, least significant first (bits past the end of `data` are zeros).
    buf: u64,
    have: u32,
    /// The next byte of `data` to load into `buf`.
    next: usize,
}

impl<'a> Bits<'a> {
    fn new(data: &'a [u8], pos: u64) -> Self {
        let mut b = Bits {
            data,
            pos: 0,
            end: data.len() as u64 * 8,
            buf: 0,
            have: 0,
            next: 0,
        };
        b.seek(pos);
        b
    }

    /// Moves to bit `pos` (which may lie past the end: reads then fail).
    fn seek(&mut self, pos: u64) {
        self.pos = pos;
        self.next = usize::try_from(pos >> 3).unwrap_or(usize::MAX);
        self.buf = 0;
        self.have = 0;
        self.refill();
        let r = (pos & 7) as u32;
        self.buf >>= r;
        self.have -= r;
    }

    /// Loads whole bytes until at least 56 bits are held.
    fn refill(&mut self) {
        let word = self
            .next
            .checked_add(8)
            .and_then(|e| self.data.get(self.next..e));
        if let Some(w) = word {
            let w = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
            // Bits past the bytes counted are the same data again, so OR-ing them is harmless.
            self.buf |= w << self.have;
            let bytes = (63 - self.have) / 8;
            self.next += bytes as usize;
            self.have += bytes * 8;
        } else {
            while self.have <= 56 {
                let b = self.data.get(self.next).copied().unwrap_or(0);
                self.buf |= (b as u64) << self.have;
                self.have += 8;
                self.next = self.next.saturating_add(1);
            }
        }
    }

    /// The next `n` (at most 25) bits, zeros past the end.
    fn peek(&mut self, n: u32) -> u32 {
        if self.have < n {
            self.refill();
        }
        (self.buf & ((1u64 << n) - 1)) as u32
    }

    fn skip(&mut self, n: u32) -> Result<()> {
        if self.pos + n as u64 > self.end {
            return Err(truncated(self.pos));
        }
        if self.have < n {
            self.refill();
        }
        self.buf >>= n;
        self.have -= n;
        self.pos += n as u64;
        Ok(())
    }

    fn take(&mut self, n: u32) -> Result<u32> {
        let v = self.peek(n);
        self.skip(n)?;
        Ok(v)
    }
}

/// Bits of the first-level lookup table: most codes are shorter, longer ones take the
/// canonical walk.
const TABLE_BITS: u32 = 10;

/// A canonical Huffman code: a lookup table over the first `bits` bits (entry `symbol << 4 |
/// length`, 0 where the code is longer or absent) and, for longer codes, the counts per length
/// and the symbols in canonical order (RFC 1951 §3.2.2).
struct Huffman {
    table: Vec<u32>,
    bits: u32,
    count: [u16; MAX_BITS + 1],
    symbols: Vec<u16>,
}

impl Huffman {
    /// The code of `lengths`, or `None` when it is over-subscribed or incomplete with more than
    /// one code (a single code may leave the code space incomplete, as in `miniz_oxide`).
    fn new(lengths: &[u8]) -> Option<Huffman> {
        let mut count = [0u16; MAX_BITS + 1];
        for &l in lengths {
            count[l as usize] += 1;
        }
        count[0] = 0;
        let max = (1..=MAX_BITS).rev().find(|&l| count[l] > 0).unwrap_or(0);
        let mut left = 1i64;
        for &c in &count[1..=MAX_BITS] {
            left = left * 2 - c as i64;
            if left < 0 {
                return None;
            }
        }
        let used: u32 = count.iter().map(|&c| c as u32).sum();
        if left != 0 && used > 1 {
            return None;
        }
        let bits = (max as u32).clamp(1, TABLE_BITS);
        let mut offs = [0u16; MAX_BITS + 2];
        for l in 1..=MAX_BITS {
            offs[l + 1] = offs[l] + count[l];
        }
        let mut symbols = vec![0u16; used as usize];
        let mut next = [0u32; MAX_BITS + 2];
        for l in 1..=MAX_BITS {
            next[l + 1] = (next[l] + count[l] as u32) << 1;
        }
        let mut table = vec![0u32; 1 << bits];
        for (sym, &l) in lengths.iter().enumerate() {
            if l == 0 {
                continue;
            }
            let l = l as usize;
            symbols[offs[l] as usize] = sym as u16;
            offs[l] += 1;
            let code = next[l];
            next[l] += 1;
            if l as u32 <= bits {
                let rev = code.reverse_bits() >> (32 - l);
                let mut i = rev as usize;
                while i < table.len() {
                    table[i] = (sym as u32) << 4 | l as u32;
                    i += 1 << l;
                }
            }
        }
        Some(Huffman {
            table,
            bits,
            count,
            symbols,
        })
    }

    fn decode(&self, b: &mut Bits<'_>) -> Result<u32> {
        let e = self.table[b.peek(self.bits) as usize];
        if e != 0 {
            b.skip(e & 15)?;
            return Ok(e >> 4);
        }
        // Longer than the table: the canonical walk, one bit at a time (codes are stored most
        // significant bit first).
        let v = b.peek(MAX_BITS as u32);
        let (mut code, mut first, mut index) = (0i32, 0i32, 0i32);
        for l in 1..=MAX_BITS {
            code |= ((v >> (l - 1)) & 1) as i32;
            let c = self.count[l] as i32;
            if code - c < first {
                if l as u32 <= self.bits {
                    break;
                }
                b.skip(l as u32)?;
                return Ok(self.symbols[(index + code - first) as usize] as u32);
            }
            index += c;
            first = (first + c) << 1;
            code <<= 1;
        }
        Err(bad("a Huffman code of the block", b.pos))
    }
}

/// The literal/length and distance codes of a block (`None` distance code: the block has no
/// distance codes, so any length symbol is an error).
struct Codes {
    lit: Huffman,
    dist: Option<Huffman>,
}

fn fixed_codes() -> Codes {
    let mut l = [0u8; 288];
    l[..144].fill(8);
    l[144..256].fill(9);
    l[256..280].fill(7);
    l[280..].fill(8);
    Codes {
        lit: Huffman::new(&l).expect("the fixed code is complete"),
        dist: Huffman::new(&[5u8; 32]),
    }
}

/// A dynamic block's header (after BFINAL and BTYPE), RFC 1951 §3.2.7.
fn dynamic_codes(b: &mut Bits<'_>) -> Result<Codes> {
    let at = b.pos;
    let hlit = b.take(5)? as usize + 257;
    let hdist = b.take(5)? as usize + 1;
    let hclen = b.take(4)? as usize + 4;
    if hlit > 286 || hdist > 30 {
        return Err(bad("at most 286 literal/length and 30 distance codes", at));
    }
    let mut cl = [0u8; 19];
    for &i in CL_ORDER.iter().take(hclen) {
        cl[i] = b.take(3)? as u8;
    }
    let clc = Huffman::new(&cl).ok_or_else(|| bad("a complete code length code", at))?;
    let mut lengths = [0u8; 286 + 30];
    let n = hlit + hdist;
    let mut i = 0;
    while i < n {
        let sym = clc.decode(b)?;
        let (value, repeat) = match sym {
            0..=15 => (sym as u8, 1),
            16 => {
                if i == 0 {
                    return Err(bad("a length before a repeat", b.pos));
                }
                (lengths[i - 1], 3 + b.take(2)? as usize)
            }
            17 => (0, 3 + b.take(3)? as usize),
            _ => (0, 11 + b.take(7)? as usize),
        };
        if i + repeat > n {
            return Err(bad("code lengths that end with the codes", b.pos));
        }
        lengths[i..i + repeat].fill(value);
        i += repeat;
    }
    if lengths[256] == 0 {
        return Err(bad("an end-of-block code", b.pos));
    }
    let lit = Huffman::new(&lengths[..hlit])
        .ok_or_else(|| bad("a complete literal/length code", b.pos))?;
    let d = &lengths[hlit..n];
    let dist = if d.iter().all(|&l| l == 0) {
        None
    } else {
        Some(Huffman::new(d).ok_or_else(|| bad("a complete distance code", b.pos))?)
    };
    Ok(Codes { lit, dist })
}

/// How a block's decode ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockEnd {
    Last,
    More,
}

/// Decodes one block (header included) into `out`, markers for bytes before the span when
/// `window` allows them; `limit` bounds `out`.
fn block(b: &mut Bits<'_>, out: &mut Vec<u16>, window: bool, limit: usize) -> Result<BlockEnd> {
    let last = b.take(1)? == 1;
    let end = if last { BlockEnd::Last } else { BlockEnd::More };
    let codes = match b.take(2)? {
        0 => {
            // Stored (§3.2.4): byte-aligned LEN, NLEN, then LEN bytes.
            b.seek(b.pos.div_ceil(8) * 8);
            let len = b.take(16)?;
            let nlen = b.take(16)?;
            if len != !nlen & 0xFFFF {
                return Err(bad("a stored block's NLEN = !LEN", b.pos));
            }
            let start = (b.pos / 8) as usize;
            let bytes = b
                .data
                .get(start..start + len as usize)
                .ok_or_else(|| truncated(b.pos))?;
            if out.len() + bytes.len() > limit {
                return Err(over(limit));
            }
            out.extend(bytes.iter().map(|&x| x as u16));
            b.seek(b.pos + len as u64 * 8);
            return Ok(end);
        }
        1 => fixed_codes(),
        2 => dynamic_codes(b)?,
        _ => return Err(bad("block type 0, 1 or 2", b.pos)),
    };
    loop {
        let sym = codes.lit.decode(b)?;
        if sym < 256 {
            if out.len() >= limit {
                return Err(over(limit));
            }
            out.push(sym as u16);
            continue;
        }
        if sym == 256 {
            return Ok(end);
        }
        let k = sym as usize - 257;
        if k >= LEN_BASE.len() {
            return Err(bad("a length symbol up to 285", b.pos));
        }
        let len = LEN_BASE[k] as usize + b.take(LEN_EXTRA[k] as u32)? as usize;
        let dcode = codes
            .dist
            .as_ref()
            .ok_or_else(|| bad("a distance code for a length", b.pos))?;
        let ds = dcode.decode(b)? as usize;
        if ds >= DIST_BASE.len() {
            return Err(bad("a distance symbol up to 29", b.pos));
        }
        let dist = DIST_BASE[ds] as usize + b.take(DIST_EXTRA[ds] as u32)? as usize;
        if out.len() + len > limit {
            return Err(over(limit));
        }
        let have = out.len();
        if dist > have {
            if !window || dist > have + WINDOW {
                return Err(bad("a distance inside the output", b.pos));
            }
            // Bytes before the span: markers, then the rest copied as usual.
            for j in 0..len {
                let src = have as i64 + j as i64 - dist as i64;
                let s = if src < 0 {
                    MARKER | (WINDOW as i64 + src) as u16
                } else {
                    out[src as usize]
                };
                out.push(s);
            }
        } else if dist >= len {
            out.extend_from_within(have - dist..have - dist + len);
        } else {
            for j in 0..len {
                let s = out[have - dist + j];
                out.push(s);
            }
        }
    }
}

fn over(limit: usize) -> Error {
    Error::CountMismatch {
        what: "Deflate output bytes (at most the limit)",
        expected: limit as u64,
        found: limit as u64 + 1,
    }
}

/// The first bit offset in `[from, to)` where a non-final dynamic block starts whose header has
/// complete codes and whose whole block decodes (markers allowed): a block candidate span start.
pub fn find_block_start(data: &[u8], from: u64, to: u64) -> Option<u64> {
    let to = to.min(data.len() as u64 * 8);
    let mut scratch = Vec::new();
    (from..to).find(|&p| {
        let mut b = Bits::new(data, p);
        // BFINAL = 0, BTYPE = 2 (binary 10, least significant bit first: bits 0, 0, 1).
        if b.peek(3) != 0b100 || !plausible_dynamic_header(&b) {
            return false;
        }
        scratch.clear();
        matches!(
            block(&mut b, &mut scratch, true, 4 << 20),
            Ok(BlockEnd::More)
        ) && !scratch.is_empty()
    })
}

/// Every span's block candidate, ascending and distinct: bit 0, then for each range of
/// `span_bytes` (at least 1 KiB) after the first the [`find_block_start`] in it, ranges searched
/// in parallel. The spans of [`inflate_parallel`]; the GPU's span decoder takes the same.
pub fn block_candidates(input: &[u8], span_bytes: usize) -> Vec<u64> {
    let span_bits = span_bytes.max(1024) as u64 * 8;
    let total_bits = input.len() as u64 * 8;
    let ranges: Vec<u64> = (1..total_bits.div_ceil(span_bits))
        .map(|i| i * span_bits)
        .collect();
    let mut starts: Vec<u64> = vec![0];
    starts.extend(
        ranges
            .par_iter()
            .filter_map(|&from| find_block_start(input, from, from + span_bits))
            .collect::<Vec<_>>(),
    );
    starts.dedup();
    starts
}

/// Whether the dynamic block header at `b` has counts in range and a complete code length
/// code: the search's cheap first filter, with no allocation.
fn plausible_dynamic_header(b: &Bits<'_>) -> bool {
    let mut b = Bits::new(b.data, b.pos + 3);
    let (Ok(hlit), Ok(hdist), Ok(hclen)) = (b.take(5), b.take(5), b.take(4)) else {
        return false;
    };
    if hlit > 29 || hdist > 29 {
        return false;
    }
    let mut count = [0u32; 8];
    for _ in 0..hclen + 4 {
        match b.take(3) {
            Ok(l) => count[l as usize] += 1,
            Err(_) => return false,
        }
    }
    let mut left = 1i64;
    for &c in &count[1..] {
        left = left * 2 - c as i64;
        if left < 0 {
            return false;
        }
    }
    left == 0
}

/// A span decoded from its start: symbols, where it stopped, and how.
struct Span {
    symbols: Vec<u16>,
    /// Index into the starts of the block candidate it stopped at, or `None` at the stream's end.
    next: Option<usize>,
    /// Bit after the final block (at the stream's end).
    end_bit: u64,
}

/// Decodes from `starts[k]` until a block boundary equals a later start, or the final block.
/// `budget` holds the symbols all spans may still produce: spans from false block candidates
/// decode garbage until they fail, and must not hold more memory than the output may.
fn span(data: &[u8], starts: &[u64], k: usize, limit: usize, budget: &AtomicUsize) -> Result<Span> {
    let mut b = Bits::new(data, starts[k]);
    let mut out = Vec::new();
    let mut j = k + 1;
    loop {
        let before = out.len();
        while j < starts.len() && starts[j] < b.pos {
            j += 1;
        }
        if j < starts.len() && starts[j] == b.pos {
            return Ok(Span {
                symbols: out,
                next: Some(j),
                end_bit: b.pos,
            });
        }
        let end = block(&mut b, &mut out, k > 0, limit)?;
        let grew = out.len() - before;
        if budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(grew)
            })
            .is_err()
        {
            return Err(over(limit));
        }
        if end == BlockEnd::Last {
            return Ok(Span {
                symbols: out,
                next: None,
                end_bit: b.pos,
            });
        }
    }
}

/// Inflates the raw Deflate stream at the start of `input` into at most `limit` bytes, cutting it
/// into spans of about `span_bytes` decoded in parallel; returns the output and the input
/// bytes the stream used, as [`super::inflate`] does.
pub fn inflate_parallel(input: &[u8], limit: usize, span_bytes: usize) -> Result<(Vec<u8>, usize)> {
    inflate_chain(input, limit, span_bytes).map(|(out, used, _)| (out, used))
}

/// [`inflate_parallel`], and how many spans the chain held.
fn inflate_chain(input: &[u8], limit: usize, span_bytes: usize) -> Result<(Vec<u8>, usize, usize)> {
    let starts = block_candidates(input, span_bytes);
    // Twice the output: room for the chain and for spans from false block candidates.
    let budget = AtomicUsize::new(limit.saturating_mul(2));
    let mut decoded: Vec<Option<Result<Span>>> = (0..starts.len())
        .into_par_iter()
        .map(|k| Some(span(input, &starts, k, limit, &budget)))
        .collect();
    // The chain from bit 0; spans off it started at false block candidates.
    let mut chain: Vec<Span> = Vec::new();
    let mut k = 0usize;
    let mut total = 0usize;
    loop {
        let span = decoded
            .get_mut(k)
            .and_then(Option::take)
            .ok_or_else(|| bad("a chain of increasing spans", 0))??;
        total = total
            .checked_add(span.symbols.len())
            .filter(|&t| t <= limit)
            .ok_or_else(|| over(limit))?;
        let next = span.next;
        chain.push(span);
        match next {
            Some(j) => k = j,
            None => break,
        }
    }
    let used = chain.last().map_or(0, |s| s.end_bit.div_ceil(8) as usize);
    // The window before each span, in order: only the last 32 KiB of each span is resolved here.
    let mut windows: Vec<Vec<u8>> = Vec::with_capacity(chain.len());
    let mut window: Vec<u8> = Vec::new();
    for span in &chain {
        windows.push(window.clone());
        let tail = &span.symbols[span.symbols.len().saturating_sub(WINDOW)..];
        let mut next = window[window.len().saturating_sub(WINDOW - tail.len())..].to_vec();
        let at = next.len();
        next.resize(at + tail.len(), 0);
        resolve(tail, &window, &mut next[at..], span.end_bit)?;
        window = next;
    }
    // Then every span at once, into its place.
    let mut out = vec![0u8; total];
    let mut parts: Vec<&mut [u8]> = Vec::with_capacity(chain.len());
    let mut rest = out.as_mut_slice();
    for span in &chain {
        let (part, r) = rest.split_at_mut(span.symbols.len());
        parts.push(part);
        rest = r;
    }
    parts
        .into_par_iter()
        .zip(chain.par_iter().zip(windows.par_iter()))
        .try_for_each(|(part, (span, win))| resolve(&span.symbols, win, part, span.end_bit))?;
    Ok((out, used, chain.len()))
}

/// Turns a span's symbols into bytes: a marker is the byte of `window` (the bytes before the
/// span, at most 32 KiB) it names.
fn resolve(symbols: &[u16], window: &[u8], out: &mut [u8], end_bit: u64) -> Result<()> {
    for (o, &s) in out.iter_mut().zip(symbols) {
        *o = if s < MARKER {
            s as u8
        } else {
            // Marker i is the byte WINDOW - i before the span.
            let back = WINDOW - (s & !MARKER) as usize;
            if back > window.len() {
                return Err(bad("a distance inside the output", end_bit));
            }
            window[window.len() - back]
        };
    }
    Ok(())
}

#[cfg(test)]
#[path = "lanes_model.rs"]
mod lanes_model;

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn text(n: usize, seed: u64) -> Vec<u8> {
        let words = [
            "tessera ", "span ", "block ", "GPU ", "warp ", "deflate ", "the ", "of ", "\n",
        ];
        let mut x = seed | 1;
        let mut v = Vec::with_capacity(n + 16);
        while v.len() < n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x % 11 == 0 {
                v.extend((0..(x >> 8) % 7).map(|k| (x >> (k * 3)) as u8));
            } else {
                v.extend_from_slice(words[(x >> 20) as usize % words.len()].as_bytes());
            }
        }
        v.truncate(n);
        v
    }

    #[test]
    fn equals_sequential_inflate_at_every_level_and_span_size() {
        for (n, seed) in [(0usize, 1u64), (1, 2), (100_000, 3), (3_000_000, 4)] {
            let data = text(n, seed);
            for level in [1u8, 6, 9] {
                let z = miniz_oxide::deflate::compress_to_vec(&data, level);
                let mut padded = z.clone();
                padded.extend_from_slice(b"trailer!");
                for seg in [1024usize, 10_000, 65_536, 1 << 20] {
                    let (out, used, chain) = inflate_chain(&padded, n + 10, seg)
                        .unwrap_or_else(|e| panic!("{n} bytes, level {level}, {seg}: {e}"));
                    if n == 3_000_000 && seg <= 65_536 {
                        assert!(chain > 3, "{n} bytes, level {level}, {seg}: {chain} spans");
                    }
                    assert!(out == data, "{n} bytes, level {level}, spans {seg}");
                    assert_eq!(used, z.len(), "{n} bytes, level {level}, spans {seg}");
                }
            }
        }
    }

    /// Where each block of a stream starts, decoding sequentially.
    fn boundaries(z: &[u8]) -> Vec<u64> {
        let mut b = Bits::new(z, 0);
        let mut out = Vec::new();
        let mut at = vec![];
        loop {
            at.push(b.pos);
            if block(&mut b, &mut out, false, usize::MAX).expect("valid") == BlockEnd::Last {
                return at;
            }
        }
    }

    #[test]
    fn the_search_finds_the_first_true_block_start_of_each_range() {
        let data = text(4_000_000, 9);
        let z = miniz_oxide::deflate::compress_to_vec(&data, 6);
        let truth = boundaries(&z);
        assert!(truth.len() > 10, "{} blocks", truth.len());
        let range = 8 * 20_000u64;
        let mut found = 0;
        for from in (range..z.len() as u64 * 8).step_by(range as usize) {
            let want = truth
                .iter()
                .copied()
                .find(|&t| t >= from && t < from + range);
            let got = find_block_start(&z, from, from + range);
            // The final block is not searched for (BFINAL = 0 only).
            if want != truth.last().copied() {
                assert_eq!(got, want, "range at bit {from}");
            }
            found += got.is_some() as usize;
        }
        assert!(
            found >= truth.len() - 2,
            "{found} of {} blocks",
            truth.len()
        );
    }

    #[test]
    fn hostile_streams_give_errors_like_miniz() {
        let data = text(400_000, 5);
        let z = miniz_oxide::deflate::compress_to_vec(&data, 6);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for round in 0..300 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut c = z.clone();
            match round % 3 {
                0 => {
                    let i = (x as usize) % c.len();
                    c[i] ^= 1 << ((x >> 40) % 8);
                }
                1 => c.truncate((x as usize) % c.len()),
                _ => {
                    let i = (x as usize) % c.len();
                    c[i] = (x >> 32) as u8;
                }
            }
            let seq = crate::deflate::inflate(&c, 1 << 21);
            let par = inflate_parallel(&c, 1 << 21, 16_384);
            match (&seq, &par) {
                (Ok((a, ua)), Ok((b, ub))) => {
                    assert!(a == b && ua == ub, "round {round}: outputs differ");
                }
                (Err(_), Err(_)) => {}
                _ => panic!(
                    "round {round}: sequential {:?}, parallel {:?}",
                    seq.as_ref().map(|r| r.0.len()),
                    par.as_ref().map(|r| r.0.len())
                ),
            }
        }
    }
}
