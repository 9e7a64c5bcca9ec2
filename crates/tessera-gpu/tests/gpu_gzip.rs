//! One large Deflate stream / single-member gzip file decoded on the GPU in spans
//! (`tessera_gpu::codag::spans`): the output equals the sequential CPU inflate at levels 1, 6
//! and 9 and several span sizes (with more than 3 spans chained), over stored blocks and over
//! long back-references that reach into the window before a span; corrupted and truncated
//! streams never give an output other than the CPU's (the span decoder declines, and the
//! caller's sequential decode gives the CPU's error). GPU tests skip with a printed reason
//! without a GPU (TESSERA_REQUIRE_GPU=1 makes that a failure).

use rand::rngs::StdRng;
use rand::{Rng, RngCore};
use tessera_codecs::deflate as cpu;
use tessera_gpu::codag::{self, spans};

mod common;
use common::{gpu, gzip_member, rng};

/// Word text with numbers and a little binary noise.
fn text(rng: &mut StdRng, n: usize) -> Vec<u8> {
    const WORDS: [&str; 12] = [
        "tessera ", "span ", "block ", "GPU ", "warp ", "deflate ", "the ", "of ", "window ",
        "marker ", "chain ", "\n",
    ];
    let mut v = Vec::with_capacity(n + 16);
    while v.len() < n {
        match rng.random_range(0..12) {
            0 => v.extend(rng.random_range(0u32..100_000).to_string().bytes()),
            1 => v.extend((0..rng.random_range(1..6)).map(|_| rng.random::<u8>())),
            _ => v.extend_from_slice(WORDS[rng.random_range(0..WORDS.len())].as_bytes()),
        }
    }
    v.truncate(n);
    v
}

/// Decodes `z` in spans and checks it against the sequential inflate; the chain's length.
fn check_equal(gpu: &tessera_gpu::Gpu, z: &[u8], data: &[u8], span: usize, what: &str) -> usize {
    let mut padded = z.to_vec();
    padded.extend_from_slice(b"trailer!");
    let (out, used, report) = spans::inflate_spans(gpu, &padded, data.len() + 10, span)
        .expect("launch")
        .unwrap_or_else(|| panic!("{what}, spans of {span}: declined"));
    assert!(out == data, "{what}, spans of {span}: output differs");
    assert_eq!(used, z.len(), "{what}, spans of {span}: input used");
    let (seq, seq_used) = cpu::inflate(&padded, data.len() + 10).expect("cpu");
    assert!(seq == out && seq_used == used);
    report.chain
}

#[test]
fn spans_equal_sequential_inflate_at_every_level_and_span_size() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let data = text(&mut rng, 3_000_000);
    for level in [1u8, 6, 9] {
        let z = miniz_oxide::deflate::compress_to_vec(&data, level);
        for span in [16 << 10, 64 << 10, 256 << 10] {
            let chain = check_equal(gpu, &z, &data, span, &format!("level {level}"));
            if span <= 64 << 10 {
                assert!(chain > 3, "level {level}, spans of {span}: {chain} spans");
            }
        }
    }
    // Tiny streams: one span.
    for n in [0usize, 1, 1000] {
        let d = text(&mut rng, n);
        let z = miniz_oxide::deflate::compress_to_vec(&d, 6);
        assert_eq!(check_equal(gpu, &z, &d, 1024, "tiny"), 1);
    }
}

