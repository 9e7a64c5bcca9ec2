//! CODAG on the GPU equals the CPU references (`tessera_codecs::orc`, `tessera_codecs::deflate`):
//! ORC RLE v1 / v2 (every sub-encoding, every DIRECT width code, signed and unsigned), byte RLE
//! and Deflate (stored, fixed, dynamic blocks; overlapping back-references), many chunks in one
//! launch; and on hostile chunks (truncated, bytes flipped, runs past the chunk) the GPU flags
//! exactly the chunks the CPU rejects, with the CPU's error. GPU tests skip with a printed reason
//! without a GPU (TESSERA_REQUIRE_GPU=1 makes that a failure).

mod common;

use common::{gpu, gzip_member, rng};
use rand::rngs::StdRng;
use rand::{Rng, RngCore};
use tessera_codecs::orc::{self, encode};
use tessera_gpu::codag::{self, Chunk, Decoder};

fn ints(rng: &mut StdRng, n: usize, signed: bool) -> Vec<i64> {
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        match rng.random_range(0..5) {
            0 => v.extend(std::iter::repeat_n(
                rng.random_range(0i64..1 << 40),
                rng.random_range(1..300),
            )),
            1 => {
                let s = rng.random_range(0i64..1 << 30);
                let d = rng.random_range(-50i64..50);
                v.extend((0..rng.random_range(3..600)).map(|k| s + d * k));
            }
            2 => {
                let bits = rng.random_range(1..62);
                v.extend((0..rng.random_range(1..700)).map(|_| rng.random_range(0..1i64 << bits)))
            }
            3 => {
                let s = rng.random_range(0i64..1000);
                let mut x = s;
                v.extend((0..rng.random_range(3..600)).map(|_| {
                    x += rng.random_range(0..1000);
                    x
                }))
            }
            _ => v.push(rng.random::<i64>() >> rng.random_range(0..63)),
        }
    }
    v.truncate(n);
    if signed {
        for x in v.iter_mut().step_by(2) {
            *x = x.wrapping_neg();
        }
    } else {
        for x in v.iter_mut() {
            *x &= i64::MAX;
        }
    }
    v
}

/// Streams that use every RLE v2 sub-encoding and every DIRECT width code.
fn v2_special(rng: &mut StdRng, signed: bool) -> Vec<(Vec<u8>, Vec<i64>)> {
    let mut out = Vec::new();
    for code in 0..32u32 {
        let w = orc::decode_width(code);
        let n = rng.random_range(1..=512);
        let vals: Vec<i64> = (0..n)
            .map(|_| {
                let u = if w == 64 {
                    rng.random::<u64>()
                } else {
                    rng.random::<u64>() & ((1u64 << w) - 1)
                };
                if signed {
                    orc::unzigzag(u)
                } else {
                    u as i64
                }
            })
            .collect();
        let mut s = Vec::new();
        encode::direct(&mut s, &vals, code, signed);
        // A SHORT_REPEAT, a DELTA and a PATCHED_BASE run after it.
        let rep = rng.random_range(3..=10);
        let rv = vals[0];
        encode::short_repeat(&mut s, rv, rep, signed);
        let mut all = vals.clone();
        all.extend(std::iter::repeat_n(rv, rep));
        let start = rng.random_range(0i64..1 << 20);
        let dv: Vec<i64> = (0..rng.random_range(3..512))
            .scan(start, |x, _| {
                *x += rng.random_range(1..(1i64 << (code % 20 + 1)));
                Some(*x)
            })
            .collect();
        encode::delta(&mut s, &dv, signed);
        all.extend(&dv);
        let mut pv: Vec<i64> = (0..rng.random_range(20..512))
            .map(|_| rng.random_range(0..256))
            .collect();
        let k = pv.len();
        pv[rng.random_range(0..k)] = 1 << 30;
        pv[k - 1] = 1 << 25;
        if encode::patched_base(&mut s, &pv, 7).is_some() {
            all.extend(&pv);
        }
        out.push((s, all));
    }
    out
}

