//! LLL decoders (`docs/format/lll.md` §6, §7).
//!
//! [`decode_reference`] is the paper's sequential algorithm, strip after strip, byte after byte.
//! [`decode`] is the fast one: the same checks in the same order, but strips run in parallel on
//! all cores and copies and runs are slice operations. Both validate the header and the strip
//! directory first (§7 steps 1-3), then each strip's word counts, identifier padding and word
//! array length against the strip's byte length (step 4) before decoding its words (step 5), so
//! every index is bounded by the payload length or the caller's output buffer and nothing is
//! allocated from a header field. For the same bytes both report the same first failure: the
//! fast decoder keeps the error of the lowest failing strip.

use rayon::prelude::*;
use tessera_format::{Error, Result, MAX_CHUNK_VALUES};

use super::{
    strip_segments, Seg, HEADER_BYTES, LONG_L, LONG_MIN, RL_MIN, RUN_T, SEGMENTS_PER_STRIP,
    SEGMENT_BYTES, SHORT_MIN, STRIP_BYTES,
};

fn word(p: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([p[at], p[at + 1], p[at + 2], p[at + 3]])
}

/// Checks §7 steps 1-3; returns the payload byte range `[start, end)` of each strip.
fn parse_directory(payload: &[u8], n: usize) -> Result<Vec<(usize, usize)>> {
    if payload.len() < HEADER_BYTES {
        return Err(Error::truncated(
            "LLL header",
            0,
            HEADER_BYTES,
            payload.len(),
        ));
    }
    let segment_bytes = word(payload, 0);
    if segment_bytes as usize != SEGMENT_BYTES {
        return Err(Error::InvalidHeader {
            field: "segment_bytes",
            offset: 0,
            expected: SEGMENT_BYTES.to_string(),
            found: segment_bytes as u64,
        });
    }
    let per_strip = word(payload, 4);
    if per_strip as usize != SEGMENTS_PER_STRIP {
        return Err(Error::InvalidHeader {
            field: "segments_per_strip",
            offset: 4,
            expected: SEGMENTS_PER_STRIP.to_string(),
            found: per_strip as u64,
        });
    }
    let total = word(payload, 8);
    if total > MAX_CHUNK_VALUES {
        return Err(Error::InvalidHeader {
            field: "total_count",
            offset: 8,
            expected: format!("<= {MAX_CHUNK_VALUES}"),
            found: total as u64,
        });
    }
    if total as usize != n {
        return Err(Error::CountMismatch {
            what: "LLL total_count against the output length",
            expected: n as u64,
            found: total as u64,
        });
    }
    let strips = word(payload, 12) as usize;
    let want = n.div_ceil(STRIP_BYTES);
    if strips != want {
        return Err(Error::InvalidHeader {
            field: "strip_count",
            offset: 12,
            expected: want.to_string(),
            found: strips as u64,
        });
    }
    let data_start = HEADER_BYTES + 4 * strips;
    if payload.len() < data_start {
        return Err(Error::truncated(
            "LLL strip directory",
            HEADER_BYTES,
            4 * strips,
            payload.len() - HEADER_BYTES,
        ));
    }
    if strips == 0 && payload.len() > HEADER_BYTES {
        return Err(Error::TrailingBytes {
            what: "LLL header of an empty chunk",
            offset: HEADER_BYTES as u64,
            count: (payload.len() - HEADER_BYTES) as u64,
        });
    }
    let mut ranges: Vec<(usize, usize)> = Vec::with_capacity(strips);
    let mut min = data_start;
    for k in 0..strips {
        let start = word(payload, HEADER_BYTES + 4 * k) as usize;
        let max = if k == 0 { data_start } else { payload.len() };
        if start < min || start > max {
            return Err(Error::BlockStartOutOfRange {
                block: k as u64,
                found: start as u64,
                min: min as u64,
                max: max as u64,
            });
        }
        if k > 0 {
            ranges[k - 1] = (ranges[k - 1].0, start);
        }
        ranges.push((start, payload.len()));
        min = start;
    }
    Ok(ranges)
}

/// A strip whose counts and lengths passed §7 step 4.
struct Strip<'a> {
    /// Absolute payload offset of `ids` (for error offsets).
    ids_at: usize,
    ids: &'a [u8],
    array_at: usize,
    array: &'a [u8],
    word_counts: [u16; super::MAX_STRIP_SEGMENTS],
}

