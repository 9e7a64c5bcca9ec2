//! tessera-query: tile-based query operators over compressed columns.
//!
//! [`index`] builds bitmap indexes (WAH) over integer columns and answers `IN (...)` and range
//! predicates ANDed across columns directly on the compressed bitmaps.
//!
//! [`sum_between`] answers `SELECT SUM(x) FROM t WHERE x BETWEEN lo AND hi` on a u32 column
//! stored as GPU-FOR / GPU-DFOR / GPU-RFOR (or plain) chunks the way the paper's fused GPU
//! kernels do (section 7): one 512-value tile at a time is decoded into a buffer on the stack,
//! filtered and added, so the column is never materialised. It is the CPU check of the GPU's
//! fused query (`tessera_gpu::Gpu::sum_between`).
//!
//! The tile decoders ([`tile`]) are written from the format pages, independently of
//! `tessera_codecs`' decoders, and validate as they go: every `block_starts` entry before the
//! first tile, then each block's metadata before it is unpacked. Corrupt input returns the
//! `Error` variant the codecs' decoders return.

pub mod index;
pub mod tile;

use tessera_format::{CodecId, Error, Result};

pub use tile::{Chunk, TileReader, TILE_VALUES};

/// SUM(x) over the values x of `chunks` (a u32 column) with `lo <= x <= hi`, tile by tile.
pub fn sum_between(chunks: &[Chunk<'_>], lo: u32, hi: u32) -> Result<u64> {
    let mut sum = 0u64;
    let mut buf = [0u32; TILE_VALUES];
    for c in chunks {
        if c.codec == CodecId::Plain {
            if c.payload.len() != 4 * c.value_count as usize {
                return Err(Error::CountMismatch {
                    what: "plain payload bytes vs 4 * value count",
                    expected: 4 * c.value_count as u64,
                    found: c.payload.len() as u64,
                });
            }
            let values = c
                .payload
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            sum += sum_values(values, lo, hi);
            continue;
        }
        let mut reader = TileReader::new(c)?;
        while let Some(n) = reader.next_tile(&mut buf)? {
            sum += sum_values(buf[..n].iter().copied(), lo, hi);
        }
    }
    Ok(sum)
}

/// SUM(x) over uncompressed values with `lo <= x <= hi`.
pub fn sum_between_values(values: &[u32], lo: u32, hi: u32) -> u64 {
    sum_values(values.iter().copied(), lo, hi)
}

fn sum_values(values: impl Iterator<Item = u32>, lo: u32, hi: u32) -> u64 {
    values
        .filter(|x| (lo..=hi).contains(x))
        .map(u64::from)
        .sum()
}