fn check_ints(gpu: &tessera_gpu::Gpu, v2: bool, signed: bool, set: &[(Vec<u8>, Vec<i64>)]) {
    let chunks: Vec<(&[u8], usize)> = set.iter().map(|(s, v)| (s.as_slice(), v.len())).collect();
    let got = codag::decode_orc_ints(gpu, v2, signed, &chunks).unwrap_or_else(|e| panic!("{e}"));
    for (c, ((_, want), g)) in set.iter().zip(&got).enumerate() {
        assert_eq!(g, want, "chunk {c} v2={v2} signed={signed}");
    }
}

#[test]
fn orc_rle_matches_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    for signed in [false, true] {
        for v2 in [false, true] {
            let mut set = Vec::new();
            for n in [0usize, 1, 2, 3, 31, 32, 33, 500, 4096, 20000] {
                let vals = ints(&mut rng, n, signed);
                let s = if v2 {
                    encode::rle_v2(&vals, signed)
                } else {
                    encode::rle_v1(&vals, signed)
                };
                let mut cpu = vec![0i64; n];
                if v2 {
                    orc::decode_rle_v2(&s, signed, &mut cpu).expect("cpu");
                } else {
                    orc::decode_rle_v1(&s, signed, &mut cpu).expect("cpu");
                }
                assert_eq!(cpu, vals);
                set.push((s, vals));
            }
            if v2 {
                set.extend(v2_special(&mut rng, signed));
            }
            check_ints(gpu, v2, signed, &set);
        }
    }
}

#[test]
fn orc_byte_rle_and_booleans_match_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let mut data = Vec::new();
    for n in [0usize, 1, 3, 130, 131, 1000, 70000] {
        let mut v = Vec::with_capacity(n);
        while v.len() < n {
            if rng.random::<bool>() {
                v.extend(std::iter::repeat_n(
                    rng.random::<u8>(),
                    rng.random_range(1..300),
                ));
            } else {
                v.extend((0..rng.random_range(1..300)).map(|_| rng.random::<u8>()));
            }
        }
        v.truncate(n);
        data.push(v);
    }
    let bits: Vec<bool> = (0..10_001).map(|i| (i / 7) % 3 == 0).collect();
    let streams: Vec<Vec<u8>> = data.iter().map(|d| encode::byte_rle(d)).collect();
    let bool_stream = encode::bools(&bits);
    let mut chunks: Vec<Chunk<'_>> = streams
        .iter()
        .zip(&data)
        .map(|(s, d)| Chunk {
            input: s,
            out_cap: d.len(),
            signed: false,
        })
        .collect();
    chunks.push(Chunk {
        input: &bool_stream,
        out_cap: bits.len().div_ceil(8),
        signed: false,
    });
    let got = codag::decode_chunks(gpu, Decoder::OrcByteRle, &chunks).expect("launch");
    for (c, d) in data.iter().enumerate() {
        assert_eq!(got[c].as_ref().expect("ok"), d, "chunk {c}");
    }
    let packed = got[data.len()].as_ref().expect("ok");
    let mut cpu = vec![false; bits.len()];
    orc::decode_bool(&bool_stream, &mut cpu).expect("cpu");
    for (i, &b) in bits.iter().enumerate() {
        assert_eq!(packed[i / 8] >> (7 - i % 8) & 1 == 1, b, "bit {i}");
        assert_eq!(cpu[i], b);
    }
}

fn text(rng: &mut StdRng, n: usize) -> Vec<u8> {
    const W: [&str; 12] = [
        "the ",
        "warp ",
        "decodes ",
        "a ",
        "chunk ",
        "of ",
        "Deflate ",
        "with ",
        "all ",
        "lanes ",
        "\n",
        "ACGTNACGTN ",
    ];
    let mut v = Vec::with_capacity(n + 16);
    while v.len() < n {
        match rng.random_range(0..20) {
            0 => v.extend(std::iter::repeat_n(b'=', rng.random_range(1..400))),
            1 => v.extend((0..rng.random_range(1..50)).map(|_| rng.random::<u8>())),
            _ => v.extend_from_slice(W[rng.random_range(0..W.len())].as_bytes()),
        }
    }
    v.truncate(n);
    v
}

