//! LLL encoder (`docs/format/lll.md`): one rayon task per strip, an optimal parse per segment.
//!
//! Per dictionary segment, a hash chain over the dictionary's 2-byte prefixes finds, for every
//! position, the longest dictionary match (at most [`MAX_CANDIDATES`] chain links, stopping at
//! the longest length a code can use). Any shorter length of that match is also a valid copy, so
//! the longest one per position is all the parse needs. A backward dynamic program then picks,
//! over the whole segment, the word sequence with the fewest bits (8 per word-array byte plus 1
//! identifier bit per word), in two states: the previous character set (after SC, SI, LI) or
//! unset (at the segment start and after SRL / LRL: `lll.md` §5). The non-dictionary subsegment
//! gets the same program over SC and RL. Cost: at most ~530 transitions per byte, cheap at 4 KiB.
//! A strip whose coding is not shorter than its input is stored instead (`lll.md` §4a: its
//! input bytes, bit 31 of its `strip_starts` entry set), so no strip grows. A strip of at least
//! 2 bytes that are all one byte is a fill strip (§4b, format 1.2: that byte, bit 30 set): the
//! words would spend at least 3 bytes per 273 on it, and a reader fills it without parsing.

use rayon::prelude::*;
use tessera_format::{Error, Result, MAX_CHUNK_VALUES};

use super::{
    strip_segments, CodeCounts, Seg, FILL_STRIP, HEADER_BYTES, LONG_L, LONG_MAX, LONG_MIN, RL_MAX,
    RL_MIN, RUN_T, SEGMENTS_PER_STRIP, SEGMENT_BYTES, SHORT_MAX, SHORT_MIN, STORED_STRIP,
    STRIP_BYTES,
};

/// Chain links followed per position when looking for the longest dictionary match.
pub const MAX_CANDIDATES: usize = 64;

const NONE: u32 = u32::MAX;
/// Costs in bits (§4): word-array bytes times 8 plus one identifier bit per word.
const COST_SC: u32 = 9;
const COST_SHORT: u32 = 17;
const COST_LONG: u32 = 26;

/// Largest payload [`encode`] can write for `n` input bytes: a header, the directory and at most
/// the input bytes themselves (a strip is stored when its coding is not shorter, §4a).
pub fn max_encoded_len(n: usize) -> usize {
    HEADER_BYTES + 4 * n.div_ceil(STRIP_BYTES) + n
}

/// Encodes `data` into `out` (cleared first) and returns how many words of each code type it
/// wrote. Fails only if `data` is longer than `MAX_CHUNK_VALUES` bytes.
pub fn encode(data: &[u8], out: &mut Vec<u8>) -> Result<CodeCounts> {
    if data.len() > MAX_CHUNK_VALUES as usize {
        return Err(Error::InvalidArgument(format!(
            "LLL chunk of {} bytes exceeds {MAX_CHUNK_VALUES}",
            data.len()
        )));
    }
    let strips: Vec<(Coding, CodeCounts)> =
        data.par_chunks(STRIP_BYTES).map(encode_strip).collect();
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
        SEGMENT_BYTES as u32,
        SEGMENTS_PER_STRIP as u32,
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
fn encode_strip(strip: &[u8]) -> (Coding, CodeCounts) {
    if strip.len() >= 2 && strip.iter().all(|&b| b == strip[0]) {
        let fill = CodeCounts {
            fill: 1,
            ..CodeCounts::default()
        };
        return (Coding::Fill, fill);
    }
    let (segs, n) = strip_segments(strip.len());
    let mut counts = CodeCounts::default();
    let mut w = Words::default();
    let mut word_counts = Vec::with_capacity(n);
    let mut m = Matcher::new();
    for seg in &segs[..n] {
        let before = w.count;
        if seg.dictionary {
            encode_dictionary(strip, seg, &mut m, &mut w, &mut counts);
        } else {
            encode_plain(&strip[seg.start..seg.end], &mut w, &mut counts);
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
fn encode_plain(d: &[u8], w: &mut Words, counts: &mut CodeCounts) {
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
        let mut best = COST_SC + cost[i + 1];
        let mut len = 1;
        for k in RL_MIN..=run.min(RL_MAX) {
            let c = COST_SHORT + cost[i + k];
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

/// Hash chains over a dictionary's 2-byte prefixes, reused across segments.
struct Matcher {
    head: Vec<u32>,
    prev: Vec<u32>,
}

impl Matcher {
    fn new() -> Self {
        Matcher {
            head: vec![NONE; 1 << 16],
            prev: vec![NONE; SEGMENT_BYTES],
        }
    }

    /// Indexes `dict` (at most a segment): the chain from a key visits higher offsets first.
    fn index(&mut self, dict: &[u8]) {
        self.head.fill(NONE);
        for p in 0..dict.len().saturating_sub(1) {
            let key = u16::from_le_bytes([dict[p], dict[p + 1]]) as usize;
            self.prev[p] = self.head[key];
            self.head[key] = p as u32;
        }
    }

    /// Longest `(t, len)` with `dict[t..t + len] == s[..len]`, `len <= LONG_MAX`.
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

/// Dictionary segment (§5): SC, SI, LI, SRL, LRL, fewest bits by a backward dynamic program.
fn encode_dictionary(
    strip: &[u8],
    seg: &Seg,
    m: &mut Matcher,
    w: &mut Words,
    counts: &mut CodeCounts,
) {
    let dict = &strip[seg.dict_start..seg.dict_end];
    let d = &strip[seg.start..seg.end];
    let n = d.len();
    m.index(dict);
    let matches: Vec<(u16, usize)> = (0..n).map(|i| m.longest(dict, &d[i..])).collect();
    // cost_set[i]: fewest bits for d[i..] with the previous character set (it is d[i - 1]);
    // cost_unset[i]: with it unset. Copies and SC lead to "set", runs to "unset".
    let mut cost_set = vec![0u32; n + 1];
    let mut cost_unset = vec![0u32; n + 1];
    let mut step_set = vec![Step::Sc; n];
    let mut step_unset = vec![Step::Sc; n];
    let mut run = 0usize; // bytes equal to d[i - 1] from i on
    for i in (0..n).rev() {
        let mut best = COST_SC + cost_set[i + 1];
        let mut step = Step::Sc;
        let (t, len) = matches[i];
        for k in SHORT_MIN..=len.min(SHORT_MAX) {
            let c = COST_SHORT + cost_set[i + k];
            if c < best {
                best = c;
                step = Step::Copy(t, k);
            }
        }
        for k in LONG_MIN..=len.min(LONG_MAX) {
            let c = COST_LONG + cost_set[i + k];
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
                let c = COST_SHORT + cost_unset[i + k];
                if c < best {
                    best = c;
                    step = Step::Run(k);
                }
            }
            for k in LONG_MIN..=r {
                let c = COST_LONG + cost_unset[i + k];
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
