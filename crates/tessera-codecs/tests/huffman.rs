//! Huffman (`docs/format/huffman.md`): round trips over many shapes and sizes, code lengths at
//! the limit, fast == reference, must-fail payloads with their specific errors, random
//! corruption, the size against the unrestricted Huffman optimum on text, and golden payloads.

use std::collections::BinaryHeap;
use std::path::PathBuf;

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tessera_codecs::huffman::{
    self, canonical_codes, code_lengths, histogram, BLOCK_BITS, HEADER_BYTES, MAX_CODE_LENGTH,
};
use tessera_format::Error;

const INFO_AT: usize = HEADER_BYTES + 256;

fn enc(data: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    huffman::encode(data, &mut p).expect("encode");
    assert_eq!(p.len(), huffman::encoded_size(data).expect("size"));
    assert!(p.len() <= huffman::max_encoded_len(data.len()));
    p
}

/// Decodes with both decoders, checks they agree, returns the bytes.
fn dec(p: &[u8], n: usize) -> Vec<u8> {
    let mut fast = vec![0xA5; n];
    let mut reference = vec![0x5A; n];
    huffman::decode(p, &mut fast).expect("fast decode");
    huffman::decode_reference(p, &mut reference).expect("reference decode");
    assert_eq!(fast, reference, "fast and reference decoders disagree");
    fast
}

fn round_trip(data: &[u8]) -> Vec<u8> {
    let p = enc(data);
    assert_eq!(
        dec(&p, data.len()),
        data,
        "round trip of {} bytes",
        data.len()
    );
    p
}

fn word(p: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([p[4 * i], p[4 * i + 1], p[4 * i + 2], p[4 * i + 3]])
}

fn set_word(p: &mut [u8], i: usize, w: u32) {
    p[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
}

fn is_huffman(p: &[u8]) -> bool {
    word(p, 0) == huffman::MODE_HUFFMAN
}

/// Geometric-ish skewed bytes: symbol `k` with probability about `2^-(k+1)`, 40 symbols.
fn skewed(n: usize, seed: u64) -> Vec<u8> {
    let mut r = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let x: u64 = r.random();
            (x.trailing_zeros() as u8).min(39) + b'a'
        })
        .collect()
}

fn uniform(n: usize, seed: u64) -> Vec<u8> {
    let mut r = StdRng::seed_from_u64(seed);
    (0..n).map(|_| r.random()).collect()
}

fn text() -> Vec<u8> {
    std::fs::read(golden_dir().join("text.raw")).expect("testdata/v1/huffman/text.raw")
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/v1/huffman")
}

/// Both decoders must fail, with the same variant; returns the fast decoder's error.
fn fail(p: &[u8], n: usize) -> Error {
    let mut out = vec![0u8; n];
    let fast = huffman::decode(p, &mut out).expect_err("fast decoder accepted a bad payload");
    let reference =
        huffman::decode_reference(p, &mut out).expect_err("reference accepted a bad payload");
    assert_eq!(
        std::mem::discriminant(&fast),
        std::mem::discriminant(&reference),
        "fast {fast:?} vs reference {reference:?}"
    );
    fast
}

fn invalid_field(e: Error) -> &'static str {
    match e {
        Error::InvalidHeader { field, .. } => field,
        e => panic!("expected InvalidHeader, got {e:?}"),
    }
}

/// Cost in bits of the unrestricted optimum, by the textbook heap construction (independent of
/// package-merge).
fn optimal_bits(hist: &[u64; 256]) -> u64 {
    let mut heap: BinaryHeap<std::cmp::Reverse<u64>> = hist
        .iter()
        .filter(|&&f| f > 0)
        .map(|&f| std::cmp::Reverse(f))
        .collect();
    if heap.len() == 1 {
        return hist.iter().sum();
    }
    let mut cost = 0;
    while heap.len() > 1 {
        let (Some(a), Some(b)) = (heap.pop(), heap.pop()) else {
            unreachable!()
        };
        cost += a.0 + b.0;
        heap.push(std::cmp::Reverse(a.0 + b.0));
    }
    cost
}

fn cost(hist: &[u64; 256], lengths: &[u8; 256]) -> u64 {
    hist.iter().zip(lengths).map(|(&f, &l)| f * l as u64).sum()
}

fn kraft(lengths: &[u8; 256], limit: u32) -> u64 {
    lengths
        .iter()
        .filter(|&&l| l > 0)
        .map(|&l| 1u64 << (limit - l as u32))
        .sum()
}

