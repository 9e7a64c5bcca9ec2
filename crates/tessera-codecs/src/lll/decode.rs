//! LLL decoders (`docs/format/lll.md` §6, §7).
//!
//! Three decoders share the checks of §7, in the same order, and give the same bytes and the same
//! [`Error`] (every field) for the same payload:
//! - [`decode_reference`]: the paper's sequential algorithm, strip after strip, each strip one
//!   pass over its words in order (`decode_strip`);
//! - [`decode`]: the same strip loop, strips in parallel on all cores; when several strips fail
//!   it reports the lowest one's error, as the sequential order would;
//! - [`decode_simple`]: a word-at-a-time, byte-at-a-time transcription of §6, kept as the oracle
//!   the other two are tested and fuzzed against.
//!
//! The strip loop (`plain_segment`, `dict_segment`) reads the identifier bits 56 words at a time
//! (`ids_window`): between two 2-byte words, the run of 1-byte words (SC) is found by one
//! trailing-zero count and copied from the word array as one block. Copies of at most 16 bytes
//! (SC runs, SI, SRL) are fixed 16-byte register copies when 16 bytes of room remain in the
//! strip's output: the bytes past the code's end are scratch that later codes overwrite
//! (nothing reads output past the write position: a dictionary always precedes its segment). An
//! SI / LI source lies in the dictionary, before the segment, so it never overlaps what the code
//! writes; the copy goes through a register all the same. The previous character `p` of §5 is
//! `out[pos - 1]` whenever it is set, so only whether it is set is tracked.
//!
//! Dictionary segments (all but 512 bytes of a strip) run in two gears. The fast one
//! (`dict_fast_windows`, `dict_window_fast`: raw pointers, one `unsafe` block per access, each
//! with its SAFETY argument) takes a whole window while the window's word-array reach and
//! `FAST_OUT_SLACK` bytes of output room past its limit are there: every array index of a step
//! comes from the trailing-zero count and two counters (no chain through earlier words), and a
//! step costs one check for the output (`npos + len <= lim`), one for the dictionary, and the
//! long-code test. At the first step that fails a check, or that it leaves to the checked code
//! (a long code's c word past the window, a code ending near the strip's end), it stops before
//! that step; the checked loop (`dict_window`, indexed Rust) redoes the window from there, so
//! every error is the checked loop's, exactly.
//!
//! A stored strip (§4a, format 1.1: bit 31 of its `strip_starts` entry) is a length check and one
//! copy; a fill strip (§4b, format 1.2: bit 30) is a length check and one fill.
//!
//! Bounds: the header and the strip directory are checked first (§7 steps 1-3), then each
//! strip's word counts, identifier padding and exact word-array length (step 4), so every word
//! index is inside the strip; step 5 bounds every write by the segment and every read by the
//! dictionary; nothing is allocated from a header field (the strip list has at most 512 entries,
//! after the directory was checked against the payload length). Outside the fast windows all
//! indexing is checked Rust.

use rayon::prelude::*;
use tessera_format::{Error, Result, MAX_CHUNK_VALUES};

use super::{
    strip_segments, Seg, FILL_STRIP, HEADER_BYTES, LONG_L, LONG_MIN, MAX_STRIP_SEGMENTS, RL_MIN,
    RUN_T, SEGMENTS_PER_STRIP, SEGMENT_BYTES, SHORT_MIN, STORED_STRIP, STRIP_BYTES,
    STRIP_OFFSET_MASK,
};

fn word(p: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([p[at], p[at + 1], p[at + 2], p[at + 3]])
}

/// How a strip is written (§2: bits 30 and 31 of its `strip_starts` entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StripKind {
    /// Word counts, identifiers and words (§4).
    Coded,
    /// Its output bytes, as they are (§4a, format 1.1).
    Stored,
    /// One byte that every output byte of the strip equals (§4b, format 1.2).
    Fill,
}

/// A strip's payload bytes `[start, end)` and how they are written (§2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StripRange {
    /// First payload byte of the strip.
    pub start: usize,
    /// One past its last payload byte (the next strip's start, or the payload's end).
    pub end: usize,
    /// Coded, stored or fill.
    pub kind: StripKind,
}

/// §7 steps 1-3 for a payload that must decode to `n` bytes: the header, the caller's length
/// and the strip directory, with the decoders' exact errors; returns every strip's payload range
/// and kind. Used by the GPU host, which must trust the same things before a launch.
pub fn strip_directory(payload: &[u8], n: usize) -> Result<Vec<StripRange>> {
    parse_directory(payload, n)
}

