//! ORC integer and byte encodings: the specification's own examples, round trips through the
//! test encoders for every sub-encoding and width code (signed and unsigned), and hostile
//! streams (truncated, runs past the chunk, bad widths) giving typed errors.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tessera_codecs::orc::{self, decode_width, encode};
use tessera_format::Error;

fn v1(bytes: &[u8], signed: bool, n: usize) -> Result<Vec<i64>, Error> {
    let mut out = vec![0i64; n];
    orc::decode_rle_v1(bytes, signed, &mut out).map(|_| out)
}

fn v2(bytes: &[u8], signed: bool, n: usize) -> Result<Vec<i64>, Error> {
    let mut out = vec![0i64; n];
    orc::decode_rle_v2(bytes, signed, &mut out).map(|_| out)
}

#[test]
fn spec_examples() {
    // Byte RLE: a hundred zeros; 0x44, 0x45.
    let mut out = vec![1u8; 100];
    assert_eq!(
        orc::decode_byte_rle(&[0x61, 0x00], &mut out).expect("valid"),
        2
    );
    assert!(out.iter().all(|&b| b == 0));
    let mut out = [0u8; 2];
    orc::decode_byte_rle(&[0xfe, 0x44, 0x45], &mut out).expect("valid");
    assert_eq!(out, [0x44, 0x45]);
    // Booleans: [0xff, 0x80] is one true then seven false.
    let mut b = [false; 8];
    orc::decode_bool(&[0xff, 0x80], &mut b).expect("valid");
    assert_eq!(b, [true, false, false, false, false, false, false, false]);
    // RLE v1.
    assert_eq!(
        v1(&[0x61, 0x00, 0x07], false, 100).expect("valid"),
        vec![7; 100]
    );
    assert_eq!(
        v1(&[0x61, 0xff, 0x64], false, 100).expect("valid"),
        (1..=100).rev().collect::<Vec<i64>>()
    );
    assert_eq!(
        v1(&[0xfb, 0x02, 0x03, 0x04, 0x07, 0x0b], false, 5).expect("valid"),
        vec![2, 3, 4, 7, 11]
    );
    // RLE v2.
    assert_eq!(
        v2(&[0x0a, 0x27, 0x10], false, 5).expect("valid"),
        vec![10000; 5]
    );
    assert_eq!(
        v2(
            &[0x5e, 0x03, 0x5c, 0xa1, 0xab, 0x1e, 0xde, 0xad, 0xbe, 0xef],
            false,
            4
        )
        .expect("valid"),
        vec![23713, 43806, 57005, 48879]
    );
    let pb = [
        0x8e, 0x13, 0x2b, 0x21, 0x07, 0xd0, 0x1e, 0x00, 0x14, 0x70, 0x28, 0x32, 0x3c, 0x46, 0x50,
        0x5a, 0x64, 0x6e, 0x78, 0x82, 0x8c, 0x96, 0xa0, 0xaa, 0xb4, 0xbe, 0xfc, 0xe8,
    ];
    assert_eq!(
        v2(&pb, false, 20).expect("valid"),
        vec![
            2030, 2000, 2020, 1000000, 2040, 2050, 2060, 2070, 2080, 2090, 2100, 2110, 2120, 2130,
            2140, 2150, 2160, 2170, 2180, 2190
        ]
    );
    assert_eq!(
        v2(&[0xc6, 0x09, 0x02, 0x02, 0x22, 0x42, 0x42, 0x46], false, 10).expect("valid"),
        vec![2, 3, 5, 7, 11, 13, 17, 19, 23, 29]
    );
}

#[test]
fn spec_examples_from_the_encoders() {
    let mut out = Vec::new();
    encode::short_repeat(&mut out, 10000, 5, false);
    assert_eq!(out, [0x0a, 0x27, 0x10]);
    let mut out = Vec::new();
    encode::direct(&mut out, &[23713, 43806, 57005, 48879], 15, false);
    assert_eq!(
        out,
        [0x5e, 0x03, 0x5c, 0xa1, 0xab, 0x1e, 0xde, 0xad, 0xbe, 0xef]
    );
    let mut out = Vec::new();
    encode::delta(&mut out, &[2, 3, 5, 7, 11, 13, 17, 19, 23, 29], false);
    assert_eq!(out, [0xc6, 0x09, 0x02, 0x02, 0x22, 0x42, 0x42, 0x46]);
    assert_eq!(encode::rle_v1(&[7; 100], false), [0x61, 0x00, 0x07]);
}

