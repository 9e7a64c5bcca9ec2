//! GPU-RFOR (`docs/format/rfor.md`): run-length encoding per 512-value block; the run values
//! and run lengths are each FOR-packed in miniblocks of 32 entries.
//!
//! Block layout: `value_reference` (REF_WORDS words), `run_word` (`r | length_reference << 16`),
//! `ceil(2m/4)` bit-width words (`m = ceil(r/32)`: value widths then length widths), the value
//! miniblocks, the length miniblocks. The last miniblock of each array stores only its real
//! entries' bits, `ceil(e * bit_width / 32)` words. Blocks are not padded: the last block holds
//! `total_count - 512k` values. Invariants the encoder keeps: runs never cross a block; a block
//! holds its maximal runs, or is an *identity block* (every value its own run of length 1) when
//! that takes no more words, as on data with few repeats; references are the minima; run-length
//! widths are at most 10 (lengths fit 1..=512).

use super::for_::{block_slice, miniblock_width, read_bits_reference};
use super::header::{self, Shape, Writer};
use super::word::{read_u32, Word};
use crate::codec::{AutoRule, AutoSlot, AUTO_MARGIN};
use tessera_format::{CodecId, Error, Result};

pub(crate) const BLOCK: usize = 512;
/// Runs up to this long are expanded with one fixed-width store.
const SHORT: usize = 8;
/// Most runs in a block, and most any single run length.
const MAX_RUNS: u32 = 512;
/// Largest `bit_width` of a run-length miniblock.
const MAX_LENGTH_WIDTH: u32 = 10;
const SHAPE: Shape = Shape {
    block_size: 512,
    miniblock_count: 16,
    tile_blocks: 1,
    lead_words: 0,
};

/// The maximal runs of one block.
struct Runs<W> {
    values: [W; BLOCK],
    lengths: [u32; BLOCK],
    ends: [u32; BLOCK],
    r: usize,
}

impl<W: Word> Runs<W> {
    fn new() -> Self {
        Runs {
            values: [W::ZERO; BLOCK],
            lengths: [0; BLOCK],
            ends: [0; BLOCK],
            r: 0,
        }
    }

    /// Every value of `vals` (1..=512 values) as its own run of length 1.
    fn identity(&mut self, vals: &[W]) {
        self.values[..vals.len()].copy_from_slice(vals);
        self.lengths[..vals.len()].fill(1);
        self.r = vals.len();
    }

    /// Splits `vals` (1..=512 values) into maximal runs.
    #[inline(always)]
    fn split(&mut self, vals: &[W]) {
        let m = vals.len().min(BLOCK);
        let vals = &vals[..m];
        // Common case on data without runs: no two neighbours equal, every run has length 1.
        if no_equal_neighbours(vals) {
            self.identity(vals);
            return;
        }
        // Branch-free: every position writes its value and end into slot `r`, and `r` moves on
        // only where the next value differs, so each run's slot ends up holding its value and
        // its end.
        let mut r = 0usize;
        for (i, pair) in vals.windows(2).enumerate() {
            self.values[r] = pair[0];
            self.ends[r] = i as u32 + 1;
            r += usize::from(pair[0] != pair[1]);
        }
        self.values[r] = vals[m - 1];
        self.ends[r] = m as u32;
        r += 1;
        self.r = r;
        let mut prev = 0u32;
        for (l, &e) in self.lengths[..r].iter_mut().zip(&self.ends[..r]) {
            *l = e - prev;
            prev = e;
        }
    }
}

/// Whether no two neighbouring values of `vals` are equal (every run has length 1). Counting
/// equal neighbours vectorises; the general run split does not.
#[inline(always)]
fn no_equal_neighbours<W: Word>(vals: &[W]) -> bool {
    let next = vals.get(1..).unwrap_or(&[]);
    let equal: u32 = vals.iter().zip(next).map(|(a, b)| u32::from(a == b)).sum();
    equal == 0
}

/// Words a miniblock of `entries` entries takes at `bit_width` (full: `bit_width`).
#[inline(always)]
fn miniblock_words(entries: usize, bit_width: u32) -> usize {
    (entries * bit_width as usize).div_ceil(32)
}