/// Checks §7 steps 1-3; returns every strip's payload range.
fn parse_directory(payload: &[u8], n: usize) -> Result<Vec<StripRange>> {
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
    let mut ranges: Vec<StripRange> = Vec::with_capacity(strips);
    let mut min = data_start;
    for k in 0..strips {
        let entry = word(payload, HEADER_BYTES + 4 * k);
        let kind = match (entry & STORED_STRIP != 0, entry & FILL_STRIP != 0) {
            (false, false) => StripKind::Coded,
            (true, false) => StripKind::Stored,
            (false, true) => StripKind::Fill,
            (true, true) => {
                return Err(Error::InvalidHeader {
                    field: "strip_starts kind (bits 30 and 31 both set)",
                    offset: (HEADER_BYTES + 4 * k) as u64,
                    expected: "at most one of fill (bit 30) and stored (bit 31)".into(),
                    found: entry as u64,
                });
            }
        };
        let start = (entry & STRIP_OFFSET_MASK) as usize;
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
            ranges[k - 1].end = start;
        }
        ranges.push(StripRange {
            start,
            end: payload.len(),
            kind,
        });
        min = start;
    }
    Ok(ranges)
}

/// A stored strip (§4a): exactly its output length, copied.
fn stored_strip(payload: &[u8], r: StripRange, out: &mut [u8]) -> Result<()> {
    let bytes = &payload[r.start..r.end];
    if bytes.len() < out.len() {
        return Err(Error::truncated(
            "LLL stored strip",
            r.start,
            out.len(),
            bytes.len(),
        ));
    }
    if bytes.len() > out.len() {
        return Err(Error::TrailingBytes {
            what: "LLL stored strip",
            offset: (r.start + out.len()) as u64,
            count: (bytes.len() - out.len()) as u64,
        });
    }
    out.copy_from_slice(bytes);
    Ok(())
}

/// A fill strip (§4b): exactly one byte, which every output byte equals.
fn fill_strip(payload: &[u8], r: StripRange, out: &mut [u8]) -> Result<()> {
    match &payload[r.start..r.end] {
        [] => Err(Error::truncated("LLL fill strip", r.start, 1, 0)),
        [b] => {
            out.fill(*b);
            Ok(())
        }
        more => Err(Error::TrailingBytes {
            what: "LLL fill strip",
            offset: (r.start + 1) as u64,
            count: (more.len() - 1) as u64,
        }),
    }
}

/// A strip whose counts and lengths passed §7 step 4.
struct Strip<'a> {
    /// Absolute payload offset of `ids` (for error offsets).
    ids_at: usize,
    ids: &'a [u8],
    array_at: usize,
    array: &'a [u8],
    word_counts: [u16; MAX_STRIP_SEGMENTS],
}

fn parse_strip<'a>(payload: &'a [u8], r: StripRange, segs: &[Seg]) -> Result<Strip<'a>> {
    let (start, end) = (r.start, r.end);
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
    let mut word_counts = [0u16; MAX_STRIP_SEGMENTS];
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
    let mut eights = ids.chunks_exact(8);
    let mut ones: usize = (&mut eights)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")).count_ones() as usize)
        .sum();
    ones += eights
        .remainder()
        .iter()
        .map(|b| b.count_ones() as usize)
        .sum::<usize>();
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

fn bad(field: &'static str, offset: usize, expected: String, found: u64) -> Error {
    Error::InvalidHeader {
        field,
        offset: offset as u64,
        expected,
        found,
    }
}

// ---- error constructors of step 5 (cold: a valid payload never calls them) ------------------

#[cold]
#[inline(never)]
fn err_code_length(at: usize, left: usize, len: usize) -> Error {
    bad(
        "code length",
        at,
        format!("<= {left} bytes left in the segment"),
        len as u64,
    )
}

#[cold]
#[inline(never)]
fn err_rl_length(at: usize, left: usize, len: usize) -> Error {
    bad(
        "RL length",
        at,
        format!("<= {left} bytes left in the segment"),
        len as u64,
    )
}

#[cold]
#[inline(never)]
fn err_no_c_word(at: usize) -> Error {
    bad(
        "long code's c word",
        at + 2,
        "a word of the same segment".into(),
        0,
    )
}

#[cold]
#[inline(never)]
fn err_c_word_id(at: usize) -> Error {
    bad("long code's c word identifier", at, "0".into(), 1)
}

#[cold]
#[inline(never)]
fn err_no_prev(at: usize) -> Error {
    bad(
        "SRL/LRL previous character",
        at,
        "a set previous character (no run code first in a segment or after a run code)".into(),
        RUN_T as u64,
    )
}

#[cold]
#[inline(never)]
fn err_dictionary(at: usize, dict_len: usize, end: usize) -> Error {
    bad(
        "SI/LI offset t + length",
        at,
        format!("<= dictionary length {dict_len}"),
        end as u64,
    )
}

