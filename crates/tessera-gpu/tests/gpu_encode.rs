//! GPU encoders write the CPU encoders' bytes exactly: every codec, lanes 32 and 64, every size
//! class and bit width, several chunks per column.

mod common;

use common::*;
use rand::Rng;
use tessera_codecs::int;
use tessera_format::{CodecId, LogicalType};

fn cpu_chunks<W: int::LaneWord>(codec: CodecId, values: &[W], chunk_values: usize) -> Vec<Vec<u8>> {
    let pieces: Vec<&[W]> = if values.is_empty() {
        vec![values]
    } else {
        values.chunks(chunk_values).collect()
    };
    pieces
        .into_iter()
        .map(|c| {
            let mut out = Vec::new();
            int::encode(codec, c, &mut out).expect("CPU encodes");
            out
        })
        .collect()
}

#[test]
fn gpu_encoders_write_the_cpu_bytes() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    for codec in INT_CODECS {
        for n in SIZES.into_iter().chain([20_000, 300_001]) {
            for chunk_values in [512usize, 4096, 1 << 20] {
                let shape = any_shape(&mut rng);
                let raw = values(&mut rng, LogicalType::U32, n, shape);
                let v32 = lanes32(LogicalType::U32, &raw);
                let got = gpu.encode(codec, &v32, chunk_values).expect("GPU encodes");
                assert!(
                    got == cpu_chunks(codec, &v32, chunk_values),
                    "{codec:?} lane 32 n={n} cv={chunk_values} {shape:?}"
                );
                let raw = values(&mut rng, LogicalType::I64, n, shape);
                let v64 = lanes64(LogicalType::I64, &raw);
                let got = gpu.encode(codec, &v64, chunk_values).expect("GPU encodes");
                assert!(
                    got == cpu_chunks(codec, &v64, chunk_values),
                    "{codec:?} lane 64 n={n} cv={chunk_values} {shape:?}"
                );
            }
        }
    }
}

#[test]
fn gpu_encoders_cover_every_bit_width() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    for codec in INT_CODECS {
        for bits in 0..=64u32 {
            let n = rng.random_range(2000..9000);
            let shape = if codec == CodecId::Rfor && bits % 3 == 0 {
                Shape::Runs
            } else {
                Shape::Uniform(bits)
            };
            if bits <= 32 {
                let v32 = lanes32(
                    LogicalType::U32,
                    &values(&mut rng, LogicalType::U32, n, shape),
                );
                assert!(
                    gpu.encode(codec, &v32, 2048).expect("encodes")
                        == cpu_chunks(codec, &v32, 2048),
                    "{codec:?} 32 bits={bits}"
                );
            }
            let v64 = lanes64(
                LogicalType::U64,
                &values(&mut rng, LogicalType::U64, n, shape),
            );
            assert!(
                gpu.encode(codec, &v64, 2048).expect("encodes") == cpu_chunks(codec, &v64, 2048),
                "{codec:?} 64 bits={bits}"
            );
        }
    }
}

#[test]
fn gpu_encoders_reject_unaligned_chunks() {
    let Some(gpu) = gpu() else { return };
    assert!(gpu.encode(CodecId::For, &[1u32, 2, 3], 1000).is_err());
    assert!(gpu.encode(CodecId::Plain, &[1u32, 2, 3], 1024).is_err());
}

/// RFOR blocks whose runs average 1 to 4 values, of 1 to 40 value bits: the encoders' choice
/// between maximal runs and the identity block (`rfor.md`, "Runs") falls on both sides, and
/// on ties, block by block; the GPU must choose as the CPU does.
#[test]
fn gpu_rfor_encoder_chooses_identity_blocks_like_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    for round in 0..40 {
        let n = rng.random_range(1..=40 * 512);
        let mut v = Vec::with_capacity(n);
        while v.len() < n {
            let most_len = rng.random_range(1..=4u32) as usize;
            let bits = rng.random_range(1..=40u32);
            let block_end = (v.len() / 512 + 1) * 512;
            while v.len() < n.min(block_end) {
                let x = rng.random::<u64>() >> (64 - bits);
                let len = rng
                    .random_range(1..=most_len)
                    .min(n.min(block_end) - v.len());
                v.extend(std::iter::repeat_n(x, len));
            }
        }
        let v64: Vec<u64> = v.clone();
        let v32: Vec<u32> = v.iter().map(|&x| x as u32).collect();
        for chunk_values in [512usize, 4096] {
            assert!(
                gpu.encode(CodecId::Rfor, &v32, chunk_values)
                    .expect("encodes")
                    == cpu_chunks(CodecId::Rfor, &v32, chunk_values),
                "lane 32 round {round} n={n} cv={chunk_values}"
            );
            assert!(
                gpu.encode(CodecId::Rfor, &v64, chunk_values)
                    .expect("encodes")
                    == cpu_chunks(CodecId::Rfor, &v64, chunk_values),
                "lane 64 round {round} n={n} cv={chunk_values}"
            );
        }
    }
}
