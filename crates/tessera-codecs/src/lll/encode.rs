//! LLL encoder (`docs/format/lll.md`): one rayon task per strip, an optimal parse per segment.
//!
//! Per dictionary segment, the parse needs, for every position, the longest dictionary match as
//! the hash chain over the dictionary's 2-byte prefixes defines it (at most [`MAX_CANDIDATES`]
//! chain links, the first link with the longest match, stopping at the longest length a code can
//! use; `lll.md` §9). Any shorter length of that match is also a valid copy, so the longest one
//! per position is all the parse needs. [`Matcher`] finds exactly that match without walking the
//! chain: the links that can beat the chain's head are bucketed by a 3-byte (or, inside a known
//! long match, 8-byte) prefix hash, and are compared 8 bytes at a time only when their byte at
//! the best length so far matches. A backward dynamic program then picks, over the whole
//! segment, the word sequence with the fewest bits (8 per word-array byte plus 1 identifier bit
//! per word, plus, under [`Parse::FastDecode`], a charge per 2-byte word), in two states: the previous character set (after SC, SI, LI) or unset (at the
//! segment start and after SRL / LRL: `lll.md` §5). Each family of copy or run lengths is one
//! range-minimum query ([`MinTable`]), not a scan of up to 256 lengths; ties go the scan's way
//! (the first cheapest), so the output is the same byte for byte as that of the chain walk and
//! the scan (kept in the tests as the reference). The non-dictionary subsegment gets a program
//! over SC and RL. Buffers and tables are reused across the segments and strips of a rayon job.
//! A strip whose coding is not shorter than its input is stored instead (`lll.md` §4a: its
//! input bytes, bit 31 of its `strip_starts` entry set), so no strip grows. A strip of at least
//! 2 bytes that are all one byte is a fill strip (§4b, format 1.2: that byte, bit 30 set): the
//! words would spend at least 3 bytes per 273 on it, and a reader fills it without parsing.

use rayon::prelude::*;
use tessera_format::{Error, Result, MAX_CHUNK_VALUES};

use super::{
    strip_segments, valid_segment_bytes, CodeCounts, EncodeOptions, Parse, Seg, DICTIONARY_BYTES,
    FILL_STRIP, HEADER_BYTES, LONG_L, LONG_MAX, LONG_MIN, MAX_SEGMENT_BYTES, RL_MAX, RL_MIN, RUN_T,
    SEGMENT_SIZES, SHORT_MAX, SHORT_MIN, STORED_STRIP, STRIP_BYTES,
};

/// Chain links followed per position when looking for the longest dictionary match.
pub const MAX_CANDIDATES: usize = 64;

const NONE: u32 = u32::MAX;
/// Costs in bits (§4): word-array bytes times 8 plus one identifier bit per word.
const COST_SC: u32 = 9;
const COST_SHORT: u32 = 17;
const COST_LONG: u32 = 26;

/// What the parse charges for each kind of word: a [`Parse`]'s bits per 2-byte word on top of
/// the bits the word takes (`lll.md` §9). SC words are never charged more: they are the words a
/// decoder copies in blocks.
#[derive(Clone, Copy, Debug)]
struct Costs {
    /// SC (1-byte word).
    sc: u32,
    /// A short code: RL, SI or SRL (one 2-byte word).
    short: u32,
    /// A long code: LI or LRL (a 2-byte word and its c word).
    long: u32,
}

impl Costs {
    fn of(parse: Parse) -> Self {
        let extra = parse.code_bits();
        Costs {
            sc: COST_SC,
            short: COST_SHORT + extra,
            long: COST_LONG + extra,
        }
    }
}

/// Largest payload [`encode`] can write for `n` input bytes: a header, the directory and at most
/// the input bytes themselves (a strip is stored when its coding is not shorter, §4a).
pub fn max_encoded_len(n: usize) -> usize {
    HEADER_BYTES + 4 * n.div_ceil(STRIP_BYTES) + n
}

/// Encodes `data` into `out` (cleared first) with [`EncodeOptions::default`] (segments of
/// [`DEFAULT_SEGMENT_BYTES`](super::DEFAULT_SEGMENT_BYTES), [`Parse::Smallest`]) and returns how
/// many words of each code type it wrote. Fails only if `data` is longer than
/// `MAX_CHUNK_VALUES` bytes.
pub fn encode(data: &[u8], out: &mut Vec<u8>) -> Result<CodeCounts> {
    encode_with(data, out, &EncodeOptions::default())
}

/// [`encode`] with segments of `segment_bytes`, one of [`SEGMENT_SIZES`] (4096 writes a payload
/// that every LLL decoder since format 1 reads; smaller ones need format 1.3). Fails on any
/// other size, or if `data` is longer than `MAX_CHUNK_VALUES` bytes.
pub fn encode_with_segment_bytes(
    data: &[u8],
    out: &mut Vec<u8>,
    segment_bytes: usize,
) -> Result<CodeCounts> {
    let opts = EncodeOptions {
        segment_bytes,
        parse: Parse::Smallest,
    };
    encode_with(data, out, &opts)
}

