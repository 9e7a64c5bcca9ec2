//! Constants and structs shared with the kernels (`kernels/include/common.cuh`).
//!
//! Every `TS_*` `#define` of `common.cuh` has a twin here with the same value; the test at the
//! bottom parses the header and checks each pair, so host and device can never disagree on a
//! layout constant. [`ChunkDesc`] is `#[repr(C)]` with the field order and sizes of the CUDA
//! struct (32 bytes, no padding).

use cudarc::driver::DeviceRepr;

/// int-common §3: words in a chunk header.
pub const HEADER_WORDS: usize = 4;
/// int-common §5: values per miniblock.
pub const MINIBLOCK_VALUES: usize = 32;
/// for.md / dfor.md: values per block.
pub const FOR_BLOCK_VALUES: usize = 128;
/// for.md / dfor.md: miniblocks per block.
pub const FOR_MINIBLOCKS: usize = 4;
/// dfor.md: blocks per delta tile (D).
pub const DFOR_TILE_BLOCKS: usize = 4;
/// rfor.md: values per block.
pub const RFOR_BLOCK_VALUES: usize = 512;
/// rfor.md: miniblocks per array per block (the header's miniblock_count).
pub const RFOR_MINIBLOCKS: usize = 16;
/// rfor.md: the longest run.
pub const RFOR_MAX_LENGTH: usize = 512;
/// rfor.md: widest run-length miniblock.
pub const RFOR_MAX_LENGTH_BITS: usize = 10;
/// Threads per thread block of every tile kernel.
pub const THREADS: u32 = 128;
/// Values each thread holds per tile.
pub const ITEMS: usize = 4;
/// Values per tile (every codec decodes 512-value tiles).
pub const TILE_VALUES: usize = 512;
/// Tiles a thread block loads at once (`TS_*_SLAB_*` in common.cuh), per codec and lane.
pub const FOR_SLAB_L32: u32 = 4;
pub const FOR_SLAB_L64: u32 = 2;
pub const RFOR_SLAB_L32: u32 = 4;
pub const RFOR_SLAB_L64: u32 = 4;

/// Tiles per slab of the decode and query kernels of `codec` in `lane` (FOR and DFOR share
/// their storage, hence their slab size).
pub fn slab_tiles(codec: tessera_format::CodecId, lane: tessera_format::Lane) -> u32 {
    use tessera_format::{CodecId, Lane};
    match (codec, lane) {
        (CodecId::Rfor, Lane::L32) => RFOR_SLAB_L32,
        (CodecId::Rfor, Lane::L64) => RFOR_SLAB_L64,
        (_, Lane::L32) => FOR_SLAB_L32,
        (_, Lane::L64) => FOR_SLAB_L64,
    }
}

/// Status codes written by kernels (`TS_ST_*`).
pub const ST_BLOCK_START: u32 = 1;
pub const ST_TRUNCATED: u32 = 2;
pub const ST_BIT_WIDTH: u32 = 3;
pub const ST_RUN_COUNT: u32 = 4;
pub const ST_RUN_LENGTH: u32 = 5;
pub const ST_RUN_SUM: u32 = 6;
pub const ST_RANGE: u32 = 7;
pub const ST_LENGTH_REF: u32 = 8;
/// Status classes (bits 63..60 of a status key).
pub const CLASS_BLOCK_STARTS: u32 = 0;
pub const CLASS_BLOCK: u32 = 1;
pub const CLASS_VALUES: u32 = 2;
/// A chunk status that reports nothing.
pub const STATUS_OK: u64 = u64::MAX;

/// One row of the per-chunk table a launch decodes from (`struct ChunkDesc` in common.cuh).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkDesc {
    /// First word of the chunk payload in the concatenated words buffer.
    pub payload_word: u64,
    /// Index of the chunk's first value in the output column.
    pub out_index: u64,
    /// Payload length in words.
    pub payload_words: u32,
    /// Values in the chunk.
    pub total_count: u32,
    /// Index of the chunk's first tile among the tiles of its launch.
    pub first_tile: u32,
    /// Index of the chunk's first slab among the slabs of its launch.
    pub first_slab: u32,
}

// SAFETY: plain-old-data, `#[repr(C)]`, laid out exactly like the CUDA struct (checked by a test).
unsafe impl DeviceRepr for ChunkDesc {}

/// A decoded status key (see common.cuh).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusKey {
    pub class: u32,
    pub position: u32,
    pub code: u32,
    pub detail: u32,
}

