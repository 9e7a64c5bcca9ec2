//! Operations on compressed bitmaps, never decompressing: AND, OR, XOR, AND-NOT and NOT give a
//! compressed result; cardinality and the set positions are read from the runs.
//!
//! A binary operation merges the two run streams (the paper's pairing of compressed words,
//! Fig. 1, done sequentially): while both sides are in a fill run the result is a fill run as
//! long as the shorter of the two, in one step; otherwise one group of each side is combined.
//! The result goes through [`Builder`], so it is the canonical encoding of the result bitmap
//! (`wah.md` §4) whatever the (valid) inputs were. Padding stays 0: each operation maps 0, 0
//! to 0; NOT masks the last group.
//!
//! Multi-core (`wah.md` §8): for large bitmaps both operands are cut at the same group
//! positions (a cut may fall inside a fill_word of either side, which then starts that piece
//! shortened), each piece is merged on its own core into a piece of the result, and the pieces
//! are stitched into the words [`binary_serial`] writes.

use super::parallel::{self, GroupSink, PieceBuilder, Pos};
use super::{fill_group, group_count, last_group_mask, Bitmap, Builder, Run, Runs, GROUP_BITS};
use tessera_format::{Error, Result};

/// A binary bitwise operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `a & b`
    And,
    /// `a | b`
    Or,
    /// `a ^ b`
    Xor,
    /// `a & !b`
    AndNot,
}

impl Op {
    /// The operation on one group (or bit, with 0 / 1).
    pub const fn apply(self, a: u32, b: u32) -> u32 {
        match self {
            Op::And => a & b,
            Op::Or => a | b,
            Op::Xor => a ^ b,
            Op::AndNot => a & !b,
        }
    }
}

/// One side of a merge: the run being consumed and how many of its groups remain.
struct Cursor<'a> {
    runs: Runs<'a>,
    /// `Some((group, remaining, is_fill))`: the current run's group value, its unread groups
    /// (>= 1), and whether it is a fill run.
    current: Option<(u32, u64, bool)>,
}

impl<'a> Cursor<'a> {
    fn new(bitmap: &'a Bitmap) -> Self {
        let mut c = Cursor {
            runs: bitmap.runs(),
            current: None,
        };
        c.advance();
        c
    }

    /// A cursor starting at group position `pos`.
    fn at(bitmap: &'a Bitmap, pos: Pos) -> Self {
        let (first, runs) = bitmap.runs_at(pos);
        Cursor {
            runs,
            current: first.map(current_of),
        }
    }

    fn advance(&mut self) {
        self.current = self.runs.next().map(current_of);
    }

    fn consume(&mut self, n: u64) {
        if let Some((_, remaining, _)) = &mut self.current {
            *remaining -= n;
            if *remaining == 0 {
                self.advance();
            }
        }
    }
}

fn current_of(run: Run) -> (u32, u64, bool) {
    match run {
        Run::Fill { fill_bit, count } => (fill_group(fill_bit), count, true),
        Run::Literal(group) => (group, 1, false),
    }
}

/// Merges `groups` groups of the two cursors into `out` (both hold at least that many).
fn merge(op: Op, mut x: Cursor<'_>, mut y: Cursor<'_>, mut groups: u64, out: &mut impl GroupSink) {
    while groups > 0 {
        let (Some((gx, nx, fx)), Some((gy, ny, fy))) = (x.current, y.current) else {
            break;
        };
        let result = op.apply(gx, gy);
        if fx && fy {
            let n = nx.min(ny).min(groups);
            out.push_fill(result != 0, n);
            x.consume(n);
            y.consume(n);
            groups -= n;
        } else {
            out.push_literal(result);
            x.consume(1);
            y.consume(1);
            groups -= 1;
        }
    }
}

fn check_operands(a: &Bitmap, b: &Bitmap) -> Result<()> {
    if a.flavor() != b.flavor() || a.bit_len() != b.bit_len() {
        return Err(Error::InvalidArgument(format!(
            "bitmap operands differ: {:?} of {} bits and {:?} of {} bits",
            a.flavor(),
            a.bit_len(),
            b.flavor(),
            b.bit_len()
        )));
    }
    Ok(())
}

/// `op(a, b)` on the compressed words. Both must have the same flavor and length
/// (`Error::InvalidArgument` otherwise); the result has that flavor and is canonical.
///
/// Bitmaps of at least [`super::PARALLEL_MIN_GROUPS`] groups are merged on all cores (when the
/// rayon pool has more than one thread); the words are those of [`binary_serial`].
pub fn binary(op: Op, a: &Bitmap, b: &Bitmap) -> Result<Bitmap> {
    check_operands(a, b)?;
    let groups = group_count(a.bit_len());
    if parallel::go_parallel(groups) {
        binary_with(
            op,
            a,
            b,
            parallel::auto_piece_groups(groups),
            a.flavor().max_counter(),
        )
    } else {
        binary_serial(op, a, b)
    }
}

/// The sequential reference of [`binary`]: one core, whatever the size.
pub fn binary_serial(op: Op, a: &Bitmap, b: &Bitmap) -> Result<Bitmap> {
    binary_with(op, a, b, 0, a.flavor().max_counter())
}

