//! Criterion benchmarks of the integer codecs: encode and fast decode of GPU-FOR, GPU-DFOR and
//! GPU-RFOR on uniform data at a list of bit widths, one chunk of 2^20 values on one thread and
//! 16 chunks over all threads (rayon, as the container does), next to the `bitpacking`
//! (BitPacker4x/8x) and `fastlanes` unpackers decoding the same values at the same width.
//! Throughput is bytes of decoded output (4 per value), so the figures compare directly.
//!
//! Widths: 1, 4, 8, 16, 24, 32 by default; `TESSERA_BENCH_WIDTHS=all` runs 1..=32, or give a
//! comma list (`TESSERA_BENCH_WIDTHS=16`). A quick run: `cargo bench -p tessera-codecs --bench
//! int -- --quick` (about a minute per width).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use std::hint::black_box;
use std::time::Duration;
use tessera_codecs::{column, int};
use tessera_format::{CodecId, LogicalType};

const N: usize = 1 << 20;
const CHUNKS: usize = 16;
const CODECS: [CodecId; 3] = [CodecId::For, CodecId::Dfor, CodecId::Rfor];

fn widths() -> Vec<u32> {
    match std::env::var("TESSERA_BENCH_WIDTHS").as_deref() {
        Ok("all") => (1..=32).collect(),
        Ok(list) => list
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .filter(|w| (1..=32).contains(w))
            .collect(),
        Err(_) => vec![1, 4, 8, 16, 24, 32],
    }
}

/// Uniform values in [0, 2^width).
fn uniform(width: u32, n: usize, seed: u64) -> Vec<u32> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mask = u32::MAX >> (32 - width);
    (0..n).map(|_| rng.random::<u32>() & mask).collect()
}

fn encode(codec: CodecId, v: &[u32]) -> Vec<u8> {
    let mut p = Vec::new();
    int::encode(codec, v, &mut p).expect("encode");
    p
}

fn bench_codecs(c: &mut Criterion) {
    for width in widths() {
        let chunks: Vec<Vec<u32>> = (0..CHUNKS).map(|i| uniform(width, N, i as u64)).collect();
        for codec in CODECS {
            let payloads: Vec<Vec<u8>> = chunks.iter().map(|v| encode(codec, v)).collect();
            let name = codec.name();

            let mut g = c.benchmark_group(format!("decode/{name}"));
            g.throughput(Throughput::Bytes((N * 4) as u64));
            let mut out = vec![0u32; N];
            g.bench_with_input(BenchmarkId::new("1t", width), &payloads[0], |b, p| {
                b.iter(|| int::decode(codec, black_box(p), &mut out).expect("decode"))
            });
            g.throughput(Throughput::Bytes((CHUNKS * N * 4) as u64));
            let mut outs = vec![vec![0u32; N]; CHUNKS];
            g.bench_with_input(BenchmarkId::new("mt", width), &payloads, |b, ps| {
                b.iter(|| {
                    ps.par_iter().zip(outs.par_iter_mut()).for_each(|(p, o)| {
                        int::decode(codec, black_box(p), o).expect("decode");
                    })
                })
            });
            g.finish();

            let mut g = c.benchmark_group(format!("encode/{name}"));
            g.throughput(Throughput::Bytes((N * 4) as u64));
            let mut buf = Vec::with_capacity(payloads[0].len());
            g.bench_with_input(BenchmarkId::new("1t", width), &chunks[0], |b, v| {
                b.iter(|| {
                    buf.clear();
                    int::encode(codec, black_box(v), &mut buf).expect("encode");
                })
            });
            g.throughput(Throughput::Bytes((CHUNKS * N * 4) as u64));
            g.bench_with_input(BenchmarkId::new("mt", width), &chunks, |b, vs| {
                b.iter(|| {
                    vs.par_iter()
                        .map(|v| encode(codec, black_box(v)).len())
                        .sum::<usize>()
                })
            });
            g.finish();
        }

        // The column layer's automatic choice (size all three codecs, encode the smallest).
        let raw: Vec<u8> = chunks[0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut g = c.benchmark_group("encode/auto");
        g.throughput(Throughput::Bytes((N * 4) as u64));
        let mut buf = Vec::new();
        g.bench_with_input(BenchmarkId::new("1t", width), &raw, |b, raw| {
            b.iter(|| {
                buf.clear();
                column::encode_chunk(LogicalType::U32, None, black_box(raw), &mut buf)
                    .expect("auto")
            })
        });
        g.finish();

        bench_baselines(c, width, &chunks[0]);
    }
}

/// `bitpacking` and `fastlanes` decoding the same values at the same width.
fn bench_baselines(c: &mut Criterion, width: u32, v: &[u32]) {
    use bitpacking::{BitPacker, BitPacker4x, BitPacker8x};
    let mut g = c.benchmark_group("decode/baseline");
    g.throughput(Throughput::Bytes((N * 4) as u64));

    fn bp<P: BitPacker>(v: &[u32], width: u32) -> Vec<u8> {
        let p = P::new();
        let mut out = vec![0u8; v.len() * 4 + 64];
        let mut len = 0;
        for block in v.chunks_exact(P::BLOCK_LEN) {
            len += p.compress(block, &mut out[len..], width as u8);
        }
        out.truncate(len);
        out
    }
    fn bp_decode<P: BitPacker>(packed: &[u8], width: u32, out: &mut [u32]) {
        let p = P::new();
        let step = P::BLOCK_LEN * width as usize / 8;
        for (src, dst) in packed
            .chunks_exact(step)
            .zip(out.chunks_exact_mut(P::BLOCK_LEN))
        {
            p.decompress(src, dst, width as u8);
        }
    }
    let mut out = vec![0u32; N];
    let p4 = bp::<BitPacker4x>(v, width);
    g.bench_with_input(BenchmarkId::new("bitpacking4x", width), &p4, |b, p| {
        b.iter(|| bp_decode::<BitPacker4x>(black_box(p), width, &mut out))
    });
    let p8 = bp::<BitPacker8x>(v, width);
    g.bench_with_input(BenchmarkId::new("bitpacking8x", width), &p8, |b, p| {
        b.iter(|| bp_decode::<BitPacker8x>(black_box(p), width, &mut out))
    });

    use fastlanes::BitPacking;
    let w = width as usize;
    let per_block = 1024 * w / 32;
    let mut packed = vec![0u32; N / 1024 * per_block];
    for (src, dst) in v.chunks_exact(1024).zip(packed.chunks_exact_mut(per_block)) {
        // SAFETY: `src` is exactly 1024 values and `dst` exactly 1024 * w / 32 words, as
        // `unchecked_pack` requires.
        unsafe { u32::unchecked_pack(w, src, dst) };
    }
    g.bench_with_input(
        BenchmarkId::new("fastlanes", width),
        &packed,
        |b, packed| {
            b.iter(|| {
                for (src, dst) in black_box(packed)
                    .chunks_exact(per_block)
                    .zip(out.chunks_exact_mut(1024))
                {
                    // SAFETY: `src` is exactly 1024 * w / 32 words and `dst` exactly 1024 values.
                    unsafe { u32::unchecked_unpack(w, src, dst) };
                }
            })
        },
    );
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_codecs
}
criterion_main!(benches);
