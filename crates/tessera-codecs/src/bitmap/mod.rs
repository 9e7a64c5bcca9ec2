//! WAH and PLWAH compressed bitmaps (`docs/format/wah.md`, `docs/format/plwah.md`), after
//! Andrzejewski and Wrembel, *GPU-PLWAH: GPU-based implementation of the PLWAH algorithm for
//! compressing bitmaps* (the paper).
//!
//! A bitmap of `bit_len` bits (packed, least significant bit first) is cut into 31-bit
//! **groups**; the last group is padded with 0 bits. Each group is either a **fill** group (all
//! 0 or all 1) or a **literal** group. The compressed form is a stream of 32-bit words: a
//! `literal` (tail) word holds one literal group, a `fill_word` holds a fill bit and a `counter`
//! of fill groups, and, in PLWAH only, a 5-bit `position` that folds the literal following the
//! fill run into the fill_word when it differs from the fill group in exactly one bit.
//!
//! Invariants kept here:
//! - A [`Bitmap`] is always valid (`wah.md` §5): every counter is at least 1, the words encode
//!   exactly `ceil(bit_len / 31)` groups and no bit at or past `bit_len` is set. It is built only
//!   by [`Bitmap::from_payload`] or [`Builder::finish`] (which check all of that), or inside
//!   this module by code that keeps it by construction.
//! - Everything this module writes is **canonical** (`wah.md` §4): the [`Builder`] is the one
//!   place words are made, so compression, the bitwise operations and the conversion give the
//!   same words for the same bitmap (only the test hook `compress_with_max_counter` with a
//!   smaller counter does not). Decoders accept non-canonical (but valid) streams.
//! - Multi-core (`wah.md` §8): [`Bitmap::compress`], [`Bitmap::decompress`] and the binary
//!   operations of [`ops`] split large bitmaps into pieces of groups worked on all cores; the
//!   pieces are stitched into exactly the words (or bytes) of the one-core references
//!   ([`Bitmap::compress_serial`], [`Bitmap::decompress_serial`], [`ops::binary_serial`]).
//! - Decoders never allocate from a header field alone: `bit_len <= MAX_BITS` is checked first
//!   and the groups the words encode must add up to it before any output is written.
//!
//! Modules: [`wah`] and [`plwah`] (word layouts, payload-level compress / decompress, PLWAH to
//! WAH), [`ops`] (AND, OR, XOR, AND-NOT, NOT on the compressed words, cardinality, set bits).

pub mod ops;
mod parallel;
pub mod plwah;
pub mod wah;

pub use ops::Ones;

use crate::codec::{AutoRule, AutoSlot, Chunk, Codec, CodecOptions, Family};
use tessera_format::{CodecId, Error, LogicalType, Result};

/// Codec id reserved for WAH in the container (`wah.md` §1; not yet in `CodecId`).
pub const CODEC_ID_WAH: u8 = 16;
/// Codec id reserved for PLWAH in the container (`plwah.md` §1; not yet in `CodecId`).
pub const CODEC_ID_PLWAH: u8 = 17;
/// Logical type id reserved for `bits` (`wah.md` §1; not yet in `LogicalType`).
pub const LOGICAL_TYPE_BITS: u8 = 10;

/// Bits per group (`wah.md` §2): a 32-bit word less its type bit.
pub const GROUP_BITS: u64 = 31;
/// A group with all 31 bits set: the 1-fill group.
pub const GROUP_ONES: u32 = (1 << 31) - 1;
/// Bytes of the payload header (`wah.md` §3): `bit_len` (u64), `word_count`, `reserved`.
pub const HEADER_BYTES: usize = 16;
/// The longest bitmap a payload may hold (`wah.md` §6): 2^32 bits (512 MiB plain). Its
/// `ceil(2^32 / 31)` groups fit one WAH counter, as in the paper.
pub const MAX_BITS: u64 = 1 << 32;

/// Bitmaps of at least this many groups (about 2 Mbit) are compressed, decompressed and
/// operated on over all cores.
pub const PARALLEL_MIN_GROUPS: u64 = 1 << 16;
/// The fewest groups per parallel task (a multiple of 8: a piece of plain bits is whole bytes).
pub const PARALLEL_CHUNK_GROUPS: u64 = 1 << 15;

