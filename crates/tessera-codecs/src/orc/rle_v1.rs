//! Integer RLE version 1 (spec "Integer Run Length Encoding, version 1").

use super::{run_past_end, Cursor};
use tessera_format::Result;

/// Decodes exactly `out.len()` values of an RLE v1 stream (`signed`: zigzag varints); returns
/// the input bytes consumed. A header byte 0..=127 is a run of `h + 3` values with a signed
/// byte delta and a varint base; -128..=-1 is `-h` literal varints. Arithmetic wraps like ORC's
/// Java reader's `long`s.
pub fn decode_rle_v1(input: &[u8], signed: bool, out: &mut [i64]) -> Result<usize> {
    let mut c = Cursor::new(input);
    let n = out.len();
    let mut at = 0;
    while at < n {
        let h = c.byte("RLE v1 header")? as i8;
        if h >= 0 {
            let run = h as usize + 3;
            let delta = c.byte("RLE v1 delta")? as i8 as i64;
            let base = c.signed_varint(signed)?;
            if at + run > n {
                return Err(run_past_end(at, run, n));
            }
            for (i, o) in out[at..at + run].iter_mut().enumerate() {
                *o = base.wrapping_add((i as i64).wrapping_mul(delta));
            }
            at += run;
        } else {
            let run = -(h as i32) as usize;
            if at + run > n {
                return Err(run_past_end(at, run, n));
            }
            for o in &mut out[at..at + run] {
                *o = c.signed_varint(signed)?;
            }
            at += run;
        }
    }
    Ok(c.pos)
}