/// Values of exactly `bits` bits at most, in the stream's domain.
fn values(rng: &mut StdRng, n: usize, bits: u32, signed: bool) -> Vec<i64> {
    (0..n)
        .map(|_| {
            let u: u64 = if bits >= 64 {
                rng.random()
            } else {
                rng.random::<u64>() & ((1u64 << bits) - 1)
            };
            if signed {
                orc::unzigzag(u)
            } else {
                u as i64
            }
        })
        .collect()
}

#[test]
fn direct_every_width_code_round_trips() {
    let mut rng = StdRng::seed_from_u64(1);
    for signed in [false, true] {
        for code in 0..32 {
            for n in [1usize, 7, 64, 511, 512] {
                let vals = values(&mut rng, n, decode_width(code), signed);
                let mut s = Vec::new();
                encode::direct(&mut s, &vals, code, signed);
                assert_eq!(v2(&s, signed, n).expect("valid"), vals, "code {code} n {n}");
            }
        }
    }
}

#[test]
fn short_repeat_every_byte_width_round_trips() {
    for signed in [false, true] {
        for bytes in 1..=8u32 {
            for count in 3..=10 {
                let v = if signed {
                    -(1i64 << (bytes * 8 - 2))
                } else {
                    ((1u64 << (bytes * 8 - 1)) - 3) as i64
                };
                let mut s = Vec::new();
                encode::short_repeat(&mut s, v, count, signed);
                assert_eq!(v2(&s, signed, count).expect("valid"), vec![v; count]);
            }
        }
    }
}

#[test]
fn delta_round_trips_at_every_width() {
    let mut rng = StdRng::seed_from_u64(2);
    for signed in [false, true] {
        for bits in [0u32, 1, 2, 3, 5, 8, 13, 20, 26, 30, 32, 40, 48, 56, 60] {
            for n in [1usize, 2, 3, 100, 512] {
                let up = rng.random::<bool>() || !signed;
                let mut v = rng.random_range(-1000i64..1000).abs();
                let mut vals = Vec::with_capacity(n);
                for _ in 0..n {
                    vals.push(v);
                    let d = if bits == 0 {
                        5
                    } else {
                        1 + (rng.random::<u64>() >> (64 - bits.min(53))) as i64 / 2
                    };
                    v = if up { v + d } else { v - d };
                }
                let mut s = Vec::new();
                encode::delta(&mut s, &vals, signed);
                assert_eq!(v2(&s, signed, n).expect("valid"), vals, "bits {bits} n {n}");
            }
        }
    }
}

#[test]
fn patched_base_round_trips() {
    let mut rng = StdRng::seed_from_u64(3);
    for signed in [false, true] {
        for code in [0u32, 3, 7, 11, 15, 23, 27] {
            for n in [1usize, 20, 300, 512] {
                let w = decode_width(code);
                let mut vals = values(&mut rng, n, w, false);
                let base = if signed {
                    -rng.random_range(0..1i64 << 40)
                } else {
                    rng.random_range(0..1i64 << 20)
                };
                for v in &mut vals {
                    *v = base + (*v & ((1i64 << w.min(40)) - 1));
                }
                // A few outliers, one far from the others so a gap run > 255 can occur.
                for _ in 0..rng.random_range(1..6) {
                    let i = rng.random_range(0..n);
                    vals[i] = base + (rng.random_range(1..1i64 << 20) << w.min(40));
                }
                let mut s = Vec::new();
                if encode::patched_base(&mut s, &vals, code).is_some() {
                    assert_eq!(v2(&s, signed, n).expect("valid"), vals, "code {code} n {n}");
                }
            }
        }
    }
    // A patch list with a 255-gap skip entry.
    let mut vals = vec![10i64; 512];
    vals[0] = 10 + (1 << 12);
    vals[400] = 10 + (3 << 12);
    let mut s = Vec::new();
    encode::patched_base(&mut s, &vals, 11).expect("fits");
    assert_eq!(v2(&s, false, 512).expect("valid"), vals);
}

