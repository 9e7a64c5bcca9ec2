//! GPU WAH / PLWAH equal the CPU codec word for word: compression (canonical and with a small
//! artificial max counter, so the overflow path runs), decompression, PLWAH <-> WAH, AND / OR /
//! XOR / AND-NOT on compressed bitmaps, cardinality; corrupt payloads give the CPU decoder's
//! exact error. (The scan and merge primitives: `gpu_primitives.rs`.)
//! Skips without a GPU unless TESSERA_REQUIRE_GPU=1.

mod common;

use common::{gpu, rng};
use rand::rngs::StdRng;
use rand::Rng;
use tessera_codecs::bitmap::{self, ops::Op, plwah, Bitmap, Flavor};
use tessera_gpu::bench_hooks::bitmap as hooks;
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

/// The patterns every bitmap test covers, before its random densities.
const FIXED_PATTERNS: [Pattern; 5] = [
    Pattern::Zeros,
    Pattern::Ones,
    Pattern::Alternating,
    Pattern::Runs,
    Pattern::Density(1),
];

fn patterns(rng: &mut StdRng) -> Vec<Pattern> {
    let mut v = FIXED_PATTERNS.to_vec();
    v.push(Pattern::Density(rng.random_range(2..=16)));
    v
}

fn cpu_words(flavor: Flavor, bits: &[u8], bit_len: u64) -> Bitmap {
    Bitmap::compress(flavor, bits, bit_len).expect("CPU compresses")
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
                        hooks::compress_with_max_counter(gpu, f, &bits, bit_len, max).expect("GPU");
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

/// The one-launch operations (`binary_device`) against the three-launch writer and the CPU, on
/// bitmaps large enough for many writer and slot tiles (the decoupled look-backs), with
/// operands of very different lengths (most of the merge path on one side).
#[test]
fn one_pass_operations_equal_the_staged_writer_and_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let bit_len = 31 * 3_000_000 + 7;
    let dense = bits_of(&mut rng, bit_len, Pattern::Density(1));
    let sparse = bits_of(&mut rng, bit_len, Pattern::Density(12));
    let runs = bits_of(&mut rng, bit_len, Pattern::Runs);
    for f in FLAVORS {
        let bms: Vec<Bitmap> = [&dense, &sparse, &runs]
            .iter()
            .map(|x| cpu_words(f, x, bit_len))
            .collect();
        let dev: Vec<gb::DeviceBitmap> = bms
            .iter()
            .map(|b| gb::upload(gpu, b).expect("upload"))
            .collect();
        for (i, j) in [(0, 1), (1, 0), (1, 2), (2, 0), (1, 1)] {
            for op in OPS {
                let want = bitmap::ops::binary(op, &bms[i], &bms[j]).expect("CPU op");
                let one = gb::binary_device(gpu, op, &dev[i], &dev[j]).expect("one pass");
                let staged =
                    hooks::binary_device_staged(gpu, op, &dev[i], &dev[j]).expect("staged");
                assert!(
                    gb::download(gpu, &one).expect("valid") == want,
                    "{f:?} {op:?} {i} {j}: one pass"
                );
                assert!(
                    gb::download(gpu, &staged).expect("valid") == want,
                    "{f:?} {op:?} {i} {j}: staged"
                );
            }
        }
    }
}

