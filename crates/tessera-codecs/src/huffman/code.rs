//! The code table (`huffman.md` §3): histogram, optimal length-limited code lengths, canonical
//! code assignment.
//!
//! - [`histogram`] counts byte frequencies; inputs of at least [`PARALLEL_MIN`] bytes are split
//!   over all cores with rayon, smaller ones use four interleaved sub-tables so consecutive equal
//!   bytes do not serialise on one counter.
//! - [`code_lengths`] runs package-merge (Larmore and Hirschberg, 1990), which is exact: it returns
//!   the code lengths that minimise `sum(freq * length)` among all prefix codes whose lengths are
//!   at most the limit. Ties are broken by symbol value, so the result is deterministic.
//!   Cost `O(n * limit)` items for `n <= 256` used symbols: negligible next to the encoding.
//! - [`canonical_codes`] assigns canonical codes (RFC 1951 §3.2.2): shorter codes first, equal
//!   lengths in symbol order. Codes are returned as they appear in the stream, bit-reversed,
//!   because the stream is filled least significant bit first (`huffman.md` §5).
//!
//! Invariant of every table this module returns: the code lengths are complete (Kraft sum 1),
//! or a single used symbol has length 1, which is exactly what the decoders accept.

use rayon::prelude::*;
use tessera_format::{Error, Result};

use super::{MAX_CODE_LENGTH, SYMBOLS};

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

/// A package-merge node: a leaf (a symbol) or a package of two items of the previous list.
#[derive(Debug, Clone, Copy)]
enum Node {
    Leaf(u8),
    Package(u32, u32),
}

/// Optimal code lengths of at most `max_len` bits for the frequencies `hist` (0 for unused
/// symbols). One used symbol gets length 1. `max_len` may be up to 255 (use it, or any limit
/// `>= used - 1`, for the unrestricted Huffman optimum).
///
/// Errors with [`Error::InvalidArgument`] when `max_len` is 0 or too small to give every used
/// symbol a code (`used > 2^max_len`).
pub fn code_lengths(hist: &[u64; SYMBOLS], max_len: u32) -> Result<[u8; SYMBOLS]> {
    let mut lengths = [0u8; SYMBOLS];
    // Leaves sorted by (frequency, symbol): the tie rule that makes the lengths deterministic.
    let mut leaves: Vec<(u64, u8)> = (0..SYMBOLS)
        .filter(|&s| hist[s] > 0)
        .map(|s| (hist[s], s as u8))
        .collect();
    leaves.sort_unstable();
    let n = leaves.len();
    if max_len == 0 || max_len > 255 || (max_len < 16 && n > 1 << max_len) {
        return Err(Error::InvalidArgument(format!(
            "code length limit {max_len} for {n} used symbols"
        )));
    }
    match n {
        0 => return Ok(lengths),
        1 => {
            lengths[leaves[0].1 as usize] = 1;
            return Ok(lengths);
        }
        _ => {}
    }
    // No code needs more than n - 1 bits: a higher limit changes nothing and costs time.
    let levels = max_len.min(n as u32 - 1);

    let mut nodes: Vec<Node> = leaves.iter().map(|&(_, s)| Node::Leaf(s)).collect();
    let leaf_items: Vec<(u64, u32)> = leaves
        .iter()
        .enumerate()
        .map(|(i, &(w, _))| (w, i as u32))
        .collect();
    // list = the items of the deepest level; each round packages it pairwise and merges the
    // packages with the leaves, moving one level up. Leaves go first on equal weight.
    let mut list = leaf_items.clone();
    for _ in 1..levels {
        let mut packages = Vec::with_capacity(list.len() / 2);
        for pair in list.chunks_exact(2) {
            packages.push((pair[0].0 + pair[1].0, nodes.len() as u32));
            nodes.push(Node::Package(pair[0].1, pair[1].1));
        }
        let mut merged = Vec::with_capacity(leaf_items.len() + packages.len());
        let (mut i, mut j) = (0, 0);
        while i < leaf_items.len() || j < packages.len() {
            let take_leaf =
                j == packages.len() || (i < leaf_items.len() && leaf_items[i].0 <= packages[j].0);
            if take_leaf {
                merged.push(leaf_items[i]);
                i += 1;
            } else {
                merged.push(packages[j]);
                j += 1;
            }
        }
        list = merged;
    }
    // The 2n - 2 cheapest items of the top level; a symbol's code length is how many of them
    // contain its leaf.
    let mut stack: Vec<u32> = list[..2 * n - 2].iter().map(|&(_, id)| id).collect();
    while let Some(id) = stack.pop() {
        match nodes[id as usize] {
            Node::Leaf(s) => lengths[s as usize] += 1,
            Node::Package(a, b) => {
                stack.push(a);
                stack.push(b);
            }
        }
    }
    Ok(lengths)
}

/// Code lengths for the encoder: [`code_lengths`] at [`MAX_CODE_LENGTH`], which cannot fail
/// for 256 symbols.
pub(crate) fn limited_code_lengths(hist: &[u64; SYMBOLS]) -> [u8; SYMBOLS] {
    const _: () = assert!(SYMBOLS <= 1 << MAX_CODE_LENGTH);
    code_lengths(hist, MAX_CODE_LENGTH).unwrap_or([0; SYMBOLS])
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