#[test]
fn round_trips_every_shape() {
    assert_eq!(round_trip(&[]).len(), HEADER_BYTES, "empty is a raw header");
    for n in [1, 2, 3, 5, 100, 1000, 5000, 70_000] {
        let p = round_trip(&skewed(n, n as u64));
        assert_eq!(is_huffman(&p), n >= 1000, "skewed {n}");
        round_trip(&vec![b'x'; n]);
        let two: Vec<u8> = (0..n).map(|i| if i % 3 == 0 { 7 } else { 200 }).collect();
        round_trip(&two);
        let p = round_trip(&uniform(n, 1));
        assert!(!is_huffman(&p), "uniform bytes must be stored raw");
    }
    let p = round_trip(&vec![0u8; 50_000]);
    assert!(is_huffman(&p));
    // One symbol: one bit per byte.
    assert_eq!(p.len(), 16 + 256 + 4 * 13 + 4 * 50_000usize.div_ceil(32));
    let t = text();
    assert!(is_huffman(&round_trip(&t)));
}

#[test]
fn round_trips_around_block_edges() {
    // Two equiprobable symbols code in 1 bit each: n bytes = n stream bits.
    for blocks in 1..4u32 {
        let edge = (blocks * BLOCK_BITS) as usize;
        for n in edge - 2..=edge + 2 {
            let data: Vec<u8> = (0..n).map(|i| (i % 2) as u8 * 9).collect();
            let p = round_trip(&data);
            assert_eq!(word(&p, 3) as usize, n, "stream_bits");
        }
    }
    // Skewed codes straddle block edges: many lengths around several edges, and the spills
    // really occur.
    let base = skewed(40_000, 7);
    let mut spills = 0;
    for n in (0..40).chain(4000..4100).chain((9000..40_000).step_by(997)) {
        let p = round_trip(&base[..n]);
        if is_huffman(&p) {
            let blocks = (word(&p, 3) as usize).div_ceil(BLOCK_BITS as usize);
            spills += (0..blocks)
                .filter(|&k| word(&p, INFO_AT / 4 + k) >> 16 != 0)
                .count();
        }
    }
    assert!(spills > 10, "only {spills} blocks had a spilling code");
}

#[test]
fn parallel_histogram_and_block_decoding_match() {
    // 1.5 MiB: histogram on all cores, decoding blocks in parallel.
    let data = skewed(1_500_000, 3);
    assert!(data.len() >= huffman::PARALLEL_MIN);
    let mut h = [0u64; 256];
    for &b in &data {
        h[b as usize] += 1;
    }
    assert_eq!(histogram(&data), h);
    round_trip(&data);
}

#[test]
fn fibonacci_frequencies_force_the_code_length_limit() {
    // Fibonacci frequencies give the deepest Huffman tree: 24 symbols need 23 bits
    // unrestricted; the limit must cut them to exactly MAX_CODE_LENGTH.
    let mut hist = [0u64; 256];
    let (mut a, mut b) = (1u64, 1u64);
    for s in 0..24 {
        hist[s * 10] = a;
        (a, b) = (b, a + b);
    }
    let free = code_lengths(&hist, 255).expect("unrestricted");
    assert_eq!(*free.iter().max().expect("max"), 23);
    assert_eq!(cost(&hist, &free), optimal_bits(&hist));
    let limited = code_lengths(&hist, MAX_CODE_LENGTH).expect("limited");
    assert_eq!(*limited.iter().max().expect("max") as u32, MAX_CODE_LENGTH);
    assert_eq!(kraft(&limited, MAX_CODE_LENGTH), 1 << MAX_CODE_LENGTH);
    assert!(cost(&hist, &limited) > cost(&hist, &free));

    // The encoder uses exactly those lengths and the payload decodes.
    let mut data = Vec::new();
    for (s, &f) in hist.iter().enumerate() {
        data.extend(std::iter::repeat_n(s as u8, f as usize));
    }
    // Interleave so codes of every length meet block edges.
    let mut r = StdRng::seed_from_u64(5);
    for i in (1..data.len()).rev() {
        data.swap(i, r.random_range(0..=i));
    }
    let p = round_trip(&data);
    assert!(is_huffman(&p));
    assert_eq!(&p[HEADER_BYTES..INFO_AT], &limited[..]);
}

