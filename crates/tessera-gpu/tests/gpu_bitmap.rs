//! GPU WAH / PLWAH equal the CPU codec word for word: compression (canonical and with a small
//! artificial max counter, so the overflow path runs), decompression, PLWAH <-> WAH, AND / OR /
//! XOR / AND-NOT on compressed bitmaps, cardinality; corrupt payloads give the CPU decoder's
//! exact error; the scan and merge primitives equal their CPU definitions.
//! Skips without a GPU unless TESSERA_REQUIRE_GPU=1.

mod common;

use common::{gpu, rng};
use rand::rngs::StdRng;
use rand::Rng;
use tessera_codecs::bitmap::{self, ops::Op, plwah, Bitmap, Flavor};
use tessera_gpu::bitmap as gb;

const FLAVORS: [Flavor; 2] = [Flavor::Wah, Flavor::Plwah];
const OPS: [Op; 4] = [Op::And, Op::Or, Op::Xor, Op::AndNot];

/// Lengths around every boundary: groups (31), words (32), writer tiles (2048 groups), decode
/// tiles (4096 groups), scan tiles.
const LENGTHS: [u64; 16] = [
    0,
    1,
    30,
    31,
    32,
    61,
    62,
    63,
    93,
    1000,
    31 * 64 + 5,
    31 * 2048 - 1,
    31 * 2048 + 1,
    31 * 4096 + 17,
    100_003,
    1_000_037,
];

/// The bit pattern of a test bitmap.
#[derive(Debug, Clone, Copy)]
enum Pattern {
    Zeros,
    Ones,
    Alternating,
    /// Each bit set with probability 2^-k.
    Density(u32),
    /// Long runs of 0s and 1s with stray bits (fills of every length, PLWAH positions).
    Runs,
}

fn bits_of(rng: &mut StdRng, bit_len: u64, p: Pattern) -> Vec<u8> {
    let n = bit_len.div_ceil(8) as usize;
    let mut out = vec![0u8; n];
    match p {
        Pattern::Zeros => {}
        Pattern::Ones => out.fill(0xFF),
        Pattern::Alternating => out.fill(0x55),
        Pattern::Density(k) => {
            for b in out.iter_mut() {
                let mut x = 0xFFu8;
                for _ in 0..k {
                    x &= rng.random::<u8>();
                }
                *b = x;
            }
        }
        Pattern::Runs => {
            let mut i = 0usize;
            let mut one = false;
            while i < 8 * n {
                let len = match rng.random_range(0..4) {
                    0 => rng.random_range(1..40),
                    1 => rng.random_range(31..200),
                    2 => rng.random_range(200..5000),
                    _ => rng.random_range(5000..100_000),
                };
                for j in i..(i + len).min(8 * n) {
                    if one {
                        out[j / 8] |= 1 << (j % 8);
                    }
                }
                i += len;
                one = !one;
                if rng.random_range(0..3) == 0 && i < 8 * n {
                    out[i / 8] ^= 1 << (i % 8); // a stray bit: a PLWAH position
                    i += 1;
                }
            }
        }
    }
    // Bits past bit_len are ignored by the encoder: leave garbage there on purpose.
    out
}

fn patterns(rng: &mut StdRng) -> Vec<Pattern> {
    let mut v = vec![
        Pattern::Zeros,
        Pattern::Ones,
        Pattern::Alternating,
        Pattern::Runs,
        Pattern::Density(1),
    ];
    v.push(Pattern::Density(rng.random_range(2..=16)));
    v
}

fn cpu_words(flavor: Flavor, bits: &[u8], bit_len: u64) -> Bitmap {
    Bitmap::compress(flavor, bits, bit_len).expect("CPU compresses")
}

#[test]
fn scans_equal_their_cpu_definition() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    for n in [
        0usize,
        1,
        2,
        2047,
        2048,
        2049,
        4096 * 3 + 5,
        1 << 20,
        9_000_001,
    ] {
        let v32: Vec<u32> = (0..n).map(|_| rng.random()).collect();
        for inclusive in [false, true] {
            let got = gb::scan_u32(gpu, &v32, inclusive).expect("scan");
            let mut acc = 0u32;
            let want: Vec<u32> = v32
                .iter()
                .map(|&x| {
                    let e = acc;
                    acc = acc.wrapping_add(x);
                    if inclusive {
                        acc
                    } else {
                        e
                    }
                })
                .collect();
            assert!(got == want, "u32 n={n} inclusive={inclusive}");
        }
        let v64: Vec<u64> = (0..n).map(|_| rng.random::<u64>() >> 8).collect();
        let got = gb::scan_u64(gpu, &v64, false).expect("scan");
        let mut acc = 0u64;
        let want: Vec<u64> = v64
            .iter()
            .map(|&x| {
                let e = acc;
                acc = acc.wrapping_add(x);
                e
            })
            .collect();
        assert!(got == want, "u64 n={n}");
    }
}

