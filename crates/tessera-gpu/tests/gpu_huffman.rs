//! GPU canonical Huffman against the CPU codec (`tessera_codecs::huffman`): the histogram
//! equals the CPU's, the GPU encoder writes the CPU encoder's bytes (raw-mode choice, mode 2
//! header and u16 block_info included), the GPU decoder gives the CPU decoder's bytes for mode 2
//! and for the mode 1 layout of format version 1 (goldens and the compatibility encoder), and
//! corrupt payloads of both modes give the CPU decoder's exact error. Every input shape, sizes
//! around 4096-bit block edges, strip (32 KiB) and sub-tile (4 KiB) edges, empty last blocks,
//! 13-bit codes, multi-chunk columns mixing modes, multi-megabyte chunks, and the encoder's
//! phase timings. Skips (printing why) without a GPU unless TESSERA_REQUIRE_GPU=1.

mod common;

use common::{gpu, rng};
use rand::rngs::StdRng;
use rand::Rng;
use tessera_codecs::huffman as cpu;
use tessera_gpu::huffman as ghuff;

const INFO_AT: usize = cpu::HEADER_BYTES + cpu::CODE_LENGTHS_BYTES;

fn word(p: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(p[4 * i..4 * i + 4].try_into().expect("4 bytes"))
}

fn set_word(p: &mut [u8], i: usize, w: u32) {
    p[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
}

fn cpu_encode(data: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    cpu::encode(data, &mut p).expect("CPU encodes");
    p
}

fn is_huffman(p: &[u8]) -> bool {
    word(p, 0) == cpu::MODE_HUFFMAN
}

fn blocks(p: &[u8]) -> usize {
    (word(p, 3) as usize).div_ceil(cpu::BLOCK_BITS as usize)
}

/// Mode 2 block_info entry k.
fn entry(p: &[u8], k: usize) -> u32 {
    u16::from_le_bytes([p[INFO_AT + 2 * k], p[INFO_AT + 2 * k + 1]]) as u32
}

fn set_entry(p: &mut [u8], k: usize, e: u32) {
    p[INFO_AT + 2 * k..INFO_AT + 2 * k + 2].copy_from_slice(&(e as u16).to_le_bytes());
}

/// Byte offset of the stream: after a u16 per block padded to a word (mode 2) or a word per
/// block (mode 1).
fn stream_at(p: &[u8]) -> usize {
    if word(p, 0) == cpu::MODE_HUFFMAN_V1 {
        INFO_AT + 4 * blocks(p)
    } else {
        INFO_AT + 4 * blocks(p).div_ceil(2)
    }
}

fn cpu_encode_v1(data: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    cpu::encode_v1(data, &mut p).expect("CPU encodes mode 1");
    p
}

/// 256 symbols, triangular (the smaller of two uniform bytes): compressible, codes up to 13
/// bits.
fn wide(r: &mut StdRng, n: usize) -> Vec<u8> {
    (0..n)
        .map(|_| r.random::<u8>().min(r.random::<u8>()))
        .collect()
}

/// Symbol k with probability about 2^-(k+1), `alphabet` symbols.
fn skewed(r: &mut StdRng, n: usize, alphabet: u8) -> Vec<u8> {
    (0..n)
        .map(|_| (r.random::<u64>().trailing_zeros() as u8).min(alphabet - 1) + b'a')
        .collect()
}

fn uniform(r: &mut StdRng, n: usize) -> Vec<u8> {
    (0..n).map(|_| r.random()).collect()
}

/// Text-like bytes: words from a small vocabulary with spaces, newlines and punctuation.
fn texty(r: &mut StdRng, n: usize) -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "the", "of", "and", "GPU", "huffman", "<tag>", "</tag>", "a", "to", "in", "code", "block",
        "=\"1\"", "stream", "is", "bytes",
    ];
    let mut out = Vec::with_capacity(n + 16);
    while out.len() < n {
        out.extend_from_slice(WORDS[r.random_range(0..WORDS.len())].as_bytes());
        out.push(match r.random_range(0..20) {
            0 => b'\n',
            1 => b',',
            _ => b' ',
        });
    }
    out.truncate(n);
    out
}

