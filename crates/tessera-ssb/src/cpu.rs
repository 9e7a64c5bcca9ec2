//! The CPU executor of a [`QueryPlan`], on all cores: the same operators as the GPU kernels,
//! a chunk at a time instead of a tile at a time.
//!
//! - **build**: each dimension's columns decoded, its rows filtered, and the passing keys put
//!   with their payload into the shared open-addressing table ([`plan::hash_slot`]);
//! - **probe**: per fact chunk (rayon over contiguous ranges of chunks, one accumulator a range),
//!   load-and-decode each column a step needs, only while rows remain, into a reused buffer;
//!   a selection vector of row indices carries the rows that passed so far and their group
//!   index; a join's table holds only the dimension rows that pass its filters;
//! - **aggregate**: a dense array of (sum, count) per group, the ranges' arrays added at the end.

use tessera::gpu::ssb::plan::{self, Aggregate, Filter, QueryPlan, QueryResult, EMPTY_SLOT};
use tessera::{CodecId, Error, Result, TableReader};

use rayon::prelude::*;

use crate::dataset::Dataset;

/// A built join hash table.
#[derive(Debug, Clone)]
pub struct HashTable {
    pub bits: u32,
    pub slots: Vec<u64>,
}

impl HashTable {
    /// Builds the table of `keys` whose rows pass (`pass[i]`), holding `payload[i]`.
    pub fn build(keys: &[u32], payloads: &[u32], pass: &[bool]) -> Result<HashTable> {
        // Sized by the rows that pass (the GPU sizes by the dimension's rows, before its
        // filters run on the device): a filtered dimension's table then stays in the core's
        // caches, which is most of a probe's cost here. The size changes where keys sit, not
        // what a probe finds.
        let rows = pass.iter().filter(|&&p| p).count();
        let bits = plan::hash_bits(rows);
        let mask = (1u32 << bits) - 1;
        let mut slots = vec![EMPTY_SLOT; 1 << bits];
        for i in 0..keys.len() {
            if !pass[i] {
                continue;
            }
            let k = keys[i];
            if k == u32::MAX {
                return Err(Error::InvalidArgument(
                    "dimension key 2^32 - 1 is reserved".into(),
                ));
            }
            let mut s = plan::hash_slot(k, bits);
            loop {
                let e = slots[s as usize];
                if e == EMPTY_SLOT {
                    slots[s as usize] = (k as u64) << 32 | payloads[i] as u64;
                    break;
                }
                if (e >> 32) as u32 == k {
                    return Err(Error::InvalidArgument(format!(
                        "dimension key {k} appears twice"
                    )));
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

/// Builds the hash table of join `j` from its dimension table (decoded on the CPU).
pub fn build_join(ds: &Dataset, j: &plan::DimJoin) -> Result<HashTable> {
    let keys = ds.column(&j.table, &j.key)?;
    let mut pass = vec![true; keys.len()];
    for f in &j.filters {
        let v = ds.column(&j.table, &f.column)?;
        for (p, x) in pass.iter_mut().zip(&v) {
            *p &= f.passes(*x);
        }
    }
    let payloads = match &j.payload {
        None => vec![0; keys.len()],
        Some(g) => {
            let v = ds.column(&j.table, &g.column)?;
            let mut out = Vec::with_capacity(v.len());
            for (i, &x) in v.iter().enumerate() {
                let p = x.wrapping_sub(g.base);
                if pass[i] && p >= g.card {
                    return Err(Error::InvalidArgument(format!(
                        "{}.{} = {x} outside the group key's domain {}..{}",
                        j.table,
                        g.column,
                        g.base,
                        g.base as u64 + g.card as u64
                    )));
                }
                out.push(p);
            }
            out
        }
    };
    HashTable::build(&keys, &payloads, &pass)
}

/// A fact column's chunks, checked to line up with the other columns'.
struct FactColumn {
    index: usize,
}

struct Scratch {
    buf: Vec<u32>,
}

fn load_chunk(t: &TableReader, c: &FactColumn, chunk: usize, out: &mut Vec<u32>) -> Result<()> {
    let meta = &t.columns()[c.index];
    let ch = &meta.chunks[chunk];
    let payload = t.container().chunk_payload(c.index, chunk)?;
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

/// The columns of `t` named in the plan, with their chunk counts checked to agree.
fn fact_columns(t: &TableReader, names: &[&str]) -> Result<(Vec<FactColumn>, Vec<u32>)> {
    let mut cols = Vec::new();
    let mut counts: Option<Vec<u32>> = None;
    for n in names {
        let index = t.column_index(n)?;
        let c: Vec<u32> = t.columns()[index]
            .chunks
            .iter()
            .map(|c| c.value_count)
            .collect();
        match &counts {
            None => counts = Some(c),
            Some(prev) if *prev != c => {
                return Err(Error::InvalidArgument(format!(
                    "fact column {n} is chunked differently from the others"
                )))
            }
            _ => {}
        }
        cols.push(FactColumn { index });
    }
    Ok((cols, counts.unwrap_or_default()))
}

/// Runs `p` with prebuilt join tables (one per join, in order).
pub fn run_with_tables(
    ds: &Dataset,
    fact: &str,
    p: &QueryPlan,
    tables: &[HashTable],
) -> Result<QueryResult> {
    p.check()?;
    let t = ds.table(fact)?;
    let filter_names: Vec<&str> = p.fact_filters.iter().map(|f| f.column.as_str()).collect();
    let join_names: Vec<&str> = p.joins.iter().map(|j| j.fact_key.as_str()).collect();
    let agg_names = p.aggregate.columns();
    let all: Vec<&str> = filter_names
        .iter()
        .chain(&join_names)
        .chain(&agg_names)
        .copied()
        .collect();
    let (cols, counts) = fact_columns(t, &all)?;
    let (fcols, rest) = cols.split_at(filter_names.len());
    let (jcols, acols) = rest.split_at(join_names.len());
    let strides = p.strides();
    let groups = p.groups() as usize;
    let n_chunks = counts.len();
    let tasks = rayon::current_num_threads().clamp(1, n_chunks.max(1));
    let per = n_chunks.div_ceil(tasks.max(1)).max(1);
    let partials: Vec<Result<(Vec<i64>, Vec<u64>)>> = (0..tasks)
        .into_par_iter()
        .map(|task| {
            let mut sums = vec![0i64; groups];
            let mut rows = vec![0u64; groups];
            let mut s = Scratch { buf: Vec::new() };
            let mut b = Vec::new();
            let mut sel: Vec<u32> = Vec::new();
            let mut gidx: Vec<u32> = Vec::new();
            let first = (task * per).min(n_chunks);
            let end = ((task + 1) * per).min(n_chunks);
            for (chunk, &n) in counts.iter().enumerate().take(end).skip(first) {
                let n = n as usize;
                sel.clear();
                let mut all = true;
                // Filters: load the column, keep the rows that pass.
                for (f, c) in p.fact_filters.iter().zip(fcols) {
                    if !all && sel.is_empty() {
                        break;
                    }
                    load_chunk(t, c, chunk, &mut s.buf)?;
                    filter_rows(f, &s.buf, &mut sel, all);
                    all = false;
                }
                if all {
                    sel.extend(0..n as u32);
                }
                // Joins: probe, drop the misses, add payload * stride to the group index.
                gidx.clear();
                gidx.resize(sel.len(), 0);
                for ((j, c), (ht, &stride)) in
                    p.joins.iter().zip(jcols).zip(tables.iter().zip(&strides))
                {
                    let _ = j;
                    if sel.is_empty() {
                        break;
                    }
                    load_chunk(t, c, chunk, &mut s.buf)?;
                    let mut w = 0;
                    for r in 0..sel.len() {
                        if let Some(pl) = ht.probe(s.buf[sel[r] as usize]) {
                            sel[w] = sel[r];
                            gidx[w] = gidx[r] + pl * stride;
                            w += 1;
                        }
                    }
                    sel.truncate(w);
                    gidx.truncate(w);
                }
                if sel.is_empty() {
                    continue;
                }
                // Aggregate.
                load_chunk(t, &acols[0], chunk, &mut s.buf)?;
                if acols.len() > 1 {
                    load_chunk(t, &acols[1], chunk, &mut b)?;
                }
                for (r, &g) in sel.iter().zip(&gidx) {
                    let a = s.buf[*r as usize];
                    let bv = if acols.len() > 1 { b[*r as usize] } else { 0 };
                    let g = g as usize;
                    sums[g] = sums[g].wrapping_add(p.aggregate.value(a, bv));
                    rows[g] += 1;
                }
            }
            Ok((sums, rows))
        })
        .collect();
    let mut sums = vec![0i64; groups];
    let mut rows = vec![0u64; groups];
    for part in partials {
        let (s, r) = part?;
        for g in 0..groups {
            sums[g] = sums[g].wrapping_add(s[g]);
            rows[g] += r[g];
        }
    }
    Ok(QueryResult {
        groups: (0..groups)
            .filter(|&g| rows[g] > 0)
            .map(|g| (g as u64, sums[g], rows[g]))
            .collect(),
    })
}

/// Keeps the rows of `sel` whose value passes `f`; with `all`, `sel` is every row of the chunk
/// (not yet written). Branch-free compaction: each row is written, the count advanced by
/// whether it passed.
fn filter_rows(f: &Filter, values: &[u32], sel: &mut Vec<u32>, all: bool) {
    if all {
        sel.resize(values.len(), 0);
    }
    let mut w = 0;
    if let [(lo, hi)] = f.ranges[..] {
        if lo > hi {
            sel.clear();
            return;
        }
        // One range: one unsigned comparison a row.
        let range = hi - lo;
        if all {
            for (i, &v) in values.iter().enumerate() {
                sel[w] = i as u32;
                w += (v.wrapping_sub(lo) <= range) as usize;
            }
        } else {
            for r in 0..sel.len() {
                let i = sel[r];
                sel[w] = i;
                w += (values[i as usize].wrapping_sub(lo) <= range) as usize;
            }
        }
    } else {
        for r in 0..sel.len() {
            let i = if all { r as u32 } else { sel[r] };
            sel[w] = i;
            w += f.passes(values[i as usize]) as usize;
        }
    }
    sel.truncate(w);
}

/// Builds every join's table and runs `p` on the CPU.
pub fn run(ds: &Dataset, fact: &str, p: &QueryPlan) -> Result<QueryResult> {
    let tables = p
        .joins
        .iter()
        .map(|j| build_join(ds, j))
        .collect::<Result<Vec<_>>>()?;
    run_with_tables(ds, fact, p, &tables)
}

/// The plan's aggregate name, for printing.
pub fn aggregate_name(a: &Aggregate) -> String {
    match a {
        Aggregate::Sum(x) => format!("sum({x})"),
        Aggregate::SumProduct(x, y) => format!("sum({x}*{y})"),
        Aggregate::SumDifference(x, y) => format!("sum({x}-{y})"),
    }
}
