//! GPU canonical Huffman against the CPU codec (`tessera_codecs::huffman`): the histogram
//! equals the CPU's, the GPU encoder writes the CPU encoder's bytes (raw-mode choice and header
//! included), the GPU decoder gives the CPU decoder's bytes, and corrupt payloads give the CPU
//! decoder's exact error. Every input shape, sizes around 4096-bit block edges, segment (32 KiB)
//! and sub-tile (4 KiB) edges, multi-chunk columns and multi-megabyte chunks. Skips (printing
//! why) without a GPU unless TESSERA_REQUIRE_GPU=1.

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

/// Fibonacci frequencies over 24 symbols, shuffled: package-merge must cut lengths to 12.
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
    ]
}

/// Sizes around block, sub-tile and segment edges (two equiprobable symbols: 1 bit per byte,
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
    // Prefixes: 12-bit codes at every offset relative to block and segment edges.
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
    for chunk_bytes in [ghuff::SEG_BYTES, 2 * ghuff::SEG_BYTES, 1 << 20] {
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
    let enc = ghuff::encode_device(g, &d, data.len(), ghuff::SEG_BYTES, &mut scratch)
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
fn corrupt_payloads_give_the_cpu_decoders_errors() {
    let Some(g) = gpu() else { return };
    let mut r = rng();
    let data = texty(&mut r, 300_000);
    let p = cpu_encode(&data);
    assert!(is_huffman(&p));
    let n = data.len();
    let blocks = (word(&p, 3) as usize).div_ceil(cpu::BLOCK_BITS as usize);
    assert!(blocks > 100);
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
        assert!(agree(g, &format!("cut {cut}"), &p[..p.len() - cut], n));
    }
    let mut longer = p.clone();
    longer.extend_from_slice(&[0; 4]);
    assert!(agree(g, "4 trailing bytes", &longer, n));
    // Wrong expected size.
    assert!(agree(g, "count + 1", &p, n + 1));
    // Header fields.
    for (i, w) in [
        (0usize, 2u32),
        (2, 4095),
        (3, word(&p, 3) + 1),
        (1, 1 << 25),
    ] {
        let mut q = p.clone();
        set_word(&mut q, i, w);
        assert!(agree(g, &format!("header word {i} = {w}"), &q, n));
    }
    // Code lengths: over the limit, incomplete, over-full.
    let used = (0..256)
        .find(|&s| p[cpu::HEADER_BYTES + s] > 0)
        .expect("a used symbol");
    for l in [13u8, 0, 1] {
        let mut q = p.clone();
        q[cpu::HEADER_BYTES + used] = l;
        assert!(agree(g, &format!("length {l}"), &q, n));
    }
    // block_info: counts off by one (the sum then mismatches), counts moved between blocks (the
    // sum holds, the blocks' ends do not), reserved bits, spills out of range, in first, middle
    // and last blocks.
    for k in [0, 1, blocks / 2, blocks - 2, blocks - 1] {
        let w = word(&p, info + k);
        let variants = [
            w + 1,
            w - 1,
            w | 1 << 24,
            (w & 0xFFFF) | 12 << 16,
            (w & 0xFF00_FFFF) | (((w >> 16 & 0xFF) + 1) % 12) << 16,
            4097 | (w & 0xFF_0000),
        ];
        for (v, bad) in variants.into_iter().enumerate() {
            let mut q = p.clone();
            set_word(&mut q, info + k, bad);
            assert!(agree(g, &format!("block_info {k} variant {v}"), &q, n));
        }
        if k + 1 < blocks {
            let mut q = p.clone();
            set_word(&mut q, info + k, word(&p, info + k) + 1);
            set_word(&mut q, info + k + 1, word(&p, info + k + 1) - 1);
            assert!(agree(g, &format!("block_info {k} count moved"), &q, n));
        }
    }
    // Random byte flips anywhere past the header: every outcome (some decode!) must agree.
    let mut failures = 0;
    for i in 0..300 {
        let mut q = p.clone();
        for _ in 0..r.random_range(1..4) {
            let at = r.random_range(cpu::HEADER_BYTES..q.len());
            q[at] ^= 1 << r.random_range(0..8);
        }
        failures += agree(g, &format!("flip {i}"), &q, n) as usize;
    }
    assert!(failures > 50, "only {failures} of 300 flips were detected");
    // Stream bit flips only (tables intact): exercises the kernels' code and end checks.
    let stream_at = INFO_AT + 4 * blocks;
    for i in 0..200 {
        let mut q = p.clone();
        let at = r.random_range(stream_at..q.len());
        q[at] ^= 1 << r.random_range(0..8);
        agree(g, &format!("stream flip {i}"), &q, n);
    }
}

#[test]
fn corrupt_single_symbol_streams_report_invalid_codes() {
    let Some(g) = gpu() else { return };
    // One used symbol: code 0 of length 1; a 1 bit is no code (InvalidCode).
    let data = vec![b'z'; 50_000];
    let p = cpu_encode(&data);
    assert!(is_huffman(&p));
    let blocks = (word(&p, 3) as usize).div_ceil(cpu::BLOCK_BITS as usize);
    let stream_at = INFO_AT + 4 * blocks;
    for at in [stream_at, stream_at + 600] {
        let mut q = p.clone();
        q[at] |= 0x10;
        assert!(agree(g, &format!("bit set at {at}"), &q, data.len()));
    }
    // The last byte may hold only bits past `stream_bits`, which no decoder reads: both accept.
    let mut q = p.clone();
    let last = q.len() - 1;
    q[last] |= 0x10;
    agree(g, "bit set in the last byte", &q, data.len());
    // The multi-chunk path reports the first corrupt chunk's error.
    let mut q = p.clone();
    q[stream_at + 10] = 0xFF;
    let payloads: Vec<&[u8]> = vec![&p, &q, &p];
    let mut out = vec![0u8; 3 * data.len()];
    let e = ghuff::decode_chunks(g, &payloads, data.len(), &mut out).expect_err("corrupt");
    let mut scratch = vec![0u8; data.len()];
    let want = cpu::decode(&q, &mut scratch).expect_err("corrupt");
    assert_eq!(format!("{e:?}"), format!("{want:?}"));
}
