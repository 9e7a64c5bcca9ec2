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

/// An RLE v2 run's header: every field before its packed payload, checked as far as the
/// header alone allows. The decoder and the run header walk (`skip_run`) both read runs
/// through it, so the two agree on where every run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum V2Header {
    /// 3 bits value width in bytes - 1, 3 bits count - 3, then the big-endian value.
    ShortRepeat { run: usize, value: u64 },
    /// 5 bits width code, 9 bits length - 1; payload: the packed values.
    Direct { run: usize, width: u32 },
    /// DIRECT's fields, then base width (bytes), patch width, gap width and patch count;
    /// payload: the sign-magnitude base, the packed values, the packed patch list. A patch list
    /// entry is gap and patch packed at the closest fixed width above their sum
    /// (`entry_width`), which is all the gap width is needed for.
    PatchedBase {
        run: usize,
        width: u32,
        base_bytes: usize,
        patch_width: u32,
        entry_width: u32,
        patches: usize,
    },
    /// Width code (0 = fixed delta), length - 1, base varint (raw: zigzag where the stream is
    /// signed), delta varint (always zigzag); payload: `run - 2` packed delta magnitudes.
    Delta {
        run: usize,
        width: u32,
        base: u64,
        delta: i64,
    },
}

impl V2Header {
    /// Values the run yields.
    pub(crate) fn run(&self) -> usize {
        match *self {
            V2Header::ShortRepeat { run, .. }
            | V2Header::Direct { run, .. }
            | V2Header::PatchedBase { run, .. }
            | V2Header::Delta { run, .. } => run,
        }
    }

    /// Bytes of the run after its header.
    pub(crate) fn payload_bytes(&self) -> usize {
        let packed = |n: usize, w: u32| (n * w as usize).div_ceil(8);
        match *self {
            V2Header::ShortRepeat { .. } => 0,
            V2Header::Direct { run, width } => packed(run, width),
            V2Header::PatchedBase {
                run,
                width,
                base_bytes,
                entry_width,
                patches,
                ..
            } => base_bytes + packed(run, width) + packed(patches, entry_width),
            V2Header::Delta { run, width, .. } if width != 0 => packed(run - 2, width),
            V2Header::Delta { .. } => 0,
        }
    }
}

impl Cursor<'_> {
    /// Reads the header of the run at the cursor.
    pub(crate) fn v2_header(&mut self) -> Result<V2Header> {
        let start = self.pos;
        let first = self.byte("RLE v2 header")? as u32;
        let length = |c: &mut Self, what| -> Result<usize> {
            Ok((((first & 1) << 8) | c.byte(what)? as u32) as usize + 1)
        };
        Ok(match first >> 6 {
            0 => {
                let w = ((first >> 3) & 7) as usize + 1;
                let bytes = self.take(w, "SHORT_REPEAT value")?;
                V2Header::ShortRepeat {
                    run: (first & 7) as usize + 3,
                    value: bytes.iter().fold(0u64, |v, &b| (v << 8) | b as u64),
                }
            }
            1 => V2Header::Direct {
                width: decode_width((first >> 1) & 31),
                run: length(self, "DIRECT header")?,
            },
            2 => {
                let width = decode_width((first >> 1) & 31);
                let run = length(self, "PATCHED_BASE header")?;
                let b2 = self.byte("PATCHED_BASE header")? as u32;
                let b3 = self.byte("PATCHED_BASE header")? as u32;
                let patch_width = decode_width(b2 & 31);
                let gap_width = (b3 >> 5) + 1;
                if patch_width + gap_width > 64 {
                    return Err(Error::InvalidHeader {
                        field: "PATCHED_BASE patch width + gap width",
                        offset: start as u64 + 2,
                        expected: "at most 64".into(),
                        found: (patch_width + gap_width) as u64,
                    });
                }
                V2Header::PatchedBase {
                    run,
                    width,
                    base_bytes: (b2 >> 5) as usize + 1,
                    patch_width,
                    entry_width: closest_fixed_bits(patch_width + gap_width),
                    patches: (b3 & 31) as usize,
                }
            }
            _ => {
                let code = (first >> 1) & 31;
                let run = length(self, "DELTA header")?;
                let base = self.varint()?;
                let delta = unzigzag(self.varint()?);
                if code != 0 && run < 2 {
                    return Err(Error::InvalidHeader {
                        field: "DELTA run length with packed deltas",
                        offset: start as u64,
                        expected: "at least 2".into(),
                        found: run as u64,
                    });
                }
                V2Header::Delta {
                    run,
                    width: if code == 0 { 0 } else { decode_width(code) },
                    base,
                    delta,
                }
            }
        })
    }
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
        let header = c.v2_header()?;
        let run = header.run();
        if at + run > n {
            return Err(run_past_end(at, run, n));
        }
        let dst = &mut out[at..at + run];
        match header {
            V2Header::ShortRepeat { value, .. } => dst.fill(cvt(value)),
            V2Header::Direct { width, .. } => {
                for (o, u) in dst
                    .iter_mut()
                    .zip(unpack(&mut c, width, run, "DIRECT values")?)
                {
                    *o = cvt(u);
                }
            }
            V2Header::PatchedBase {
                width,
                base_bytes,
                patch_width,
                entry_width,
                patches,
                ..
            } => {
                let raw = c
                    .take(base_bytes, "PATCHED_BASE base")?
                    .iter()
                    .fold(0u64, |v, &b| (v << 8) | b as u64);
                // Sign-magnitude: the top bit of the base's bytes is the sign.
                let sign = 1u64 << (base_bytes * 8 - 1);
                let base = if raw & sign != 0 {
                    ((raw & !sign) as i64).wrapping_neg()
                } else {
                    raw as i64
                };
                let data = unpack(&mut c, width, run, "PATCHED_BASE values")?;
                let patches = unpack(&mut c, entry_width, patches, "PATCHED_BASE patch list")?;
                for (o, &u) in dst.iter_mut().zip(&data) {
                    *o = base.wrapping_add(u as i64);
                }
                apply_patches(dst, &data, &patches, base, width, patch_width, start)?;
            }
            V2Header::Delta {
                width, base, delta, ..
            } => {
                let base = cvt(base);
                dst[0] = base;
                if width == 0 {
                    for i in 1..run {
                        dst[i] = dst[i - 1].wrapping_add(delta);
                    }
                } else {
                    dst[1] = base.wrapping_add(delta);
                    let ds = unpack(&mut c, width, run - 2, "DELTA values")?;
                    for i in 2..run {
                        let d = ds[i - 2] as i64;
                        dst[i] = if delta < 0 {
                            dst[i - 1].wrapping_sub(d)
                        } else {
                            dst[i - 1].wrapping_add(d)
                        };
                    }
                }
            }
        }
        at += run;
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