#[test]
fn merge_path_equals_a_stable_merge() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    for (na, nb) in [
        (0, 0),
        (0, 5),
        (7, 0),
        (1, 1),
        (1000, 3),
        (4097, 4099),
        (300_000, 123_457),
    ] {
        let range = rng.random_range(1..1000u32);
        let mut a: Vec<u32> = (0..na).map(|_| rng.random_range(0..range * 10)).collect();
        let mut b: Vec<u32> = (0..nb).map(|_| rng.random_range(0..range * 10)).collect();
        a.sort_unstable();
        b.sort_unstable();
        let (got, from_b) = gb::merge_u32(gpu, &a, &b).expect("merge");
        let (mut i, mut j) = (0, 0);
        let mut want = Vec::new();
        let mut want_from = Vec::new();
        while i < a.len() || j < b.len() {
            if j >= b.len() || (i < a.len() && a[i] <= b[j]) {
                want.push(a[i]);
                want_from.push(0);
                i += 1;
            } else {
                want.push(b[j]);
                want_from.push(1);
                j += 1;
            }
        }
        assert!(got == want && from_b == want_from, "na={na} nb={nb}");
    }
}

#[test]
fn gpu_compression_writes_the_cpu_words() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    for bit_len in LENGTHS {
        for p in patterns(&mut rng) {
            let bits = bits_of(&mut rng, bit_len, p);
            for f in FLAVORS {
                let got = gb::compress(gpu, f, &bits, bit_len).expect("GPU compresses");
                assert!(got == cpu_words(f, &bits, bit_len), "{f:?} {bit_len} {p:?}");
            }
        }
    }
}

#[test]
fn gpu_compression_matches_at_every_density_on_large_bitmaps() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    for k in 1..=16u32 {
        let bit_len = 3_000_000 + rng.random_range(0..1000);
        let bits = bits_of(&mut rng, bit_len, Pattern::Density(k));
        for f in FLAVORS {
            let cpu = cpu_words(f, &bits, bit_len);
            let got = gb::compress(gpu, f, &bits, bit_len).expect("GPU compresses");
            assert!(got == cpu, "{f:?} 2^-{k}");
            // Decompression of the same words, and cardinality.
            let plain = gb::decompress(gpu, f, &cpu.to_payload()).expect("GPU decompresses");
            assert!(plain == cpu.decompress_to_vec(), "{f:?} 2^-{k} decompress");
            assert_eq!(gb::count_ones(gpu, &cpu).expect("count"), cpu.count_ones());
        }
    }
}

#[test]
fn the_fill_overflow_path_matches_the_cpu_with_small_max_counters() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    for bit_len in [31u64, 62, 93, 1000, 31 * 4096 + 17, 2_000_003] {
        for p in [
            Pattern::Zeros,
            Pattern::Ones,
            Pattern::Runs,
            Pattern::Density(12),
        ] {
            let bits = bits_of(&mut rng, bit_len, p);
            for f in FLAVORS {
                for max in [1u64, 2, 3, 7, 1000] {
                    let cpu =
                        Bitmap::compress_with_max_counter(f, &bits, bit_len, max).expect("CPU");
                    let got =
                        gb::compress_with_max_counter(gpu, f, &bits, bit_len, max).expect("GPU");
                    assert!(got == cpu, "{f:?} {bit_len} {p:?} max {max}");
                    // Non-canonical (split) streams decode and convert like the CPU's.
                    let plain =
                        gb::decompress(gpu, f, &cpu.to_payload()).expect("GPU decompresses");
                    assert!(
                        plain == cpu.decompress_to_vec(),
                        "{f:?} {bit_len} {p:?} max {max}"
                    );
                    for to in FLAVORS {
                        let conv = gb::convert(gpu, &cpu, to).expect("GPU converts");
                        assert!(conv == plwah::convert(&cpu, to), "{f:?}->{to:?} max {max}");
                    }
                }
            }
        }
    }
    // A fill run longer than PLWAH's real counter (2^25 - 1 groups): the canonical overflow.
    let bit_len = 31 * ((1u64 << 25) + 100) + 7;
    let mut bits = vec![0u8; bit_len.div_ceil(8) as usize];
    let last = bits.len() - 1;
    bits[last] = 0x02;
    // Group 0 holds a literal, so the zero fill after it spans 2^25 + 99 groups: more than
    // PLWAH's counter holds (a set bit further in would leave a fill that fits).
    bits[0] = 0x10;
    let cpu = cpu_words(Flavor::Plwah, &bits, bit_len);
    assert!(cpu.words().len() >= 3);
    assert!(gb::compress(gpu, Flavor::Plwah, &bits, bit_len).expect("GPU") == cpu);
    let wah = gb::to_wah(gpu, &cpu.to_payload()).expect("GPU to_wah");
    let mut want = Vec::new();
    plwah::to_wah(&cpu.to_payload(), &mut want).expect("CPU to_wah");
    assert!(wah == want, "long PLWAH fills merge into one WAH fill_word");
}