/// PLWAH results with fills longer than the counter (2^25 - 1 groups): none, one and several
/// overflowing blocks, through every overflow path of `binary_device`: the fix-up queued before
/// the read (short inputs), the fix-up after it (`eager_elements` 0), and the three-launch
/// writer's path when the list is too short (`cap` 0 and 1).
#[test]
fn one_pass_operations_split_fills_longer_than_the_plwah_counter() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let m = plwah::MAX_COUNTER as u64;
    let groups = 3 * m + 12_345;
    let bit_len = 31 * groups - 3;
    let mut xa = vec![0u8; bit_len.div_ceil(8) as usize];
    let mut xb = xa.clone();
    // Bits both operands share, more than the counter apart (AND and OR keep them: long fills
    // between them), and bits of one operand only in the first stretch.
    for g in [5, m + 777, 2 * m + 1_000, 3 * m + 12_000] {
        set_bit(&mut xa, 31 * g + 3, true);
        set_bit(&mut xb, 31 * g + 3, true);
    }
    for _ in 0..3_000 {
        let i = rng.random_range(0..31 * 1_000_000u64);
        set_bit(if rng.random() { &mut xa } else { &mut xb }, i, true);
    }
    let a = cpu_words(Flavor::Plwah, &xa, bit_len);
    let b = cpu_words(Flavor::Plwah, &xb, bit_len);
    let zeros = cpu_words(Flavor::Plwah, &vec![0u8; xa.len()], bit_len);
    let (da, db, dz) = (
        gb::upload(gpu, &a).expect("upload"),
        gb::upload(gpu, &b).expect("upload"),
        gb::upload(gpu, &zeros).expect("upload"),
    );
    let pairs = [
        (&a, &b, &da, &db),
        (&a, &zeros, &da, &dz),
        (&zeros, &zeros, &dz, &dz),
    ];
    for (x, y, dx, dy) in pairs {
        for op in OPS {
            let want = bitmap::ops::binary(op, x, y).expect("CPU op");
            for (cap, eager) in [
                (gb::FIXUP_CAP, u64::MAX),
                (gb::FIXUP_CAP, 0),
                (0, u64::MAX),
                (1, 0),
            ] {
                let got = hooks::binary_device_with(gpu, op, dx, dy, cap, eager).expect("GPU op");
                assert!(
                    gb::download(gpu, &got).expect("valid") == want,
                    "{op:?} cap {cap} eager {eager}: {} words",
                    want.words().len()
                );
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

// ---- decompression: every tile / chunk edge --------------------------------------------------
//
// The decoder cuts the output into tiles of gb::DECODE_TILE groups and the words into chunks of
// gb::DEC_CHUNK words; these tests put lengths, fills and literals across both kinds of
// boundary, and compare with the CPU reference word for word.

/// Packs 31-bit groups into `bit_len` bits (the last group truncated).
fn bits_from_groups(groups: &[u32], bit_len: u64) -> Vec<u8> {
    let mut out = vec![0u8; bit_len.div_ceil(8) as usize];
    for (g, &v) in groups.iter().enumerate() {
        for j in 0..31u64 {
            let i = g as u64 * 31 + j;
            if i < bit_len && (v >> j) & 1 == 1 {
                out[(i / 8) as usize] |= 1 << (i % 8);
            }
        }
    }
    out
}

/// A literal group that is neither fill group nor one bit away from one (so it never folds).
fn plain_literal(rng: &mut StdRng) -> u32 {
    loop {
        let v = rng.random::<u32>() & bitmap::GROUP_ONES;
        let (z, o) = (v.count_ones(), (v ^ bitmap::GROUP_ONES).count_ones());
        if z > 1 && o > 1 {
            return v;
        }
    }
}

/// Segments of (a literal, then a fill of `fill_len(i)` groups), fill kinds alternating; every
/// third literal differs from the fill before it in one bit (a PLWAH position).
fn staircase(rng: &mut StdRng, segments: usize, fill_len: impl Fn(usize) -> usize) -> Vec<u32> {
    let mut g = Vec::new();
    let mut prev_fill: Option<u32> = None;
    for i in 0..segments {
        let lit = match prev_fill {
            Some(f) if i % 3 == 0 => f ^ (1 << rng.random_range(0..31)),
            _ => plain_literal(rng),
        };
        g.push(lit);
        let f = if i % 2 == 0 { 0 } else { bitmap::GROUP_ONES };
        g.extend(std::iter::repeat_n(f, fill_len(i)));
        prev_fill = Some(f);
    }
    g
}

/// Words put on the device as they are, without tile starts (`gb::upload` computes them): the
/// path of bitmaps that have none, and of invalid ones.
fn bare_device(gpu: &tessera_gpu::Gpu, f: Flavor, words: &[u32], bit_len: u64) -> gb::DeviceBitmap {
    gb::DeviceBitmap {
        flavor: f,
        bit_len,
        words: gpu.upload(words).expect("upload"),
        len: words.len(),
        tile_starts: None,
    }
}

/// A device bitmap's tile starts, downloaded (it must have them).
fn device_tile_starts(gpu: &tessera_gpu::Gpu, d: &gb::DeviceBitmap) -> Vec<u32> {
    let ts = d
        .tile_starts
        .as_ref()
        .expect("the bitmap carries tile starts");
    let mut host = vec![0u32; ts.len()];
    gpu.download(ts, &mut host).expect("download");
    host
}

/// Decompression's tile starts (`DeviceBitmap::tile_starts`) by their definition, from the CPU's
/// words: for each decode tile b, the word covering group `b * DECODE_TILE` and the group it
/// starts at; then `(words, groups)`.
fn cpu_tile_starts(b: &Bitmap) -> Vec<u32> {
    let groups = bitmap::group_count(b.bit_len());
    let tiles = groups.div_ceil(gb::DECODE_TILE);
    let mut out = Vec::new();
    let (mut start, mut t) = (0u64, 0u64);
    for (i, &w) in b.words().iter().enumerate() {
        let n = match b.flavor().decode_word(w) {
            bitmap::Word::Literal(_) => 1,
            bitmap::Word::Fill {
                counter, position, ..
            } => u64::from(counter) + u64::from(position != 0),
        };
        while t < tiles && t * gb::DECODE_TILE < start + n {
            out.extend([i as u32, start as u32]);
            t += 1;
        }
        start += n;
    }
    out.extend([b.words().len() as u32, groups as u32]);
    out
}

/// GPU decompression of `bits` (both flavors) equals the CPU's: through `decompress` (validated
/// payload) and through `decompress_device_into` into a larger buffer whose words past
/// `ceil(bit_len / 32)` must stay untouched.
fn check_decompression(gpu: &tessera_gpu::Gpu, bits: &[u8], bit_len: u64, what: &str) {
    const SENTINEL: u32 = 0xA5C3_5A3C;
    for f in FLAVORS {
        let cpu = cpu_words(f, bits, bit_len);
        let want = cpu.decompress_to_vec();
        let got = gb::decompress(gpu, f, &cpu.to_payload()).expect("GPU decompresses");
        assert!(got == want, "{f:?} {what} ({bit_len} bits)");
        let d = gb::upload(gpu, &cpu).expect("upload");
        let n = bit_len.div_ceil(32) as usize;
        let mut out = gpu.upload(&vec![SENTINEL; n + 37]).expect("upload");
        gb::decompress_device_into(gpu, &d, &mut out).expect("GPU decompresses");
        let mut host = vec![0u32; n + 37];
        gpu.download(&out, &mut host).expect("download");
        assert!(
            host[..n] == gb::pack_words(&want, bit_len)[..],
            "{f:?} {what} ({bit_len} bits): decompress_device_into"
        );
        assert!(
            host[n..].iter().all(|&w| w == SENTINEL),
            "{f:?} {what} ({bit_len} bits): wrote past ceil(bit_len / 32) words"
        );
        let (_, flagged) = hooks::decompress_device_checked(gpu, &d).expect("GPU decompresses");
        assert!(!flagged, "{f:?} {what}: a valid stream was flagged");
        // The same words without tile starts: decompression computes them first.
        let bare = bare_device(gpu, f, cpu.words(), bit_len);
        let (plain, flagged) =
            hooks::decompress_device_checked(gpu, &bare).expect("GPU decompresses");
        assert!(
            !flagged,
            "{f:?} {what}: a valid stream was flagged (no tile starts)"
        );
        assert!(
            gb::download_plain(gpu, &plain).expect("download") == want,
            "{f:?} {what} ({bit_len} bits): without tile starts"
        );
        assert!(
            hooks::compute_tile_starts(gpu, &d).expect("tile starts") == cpu_tile_starts(&cpu),
            "{f:?} {what} ({bit_len} bits): the tile starts decompression computes"
        );
        if bit_len > 0 {
            assert!(
                device_tile_starts(gpu, &d) == cpu_tile_starts(&cpu),
                "{f:?} {what} ({bit_len} bits): the tile starts upload attaches"
            );
        }
    }
}

#[test]
fn gpu_decompression_handles_every_length_and_pattern() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let tile = 31 * gb::DECODE_TILE; // bits per decode tile
    let chunk = 31 * gb::DEC_CHUNK; // bits of one chunk of literals
    let mut lengths = vec![
        0u64,
        1,
        5,
        30,
        31,
        32,
        33,
        61,
        62,
        63,
        64,
        65,
        93,
        94,
        95,
        96,
        991,
        992,
        993,
        chunk - 1,
        chunk,
        chunk + 1,
        tile - 1,
        tile,
        tile + 1,
        tile + 31,
        2 * tile - 7,
        5 * tile + 3 * chunk + 11,
        33 * tile + 1,
    ];
    lengths.extend((0..2).map(|_| rng.random_range(1..3_000_000u64)));
    let mut pats = FIXED_PATTERNS.to_vec();
    pats.push(Pattern::Density(16));
    pats.push(Pattern::Density(rng.random_range(2..=15)));
    for bit_len in lengths {
        for &p in &pats {
            let bits = bits_of(&mut rng, bit_len, p);
            check_decompression(gpu, &bits, bit_len, &format!("{p:?}"));
        }
    }
}

#[test]
fn gpu_decompression_of_fills_longer_than_many_tiles() {
    let Some(gpu) = gpu() else { return };
    let bit_len = (1u64 << 26) + 5; // 2^26 bits: one fill over > 500 tiles
    let n = bit_len.div_ceil(8) as usize;
    for (what, fill) in [("zeros", 0u8), ("ones", 0xFF)] {
        let mut bits = vec![fill; n];
        check_decompression(gpu, &bits, bit_len, what);
        // One odd bit at the very start, and one near the end (a PLWAH fill with a position,
        // then a fill, a literal and the tail).
        bits[0] ^= 0x01;
        check_decompression(gpu, &bits, bit_len, &format!("{what}, first bit flipped"));
        bits[n - 40] ^= 0x10;
        check_decompression(gpu, &bits, bit_len, &format!("{what}, two bits flipped"));
    }
}

#[test]
fn gpu_decompression_of_fills_across_tile_and_chunk_boundaries() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    // Segments of 131 groups: 131 is odd, so segment starts take every offset mod the tile
    // (4096 segments), and 131 is prime, so tile boundaries land at every offset inside a fill.
    let g = staircase(&mut rng, 4096, |_| 130);
    for cut in [0u64, 1, 17, 30] {
        let bit_len = g.len() as u64 * 31 - cut;
        check_decompression(gpu, &bits_from_groups(&g, bit_len), bit_len, "short fills");
    }
    // Fills longer than a tile (4200..4206 groups): each crosses one or two tile boundaries.
    let g = staircase(&mut rng, 300, |i| 4200 + i % 7);
    let bit_len = g.len() as u64 * 31 - 3;
    check_decompression(gpu, &bits_from_groups(&g, bit_len), bit_len, "long fills");
    // Fills of 1..=300 groups between runs of literals of every length 1..=130 (chunks of mixed
    // group density, so chunk and tile boundaries fall everywhere relative to each other).
    let mut g = Vec::new();
    for i in 0..2000usize {
        for _ in 0..(i * 37) % 130 + 1 {
            g.push(plain_literal(&mut rng));
        }
        let f = if i % 2 == 0 { 0 } else { bitmap::GROUP_ONES };
        g.extend(std::iter::repeat_n(f, (i * 53) % 300 + 1));
        if i % 4 == 1 {
            g.push(f ^ (1 << (i % 31))); // a PLWAH position
        }
    }
    let bit_len = g.len() as u64 * 31;
    check_decompression(gpu, &bits_from_groups(&g, bit_len), bit_len, "mixed runs");
}

#[test]
fn gpu_decompression_of_invalid_device_bitmaps_stays_in_bounds() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let device = |f: Flavor, words: &[u32], bit_len: u64| bare_device(gpu, f, words, bit_len);
    for f in FLAVORS {
        // Too few groups for bit_len: the last tiles are not covered and must be flagged.
        for (words, bit_len) in [
            (vec![0x1234_5678u32], 31 * 100),
            (vec![0x8000_0010u32; 3], 31 * 4096 * 3),
            (vec![0x0000_0001u32; 5000], 31 * 9000),
        ] {
            let d = device(f, &words, bit_len);
            let (_, flagged) = hooks::decompress_device_checked(gpu, &d).expect("no fault");
            assert!(
                flagged,
                "{f:?}: {} words short of {bit_len} bits",
                words.len()
            );
        }
        // Zero counters (words that cover nothing), huge counters, random words: any output,
        // but no fault (compute-sanitizer checks the bounds on the GPU machine).
        let mut zeros = vec![0x8000_0000u32; 20_000];
        zeros.push(0x0000_0001);
        let cases = [
            (zeros, 31u64),
            (vec![0xBFFF_FFFFu32, 0x7FFF_FFFF], 31 * 50_000),
            (
                (0..30_000)
                    .map(|_| rng.random::<u32>())
                    .collect::<Vec<u32>>(),
                31 * rng.random_range(1..2_000_000u64),
            ),
            (
                (0..30_000)
                    .map(|_| rng.random::<u32>() & 0x8000_00FF)
                    .collect(),
                31 * 300_000,
            ),
        ];
        for (words, bit_len) in cases {
            let d = device(f, &words, bit_len);
            hooks::decompress_device_checked(gpu, &d).expect("no fault");
        }
        // A valid stream with wrong tile starts: past the words, all zero (tiles past the first
        // get too few words), random. Flagged where the words cannot cover a tile; no fault.
        let bit_len = 31 * 5 * gb::DECODE_TILE + 77;
        let bits = bits_of(&mut rng, bit_len, Pattern::Density(3));
        let plain = gb::upload_plain(gpu, &bits, bit_len).expect("upload");
        let n = 2 * (bit_len.div_ceil(31).div_ceil(gb::DECODE_TILE) as usize + 1);
        let wrong: [(Vec<u32>, bool); 3] = [
            (vec![u32::MAX - 3; n], true),
            (vec![0; n], true),
            ((0..n).map(|_| rng.random()).collect(), false),
        ];
        for (starts, must_flag) in wrong {
            let mut d = gb::compress_device(gpu, f, &plain).expect("compress");
            d.tile_starts = Some(gpu.upload(&starts).expect("upload"));
            let (_, flagged) = hooks::decompress_device_checked(gpu, &d).expect("no fault");
            assert!(
                flagged || !must_flag,
                "{f:?}: wrong tile starts not flagged"
            );
        }
        // Too short a directory is an argument error.
        let mut d = gb::compress_device(gpu, f, &plain).expect("compress");
        d.tile_starts = Some(gpu.upload(&[0u32, 0]).expect("upload"));
        assert!(gb::decompress_device(gpu, &d).is_err());
    }
}

