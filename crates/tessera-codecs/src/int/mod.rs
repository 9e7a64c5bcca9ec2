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
//! Modules: `bitpack` (miniblock packers), `word` (lane arithmetic), `lanes` (the lane mapping
//! of logical types), `header` (chunk header and `block_starts`), and one per codec: `for_`,
//! `dfor`, `rfor`, each implementing `Kernels`, which `IntCodec` registers as a
//! [`crate::codec::Codec`].
//!
//! On x86-64 the encoders, `encoded_size` and the fast decoders are compiled twice: for the
//! baseline target and for AVX2 + BMI2 (the codec bodies are `#[inline(always)]` into a
//! `#[target_feature]` wrapper), picked at run time. The block analysis (minima, ORs, deltas,
//! run detection) vectorises about twice as wide with AVX2; the output bytes are the same.

pub(crate) mod bitpack;
pub(crate) mod dfor;
pub(crate) mod for_;
mod header;
pub(crate) mod lanes;
pub(crate) mod rfor;
mod word;

use std::marker::PhantomData;

use crate::codec::{self, AutoSlot, Chunk, Codec, CodecOptions, Family};
use tessera_format::{CodecId, Error, Lane, LogicalType, Result, MAX_CHUNK_VALUES};
use word::Word;

mod sealed {
    /// Seals [`super::LaneWord`]: the codecs' lane arithmetic lives in this supertrait.
    pub trait Sealed: super::word::Word {
        /// `values` as the lane-tagged slice the codec objects take.
        fn lanes(values: &[Self]) -> super::Lanes<'_>;
        /// `out` as the lane-tagged slice the codec objects take.
        fn lanes_mut(out: &mut [Self]) -> super::LanesMut<'_>;
    }
    impl Sealed for u32 {
        fn lanes(values: &[u32]) -> super::Lanes<'_> {
            super::Lanes::L32(values)
        }
        fn lanes_mut(out: &mut [u32]) -> super::LanesMut<'_> {
            super::LanesMut::L32(out)
        }
    }
    impl Sealed for u64 {
        fn lanes(values: &[u64]) -> super::Lanes<'_> {
            super::Lanes::L64(values)
        }
        fn lanes_mut(out: &mut [u64]) -> super::LanesMut<'_> {
            super::LanesMut::L64(out)
        }
    }
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