/// The two word formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// 30-bit counters, no position (`wah.md`).
    Wah,
    /// 25-bit counters and a 5-bit position (`plwah.md`).
    Plwah,
}

impl Flavor {
    /// The flavor a bitmap codec writes (`None` for a codec that is no bitmap).
    pub fn of_codec(codec: CodecId) -> Option<Flavor> {
        match codec {
            CodecId::Wah => Some(Flavor::Wah),
            CodecId::Plwah => Some(Flavor::Plwah),
            _ => None,
        }
    }

    /// The codec id chunks of this flavor are stored under.
    pub fn codec(self) -> CodecId {
        match self {
            Flavor::Wah => CodecId::Wah,
            Flavor::Plwah => CodecId::Plwah,
        }
    }

    /// The largest counter a fill_word can hold: 2^30 - 1 (WAH) or 2^25 - 1 (PLWAH).
    pub const fn max_counter(self) -> u64 {
        match self {
            Flavor::Wah => wah::MAX_COUNTER as u64,
            Flavor::Plwah => plwah::MAX_COUNTER as u64,
        }
    }

    /// Splits one word into what it encodes.
    pub fn decode_word(self, word: u32) -> Word {
        match self {
            Flavor::Wah => wah::decode_word(word),
            Flavor::Plwah => plwah::decode_word(word),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Flavor::Wah => "wah",
            Flavor::Plwah => "plwah",
        }
    }
}

/// One word, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Word {
    /// A literal (tail) word: one group, bits 0..=30.
    Literal(u32),
    /// A fill_word: `counter` groups of `fill_bit`, then, when `position` is not 0 (PLWAH only),
    /// one more group equal to the fill group with bit `position - 1` flipped.
    Fill {
        fill_bit: bool,
        counter: u32,
        position: u32,
    },
}

/// The number of groups of a bitmap of `bit_len` bits: `ceil(bit_len / 31)`.
pub const fn group_count(bit_len: u64) -> u64 {
    bit_len.div_ceil(GROUP_BITS)
}

/// The bits of the last group that lie inside the bitmap (all 31 when it is full).
pub const fn last_group_mask(bit_len: u64) -> u32 {
    match bit_len % GROUP_BITS {
        0 => GROUP_ONES,
        r => (1u32 << r) - 1,
    }
}

const fn fill_group(fill_bit: bool) -> u32 {
    if fill_bit {
        GROUP_ONES
    } else {
        0
    }
}

/// A valid compressed bitmap: its flavor, its length in bits and its words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bitmap {
    flavor: Flavor,
    bit_len: u64,
    words: Vec<u32>,
}

impl Bitmap {
    /// Compresses `bit_len` bits packed least significant bit first in `bits`, which must be
    /// `ceil(bit_len / 8)` bytes long. Bits of the last byte past `bit_len` are ignored.
    ///
    /// Bitmaps of at least [`PARALLEL_MIN_GROUPS`] groups are compressed on all cores (when the
    /// rayon pool has more than one thread): one piece of groups per task, each writing the
    /// words that do not depend on its neighbours, then the pieces are stitched (fills merged
    /// across the seams, PLWAH positions folded, long runs split) so the words are those of the
    /// sequential reference [`Bitmap::compress_serial`].
    pub fn compress(flavor: Flavor, bits: &[u8], bit_len: u64) -> Result<Self> {
        let groups = group_count(bit_len);
        if !parallel::go_parallel(groups) || bit_len > MAX_BITS {
            return Self::compress_serial(flavor, bits, bit_len);
        }
        Self::compress_pieces(
            flavor,
            bits,
            bit_len,
            parallel::auto_piece_groups(groups),
            flavor.max_counter(),
        )
    }

    /// The sequential reference compressor: one core, whatever the size.
    pub fn compress_serial(flavor: Flavor, bits: &[u8], bit_len: u64) -> Result<Self> {
        Self::compress_with_max_counter(flavor, bits, bit_len, flavor.max_counter())
    }