// ---- compression by heads (bm_cmp_*: tiles of 4096 groups, units of 32) -----------------------

/// Groups per compression tile (`BM_CMP_TILE`).
const CMP_TILE: u64 = gb::CMP_TILE;

/// GPU compression (by heads), the former GPU path through the general writer, and the CPU:
/// the same words, for both flavors, at `max_counter` (None: the flavor's own).
fn check_compression(
    gpu: &tessera_gpu::Gpu,
    bits: &[u8],
    bit_len: u64,
    max: Option<u64>,
    what: &str,
) {
    for f in FLAVORS {
        let m = max.unwrap_or(f.max_counter());
        let cpu = Bitmap::compress_with_max_counter(f, bits, bit_len, m).expect("CPU");
        if max.is_none() {
            assert!(cpu == cpu_words(f, bits, bit_len), "CPU paths agree");
        }
        let plain = gb::upload_plain(gpu, bits, bit_len).expect("upload");
        let heads = hooks::compress_device_with_max_counter(gpu, f, &plain, m).expect("GPU heads");
        let got = gb::download(gpu, &heads).expect("a valid stream");
        if got != cpu {
            let (g, c) = (got.words(), cpu.words());
            let i = g.iter().zip(c).take_while(|(a, b)| a == b).count();
            panic!(
                "{f:?} {what} ({bit_len} bits, max {m}): GPU {} words, CPU {}, first difference \
                 at word {i}: GPU {:08x?} CPU {:08x?}",
                g.len(),
                c.len(),
                g.get(i),
                c.get(i)
            );
        }
        // The tile starts the compressor wrote: as defined, as the fallback computes them, and
        // decompression through them gives the bits back.
        if let Some(ts) = &heads.tile_starts {
            let mut host = vec![0u32; ts.len()];
            gpu.download(ts, &mut host).expect("download");
            let want = cpu_tile_starts(&cpu);
            assert!(
                host == want,
                "{f:?} {what} ({bit_len} bits, max {m}): compressor's tile starts {:?}, want {:?}",
                &host[..host.len().min(16)],
                &want[..want.len().min(16)]
            );
            assert!(hooks::compute_tile_starts(gpu, &heads).expect("tile starts") == want);
            let (plain_back, flagged) =
                hooks::decompress_device_checked(gpu, &heads).expect("GPU decompresses");
            assert!(!flagged, "{f:?} {what}: a compressed stream was flagged");
            assert!(
                gb::download_plain(gpu, &plain_back).expect("download") == cpu.decompress_to_vec(),
                "{f:?} {what} ({bit_len} bits, max {m}): decompression through the tile starts"
            );
        } else {
            assert!(bit_len == 0, "{f:?} {what}: no tile starts");
        }
        let writer = hooks::compress_device_writer(gpu, f, &plain, m).expect("GPU writer");
        assert!(
            gb::download(gpu, &writer).expect("valid") == cpu,
            "{f:?} {what} ({bit_len} bits, max {m}): the general writer"
        );
    }
}

