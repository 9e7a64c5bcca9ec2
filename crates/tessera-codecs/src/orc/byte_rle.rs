//! Byte RLE and boolean streams (spec "Byte Run Length Encoding", "Boolean Run Length
//! Encoding").

use super::{run_past_end, Cursor};
use tessera_format::Result;

/// Decodes exactly `out.len()` bytes of a byte-RLE stream; returns the input bytes consumed.
/// A header byte 0..=127 is a run of `h + 3` copies of the next byte; -128..=-1 is `-h` literal
/// bytes.
pub fn decode_byte_rle(input: &[u8], out: &mut [u8]) -> Result<usize> {
    let mut c = Cursor::new(input);
    let n = out.len();
    let mut at = 0;
    while at < n {
        let h = c.byte("byte RLE header")? as i8;
        if h >= 0 {
            let run = h as usize + 3;
            let v = c.byte("byte RLE run value")?;
            if at + run > n {
                return Err(run_past_end(at, run, n));
            }
            out[at..at + run].fill(v);
            at += run;
        } else {
            let run = -(h as i32) as usize;
            if at + run > n {
                return Err(run_past_end(at, run, n));
            }
            out[at..at + run].copy_from_slice(c.take(run, "byte RLE literals")?);
            at += run;
        }
    }
    Ok(c.pos)
}

/// Decodes `out.len()` booleans: a byte-RLE stream whose bytes hold 8 values each, most
/// significant bit first. The last byte's unused low bits are ignored (ORC writes the last byte
/// whole). Returns the input bytes consumed.
pub fn decode_bool(input: &[u8], out: &mut [bool]) -> Result<usize> {
    let n = out.len();
    let mut bytes = vec![0u8; n.div_ceil(8)];
    let used = decode_byte_rle(input, &mut bytes)?;
    for (i, o) in out.iter_mut().enumerate() {
        *o = bytes[i / 8] >> (7 - i % 8) & 1 == 1;
    }
    Ok(used)
}
