//! Dimension joins on the CPU: each dimension's rows filtered once, its group key (if any)
//! turned into a rank among the values that pass, and the result laid out as a **join index**
//! the fact scan probes per row.
//!
//! SSB dimension keys are dense (1..N, or the date keys `yyyymmdd` over seven years), so a join
//! index is normally an array indexed by `key - min` over the dimension's whole key span: one
//! load a probe, no hashing, no probe sequence, and no branch (the slot past the span is a
//! miss, and a key outside the span is clamped onto it). A join without a group key needs only
//! one bit a key. Keys spread too thinly for an array fall back to the shared open-addressing
//! [`HashTable`].

use tessera::gpu::ssb::plan::{self, DimJoin, EMPTY_SLOT};
use tessera::{Error, Result};

use crate::dataset::Dataset;

/// A miss in a 16-bit dense index.
const MISS16: u16 = u16::MAX;
/// A miss in a 32-bit dense index.
const MISS32: u32 = u32::MAX;

/// A built open-addressing hash table ([`plan::hash_slot`], linear probing), the fallback index
/// for keys that are not dense.
#[derive(Debug, Clone)]
pub struct HashTable {
    pub bits: u32,
    pub slots: Vec<u64>,
}

impl HashTable {
    /// The table of `keys` whose rows pass (`pass[i]`), holding `payloads[i]`.
    pub fn build(keys: &[u32], payloads: &[u32], pass: &[bool]) -> Result<HashTable> {
        // Sized by the rows that pass: a filtered dimension's table then stays in the core's
        // caches. The size changes where keys sit, not what a probe finds.
        let rows = pass.iter().filter(|&&p| p).count();
        let bits = plan::hash_bits(rows);
        let mask = (1u32 << bits) - 1;
        let mut slots = vec![EMPTY_SLOT; 1 << bits];
        for (i, &k) in keys.iter().enumerate() {
            if !pass[i] {
                continue;
            }
            let mut s = plan::hash_slot(k, bits);
            loop {
                let e = slots[s as usize];
                if e == EMPTY_SLOT {
                    slots[s as usize] = (k as u64) << 32 | payloads[i] as u64;
                    break;
                }
                if (e >> 32) as u32 == k {
                    return Err(duplicate(k));
                }
                s = (s + 1) & mask;
            }
        }
        Ok(HashTable { bits, slots })
    }

    /// The payload of `key`, if present.
    #[inline]
    pub fn probe(&self, key: u32) -> Option<u32> {
        let mask = (1u32 << self.bits) - 1;
        let mut s = plan::hash_slot(key, self.bits);
        loop {
            let e = self.slots[s as usize];
            if e == EMPTY_SLOT {
                return None;
            }
            if (e >> 32) as u32 == key {
                return Some(e as u32);
            }
            s = (s + 1) & mask;
        }
    }
}

fn duplicate(k: u32) -> Error {
    Error::InvalidArgument(format!("dimension key {k} appears twice"))
}

/// What a fact row's foreign key finds: whether the dimension row exists and passes, and what
/// it adds to the row's (compact) group index.
pub trait Probe: Sync {
    /// `(hit, contribution)`; the contribution is meaningless on a miss.
    fn lookup(&self, key: u32) -> (bool, u32);
}

/// One bit per key of the span, plus a zero bit past it.
#[derive(Debug)]
pub struct Bits {
    min: u32,
    span: usize,
    words: Vec<u64>,
}

impl Probe for Bits {
    #[inline(always)]
    fn lookup(&self, key: u32) -> (bool, u32) {
        let i = (key.wrapping_sub(self.min) as usize).min(self.span);
        (((self.words[i >> 6] >> (i & 63)) & 1) != 0, 0)
    }
}

/// One contribution per key of the span (`MISS` where the row is absent or filtered out), plus
/// a miss slot past it.
#[derive(Debug)]
pub struct Dense<T> {
    min: u32,
    span: usize,
    slots: Vec<T>,
}

impl Probe for Dense<u16> {
    #[inline(always)]
    fn lookup(&self, key: u32) -> (bool, u32) {
        let i = (key.wrapping_sub(self.min) as usize).min(self.span);
        let c = self.slots[i];
        (c != MISS16, c as u32)
    }
}

impl Probe for Dense<u32> {
    #[inline(always)]
    fn lookup(&self, key: u32) -> (bool, u32) {
        let i = (key.wrapping_sub(self.min) as usize).min(self.span);
        let c = self.slots[i];
        (c != MISS32, c)
    }
}

impl Probe for HashTable {
    #[inline(always)]
    fn lookup(&self, key: u32) -> (bool, u32) {
        match self.probe(key) {
            Some(c) => (true, c),
            None => (false, 0),
        }
    }
}

