//! Lane arithmetic shared by the codecs, as a sealed trait implemented for `u32` and `u64`.
//!
//! Everything is modulo 2^lane (`int-common.md` §2). The codec code is written once, generic
//! over [`Word`], and monomorphised per lane; the lane-specific parts are word I/O and the
//! miniblock packers of [`super::bitpack`].

use super::bitpack;

/// Lane arithmetic, word I/O and miniblock packing. Sealed: only `u32` and `u64` implement it.
pub trait Word: Copy + Send + Sync + Eq + Ord + Default + std::fmt::Debug + 'static {
    /// Lane width in bits (32 or 64): the largest allowed `bit_width`.
    const BITS: u32;
    /// Words (32-bit) a whole lane value takes when stored (references, first values).
    const REF_WORDS: usize;
    const ZERO: Self;
    const MAX: Self;
    /// The lane's top bit: XOR with it maps signed order onto unsigned order.
    const SIGN: Self;

    fn wadd(self, o: Self) -> Self;
    fn wsub(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
    /// `BITS - leading_zeros`: the `bit_width` that holds this value (0 for 0).
    fn width(self) -> u32;
    fn to_u64(self) -> u64;
    /// Truncating conversion (only used on values that fit).
    fn from_u64(v: u64) -> Self;
    /// Reads `REF_WORDS` little-endian words at byte offset `at` (zero if out of range; callers
    /// check sizes first).
    fn read(bytes: &[u8], at: usize) -> Self;
    /// Writes the value as `4 * REF_WORDS` little-endian bytes, low word first.
    fn write_bytes(self, out: &mut [u8]);
    /// Packs a miniblock at `bit_width` into `out[..4 * bit_width]`.
    fn pack(bit_width: u32, inp: &[Self; 32], out: &mut [u8]);
    /// Unpacks a miniblock at `bit_width` from `bytes`, adding `reference`.
    fn unpack_add(bit_width: u32, bytes: &[u8], reference: Self, out: &mut [Self; 32]);
    /// Unpacks a miniblock of deltas, adding `reference`, and writes their inclusive prefix sum
    /// starting from `acc`; returns the sum after the last one.
    fn unpack_scan(
        bit_width: u32,
        bytes: &[u8],
        reference: Self,
        acc: Self,
        out: &mut [Self; 32],
    ) -> Self;
}

/// Reads the little-endian word at byte offset `at`, 0 when out of range (callers check sizes
/// first, so the 0 is never observed on a validated path).
#[inline(always)]
pub(crate) fn read_u32(bytes: &[u8], at: usize) -> u32 {
    match bytes.get(at..at + 4) {
        Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        None => 0,
    }
}

impl Word for u32 {
    const BITS: u32 = 32;
    const REF_WORDS: usize = 1;
    const ZERO: Self = 0;
    const MAX: Self = u32::MAX;
    const SIGN: Self = 1 << 31;

    #[inline(always)]
    fn wadd(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    #[inline(always)]
    fn wsub(self, o: Self) -> Self {
        self.wrapping_sub(o)
    }
    #[inline(always)]
    fn or(self, o: Self) -> Self {
        self | o
    }
    #[inline(always)]
    fn xor(self, o: Self) -> Self {
        self ^ o
    }
    #[inline(always)]
    fn width(self) -> u32 {
        32 - self.leading_zeros()
    }
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self as u64
    }
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v as u32
    }
    #[inline(always)]
    fn read(bytes: &[u8], at: usize) -> Self {
        read_u32(bytes, at)
    }
    #[inline(always)]
    fn write_bytes(self, out: &mut [u8]) {
        out[..4].copy_from_slice(&self.to_le_bytes());
    }
    #[inline(always)]
    fn pack(bit_width: u32, inp: &[Self; 32], out: &mut [u8]) {
        bitpack::pack_u32(bit_width, inp, out)
    }
    #[inline(always)]
    fn unpack_add(bit_width: u32, bytes: &[u8], reference: Self, out: &mut [Self; 32]) {
        bitpack::unpack_u32(bit_width, bytes, reference, out)
    }
    #[inline(always)]
    fn unpack_scan(
        bit_width: u32,
        bytes: &[u8],
        reference: Self,
        acc: Self,
        out: &mut [Self; 32],
    ) -> Self {
        bitpack::unpack_scan_u32(bit_width, bytes, reference, acc, out)
    }
}

impl Word for u64 {
    const BITS: u32 = 64;
    const REF_WORDS: usize = 2;
    const ZERO: Self = 0;
    const MAX: Self = u64::MAX;
    const SIGN: Self = 1 << 63;

    #[inline(always)]
    fn wadd(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    #[inline(always)]
    fn wsub(self, o: Self) -> Self {
        self.wrapping_sub(o)
    }
    #[inline(always)]
    fn or(self, o: Self) -> Self {
        self | o
    }
    #[inline(always)]
    fn xor(self, o: Self) -> Self {
        self ^ o
    }
    #[inline(always)]
    fn width(self) -> u32 {
        64 - self.leading_zeros()
    }
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self
    }
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v
    }
    #[inline(always)]
    fn read(bytes: &[u8], at: usize) -> Self {
        read_u32(bytes, at) as u64 | (read_u32(bytes, at + 4) as u64) << 32
    }
    #[inline(always)]
    fn write_bytes(self, out: &mut [u8]) {
        out[..8].copy_from_slice(&self.to_le_bytes());
    }
    #[inline(always)]
    fn pack(bit_width: u32, inp: &[Self; 32], out: &mut [u8]) {
        bitpack::pack_u64(bit_width, inp, out)
    }
    #[inline(always)]
    fn unpack_add(bit_width: u32, bytes: &[u8], reference: Self, out: &mut [Self; 32]) {
        bitpack::unpack_u64(bit_width, bytes, reference, out)
    }
    #[inline(always)]
    fn unpack_scan(
        bit_width: u32,
        bytes: &[u8],
        reference: Self,
        acc: Self,
        out: &mut [Self; 32],
    ) -> Self {
        bitpack::unpack_scan_u64(bit_width, bytes, reference, acc, out)
    }
}
