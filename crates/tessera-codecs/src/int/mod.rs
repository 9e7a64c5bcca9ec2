//! The tile-based integer codecs GPU-FOR, GPU-DFOR and GPU-RFOR over 32- and 64-bit lanes
//! (`docs/format/{int-common,for,dfor,rfor}.md`).
//!
//! Every codec has an encoder, an exact [`encoded_size`] (same block analysis, no packing), a
//! reference decoder that reads like its spec (bit-by-bit reads, simple loops) and a fast
//! decoder (one unrolled unpacker per `bit_width`). Both decoders treat the payload as hostile:
//! they validate the header and `block_starts` first ([`header`]), then each block's metadata
//! before unpacking it, never index out of bounds, never allocate from a header field, and fail
//! with the same [`tessera_format::Error`] variant on the same input.
//!
//! Modules: [`bitpack`] (miniblock packers), `word` (lane arithmetic), `header` (chunk header
//! and `block_starts`), `for_`, `dfor`, `rfor`.

pub(crate) mod bitpack;
mod dfor;
mod for_;
mod header;
mod rfor;
mod word;

use tessera_format::{CodecId, Error, Lane, Result, MAX_CHUNK_VALUES};

mod sealed {
    /// Seals [`super::LaneWord`]: the codecs' lane arithmetic lives in this supertrait.
    pub trait Sealed: super::word::Word {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// An unsigned lane word: `u32` (lane 32) or `u64` (lane 64).
pub trait LaneWord:
    sealed::Sealed + Copy + Send + Sync + Eq + Ord + Default + std::fmt::Debug + 'static
{
    const LANE: Lane;
}
impl LaneWord for u32 {
    const LANE: Lane = Lane::L32;
}
impl LaneWord for u64 {
    const LANE: Lane = Lane::L64;
}

fn check_len(n: usize) -> Result<()> {
    if n > MAX_CHUNK_VALUES as usize {
        return Err(Error::InvalidArgument(format!(
            "chunk of {n} values exceeds the limit of {MAX_CHUNK_VALUES}"
        )));
    }
    Ok(())
}

fn not_int_codec(codec: CodecId) -> Error {
    Error::InvalidArgument(format!("{} is not an integer codec (for, dfor, rfor)", codec.name()))
}

/// Appends the payload of `codec` (For, Dfor or Rfor) for `values` to `out`.
pub fn encode<W: LaneWord>(codec: CodecId, values: &[W], out: &mut Vec<u8>) -> Result<()> {
    check_len(values.len())?;
    match codec {
        CodecId::For => for_::encode(values, out),
        CodecId::Dfor => dfor::encode(values, out),
        CodecId::Rfor => rfor::encode(values, out),
        other => return Err(not_int_codec(other)),
    }
    Ok(())
}

/// The exact payload size `encode` would produce, computed without packing.
pub fn encoded_size<W: LaneWord>(codec: CodecId, values: &[W]) -> Result<usize> {
    check_len(values.len())?;
    match codec {
        CodecId::For => Ok(for_::encoded_size(values)),
        CodecId::Dfor => Ok(dfor::encoded_size(values)),
        CodecId::Rfor => Ok(rfor::encoded_size(values)),
        other => Err(not_int_codec(other)),
    }
}

/// Reference decoder: reads like the spec. `out.len()` is the directory's value count.
pub fn decode_reference<W: LaneWord>(codec: CodecId, payload: &[u8], out: &mut [W]) -> Result<()> {
    match codec {
        CodecId::For => for_::decode_reference(payload, out),
        CodecId::Dfor => dfor::decode_reference(payload, out),
        CodecId::Rfor => rfor::decode_reference(payload, out),
        other => Err(not_int_codec(other)),
    }
}

/// Fast decoder (single thread; callers parallelise over chunks). Same output as the reference.
pub fn decode<W: LaneWord>(codec: CodecId, payload: &[u8], out: &mut [W]) -> Result<()> {
    match codec {
        CodecId::For => for_::decode(payload, out),
        CodecId::Dfor => dfor::decode(payload, out),
        CodecId::Rfor => rfor::decode(payload, out),
        other => Err(not_int_codec(other)),
    }
}
