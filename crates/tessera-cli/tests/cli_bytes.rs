//! End-to-end tests of the format 1.1 parts of the `tessera` binary: bytes, bits and utf8
//! columns round trip byte for byte through `compress` / `decompress` with every codec (on the
//! default device, so the GPU decoders when the bundled tests run on the GPU machine);
//! `bitmap and|or|xor|andnot` equals the plain bitwise result; `index build|query` equals a
//! scan; bad input fails with one `error:` line.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use common::{fails, ok, tessera};

use std::path::Path;

/// xorshift, so the data differ run to run only by the seed printed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn rng() -> Rng {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("seed {seed}");
    Rng(seed)
}

/// `n` bytes of lines of a 13-letter alphabet, one byte in 997 with its low bit flipped (still
/// ASCII, so also a valid utf8 column).
fn text_like(r: &mut Rng, n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| b"etaoin shrdlu\n"[(r.next() % 14) as usize] ^ (i % 997 == 0) as u8)
        .collect()
}

fn round_trip(dir: &Path, ty: &str, codec: &str, input: &[u8], extra: &[&str]) {
    let src = dir.join(format!("in-{ty}-{codec}"));
    let tsr = dir.join(format!("{ty}-{codec}.tsr"));
    let back = dir.join(format!("back-{ty}-{codec}"));
    std::fs::write(&src, input).unwrap();
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
        vec![&"compress", &"--type", &ty, &"--codec", &codec];
    for e in extra {
        args.push(e);
    }
    args.push(&src);
    args.push(&tsr);
    ok(&tessera(&args));
    ok(&tessera(&[&"decompress", &tsr, &back]));
    assert!(
        std::fs::read(&back).unwrap() == input,
        "{ty} {codec}: output differs from input ({} bytes)",
        input.len()
    );
}

#[test]
fn bytes_columns_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = rng();
    let text = text_like(&mut r, 300_000);
    let random: Vec<u8> = (0..70_000).map(|_| r.next() as u8).collect();
    for codec in ["auto", "plain", "huffman", "lll"] {
        for (i, data) in [
            &text[..],
            &random[..],
            &[][..],
            &[7u8][..],
            &vec![0u8; 40_000][..],
        ]
        .iter()
        .enumerate()
        {
            let d = dir.path().join(format!("{i}"));
            std::fs::create_dir_all(&d).unwrap();
            // Small chunks so files hold several, the last one short.
            round_trip(&d, "bytes", codec, data, &["--chunk-values", "65536"]);
        }
    }
}

/// `--segment-bytes` reaches the LLL payloads of bytes and utf8 columns (the first word of each
/// LLL payload is its segment size, `lll.md` §2) and they round trip; it is refused where it
/// does not apply.
#[test]
fn lll_segment_bytes_reach_the_payloads() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = rng();
    let text = text_like(&mut r, 200_000);
    for (ty, sb) in [
        ("bytes", 4096u32),
        ("bytes", 1024),
        ("utf8", 2048),
        ("bytes", 512),
    ] {
        let d = dir.path().join(format!("{ty}-{sb}"));
        std::fs::create_dir_all(&d).unwrap();
        let sbs = sb.to_string();
        let extra = ["--segment-bytes", sbs.as_str(), "--chunk-values", "8192"];
        round_trip(&d, ty, "lll", &text, &extra);
        let c =
            tessera_format::container::Container::open(d.join(format!("{ty}-lll.tsr"))).unwrap();
        let chunks = c.columns()[0].chunks.len();
        assert!(chunks > 1, "{ty} {sb}: {chunks} chunks");
        for k in 0..chunks {
            let p = c.chunk_payload(0, k).unwrap();
            // A utf8 chunk: offsets length, text length, offsets, then the text's payload.
            let at = if ty == "utf8" {
                8 + u32::from_le_bytes(p[..4].try_into().unwrap()) as usize
            } else {
                0
            };
            let word = u32::from_le_bytes(p[at..at + 4].try_into().unwrap());
            assert_eq!(word, sb, "{ty} chunk {k}");
        }
    }
    let src = dir.path().join("in");
    std::fs::write(&src, &text).unwrap();
    let tsr = dir.path().join("x.tsr");
    for (args, what) in [
        (
            vec!["--type", "bytes", "--segment-bytes", "300"],
            "300 bytes",
        ),
        (
            vec!["--type", "u32", "--segment-bytes", "4096"],
            "an integer column",
        ),
        (
            vec![
                "--type",
                "bytes",
                "--codec",
                "huffman",
                "--segment-bytes",
                "4096",
            ],
            "huffman",
        ),
    ] {
        let mut a: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"compress"];
        for x in &args {
            a.push(x);
        }
        a.push(&src);
        a.push(&tsr);
        let err = fails(&tessera(&a), what);
        assert!(err.contains("--segment-bytes"), "{what}: {err}");
        assert!(!tsr.exists(), "{what}: an output was written");
    }
}