#[cold]
#[inline(never)]
fn err_segment_short(seg: &Seg, pos: usize) -> Error {
    Error::CountMismatch {
        what: "LLL bytes decoded in a segment",
        expected: (seg.end - seg.start) as u64,
        found: (pos - seg.start) as u64,
    }
}

// ---- the strip loop (reference and fast decoders) -------------------------------------------

/// Words per identifier window. [`ids_window`] returns at least 57 valid bits: the window's
/// words and one more (a long code's c word right after the window).
const WINDOW: usize = 56;

/// Identifier bits of words `i, i + 1, ...` (bit 0 = word `i`); bytes past the identifier block
/// read as 0. `i` is below the strip's word count, so `i / 8` is inside `ids`.
#[inline(always)]
fn ids_window(ids: &[u8], i: usize) -> u64 {
    let b = i >> 3;
    let v = match ids.get(b..b + 8) {
        Some(w) => u64::from_le_bytes(w.try_into().expect("8 bytes")),
        None => {
            let mut w = [0u8; 8];
            let tail = &ids[b.min(ids.len())..];
            w[..tail.len()].copy_from_slice(tail);
            u64::from_le_bytes(w)
        }
    };
    v >> (i & 7)
}

/// `dst[at..at + n] = src[from..from + n]`; may also write scratch bytes up to the next
/// 16-byte granule, inside `dst` (bytes a later code overwrites).
#[inline(always)]
fn copy_bytes(dst: &mut [u8], at: usize, src: &[u8], from: usize, n: usize) {
    if n <= 16 && from + 16 <= src.len() && at + 16 <= dst.len() {
        let v: [u8; 16] = src[from..from + 16].try_into().expect("16 bytes");
        dst[at..at + 16].copy_from_slice(&v);
    } else {
        copy_bytes_long(dst, at, src, from, n);
    }
}

#[inline(never)]
fn copy_bytes_long(dst: &mut [u8], at: usize, src: &[u8], from: usize, n: usize) {
    let r = n.next_multiple_of(16);
    if from + r <= src.len() && at + r <= dst.len() {
        for q in (0..n).step_by(16) {
            let v: [u8; 16] = src[from + q..from + q + 16].try_into().expect("16 bytes");
            dst[at + q..at + q + 16].copy_from_slice(&v);
        }
    } else {
        dst[at..at + n].copy_from_slice(&src[from..from + n]);
    }
}

/// SI / LI: `out[at..at + n] = out[from..from + n]` with `from + n <= at` (the dictionary
/// precedes the segment); may write scratch bytes as [`copy_bytes`]. Every 16-byte piece is read
/// into a register before it is stored; the `n` bytes wanted all lie before `at`, so no store of
/// this copy changes a byte it still has to read.
#[inline(always)]
fn copy_dict(out: &mut [u8], from: usize, at: usize, n: usize) {
    if n <= 16 && at + 16 <= out.len() {
        let v: [u8; 16] = out[from..from + 16].try_into().expect("16 bytes");
        out[at..at + 16].copy_from_slice(&v);
    } else {
        copy_dict_long(out, from, at, n);
    }
}

#[inline(never)]
fn copy_dict_long(out: &mut [u8], from: usize, at: usize, n: usize) {
    if at + n.next_multiple_of(16) <= out.len() {
        for q in (0..n).step_by(16) {
            let v: [u8; 16] = out[from + q..from + q + 16].try_into().expect("16 bytes");
            out[at + q..at + q + 16].copy_from_slice(&v);
        }
    } else {
        out.copy_within(from..from + n, at);
    }
}

/// `out[at..at + n] = b` (RL, SRL, LRL); may write scratch bytes as [`copy_bytes`].
#[inline(always)]
fn fill_bytes(out: &mut [u8], at: usize, n: usize, b: u8) {
    if n <= 16 && at + 16 <= out.len() {
        out[at..at + 16].copy_from_slice(&[b; 16]);
    } else {
        out[at..at + n].fill(b);
    }
}

/// Where the strip loop is: identifier index `i` (strip word), word-array index `j`.
struct Cursor {
    i: usize,
    j: usize,
}