/// (compressed, original) raw Deflate streams: stored (level 0), fixed (small inputs), dynamic,
/// runs with overlapping copies (distance 1), random bytes, empty.
fn deflate_set(rng: &mut StdRng) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut set = Vec::new();
    for (n, level) in [
        (0usize, 6u8),
        (1, 6),
        (40, 6),
        (300, 1),
        (5000, 0),
        (70000, 0),
        (131072, 1),
        (131072, 6),
        (131072, 9),
        (200000, 9),
    ] {
        let d = text(rng, n);
        set.push((miniz_oxide::deflate::compress_to_vec(&d, level), d));
    }
    let runs = vec![7u8; 100_000];
    set.push((miniz_oxide::deflate::compress_to_vec(&runs, 9), runs));
    let mut rnd = vec![0u8; 65536];
    rng.fill_bytes(&mut rnd);
    set.push((miniz_oxide::deflate::compress_to_vec(&rnd, 6), rnd));
    for level in [1u8, 9] {
        let d = skewed(rng, 131072);
        set.push((miniz_oxide::deflate::compress_to_vec(&d, level), d));
    }
    for level in [6u8, 9] {
        let d = words(rng, 131072);
        set.push((miniz_oxide::deflate::compress_to_vec(&d, level), d));
        let d = rows(rng, 131072);
        set.push((miniz_oxide::deflate::compress_to_vec(&d, level), d));
    }
    set
}

/// Words of a small vocabulary, a few much more frequent (the bench's word text): chains of
/// short copies with no literal between them, some reading the bytes of the copy just before.
fn words(rng: &mut StdRng, n: usize) -> Vec<u8> {
    const W: [&str; 8] = ["the ", "of ", "and ", "a ", "to ", "in ", "is ", "you "];
    let mut v = Vec::with_capacity(n + 8);
    while v.len() < n {
        v.extend_from_slice(
            W[(rng.random_range(0.0f64..1.0).powi(3) * 8.0) as usize % 8].as_bytes(),
        );
        if rng.random_range(0..12) == 0 {
            v.extend_from_slice(b".\n");
        }
    }
    v.truncate(n);
    v
}

/// Rows with random numbers between fixed text (TPC-H-like): copies of 33 to 128 bytes after
/// runs of literals.
fn rows(rng: &mut StdRng, n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(n + 128);
    while v.len() < n {
        let row = format!(
            "{}|{}|{}.00|1995-{:02}-{:02}|DELIVER IN PERSON|TRUCK|carefully final deposits\n",
            rng.random_range(1..200000),
            rng.random_range(1..8),
            rng.random_range(1..50000),
            rng.random_range(1..13),
            rng.random_range(1..29)
        );
        v.extend_from_slice(row.as_bytes());
    }
    v.truncate(n);
    v
}

/// Bytes whose k-th most frequent value is about 1.6 times rarer than the one before, with
/// random distances between repeats: literal/length and distance codes longer than the GPU's
/// lookup tables index (its walk for long codes).
fn skewed(rng: &mut StdRng, n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(n + 64);
    while v.len() < n {
        if v.len() > 40000 && rng.random_range(0..8) == 0 {
            let back = rng.random_range(1..40000usize);
            let len = rng.random_range(3..60);
            let at = v.len() - back;
            for i in 0..len {
                v.push(v[at + i]);
            }
            continue;
        }
        let mut k = 0u8;
        while k < 60 && rng.random_range(0..8) < 3 {
            k += 1;
        }
        v.push(b' ' + k);
    }
    v.truncate(n);
    v
}