/// `--lll-parse fast-decode` reaches the LLL encoder: each chunk's payload is, byte for byte,
/// `lll::encode_with` of the chunk under that parse (and not the smallest parse's payload);
/// utf8 round trips with it; it is refused where it does not apply.
#[test]
fn lll_parse_reaches_the_encoder() {
    use tessera_codecs::lll;
    let dir = tempfile::tempdir().unwrap();
    let mut r = rng();
    let text = text_like(&mut r, 100_000);
    let extra = ["--lll-parse", "fast-decode", "--chunk-values", "32768"];
    round_trip(dir.path(), "bytes", "lll", &text, &extra);
    round_trip(dir.path(), "utf8", "lll", &text, &extra);
    let c = tessera_format::container::Container::open(dir.path().join("bytes-lll.tsr")).unwrap();
    let chunks = c.columns()[0].chunks.len();
    assert_eq!(chunks, text.len().div_ceil(32768));
    let fast = lll::EncodeOptions {
        parse: lll::Parse::FastDecode,
        ..lll::EncodeOptions::default()
    };
    let mut differs = false;
    for (k, raw) in text.chunks(32768).enumerate() {
        let (mut want, mut smallest) = (Vec::new(), Vec::new());
        lll::encode_with(raw, &mut want, &fast).unwrap();
        lll::encode(raw, &mut smallest).unwrap();
        assert!(c.chunk_payload(0, k).unwrap() == want, "chunk {k}");
        differs |= want != smallest;
    }
    assert!(differs, "the parses wrote the same payloads");
    let src = dir.path().join("in");
    std::fs::write(&src, &text).unwrap();
    let tsr = dir.path().join("x.tsr");
    for (args, what) in [
        (vec!["--type", "u32"], "an integer column"),
        (vec!["--type", "bytes", "--codec", "huffman"], "huffman"),
        (
            vec!["--type", "bytes", "--lll-parse", "fastest"],
            "an unknown parse",
        ),
    ] {
        let mut a: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"compress"];
        for x in &args {
            a.push(x);
        }
        if !args.contains(&"--lll-parse") {
            a.push(&"--lll-parse");
            a.push(&"fast-decode");
        }
        a.push(&src);
        a.push(&tsr);
        let o = tessera(&a);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!o.status.success(), "{what}: {err}");
        assert!(err.contains("lll-parse"), "{what}: {err}");
        assert!(!tsr.exists(), "{what}: an output was written");
    }
}

#[test]
fn bits_columns_round_trip_with_exact_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = rng();
    for bits in [0u64, 1, 31, 62, 1000, 99_999, 300_001] {
        let mut packed = vec![0u8; bits.div_ceil(8) as usize];
        for i in 0..bits {
            if r.next() % 23 == 0 || (i / 5000) % 3 == 1 {
                packed[(i / 8) as usize] |= 1 << (i % 8);
            }
        }
        for codec in ["auto", "plain", "wah", "plwah"] {
            let d = dir.path().join(format!("{bits}"));
            std::fs::create_dir_all(&d).unwrap();
            let n = bits.to_string();
            round_trip(
                &d,
                "bits",
                codec,
                &packed,
                &["--bits", &n, "--chunk-values", "131072"],
            );
        }
    }
    // A set padding bit would be lost: refused.
    let src = dir.path().join("pad");
    std::fs::write(&src, [0xffu8]).unwrap();
    fails(
        &tessera(&[
            &"compress",
            &"--type",
            &"bits",
            &"--bits",
            &"5",
            &src,
            &dir.path().join("x.tsr"),
        ]),
        "padding bit set",
    );
    fails(
        &tessera(&[
            &"compress",
            &"--type",
            &"bits",
            &"--bits",
            &"100",
            &src,
            &dir.path().join("x.tsr"),
        ]),
        "length mismatch",
    );
    fails(
        &tessera(&[
            &"compress",
            &"--type",
            &"bits",
            &"--codec",
            &"lll",
            &src,
            &dir.path().join("x.tsr"),
        ]),
        "codec of another type",
    );
    assert!(!dir.path().join("x.tsr").exists());
}

#[test]
fn utf8_columns_restore_the_input_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = rng();
    let mut lines = String::new();
    for i in 0..50_000 {
        let words = r.next() % 6;
        for w in 0..words {
            if w > 0 {
                lines.push(' ');
            }
            lines.push_str(["tile", "segment", "strip", "éte", "列", ""][(r.next() % 6) as usize]);
        }
        lines.push_str(if i % 7 == 0 { "\r\n" } else { "\n" });
    }
    let cases: Vec<Vec<u8>> = vec![
        lines.clone().into_bytes(),
        lines.trim_end().as_bytes().to_vec(), // no final line feed
        Vec::new(),
        b"\n".to_vec(),
        b"\n\n\nx".to_vec(),
        b"one".to_vec(),
    ];
    for codec in ["auto", "plain", "huffman", "lll"] {
        for (i, c) in cases.iter().enumerate() {
            let d = dir.path().join(format!("{i}"));
            std::fs::create_dir_all(&d).unwrap();
            round_trip(&d, "utf8", codec, c, &["--chunk-values", "4096"]);
        }
    }
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, b"fine\n\xff\xfe\n").unwrap();
    let err = fails(
        &tessera(&[
            &"compress",
            &"--type",
            &"utf8",
            &bad,
            &dir.path().join("b.tsr"),
        ]),
        "not UTF-8",
    );
    assert!(err.contains("line 2"), "{err}");
}

