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
//! (`dict_fast_windows`, `dict_window_fast`: raw pointers, one `unsafe` block per access, each with
//! its SAFETY argument) takes a whole window while the window's word-array reach is there, cut to
//! as many words as the output room past its start allows at 16 bytes a word (the most a word
//! yields outside a long code, which checks its own room): so a step checks nothing about the
//! output's length. An LI whose source is inside the dictionary and after which a whole window's
//! room (`16 * (WINDOW + 1)` bytes) is left is copied in place and the window goes on after its
//! c word (text has one in every seven 2-byte words); an LRL, or an LI without that room, ends
//! the window. One call runs window after window (`next_window` checks the one that ended and
//! starts the next, without leaving the loop). Every array index and output position of a step
//! comes from the trailing-zero count and three counters (no chain through earlier words), and a
//! step's one other check is a table compare, `t < thr[l + 1]`, that passes exactly the SIs inside
//! the dictionary and sends run codes, long codes and bad offsets to a cold path. Whether the
//! window stayed inside its segment is checked once, when it ends: if it did not (a code of it
//! passed the segment's end, which a valid segment never does), the window is given back whole and
//! the checked loop (`dict_window`, indexed Rust) redoes it from its start. At the first step that
//! fails a check, or that it leaves to the checked code (a long code's c word past the window, a
//! long code near the strip's end), the fast window stops before that step, and the checked loop
//! redoes the window from there; so every error is the checked loop's, exactly.
//!
//! A stored strip (§4a, format 1.1: bit 31 of its `strip_starts` entry) is a length check and one
//! copy; a fill strip (§4b, format 1.2: bit 30) is a length check and one fill.
//!
//! Bounds: the header and the strip directory are checked first (§7 steps 1-3), then each
//! strip's word counts, identifier padding and exact word-array length (step 4), so every word
//! index is inside the strip; step 5 bounds every code by the segment (the fast gear's scratch
//! writes, by the strip's output) and every read by the dictionary; nothing is allocated from a header field (the strip list has at most 512 entries,
//! after the directory was checked against the payload length). Outside the fast windows all
//! indexing is checked Rust.

use std::num::NonZeroU64;

use rayon::prelude::*;
use tessera_format::{Error, Result, MAX_CHUNK_VALUES};

