//! Helpers shared by the GPU tests: the GPU handle (or a printed skip), fresh random data of
//! every shape, CPU encoding and decoding through `tessera_codecs`.
#![allow(dead_code)]

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tessera_codecs::column;
use tessera_format::{CodecId, LogicalType};
use tessera_gpu::Gpu;

/// The process's GPU, or `None` after printing why the test is skipped
/// ([`tessera_gpu::testing`]: TESSERA_REQUIRE_GPU=1 makes that a failure).
pub fn gpu() -> Option<&'static Gpu> {
    tessera_gpu::testing::gpu()
}

/// A fresh seeded RNG; the seed is printed so a failure can be replayed (TESSERA_SEED=...).
pub fn rng() -> StdRng {
    let seed = std::env::var("TESSERA_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    eprintln!("seed {seed}");
    StdRng::seed_from_u64(seed)
}

pub const INT_CODECS: [CodecId; 3] = [CodecId::For, CodecId::Dfor, CodecId::Rfor];

/// The size classes every codec is checked at.
pub const SIZES: [usize; 12] = [0, 1, 31, 32, 127, 128, 129, 511, 512, 513, 1000, 4099];

/// The data's shape.
#[derive(Debug, Clone, Copy)]
pub enum Shape {
    /// Uniform below 2^bits (lane domain, before the sign flip).
    Uniform(u32),
    /// Random walk (sorted-ish, DFOR's case).
    Walk,
    /// Runs of random length (RFOR's case).
    Runs,
}

/// `n` raw little-endian values of `ty` of the given shape.
pub fn values(rng: &mut StdRng, ty: LogicalType, n: usize, shape: Shape) -> Vec<u8> {
    let w = ty.width();
    let bits = 8 * w as u32;
    let mut out = Vec::with_capacity(n * w);
    let mut x: u64 = rng.random();
    let mut left = 0usize;
    for _ in 0..n {
        let lane_value: u64 = match shape {
            Shape::Uniform(b) => {
                let b = b.min(bits);
                if b == 0 {
                    0
                } else {
                    rng.random::<u64>() >> (64 - b)
                }
            }
            Shape::Walk => {
                x = x.wrapping_add(rng.random_range(0..64));
                x
            }
            Shape::Runs => {
                if left == 0 {
                    x = rng.random::<u64>() >> rng.random_range(0..64);
                    left = rng.random_range(1..100);
                }
                left -= 1;
                x
            }
        };
        // Lane value -> logical value: undo the sign flip so every lane width is reachable.
        let v = if ty.signed() {
            lane_value ^ (1u64 << (bits - 1))
        } else {
            lane_value
        };
        out.extend_from_slice(&v.to_le_bytes()[..w]);
    }
    out
}

/// A random shape, covering every bit width over many calls.
pub fn any_shape(rng: &mut StdRng) -> Shape {
    match rng.random_range(0..4) {
        0 | 1 => Shape::Uniform(rng.random_range(0..=64)),
        2 => Shape::Walk,
        _ => Shape::Runs,
    }
}

/// CPU-encodes raw values as one chunk of `codec`.
pub fn encode(ty: LogicalType, codec: CodecId, raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let used =
        column::encode_chunk(ty, Some(codec), raw, &mut out).expect("CPU encoder accepts the data");
    assert_eq!(used, codec);
    out
}

/// Raw values to lane words (int-common §2).
pub fn lanes32(ty: LogicalType, raw: &[u8]) -> Vec<u32> {
    let w = ty.width();
    raw.chunks_exact(w)
        .map(|c| {
            let mut b = [0u8; 4];
            b[..w].copy_from_slice(c);
            let v = u32::from_le_bytes(b);
            if ty.signed() {
                v ^ (1u32 << (8 * w - 1))
            } else {
                v
            }
        })
        .collect()
}

pub fn lanes64(ty: LogicalType, raw: &[u8]) -> Vec<u64> {
    raw.chunks_exact(8)
        .map(|c| {
            let v = u64::from_le_bytes(c.try_into().expect("8 bytes"));
            if ty.signed() {
                v ^ (1 << 63)
            } else {
                v
            }
        })
        .collect()
}

/// The CPU reference decoder's output of `(codec, payload, value_count)` chunks, back to back.
pub fn cpu_decoded(ty: LogicalType, chunks: &[(CodecId, Vec<u8>, u32)]) -> Vec<u8> {
    let mut expected = Vec::new();
    for (codec, payload, n) in chunks {
        let mut out = vec![0u8; *n as usize * ty.width()];
        column::decode_chunk_reference(ty, *codec, payload, &mut out)
            .expect("CPU decodes its own payload");
        expected.extend_from_slice(&out);
    }
    expected
}

/// The chunk references of `(codec, payload, value_count)` triples.
pub fn chunk_refs(chunks: &[(CodecId, Vec<u8>, u32)]) -> Vec<tessera_gpu::ChunkRef<'_>> {
    chunks
        .iter()
        .map(|(c, p, n)| tessera_gpu::ChunkRef {
            codec: *c,
            payload: p,
            value_count: *n,
        })
        .collect()
}

/// A gzip member of `data` (Deflate at `level`, named `name` when it is not empty) with the
/// CRC-32 of [`crc32_of`] and ISIZE.
pub fn gzip_member(data: &[u8], level: u8, name: &str) -> Vec<u8> {
    let flg = if name.is_empty() { 0 } else { 8 };
    let mut m = vec![0x1f, 0x8b, 8, flg, 0, 0, 0, 0, 0, 3];
    if !name.is_empty() {
        m.extend_from_slice(name.as_bytes());
        m.push(0);
    }
    m.extend(miniz_oxide::deflate::compress_to_vec(data, level));
    m.extend_from_slice(&crc32_of(data).to_le_bytes());
    m.extend_from_slice(&(data.len() as u32).to_le_bytes());
    m
}

/// CRC-32 (IEEE) bit by bit: the tests' own, independent of the crate the library uses.
pub fn crc32_of(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}