/// Fibonacci frequencies over 24 symbols, shuffled: package-merge must cut lengths to 13.
fn fibonacci(r: &mut StdRng) -> Vec<u8> {
    let mut data = Vec::new();
    let (mut a, mut b) = (1usize, 1usize);
    for s in 0..24u8 {
        data.extend(std::iter::repeat_n(s * 10, a));
        (a, b) = (b, a + b);
    }
    for i in (1..data.len()).rev() {
        data.swap(i, r.random_range(0..=i));
    }
    data
}

/// Every shape at size n.
fn shapes(r: &mut StdRng, n: usize) -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("skewed", skewed(r, n, 40)),
        ("skewed-8", skewed(r, n, 8)),
        ("uniform", uniform(r, n)),
        ("single", vec![b'x'; n]),
        (
            "two",
            (0..n).map(|_| if r.random() { 3 } else { 200 }).collect(),
        ),
        ("text", texty(r, n)),
        ("wide", wide(r, n)),
    ]
}

/// Sizes around block, sub-tile and strip edges (two equiprobable symbols: 1 bit per byte,
/// so n bytes = n stream bits) and the raw / huffman threshold.
const SIZES: [usize; 22] = [
    0, 1, 2, 3, 31, 32, 33, 299, 300, 301, 4095, 4096, 4097, 8191, 8193, 12_289, 32_767, 32_768,
    32_769, 65_536, 100_003, 262_147,
];

fn gpu_encode_matches(g: &tessera_gpu::Gpu, name: &str, data: &[u8]) -> Vec<u8> {
    let want = cpu_encode(data);
    let got = ghuff::encode(g, data).expect("GPU encodes");
    if got != want {
        let first = got.iter().zip(&want).position(|(a, b)| a != b);
        panic!(
            "{name} n={}: GPU payload ({} bytes) differs from the CPU's ({} bytes), first at byte {first:?}",
            data.len(),
            got.len(),
            want.len()
        );
    }
    want
}

fn gpu_decode_matches(g: &tessera_gpu::Gpu, name: &str, payload: &[u8], data: &[u8]) {
    let mut out = vec![0xA5u8; data.len()];
    ghuff::decode(g, payload, &mut out).expect("GPU decodes");
    assert!(out == data, "{name} n={}: GPU decode differs", data.len());
}

#[test]
fn gpu_histogram_equals_the_cpu_histogram() {
    let Some(g) = gpu() else { return };
    let mut r = rng();
    for n in [
        0usize, 1, 15, 16, 17, 4095, 32_767, 32_768, 32_769, 1_000_001,
    ] {
        for (name, data) in shapes(&mut r, n) {
            let got = ghuff::histogram(g, &data).expect("GPU histogram");
            assert_eq!(got, cpu::histogram(&data), "{name} n={n}");
        }
    }
    // Over 2^24 bytes: several per-chunk histograms summed on the host.
    let big = skewed(&mut r, (1 << 24) + 12_345, 40);
    assert_eq!(
        ghuff::histogram(g, &big).expect("GPU histogram"),
        cpu::histogram(&big)
    );
}

#[test]
fn gpu_encoder_writes_the_cpu_bytes_for_every_shape_and_size() {
    let Some(g) = gpu() else { return };
    let mut r = rng();
    let mut huffman_payloads = 0;
    let mut raw_payloads = 0;
    for n in SIZES {
        for (name, data) in shapes(&mut r, n) {
            let p = gpu_encode_matches(g, name, &data);
            if is_huffman(&p) {
                huffman_payloads += 1;
            } else {
                raw_payloads += 1;
            }
            gpu_decode_matches(g, name, &p, &data);
        }
        // Two equiprobable symbols: exactly n stream bits, codes meet every block edge.
        let bits: Vec<u8> = (0..n).map(|i| (i % 2) as u8 * 9).collect();
        let p = gpu_encode_matches(g, "alternating", &bits);
        gpu_decode_matches(g, "alternating", &p, &bits);
    }
    // Both modes really occurred (uniform bytes are raw, skewed ones huffman).
    assert!(
        huffman_payloads > 20 && raw_payloads > 20,
        "{huffman_payloads} {raw_payloads}"
    );
}

