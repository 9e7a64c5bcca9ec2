//! Multi-core machinery shared by compression, decompression and the bitwise operations
//! (`docs/format/wah.md` §8): cutting a compressed stream at group positions, and writing a
//! result in independent **pieces** that are stitched into the canonical words of §4.
//!
//! - [`seek`] finds, for sorted group positions `g`, the word covering group `g` and how many of
//!   that word's groups lie before `g` (a [`Pos`]): the words are split into pieces, the groups
//!   of each piece are counted in parallel, an exclusive scan gives each piece's first group,
//!   and each cut is found by a binary search over the pieces and a walk inside one piece. A cut
//!   may fall inside a fill_word (`skip` of its `counter` groups already before the cut) or, in
//!   PLWAH, on a fill_word's position group (`skip == counter`).
//! - A [`PieceBuilder`] takes the groups of one piece of the result (in order, as fill runs and
//!   literals) and writes every word that does not depend on the neighbouring pieces; what does
//!   (its leading fill run, a leading literal that the previous piece's last fill run may fold
//!   as a PLWAH position, its trailing fill run) is kept apart in a [`PieceOut`]. [`stitch`] then
//!   replays the pieces in order through one [`Builder`], which merges fills across the seams,
//!   folds positions and splits runs longer than the maximum counter exactly as the sequential
//!   writer does, so the result is word for word that of the one-core functions.
//!
//! Invariant of a [`PieceOut`]: pushing `lead`, then (if `lead_pos != 0`) the position group,
//! then `head_literal`, then the groups `words` encode, then `trail` into a [`Builder`] whose
//! state is the one the sequential writer has at the piece's first group gives the sequential
//! writer's words and state at the piece's end. `words` start and end on a flushed state of the
//! piece's own builder, which is the sequential builder's state there too: the inner builder only
//! starts after the first literal or after the leading fill run has ended on a fill of the
//! other bit.

use super::{fill_group, Bitmap, Builder, Flavor, Run, Runs, Word, GROUP_ONES};
use rayon::prelude::*;

/// Where a group lies in a stream: `word` covers it and `skip` of that word's groups come
/// before it (0 for a literal). `word == words.len()` is the end of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pos {
    pub word: usize,
    pub skip: u64,
}

/// The groups one word expands to (a fill's counter, plus one for a PLWAH position).
#[inline]
pub(crate) fn word_groups(flavor: Flavor, w: u32) -> u64 {
    match flavor.decode_word(w) {
        Word::Literal(_) => 1,
        Word::Fill {
            counter, position, ..
        } => u64::from(counter) + u64::from(position != 0),
    }
}

/// The [`Pos`] of each group in `cuts` (ascending, each at most the stream's group count).
pub(crate) fn seek(bitmap: &Bitmap, cuts: &[u64]) -> Vec<Pos> {
    let (flavor, words) = (bitmap.flavor(), bitmap.words());
    if words.is_empty() {
        return vec![Pos { word: 0, skip: 0 }; cuts.len()];
    }
    // 256 word pieces: each cut walks at most one piece, the counting pass reads every word once.
    let piece_words = words.len().div_ceil(256).max(1);
    let sums: Vec<u64> = words
        .par_chunks(piece_words)
        .map(|c| c.iter().map(|&w| word_groups(flavor, w)).sum())
        .collect();
    let mut starts = Vec::with_capacity(sums.len());
    let mut acc = 0u64;
    for s in &sums {
        starts.push(acc);
        acc += s;
    }
    cuts.par_iter()
        .map(|&g| {
            // The last piece starting at or before g (pieces are never empty of groups).
            let p = starts.partition_point(|&s| s <= g).saturating_sub(1);
            let from = p * piece_words;
            let to = (from + piece_words).min(words.len());
            let mut acc = starts[p];
            for (i, &w) in words[from..to].iter().enumerate() {
                let n = word_groups(flavor, w);
                if acc + n > g {
                    return Pos {
                        word: from + i,
                        skip: g - acc,
                    };
                }
                acc += n;
            }
            Pos { word: to, skip: 0 }
        })
        .collect()
}

impl Bitmap {
    /// The runs from group position `pos` on: the rest of the word it falls in (a shortened
    /// fill run, or the position group, or the literal), then a [`Runs`] over the words after
    /// it (holding the position group of a cut fill_word as pending).
    pub(crate) fn runs_at(&self, pos: Pos) -> (Option<Run>, Runs<'_>) {
        let words = self.words();
        let Some(&w) = words.get(pos.word) else {
            return (
                None,
                Runs {
                    flavor: self.flavor(),
                    words: &[],
                    pending: None,
                },
            );
        };
        let mut runs = Runs {
            flavor: self.flavor(),
            words: &words[pos.word + 1..],
            pending: None,
        };
        let first = match self.flavor().decode_word(w) {
            Word::Literal(group) => Run::Literal(group),
            Word::Fill {
                fill_bit,
                counter,
                position,
            } => {
                let pos_group = fill_group(fill_bit) ^ (1u32 << position.saturating_sub(1));
                if pos.skip < u64::from(counter) {
                    if position != 0 {
                        runs.pending = Some(pos_group);
                    }
                    Run::Fill {
                        fill_bit,
                        count: u64::from(counter) - pos.skip,
                    }
                } else {
                    // skip == counter: the cut is on the position group (seek never gives more).
                    Run::Literal(pos_group)
                }
            }
        };
        (Some(first), runs)
    }
}

/// What takes groups in order: the sequential [`Builder`] or a [`PieceBuilder`].
pub(crate) trait GroupSink {
    fn push_fill(&mut self, fill_bit: bool, count: u64);
    fn push_literal(&mut self, group: u32);
}