#[test]
fn gpu_decompression_and_conversion_equal_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    for bit_len in LENGTHS {
        for p in patterns(&mut rng) {
            let bits = bits_of(&mut rng, bit_len, p);
            for f in FLAVORS {
                let cpu = cpu_words(f, &bits, bit_len);
                let payload = cpu.to_payload();
                let mut want = vec![0u8; bit_len.div_ceil(8) as usize];
                match f {
                    Flavor::Wah => bitmap::wah::decompress(&payload, &mut want),
                    Flavor::Plwah => plwah::decompress(&payload, &mut want),
                }
                .expect("CPU decompresses");
                let got = gb::decompress(gpu, f, &payload).expect("GPU decompresses");
                assert!(got == want, "{f:?} {bit_len} {p:?}");
                let to = if f == Flavor::Wah {
                    Flavor::Plwah
                } else {
                    Flavor::Wah
                };
                assert!(
                    gb::convert(gpu, &cpu, to).expect("GPU converts") == plwah::convert(&cpu, to),
                    "{f:?}->{to:?} {bit_len} {p:?}"
                );
            }
            let plw = cpu_words(Flavor::Plwah, &bits, bit_len).to_payload();
            let mut want = Vec::new();
            plwah::to_wah(&plw, &mut want).expect("CPU to_wah");
            assert!(
                gb::to_wah(gpu, &plw).expect("GPU to_wah") == want,
                "to_wah {bit_len} {p:?}"
            );
        }
    }
}

#[test]
fn gpu_bitwise_operations_equal_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    for bit_len in LENGTHS.into_iter().chain([4_000_037]) {
        let pats = patterns(&mut rng);
        for _ in 0..3 {
            let pa = pats[rng.random_range(0..pats.len())];
            let pb = pats[rng.random_range(0..pats.len())];
            let (xa, xb) = (
                bits_of(&mut rng, bit_len, pa),
                bits_of(&mut rng, bit_len, pb),
            );
            for f in FLAVORS {
                // Canonical operands, and non-canonical ones (fills split at a small counter).
                let max = rng.random_range(1..5);
                let operands = [
                    (cpu_words(f, &xa, bit_len), cpu_words(f, &xb, bit_len)),
                    (
                        Bitmap::compress_with_max_counter(f, &xa, bit_len, max).expect("CPU"),
                        cpu_words(f, &xb, bit_len),
                    ),
                ];
                for (a, b) in &operands {
                    for op in OPS {
                        let want = bitmap::ops::binary(op, a, b).expect("CPU op");
                        let got = gb::binary(gpu, op, a, b).expect("GPU op");
                        assert!(got == want, "{f:?} {op:?} {bit_len} {pa:?} {pb:?}");
                    }
                }
            }
        }
    }
}