    /// The multi-core compressor with pieces of `piece_groups` groups (at least 1) and fill
    /// runs split at `max_counter`: a test hook that puts seams anywhere in small bitmaps. Equal
    /// to [`Bitmap::compress_with_max_counter`] with the same `max_counter`.
    #[doc(hidden)]
    pub fn compress_pieces(
        flavor: Flavor,
        bits: &[u8],
        bit_len: u64,
        piece_groups: u64,
        max_counter: u64,
    ) -> Result<Self> {
        check_input(bits, bit_len)?;
        check_max_counter(flavor, max_counter)?;
        use parallel::GroupSink;
        use rayon::prelude::*;
        let groups = group_count(bit_len);
        let piece = piece_groups.max(1);
        let pieces: Vec<parallel::PieceOut> = (0..groups.div_ceil(piece))
            .into_par_iter()
            .map(|c| {
                let from = c * piece;
                let to = (from + piece).min(groups);
                let mut out = parallel::PieceBuilder::new(flavor, max_counter);
                for g in from..to {
                    let mut group = read_group(bits, g);
                    if g + 1 == groups {
                        group &= last_group_mask(bit_len);
                    }
                    out.push_literal(group);
                }
                out.finish()
            })
            .collect();
        Ok(parallel::stitch(flavor, bit_len, max_counter, pieces))
    }

    /// [`Bitmap::compress`] with fill runs split at `max_counter` groups instead of the
    /// flavor's maximum: a test hook that makes the split path reachable with small bitmaps.
    /// The result is valid but not canonical unless `max_counter` is the flavor's maximum.
    #[doc(hidden)]
    pub fn compress_with_max_counter(
        flavor: Flavor,
        bits: &[u8],
        bit_len: u64,
        max_counter: u64,
    ) -> Result<Self> {
        check_input(bits, bit_len)?;
        check_max_counter(flavor, max_counter)?;
        let groups = group_count(bit_len);
        let mut builder = Builder::with_max_counter(flavor, bit_len, max_counter);
        for g in 0..groups {
            let mut group = read_group(bits, g);
            if g + 1 == groups {
                group &= last_group_mask(bit_len);
            }
            builder.push_literal(group);
        }
        Ok(builder.finish_valid())
    }

    /// Parses and validates a payload (`wah.md` §5, checks in that order).
    pub fn from_payload(flavor: Flavor, payload: &[u8]) -> Result<Self> {
        let (bit_len, body) = parse_header(flavor, payload)?;
        let words: Vec<u32> = body
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        validate_words(flavor, bit_len, &words)?;
        Ok(Bitmap {
            flavor,
            bit_len,
            words,
        })
    }

    /// A bitmap from its words alone (a payload's body, e.g. downloaded from a device), checked
    /// as a payload is (`wah.md` §5 steps 2, 4-6) without copying it into payload bytes first.
    pub fn from_words(flavor: Flavor, bit_len: u64, words: Vec<u32>) -> Result<Self> {
        if bit_len > MAX_BITS {
            return Err(Error::InvalidArgument(format!(
                "bitmap of {bit_len} bits exceeds MAX_BITS = {MAX_BITS}"
            )));
        }
        if u32::try_from(words.len()).is_err() {
            return Err(Error::InvalidArgument(format!(
                "{} words do not fit a payload's word_count",
                words.len()
            )));
        }
        validate_words(flavor, bit_len, &words)?;
        Ok(Bitmap {
            flavor,
            bit_len,
            words,
        })
    }