#[test]
fn stored_blocks_and_long_matches_into_the_window() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    // Incompressible stretches (stored blocks) between text (dynamic blocks).
    let mut data = Vec::new();
    for _ in 0..6 {
        let mut noise = vec![0u8; 120_000];
        rng.fill_bytes(&mut noise);
        data.extend(noise);
        data.extend(text(&mut rng, 250_000));
    }
    for level in [1u8, 6] {
        let z = miniz_oxide::deflate::compress_to_vec(&data, level);
        let chain = check_equal(gpu, &z, &data, 32 << 10, "stored blocks");
        assert!(chain > 3, "stored blocks, level {level}: {chain} spans");
    }
    // Level 0: stored blocks only (no block candidate: one span).
    let z = miniz_oxide::deflate::compress_to_vec(&data[..300_000], 0);
    check_equal(gpu, &z, &data[..300_000], 32 << 10, "level 0");
    // Text in which most stretches repeat a long piece from 8-32 KiB back: matches of up to 258
    // bytes at long distances everywhere, so spans start inside runs of long matches whose
    // source lies before the span (markers, some overlapping the span's first bytes).
    let mut data = text(&mut rng, 40_000);
    while data.len() < 4_000_000 {
        if rng.random_range(0..2) == 0 {
            let n = rng.random_range(1..500);
            data.extend(text(&mut rng, n));
        } else {
            let back = rng.random_range(8_000..32_000).min(data.len());
            let len = rng.random_range(300..3_000);
            for _ in 0..len {
                data.push(data[data.len() - back]);
            }
        }
    }
    for level in [1u8, 9] {
        let z = miniz_oxide::deflate::compress_to_vec(&data, level);
        let chain = check_equal(gpu, &z, &data, 8 << 10, "long matches");
        // Level 9 puts this data in a few large blocks: at least one span after the first,
        // whose matches into the window before it are markers.
        assert!(chain > 1, "long matches, level {level}: {chain} spans");
    }
}

#[test]
fn corrupted_and_truncated_streams_give_the_cpus_outcome() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let data = text(&mut rng, 1_500_000);
    let z = miniz_oxide::deflate::compress_to_vec(&data, 6);
    let file = gzip_member(&data, 6, "");
    let mut declined = 0;
    for round in 0..24 {
        let (mut c, mut f) = (z.clone(), file.clone());
        let i = rng.random_range(0..c.len());
        match round % 3 {
            0 => {
                c[i] ^= 1 << rng.random_range(0..8);
                f[10 + i] ^= 1 << rng.random_range(0..8);
            }
            1 => {
                c.truncate(i);
                f.truncate(10 + i);
            }
            _ => {
                c[i] = rng.random();
                f[10 + i] = c[i];
            }
        }
        // Raw stream: whatever the span decoder accepts is exactly the sequential output.
        let seq = cpu::inflate(&c, 1 << 24);
        match spans::inflate_spans(gpu, &c, 1 << 24, 16 << 10).expect("launch") {
            Some((out, used, _)) => {
                let (s, su) =
                    seq.unwrap_or_else(|e| panic!("round {round}: GPU accepts, CPU: {e}"));
                assert!(out == s && used == su, "round {round}: outputs differ");
            }
            None => declined += 1,
        }
        // gzip file: an output only when the CPU gives the same one; otherwise declined (the
        // caller's CPU decode then gives the error).
        let cpu_file = cpu::gzip_decompress(&f, 1 << 24);
        if let Some((out, _)) = codag::gunzip_single(gpu, &f, 16 << 10).expect("launch") {
            assert!(
                cpu_file.ok() == Some(out),
                "round {round}: gzip outputs differ"
            );
        }
    }
    assert!(declined > 0, "no corruption was noticed");
}

#[test]
fn gunzip_decodes_a_single_member_in_spans() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let data = text(&mut rng, 6_000_000);
    let file = gzip_member(&data, 6, "");
    assert!(file.len() >= codag::SPAN_MIN_BYTES, "{} bytes", file.len());
    let (out, report) = codag::gunzip(gpu, &file)
        .expect("gunzip")
        .expect("on the GPU");
    assert!(out == data);
    assert_eq!(report.members, 1);
    assert!(report.spans > 3, "{} spans", report.spans);
    // Span by span with the reporting function.
    let (out, r) = codag::gunzip_single(gpu, &file, 64 << 10)
        .expect("launch")
        .expect("one member");
    assert!(out == data && r.chain > 3 && r.launches >= 1);
    // Two members over the size threshold: not a single member, decoded member by member.
    let mut two = gzip_member(&data[..2_000_000], 6, "");
    two.extend(gzip_member(&data[2_000_000..], 9, ""));
    assert!(codag::gunzip_single(gpu, &two, 64 << 10)
        .expect("launch")
        .is_none());
    let (out, report) = codag::gunzip(gpu, &two)
        .expect("gunzip")
        .expect("on the GPU");
    assert!(out == data);
    assert_eq!((report.members, report.spans), (2, 0));
    // A bad CRC-32: declined by the span path, then the members' path gives the CPU's error.
    let mut bad = file.clone();
    let at = bad.len() - 8;
    bad[at] ^= 1;
    assert!(codag::gunzip_single(gpu, &bad, 64 << 10)
        .expect("launch")
        .is_none());
    assert!(cpu::gzip_decompress(&bad, 1 << 26).is_err());
}