/// The non-dictionary segment (§5: SC, RL), words `[c.i, words_end)`, output `seg`.
fn plain_segment(
    s: &Strip<'_>,
    seg: &Seg,
    out: &mut [u8],
    c: &mut Cursor,
    words_end: usize,
) -> Result<()> {
    let arr = s.array;
    let (mut wi, mut wj, mut pos) = (c.i, c.j, seg.start);
    while wi < words_end {
        let span = (words_end - wi).min(WINDOW);
        // Identifier bits of the window's words, and a stop bit at `span`.
        let mut bits = (ids_window(s.ids, wi) & ((1u64 << span) - 1)) | (1u64 << span);
        let mut k = 0; // words of the window consumed
        loop {
            // Words k .. nz are SC, word nz is an RL (or nz = span: the window's end).
            let nz = bits.trailing_zeros() as usize;
            let sc = nz - k;
            let left = seg.end - pos;
            if sc > left {
                return Err(err_code_length(s.array_at + wj + left, 0, 1));
            }
            copy_bytes(out, pos, arr, wj, sc);
            pos += sc;
            wj += sc;
            if nz == span {
                k = span;
                break;
            }
            bits &= bits - 1;
            let at = s.array_at + wj;
            let (ch, l) = (arr[wj], arr[wj + 1]);
            wj += 2;
            let len = l as usize + RL_MIN;
            let left = seg.end - pos;
            if len > left {
                return Err(err_rl_length(at, left, len));
            }
            fill_bytes(out, pos, len, ch);
            pos += len;
            k = nz + 1;
            if k == span {
                break;
            }
        }
        wi += k;
    }
    if pos != seg.end {
        return Err(err_segment_short(seg, pos));
    }
    c.i = wi;
    c.j = wj;
    Ok(())
}

/// Word-array bytes a window may read from its first word's byte: at most `2 * WINDOW + 1`
/// bytes of words (2-byte words and a c word past the window), plus 15 of a rounded-up 16-byte
/// read of an SC run. [`dict_window_fast`] runs only when this many array bytes are left.
const WINDOW_ARRAY_REACH: usize = 2 * WINDOW + 1 + 16;

/// Output room [`dict_window_fast`] needs past its limit `lim`: a step starts at `pos <= lim`
/// and writes its SC run as at most 4 16-byte pieces (`sc <= WINDOW = 56`), and a code ending
/// at or before `lim` as pieces ending before `lim + 16`.
const FAST_OUT_SLACK: usize = 64;
const _: () = assert!(WINDOW <= FAST_OUT_SLACK && 16 <= FAST_OUT_SLACK);

/// Where a dictionary segment's decode is: output position, word-array index, and whether the
/// previous character p is set (it is then `out[pos - 1]`).
#[derive(Clone, Copy)]
struct SegState {
    pos: usize,
    wj: usize,
    prev_set: bool,
}

/// Marks the path that calls it as rarely taken (block layout: the common steps fall through).
#[cold]
#[inline(never)]
fn cold() {}

/// `n` bytes from `src` to `dst` as 16-byte register copies (`max(1, ceil(n / 16))` of them).
///
/// # Safety
/// `src .. src + max(16, n.next_multiple_of(16))` readable, the same length from `dst`
/// writable, and every byte of `src .. src + n` lies before `dst` or in another buffer (so no
/// store of this copy changes a byte it still has to read).
#[inline(always)]
unsafe fn copy16(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: the first piece is inside both ranges (the contract).
    unsafe { piece16(dst, src, 0) };
    if n > 16 {
        cold();
        // SAFETY: the contract, passed on.
        unsafe { copy16_more(dst, src, n) };
    }
}

/// One 16-byte piece at offset `q`, through a register.
///
/// # Safety
/// `src + q .. src + q + 16` readable, `dst + q .. dst + q + 16` writable.
#[inline(always)]
unsafe fn piece16(dst: *mut u8, src: *const u8, q: usize) {
    // SAFETY: the caller's contract; unaligned reads and writes of plain bytes.
    unsafe {
        let v = src.add(q).cast::<[u8; 16]>().read_unaligned();
        dst.add(q).cast::<[u8; 16]>().write_unaligned(v);
    }
}

/// The pieces of [`copy16`] after the first (`n > 16`). Pieces go one at a time, in order,
/// each read before it is written (never a `memcpy`: it would not allow the source to run on
/// into the destination as SI / LI's scratch tail does).
///
/// # Safety
/// As [`copy16`].
#[inline(never)]
unsafe fn copy16_more(dst: *mut u8, src: *const u8, n: usize) {
    let mut q = 16;
    while q < n {
        // SAFETY: q < n.next_multiple_of(16), so the piece is inside both ranges.
        unsafe { piece16(dst, src, q) };
        q += 16;
        // Keeps LLVM from turning the loop into a memcpy call (see above).
        std::hint::black_box(());
    }
}

/// An SC run of `n <= 64` bytes from the word array: `max(1, ceil(n / 16))` 16-byte pieces,
/// inline (no call, no loop: the run is at most a window long).
///
/// # Safety
/// As [`copy16`], `n <= 64`.
#[inline(always)]
unsafe fn copy_sc(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: each piece q < n.next_multiple_of(16) (or q = 0) is inside both ranges.
    unsafe {
        piece16(dst, src, 0);
        if n > 16 {
            piece16(dst, src, 16);
            if n > 32 {
                piece16(dst, src, 32);
                if n > 48 {
                    piece16(dst, src, 48);
                }
            }
        }
    }
}

