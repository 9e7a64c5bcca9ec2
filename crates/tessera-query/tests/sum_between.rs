//! The tile-at-a-time CPU query equals a filter over the decoded column, for every codec, on
//! fresh random data of every size class, and rejects corrupt chunks without panicking.

use rand::{Rng, SeedableRng};
use tessera_codecs::int;
use tessera_format::CodecId;
use tessera_query::{sum_between, sum_between_values, Chunk, TileReader, TILE_VALUES};

fn seed() -> u64 {
    rand::rng().random()
}

fn encode(codec: CodecId, values: &[u32]) -> Vec<u8> {
    let mut out = Vec::new();
    int::encode(codec, values, &mut out).expect("encodes");
    out
}

fn data(rng: &mut impl Rng, n: usize, kind: u32) -> Vec<u32> {
    match kind {
        0 => {
            let bits = rng.random_range(0..32);
            (0..n).map(|_| rng.random_range(0..1u32 << bits)).collect()
        }
        1 => {
            let mut x = rng.random::<u32>();
            (0..n)
                .map(|_| {
                    x = x.wrapping_add(rng.random_range(0..100));
                    x
                })
                .collect()
        }
        _ => {
            let mut v = Vec::with_capacity(n);
            while v.len() < n {
                let x = rng.random::<u32>() >> rng.random_range(0..32);
                let run = rng.random_range(1..70).min(n - v.len());
                v.extend(std::iter::repeat_n(x, run));
            }
            v
        }
    }
}

#[test]
fn tiles_equal_the_reference_decoder_and_sums_equal_a_filter() {
    let s = seed();
    eprintln!("seed {s}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(s);
    for n in [
        0usize, 1, 31, 32, 127, 128, 129, 511, 512, 513, 4000, 70_000,
    ] {
        for kind in 0..3 {
            let values = data(&mut rng, n, kind);
            for codec in [CodecId::For, CodecId::Dfor, CodecId::Rfor] {
                let payload = encode(codec, &values);
                let chunk = Chunk {
                    codec,
                    payload: &payload,
                    value_count: n as u32,
                };
                let mut reader = TileReader::new(&chunk).expect("valid");
                let mut buf = [0u32; TILE_VALUES];
                let mut got = Vec::new();
                while let Some(k) = reader.next_tile(&mut buf).expect("valid") {
                    got.extend_from_slice(&buf[..k]);
                }
                assert_eq!(got, values, "{codec:?} n={n} kind={kind}");
                let (a, b) = (rng.random::<u32>(), rng.random::<u32>());
                let (lo, hi) = (a.min(b), a.max(b));
                assert_eq!(
                    sum_between(&[chunk], lo, hi).expect("valid"),
                    sum_between_values(&values, lo, hi),
                    "{codec:?} n={n}"
                );
            }
        }
    }
}

#[test]
fn corrupt_chunks_fail_like_the_codecs_decoder() {
    let s = seed();
    eprintln!("seed {s}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(s);
    for codec in [CodecId::For, CodecId::Dfor, CodecId::Rfor] {
        let values = data(&mut rng, 3000, if codec == CodecId::Rfor { 2 } else { 0 });
        let payload = encode(codec, &values);
        for _ in 0..2000 {
            let mut bad = payload.clone();
            let i = rng.random_range(0..bad.len());
            bad[i] ^= 1 << rng.random_range(0..8);
            if rng.random_bool(0.1) {
                bad.truncate(rng.random_range(0..bad.len()) & !3);
            }
            let chunk = Chunk {
                codec,
                payload: &bad,
                value_count: 3000,
            };
            let mut cpu = vec![0u32; 3000];
            let expected = int::decode_reference(codec, &bad, &mut cpu);
            let mut got = Vec::new();
            let ours = (|| {
                let mut reader = TileReader::new(&chunk)?;
                let mut buf = [0u32; TILE_VALUES];
                while let Some(k) = reader.next_tile(&mut buf)? {
                    got.extend_from_slice(&buf[..k]);
                }
                Ok::<_, tessera_format::Error>(())
            })();
            match (expected, ours) {
                (Ok(()), Ok(())) => assert_eq!(got, cpu),
                (Err(a), Err(b)) => assert_eq!(
                    std::mem::discriminant(&a),
                    std::mem::discriminant(&b),
                    "{a} vs {b}"
                ),
                (a, b) => panic!("{codec:?}: codecs {a:?}, tile reader {b:?}"),
            }
        }
    }
}
