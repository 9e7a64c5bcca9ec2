//! GPU decoding equals the CPU reference decoder, element for element: every codec, every
//! logical type (lanes 32 and 64), every bit width, every size class, multi-chunk and mixed-codec
//! columns in one launch, and the streamed coprocessor path. Outputs are poisoned first.

mod common;

use common::*;
use rand::Rng;
use tessera_codecs::column;
use tessera_format::{CodecId, LogicalType};
use tessera_gpu::codec;

const POISON: u8 = 0xA5;

/// Decodes `chunks` both ways on the GPU (device-resident and coprocessor path) and checks each
/// against the CPU reference decoder.
fn check_column(ty: LogicalType, chunks: &[(CodecId, Vec<u8>, u32)], what: &str) {
    let Some(gpu) = gpu() else { return };
    let expected = cpu_decoded(ty, chunks);
    let refs = chunk_refs(chunks);

    let mut host_out = vec![POISON; expected.len()];
    gpu.decode_column(ty, &refs, &mut host_out)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        host_out == expected,
        "{what}: decode_column differs at byte {:?}",
        first_diff(&host_out, &expected)
    );

    let col = gpu.upload_column(ty, &refs).expect("valid column");
    let mut d_out = gpu.alloc::<u8>(expected.len() + 64).expect("alloc");
    gpu.fill_bytes(&mut d_out, POISON).expect("poison");
    gpu.decode_into(&col, &mut d_out)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut back = vec![0u8; expected.len() + 64];
    gpu.download(&d_out, &mut back).expect("download");
    assert!(
        back[..expected.len()] == expected[..],
        "{what}: decode_into differs at byte {:?}",
        first_diff(&back, &expected)
    );
    assert!(
        back[expected.len()..].iter().all(|&b| b == POISON),
        "{what}: wrote past the column"
    );
}

fn first_diff(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y)
}

#[test]
fn every_codec_type_and_size_class_matches_the_cpu() {
    if gpu().is_none() {
        return;
    }
    let mut rng = rng();
    for ty in LogicalType::INTEGERS {
        for codec in INT_CODECS {
            for n in SIZES {
                let shape = any_shape(&mut rng);
                let raw = values(&mut rng, ty, n, shape);
                let payload = encode(ty, codec, &raw);
                check_column(
                    ty,
                    &[(codec, payload, n as u32)],
                    &format!("{ty:?} {codec:?} n={n} {shape:?}"),
                );
            }
        }
    }
}

#[test]
fn every_bit_width_matches_the_cpu() {
    if gpu().is_none() {
        return;
    }
    let mut rng = rng();
    for (ty, max) in [
        (LogicalType::U32, 32),
        (LogicalType::I32, 32),
        (LogicalType::U64, 64),
        (LogicalType::I64, 64),
    ] {
        for bits in 0..=max {
            for codec in INT_CODECS {
                let n = rng.random_range(1000..6000);
                let shape = if codec == CodecId::Rfor && bits % 2 == 0 {
                    Shape::Runs
                } else {
                    Shape::Uniform(bits)
                };
                let raw = values(&mut rng, ty, n, shape);
                let payload = encode(ty, codec, &raw);
                check_column(
                    ty,
                    &[(codec, payload, n as u32)],
                    &format!("{ty:?} {codec:?} bits={bits}"),
                );
            }
        }
    }
}

#[test]
fn multi_chunk_and_mixed_codec_columns_decode_in_one_pass() {
    if gpu().is_none() {
        return;
    }
    let mut rng = rng();
    for round in 0..12 {
        let ty = LogicalType::INTEGERS[round % LogicalType::INTEGERS.len()];
        let k = rng.random_range(1..9);
        let mut chunks = Vec::new();
        for _ in 0..k {
            let n = if rng.random_bool(0.3) {
                rng.random_range(0..600)
            } else {
                rng.random_range(600..70_000)
            };
            let shape = any_shape(&mut rng);
            let raw = values(&mut rng, ty, n, shape);
            let codec = if rng.random_bool(0.15) {
                CodecId::Plain
            } else if rng.random_bool(0.5) {
                INT_CODECS[rng.random_range(0..3)]
            } else {
                INT_CODECS[round % 3]
            };
            let mut payload = Vec::new();
            column::encode_chunk(ty, Some(codec), &raw, &mut payload).expect("encodes");
            chunks.push((codec, payload, n as u32));
        }
        check_column(ty, &chunks, &format!("round {round} {ty:?} {k} chunks"));
    }
}

