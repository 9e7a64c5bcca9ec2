//! Size targets: format properties (not timings), asserted and printed in bits per value
//! (`payload bytes * 8 / n`). Run with `--nocapture` to see the figures.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tessera_codecs::int;
use tessera_format::CodecId;

fn bits_per_value(codec: CodecId, v: &[u32]) -> f64 {
    let mut p = Vec::new();
    int::encode(codec, v, &mut p).expect("encode");
    assert_eq!(p.len(), int::encoded_size(codec, v).expect("size"));
    let mut out = vec![0u32; v.len()];
    int::decode(codec, &p, &mut out).expect("decode");
    assert!(out == v);
    p.len() as f64 * 8.0 / v.len() as f64
}

/// DFOR on sorted 0..2^20: spec predicts 17 words per 512 values = 1.0625 bits per value.
#[test]
fn dfor_sorted_at_most_1_9_bits() {
    let v: Vec<u32> = (0..1u32 << 20).collect();
    let bpv = bits_per_value(CodecId::Dfor, &v);
    println!("DFOR sorted 0..2^20: {bpv:.4} bits/value (target <= 1.9)");
    assert!(bpv <= 1.9, "{bpv}");
}

/// FOR on uniform [0, 2^b): b + 0.75 bits per value plus the chunk header.
#[test]
fn for_uniform_at_most_b_plus_0_8_bits() {
    let mut rng = StdRng::seed_from_u64(42);
    let n = 1 << 16;
    for b in 1..=32u32 {
        let mask = u32::MAX >> (32 - b);
        let v: Vec<u32> = (0..n).map(|_| rng.random::<u32>() & mask).collect();
        let bpv = bits_per_value(CodecId::For, &v);
        println!(
            "FOR uniform [0, 2^{b}): {bpv:.4} bits/value (target <= {})",
            b as f64 + 0.8
        );
        assert!(bpv <= b as f64 + 0.8, "b = {b}: {bpv}");
    }
}

/// RFOR on runs of exactly 32 with values below 2^20: spec predicts 14 words per 512 values.
#[test]
fn rfor_runs_of_32_at_most_1_2_bits() {
    let mut rng = StdRng::seed_from_u64(7);
    let n = 1 << 20;
    let mut v = Vec::with_capacity(n);
    let mut prev = u32::MAX;
    while v.len() < n {
        // Adjacent runs must differ, or they would merge into one run of 64.
        let mut x = rng.random::<u32>() & ((1 << 20) - 1);
        while x == prev {
            x = rng.random::<u32>() & ((1 << 20) - 1);
        }
        prev = x;
        v.extend(std::iter::repeat_n(x, 32));
    }
    let bpv = bits_per_value(CodecId::Rfor, &v);
    println!("RFOR runs of 32, values < 2^20: {bpv:.4} bits/value (target <= 1.2, spec 0.875)");
    assert!(bpv <= 1.2, "{bpv}");
}

/// Words of one RFOR block (lane 32) holding `runs` (value, length) pairs, from `rfor.md`'s
/// layout alone: value_reference, run word, bit-width words, then both arrays' miniblocks (the
/// last of each stores only its entries' bits).
fn rfor_block_words(runs: &[(u32, u32)]) -> usize {
    let r = runs.len();
    let m = r.div_ceil(32);
    let vref = runs.iter().map(|x| x.0).min().expect("a run");
    let lref = runs.iter().map(|x| x.1).min().expect("a run");
    let mut words = 2 + (2 * m).div_ceil(4);
    for mb in runs.chunks(32) {
        let width = |d: u32| 32 - d.leading_zeros();
        let vbw = mb.iter().map(|x| width(x.0 - vref)).max().unwrap_or(0) as usize;
        let lbw = mb.iter().map(|x| width(x.1 - lref)).max().unwrap_or(0) as usize;
        words += (mb.len() * vbw).div_ceil(32) + (mb.len() * lbw).div_ceil(32);
    }
    words
}

/// The RFOR encoder writes each block's maximal runs or its identity block (every value a run
/// of length 1), whichever takes fewer words, the identity block on a tie (`rfor.md`, "Runs").
/// Checked block by block against a model of both sizes, on blocks whose runs average 1 to 4
/// values (where the two sizes cross) and of 1 to 12 value bits.
#[test]
fn rfor_blocks_take_the_smaller_of_maximal_runs_and_identity() {
    let mut rng = StdRng::seed_from_u64(21);
    let (mut identity, mut maximal) = (0, 0);
    for _ in 0..400 {
        let n = rng.random_range(1..=3 * 512);
        let mut v = Vec::with_capacity(n);
        while v.len() < n {
            // Each 512-value block gets its own run-length and value-width regime.
            let most_len = rng.random_range(1..=4u32);
            let bits = rng.random_range(1..=12u32);
            let block_end = (v.len() / 512 + 1) * 512;
            while v.len() < n.min(block_end) {
                let x = rng.random::<u32>() >> (32 - bits);
                let len = rng.random_range(1..=most_len) as usize;
                v.extend(std::iter::repeat_n(x, len.min(n.min(block_end) - v.len())));
            }
        }
        let mut p = Vec::new();
        int::encode(CodecId::Rfor, &v, &mut p).expect("encode");
        assert_eq!(p.len(), int::encoded_size(CodecId::Rfor, &v).expect("size"));
        let word = |i: usize| u32::from_le_bytes(p[4 * i..4 * i + 4].try_into().expect("4 bytes"));
        let blocks = n.div_ceil(512);
        for (k, vals) in v.chunks(512).enumerate() {
            let mut runs: Vec<(u32, u32)> = Vec::new();
            for &x in vals {
                match runs.last_mut() {
                    Some(last) if last.0 == x => last.1 += 1,
                    _ => runs.push((x, 1)),
                }
            }
            let units: Vec<(u32, u32)> = vals.iter().map(|&x| (x, 1)).collect();
            let (max_words, id_words) = (rfor_block_words(&runs), rfor_block_words(&units));
            let start = word(4 + k) as usize;
            let end = word(4 + k + 1) as usize;
            let r = (word(4 + blocks + 1 + start + 1) & 0xFFFF) as usize;
            if id_words <= max_words {
                identity += 1;
                assert_eq!((end - start, r), (id_words, vals.len()), "block {k} of {n}");
            } else {
                maximal += 1;
                assert_eq!(
                    (end - start, r),
                    (max_words, runs.len()),
                    "block {k} of {n}"
                );
            }
        }
        let mut out = vec![0u32; n];
        int::decode(CodecId::Rfor, &p, &mut out).expect("decode");
        assert!(out == v);
    }
    println!("RFOR: {identity} identity blocks, {maximal} of maximal runs");
    assert!(identity > 100 && maximal > 100, "{identity} {maximal}");
}

/// On uniformly random small values (runs of about one value) RFOR writes identity blocks: at
/// most FOR's size plus the RFOR block overhead, where maximal runs took up to 0.8 bits more.
#[test]
fn rfor_uniform_small_values_cost_at_most_b_plus_0_75_bits() {
    let mut rng = StdRng::seed_from_u64(5);
    let n = 1 << 16;
    for b in 1..=12u32 {
        let mask = u32::MAX >> (32 - b);
        let v: Vec<u32> = (0..n).map(|_| rng.random::<u32>() & mask).collect();
        let bpv = bits_per_value(CodecId::Rfor, &v);
        println!(
            "RFOR uniform [0, 2^{b}): {bpv:.4} bits/value (target <= {})",
            b as f64 + 0.75
        );
        assert!(bpv <= b as f64 + 0.75, "b = {b}: {bpv}");
    }
}
