//! The CPU executor of a [`QueryPlan`], on all cores: the same operators as the GPU kernels
//! (same meaning, same answers), laid out for a CPU core's caches.
//!
//! - **build** (`join`): each dimension's columns decoded and its rows filtered once; a
//!   grouped join's payloads ranked among the values that pass, so the group index is
//!   **compact** (the product of the distinct values that pass, not of the key domains: q4.3's
//!   1,750,000 possible groups become at most 800), which keeps the per-thread aggregate arrays
//!   in L1 and their merge trivial; each join laid out as a **join index**: an array over the
//!   dimension's key span (a bit a key for a join that only filters, a 16- or 32-bit
//!   contribution to the group index otherwise), or the shared hash table when keys are not
//!   dense;
//! - **probe** (`scan`): per fact chunk (rayon, one task a core, each taking the next chunk
//!   when done with one, every buffer reused across chunks), fact filters first, then the
//!   joins most selective first (by the fraction of dimension rows that pass); each column is
//!   decoded at most once a chunk and only while rows remain; a selection vector carries the
//!   passing rows and their compact group index;
//! - **aggregate**: a dense array of (sum, count) per compact group and task, added at the end
//!   and mapped back to the plan's group index.

mod join;
mod scan;

pub use join::HashTable;

use tessera::gpu::ssb::plan::{Aggregate, QueryPlan, QueryResult};
use tessera::{CodecId, Error, Result, TableReader};

use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::dataset::Dataset;
use join::{JoinIndex, Probe};

/// Decodes chunk `chunk` of column `index` of `t` into `out` (resized to its value count).
fn load_chunk(t: &TableReader, index: usize, chunk: usize, out: &mut Vec<u32>) -> Result<()> {
    let meta = &t.columns()[index];
    let ch = &meta.chunks[chunk];
    let payload = t.container().chunk_payload(index, chunk)?;
    // Every value is overwritten by the decoder: resize without clearing first.
    out.resize(ch.value_count as usize, 0);
    // u32 columns are lane-32 columns: the integer decoders write the values themselves, with
    // no lane conversion pass.
    let r = match ch.codec {
        CodecId::Plain if payload.len() == out.len() * 4 => {
            for (v, b) in out.iter_mut().zip(payload.chunks_exact(4)) {
                *v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
            Ok(())
        }
        CodecId::Plain => Err(Error::truncated(
            "plain payload",
            0,
            out.len() * 4,
            payload.len(),
        )),
        codec => tessera::codecs::int::decode::<u32>(codec, payload, out),
    };
    r.map_err(|e| e.in_chunk(&meta.name, chunk, ch.codec.name()))?;
    Ok(())
}

/// The fact columns a plan reads, each once, with their chunk counts checked to agree.
struct FactColumns {
    /// Column index in the fact table, per slot.
    index: Vec<usize>,
    /// Values per chunk (the same for every slot).
    counts: Vec<u32>,
}

impl FactColumns {
    fn new() -> FactColumns {
        FactColumns {
            index: Vec::new(),
            counts: Vec::new(),
        }
    }

    /// The slot of column `name`, added if new.
    fn slot(&mut self, t: &TableReader, name: &str) -> Result<usize> {
        let index = t.column_index(name)?;
        if let Some(s) = self.index.iter().position(|&i| i == index) {
            return Ok(s);
        }
        let c: Vec<u32> = t.columns()[index]
            .chunks
            .iter()
            .map(|c| c.value_count)
            .collect();
        if self.index.is_empty() {
            self.counts = c;
        } else if self.counts != c {
            return Err(Error::InvalidArgument(format!(
                "fact column {name} is chunked differently from the others"
            )));
        }
        self.index.push(index);
        Ok(self.index.len() - 1)
    }
}

/// One task's decoded columns: a buffer per slot, reused across chunks, and which chunk it holds.
struct Decoded<'a> {
    t: &'a TableReader,
    cols: &'a FactColumns,
    bufs: Vec<Vec<u32>>,
    holds: Vec<usize>,
}

