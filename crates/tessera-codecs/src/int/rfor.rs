//! GPU-RFOR (`docs/format/rfor.md`): run-length encoding per 512-value block; the run values
//! and run lengths are each FOR-packed in miniblocks of 32 entries.
//!
//! Block layout: `value_reference` (REF_WORDS words), `run_word` (`r | length_reference << 16`),
//! `ceil(2m/4)` bit-width words (`m = ceil(r/32)`: value widths then length widths), the value
//! miniblocks, the length miniblocks. The last miniblock of each array stores only its real
//! entries' bits, `ceil(e * bit_width / 32)` words. Blocks are not padded: the last block holds
//! `total_count - 512k` values. Invariants the encoder keeps: runs are maximal and never cross a
//! block; references are the minima; run-length widths are at most 10 (lengths fit 1..=512).

use super::for_::{block_slice, miniblock_width, read_bits_reference};
use super::header::{self, put_words, Shape, Writer};
use super::word::{read_u32, Word};
use tessera_format::{Error, Result};

pub(crate) const BLOCK: usize = 512;
/// Most runs in a block, and most any single run length.
const MAX_RUNS: u32 = 512;
/// Largest `bit_width` of a run-length miniblock.
const MAX_LENGTH_WIDTH: u32 = 10;
const SHAPE: Shape = Shape { block_size: 512, miniblock_count: 16, tile_blocks: 1, lead_words: 0 };
/// Words of the block's data after the fixed part, at most: 16 value miniblocks of 64 words and
/// 16 length miniblocks of 10.
const MAX_BLOCK_WORDS: usize = 2 + 1 + 8 + 16 * 64 + 16 * 10;

/// The maximal runs of one block.
struct Runs<W> {
    values: [W; BLOCK],
    lengths: [u32; BLOCK],
    r: usize,
}

impl<W: Word> Runs<W> {
    fn new() -> Self {
        Runs { values: [W::ZERO; BLOCK], lengths: [0; BLOCK], r: 0 }
    }

    /// Splits `vals` (1..=512 values) into maximal runs.
    #[inline]
    fn split(&mut self, vals: &[W]) {
        let mut r = 0usize;
        let mut cur = vals[0];
        let mut len = 0u32;
        for &v in vals {
            if v != cur {
                self.values[r] = cur;
                self.lengths[r] = len;
                r += 1;
                cur = v;
                len = 0;
            }
            len += 1;
        }
        self.values[r] = cur;
        self.lengths[r] = len;
        self.r = r + 1;
    }
}

/// Words a miniblock of `entries` entries takes at `bit_width` (full: `bit_width`).
#[inline(always)]
fn miniblock_words(entries: usize, bit_width: u32) -> usize {
    (entries * bit_width as usize).div_ceil(32)
}

/// Packed entries (`x - reference`) of miniblock `j` of `src[..r]`, zero beyond `r`.
#[inline(always)]
fn reduce_mb<W: Word>(src: &[W], j: usize, reference: W) -> [W; 32] {
    let mut mb = [W::ZERO; 32];
    for (d, &v) in mb.iter_mut().zip(src.get(32 * j..).unwrap_or(&[])) {
        *d = v.wsub(reference);
    }
    mb
}