fn parse_strip<'a>(payload: &'a [u8], range: (usize, usize), segs: &[Seg]) -> Result<Strip<'a>> {
    let (start, end) = range;
    let bytes = &payload[start..end];
    let counts_len = 2 * segs.len();
    if bytes.len() < counts_len {
        return Err(Error::truncated(
            "LLL strip word counts",
            start,
            counts_len,
            bytes.len(),
        ));
    }
    let mut word_counts = [0u16; super::MAX_STRIP_SEGMENTS];
    let mut m = 0usize;
    for (j, seg) in segs.iter().enumerate() {
        let c = u16::from_le_bytes([bytes[2 * j], bytes[2 * j + 1]]);
        let len = seg.end - seg.start;
        if c == 0 || c as usize > len {
            return Err(Error::InvalidHeader {
                field: "segment word_count",
                offset: (start + 2 * j) as u64,
                expected: format!("1..={len}"),
                found: c as u64,
            });
        }
        word_counts[j] = c;
        m += c as usize;
    }
    let ids_at = start + counts_len;
    let ids_len = m.div_ceil(8);
    if bytes.len() - counts_len < ids_len {
        return Err(Error::truncated(
            "LLL word identifiers",
            ids_at,
            ids_len,
            bytes.len() - counts_len,
        ));
    }
    let ids = &bytes[counts_len..counts_len + ids_len];
    if m % 8 != 0 {
        let pad = ids[ids_len - 1] >> (m % 8);
        if pad != 0 {
            return Err(Error::InvalidHeader {
                field: "word identifier padding bits",
                offset: (ids_at + ids_len - 1) as u64,
                expected: "0".into(),
                found: pad as u64,
            });
        }
    }
    let ones: usize = ids.iter().map(|b| b.count_ones() as usize).sum();
    let array_at = ids_at + ids_len;
    let array_len = m + ones;
    let have = end - array_at;
    if have < array_len {
        return Err(Error::truncated(
            "LLL word array",
            array_at,
            array_len,
            have,
        ));
    }
    if have > array_len {
        return Err(Error::TrailingBytes {
            what: "LLL word array",
            offset: (array_at + array_len) as u64,
            count: (have - array_len) as u64,
        });
    }
    Ok(Strip {
        ids_at,
        ids,
        array_at,
        array: &bytes[counts_len + ids_len..],
        word_counts,
    })
}

/// Word cursor over a parsed strip: identifier bit `i`, word-array byte `j`.
struct Cursor<'a, 'b> {
    s: &'b Strip<'a>,
    i: usize,
    j: usize,
}

impl Cursor<'_, '_> {
    fn id(&self) -> bool {
        (self.s.ids[self.i / 8] >> (self.i % 8)) & 1 == 1
    }
    /// The number of consecutive 0 identifiers from word `i` on, at most `end - i` (`end > i`,
    /// word `i` has identifier 0, so at least 1).
    fn zero_ids(&self, end: usize) -> usize {
        let mut i = self.i;
        while i < end {
            let b = i / 8;
            let mut w = [0u8; 8];
            let have = (self.s.ids.len() - b).min(8);
            w[..have].copy_from_slice(&self.s.ids[b..b + have]);
            // Bits past the identifier block read as 1 so a run stops at the block's end
            // (`end` is at most m, inside the block, anyway).
            let v = u64::from_le_bytes(w) | (!0u64).checked_shl(8 * have as u32).unwrap_or(0);
            let bits = 64 - i % 8;
            let z = ((v >> (i % 8)).trailing_zeros() as usize).min(bits);
            i += z;
            if z < bits {
                break;
            }
        }
        i.min(end) - self.i
    }
    /// Byte offset of the current word in the payload.
    fn at(&self) -> u64 {
        (self.s.array_at + self.j) as u64
    }
}

fn bad(field: &'static str, offset: u64, expected: String, found: u64) -> Error {
    Error::InvalidHeader {
        field,
        offset,
        expected,
        found,
    }
}

/// How a segment's bytes are written: the reference loops byte by byte, the fast one slices.
#[derive(Clone, Copy, PartialEq)]
enum Copier {
    Bytewise,
    Slices,
}