#[test]
fn mismatched_operands_give_the_cpu_error() {
    let Some(gpu) = gpu() else { return };
    let a = cpu_words(Flavor::Wah, &[0xFF; 8], 64);
    let b = cpu_words(Flavor::Wah, &[0xFF; 8], 63);
    let c = cpu_words(Flavor::Plwah, &[0xFF; 8], 64);
    for (x, y) in [(&a, &b), (&a, &c)] {
        let want = bitmap::ops::binary(Op::And, x, y).expect_err("CPU rejects");
        let got = gb::binary(gpu, Op::And, x, y).expect_err("GPU rejects");
        assert_eq!(format!("{got:?}"), format!("{want:?}"));
    }
    let want = Bitmap::compress(Flavor::Wah, &[0; 3], 64).expect_err("CPU rejects");
    let got = gb::compress(gpu, Flavor::Wah, &[0; 3], 64).expect_err("GPU rejects");
    assert_eq!(format!("{got:?}"), format!("{want:?}"));
}

fn set_word(payload: &mut [u8], i: usize, w: u32) {
    payload[16 + 4 * i..20 + 4 * i].copy_from_slice(&w.to_le_bytes());
}

fn word(payload: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(payload[16 + 4 * i..20 + 4 * i].try_into().expect("4 bytes"))
}

#[test]
fn corrupt_payloads_give_the_cpu_decoders_error() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let mut checked = 0;
    for f in FLAVORS {
        for (bit_len, p) in [
            (1000u64, Pattern::Runs),
            (31 * 4096 + 17, Pattern::Density(6)),
            (200_000, Pattern::Runs),
            (62, Pattern::Ones),
        ] {
            let bits = bits_of(&mut rng, bit_len, p);
            let good = cpu_words(f, &bits, bit_len).to_payload();
            let m = (good.len() - 16) / 4;
            let mut cases: Vec<Vec<u8>> = Vec::new();
            // Header: misaligned, truncated, reserved, bit_len, word_count.
            cases.push(good[..good.len() - 1].to_vec());
            cases.push(good[..12].to_vec());
            let mut c = good.clone();
            c[12] = 1;
            cases.push(c);
            let mut c = good.clone();
            c[..8].copy_from_slice(&(bitmap::MAX_BITS + 1).to_le_bytes());
            cases.push(c);
            let mut c = good.clone();
            c[..8].copy_from_slice(&(bit_len + 31).to_le_bytes());
            cases.push(c);
            let mut c = good.clone();
            c[8..12].copy_from_slice(&(m as u32 + 1).to_le_bytes());
            cases.push(c);
            cases.push(good[..good.len() - 4].to_vec());
            // Words: a zero counter, a bigger counter, a set padding bit, random flips.
            for i in [0, m / 2, m - 1] {
                let w = word(&good, i);
                let mut c = good.clone();
                set_word(&mut c, i, (w | 0x8000_0000) & !0x01FF_FFFF & !0x3E00_0000);
                cases.push(c);
                let mut c = good.clone();
                set_word(&mut c, i, 0x8000_0000 | (w.wrapping_add(1) & 0x01FF_FFFF));
                cases.push(c);
            }
            let mut c = good.clone();
            set_word(&mut c, m - 1, 0x7FFF_FFFF);
            cases.push(c);
            for _ in 0..40 {
                let mut c = good.clone();
                let i = rng.random_range(0..m);
                set_word(&mut c, i, word(&good, i) ^ (1 << rng.random_range(0..32)));
                cases.push(c);
            }
            for c in cases {
                let mut out = vec![0u8; bit_len.div_ceil(8) as usize];
                let cpu = Bitmap::from_payload(f, &c).and_then(|b| {
                    out = vec![0u8; b.bit_len().div_ceil(8) as usize];
                    b.decompress(&mut out).map(|()| out.clone())
                });
                let got = gb::decompress(gpu, f, &c);
                match (&cpu, &got) {
                    (Err(e), Err(g)) => {
                        assert_eq!(format!("{g:?}"), format!("{e:?}"), "{f:?}");
                        checked += 1;
                    }
                    (Ok(want), Ok(g)) => {
                        assert!(want == g, "{f:?}: a valid mutation decodes alike")
                    }
                    _ => panic!(
                        "{f:?}: CPU {cpu:?} vs GPU {:?}",
                        got.as_ref().map(|v| v.len())
                    ),
                }
                if f == Flavor::Plwah {
                    let mut want = Vec::new();
                    let cpu = plwah::to_wah(&c, &mut want).map(|()| want);
                    let got = gb::to_wah(gpu, &c);
                    assert_eq!(format!("{got:?}"), format!("{cpu:?}"), "to_wah");
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} corrupt payloads were rejected"
    );
}