impl StatusKey {
    /// `None` for [`STATUS_OK`].
    pub fn decode(key: u64) -> Option<StatusKey> {
        (key != STATUS_OK).then_some(StatusKey {
            class: (key >> 60) as u32,
            position: ((key >> 36) & 0xFF_FFFF) as u32,
            code: ((key >> 32) & 0xF) as u32,
            detail: key as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defines() -> std::collections::HashMap<String, String> {
        crate::kernels::header("include/common.cuh")
            .expect("common.cuh is embedded")
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                (it.next() == Some("#define")).then_some(())?;
                let name = it.next()?.strip_prefix("TS_")?.to_string();
                Some((name, it.next().unwrap_or("").to_string()))
            })
            .collect()
    }

    #[test]
    fn host_constants_match_common_cuh() {
        let d = defines();
        let num = |k: &str| -> u64 {
            let v = d
                .get(k)
                .unwrap_or_else(|| panic!("TS_{k} missing from common.cuh"));
            let v = v.trim_end_matches("ull");
            if let Some(hex) = v.strip_prefix("0x") {
                u64::from_str_radix(hex, 16).expect("hex constant")
            } else {
                v.parse().expect("decimal constant")
            }
        };
        let pairs: &[(&str, u64)] = &[
            ("HEADER_WORDS", HEADER_WORDS as u64),
            ("MINIBLOCK_VALUES", MINIBLOCK_VALUES as u64),
            ("FOR_BLOCK_VALUES", FOR_BLOCK_VALUES as u64),
            ("FOR_MINIBLOCKS", FOR_MINIBLOCKS as u64),
            ("DFOR_TILE_BLOCKS", DFOR_TILE_BLOCKS as u64),
            ("RFOR_BLOCK_VALUES", RFOR_BLOCK_VALUES as u64),
            ("RFOR_MINIBLOCKS", RFOR_MINIBLOCKS as u64),
            ("RFOR_MAX_LENGTH", RFOR_MAX_LENGTH as u64),
            ("RFOR_MAX_LENGTH_BITS", RFOR_MAX_LENGTH_BITS as u64),
            ("THREADS", THREADS as u64),
            ("ITEMS", ITEMS as u64),
            ("TILE_VALUES", TILE_VALUES as u64),
            ("FOR_SLAB_L32", FOR_SLAB_L32 as u64),
            ("FOR_SLAB_L64", FOR_SLAB_L64 as u64),
            ("RFOR_SLAB_L32", RFOR_SLAB_L32 as u64),
            ("RFOR_SLAB_L64", RFOR_SLAB_L64 as u64),
            ("ST_BLOCK_START", ST_BLOCK_START as u64),
            ("ST_TRUNCATED", ST_TRUNCATED as u64),
            ("ST_BIT_WIDTH", ST_BIT_WIDTH as u64),
            ("ST_RUN_COUNT", ST_RUN_COUNT as u64),
            ("ST_RUN_LENGTH", ST_RUN_LENGTH as u64),
            ("ST_RUN_SUM", ST_RUN_SUM as u64),
            ("ST_RANGE", ST_RANGE as u64),
            ("ST_LENGTH_REF", ST_LENGTH_REF as u64),
            ("CLASS_BLOCK_STARTS", CLASS_BLOCK_STARTS as u64),
            ("CLASS_BLOCK", CLASS_BLOCK as u64),
            ("CLASS_VALUES", CLASS_VALUES as u64),
            ("STATUS_OK", STATUS_OK),
        ];
        for &(k, v) in pairs {
            assert_eq!(num(k), v, "TS_{k}");
        }
        // Every TS_ constant of the header is mirrored above.
        for k in d.keys() {
            let is_const = d[k].chars().next().is_some_and(|c| c.is_ascii_digit());
            if is_const {
                assert!(pairs.iter().any(|(p, _)| p == k), "TS_{k} has no host twin");
            }
        }
        assert_eq!(TILE_VALUES, THREADS as usize * ITEMS);
        assert_eq!(TILE_VALUES, FOR_BLOCK_VALUES * DFOR_TILE_BLOCKS);
        assert_eq!(TILE_VALUES, RFOR_BLOCK_VALUES);
    }

    #[test]
    fn chunk_desc_is_32_bytes() {
        assert_eq!(std::mem::size_of::<ChunkDesc>(), 32);
        assert_eq!(std::mem::align_of::<ChunkDesc>(), 8);
    }

    #[test]
    fn status_keys_round_trip() {
        let key = (1u64 << 60) | (77u64 << 36) | (3u64 << 32) | 0x0205;
        assert_eq!(
            StatusKey::decode(key),
            Some(StatusKey {
                class: 1,
                position: 77,
                code: 3,
                detail: 0x205
            })
        );
        assert_eq!(StatusKey::decode(STATUS_OK), None);
    }
}
