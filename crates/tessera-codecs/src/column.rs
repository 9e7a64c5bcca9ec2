//! Chunks of a logical integer column as raw little-endian bytes (API contract).

use tessera_format::{CodecId, LogicalType, Result};

/// Encodes one chunk: `raw` holds `raw.len() / ty.width()` values. `requested = None` means auto:
/// the smallest of plain, for, dfor, rfor. Appends the payload to `out`; returns the codec used.
pub fn encode_chunk(
    ty: LogicalType,
    requested: Option<CodecId>,
    raw: &[u8],
    out: &mut Vec<u8>,
) -> Result<CodecId> {
    let _ = (ty, requested, raw, out);
    unimplemented!("column::encode_chunk")
}

/// Decodes one chunk into `out` (`value_count * ty.width()` bytes) with the fast decoder.
pub fn decode_chunk(ty: LogicalType, codec: CodecId, payload: &[u8], out: &mut [u8]) -> Result<()> {
    let _ = (ty, codec, payload, out);
    unimplemented!("column::decode_chunk")
}

/// Same as [`decode_chunk`] with the reference decoder.
pub fn decode_chunk_reference(
    ty: LogicalType,
    codec: CodecId,
    payload: &[u8],
    out: &mut [u8],
) -> Result<()> {
    let _ = (ty, codec, payload, out);
    unimplemented!("column::decode_chunk_reference")
}
