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
