//! From kernel status keys to `Error`s that match the CPU decoders'.
//!
//! A kernel reports the first problem of each chunk as a status key (common.cuh): class
//! (block_starts, block contents, decoded values), position (block, or value index inside the
//! chunk), code and one detail word. [`chunk_error`] merges it with what the host checked itself
//! (block_starts[nb] against the data length) in the CPU decoders' order
//! (`tessera_codecs::int`): the end of the data area first, then every block_starts entry, then
//! blocks in order, then the narrowing of decoded values. With the chunk's payload at hand the
//! error carries the CPU's exact offsets and bounds; without it (a column already on the
//! device), fields the kernel could not report are filled from the chunk's shape or left 0, the
//! variant being the same either way.

use tessera_format::{CodecId, Error, LogicalType};

use super::decode::{word, ChunkShape};
use super::layout::{self, StatusKey, HEADER_WORDS};

/// The first error of a chunk, or `None` when the chunk decoded cleanly.
pub(crate) fn chunk_error(
    ty: LogicalType,
    shape: &ChunkShape,
    key: Option<StatusKey>,
    payload: Option<&[u8]>,
) -> Option<Error> {
    // block_starts[block_count] against the data area first (a cut-off payload reads as
    // truncated, not as a bad offset), then every entry, then the blocks.
    let data_offset = data_offset(shape);
    if shape.last_start > shape.data_len {
        return Some(Error::Truncated {
            what: "data area (block_starts[block_count])",
            offset: data_offset,
            needed: 4 * shape.last_start as u64,
            available: 4 * shape.data_len as u64,
        });
    }
    if shape.last_start < shape.data_len {
        return Some(Error::TrailingBytes {
            what: "data area (block_starts[block_count])",
            offset: data_offset + 4 * shape.last_start as u64,
            count: 4 * (shape.data_len - shape.last_start) as u64,
        });
    }
    key.map(|k| to_error(k, ty, shape, payload))
}

/// Byte offset of the data area in the payload.
fn data_offset(shape: &ChunkShape) -> u64 {
    4 * (HEADER_WORDS as u64 + shape.block_count as u64 + 1)
}

/// block_starts[k] read from the payload, when there is one.
fn block_start(payload: Option<&[u8]>, k: u32) -> Option<u32> {
    let p = payload?;
    let i = HEADER_WORDS + k as usize;
    (p.len() >= 4 * (i + 1)).then(|| word(p, i))
}

/// Words at the start of the data area before block 0 (DFOR's first first_value).
fn lead_words(shape: &ChunkShape) -> u32 {
    if shape.codec == CodecId::Dfor && shape.block_count > 0 {
        shape.lane.ref_words() as u32
    } else {
        0
    }
}

fn block_what(codec: CodecId) -> &'static str {
    match codec {
        CodecId::Dfor => "dfor block",
        CodecId::Rfor => "rfor block",
        _ => "for block",
    }
}

pub(crate) fn to_error(
    k: StatusKey,
    ty: LogicalType,
    shape: &ChunkShape,
    payload: Option<&[u8]>,
) -> Error {
    let lane = ty.lane();
    let start = block_start(payload, k.position);
    // Payload byte offset of block k (the CPU's `off`).
    let block_offset = data_offset(shape) + 4 * start.unwrap_or(0) as u64;
    match k.code {
        layout::ST_BLOCK_START => Error::BlockStartOutOfRange {
            block: k.position as u64,
            found: k.detail as u64,
            min: if k.position == 0 {
                lead_words(shape) as u64
            } else {
                block_start(payload, k.position - 1).unwrap_or(0) as u64
            },
            max: shape.data_len as u64,
        },
        layout::ST_TRUNCATED => {
            let end = block_start(payload, k.position + 1);
            let mut available = match (start, end) {
                (Some(s), Some(e)) => e.saturating_sub(s),
                _ => 0,
            };
            let next_is_tile = k.position + 1 < shape.block_count
                && (k.position + 1) % layout::DFOR_TILE_BLOCKS as u32 == 0;
            if shape.codec == CodecId::Dfor && next_is_tile {
                available = available.saturating_sub(lane.ref_words() as u32);
            }
            Error::Truncated {
                what: block_what(shape.codec),
                offset: block_offset,
                needed: 4 * k.detail as u64,
                available: 4 * available as u64,
            }
        }
        layout::ST_BIT_WIDTH => {
            let miniblock = k.detail >> 8;
            let found = k.detail & 0xFF;
            let max = if shape.codec == CodecId::Rfor {
                // Miniblocks m..2m hold run lengths; m from the run word when we have it.
                let r = payload
                    .zip(start)
                    .and_then(|(p, s)| {
                        let i = HEADER_WORDS
                            + shape.block_count as usize
                            + 1
                            + s as usize
                            + lane.ref_words();
                        (p.len() >= 4 * (i + 1)).then(|| word(p, i) & 0xFFFF)
                    })
                    .unwrap_or(0);
                let m = r.div_ceil(32);
                if m > 0 && miniblock >= m || m == 0 && found <= lane.bits() {
                    layout::RFOR_MAX_LENGTH_BITS as u32
                } else {
                    lane.bits()
                }
            } else {
                lane.bits()
            };
            Error::BitWidthTooLarge {
                block: k.position as u64,
                miniblock,
                found,
                max,
            }
        }
        layout::ST_RUN_COUNT => Error::InvalidHeader {
            field: "rfor run count",
            offset: block_offset + 4 * lane.ref_words() as u64,
            expected: format!("1..={}", layout::RFOR_MAX_LENGTH),
            found: k.detail as u64,
        },
        layout::ST_LENGTH_REF => Error::InvalidHeader {
            field: "rfor length_reference",
            offset: block_offset + 4 * lane.ref_words() as u64,
            expected: format!("1..={}", layout::RFOR_MAX_LENGTH),
            found: k.detail as u64,
        },
        layout::ST_RUN_LENGTH => Error::InvalidHeader {
            field: "rfor run length",
            offset: block_offset,
            expected: format!("1..={}", layout::RFOR_MAX_LENGTH),
            found: (k.detail & 0x1FFFF) as u64,
        },
        layout::ST_RUN_SUM => {
            let block_values = shape
                .total_count
                .saturating_sub(k.position * layout::RFOR_BLOCK_VALUES as u32)
                .min(layout::RFOR_BLOCK_VALUES as u32);
            Error::CountMismatch {
                what: "rfor run lengths sum vs block value count",
                expected: block_values as u64,
                found: k.detail as u64,
            }
        }
        layout::ST_RANGE => Error::ValueOutOfRange {
            index: k.position as u64,
            ty: ty.name(),
            found: k.detail as u64,
        },
        other => Error::Gpu(format!(
            "kernel reported unknown status code {other} at position {}",
            k.position
        )),
    }
}
