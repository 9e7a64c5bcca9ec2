//! Corrupt payloads give an error, never a crash or an out-of-bounds access (run these under
//! compute-sanitizer too): the same `Error` variant as the CPU decoder for targeted
//! corruptions (bad block_starts, bit widths above the lane, bad RFOR run counts and lengths,
//! truncated payloads, out-of-range narrow values) and for random bit flips; where the CPU
//! accepts a flipped payload, the GPU must decode it to the same values.

mod common;

use std::mem::discriminant;

use common::*;
use rand::Rng;
use tessera_codecs::column;
use tessera_format::{CodecId, Error, LogicalType};
use tessera_gpu::ChunkRef;

/// CPU and GPU verdicts on one chunk.
fn verdicts(
    ty: LogicalType,
    codec: CodecId,
    payload: &[u8],
    n: u32,
) -> (Result<Vec<u8>, Error>, Result<Vec<u8>, Error>) {
    let gpu = gpu().expect("callers check");
    let mut cpu_out = vec![0u8; n as usize * ty.width()];
    let cpu = column::decode_chunk_reference(ty, codec, payload, &mut cpu_out).map(|()| cpu_out);
    let mut gpu_out = vec![0x5Au8; n as usize * ty.width()];
    let chunk = [ChunkRef {
        codec,
        payload,
        value_count: n,
    }];
    let g = gpu
        .decode_column(ty, &chunk, &mut gpu_out)
        .map(|()| gpu_out);
    (cpu, g)
}

fn assert_same(ty: LogicalType, codec: CodecId, payload: &[u8], n: u32, what: &str) -> bool {
    match verdicts(ty, codec, payload, n) {
        (Ok(a), Ok(b)) => {
            assert!(a == b, "{what}: both accept, outputs differ");
            false
        }
        (Err(a), Err(b)) => {
            assert_eq!(
                discriminant(&a),
                discriminant(&b),
                "{what}: CPU says `{a}`, GPU says `{b}`"
            );
            true
        }
        (a, b) => panic!("{what}: CPU {:?}, GPU {:?}", a.err(), b.err()),
    }
}

/// Replaces word `word` of `p` by `f(old)`.
fn edit(p: &mut [u8], word: usize, f: impl FnOnce(u32) -> u32) {
    let v = f(get(p, word));
    p[4 * word..4 * word + 4].copy_from_slice(&v.to_le_bytes());
}
fn get(p: &[u8], word: usize) -> u32 {
    u32::from_le_bytes(p[4 * word..4 * word + 4].try_into().expect("4 bytes"))
}

#[test]
fn targeted_corruptions_fail_like_the_cpu() {
    if gpu().is_none() {
        return;
    }
    let mut rng = rng();
    for ty in [LogicalType::U32, LogicalType::U64, LogicalType::I16] {
        for codec in INT_CODECS {
            let n = 3000u32;
            let shape = if codec == CodecId::Rfor {
                Shape::Runs
            } else {
                Shape::Uniform(12)
            };
            let raw = values(&mut rng, ty, n as usize, shape);
            let good = encode(ty, codec, &raw);
            let block_values = if codec == CodecId::Rfor { 512 } else { 128 };
            let nb = (n as usize).div_ceil(block_values);
            let data = 4 + nb + 1;
            let rw = ty.lane().ref_words();
            let what = |s: &str| format!("{ty:?} {codec:?}: {s}");

            // block_starts going backwards, and past the end.
            let mut p = good.clone();
            let k = rng.random_range(1..nb);
            let prev = get(&p, 4 + k - 1);
            edit(&mut p, 4 + k, |_| prev.wrapping_sub(1));
            assert!(assert_same(
                ty,
                codec,
                &p,
                n,
                &what("block_starts backwards")
            ));
            let mut p = good.clone();
            edit(&mut p, 4 + k, |_| u32::MAX);
            assert!(assert_same(
                ty,
                codec,
                &p,
                n,
                &what("block_starts past the end")
            ));
            // trailing words after the data area.
            let mut p = good.clone();
            p.extend_from_slice(&[0; 8]);
            assert!(assert_same(ty, codec, &p, n, &what("trailing bytes")));
            // a bit width above the lane.
            let mut p = good.clone();
            let start = data + get(&p, 4 + k) as usize;
            let bw_word = start + rw + if codec == CodecId::Rfor { 1 } else { 0 };
            edit(&mut p, bw_word, |w| w | 0xFF);
            assert!(assert_same(ty, codec, &p, n, &what("bit width 255")));
            // truncated payloads.
            for cut in [4usize, 4 * (nb / 2), p.len() / 2, good.len() - 4] {
                let p = &good[..good.len() - cut.min(good.len())];
                assert!(assert_same(
                    ty,
                    codec,
                    p,
                    n,
                    &what(&format!("cut {cut} bytes"))
                ));
            }
            if codec == CodecId::Rfor {
                let run_word = start + rw;
                for bad in [0u32, 513, 0xFFFF] {
                    let mut p = good.clone();
                    edit(&mut p, run_word, |w| (w & 0xFFFF_0000) | bad);
                    assert!(assert_same(
                        ty,
                        codec,
                        &p,
                        n,
                        &what(&format!("run count {bad}"))
                    ));
                }
                for bad in [0u32, 600] {
                    let mut p = good.clone();
                    edit(&mut p, run_word, |w| (w & 0xFFFF) | (bad << 16));
                    assert!(assert_same(
                        ty,
                        codec,
                        &p,
                        n,
                        &what(&format!("length_reference {bad}"))
                    ));
                }
                // one more run than the lengths allow: the sum no longer matches.
                let mut p = good.clone();
                edit(&mut p, run_word, |w| w + (1 << 16));
                assert!(assert_same(ty, codec, &p, n, &what("length_reference + 1")));
            }
        }
    }
    // Narrow types: a lane value that does not fit u8.
    let ty = LogicalType::U8;
    let raw = values(&mut rng, ty, 1000, Shape::Uniform(8));
    let mut p = encode(ty, CodecId::For, &raw);
    let data = 4 + 8 + 1;
    let start = data + get(&p, 4 + 3) as usize;
    edit(&mut p, start, |_| 0x1000);
    assert!(assert_same(
        ty,
        CodecId::For,
        &p,
        1000,
        "u8 reference 0x1000"
    ));
}