/// Lane words of one chunk, tagged with their lane.
#[derive(Debug, Clone, Copy)]
pub enum Lanes<'a> {
    L32(&'a [u32]),
    L64(&'a [u64]),
}

/// A decoder's output lane words, tagged with their lane.
#[derive(Debug)]
pub enum LanesMut<'a> {
    L32(&'a mut [u32]),
    L64(&'a mut [u64]),
}

/// The lane-level entry points of an integer codec: what [`encode`], [`encoded_size`],
/// [`decode`] and [`decode_reference`] reach through the registry ([`Codec::lanes`]).
pub trait LaneCodec: Sync {
    /// Appends the payload for `values` to `out`.
    fn encode(&self, values: Lanes<'_>, out: &mut Vec<u8>);
    /// The exact payload size `encode` would produce, computed without packing.
    fn encoded_size(&self, values: Lanes<'_>) -> usize;
    /// The fast decoder.
    fn decode(&self, payload: &[u8], out: LanesMut<'_>) -> Result<()>;
    /// The reference decoder.
    fn decode_reference(&self, payload: &[u8], out: LanesMut<'_>) -> Result<()>;
    /// `encode` without run-time CPU dispatch (tests compare the builds).
    #[doc(hidden)]
    fn encode_portable(&self, values: Lanes<'_>, out: &mut Vec<u8>);
    /// `encoded_size` without run-time CPU dispatch.
    #[doc(hidden)]
    fn encoded_size_portable(&self, values: Lanes<'_>) -> usize;
    /// `decode` without run-time CPU dispatch.
    #[doc(hidden)]
    fn decode_portable(&self, payload: &[u8], out: LanesMut<'_>) -> Result<()>;
}

/// What one integer codec module provides, generic over the lane word: its id, its place in
/// `auto`, and its encoder, exact size, fast and reference decoders. The fast paths must be
/// `#[inline(always)]` all the way down, so that the AVX2 wrappers below compile them for
/// AVX2 + BMI2. [`IntCodec`] turns it into a registry entry.
pub(crate) trait Kernels: Sync + 'static {
    const ID: CodecId;
    /// Its slot in the integers' automatic choice.
    const AUTO: AutoSlot;
    fn encode<W: Word>(values: &[W], out: &mut Vec<u8>);
    fn encoded_size<W: Word>(values: &[W]) -> usize;
    fn decode<W: Word>(payload: &[u8], out: &mut [W]) -> Result<()>;
    fn decode_reference<W: Word>(payload: &[u8], out: &mut [W]) -> Result<()>;
}

/// The registry entry of an integer codec: [`Kernels`] behind [`Codec`] and [`LaneCodec`],
/// with the lane mapping of [`lanes`] and the run-time choice of the AVX2 build.
pub(crate) struct IntCodec<K>(PhantomData<K>);

impl<K> IntCodec<K> {
    pub(crate) const fn new() -> Self {
        IntCodec(PhantomData)
    }
}

/// AVX2 + BMI2 builds of every integer codec's entry points (x86-64 only). Each wrapper only
/// inlines the portable body, so it computes exactly what the baseline build computes.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{word::Word, Kernels};
    use tessera_format::Result;

    macro_rules! avx2_versions {
        ($($name:ident: fn($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => { $(
            /// # Safety
            /// The CPU must support AVX2, BMI1, BMI2 and LZCNT ([`super::avx2`]).
            #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
            pub(super) unsafe fn $name<K: Kernels, W: Word>($($arg: $ty),*) -> $ret {
                K::$name($($arg),*)
            }
        )* };
    }

    avx2_versions! {
        encode: fn(values: &[W], out: &mut Vec<u8>) -> ();
        encoded_size: fn(values: &[W]) -> usize;
        decode: fn(payload: &[u8], out: &mut [W]) -> Result<()>;
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

/// Calls the AVX2 build `x86::$name::<K, _>` when the CPU has it, else the portable `K::$name`.
macro_rules! dispatch {
    ($name:ident, ($($arg:expr),*)) => {{
        #[cfg(target_arch = "x86_64")]
        {
            if avx2() {
                // SAFETY: `avx2()` just confirmed every feature the wrapper enables.
                unsafe { x86::$name::<K, _>($($arg),*) }
            } else {
                K::$name($($arg),*)
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            K::$name($($arg),*)
        }
    }};
}

/// `$body` with `$v` bound to the words of either lane.
macro_rules! per_lane {
    ($lanes:expr, $ty:ident, $v:ident => $body:expr) => {
        match $lanes {
            $ty::L32($v) => $body,
            $ty::L64($v) => $body,
        }
    };
}

impl<K: Kernels> LaneCodec for IntCodec<K> {
    fn encode(&self, values: Lanes<'_>, out: &mut Vec<u8>) {
        per_lane!(values, Lanes, v => dispatch!(encode, (v, out)))
    }
    fn encoded_size(&self, values: Lanes<'_>) -> usize {
        per_lane!(values, Lanes, v => dispatch!(encoded_size, (v)))
    }
    fn decode(&self, payload: &[u8], out: LanesMut<'_>) -> Result<()> {
        per_lane!(out, LanesMut, o => dispatch!(decode, (payload, o)))
    }
    fn decode_reference(&self, payload: &[u8], out: LanesMut<'_>) -> Result<()> {
        per_lane!(out, LanesMut, o => K::decode_reference(payload, o))
    }
    fn encode_portable(&self, values: Lanes<'_>, out: &mut Vec<u8>) {
        per_lane!(values, Lanes, v => K::encode(v, out))
    }
    fn encoded_size_portable(&self, values: Lanes<'_>) -> usize {
        per_lane!(values, Lanes, v => K::encoded_size(v))
    }
    fn decode_portable(&self, payload: &[u8], out: LanesMut<'_>) -> Result<()> {
        per_lane!(out, LanesMut, o => K::decode(payload, o))
    }
}

impl<K: Kernels> Codec for IntCodec<K> {
    fn id(&self) -> CodecId {
        K::ID
    }

    fn auto_slot(&self, family: Family) -> Option<AutoSlot> {
        (family == Family::Integers).then_some(K::AUTO)
    }

    fn encode(&self, chunk: &Chunk<'_>, _opts: &CodecOptions, out: &mut Vec<u8>) -> Result<()> {
        LaneCodec::encode(self, chunk.lanes()?, out);
        Ok(())
    }

    fn encoded_size(&self, chunk: &Chunk<'_>) -> Result<Option<usize>> {
        Ok(Some(LaneCodec::encoded_size(self, chunk.lanes()?)))
    }

    fn decode(&self, ty: LogicalType, payload: &[u8], _: u64, out: &mut [u8]) -> Result<()> {
        lanes::decode_into(ty, out, |lanes| LaneCodec::decode(self, payload, lanes))
    }

    fn decode_reference(
        &self,
        ty: LogicalType,
        payload: &[u8],
        _: u64,
        out: &mut [u8],
    ) -> Result<()> {
        lanes::decode_into(ty, out, |lanes| {
            LaneCodec::decode_reference(self, payload, lanes)
        })
    }

    fn lanes(&self) -> Option<&dyn LaneCodec> {
        Some(self)
    }
}

/// The portable builds of the fast paths, bypassing run-time dispatch, so tests can check they
/// agree with the AVX2 builds byte for byte. Not part of the API.
#[doc(hidden)]
pub mod portable {
    use super::{lane_codec, LaneWord};
    use tessera_format::{CodecId, Result};

    pub fn encode<W: LaneWord>(codec: CodecId, values: &[W], out: &mut Vec<u8>) -> Result<()> {
        lane_codec(codec)?.encode_portable(W::lanes(values), out);
        Ok(())
    }

    pub fn encoded_size<W: LaneWord>(codec: CodecId, values: &[W]) -> Result<usize> {
        Ok(lane_codec(codec)?.encoded_size_portable(W::lanes(values)))
    }

    pub fn decode<W: LaneWord>(codec: CodecId, payload: &[u8], out: &mut [W]) -> Result<()> {
        lane_codec(codec)?.decode_portable(payload, W::lanes_mut(out))
    }
}

fn check_len(n: usize) -> Result<()> {
    if n > MAX_CHUNK_VALUES as usize {
        return Err(Error::InvalidArgument(format!(
            "chunk of {n} values exceeds the limit of {MAX_CHUNK_VALUES}"
        )));
    }
    Ok(())
}

/// The registered integer codec of `codec`.
fn lane_codec(codec: CodecId) -> Result<&'static dyn LaneCodec> {
    codec::get(codec)
        .and_then(|c| c.lanes())
        .ok_or_else(|| not_int_codec(codec))
}

fn not_int_codec(codec: CodecId) -> Error {
    let ints: Vec<&str> = codec::REGISTRY
        .iter()
        .filter(|c| c.lanes().is_some())
        .map(|c| c.name())
        .collect();
    Error::InvalidArgument(format!(
        "{} is not an integer codec ({})",
        codec.name(),
        ints.join(", ")
    ))
}

/// Appends the payload of `codec` (For, Dfor or Rfor) for `values` to `out`.
pub fn encode<W: LaneWord>(codec: CodecId, values: &[W], out: &mut Vec<u8>) -> Result<()> {
    check_len(values.len())?;
    lane_codec(codec)?.encode(W::lanes(values), out);
    Ok(())
}

/// The exact payload size `encode` would produce, computed without packing.
pub fn encoded_size<W: LaneWord>(codec: CodecId, values: &[W]) -> Result<usize> {
    check_len(values.len())?;
    Ok(lane_codec(codec)?.encoded_size(W::lanes(values)))
}

/// Reference decoder: reads like the spec. `out.len()` is the directory's value count.
pub fn decode_reference<W: LaneWord>(codec: CodecId, payload: &[u8], out: &mut [W]) -> Result<()> {
    lane_codec(codec)?.decode_reference(payload, W::lanes_mut(out))
}

/// Fast decoder (single thread; callers parallelise over chunks). Same output as the reference.
pub fn decode<W: LaneWord>(codec: CodecId, payload: &[u8], out: &mut [W]) -> Result<()> {
    lane_codec(codec)?.decode(payload, W::lanes_mut(out))
}
