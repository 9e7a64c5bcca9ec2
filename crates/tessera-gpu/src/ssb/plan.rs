//! A star-join query as data: the plan both executors (the CPU one in `tessera-ssb`, the GPU one
//! here) run, so that "the same query" means the same operators in the same order.
//!
//! A plan reads one fact table and any number of dimension tables, all of u32 columns:
//! 1. **fact filters**: each a column and inclusive ranges, a row passing when its value lies in
//!    any of them (`x BETWEEN a AND b`, `x IN (...)`, `x < c`);
//! 2. **joins**, in probe order: per dimension, a hash table built from the dimension rows that
//!    pass its filters, keyed by its key column and holding one payload (a group key's value, or
//!    nothing); a fact row whose foreign key is not in the table drops out;
//! 3. **group by** the payloads of some joins, into a dense index
//!    `((p0 * card1 + p1) * card2 + p2) ...` (each payload is `value - base`, `< card`);
//! 4. **aggregate**: a 64-bit signed sum of a column, a product or a difference of two columns,
//!    per group, with the count of rows so that a group is present exactly when a row reached it.

/// A row passes when its value lies in any of the inclusive `ranges`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub column: String,
    pub ranges: Vec<(u32, u32)>,
}

impl Filter {
    /// `column BETWEEN lo AND hi`.
    pub fn between(column: &str, lo: u32, hi: u32) -> Filter {
        Filter {
            column: column.into(),
            ranges: vec![(lo, hi)],
        }
    }
    /// `column = v`.
    pub fn eq(column: &str, v: u32) -> Filter {
        Filter::between(column, v, v)
    }
    /// `column IN (values)`.
    pub fn any_of(column: &str, values: &[u32]) -> Filter {
        Filter {
            column: column.into(),
            ranges: values.iter().map(|&v| (v, v)).collect(),
        }
    }
    /// Whether `v` passes.
    #[inline]
    pub fn passes(&self, v: u32) -> bool {
        self.ranges
            .iter()
            .any(|&(lo, hi)| v.wrapping_sub(lo) <= hi.wrapping_sub(lo) && lo <= hi)
    }
}

/// A group key taken from a dimension column: payload `value - base`, which must be `< card`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupKey {
    pub column: String,
    pub base: u32,
    pub card: u32,
}

/// A join of the fact table's `fact_key` with dimension `table`'s `key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimJoin {
    pub fact_key: String,
    pub table: String,
    pub key: String,
    /// Filters on the dimension's rows, ANDed.
    pub filters: Vec<Filter>,
    /// What the hash table holds for a key: a group key, or nothing (a filtering join).
    pub payload: Option<GroupKey>,
}

/// The aggregate, summed as i64 per group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Aggregate {
    /// `SUM(a)`
    Sum(String),
    /// `SUM(a * b)`
    SumProduct(String, String),
    /// `SUM(a - b)`
    SumDifference(String, String),
}

impl Aggregate {
    /// The columns it reads.
    pub fn columns(&self) -> Vec<&str> {
        match self {
            Aggregate::Sum(a) => vec![a],
            Aggregate::SumProduct(a, b) | Aggregate::SumDifference(a, b) => vec![a, b],
        }
    }
    /// Its value for one row, given the columns' values in [`Self::columns`]' order.
    #[inline]
    pub fn value(&self, a: u32, b: u32) -> i64 {
        match self {
            Aggregate::Sum(_) => a as i64,
            Aggregate::SumProduct(..) => a as i64 * b as i64,
            Aggregate::SumDifference(..) => a as i64 - b as i64,
        }
    }
}

/// A star-join query (module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryPlan {
    pub name: String,
    pub fact_filters: Vec<Filter>,
    pub joins: Vec<DimJoin>,
    /// Joins (indices into `joins`, each with a payload) whose payloads make the group key, the
    /// first the most significant.
    pub group: Vec<usize>,
    pub aggregate: Aggregate,
}

/// Most groups a plan may have (the dense aggregate array's length).
pub const MAX_GROUPS: u64 = 1 << 26;

