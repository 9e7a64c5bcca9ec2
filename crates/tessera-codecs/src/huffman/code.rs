//! The code table (`huffman.md` §3): histogram, optimal length-limited code lengths, canonical
//! code assignment.
//!
//! - [`histogram`] counts byte frequencies; inputs of at least [`PARALLEL_MIN`] bytes are split
//!   over all cores with rayon, smaller ones use four interleaved sub-tables so consecutive equal
//!   bytes do not serialise on one counter.
//! - [`code_lengths`] runs package-merge (Larmore and Hirschberg, 1990), which is exact: it returns
//!   the code lengths that minimise `sum(freq * length)` among all prefix codes whose lengths are
//!   at most the limit. Ties are broken by symbol value, so the result is deterministic.
//!   Cost `O(n * limit)` merge steps for `n <= 256` used symbols, no allocation per item.
//! - [`plan_chunk`] / [`plan_chunks`]: the encoder's per-chunk decision (lengths, codes, stream
//!   length, raw or huffman) from a histogram, shared with the GPU encoder's host step.
//! - [`canonical_codes`] assigns canonical codes (RFC 1951 §3.2.2): shorter codes first, equal
//!   lengths in symbol order. Codes are returned as they appear in the stream, bit-reversed,
//!   because the stream is filled least significant bit first (`huffman.md` §5).
//!
//! Invariant of every table this module returns: the code lengths are complete (Kraft sum 1),
//! or a single used symbol has length 1, which is exactly what the decoders accept.

use rayon::prelude::*;
use tessera_format::{Error, Result};

use super::{
    huffman_len, raw_len, BLOCK_BITS, MAX_CODE_LENGTH, MAX_CODE_LENGTH_V1, MODE_HUFFMAN,
    MODE_HUFFMAN_V1, SYMBOLS,
};

/// Inputs at least this long are histogrammed on all cores.
pub const PARALLEL_MIN: usize = 1 << 20;

/// Bytes per rayon task in [`histogram`].
const PARALLEL_PIECE: usize = 1 << 18;

/// Byte frequencies of `data`.
pub fn histogram(data: &[u8]) -> [u64; SYMBOLS] {
    if data.len() < PARALLEL_MIN {
        return histogram_serial(data);
    }
    data.par_chunks(PARALLEL_PIECE)
        .map(histogram_serial)
        .reduce(
            || [0u64; SYMBOLS],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
                a
            },
        )
}

fn histogram_serial(data: &[u8]) -> [u64; SYMBOLS] {
    let mut sub = [[0u64; SYMBOLS]; 4];
    let mut quads = data.chunks_exact(4);
    for q in &mut quads {
        sub[0][q[0] as usize] += 1;
        sub[1][q[1] as usize] += 1;
        sub[2][q[2] as usize] += 1;
        sub[3][q[3] as usize] += 1;
    }
    for &b in quads.remainder() {
        sub[0][b as usize] += 1;
    }
    let mut h = [0u64; SYMBOLS];
    for (s, x) in h.iter_mut().enumerate() {
        *x = sub[0][s] + sub[1][s] + sub[2][s] + sub[3][s];
    }
    h
}

