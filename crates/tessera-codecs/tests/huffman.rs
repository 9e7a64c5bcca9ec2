//! Huffman (`docs/format/huffman.md`): round trips over many shapes and sizes, code lengths at
//! the limit, fast == reference, must-fail payloads with their specific errors (mode 2 and the
//! mode 1 layout of format version 1), random corruption, package-merge against an independent
//! node-expanding implementation, the size against the unrestricted Huffman optimum on text, and
//! golden payloads (mode 2 written and decoded, mode 1 decode-only).

use std::collections::BinaryHeap;
use std::path::PathBuf;

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tessera_codecs::huffman::{
    self, canonical_codes, code_lengths, histogram, BLOCK_BITS, HEADER_BYTES, MAX_CODE_LENGTH,
    MAX_CODE_LENGTH_V1,
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

fn blocks(p: &[u8]) -> usize {
    (word(p, 3) as usize).div_ceil(BLOCK_BITS as usize)
}

/// Mode 2 `block_info` entry `k` (a u16).
fn entry(p: &[u8], k: usize) -> u32 {
    u16::from_le_bytes([p[INFO_AT + 2 * k], p[INFO_AT + 2 * k + 1]]) as u32
}

fn set_entry(p: &mut [u8], k: usize, e: u32) {
    p[INFO_AT + 2 * k..INFO_AT + 2 * k + 2].copy_from_slice(&(e as u16).to_le_bytes());
}

/// Byte offset of a mode 2 payload's stream.
fn stream_at(p: &[u8]) -> usize {
    INFO_AT + 4 * blocks(p).div_ceil(2)
}

fn enc_v1(data: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    huffman::encode_v1(data, &mut p).expect("encode v1");
    p
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
    // One symbol: one bit per byte; 13 blocks: 12 full ones (entry 4095 = count - 1, spill 0)
    // and a last one of 848 codes; 13 u16 entries and a padding entry.
    assert_eq!(p.len(), 16 + 256 + 2 * 14 + 4 * 50_000usize.div_ceil(32));
    assert_eq!(entry(&p, 0), 4095);
    assert_eq!(entry(&p, 12), 50_000 - 12 * 4096);
    assert_eq!(entry(&p, 13), 0);
    let t = text();
    assert!(is_huffman(&round_trip(&t)));
}

#[test]
fn round_trips_around_block_edges() {
    // Two equiprobable symbols code in 1 bit each: n bytes = n stream bits.
    for nb in 1..4u32 {
        let edge = (nb * BLOCK_BITS) as usize;
        for n in edge - 2..=edge + 2 {
            let data: Vec<u8> = (0..n).map(|i| (i % 2) as u8 * 9).collect();
            let p = round_trip(&data);
            assert_eq!(word(&p, 3) as usize, n, "stream_bits");
            // A full last block holds 4096 symbols: its entry is the count itself.
            let last = entry(&p, blocks(&p) - 1);
            assert_eq!(last as usize, n - (blocks(&p) - 1) * 4096, "n={n}");
        }
    }
    // Skewed codes straddle block edges: many lengths around several edges, and the spills
    // really occur; so does a last block in which no code starts (the previous block's last
    // code runs to the end of the stream: entry 0), once per edge that a code straddles.
    let base = skewed(40_000, 7);
    let (mut spills, mut empty_last) = (0, 0);
    for n in (0..40).chain(4000..6000).chain((9000..40_000).step_by(997)) {
        let p = round_trip(&base[..n]);
        if is_huffman(&p) {
            let nb = blocks(&p);
            spills += (0..nb - 1).filter(|&k| entry(&p, k) >> 12 != 0).count();
            if entry(&p, nb - 1) == 0 {
                empty_last += 1;
                assert!(
                    entry(&p, nb - 2) >> 12 > 0,
                    "n={n}: empty last block without a spill"
                );
            }
        }
    }
    assert!(spills > 10, "only {spills} blocks had a spilling code");
    assert!(empty_last > 0, "no payload had an empty last block");
}

#[test]
fn mode_1_payloads_still_decode() {
    // The format version 1 layout, written by the compatibility encoder, over many shapes
    // and sizes: both decoders agree and give the bytes back.
    let base = skewed(40_000, 9);
    let mut huffman_v1 = 0;
    for n in (0..40)
        .chain(4000..4100)
        .chain((9000..40_000).step_by(1999))
    {
        let p = enc_v1(&base[..n]);
        huffman_v1 += (word(&p, 0) == huffman::MODE_HUFFMAN_V1) as usize;
        assert_eq!(dec(&p, n), &base[..n], "mode 1, n={n}");
    }
    assert!(huffman_v1 > 50);
    for data in [
        vec![b'x'; 9000],
        text(),
        (0..9000).map(|i| (i % 2) as u8).collect(),
    ] {
        let p = enc_v1(&data);
        assert_eq!(word(&p, 0), huffman::MODE_HUFFMAN_V1);
        assert_eq!(dec(&p, data.len()), data);
    }
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
    let v1 = code_lengths(&hist, MAX_CODE_LENGTH_V1).expect("limited to 12");
    assert!(cost(&hist, &v1) > cost(&hist, &limited));

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
    // 13-bit codes occur in the stream: the fast decoder's single-table path ran.
    assert!(limited.iter().filter(|&&l| l == 13).count() >= 2);
    let p1 = enc_v1(&data);
    assert_eq!(&p1[HEADER_BYTES..INFO_AT], &v1[..]);
    assert_eq!(dec(&p1, data.len()), data);
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

/// Payload bytes against the unrestricted optimum plus the table, with the parts of the gap.
fn size_breakdown(name: &str, data: &[u8]) -> f64 {
    let p = enc(data);
    assert!(is_huffman(&p));
    let h = histogram(data);
    let free_bits = optimal_bits(&h);
    let optimum = free_bits.div_ceil(8) + 256;
    let limited_bits = word(&p, 3) as u64;
    let info = 4 * blocks(&p).div_ceil(2) as u64;
    let pct = |x: f64| 100.0 * x / optimum as f64;
    let ratio = p.len() as f64 / optimum as f64;
    println!(
        "{name}: {} bytes -> {} payload bytes; unrestricted Huffman + 256-byte table = {optimum} \
         ({:+.3}%): block_info {:+.3}%, 13-bit limit {:+.3}%, header and padding {:+.3}%",
        data.len(),
        p.len(),
        (ratio - 1.0) * 100.0,
        pct(info as f64),
        pct((limited_bits - free_bits) as f64 / 8.0),
        pct(16.0 + 4.0 * limited_bits.div_ceil(32) as f64 - limited_bits as f64 / 8.0),
    );
    ratio
}

#[test]
fn text_is_within_one_percent_of_the_optimum_plus_table() {
    let ratio = size_breakdown("text.raw", &text());
    assert!(ratio <= 1.01, "{ratio}");
}

/// A file of the bench's data (`scripts/bench-data.sh` gathers it; it is not in the repository,
/// so a fresh clone lacks it): `None`, with the reason printed, when it is not there.
fn bench_data(name: &str) -> Option<Vec<u8>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../bench/data")
        .join(name);
    match std::fs::read(&path) {
        Ok(d) => Some(d),
        Err(e) => {
            eprintln!("skipping bench/data/{name}: {e} (scripts/bench-data.sh gathers it)");
            None
        }
    }
}

#[test]
fn bench_text_and_xml_are_within_one_percent_of_the_optimum_plus_table() {
    // The bench's real text and XML (8 MiB and 7.2 MiB: one chunk each).
    for name in ["text.txt", "xml.xml"] {
        let Some(data) = bench_data(name) else {
            continue;
        };
        let ratio = size_breakdown(name, &data);
        assert!(ratio <= 1.01, "{name}: {ratio}");
    }
}

#[test]
fn must_fail_payloads_give_their_specific_errors() {
    // Odd block count, so that the padding entry exists.
    let (data, good) = (20_000..)
        .step_by(701)
        .map(|n| {
            let d = skewed(n, 11);
            let p = enc(&d);
            (d, p)
        })
        .find(|(_, p)| blocks(p) % 2 == 1 && blocks(p) >= 3)
        .expect("an odd block count");
    let n = data.len();
    assert!(is_huffman(&good));
    let nb = blocks(&good);

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
    let with_entry = |k: usize, e: u32| {
        let mut p = good.clone();
        set_entry(&mut p, k, e);
        p
    };
    assert_eq!(invalid_field(fail(&with(0, 3), n)), "mode");
    // The mode 1 layout is shorter or longer than this payload: a length error.
    assert!(matches!(
        fail(&with(0, huffman::MODE_HUFFMAN_V1), n),
        Error::Truncated { .. } | Error::TrailingBytes { .. }
    ));
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
    p[HEADER_BYTES + b'a' as usize] = 14;
    assert_eq!(invalid_field(fail(&p, n)), "code length");
    let mut p = good.clone();
    p[HEADER_BYTES + b'a' as usize] += 1; // no longer complete
    assert!(invalid_field(fail(&p, n)).starts_with("code lengths"));

    let e0 = entry(&good, 0);
    let count0 = (e0 & 0xFFF) + 1;
    assert_eq!(
        invalid_field(fail(&with_entry(0, e0 & 0xFFF | 13 << 12), n)),
        "block_info spill"
    );
    let last = nb - 1;
    assert_eq!(
        invalid_field(fail(&with_entry(last, 4097), n)),
        "block_info symbol_count"
    );
    assert_eq!(
        invalid_field(fail(&with_entry(nb, 1), n)),
        "block_info padding"
    );
    assert!(count0 > 1);
    assert!(matches!(
        fail(&with_entry(0, e0 - 1), n),
        Error::CountMismatch { .. }
    ));
    assert!(matches!(
        fail(&with_entry(last, entry(&good, last) + 1), n),
        Error::CountMismatch { .. }
    ));
    // Move one symbol from block 0 to block 1: the counts still add up, block 0 ends early.
    let mut p = with_entry(0, e0 - 1);
    let e1 = entry(&good, 1);
    set_entry(&mut p, 1, e1 + 1);
    assert!(matches!(
        fail(&p, n),
        Error::BlockEndMismatch { block: 0, .. }
    ));
    // A different (valid) spill: block 0 ends where its codes end, not where block_info says.
    let spill = e0 >> 12;
    let other = if spill == 0 { 1 } else { spill - 1 };
    assert!(matches!(
        fail(&with_entry(0, e0 & 0xFFF | other << 12), n),
        Error::BlockEndMismatch { block: 0, .. }
    ));

    // One symbol of length 1 has the code `0`: a 1 bit starts no code.
    let single = enc(&vec![b'z'; 10_000]);
    assert_eq!(blocks(&single), 3);
    let bits_at = stream_at(&single);
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
fn must_fail_mode_1_payloads_give_their_specific_errors() {
    // Every check of the format version 1 layout, on a payload of its compatibility encoder.
    let data = skewed(20_000, 11);
    let good = enc_v1(&data);
    let n = data.len();
    assert_eq!(word(&good, 0), huffman::MODE_HUFFMAN_V1);
    let nb = blocks(&good);
    assert!(nb >= 3);
    let info = INFO_AT / 4;
    let with = |i: usize, w: u32| {
        let mut p = good.clone();
        set_word(&mut p, i, w);
        p
    };
    let mut p = good.clone();
    p[HEADER_BYTES + b'a' as usize] = 13; // valid in mode 2, not in mode 1
    assert_eq!(invalid_field(fail(&p, n)), "code length");
    let mut p = good.clone();
    p[HEADER_BYTES + b'a' as usize] += 1;
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
    let last = info + nb - 1;
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
    let mut p = with(info, w0 - 1);
    set_word(&mut p, info + 1, word(&good, info + 1) + 1);
    assert!(matches!(
        fail(&p, n),
        Error::BlockEndMismatch { block: 0, .. }
    ));
    let spill = w0 >> 16;
    let other = if spill == 0 { 1 } else { spill - 1 };
    assert!(matches!(
        fail(&with(info, w0 & 0xFFFF | other << 16), n),
        Error::BlockEndMismatch { block: 0, .. }
    ));
    let single = enc_v1(&vec![b'z'; 10_000]);
    let mut p = single.clone();
    p[INFO_AT + 4 * 3 + 600] |= 0x10;
    match fail(&p, 10_000) {
        Error::InvalidCode { block, bit_offset } => {
            assert_eq!((block, bit_offset), (1, 600 * 8 + 4));
        }
        e => panic!("expected InvalidCode, got {e:?}"),
    }
}

/// Goldens written by format version 1 (mode 1 and raw): decoded, never regenerated.
#[test]
fn mode_1_goldens_decode() {
    let dir = golden_dir();
    let inputs: [(&str, Vec<u8>, u32); 4] = [
        ("text", text(), huffman::MODE_HUFFMAN_V1),
        ("skewed", skewed(9000, 1), huffman::MODE_HUFFMAN_V1),
        ("single", vec![b'q'; 5000], huffman::MODE_HUFFMAN_V1),
        ("uniform", uniform(777, 4), huffman::MODE_RAW),
    ];
    for (name, data, mode) in inputs {
        let golden = std::fs::read(dir.join(format!("{name}.huf"))).expect("v1 golden");
        assert_eq!(word(&golden, 0), mode, "{name}.huf mode");
        assert_eq!(dec(&golden, data.len()), data, "{name}.huf decodes");
        // The compatibility encoder still writes these bytes.
        assert!(
            enc_v1(&data) == golden,
            "{name}.huf: the mode 1 layout changed"
        );
    }
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
        let path = dir.join(format!("{name}.m2.huf"));
        let p = enc(&data);
        if regen {
            std::fs::write(&path, &p).expect("write golden");
        }
        let golden = std::fs::read(&path).expect("golden payload");
        assert_eq!(dec(&golden, data.len()), data, "{name}.m2.huf decodes");
        assert!(p == golden, "{name}.m2.huf: the encoder's output changed");
    }
}

/// Package-merge as format version 1 implemented it, expanding package nodes: an independent
/// reference for the node-free [`code_lengths`].
fn package_merge_nodes(hist: &[u64; 256], max_len: u32) -> [u8; 256] {
    #[derive(Clone, Copy)]
    enum Node {
        Leaf(u8),
        Package(u32, u32),
    }
    let mut lengths = [0u8; 256];
    let mut leaves: Vec<(u64, u8)> = (0..256)
        .filter(|&s| hist[s] > 0)
        .map(|s| (hist[s], s as u8))
        .collect();
    leaves.sort_unstable();
    let n = leaves.len();
    if n == 1 {
        lengths[leaves[0].1 as usize] = 1;
    }
    if n < 2 {
        return lengths;
    }
    let levels = max_len.min(n as u32 - 1);
    let mut nodes: Vec<Node> = leaves.iter().map(|&(_, s)| Node::Leaf(s)).collect();
    let leaf_items: Vec<(u64, u32)> = leaves
        .iter()
        .enumerate()
        .map(|(i, &(w, _))| (w, i as u32))
        .collect();
    let mut list = leaf_items.clone();
    for _ in 1..levels {
        let mut packages = Vec::new();
        for pair in list.chunks_exact(2) {
            packages.push((pair[0].0 + pair[1].0, nodes.len() as u32));
            nodes.push(Node::Package(pair[0].1, pair[1].1));
        }
        let mut merged = Vec::new();
        let (mut i, mut j) = (0, 0);
        while i < leaf_items.len() || j < packages.len() {
            if j == packages.len() || (i < leaf_items.len() && leaf_items[i].0 <= packages[j].0) {
                merged.push(leaf_items[i]);
                i += 1;
            } else {
                merged.push(packages[j]);
                j += 1;
            }
        }
        list = merged;
    }
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
    lengths
}

#[test]
fn package_merge_equals_the_node_expanding_reference_on_real_histograms() {
    let mut hists = vec![histogram(&text())];
    for name in ["text.txt", "xml.xml"] {
        let Some(data) = bench_data(name) else {
            continue;
        };
        hists.push(histogram(&data));
        hists.push(histogram(&data[..data.len() / 7]));
    }
    let mut r = StdRng::seed_from_u64(17);
    for _ in 0..20 {
        // 256 symbols with Zipf-like, many-tied frequencies.
        let mut h = [0u64; 256];
        for (s, x) in h.iter_mut().enumerate() {
            *x = 1 + (r.random_range(0..1_000_000u64) / (s as u64 + 1)) / r.random_range(1..50);
        }
        hists.push(h);
    }
    for h in &hists {
        for limit in [8, 9, 12, 13, 16, 255] {
            if h.iter().filter(|&&f| f > 0).count() > 1 << limit.min(16) {
                continue;
            }
            let got = code_lengths(h, limit).expect("lengths");
            assert_eq!(got, package_merge_nodes(h, limit), "limit {limit}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn package_merge_is_optimal_and_respects_the_limit(
        freqs in prop::collection::vec(0u64..1000, 1..256),
        limit in 8u32..=14,
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
        prop_assert_eq!(lim, package_merge_nodes(&hist, limit));
        prop_assert_eq!(free, package_merge_nodes(&hist, 255));
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
        v1 in any::<bool>(),
        flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..6),
    ) {
        let data = skewed(3000 + (seed % 9000) as usize, seed);
        let mut p = if v1 { enc_v1(&data) } else { enc(&data) };
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
