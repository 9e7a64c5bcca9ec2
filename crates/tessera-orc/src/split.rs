//! Cutting one ORC RLE stream into many independent CODAG chunks (`docs/gpu/orc.md`).
//!
//! A stripe's stream holds millions of values; decoded as one chunk it is one warp's sequential
//! work. An RLE stream can be entered at any run boundary (every run header stands alone: RLE v1,
//! RLE v2 and byte RLE carry no state from one run to the next), so the host walks the run
//! headers, reading each header and skipping its payload without decoding a value, and cuts the
//! stream every `target` values at the next run boundary. Every piece is then a chunk with a known
//! value count and a known output offset (the sum of the counts before it).
//!
//! Bounds: every header and payload length is checked against the stream before it is skipped,
//! and a run past the stream's announced value count is an error, so a lying header gives a
//! typed [`Error`] here (the same kinds the CPU decoders give), never a read past the stream or a
//! piece list sized by a header (the list grows one entry per `target` values walked).

use std::ops::Range;

use tessera_codecs::orc::skip_run;
use tessera_format::{Error, Result};

pub use tessera_codecs::orc::RleKind;

/// One piece of a stream: its bytes and the output elements they decode to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// Byte range in the stream.
    pub bytes: Range<usize>,
    /// Output elements (values; bytes for byte RLE).
    pub values: usize,
}