/// Sets bits [from, to) of a packed bitmap to `one`.
fn set_range(bits: &mut [u8], from: u64, to: u64, one: bool) {
    let mut i = from;
    while i < to && i % 8 != 0 {
        set_bit(bits, i, one);
        i += 1;
    }
    let whole = (to - i) / 8;
    bits[(i / 8) as usize..(i / 8 + whole) as usize].fill(if one { 0xFF } else { 0 });
    i += 8 * whole;
    while i < to {
        set_bit(bits, i, one);
        i += 1;
    }
}

fn set_bit(bits: &mut [u8], i: u64, one: bool) {
    let (b, m) = ((i / 8) as usize, 1u8 << (i % 8));
    if one {
        bits[b] |= m;
    } else {
        bits[b] &= !m;
    }
}

#[test]
fn compression_by_heads_matches_at_every_small_and_edge_length() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let t = 31 * CMP_TILE;
    let mut lengths: Vec<u64> = (1..=100).collect();
    for base in [31 * 32, 31 * 64, t, 2 * t, 3 * t] {
        for d in [-32i64, -31, -30, -1, 0, 1, 30, 31, 32] {
            lengths.push((base as i64 + d) as u64);
        }
    }
    for bit_len in lengths {
        for p in patterns(&mut rng) {
            let bits = bits_of(&mut rng, bit_len, p);
            check_compression(gpu, &bits, bit_len, None, &format!("{p:?}"));
        }
    }
    // No groups at all.
    for f in FLAVORS {
        let got = gb::compress(gpu, f, &[], 0).expect("GPU compresses nothing");
        assert!(got == cpu_words(f, &[], 0) && got.words().is_empty());
    }
}