/// Widths of the miniblocks of `src` (entries `32j .. min(32j + 32, r)`) under `reference`,
/// and the words they take.
#[inline(always)]
fn array_widths<W: Word>(src: &[W], reference: W, widths: &mut [u32]) -> usize {
    let mut words = 0;
    for (w, mb) in widths.iter_mut().zip(src.chunks(32)) {
        *w = miniblock_width(mb, reference);
        words += miniblock_words(mb.len(), *w);
    }
    words
}

/// Packs the miniblocks of `src` at `widths` into `dst`; the last, partial one stores only its
/// entries' words. Returns the bytes written.
#[inline(always)]
fn put_array<W: Word>(src: &[W], reference: W, widths: &[u32], dst: &mut [u8]) -> usize {
    let mut at = 0;
    for (mb, &bw) in src.chunks(32).zip(widths) {
        if bw == 0 {
            continue;
        }
        let mut packed = [W::ZERO; 32];
        for (d, &v) in packed.iter_mut().zip(mb) {
            *d = v.wsub(reference);
        }
        let bytes = 4 * miniblock_words(mb.len(), bw);
        if mb.len() == 32 {
            W::pack(bw, &packed, &mut dst[at..]);
        } else {
            let mut tmp = [0u8; 4 * 64];
            W::pack(bw, &packed, &mut tmp);
            dst[at..at + bytes].copy_from_slice(&tmp[..bytes]);
        }
        at += bytes;
    }
    at
}

/// A block's references and widths, and its size in words.
struct Plan<W> {
    vref: W,
    lref: u32,
    m: usize,
    widths: [u32; 32],
    head: usize,
    words: usize,
}

#[inline(always)]
fn plan<W: Word>(runs: &Runs<W>) -> Plan<W> {
    let r = runs.r;
    let m = r.div_ceil(32);
    let values = &runs.values[..r];
    let lengths = &runs.lengths[..r];
    let vref = values.iter().fold(W::MAX, |a, &v| a.min(v));
    let lref = lengths.iter().fold(u32::MAX, |a, &v| a.min(v));
    let head = W::REF_WORDS + 1 + (2 * m).div_ceil(4);
    let mut widths = [0u32; 32];
    let (vw, lw) = widths.split_at_mut(m);
    let words = head + array_widths(values, vref, vw) + array_widths(lengths, lref, &mut lw[..m]);
    Plan {
        vref,
        lref,
        m,
        widths,
        head,
        words,
    }
}

/// The plan of `vals` as an identity block (every value a run of length 1): run-length
/// reference 1, every run-length width 0.
#[inline(always)]
fn identity_plan<W: Word>(vals: &[W], vref: W) -> Plan<W> {
    let m = vals.len().div_ceil(32);
    let head = W::REF_WORDS + 1 + (2 * m).div_ceil(4);
    let mut widths = [0u32; 32];
    let words = head + array_widths(vals, vref, &mut widths[..m]);
    Plan {
        vref,
        lref: 1,
        m,
        widths,
        head,
        words,
    }
}

/// Fills `runs` with what the encoder writes for the block `vals`: its maximal runs, or the
/// identity block when that takes no more words (`rfor.md`, "Runs"). A block of mostly short
/// runs packs a value and a run length per run; below about two values a run the lengths cost
/// more than the repeats save, and identity blocks also decode without run expansion.
#[inline(always)]
fn block_runs<W: Word>(runs: &mut Runs<W>, vals: &[W]) -> Plan<W> {
    runs.split(vals);
    let p = plan(runs);
    if runs.r == vals.len() {
        return p;
    }
    // The minimum of the run values is the minimum of the values.
    let id = identity_plan(vals, p.vref);
    if id.words <= p.words {
        runs.identity(vals);
        return id;
    }
    p
}