#[test]
fn canonical_codes_are_prefix_free_and_ordered() {
    let hist = histogram(&text());
    let lengths = code_lengths(&hist, MAX_CODE_LENGTH).expect("lengths");
    let codes = canonical_codes(&lengths);
    // Undo the bit reversal: canonical codes increase with (length, symbol).
    let mut seen: Vec<(u8, u8, u32)> = (0..256)
        .filter(|&s| lengths[s] > 0)
        .map(|s| {
            let l = lengths[s];
            (l, s as u8, codes[s].reverse_bits() >> (32 - l as u32))
        })
        .collect();
    seen.sort();
    for w in seen.windows(2) {
        let ((l0, _, c0), (l1, _, c1)) = (w[0], w[1]);
        assert_eq!(c1, (c0 + 1) << (l1 - l0), "canonical order");
    }
}

#[test]
fn text_is_within_one_percent_of_the_optimum_plus_table() {
    let t = text();
    let p = enc(&t);
    let optimum = optimal_bits(&histogram(&t)).div_ceil(8) + 256;
    let ratio = p.len() as f64 / optimum as f64;
    println!(
        "text: {} bytes -> {} payload bytes; unrestricted Huffman + 256-byte table = {} ({:+.3}%)",
        t.len(),
        p.len(),
        optimum,
        (ratio - 1.0) * 100.0
    );
    assert!(ratio <= 1.01, "payload {} vs optimum {optimum}", p.len());
}

#[test]
fn must_fail_payloads_give_their_specific_errors() {
    let data = skewed(20_000, 11);
    let good = enc(&data);
    let n = data.len();
    assert!(is_huffman(&good));
    let blocks = (word(&good, 3) as usize).div_ceil(BLOCK_BITS as usize);
    assert!(blocks >= 3);
    let info = INFO_AT / 4;

    assert!(matches!(
        fail(&good[..good.len() - 1], n),
        Error::Misaligned { .. }
    ));
    assert!(matches!(fail(&good[..8], n), Error::Truncated { .. }));
    assert!(matches!(fail(&good, n + 1), Error::CountMismatch { .. }));

    let with = |i: usize, w: u32| {
        let mut p = good.clone();
        set_word(&mut p, i, w);
        p
    };
    assert_eq!(invalid_field(fail(&with(0, 2), n)), "mode");
    assert_eq!(
        invalid_field(fail(&with(1, (1 << 24) + 1), n)),
        "total_count"
    );
    assert_eq!(invalid_field(fail(&with(2, 2048), n)), "block_bits");
    assert!(matches!(
        fail(&with(3, word(&good, 3) + 32), n),
        Error::Truncated { .. }
    ));
    let mut longer = good.clone();
    longer.extend_from_slice(&[0; 4]);
    assert!(matches!(fail(&longer, n), Error::TrailingBytes { .. }));

    let mut p = good.clone();
    p[HEADER_BYTES + b'a' as usize] = 13;
    assert_eq!(invalid_field(fail(&p, n)), "code length");
    let mut p = good.clone();
    p[HEADER_BYTES + b'a' as usize] += 1; // no longer complete
    assert!(invalid_field(fail(&p, n)).starts_with("code lengths"));

    let w0 = word(&good, info);
    assert_eq!(
        invalid_field(fail(&with(info, w0 | 1 << 24), n)),
        "block_info reserved bits"
    );
    assert_eq!(
        invalid_field(fail(&with(info, w0 & 0xFFFF | 12 << 16), n)),
        "block_info spill"
    );
    let last = info + blocks - 1;
    assert_eq!(
        invalid_field(fail(&with(last, word(&good, last) | 1 << 16), n)),
        "block_info spill"
    );
    assert_eq!(
        invalid_field(fail(&with(info, w0 & !0xFFFF | 4097), n)),
        "block_info symbol_count"
    );
    assert!(matches!(
        fail(&with(info, w0 - 1), n),
        Error::CountMismatch { .. }
    ));
    // Move one symbol from block 0 to block 1: the counts still add up, block 0 ends early.
    let mut p = with(info, w0 - 1);
    set_word(&mut p, info + 1, word(&good, info + 1) + 1);
    assert!(matches!(
        fail(&p, n),
        Error::BlockEndMismatch { block: 0, .. }
    ));
    // A different (valid) spill: block 0 ends where its codes end, not where block_info says.
    let spill = w0 >> 16;
    let other = if spill == 0 { 1 } else { spill - 1 };
    assert!(matches!(
        fail(&with(info, w0 & 0xFFFF | other << 16), n),
        Error::BlockEndMismatch { block: 0, .. }
    ));

    // One symbol of length 1 has the code `0`: a 1 bit starts no code.
    let single = enc(&vec![b'z'; 10_000]);
    let bits_at = INFO_AT + 4 * 3;
    let mut p = single.clone();
    p[bits_at + 600] |= 0x10;
    match fail(&p, 10_000) {
        Error::InvalidCode { block, bit_offset } => {
            assert_eq!((block, bit_offset), (1, 600 * 8 + 4));
        }
        e => panic!("expected InvalidCode, got {e:?}"),
    }

    // Raw payloads.
    let raw = enc(&uniform(1001, 2));
    assert!(!is_huffman(&raw));
    assert!(matches!(
        fail(&raw[..raw.len() - 4], 1001),
        Error::Truncated { .. }
    ));
    let mut p = raw.clone();
    p.extend_from_slice(&[0; 4]);
    assert!(matches!(fail(&p, 1001), Error::TrailingBytes { .. }));
    let mut p = raw.clone();
    set_word(&mut p, 2, BLOCK_BITS);
    assert_eq!(invalid_field(fail(&p, 1001)), "block_bits");
    let mut p = raw.clone();
    set_word(&mut p, 3, 8);
    assert_eq!(invalid_field(fail(&p, 1001)), "stream_bits");
}