fn packed(bits: &[bool]) -> Vec<u8> {
    let mut out = vec![0u8; bits.len().div_ceil(8)];
    for (i, &b) in bits.iter().enumerate() {
        out[i / 8] |= (b as u8) << (i % 8);
    }
    out
}

#[test]
fn bitmap_ops_equal_plain_bitwise_results() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = rng();
    let n = 400_000usize;
    let a: Vec<bool> = (0..n)
        .map(|i| (i / 3000) % 2 == 0 || r.next() % 50 == 0)
        .collect();
    let b: Vec<bool> = (0..n)
        .map(|i| (i / 7000) % 3 == 0 || r.next() % 9 == 0)
        .collect();
    let (pa, pb) = (dir.path().join("a.bin"), dir.path().join("b.bin"));
    std::fs::write(&pa, packed(&a)).unwrap();
    std::fs::write(&pb, packed(&b)).unwrap();
    let (ta, tb) = (dir.path().join("a.tsr"), dir.path().join("b.tsr"));
    ok(&tessera(&[
        &"compress",
        &"--type",
        &"bits",
        &"--codec",
        &"wah",
        &"--chunk-values",
        &"131072",
        &pa,
        &ta,
    ]));
    ok(&tessera(&[
        &"compress",
        &"--type",
        &"bits",
        &"--codec",
        &"plwah",
        &"--chunk-values",
        &"131072",
        &pb,
        &tb,
    ]));
    for (op, f) in [
        ("and", (|x, y| x && y) as fn(bool, bool) -> bool),
        ("or", |x, y| x || y),
        ("xor", |x, y| x ^ y),
        ("andnot", |x, y| x && !y),
    ] {
        let out = dir.path().join(format!("{op}.tsr"));
        let raw = dir.path().join(format!("{op}.bin"));
        ok(&tessera(&[&"bitmap", &op, &ta, &tb, &out]));
        ok(&tessera(&[&"decompress", &out, &raw]));
        let want: Vec<bool> = a.iter().zip(&b).map(|(&x, &y)| f(x, y)).collect();
        assert!(std::fs::read(&raw).unwrap() == packed(&want), "{op}");
    }
    // Different lengths: refused.
    let short = dir.path().join("s.bin");
    std::fs::write(&short, packed(&a[..1000])).unwrap();
    let ts = dir.path().join("s.tsr");
    ok(&tessera(&[&"compress", &"--type", &"bits", &short, &ts]));
    fails(
        &tessera(&[&"bitmap", &"and", &ta, &ts, &dir.path().join("z.tsr")]),
        "lengths differ",
    );
}

#[test]
fn index_queries_equal_a_scan() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = rng();
    let n = 120_000;
    let a: Vec<i16> = (0..n).map(|_| (r.next() % 61) as i16 - 30).collect();
    let b: Vec<u32> = (0..n).map(|_| (r.next() % 1_000_000) as u32).collect();
    let (pa, pb) = (dir.path().join("a.i16"), dir.path().join("b.u32"));
    std::fs::write(
        &pa,
        a.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
    )
    .unwrap();
    std::fs::write(
        &pb,
        b.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
    )
    .unwrap();
    let (ta, tb, ix) = (
        dir.path().join("a.tsr"),
        dir.path().join("b.tsr"),
        dir.path().join("ix.tsr"),
    );
    ok(&tessera(&[&"compress", &"--type", &"i16", &pa, &ta]));
    ok(&tessera(&[&"compress", &"--type", &"u32", &pb, &tb]));
    ok(&tessera(&[
        &"index",
        &"build",
        &"--column",
        &ta,
        &"--column",
        &tb,
        &ix,
    ]));
    let out = ok(&tessera(&[
        &"index",
        &"query",
        &ix,
        &"--in",
        &"a=-3,0,7,99",
        &"--range",
        &"b=1000..400000",
        &"--ids",
    ]));
    let want: Vec<usize> = (0..n)
        .filter(|&i| [-3, 0, 7].contains(&a[i]) && (1000..=400_000).contains(&b[i]))
        .collect();
    let mut lines = out.lines();
    assert_eq!(
        lines.next().unwrap().split(' ').next().unwrap(),
        want.len().to_string()
    );
    let got: Vec<usize> = lines.map(|l| l.parse().unwrap()).collect();
    assert_eq!(got, want);
    fails(
        &tessera(&[&"index", &"query", &ix, &"--in", &"3"]),
        "several columns, no name",
    );
    fails(
        &tessera(&[&"index", &"query", &ix, &"--range", &"a=1..x"]),
        "bad range",
    );
    fails(
        &tessera(&[&"index", &"query", &ta, &"--in", &"3"]),
        "not an index",
    );
}