/// Appends one block for `runs`, laid out by `p` (its plan).
#[inline(always)]
fn put_block<W: Word>(runs: &Runs<W>, p: &Plan<W>, out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + 4 * p.words, 0);
    let dst = &mut out[start..];
    let rw = W::REF_WORDS;
    p.vref.write_bytes(dst);
    let run_word = runs.r as u32 | p.lref << 16;
    dst[4 * rw..4 * rw + 4].copy_from_slice(&run_word.to_le_bytes());
    // Bit-width bytes: byte j of the bit-width words is byte j after the run word.
    for (d, &w) in dst[4 * (rw + 1)..].iter_mut().zip(&p.widths[..2 * p.m]) {
        *d = w as u8;
    }
    let mut at = 4 * p.head;
    at += put_array(
        &runs.values[..runs.r],
        p.vref,
        &p.widths[..p.m],
        &mut dst[at..],
    );
    put_array(
        &runs.lengths[..runs.r],
        p.lref,
        &p.widths[p.m..2 * p.m],
        &mut dst[at..],
    );
}

#[inline(always)]
pub(crate) fn encoded_size<W: Word>(values: &[W]) -> usize {
    let mut runs = Runs::<W>::new();
    let mut words = 0usize;
    for vals in values.chunks(BLOCK) {
        if no_equal_neighbours(vals) {
            // Every run has length 1: size the identity block without splitting.
            let vref = vals.iter().fold(W::MAX, |a, &v| a.min(v));
            words += identity_plan(vals, vref).words;
        } else {
            words += block_runs(&mut runs, vals).words;
        }
    }
    header::prefix_bytes(values.len(), &SHAPE) + 4 * words
}

#[inline(always)]
pub(crate) fn encode<W: Word>(values: &[W], out: &mut Vec<u8>) {
    let n = values.len();
    let w = Writer::begin(out, &SHAPE, n);
    let mut runs = Runs::<W>::new();
    for (k, vals) in values.chunks(BLOCK).enumerate() {
        w.mark(out, k);
        let p = block_runs(&mut runs, vals);
        put_block(&runs, &p, out);
    }
    w.mark(out, header::block_count(n, &SHAPE));
}

/// A block's checked metadata.
struct Meta<W> {
    value_reference: W,
    length_reference: u32,
    r: usize,
    m: usize,
    /// Bit widths: value miniblocks at `0..m`, length miniblocks at `m..2m`.
    bit_width: [u32; 32],
    /// Word offset of the first value miniblock.
    head: usize,
}

/// Reads and checks a block's references, run count and bit widths, and that all its
/// miniblocks fit `blk`. Shared check order for both decoders, so they fail alike.
#[inline(always)]
fn block_meta<W: Word>(blk: &[u8], k: usize, off: usize) -> Result<Meta<W>> {
    let rw = W::REF_WORDS;
    if blk.len() < 4 * (rw + 1) {
        return Err(Error::truncated("rfor block", off, 4 * (rw + 1), blk.len()));
    }
    let value_reference = W::read(blk, 0);
    let run_word = read_u32(blk, 4 * rw);
    let r = run_word & 0xffff;
    let length_reference = run_word >> 16;
    if r == 0 || r > MAX_RUNS {
        return Err(Error::InvalidHeader {
            field: "rfor run count",
            offset: (off + 4 * rw) as u64,
            expected: format!("1..={MAX_RUNS}"),
            found: r as u64,
        });
    }
    if length_reference == 0 || length_reference > MAX_RUNS {
        return Err(Error::InvalidHeader {
            field: "rfor length_reference",
            offset: (off + 4 * rw) as u64,
            expected: format!("1..={MAX_RUNS}"),
            found: length_reference as u64,
        });
    }
    let r = r as usize;
    let m = r.div_ceil(32);
    let head = rw + 1 + (2 * m).div_ceil(4);
    if blk.len() < 4 * head {
        return Err(Error::truncated("rfor block", off, 4 * head, blk.len()));
    }
    let last_entries = r - 32 * (m - 1);
    let mut bit_width = [0u32; 32];
    let mut words = head;
    // Byte i is value miniblock i (i < m) or run-length miniblock i - m; the last of each
    // array holds `last_entries`.
    for (i, bw) in bit_width[..2 * m].iter_mut().enumerate() {
        *bw = blk[4 * (rw + 1) + i] as u32;
        let (j, max) = if i < m {
            (i, W::BITS)
        } else {
            (i - m, MAX_LENGTH_WIDTH)
        };
        if *bw > max {
            return Err(Error::BitWidthTooLarge {
                block: k as u64,
                miniblock: i as u32,
                found: *bw,
                max,
            });
        }
        let entries = if j + 1 == m { last_entries } else { 32 };
        words += miniblock_words(entries, *bw);
    }
    if blk.len() < 4 * words {
        return Err(Error::truncated("rfor block", off, 4 * words, blk.len()));
    }
    Ok(Meta {
        value_reference,
        length_reference,
        r,
        m,
        bit_width,
        head,
    })
}

