//! Round trips of every codec over both lanes and every logical type: encode, check the exact
//! `encoded_size`, decode with the fast and the reference decoder, both must give the input back;
//! the portable build of the fast paths must match the (on x86-64, AVX2) dispatched one.
//! Sizes cover the block and miniblock boundaries (0, 1, 31, 32, 127, 128, 129, 511, 512, 513)
//! and random sizes up to 10^5; shapes cover uniform, sorted, runs, lane extremes and signed
//! deltas; every `bit_width` 0..=lane is exercised exhaustively, the rest by proptest.

mod common;

use common::{gen32, gen64, Shape, INT_CODECS, SHAPES, SIZES};
use proptest::prelude::*;
use proptest::sample::select;
use tessera_codecs::{column, int};
use tessera_format::{CodecId, LogicalType};

fn check32(codec: CodecId, v: &[u32]) {
    let mut p = Vec::new();
    int::encode(codec, v, &mut p).expect("encode");
    assert_eq!(
        p.len(),
        int::encoded_size(codec, v).expect("encoded_size"),
        "{codec:?} size"
    );
    let mut fast = vec![0u32; v.len()];
    int::decode(codec, &p, &mut fast).expect("fast decode");
    assert!(fast == v, "{codec:?} fast decode differs (n = {})", v.len());
    let mut reference = vec![1u32; v.len()];
    int::decode_reference(codec, &p, &mut reference).expect("reference decode");
    assert!(
        reference == v,
        "{codec:?} reference decode differs (n = {})",
        v.len()
    );
    // The portable build (no run-time dispatch to AVX2) gives the same bytes and values.
    let mut q = Vec::new();
    int::portable::encode(codec, v, &mut q).expect("portable encode");
    assert!(q == p, "{codec:?} portable encoder differs");
    assert_eq!(
        int::portable::encoded_size(codec, v).expect("portable size"),
        p.len()
    );
    let mut portable = vec![2u32; v.len()];
    int::portable::decode(codec, &p, &mut portable).expect("portable decode");
    assert!(portable == v, "{codec:?} portable decode differs");
}

fn check64(codec: CodecId, v: &[u64]) {
    let mut p = Vec::new();
    int::encode(codec, v, &mut p).expect("encode");
    assert_eq!(
        p.len(),
        int::encoded_size(codec, v).expect("encoded_size"),
        "{codec:?} size"
    );
    let mut fast = vec![0u64; v.len()];
    int::decode(codec, &p, &mut fast).expect("fast decode");
    assert!(fast == v, "{codec:?} fast decode differs (n = {})", v.len());
    let mut reference = vec![1u64; v.len()];
    int::decode_reference(codec, &p, &mut reference).expect("reference decode");
    assert!(
        reference == v,
        "{codec:?} reference decode differs (n = {})",
        v.len()
    );
    // The portable build (no run-time dispatch to AVX2) gives the same bytes and values.
    let mut q = Vec::new();
    int::portable::encode(codec, v, &mut q).expect("portable encode");
    assert!(q == p, "{codec:?} portable encoder differs");
    assert_eq!(
        int::portable::encoded_size(codec, v).expect("portable size"),
        p.len()
    );
    let mut portable = vec![2u64; v.len()];
    int::portable::decode(codec, &p, &mut portable).expect("portable decode");
    assert!(portable == v, "{codec:?} portable decode differs");
}

/// Every bit width 0..=32 (lane 32) and 0..=64 (lane 64), every codec, every size class.
#[test]
fn every_bit_width_round_trips() {
    for codec in INT_CODECS {
        for bits in 0..=32 {
            for (i, n) in SIZES.into_iter().enumerate() {
                check32(
                    codec,
                    &gen32(Shape::Uniform, n, bits, (bits as u64) << 8 | i as u64),
                );
            }
        }
        for bits in 0..=64 {
            for (i, n) in SIZES.into_iter().enumerate() {
                check64(
                    codec,
                    &gen64(Shape::Uniform, n, bits, (bits as u64) << 8 | i as u64),
                );
            }
        }
    }
}

