//! Chunks of a logical integer column as raw little-endian bytes.
//!
//! - Lane mapping (`int-common.md` §2): u8/u16/u32 zero-extend into lane 32; i8/i16/i32 flip
//!   the type's sign bit, then zero-extend; u64 is lane 64 as is; i64 flips bit 63. The mapping
//!   is order-preserving, so the FOR reference (a minimum) means the same for signed types.
//! - Plain (`container.md` §2): the raw bytes at the logical width; decoding checks the payload
//!   length is exactly `value_count * width` (`Truncated` / `TrailingBytes`).
//! - Auto (`requested = None`): the codec with the smallest exact payload size
//!   ([`crate::int::encoded_size`]; plain is `n * width`). Ties go to the earlier of
//!   **for, dfor, rfor, plain**, so the choice is deterministic.
//! - Decoding narrows lane values back to the logical type; an 8- or 16-bit lane value that does
//!   not fit is corruption (`Error::ValueOutOfRange`).

use crate::int::{self, LaneWord};
use tessera_format::{CodecId, Error, Lane, LogicalType, Result, MAX_CHUNK_VALUES};

/// Candidate order of the automatic choice; an earlier codec wins a tie.
pub const AUTO_ORDER: [CodecId; 4] = [CodecId::For, CodecId::Dfor, CodecId::Rfor, CodecId::Plain];

fn value_count(ty: LogicalType, bytes: usize, what: &str) -> Result<usize> {
    let w = ty.width();
    if bytes % w != 0 {
        return Err(Error::InvalidArgument(format!(
            "{what} of {bytes} bytes is not a whole number of {} values",
            ty.name()
        )));
    }
    let n = bytes / w;
    if n > MAX_CHUNK_VALUES as usize {
        return Err(Error::InvalidArgument(format!(
            "chunk of {n} values exceeds the limit of {MAX_CHUNK_VALUES}"
        )));
    }
    Ok(n)
}

/// Raw little-endian values of a lane-32 type to lane words.
fn to_lane32(ty: LogicalType, raw: &[u8]) -> Vec<u32> {
    match ty {
        LogicalType::U8 => raw.iter().map(|&b| b as u32).collect(),
        LogicalType::I8 => raw.iter().map(|&b| (b ^ 0x80) as u32).collect(),
        LogicalType::U16 => raw
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]) as u32)
            .collect(),
        LogicalType::I16 => raw
            .chunks_exact(2)
            .map(|c| (u16::from_le_bytes([c[0], c[1]]) ^ 0x8000) as u32)
            .collect(),
        LogicalType::I32 => raw
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) ^ 0x8000_0000)
            .collect(),
        _ => raw
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    }
}

/// Raw little-endian values of a lane-64 type to lane words.
fn to_lane64(ty: LogicalType, raw: &[u8]) -> Vec<u64> {
    let flip = if ty.signed() { 1u64 << 63 } else { 0 };
    raw.chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) ^ flip)
        .collect()
}

fn out_of_range(ty: LogicalType, index: usize, found: u32) -> Error {
    Error::ValueOutOfRange {
        index: index as u64,
        ty: ty.name(),
        found: found as u64,
    }
}

/// Lane-32 words back to raw little-endian values, checking 8- and 16-bit types fit.
fn from_lane32(ty: LogicalType, lanes: &[u32], out: &mut [u8]) -> Result<()> {
    match ty {
        LogicalType::U8 | LogicalType::I8 => {
            let flip = if ty.signed() { 0x80 } else { 0 };
            for (i, (o, &u)) in out.iter_mut().zip(lanes).enumerate() {
                if u > 0xff {
                    return Err(out_of_range(ty, i, u));
                }
                *o = u as u8 ^ flip;
            }
        }
        LogicalType::U16 | LogicalType::I16 => {
            let flip = if ty.signed() { 0x8000 } else { 0 };
            for (i, (o, &u)) in out.chunks_exact_mut(2).zip(lanes).enumerate() {
                if u > 0xffff {
                    return Err(out_of_range(ty, i, u));
                }
                o.copy_from_slice(&(u as u16 ^ flip).to_le_bytes());
            }
        }
        _ => {
            let flip = if ty.signed() { 0x8000_0000 } else { 0 };
            for (o, &u) in out.chunks_exact_mut(4).zip(lanes) {
                o.copy_from_slice(&(u ^ flip).to_le_bytes());
            }
        }
    }
    Ok(())
}

