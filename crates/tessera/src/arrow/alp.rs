//! ALP (Afroozeh et al., "ALP: Adaptive Lossless floating-Point Compression", SIGMOD '24) for
//! Float32 and Float64 fields (`table.md` §8).
//!
//! A value `x` of a vector of [`ALP_VECTOR_ROWS`] rows becomes the integer
//! `d = round(x * 10^e * 10^-f)` when decoding it, `d as float * 10^f * 10^-e` (IEEE, round to
//! nearest, in that order), gives back `x` bit for bit; every other value (NaNs, infinities,
//! -0.0, values with more digits than fit) is an **exception**: its row and bit pattern are
//! stored apart and its digits slot holds a neighbour's digits, so it costs no bit width. The
//! digits are an i64 column that the integer codecs (FOR, DFOR, RFOR, chosen by `auto`) pack.
//! Decoding needs only the digits, one `(e, f)` per vector and a scatter of the exceptions, the
//! same IEEE operations on any processor.

use tessera_format::table::ALP_VECTOR_ROWS;

/// Values of a vector sampled to choose its `(e, f)`.
const SAMPLE: usize = 32;
/// Candidate `(e, f)` pairs kept from a full search and tried on each vector.
const CANDIDATES: usize = 5;
/// Vectors between two full searches of a field's candidates.
const RESEARCH_EVERY: u64 = 256;

/// The float type of an ALP field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Float {
    F32,
    F64,
}

/// 10^i, exact in both f32 (i <= 10) and f64.
const F10_64: [f64; 19] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18,
];
/// The f64 nearest to 10^-i.
const IF10_64: [f64; 19] = [
    1e0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13, 1e-14,
    1e-15, 1e-16, 1e-17, 1e-18,
];
const F10_32: [f32; 11] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10];
/// The f32 nearest to 10^-i.
const IF10_32: [f32; 11] = [
    1e0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10,
];

/// Digits beyond this magnitude are exceptions: they stay exact as integers in every step and
/// clear of i64's limits.
const MAX_DIGITS: f64 = (1u64 << 62) as f64;

impl Float {
    /// The largest exponent `e` (and factor `f <= e`).
    pub(crate) fn max_e(self) -> u8 {
        match self {
            Float::F32 => 10,
            Float::F64 => 18,
        }
    }

    /// Bytes of a value's bit pattern.
    pub(crate) fn width(self) -> usize {
        match self {
            Float::F32 => 4,
            Float::F64 => 8,
        }
    }

    /// The value of `digits` under `(e, f)`, as a bit pattern (`table.md` §8.2).
    #[inline]
    pub(crate) fn decode(self, digits: i64, e: u8, f: u8) -> u64 {
        match self {
            Float::F64 => (digits as f64 * F10_64[f as usize] * IF10_64[e as usize]).to_bits(),
            Float::F32 => {
                (digits as f32 * F10_32[f as usize] * IF10_32[e as usize]).to_bits() as u64
            }
        }
    }

    /// The digits of `bits` under `(e, f)`, when they decode back to the same bits.
    #[inline]
    fn encode(self, bits: u64, e: u8, f: u8) -> Option<i64> {
        let scaled = match self {
            Float::F64 => f64::from_bits(bits) * F10_64[e as usize] * IF10_64[f as usize],
            Float::F32 => {
                (f32::from_bits(bits as u32) * F10_32[e as usize] * IF10_32[f as usize]) as f64
            }
        };
        // NaN and infinities are not finite; the bound keeps the cast exact.
        if !scaled.is_finite() || scaled.abs() >= MAX_DIGITS {
            return None;
        }
        let d = scaled.round() as i64;
        (self.decode(d, e, f) == bits).then_some(d)
    }
}

/// The packed `(e, f)` of a vector: `e` in the low byte, `f` in the high one.
pub(crate) fn pack(e: u8, f: u8) -> u16 {
    u16::from(e) | (u16::from(f) << 8)
}

/// `(e, f)` of a packed param, when valid for `ty` (`f <= e <= max_e`).
pub(crate) fn unpack(ty: Float, p: u16) -> Option<(u8, u8)> {
    let (e, f) = ((p & 0xff) as u8, (p >> 8) as u8);
    (f <= e && e <= ty.max_e()).then_some((e, f))
}

/// Bits an encoding of the sample under `(e, f)` takes: digits at the width of their range,
/// exceptions at their row and bit pattern.
fn cost(ty: Float, sample: &[u64], e: u8, f: u8) -> u64 {
    let (mut lo, mut hi, mut exceptions) = (i64::MAX, i64::MIN, 0u64);
    for &b in sample {
        match ty.encode(b, e, f) {
            Some(d) => {
                lo = lo.min(d);
                hi = hi.max(d);
            }
            None => exceptions += 1,
        }
    }
    let width = if lo > hi {
        0
    } else {
        64 - (hi.wrapping_sub(lo) as u64).leading_zeros() as u64
    };
    width * (sample.len() as u64 - exceptions) + exceptions * (64 + 8 * ty.width() as u64)
}