/// The longest literal/length and distance code lengths of the dynamic blocks of a raw Deflate
/// stream (a small reader of RFC 1951 headers: the test's own, independent of the decoders).
fn longest_codes(s: &[u8]) -> (u32, u32) {
    struct Bits<'a>(&'a [u8], usize);
    impl Bits<'_> {
        fn get(&mut self, n: usize) -> u32 {
            let mut v = 0;
            for i in 0..n {
                let p = self.1 + i;
                v |= (((self.0[p / 8] >> (p % 8)) & 1) as u32) << i;
            }
            self.1 += n;
            v
        }
    }
    let mut b = Bits(s, 0);
    let (mut lit, mut dist) = (0, 0);
    loop {
        let last = b.get(1);
        let kind = b.get(2);
        assert_eq!(kind, 2, "only dynamic blocks are expected here");
        let (hlit, hdist, hclen) = (b.get(5) + 257, b.get(5) + 1, b.get(4) + 4);
        const ORDER: [usize; 19] = [
            16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
        ];
        let mut cl = [0u32; 19];
        for &o in ORDER.iter().take(hclen as usize) {
            cl[o] = b.get(3);
        }
        // Canonical decode of the code-length code, bit by bit.
        let decode = |b: &mut Bits<'_>, lens: &[u32]| -> usize {
            let (mut code, mut first, mut index) = (0i64, 0i64, 0i64);
            for len in 1..16 {
                code |= b.get(1) as i64;
                let count = lens.iter().filter(|&&l| l == len).count() as i64;
                if code - first < count {
                    let k = (index + code - first) as usize;
                    let mut syms: Vec<usize> =
                        (0..lens.len()).filter(|&s| lens[s] == len).collect();
                    syms.sort();
                    return syms[k - index as usize];
                }
                index += count;
                first = (first + count) << 1;
                code <<= 1;
            }
            panic!("no code");
        };
        let mut lens = Vec::new();
        while lens.len() < (hlit + hdist) as usize {
            match decode(&mut b, &cl) {
                s @ 0..=15 => lens.push(s as u32),
                16 => {
                    let p = *lens.last().expect("a previous length");
                    for _ in 0..3 + b.get(2) {
                        lens.push(p)
                    }
                }
                17 => lens.extend(std::iter::repeat_n(0, 3 + b.get(3) as usize)),
                _ => lens.extend(std::iter::repeat_n(0, 11 + b.get(7) as usize)),
            }
        }
        let (l, d) = lens.split_at(hlit as usize);
        lit = lit.max(*l.iter().max().unwrap_or(&0));
        dist = dist.max(*d.iter().max().unwrap_or(&0));
        // Skip the block's symbols.
        loop {
            let s = decode(&mut b, l);
            if s == 256 {
                break;
            }
            if s > 256 {
                const LX: [usize; 29] = [
                    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5,
                    5, 5, 0,
                ];
                b.get(LX[s - 257]);
                let ds = decode(&mut b, d);
                b.get(ds.saturating_sub(2) / 2);
            }
        }
        if last == 1 {
            return (lit, dist);
        }
    }
}

#[test]
fn the_long_code_set_has_codes_past_the_lookup_tables() {
    let h = tessera_gpu::kernels::header("codag/deflate.cuh").expect("embedded");
    let bits = |name: &str| -> u32 {
        h.lines()
            .find_map(|l| {
                l.strip_prefix(&format!("#define {name} "))?
                    .trim()
                    .parse()
                    .ok()
            })
            .unwrap_or_else(|| panic!("{name} in deflate.cuh"))
    };
    let (lit_bits, dist_bits) = (bits("DEFLATE_LIT_BITS"), bits("DEFLATE_DIST_BITS"));
    let mut rng = rng();
    for level in [1u8, 9] {
        let d = skewed(&mut rng, 131072);
        let s = miniz_oxide::deflate::compress_to_vec(&d, level);
        let (lit, dist) = longest_codes(&s);
        assert!(
            lit > lit_bits && dist > dist_bits,
            "level {level}: longest codes {lit} and {dist} bits"
        );
    }
}

