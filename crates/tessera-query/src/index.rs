//! Bitmap indexes over integer columns (`docs/format/bitmap-index.md`), stored as WAH bitmaps in
//! a `.tsr` file, answering `IN (...)` and range predicates ANDed across columns.
//!
//! An index over a column of `rows` values has `bins`: inclusive key ranges `[lo, hi]` that
//! partition the column's values, and one WAH bitmap per bin marking the rows whose value falls
//! in it. With at most `max_distinct` distinct values each bin is one value (an equality index,
//! exact for every predicate); otherwise bins are equal-frequency value ranges, and a predicate
//! that covers a bin only in part makes that bin's rows candidates, checked against the column's
//! values, which the index then stores too.
//!
//! Keys are the column's values mapped order-preservingly to u64 (signed types flip the sign bit
//! of the sign-extended value), so one code path serves every integer type.
//!
//! Bitmaps are cut into `CHUNK_BITS`-bit chunks (one `.tsr` chunk each, a multiple of 31 × 8
//! bits so chunks stay group- and byte-aligned), so predicates are evaluated chunk by chunk in
//! parallel and never on more than one chunk per bin at a time.

use rayon::prelude::*;
use tessera_codecs::bitmap::ops::Op;
use tessera_codecs::bitmap::{self, Bitmap, Builder, Flavor};
use tessera_codecs::column;
use tessera_format::container::{Container, ContainerWriter};
use tessera_format::{CodecId, Error, LogicalType, Result};

/// Bits per bitmap chunk: 2^24 − (2^24 mod 248), a multiple of 31 and of 8.
pub const CHUNK_BITS: u64 = (1 << 24) - (1 << 24) % 248;
/// Default most distinct values for an equality index.
pub const DEFAULT_MAX_DISTINCT: usize = 1024;
/// Default number of range bins otherwise.
pub const DEFAULT_RANGE_BINS: usize = 64;

/// Maps a raw little-endian value of `ty` to its order-preserving u64 key.
pub fn key_of(ty: LogicalType, raw: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let w = ty.width();
    b[..w].copy_from_slice(&raw[..w]);
    if ty.signed() && raw[w - 1] & 0x80 != 0 {
        b[w..].fill(0xff);
    }
    let v = u64::from_le_bytes(b);
    if ty.signed() {
        v ^ (1 << 63)
    } else {
        v
    }
}

/// The value a key stands for, as i128 (for parsing and printing predicates).
pub fn value_of(ty: LogicalType, key: u64) -> i128 {
    if ty.signed() {
        (key ^ (1 << 63)) as i64 as i128
    } else {
        key as i128
    }
}

/// The key of a value given on the command line, or `None` when the type cannot hold it.
pub fn key_of_value(ty: LogicalType, v: i128) -> Option<u64> {
    let bits = 8 * ty.width() as u32;
    let (min, max) = if ty.signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    if v < min || v > max {
        return None;
    }
    Some(if ty.signed() {
        (v as i64 as u64) ^ (1 << 63)
    } else {
        v as u64
    })
}

/// A predicate on one column, in values of its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Predicate {
    /// `x IN (values)`.
    In(Vec<i128>),
    /// `lo <= x <= hi`.
    Range(i128, i128),
}

/// One column's index.
#[derive(Debug, Clone)]
pub struct ColumnIndex {
    pub name: String,
    pub ty: LogicalType,
    pub rows: u64,
    /// Inclusive key ranges, ascending, disjoint.
    pub bins: Vec<(u64, u64)>,
    /// `bitmaps[bin][chunk]`, each of `CHUNK_BITS` bits (the last chunk shorter).
    pub bitmaps: Vec<Vec<Bitmap>>,
    /// The column's keys, kept when some bin spans more than one value.
    pub keys: Option<Vec<u64>>,
}