/// [`binary`] with pieces of `piece_groups` groups (0: sequential) and the result's fill runs
/// split at `max_counter`: a test hook that puts seams anywhere in small bitmaps and reaches
/// the counter-overflow path. The result is canonical only for the flavor's maximum counter.
#[doc(hidden)]
pub fn binary_with(
    op: Op,
    a: &Bitmap,
    b: &Bitmap,
    piece_groups: u64,
    max_counter: u64,
) -> Result<Bitmap> {
    check_operands(a, b)?;
    let (flavor, bit_len) = (a.flavor(), a.bit_len());
    super::check_max_counter(flavor, max_counter)?;
    let groups = group_count(bit_len);
    if piece_groups == 0 {
        let mut out = Builder::with_max_counter(flavor, bit_len, max_counter);
        // Both valid bitmaps encode the same number of groups, so they run out together.
        merge(op, Cursor::new(a), Cursor::new(b), groups, &mut out);
        return Ok(out.finish_valid());
    }
    use rayon::prelude::*;
    let cuts = parallel::cuts(groups, piece_groups);
    let (pa, pb) = rayon::join(
        || parallel::seek(a, &cuts[..cuts.len() - 1]),
        || parallel::seek(b, &cuts[..cuts.len() - 1]),
    );
    let pieces: Vec<parallel::PieceOut> = (0..cuts.len() - 1)
        .into_par_iter()
        .map(|i| {
            let mut out = PieceBuilder::new(flavor, max_counter);
            merge(
                op,
                Cursor::at(a, pa[i]),
                Cursor::at(b, pb[i]),
                cuts[i + 1] - cuts[i],
                &mut out,
            );
            out.finish()
        })
        .collect();
    Ok(parallel::stitch(flavor, bit_len, max_counter, pieces))
}

/// `a & b`.
pub fn and(a: &Bitmap, b: &Bitmap) -> Result<Bitmap> {
    binary(Op::And, a, b)
}

/// `a | b`.
pub fn or(a: &Bitmap, b: &Bitmap) -> Result<Bitmap> {
    binary(Op::Or, a, b)
}

/// `a ^ b`.
pub fn xor(a: &Bitmap, b: &Bitmap) -> Result<Bitmap> {
    binary(Op::Xor, a, b)
}

/// `a & !b`.
pub fn and_not(a: &Bitmap, b: &Bitmap) -> Result<Bitmap> {
    binary(Op::AndNot, a, b)
}

/// `!a` over the bitmap's length: the padding of the last group stays 0.
pub fn not(a: &Bitmap) -> Bitmap {
    let groups = super::group_count(a.bit_len());
    let tail = last_group_mask(a.bit_len());
    let mut out = Builder::new(a.flavor(), a.bit_len());
    let mut g = 0u64;
    for run in a.runs() {
        match run {
            Run::Fill { fill_bit, count } => {
                g += count;
                if !fill_bit && g == groups && tail != super::GROUP_ONES {
                    // The run's last group is the partial last group: its padding stays 0.
                    out.push_fill(true, count - 1);
                    out.push_literal(tail);
                } else {
                    out.push_fill(!fill_bit, count);
                }
            }
            Run::Literal(group) => {
                g += 1;
                let mask = if g == groups { tail } else { super::GROUP_ONES };
                out.push_literal(!group & mask);
            }
        }
    }
    out.finish_valid()
}

/// The number of set bits (padding is 0, so every 1-fill group counts 31).
pub fn count_ones(a: &Bitmap) -> u64 {
    a.runs()
        .map(|run| match run {
            Run::Fill {
                fill_bit: true,
                count,
            } => count * GROUP_BITS,
            Run::Fill { .. } => 0,
            Run::Literal(group) => u64::from(group.count_ones()),
        })
        .sum()
}

/// Iterator over the positions of the set bits, ascending.
#[derive(Debug, Clone)]
pub struct Ones<'a> {
    runs: Runs<'a>,
    /// Bit index of the first bit of the next run.
    next_run_start: u64,
    /// Set bits still to give from the current run: a range (1-fill) ...
    range: std::ops::Range<u64>,
    /// ... or a literal's bits, based at `base`.
    bits: u32,
    base: u64,
}

impl<'a> Ones<'a> {
    /// The set positions of `a`.
    pub fn new(a: &'a Bitmap) -> Self {
        Ones {
            runs: a.runs(),
            next_run_start: 0,
            range: 0..0,
            bits: 0,
            base: 0,
        }
    }
}

impl Iterator for Ones<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        loop {
            if let Some(i) = self.range.next() {
                return Some(i);
            }
            if self.bits != 0 {
                let i = self.base + u64::from(self.bits.trailing_zeros());
                self.bits &= self.bits - 1;
                return Some(i);
            }
            let start = self.next_run_start;
            match self.runs.next()? {
                Run::Fill { fill_bit, count } => {
                    self.next_run_start = start + count * GROUP_BITS;
                    if fill_bit {
                        self.range = start..self.next_run_start;
                    }
                }
                Run::Literal(group) => {
                    self.next_run_start = start + GROUP_BITS;
                    self.bits = group;
                    self.base = start;
                }
            }
        }
    }
}

impl Bitmap {
    /// `op(self, other)`, see [`binary`].
    pub fn op(&self, op: Op, other: &Bitmap) -> Result<Bitmap> {
        binary(op, self, other)
    }

    /// `self & other`.
    pub fn and(&self, other: &Bitmap) -> Result<Bitmap> {
        and(self, other)
    }

    /// `self | other`.
    pub fn or(&self, other: &Bitmap) -> Result<Bitmap> {
        or(self, other)
    }

    /// `self ^ other`.
    pub fn xor(&self, other: &Bitmap) -> Result<Bitmap> {
        xor(self, other)
    }

    /// `self & !other`.
    pub fn and_not(&self, other: &Bitmap) -> Result<Bitmap> {
        and_not(self, other)
    }

    /// `!self`, see [`not`].
    pub fn not(&self) -> Bitmap {
        not(self)
    }

    /// The number of set bits.
    pub fn count_ones(&self) -> u64 {
        count_ones(self)
    }

    /// The positions of the set bits, ascending.
    pub fn ones(&self) -> Ones<'_> {
        Ones::new(self)
    }
}