#[test]
fn random_bit_flips_fail_or_decode_like_the_cpu() {
    if gpu().is_none() {
        return;
    }
    let mut rng = rng();
    let mut rejected = 0;
    for i in 0..1500 {
        let ty = LogicalType::INTEGERS[i % LogicalType::INTEGERS.len()];
        let codec = INT_CODECS[(i / 8) % 3];
        let n = rng.random_range(1..3000u32);
        let shape = any_shape(&mut rng);
        let raw = values(&mut rng, ty, n as usize, shape);
        let mut p = encode(ty, codec, &raw);
        for _ in 0..rng.random_range(1..4) {
            let at = rng.random_range(0..p.len());
            p[at] ^= 1 << rng.random_range(0..8);
        }
        if rng.random_bool(0.05) {
            let keep = rng.random_range(0..p.len());
            p.truncate(keep);
        }
        let claimed = if rng.random_bool(0.02) { n + 1 } else { n };
        if assert_same(
            ty,
            codec,
            &p,
            claimed,
            &format!("case {i} {ty:?} {codec:?} n={n}"),
        ) {
            rejected += 1;
        }
    }
    eprintln!("{rejected} of 1500 corrupted chunks rejected by both");
}

/// A change to one payload word.
type WordEdit = fn(u32) -> u32;

/// The RFOR blocks the GPU decodes without a run pass: blocks of one run (constant data) and
/// blocks of distinct values (every run of length 1). Each edit below makes the run lengths
/// wrong, so the CPU must reject it (checked here with or without a GPU), and the GPU with the
/// same error.
#[test]
fn rfor_one_run_and_distinct_blocks_fail_like_the_cpu() {
    let n = 3000u32; // 5 full blocks and one of 440 values
    let nb = (n as usize).div_ceil(512);
    let data = 4 + nb + 1;
    let gpu_present = gpu().is_some();
    if !gpu_present {
        eprintln!("checking the CPU verdicts only: no GPU");
    }
    for ty in [LogicalType::U32, LogicalType::U64] {
        let w = ty.width();
        let rw = ty.lane().ref_words();
        let constant: Vec<u8> = (0..n)
            .flat_map(|_| 7u64.to_le_bytes()[..w].to_vec())
            .collect();
        let distinct: Vec<u8> = (0..n as u64)
            .flat_map(|i| (3 * i + 1).to_le_bytes()[..w].to_vec())
            .collect();
        for (name, raw) in [("one run", &constant), ("distinct", &distinct)] {
            let good = encode(ty, CodecId::Rfor, raw);
            for k in [0, nb - 1] {
                let run_word = data + get(&good, 4 + k) as usize + rw;
                let run_count = get(&good, run_word) & 0xFFFF;
                let expected_runs = if name == "one run" {
                    1
                } else {
                    (n as usize - 512 * k).min(512) as u32
                };
                assert_eq!(
                    run_count, expected_runs,
                    "{ty:?} {name}: block {k}'s run count"
                );
                let edits: [(&str, WordEdit); 4] = [
                    ("length_reference + 1", |w| w + (1 << 16)),
                    ("length_reference - 1", |w| w - (1 << 16)),
                    ("one run more", |w| w + 1),
                    ("one run fewer", |w| w - 1),
                ];
                for (what, f) in edits {
                    let mut p = good.clone();
                    edit(&mut p, run_word, f);
                    let what = format!("{ty:?} {name}, block {k}: {what}");
                    let mut out = vec![0u8; n as usize * w];
                    let cpu = column::decode_chunk_reference(ty, CodecId::Rfor, &p, &mut out);
                    // A run count of 0 (one run fewer than one) is an error too.
                    assert!(cpu.is_err(), "{what}: the CPU accepts it");
                    if gpu_present {
                        assert!(assert_same(ty, CodecId::Rfor, &p, n, &what));
                    }
                }
            }
        }
    }
}