/// [`encode`] with `opts`: the segment size (one of [`SEGMENT_SIZES`]) and what the parse
/// minimizes ([`Parse`]). Fails on any other segment size, or if `data` is longer than
/// `MAX_CHUNK_VALUES` bytes.
pub fn encode_with(data: &[u8], out: &mut Vec<u8>, opts: &EncodeOptions) -> Result<CodeCounts> {
    let EncodeOptions {
        segment_bytes,
        parse,
    } = *opts;
    let costs = Costs::of(parse);
    if !valid_segment_bytes(segment_bytes) {
        return Err(Error::InvalidArgument(format!(
            "LLL segment_bytes {segment_bytes} is not one of {SEGMENT_SIZES:?}"
        )));
    }
    if data.len() > MAX_CHUNK_VALUES as usize {
        return Err(Error::InvalidArgument(format!(
            "LLL chunk of {} bytes exceeds {MAX_CHUNK_VALUES}",
            data.len()
        )));
    }
    // One scratch (match tables, dynamic-program buffers) per rayon job, reused by its strips.
    let strips: Vec<(Coding, CodeCounts)> = data
        .par_chunks(STRIP_BYTES)
        .map_init(Scratch::new, |scratch, strip| {
            encode_strip(strip, segment_bytes, costs, scratch)
        })
        .collect();
    let strip_bytes = |k: usize| -> &[u8] {
        match &strips[k].0 {
            Coding::Coded(coded) => coded,
            Coding::Stored => &data[k * STRIP_BYTES..((k + 1) * STRIP_BYTES).min(data.len())],
            Coding::Fill => &data[k * STRIP_BYTES..k * STRIP_BYTES + 1],
        }
    };
    out.clear();
    let dir_bytes = 4 * strips.len();
    let body: usize = (0..strips.len()).map(|k| strip_bytes(k).len()).sum();
    out.reserve(HEADER_BYTES + dir_bytes + body);
    for w in [
        segment_bytes as u32,
        (STRIP_BYTES / segment_bytes) as u32,
        data.len() as u32,
        strips.len() as u32,
    ] {
        out.extend_from_slice(&w.to_le_bytes());
    }
    let mut at = HEADER_BYTES + dir_bytes;
    for (k, (coded, _)) in strips.iter().enumerate() {
        // Offsets stay below 2^25 (at most 16 + 2048 + 2^24 bytes), clear of the kind bits.
        let flag = match coded {
            Coding::Coded(_) => 0,
            Coding::Stored => STORED_STRIP,
            Coding::Fill => FILL_STRIP,
        };
        out.extend_from_slice(&(at as u32 | flag).to_le_bytes());
        at += strip_bytes(k).len();
    }
    let mut counts = CodeCounts::default();
    for (k, (_, c)) in strips.iter().enumerate() {
        out.extend_from_slice(strip_bytes(k));
        counts.add(c);
    }
    Ok(counts)
}

/// How one strip is written (§2).
#[derive(Debug, PartialEq, Eq)]
enum Coding {
    /// Word counts, identifier bits, word array (§4).
    Coded(Vec<u8>),
    /// The input bytes (§4a).
    Stored,
    /// The strip's first byte, which all its bytes equal (§4b).
    Fill,
}

/// One strip: a fill strip when it is at least 2 copies of one byte (§4b); else word counts,
/// identifier bits and word array (§4), or stored when that is not shorter than the strip
/// (§4a). The counts hold only `fill = 1` or `stored = 1` for those.
fn encode_strip(
    strip: &[u8],
    segment_bytes: usize,
    costs: Costs,
    scratch: &mut Scratch,
) -> (Coding, CodeCounts) {
    code_strip(strip, segment_bytes, costs, |seg, w, counts| {
        encode_dictionary(strip, seg, costs, scratch, w, counts)
    })
}

/// [`encode_strip`] with `dictionary` coding each dictionary segment (a parameter so that the
/// tests can run the reference parse through the same strip assembly).
fn code_strip(
    strip: &[u8],
    segment_bytes: usize,
    costs: Costs,
    mut dictionary: impl FnMut(&Seg, &mut Words, &mut CodeCounts),
) -> (Coding, CodeCounts) {
    if strip.len() >= 2 && strip.iter().all(|&b| b == strip[0]) {
        let fill = CodeCounts {
            fill: 1,
            ..CodeCounts::default()
        };
        return (Coding::Fill, fill);
    }
    let (segs, n) = strip_segments(strip.len(), segment_bytes);
    let mut counts = CodeCounts::default();
    let mut w = Words::default();
    let mut word_counts = Vec::with_capacity(n);
    for seg in &segs[..n] {
        let before = w.count;
        if seg.dictionary {
            dictionary(seg, &mut w, &mut counts);
        } else {
            encode_plain(&strip[seg.start..seg.end], costs, &mut w, &mut counts);
        }
        word_counts.push((w.count - before) as u16);
    }
    let mut out = Vec::with_capacity(2 * n + w.ids.len() + w.array.len());
    for c in word_counts {
        out.extend_from_slice(&c.to_le_bytes());
    }
    out.extend_from_slice(&w.ids);
    out.extend_from_slice(&w.array);
    if out.len() >= strip.len() {
        let stored = CodeCounts {
            stored: 1,
            ..CodeCounts::default()
        };
        return (Coding::Stored, stored);
    }
    (Coding::Coded(out), counts)
}