fn sample_of(values: &[u64]) -> Vec<u64> {
    let step = (values.len() / SAMPLE).max(1);
    values.iter().step_by(step).take(SAMPLE).copied().collect()
}

/// One vector, encoded.
#[derive(Debug, Default)]
pub(crate) struct Encoded {
    /// Packed `(e, f)`.
    pub(crate) param: u16,
    /// Digits, one a value.
    pub(crate) digits: Vec<i64>,
    /// Indices within the vector of the exceptions, and their bit patterns.
    pub(crate) exceptions: Vec<(u32, u64)>,
}

/// Chooses vectors' `(e, f)` for one field: a full search over every pair on a sample of one
/// vector keeps the best few, which the next vectors choose from (ALP's two-level sampling).
#[derive(Debug)]
pub(crate) struct Encoder {
    ty: Float,
    candidates: Vec<(u8, u8)>,
    vectors: u64,
}

impl Encoder {
    pub(crate) fn new(ty: Float) -> Encoder {
        Encoder {
            ty,
            candidates: Vec::new(),
            vectors: 0,
        }
    }

    fn search(&mut self, sample: &[u64]) {
        let mut all: Vec<(u64, u8, u8)> = Vec::new();
        for e in 0..=self.ty.max_e() {
            for f in 0..=e {
                all.push((cost(self.ty, sample, e, f), e, f));
            }
        }
        // Cheapest first; among equals the larger exponent, which keeps more digits exact on
        // the vectors that follow.
        all.sort_by_key(|&(c, e, f)| (c, std::cmp::Reverse(e), std::cmp::Reverse(f)));
        self.candidates = all
            .into_iter()
            .take(CANDIDATES)
            .map(|(_, e, f)| (e, f))
            .collect();
    }

    /// Encodes one vector (at most [`ALP_VECTOR_ROWS`] bit patterns).
    pub(crate) fn encode(&mut self, values: &[u64]) -> Encoded {
        debug_assert!(values.len() as u64 <= ALP_VECTOR_ROWS);
        let sample = sample_of(values);
        if self.vectors % RESEARCH_EVERY == 0 || self.candidates.is_empty() {
            self.search(&sample);
        }
        self.vectors += 1;
        let ty = self.ty;
        let (e, f) = if self.candidates.len() == 1 {
            self.candidates[0]
        } else {
            self.candidates
                .iter()
                .copied()
                .min_by_key(|&(e, f)| cost(ty, &sample, e, f))
                .unwrap_or((0, 0))
        };
        let mut out = Encoded {
            param: pack(e, f),
            digits: Vec::with_capacity(values.len()),
            exceptions: Vec::new(),
        };
        let mut fill = None;
        for (i, &b) in values.iter().enumerate() {
            match ty.encode(b, e, f) {
                Some(d) => {
                    fill.get_or_insert(d);
                    out.digits.push(d);
                }
                None => {
                    out.exceptions.push((i as u32, b));
                    out.digits.push(i64::MIN);
                }
            }
        }
        // An exception's digits slot takes the vector's first encodable digits so that it does
        // not widen the vector's range.
        let fill = fill.unwrap_or(0);
        for &(i, _) in &out.exceptions {
            out.digits[i as usize] = fill;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_values_become_small_digits() {
        // Each value the double nearest a two-decimal number, as a parser gives it.
        let v: Vec<u64> = (0..1024)
            .map(|i| ((350 + i) as f64 / 100.0).to_bits())
            .collect();
        let enc = Encoder::new(Float::F64).encode(&v);
        assert!(enc.exceptions.is_empty());
        let (e, f) = unpack(Float::F64, enc.param).expect("valid");
        for (d, &b) in enc.digits.iter().zip(&v) {
            assert_eq!(Float::F64.decode(*d, e, f), b);
        }
        assert!(enc.digits.iter().all(|d| (350..=1373).contains(d)));
    }

    #[test]
    fn special_values_are_exceptions() {
        let v: Vec<u64> = [f64::NAN, -0.0, f64::INFINITY, 1.5, 5e-324]
            .iter()
            .map(|x| x.to_bits())
            .collect();
        let enc = Encoder::new(Float::F64).encode(&v);
        let rows: Vec<u32> = enc.exceptions.iter().map(|x| x.0).collect();
        assert!(rows.contains(&0) && rows.contains(&1) && rows.contains(&2));
        assert!(!rows.contains(&3));
    }

    #[test]
    fn params_outside_the_range_are_rejected() {
        assert_eq!(unpack(Float::F32, pack(10, 3)), Some((10, 3)));
        assert_eq!(unpack(Float::F32, pack(11, 0)), None);
        assert_eq!(unpack(Float::F64, pack(2, 3)), None);
        assert_eq!(unpack(Float::F64, pack(18, 18)), Some((18, 18)));
    }
}