#[test]
fn deflate_matches_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let set = deflate_set(&mut rng);
    let chunks: Vec<(&[u8], usize)> = set
        .iter()
        .map(|(c, d)| (c.as_slice(), d.len() + 64))
        .collect();
    let got = codag::inflate_batch(gpu, &chunks).unwrap_or_else(|e| panic!("{e}"));
    for (k, ((c, d), g)) in set.iter().zip(&got).enumerate() {
        let (cpu, _) = tessera_codecs::deflate::inflate(c, d.len()).expect("cpu");
        assert_eq!(&cpu, d);
        assert!(g == d, "chunk {k}: {} bytes, {} expected", g.len(), d.len());
    }
    // Many 128 KiB chunks in one launch.
    let big = text(&mut rng, 64 * 131072);
    let parts: Vec<Vec<u8>> = big
        .chunks(131072)
        .map(|p| miniz_oxide::deflate::compress_to_vec(p, 6))
        .collect();
    let chunks: Vec<(&[u8], usize)> = parts.iter().map(|p| (p.as_slice(), 131072)).collect();
    let got = codag::inflate_batch(gpu, &chunks).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got.concat(), big);
}

/// Hostile chunks: each flagged by the GPU exactly when the CPU rejects it, with the CPU's error;
/// accepted ones decode to the CPU's output.
fn check_hostile(gpu: &tessera_gpu::Gpu, decoder: Decoder, chunks: &[Chunk<'_>]) -> (usize, usize) {
    let got = codag::decode_chunks(gpu, decoder, chunks).expect("launch");
    let mut bad = 0;
    for (c, (ch, g)) in chunks.iter().zip(&got).enumerate() {
        let cpu: Result<Vec<u8>, _> = match decoder {
            Decoder::OrcRleV1 | Decoder::OrcRleV2 => {
                let mut v = vec![0i64; ch.out_cap];
                let r = if decoder == Decoder::OrcRleV1 {
                    orc::decode_rle_v1(ch.input, ch.signed, &mut v)
                } else {
                    orc::decode_rle_v2(ch.input, ch.signed, &mut v)
                };
                r.map(|_| v.iter().flat_map(|x| x.to_le_bytes()).collect())
            }
            Decoder::OrcByteRle => {
                let mut v = vec![0u8; ch.out_cap];
                orc::decode_byte_rle(ch.input, &mut v).map(|_| v)
            }
            Decoder::Deflate => {
                tessera_codecs::deflate::inflate(ch.input, ch.out_cap).map(|(v, _)| v)
            }
        };
        match (g, cpu) {
            (Ok(g), Ok(cpu)) => assert_eq!(g, &cpu, "{decoder:?} chunk {c}"),
            (Err(tessera_format::Error::InChunk { chunk, source, .. }), Err(cpu)) => {
                assert_eq!(*chunk, c as u64);
                assert_eq!(source.to_string(), cpu.to_string());
                bad += 1;
            }
            (g, cpu) => panic!("{decoder:?} chunk {c}: GPU {g:?}, CPU {cpu:?}"),
        }
    }
    (bad, chunks.len())
}

fn damaged(rng: &mut StdRng, streams: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for s in streams {
        for cut in [0, 1, s.len() / 3, s.len().saturating_sub(1)] {
            out.push(s[..cut.min(s.len())].to_vec());
        }
        for _ in 0..6 {
            let mut t = s.clone();
            if !t.is_empty() {
                for _ in 0..rng.random_range(1..4) {
                    let i = rng.random_range(0..t.len());
                    t[i] ^= 1 << rng.random_range(0..8);
                }
            }
            out.push(t);
        }
    }
    out
}

/// The chunks of `bad` (`damaged`'s output: the same number of damaged copies of each
/// stream, in stream order), each with the output capacity of the stream it came from.
fn damaged_chunks<'a>(bad: &'a [Vec<u8>], caps: &[usize], signed: bool) -> Vec<Chunk<'a>> {
    let per = bad.len() / caps.len();
    bad.iter()
        .enumerate()
        .map(|(i, s)| Chunk {
            input: s,
            out_cap: caps[i / per],
            signed,
        })
        .collect()
}