/// Identifier bits (LSB first, §4) and the word array of a strip under construction.
#[derive(Default)]
struct Words {
    ids: Vec<u8>,
    array: Vec<u8>,
    count: usize,
}

impl Words {
    fn push(&mut self, two_bytes: bool, bytes: &[u8]) {
        if self.count % 8 == 0 {
            self.ids.push(0);
        }
        if two_bytes {
            *self.ids.last_mut().expect("pushed above") |= 1 << (self.count % 8);
        }
        self.count += 1;
        self.array.extend_from_slice(bytes);
    }
    /// A dictionary word `t | l << 12` (§5), little-endian.
    fn dict_word(&mut self, t: u16, l: u16) {
        self.push(true, &(t | (l << 12)).to_le_bytes());
    }
}

/// Non-dictionary subsegment (§5): SC and RL.
fn encode_plain(d: &[u8], costs: Costs, w: &mut Words, counts: &mut CodeCounts) {
    let n = d.len();
    let mut cost = vec![0u32; n + 1];
    let mut take = vec![1usize; n + 1];
    let mut run = 0usize; // bytes equal to d[i] from i on
    for i in (0..n).rev() {
        run = if i + 1 < n && d[i + 1] == d[i] {
            run + 1
        } else {
            1
        };
        let mut best = costs.sc + cost[i + 1];
        let mut len = 1;
        for k in RL_MIN..=run.min(RL_MAX) {
            let c = costs.short + cost[i + k];
            if c < best {
                best = c;
                len = k;
            }
        }
        cost[i] = best;
        take[i] = len;
    }
    let mut i = 0;
    while i < n {
        let k = take[i];
        if k == 1 {
            w.push(false, &[d[i]]);
            counts.sc += 1;
        } else {
            w.push(true, &[d[i], (k - RL_MIN) as u8]);
            counts.rl += 1;
        }
        i += k;
    }
}

/// Bits of the prefix hashes of [`Matcher`].
const HASH_BITS: u32 = 13;
/// Prefix length of [`Matcher`]'s second bucketing, for positions known to match at least this.
const LONG_KEY: usize = 8;

/// Per-strip scratch, reused by every dictionary segment of the strips of one rayon job, so a
/// segment allocates nothing.
struct Scratch {
    m: Matcher,
    /// Per position, the match `(t, len)` of [`Matcher::longest`].
    matches: Vec<(u16, u16)>,
    /// Per position, the parse's step with the previous character set / unset.
    step_set: Vec<u16>,
    step_unset: Vec<u16>,
    min_set: MinTable,
    min_unset: MinTable,
}

impl Scratch {
    fn new() -> Self {
        Scratch {
            m: Matcher::new(),
            matches: Vec::with_capacity(MAX_SEGMENT_BYTES),
            step_set: Vec::with_capacity(MAX_SEGMENT_BYTES),
            step_unset: Vec::with_capacity(MAX_SEGMENT_BYTES),
            min_set: MinTable::new(),
            min_unset: MinTable::new(),
        }
    }
}

/// The 2-byte key of `a, b` (the hash chains of `lll.md` §9).
fn key2(a: u8, b: u8) -> usize {
    usize::from(u16::from_le_bytes([a, b]))
}

/// A [`HASH_BITS`]-bit hash of `s[..3]`.
fn hash3(s: &[u8]) -> usize {
    let v = u32::from(s[0]) | u32::from(s[1]) << 8 | u32::from(s[2]) << 16;
    (v.wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize
}

/// A [`HASH_BITS`]-bit hash of `s[..LONG_KEY]`.
fn hash8(s: &[u8]) -> usize {
    let v = u64::from_le_bytes(s[..LONG_KEY].try_into().expect("8 bytes"));
    (v.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - HASH_BITS)) as usize
}

/// Offsets bucketed by a hash of their prefix, each bucket a contiguous list, highest first.
struct Buckets {
    /// Bucket `h` is `cand[start[h]..start[h + 1]]`.
    start: Vec<u16>,
    cand: Vec<u16>,
    /// Per offset, its hash (computed once for both passes of the sort).
    hash: Vec<u16>,
}

impl Buckets {
    fn new() -> Self {
        Buckets {
            start: vec![0; (1 << HASH_BITS) + 1],
            cand: vec![0; DICTIONARY_BYTES],
            hash: vec![0; DICTIONARY_BYTES],
        }
    }

    /// Buckets the offsets `p < end` with `keep[p]` by `hash(&dict[p..])`.
    fn build(&mut self, dict: &[u8], keep: &[bool], end: usize, hash: impl Fn(&[u8]) -> usize) {
        // Counting sort: sizes, their running sums (`start[h]`: the end of bucket h, and the
        // last entry the total), then each offset, lowest first, placed just before its
        // bucket's end, which leaves `start[h]` at the bucket's beginning.
        self.start.fill(0);
        for (p, &k) in keep[..end].iter().enumerate() {
            let h = hash(&dict[p..]);
            self.hash[p] = h as u16;
            self.start[h] += u16::from(k);
        }
        for h in 1..self.start.len() {
            self.start[h] += self.start[h - 1];
        }
        for (p, _) in keep[..end].iter().enumerate().filter(|(_, &k)| k) {
            let h = usize::from(self.hash[p]);
            self.start[h] -= 1;
            self.cand[usize::from(self.start[h])] = p as u16;
        }
    }