fn from_lane64(ty: LogicalType, lanes: &[u64], out: &mut [u8]) {
    let flip = if ty.signed() { 1u64 << 63 } else { 0 };
    for (o, &u) in out.chunks_exact_mut(8).zip(lanes) {
        o.copy_from_slice(&(u ^ flip).to_le_bytes());
    }
}

/// The automatic choice for `lanes` whose plain form takes `plain_bytes`.
fn choose<W: LaneWord>(lanes: &[W], plain_bytes: usize) -> Result<CodecId> {
    let mut best = (CodecId::Plain, usize::MAX);
    for codec in AUTO_ORDER {
        let size = match codec {
            CodecId::Plain => plain_bytes,
            c => int::encoded_size(c, lanes)?,
        };
        if size < best.1 {
            best = (codec, size);
        }
    }
    Ok(best.0)
}

fn encode_lanes<W: LaneWord>(
    lanes: &[W],
    requested: Option<CodecId>,
    raw: &[u8],
    out: &mut Vec<u8>,
) -> Result<CodecId> {
    let codec = match requested {
        Some(c) => c,
        None => choose(lanes, raw.len())?,
    };
    match codec {
        CodecId::Plain => out.extend_from_slice(raw),
        c => int::encode(c, lanes, out)?,
    }
    Ok(codec)
}

/// Encodes one chunk: `raw` holds `raw.len() / ty.width()` values. `requested = None` means auto:
/// the smallest of plain, for, dfor, rfor. Appends the payload to `out`; returns the codec used.
pub fn encode_chunk(
    ty: LogicalType,
    requested: Option<CodecId>,
    raw: &[u8],
    out: &mut Vec<u8>,
) -> Result<CodecId> {
    value_count(ty, raw.len(), "raw chunk")?;
    if requested == Some(CodecId::Plain) {
        out.extend_from_slice(raw);
        return Ok(CodecId::Plain);
    }
    match ty.lane() {
        Lane::L32 => encode_lanes(&to_lane32(ty, raw), requested, raw, out),
        Lane::L64 => encode_lanes(&to_lane64(ty, raw), requested, raw, out),
    }
}

fn decode_impl(
    ty: LogicalType,
    codec: CodecId,
    payload: &[u8],
    out: &mut [u8],
    reference: bool,
) -> Result<()> {
    let n = value_count(ty, out.len(), "output buffer")?;
    if codec == CodecId::Plain {
        if payload.len() < out.len() {
            return Err(Error::truncated(
                "plain payload",
                0,
                out.len(),
                payload.len(),
            ));
        }
        if payload.len() > out.len() {
            return Err(Error::TrailingBytes {
                what: "plain payload",
                offset: out.len() as u64,
                count: (payload.len() - out.len()) as u64,
            });
        }
        out.copy_from_slice(payload);
        return Ok(());
    }
    fn run<W: LaneWord>(
        codec: CodecId,
        payload: &[u8],
        lanes: &mut [W],
        reference: bool,
    ) -> Result<()> {
        if reference {
            int::decode_reference(codec, payload, lanes)
        } else {
            int::decode(codec, payload, lanes)
        }
    }
    match ty.lane() {
        Lane::L32 => {
            let mut lanes = vec![0u32; n];
            run(codec, payload, &mut lanes, reference)?;
            from_lane32(ty, &lanes, out)
        }
        Lane::L64 => {
            let mut lanes = vec![0u64; n];
            run(codec, payload, &mut lanes, reference)?;
            from_lane64(ty, &lanes, out);
            Ok(())
        }
    }
}

/// Decodes one chunk into `out` (`value_count * ty.width()` bytes) with the fast decoder.
pub fn decode_chunk(ty: LogicalType, codec: CodecId, payload: &[u8], out: &mut [u8]) -> Result<()> {
    decode_impl(ty, codec, payload, out, false)
}

/// Same as [`decode_chunk`] with the reference decoder.
pub fn decode_chunk_reference(
    ty: LogicalType,
    codec: CodecId,
    payload: &[u8],
    out: &mut [u8],
) -> Result<()> {
    decode_impl(ty, codec, payload, out, true)
}