    /// Appends the payload (`wah.md` §3) to `out`.
    pub fn write_payload(&self, out: &mut Vec<u8>) {
        out.reserve(HEADER_BYTES + 4 * self.words.len());
        out.extend_from_slice(&self.bit_len.to_le_bytes());
        out.extend_from_slice(&(self.words.len() as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        for w in &self.words {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }

    /// The payload as a new vector.
    pub fn to_payload(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_payload(&mut out);
        out
    }

    /// Writes the plain bitmap into `out`, which must be `ceil(bit_len / 8)` bytes long; bits of
    /// the last byte past `bit_len` are written as 0.
    ///
    /// Bitmaps of at least [`PARALLEL_MIN_GROUPS`] groups are decompressed on all cores (when
    /// the rayon pool has more than one thread): the output is cut into pieces of a multiple of
    /// 8 groups (so each piece is whole bytes), the word covering each piece's first group is
    /// found by a parallel count of groups per word piece and a scan, and each piece is expanded
    /// into its own bytes. The bytes are those of [`Bitmap::decompress_serial`].
    pub fn decompress(&self, out: &mut [u8]) -> Result<()> {
        let groups = group_count(self.bit_len);
        if parallel::go_parallel(groups) {
            self.decompress_pieces(out, parallel::auto_piece_groups(groups))
        } else {
            self.decompress_serial(out)
        }
    }

    /// The sequential reference decoder: one core, whatever the size.
    pub fn decompress_serial(&self, out: &mut [u8]) -> Result<()> {
        self.check_output(out)?;
        out.fill(0);
        let mut g = 0u64;
        for run in self.runs() {
            match run {
                Run::Fill { fill_bit, count } => {
                    if fill_bit {
                        set_bit_range(out, g * GROUP_BITS, (g + count) * GROUP_BITS, self.bit_len);
                    }
                    g += count;
                }
                Run::Literal(group) => {
                    write_group(out, g, group);
                    g += 1;
                }
            }
        }
        Ok(())
    }

    /// The multi-core decoder with pieces of `piece_groups` groups (rounded up to a multiple of
    /// 8, at least 8): a test hook that puts seams anywhere in small bitmaps.
    #[doc(hidden)]
    pub fn decompress_pieces(&self, out: &mut [u8], piece_groups: u64) -> Result<()> {
        use rayon::prelude::*;
        self.check_output(out)?;
        let groups = group_count(self.bit_len);
        if groups == 0 {
            return Ok(());
        }
        let piece = piece_groups.max(8).next_multiple_of(8);
        // 8 groups are 31 bytes: piece i is bytes [i * piece_bytes, ...) and starts at group
        // i * piece; the pieces of bytes and of groups line up (both end with the bitmap).
        let piece_bytes = (piece / 8 * 31) as usize;
        let cuts = parallel::cuts(groups, piece);
        let starts = parallel::seek(self, &cuts[..cuts.len() - 1]);
        out.par_chunks_mut(piece_bytes)
            .zip(starts.par_iter())
            .enumerate()
            .for_each(|(i, (chunk, &pos))| {
                let g0 = i as u64 * piece;
                let n = piece.min(groups - g0);
                let (first, runs) = self.runs_at(pos);
                expand(chunk, n, first.into_iter().chain(runs));
            });
        Ok(())
    }

    fn check_output(&self, out: &[u8]) -> Result<()> {
        let bytes = self.bit_len.div_ceil(8);
        if out.len() as u64 != bytes {
            return Err(Error::CountMismatch {
                what: "output bytes",
                expected: bytes,
                found: out.len() as u64,
            });
        }
        Ok(())
    }

    /// [`Bitmap::decompress`] into a new vector (its size is bounded by [`MAX_BITS`]).
    pub fn decompress_to_vec(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.bit_len.div_ceil(8) as usize];
        // Cannot fail: the buffer has the size decompress asks for.
        let _ = self.decompress(&mut out);
        out
    }

    /// The word format.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// The length of the bitmap in bits.
    pub fn bit_len(&self) -> u64 {
        self.bit_len
    }

    /// The compressed words.
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// The runs the words encode, in order: what every operation walks.
    pub fn runs(&self) -> Runs<'_> {
        Runs {
            flavor: self.flavor,
            words: &self.words,
            pending: None,
        }
    }
}

/// A stretch of groups: `count` fill groups, or one literal group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// `count >= 1` groups, all bits equal to `fill_bit`.
    Fill { fill_bit: bool, count: u64 },
    /// One group (which may happen to be all 0 or all 1 in a non-canonical stream).
    Literal(u32),
}

/// Iterator over the runs of a valid bitmap's words; a PLWAH fill_word with a position gives a
/// fill run, then a literal run.
#[derive(Debug, Clone)]
pub struct Runs<'a> {
    flavor: Flavor,
    words: &'a [u32],
    pending: Option<u32>,
}

impl Iterator for Runs<'_> {
    type Item = Run;

    fn next(&mut self) -> Option<Run> {
        if let Some(group) = self.pending.take() {
            return Some(Run::Literal(group));
        }
        let (&w, rest) = self.words.split_first()?;
        self.words = rest;
        Some(match self.flavor.decode_word(w) {
            Word::Literal(group) => Run::Literal(group),
            Word::Fill {
                fill_bit,
                counter,
                position,
            } => {
                if position != 0 {
                    self.pending = Some(fill_group(fill_bit) ^ (1 << (position - 1)));
                }
                Run::Fill {
                    fill_bit,
                    count: u64::from(counter),
                }
            }
        })
    }
}

