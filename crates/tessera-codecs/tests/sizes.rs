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
