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

use tessera_codecs::orc::{closest_fixed_bits, decode_width};
use tessera_format::{Error, Result};

/// Which RLE a stream uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RleKind {
    /// Byte RLE (also boolean and PRESENT streams: one output byte holds 8 values).
    Byte,
    /// Integer RLE v1.
    V1,
    /// Integer RLE v2.
    V2,
}

/// One piece of a stream: its bytes and the output elements they decode to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// Byte range in the stream.
    pub bytes: Range<usize>,
    /// Output elements (values; bytes for byte RLE).
    pub values: usize,
}

struct Walk<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Walk<'_> {
    fn truncated(&self, what: &'static str, needed: usize) -> Error {
        Error::Truncated {
            what,
            offset: self.pos as u64,
            needed: needed as u64,
            available: (self.b.len() - self.pos) as u64,
        }
    }
    fn byte(&mut self, what: &'static str) -> Result<u32> {
        let v = *self
            .b
            .get(self.pos)
            .ok_or_else(|| self.truncated(what, 1))?;
        self.pos += 1;
        Ok(v as u32)
    }
    fn skip(&mut self, n: usize, what: &'static str) -> Result<()> {
        if self.b.len() - self.pos < n {
            return Err(self.truncated(what, n));
        }
        self.pos += n;
        Ok(())
    }
    /// Skips a base-128 varint (at most 10 bytes, as the decoders allow).
    fn varint(&mut self) -> Result<()> {
        let start = self.pos;
        for _ in 0..10 {
            if self.byte("varint")? & 0x80 == 0 {
                return Ok(());
            }
        }
        Err(Error::InvalidHeader {
            field: "varint",
            offset: start as u64,
            expected: "at most 10 bytes".into(),
            found: 11,
        })
    }
    /// The next run's output elements, its bytes skipped.
    fn run(&mut self, kind: RleKind) -> Result<usize> {
        match kind {
            RleKind::Byte => {
                let h = self.byte("byte RLE header")? as u8 as i8;
                if h >= 0 {
                    self.skip(1, "byte RLE run value")?;
                    Ok(h as usize + 3)
                } else {
                    let run = -(h as i32) as usize;
                    self.skip(run, "byte RLE literals")?;
                    Ok(run)
                }
            }
            RleKind::V1 => {
                let h = self.byte("RLE v1 header")? as u8 as i8;
                if h >= 0 {
                    self.skip(1, "RLE v1 delta")?;
                    self.varint()?;
                    Ok(h as usize + 3)
                } else {
                    let run = -(h as i32) as usize;
                    for _ in 0..run {
                        self.varint()?;
                    }
                    Ok(run)
                }
            }
            RleKind::V2 => self.run_v2(),
        }
    }
    fn run_v2(&mut self) -> Result<usize> {
        let start = self.pos;
        let first = self.byte("RLE v2 header")?;
        let packed = |n: usize, w: u32| (n * w as usize).div_ceil(8);
        match first >> 6 {
            0 => {
                self.skip(((first >> 3) & 7) as usize + 1, "SHORT_REPEAT value")?;
                Ok((first & 7) as usize + 3)
            }
            1 => {
                let w = decode_width((first >> 1) & 31);
                let run = (((first & 1) << 8) | self.byte("DIRECT header")?) as usize + 1;
                self.skip(packed(run, w), "DIRECT values")?;
                Ok(run)
            }
            2 => {
                let w = decode_width((first >> 1) & 31);
                let run = (((first & 1) << 8) | self.byte("PATCHED_BASE header")?) as usize + 1;
                let b2 = self.byte("PATCHED_BASE header")?;
                let b3 = self.byte("PATCHED_BASE header")?;
                let bw = (b2 >> 5) as usize + 1;
                let pw = decode_width(b2 & 31);
                let pgw = (b3 >> 5) + 1;
                let pll = (b3 & 31) as usize;
                if pw + pgw > 64 {
                    return Err(Error::InvalidHeader {
                        field: "PATCHED_BASE patch width + gap width",
                        offset: start as u64 + 2,
                        expected: "at most 64".into(),
                        found: (pw + pgw) as u64,
                    });
                }
                self.skip(bw, "PATCHED_BASE base")?;
                self.skip(packed(run, w), "PATCHED_BASE values")?;
                self.skip(
                    packed(pll, closest_fixed_bits(pw + pgw)),
                    "PATCHED_BASE patch list",
                )?;
                Ok(run)
            }
            _ => {
                let code = (first >> 1) & 31;
                let run = (((first & 1) << 8) | self.byte("DELTA header")?) as usize + 1;
                self.varint()?;
                self.varint()?;
                if code != 0 {
                    if run < 2 {
                        return Err(Error::InvalidHeader {
                            field: "DELTA run length with packed deltas",
                            offset: start as u64,
                            expected: "at least 2".into(),
                            found: run as u64,
                        });
                    }
                    self.skip(packed(run - 2, decode_width(code)), "DELTA values")?;
                }
                Ok(run)
            }
        }
    }
}

/// Cuts a stream of `total` output elements into pieces of at least `target` elements each (the
/// last may be shorter), at run boundaries. The pieces cover the stream's first `total`
/// elements in order; bytes after the run that completes them are not part of any piece.
pub fn split(kind: RleKind, stream: &[u8], total: usize, target: usize) -> Result<Vec<Piece>> {
    let target = target.max(1);
    let mut w = Walk { b: stream, pos: 0 };
    let mut pieces = Vec::new();
    let (mut at, mut piece_at, mut piece_pos) = (0usize, 0usize, 0usize);
    while at < total {
        let run = w.run(kind)?;
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
                bytes: piece_pos..w.pos,
                values: at - piece_at,
            });
            piece_at = at;
            piece_pos = w.pos;
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