/// The block type (0 stored, 1 fixed, 2 dynamic) of the first Deflate block of a gzip member
/// with a plain 10-byte header.
fn first_block_type(member: &[u8]) -> u8 {
    (member[10] >> 1) & 3
}

/// A gzip member whose header has every optional field (FTEXT, FHCRC, FEXTRA, FNAME,
/// FCOMMENT) around a Deflate stream at `level`.
fn member_with_every_field(data: &[u8], level: u8) -> Vec<u8> {
    let mut m = vec![0x1f, 0x8b, 8, 1 | 2 | 4 | 8 | 16, 0, 0, 0, 0, 0, 3];
    m.extend_from_slice(&5u16.to_le_bytes());
    m.extend_from_slice(b"xtra!");
    m.extend_from_slice(b"name.txt\0a comment\0");
    let hcrc = common::crc32_of(&m) as u16;
    m.extend_from_slice(&hcrc.to_le_bytes());
    m.extend(miniz_oxide::deflate::compress_to_vec(data, level));
    m.extend_from_slice(&common::crc32_of(data).to_le_bytes());
    m.extend_from_slice(&(data.len() as u32).to_le_bytes());
    m
}

/// A gzip member around `deflate` (raw Deflate bytes) with the given CRC-32 and ISIZE.
fn member_around(deflate: &[u8], crc: u32, isize: u32) -> Vec<u8> {
    let mut m = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    m.extend_from_slice(deflate);
    m.extend_from_slice(&crc.to_le_bytes());
    m.extend_from_slice(&isize.to_le_bytes());
    m
}

/// A good file: its name, bytes and member count.
type GoodFile = (String, Vec<u8>, usize);
/// A hostile file: its name and bytes.
type BadFile = (String, Vec<u8>);

