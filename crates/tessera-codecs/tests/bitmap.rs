//! WAH and PLWAH bitmaps (`docs/format/wah.md`, `plwah.md`): round trips, the bitwise
//! operations on compressed words against the same operations on plain bitmaps (the result must
//! be exactly the canonical compression of the plain result), conversion, cardinality, set
//! positions, the fill-split path, must-fail payloads with their specific errors, and golden
//! payloads.

use std::path::PathBuf;

use proptest::prelude::*;
use tessera_codecs::bitmap::{
    self, ops, ops::Op, plwah, wah, Bitmap, Builder, Flavor, GROUP_ONES, MAX_BITS,
};
use tessera_format::Error;

const FLAVORS: [Flavor; 2] = [Flavor::Wah, Flavor::Plwah];
const OPS: [Op; 4] = [Op::And, Op::Or, Op::Xor, Op::AndNot];

fn pack(bits: &[bool]) -> Vec<u8> {
    let mut out = vec![0u8; bits.len().div_ceil(8)];
    for (i, &b) in bits.iter().enumerate() {
        if b {
            out[i / 8] |= 1 << (i % 8);
        }
    }
    out
}

fn unpack(bytes: &[u8], bit_len: u64) -> Vec<bool> {
    (0..bit_len as usize)
        .map(|i| bytes[i / 8] >> (i % 8) & 1 == 1)
        .collect()
}

fn compress(flavor: Flavor, bits: &[bool]) -> Bitmap {
    Bitmap::compress(flavor, &pack(bits), bits.len() as u64).expect("compress")
}

fn plain(bm: &Bitmap) -> Vec<bool> {
    unpack(&bm.decompress_to_vec(), bm.bit_len())
}

fn apply(op: Op, a: &[bool], b: &[bool]) -> Vec<bool> {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| op.apply(u32::from(x), u32::from(y)) == 1)
        .collect()
}

/// A small deterministic generator for bitmaps made of segments (zeros, ones, random bits,
/// zeros with one bit set, ones with one bit clear): the shapes that exercise fills, literals
/// and PLWAH positions.
fn from_segments(segments: &[(u8, usize, u64)]) -> Vec<bool> {
    let mut out = Vec::new();
    for &(kind, len, seed) in segments {
        let mut s = seed | 1;
        let mut rnd = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let one = (rnd() as usize) % len.max(1);
        for i in 0..len {
            out.push(match kind % 5 {
                0 => false,
                1 => true,
                2 => rnd() & 1 == 1,
                3 => i == one,
                _ => i != one,
            });
        }
    }
    out
}

fn segments() -> impl Strategy<Value = Vec<(u8, usize, u64)>> {
    prop::collection::vec((0u8..5, 1usize..150, any::<u64>()), 0..16)
}

fn check_round_trip(bits: &[bool]) {
    for flavor in FLAVORS {
        let bm = compress(flavor, bits);
        assert_eq!(plain(&bm), bits, "{flavor:?} round trip");
        let payload = bm.to_payload();
        let back = Bitmap::from_payload(flavor, &payload).expect("valid payload");
        assert_eq!(back, bm);
        let mut out = vec![0xAAu8; bits.len().div_ceil(8)];
        match flavor {
            Flavor::Wah => wah::decompress(&payload, &mut out),
            Flavor::Plwah => plwah::decompress(&payload, &mut out),
        }
        .expect("decompress");
        assert_eq!(out, pack(bits));
        assert_eq!(bm.count_ones(), bits.iter().filter(|&&b| b).count() as u64);
        let ones: Vec<u64> = bm.ones().collect();
        let expect: Vec<u64> = (0..bits.len() as u64)
            .filter(|&i| bits[i as usize])
            .collect();
        assert_eq!(ones, expect, "{flavor:?} set positions");
    }
}

