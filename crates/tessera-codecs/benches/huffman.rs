//! Criterion benchmarks of the Huffman codec: encode, fast decode and reference decode of one
//! 4 MiB chunk of English text (`testdata/v1/huffman/text.raw` repeated) and of a skewed
//! 40-symbol distribution. Throughput is bytes of decoded output. The fast decoder splits the
//! chunk's blocks over all threads (rayon). A quick run: `cargo bench -p tessera-codecs --bench
//! huffman -- --quick`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::time::Duration;
use tessera_codecs::huffman;

const N: usize = 4 << 20;

fn inputs() -> Vec<(&'static str, Vec<u8>)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/v1/huffman/text.raw"
    );
    let text = std::fs::read(path).expect("testdata/v1/huffman/text.raw");
    let text: Vec<u8> = text.iter().copied().cycle().take(N).collect();
    let mut r = StdRng::seed_from_u64(1);
    let skewed = (0..N)
        .map(|_| (r.random::<u64>().trailing_zeros() as u8).min(39) + b'a')
        .collect();
    vec![("text", text), ("skewed", skewed)]
}

fn bench_huffman(c: &mut Criterion) {
    for (name, data) in inputs() {
        let mut payload = Vec::new();
        huffman::encode(&data, &mut payload).expect("encode");
        let mut g = c.benchmark_group(format!("huffman/{name}"));
        g.throughput(Throughput::Bytes(N as u64));
        g.bench_function("encode", |b| {
            b.iter(|| {
                let mut p = Vec::with_capacity(payload.len());
                huffman::encode(black_box(&data), &mut p).expect("encode");
                p
            })
        });
        let mut out = vec![0u8; N];
        g.bench_function("decode", |b| {
            b.iter(|| huffman::decode(black_box(&payload), &mut out).expect("decode"))
        });
        g.bench_function("decode_reference", |b| {
            b.iter(|| huffman::decode_reference(black_box(&payload), &mut out).expect("decode"))
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).sample_size(10);
    targets = bench_huffman
}
criterion_main!(benches);