/// Cuts a stream of `total` output elements into pieces of at least `target` elements each (the
/// last may be shorter), at run boundaries. The pieces cover the stream's first `total`
/// elements in order; bytes after the run that completes them are not part of any piece.
pub fn split(kind: RleKind, stream: &[u8], total: usize, target: usize) -> Result<Vec<Piece>> {
    let target = target.max(1);
    let mut pos = 0usize;
    let mut pieces = Vec::new();
    let (mut at, mut piece_at, mut piece_pos) = (0usize, 0usize, 0usize);
    while at < total {
        let (run, next) = skip_run(kind, stream, pos)?;
        pos = next;
        if run > total - at {
            return Err(Error::CountMismatch {
                what: "ORC run past the stream's value count (values before the run + run length)",
                expected: total as u64,
                found: (at + run) as u64,
            });
        }
        at += run;
        if at - piece_at >= target || at == total {
            pieces.push(Piece {
                bytes: piece_pos..pos,
                values: at - piece_at,
            });
            piece_at = at;
            piece_pos = pos;
        }
    }
    Ok(pieces)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_codecs::orc::{self as rle, encode};

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    /// Values with runs, sequences and noise of several widths: every RLE v2 sub-encoding.
    fn values(n: usize, seed: u64) -> Vec<i64> {
        let mut s = seed;
        let mut v = Vec::with_capacity(n);
        while v.len() < n {
            let len = (lcg(&mut s) % 700 + 1) as usize;
            let base = lcg(&mut s) as i64 - (1 << 30);
            match lcg(&mut s) % 4 {
                0 => v.extend(std::iter::repeat_n(base, len)),
                1 => v.extend((0..len as i64).map(|i| base + 3 * i)),
                2 => v.extend((0..len).map(|_| (lcg(&mut s) % 1000) as i64)),
                _ => v.extend((0..len).map(|_| {
                    let x = lcg(&mut s) as i64;
                    if lcg(&mut s) % 50 == 0 {
                        x << 20
                    } else {
                        x % 100
                    }
                })),
            }
        }
        v.truncate(n);
        v
    }

    fn check_ints(v2: bool, signed: bool, vals: &[i64], target: usize) {
        let (kind, stream) = if v2 {
            (RleKind::V2, encode::rle_v2(vals, signed))
        } else {
            (RleKind::V1, encode::rle_v1(vals, signed))
        };
        let pieces = split(kind, &stream, vals.len(), target).expect("walks");
        assert!(pieces.len() > 1 || vals.len() <= target);
        let mut got = Vec::with_capacity(vals.len());
        let mut next = 0;
        for p in &pieces {
            assert_eq!(p.bytes.start, next, "pieces are contiguous");
            next = p.bytes.end;
            let mut out = vec![0i64; p.values];
            let used = if v2 {
                rle::decode_rle_v2(&stream[p.bytes.clone()], signed, &mut out)
            } else {
                rle::decode_rle_v1(&stream[p.bytes.clone()], signed, &mut out)
            }
            .expect("a piece decodes alone");
            assert_eq!(used, p.bytes.len(), "a piece ends at a run boundary");
            got.extend(out);
        }
        assert_eq!(got, vals);
    }

    #[test]
    fn integer_pieces_decode_alone_to_the_whole_stream() {
        for (n, seed) in [(1usize, 1u64), (5000, 2), (100_000, 3)] {
            let vals = values(n, seed);
            for target in [1, 100, 4096] {
                for signed in [false, true] {
                    let vals: Vec<i64> = if signed {
                        vals.clone()
                    } else {
                        vals.iter()
                            .map(|x| x.unsigned_abs() as i64 & (i64::MAX >> 1))
                            .collect()
                    };
                    check_ints(true, signed, &vals, target);
                    check_ints(false, signed, &vals, target);
                }
            }
        }
    }

    #[test]
    fn byte_pieces_decode_alone_to_the_whole_stream() {
        let mut s = 9;
        let mut data = Vec::new();
        while data.len() < 50_000 {
            let len = (lcg(&mut s) % 300 + 1) as usize;
            let b = lcg(&mut s) as u8;
            if lcg(&mut s) % 2 == 0 {
                data.extend(std::iter::repeat_n(b, len));
            } else {
                data.extend((0..len).map(|_| lcg(&mut s) as u8));
            }
        }
        let stream = encode::byte_rle(&data);
        for target in [1, 1000, 16384] {
            let pieces = split(RleKind::Byte, &stream, data.len(), target).expect("walks");
            let mut got = Vec::new();
            for p in &pieces {
                assert!(
                    p.values >= target || p.bytes.end == pieces.last().expect("a piece").bytes.end
                );
                let mut out = vec![0u8; p.values];
                rle::decode_byte_rle(&stream[p.bytes.clone()], &mut out).expect("decodes");
                got.extend(out);
            }
            assert_eq!(got, data);
        }
    }

    #[test]
    fn lying_headers_are_typed_errors() {
        let vals = values(10_000, 5);
        let v2 = encode::rle_v2(&vals, true);
        // Truncated anywhere: an error or (cut after the last needed run) fewer values, never a
        // panic; the full count from a cut stream is always an error.
        for cut in [0, 1, 2, v2.len() / 2, v2.len() - 1] {
            assert!(split(RleKind::V2, &v2[..cut], vals.len(), 64).is_err());
        }
        // More values announced than the stream holds.
        assert!(matches!(
            split(RleKind::V2, &v2, vals.len() + 1, 64),
            Err(Error::Truncated { .. })
        ));
        // A run past the announced count.
        assert!(matches!(
            split(RleKind::V1, &encode::rle_v1(&[7; 10], false), 9, 4),
            Err(Error::CountMismatch { .. })
        ));
        // PATCHED_BASE with patch width + gap width over 64.
        assert!(matches!(
            split(RleKind::V2, &[0x80 | (31 << 1), 0, 31, 0xE0], 1, 1),
            Err(Error::InvalidHeader { .. })
        ));
        // A varint of 11 bytes.
        assert!(matches!(
            split(RleKind::V1, &[0xff; 12], 1, 1),
            Err(Error::InvalidHeader { .. })
        ));
        // Every byte string of length 3 over a few header bytes: no panic.
        for a in [0u8, 0x3f, 0x40, 0x7f, 0x80, 0xbf, 0xc0, 0xff] {
            for b in [0u8, 0x80, 0xff] {
                for kind in [RleKind::Byte, RleKind::V1, RleKind::V2] {
                    let _ = split(kind, &[a, b, 0xff], 1000, 7);
                }
            }
        }
    }
}