#[test]
fn compression_by_heads_matches_at_every_density() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    // 2^-12 leaves ~20% of the units of 32 groups mixed: some tiles read them directly, others
    // stage the whole tile; sparser tiles read almost nothing in the apply pass.
    for k in 1..=16u32 {
        let bit_len = 31 * CMP_TILE * 40 + rng.random_range(0..31 * CMP_TILE);
        let bits = bits_of(&mut rng, bit_len, Pattern::Density(k));
        check_compression(gpu, &bits, bit_len, None, &format!("2^-{k}"));
    }
}

/// Compressions queued back to back, each on its own plain bitmap, then finished in reverse
/// order (the last first): every one is the CPU's, with tile starts that decompress it, and
/// an empty bitmap finishes to no words.
#[test]
fn queued_compressions_finish_in_any_order() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    for f in [Flavor::Wah, Flavor::Plwah] {
        let mut inputs = Vec::new();
        for k in [1u32, 5, 9, 14] {
            let bit_len = 31 * CMP_TILE * 3 + rng.random_range(0..31 * CMP_TILE);
            inputs.push((bits_of(&mut rng, bit_len, Pattern::Density(k)), bit_len));
        }
        inputs.push((Vec::new(), 0));
        let plains: Vec<_> = inputs
            .iter()
            .map(|(bits, n)| gb::upload_plain(gpu, bits, *n).expect("upload"))
            .collect();
        let pending: Vec<_> = plains
            .iter()
            .map(|p| gb::compress_device_queued(gpu, f, p).expect("queue"))
            .collect();
        for (p, (bits, n)) in pending.into_iter().zip(&inputs).rev() {
            let d = p.finish(gpu).expect("finish");
            let got = gb::download(gpu, &d).expect("valid");
            let cpu = cpu_words(f, bits, *n);
            assert!(got == cpu, "{f:?} {n} bits");
            assert_eq!(d.len, got.words().len());
            // Against the CPU's decompression: the input's bits past bit_len are not kept.
            let plain = gb::decompress_device(gpu, &d).expect("decompress");
            assert!(
                gb::download_plain(gpu, &plain).expect("plain") == cpu.decompress_to_vec(),
                "{f:?} {n} bits"
            );
        }
    }
}