#[test]
fn whole_stream_encoders_round_trip() {
    let mut rng = StdRng::seed_from_u64(4);
    for signed in [false, true] {
        for n in [0usize, 1, 2, 3, 10, 129, 1000, 5000] {
            let mut vals = Vec::new();
            while vals.len() < n {
                match rng.random_range(0..4) {
                    0 => vals.extend(std::iter::repeat_n(
                        rng.random_range(-50i64..50).abs(),
                        rng.random_range(1..200),
                    )),
                    1 => {
                        let s = rng.random_range(0i64..1000);
                        vals.extend((0..rng.random_range(1..300)).map(|k| s + 3 * k));
                    }
                    2 => vals.extend(
                        (0..rng.random_range(1..100)).map(|_| rng.random_range(0i64..1 << 30)),
                    ),
                    _ => vals.push(rng.random_range(0i64..1 << 50)),
                }
            }
            vals.truncate(n);
            if signed {
                for v in vals.iter_mut().step_by(3) {
                    *v = -*v;
                }
            }
            assert_eq!(
                v1(&encode::rle_v1(&vals, signed), signed, n).expect("valid"),
                vals
            );
            assert_eq!(
                v2(&encode::rle_v2(&vals, signed), signed, n).expect("valid"),
                vals
            );
            let bytes: Vec<u8> = vals.iter().map(|&v| (v % 7) as u8).collect();
            let mut out = vec![0u8; n];
            orc::decode_byte_rle(&encode::byte_rle(&bytes), &mut out).expect("valid");
            assert_eq!(out, bytes);
            let bits: Vec<bool> = vals.iter().map(|&v| v % 3 == 0).collect();
            let mut out = vec![false; n];
            orc::decode_bool(&encode::bools(&bits), &mut out).expect("valid");
            assert_eq!(out, bits);
        }
    }
}

#[test]
fn hostile_streams_give_typed_errors() {
    // Truncated: every prefix of valid streams.
    let vals: Vec<i64> = (0..700).map(|i| (i * i) % 1000 - 300).collect();
    for s in [encode::rle_v1(&vals, true), encode::rle_v2(&vals, true)] {
        for cut in [0, 1, s.len() / 2, s.len() - 1] {
            let a = v1(&s[..cut], true, vals.len());
            let b = v2(&s[..cut], true, vals.len());
            assert!(
                matches!(
                    b,
                    Err(Error::Truncated { .. })
                        | Err(Error::InvalidHeader { .. })
                        | Err(Error::CountMismatch { .. })
                ),
                "{b:?}"
            );
            assert!(a.is_err());
        }
    }
    assert!(matches!(
        v2(&[0x5e, 0x03, 0x5c], false, 4),
        Err(Error::Truncated { .. })
    ));
    // Runs past the chunk.
    assert!(matches!(
        v1(&[0x61, 0x00, 0x07], false, 99),
        Err(Error::CountMismatch { .. })
    ));
    assert!(matches!(
        v2(&[0x0a, 0x27, 0x10], false, 4),
        Err(Error::CountMismatch { .. })
    ));
    let mut out = [0u8; 50];
    assert!(matches!(
        orc::decode_byte_rle(&[0x61, 0x00], &mut out),
        Err(Error::CountMismatch { .. })
    ));
    // Bad widths: patch width 64 + gap width 8.
    assert!(matches!(
        v2(&[0x8e, 0x00, 0x1f, 0xe1, 0x01, 0x00, 0x00], false, 1),
        Err(Error::InvalidHeader { .. })
    ));
    // A patch index past the run (gap 3, run of 1).
    let bad = [0x8e, 0x00, 0x07, 0x21, 0x05, 0x01, 0xc0, 0x40];
    assert!(matches!(
        v2(&bad, false, 1),
        Err(Error::InvalidHeader { .. })
    ));
    let good = [0x8e, 0x00, 0x07, 0x21, 0x05, 0x01, 0x00, 0x40];
    assert_eq!(v2(&good, false, 1).expect("valid"), vec![5 + (1 | 1 << 8)]);
    // DELTA with packed deltas but a run of one.
    assert!(matches!(
        v2(&[0xc6, 0x00, 0x02, 0x02], false, 1),
        Err(Error::InvalidHeader { .. })
    ));
    // Varints longer than 10 bytes or over 64 bits.
    assert!(matches!(
        v1(
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
            false,
            1
        ),
        Err(Error::InvalidHeader { .. })
    ));
}
