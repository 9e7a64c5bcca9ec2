//! Integer codecs over lanes (API contract; bodies filled in by the codec work).

use tessera_format::{CodecId, Lane, Result};

/// An unsigned lane word: `u32` (lane 32) or `u64` (lane 64).
pub trait LaneWord: Copy + Send + Sync + Eq + Ord + Default + std::fmt::Debug + 'static {
    const LANE: Lane;
}
impl LaneWord for u32 {
    const LANE: Lane = Lane::L32;
}
impl LaneWord for u64 {
    const LANE: Lane = Lane::L64;
}

/// Appends the payload of `codec` (For, Dfor or Rfor) for `values` to `out`.
pub fn encode<W: LaneWord>(codec: CodecId, values: &[W], out: &mut Vec<u8>) -> Result<()> {
    let _ = (codec, values, out);
    unimplemented!("int::encode")
}

/// The exact payload size `encode` would produce, computed without packing.
pub fn encoded_size<W: LaneWord>(codec: CodecId, values: &[W]) -> Result<usize> {
    let _ = (codec, values);
    unimplemented!("int::encoded_size")
}

/// Reference decoder: reads like the spec. `out.len()` is the directory's value count.
pub fn decode_reference<W: LaneWord>(codec: CodecId, payload: &[u8], out: &mut [W]) -> Result<()> {
    let _ = (codec, payload, out);
    unimplemented!("int::decode_reference")
}

/// Fast decoder (single thread; callers parallelise over chunks). Same output as the reference.
pub fn decode<W: LaneWord>(codec: CodecId, payload: &[u8], out: &mut [W]) -> Result<()> {
    let _ = (codec, payload, out);
    unimplemented!("int::decode")
}