/// Every miniblock of the payload really uses the width its data needs: uniform data spanning
/// exactly `b` bits from a zero reference gives FOR miniblocks of width `b` only.
#[test]
fn for_chooses_the_minimal_width() {
    for b in 1..=32u32 {
        let max = (u64::MAX >> (64 - b)) as u32;
        let mut v: Vec<u32> = gen32(Shape::Uniform, 128, 32, b as u64)
            .iter()
            .map(|x| x & max)
            .collect();
        // Pin the reference to 0 and the max to 2^b - 1 in every miniblock.
        for mb in v.chunks_mut(32) {
            mb[0] = 0;
            mb[1] = max;
        }
        let mut p = Vec::new();
        int::encode(CodecId::For, &v, &mut p).expect("encode");
        // header 4 + block_starts 2 + reference 1, then the bit-width word.
        let bw_word = u32::from_le_bytes([p[28], p[29], p[30], p[31]]);
        assert_eq!(bw_word, b * 0x0101_0101, "width {b}");
        check32(CodecId::For, &v);
    }
}

fn sizes() -> impl Strategy<Value = usize> {
    prop_oneof![8 => select(SIZES.to_vec()), 1 => 0usize..100_000, 1 => 513usize..4096]
}

fn shapes() -> impl Strategy<Value = Shape> {
    select(SHAPES.to_vec())
}