/// A join's index, in the layout its keys allow.
#[derive(Debug)]
pub enum JoinIndex {
    /// No dimension row passes: no fact row can.
    Empty,
    Bits(Bits),
    Dense16(Dense<u16>),
    Dense32(Dense<u32>),
    Hash(HashTable),
}

/// A dimension read and filtered, before its index is laid out (which needs every grouped
/// join's number of distinct values first).
#[derive(Debug)]
pub struct Dim {
    keys: Vec<u32>,
    pass: Vec<bool>,
    /// Rows that pass.
    pub passing: usize,
    /// Per row, its group-key payload's rank among `values` (grouped joins only).
    ranks: Option<Vec<u32>>,
    /// The distinct payloads (`value - base`) of the passing rows, ascending.
    pub values: Vec<u32>,
}

impl Dim {
    /// Fraction of the dimension's rows that pass (fact foreign keys are spread evenly over the
    /// dimension's keys in SSB, so this is about the fraction of fact rows a probe keeps).
    pub fn selectivity(&self) -> f64 {
        self.passing as f64 / self.keys.len().max(1) as f64
    }
}

/// Reads join `j`'s dimension, filters it, and ranks its passing group-key values (`grouped`).
pub fn read_dim(ds: &Dataset, j: &DimJoin, grouped: bool) -> Result<Dim> {
    let keys = ds.column(&j.table, &j.key)?;
    let mut pass = vec![true; keys.len()];
    for f in &j.filters {
        let v = ds.column(&j.table, &f.column)?;
        if v.len() != keys.len() {
            return Err(Error::InvalidArgument(format!(
                "{}.{} has {} rows, the key column {}",
                j.table,
                f.column,
                v.len(),
                keys.len()
            )));
        }
        for (p, x) in pass.iter_mut().zip(&v) {
            *p &= f.passes(*x);
        }
    }
    for (&k, &p) in keys.iter().zip(&pass) {
        if p && k == u32::MAX {
            return Err(Error::InvalidArgument(
                "dimension key 2^32 - 1 is reserved".into(),
            ));
        }
    }
    let passing = pass.iter().filter(|&&p| p).count();
    let (ranks, values) = match (&j.payload, grouped) {
        (Some(g), true) => {
            let v = ds.column(&j.table, &g.column)?;
            if v.len() != keys.len() {
                return Err(Error::InvalidArgument(format!(
                    "{}.{} has {} rows, the key column {}",
                    j.table,
                    g.column,
                    v.len(),
                    keys.len()
                )));
            }
            // `card` is bounded by the plan's check (every group key's card divides a group
            // count of at most MAX_GROUPS), so the presence array is too.
            let mut rank = vec![u32::MAX; g.card as usize];
            for (i, &x) in v.iter().enumerate() {
                let p = x.wrapping_sub(g.base);
                if !pass[i] {
                    continue;
                }
                if p >= g.card {
                    return Err(Error::InvalidArgument(format!(
                        "{}.{} = {x} outside the group key's domain {}..{}",
                        j.table,
                        g.column,
                        g.base,
                        g.base as u64 + g.card as u64
                    )));
                }
                rank[p as usize] = 0;
            }
            let mut values = Vec::new();
            for (p, r) in rank.iter_mut().enumerate() {
                if *r == 0 {
                    *r = values.len() as u32;
                    values.push(p as u32);
                }
            }
            let ranks = v
                .iter()
                .zip(&pass)
                .map(|(&x, &p)| if p { rank[(x - g.base) as usize] } else { 0 })
                .collect();
            (Some(ranks), values)
        }
        _ => (None, vec![0]),
    };
    Ok(Dim {
        keys,
        pass,
        passing,
        ranks,
        values,
    })
}