#[test]
fn compression_of_fills_crossing_tiles_at_every_offset() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let groups = (3 * CMP_TILE + 77) as usize;
    for fill in [0u32, bitmap::GROUP_ONES] {
        let other = fill ^ bitmap::GROUP_ONES;
        for d in -40i64..=40 {
            // A fill run from (tile edge 1 + d) to (tile edge 2 - d / 2), a literal before it
            // and after it: a plain one, or one bit away from the fill (a PLWAH position), or the
            // other fill.
            let start = (CMP_TILE as i64 + d) as usize;
            let end = (2 * CMP_TILE as i64 - d / 2) as usize;
            let mut g = vec![other; groups];
            for x in g.iter_mut().take(start) {
                *x = plain_literal(&mut rng);
            }
            g[start..end].fill(fill);
            g[end] = match d.rem_euclid(3) {
                0 => fill ^ (1 << rng.random_range(0..31)),
                1 => plain_literal(&mut rng),
                _ => other,
            };
            let bit_len = groups as u64 * 31 - rng.random_range(0..31);
            let bits = bits_from_groups(&g, bit_len);
            check_compression(
                gpu,
                &bits,
                bit_len,
                None,
                &format!("fill {fill:x} offset {d}"),
            );
        }
        // A one-bit literal right at every tile and unit edge after a fill of either kind.
        for at in [
            1u64,
            31,
            32,
            33,
            CMP_TILE - 1,
            CMP_TILE,
            CMP_TILE + 1,
            2 * CMP_TILE,
        ] {
            for bit in [0u32, 17, 30] {
                let mut g = vec![fill; 2 * CMP_TILE as usize + 40];
                g[at as usize] = fill ^ (1 << bit);
                g[at as usize + 1] = if bit == 17 {
                    plain_literal(&mut rng)
                } else {
                    fill
                };
                let bit_len = g.len() as u64 * 31;
                let bits = bits_from_groups(&g, bit_len);
                check_compression(
                    gpu,
                    &bits,
                    bit_len,
                    None,
                    &format!("fold at {at} bit {bit}"),
                );
            }
        }
    }
    // Staircases of fills spanning 0 to 3 tiles, all kinds of literals between.
    for span in [1usize, 31, 33, 4095, 4097, 9000, 13_000] {
        let g = staircase(&mut rng, 12, |i| 1 + (i * 7919 + span) % span);
        let bit_len = g.len() as u64 * 31;
        let bits = bits_from_groups(&g, bit_len);
        check_compression(gpu, &bits, bit_len, None, &format!("staircase {span}"));
    }
}

#[test]
fn compression_by_heads_splits_runs_at_small_max_counters() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let maxes = [1u64, 2, 3, 31, 4095, 4096, 4097];
    let t = 31 * CMP_TILE;
    for bit_len in [1u64, 31, 62, 1000, t - 5, t + 40, 3 * t + 17] {
        for p in [
            Pattern::Zeros,
            Pattern::Ones,
            Pattern::Runs,
            Pattern::Density(10),
            Pattern::Density(1),
        ] {
            let bits = bits_of(&mut rng, bit_len, p);
            for m in maxes {
                check_compression(gpu, &bits, bit_len, Some(m), &format!("{p:?}"));
            }
        }
    }
    // Fills of several tiles with one-bit literals after them (the split run's last word keeps
    // the position).
    let g = staircase(&mut rng, 9, |i| [5000usize, 9000, 3, 12_289][i % 4]);
    let bit_len = g.len() as u64 * 31;
    let bits = bits_from_groups(&g, bit_len);
    for m in maxes {
        check_compression(gpu, &bits, bit_len, Some(m), "staircase");
    }
    // More words before the split than the overflow path's one-block form takes (2^16): 40,000
    // literals and 40,000 two-group fills, each split in two at max 1, through the scan-and-
    // scatter form; a fifth of that goes through the one-block form.
    for runs in [40_000usize, 8_000] {
        let g: Vec<u32> = (0..3 * runs)
            .map(|i| {
                if i % 3 == 0 {
                    plain_literal(&mut rng)
                } else {
                    0
                }
            })
            .collect();
        let bit_len = g.len() as u64 * 31;
        let bits = bits_from_groups(&g, bit_len);
        check_compression(gpu, &bits, bit_len, Some(1), &format!("{runs} split fills"));
    }
}