impl QueryPlan {
    /// Checks the plan's shape: group joins exist, have payloads, appear once, and the groups
    /// fit [`MAX_GROUPS`].
    pub fn check(&self) -> tessera_format::Result<()> {
        let bad = |m: String| {
            Err(tessera_format::Error::InvalidArgument(format!(
                "{}: {m}",
                self.name
            )))
        };
        let mut seen = vec![false; self.joins.len()];
        for &g in &self.group {
            match self.joins.get(g) {
                None => return bad(format!("group join {g} does not exist")),
                Some(j) if j.payload.is_none() => {
                    return bad(format!("group join {g} ({}) has no payload", j.table))
                }
                Some(j) if j.payload.as_ref().is_some_and(|p| p.card == 0) => {
                    return bad(format!("group join {g} ({}) has cardinality 0", j.table))
                }
                _ => {}
            }
            if std::mem::replace(&mut seen[g], true) {
                return bad(format!("join {g} grouped twice"));
            }
        }
        if self.groups() > MAX_GROUPS {
            return bad(format!("{} groups, more than {MAX_GROUPS}", self.groups()));
        }
        for f in self
            .fact_filters
            .iter()
            .chain(self.joins.iter().flat_map(|j| &j.filters))
        {
            if f.ranges.is_empty() {
                return bad(format!("filter on {} has no range", f.column));
            }
        }
        Ok(())
    }

    /// Number of groups (1 without a group by).
    pub fn groups(&self) -> u64 {
        self.group
            .iter()
            .map(|&g| {
                self.joins
                    .get(g)
                    .and_then(|j| j.payload.as_ref())
                    .map_or(1, |p| p.card as u64)
            })
            .product()
    }

    /// Per join, the stride its payload is multiplied by in the group index (0: not grouped).
    pub fn strides(&self) -> Vec<u32> {
        let mut s = vec![0u32; self.joins.len()];
        let mut stride = 1u64;
        for &g in self.group.iter().rev() {
            if let Some(slot) = s.get_mut(g) {
                *slot = stride as u32;
            }
            stride *= self.joins[g].payload.as_ref().map_or(1, |p| p.card as u64);
        }
        s
    }

    /// Splits a group index into the group keys' payloads (`value - base`), in `group` order.
    pub fn split_group(&self, mut index: u64) -> Vec<u32> {
        let mut out = vec![0u32; self.group.len()];
        for (i, &g) in self.group.iter().enumerate().rev() {
            let card = self.joins[g].payload.as_ref().map_or(1, |p| p.card as u64);
            out[i] = (index % card) as u32;
            index /= card;
        }
        out
    }
}

/// What a query returns: per group present, its index, sum and row count, by index.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueryResult {
    pub groups: Vec<(u64, i64, u64)>,
}

/// The open-addressing hash table the joins build and probe (the same on both devices): a
/// power-of-two array of u64 slots `key << 32 | payload`, [`EMPTY_SLOT`] when free, probed
/// linearly from [`hash_slot`]. Key `u32::MAX` is reserved.
pub const EMPTY_SLOT: u64 = u64::MAX;

/// log2 of the slots of a hash table for `rows` keys: at least twice as many slots, at least 64.
pub fn hash_bits(rows: usize) -> u32 {
    let want = (rows.max(32) as u64) * 2;
    want.next_power_of_two().trailing_zeros().min(31)
}

/// Fibonacci hashing: the top `bits` bits of `key * 2^32 / phi`; consecutive keys spread evenly.
#[inline]
pub fn hash_slot(key: u32, bits: u32) -> u32 {
    key.wrapping_mul(0x9E37_79B1) >> (32 - bits)
}

/// A join of the unit tests' plans: fact key `fk_{t}` to dimension `t`'s key `k`, no filters,
/// and with `card` a group key `v` of that many values.
#[cfg(test)]
pub(crate) fn test_join(t: &str, card: Option<u32>) -> DimJoin {
    DimJoin {
        fact_key: format!("fk_{t}"),
        table: t.into(),
        key: "k".into(),
        filters: vec![],
        payload: card.map(|card| GroupKey {
            column: "v".into(),
            base: 0,
            card,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> QueryPlan {
        let join = test_join;
        QueryPlan {
            name: "t".into(),
            fact_filters: vec![],
            joins: vec![join("a", Some(7)), join("b", None), join("c", Some(250))],
            group: vec![0, 2],
            aggregate: Aggregate::Sum("x".into()),
        }
    }

    #[test]
    fn group_indices_split_back_into_their_keys() {
        let p = plan();
        p.check().expect("valid");
        assert_eq!(p.groups(), 7 * 250);
        assert_eq!(p.strides(), vec![250, 0, 1]);
        assert_eq!(p.split_group(3 * 250 + 17), vec![3, 17]);
        let mut bad = p.clone();
        bad.group = vec![1];
        assert!(bad.check().is_err());
    }

    #[test]
    fn filters_take_any_of_their_ranges() {
        let f = Filter {
            column: "x".into(),
            ranges: vec![(1, 3), (10, 10)],
        };
        assert!(!f.passes(0) && f.passes(1) && f.passes(3) && !f.passes(4) && f.passes(10));
        assert!(!Filter::between("x", 5, 4).passes(5));
    }
}