impl ColumnIndex {
    /// Builds the index of column `name` from its raw little-endian values.
    pub fn build(
        name: &str,
        ty: LogicalType,
        raw: &[u8],
        max_distinct: usize,
        range_bins: usize,
    ) -> Result<ColumnIndex> {
        if !ty.is_integer() {
            return Err(Error::InvalidArgument(format!(
                "bitmap indexes cover integer columns, not {}",
                ty.name()
            )));
        }
        let w = ty.width();
        let keys: Vec<u64> = raw.par_chunks_exact(w).map(|v| key_of(ty, v)).collect();
        let rows = keys.len() as u64;
        let mut sorted = keys.clone();
        sorted.par_sort_unstable();
        let mut distinct = sorted.clone();
        distinct.dedup();
        let bins: Vec<(u64, u64)> = if distinct.len() <= max_distinct.max(1) {
            distinct.iter().map(|&k| (k, k)).collect()
        } else {
            // Equal-frequency bins whose edges fall between distinct values.
            let per = sorted.len().div_ceil(range_bins.max(1));
            let mut bins = Vec::new();
            let mut i = 0;
            while i < sorted.len() {
                let lo = sorted[i];
                let mut j = (i + per).min(sorted.len()) - 1;
                let hi = sorted[j];
                while j + 1 < sorted.len() && sorted[j + 1] == hi {
                    j += 1;
                }
                bins.push((lo, hi));
                i = j + 1;
            }
            bins
        };
        let exact = bins.iter().all(|(lo, hi)| lo == hi);
        let chunks = rows.div_ceil(CHUNK_BITS).max(1) as usize;
        // Per chunk: the rows of each bin, then a bitmap per bin.
        let per_chunk: Vec<Vec<Bitmap>> = (0..chunks)
            .into_par_iter()
            .map(|p| {
                let start = p as u64 * CHUNK_BITS;
                let end = (start + CHUNK_BITS).min(rows);
                let mut rows_of: Vec<Vec<u32>> = vec![Vec::new(); bins.len()];
                for (r, &k) in keys[start as usize..end as usize].iter().enumerate() {
                    let b = bins.partition_point(|&(_, hi)| hi < k);
                    rows_of[b].push(r as u32);
                }
                rows_of
                    .iter()
                    .map(|pos| from_positions(pos, end - start))
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<_>>()?;
        let mut bitmaps: Vec<Vec<Bitmap>> = vec![Vec::with_capacity(chunks); bins.len()];
        for chunk in per_chunk {
            for (b, bm) in chunk.into_iter().enumerate() {
                bitmaps[b].push(bm);
            }
        }
        Ok(ColumnIndex {
            name: name.to_owned(),
            ty,
            rows,
            bins,
            bitmaps,
            keys: (!exact).then_some(keys),
        })
    }

    /// Whether every bin is one value (no candidate checks needed).
    pub fn is_exact(&self) -> bool {
        self.keys.is_none()
    }

    /// Chunks of every bitmap.
    pub fn chunks(&self) -> usize {
        self.bitmaps.first().map_or(0, Vec::len)
    }

    /// Bits in chunk `p`.
    fn chunk_bits(&self, p: usize) -> u64 {
        (self.rows - p as u64 * CHUNK_BITS).min(CHUNK_BITS)
    }

    /// The key ranges a predicate selects.
    fn key_ranges(&self, pred: &Predicate) -> Result<Vec<(u64, u64)>> {
        let ty = self.ty;
        match pred {
            Predicate::In(vals) => Ok(vals
                .iter()
                .filter_map(|&v| key_of_value(ty, v))
                .map(|k| (k, k))
                .collect()),
            Predicate::Range(lo, hi) => {
                if lo > hi {
                    return Ok(Vec::new());
                }
                // Clamp to the type's domain.
                let bits = 8 * ty.width() as u32;
                let (min, max) = if ty.signed() {
                    (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
                } else {
                    (0, (1i128 << bits) - 1)
                };
                let (lo, hi) = ((*lo).max(min), (*hi).min(max));
                if lo > hi {
                    return Ok(Vec::new());
                }
                match (key_of_value(ty, lo), key_of_value(ty, hi)) {
                    (Some(a), Some(b)) => Ok(vec![(a, b)]),
                    _ => Err(Error::InvalidArgument("range outside the type".into())),
                }
            }
        }
    }

    /// Chunk `p` of the rows matching `pred`: the OR of fully covered bins' bitmaps, plus rows of
    /// partly covered bins whose value passes.
    fn eval_chunk(&self, pred: &Predicate, p: usize) -> Result<Bitmap> {
        let bits = self.chunk_bits(p);
        let mut acc = empty(bits)?;
        let mut candidates = empty(bits)?;
        for (qlo, qhi) in self.key_ranges(pred)? {
            let first = self.bins.partition_point(|&(_, hi)| hi < qlo);
            for b in first..self.bins.len() {
                let (lo, hi) = self.bins[b];
                if lo > qhi {
                    break;
                }
                let bm = &self.bitmaps[b][p];
                if qlo <= lo && hi <= qhi {
                    acc = bitmap::ops::or(&acc, bm)?;
                } else {
                    candidates = bitmap::ops::or(&candidates, bm)?;
                }
            }
        }
        if bitmap::ops::count_ones(&candidates) == 0 {
            return Ok(acc);
        }
        let keys = self.keys.as_ref().ok_or_else(|| {
            Error::InvalidArgument("a range bin without the column's values".into())
        })?;
        let ranges = self.key_ranges(pred)?;
        let base = p as u64 * CHUNK_BITS;
        let passing: Vec<u32> = bitmap::ops::Ones::new(&candidates)
            .filter(|&r| {
                let k = keys[(base + r) as usize];
                ranges.iter().any(|&(a, b)| a <= k && k <= b)
            })
            .map(|r| r as u32)
            .collect();
        bitmap::ops::or(&acc, &from_positions(&passing, bits)?)
    }
}

/// An all-zero WAH bitmap of `bits` bits.
fn empty(bits: u64) -> Result<Bitmap> {
    from_positions(&[], bits)
}

/// A WAH bitmap of `bits` bits with the given ascending positions set.
pub fn from_positions(pos: &[u32], bits: u64) -> Result<Bitmap> {
    let mut b = Builder::new(Flavor::Wah, bits);
    let groups = bitmap::group_count(bits);
    let mut g = 0u64;
    let mut i = 0;
    while i < pos.len() {
        let pg = pos[i] as u64 / bitmap::GROUP_BITS;
        if pg > g {
            b.push_fill(false, pg - g);
            g = pg;
        }
        let mut word = 0u32;
        while i < pos.len() && pos[i] as u64 / bitmap::GROUP_BITS == g {
            word |= 1 << (pos[i] as u64 % bitmap::GROUP_BITS);
            i += 1;
        }
        b.push_literal(word);
        g += 1;
    }
    b.push_fill(false, groups - g);
    b.finish()
}

/// A set of column indexes (one file).
#[derive(Debug, Clone, Default)]
pub struct Index {
    pub columns: Vec<ColumnIndex>,
}

/// The rows matching every predicate, as one WAH bitmap per chunk.
#[derive(Debug, Clone)]
pub struct Selection {
    pub chunks: Vec<Bitmap>,
}

impl Selection {
    /// Matching rows.
    pub fn count(&self) -> u64 {
        self.chunks.par_iter().map(bitmap::ops::count_ones).sum()
    }

    /// Matching row ids, ascending.
    pub fn row_ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.chunks.iter().enumerate().flat_map(|(p, bm)| {
            let base = p as u64 * CHUNK_BITS;
            bitmap::ops::Ones::new(bm).map(move |r| base + r)
        })
    }
}

impl Index {
    /// The column index named `name`.
    pub fn column(&self, name: &str) -> Option<&ColumnIndex> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// Rows matching every `(column, predicate)`, ANDed, on the CPU (chunks in parallel).
    pub fn select(&self, preds: &[(&str, Predicate)]) -> Result<Selection> {
        let cols: Vec<(&ColumnIndex, &Predicate)> = preds
            .iter()
            .map(|(name, p)| {
                self.column(name)
                    .map(|c| (c, p))
                    .ok_or_else(|| Error::InvalidArgument(format!("no index on column '{name}'")))
            })
            .collect::<Result<_>>()?;
        let Some((first, _)) = cols.first() else {
            return Err(Error::InvalidArgument("no predicate".into()));
        };
        if let Some((c, _)) = cols.iter().find(|(c, _)| c.rows != first.rows) {
            return Err(Error::InvalidArgument(format!(
                "columns '{}' and '{}' have different row counts",
                first.name, c.name
            )));
        }
        let chunks = (0..first.chunks())
            .into_par_iter()
            .map(|p| {
                let mut acc: Option<Bitmap> = None;
                for (c, pred) in &cols {
                    let bm = c.eval_chunk(pred, p)?;
                    acc = Some(match acc {
                        None => bm,
                        Some(a) => bitmap::ops::binary(Op::And, &a, &bm)?,
                    });
                }
                acc.ok_or_else(|| Error::InvalidArgument("no predicate".into()))
            })
            .collect::<Result<_>>()?;
        Ok(Selection { chunks })
    }

    /// Writes the index as a `.tsr` file (`bitmap-index.md` §2).
    pub fn write(&self, path: &std::path::Path) -> Result<()> {
        self.write_to(ContainerWriter::create(path)?).map(drop)
    }

    /// Writes the index into `w` (a file or a stream, which must allow format 1.1: the bins are
    /// bits columns) and finishes it. Returns the file's size in bytes.
    pub fn write_to(&self, mut w: ContainerWriter) -> Result<u64> {
        for c in &self.columns {
            let ty = c.ty;
            let raw_of = |keys: &mut dyn Iterator<Item = u64>| -> Vec<u8> {
                let mut out = Vec::new();
                for k in keys {
                    let v = value_of(ty, k) as u64;
                    out.extend_from_slice(&v.to_le_bytes()[..ty.width()]);
                }
                out
            };
            let lo = raw_of(&mut c.bins.iter().map(|b| b.0));
            let hi = raw_of(&mut c.bins.iter().map(|b| b.1));
            write_int(&mut w, &format!("{}.bin_lo", c.name), ty, &lo)?;
            write_int(&mut w, &format!("{}.bin_hi", c.name), ty, &hi)?;
            if let Some(keys) = &c.keys {
                let raw = raw_of(&mut keys.iter().copied());
                write_int(&mut w, &format!("{}.values", c.name), ty, &raw)?;
            }
            for (b, chunks) in c.bitmaps.iter().enumerate() {
                w.begin_column(
                    &format!("{}.bin.{b}", c.name),
                    LogicalType::Bits,
                    Some(CodecId::Wah),
                )?;
                for (p, bm) in chunks.iter().enumerate() {
                    let mut payload = Vec::new();
                    bm.write_payload(&mut payload);
                    w.write_chunk(CodecId::Wah, c.chunk_bits(p) as u32, &payload)?;
                }
                w.end_column()?;
            }
        }
        let (_, size) = w.finish_sized()?;
        Ok(size)
    }

    /// Reads an index file written by [`Index::write`], checking its shape.
    pub fn read(c: &Container) -> Result<Index> {
        let mut index = Index::default();
        let cols = c.columns();
        let bad = |what: String| Error::InvalidArgument(format!("not a bitmap index: {what}"));
        let mut i = 0;
        while i < cols.len() {
            let Some(name) = cols[i].name.strip_suffix(".bin_lo") else {
                return Err(bad(format!("unexpected column '{}'", cols[i].name)));
            };
            let ty = cols[i].logical_type;
            let lo = read_int(c, i)?;
            let hi_i = i + 1;
            if cols.get(hi_i).map(|c| c.name.as_str()) != Some(&format!("{name}.bin_hi")) {
                return Err(bad(format!("'{name}.bin_hi' missing")));
            }
            let hi = read_int(c, hi_i)?;
            if lo.len() != hi.len() {
                return Err(bad(format!("'{name}': bin bounds differ in length")));
            }
            let bins: Vec<(u64, u64)> = lo.into_iter().zip(hi).collect();
            if bins.iter().any(|(l, h)| l > h) || bins.windows(2).any(|w| w[0].1 >= w[1].0) {
                return Err(bad(format!("'{name}': bins overlap or are unordered")));
            }
            i += 2;
            let keys = if cols.get(i).map(|c| c.name.as_str()) == Some(&format!("{name}.values")) {
                i += 1;
                Some(read_int(c, i - 1)?)
            } else {
                None
            };
            if keys.is_none() && bins.iter().any(|(l, h)| l != h) {
                return Err(bad(format!("'{name}': range bins without '{name}.values'")));
            }
            let mut bitmaps = Vec::with_capacity(bins.len());
            let mut rows = None;
            for b in 0..bins.len() {
                let col = cols
                    .get(i)
                    .filter(|c| c.name == format!("{name}.bin.{b}"))
                    .ok_or_else(|| bad(format!("'{name}.bin.{b}' missing")))?;
                if col.logical_type != LogicalType::Bits {
                    return Err(bad(format!("'{}' is not a bits column", col.name)));
                }
                if *rows.get_or_insert(col.value_count) != col.value_count {
                    return Err(bad(format!("'{}' has another row count", col.name)));
                }
                let chunks = col
                    .chunks
                    .iter()
                    .enumerate()
                    .map(|(k, ch)| {
                        let expect = (col.value_count - k as u64 * CHUNK_BITS).min(CHUNK_BITS);
                        if ch.value_count as u64 != expect || ch.codec != CodecId::Wah {
                            return Err(bad(format!("'{}' chunk {k} shape", col.name)));
                        }
                        let p = c.chunk_payload(i, k)?;
                        let bm = Bitmap::from_payload(Flavor::Wah, p)?;
                        if bm.bit_len() != expect {
                            return Err(Error::CountMismatch {
                                what: "index bitmap bit length",
                                expected: expect,
                                found: bm.bit_len(),
                            });
                        }
                        Ok(bm)
                    })
                    .collect::<Result<Vec<_>>>()?;
                bitmaps.push(chunks);
                i += 1;
            }
            let rows = rows.unwrap_or(0);
            if keys.as_ref().is_some_and(|k| k.len() as u64 != rows) {
                return Err(bad(format!("'{name}.values' has another row count")));
            }
            index.columns.push(ColumnIndex {
                name: name.to_owned(),
                ty,
                rows,
                bins,
                bitmaps,
                keys,
            });
        }
        Ok(index)
    }
}

fn write_int(w: &mut ContainerWriter, name: &str, ty: LogicalType, raw: &[u8]) -> Result<()> {
    w.begin_column(name, ty, None)?;
    let chunk = (1usize << 20) * ty.width();
    for part in raw.chunks(chunk) {
        let mut payload = Vec::new();
        let codec = column::encode_chunk(ty, None, part, &mut payload)?;
        w.write_chunk(codec, (part.len() / ty.width()) as u32, &payload)?;
    }
    w.end_column()
}

fn read_int(c: &Container, ci: usize) -> Result<Vec<u64>> {
    let col = &c.columns()[ci];
    let ty = col.logical_type;
    if !ty.is_integer() {
        return Err(Error::InvalidArgument(format!(
            "not a bitmap index: '{}' is not an integer column",
            col.name
        )));
    }
    let parts: Vec<Vec<u64>> = (0..col.chunks.len())
        .into_par_iter()
        .map(|k| {
            let ch = &col.chunks[k];
            let mut raw = vec![0u8; ch.value_count as usize * ty.width()];
            column::decode_chunk(ty, ch.codec, c.chunk_payload(ci, k)?, &mut raw)?;
            Ok(raw
                .chunks_exact(ty.width())
                .map(|v| key_of(ty, v))
                .collect())
        })
        .collect::<Result<_>>()?;
    Ok(parts.concat())
}