#[test]
fn compression_of_a_max_size_bitmap_with_runs_past_the_plwah_counter() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    // MAX_BITS bits: more tiles than one step of the tile scan (16384) holds; a 1-fill of more
    // than 2^25 - 1 groups (PLWAH splits it) ending in a one-bit literal (its position goes to
    // the last fill_word), a 0-fill of more than 2 * (2^25 - 1) groups, sparse bits elsewhere.
    let bit_len = bitmap::MAX_BITS;
    let mut bits = vec![0u8; bit_len.div_ceil(8) as usize];
    for _ in 0..20_000 {
        let i = rng.random_range(0..bit_len);
        set_bit(&mut bits, i, true);
    }
    let g1 = 1_000_003u64;
    let g2 = g1 + (1 << 25) + 4321;
    set_range(&mut bits, 31 * g1, 31 * g2, true);
    set_range(&mut bits, 31 * g2, 31 * (g2 + 1), true);
    set_bit(&mut bits, 31 * g2 + 9, false);
    let g3 = g2 + 1;
    let g4 = g3 + 2 * (1 << 25) + 77;
    set_range(&mut bits, 31 * g3, 31 * g4, false);
    let plain = gb::upload_plain(gpu, &bits, bit_len).expect("upload");
    for f in FLAVORS {
        let cpu = cpu_words(f, &bits, bit_len);
        let got = gb::download(
            gpu,
            &gb::compress_device(gpu, f, &plain).expect("GPU compresses"),
        )
        .expect("valid");
        assert!(got == cpu, "{f:?} MAX_BITS");
    }
}

// ---- fused operations (bm_fop_*: decode both operands' tiles, operate, compress) --------------

/// `op(a, b)` through the fused kernel, for operands with tile starts (GPU-compressed) and
/// without (the CPU's words put on the device bare: computed first), equals the CPU's operation word for word, and the
/// result carries the tile starts of its words. `max`: the result's counter (None: the
/// flavor's), against the CPU's plain result compressed at that counter.
fn check_fused(
    gpu: &tessera_gpu::Gpu,
    xa: &[u8],
    xb: &[u8],
    bit_len: u64,
    max: Option<u64>,
    what: &str,
) {
    let (pa, pb) = (
        gb::upload_plain(gpu, xa, bit_len).expect("upload"),
        gb::upload_plain(gpu, xb, bit_len).expect("upload"),
    );
    for f in FLAVORS {
        let (a, b) = (cpu_words(f, xa, bit_len), cpu_words(f, xb, bit_len));
        let with = (
            gb::compress_device(gpu, f, &pa).expect("compress"),
            gb::compress_device(gpu, f, &pb).expect("compress"),
        );
        let without = (
            bare_device(gpu, f, a.words(), bit_len),
            bare_device(gpu, f, b.words(), bit_len),
        );
        for op in OPS {
            let mut want = bitmap::ops::binary(op, &a, &b).expect("CPU op");
            if let Some(m) = max {
                want = Bitmap::compress_with_max_counter(f, &want.decompress_to_vec(), bit_len, m)
                    .expect("CPU");
            }
            for (kind, (da, db)) in [("compressed", &with), ("bare", &without)] {
                let got = match max {
                    None => hooks::binary_device_fused(gpu, op, da, db),
                    Some(m) => hooks::binary_device_fused_with_max_counter(gpu, op, da, db, m),
                }
                .expect("fused op");
                let words = gb::download(gpu, &got).expect("valid");
                assert!(
                    words == want,
                    "{f:?} {op:?} {what} ({bit_len} bits, {kind} operands): {} words, want {}",
                    words.words().len(),
                    want.words().len()
                );
                if bit_len > 0 {
                    assert!(
                        device_tile_starts(gpu, &got) == cpu_tile_starts(&want),
                        "{f:?} {op:?} {what} ({bit_len} bits): the result's tile starts"
                    );
                }
            }
        }
    }
}

#[test]
fn fused_operations_equal_the_cpu_at_every_length_and_pattern() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let t = 31 * CMP_TILE;
    for bit_len in LENGTHS.into_iter().chain([t - 1, t, t + 1, 5 * t + 12_345]) {
        let pats = patterns(&mut rng);
        for _ in 0..3 {
            let pa = pats[rng.random_range(0..pats.len())];
            let pb = pats[rng.random_range(0..pats.len())];
            let (xa, xb) = (
                bits_of(&mut rng, bit_len, pa),
                bits_of(&mut rng, bit_len, pb),
            );
            check_fused(gpu, &xa, &xb, bit_len, None, &format!("{pa:?} {pb:?}"));
        }
    }
    for k in [1u32, 4, 8, 12, 16] {
        let bit_len = 40 * t + rng.random_range(0..t);
        let xa = bits_of(&mut rng, bit_len, Pattern::Density(k));
        let xb = bits_of(&mut rng, bit_len, Pattern::Density(k));
        check_fused(gpu, &xa, &xb, bit_len, None, &format!("2^-{k}"));
    }
}

