//! The lane mapping (`int-common.md` §2): u8/u16/u32 zero-extend into lane 32; i8/i16/i32 flip
//! the type's sign bit, then zero-extend; u64 is lane 64 as is; i64 flips bit 63. The mapping
//! is order-preserving, so the FOR reference (a minimum) means the same for signed types.
//! Decoding narrows lane values back to the logical type; an 8- or 16-bit lane value that does
//! not fit is corruption (`Error::ValueOutOfRange`).

use super::LanesMut;
use tessera_format::{Error, Lane, LogicalType, Result};

/// Raw little-endian values of a lane-32 type to lane words.
pub(crate) fn to_lane32(ty: LogicalType, raw: &[u8]) -> Vec<u32> {
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
pub(crate) fn to_lane64(ty: LogicalType, raw: &[u8]) -> Vec<u64> {
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

/// Decodes into the raw form `out` of an integer chunk (`out.len() / ty.width()` values): `dec`
/// fills lane words, which are then narrowed to `ty`.
pub(crate) fn decode_into(
    ty: LogicalType,
    out: &mut [u8],
    dec: impl FnOnce(LanesMut<'_>) -> Result<()>,
) -> Result<()> {
    if !ty.is_integer() {
        return Err(Error::InvalidArgument(format!(
            "{} values have no lane form",
            ty.name()
        )));
    }
    let n = out.len() / ty.width();
    match ty.lane() {
        Lane::L32 => {
            let mut lanes = vec![0u32; n];
            dec(LanesMut::L32(&mut lanes))?;
            from_lane32(ty, &lanes, out)
        }
        Lane::L64 => {
            let mut lanes = vec![0u64; n];
            dec(LanesMut::L64(&mut lanes))?;
            from_lane64(ty, &lanes, out);
            Ok(())
        }
    }
}