#[test]
fn gpu_codec_handles_the_code_length_limit() {
    let Some(g) = gpu() else { return };
    let mut r = rng();
    let data = fibonacci(&mut r);
    let p = gpu_encode_matches(g, "fibonacci", &data);
    assert!(is_huffman(&p));
    let max_len = p[cpu::HEADER_BYTES..INFO_AT].iter().max().copied();
    assert_eq!(max_len, Some(cpu::MAX_CODE_LENGTH as u8));
    gpu_decode_matches(g, "fibonacci", &p, &data);
    // Prefixes: 13-bit codes at every offset relative to block and strip edges.
    for n in (1000..data.len()).step_by(7919) {
        let p = gpu_encode_matches(g, "fibonacci prefix", &data[..n]);
        gpu_decode_matches(g, "fibonacci prefix", &p, &data[..n]);
    }
}

#[test]
fn gpu_codec_matches_on_multi_megabyte_chunks() {
    let Some(g) = gpu() else { return };
    let mut r = rng();
    let text = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/v1/huffman/text.raw"),
    )
    .expect("testdata/v1/huffman/text.raw");
    let mut big_text = Vec::new();
    while big_text.len() < 6_000_000 {
        big_text.extend_from_slice(&text);
    }
    let cases = [
        ("text.raw repeated", big_text),
        ("skewed 5 MB", skewed(&mut r, 5_000_017, 40)),
        ("text-like 16 MiB", texty(&mut r, 1 << 24)),
        ("uniform 3 MB", uniform(&mut r, 3_000_000)),
    ];
    for (name, data) in cases {
        let p = gpu_encode_matches(g, name, &data);
        gpu_decode_matches(g, name, &p, &data);
    }
    assert!(ghuff::encode(g, &vec![0u8; (1 << 24) + 1]).is_err());
}

#[test]
fn gpu_multi_chunk_columns_match_per_chunk_cpu_payloads() {
    let Some(g) = gpu() else { return };
    let mut r = rng();
    // Chunks of different modes side by side: text, uniform (raw), single symbol, skewed.
    let mut data = texty(&mut r, 100_000);
    data.extend(uniform(&mut r, 70_000));
    data.extend(vec![b'q'; 50_000]);
    data.extend(skewed(&mut r, 123_457, 40));
    for chunk_bytes in [ghuff::STRIP_BYTES, 2 * ghuff::STRIP_BYTES, 1 << 20] {
        let want: Vec<Vec<u8>> = data.chunks(chunk_bytes).map(cpu_encode).collect();
        let got = ghuff::encode_chunks(g, &data, chunk_bytes).expect("GPU encodes");
        assert!(got == want, "chunk_bytes {chunk_bytes}");
        let refs: Vec<&[u8]> = want.iter().map(|p| p.as_slice()).collect();
        let mut out = vec![0u8; data.len()];
        ghuff::decode_chunks(g, &refs, chunk_bytes, &mut out).expect("GPU decodes");
        assert!(out == data, "chunk_bytes {chunk_bytes}");
    }
    // The device-resident path: encode, then decode from the device twice with one plan.
    let d = g.upload(&data).expect("upload");
    let mut scratch = ghuff::EncodeScratch::default();
    let enc = ghuff::encode_device(g, &d, data.len(), ghuff::STRIP_BYTES, &mut scratch)
        .expect("encode_device");
    let mut plan = ghuff::plan_decode(g, &enc).expect("plan");
    for _ in 0..2 {
        let mut d_out = g.alloc::<u8>(data.len()).expect("alloc");
        g.fill_bytes(&mut d_out, 0x5A).expect("poison");
        ghuff::decode_planned(g, &enc, &mut plan, &mut d_out).expect("decode_planned");
        let mut out = vec![0u8; data.len()];
        g.download(&d_out, &mut out).expect("download");
        assert!(out == data);
    }
    assert!(ghuff::encode_chunks(g, &data, 1000).is_err());
}