/// A bytes column whose chunks take three decoders (LLL, canonical Huffman, plain on the host),
/// interleaved, through `codec::decode_to_device` and `decode_to_host`: each decoder's batch
/// holds exactly its own chunks. (The Arrow writer's binary fields end with a short plain chunk
/// after LLL ones; grouping decoders by address once put it in the LLL batch.)
#[test]
fn bytes_columns_of_lll_huffman_and_plain_chunks_match_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let codecs = [
        CodecId::Lll,
        CodecId::Lll,
        CodecId::Plain,
        CodecId::Huffman,
        CodecId::Lll,
        CodecId::Plain,
    ];
    let mut chunks = Vec::new();
    let mut expected = Vec::new();
    for (k, &codec) in codecs.iter().enumerate() {
        let n = [1024, 1021, 191, 5000, 40_000, 7][k];
        let raw: Vec<u8> = (0..n)
            .map(|i| {
                if rng.random_bool(0.2) {
                    rng.random()
                } else {
                    (i % 37 + k) as u8
                }
            })
            .collect();
        let mut payload = Vec::new();
        column::encode_chunk(LogicalType::Bytes, Some(codec), &raw, &mut payload).expect("encodes");
        expected.extend_from_slice(&raw);
        chunks.push((codec, payload, n as u32));
    }
    let refs = chunk_refs(&chunks);
    let d = codec::decode_to_device(gpu, LogicalType::Bytes, &refs)
        .unwrap_or_else(|e| panic!("decode_to_device: {}", e.error));
    let mut back = vec![POISON; expected.len()];
    gpu.download(&d, &mut back).expect("download");
    assert!(
        back == expected,
        "decode_to_device differs at byte {:?}",
        first_diff(&back, &expected)
    );
    let mut host = vec![POISON; expected.len()];
    codec::decode_to_host(gpu, LogicalType::Bytes, &refs, &mut host)
        .unwrap_or_else(|e| panic!("decode_to_host: {}", e.error));
    assert!(
        host == expected,
        "decode_to_host differs at byte {:?}",
        first_diff(&host, &expected)
    );
}

#[test]
fn random_large_columns_match_the_cpu() {
    if gpu().is_none() {
        return;
    }
    let mut rng = rng();
    for (ty, codec) in [
        (LogicalType::U32, CodecId::For),
        (LogicalType::I32, CodecId::Dfor),
        (LogicalType::U64, CodecId::Rfor),
    ] {
        let n = rng.random_range(1_000_000..3_000_000);
        let shape = if codec == CodecId::Rfor {
            Shape::Runs
        } else {
            any_shape(&mut rng)
        };
        let raw = values(&mut rng, ty, n, shape);
        let chunk_values = 1 << 20;
        let chunks: Vec<_> = raw
            .chunks(chunk_values * ty.width())
            .map(|c| (codec, encode(ty, codec, c), (c.len() / ty.width()) as u32))
            .collect();
        check_column(ty, &chunks, &format!("{ty:?} {codec:?} n={n}"));
    }
}

#[test]
fn the_coprocessor_path_streams_columns_larger_than_a_slice() {
    if gpu().is_none() {
        return;
    }
    let mut rng = rng();
    // ~100 MB of payload: several 32 MiB slices through both slots.
    let ty = LogicalType::U32;
    let chunk_values = 1 << 22;
    let n = 6 * chunk_values + 12345;
    let raw = values(&mut rng, ty, n, Shape::Uniform(31));
    let chunks: Vec<_> = raw
        .chunks(chunk_values * 4)
        .enumerate()
        .map(|(i, c)| {
            let codec = if i == 3 { CodecId::Plain } else { CodecId::For };
            let mut p = Vec::new();
            column::encode_chunk(ty, Some(codec), c, &mut p).expect("encodes");
            (codec, p, (c.len() / 4) as u32)
        })
        .collect();
    check_column(ty, &chunks, "streamed column");
}