/// Checks the run lengths: each in 1..=512 (the first bad one is reported) and summing to the
/// block's value count.
#[inline(always)]
fn check_lengths(lengths: &[u32], count: usize, off: usize) -> Result<()> {
    // One branch-free pass (it vectorises); the error path searches again for the first culprit.
    let (min, max, sum) = lengths
        .iter()
        .fold((u32::MAX, 0u32, 0u32), |(lo, hi, s), &l| {
            (lo.min(l), hi.max(l), s.wrapping_add(l))
        });
    if min == 0 || max > MAX_RUNS {
        let bad = lengths
            .iter()
            .copied()
            .find(|&l| l == 0 || l > MAX_RUNS)
            .unwrap_or(0);
        return Err(Error::InvalidHeader {
            field: "rfor run length",
            offset: off as u64,
            expected: format!("1..={MAX_RUNS}"),
            found: bad as u64,
        });
    }
    // At most 512 lengths of at most 512: the u32 sum cannot wrap.
    if sum as usize != count {
        return Err(Error::CountMismatch {
            what: "rfor run lengths sum vs block value count",
            expected: count as u64,
            found: sum as u64,
        });
    }
    Ok(())
}

/// Unpacks `m` miniblocks (the last one partial) of one array starting at word `at` of `blk`
/// into `dst` (`32m` slots; the entries past `r` are junk-free zeros plus reference).
#[inline(always)]
fn unpack_array<W: Word>(
    blk: &[u8],
    mut at: usize,
    widths: &[u32],
    last_entries: usize,
    reference: W,
    dst: &mut [W; BLOCK],
) -> usize {
    let m = widths.len();
    for (j, &bw) in widths.iter().enumerate() {
        let slot: &mut [W; 32] = match dst
            .get_mut(32 * j..32 * j + 32)
            .and_then(|s| s.try_into().ok())
        {
            Some(s) => s,
            None => break,
        };
        let src = blk.get(4 * at..).unwrap_or(&[]);
        if j + 1 < m || last_entries == 32 {
            W::unpack_add(bw, src, reference, slot);
            at += bw as usize;
        } else {
            // Partial last miniblock: copy its words into a zero-padded full-size one.
            let words = miniblock_words(last_entries, bw);
            let mut full = [0u8; 4 * 64];
            let n = (4 * words).min(src.len());
            full[..n].copy_from_slice(&src[..n]);
            W::unpack_add(bw, &full, reference, slot);
            at += words;
        }
    }
    at
}