/// `n` copies of `b` at `dst`, as 16-byte stores.
///
/// # Safety
/// `dst .. dst + max(16, n.next_multiple_of(16))` writable.
#[inline(always)]
unsafe fn fill16(dst: *mut u8, b: u8, n: usize) {
    // SAFETY: the first piece is inside the range (the contract).
    unsafe { dst.cast::<[u8; 16]>().write_unaligned([b; 16]) };
    let mut q = 16;
    while q < n {
        // SAFETY: q < n.next_multiple_of(16).
        unsafe { dst.add(q).cast::<[u8; 16]>().write_unaligned([b; 16]) };
        q += 16;
    }
}

/// One window of a dictionary segment, words `wi .. wi + span` (`raw`: their identifier bits
/// from bit 0), without bounds checks beyond the format's own. Returns the words consumed and
/// whether it stopped early: at the first step whose checks fail (or that it leaves to the
/// checked loop: a long code's c word past the window, a code ending past `lim`), it stops
/// *before* that step, with `st` as it was after the last whole step, so [`dict_window`] can
/// redo the step and report the exact error. A step's SC run is copied before the step's checks,
/// as scratch inside the room the step was given; nothing else is written by a failing step.
///
/// Per step, with `bits` the window's identifier bits not yet consumed (a stop bit at `span`):
/// `nz` = trailing zeros = the window index of the next 2-byte word (or `span`); the SC run is
/// words `k .. nz`; word `x` of the window starts at array index `js + x`, where `js` = the
/// first word's array index plus the 2-byte words consumed so far (§4's prefix sum, kept as a
/// running count). Every index of a step comes from `nz`, `k` and `js` alone, so the only values
/// carried from step to step are `bits` (one clear-lowest-bit), `k`, `js` and `pos` (adds): no
/// long dependency chain through the identifier bits or the word array.
///
/// Whether the previous character p (§5) is set is kept as `unset_at`, the output position at
/// which it became unset (segment start or the end of a run code; `usize::MAX` if it is set on
/// entry): every code writes at least one byte, so p is set at `npos` iff `npos != unset_at`,
/// and the common steps never touch it.
///
/// # Safety
/// `st.wj + WINDOW_ARRAY_REACH <= array.len()`; `st.pos <= lim`, `lim + FAST_OUT_SLACK <=
/// out.len()` and `lim <=` the segment's end; the dictionary `[dict_start, dict_start +
/// dict_len)` ends at or before the segment's start; `st.prev_set` only if a byte of the
/// segment precedes `st.pos`; `span <= WINDOW`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn dict_window_fast(
    array: &[u8],
    out: &mut [u8],
    st: &mut SegState,
    lim: usize,
    dict_start: usize,
    dict_len: usize,
    raw: u64,
    span: usize,
) -> (usize, bool) {
    let o = out.as_mut_ptr();
    // SAFETY: dict_start + dict_len <= segment start <= lim < out.len().
    let d = unsafe { o.add(dict_start) };
    let mut bits = (raw & ((1u64 << span) - 1)) | (1u64 << span);
    // ap + x = word x of the window, 2-byte words consumed counted in (js of the comment above).
    // SAFETY: st.wj < array.len() (the reach contract).
    let ap0 = unsafe { array.as_ptr().add(st.wj) };
    let (mut ap, mut pos, mut k) = (ap0, st.pos, 0usize);
    let mut unset_at = if st.prev_set { usize::MAX } else { pos };
    let stopped = loop {
        let nz = bits.trailing_zeros() as usize;
        let sc = nz - k;
        // SAFETY: writes pos .. pos + 64 at most (sc <= WINDOW = 56, in 16-byte pieces), and
        // pos <= lim <= out.len() - FAST_OUT_SLACK; reads ap + k .. ap + nz + 16 at most,
        // inside st.wj + 2 * WINDOW + 16 < array.len() (ap - ap0 counts 2-byte words of the
        // window, nz <= span); array and out are different buffers.
        unsafe { copy_sc(o.add(pos), ap.add(k), sc) };
        let rest = bits & (bits - 1);
        if rest == 0 {
            // nz = span, the stop bit: the window ends with these SC words.
            if pos + sc > lim {
                break true;
            }
            pos += sc;
            k = span;
            break false;
        }
        let npos = pos + sc;
        // SAFETY: word nz of the window is a 2-byte word: it ends at or before
        // ap0 + 2 * WINDOW.
        let wp = unsafe { ap.add(nz) };
        let w = u16::from_le_bytes(unsafe { wp.cast::<[u8; 2]>().read() });
        let l = (w >> 12) as usize;
        let (mut len, mut nk) = (l + SHORT_MIN, nz + 1);
        if l == LONG_L as usize {
            cold();
            // LI / LRL: the c word is word nz + 1, identifier 0; the stop bit at span also
            // sends a c word past the window to the checked loop.
            if (rest >> (nz + 1)) & 1 != 0 {
                break true;
            }
            // SAFETY: nz + 1 < span, so the c word is a word of the window: wp + 2 <
            // ap0 + 2 * WINDOW.
            len = unsafe { *wp.add(2) } as usize + LONG_MIN;
            nk = nz + 2;
        }
        // One check for the SC run and the code: npos + len <= lim <= the segment's end.
        let end = npos + len;
        if end > lim {
            cold();
            break true;
        }
        let t = (w & 0x0FFF) as usize;
        if t + len <= dict_len {
            // SI / LI: dictionary bytes [t, t + len), which end at or before the segment's
            // start <= npos (so t != RUN_T: t + len > 4096 >= dict_len for a run code).
            // SAFETY: reads d + t .. + roundup16(len) and writes npos .. + roundup16(len), both
            // ending before npos + len + 16 <= lim + FAST_OUT_SLACK <= out.len(); the len bytes
            // read lie before npos (copy16's contract).
            unsafe { copy16(o.add(npos), d.add(t), len) };
        } else {
            cold();
            // SRL / LRL (t = RUN_T) with p set; anything else fails in the checked loop.
            if t != RUN_T as usize || npos == unset_at {
                break true;
            }
            // SAFETY: p is set, so a byte of the segment precedes npos (npos >= 1); the fill
            // ends before npos + len + 16 <= out.len() as above.
            unsafe { fill16(o.add(npos), *o.add(npos - 1), len) };
            unset_at = end;
        }
        pos = end;
        // SAFETY: stays inside the window's reach (one per 2-byte word of the window).
        ap = unsafe { ap.add(1) };
        k = nk;
        bits = rest;
    };
    // SAFETY: both pointers are into `array`, ap >= ap0.
    let twos = unsafe { ap.offset_from(ap0) } as usize;
    *st = SegState {
        pos,
        wj: st.wj + twos + k,
        prev_set: pos != unset_at,
    };
    (k, stopped)
}