fn codecs() -> impl Strategy<Value = CodecId> {
    select(INT_CODECS.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn lane32_round_trips(codec in codecs(), shape in shapes(), bits in 0u32..=32, n in sizes(), seed: u64) {
        check32(codec, &gen32(shape, n, bits, seed));
    }

    #[test]
    fn lane64_round_trips(codec in codecs(), shape in shapes(), bits in 0u32..=64, n in sizes(), seed: u64) {
        check64(codec, &gen64(shape, n, bits, seed));
    }
}

/// Raw little-endian values of `ty` built from lane values of the given shape, kept inside the
/// type's range (lane values are masked to the type's width, so the extremes shape yields the
/// type's MIN, MAX, 0 and -1).
fn raw_values(ty: LogicalType, shape: Shape, n: usize, bits: u32, seed: u64) -> Vec<u8> {
    let w = ty.width();
    let tbits = 8 * w as u32;
    let lane = common::gen(shape, n, bits.min(tbits), tbits, seed);
    let mut raw = Vec::with_capacity(n * w);
    for u in lane {
        // `u` is an order-preserving lane value of the type: undo the sign flip for signed.
        let v = if ty.signed() {
            u ^ (1u64 << (tbits - 1))
        } else {
            u
        };
        raw.extend_from_slice(&v.to_le_bytes()[..w]);
    }
    raw
}

fn check_column(ty: LogicalType, requested: Option<CodecId>, raw: &[u8]) {
    let mut p = Vec::new();
    let codec = column::encode_chunk(ty, requested, raw, &mut p).expect("encode_chunk");
    if let Some(r) = requested {
        assert_eq!(codec, r);
    }
    let mut out = vec![0u8; raw.len()];
    column::decode_chunk(ty, codec, &p, &mut out).expect("decode_chunk");
    assert!(out == raw, "{ty:?} {codec:?} fast");
    let mut out = vec![0u8; raw.len()];
    column::decode_chunk_reference(ty, codec, &p, &mut out).expect("decode_chunk_reference");
    assert!(out == raw, "{ty:?} {codec:?} reference");
}

/// Every logical type at its extremes, through every codec and auto.
#[test]
fn every_type_at_its_extremes() {
    for ty in LogicalType::INTEGERS {
        for n in SIZES {
            let raw = raw_values(ty, Shape::Extremes, n, 64, n as u64);
            for requested in [
                None,
                Some(CodecId::Plain),
                Some(CodecId::For),
                Some(CodecId::Dfor),
                Some(CodecId::Rfor),
            ] {
                check_column(ty, requested, &raw);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn column_round_trips(
        ty in select(LogicalType::INTEGERS.to_vec()),
        requested in select(vec![None, Some(CodecId::Plain), Some(CodecId::For), Some(CodecId::Dfor), Some(CodecId::Rfor)]),
        shape in shapes(),
        bits in 0u32..=64,
        n in sizes(),
        seed: u64,
    ) {
        check_column(ty, requested, &raw_values(ty, shape, n, bits, seed));
    }
}

/// Auto picks the smallest payload, ties going to the earlier of for, dfor, rfor, plain.
#[test]
fn auto_picks_the_smallest() {
    for ty in LogicalType::INTEGERS {
        for (shape, n) in [
            (Shape::Uniform, 1000),
            (Shape::Sorted, 5000),
            (Shape::Runs(600), 3000),
            (Shape::Extremes, 100),
            (Shape::Uniform, 0),
        ] {
            let raw = raw_values(ty, shape, n, 6, 7);
            let mut sizes = Vec::new();
            for c in column::AUTO_ORDER {
                let mut p = Vec::new();
                column::encode_chunk(ty, Some(c), &raw, &mut p).expect("encode");
                sizes.push((p.len(), c));
            }
            // The rule, restated: plain if no larger than every candidate auto may take; DFOR
            // or RFOR only at least 1/32 below FOR; else FOR.
            let size_of = |c: CodecId| sizes.iter().find(|(_, k)| *k == c).expect("candidate").0;
            let f = size_of(CodecId::For);
            let mut want = (f, CodecId::For);
            for c in [CodecId::Dfor, CodecId::Rfor] {
                let s = size_of(c);
                if s < want.0 && s * 32 <= f * 31 {
                    want = (s, c);
                }
            }
            if size_of(CodecId::Plain) <= want.0 {
                want = (size_of(CodecId::Plain), CodecId::Plain);
            }
            let mut p = Vec::new();
            let chosen = column::encode_chunk(ty, None, &raw, &mut p).expect("auto");
            assert_eq!((p.len(), chosen), want, "{ty:?} {shape:?} {n}: {sizes:?}");
        }
    }
}

fn words(p: &[u8]) -> Vec<u32> {
    p.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Hand-computed payloads (also printed in the spec pages' examples): they pin the byte layout
/// that the GPU encoder must reproduce.
#[test]
fn golden_payloads() {
    let enc32 = |c, v: &[u32]| {
        let mut p = Vec::new();
        int::encode(c, v, &mut p).expect("encode");
        words(&p)
    };
    let enc64 = |c, v: &[u64]| {
        let mut p = Vec::new();
        int::encode(c, v, &mut p).expect("encode");
        words(&p)
    };
    // FOR [5, 7, 6]: reference 5, packed [0, 2, 1] at width 2 = 0b01_10_00; a full miniblock
    // of width 2 is 2 words even when padding fills most of it.
    assert_eq!(
        enc32(CodecId::For, &[5, 7, 6]),
        [128, 4, 3, 1, 0, 4, 5, 2, 0b01_10_00, 0]
    );
    // FOR lane 64 [3, 4]: reference in two words, low first; packed [0, 1] at width 1.
    assert_eq!(
        enc64(CodecId::For, &[3, 4]),
        [128, 4, 2, 1, 0, 4, 3, 0, 1, 0b10]
    );
    // DFOR [10, 12, 11]: first_value 10, deltas [0, 2, -1], reference -1, packed [1, 3, 0].
    assert_eq!(
        enc32(CodecId::Dfor, &[10, 12, 11]),
        [128, 4, 3, 4, 1, 5, 10, u32::MAX, 2, 0b00_11_01, 0]
    );
    // RFOR 20 sevens then 13 nines: runs (7, 20), (9, 13); value_reference 7, length_reference
    // 13, r = 2, widths [2 | 3 << 8], values [0, 2] in 4 bits, lengths [7, 0] in 6 bits (5
    // block words; the identity block would take 6: 33 values of 2 bits are 3 words).
    let mut runs = vec![7u32; 20];
    runs.extend([9u32; 13]);
    assert_eq!(
        enc32(CodecId::Rfor, &runs),
        [
            512,
            16,
            33,
            1,
            0,
            5,
            7,
            2 | 13 << 16,
            2 | 3 << 8,
            0b10_00,
            0b000_111
        ]
    );
    // RFOR [7, 7, 7, 9, 9] as maximal runs would take 5 words, so it is an identity block (4
    // words): r = 5, length_reference 1, widths [2 | 0 << 8], values [0, 0, 0, 2, 2] in 10 bits.
    assert_eq!(
        enc32(CodecId::Rfor, &[7, 7, 7, 9, 9]),
        [512, 16, 5, 1, 0, 4, 7, 5 | 1 << 16, 2, 0b10_10_00_00_00]
    );
    // Empty chunks: header and block_starts = [0].
    for c in INT_CODECS {
        let bs = if c == CodecId::Rfor { 512 } else { 128 };
        let mb = if c == CodecId::Rfor { 16 } else { 4 };
        let d = if c == CodecId::Dfor { 4 } else { 1 };
        assert_eq!(enc32(c, &[]), [bs, mb, 0, d, 0]);
    }
    // Padding: 130 equal values give a second FOR block of width-0 miniblocks only.
    assert_eq!(
        enc32(CodecId::For, &[9; 130]),
        [128, 4, 130, 1, 0, 2, 4, 9, 0, 9, 0]
    );
}