/// GPU and CPU decoders agree on `p`: same bytes, or the same error (exactly: the GPU path
/// reports the CPU decoder's error).
fn agree(g: &tessera_gpu::Gpu, what: &str, p: &[u8], n: usize) -> bool {
    let mut want = vec![0u8; n];
    let cpu_res = cpu::decode(p, &mut want);
    let mut got = vec![0u8; n];
    let gpu_res = ghuff::decode(g, p, &mut got);
    match (&cpu_res, &gpu_res) {
        (Ok(()), Ok(())) => assert!(got == want, "{what}: both accept, outputs differ"),
        (Err(a), Err(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "{what}"),
        _ => panic!("{what}: CPU {cpu_res:?}, GPU {gpu_res:?}"),
    }
    cpu_res.is_err()
}

#[test]
fn gpu_decodes_mode_1_payloads() {
    let Some(g) = gpu() else { return };
    let mut r = rng();
    // The format version 1 goldens.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/v1/huffman");
    let text = std::fs::read(dir.join("text.raw")).expect("text.raw");
    for (name, data) in [("text", text), ("single", vec![b'q'; 5000])] {
        let p = std::fs::read(dir.join(format!("{name}.huf"))).expect("v1 golden");
        assert_eq!(word(&p, 0), cpu::MODE_HUFFMAN_V1, "{name}.huf");
        gpu_decode_matches(g, name, &p, &data);
    }
    // The compatibility encoder over every shape and size.
    let mut v1 = 0;
    for n in SIZES {
        for (name, data) in shapes(&mut r, n) {
            let p = cpu_encode_v1(&data);
            v1 += (word(&p, 0) == cpu::MODE_HUFFMAN_V1) as usize;
            gpu_decode_matches(g, name, &p, &data);
        }
    }
    assert!(v1 > 20, "{v1}");
    // Mode 1, mode 2 and raw chunks in one launch.
    let data = texty(&mut r, 4 * 65_536);
    let mut payloads = Vec::new();
    for (i, c) in data.chunks(65_536).enumerate() {
        payloads.push(if i % 2 == 0 {
            cpu_encode_v1(c)
        } else {
            cpu_encode(c)
        });
    }
    let mut u = uniform(&mut r, 65_536);
    payloads.push(cpu_encode(&u));
    let mut all = data.clone();
    all.append(&mut u);
    let refs: Vec<&[u8]> = payloads.iter().map(|p| p.as_slice()).collect();
    let mut out = vec![0u8; all.len()];
    ghuff::decode_chunks(g, &refs, 65_536, &mut out).expect("GPU decodes mixed modes");
    assert!(out == all);
}

#[test]
fn gpu_encoder_writes_empty_and_full_last_blocks() {
    let Some(g) = gpu() else { return };
    let mut r = rng();
    // A last block in which no code starts (entry 0) occurs once per block edge that a code
    // straddles: search prefixes of skewed data.
    let base = skewed(&mut r, 60_000, 40);
    let mut empty = 0;
    for n in 4000..12_000 {
        let want = cpu_encode(&base[..n]);
        if is_huffman(&want) && entry(&want, blocks(&want) - 1) == 0 {
            empty += 1;
            let p = gpu_encode_matches(g, "empty last block", &base[..n]);
            gpu_decode_matches(g, "empty last block", &p, &base[..n]);
        }
    }
    assert!(empty > 0, "no prefix gave an empty last block");
    // A full last block: 4096 one-bit codes, entry 4096.
    let bits: Vec<u8> = (0..2 * 4096).map(|i| (i % 2) as u8).collect();
    let p = gpu_encode_matches(g, "full last block", &bits);
    assert_eq!(entry(&p, 1), 4096);
    gpu_decode_matches(g, "full last block", &p, &bits);
}

#[test]
fn gpu_encoder_reports_its_phase_timings() {
    let Some(g) = gpu() else { return };
    let mut r = rng();
    let data = texty(&mut r, 3 << 20);
    let d = g.upload(&data).expect("upload");
    let mut scratch = ghuff::EncodeScratch::default();
    let plain = ghuff::encode_device(g, &d, data.len(), 1 << 20, &mut scratch).expect("encodes");
    let (timed, t) = tessera_gpu::bench_hooks::huffman::encode_device_timed(
        g,
        &d,
        data.len(),
        1 << 20,
        &mut scratch,
    )
    .expect("encodes");
    assert_eq!(t.chunks, 3);
    assert!(
        t.histogram_ms > 0.0 && t.host_ms > 0.0 && t.pack_ms > 0.0,
        "{t:?}"
    );
    assert!(t.plan_ms <= t.host_ms + 1.0, "{t:?}");
    let a = ghuff::download_encoded(g, &plain).expect("download");
    let b = ghuff::download_encoded(g, &timed).expect("download");
    let want: Vec<Vec<u8>> = data.chunks(1 << 20).map(cpu_encode).collect();
    assert!(a == want && b == want);
}

/// Corruptions of every header field, code lengths and block_info entry kind, truncations and
/// random flips of `p` (a huffman payload of `n` bytes, mode 1 or 2): GPU and CPU agree.
fn corrupt_cases(g: &tessera_gpu::Gpu, r: &mut StdRng, p: &[u8], n: usize) {
    let v1 = word(p, 0) == cpu::MODE_HUFFMAN_V1;
    let tag = if v1 { "mode 1" } else { "mode 2" };
    let nb = blocks(p);
    assert!(nb > 100);
    let info = INFO_AT / 4;

    // Truncations and extensions.
    for cut in [
        1usize,
        3,
        4,
        8,
        16,
        500,
        p.len() - 16,
        p.len() - 12,
        p.len(),
    ] {
        assert!(agree(
            g,
            &format!("{tag} cut {cut}"),
            &p[..p.len() - cut],
            n
        ));
    }
    let mut longer = p.to_vec();
    longer.extend_from_slice(&[0; 4]);
    assert!(agree(g, &format!("{tag} 4 trailing bytes"), &longer, n));
    // Wrong expected size.
    assert!(agree(g, &format!("{tag} count + 1"), p, n + 1));
    // Header fields (mode 3 invalid, the other huffman mode: another payload length).
    for (i, w) in [
        (0usize, 3u32),
        (0, if v1 { 2 } else { 1 }),
        (2, 4095),
        (3, word(p, 3) + 1),
        (1, 1 << 25),
    ] {
        let mut q = p.to_vec();
        set_word(&mut q, i, w);
        assert!(agree(g, &format!("{tag} header word {i} = {w}"), &q, n));
    }
    // Code lengths: over the mode's limit, incomplete, over-full.
    let used = (0..256)
        .find(|&s| p[cpu::HEADER_BYTES + s] > 0)
        .expect("a used symbol");
    for l in [if v1 { 13u8 } else { 14 }, 0, 1] {
        let mut q = p.to_vec();
        q[cpu::HEADER_BYTES + used] = l;
        assert!(agree(g, &format!("{tag} length {l}"), &q, n));
    }
    // block_info: counts off by one (the sum then mismatches), counts moved between blocks (the
    // sum holds, the blocks' ends do not), reserved bits / padding, spills out of range, in
    // first, middle and last blocks.
    for k in [0, 1, nb / 2, nb - 2, nb - 1] {
        let last = k + 1 == nb;
        let variants: Vec<u32> = if v1 {
            let w = word(p, info + k);
            vec![
                w + 1,
                w.wrapping_sub(1),
                w | 1 << 24,
                (w & 0xFFFF) | 12 << 16,
                (w & 0xFF00_FFFF) | (((w >> 16 & 0xFF) + 1) % 12) << 16,
                4097 | (w & 0xFF_0000),
            ]
        } else {
            let e = entry(p, k);
            if last {
                vec![e + 1, e.wrapping_sub(1), 4097, 0xFFFF, e | 1 << 12]
            } else {
                vec![
                    e + 1,
                    e.wrapping_sub(1),
                    (e & 0xFFF) | 13 << 12,
                    (e & 0xFFF) | 15 << 12,
                    (e & 0xFFF) | (((e >> 12) + 1) % 13) << 12,
                ]
            }
        };
        for (v, bad) in variants.into_iter().enumerate() {
            let mut q = p.to_vec();
            if v1 {
                set_word(&mut q, info + k, bad);
            } else {
                set_entry(&mut q, k, bad);
            }
            agree(g, &format!("{tag} block_info {k} variant {v}"), &q, n);
        }
        if k + 1 < nb {
            let mut q = p.to_vec();
            if v1 {
                set_word(&mut q, info + k, word(p, info + k) + 1);
                set_word(&mut q, info + k + 1, word(p, info + k + 1).wrapping_sub(1));
            } else {
                set_entry(&mut q, k, entry(p, k) + 1);
                set_entry(&mut q, k + 1, entry(p, k + 1).wrapping_sub(1));
            }
            assert!(agree(
                g,
                &format!("{tag} block_info {k} count moved"),
                &q,
                n
            ));
        }
    }
    if !v1 && nb % 2 == 1 {
        let mut q = p.to_vec();
        set_entry(&mut q, nb, 1);
        assert!(agree(g, "mode 2 padding entry", &q, n));
    }
    // Random byte flips anywhere past the header: every outcome (some decode!) must agree.
    let mut failures = 0;
    for i in 0..300 {
        let mut q = p.to_vec();
        for _ in 0..r.random_range(1..4) {
            let at = r.random_range(cpu::HEADER_BYTES..q.len());
            q[at] ^= 1 << r.random_range(0..8);
        }
        failures += agree(g, &format!("{tag} flip {i}"), &q, n) as usize;
    }
    // Huffman has no check bits of its own (the container's xxh3 catches corruption), so many
    // flips decode to other bytes; both outcomes must occur. Mode 2 rejects fewer flips than
    // mode 1: its block_info has no reserved bits that must be zero.
    assert!(
        (10..300).contains(&failures),
        "{tag}: {failures} of 300 flips were detected"
    );
    // Stream bit flips only (tables intact): exercises the kernels' code and end checks.
    let at0 = stream_at(p);
    for i in 0..200 {
        let mut q = p.to_vec();
        let at = r.random_range(at0..q.len());
        q[at] ^= 1 << r.random_range(0..8);
        agree(g, &format!("{tag} stream flip {i}"), &q, n);
    }
}

#[test]
fn corrupt_payloads_give_the_cpu_decoders_errors() {
    let Some(g) = gpu() else { return };
    let mut r = rng();
    let data = texty(&mut r, 300_000);
    let p = cpu_encode(&data);
    assert!(is_huffman(&p));
    corrupt_cases(g, &mut r, &p, data.len());
    // Odd block count (a padding entry) and 13-bit codes.
    let data = wide(&mut r, 600_000);
    let p = (0..64)
        .map(|d| cpu_encode(&data[..data.len() - d * 97]))
        .find(|p| blocks(p) % 2 == 1)
        .expect("an odd block count");
    let n = word(&p, 1) as usize;
    corrupt_cases(g, &mut r, &p, n);
    let p = cpu_encode_v1(&texty(&mut r, 300_000));
    corrupt_cases(g, &mut r, &p, 300_000);
}

#[test]
fn corrupt_single_symbol_streams_report_invalid_codes() {
    let Some(g) = gpu() else { return };
    // One used symbol: code 0 of length 1; a 1 bit is no code (InvalidCode).
    let data = vec![b'z'; 50_000];
    for p in [cpu_encode(&data), cpu_encode_v1(&data)] {
        assert_ne!(word(&p, 0), cpu::MODE_RAW);
        let at0 = stream_at(&p);
        for at in [at0, at0 + 600] {
            let mut q = p.clone();
            q[at] |= 0x10;
            assert!(agree(g, &format!("bit set at {at}"), &q, data.len()));
        }
        // The last byte may hold only bits past `stream_bits`, which no decoder reads: both
        // accept.
        let mut q = p.clone();
        let last = q.len() - 1;
        q[last] |= 0x10;
        agree(g, "bit set in the last byte", &q, data.len());
        // The multi-chunk path reports the first corrupt chunk's error.
        let mut q = p.clone();
        q[at0 + 10] = 0xFF;
        let payloads: Vec<&[u8]> = vec![&p, &q, &p];
        let mut out = vec![0u8; 3 * data.len()];
        let e = ghuff::decode_chunks(g, &payloads, data.len(), &mut out).expect_err("corrupt");
        let mut scratch = vec![0u8; data.len()];
        let want = cpu::decode(&q, &mut scratch).expect_err("corrupt");
        assert_eq!(format!("{e:?}"), format!("{want:?}"));
    }
}