impl GroupSink for Builder {
    fn push_fill(&mut self, fill_bit: bool, count: u64) {
        Builder::push_fill(self, fill_bit, count)
    }
    fn push_literal(&mut self, group: u32) {
        Builder::push_literal(self, group)
    }
}

/// One piece of a result, see the module docs for how [`stitch`] replays it.
#[derive(Debug)]
pub(crate) struct PieceOut {
    /// The leading fill run (merged with the previous piece's trailing one at the seam).
    lead: Option<(bool, u64)>,
    /// PLWAH: the position folded into `lead`'s last fill_word by the literal after it.
    lead_pos: u32,
    /// The piece's first group when it is a literal: the previous piece's trailing fill run may
    /// fold it.
    head_literal: Option<u32>,
    /// Words that depend on nothing outside the piece.
    words: Vec<u32>,
    /// The trailing fill run, not yet written.
    trail: Option<(bool, u64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Start,
    Lead,
    Inner,
}

/// Writes one piece of a result (module docs).
#[derive(Debug)]
pub(crate) struct PieceBuilder {
    phase: Phase,
    lead: Option<(bool, u64)>,
    lead_pos: u32,
    head_literal: Option<u32>,
    inner: Builder,
}

impl PieceBuilder {
    /// A piece writer; `max_counter` is the stitching builder's.
    pub fn new(flavor: Flavor, max_counter: u64) -> Self {
        PieceBuilder {
            phase: Phase::Start,
            lead: None,
            lead_pos: 0,
            head_literal: None,
            // bit_len is irrelevant: the inner builder is never finished, only drained.
            inner: Builder::with_max_counter(flavor, 0, max_counter),
        }
    }

    /// The piece, for [`stitch`].
    pub fn finish(mut self) -> PieceOut {
        let trail = self.inner.fill.take();
        PieceOut {
            lead: self.lead,
            lead_pos: self.lead_pos,
            head_literal: self.head_literal,
            words: self.inner.words,
            trail,
        }
    }
}

impl GroupSink for PieceBuilder {
    fn push_fill(&mut self, fill_bit: bool, count: u64) {
        if count == 0 {
            return;
        }
        match self.phase {
            Phase::Start => {
                self.lead = Some((fill_bit, count));
                self.phase = Phase::Lead;
            }
            Phase::Lead => match &mut self.lead {
                Some((bit, n)) if *bit == fill_bit => *n += count,
                _ => {
                    // The lead ends on a fill of the other bit: the inner builder holds the new
                    // run exactly as the sequential one would.
                    self.phase = Phase::Inner;
                    self.inner.push_fill(fill_bit, count);
                }
            },
            Phase::Inner => self.inner.push_fill(fill_bit, count),
        }
    }

    fn push_literal(&mut self, group: u32) {
        let group = group & GROUP_ONES;
        if group == 0 || group == GROUP_ONES {
            return self.push_fill(group != 0, 1);
        }
        match self.phase {
            Phase::Start => {
                self.head_literal = Some(group);
                self.phase = Phase::Inner;
            }
            Phase::Lead => {
                self.phase = Phase::Inner;
                if let (Flavor::Plwah, Some((fill_bit, _))) = (self.inner.flavor, self.lead) {
                    let diff = group ^ fill_group(fill_bit);
                    if diff.count_ones() == 1 {
                        self.lead_pos = diff.trailing_zeros() + 1;
                        return;
                    }
                }
                self.inner.push_literal(group);
            }
            Phase::Inner => self.inner.push_literal(group),
        }
    }
}

/// Replays the pieces, in order, through one builder of `max_counter` (module docs): the words
/// of the sequential writer fed all the pieces' groups.
pub(crate) fn stitch(
    flavor: Flavor,
    bit_len: u64,
    max_counter: u64,
    pieces: Vec<PieceOut>,
) -> Bitmap {
    let mut out = Builder::with_max_counter(flavor, bit_len, max_counter);
    out.words
        .reserve(pieces.iter().map(|p| p.words.len() + 2).sum());
    for p in pieces {
        if let Some((bit, n)) = p.lead {
            out.push_fill(bit, n);
        }
        if p.lead_pos != 0 {
            out.flush(p.lead_pos);
        }
        if let Some(group) = p.head_literal {
            out.push_literal(group);
        }
        if !p.words.is_empty() {
            out.flush(0);
            out.words.extend_from_slice(&p.words);
        }
        if let Some((bit, n)) = p.trail {
            out.push_fill(bit, n);
        }
    }
    out.finish_valid()
}

/// Group cuts `0, piece, 2 piece, ...` below `groups`, then `groups`.
pub(crate) fn cuts(groups: u64, piece: u64) -> Vec<u64> {
    let piece = piece.max(1);
    let mut v: Vec<u64> = (0..groups.div_ceil(piece)).map(|i| i * piece).collect();
    v.push(groups);
    v
}

/// Groups per piece when the caller does not say: at least [`super::PARALLEL_CHUNK_GROUPS`],
/// about 16 pieces per thread, a multiple of 8 (so a piece of plain bits starts on a byte).
pub(crate) fn auto_piece_groups(groups: u64) -> u64 {
    let threads = rayon::current_num_threads().max(1) as u64;
    groups
        .div_ceil(threads * 16)
        .max(super::PARALLEL_CHUNK_GROUPS)
        .next_multiple_of(8)
}

/// Whether the automatic entry points take the multi-core path.
pub(crate) fn go_parallel(groups: u64) -> bool {
    groups >= super::PARALLEL_MIN_GROUPS && rayon::current_num_threads() > 1
}