use super::{
    strip_segments, valid_segment_bytes, Seg, FILL_STRIP, HEADER_BYTES, LONG_L, LONG_MIN,
    MAX_STRIP_SEGMENTS, RL_MIN, RUN_T, SEGMENT_SIZES, SHORT_MIN, STORED_STRIP, STRIP_BYTES,
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
    /// The payload's `segment_bytes` (§2; the same for every strip), which fixes a coded strip's
    /// segments (§3).
    pub segment_bytes: usize,
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
    let segment_bytes = word(payload, 0) as usize;
    if !valid_segment_bytes(segment_bytes) {
        return Err(Error::InvalidHeader {
            field: "segment_bytes",
            offset: 0,
            expected: format!("one of {SEGMENT_SIZES:?}"),
            found: segment_bytes as u64,
        });
    }
    let per_strip = word(payload, 4);
    if per_strip as usize != STRIP_BYTES / segment_bytes {
        return Err(Error::InvalidHeader {
            field: "segments_per_strip",
            offset: 4,
            expected: (STRIP_BYTES / segment_bytes).to_string(),
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
            segment_bytes,
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
        unsafe { copy16_more(dst, src, 16, n) };
    }
}

/// One 16-byte piece at offset `q`, through a register: a 16-byte `ptr::copy` (memmove: all
/// 16 read before any is written) is one unaligned load and one store. (A `read_unaligned` /
/// `write_unaligned` pair of `[u8; 16]` left dead stack copies of the value in the window loop.)
///
/// # Safety
/// `src + q .. src + q + 16` readable, `dst + q .. dst + q + 16` writable.
#[inline(always)]
unsafe fn piece16(dst: *mut u8, src: *const u8, q: usize) {
    // SAFETY: the caller's contract; plain bytes, and ptr::copy allows the ranges to overlap.
    unsafe {
        std::ptr::copy(src.add(q), dst.add(q), 16);
    }
}

/// The pieces of [`copy16`] from offset `q0` (a multiple of 16, below `n`). Pieces go one at a
/// time, in order, each read before it is written (never a `memcpy`: it would not allow the
/// source to run on into the destination as SI / LI's scratch tail does).
///
/// # Safety
/// As [`copy16`].
#[inline(never)]
unsafe fn copy16_more(dst: *mut u8, src: *const u8, q0: usize, n: usize) {
    let mut q = q0;
    while q < n {
        // SAFETY: q < n.next_multiple_of(16), so the piece is inside both ranges.
        unsafe { piece16(dst, src, q) };
        q += 16;
        // Keeps LLVM from turning the loop into a memcpy call (see above).
        std::hint::black_box(());
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

/// The fast gear's place (raw pointers, owned by [`dict_fast_windows`]).
struct FastPos {
    /// The output pointer minus the words of the window consumed (`o - k`): with it the step's
    /// output positions are `ok + k` (the SC run) and `ok + nz` (the 2-byte word's code), so
    /// no step computes the SC run's length.
    ok: *mut u8,
    /// Word `x` of the window starts at `ap + x` (the window's first word's byte plus the
    /// 2-byte words consumed: §4's prefix sum, kept as a running count).
    ap: *const u8,
    /// Where p (§5) became unset: the segment start or the end of a run code; null if p is set
    /// at the window's start. Every code writes at least one byte, so p is set at output
    /// pointer `np` iff `np != unset`, and the common steps never touch it.
    unset: *mut u8,
    /// The current window's start: its first output byte, its first word's array byte, its
    /// first word (strip word index) and `unset` there. A window that ends past its segment's
    /// end is given back to this state (the windows before it are done).
    o0: *mut u8,
    a0: *const u8,
    wi0: usize,
    unset0: *mut u8,
}

/// What the fast gear reads but does not change (cold paths read it from memory).
struct FastCtx {
    /// The dictionary's first byte (`out[dict_start]`).
    d: *const u8,
    /// `thr[l + 1]`: an SI of length field `l` (`l + 2` bytes) at offset `t` is inside the
    /// dictionary iff `t < thr[l + 1] = dict_len - (l + 1)`; `thr[16] = 0` (l = 15: a long code,
    /// or `thr[0]`, never read) sends every long code and every run code (`t = 4095`, and
    /// `t + len > 4096 >= dict_len`) to the cold path with one compare.
    thr: [usize; 17],
    dict_len: usize,
    /// The segment's end and the output's end (long codes check their room against these).
    olim: *mut u8,
    oend: *mut u8,
    /// `oend - 16 * (WINDOW + 1)` as an address (0 if the output is shorter): an LI that ends
    /// at or before it leaves the rest of its window the room of a whole window, so the window
    /// goes on after it (`fast_window`).
    li_lim: usize,
    /// The identifier block, the segment's word end, and the last array byte a window may
    /// start at (`WINDOW_ARRAY_REACH` before the array's end): [`next_window`] checks a new
    /// window against them.
    ids: *const u8,
    ids_len: usize,
    words_end: usize,
    alim: *const u8,
}

/// An SC run of more than 16 bytes (words `k .. nz` of the window, `k = k16 - 16`): the
/// pieces after the first, at most 3 more (`nz - k <= WINDOW = 56`).
///
/// # Safety
/// As [`copy16`] for the run: its source `ap + k ..` and its destination `ok + k ..`, both
/// `(nz - k).next_multiple_of(16)` bytes long.
#[cold]
#[inline(never)]
unsafe fn sc_more(ok: *mut u8, ap: *const u8, k16: usize, nz: usize) {
    let k = k16 - 16;
    let n = nz - k;
    let (dst, src) = (ok.wrapping_add(k), ap.wrapping_add(k));
    // SAFETY: each piece q < n.next_multiple_of(16) is inside both ranges (the contract).
    unsafe {
        piece16(dst, src, 16);
        if n > 32 {
            piece16(dst, src, 32);
            if n > 48 {
                piece16(dst, src, 48);
            }
        }
    }
}

/// Ends the window at `k` words consumed (`ok`, `ap` as in [`dict_window_fast`]) and starts the
/// next one there, with the checks [`dict_fast_windows`] makes before a window: the window
/// ended inside its segment, words are left, the array reach and `16 * (span + 1)` bytes of
/// output room are there, and the identifier bits are 8 whole bytes of the block. Returns the
/// new window's identifier bits with the stop bit at its span (`fp`'s window start moved
/// there), or 0 (`fp` unchanged) to leave the window to the caller, which ends it as always.
#[inline(always)]
fn next_window(fp: &mut FastPos, ctx: &FastCtx, ok: *mut u8, ap: *const u8, k: usize) -> u64 {
    let o = ok.wrapping_add(k);
    let a = ap.wrapping_add(k);
    let wi = fp.wi0 + k;
    if o > ctx.olim || wi >= ctx.words_end || a > ctx.alim {
        return 0;
    }
    // o <= olim <= oend.
    let room_words = ((ctx.oend as usize - o as usize) / 16).saturating_sub(1);
    let span = (ctx.words_end - wi).min(WINDOW).min(room_words);
    let b = wi >> 3;
    if span == 0 || b + 8 > ctx.ids_len {
        return 0;
    }
    // SAFETY: b + 8 <= ids_len: the 8 bytes are inside the identifier block.
    let raw = u64::from_le_bytes(unsafe { ctx.ids.add(b).cast::<[u8; 8]>().read() }) >> (wi & 7);
    fp.o0 = o;
    fp.a0 = a;
    fp.wi0 = wi;
    fp.unset0 = fp.unset;
    (raw & ((1u64 << span) - 1)) | (1u64 << span)
}

/// Windows of a dictionary segment from the window at `fp.o0`, `fp.a0`, word `fp.wi0` (`bits`:
/// its identifier bits from bit 0, and a stop bit at its span), without bounds checks beyond
/// the format's own and without any check of the output's length in a step: each window has
/// `16 * (span + 1)` bytes of room, which it cannot outgrow (every word outside a long code
/// yields at most 16 bytes; a long code checks its own room: an LI goes on in the window only
/// with `16 * (WINDOW + 1)` bytes of room after it, and any other ends its window), and whether
/// it ended inside its segment is checked when it ends ([`next_window`], which also starts the
/// next one, or the caller). Returns `k + 16` (`k`: the words of the last window consumed,
/// `fp.ok`, `fp.ap` as in it) and whether it stopped early. At a step whose dictionary, run or
/// long-code checks fail it stops *before* that step's 2-byte word, with `fp` as after the
/// step's SC run (written and consumed: `k = nz`), so the checked loop ([`dict_window`]) redoes
/// the code and reports the exact error (if the SC run passed the segment's end, the caller
/// gives the window back and the checked loop redoes it all).
///
/// Per step, with `bits` the window's identifier bits not yet consumed: `nz` = trailing zeros =
/// the window index of the next 2-byte word (or `span`); the SC run is words `k .. nz`, bytes
/// `ap + k ..` to output `ok + k ..`; the code's word is at `ap + nz`, its output at `ok + nz`.
/// What a step carries to the next is `bits` (clear lowest bit), `ok` (+ len - 1), `ap` (+ 1)
/// and, for the SC run's length test, `k + 16` (`nz + 17`), none through a chain longer than
/// one add. A window with no SC run of more than 16 words ([`has_long_sc`]: most windows)
/// runs a copy of the step loop ([`fast_window`]) that copies each run as one 16-byte piece
/// and carries no `k`.
///
/// # Safety
/// For the first window: `fp.a0 + WINDOW_ARRAY_REACH` inside the word array; `fp.o0` at or
/// after the segment's start with `16 * (span + 1)` writable bytes of `out` from it; `fp.ok`,
/// `fp.ap` equal to them, `fp.unset0` to `fp.unset`; `span <= WINDOW`. `ctx` describes the
/// segment's dictionary (inside `out`, ending at or before the segment's start;
/// `dict_len >= 16`), its end, the output's end, the identifier block, the segment's word end
/// and the array's last window start; `fp.unset` as its comment says.
#[inline(never)]
unsafe fn dict_window_fast(fp: &mut FastPos, ctx: &FastCtx, mut bits: u64) -> (usize, bool) {
    let (mut ok, mut ap) = (fp.ok, fp.ap);
    loop {
        // Most windows have no SC run of more than 16 words: their steps copy one 16-byte
        // piece per run, without the length test and the `k + 16` it needs (three or four
        // instructions of about twenty a step).
        // SAFETY: the contract, for this window (and the next ones fast_window starts).
        let end = unsafe {
            if has_long_sc(bits) {
                fast_window::<true>(fp, ctx, &mut ok, &mut ap, &mut bits)
            } else {
                fast_window::<false>(fp, ctx, &mut ok, &mut ap, &mut bits)
            }
        };
        if let Some(r) = end {
            return r;
        }
    }
}

/// Whether a window's identifier bits (`bits`, the stop bit the highest set) hold a run of at
/// least 17 zero bits below the stop bit. An SC run of the window (words `k .. nz`, identifier
/// 0) is a run of zero bits there, so without one no SC run of the window is longer than 16
/// words (a long code's c word, also 0, can only make the answer yes: the slower loop).
#[inline(always)]
fn has_long_sc(bits: u64) -> bool {
    let top = 63 - NonZeroU64::new(bits).map_or(63, |b| b.leading_zeros());
    let mut z = !bits & ((1u64 << top) - 1);
    // Bit i of z: bits i .. i + r all zero, for r = 2, 4, 8, 16, then 17.
    z &= z >> 1;
    z &= z >> 2;
    z &= z >> 4;
    z &= z >> 8;
    z &= z >> 1;
    z != 0
}

/// One window of [`dict_window_fast`] (`ok`, `ap` as there at its start, `bits` its identifier
/// bits with the stop bit): its steps, then the next window started ([`next_window`]: `ok`,
/// `ap`, `bits` for it, and `None`), or `Some` of what [`dict_window_fast`] returns. Without
/// `LONG_SC` the window must have no SC run of more than 16 words ([`has_long_sc`]).
///
/// # Safety
/// As [`dict_window_fast`], for this window.
#[inline(always)]
unsafe fn fast_window<const LONG_SC: bool>(
    fp: &mut FastPos,
    ctx: &FastCtx,
    ok: &mut *mut u8,
    ap: &mut *const u8,
    bits: &mut u64,
) -> Option<(usize, bool)> {
    let (d, thr) = (ctx.d, &ctx.thr);
    let (mut ok_, mut ap_, mut bits_) = (*ok, *ap, *bits);
    // The window's first SC run, then one step per 2-byte word (its code, then the SC run
    // after it), while words are left before the stop bit.
    let mut k16 = 16usize;
    // SAFETY: bits != 0 (the stop bit at span).
    let mut nz = unsafe { NonZeroU64::new_unchecked(bits_) }.trailing_zeros() as usize;
    // SAFETY: words 0 .. nz <= span of the window (sc_run's contract, k = 0).
    unsafe { sc_run::<LONG_SC>(ok_, ap_, k16, nz) };
    let mut rest = bits_ & (bits_ - 1);
    while rest != 0 {
        // The 2-byte word nz: output at np (at most 16 * nz past the window's first byte).
        let np = ok_.wrapping_add(nz);
        // SAFETY: word nz < span of the window is a 2-byte word inside the array reach.
        let w = usize::from(u16::from_le_bytes(unsafe {
            ap_.add(nz).cast::<[u8; 2]>().read()
        }));
        // len - 1 = l + 1 (1..=16), and the offset t.
        let len1 = (w + (1 << 12)) >> 12;
        let t = w & 0x0FFF;
        if t < thr[len1] {
            // SI: dictionary bytes [t, t + len), which end at or before the segment's start
            // (<= np).
            // SAFETY: reads d + t .. d + t + 16 <= the segment's start + 15 - len1 inside out
            // (the room past np >= the segment's start); writes np .. np + 16 <= 16 * (nz + 1)
            // past the window's first byte, inside the room; the len bytes wanted lie before
            // np, and the 16 go through a register.
            unsafe { piece16(np, d.add(t), 0) };
        } else {
            cold();
            if len1 == LONG_L as usize + 1 {
                // An LI whose c word is the next word of the window (identifier 0), whose source
                // is inside the dictionary and which leaves a whole window's room after it
                // goes on in the window: words nz and nz + 1 consumed, 3 array bytes.
                if (rest >> (nz + 1)) & 1 == 0 {
                    // SAFETY: nz + 1 < span (the stop bit at span is 1): the c word is a word
                    // of the window, inside the reach.
                    let len = usize::from(unsafe { *ap_.add(nz + 2) }) + LONG_MIN;
                    let np = ok_.wrapping_add(nz);
                    if t + len <= ctx.dict_len && np as usize + len <= ctx.li_lim {
                        // SAFETY: dictionary bytes [t, t + len) end at or before the segment's
                        // start <= np; the pieces (len >= 18: at least two) read before
                        // d + t + len + 16 <= np + 16 and write np .. np + len + 16 <= li_lim
                        // + 16 < oend, inside out; the len bytes wanted lie before np.
                        unsafe {
                            let src = ctx.d.add(t);
                            piece16(np, src, 0);
                            piece16(np, src, 16);
                            if len > 32 {
                                copy16_more(np, src, 32, len);
                            }
                        }
                        // Word nz + 2 (after the c word) starts at output np + len, array byte
                        // ap + nz + 3. The window's words after it (span - nz - 2 of them,
                        // at most 16 bytes each, then a 16-byte scratch piece) end before
                        // np + len + 16 * (WINDOW + 1) <= oend: the room holds.
                        // The rest is the step's tail below with len - 2 and nz + 2, written
                        // out: one tail for both (a phi for the SC run's first word) made
                        // LLVM give the SI step two more instructions (19, objdump).
                        ok_ = ok_.wrapping_add(len - 2);
                        // SAFETY: one 2-byte word more, inside the reach.
                        ap_ = unsafe { ap_.add(1) };
                        // SAFETY: words k = nz + 2 .. (the next 2-byte word, after the c word
                        // whose bit is 0) <= span (sc_run's contract; the room as above).
                        unsafe { sc_first(ok_, ap_, nz + 2) };
                        k16 = nz + 18;
                        bits_ = rest;
                        // SAFETY: bits != 0 (rest != 0).
                        nz = unsafe { NonZeroU64::new_unchecked(bits_) }.trailing_zeros() as usize;
                        // SAFETY: as sc_first's.
                        unsafe { sc_rest::<LONG_SC>(ok_, ap_, k16, nz) };
                        rest = bits_ & (bits_ - 1);
                        continue;
                    }
                }
                // Any other LI, and every LRL, ends the window (its room holds only codes of
                // at most 16 bytes a word): the next one starts after the c word.
                // SAFETY: this function's contract, and ok, ap as after the last step.
                let (k16l, done) = unsafe { long_code(fp, ctx, ok_, ap_, nz, rest, t) };
                if !done {
                    return Some((k16l, true));
                }
                *bits = next_window(fp, ctx, fp.ok, fp.ap, nz + 2);
                if *bits == 0 {
                    return Some((k16l, false));
                }
                (*ok, *ap) = (fp.o0, fp.a0);
                return None;
            }
            // SRL with p set; anything else stops here for the checked loop, before the code
            // (its SC run is written and consumed: words 0 .. nz).
            // SAFETY: word nz < span of the window; ok as after the last step.
            if !unsafe { short_run(fp, ok_, nz, len1, t) } {
                fp.ok = ok_;
                fp.ap = ap_;
                return Some((nz + 16, true));
            }
        }
        ok_ = ok_.wrapping_add(len1);
        // SAFETY: stays inside the window's array reach (one per 2-byte word of the window).
        ap_ = unsafe { ap_.add(1) };
        // The SC run's first piece before the trailing-zero count: it needs only where the
        // run starts (word nz + 1), so it takes its addresses from nz without a copy of it.
        // SAFETY: words k = nz + 1 .. (the next 2-byte word) <= span (sc_run's contract).
        unsafe { sc_first(ok_, ap_, nz + 1) };
        k16 = nz + 17;
        bits_ = rest;
        // SAFETY: bits != 0 (rest != 0).
        nz = unsafe { NonZeroU64::new_unchecked(bits_) }.trailing_zeros() as usize;
        // SAFETY: words k .. nz, k = k16 - 16 <= nz <= span (sc_run's contract).
        unsafe { sc_rest::<LONG_SC>(ok_, ap_, k16, nz) };
        rest = bits_ & (bits_ - 1);
    }
    // nz = span, the stop bit: the window ended with the SC run just copied.
    *bits = next_window(fp, ctx, ok_, ap_, nz);
    if *bits == 0 {
        fp.ok = ok_;
        fp.ap = ap_;
        return Some((nz + 16, false));
    }
    (*ok, *ap) = (fp.o0, fp.a0);
    None
}

/// The SC run of a [`dict_window_fast`] step: words `k .. nz` of the window (`k = k16 - 16`),
/// bytes `ap + k ..` to output `ok + k ..`, as 16-byte pieces (at least one; only one without
/// `LONG_SC`, which the window's [`has_long_sc`] allows: then `nz - k <= 16`).
///
/// # Safety
/// `k <= nz <= span` of a window of [`dict_window_fast`], `k` words of it consumed: reads
/// `ap + k .. ap + nz + 16` at most, inside the window's array reach; writes output pointer
/// `o = ok + k .. o + (nz - k).next_multiple_of(16)` (at least 16): `o` is at most `16 * k`
/// past the window's first output byte (each word consumed yielded at most 16 bytes), so this
/// ends before `16 * (span + 1)` past it, inside the room; array and out are different buffers.
#[inline(always)]
unsafe fn sc_run<const LONG_SC: bool>(ok: *mut u8, ap: *const u8, k16: usize, nz: usize) {
    // SAFETY: the contract.
    unsafe {
        sc_first(ok, ap, k16 - 16);
        sc_rest::<LONG_SC>(ok, ap, k16, nz);
    }
}

/// The first piece of [`sc_run`] (words from `k`), which does not depend on where the run ends.
///
/// # Safety
/// As [`sc_run`] with `k16 = k + 16`.
#[inline(always)]
unsafe fn sc_first(ok: *mut u8, ap: *const u8, k: usize) {
    // SAFETY: the contract (the first piece).
    unsafe { piece16(ok.wrapping_add(k), ap.add(k), 0) };
}

/// The pieces of [`sc_run`] after the first (only with `LONG_SC`, for a run of more than 16).
///
/// # Safety
/// As [`sc_run`].
#[inline(always)]
unsafe fn sc_rest<const LONG_SC: bool>(ok: *mut u8, ap: *const u8, k16: usize, nz: usize) {
    if LONG_SC && nz > k16 {
        // SAFETY: the contract, for the pieces after the first.
        unsafe { sc_more(ok, ap, k16, nz) };
    }
}

/// An SRL at word `nz` of a [`dict_window_fast`] window (`ok` as there, `len1 = len - 1`):
/// writes it and returns true, or returns false (nothing written) when `t` is not the run
/// offset or p is unset. Out of line, so that the step's SI store takes its address from `ok`
/// and `nz` without a register for it.
///
/// # Safety
/// As [`dict_window_fast`]'s step for a 2-byte word `nz < span` of the window, `len1 <= 15`.
#[cold]
#[inline(never)]
unsafe fn short_run(fp: &mut FastPos, ok: *mut u8, nz: usize, len1: usize, t: usize) -> bool {
    let np = ok.wrapping_add(nz);
    if t != RUN_T as usize || np == fp.unset {
        return false;
    }
    // SAFETY: p is set, so a byte of the segment precedes np; the fill writes np .. np + 16,
    // inside the room as an SI's (at most 16 * (nz + 1) past the window's first byte).
    unsafe {
        let p = *np.sub(1);
        np.cast::<[u8; 16]>().write_unaligned([p; 16]);
    }
    fp.unset = np.wrapping_add(len1 + 1);
    true
}

/// A long code (LI / LRL) at word `nz` of a [`dict_window_fast`] window, whose words before
/// it are consumed (`ok`, `ap` as there, the SC run before the code written). Returns
/// `(nz + 18, true)` after the c word (`fp.ok`, `fp.ap` as after it), or `(nz + 16, false)`,
/// stopped before the code (`fp.ok`, `fp.ap` as there), when a check fails or the code's
/// 16-byte pieces would pass the segment's or the output's end.
///
/// # Safety
/// As [`dict_window_fast`], with word `nz < span` a 2-byte word of the window and `rest` the
/// window's identifier bits after it (the stop bit at span).
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
unsafe fn long_code(
    fp: &mut FastPos,
    ctx: &FastCtx,
    ok: *mut u8,
    ap: *const u8,
    nz: usize,
    rest: u64,
    t: usize,
) -> (usize, bool) {
    fp.ok = ok;
    fp.ap = ap;
    // The c word, word nz + 1: identifier 0, inside the window (the stop bit at span also
    // sends a c word past the window to the checked loop).
    if (rest >> (nz + 1)) & 1 != 0 {
        return (nz + 16, false);
    }
    // SAFETY: nz + 1 < span, so the c word is a word of the window, inside the reach.
    let len = usize::from(unsafe { *ap.add(nz + 2) }) + LONG_MIN;
    let np = ok.wrapping_add(nz);
    let end = np.wrapping_add(len);
    if end > ctx.olim || np.wrapping_add(len.next_multiple_of(16)) > ctx.oend {
        return (nz + 16, false);
    }
    if t + len <= ctx.dict_len {
        // SAFETY: dictionary bytes [t, t + len) end at or before the segment's start <= np;
        // the pieces read end before d + t + len + 16 <= the segment's start + 16 <= out's end
        // (the window's room) and write np .. np + len.next_multiple_of(16) <= oend.
        unsafe { copy16(np, ctx.d.add(t), len) };
    } else {
        if t != RUN_T as usize || np == fp.unset {
            return (nz + 16, false);
        }
        // SAFETY: p is set, so a byte of the segment precedes np; the pieces end at or before
        // oend (checked above).
        unsafe { fill16(np, *np.sub(1), len) };
        fp.unset = end;
    }
    // Output end after nz + 2 words (the code's and its c word).
    fp.ok = end.wrapping_sub(nz + 2);
    // SAFETY: one 2-byte word more, inside the reach.
    fp.ap = unsafe { ap.add(1) };
    (nz + 18, true)
}

/// Runs [`dict_window_fast`] from word `wi` while the array reach and the output room (at
/// least one word's: 32 bytes) are there and no window stops early; returns the next word,
/// with `st` there. A window's span is cut so that `16 * (span + 1)` bytes of room follow its
/// start, so only the last few hundred bytes of a strip's output run in small windows. The
/// fast call starts each next window itself ([`next_window`]) while its identifier bits are 8
/// whole bytes of the block; this loop starts the first one and those near the block's end.
/// When a window ends (or stops) past the segment's end, some code of it did not fit (a valid
/// segment never gets there): the window is given back whole, `st` as at its start, and the
/// checked loop finds the first error. Kept out of line: the window loop's values do not
/// crowd the hot loop's registers.
#[inline(never)]
fn dict_fast_windows(
    s: &Strip<'_>,
    out: &mut [u8],
    st: &mut SegState,
    mut wi: usize,
    words_end: usize,
    seg: &Seg,
    thr: &[usize; 17],
) -> usize {
    let o0 = out.as_mut_ptr();
    let arr = s.array.as_ptr();
    let ctx = FastCtx {
        d: o0.wrapping_add(seg.dict_start),
        thr: *thr,
        dict_len: seg.dict_end - seg.dict_start,
        olim: o0.wrapping_add(seg.end),
        oend: o0.wrapping_add(out.len()),
        li_lim: (o0.wrapping_add(out.len()) as usize).saturating_sub(16 * (WINDOW + 1)),
        ids: s.ids.as_ptr(),
        ids_len: s.ids.len(),
        words_end,
        // Only compared with: no window starts unless the array holds the reach (below).
        alim: arr.wrapping_add(s.array.len().saturating_sub(WINDOW_ARRAY_REACH)),
    };
    let (mut pos, mut wj) = (st.pos, st.wj);
    let unset = if st.prev_set {
        std::ptr::null_mut()
    } else {
        o0.wrapping_add(pos)
    };
    let mut fp = FastPos {
        ok: o0,
        ap: arr,
        unset,
        o0,
        a0: arr,
        wi0: wi,
        unset0: unset,
    };
    while wi < words_end && wj + WINDOW_ARRAY_REACH <= s.array.len() {
        let room_words = ((out.len() - pos) / 16).saturating_sub(1);
        let span = (words_end - wi).min(WINDOW).min(room_words);
        if span == 0 {
            break;
        }
        let bits = (ids_window(s.ids, wi) & ((1u64 << span) - 1)) | (1u64 << span);
        fp.o0 = o0.wrapping_add(pos);
        fp.a0 = s.array[wj..].as_ptr();
        fp.wi0 = wi;
        fp.unset0 = fp.unset;
        fp.ok = fp.o0;
        fp.ap = fp.a0;
        // SAFETY: the array reach is checked above; pos >= the segment's start (st.pos is,
        // and pos only grows) with 16 * (span + 1) <= out.len() - pos; the dictionary is
        // inside out and ends at or before the segment's start, and dict_len >= 512; ctx's
        // identifier block, word end and array limit are the strip's and the segment's;
        // fp.unset is null only if p is set (prev_set, or a code since); span <= WINDOW.
        let (k16, stopped) = unsafe { dict_window_fast(&mut fp, &ctx, bits) };
        let k = k16 - 16;
        let op = fp.ok.wrapping_add(k);
        if op > ctx.olim {
            // Given back: the last window's start (the windows before it ended inside the
            // segment, checked by next_window).
            fp.unset = fp.unset0;
            pos = fp.o0 as usize - o0 as usize;
            wj = fp.a0 as usize - arr as usize;
            wi = fp.wi0;
            break;
        }
        pos = op as usize - o0 as usize;
        wj = fp.ap.wrapping_add(k) as usize - arr as usize;
        wi = fp.wi0 + k;
        if stopped {
            break;
        }
    }
    *st = SegState {
        pos,
        wj,
        prev_set: o0.wrapping_add(pos) != fp.unset,
    };
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
    // FastCtx::thr: dict_len >= 512, so no entry wraps.
    let thr: [usize; 17] = std::array::from_fn(|len1| match len1 {
        1..=15 => dict_len - len1,
        _ => 0,
    });
    let mut wi = c.i;
    while wi < words_end {
        // As many windows as run fast, then (if words are left) one checked window: the one
        // the fast loop stopped in, or one near the array's or the strip's end.
        wi = dict_fast_windows(s, out, &mut st, wi, words_end, seg, &thr);
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
    let (segs, n) = strip_segments(out.len(), r.segment_bytes);
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
    let (segs, n) = strip_segments(out.len(), r.segment_bytes);
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

#[cfg(test)]
mod tests {
    //! The fast gear's window-level paths that the integration tests (`tests/lll.rs`) reach only
    //! by chance: a code that passes its segment's end inside a fast window (the window is
    //! given back whole to the checked loop, also when a later step of it stops), with the
    //! room-cut windows near a strip's end, and long codes there.

    use super::*;
    use crate::lll::{encode, MAX_SEGMENT_BYTES};

    type W = (bool, Vec<u8>);

    fn sc(b: u8) -> W {
        (false, vec![b])
    }

    fn two(t: u16, l: u16) -> W {
        (true, (t | l << 12).to_le_bytes().to_vec())
    }

    /// A one-strip payload of `n` bytes from hand-picked words per segment (§2, §4).
    fn build(n: usize, segments: &[Vec<W>]) -> Vec<u8> {
        let mut p = Vec::new();
        for w in [
            MAX_SEGMENT_BYTES as u32,
            8,
            n as u32,
            1,
            (HEADER_BYTES + 4) as u32,
        ] {
            p.extend_from_slice(&w.to_le_bytes());
        }
        let words: Vec<&W> = segments.iter().flatten().collect();
        for s in segments {
            p.extend_from_slice(&(s.len() as u16).to_le_bytes());
        }
        let mut ids = vec![0u8; words.len().div_ceil(8)];
        for (i, w) in words.iter().enumerate() {
            ids[i / 8] |= u8::from(w.0) << (i % 8);
        }
        p.extend_from_slice(&ids);
        for w in &words {
            p.extend_from_slice(&w.1);
        }
        p
    }

    /// The three decoders agree (bytes, or the error with every field); returns the outcome.
    fn agree(p: &[u8], n: usize) -> std::result::Result<Vec<u8>, String> {
        let run = |f: fn(&[u8], &mut [u8]) -> Result<()>, poison: u8| {
            let mut out = vec![poison; n];
            f(p, &mut out).map(|()| out).map_err(|e| format!("{e:?}"))
        };
        let simple = run(decode_simple, 0x3C);
        assert_eq!(run(decode_reference, 0x5A), simple, "reference vs oracle");
        assert_eq!(run(decode, 0xA5), simple, "fast vs oracle");
        simple
    }

    /// A full strip of `b'a'`, every segment SC words except segment `j`: `lead` 2-byte SI
    /// words (which shift the words against the 56-word windows and leave room in the word
    /// count for the tail), SC words to `left` bytes
    /// before the segment's end, `tail`, then `after` SC words (more words of the same
    /// segment, so the window goes on past the tail).
    fn strip_case(j: usize, lead: usize, left: usize, tail: &[W], after: usize) -> Vec<u8> {
        let (segs, n) = strip_segments(STRIP_BYTES, MAX_SEGMENT_BYTES);
        let mut words = Vec::new();
        for (x, seg) in segs[..n].iter().enumerate() {
            let len = seg.end - seg.start;
            if x == 0 {
                words.push(vec![(true, vec![b'a', 255]), (true, vec![b'a', 253])]);
            } else if x != j {
                words.push((0..len).map(|_| sc(b'a')).collect());
            } else {
                let mut w: Vec<W> = (0..lead).map(|_| two(0, 0)).collect();
                w.extend((2 * lead..len - left).map(|_| sc(b'a')));
                w.extend_from_slice(tail);
                w.extend((0..after).map(|_| sc(b'a')));
                words.push(w);
            }
        }
        build(STRIP_BYTES, &words)
    }

    #[test]
    fn codes_past_a_segment_end_inside_fast_windows() {
        // Each tail passes the segment's end at its first code (with `left` bytes left), and
        // then meets a word the fast gear stops at (a dictionary overrun, a long code, a run
        // after a run), so the first error is the overrun, "code length", in all decoders.
        let tails: [(&[W], usize); 6] = [
            (&[sc(b'a'), sc(b'a'), two(4090, 14)], 1),
            (&[two(0, 14), sc(b'a'), two(4090, 14)], 15),
            (&[two(0, 14), sc(b'a'), two(0, 15), sc(0)], 9),
            (&[sc(b'a'), two(4095, 14), two(4095, 0)], 12),
            (&[two(0, 15), sc(40)], 57),
            (&[two(4095, 15), sc(200)], 100),
        ];
        // Segment 4 (bytes 4096..8192: far from the array's and the strip's ends) and the
        // strip's last segment (the room-cut windows, up to the output's end).
        for j in [4, 10] {
            for lead in (200..208).chain(250..260) {
                for (tail, left) in &tails {
                    for after in [0, 3, 40, 150] {
                        let p = strip_case(j, lead, *left, tail, after);
                        let e = agree(&p, STRIP_BYTES).expect_err("must fail");
                        assert!(
                            e.contains("\"code length\""),
                            "j {j}, lead {lead}, {tail:?}, after {after}: {e}"
                        );
                    }
                }
            }
        }
        // A long code ending 1..15 bytes before the strip's end, its 16-byte pieces past the
        // output's end, with words after it (too many: "code length" at the first that does
        // not fit) so that the array reach lets the fast gear meet it.
        for lead in 200..260 {
            for extra in [1, 7, 15] {
                for tail in [
                    [sc(b'a'), two(0, 15), sc(100)],
                    [sc(b'a'), two(4095, 15), sc(100)],
                ] {
                    let p = strip_case(10, lead, 1 + 118 + extra, &tail, 150);
                    let e = agree(&p, STRIP_BYTES).expect_err("must fail");
                    assert!(e.contains("\"code length\""), "lead {lead}, {tail:?}: {e}");
                }
            }
        }
        // The same segments, valid: long codes and runs up to the last byte, and long codes
        // ending 1..15 bytes before it (near the strip's end, their 16-byte pieces would pass
        // the output's end: the fast gear leaves them to the checked loop).
        for j in [4, 10] {
            for lead in [0, 5, 55, 200] {
                let tail = [sc(b'a'), two(4095, 14), two(0, 15), sc(40), sc(b'a')];
                let p = strip_case(j, lead, 1 + 16 + 58 + 1, &tail, 0);
                assert_eq!(agree(&p, STRIP_BYTES), Ok(vec![b'a'; STRIP_BYTES]));
            }
            for lead in 200..260 {
                for extra in [1, 7, 15] {
                    for c in [0u8, 20, 100] {
                        let long = usize::from(c) + 18;
                        let p = strip_case(j, lead, long + extra, &[two(0, 15), sc(c)], extra);
                        assert_eq!(agree(&p, STRIP_BYTES), Ok(vec![b'a'; STRIP_BYTES]));
                        let tail = [sc(b'a'), two(4095, 15), sc(c)];
                        let p = strip_case(j, lead, 1 + long + extra, &tail, extra);
                        assert_eq!(agree(&p, STRIP_BYTES), Ok(vec![b'a'; STRIP_BYTES]));
                    }
                }
            }
        }
    }

    /// LIs in the middle of a fast window, which the window decodes in place and goes on
    /// after: valid ones (their pieces, the SC run after the c word, an LRL next), and each
    /// check that sends one to the window-ending path (the c word a 2-byte word, a source past
    /// the dictionary), a code past the segment's end with words after it, and LIs too close to
    /// the strip's end for a whole window's room after it).
    #[test]
    fn long_codes_inside_fast_windows() {
        for j in [4, 10] {
            for lead in (0..8).chain(200..216) {
                // Valid: LIs of 18, 32, 33 and 273 bytes, each followed by SC words and an
                // SI, then an LRL (p set by the SI), then 100 SC words.
                for c in [0u8, 14, 15, 255] {
                    let len = usize::from(c) + LONG_MIN;
                    let tail = [
                        two(0, 15),
                        sc(c),
                        sc(b'a'),
                        sc(b'a'),
                        two(7, 3),
                        two(RUN_T, 15),
                        sc(0),
                    ];
                    let p = strip_case(j, lead, len + 2 + 5 + 18 + 100, &tail, 100);
                    assert_eq!(agree(&p, STRIP_BYTES), Ok(vec![b'a'; STRIP_BYTES]));
                }
                let cases: [(&[W], usize, &str); 3] = [
                    // t + len = 4098 > the dictionary's 4096 bytes (j = 4: a whole one).
                    (
                        &[two(4080, 15), sc(0), sc(b'a')],
                        19,
                        "SI/LI offset t + length",
                    ),
                    // The c word is a 2-byte word.
                    (
                        &[two(0, 15), two(0, 0)],
                        20,
                        "long code's c word identifier",
                    ),
                    // 40 bytes where 10 are left, then more words.
                    (&[two(0, 15), sc(22)], 10, "code length"),
                ];
                for (tail, left, field) in cases {
                    // Words after the tail, as many as the word count allows.
                    let p = strip_case(j, lead, left, tail, left - tail.len());
                    let e = agree(&p, STRIP_BYTES).expect_err("must fail");
                    assert!(
                        e.contains(&format!("\"{field}\"")),
                        "j {j}, lead {lead}: {e}"
                    );
                }
            }
        }
        // The strip's last segment holds words to 1..80 bytes before the strip's end after
        // an LI, so the LI itself may lie within a window's room of the end (the window ends
        // there and the next ones are the small room-cut windows).
        for before in [1, 16, 17, 40, 80, 300, 900, 1000] {
            let tail = [two(0, 15), sc(30)];
            let p = strip_case(10, 3, 48 + before, &tail, before);
            assert_eq!(
                agree(&p, STRIP_BYTES),
                Ok(vec![b'a'; STRIP_BYTES]),
                "{before}"
            );
        }
    }

    /// Every 2-byte word's length field in the last words of a segment (where a longer code
    /// passes the segment's end inside a fast window), set to each value, with and without a
    /// second edit further on: all decoders agree.
    #[test]
    fn length_edits_near_segment_ends_agree() {
        // Photo-like bytes (SC and short SI), then text (long SI / LI), two strips and a bit.
        let n = 2 * STRIP_BYTES + 3000;
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let data: Vec<u8> = (0..n)
            .map(|i| {
                if i < STRIP_BYTES + 9000 {
                    ((i % 509) / 3 + (i / 509) / 2) as u8 ^ (next() as u8 & 3)
                } else {
                    b"the quick brown fox jumps over the lazy dog "[(i * 7 + (i / 300)) % 44]
                }
            })
            .collect();
        let mut p = Vec::new();
        encode(&data, &mut p).expect("encodes");
        assert_eq!(agree(&p, n), Ok(data.clone()));
        let ranges = parse_directory(&p, n).expect("directory");
        let mut cases = 0;
        for (k, r) in ranges.iter().enumerate() {
            assert_eq!(r.kind, StripKind::Coded);
            let len = (n - k * STRIP_BYTES).min(STRIP_BYTES);
            let (segs, count) = strip_segments(len, r.segment_bytes);
            let s = parse_strip(&p, *r, &segs[..count]).expect("strip");
            let id = |i: usize| (s.ids[i / 8] >> (i % 8)) & 1 == 1;
            // Word i's array byte, by §4's prefix sum.
            let (mut i, mut j) = (0usize, 0usize);
            for (x, _) in segs[..count].iter().enumerate() {
                let end = i + s.word_counts[x] as usize;
                while i < end {
                    let two_byte = id(i);
                    if two_byte && end - i <= 70 && x > 0 {
                        let at = s.array_at + j + 1;
                        for l in [0u8, 7, 13, 14, 15] {
                            for second in [None, Some(at + 9), Some(at + 40)] {
                                let mut q = p.clone();
                                q[at] = (q[at] & 0x0F) | l << 4;
                                if let Some(b) = second.filter(|&b| b < q.len()) {
                                    q[b] ^= 0xF0;
                                }
                                let _ = agree(&q, n);
                                cases += 1;
                            }
                        }
                    }
                    j += 1 + usize::from(two_byte);
                    i += 1;
                }
            }
        }
        assert!(cases > 500, "{cases} cases");
    }
}
