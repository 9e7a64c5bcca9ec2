//! The CPU executor against a plain row-at-a-time reading of the same plans (whole columns
//! decoded, a `HashMap` per join, a `BTreeMap` of groups): equal results for all 13 queries,
//! on chunks small enough that every query crosses many of them and a partial last one.

use std::collections::{BTreeMap, HashMap};

use tessera::gpu::ssb::plan::{QueryPlan, QueryResult};
use tessera_ssb::{cpu, dataset::Dataset, gen, queries};

fn reference(ds: &Dataset, p: &QueryPlan) -> QueryResult {
    let col = |t: &str, c: &str| ds.column(t, c).expect("column");
    let strides = p.strides();
    let joins: Vec<HashMap<u32, u32>> = p
        .joins
        .iter()
        .map(|j| {
            let keys = col(&j.table, &j.key);
            let filters: Vec<Vec<u32>> =
                j.filters.iter().map(|f| col(&j.table, &f.column)).collect();
            let payload = j.payload.as_ref().map(|g| col(&j.table, &g.column));
            (0..keys.len())
                .filter(|&i| j.filters.iter().zip(&filters).all(|(f, v)| f.passes(v[i])))
                .map(|i| {
                    let base = j.payload.as_ref().map_or(0, |g| g.base);
                    (keys[i], payload.as_ref().map_or(0, |v| v[i] - base))
                })
                .collect()
        })
        .collect();
    let fact = |c: &str| col(queries::FACT, c);
    let filters: Vec<Vec<u32>> = p.fact_filters.iter().map(|f| fact(&f.column)).collect();
    let fks: Vec<Vec<u32>> = p.joins.iter().map(|j| fact(&j.fact_key)).collect();
    let aggs: Vec<Vec<u32>> = p.aggregate.columns().iter().map(|c| fact(c)).collect();
    let mut groups: BTreeMap<u64, (i64, u64)> = BTreeMap::new();
    'rows: for r in 0..aggs[0].len() {
        if !p
            .fact_filters
            .iter()
            .zip(&filters)
            .all(|(f, v)| f.passes(v[r]))
        {
            continue;
        }
        let mut g = 0u64;
        for ((table, fk), &stride) in joins.iter().zip(&fks).zip(&strides) {
            match table.get(&fk[r]) {
                Some(&pl) => g += pl as u64 * stride as u64,
                None => continue 'rows,
            }
        }
        let b = aggs.get(1).map_or(0, |v| v[r]);
        let e = groups.entry(g).or_default();
        e.0 = e.0.wrapping_add(p.aggregate.value(aggs[0][r], b));
        e.1 += 1;
    }
    QueryResult {
        groups: groups.into_iter().map(|(g, (s, n))| (g, s, n)).collect(),
    }
}

#[test]
fn all_13_queries_match_a_row_at_a_time_reading() {
    let dir = tempfile::tempdir().expect("temp dir");
    let g = gen::generate(0.05, 7).expect("generates");
    gen::write_tables(dir.path(), &g, Some(20_480)).expect("writes");
    let ds = Dataset::open(dir.path()).expect("opens");
    let mut nonempty = 0;
    for name in queries::NAMES {
        let p = queries::plan(name, &ds.dict).expect("plan");
        let ours = cpu::run(&ds, queries::FACT, &p).expect("runs");
        let want = reference(&ds, &p);
        assert_eq!(ours, want, "{name}");
        nonempty += usize::from(!want.groups.is_empty());
    }
    assert!(nonempty >= 11, "only {nonempty} queries returned rows");
}

#[test]
fn a_plan_whose_dimension_filter_passes_nothing_returns_no_groups() {
    let dir = tempfile::tempdir().expect("temp dir");
    let g = gen::generate(0.01, 3).expect("generates");
    gen::write_tables(dir.path(), &g, None).expect("writes");
    let ds = Dataset::open(dir.path()).expect("opens");
    let mut p = queries::plan("q2.1", &ds.dict).expect("plan");
    // Keys run 1..N: key 0 exists in no dimension.
    p.joins[0]
        .filters
        .push(tessera::gpu::ssb::plan::Filter::eq("p_partkey", 0));
    let r = cpu::run(&ds, queries::FACT, &p).expect("runs");
    assert_eq!(r, reference(&ds, &p));
    assert!(r.groups.is_empty());
}