#[test]
fn hostile_chunks_are_flagged_like_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    for decoder in [Decoder::OrcRleV1, Decoder::OrcRleV2] {
        for signed in [false, true] {
            let mut streams = Vec::new();
            let mut counts = Vec::new();
            for n in [1usize, 40, 700, 3000] {
                let vals = ints(&mut rng, n, signed);
                streams.push(if decoder == Decoder::OrcRleV2 {
                    encode::rle_v2(&vals, signed)
                } else {
                    encode::rle_v1(&vals, signed)
                });
                counts.push(n);
            }
            if decoder == Decoder::OrcRleV2 {
                for (s, v) in v2_special(&mut rng, signed).into_iter().take(8) {
                    streams.push(s);
                    counts.push(v.len());
                }
            }
            let bad = damaged(&mut rng, &streams);
            let mut chunks = damaged_chunks(&bad, &counts, signed);
            // Runs past the chunk: one value fewer than the stream holds.
            for (s, &n) in streams.iter().zip(&counts) {
                chunks.push(Chunk {
                    input: s,
                    out_cap: n.saturating_sub(1),
                    signed,
                });
            }
            let (flagged, total) = check_hostile(gpu, decoder, &chunks);
            eprintln!("{decoder:?} signed={signed}: {flagged} of {total} hostile chunks rejected");
            assert!(flagged > 0);
        }
    }
    let data: Vec<Vec<u8>> = (0..4).map(|k| text(&mut rng, 1000 * (k + 1))).collect();
    let streams: Vec<Vec<u8>> = data.iter().map(|d| encode::byte_rle(d)).collect();
    let bad = damaged(&mut rng, &streams);
    let caps: Vec<usize> = data.iter().map(Vec::len).collect();
    let chunks = damaged_chunks(&bad, &caps, false);
    assert!(check_hostile(gpu, Decoder::OrcByteRle, &chunks).0 > 0);

    let set = deflate_set(&mut rng);
    let streams: Vec<Vec<u8>> = set.iter().map(|(c, _)| c.clone()).collect();
    let bad = damaged(&mut rng, &streams);
    let caps: Vec<usize> = set.iter().map(|(_, d)| d.len()).collect();
    let mut chunks = damaged_chunks(&bad, &caps, false);
    // Output one byte short of what the stream holds; a distance before the output's start
    // (fixed block: literal 'a', then length 3 distance 2).
    for (c, d) in &set {
        if !d.is_empty() {
            chunks.push(Chunk {
                input: c,
                out_cap: d.len() - 1,
                signed: false,
            });
        }
    }
    let far = [0x4b, 0x04, 0x42, 0x00];
    chunks.push(Chunk {
        input: &far,
        out_cap: 100,
        signed: false,
    });
    let (flagged, total) = check_hostile(gpu, Decoder::Deflate, &chunks);
    eprintln!("Deflate: {flagged} of {total} hostile chunks rejected");
    assert!(flagged > 0);
}