/// Files for `gunzip_many`: good ones of every block type and header form (with their member
/// counts), then hostile ones.
fn many_files(rng: &mut StdRng) -> (Vec<GoodFile>, Vec<BadFile>) {
    let mut good = Vec::new();
    good.push(("empty member".to_string(), gzip_member(&[], 6, ""), 1));
    let short = b"a short line of text, a short line of text.\n";
    let fixed = gzip_member(short, 6, "");
    assert_eq!(first_block_type(&fixed), 1, "a fixed Huffman block");
    good.push(("fixed Huffman".into(), fixed, 1));
    let mut noise = vec![0u8; 70_000];
    rng.fill_bytes(&mut noise);
    let stored = gzip_member(&noise, 0, "");
    assert_eq!(first_block_type(&stored), 0, "a stored block");
    good.push(("stored blocks".into(), stored, 1));
    for (k, n) in [1usize, 1000, 200_000, 900_000].into_iter().enumerate() {
        let d = text(rng, n);
        let m = gzip_member(&d, [1u8, 6, 9, 6][k], "");
        if n >= 1000 {
            assert_eq!(first_block_type(&m), 2, "a dynamic Huffman block");
        }
        good.push((format!("dynamic Huffman, {n} bytes"), m, 1));
    }
    good.push((
        "every header field".into(),
        member_with_every_field(&text(rng, 50_000), 6),
        1,
    ));
    let mut multi = Vec::new();
    for k in 0..7 {
        multi.extend(gzip_member(
            &text(rng, 3000 * k),
            [0u8, 1, 6, 9][k % 4],
            "part",
        ));
    }
    good.push(("7 members".into(), multi, 7));
    let mut mixed = gzip_member(&noise[..5000], 0, "");
    mixed.extend(gzip_member(short, 6, ""));
    mixed.extend(gzip_member(&[], 6, ""));
    mixed.extend(member_with_every_field(&text(rng, 20_000), 9));
    good.push(("stored, fixed, empty and dynamic members".into(), mixed, 4));

    let d = text(rng, 300_000);
    let z = miniz_oxide::deflate::compress_to_vec(&d, 6);
    let crc = common::crc32_of(&d);
    let n = d.len() as u32;
    let whole = member_around(&z, crc, n);
    let mut bad = vec![
        ("empty file".to_string(), Vec::new()),
        (
            "not gzip".into(),
            b"plain text, not a gzip file at all".to_vec(),
        ),
        ("header only".into(), whole[..10].to_vec()),
        (
            "truncated Deflate".into(),
            whole[..whole.len() / 2].to_vec(),
        ),
        (
            "truncated trailer".into(),
            whole[..whole.len() - 3].to_vec(),
        ),
        ("bad CRC-32".into(), member_around(&z, crc ^ 0x10, n)),
        ("ISIZE smaller".into(), member_around(&z, crc, n - 1)),
        ("ISIZE larger".into(), member_around(&z, crc, n + 1)),
        ("ISIZE 2^32 - 1".into(), member_around(&z, crc, u32::MAX)),
        ("ISIZE 0".into(), member_around(&z, crc, 0)),
        ("block type 3".into(), member_around(&[0x07, 0, 0], 0, 0)),
        // BFINAL, dynamic, HLIT = HDIST = 0, HCLEN = 15 (19 code length codes), every code
        // length code 1 bit long: an over-subscribed code.
        (
            "bad Huffman table".into(),
            member_around(&over_subscribed_block(), 0, 0),
        ),
    ];
    let mut trailing = whole.clone();
    trailing.extend_from_slice(b"garbage after the member");
    bad.push(("bytes after the last member".into(), trailing));
    let mut second_bad = gzip_member(short, 6, "");
    let mut m2 = gzip_member(&d[..10_000], 6, "");
    let at = m2.len() - 6;
    m2[at] ^= 1;
    second_bad.extend(m2);
    bad.push(("second member's ISIZE wrong".into(), second_bad));
    for round in 0..8 {
        let mut f = whole.clone();
        let i = rng.random_range(10..f.len());
        f[i] ^= 1 << rng.random_range(0..8);
        bad.push((format!("bit flip {round} at byte {i}"), f));
    }
    (good, bad)
}

/// A dynamic block header whose code length code is over-subscribed (LSB-first bits).
fn over_subscribed_block() -> Vec<u8> {
    let mut bits: Vec<u8> = vec![1, 0, 1];
    bits.extend([0u8; 10]);
    bits.extend([1, 1, 1, 1]);
    for _ in 0..19 {
        bits.extend([1, 0, 0]);
    }
    let mut out = vec![0u8; bits.len().div_ceil(8) + 2];
    for (i, b) in bits.iter().enumerate() {
        out[i / 8] |= b << (i % 8);
    }
    out
}

