//! The tile-based integer codecs GPU-FOR, GPU-DFOR and GPU-RFOR over 32- and 64-bit lanes
//! (`docs/format/{int-common,for,dfor,rfor}.md`).
//!
//! Every codec has an encoder, an exact [`encoded_size`] (same block analysis, no packing), a
//! reference decoder that reads like its spec (bit-by-bit reads, simple loops) and a fast
//! decoder (one unrolled unpacker per `bit_width`). Both decoders treat the payload as hostile:
//! they validate the header and `block_starts` first (`header`), then each block's metadata
//! before unpacking it, never index out of bounds, never allocate from a header field, and fail
//! with the same [`tessera_format::Error`] variant on the same input.
//!
//! Modules: `bitpack` (miniblock packers), `word` (lane arithmetic), `header` (chunk header
//! and `block_starts`), `for_`, `dfor`, `rfor`.
//!
//! On x86-64 the encoders, `encoded_size` and the fast decoders are compiled twice: for the
//! baseline target and for AVX2 + BMI2 (the codec bodies are `#[inline(always)]` into a
//! `#[target_feature]` wrapper), picked at run time. The block analysis (minima, ORs, deltas,
//! run detection) vectorises about twice as wide with AVX2; the output bytes are the same.

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

/// AVX2 + BMI2 builds of the codec entry points (x86-64 only). Each wrapper only inlines the
/// portable body, so it computes exactly what the baseline build computes.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{dfor, for_, rfor, word::Word};
    use tessera_format::Result;

    macro_rules! avx2_versions {
        ($($name:ident: fn($($arg:ident: $ty:ty),*) -> $ret:ty = $imp:path;)*) => { $(
            /// # Safety
            /// The CPU must support AVX2, BMI1, BMI2 and LZCNT ([`super::avx2`]).
            #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
            pub(super) unsafe fn $name<W: Word>($($arg: $ty),*) -> $ret {
                $imp($($arg),*)
            }
        )* };
    }

    avx2_versions! {
        for_encode: fn(values: &[W], out: &mut Vec<u8>) -> () = for_::encode;
        dfor_encode: fn(values: &[W], out: &mut Vec<u8>) -> () = dfor::encode;
        rfor_encode: fn(values: &[W], out: &mut Vec<u8>) -> () = rfor::encode;
        for_size: fn(values: &[W]) -> usize = for_::encoded_size;
        dfor_size: fn(values: &[W]) -> usize = dfor::encoded_size;
        rfor_size: fn(values: &[W]) -> usize = rfor::encoded_size;
        for_decode: fn(payload: &[u8], out: &mut [W]) -> Result<()> = for_::decode;
        dfor_decode: fn(payload: &[u8], out: &mut [W]) -> Result<()> = dfor::decode;
        rfor_decode: fn(payload: &[u8], out: &mut [W]) -> Result<()> = rfor::decode;
    }
}

/// Whether the AVX2 builds may run on this CPU (detected once, then cached by std).
#[cfg(target_arch = "x86_64")]
#[inline]
fn avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("bmi1")
        && std::arch::is_x86_feature_detected!("bmi2")
        && std::arch::is_x86_feature_detected!("lzcnt")
        && std::arch::is_x86_feature_detected!("popcnt")
}

/// The portable builds of the fast paths, bypassing run-time dispatch, so tests can check they
/// agree with the AVX2 builds byte for byte. Not part of the API.
#[doc(hidden)]
pub mod portable {
    use super::{dfor, for_, not_int_codec, rfor, LaneWord};
    use tessera_format::{CodecId, Result};

    pub fn encode<W: LaneWord>(codec: CodecId, values: &[W], out: &mut Vec<u8>) -> Result<()> {
        match codec {
            CodecId::For => for_::encode(values, out),
            CodecId::Dfor => dfor::encode(values, out),
            CodecId::Rfor => rfor::encode(values, out),
            other => return Err(not_int_codec(other)),
        }
        Ok(())
    }

    pub fn encoded_size<W: LaneWord>(codec: CodecId, values: &[W]) -> Result<usize> {
        match codec {
            CodecId::For => Ok(for_::encoded_size(values)),
            CodecId::Dfor => Ok(dfor::encoded_size(values)),
            CodecId::Rfor => Ok(rfor::encoded_size(values)),
            other => Err(not_int_codec(other)),
        }
    }

    pub fn decode<W: LaneWord>(codec: CodecId, payload: &[u8], out: &mut [W]) -> Result<()> {
        match codec {
            CodecId::For => for_::decode(payload, out),
            CodecId::Dfor => dfor::decode(payload, out),
            CodecId::Rfor => rfor::decode(payload, out),
            other => Err(not_int_codec(other)),
        }
    }
}

/// Calls the AVX2 build `x86::$fast` when the CPU has it, else the portable `$base`.
macro_rules! dispatch {
    ($fast:ident, $base:path, ($($arg:expr),*)) => {{
        #[cfg(target_arch = "x86_64")]
        {
            if avx2() {
                // SAFETY: `avx2()` just confirmed every feature the wrapper enables.
                unsafe { x86::$fast($($arg),*) }
            } else {
                $base($($arg),*)
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            $base($($arg),*)
        }
    }};
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
    Error::InvalidArgument(format!(
        "{} is not an integer codec (for, dfor, rfor)",
        codec.name()
    ))
}

/// Appends the payload of `codec` (For, Dfor or Rfor) for `values` to `out`.
pub fn encode<W: LaneWord>(codec: CodecId, values: &[W], out: &mut Vec<u8>) -> Result<()> {
    check_len(values.len())?;
    match codec {
        CodecId::For => dispatch!(for_encode, for_::encode, (values, out)),
        CodecId::Dfor => dispatch!(dfor_encode, dfor::encode, (values, out)),
        CodecId::Rfor => dispatch!(rfor_encode, rfor::encode, (values, out)),
        other => return Err(not_int_codec(other)),
    }
    Ok(())
}

/// The exact payload size `encode` would produce, computed without packing.
pub fn encoded_size<W: LaneWord>(codec: CodecId, values: &[W]) -> Result<usize> {
    check_len(values.len())?;
    match codec {
        CodecId::For => Ok(dispatch!(for_size, for_::encoded_size, (values))),
        CodecId::Dfor => Ok(dispatch!(dfor_size, dfor::encoded_size, (values))),
        CodecId::Rfor => Ok(dispatch!(rfor_size, rfor::encoded_size, (values))),
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
        CodecId::For => dispatch!(for_decode, for_::decode, (payload, out)),
        CodecId::Dfor => dispatch!(dfor_decode, dfor::decode, (payload, out)),
        CodecId::Rfor => dispatch!(rfor_decode, rfor::decode, (payload, out)),
        other => Err(not_int_codec(other)),
    }
}