/// One window of a dictionary segment with every access checked: words `wi .. wi + span`
/// (`raw`: their identifier bits from bit 0, at least `span + 1` valid). Returns the words
/// consumed: `span`, or `span + 1` when a long code's c word lies just past the window.
#[allow(clippy::too_many_arguments)]
fn dict_window(
    s: &Strip<'_>,
    seg: &Seg,
    out: &mut [u8],
    st: &mut SegState,
    wi: usize,
    words_end: usize,
    raw: u64,
    span: usize,
) -> Result<usize> {
    let arr = s.array;
    let dict_len = seg.dict_end - seg.dict_start;
    let mut bits = (raw & ((1u64 << span) - 1)) | (1u64 << span);
    let (mut pos, mut wj, mut prev_set) = (st.pos, st.wj, st.prev_set);
    let mut k = 0; // words of the window consumed (span + 1 after a c word past it)
    loop {
        // Words k .. nz are SC, word nz is a 2-byte word (or nz = span: the window's end).
        let nz = bits.trailing_zeros() as usize;
        let sc = nz - k;
        let left = seg.end - pos;
        if sc > left {
            return Err(err_code_length(s.array_at + wj + left, 0, 1));
        }
        copy_bytes(out, pos, arr, wj, sc);
        pos += sc;
        wj += sc;
        prev_set |= sc != 0;
        if nz == span {
            k = span;
            break;
        }
        bits &= bits - 1;
        let at = s.array_at + wj;
        let w = u16::from_le_bytes([arr[wj], arr[wj + 1]]);
        wj += 2;
        let t = (w & 0x0FFF) as usize;
        let len = if w >> 12 == LONG_L {
            // LI / LRL: the c word is the next word of the segment, identifier 0.
            let cw = wi + nz + 1;
            if cw >= words_end {
                return Err(err_no_c_word(at));
            }
            if (raw >> (nz + 1)) & 1 != 0 {
                return Err(err_c_word_id(s.ids_at + cw / 8));
            }
            let cb = arr[wj];
            wj += 1;
            k = nz + 2;
            cb as usize + LONG_MIN
        } else {
            k = nz + 1;
            (w >> 12) as usize + SHORT_MIN
        };
        let left = seg.end - pos;
        if len > left {
            return Err(err_code_length(at, left, len));
        }
        if t == RUN_T as usize {
            // SRL / LRL: len copies of p, which then becomes unset.
            if !prev_set {
                return Err(err_no_prev(at));
            }
            let p = out[pos - 1];
            fill_bytes(out, pos, len, p);
            prev_set = false;
        } else {
            // SI / LI: dictionary bytes [t, t + len).
            if t + len > dict_len {
                return Err(err_dictionary(at, dict_len, t + len));
            }
            copy_dict(out, seg.dict_start + t, pos, len);
            prev_set = true;
        }
        pos += len;
        if k >= span {
            break;
        }
    }
    *st = SegState { pos, wj, prev_set };
    Ok(k)
}

