//! Horizontal bit-packing of one **miniblock** (32 lane values), `int-common.md` §5.
//!
//! Value `i` of a miniblock occupies bits `[i*bit_width, (i+1)*bit_width)` of the miniblock's bit
//! string; bit `j` is bit `j % 32` of word `j / 32`, words little-endian. A full miniblock is
//! therefore exactly `bit_width` words.
//!
//! Lane 32 has one fully unrolled packer and unpacker per `bit_width` (const generic `B`,
//! dispatched by a `match`), so every shift and word index is a constant. Lane 64 uses one
//! runtime-width loop over a `u128` window; it is less hot and allows widths up to 64.
//!
//! Invariants: packers require every input value to fit `bit_width` bits (encoders compute the
//! width from the OR of the values, so this holds) and write exactly `bit_width` words, unused
//! high bits zero. Unpackers are given at least `bit_width` words (decoders check the block's
//! size first); they never panic on short input in release builds, they produce zeros instead.

/// Repeats `$body` 32 times with `$i` bound to the constants 0..32, so the loop is unrolled even
/// at low optimisation levels and every index derived from `$i` and a const `B` folds.
macro_rules! unroll32 {
    ($i:ident, $body:block) => {
        unroll32!(@ $i, $body, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
    };
    (@ $i:ident, $body:block, $($n:literal)*) => {
        $( { let $i: usize = $n; $body } )*
    };
}

/// Packs 32 values of at most `B` bits into the first `4 * B` bytes of `out` (little-endian
/// words).
#[inline(always)]
fn pack32<const B: usize>(inp: &[u32; 32], out: &mut [u8]) {
    if B == 0 {
        return;
    }
    // All indices into `w` are constants after unrolling, so it lives in registers.
    let mut w = [0u32; 32];
    unroll32!(i, {
        let bit = i * B;
        let wi = bit / 32;
        let sh = bit % 32;
        w[wi] |= inp[i] << sh;
        if sh + B > 32 {
            // The value straddles a word boundary: its high bits start the next word.
            w[wi + 1] |= inp[i] >> (32 - sh);
        }
    });
    if let Some(dst) = out.get_mut(..4 * B) {
        for k in 0..B {
            dst[4 * k..4 * k + 4].copy_from_slice(&w[k].to_le_bytes());
        }
    } else {
        debug_assert!(false, "pack32 output too short");
    }
}

/// Loads the first `B` little-endian words of `bytes` (zeros if `bytes` is too short, which
/// validated callers never let happen).
#[inline(always)]
fn load_words<const B: usize>(bytes: &[u8]) -> [u32; 32] {
    let mut w = [0u32; 32];
    if let Some(b) = bytes.get(..4 * B) {
        for k in 0..B {
            w[k] = u32::from_le_bytes([b[4 * k], b[4 * k + 1], b[4 * k + 2], b[4 * k + 3]]);
        }
    } else {
        debug_assert!(false, "unpack32 input too short");
    }
    w
}

/// Unpacks 32 values of `B` bits from the first `B` words of `bytes` and adds `reference`
/// (lane arithmetic): FOR decoding of one miniblock in one pass. With `SCAN`, also runs the
/// inclusive prefix sum from `acc` (DFOR: the values are deltas), in registers, and returns the
/// new running sum.
#[inline(always)]
fn unpack32<const B: usize, const SCAN: bool>(
    bytes: &[u8],
    reference: u32,
    mut acc: u32,
    out: &mut [u32; 32],
) -> u32 {
    if B == 0 {
        if SCAN {
            for o in out.iter_mut() {
                acc = acc.wrapping_add(reference);
                *o = acc;
            }
        } else {
            *out = [reference; 32];
        }
        return acc;
    }
    let w = load_words::<B>(bytes);
    let mask = u32::MAX >> (32 - B);
    unroll32!(i, {
        let bit = i * B;
        let wi = bit / 32;
        let sh = bit % 32;
        let mut v = w[wi] >> sh;
        if sh + B > 32 {
            v |= w[wi + 1] << (32 - sh);
        }
        let x = (v & mask).wrapping_add(reference);
        if SCAN {
            acc = acc.wrapping_add(x);
            out[i] = acc;
        } else {
            out[i] = x;
        }
    });
    acc
}

macro_rules! dispatch32 {
    ($bw:expr, $f:ident $(, $g:ident)*; ($($arg:expr),*); $default:expr) => {
        match $bw {
            0 => $f::<0 $(, $g)*>($($arg),*), 1 => $f::<1 $(, $g)*>($($arg),*),
            2 => $f::<2 $(, $g)*>($($arg),*), 3 => $f::<3 $(, $g)*>($($arg),*),
            4 => $f::<4 $(, $g)*>($($arg),*), 5 => $f::<5 $(, $g)*>($($arg),*),
            6 => $f::<6 $(, $g)*>($($arg),*), 7 => $f::<7 $(, $g)*>($($arg),*),
            8 => $f::<8 $(, $g)*>($($arg),*), 9 => $f::<9 $(, $g)*>($($arg),*),
            10 => $f::<10 $(, $g)*>($($arg),*), 11 => $f::<11 $(, $g)*>($($arg),*),
            12 => $f::<12 $(, $g)*>($($arg),*), 13 => $f::<13 $(, $g)*>($($arg),*),
            14 => $f::<14 $(, $g)*>($($arg),*), 15 => $f::<15 $(, $g)*>($($arg),*),
            16 => $f::<16 $(, $g)*>($($arg),*), 17 => $f::<17 $(, $g)*>($($arg),*),
            18 => $f::<18 $(, $g)*>($($arg),*), 19 => $f::<19 $(, $g)*>($($arg),*),
            20 => $f::<20 $(, $g)*>($($arg),*), 21 => $f::<21 $(, $g)*>($($arg),*),
            22 => $f::<22 $(, $g)*>($($arg),*), 23 => $f::<23 $(, $g)*>($($arg),*),
            24 => $f::<24 $(, $g)*>($($arg),*), 25 => $f::<25 $(, $g)*>($($arg),*),
            26 => $f::<26 $(, $g)*>($($arg),*), 27 => $f::<27 $(, $g)*>($($arg),*),
            28 => $f::<28 $(, $g)*>($($arg),*), 29 => $f::<29 $(, $g)*>($($arg),*),
            30 => $f::<30 $(, $g)*>($($arg),*), 31 => $f::<31 $(, $g)*>($($arg),*),
            32 => $f::<32 $(, $g)*>($($arg),*),
            _ => {
                debug_assert!(false, "bit_width over 32 reached the lane-32 packer");
                $default
            }
        }
    };
}

/// Lane 32: packs a miniblock at `bit_width` (`<= 32`) into `out[..4 * bit_width]`.
#[inline]
pub(crate) fn pack_u32(bit_width: u32, inp: &[u32; 32], out: &mut [u8]) {
    dispatch32!(bit_width, pack32; (inp, out); ())
}

/// Lane 32: unpacks a miniblock of `bit_width` (`<= 32`) from `bytes` (at least `bit_width`
/// words), adding `reference`.
#[inline]
pub(crate) fn unpack_u32(bit_width: u32, bytes: &[u8], reference: u32, out: &mut [u32; 32]) {
    const PLAIN: bool = false;
    dispatch32!(bit_width, unpack32, PLAIN; (bytes, reference, 0, out); 0);
}

/// Lane 32: like [`unpack_u32`], then the inclusive prefix sum starting from `acc`; returns the
/// sum after the last value.
#[inline]
pub(crate) fn unpack_scan_u32(
    bit_width: u32,
    bytes: &[u8],
    reference: u32,
    acc: u32,
    out: &mut [u32; 32],
) -> u32 {
    const SCAN: bool = true;
    dispatch32!(bit_width, unpack32, SCAN; (bytes, reference, acc, out); acc)
}

/// Lane 64: packs a miniblock at `bit_width` (`<= 64`) into `out[..4 * bit_width]`.
pub(crate) fn pack_u64(bit_width: u32, inp: &[u64; 32], out: &mut [u8]) {
    let bw = bit_width as usize;
    if bw == 0 {
        return;
    }
    // `acc` holds fewer than 32 pending bits before each value is added, so at most 96 bits.
    let mut acc: u128 = 0;
    let mut pending = 0usize;
    let mut o = 0usize;
    for &v in inp {
        acc |= (v as u128) << pending;
        pending += bw;
        while pending >= 32 {
            if let Some(d) = out.get_mut(o..o + 4) {
                d.copy_from_slice(&(acc as u32).to_le_bytes());
            }
            acc >>= 32;
            pending -= 32;
            o += 4;
        }
    }
    // 32 * bw bits is a whole number of words, so nothing is pending here.
    debug_assert_eq!(pending, 0);
}

/// Lane 64: unpacks a miniblock of `bit_width` (`<= 64`) from `bytes` (at least `bit_width`
/// words), adding `reference`, and with `scan` also the prefix sum from `acc` (returned).
#[inline]
fn unpack_u64_impl(
    bit_width: u32,
    bytes: &[u8],
    reference: u64,
    mut acc: u64,
    scan: bool,
    out: &mut [u64; 32],
) -> u64 {
    let bw = (bit_width as usize).min(64);
    // Two zero words of slack so a value's 3-word window never leaves the buffer.
    let mut w = [0u32; 66];
    for (d, c) in w[..bw].iter_mut().zip(bytes.chunks_exact(4)) {
        *d = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    }
    let mask = if bw == 0 { 0 } else { u64::MAX >> (64 - bw) };
    for (i, o) in out.iter_mut().enumerate() {
        let bit = i * bw;
        let wi = bit / 32;
        let sh = bit % 32;
        let win = (w[wi] as u128) | ((w[wi + 1] as u128) << 32) | ((w[wi + 2] as u128) << 64);
        let x = (((win >> sh) as u64) & mask).wrapping_add(reference);
        if scan {
            acc = acc.wrapping_add(x);
            *o = acc;
        } else {
            *o = x;
        }
    }
    acc
}

pub(crate) fn unpack_u64(bit_width: u32, bytes: &[u8], reference: u64, out: &mut [u64; 32]) {
    unpack_u64_impl(bit_width, bytes, reference, 0, false, out);
}

pub(crate) fn unpack_scan_u64(
    bit_width: u32,
    bytes: &[u8],
    reference: u64,
    acc: u64,
    out: &mut [u64; 32],
) -> u64 {
    unpack_u64_impl(bit_width, bytes, reference, acc, true, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u32_round_trip_every_width() {
        for bw in 0..=32u32 {
            let mask = if bw == 0 { 0 } else { u32::MAX >> (32 - bw) };
            let mut inp = [0u32; 32];
            for (i, v) in inp.iter_mut().enumerate() {
                *v = (i as u32).wrapping_mul(0x9E37_79B9).rotate_left(i as u32) & mask;
            }
            let mut packed = [0u8; 128];
            pack_u32(bw, &inp, &mut packed);
            let mut out = [0u32; 32];
            unpack_u32(bw, &packed, 7, &mut out);
            for i in 0..32 {
                assert_eq!(out[i], inp[i].wrapping_add(7), "bw {bw} i {i}");
            }
            let acc = unpack_scan_u32(bw, &packed, 7, 100, &mut out);
            let mut expect = 100u32;
            for i in 0..32 {
                expect = expect.wrapping_add(inp[i].wrapping_add(7));
                assert_eq!(out[i], expect, "scan bw {bw} i {i}");
            }
            assert_eq!(acc, expect);
            // Lane 64 packing of the same values gives the same words (same bit string).
            let inp64 = inp.map(u64::from);
            let mut packed64 = [0u8; 256];
            pack_u64(bw, &inp64, &mut packed64);
            assert_eq!(&packed64[..4 * bw as usize], &packed[..4 * bw as usize]);
        }
    }

    #[test]
    fn u64_round_trip_every_width() {
        for bw in 0..=64u32 {
            let mask = if bw == 0 { 0 } else { u64::MAX >> (64 - bw) };
            let mut inp = [0u64; 32];
            for (i, v) in inp.iter_mut().enumerate() {
                *v = (i as u64)
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    .rotate_left(i as u32)
                    & mask;
            }
            let mut packed = [0u8; 256];
            pack_u64(bw, &inp, &mut packed);
            let mut out = [0u64; 32];
            unpack_u64(bw, &packed[..4 * bw as usize], 0, &mut out);
            assert_eq!(out, inp, "bw {bw}");
            let acc = unpack_scan_u64(bw, &packed[..4 * bw as usize], 1, 5, &mut out);
            let mut expect = 5u64;
            for i in 0..32 {
                expect = expect.wrapping_add(inp[i].wrapping_add(1));
                assert_eq!(out[i], expect);
            }
            assert_eq!(acc, expect);
        }
    }
}