/// The one writer of words (`wah.md` §4): it takes groups in order (singly or as fill runs) and
/// emits the canonical words. Every all-0 / all-1 group joins a fill run; runs longer than the
/// maximum counter are split into full fill_words first; in PLWAH a literal that differs from
/// the fill group of the run just before it in exactly one bit becomes that run's position.
#[derive(Debug)]
pub struct Builder {
    flavor: Flavor,
    bit_len: u64,
    max_counter: u64,
    words: Vec<u32>,
    /// The fill run not yet written: (fill_bit, groups), groups >= 1.
    fill: Option<(bool, u64)>,
    /// Groups pushed so far, and the last one: what [`Builder::finish`] checks.
    groups: u64,
    last: u32,
}

impl Builder {
    /// A builder for a bitmap of `bit_len` bits. The caller pushes exactly
    /// `ceil(bit_len / 31)` groups, with no bit set past `bit_len` ([`Builder::finish`]
    /// checks).
    pub fn new(flavor: Flavor, bit_len: u64) -> Self {
        Self::with_max_counter(flavor, bit_len, flavor.max_counter())
    }

    fn with_max_counter(flavor: Flavor, bit_len: u64, max_counter: u64) -> Self {
        Builder {
            flavor,
            bit_len,
            max_counter,
            words: Vec::new(),
            fill: None,
            groups: 0,
            last: 0,
        }
    }

    /// Appends `count` groups of `fill_bit`.
    pub fn push_fill(&mut self, fill_bit: bool, count: u64) {
        if count == 0 {
            return;
        }
        self.groups = self.groups.saturating_add(count);
        self.last = fill_group(fill_bit);
        match &mut self.fill {
            Some((bit, n)) if *bit == fill_bit => *n += count,
            _ => {
                self.flush(0);
                self.fill = Some((fill_bit, count));
            }
        }
    }

    /// Appends one group (bits 0..=30).
    pub fn push_literal(&mut self, group: u32) {
        let group = group & GROUP_ONES;
        match group {
            0 => self.push_fill(false, 1),
            GROUP_ONES => self.push_fill(true, 1),
            _ => {
                if let (Flavor::Plwah, Some((fill_bit, _))) = (self.flavor, self.fill) {
                    let diff = group ^ fill_group(fill_bit);
                    if diff.count_ones() == 1 {
                        self.flush(diff.trailing_zeros() + 1);
                        self.groups = self.groups.saturating_add(1);
                        self.last = group;
                        return;
                    }
                }
                self.flush(0);
                self.words.push(group);
                self.groups = self.groups.saturating_add(1);
                self.last = group;
            }
        }
    }

    /// Writes the pending fill run (if any), the last fill_word carrying `position`.
    fn flush(&mut self, position: u32) {
        let Some((fill_bit, mut n)) = self.fill.take() else {
            return;
        };
        while n > self.max_counter {
            self.words
                .push(self.fill_word(fill_bit, self.max_counter, 0));
            n -= self.max_counter;
        }
        self.words.push(self.fill_word(fill_bit, n, position));
    }

    fn fill_word(&self, fill_bit: bool, counter: u64, position: u32) -> u32 {
        match self.flavor {
            Flavor::Wah => wah::fill_word(fill_bit, counter as u32),
            Flavor::Plwah => plwah::fill_word(fill_bit, counter as u32, position),
        }
    }

    /// The finished bitmap, checked like a payload (`wah.md` §5 steps 2, 5, 6): `bit_len <=
    /// MAX_BITS`, exactly `ceil(bit_len / 31)` groups pushed, no bit set past `bit_len`.
    pub fn finish(self) -> Result<Bitmap> {
        if self.bit_len > MAX_BITS {
            return Err(Error::InvalidArgument(format!(
                "bitmap of {} bits exceeds MAX_BITS = {MAX_BITS}",
                self.bit_len
            )));
        }
        let expected = group_count(self.bit_len);
        if self.groups != expected {
            return Err(Error::CountMismatch {
                what: "groups pushed (ceil(bit_len / 31))",
                expected,
                found: self.groups,
            });
        }
        let past = self.last & !last_group_mask(self.bit_len);
        if expected > 0 && past != 0 {
            return Err(Error::SetBitPastEnd {
                bit_len: self.bit_len,
                bit: (expected - 1) * GROUP_BITS + u64::from(past.trailing_zeros()),
            });
        }
        Ok(self.finish_valid())
    }