/// Lays out `d`'s index, each passing row contributing `rank * stride` to the compact group
/// index (`stride` 0: a join that only filters).
pub fn build_index(d: &Dim, stride: u32) -> Result<JoinIndex> {
    if d.passing == 0 {
        // Keys are still checked for duplicates nowhere else; an empty index has none.
        return Ok(JoinIndex::Empty);
    }
    let (min, max) = d
        .keys
        .iter()
        .fold((u32::MAX, 0u32), |(lo, hi), &k| (lo.min(k), hi.max(k)));
    let span = (max as u64 - min as u64 + 1) as usize;
    let rows = d.keys.len();
    // An array over the key span when it costs at most 16 slots a row (or 64 Ki slots): SSB's
    // keys are 1..N (one slot a row) and the date keys about 24 a row, but only 2,556 rows.
    let dense = span <= (16 * rows).max(1 << 16);
    let contribution = |i: usize| -> u32 { d.ranks.as_ref().map_or(0, |r| r[i] * stride) };
    if !dense {
        let payloads: Vec<u32> = (0..rows).map(contribution).collect();
        return Ok(JoinIndex::Hash(HashTable::build(
            &d.keys, &payloads, &d.pass,
        )?));
    }
    let largest = d.values.len().saturating_sub(1) as u64 * stride as u64;
    if stride == 0 || d.ranks.is_none() {
        let mut words = vec![0u64; (span + 1).div_ceil(64)];
        for (i, &k) in d.keys.iter().enumerate() {
            if d.pass[i] {
                let s = (k - min) as usize;
                let (w, b) = (s >> 6, 1u64 << (s & 63));
                if words[w] & b != 0 {
                    return Err(duplicate(k));
                }
                words[w] |= b;
            }
        }
        return Ok(JoinIndex::Bits(Bits { min, span, words }));
    }
    macro_rules! dense {
        ($t:ty, $miss:expr, $variant:ident) => {{
            let mut slots = vec![$miss; span + 1];
            for (i, &k) in d.keys.iter().enumerate() {
                if d.pass[i] {
                    let s = (k - min) as usize;
                    if slots[s] != $miss {
                        return Err(duplicate(k));
                    }
                    slots[s] = contribution(i) as $t;
                }
            }
            Ok(JoinIndex::$variant(Dense { min, span, slots }))
        }};
    }
    // Half the bytes where the contributions allow: the index is what a probe's cache misses
    // are spent on.
    if largest < MISS16 as u64 {
        dense!(u16, MISS16, Dense16)
    } else {
        dense!(u32, MISS32, Dense32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dim(keys: Vec<u32>, pass: Vec<bool>, ranks: Option<Vec<u32>>, values: Vec<u32>) -> Dim {
        let passing = pass.iter().filter(|&&p| p).count();
        Dim {
            keys,
            pass,
            passing,
            ranks,
            values,
        }
    }

    fn lookup(i: &JoinIndex, key: u32) -> Option<u32> {
        let (hit, c) = match i {
            JoinIndex::Empty => (false, 0),
            JoinIndex::Bits(t) => t.lookup(key),
            JoinIndex::Dense16(t) => t.lookup(key),
            JoinIndex::Dense32(t) => t.lookup(key),
            JoinIndex::Hash(t) => t.lookup(key),
        };
        hit.then_some(c)
    }

    #[test]
    fn dense_keys_get_an_array_and_sparse_keys_the_hash_table() {
        // Dense: 10..=14, the middle one filtered out.
        let d = dim(
            vec![12, 10, 11, 13, 14],
            vec![true, true, false, true, true],
            Some(vec![2, 0, 0, 1, 0]),
            vec![5, 6, 9],
        );
        let i = build_index(&d, 3).expect("builds");
        assert!(matches!(i, JoinIndex::Dense16(_)));
        let want = [None, Some(0), None, Some(6), Some(3), Some(0), None];
        for (k, w) in (9..16).zip(want) {
            assert_eq!(lookup(&i, k), w, "key {k}");
        }
        assert_eq!(lookup(&i, u32::MAX), None);
        assert_eq!(lookup(&i, 0), None);
        // Without a group key: bits, the same hits.
        let f = build_index(&d, 0).expect("builds");
        assert!(matches!(f, JoinIndex::Bits(_)));
        for k in 9..16 {
            assert_eq!(lookup(&f, k).is_some(), lookup(&i, k).is_some(), "key {k}");
        }
        // Sparse: 3 keys over 3 * 10^9.
        let s = dim(
            vec![7, 1_000_000_007, 3_000_000_000],
            vec![true, true, true],
            Some(vec![0, 1, 0]),
            vec![0, 1],
        );
        let h = build_index(&s, 1).expect("builds");
        assert!(matches!(h, JoinIndex::Hash(_)));
        assert_eq!(lookup(&h, 1_000_000_007), Some(1));
        assert_eq!(lookup(&h, 3_000_000_000), Some(0));
        assert_eq!(lookup(&h, 8), None);
    }

    #[test]
    fn large_contributions_take_32_bit_slots() {
        let d = dim(vec![1, 2], vec![true, true], Some(vec![0, 1]), vec![0, 1]);
        let i = build_index(&d, 100_000).expect("builds");
        assert!(matches!(i, JoinIndex::Dense32(_)));
        assert_eq!(lookup(&i, 2), Some(100_000));
    }

    #[test]
    fn a_key_twice_is_an_error_in_every_layout() {
        for (keys, stride) in [
            (vec![4, 5, 4], 0),
            (vec![4, 5, 4], 1),
            (vec![4, 4_000_000_000, 4], 1),
        ] {
            let d = dim(keys, vec![true; 3], Some(vec![0; 3]), vec![0]);
            assert!(build_index(&d, stride).is_err(), "stride {stride}");
        }
        // A filtered-out duplicate is never inserted.
        let d = dim(vec![4, 5, 4], vec![true, true, false], None, vec![0]);
        assert!(build_index(&d, 0).is_ok());
    }
}