/// Decodes one strip into `out` (the strip's bytes of the output): §7 steps 4 and 5.
fn decode_strip(payload: &[u8], range: (usize, usize), out: &mut [u8], how: Copier) -> Result<()> {
    let (segs, n) = strip_segments(out.len());
    let segs = &segs[..n];
    let strip = parse_strip(payload, range, segs)?;
    let mut c = Cursor {
        s: &strip,
        i: 0,
        j: 0,
    };
    for (k, seg) in segs.iter().enumerate() {
        let words_end = c.i + strip.word_counts[k] as usize;
        let mut pos = seg.start;
        // The previous character (the paper's `p`): unset at a segment start and after a run.
        let mut prev: Option<u8> = None;
        while c.i < words_end {
            let at = c.at();
            let left = seg.end - pos;
            if !c.id() {
                if how == Copier::Slices && left > 1 {
                    // A run of SC words: their bytes follow each other in the word array and
                    // in the output, so they move as one slice. Words past `left` are left to
                    // the one-word path below, which reports the error.
                    let k = c.zero_ids(words_end.min(c.i + left));
                    out[pos..pos + k].copy_from_slice(&strip.array[c.j..c.j + k]);
                    pos += k;
                    prev = Some(out[pos - 1]);
                    c.i += k;
                    c.j += k;
                    continue;
                }
                // SC: one byte (§5).
                if left == 0 {
                    return Err(bad(
                        "code length",
                        at,
                        "<= 0 bytes left in the segment".into(),
                        1,
                    ));
                }
                let ch = strip.array[c.j];
                out[pos] = ch;
                pos += 1;
                prev = Some(ch);
                c.i += 1;
                c.j += 1;
                continue;
            }
            let (b0, b1) = (strip.array[c.j], strip.array[c.j + 1]);
            c.i += 1;
            c.j += 2;
            if !seg.dictionary {
                // RL: character, then l: l + 2 copies of it (§5).
                let len = b1 as usize + RL_MIN;
                if len > left {
                    return Err(bad(
                        "RL length",
                        at,
                        format!("<= {left} bytes left in the segment"),
                        len as u64,
                    ));
                }
                fill(&mut out[pos..pos + len], b0, how);
                pos += len;
                prev = Some(b0);
                continue;
            }
            let w = u16::from_le_bytes([b0, b1]);
            let (t, l) = (w & 0x0FFF, w >> 12);
            let len = if l == LONG_L {
                // LI / LRL: the next word is the 1-byte c (§5).
                if c.i >= words_end {
                    return Err(bad(
                        "long code's c word",
                        at + 2,
                        "a word of the same segment".into(),
                        0,
                    ));
                }
                if c.id() {
                    return Err(bad(
                        "long code's c word identifier",
                        (strip.ids_at + c.i / 8) as u64,
                        "0".into(),
                        1,
                    ));
                }
                let cb = strip.array[c.j];
                c.i += 1;
                c.j += 1;
                cb as usize + LONG_MIN
            } else {
                l as usize + SHORT_MIN
            };
            if len > left {
                return Err(bad(
                    "code length",
                    at,
                    format!("<= {left} bytes left in the segment"),
                    len as u64,
                ));
            }
            if t == RUN_T {
                // SRL / LRL: len copies of the previous character, which then becomes unset.
                let Some(p) = prev else {
                    return Err(bad(
                        "SRL/LRL previous character",
                        at,
                        "a set previous character (no run code first in a segment or after a run code)".into(),
                        RUN_T as u64,
                    ));
                };
                fill(&mut out[pos..pos + len], p, how);
                prev = None;
            } else {
                // SI / LI: len bytes from offset t of the dictionary.
                let dict_len = seg.dict_end - seg.dict_start;
                if t as usize + len > dict_len {
                    return Err(bad(
                        "SI/LI offset t + length",
                        at,
                        format!("<= dictionary length {dict_len}"),
                        (t as usize + len) as u64,
                    ));
                }
                let from = seg.dict_start + t as usize;
                match how {
                    Copier::Bytewise => {
                        for q in 0..len {
                            out[pos + q] = out[from + q];
                        }
                    }
                    Copier::Slices => out.copy_within(from..from + len, pos),
                }
                prev = Some(out[pos + len - 1]);
            }
            pos += len;
        }
        if pos != seg.end {
            return Err(Error::CountMismatch {
                what: "LLL bytes decoded in a segment",
                expected: (seg.end - seg.start) as u64,
                found: (pos - seg.start) as u64,
            });
        }
    }
    Ok(())
}

fn fill(dst: &mut [u8], b: u8, how: Copier) {
    match how {
        Copier::Bytewise => {
            for x in dst {
                *x = b;
            }
        }
        Copier::Slices => dst.fill(b),
    }
}

/// The reference decoder (§6): `payload` must decode to exactly `out.len()` bytes.
pub fn decode_reference(payload: &[u8], out: &mut [u8]) -> Result<()> {
    let ranges = parse_directory(payload, out.len())?;
    for (k, strip_out) in out.chunks_mut(STRIP_BYTES).enumerate() {
        decode_strip(payload, ranges[k], strip_out, Copier::Bytewise)?;
    }
    Ok(())
}

/// The fast decoder: strips in parallel; same results and same errors as [`decode_reference`].
pub fn decode(payload: &[u8], out: &mut [u8]) -> Result<()> {
    let ranges = parse_directory(payload, out.len())?;
    let results: Vec<Result<()>> = out
        .par_chunks_mut(STRIP_BYTES)
        .enumerate()
        .map(|(k, strip_out)| decode_strip(payload, ranges[k], strip_out, Copier::Slices))
        .collect();
    results.into_iter().collect()
}