    /// The finished bitmap, for callers that keep the invariants by construction.
    pub(crate) fn finish_valid(mut self) -> Bitmap {
        self.flush(0);
        Bitmap {
            flavor: self.flavor,
            bit_len: self.bit_len,
            words: self.words,
        }
    }
}

fn check_max_counter(flavor: Flavor, max_counter: u64) -> Result<()> {
    if max_counter == 0 || max_counter > flavor.max_counter() {
        return Err(Error::InvalidArgument(format!(
            "max_counter {max_counter} outside 1..={}",
            flavor.max_counter()
        )));
    }
    Ok(())
}

/// The caller's side of `compress`: `bit_len <= MAX_BITS` and `ceil(bit_len / 8)` bytes.
fn check_input(bits: &[u8], bit_len: u64) -> Result<()> {
    if bit_len > MAX_BITS {
        return Err(Error::InvalidArgument(format!(
            "bitmap of {bit_len} bits exceeds MAX_BITS = {MAX_BITS}"
        )));
    }
    if bits.len() as u64 != bit_len.div_ceil(8) {
        return Err(Error::InvalidArgument(format!(
            "a bitmap of {bit_len} bits needs {} bytes, got {}",
            bit_len.div_ceil(8),
            bits.len()
        )));
    }
    Ok(())
}

/// Reads the header (`wah.md` §3) and checks steps 1-3 of `wah.md` §5; returns `bit_len` and
/// the word bytes.
fn parse_header(flavor: Flavor, payload: &[u8]) -> Result<(u64, &[u8])> {
    if payload.len() % 4 != 0 {
        return Err(Error::Misaligned {
            len: payload.len() as u64,
        });
    }
    if payload.len() < HEADER_BYTES {
        return Err(Error::truncated(
            "bitmap header",
            0,
            HEADER_BYTES,
            payload.len(),
        ));
    }
    let word = |i: usize| {
        u32::from_le_bytes([
            payload[4 * i],
            payload[4 * i + 1],
            payload[4 * i + 2],
            payload[4 * i + 3],
        ])
    };
    let bit_len = u64::from(word(0)) | u64::from(word(1)) << 32;
    let word_count = word(2);
    let reserved = word(3);
    if reserved != 0 {
        return Err(Error::InvalidHeader {
            field: "reserved",
            offset: 12,
            expected: "0".into(),
            found: u64::from(reserved),
        });
    }
    if bit_len > MAX_BITS {
        return Err(Error::InvalidHeader {
            field: "bit_len",
            offset: 0,
            expected: format!("<= {MAX_BITS} ({} MAX_BITS)", flavor.name()),
            found: bit_len,
        });
    }
    let needed = HEADER_BYTES as u64 + 4 * u64::from(word_count);
    let have = payload.len() as u64;
    if have < needed {
        return Err(Error::Truncated {
            what: "bitmap words",
            offset: HEADER_BYTES as u64,
            needed: needed - HEADER_BYTES as u64,
            available: have - HEADER_BYTES as u64,
        });
    }
    if have > needed {
        return Err(Error::TrailingBytes {
            what: "bitmap words",
            offset: needed,
            count: have - needed,
        });
    }
    Ok((bit_len, &payload[HEADER_BYTES..]))
}

