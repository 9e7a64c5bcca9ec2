//! The run header walk: where each run of an RLE v1, RLE v2 or byte-RLE stream ends and how
//! many values it yields, read from its header with its payload skipped (no value decoded), so a
//! stream can be cut at run boundaries into pieces that decode on their own (`tessera_orc::split`).
//! Every length is checked against the stream; the errors are the decoders' kinds.

use tessera_format::Result;

use super::Cursor;

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
        let header = self.v2_header()?;
        self.take(header.payload_bytes(), "RLE v2 payload")?;
        Ok(header.run())
    }
}