/// Optimal code lengths of at most `max_len` bits for the frequencies `hist` (0 for unused
/// symbols). One used symbol gets length 1. `max_len` may be up to 255 (use it, or any limit
/// `>= used - 1`, for the unrestricted Huffman optimum).
///
/// Package-merge without package nodes: level list `r` (`r = 0` the deepest) is the leaves
/// merged with the pairwise packages of list `r - 1`, leaves first on equal weight. Only its
/// first `2n - 2` items can ever be selected, so every list is cut there; for each list a
/// byte per item records whether it is a package. The `2n - 2` cheapest items of the top list are
/// selected; among a list's first `take` items the leaves are the `take - p` lightest leaves
/// (the merge keeps their order), each of which gains one bit of length, and the `p` packages
/// select the first `2p` items of the list below. The result is the node-expanding
/// formulation's, item for item, without allocating a node per package: about `limit * 2n`
/// merge steps (a few microseconds for 256 symbols at the limit of 13).
///
/// Errors with [`Error::InvalidArgument`] when `max_len` is 0 or too small to give every used
/// symbol a code (`used > 2^max_len`).
pub fn code_lengths(hist: &[u64; SYMBOLS], max_len: u32) -> Result<[u8; SYMBOLS]> {
    let mut lengths = [0u8; SYMBOLS];
    // Leaves sorted by (frequency, symbol): the tie rule that makes the lengths deterministic.
    let mut keys = [(0u64, 0u8); SYMBOLS];
    let mut n = 0;
    for (s, &f) in hist.iter().enumerate() {
        if f > 0 {
            keys[n] = (f, s as u8);
            n += 1;
        }
    }
    if max_len == 0 || max_len > 255 || (max_len < 16 && n > 1 << max_len) {
        return Err(Error::InvalidArgument(format!(
            "code length limit {max_len} for {n} used symbols"
        )));
    }
    match n {
        0 => return Ok(lengths),
        1 => {
            lengths[keys[0].1 as usize] = 1;
            return Ok(lengths);
        }
        _ => {}
    }
    let keys = &mut keys[..n];
    if keys.iter().all(|&(f, _)| f < 1 << 56) {
        // One u64 key per leaf: frequency above, symbol below; sorts faster than pairs.
        let mut packed = [0u64; SYMBOLS];
        for (p, &(f, s)) in packed.iter_mut().zip(keys.iter()) {
            *p = f << 8 | s as u64;
        }
        packed[..n].sort_unstable();
        for (k, &p) in keys.iter_mut().zip(packed.iter()) {
            *k = (p >> 8, p as u8);
        }
    } else {
        keys.sort_unstable();
    }
    // No code needs more than n - 1 bits: a higher limit changes nothing and costs time.
    let levels = max_len.min(n as u32 - 1) as usize;
    let cap = 2 * n - 2;
    // Weights are capped below u64::MAX, the sentinel that ends both merge inputs.
    const TOP: u64 = u64::MAX - 1;
    let mut leaf_w = [u64::MAX; SYMBOLS + 1];
    for (w, &(f, _)) in leaf_w.iter_mut().zip(keys.iter()) {
        *w = f.min(TOP);
    }
    // Per level above the deepest, 1 where the merged list holds a package.
    let mut is_pkg = vec![[0u8; 2 * SYMBOLS]; levels];
    let mut list = [0u64; 2 * SYMBOLS];
    list[..n].copy_from_slice(&leaf_w[..n]);
    let mut len = n;
    let mut pkg = [u64::MAX; SYMBOLS + 1];
    for flags in is_pkg.iter_mut().skip(1) {
        let packages = len / 2;
        for (p, pair) in pkg.iter_mut().zip(list[..2 * packages].chunks_exact(2)) {
            *p = pair[0].saturating_add(pair[1]).min(TOP);
        }
        pkg[packages] = u64::MAX;
        let out = (n + packages).min(cap);
        let (mut i, mut j) = (0usize, 0usize);
        // Branch-free merge, leaves first on equal weight; k < n + packages, so the sentinel
        // (u64::MAX, above every real weight) is never taken.
        for (slot, flag) in list[..out].iter_mut().zip(flags[..out].iter_mut()) {
            let (lw, pw) = (leaf_w[i], pkg[j]);
            let leaf = lw <= pw;
            *slot = lw.min(pw);
            *flag = !leaf as u8;
            i += leaf as usize;
            j += !leaf as usize;
        }
        len = out;
    }
    // Select the 2n - 2 cheapest items of the top list and walk down.
    let mut take = cap;
    for flags in is_pkg.iter().skip(1).rev() {
        let p: usize = flags[..take].iter().map(|&f| f as usize).sum();
        // take <= 2n - 2 at every level (the optimum's coins at one depth are fewer than twice
        // the leaves below it); the `min`s only keep a broken invariant from panicking.
        for &(_, s) in &keys[..(take - p).min(n)] {
            lengths[s as usize] += 1;
        }
        take = (2 * p).min(cap);
    }
    for &(_, s) in &keys[..take.min(n)] {
        lengths[s as usize] += 1;
    }
    Ok(lengths)
}