/// Steps 4-6 of `wah.md` §5: every counter >= 1, the groups add up to `ceil(bit_len / 31)`,
/// no bit set past `bit_len` in the last group.
fn validate_words(flavor: Flavor, bit_len: u64, words: &[u32]) -> Result<()> {
    let mut groups = 0u64;
    let mut last = 0u32;
    for (i, &w) in words.iter().enumerate() {
        match flavor.decode_word(w) {
            Word::Literal(group) => {
                groups += 1;
                last = group;
            }
            Word::Fill {
                fill_bit,
                counter,
                position,
            } => {
                if counter == 0 {
                    return Err(Error::FillCounterZero {
                        word: i as u64,
                        offset: (HEADER_BYTES + 4 * i) as u64,
                    });
                }
                groups += u64::from(counter);
                last = fill_group(fill_bit);
                if position != 0 {
                    groups += 1;
                    last ^= 1 << (position - 1);
                }
            }
        }
    }
    let expected = group_count(bit_len);
    if groups != expected {
        return Err(Error::CountMismatch {
            what: "groups encoded by the words (ceil(bit_len / 31))",
            expected,
            found: groups,
        });
    }
    let past = last & !last_group_mask(bit_len);
    if expected > 0 && past != 0 {
        return Err(Error::SetBitPastEnd {
            bit_len,
            bit: (expected - 1) * GROUP_BITS + u64::from(past.trailing_zeros()),
        });
    }
    Ok(())
}

/// Group `g` of a packed bitmap (bits past the end of `bits` read as 0).
#[inline]
fn read_group(bits: &[u8], g: u64) -> u32 {
    let start = g * GROUP_BITS;
    let byte = (start / 8) as usize;
    let shift = start % 8;
    if let Some(w) = bits.get(byte..byte + 8) {
        let mut window = [0u8; 8];
        window.copy_from_slice(w);
        return ((u64::from_le_bytes(window) >> shift) as u32) & GROUP_ONES;
    }
    let mut window = [0u8; 8];
    let end = (byte + 5).min(bits.len());
    if byte < end {
        window[..end - byte].copy_from_slice(&bits[byte..end]);
    }
    ((u64::from_le_bytes(window) >> shift) as u32) & GROUP_ONES
}

/// Writes the first `groups` groups of `runs` into `out` from its first bit (the multi-core
/// decoder's piece). Every byte of `out` is written; bits past `8 * out.len()` are dropped
/// (they are padding, 0 in a valid bitmap).
fn expand(out: &mut [u8], groups: u64, runs: impl Iterator<Item = Run>) {
    let mut w = BitWriter {
        out,
        byte: 0,
        acc: 0,
        n: 0,
    };
    let mut g = 0u64;
    for run in runs {
        if g >= groups {
            break;
        }
        match run {
            Run::Fill { fill_bit, count } => {
                let c = count.min(groups - g);
                w.fill(fill_bit, c * GROUP_BITS);
                g += c;
            }
            Run::Literal(group) => {
                w.push_group(group);
                g += 1;
            }
        }
    }
    w.finish();
}

/// Sequential packed-bit writer: `acc` holds `n < 32` bits not yet stored at `out[byte..]`.
struct BitWriter<'a> {
    out: &'a mut [u8],
    byte: usize,
    acc: u64,
    n: u32,
}

impl BitWriter<'_> {
    #[inline]
    fn push_group(&mut self, group: u32) {
        self.acc |= u64::from(group & GROUP_ONES) << self.n;
        self.n += GROUP_BITS as u32;
        if self.n >= 32 {
            self.store(4);
        }
    }

    /// Stores the low `k <= n / 8` bytes of `acc` (clipped to `out`) and drops them.
    #[inline]
    fn store(&mut self, k: usize) {
        self.put(k);
        self.acc >>= 8 * k;
        self.n -= 8 * k as u32;
    }

    /// Writes the low `k` bytes of `acc` at `byte` (clipped to `out`); advances `byte`.
    #[inline]
    fn put(&mut self, k: usize) {
        let bytes = self.acc.to_le_bytes();
        if let Some(dst) = self.out.get_mut(self.byte..self.byte + k) {
            dst.copy_from_slice(&bytes[..k]);
        } else {
            let len = self.out.len();
            let (from, to) = (self.byte.min(len), (self.byte + k).min(len));
            self.out[from..to].copy_from_slice(&bytes[..to - from]);
        }
        self.byte += k;
    }

    /// Appends `bits` bits equal to `fill_bit`.
    fn fill(&mut self, fill_bit: bool, mut bits: u64) {
        // Top the pending bits up to a byte boundary, store them whole.
        let k = u64::from((8 - self.n % 8) % 8).min(bits);
        if fill_bit {
            self.acc |= ((1u64 << k) - 1) << self.n;
        }
        self.n += k as u32;
        bits -= k;
        let whole = (self.n / 8) as usize;
        if whole > 0 {
            self.store(whole);
        }
        if bits == 0 {
            return;
        }
        // n == 0 now: whole bytes straight into `out`, then the rest pending.
        let bytes = (bits / 8) as usize;
        let end = (self.byte + bytes).min(self.out.len());
        let from = self.byte.min(end);
        self.out[from..end].fill(if fill_bit { 0xFF } else { 0 });
        self.byte += bytes;
        let rest = (bits % 8) as u32;
        self.acc = if fill_bit { (1u64 << rest) - 1 } else { 0 };
        self.n = rest;
    }

    /// Stores the last partial bytes and zeroes whatever of `out` was not reached.
    fn finish(mut self) {
        let k = self.n.div_ceil(8) as usize;
        self.put(k);
        let from = self.byte.min(self.out.len());
        self.out[from..].fill(0);
    }
}

