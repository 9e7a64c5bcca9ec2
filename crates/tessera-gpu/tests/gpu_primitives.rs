//! The device-wide primitives equal their CPU definitions: the sum scans (u32 modulo 2^32, u64,
//! exclusive and inclusive), the block offsets the integer encoders and the Huffman decoder take
//! from them, and the merge path. Skips without a GPU unless TESSERA_REQUIRE_GPU=1.

mod common;

use common::{gpu, rng};
use rand::Rng;
use tessera_gpu::bench_hooks as hooks;

#[test]
fn scans_equal_their_cpu_definition() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    for n in [
        0usize,
        1,
        2,
        2047,
        2048,
        2049,
        4096 * 3 + 5,
        1 << 20,
        9_000_001,
    ] {
        let v32: Vec<u32> = (0..n).map(|_| rng.random()).collect();
        for inclusive in [false, true] {
            let got = hooks::scan_u32(gpu, &v32, inclusive).expect("scan");
            let mut acc = 0u32;
            let want: Vec<u32> = v32
                .iter()
                .map(|&x| {
                    let e = acc;
                    acc = acc.wrapping_add(x);
                    if inclusive {
                        acc
                    } else {
                        e
                    }
                })
                .collect();
            assert!(got == want, "u32 n={n} inclusive={inclusive}");
        }
        let v64: Vec<u64> = (0..n).map(|_| rng.random::<u64>() >> 8).collect();
        let got = hooks::scan_u64(gpu, &v64, false).expect("scan");
        let mut acc = 0u64;
        let want: Vec<u64> = v64
            .iter()
            .map(|&x| {
                let e = acc;
                acc = acc.wrapping_add(x);
                e
            })
            .collect();
        assert!(got == want, "u64 n={n}");
    }
}

#[test]
fn merge_path_equals_a_stable_merge() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    for (na, nb) in [
        (0, 0),
        (0, 5),
        (7, 0),
        (1, 1),
        (1000, 3),
        (4097, 4099),
        (300_000, 123_457),
    ] {
        let range = rng.random_range(1..1000u32);
        let mut a: Vec<u32> = (0..na).map(|_| rng.random_range(0..range * 10)).collect();
        let mut b: Vec<u32> = (0..nb).map(|_| rng.random_range(0..range * 10)).collect();
        a.sort_unstable();
        b.sort_unstable();
        let (got, from_b) = hooks::merge_u32(gpu, &a, &b).expect("merge");
        let (mut i, mut j) = (0, 0);
        let mut want = Vec::new();
        let mut want_from = Vec::new();
        while i < a.len() || j < b.len() {
            if j >= b.len() || (i < a.len() && a[i] <= b[j]) {
                want.push(a[i]);
                want_from.push(0);
                i += 1;
            } else {
                want.push(b[j]);
                want_from.push(1);
                j += 1;
            }
        }
        assert!(got == want && from_b == want_from, "na={na} nb={nb}");
    }
}

#[test]
fn block_offsets_are_the_exclusive_scan_with_the_total_last() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    // Around the scan's tile (2048 items) and its partials pass (4096 tiles a step); sizes as
    // large as the encoders' blocks and, for the wrap modulo 2^32, larger.
    for n in [0usize, 1, 2047, 2048, 2049, 4096 * 2048 + 3] {
        for max in [1u32 << 10, u32::MAX] {
            let sizes: Vec<u32> = (0..n).map(|_| rng.random_range(0..max)).collect();
            let got = hooks::offsets_u32(gpu, &sizes).expect("offsets");
            let mut want = Vec::with_capacity(n + 1);
            let mut acc = 0u32;
            want.push(0);
            for &s in &sizes {
                acc = acc.wrapping_add(s);
                want.push(acc);
            }
            assert!(got == want, "n={n} max={max}");
        }
    }
}

#[test]
fn pageable_uploads_through_the_ring_arrive_whole() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rng();
    let ring = tessera_gpu::UPLOAD_RING_MIN_BYTES;
    // Below the ring, exactly at it, a partial last slot, and a second call reusing the slots
    // while the first call's copies may still be queued.
    for n in [0usize, 1, ring - 1, ring, 5 * ring + 12_345, 3 * ring + 7] {
        let src: Vec<u8> = (0..n).map(|_| rng.random()).collect();
        let mut d = gpu.alloc::<u8>(n + 100).expect("alloc");
        gpu.fill_bytes(&mut d, 0xA5).expect("fill");
        gpu.upload_pageable(&src, &mut d).expect("upload");
        let mut back = vec![0u8; n + 100];
        gpu.download(&d, &mut back).expect("download");
        assert!(back[..n] == src[..], "n={n}: uploaded bytes differ");
        assert!(
            back[n..].iter().all(|&b| b == 0xA5),
            "n={n}: bytes past the upload changed"
        );
    }
    let mut small = gpu.alloc::<u8>(10).expect("alloc");
    let err = gpu
        .upload_pageable(&[0u8; 11], &mut small)
        .expect_err("an upload longer than its buffer must fail");
    assert!(err.to_string().contains("11 bytes"), "{err}");
}
