//! The run header walk: where each run of an RLE v1, RLE v2 or byte-RLE stream ends and how
//! many values it yields, read from its header with its payload skipped (no value decoded), so a
//! stream can be cut at run boundaries into pieces that decode on their own (`tessera_orc::split`).
//! Every length is checked against the stream; the errors are the decoders' kinds.

use tessera_format::{Error, Result};

use super::{closest_fixed_bits, decode_width, Cursor};

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

/// The run starting at byte `at` of `stream`: the values it yields and the byte after it.
pub fn skip_run(kind: RleKind, stream: &[u8], at: usize) -> Result<(usize, usize)> {
    let mut c = Cursor {
        bytes: stream,
        pos: at.min(stream.len()),
    };
    let values = c.run(kind)?;
    Ok((values, c.pos))
}

impl Cursor<'_> {
    /// The next run's output elements, its bytes skipped.
    fn run(&mut self, kind: RleKind) -> Result<usize> {
        match kind {
            RleKind::Byte => {
                let h = self.byte("byte RLE header")? as i8;
                if h >= 0 {
                    self.take(1, "byte RLE run value")?;
                    Ok(h as usize + 3)
                } else {
                    let run = -(h as i32) as usize;
                    self.take(run, "byte RLE literals")?;
                    Ok(run)
                }
            }
            RleKind::V1 => {
                let h = self.byte("RLE v1 header")? as i8;
                if h >= 0 {
                    self.take(1, "RLE v1 delta")?;
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
        let first = self.byte("RLE v2 header")? as u32;
        let packed = |n: usize, w: u32| (n * w as usize).div_ceil(8);
        match first >> 6 {
            0 => {
                self.take(((first >> 3) & 7) as usize + 1, "SHORT_REPEAT value")?;
                Ok((first & 7) as usize + 3)
            }
            1 => {
                let w = decode_width((first >> 1) & 31);
                let run = (((first & 1) << 8) | self.byte("DIRECT header")? as u32) as usize + 1;
                self.take(packed(run, w), "DIRECT values")?;
                Ok(run)
            }
            2 => {
                let w = decode_width((first >> 1) & 31);
                let run =
                    (((first & 1) << 8) | self.byte("PATCHED_BASE header")? as u32) as usize + 1;
                let b2 = self.byte("PATCHED_BASE header")? as u32;
                let b3 = self.byte("PATCHED_BASE header")? as u32;
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
                self.take(bw, "PATCHED_BASE base")?;
                self.take(packed(run, w), "PATCHED_BASE values")?;
                self.take(
                    packed(pll, closest_fixed_bits(pw + pgw)),
                    "PATCHED_BASE patch list",
                )?;
                Ok(run)
            }
            _ => {
                let code = (first >> 1) & 31;
                let run = (((first & 1) << 8) | self.byte("DELTA header")? as u32) as usize + 1;
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
                    self.take(packed(run - 2, decode_width(code)), "DELTA values")?;
                }
                Ok(run)
            }
        }
    }
}