/// The encoder's decision for one chunk, from its histogram alone (`huffman.md` §2-3): code
/// lengths (at most [`MAX_CODE_LENGTH`]), canonical codes, the stream length and whether the
/// huffman payload (mode 2) is strictly shorter than the raw one. The CPU encoder and the GPU
/// encoder's host step both use it, so both choose the same bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkPlan {
    /// Bytes in the chunk.
    pub count: u64,
    pub lengths: [u8; SYMBOLS],
    /// Canonical codes, bit-reversed (see [`canonical_codes`]); 0 for unused symbols.
    pub codes: [u32; SYMBOLS],
    /// Sum over symbols of frequency * length.
    pub stream_bits: u64,
    /// Huffman (mode 2) rather than raw.
    pub huffman: bool,
}

impl ChunkPlan {
    /// Payload bytes: the huffman length or the raw one.
    pub fn payload_len(&self) -> u64 {
        if self.huffman {
            huffman_len(MODE_HUFFMAN, self.stream_bits)
        } else {
            raw_len(self.count as usize) as u64
        }
    }

    /// Blocks of the stream (0 for raw).
    pub fn block_count(&self) -> u64 {
        if self.huffman {
            self.stream_bits.div_ceil(BLOCK_BITS as u64)
        } else {
            0
        }
    }
}

/// [`ChunkPlan`] of a chunk with byte frequencies `hist`.
pub fn plan_chunk(hist: &[u64; SYMBOLS]) -> ChunkPlan {
    plan_chunk_mode(hist, MODE_HUFFMAN)
}

/// [`plan_chunk`] for `mode` 2, or for mode 1 (12-bit codes, its payload length), which only
/// the compatibility encoder `encode_v1` asks for.
pub(crate) fn plan_chunk_mode(hist: &[u64; SYMBOLS], mode: u32) -> ChunkPlan {
    let count: u64 = hist.iter().sum();
    let limit = if mode == MODE_HUFFMAN_V1 {
        MAX_CODE_LENGTH_V1
    } else {
        MAX_CODE_LENGTH
    };
    const _: () = assert!(SYMBOLS <= 1 << MAX_CODE_LENGTH_V1);
    let lengths = code_lengths(hist, limit).unwrap_or([0; SYMBOLS]);
    let stream_bits: u64 = hist.iter().zip(&lengths).map(|(&f, &l)| f * l as u64).sum();
    let huffman = count > 0 && huffman_len(mode, stream_bits) < raw_len(count as usize) as u64;
    ChunkPlan {
        count,
        lengths,
        codes: canonical_codes(&lengths),
        stream_bits,
        huffman,
    }
}

/// [`plan_chunk`] for many chunks on all cores: `hists` holds 256 counts per chunk (a GPU
/// histogram launch's output).
pub fn plan_chunks(hists: &[u32]) -> Vec<ChunkPlan> {
    hists
        .par_chunks(SYMBOLS)
        .with_max_len(1)
        .map(|h| {
            let mut wide = [0u64; SYMBOLS];
            for (w, &x) in wide.iter_mut().zip(h) {
                *w = x as u64;
            }
            plan_chunk(&wide)
        })
        .collect()
}

/// Canonical codes for `lengths`, bit-reversed so that the code's first bit is bit 0: the
/// order in which the stream holds it. Unused symbols, and lengths over 32 (which no valid
/// table has), get 0. The lengths must satisfy the Kraft inequality (the callers check).
pub fn canonical_codes(lengths: &[u8; SYMBOLS]) -> [u32; SYMBOLS] {
    let mut count = [0u64; 33];
    for &l in lengths {
        if (1..=32).contains(&l) {
            count[l as usize] += 1;
        }
    }
    let mut next = [0u64; 33];
    let mut code = 0u64;
    for len in 1..33 {
        code = (code + count[len - 1]) << 1;
        next[len] = code;
    }
    let mut codes = [0u32; SYMBOLS];
    for (s, &l) in lengths.iter().enumerate() {
        if (1..=32).contains(&l) {
            let c = next[l as usize] as u32;
            next[l as usize] += 1;
            codes[s] = c.reverse_bits() >> (32 - l as u32);
        }
    }
    codes
}

/// Kraft sum of `lengths` in units of `2^-MAX_CODE_LENGTH` (lengths must be `<=
/// MAX_CODE_LENGTH`): `1 << MAX_CODE_LENGTH` for a complete code.
pub(crate) fn kraft_sum(lengths: &[u8; SYMBOLS]) -> u64 {
    lengths
        .iter()
        .filter(|&&l| l > 0)
        .map(|&l| 1u64 << (MAX_CODE_LENGTH - l as u32))
        .sum()
}