/// Runs [`dict_window_fast`] window after window from word `wi` while its conditions hold
/// (array reach, `st.pos <= lim`, `lim > 0`) and no window stops early; returns the next word.
/// Kept out of line so that the hot loop has the registers to itself.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn dict_fast_windows(
    s: &Strip<'_>,
    out: &mut [u8],
    st: &mut SegState,
    mut wi: usize,
    words_end: usize,
    lim: usize,
    dict_start: usize,
    dict_len: usize,
) -> usize {
    while wi < words_end && st.wj + WINDOW_ARRAY_REACH <= s.array.len() && st.pos <= lim && lim > 0
    {
        let span = (words_end - wi).min(WINDOW);
        let raw = ids_window(s.ids, wi);
        // SAFETY: the array reach and st.pos <= lim are checked above; the caller passes
        // lim > 0 only if lim + FAST_OUT_SLACK <= out.len(), and lim <= the segment's end; the
        // dictionary ends at or before the segment's start; st.prev_set only after a byte of
        // the segment was written; span <= WINDOW.
        let (k, stopped) =
            unsafe { dict_window_fast(s.array, out, st, lim, dict_start, dict_len, raw, span) };
        wi += k;
        if stopped {
            break;
        }
    }
    wi
}

/// A dictionary segment (§5: SC, SI, LI, SRL, LRL), words `[c.i, words_end)`, output `seg`:
/// windows run unchecked ([`dict_window_fast`]) where there is room, and the checked loop
/// finishes any window the fast one leaves (near the ends of the array and the strip, and at
/// every failing check, so errors are exactly the checked loop's).
fn dict_segment(
    s: &Strip<'_>,
    seg: &Seg,
    out: &mut [u8],
    c: &mut Cursor,
    words_end: usize,
) -> Result<()> {
    let mut st = SegState {
        pos: seg.start,
        wj: c.j,
        prev_set: false,
    };
    let dict_len = seg.dict_end - seg.dict_start;
    // The fast windows' output limit: the segment's end, or less near the strip's end so that
    // FAST_OUT_SLACK bytes of scratch room always follow it (the codes past it run checked).
    let lim = out
        .len()
        .checked_sub(FAST_OUT_SLACK)
        .map_or(0, |l| l.min(seg.end));
    let mut wi = c.i;
    while wi < words_end {
        // As many windows as run fast, then (if words are left) one checked window: the one
        // the fast loop stopped in, or one near the array's or the strip's end.
        wi = dict_fast_windows(
            s,
            out,
            &mut st,
            wi,
            words_end,
            lim,
            seg.dict_start,
            dict_len,
        );
        if wi >= words_end {
            break;
        }
        let span = (words_end - wi).min(WINDOW);
        let raw = ids_window(s.ids, wi);
        wi += dict_window(s, seg, out, &mut st, wi, words_end, raw, span)?;
    }
    if st.pos != seg.end {
        return Err(err_segment_short(seg, st.pos));
    }
    c.i = wi;
    c.j = st.wj;
    Ok(())
}

/// Decodes one strip into `out` (the strip's bytes of the output): §7 steps 4 and 5, or §4a.
fn decode_strip(payload: &[u8], r: StripRange, out: &mut [u8]) -> Result<()> {
    match r.kind {
        StripKind::Stored => return stored_strip(payload, r, out),
        StripKind::Fill => return fill_strip(payload, r, out),
        StripKind::Coded => {}
    }
    let (segs, n) = strip_segments(out.len());
    let segs = &segs[..n];
    let s = parse_strip(payload, r, segs)?;
    let mut c = Cursor { i: 0, j: 0 };
    for (k, seg) in segs.iter().enumerate() {
        let words_end = c.i + s.word_counts[k] as usize;
        if seg.dictionary {
            dict_segment(&s, seg, out, &mut c, words_end)?;
        } else {
            plain_segment(&s, seg, out, &mut c, words_end)?;
        }
    }
    Ok(())
}