/// The group before a tile comes from each operand's tile start: the word covering the tile's
/// first group when it starts earlier, else the word before it (a literal, a fill, or a PLWAH
/// fill whose folded literal is that group). Fills and folds at every offset around the tile
/// edges, in one operand or both, with the other operand all ones, all zeros or random.
#[test]
fn fused_operations_across_tile_edges() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let groups = (3 * CMP_TILE + 77) as usize;
    let bit_len = groups as u64 * 31 - 5;
    let ones = bits_of(&mut rng, bit_len, Pattern::Ones);
    for fill in [0u32, bitmap::GROUP_ONES] {
        let other = fill ^ bitmap::GROUP_ONES;
        for d in (-6i64..=6).chain([-33, -32, -31, 31, 32, 33]) {
            let start = (CMP_TILE as i64 + d) as usize;
            let end = (2 * CMP_TILE as i64 + d) as usize;
            let mut g = vec![other; groups];
            for x in g.iter_mut().take(start) {
                *x = plain_literal(&mut rng);
            }
            g[start..end].fill(fill);
            // The run's end (a tile edge + d): a folded literal, a plain one, the other fill.
            g[end] = match d.rem_euclid(3) {
                0 => fill ^ (1 << rng.random_range(0..31)),
                1 => plain_literal(&mut rng),
                _ => other,
            };
            let xa = bits_from_groups(&g, bit_len);
            let mut h = g.clone();
            h.rotate_right(rng.random_range(1..40));
            let xb = bits_from_groups(&h, bit_len);
            let random = bits_of(&mut rng, bit_len, Pattern::Density(2));
            let what = format!("fill {fill:x} offset {d}");
            check_fused(gpu, &xa, &ones, bit_len, None, &what);
            check_fused(gpu, &xa, &xb, bit_len, None, &what);
            check_fused(gpu, &random, &xa, bit_len, None, &what);
        }
    }
    for span in [1usize, 33, 4095, 4097, 9000] {
        let ga = staircase(&mut rng, 12, |i| 1 + (i * 7919 + span) % span);
        let gb_ = staircase(&mut rng, 12, |i| 1 + (i * 104_729 + span) % span);
        let n = ga.len().min(gb_.len());
        let bit_len = n as u64 * 31;
        let (xa, xb) = (
            bits_from_groups(&ga[..n], bit_len),
            bits_from_groups(&gb_[..n], bit_len),
        );
        check_fused(gpu, &xa, &xb, bit_len, None, &format!("staircase {span}"));
    }
}

#[test]
fn fused_operations_split_runs_at_small_max_counters() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let t = 31 * CMP_TILE;
    for bit_len in [31u64, 1000, t + 40, 3 * t + 17] {
        for (pa, pb) in [
            (Pattern::Runs, Pattern::Runs),
            (Pattern::Zeros, Pattern::Density(10)),
            (Pattern::Ones, Pattern::Runs),
        ] {
            let xa = bits_of(&mut rng, bit_len, pa);
            let xb = bits_of(&mut rng, bit_len, pb);
            for m in [1u64, 3, 4095, 4097] {
                check_fused(gpu, &xa, &xb, bit_len, Some(m), &format!("max {m}"));
            }
        }
    }
}

/// Wrong tile starts on an operand (past the words, all zero, random) give an error or some
/// valid result, never a fault; the ones that cannot cover a tile are errors. A too-short
/// directory is an argument error.
#[test]
fn fused_operations_with_wrong_tile_starts_stay_in_bounds() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let bit_len = 31 * 5 * CMP_TILE + 77;
    let xa = bits_of(&mut rng, bit_len, Pattern::Density(3));
    let xb = bits_of(&mut rng, bit_len, Pattern::Density(5));
    let (pa, pb) = (
        gb::upload_plain(gpu, &xa, bit_len).expect("upload"),
        gb::upload_plain(gpu, &xb, bit_len).expect("upload"),
    );
    let n = 2 * (bit_len.div_ceil(31).div_ceil(CMP_TILE) as usize + 1);
    for f in FLAVORS {
        let db = gb::compress_device(gpu, f, &pb).expect("compress");
        let wrong: [(Vec<u32>, bool); 3] = [
            (vec![u32::MAX - 3; n], true),
            (vec![0; n], true),
            ((0..n).map(|_| rng.random()).collect(), false),
        ];
        for (starts, must_fail) in wrong {
            let mut da = gb::compress_device(gpu, f, &pa).expect("compress");
            da.tile_starts = Some(gpu.upload(&starts).expect("upload"));
            for (x, y) in [(&da, &db), (&db, &da)] {
                match hooks::binary_device_fused(gpu, Op::And, x, y) {
                    Ok(r) => {
                        assert!(!must_fail, "{f:?}: wrong tile starts not flagged");
                        assert!(r.len as u64 <= bit_len.div_ceil(31));
                    }
                    Err(e) => assert!(
                        matches!(e, tessera_format::Error::InvalidArgument(_)),
                        "{f:?}: {e}"
                    ),
                }
            }
        }
        let mut da = gb::compress_device(gpu, f, &pa).expect("compress");
        da.tile_starts = Some(gpu.upload(&[0u32, 0]).expect("upload"));
        assert!(hooks::binary_device_fused(gpu, Op::Or, &da, &db).is_err());
    }
}
