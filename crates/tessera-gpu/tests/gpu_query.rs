//! The fused `SUM(x) WHERE x BETWEEN lo AND hi` on compressed columns equals the CPU's
//! tile-at-a-time query and a plain filter, for every codec and for mixed columns; the same
//! query over an uncompressed column on the device agrees too.

mod common;

use common::*;
use rand::Rng;
use tessera_codecs::column;
use tessera_format::{CodecId, LogicalType};
use tessera_gpu::ChunkRef;
use tessera_query::Chunk;

#[test]
fn fused_sum_between_equals_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let ty = LogicalType::U32;
    for round in 0..24 {
        let k = rng.random_range(1..5);
        let mut chunks = Vec::new();
        let mut all = Vec::new();
        for _ in 0..k {
            let n = *[0usize, 1, 511, 513, 100_000, 1 << 20]
                .get(rng.random_range(0..6))
                .unwrap_or(&1000);
            let shape = any_shape(&mut rng);
            let raw = values(&mut rng, ty, n, shape);
            let codec = if round % 4 == 3 && rng.random_bool(0.5) {
                CodecId::Plain
            } else {
                INT_CODECS[round % 3]
            };
            let mut p = Vec::new();
            column::encode_chunk(ty, Some(codec), &raw, &mut p).expect("encodes");
            all.extend(lanes32(ty, &raw));
            chunks.push((codec, p, n as u32));
        }
        let refs = chunk_refs(&chunks);
        let qs: Vec<Chunk<'_>> = chunks
            .iter()
            .map(|(c, p, n)| Chunk {
                codec: *c,
                payload: p,
                value_count: *n,
            })
            .collect();
        let col = gpu.upload_column(ty, &refs).expect("valid");
        let d_values = gpu.upload(&all).expect("upload");
        for _ in 0..4 {
            let (a, b) = (
                rng.random::<u32>() >> rng.random_range(0..32),
                rng.random::<u32>(),
            );
            let (lo, hi) = (a.min(b), a.max(b));
            let want = tessera_query::sum_between_values(&all, lo, hi);
            assert_eq!(
                tessera_query::sum_between(&qs, lo, hi).expect("valid"),
                want,
                "CPU tile query, round {round}"
            );
            assert_eq!(
                gpu.sum_between(&col, lo, hi).expect("valid"),
                want,
                "GPU fused query, round {round}"
            );
            assert_eq!(
                tessera_gpu::bench_hooks::sum_between_tilewise(gpu, &col, lo, hi).expect("valid"),
                want,
                "GPU query through the one-tile loaders, round {round}"
            );
            assert_eq!(
                gpu.sum_between_values(&d_values, all.len(), lo, hi)
                    .expect("valid"),
                want,
                "GPU plain query"
            );
        }
    }
}

#[test]
fn fused_sum_on_a_corrupt_column_is_an_error() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let raw = values(&mut rng, LogicalType::U32, 5000, Shape::Uniform(20));
    let mut p = encode(LogicalType::U32, CodecId::For, &raw);
    let bw_word = 4 + 40 + 1 + 1; // block 0: reference, then its bit-width word
    p[4 * bw_word] = 200;
    let refs = [ChunkRef {
        codec: CodecId::For,
        payload: &p,
        value_count: 5000,
    }];
    let col = gpu
        .upload_column(LogicalType::U32, &refs)
        .expect("header is fine");
    assert!(gpu.sum_between(&col, 0, u32::MAX).is_err());
}

/// Random corruptions of FOR, DFOR and RFOR columns: the fused query fails with the CPU
/// decoder's error variant where the CPU rejects the payload, and sums exactly what the CPU
/// decodes where it accepts it. Small grids make each warp and thread block take several
/// slabs (the grid-stride path); all of it should also run under compute-sanitizer.
#[test]
fn fused_sum_on_flipped_payloads_agrees_with_the_cpu_decoder() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let ty = LogicalType::U32;
    let (mut rejected, mut accepted) = (0u32, 0u32);
    for round in 0..300 {
        let codec = INT_CODECS[round % 3];
        let n = *[1usize, 127, 513, 2049, 5000, 40_000]
            .get(rng.random_range(0..6))
            .unwrap_or(&5000);
        let shape = any_shape(&mut rng);
        let raw = values(&mut rng, ty, n, shape);
        let mut p = encode(ty, codec, &raw);
        // Flip 1-3 bits after the 16-byte header (a bad header is refused at upload).
        for _ in 0..rng.random_range(1..4) {
            let byte = rng.random_range(16..p.len());
            p[byte] ^= 1 << rng.random_range(0..8);
        }
        let mut cpu_out = vec![0u8; n * 4];
        let cpu = column::decode_chunk_reference(ty, codec, &p, &mut cpu_out);
        let refs = [ChunkRef {
            codec,
            payload: &p,
            value_count: n as u32,
        }];
        let Ok(col) = gpu.upload_column(ty, &refs) else {
            assert!(
                cpu.is_err(),
                "round {round}: upload refused what the CPU decodes"
            );
            rejected += 1;
            continue;
        };
        tessera_gpu::bench_hooks::set_grid_limit(gpu, if round % 2 == 0 { Some(3) } else { None });
        let got = gpu.sum_between(&col, 0, u32::MAX >> (round % 7));
        tessera_gpu::bench_hooks::set_grid_limit(gpu, None);
        match (cpu, got) {
            (Ok(()), Ok(sum)) => {
                let vals: Vec<u32> = cpu_out
                    .chunks_exact(4)
                    .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
                    .collect();
                let want = tessera_query::sum_between_values(&vals, 0, u32::MAX >> (round % 7));
                assert_eq!(
                    sum, want,
                    "round {round} ({codec:?}): accepted, sums differ"
                );
                accepted += 1;
            }
            (Err(a), Err(b)) => {
                assert_eq!(
                    std::mem::discriminant(&a),
                    std::mem::discriminant(&b),
                    "round {round} ({codec:?}): CPU says `{a}`, GPU query says `{b}`"
                );
                rejected += 1;
            }
            (a, b) => panic!(
                "round {round} ({codec:?}): CPU {:?}, GPU query {:?}",
                a.err(),
                b.err()
            ),
        }
    }
    eprintln!("flipped payloads: {rejected} rejected by both, {accepted} accepted by both");
    assert!(rejected > 0 && accepted > 0, "both outcomes exercised");
}