impl Decoded<'_> {
    fn load(&mut self, slot: usize, chunk: usize) -> Result<()> {
        if self.holds[slot] != chunk {
            load_chunk(self.t, self.cols.index[slot], chunk, &mut self.bufs[slot])?;
            self.holds[slot] = chunk;
        }
        Ok(())
    }
}

/// A step of the scan, on a fact column slot.
enum Step<'p> {
    Filter(usize, &'p tessera::gpu::ssb::plan::Filter),
    Join(usize, &'p JoinIndex),
}

/// Runs `p` on the fact table `fact` of `ds`: builds the joins' indexes, scans.
pub fn run(ds: &Dataset, fact: &str, p: &QueryPlan) -> Result<QueryResult> {
    p.check()?;
    let t = ds.table(fact)?;
    let grouped: Vec<bool> = (0..p.joins.len()).map(|j| p.group.contains(&j)).collect();
    let dims = p
        .joins
        .par_iter()
        .zip(&grouped)
        .map(|(j, &g)| join::read_dim(ds, j, g))
        .collect::<Result<Vec<_>>>()?;
    // Compact strides, the last group key fastest, as in the plan's index.
    let mut cstrides = vec![0u32; p.joins.len()];
    let mut groups = 1u64;
    for &g in p.group.iter().rev() {
        cstrides[g] = groups as u32;
        groups *= dims[g].values.len().max(1) as u64;
    }
    let indexes = dims
        .par_iter()
        .zip(&cstrides)
        .map(|(d, &s)| join::build_index(d, s))
        .collect::<Result<Vec<_>>>()?;

    let mut cols = FactColumns::new();
    let mut steps = Vec::new();
    for f in &p.fact_filters {
        steps.push(Step::Filter(cols.slot(t, &f.column)?, f));
    }
    let mut order: Vec<usize> = (0..p.joins.len()).collect();
    order.sort_by(|&a, &b| dims[a].selectivity().total_cmp(&dims[b].selectivity()));
    for &j in &order {
        steps.push(Step::Join(cols.slot(t, &p.joins[j].fact_key)?, &indexes[j]));
    }
    let agg: Vec<usize> = p
        .aggregate
        .columns()
        .iter()
        .map(|c| cols.slot(t, c))
        .collect::<Result<_>>()?;
    if indexes.iter().any(|i| matches!(i, JoinIndex::Empty)) {
        return Ok(QueryResult::default());
    }

    let groups = groups as usize;
    let n_chunks = cols.counts.len();
    let tasks = rayon::current_num_threads().clamp(1, n_chunks.max(1));
    let cols = &cols;
    // Tasks take the next chunk as they finish one: a core slowed by other work (or a short
    // last chunk) leaves the rest to the others instead of holding up a fixed share.
    let next = AtomicUsize::new(0);
    let partials = (0..tasks)
        .into_par_iter()
        .map(|_| {
            let chunks = std::iter::from_fn(|| {
                let c = next.fetch_add(1, Ordering::Relaxed);
                (c < n_chunks).then_some(c)
            });
            scan_chunks(t, cols, &steps, &agg, &p.aggregate, groups, chunks)
        })
        .collect::<Result<Vec<_>>>()?;
    let mut sums = vec![0i64; groups];
    let mut rows = vec![0u64; groups];
    for (s, r) in partials {
        for g in 0..groups {
            sums[g] = sums[g].wrapping_add(s[g]);
            rows[g] += r[g];
        }
    }

    // Back from compact group indices to the plan's.
    let strides = p.strides();
    let mut out: Vec<(u64, i64, u64)> = (0..groups)
        .filter(|&g| rows[g] > 0)
        .map(|g| {
            let index = p
                .group
                .iter()
                .map(|&j| {
                    let values = &dims[j].values;
                    let rank = (g as u64 / cstrides[j] as u64) % values.len() as u64;
                    values[rank as usize] as u64 * strides[j] as u64
                })
                .sum();
            (index, sums[g], rows[g])
        })
        .collect();
    out.sort_unstable_by_key(|&(g, ..)| g);
    Ok(QueryResult { groups: out })
}

/// One task: the chunks it is handed, into its own aggregate arrays.
fn scan_chunks(
    t: &TableReader,
    cols: &FactColumns,
    steps: &[Step<'_>],
    agg: &[usize],
    aggregate: &Aggregate,
    groups: usize,
    chunks: impl Iterator<Item = usize>,
) -> Result<(Vec<i64>, Vec<u64>)> {
    let mut sums = vec![0i64; groups];
    let mut rows = vec![0u64; groups];
    let mut d = Decoded {
        t,
        cols,
        bufs: vec![Vec::new(); cols.index.len()],
        holds: vec![usize::MAX; cols.index.len()],
    };
    // A chunk's rows at most: the selection never grows past them, so it is sized once.
    let most = cols.counts.iter().map(|&c| c as usize).max().unwrap_or(0);
    let mut sel = vec![0u32; most];
    let mut gidx = vec![0u32; most];
    for chunk in chunks {
        let rows_in_chunk = cols.counts[chunk] as usize;
        let mut all = true;
        let mut have_gidx = false;
        let mut n = 0;
        for step in steps {
            if !all && n == 0 {
                break;
            }
            match *step {
                Step::Filter(slot, f) => {
                    d.load(slot, chunk)?;
                    n = scan::filter_rows(f, &d.bufs[slot], &mut sel, n, all);
                }
                Step::Join(slot, index) => {
                    d.load(slot, chunk)?;
                    if !have_gidx {
                        gidx[..n].fill(0);
                    }
                    n = probe(index, &d.bufs[slot], &mut sel, &mut gidx, n, all);
                    have_gidx = true;
                }
            }
            all = false;
        }
        if all {
            // No step at all: every row, group 0.
            n = rows_in_chunk;
            for (i, s) in sel[..n].iter_mut().enumerate() {
                *s = i as u32;
            }
        }
        if !have_gidx {
            gidx[..n].fill(0);
        }
        if n == 0 {
            continue;
        }
        d.load(agg[0], chunk)?;
        if let Some(&b) = agg.get(1) {
            d.load(b, chunk)?;
        }
        let a = &d.bufs[agg[0]];
        let b = agg.get(1).map_or(&[][..], |&b| &d.bufs[b][..]);
        scan::aggregate(aggregate, a, b, &sel[..n], &gidx[..n], &mut sums, &mut rows);
    }
    Ok((sums, rows))
}

/// Probes `keys` with `index`, one monomorphised loop per index layout; returns the rows kept.
fn probe(
    index: &JoinIndex,
    keys: &[u32],
    sel: &mut [u32],
    gidx: &mut [u32],
    n: usize,
    all: bool,
) -> usize {
    fn with<P: Probe>(
        t: &P,
        keys: &[u32],
        sel: &mut [u32],
        gidx: &mut [u32],
        n: usize,
        all: bool,
    ) -> usize {
        if all {
            scan::probe_all(t, keys, sel, gidx)
        } else {
            scan::probe_selected(t, keys, sel, gidx, n)
        }
    }
    match index {
        JoinIndex::Empty => 0,
        JoinIndex::Bits(t) => with(t, keys, sel, gidx, n, all),
        JoinIndex::Dense16(t) => with(t, keys, sel, gidx, n, all),
        JoinIndex::Dense32(t) => with(t, keys, sel, gidx, n, all),
        JoinIndex::Hash(t) => with(t, keys, sel, gidx, n, all),
    }
}

/// The plan's aggregate name, for printing.
pub fn aggregate_name(a: &Aggregate) -> String {
    match a {
        Aggregate::Sum(x) => format!("sum({x})"),
        Aggregate::SumProduct(x, y) => format!("sum({x}*{y})"),
        Aggregate::SumDifference(x, y) => format!("sum({x}-{y})"),
    }
}