fn check_ops(a: &[bool], b: &[bool]) {
    for flavor in FLAVORS {
        let (ca, cb) = (compress(flavor, a), compress(flavor, b));
        for op in OPS {
            let got = ca.op(op, &cb).expect("same length");
            assert_eq!(got, compress(flavor, &apply(op, a, b)), "{flavor:?} {op:?}");
        }
        let not: Vec<bool> = a.iter().map(|&x| !x).collect();
        assert_eq!(ca.not(), compress(flavor, &not), "{flavor:?} not");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn round_trip_matches_plain(segs in segments()) {
        check_round_trip(&from_segments(&segs));
    }

    #[test]
    fn compressed_ops_equal_compressed_plain_ops(sa in segments(), sb in segments()) {
        let (mut a, mut b) = (from_segments(&sa), from_segments(&sb));
        let n = a.len().min(b.len());
        a.truncate(n);
        b.truncate(n);
        check_ops(&a, &b);
    }

    #[test]
    fn conversion_is_canonical(segs in segments()) {
        let bits = from_segments(&segs);
        let (w, p) = (compress(Flavor::Wah, &bits), compress(Flavor::Plwah, &bits));
        prop_assert_eq!(plwah::convert(&p, Flavor::Wah), w.clone());
        prop_assert_eq!(plwah::convert(&w, Flavor::Plwah), p.clone());
        let mut out = Vec::new();
        plwah::to_wah(&p.to_payload(), &mut out).expect("to_wah");
        prop_assert_eq!(out, w.to_payload());
    }

    /// Fill runs split at a small counter: valid, decodes the same, and every operation on such
    /// (non-canonical) input still gives the canonical result.
    #[test]
    fn small_max_counter_splits_fills(sa in segments(), sb in segments(), max in 1u64..4) {
        let (mut a, mut b) = (from_segments(&sa), from_segments(&sb));
        let n = a.len().min(b.len());
        a.truncate(n);
        b.truncate(n);
        for flavor in FLAVORS {
            let split = |x: &[bool]| {
                Bitmap::compress_with_max_counter(flavor, &pack(x), n as u64, max).expect("compress")
            };
            let (sa, sb) = (split(&a), split(&b));
            let reparsed = Bitmap::from_payload(flavor, &sa.to_payload()).expect("valid");
            prop_assert_eq!(plain(&reparsed), a.clone());
            for op in OPS {
                prop_assert_eq!(sa.op(op, &sb).expect("op"), compress(flavor, &apply(op, &a, &b)));
            }
            prop_assert_eq!(plwah::convert(&sa, flavor), compress(flavor, &a));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Hostile bytes: decoding arbitrary payloads, and valid payloads with one word or header
    /// byte changed, fails with an error or gives a bitmap that round-trips; it never panics.
    #[test]
    fn hostile_payloads_never_panic(
        segs in segments(),
        at in any::<usize>(),
        xor in 1u8..,
        junk in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let bits = from_segments(&segs);
        for flavor in FLAVORS {
            let mut p = compress(flavor, &bits).to_payload();
            let i = at % p.len();
            p[i] ^= xor;
            for candidate in [&p[..], &junk[..], &p[..p.len() - (at % 4)]] {
                let parsed = Bitmap::from_payload(flavor, candidate).ok();
                if let Some(bm) = parsed.filter(|bm| bm.bit_len() <= 1 << 24) {
                    let back = bm.decompress_to_vec();
                    let again = Bitmap::compress(flavor, &back, bm.bit_len()).expect("compress");
                    prop_assert_eq!(again, plwah::convert(&bm, flavor));
                }
            }
        }
    }
}

#[test]
fn edge_lengths_and_patterns() {
    for len in [
        0usize,
        1,
        7,
        8,
        30,
        31,
        32,
        61,
        62,
        63,
        64,
        93,
        94,
        200,
        31 * 40 + 5,
    ] {
        let zeros = vec![false; len];
        let ones = vec![true; len];
        let alternating: Vec<bool> = (0..len).map(|i| i % 2 == 1).collect();
        let single: Vec<bool> = (0..len).map(|i| i == len / 2).collect();
        for bits in [&zeros, &ones, &alternating, &single] {
            check_round_trip(bits);
            check_ops(bits, &alternating);
            check_ops(&ones, bits);
        }
    }
}

#[test]
fn empty_bitmap_is_a_bare_header() {
    for flavor in FLAVORS {
        let bm = compress(flavor, &[]);
        assert!(bm.words().is_empty());
        assert_eq!(bm.to_payload(), vec![0u8; 16]);
        assert_eq!(bm.count_ones(), 0);
        assert_eq!(bm.not(), bm);
    }
}

#[test]
fn words_follow_the_spec_examples() {
    // wah.md / plwah.md examples: 5 zero groups, then a group with bit 3 set.
    let mut bits = vec![false; 31 * 6];
    bits[31 * 5 + 3] = true;
    assert_eq!(
        compress(Flavor::Wah, &bits).words(),
        &[wah::fill_word(false, 5), 1 << 3]
    );
    assert_eq!(
        compress(Flavor::Plwah, &bits).words(),
        &[plwah::fill_word(false, 5, 4)]
    );
    // 61 ones: a full 1-fill group, then 30 ones (the padding bit is 0).
    let ones = vec![true; 61];
    assert_eq!(
        compress(Flavor::Wah, &ones).words(),
        &[wah::fill_word(true, 1), GROUP_ONES >> 1]
    );
    assert_eq!(
        compress(Flavor::Plwah, &ones).words(),
        &[plwah::fill_word(true, 1, 31)]
    );
    // A one-bit literal with no fill before it stays a literal.
    let mut lone = vec![true, false, true];
    lone.extend(vec![false; 28]);
    lone.extend([true]);
    assert_eq!(compress(Flavor::Plwah, &lone).words(), &[0b101, 1]);
    // Payload bytes: bit_len (u64), word_count, reserved, words.
    let p = compress(Flavor::Plwah, &bits).to_payload();
    assert_eq!(
        p,
        [
            &186u64.to_le_bytes()[..],
            &1u32.to_le_bytes(),
            &0u32.to_le_bytes(),
            &0x8800_0005u32.to_le_bytes()
        ]
        .concat()
    );
}

#[test]
fn fills_longer_than_the_counter_split() {
    let zeros = vec![false; 31 * 10];
    let bm =
        Bitmap::compress_with_max_counter(Flavor::Wah, &pack(&zeros), 310, 3).expect("compress");
    let f = |n| wah::fill_word(false, n);
    assert_eq!(bm.words(), &[f(3), f(3), f(3), f(1)]);
    // The position goes on the last fill_word of a split run.
    let mut bits = vec![false; 31 * 7];
    bits[31 * 6 + 30] = true;
    let bm =
        Bitmap::compress_with_max_counter(Flavor::Plwah, &pack(&bits), 217, 3).expect("compress");
    let p = |n, pos| plwah::fill_word(false, n, pos);
    assert_eq!(bm.words(), &[p(3, 0), p(3, 31)]);
    // The canonical encoding merges them back.
    assert_eq!(plwah::convert(&bm, Flavor::Plwah).words(), &[p(6, 31)]);
}

/// The longest bitmap: 2^32 bits in one WAH word (5 PLWAH words), operated on without ever
/// expanding it.
#[test]
fn max_length_bitmap_stays_compressed() {
    let groups = bitmap::group_count(MAX_BITS);
    for flavor in FLAVORS {
        let mut b = Builder::new(flavor, MAX_BITS);
        b.push_fill(false, groups);
        let zeros = b.finish().expect("valid");
        let expect_words = groups.div_ceil(flavor.max_counter());
        assert_eq!(zeros.words().len() as u64, expect_words);
        let reparsed = Bitmap::from_payload(flavor, &zeros.to_payload()).expect("valid");
        assert_eq!(reparsed.count_ones(), 0);
        let ones = zeros.not();
        assert_eq!(ones.count_ones(), MAX_BITS);
        assert_eq!(ones.ones().nth(1_000_000), Some(1_000_000));
        assert_eq!(ones.and_not(&ones).expect("op"), zeros);
        assert_eq!(ones.xor(&zeros).expect("op"), ones);
    }
    assert_eq!(Flavor::Wah.max_counter(), (1 << 30) - 1);
    // The builder checks what it was given like a payload.
    let mut b = Builder::new(Flavor::Wah, 40);
    b.push_fill(true, 2);
    let e = b.finish().expect_err("padding set");
    assert!(
        matches!(
            e,
            Error::SetBitPastEnd {
                bit_len: 40,
                bit: 40
            }
        ),
        "{e:?}"
    );
    let mut b = Builder::new(Flavor::Plwah, 40);
    b.push_literal(1);
    let e = b.finish().expect_err("one group short");
    assert!(
        matches!(
            e,
            Error::CountMismatch {
                expected: 2,
                found: 1,
                ..
            }
        ),
        "{e:?}"
    );
    let e = Builder::new(Flavor::Wah, MAX_BITS + 1)
        .finish()
        .expect_err("too long");
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    assert_eq!(Flavor::Plwah.max_counter(), (1 << 25) - 1);
}

#[test]
fn non_canonical_input_is_accepted_and_ops_canonicalise() {
    // 93 bits as three separate 0-fills of 1 group and a literal 0 group: valid, not canonical.
    let mut words = vec![wah::fill_word(false, 1), wah::fill_word(false, 1), 0];
    let payload = payload(93, &words);
    let bm = Bitmap::from_payload(Flavor::Wah, &payload).expect("valid");
    assert_eq!(bm.words().len(), 3);
    assert_eq!(
        bm.op(Op::Or, &bm).expect("op"),
        compress(Flavor::Wah, &[false; 93])
    );
    words[2] = GROUP_ONES;
    let bm = Bitmap::from_payload(Flavor::Wah, &self::payload(93, &words)).expect("valid");
    assert_eq!(bm.count_ones(), 31);
}

fn payload(bit_len: u64, words: &[u32]) -> Vec<u8> {
    let mut p = bit_len.to_le_bytes().to_vec();
    p.extend_from_slice(&(words.len() as u32).to_le_bytes());
    p.extend_from_slice(&0u32.to_le_bytes());
    for w in words {
        p.extend_from_slice(&w.to_le_bytes());
    }
    p
}

fn parse_err(flavor: Flavor, p: &[u8]) -> Error {
    Bitmap::from_payload(flavor, p).expect_err("must fail")
}

#[test]
fn must_fail_payloads_give_their_specific_error() {
    use Flavor::{Plwah, Wah};
    let good = payload(62, &[wah::fill_word(false, 2)]);
    assert!(Bitmap::from_payload(Wah, &good).is_ok());

    let e = parse_err(Wah, &good[..17]);
    assert!(matches!(e, Error::Misaligned { len: 17 }), "{e:?}");
    let e = parse_err(Wah, &good[..12]);
    assert!(
        matches!(
            e,
            Error::Truncated {
                needed: 16,
                available: 12,
                ..
            }
        ),
        "{e:?}"
    );

    let mut reserved = good.clone();
    reserved[12] = 1;
    let e = parse_err(Wah, &reserved);
    assert!(
        matches!(
            e,
            Error::InvalidHeader {
                field: "reserved",
                offset: 12,
                found: 1,
                ..
            }
        ),
        "{e:?}"
    );

    let e = parse_err(Plwah, &payload(MAX_BITS + 1, &[]));
    assert!(
        matches!(
            e,
            Error::InvalidHeader {
                field: "bit_len",
                offset: 0,
                ..
            }
        ),
        "{e:?}"
    );

    let e = parse_err(Wah, &good[..good.len() - 4]);
    assert!(
        matches!(
            e,
            Error::Truncated {
                needed: 4,
                available: 0,
                ..
            }
        ),
        "{e:?}"
    );
    let mut trailing = good.clone();
    trailing.extend_from_slice(&[0; 4]);
    let e = parse_err(Wah, &trailing);
    assert!(
        matches!(
            e,
            Error::TrailingBytes {
                offset: 20,
                count: 4,
                ..
            }
        ),
        "{e:?}"
    );

    let e = parse_err(Wah, &payload(62, &[1, wah::fill_word(true, 0)]));
    assert!(
        matches!(
            e,
            Error::FillCounterZero {
                word: 1,
                offset: 20
            }
        ),
        "{e:?}"
    );
    // A PLWAH fill_word with a position but counter 0 is no shortcut for a literal.
    let e = parse_err(Plwah, &payload(31, &[plwah::fill_word(false, 0, 3)]));
    assert!(
        matches!(
            e,
            Error::FillCounterZero {
                word: 0,
                offset: 16
            }
        ),
        "{e:?}"
    );

    let e = parse_err(Wah, &payload(62, &[wah::fill_word(false, 1)]));
    assert!(
        matches!(
            e,
            Error::CountMismatch {
                expected: 2,
                found: 1,
                ..
            }
        ),
        "{e:?}"
    );
    let e = parse_err(Wah, &payload(62, &[wah::fill_word(false, 3)]));
    assert!(
        matches!(
            e,
            Error::CountMismatch {
                expected: 2,
                found: 3,
                ..
            }
        ),
        "{e:?}"
    );
    // The position's group counts: 2 fill groups + 1 is 3 groups, not 2.
    let e = parse_err(Plwah, &payload(62, &[plwah::fill_word(false, 2, 1)]));
    assert!(
        matches!(
            e,
            Error::CountMismatch {
                expected: 2,
                found: 3,
                ..
            }
        ),
        "{e:?}"
    );
    // A bit pattern that is a PLWAH position is a WAH counter bit.
    let e = parse_err(Wah, &payload(62, &[plwah::fill_word(false, 2, 1)]));
    assert!(
        matches!(
            e,
            Error::CountMismatch {
                expected: 2,
                found: 0x0200_0002,
                ..
            }
        ),
        "{e:?}"
    );

    let e = parse_err(Wah, &payload(5, &[1 << 5]));
    assert!(
        matches!(e, Error::SetBitPastEnd { bit_len: 5, bit: 5 }),
        "{e:?}"
    );
    let e = parse_err(Wah, &payload(40, &[wah::fill_word(true, 2)]));
    assert!(
        matches!(
            e,
            Error::SetBitPastEnd {
                bit_len: 40,
                bit: 40
            }
        ),
        "{e:?}"
    );
    let e = parse_err(Plwah, &payload(35, &[plwah::fill_word(false, 1, 10)]));
    assert!(
        matches!(
            e,
            Error::SetBitPastEnd {
                bit_len: 35,
                bit: 40
            }
        ),
        "{e:?}"
    );
    let e = parse_err(Plwah, &payload(40, &[plwah::fill_word(true, 1, 1)]));
    assert!(
        matches!(
            e,
            Error::SetBitPastEnd {
                bit_len: 40,
                bit: 40
            }
        ),
        "{e:?}"
    );

    // Decompressing into a buffer of the wrong size.
    let mut out = vec![0u8; 9];
    let e = wah::decompress(&good, &mut out).expect_err("must fail");
    assert!(
        matches!(
            e,
            Error::CountMismatch {
                expected: 8,
                found: 9,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(bitmap::payload_bit_len(Wah, &good).expect("header"), 62);
}

#[test]
fn operands_must_agree() {
    let a = compress(Flavor::Wah, &[true; 40]);
    let b = compress(Flavor::Wah, &[true; 41]);
    let c = compress(Flavor::Plwah, &[true; 40]);
    for other in [&b, &c] {
        let e = ops::and(&a, other).expect_err("must fail");
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    }
    let bad_input = Bitmap::compress(Flavor::Wah, &[0u8; 3], 40);
    assert!(matches!(bad_input, Err(Error::InvalidArgument(_))));
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/v1/bitmap")
}

/// The golden bitmaps: name and plain bits, from seeded generators.
fn golden_inputs() -> Vec<(&'static str, Vec<bool>)> {
    let sparse = from_segments(&[
        (0, 5000, 1),
        (3, 700, 2),
        (0, 20_000, 3),
        (3, 31, 4),
        (4, 93, 5),
    ]);
    let mixed = from_segments(&[
        (2, 400, 11),
        (1, 3000, 12),
        (4, 31, 13),
        (0, 62, 14),
        (3, 40, 15),
        (2, 77, 16),
        (1, 61, 17),
    ]);
    vec![
        ("sparse", sparse),
        ("mixed", mixed),
        ("ones61", vec![true; 61]),
        ("empty", vec![]),
    ]
}

#[test]
fn golden_payloads_decode_and_regenerate() {
    let dir = golden_dir();
    let regen = std::env::var_os("TESSERA_REGEN_GOLDEN").is_some();
    for (name, bits) in golden_inputs() {
        let raw_path = dir.join(format!("{name}.bits"));
        if regen {
            std::fs::write(&raw_path, pack(&bits)).expect("write golden");
        }
        let raw = std::fs::read(&raw_path).expect("golden bits");
        assert_eq!(raw, pack(&bits), "{name}.bits is what the generator makes");
        for (flavor, ext) in [(Flavor::Wah, "wah"), (Flavor::Plwah, "plwah")] {
            let path = dir.join(format!("{name}.{ext}"));
            let fresh = compress(flavor, &bits).to_payload();
            if regen {
                std::fs::write(&path, &fresh).expect("write golden");
            }
            let golden = std::fs::read(&path).expect("golden payload");
            let bm = Bitmap::from_payload(flavor, &golden).expect("golden decodes");
            assert_eq!(bm.decompress_to_vec(), raw, "{name}.{ext} decodes");
            assert!(
                fresh == golden,
                "{name}.{ext}: the encoder's output changed"
            );
        }
    }
}

/// The multi-core compressor (bitmaps of at least `PARALLEL_MIN_GROUPS` groups) gives the words
/// of the sequential reference, with fills, literals and PLWAH positions across the seams.
#[test]
fn parallel_compression_matches_sequential() {
    let chunk = bitmap::PARALLEL_CHUNK_GROUPS as usize * 31;
    let mut segs = Vec::new();
    for k in 0..5u64 {
        // A fill that ends exactly at a seam, a one-bit-off group right after it, random bits
        // straddling the next seam.
        segs.push(((k % 2) as u8, chunk - 13 * k as usize, k));
        segs.push((3 + (k % 2) as u8, 31, k + 100));
        segs.push((2, 400, k + 200));
    }
    let mut bits = from_segments(&segs);
    bits.truncate(bitmap::PARALLEL_MIN_GROUPS as usize * 31 + 1000);
    bits.resize(bitmap::PARALLEL_MIN_GROUPS as usize * 31 + 1000 + 17, true);
    let packed = pack(&bits);
    for flavor in FLAVORS {
        let fast = Bitmap::compress(flavor, &packed, bits.len() as u64).expect("compress");
        let reference = Bitmap::compress_with_max_counter(
            flavor,
            &packed,
            bits.len() as u64,
            flavor.max_counter(),
        )
        .expect("compress");
        assert_eq!(fast, reference, "{flavor:?}");
        assert_eq!(fast.decompress_to_vec(), packed);
    }
}

/// Bitmaps of segments compressed with fill runs split at `max` (non-canonical when `max` is
/// small, so cuts land inside and between split fill_words).
fn split_compress(flavor: Flavor, bits: &[bool], max: u64) -> Bitmap {
    Bitmap::compress_with_max_counter(flavor, &pack(bits), bits.len() as u64, max)
        .expect("compress")
}

fn max_counter_of(flavor: Flavor, k: u64) -> u64 {
    if k == 0 {
        flavor.max_counter()
    } else {
        k
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The multi-core compressor with seams every `piece` groups writes the sequential words,
    /// also with runs split at a small counter (fills merged and re-split across seams).
    #[test]
    fn pieces_compress_like_the_serial_writer(
        segs in segments(), piece in 1u64..40, k in 0u64..4,
    ) {
        let bits = from_segments(&segs);
        let packed = pack(&bits);
        let n = bits.len() as u64;
        for flavor in FLAVORS {
            let max = max_counter_of(flavor, k);
            let got = Bitmap::compress_pieces(flavor, &packed, n, piece, max).expect("compress");
            let want = Bitmap::compress_with_max_counter(flavor, &packed, n, max).expect("compress");
            prop_assert_eq!(got, want, "{:?} piece {} max {}", flavor, piece, max);
        }
    }

    /// The multi-core decoder, seams every `piece` groups (rounded to 8), on canonical and
    /// split-fill streams, writes the serial decoder's bytes.
    #[test]
    fn pieces_decompress_like_the_serial_decoder(
        segs in segments(), piece in 1u64..80, k in 0u64..4,
    ) {
        let bits = from_segments(&segs);
        for flavor in FLAVORS {
            let bm = split_compress(flavor, &bits, max_counter_of(flavor, k));
            let mut serial = vec![0x5Au8; bits.len().div_ceil(8)];
            bm.decompress_serial(&mut serial).expect("decompress");
            prop_assert_eq!(&serial, &pack(&bits));
            let mut par = vec![0xA5u8; bits.len().div_ceil(8)];
            bm.decompress_pieces(&mut par, piece).expect("decompress");
            prop_assert_eq!(&par, &serial, "{:?} piece {}", flavor, piece);
        }
    }

    /// The multi-core operations, both operands cut at the same groups (inside fill_words,
    /// on PLWAH position groups), write the serial operation's words, with the flavor's counter
    /// and with a small one (counter overflow in the result across seams).
    #[test]
    fn pieces_operate_like_the_serial_merge(
        sa in segments(), sb in segments(), piece in 1u64..40, ka in 0u64..4, kb in 0u64..4,
        k in 0u64..4,
    ) {
        let (mut a, mut b) = (from_segments(&sa), from_segments(&sb));
        let n = a.len().min(b.len());
        a.truncate(n);
        b.truncate(n);
        for flavor in FLAVORS {
            let ca = split_compress(flavor, &a, max_counter_of(flavor, ka));
            let cb = split_compress(flavor, &b, max_counter_of(flavor, kb));
            let max = max_counter_of(flavor, k);
            for op in OPS {
                let serial = ops::binary_with(op, &ca, &cb, 0, max).expect("op");
                let par = ops::binary_with(op, &ca, &cb, piece, max).expect("op");
                prop_assert_eq!(&par, &serial, "{:?} {:?} piece {} max {}", flavor, op, piece, max);
                if k == 0 {
                    prop_assert_eq!(par, compress(flavor, &apply(op, &a, &b)));
                }
            }
        }
    }
}

/// The automatic entry points on bitmaps around the multi-core threshold and around piece
/// boundaries, in a 4-thread pool (so the parallel path runs whatever this machine has): equal
/// to the one-core references.
#[test]
fn automatic_multi_core_paths_match_the_references() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .expect("pool");
    let min = bitmap::PARALLEL_MIN_GROUPS as usize * 31;
    let chunk = bitmap::PARALLEL_CHUNK_GROUPS as usize * 31;
    for (case, len) in [min - 1, min, min + 30, min + 31 * 7 + 5, 3 * chunk + 62]
        .into_iter()
        .enumerate()
    {
        let mut segs = Vec::new();
        for k in 0..12u64 {
            // Long fills that straddle the automatic seams, one-bit-off groups after them,
            // random stretches.
            segs.push(((k % 2) as u8, chunk / 3 + 97 * k as usize, k + case as u64));
            segs.push((3 + (k % 2) as u8, 31, k + 100));
            segs.push((2, 200 + 31 * k as usize, k + 200));
        }
        let mut a = from_segments(&segs);
        a.resize(len, false);
        let mut b: Vec<bool> = a.iter().rev().copied().collect();
        b[len / 2] = !b[len / 2];
        let (pa, pb) = (pack(&a), pack(&b));
        pool.install(|| {
            for flavor in FLAVORS {
                let ca = Bitmap::compress(flavor, &pa, len as u64).expect("compress");
                let cb = Bitmap::compress(flavor, &pb, len as u64).expect("compress");
                assert_eq!(
                    ca,
                    Bitmap::compress_serial(flavor, &pa, len as u64).expect("compress"),
                    "{flavor:?} {len}"
                );
                let mut out = vec![0xEEu8; pa.len()];
                ca.decompress(&mut out).expect("decompress");
                assert_eq!(out, pa, "{flavor:?} {len}");
                for op in OPS {
                    assert_eq!(
                        ops::binary(op, &ca, &cb).expect("op"),
                        ops::binary_serial(op, &ca, &cb).expect("op"),
                        "{flavor:?} {op:?} {len}"
                    );
                }
            }
        });
    }
}

/// Fill runs longer than the PLWAH counter in the operands and in the result, cut by the
/// automatic multi-core pieces: the result's runs are merged across every seam and split at
/// 2^25 - 1 exactly as the serial merge does, with a position folded after the split run. Built
/// from runs, never expanded.
#[test]
fn counter_overflow_fills_across_pieces() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .expect("pool");
    let long = bitmap::plwah::MAX_COUNTER as u64 + 1000;
    let groups = 2 * long + 7;
    let bit_len = groups * 31 - 3;
    for flavor in FLAVORS {
        // a: 0-fill, literal, 1-fill, 0-fill; b: literal-sprinkled 0-fill then 0s.
        let mut a = Builder::new(flavor, bit_len);
        a.push_fill(false, long);
        a.push_literal(1 << 4);
        a.push_fill(true, long - 10);
        a.push_fill(false, groups - 2 * long + 9);
        let a = a.finish().expect("valid");
        let mut b = Builder::new(flavor, bit_len);
        let mut g = 0;
        while g < groups {
            // A literal every 1,000,003 groups, 0-fills between.
            let gap = 1_000_002.min(groups - g);
            b.push_fill(false, gap);
            g += gap;
            if g < groups {
                b.push_literal(0x55);
                g += 1;
            }
        }
        let b = b.finish().expect("valid");
        pool.install(|| {
            for op in OPS {
                let par = ops::binary(op, &a, &b).expect("op");
                let serial = ops::binary_serial(op, &a, &b).expect("op");
                assert_eq!(par, serial, "{flavor:?} {op:?}");
                assert_eq!(
                    ops::binary_with(op, &a, &b, 1 << 20, flavor.max_counter()).expect("op"),
                    serial
                );
            }
            let or = ops::binary(Op::Or, &a, &a.not()).expect("op");
            assert_eq!(or.count_ones(), bit_len);
            // 2 * long + 7 groups of 1s: PLWAH splits at 2^25 - 1, WAH is one fill_word and a
            // literal for the partial last group.
            let expect_words = match flavor {
                Flavor::Wah => 2,
                Flavor::Plwah => (groups - 1).div_ceil(flavor.max_counter()) as usize + 1,
            };
            assert_eq!(or.words().len(), expect_words, "{flavor:?}");
        });
    }
}