/// The files of the `gunzip_many` test are what they claim (no GPU needed): the CPU decodes the
/// good ones and rejects every hostile one.
#[test]
fn many_files_are_good_and_hostile_on_the_cpu() {
    let (good, bad) = many_files(&mut rng());
    for (name, f, _) in &good {
        cpu::gzip_decompress(f, usize::MAX).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    for (name, f) in &bad {
        let e = cpu::gzip_decompress(f, usize::MAX).expect_err(name);
        eprintln!("{name}: {e}");
    }
}

#[test]
fn gunzip_many_equals_the_cpu_on_good_and_hostile_files() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let (good, bad) = many_files(&mut rng);
    // Good and bad files interleaved, so a bad file's neighbours in the launch are good.
    let mut files: Vec<BadFile> = Vec::new();
    let mut bad_iter = bad.into_iter();
    for (name, f, _) in &good {
        files.push((name.clone(), f.clone()));
        if let Some(b) = bad_iter.next() {
            files.push(b);
        }
    }
    files.extend(bad_iter);
    let refs: Vec<&[u8]> = files.iter().map(|(_, f)| f.as_slice()).collect();
    let (outs, report) = codag::gunzip_many_with_report(gpu, &refs).expect("launch");
    assert_eq!(outs.len(), files.len());
    let mut rejected = 0;
    for ((name, f), got) in files.iter().zip(&outs) {
        let want = cpu::gzip_decompress(f, usize::MAX);
        match (&want, got) {
            (Ok(w), Ok(g)) => assert!(w == g, "{name}: outputs differ"),
            (Err(w), Err(g)) => {
                assert_eq!(format!("{w:?}"), format!("{g:?}"), "{name}: errors differ");
                rejected += 1;
            }
            (Ok(_), Err(g)) => panic!("{name}: the CPU decodes it, gunzip_many: {g}"),
            (Err(w), Ok(_)) => panic!("{name}: the CPU rejects it ({w}), gunzip_many decodes it"),
        }
    }
    eprintln!("{report:?}; {rejected} files rejected");
    assert_eq!(
        rejected,
        files.len() - good.len(),
        "every hostile file is an error"
    );
    // The good files were decoded on the GPU, all in one launch; only the bad ones on the CPU.
    assert_eq!(report.launches, 1);
    assert_eq!(report.batched, good.len());
    assert_eq!(report.members, good.iter().map(|g| g.2).sum::<usize>());
    assert_eq!(report.cpu, rejected);
    assert_eq!((report.alone, report.files), (0, files.len()));
    // Nothing at all, and a single file.
    assert!(codag::gunzip_many(gpu, &[]).expect("launch").is_empty());
    let one = codag::gunzip_many(gpu, &[&good[6].1]).expect("launch");
    assert!(
        one[0].as_ref().expect("decodes")
            == &cpu::gzip_decompress(&good[6].1, 1 << 30).expect("cpu")
    );
}

#[test]
fn gunzip_many_routes_large_and_over_budget_files() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    // Over the size for a file alone: noise (stored blocks) between text (dynamic blocks).
    let mut data = Vec::new();
    while data.len() < codag::MANY_ALONE_BYTES + (4 << 20) {
        let mut noise = vec![0u8; 700_000];
        rng.fill_bytes(&mut noise);
        data.extend(noise);
        data.extend(text(&mut rng, 300_000));
    }
    let large = gzip_member(&data, 6, "");
    assert!(large.len() >= codag::MANY_ALONE_BYTES);
    // Capacities over the launch budget: an ISIZE of 2^32 - 1 over 5 MB of stored data claims
    // 4 GiB, more than the budget with the file's bytes; the CPU gives its ISIZE error.
    let stored = miniz_oxide::deflate::compress_to_vec(&data[..5_000_000], 0);
    let claims = member_around(&stored, common::crc32_of(&data[..5_000_000]), u32::MAX);
    let small = gzip_member(&data[..100_000], 6, "");
    let files: Vec<&[u8]> = vec![&small, &large, &claims];
    let (outs, report) = codag::gunzip_many_with_report(gpu, &files).expect("launch");
    assert!(outs[0].as_ref().expect("small") == &data[..100_000]);
    assert!(outs[1].as_ref().expect("large") == &data);
    let want = cpu::gzip_decompress(&claims, usize::MAX).expect_err("ISIZE is wrong");
    let got = outs[2].as_ref().expect_err("ISIZE is wrong");
    assert_eq!(format!("{want:?}"), format!("{got:?}"));
    assert_eq!(
        (report.batched, report.alone, report.cpu, report.launches),
        (1, 1, 1, 1)
    );
}