#[test]
fn golden_payloads_decode_and_regenerate() {
    let dir = golden_dir();
    let regen = std::env::var_os("TESSERA_REGEN_GOLDEN").is_some();
    let inputs: [(&str, Vec<u8>); 4] = [
        ("text", text()),
        ("skewed", skewed(9000, 1)),
        ("single", vec![b'q'; 5000]),
        ("uniform", uniform(777, 4)),
    ];
    for (name, data) in inputs {
        let path = dir.join(format!("{name}.huf"));
        let p = enc(&data);
        if regen {
            std::fs::write(&path, &p).expect("write golden");
        }
        let golden = std::fs::read(&path).expect("golden payload");
        assert_eq!(dec(&golden, data.len()), data, "{name}.huf decodes");
        assert!(p == golden, "{name}.huf: the encoder's output changed");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn package_merge_is_optimal_and_respects_the_limit(
        freqs in prop::collection::vec(0u64..1000, 1..40),
        limit in 6u32..=14,
    ) {
        let mut hist = [0u64; 256];
        for (i, &f) in freqs.iter().enumerate() {
            hist[i * 7 % 256] = f;
        }
        let used = hist.iter().filter(|&&f| f > 0).count();
        prop_assume!(used > 0);
        let free = code_lengths(&hist, 255).expect("free");
        prop_assert_eq!(cost(&hist, &free), optimal_bits(&hist));
        let lim = code_lengths(&hist, limit).expect("limited");
        prop_assert!(lim.iter().all(|&l| l as u32 <= limit));
        prop_assert!(cost(&hist, &lim) >= cost(&hist, &free));
        if used > 1 {
            prop_assert_eq!(kraft(&lim, limit), 1u64 << limit);
        }
        if free.iter().all(|&l| l as u32 <= limit) {
            prop_assert_eq!(cost(&hist, &lim), cost(&hist, &free));
        }
    }

    #[test]
    fn fast_matches_reference_on_random_inputs(
        n in 0usize..20_000,
        alphabet in 1u32..=256,
        skew in 0u32..4,
        seed in any::<u64>(),
    ) {
        let mut r = StdRng::seed_from_u64(seed);
        let data: Vec<u8> = (0..n)
            .map(|_| {
                let mut x = r.random_range(0..alphabet);
                for _ in 0..skew {
                    x = x.min(r.random_range(0..alphabet));
                }
                x as u8
            })
            .collect();
        round_trip(&data);
    }

    #[test]
    fn random_corruption_never_panics_and_decoders_agree(
        seed in any::<u64>(),
        flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..6),
    ) {
        let data = skewed(3000 + (seed % 9000) as usize, seed);
        let mut p = enc(&data);
        for (at, x) in flips {
            let i = at % p.len();
            p[i] ^= x.max(1);
        }
        let mut fast = vec![0u8; data.len()];
        let mut reference = vec![1u8; data.len()];
        match (huffman::decode(&p, &mut fast), huffman::decode_reference(&p, &mut reference)) {
            (Ok(()), Ok(())) => prop_assert_eq!(fast, reference),
            (Err(a), Err(b)) => prop_assert_eq!(
                std::mem::discriminant(&a),
                std::mem::discriminant(&b),
                "{:?} vs {:?}", a, b
            ),
            (a, b) => prop_assert!(false, "fast {:?}, reference {:?}", a, b),
        }
    }
}
