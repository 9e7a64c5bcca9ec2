//! ORC's integer and byte encodings (Apache ORC specification, "Run Length Encoding"): RLE v1,
//! RLE v2 (SHORT_REPEAT, DIRECT, PATCHED_BASE, DELTA), byte RLE and boolean streams, for signed
//! (zigzag) and unsigned integer streams.
//!
//! These are reference decoders written from the specification: they define the output and the
//! errors that the GPU decoders (`tessera_gpu::codag`) must match. Each decodes one *chunk*: a
//! stream's bytes and the exact number of values it must yield. A run that would go past that
//! count is an error ([`Error::CountMismatch`]), and so is input that ends before it
//! ([`Error::Truncated`]); bytes after the last value are left alone (an ORC stream can be cut
//! into chunks at run boundaries only, so a decoder that stops at the count stops at a run's
//! end). Integer outputs are `i64`; an unsigned stream's values are their two's-complement bit
//! patterns (ORC's unsigned streams are lengths and dictionary ids, never above `i64::MAX` in
//! practice, and the bits round-trip either way).
//!
//! The encoders in [`encode`] exist to make test and benchmark data, every sub-encoding and
//! width on demand; they are not ORC's writer heuristics.

use tessera_format::{Error, Result};

mod byte_rle;
pub mod encode;
mod rle_v1;
mod rle_v2;
mod walk;

pub use byte_rle::{decode_bool, decode_byte_rle};
pub use rle_v1::decode_rle_v1;
pub use rle_v2::decode_rle_v2;
pub use walk::{skip_run, RleKind};

/// Most values one RLE v2 run holds (9-bit length field + 1).
pub const RLE_V2_MAX_RUN: usize = 512;

/// The 5-bit width code of RLE v2 (spec table "5 bit width encoding"): code -> bits, for every
/// sub-encoding but DELTA's code 0 (which means 0 bits there).
pub const fn decode_width(code: u32) -> u32 {
    match code {
        0..=23 => code + 1,
        24 => 26,
        25 => 28,
        26 => 30,
        27 => 32,
        28 => 40,
        29 => 48,
        30 => 56,
        _ => 64,
    }
}

/// The smallest width the table can store that holds `bits` bits (ORC's `getClosestFixedBits`;
/// the patch list of PATCHED_BASE is packed at this width).
pub const fn closest_fixed_bits(bits: u32) -> u32 {
    match bits {
        0 => 1,
        1..=24 => bits,
        25..=26 => 26,
        27..=28 => 28,
        29..=30 => 30,
        31..=32 => 32,
        33..=40 => 40,
        41..=48 => 48,
        49..=56 => 56,
        _ => 64,
    }
}

/// Zigzag decoding (spec "Base 128 Varint": signed values are stored as `(v << 1) ^ (v >> 63)`).
#[inline]
pub const fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

/// Zigzag encoding.
#[inline]
pub const fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// A cursor over one chunk's bytes that turns every short read into [`Error::Truncated`] at the
/// offset where it happened.
pub(crate) struct Cursor<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, pos: 0 }
    }

    pub(crate) fn truncated(&self, what: &'static str, needed: usize) -> Error {
        Error::Truncated {
            what,
            offset: self.pos as u64,
            needed: needed as u64,
            available: (self.bytes.len() - self.pos) as u64,
        }
    }

    pub(crate) fn byte(&mut self, what: &'static str) -> Result<u8> {
        let b = *self
            .bytes
            .get(self.pos)
            .ok_or_else(|| self.truncated(what, 1))?;
        self.pos += 1;
        Ok(b)
    }

    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        if self.bytes.len() - self.pos < n {
            return Err(self.truncated(what, n));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// A base-128 varint of at most 10 bytes whose bits fit 64 (spec "Base 128 Varint").
    pub(crate) fn varint(&mut self) -> Result<u64> {
        let start = self.pos;
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.byte("varint")?;
            let bits = (b & 0x7f) as u64;
            if i == 9 && bits > 1 {
                return Err(Error::InvalidHeader {
                    field: "varint",
                    offset: start as u64,
                    expected: "at most 64 bits".into(),
                    found: bits,
                });
            }
            v |= bits << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Error::InvalidHeader {
            field: "varint",
            offset: start as u64,
            expected: "at most 10 bytes".into(),
            found: 11,
        })
    }

    pub(crate) fn signed_varint(&mut self, signed: bool) -> Result<i64> {
        let u = self.varint()?;
        Ok(if signed { unzigzag(u) } else { u as i64 })
    }
}

/// The error for a run that would write past the chunk's value count.
pub(crate) fn run_past_end(at: usize, run: usize, n: usize) -> Error {
    Error::CountMismatch {
        what: "ORC run past the chunk's value count (values before the run + run length)",
        expected: n as u64,
        found: (at + run) as u64,
    }
}
