//! Integer RLE version 2 (spec "Integer Run Length Encoding, version 2"): the two top bits of a
//! run's first byte pick SHORT_REPEAT (0), DIRECT (1), PATCHED_BASE (2) or DELTA (3).

use super::{closest_fixed_bits, decode_width, run_past_end, unzigzag, Cursor};
use tessera_format::{Error, Result};

/// `count` values of `width` bits (1..=64), big endian, most significant bit first, from the
/// start of `c`'s next byte; the run's bits end padded to a byte, so the cursor moves past
/// `ceil(count * width / 8)` bytes.
fn unpack(c: &mut Cursor<'_>, width: u32, count: usize, what: &'static str) -> Result<Vec<u64>> {
    let bytes = (count * width as usize).div_ceil(8);
    let data = c.take(bytes, what)?;
    let mut out = Vec::with_capacity(count);
    let mut bit = 0usize;
    for _ in 0..count {
        let mut v = 0u64;
        let mut left = width;
        while left > 0 {
            let byte = data[bit / 8];
            let avail = 8 - (bit % 8) as u32;
            let take = avail.min(left);
            let chunk = (byte >> (avail - take)) as u64 & ((1u64 << take) - 1);
            v = if take == 64 {
                chunk
            } else {
                (v << take) | chunk
            };
            left -= take;
            bit += take as usize;
        }
        out.push(v);
    }
    Ok(out)
}

/// Decodes exactly `out.len()` values of an RLE v2 stream (`signed`: zigzag where the spec
/// says so); returns the input bytes consumed. Arithmetic wraps like ORC's Java reader.
pub fn decode_rle_v2(input: &[u8], signed: bool, out: &mut [i64]) -> Result<usize> {
    let mut c = Cursor::new(input);
    let n = out.len();
    let mut at = 0;
    let cvt = |u: u64| if signed { unzigzag(u) } else { u as i64 };
    while at < n {
        let start = c.pos;
        let first = c.byte("RLE v2 header")? as u32;
        match first >> 6 {
            0 => {
                // SHORT_REPEAT: 3 bits width in bytes - 1, 3 bits count - 3, W big-endian bytes.
                let w = ((first >> 3) & 7) as usize + 1;
                let run = (first & 7) as usize + 3;
                let bytes = c.take(w, "SHORT_REPEAT value")?;
                let u = bytes.iter().fold(0u64, |v, &b| (v << 8) | b as u64);
                if at + run > n {
                    return Err(run_past_end(at, run, n));
                }
                out[at..at + run].fill(cvt(u));
                at += run;
            }
            1 => {
                // DIRECT: 5 bits width code, 9 bits length - 1, then the packed values.
                let w = decode_width((first >> 1) & 31);
                let run = (((first & 1) << 8) | c.byte("DIRECT header")? as u32) as usize + 1;
                if at + run > n {
                    return Err(run_past_end(at, run, n));
                }
                for (o, u) in
                    out[at..at + run]
                        .iter_mut()
                        .zip(unpack(&mut c, w, run, "DIRECT values")?)
                {
                    *o = cvt(u);
                }
                at += run;
            }
            2 => {
                let w = decode_width((first >> 1) & 31);
                let run = (((first & 1) << 8) | c.byte("PATCHED_BASE header")? as u32) as usize + 1;
                let b2 = c.byte("PATCHED_BASE header")? as u32;
                let b3 = c.byte("PATCHED_BASE header")? as u32;
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
                if at + run > n {
                    return Err(run_past_end(at, run, n));
                }
                let base_bytes = c.take(bw, "PATCHED_BASE base")?;
                let raw = base_bytes.iter().fold(0u64, |v, &b| (v << 8) | b as u64);
                // Sign-magnitude: the top bit of the BW bytes is the sign.
                let sign = 1u64 << (bw * 8 - 1);
                let base = if raw & sign != 0 {
                    ((raw & !sign) as i64).wrapping_neg()
                } else {
                    raw as i64
                };
                let data = unpack(&mut c, w, run, "PATCHED_BASE values")?;
                let patches = unpack(
                    &mut c,
                    closest_fixed_bits(pw + pgw),
                    pll,
                    "PATCHED_BASE patch list",
                )?;
                let dst = &mut out[at..at + run];
                for (o, &u) in dst.iter_mut().zip(&data) {
                    *o = base.wrapping_add(u as i64);
                }
                apply_patches(dst, &data, &patches, base, w, pw, start)?;
                at += run;
            }
            _ => {
                // DELTA: width code (0 = fixed delta), length - 1, base varint, delta varint,
                // then length - 2 packed delta magnitudes with the first delta's sign.
                let code = (first >> 1) & 31;
                let w = if code == 0 { 0 } else { decode_width(code) };
                let run = (((first & 1) << 8) | c.byte("DELTA header")? as u32) as usize + 1;
                let base = c.signed_varint(signed)?;
                let delta = unzigzag(c.varint()?);
                if w != 0 && run < 2 {
                    return Err(Error::InvalidHeader {
                        field: "DELTA run length with packed deltas",
                        offset: start as u64,
                        expected: "at least 2".into(),
                        found: run as u64,
                    });
                }
                if at + run > n {
                    return Err(run_past_end(at, run, n));
                }
                let dst = &mut out[at..at + run];
                dst[0] = base;
                if w == 0 {
                    for i in 1..run {
                        dst[i] = dst[i - 1].wrapping_add(delta);
                    }
                } else {
                    dst[1] = base.wrapping_add(delta);
                    let ds = unpack(&mut c, w, run - 2, "DELTA values")?;
                    for i in 2..run {
                        let d = ds[i - 2] as i64;
                        dst[i] = if delta < 0 {
                            dst[i - 1].wrapping_sub(d)
                        } else {
                            dst[i - 1].wrapping_add(d)
                        };
                    }
                }
                at += run;
            }
        }
    }
    Ok(c.pos)
}

/// PATCHED_BASE's patch list: each entry is a gap (its top `64 - pw` used bits) from the
/// previous patched index and a patch OR-ed in above the `w` data bits; an entry with gap 255
/// and patch 0 only moves the index on by 255 (ORC's reader). A patch that lands past the run
/// or a list that ends inside a gap run is an error.
fn apply_patches(
    dst: &mut [i64],
    data: &[u64],
    patches: &[u64],
    base: i64,
    w: u32,
    pw: u32,
    start: usize,
) -> Result<()> {
    let mask = if pw == 64 { u64::MAX } else { (1u64 << pw) - 1 };
    let len = dst.len();
    let bad = |found: u64| Error::InvalidHeader {
        field: "PATCHED_BASE patch index",
        offset: start as u64,
        expected: format!("below the run length {len}"),
        found,
    };
    let mut idx = 0usize;
    let mut k = 0usize;
    while k < patches.len() {
        let gap = if pw == 64 { 0 } else { patches[k] >> pw };
        let patch = patches[k] & mask;
        k += 1;
        idx += gap as usize;
        if gap == 255 && patch == 0 {
            continue;
        }
        if idx >= dst.len() {
            return Err(bad(idx as u64));
        }
        let shifted = if w >= 64 { 0 } else { patch << w };
        dst[idx] = base.wrapping_add((data[idx] | shifted) as i64);
    }
    Ok(())
}