/// Words between blocks are legal (a block reads only what its metadata asks for inside its
/// range): small gaps keep the slab's contiguous shared-memory copy, large ones force the
/// one-slot-per-block layout.
#[test]
fn slack_between_blocks_decodes_like_the_cpu() {
    if gpu().is_none() {
        return;
    }
    let mut rng = rng();
    let word =
        |p: &[u8], i: usize| u32::from_le_bytes(p[4 * i..4 * i + 4].try_into().expect("4 bytes"));
    for round in 0..60 {
        let ty = LogicalType::INTEGERS[round % LogicalType::INTEGERS.len()];
        let codec = INT_CODECS[(round / 8) % 3];
        let n = rng.random_range(1200..6000);
        let shape = any_shape(&mut rng);
        let mut p = encode(ty, codec, &values(&mut rng, ty, n, shape));
        let block_values = if codec == CodecId::Rfor { 512 } else { 128 };
        let nb = n.div_ceil(block_values);
        let data = 4 + nb + 1;
        let k = rng.random_range(0..nb - 1);
        let slack = if round % 3 == 0 {
            rng.random_range(2000..4000)
        } else {
            rng.random_range(1..40)
        };
        let mut at = data + word(&p, 4 + k + 1) as usize;
        if codec == CodecId::Dfor && (k + 1) % 4 == 0 {
            at -= ty.lane().ref_words(); // the next tile's first_value stays just before its block
        }
        let garbage: Vec<u8> = (0..4 * slack).map(|_| rng.random()).collect();
        p.splice(4 * at..4 * at, garbage);
        for j in k + 1..=nb {
            let v = word(&p, 4 + j) + slack as u32;
            p[4 * (4 + j)..4 * (4 + j) + 4].copy_from_slice(&v.to_le_bytes());
        }
        check_column(
            ty,
            &[(codec, p, n as u32)],
            &format!("{ty:?} {codec:?} n={n} slack {slack} after block {k}"),
        );
    }
}

/// RFOR blocks are expanded run by run: a lane writes its own run up to 16 values, the warp
/// writes longer ones together. Every mix of the two inside a row of 32 runs, rows whose
/// run lengths are all equal (run-length bit width 0, with length_reference on either side of
/// 16), runs that cross the 128-value stripes and blocks without runs.
#[test]
fn rfor_run_length_mixes_match_the_cpu() {
    if gpu().is_none() {
        return;
    }
    let mut rng = rng();
    // Each pattern yields the next run length.
    type Pattern = Box<dyn FnMut(&mut rand::rngs::StdRng) -> usize>;
    let patterns: Vec<(&str, Pattern)> = vec![
        ("all 1", Box::new(|_| 1)),
        ("all 2", Box::new(|_| 2)),
        ("all 16", Box::new(|_| 16)),
        ("all 17", Box::new(|_| 17)),
        ("all 32", Box::new(|_| 32)),
        ("all 33", Box::new(|_| 33)),
        ("all 200", Box::new(|_| 200)),
        ("all 512", Box::new(|_| 512)),
        ("1s, then one of 300", {
            let mut i = 0usize;
            Box::new(move |_| {
                i += 1;
                if i % 40 == 0 {
                    300
                } else {
                    1
                }
            })
        }),
        ("1..=16", Box::new(|r| r.random_range(1..=16))),
        ("1..=40", Box::new(|r| r.random_range(1..=40))),
        (
            "geometric",
            Box::new(|r| 1 + r.random::<u32>().trailing_zeros() as usize * 3),
        ),
        (
            "mostly 1, a few long",
            Box::new(|r| {
                if r.random_bool(0.05) {
                    r.random_range(17..600)
                } else {
                    1
                }
            }),
        ),
    ];
    for (name, mut next) in patterns {
        for ty in [LogicalType::U32, LogicalType::I64, LogicalType::U16] {
            let n = rng.random_range(3000..9000);
            let w = ty.width();
            let mut raw = Vec::with_capacity(n * w);
            let mut prev = u64::MAX;
            while raw.len() < n * w {
                let len = next(&mut rng);
                // A value unlike the previous run's, so the runs stay as generated.
                let mut v = rng.random::<u64>() >> rng.random_range(0..64);
                if w < 8 {
                    v &= (1u64 << (8 * w)) - 1;
                }
                if v == prev {
                    v ^= 1;
                }
                prev = v;
                for _ in 0..len {
                    if raw.len() < n * w {
                        raw.extend_from_slice(&v.to_le_bytes()[..w]);
                    }
                }
            }
            let payload = encode(ty, CodecId::Rfor, &raw);
            check_column(
                ty,
                &[(CodecId::Rfor, payload, n as u32)],
                &format!("{ty:?} RFOR runs {name} n={n}"),
            );
        }
    }
}