    fn list(&self, h: usize) -> &[u16] {
        &self.cand[usize::from(self.start[h])..usize::from(self.start[h + 1])]
    }
}

/// Length of the common prefix of `a` and `b`, 8 bytes per comparison.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_le_bytes(a[i..i + 8].try_into().expect("8 bytes"))
            ^ u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if x != 0 {
            return i + x.trailing_zeros() as usize / 8;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// Bits of a dictionary offset, a 2-byte key's `seen` count and its generation in
/// [`Matcher::keys`].
const HEAD_BITS: u32 = 12;
const SEEN_BITS: u32 = 7;
const GEN_SHIFT: u32 = HEAD_BITS + SEEN_BITS;
const _: () = assert!(DICTIONARY_BYTES <= 1 << HEAD_BITS && MAX_CANDIDATES < 1 << SEEN_BITS);

/// Finds the match `lll.md` §9 defines: of the first [`MAX_CANDIDATES`] links of the hash chain
/// of the position's 2-byte prefix (the dictionary's offsets with that prefix, highest first),
/// the first with the longest match, stopping at a match of the longest length a code can use.
///
/// It gets there without walking that chain. Every link matches at least 2 bytes, the first
/// (the highest offset with the prefix, `head2`) sets the best, and a later one replaces it only
/// if strictly longer. So the answer is `head2` with length 2 unless some link matches 3 bytes or
/// more; those links are exactly the offsets, among the first `MAX_CANDIDATES` of their 2-byte
/// key, that share the position's 3-byte prefix. These *eligible* offsets are kept bucketed by a
/// hash of their 3-byte prefix, each bucket a contiguous list, highest offset first: the links
/// in the chain's order (with hash collisions, which match fewer than 3 bytes and never win),
/// read without chasing pointers. Along a list, a link is compared in full only if its byte at
/// the best length so far matches, since otherwise it cannot be longer. Inside a match the next
/// position's answer is known to be at least one byte shorter (the same link plus one, if
/// eligible, matches that much): links that match less are skipped the same way, and from
/// [`LONG_KEY`] bytes on the answer is read from the eligible offsets bucketed by that longer
/// prefix, a shorter list in the same order.
struct Matcher {
    /// Per 2-byte key, `generation << GEN_SHIFT | seen << HEAD_BITS | head`: `head` the highest
    /// offset with the key, `seen` how many offsets with it indexing has met (it runs downward),
    /// up to `MAX_CANDIDATES` (an offset met while it is below is eligible). An entry of an
    /// older generation (dictionary) stands for "no offset", so no dictionary clears 2^16 keys.
    keys: Vec<u32>,
    generation: u32,
    /// Per offset, whether it is eligible.
    eligible: Vec<bool>,
    /// The eligible offsets by their 3-byte prefix.
    short: Buckets,
    /// The eligible offsets by their [`LONG_KEY`]-byte prefix, built on first use.
    long: Buckets,
    long_built: bool,
}

impl Matcher {
    fn new() -> Self {
        Matcher {
            keys: vec![0; 1 << 16],
            generation: 0,
            eligible: vec![false; DICTIONARY_BYTES],
            short: Buckets::new(),
            long: Buckets::new(),
            long_built: false,
        }
    }

    /// Indexes `dict` (at most a segment).
    fn index(&mut self, dict: &[u8]) {
        self.generation += 1;
        if self.generation == 1 << (32 - GEN_SHIFT) {
            self.keys.fill(0);
            self.generation = 1;
        }
        let gen = self.generation << GEN_SHIFT;
        let n = dict.len();
        self.long_built = false;
        for p in (0..n.saturating_sub(1)).rev() {
            let k = key2(dict[p], dict[p + 1]);
            let e = self.keys[k];
            let e = if e & !((1 << GEN_SHIFT) - 1) == gen {
                e
            } else {
                gen | p as u32
            };
            let seen = (e >> HEAD_BITS) & ((1 << SEEN_BITS) - 1);
            self.eligible[p] = (seen as usize) < MAX_CANDIDATES;
            self.keys[k] = if self.eligible[p] {
                e + (1 << HEAD_BITS)
            } else {
                e
            };
        }
        self.short
            .build(dict, &self.eligible, n.saturating_sub(2), hash3);
    }

    /// Builds the [`LONG_KEY`] buckets of `dict` unless built since [`Matcher::index`].
    fn index_long(&mut self, dict: &[u8]) {
        if !self.long_built {
            self.long_built = true;
            let end = dict.len().saturating_sub(LONG_KEY - 1);
            self.long.build(dict, &self.eligible, end, hash8);
        }
    }

    /// [`Matcher::longest`] at every position of `d`, into `out`, after indexing `dict`.
    fn matches(&mut self, dict: &[u8], d: &[u8], out: &mut Vec<(u16, u16)>) {
        self.index(dict);
        out.clear();
        // A match (t, len) at i gives len - 1 bytes at i + 1 from t + 1, a link there if
        // eligible and len - 1 >= 3 (the same 3-byte prefix).
        let mut at_least = 0;
        for i in 0..d.len() {
            if at_least >= LONG_KEY {
                self.index_long(dict);
            }
            let (t, len) = self.longest(dict, &d[i..], at_least);
            out.push((t, len));
            let (t, len) = (usize::from(t), usize::from(len));
            at_least = if len > 3 && self.eligible[t + 1] {
                len - 1
            } else {
                0
            };
        }
    }

    /// The highest offset with 2-byte key `k`, `NONE` for none.
    fn head2(&self, k: usize) -> u32 {
        let e = self.keys[k];
        if e >> GEN_SHIFT == self.generation {
            e & ((1 << HEAD_BITS) - 1)
        } else {
            NONE
        }
    }

    /// Longest `(t, len)` with `dict[t..t + len] == s[..len]`, `len <= LONG_MAX`, as above.
    /// `at_least`: a length some eligible offset is known to match (0 if none known), so links
    /// that match less are not compared in full; from [`LONG_KEY`] on, the long buckets must be
    /// built.
    fn longest(&self, dict: &[u8], s: &[u8], at_least: usize) -> (u16, u16) {
        let cap = s.len().min(LONG_MAX);
        if cap < SHORT_MIN {
            return (0, 0);
        }
        let h2 = self.head2(key2(s[0], s[1]));
        if h2 == NONE {
            return (0, 0);
        }
        let mut best = (h2 as u16, SHORT_MIN);
        if cap == SHORT_MIN {
            return (best.0, SHORT_MIN as u16);
        }
        // A link is the answer only if it matches more than `best.1` and at least `at_least`
        // bytes: more than `check`, so its byte at `check` must match.
        let mut check = best.1.max(at_least.saturating_sub(1));
        // The answer matches at least `at_least` bytes: with that many, it shares the longer
        // prefix, and the longer key's bucket (a subset, same order) is shorter to read.
        let list = if at_least >= LONG_KEY && cap >= LONG_KEY {
            self.long.list(hash8(s))
        } else {
            self.short.list(hash3(s))
        };
        for &c in list {
            let t = usize::from(c);
            let lim = cap.min(dict.len() - t);
            if lim > check && dict[t + check] == s[check] {
                let len = common_prefix(&dict[t..t + lim], &s[..lim]);
                if len > best.1 {
                    best = (c, len);
                    if len == cap {
                        break;
                    }
                    check = check.max(len);
                }
            }
        }
        (best.0, best.1 as u16)
    }
}

/// Positions a [`MinTable`] keeps: a query at `i` reads positions `i + 1 ..= i + LONG_MAX`.
const RING: usize = 512;
/// Levels of a [`MinTable`]: the longest range it is asked for is `LONG_MAX - LONG_MIN + 1 = 256`.
const LEVELS: usize = 9;
/// Levels enough for the short ranges (at most `SHORT_MAX - SHORT_MIN + 1 = 15` positions).
const SHORT_LEVELS: usize = 4;
/// Bits of a position in a packed `cost << POS_BITS | position` value.
const POS_BITS: u32 = 13;
const POS_MASK: u32 = (1 << POS_BITS) - 1;

const _: () = assert!(LONG_MAX - LONG_MIN + 1 == 1 << (LEVELS - 1));
const _: () = assert!(SHORT_MAX - SHORT_MIN + 1 < 1 << SHORT_LEVELS);
// The ring holds every position a query or a push reads (at most i + LONG_MAX, resp. q + 128).
const _: () = assert!(LONG_MAX < RING && RING.is_power_of_two());
const _: () = assert!(MAX_SEGMENT_BYTES < 1 << POS_BITS);
// Costs stay below 9 bits a byte, so a packed value fits a u32.
const _: () = assert!((COST_SC as usize * MAX_SEGMENT_BYTES) << POS_BITS < u32::MAX as usize);

/// Range minimum over packed `cost << POS_BITS | position` values, filled from the segment's end
/// downward: a sparse table (level `j` at `q`: the minimum of positions `q .. q + 2^j`) kept as a
/// ring of the last [`RING`] positions. The minimum of packed values is the lowest cost at the
/// lowest position among equals: the first of the scan the reference parse does.
struct MinTable {
    lv: Box<[[u32; RING]; LEVELS]>,
    /// Levels kept up to date this segment: all, or [`SHORT_LEVELS`] when it asks no long range.
    levels: usize,
}

impl MinTable {
    fn new() -> Self {
        MinTable {
            lv: Box::new([[u32::MAX; RING]; LEVELS]),
            levels: LEVELS,
        }
    }

    /// Starts a segment that asks for ranges of at most `2^(levels - 1)` positions. Every slot
    /// is emptied (`u32::MAX`), so a block that runs past the segment's end reads "none" there:
    /// the slot of such a position `p > end` is that of `p - RING`, not pushed yet.
    fn reset(&mut self, levels: usize) {
        self.levels = levels;
        for l in &mut self.lv[..levels] {
            l.fill(u32::MAX);
        }
    }

    /// Adds position `q` with cost `cost`; positions `q + 1 ..` are in already.
    fn push(&mut self, q: usize, cost: u32) {
        let r = q % RING;
        let mut v = cost << POS_BITS | q as u32;
        self.lv[0][r] = v;
        for j in 1..self.levels {
            v = v.min(self.lv[j - 1][(q + (1 << (j - 1))) % RING]);
            self.lv[j][r] = v;
        }
    }

    /// `(cost, position)` of the minimum over positions `a ..= b`.
    fn min(&self, a: usize, b: usize) -> (u32, usize) {
        let j = (usize::BITS - 1 - (b + 1 - a).leading_zeros()) as usize;
        let v = self.lv[j][a % RING].min(self.lv[j][(b + 1 - (1 << j)) % RING]);
        (v >> POS_BITS, (v & POS_MASK) as usize)
    }
}

/// Marks a run in a step of the parse (else a copy, or SC for length 1).
const STEP_RUN: u16 = 1 << 15;

/// Dictionary segment (§5): SC, SI, LI, SRL, LRL, fewest bits by a backward dynamic program.
///
/// At each position and state it picks the cheapest option, the first among equals in the order
/// SC, copies by length, runs by length. Each family of lengths (short copies, long copies, short
/// runs, long runs) is a range of next positions, so its first cheapest is one [`MinTable`]
/// query instead of a scan of up to 256 lengths; the families are then compared in that order,
/// a later one winning only if strictly cheaper, which is the scan's choice.
fn encode_dictionary(
    strip: &[u8],
    seg: &Seg,
    costs: Costs,
    scratch: &mut Scratch,
    w: &mut Words,
    counts: &mut CodeCounts,
) {
    let dict = &strip[seg.dict_start..seg.dict_end];
    let d = &strip[seg.start..seg.end];
    let n = d.len();
    let Scratch {
        m,
        matches,
        step_set,
        step_unset,
        min_set,
        min_unset,
    } = scratch;
    m.matches(dict, d, matches);
    // Long ranges come from a match or a run (LONG_MIN + 1 equal bytes) of at least LONG_MIN.
    let mut equal = 0;
    let long = matches.iter().any(|&(_, len)| usize::from(len) >= LONG_MIN)
        || d.windows(2).any(|p| {
            equal = if p[0] == p[1] { equal + 1 } else { 0 };
            equal >= LONG_MIN
        });
    let levels = if long { LEVELS } else { SHORT_LEVELS };
    // min_set holds cost_set[i] (fewest bits for d[i..] with the previous character set: it is
    // d[i - 1]) and min_unset cost_unset[i] (with it unset), for the positions after i. Copies
    // and SC lead to "set", runs to "unset". A step is a length, STEP_RUN set for runs; a copy's
    // offset is its position's match.
    min_set.reset(levels);
    min_unset.reset(levels);
    step_set.clear();
    step_set.resize(n, 1);
    step_unset.clear();
    step_unset.resize(n, 1);
    min_set.push(n, 0);
    min_unset.push(n, 0);
    let mut next_set = 0u32; // cost_set[i + 1]
    let mut run = 0usize; // bytes equal to d[i - 1] from i on
    for i in (0..n).rev() {
        let mut best = costs.sc + next_set;
        let mut step = 1;
        let len = usize::from(matches[i].1);
        if len >= SHORT_MIN {
            let (c, at) = min_set.min(i + SHORT_MIN, i + len.min(SHORT_MAX));
            if costs.short + c < best {
                best = costs.short + c;
                step = (at - i) as u16;
            }
            if len >= LONG_MIN {
                let (c, at) = min_set.min(i + LONG_MIN, i + len);
                if costs.long + c < best {
                    best = costs.long + c;
                    step = (at - i) as u16;
                }
            }
        }
        let unset = best;
        step_unset[i] = step;
        if i > 0 {
            run = if d[i] == d[i - 1] { run + 1 } else { 0 };
            let r = run.min(LONG_MAX);
            if r >= SHORT_MIN {
                let (c, at) = min_unset.min(i + SHORT_MIN, i + r.min(SHORT_MAX));
                if costs.short + c < best {
                    best = costs.short + c;
                    step = (at - i) as u16 | STEP_RUN;
                }
                if r >= LONG_MIN {
                    let (c, at) = min_unset.min(i + LONG_MIN, i + r);
                    if costs.long + c < best {
                        best = costs.long + c;
                        step = (at - i) as u16 | STEP_RUN;
                    }
                }
            }
        }
        step_set[i] = step;
        min_set.push(i, best);
        min_unset.push(i, unset);
        next_set = best;
    }
    let mut i = 0;
    let mut set = false;
    while i < n {
        let step = if set { step_set[i] } else { step_unset[i] };
        let k = usize::from(step & !STEP_RUN);
        if k == 1 {
            w.push(false, &[d[i]]);
            counts.sc += 1;
            set = true;
        } else {
            let run = step & STEP_RUN != 0;
            let t = if run { RUN_T } else { matches[i].0 };
            if k <= SHORT_MAX {
                w.dict_word(t, (k - SHORT_MIN) as u16);
            } else {
                w.dict_word(t, LONG_L);
                w.push(false, &[(k - LONG_MIN) as u8]);
            }
            match (run, k <= SHORT_MAX) {
                (false, true) => counts.si += 1,
                (false, false) => counts.li += 1,
                (true, true) => counts.srl += 1,
                (true, false) => counts.lrl += 1,
            }
            set = !run;
        }
        i += k;
    }
}

#[cfg(test)]
mod tests {
    //! The encoder against the straightforward one it replaced (kept here as the reference): a
    //! chain walk per position and a dynamic program that scans every length. Output must be
    //! byte-identical on every input.

    use super::*;
    use crate::lll::DEFAULT_SEGMENT_BYTES;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// The reference hash chains over a dictionary's 2-byte prefixes.
    struct RefMatcher {
        head: Vec<u32>,
        prev: Vec<u32>,
    }

    impl RefMatcher {
        fn new() -> Self {
            RefMatcher {
                head: vec![NONE; 1 << 16],
                prev: vec![NONE; DICTIONARY_BYTES],
            }
        }

        fn index(&mut self, dict: &[u8]) {
            self.head.fill(NONE);
            for p in 0..dict.len().saturating_sub(1) {
                let key = u16::from_le_bytes([dict[p], dict[p + 1]]) as usize;
                self.prev[p] = self.head[key];
                self.head[key] = p as u32;
            }
        }

        fn longest(&self, dict: &[u8], s: &[u8]) -> (u16, usize) {
            let cap = s.len().min(LONG_MAX);
            if cap < SHORT_MIN {
                return (0, 0);
            }
            let mut p = self.head[u16::from_le_bytes([s[0], s[1]]) as usize];
            let mut best = (0u16, 0usize);
            for _ in 0..MAX_CANDIDATES {
                if p == NONE {
                    break;
                }
                let t = p as usize;
                let lim = cap.min(dict.len() - t);
                let len = dict[t..t + lim]
                    .iter()
                    .zip(s)
                    .take_while(|(a, b)| a == b)
                    .count();
                if len > best.1 {
                    best = (t as u16, len);
                    if len == cap {
                        break;
                    }
                }
                p = self.prev[t];
            }
            best
        }
    }

    /// One step of a parse: what to emit at a position and where it leads.
    #[derive(Clone, Copy)]
    enum Step {
        Sc,
        Copy(u16, usize),
        Run(usize),
    }

    /// The reference dynamic program (every length scanned).
    fn ref_dictionary(
        strip: &[u8],
        seg: &Seg,
        costs: Costs,
        m: &mut RefMatcher,
        w: &mut Words,
        counts: &mut CodeCounts,
    ) {
        let dict = &strip[seg.dict_start..seg.dict_end];
        let d = &strip[seg.start..seg.end];
        let n = d.len();
        m.index(dict);
        let matches: Vec<(u16, usize)> = (0..n).map(|i| m.longest(dict, &d[i..])).collect();
        let mut cost_set = vec![0u32; n + 1];
        let mut cost_unset = vec![0u32; n + 1];
        let mut step_set = vec![Step::Sc; n];
        let mut step_unset = vec![Step::Sc; n];
        let mut run = 0usize;
        for i in (0..n).rev() {
            let mut best = costs.sc + cost_set[i + 1];
            let mut step = Step::Sc;
            let (t, len) = matches[i];
            for k in SHORT_MIN..=len.min(SHORT_MAX) {
                let c = costs.short + cost_set[i + k];
                if c < best {
                    best = c;
                    step = Step::Copy(t, k);
                }
            }
            for k in LONG_MIN..=len.min(LONG_MAX) {
                let c = costs.long + cost_set[i + k];
                if c < best {
                    best = c;
                    step = Step::Copy(t, k);
                }
            }
            cost_unset[i] = best;
            step_unset[i] = step;
            if i > 0 {
                run = if d[i] == d[i - 1] { run + 1 } else { 0 };
                let r = run.min(LONG_MAX);
                for k in SHORT_MIN..=r.min(SHORT_MAX) {
                    let c = costs.short + cost_unset[i + k];
                    if c < best {
                        best = c;
                        step = Step::Run(k);
                    }
                }
                for k in LONG_MIN..=r {
                    let c = costs.long + cost_unset[i + k];
                    if c < best {
                        best = c;
                        step = Step::Run(k);
                    }
                }
            }
            cost_set[i] = best;
            step_set[i] = step;
        }
        let mut i = 0;
        let mut set = false;
        while i < n {
            let step = if set { step_set[i] } else { step_unset[i] };
            match step {
                Step::Sc => {
                    w.push(false, &[d[i]]);
                    counts.sc += 1;
                    i += 1;
                    set = true;
                }
                Step::Copy(t, k) => {
                    if k <= SHORT_MAX {
                        w.dict_word(t, (k - SHORT_MIN) as u16);
                        counts.si += 1;
                    } else {
                        w.dict_word(t, LONG_L);
                        w.push(false, &[(k - LONG_MIN) as u8]);
                        counts.li += 1;
                    }
                    i += k;
                    set = true;
                }
                Step::Run(k) => {
                    if k <= SHORT_MAX {
                        w.dict_word(RUN_T, (k - SHORT_MIN) as u16);
                        counts.srl += 1;
                    } else {
                        w.dict_word(RUN_T, LONG_L);
                        w.push(false, &[(k - LONG_MIN) as u8]);
                        counts.lrl += 1;
                    }
                    i += k;
                    set = false;
                }
            }
        }
    }

    fn ref_strip(strip: &[u8], segment_bytes: usize, costs: Costs) -> (Coding, CodeCounts) {
        let mut m = RefMatcher::new();
        code_strip(strip, segment_bytes, costs, |seg, w, counts| {
            ref_dictionary(strip, seg, costs, &mut m, w, counts)
        })
    }

    /// Asserts, strip by strip, that both encoders write the same under every [`Parse`], and that
    /// both matchers find the same match at every position of every dictionary segment.
    fn same(data: &[u8], segment_bytes: usize, what: &str) {
        let mut scratch = Scratch::new();
        let mut rm = RefMatcher::new();
        for (k, strip) in data.chunks(STRIP_BYTES).enumerate() {
            let (segs, n) = strip_segments(strip.len(), segment_bytes);
            for seg in segs[..n].iter().filter(|s| s.dictionary) {
                let dict = &strip[seg.dict_start..seg.dict_end];
                let mut fast = Vec::new();
                scratch
                    .m
                    .matches(dict, &strip[seg.start..seg.end], &mut fast);
                rm.index(dict);
                for i in seg.start..seg.end {
                    let (t, len) = rm.longest(dict, &strip[i..seg.end]);
                    assert_eq!(
                        fast[i - seg.start],
                        (t, len as u16),
                        "{what}: strip {k}, match at {i}"
                    );
                }
            }
            for parse in [Parse::Smallest, Parse::FastDecode] {
                let costs = Costs::of(parse);
                assert!(
                    encode_strip(strip, segment_bytes, costs, &mut scratch)
                        == ref_strip(strip, segment_bytes, costs),
                    "{what}: strip {k} differs ({parse:?})"
                );
            }
        }
    }

    /// Inputs of every kind the parse meets: noise, small alphabets (many equal-cost parses),
    /// runs of every length, repeats at every distance, text-like words, photo-like gradients.
    fn inputs(seed: u64) -> Vec<(String, Vec<u8>)> {
        let mut rng = StdRng::seed_from_u64(seed);
        let n = STRIP_BYTES + rng.random_range(0..STRIP_BYTES);
        let mut v = Vec::new();
        v.push(("random".into(), (0..n).map(|_| rng.random()).collect()));
        for a in [2u8, 3, 4, 16] {
            v.push((
                format!("alphabet {a}"),
                (0..n).map(|_| rng.random_range(0..a)).collect(),
            ));
        }
        for max in [4usize, 40, 300, 1000] {
            let mut d = Vec::with_capacity(n + max);
            while d.len() < n {
                let b = rng.random_range(0..3u8);
                let len = rng.random_range(1..=max);
                d.extend(std::iter::repeat_n(b, len));
            }
            d.truncate(n);
            v.push((format!("runs to {max}"), d));
        }
        // Repeats of random blocks at random distances, lightly mutated: long copies of every
        // length, and many chain links that share long prefixes.
        let mut d: Vec<u8> = (0..64).map(|_| rng.random_range(0..8)).collect();
        while d.len() < n {
            let len = rng.random_range(1..400usize).min(d.len());
            let from = rng.random_range(0..=d.len() - len);
            let block: Vec<u8> = d[from..from + len].to_vec();
            d.extend(block);
            if rng.random_range(0..4) == 0 {
                d.push(rng.random());
            }
        }
        d.truncate(n);
        v.push(("repeats".into(), d));
        let words = [
            "the ", "of ", "and ", "<tag>", "</tag>", "encoder ", "a ", "strip ", "\n", "  ",
        ];
        let mut d = Vec::new();
        while d.len() < n {
            d.extend_from_slice(words[rng.random_range(0..words.len())].as_bytes());
        }
        d.truncate(n);
        v.push(("words".into(), d));
        v.push((
            "gradient".into(),
            (0..n)
                .map(|i| ((i % 509) / 3 + (i / 509) / 2) as u8 ^ (rng.random::<u8>() & 3))
                .collect(),
        ));
        v
    }

    #[test]
    fn same_output_as_the_reference() {
        // Every segment size, each on its own seed's inputs (the matcher runs per segment).
        for (seed, &segment_bytes) in SEGMENT_SIZES.iter().enumerate() {
            for (what, data) in inputs(seed as u64) {
                same(&data, segment_bytes, &format!("seed {seed}, {what}"));
            }
        }
    }

    /// The bench sets (`bench/data`, not in the repository), where present; slow unoptimised:
    /// `cargo test --release -p tessera-codecs --lib -- --ignored`.
    #[test]
    #[ignore]
    fn same_output_as_the_reference_on_the_bench_sets() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/data");
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.filter_map(|e| e.ok()) {
            let data = std::fs::read(e.path()).expect("bench set");
            for segment_bytes in [DEFAULT_SEGMENT_BYTES, MAX_SEGMENT_BYTES] {
                same(&data, segment_bytes, &e.path().display().to_string());
            }
        }
    }
}
