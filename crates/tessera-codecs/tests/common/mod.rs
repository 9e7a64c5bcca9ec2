//! Test data shared by the integration tests: deterministic value generators per shape, lane
//! and bit width, driven by a seed so proptest only has to shrink small parameters.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tessera_format::CodecId;

/// The size classes every codec is tested at (the random class is added by the strategies).
pub const SIZES: [usize; 10] = [0, 1, 31, 32, 127, 128, 129, 511, 512, 513];

pub const INT_CODECS: [CodecId; 3] = [CodecId::For, CodecId::Dfor, CodecId::Rfor];

/// Shapes of test data.
#[derive(Debug, Clone, Copy)]
pub enum Shape {
    /// `base + uniform[0, 2^bits)` (lane arithmetic).
    Uniform,
    /// Non-decreasing: cumulative sum of uniform[0, 2^bits) steps.
    Sorted,
    /// Runs of random length 1..=`run` with uniform values.
    Runs(usize),
    /// Values drawn from the lane's extremes (0, 1, MAX, MAX-1, the sign bit and its neighbour).
    Extremes,
    /// Uniform but with deltas that swing negative (DFOR's signed reference).
    Zigzag,
}

pub const SHAPES: [Shape; 7] = [
    Shape::Uniform,
    Shape::Sorted,
    Shape::Runs(4),
    Shape::Runs(40),
    Shape::Runs(600),
    Shape::Extremes,
    Shape::Zigzag,
];

fn mask(bits: u32) -> u64 {
    if bits == 0 {
        0
    } else {
        u64::MAX >> (64 - bits)
    }
}

/// `n` lane values of `lane_bits` (32 or 64) of the given shape, at most `bits` wide per step.
pub fn gen(shape: Shape, n: usize, bits: u32, lane_bits: u32, seed: u64) -> Vec<u64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let lane_mask = mask(lane_bits);
    let m = mask(bits.min(lane_bits));
    let base: u64 = rng.random::<u64>() & lane_mask;
    let mut out = Vec::with_capacity(n);
    match shape {
        Shape::Uniform => {
            for _ in 0..n {
                out.push(base.wrapping_add(rng.random::<u64>() & m) & lane_mask);
            }
        }
        Shape::Sorted => {
            let mut x = base;
            for _ in 0..n {
                x = x.wrapping_add(rng.random::<u64>() & m) & lane_mask;
                out.push(x);
            }
        }
        Shape::Runs(run) => {
            while out.len() < n {
                let len = rng.random_range(1..=run).min(n - out.len());
                let v = base.wrapping_add(rng.random::<u64>() & m) & lane_mask;
                out.extend(std::iter::repeat_n(v, len));
            }
        }
        Shape::Extremes => {
            let sign = 1u64 << (lane_bits - 1);
            let pool = [0, 1, lane_mask, lane_mask - 1, sign, sign - 1];
            for _ in 0..n {
                out.push(pool[rng.random_range(0..pool.len())]);
            }
        }
        Shape::Zigzag => {
            let mut x = base;
            let half = m / 2;
            for _ in 0..n {
                let step = rng.random::<u64>() & m;
                x = x.wrapping_add(step).wrapping_sub(half) & lane_mask;
                out.push(x);
            }
        }
    }
    out
}

pub fn gen32(shape: Shape, n: usize, bits: u32, seed: u64) -> Vec<u32> {
    gen(shape, n, bits, 32, seed)
        .into_iter()
        .map(|v| v as u32)
        .collect()
}

pub fn gen64(shape: Shape, n: usize, bits: u32, seed: u64) -> Vec<u64> {
    gen(shape, n, bits, 64, seed)
}