/// Appends one block for `runs` (or only counts its words when `out` is `None`).
#[inline]
fn put_block<W: Word>(runs: &Runs<W>, out: Option<&mut Vec<u8>>) -> usize {
    let r = runs.r;
    let m = r.div_ceil(32);
    let last_entries = r - 32 * (m - 1);
    let values = &runs.values[..r];
    let lengths = &runs.lengths[..r];
    let vref = values.iter().fold(W::MAX, |a, &v| a.min(v));
    let lref = lengths.iter().fold(u32::MAX, |a, &v| a.min(v));
    let rw = W::REF_WORDS;
    let bw_words = (2 * m).div_ceil(4);
    let head = rw + 1 + bw_words;
    let mut buf = [0u32; MAX_BLOCK_WORDS];
    let mut pos = head;
    let mut bw_bytes = [0u8; 32];
    let mut tmp = [0u32; 64];
    for j in 0..m {
        let entries = if j + 1 == m { last_entries } else { 32 };
        let mb = reduce_mb(values, j, vref);
        let bw = miniblock_width(&mb);
        bw_bytes[j] = bw as u8;
        let words = miniblock_words(entries, bw);
        if out.is_some() {
            W::pack(bw, &mb, &mut tmp);
            buf[pos..pos + words].copy_from_slice(&tmp[..words]);
        }
        pos += words;
    }
    for j in 0..m {
        let entries = if j + 1 == m { last_entries } else { 32 };
        let mb = reduce_mb(lengths, j, lref);
        let bw = miniblock_width(&mb);
        bw_bytes[m + j] = bw as u8;
        let words = miniblock_words(entries, bw);
        if out.is_some() {
            u32::pack(bw, &mb, &mut tmp);
            buf[pos..pos + words].copy_from_slice(&tmp[..words]);
        }
        pos += words;
    }
    if let Some(out) = out {
        vref.put_words(&mut buf[..rw]);
        buf[rw] = r as u32 | lref << 16;
        for (i, w) in buf[rw + 1..head].iter_mut().enumerate() {
            let b = &bw_bytes[4 * i..4 * i + 4];
            *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        put_words(out, &buf[..pos]);
    }
    pos
}

pub(crate) fn encoded_size<W: Word>(values: &[W]) -> usize {
    let mut runs = Runs::<W>::new();
    let mut words = 0usize;
    for vals in values.chunks(BLOCK) {
        runs.split(vals);
        words += put_block(&runs, None);
    }
    header::prefix_bytes(values.len(), &SHAPE) + 4 * words
}

pub(crate) fn encode<W: Word>(values: &[W], out: &mut Vec<u8>) {
    let n = values.len();
    let w = Writer::begin(out, &SHAPE, n);
    let mut runs = Runs::<W>::new();
    for (k, vals) in values.chunks(BLOCK).enumerate() {
        w.mark(out, k);
        runs.split(vals);
        put_block(&runs, Some(out));
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
    for i in 0..2 * m {
        let bw = blk[4 * (rw + 1) + i] as u32;
        let max = if i < m { W::BITS } else { MAX_LENGTH_WIDTH };
        if bw > max {
            return Err(Error::BitWidthTooLarge { block: k as u64, miniblock: i as u32, found: bw, max });
        }
        bit_width[i] = bw;
        let entries = if i % m + 1 == m { last_entries } else { 32 };
        words += miniblock_words(entries, bw);
    }
    if blk.len() < 4 * words {
        return Err(Error::truncated("rfor block", off, 4 * words, blk.len()));
    }
    Ok(Meta { value_reference, length_reference, r, m, bit_width, head })
}

/// Checks the run lengths: each in 1..=512 and summing to the block's value count.
fn check_lengths(lengths: &[u32], count: usize, off: usize) -> Result<()> {
    let mut sum = 0usize;
    for &len in lengths {
        if len == 0 || len > MAX_RUNS {
            return Err(Error::InvalidHeader {
                field: "rfor run length",
                offset: off as u64,
                expected: format!("1..={MAX_RUNS}"),
                found: len as u64,
            });
        }
        sum += len as usize;
    }
    if sum != count {
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
#[inline]
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
        let slot: &mut [W; 32] = match dst.get_mut(32 * j..32 * j + 32).and_then(|s| s.try_into().ok()) {
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

pub(crate) fn decode<W: Word>(payload: &[u8], out: &mut [W]) -> Result<()> {
    let lay = header::parse(payload, &SHAPE, out.len())?;
    let mut values = [W::ZERO; BLOCK];
    let mut lengths = [0u32; BLOCK];
    for (k, dst) in out.chunks_mut(BLOCK).enumerate() {
        let (blk, off) = block_slice(&lay, k);
        let meta = block_meta::<W>(blk, k, off)?;
        let (r, m) = (meta.r, meta.m);
        let last_entries = r - 32 * (m - 1);
        let after_values = unpack_array(blk, meta.head, &meta.bit_width[..m], last_entries, meta.value_reference, &mut values);
        unpack_array(blk, after_values, &meta.bit_width[m..2 * m], last_entries, meta.length_reference, &mut lengths);
        check_lengths(&lengths[..r], dst.len(), off)?;
        // Lengths are checked to sum to dst.len(), so every run fits.
        let mut pos = 0usize;
        for (&v, &len) in values[..r].iter().zip(&lengths[..r]) {
            let end = pos + len as usize;
            dst[pos..end].fill(v);
            pos = end;
        }
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
        let lengths: Vec<u32> =
            (0..r).map(|i| meta.length_reference.wrapping_add(entry(1, i) as u32)).collect();
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