/// The reference decoder (§6): `payload` must decode to exactly `out.len()` bytes. Strips in
/// order, on the calling thread.
pub fn decode_reference(payload: &[u8], out: &mut [u8]) -> Result<()> {
    let ranges = parse_directory(payload, out.len())?;
    for (k, strip_out) in out.chunks_mut(STRIP_BYTES).enumerate() {
        decode_strip(payload, ranges[k], strip_out)?;
    }
    Ok(())
}

/// The fast decoder: strips in parallel; same results and same errors as [`decode_reference`].
pub fn decode(payload: &[u8], out: &mut [u8]) -> Result<()> {
    let ranges = parse_directory(payload, out.len())?;
    let results: Vec<Result<()>> = out
        .par_chunks_mut(STRIP_BYTES)
        .enumerate()
        .map(|(k, strip_out)| decode_strip(payload, ranges[k], strip_out))
        .collect();
    results.into_iter().collect()
}

// ---- the oracle -------------------------------------------------------------------------------

/// A word-at-a-time, byte-at-a-time transcription of §6 (the first decoder of this codec), for
/// tests and fuzzing: [`decode_reference`] and [`decode`] must give the same bytes and the same
/// error, every field, on every payload. Not for use: it is several times slower.
#[doc(hidden)]
pub fn decode_simple(payload: &[u8], out: &mut [u8]) -> Result<()> {
    let ranges = parse_directory(payload, out.len())?;
    for (k, strip_out) in out.chunks_mut(STRIP_BYTES).enumerate() {
        match ranges[k].kind {
            StripKind::Stored => stored_strip(payload, ranges[k], strip_out)?,
            StripKind::Fill => fill_strip(payload, ranges[k], strip_out)?,
            StripKind::Coded => simple_strip(payload, ranges[k], strip_out)?,
        }
    }
    Ok(())
}

fn simple_strip(payload: &[u8], r: StripRange, out: &mut [u8]) -> Result<()> {
    let (segs, n) = strip_segments(out.len());
    let segs = &segs[..n];
    let strip = parse_strip(payload, r, segs)?;
    let id = |i: usize| (strip.ids[i / 8] >> (i % 8)) & 1 == 1;
    let (mut i, mut j) = (0usize, 0usize);
    for (k, seg) in segs.iter().enumerate() {
        let words_end = i + strip.word_counts[k] as usize;
        let mut pos = seg.start;
        // The previous character (the paper's `p`): unset at a segment start and after a run.
        let mut prev: Option<u8> = None;
        while i < words_end {
            let at = strip.array_at + j;
            let left = seg.end - pos;
            if !id(i) {
                // SC: one byte (§5).
                if left == 0 {
                    return Err(err_code_length(at, 0, 1));
                }
                let ch = strip.array[j];
                out[pos] = ch;
                pos += 1;
                prev = Some(ch);
                i += 1;
                j += 1;
                continue;
            }
            let (b0, b1) = (strip.array[j], strip.array[j + 1]);
            i += 1;
            j += 2;
            if !seg.dictionary {
                // RL: character, then l: l + 2 copies of it (§5).
                let len = b1 as usize + RL_MIN;
                if len > left {
                    return Err(err_rl_length(at, left, len));
                }
                for x in &mut out[pos..pos + len] {
                    *x = b0;
                }
                pos += len;
                prev = Some(b0);
                continue;
            }
            let w = u16::from_le_bytes([b0, b1]);
            let (t, l) = (w & 0x0FFF, w >> 12);
            let len = if l == LONG_L {
                // LI / LRL: the next word is the 1-byte c (§5).
                if i >= words_end {
                    return Err(err_no_c_word(at));
                }
                if id(i) {
                    return Err(err_c_word_id(strip.ids_at + i / 8));
                }
                let cb = strip.array[j];
                i += 1;
                j += 1;
                cb as usize + LONG_MIN
            } else {
                l as usize + SHORT_MIN
            };
            if len > left {
                return Err(err_code_length(at, left, len));
            }
            if t == RUN_T {
                // SRL / LRL: len copies of the previous character, which then becomes unset.
                let Some(p) = prev else {
                    return Err(err_no_prev(at));
                };
                for x in &mut out[pos..pos + len] {
                    *x = p;
                }
                prev = None;
            } else {
                // SI / LI: len bytes from offset t of the dictionary.
                let dict_len = seg.dict_end - seg.dict_start;
                if t as usize + len > dict_len {
                    return Err(err_dictionary(at, dict_len, t as usize + len));
                }
                let from = seg.dict_start + t as usize;
                for q in 0..len {
                    out[pos + q] = out[from + q];
                }
                prev = Some(out[pos + len - 1]);
            }
            pos += len;
        }
        if pos != seg.end {
            return Err(err_segment_short(seg, pos));
        }
    }
    Ok(())
}