#[inline(always)]
pub(crate) fn decode<W: Word>(payload: &[u8], out: &mut [W]) -> Result<()> {
    let lay = header::parse(payload, &SHAPE, out.len())?;
    let mut values = [W::ZERO; BLOCK];
    let mut lengths = [0u32; BLOCK];
    let mut scratch = [W::ZERO; BLOCK + SHORT];
    for (k, dst) in out.chunks_mut(BLOCK).enumerate() {
        let (blk, off) = block_slice(&lay, k);
        let meta = block_meta::<W>(blk, k, off)?;
        let (r, m) = (meta.r, meta.m);
        let last_entries = r - 32 * (m - 1);
        let after_values = unpack_array(
            blk,
            meta.head,
            &meta.bit_width[..m],
            last_entries,
            meta.value_reference,
            &mut values,
        );
        unpack_array(
            blk,
            after_values,
            &meta.bit_width[m..2 * m],
            last_entries,
            meta.length_reference,
            &mut lengths,
        );
        check_lengths(&lengths[..r], dst.len(), off)?;
        // Lengths are checked to sum to dst.len(), so every run fits.
        if r == dst.len() {
            // Every run has length 1: the values are the output.
            dst.copy_from_slice(&values[..r]);
            continue;
        }
        // Runs of up to SHORT values are written as one SHORT-wide store into `scratch`
        // (the next run overwrites the excess), longer ones with a fill.
        let mut pos = 0usize;
        for (&v, &len) in values[..r].iter().zip(&lengths[..r]) {
            let len = len as usize;
            if len <= SHORT {
                scratch[pos..pos + SHORT].copy_from_slice(&[v; SHORT]);
            } else {
                scratch[pos..pos + len].fill(v);
            }
            pos += len;
        }
        dst.copy_from_slice(&scratch[..dst.len()]);
    }
    Ok(())
}

pub(crate) fn decode_reference<W: Word>(payload: &[u8], out: &mut [W]) -> Result<()> {
    let lay = header::parse(payload, &SHAPE, out.len())?;
    let n = out.len();
    for k in 0..lay.block_count {
        let (blk, off) = block_slice(&lay, k);
        let meta = block_meta::<W>(blk, k, off)?;
        let (r, m) = (meta.r, meta.m);
        // Entry i of an array lies in miniblock i / 32 at slot i % 32; every miniblock before
        // the last is full, so miniblock j starts after the widths of miniblocks 0..j.
        let entry = |array: usize, i: usize| -> u64 {
            let mut start = meta.head;
            for j in 0..array * m {
                let entries = if j % m + 1 == m { r - 32 * (m - 1) } else { 32 };
                start += miniblock_words(entries, meta.bit_width[j]);
            }
            let j = i / 32;
            for jj in 0..j {
                start += meta.bit_width[array * m + jj] as usize;
            }
            let bw = meta.bit_width[array * m + j];
            read_bits_reference(blk, 32 * start + (i % 32) * bw as usize, bw)
        };
        let lengths: Vec<u32> = (0..r)
            .map(|i| meta.length_reference.wrapping_add(entry(1, i) as u32))
            .collect();
        let first = BLOCK * k;
        let last = n.min(first + BLOCK);
        check_lengths(&lengths, last - first, off)?;
        let mut pos = first;
        for (i, &len) in lengths.iter().enumerate() {
            let value = meta.value_reference.wadd(W::from_u64(entry(0, i)));
            for o in &mut out[pos..pos + len as usize] {
                *o = value;
            }
            pos += len as usize;
        }
    }
    Ok(())
}

/// GPU-RFOR in the codec registry.
pub(crate) struct Rfor;

/// The registry entry.
pub(crate) static CODEC: super::IntCodec<Rfor> = super::IntCodec::new();

impl super::Kernels for Rfor {
    const ID: CodecId = CodecId::Rfor;
    /// In `auto`, chosen over FOR only when at least `AUTO_MARGIN` smaller: it decodes
    /// slower than FOR.
    const AUTO: AutoSlot = AutoSlot {
        rank: 2,
        rule: AutoRule::SmallerThanFirstBy {
            num: AUTO_MARGIN.0,
            den: AUTO_MARGIN.1,
        },
    };
    #[inline(always)]
    fn encode<W: Word>(values: &[W], out: &mut Vec<u8>) {
        encode(values, out)
    }
    #[inline(always)]
    fn encoded_size<W: Word>(values: &[W]) -> usize {
        encoded_size(values)
    }
    #[inline(always)]
    fn decode<W: Word>(payload: &[u8], out: &mut [W]) -> Result<()> {
        decode(payload, out)
    }
    fn decode_reference<W: Word>(payload: &[u8], out: &mut [W]) -> Result<()> {
        decode_reference(payload, out)
    }
}