/// ORs group `g` into a zeroed packed bitmap (bits past the end of `out` are dropped).
fn write_group(out: &mut [u8], g: u64, group: u32) {
    let start = g * GROUP_BITS;
    let byte = (start / 8) as usize;
    let v = u64::from(group) << (start % 8);
    for (k, b) in v.to_le_bytes().iter().take(5).enumerate() {
        if let Some(o) = out.get_mut(byte + k) {
            *o |= b;
        }
    }
}

/// Sets bits `from..to` (clipped to `bit_len`) of a packed bitmap.
fn set_bit_range(out: &mut [u8], from: u64, to: u64, bit_len: u64) {
    let to = to.min(bit_len);
    let mut i = from;
    while i < to && i % 8 != 0 {
        out[(i / 8) as usize] |= 1 << (i % 8);
        i += 1;
    }
    let whole = (to - i.min(to)) / 8;
    if whole > 0 {
        let b = (i / 8) as usize;
        out[b..b + whole as usize].fill(0xFF);
        i += whole * 8;
    }
    while i < to {
        out[(i / 8) as usize] |= 1 << (i % 8);
        i += 1;
    }
}

/// A bitmap flavor as a chunk codec of bits columns (`wah.rs` and `plwah.rs` register one
/// each). A payload's stored bit length must equal the chunk's value count
/// (`Error::CountMismatch`).
pub(crate) struct BitmapCodec {
    pub(crate) id: CodecId,
    pub(crate) flavor: Flavor,
    /// Its rank in the automatic choice for bits.
    pub(crate) auto_rank: u8,
}

impl Codec for BitmapCodec {
    fn id(&self) -> CodecId {
        self.id
    }

    fn auto_slot(&self, family: Family) -> Option<AutoSlot> {
        (family == Family::Bits).then_some(AutoSlot {
            rank: self.auto_rank,
            rule: AutoRule::Smaller,
        })
    }

    fn encode(&self, chunk: &Chunk<'_>, _: &CodecOptions, out: &mut Vec<u8>) -> Result<()> {
        Bitmap::compress(self.flavor, chunk.raw(), chunk.value_count())?.write_payload(out);
        Ok(())
    }

    fn decode(
        &self,
        _: LogicalType,
        payload: &[u8],
        value_count: u64,
        out: &mut [u8],
    ) -> Result<()> {
        let bits = payload_bit_len(self.flavor, payload)?;
        if bits != value_count {
            return Err(Error::CountMismatch {
                what: "bitmap bit length",
                expected: value_count,
                found: bits,
            });
        }
        Bitmap::from_payload(self.flavor, payload)?.decompress(out)
    }

    /// The same decoder: a bitmap has one, the reference of [`wah::decompress`] and
    /// [`plwah::decompress`] (validate the words as `wah.md` §5 reads them, then write them).
    fn decode_reference(
        &self,
        ty: LogicalType,
        payload: &[u8],
        value_count: u64,
        out: &mut [u8],
    ) -> Result<()> {
        self.decode(ty, payload, value_count, out)
    }
}

/// The bitmap length a payload announces, after the header checks of `wah.md` §5 steps 1-3
/// (so at most [`MAX_BITS`]): what a caller sizes the output of `decompress` by.
pub fn payload_bit_len(flavor: Flavor, payload: &[u8]) -> Result<u64> {
    parse_header(flavor, payload).map(|(bit_len, _)| bit_len)
}