#[test]
fn gzip_members_decode_in_one_launch() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let parts: Vec<Vec<u8>> = (0..40).map(|k| text(&mut rng, 1000 * k)).collect();
    let mut file = Vec::new();
    for (k, p) in parts.iter().enumerate() {
        file.extend(gzip_member(p, [0u8, 1, 6, 9][k % 4], "part"));
    }
    let (out, report) = codag::gunzip(gpu, &file)
        .expect("gunzip")
        .expect("on the GPU");
    assert_eq!(out, parts.concat());
    assert_eq!(report.members, parts.len());
    assert_eq!(
        tessera_codecs::deflate::gzip_decompress(&file, 1 << 30).expect("cpu"),
        out
    );
    // A single member.
    let one = gzip_member(&parts[39], 9, "part");
    let (out, report) = codag::gunzip(gpu, &one)
        .expect("gunzip")
        .expect("on the GPU");
    assert_eq!((out, report.members), (parts[39].clone(), 1));
    // A bad CRC-32 in the middle member is the CPU's error.
    let mut bad = file.clone();
    let second = gzip_member(&parts[0], 0, "part").len();
    let crc_at = second + gzip_member(&parts[1], 1, "part").len() - 8;
    bad[crc_at] ^= 1;
    assert!(matches!(
        codag::gunzip(gpu, &bad),
        Err(tessera_format::Error::ChecksumMismatch { .. })
    ));
}

/// A raw Deflate stream of many short blocks: each piece of `data` ends a block (a sync flush
/// also adds an empty stored block), so most lanes of a lane-parallel round are discarded.
fn short_blocks(data: &[u8], piece: usize) -> Vec<u8> {
    use miniz_oxide::deflate::core::{
        compress, create_comp_flags_from_zip_params, CompressorOxide, TDEFLFlush, TDEFLStatus,
    };
    let mut c = CompressorOxide::new(create_comp_flags_from_zip_params(6, -15, 0));
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    let pieces: Vec<&[u8]> = data.chunks(piece).collect();
    for (i, p) in pieces.iter().enumerate() {
        let flush = if i + 1 == pieces.len() {
            TDEFLFlush::Finish
        } else {
            TDEFLFlush::Sync
        };
        let (st, used, n) = compress(&mut c, p, &mut buf, flush);
        assert!(st != TDEFLStatus::BadParam && used == p.len(), "{st:?}");
        out.extend_from_slice(&buf[..n]);
    }
    out
}

/// Blocks short enough that most lanes of a lane-parallel round would be discarded, and
/// literals whose codes all have one length (bytes 0..128 at random, no repeats: a decode from a
/// wrong bit stays misaligned far into the block), through the Deflate kernel against
/// miniz_oxide; damaged copies flagged like the CPU. (Written for the lane-parallel kernel of
/// decision 0030, which passed it; kept for the warp-wide one.)
#[test]
fn short_blocks_and_late_synchronisation_match_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let mut set: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for piece in [1usize, 7, 60, 500, 4000] {
        let d = text(&mut rng, 20_000);
        let z = short_blocks(&d, piece);
        let (cpu, _) = tessera_codecs::deflate::inflate(&z, d.len()).expect("cpu");
        assert_eq!(cpu, d);
        set.push((z, d));
    }
    let mut flat = vec![0u8; 131_072];
    for b in &mut flat {
        *b = rng.random_range(0..128u8);
    }
    set.push((miniz_oxide::deflate::compress_to_vec(&flat, 6), flat));
    let chunks: Vec<(&[u8], usize)> = set
        .iter()
        .map(|(c, d)| (c.as_slice(), d.len() + 64))
        .collect();
    let got = codag::inflate_batch(gpu, &chunks).unwrap_or_else(|e| panic!("{e}"));
    for (k, ((_, d), g)) in set.iter().zip(&got).enumerate() {
        assert!(
            g == d,
            "stream {k}: {} bytes, {} expected",
            g.len(),
            d.len()
        );
    }
    let streams: Vec<Vec<u8>> = set.iter().map(|(c, _)| c.clone()).collect();
    let bad = damaged(&mut rng, &streams);
    let caps: Vec<usize> = set.iter().map(|(_, d)| d.len()).collect();
    let chunks = damaged_chunks(&bad, &caps, false);
    let (flagged, total) = check_hostile(gpu, Decoder::Deflate, &chunks);
    eprintln!("short blocks: {flagged} of {total} damaged streams rejected");
    assert!(flagged > 0);
}
