//! The 13 SSB queries (flights 1-4) as [`QueryPlan`]s over the dictionary-coded schema, and
//! their results with the group keys turned back into names.
//!
//! Each query is a composition of the shared operators: fact filters, dimension joins (filter,
//! build, probe, with or without a group-key payload), group by, aggregate. String predicates
//! become code predicates through the sorted dictionaries (`=` a code, `BETWEEN` a code range,
//! `IN` a list of codes). Joins are probed most selective first.

use tessera::gpu::ssb::plan::{Aggregate, DimJoin, Filter, GroupKey, QueryPlan, QueryResult};
use tessera::Result;

use crate::schema::{Dictionaries, FIRST_YEAR, YEARS};

/// The queries' names, in order.
pub const NAMES: [&str; 13] = [
    "q1.1", "q1.2", "q1.3", "q2.1", "q2.2", "q2.3", "q3.1", "q3.2", "q3.3", "q3.4", "q4.1", "q4.2",
    "q4.3",
];

/// The fact table every query reads.
pub const FACT: &str = "lineorder";

fn key(column: &str, dict: &Dictionaries) -> GroupKey {
    let card = match column {
        "d_year" => YEARS,
        c => crate::csv::column_dictionary(c)
            .and_then(|d| dict.get(d))
            .map_or(1, |d| d.len() as u32),
    };
    GroupKey {
        column: column.into(),
        base: if column == "d_year" { FIRST_YEAR } else { 0 },
        card,
    }
}

fn join(
    fact_key: &str,
    table: &str,
    dim_key: &str,
    filters: Vec<Filter>,
    payload: Option<GroupKey>,
) -> DimJoin {
    DimJoin {
        fact_key: fact_key.into(),
        table: table.into(),
        key: dim_key.into(),
        filters,
        payload,
    }
}

fn date(filters: Vec<Filter>, grouped: bool, dict: &Dictionaries) -> DimJoin {
    join(
        "lo_orderdate",
        "date",
        "d_datekey",
        filters,
        grouped.then(|| key("d_year", dict)),
    )
}
fn customer(filters: Vec<Filter>, payload: Option<&str>, dict: &Dictionaries) -> DimJoin {
    join(
        "lo_custkey",
        "customer",
        "c_custkey",
        filters,
        payload.map(|c| key(c, dict)),
    )
}
fn supplier(filters: Vec<Filter>, payload: Option<&str>, dict: &Dictionaries) -> DimJoin {
    join(
        "lo_suppkey",
        "supplier",
        "s_suppkey",
        filters,
        payload.map(|c| key(c, dict)),
    )
}
fn part(filters: Vec<Filter>, payload: Option<&str>, dict: &Dictionaries) -> DimJoin {
    join(
        "lo_partkey",
        "part",
        "p_partkey",
        filters,
        payload.map(|c| key(c, dict)),
    )
}

/// The plan of query `name` (one of [`NAMES`]).
pub fn plan(name: &str, d: &Dictionaries) -> Result<QueryPlan> {
    let code = |dict: &str, s: &str| d.code(dict, s);
    let eq = |col: &str, dict: &str, s: &str| -> Result<Filter> {
        Ok(Filter::eq(col, d.code(dict, s)?))
    };
    let flight1 = |date_filters: Vec<Filter>, disc: (u32, u32), qty: (u32, u32)| QueryPlan {
        name: name.into(),
        fact_filters: vec![
            Filter::between("lo_discount", disc.0, disc.1),
            Filter::between("lo_quantity", qty.0, qty.1),
        ],
        joins: vec![date(date_filters, false, d)],
        group: vec![],
        aggregate: Aggregate::SumProduct("lo_extendedprice".into(), "lo_discount".into()),
    };
    let revenue = || Aggregate::Sum("lo_revenue".into());
    let profit = || Aggregate::SumDifference("lo_revenue".into(), "lo_supplycost".into());
    let uk = [code("city", "UNITED KI1")?, code("city", "UNITED KI5")?];
    let mfgr12 = [code("mfgr", "MFGR#1")?, code("mfgr", "MFGR#2")?];
    let p = match name {
        "q1.1" => flight1(vec![Filter::eq("d_year", 1993)], (1, 3), (0, 24)),
        "q1.2" => flight1(vec![Filter::eq("d_yearmonthnum", 199401)], (4, 6), (26, 35)),
        "q1.3" => flight1(
            vec![Filter::eq("d_weeknuminyear", 6), Filter::eq("d_year", 1994)],
            (5, 7),
            (26, 35),
        ),
        "q2.1" | "q2.2" | "q2.3" => {
            let (pf, region) = match name {
                "q2.1" => (eq("p_category", "category", "MFGR#12")?, "AMERICA"),
                "q2.2" => {
                    let (lo, hi) = d
                        .code_range("brand1", "MFGR#2221", "MFGR#2228")?
                        .ok_or_else(|| {
                            tessera::Error::InvalidArgument("empty brand range".into())
                        })?;
                    (Filter::between("p_brand1", lo, hi), "ASIA")
                }
                _ => (eq("p_brand1", "brand1", "MFGR#2239")?, "EUROPE"),
            };
            QueryPlan {
                name: name.into(),
                fact_filters: vec![],
                joins: vec![
                    part(vec![pf], Some("p_brand1"), d),
                    supplier(vec![eq("s_region", "region", region)?], None, d),
                    date(vec![], true, d),
                ],
                group: vec![2, 0],
                aggregate: revenue(),
            }
        }
        "q3.1" | "q3.2" | "q3.3" | "q3.4" => {
            let years = Filter::between("d_year", 1992, 1997);
            let (cf, sf, df, level) = match name {
                "q3.1" => (
                    eq("c_region", "region", "ASIA")?,
                    eq("s_region", "region", "ASIA")?,
                    years,
                    "nation",
                ),
                "q3.2" => (
                    eq("c_nation", "nation", "UNITED STATES")?,
                    eq("s_nation", "nation", "UNITED STATES")?,
                    years,
                    "city",
                ),
                "q3.3" => (
                    Filter::any_of("c_city", &uk),
                    Filter::any_of("s_city", &uk),
                    years,
                    "city",
                ),
                _ => (
                    Filter::any_of("c_city", &uk),
                    Filter::any_of("s_city", &uk),
                    eq("d_yearmonth", "yearmonth", "Dec1997")?,
                    "city",
                ),
            };
            QueryPlan {
                name: name.into(),
                fact_filters: vec![],
                joins: vec![
                    customer(vec![cf], Some(&format!("c_{level}")), d),
                    supplier(vec![sf], Some(&format!("s_{level}")), d),
                    date(vec![df], true, d),
                ],
                group: vec![0, 1, 2],
                aggregate: revenue(),
            }
        }
        "q4.1" => QueryPlan {
            name: name.into(),
            fact_filters: vec![],
            joins: vec![
                supplier(vec![eq("s_region", "region", "AMERICA")?], None, d),
                customer(
                    vec![eq("c_region", "region", "AMERICA")?],
                    Some("c_nation"),
                    d,
                ),
                part(vec![Filter::any_of("p_mfgr", &mfgr12)], None, d),
                date(vec![], true, d),
            ],
            group: vec![3, 1],
            aggregate: profit(),
        },
        "q4.2" => QueryPlan {
            name: name.into(),
            fact_filters: vec![],
            joins: vec![
                supplier(
                    vec![eq("s_region", "region", "AMERICA")?],
                    Some("s_nation"),
                    d,
                ),
                customer(vec![eq("c_region", "region", "AMERICA")?], None, d),
                part(
                    vec![Filter::any_of("p_mfgr", &mfgr12)],
                    Some("p_category"),
                    d,
                ),
                date(vec![Filter::between("d_year", 1997, 1998)], true, d),
            ],
            group: vec![3, 0, 2],
            aggregate: profit(),
        },
        "q4.3" => QueryPlan {
            name: name.into(),
            fact_filters: vec![],
            joins: vec![
                supplier(
                    vec![eq("s_nation", "nation", "UNITED STATES")?],
                    Some("s_city"),
                    d,
                ),
                part(
                    vec![eq("p_category", "category", "MFGR#14")?],
                    Some("p_brand1"),
                    d,
                ),
                customer(vec![eq("c_region", "region", "AMERICA")?], None, d),
                date(vec![Filter::between("d_year", 1997, 1998)], true, d),
            ],
            group: vec![3, 0, 1],
            aggregate: profit(),
        },
        other => {
            return Err(tessera::Error::InvalidArgument(format!(
                "no SSB query called {other} (known: {})",
                NAMES.join(", ")
            )))
        }
    };
    p.check()?;
    Ok(p)
}

/// One result row: the group keys as text (years as numbers, codes as their strings), then
/// the aggregate.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Row {
    pub keys: Vec<String>,
    pub value: i64,
}

/// The names of a plan's group-key columns, in order.
pub fn key_columns(p: &QueryPlan) -> Vec<String> {
    p.group
        .iter()
        .filter_map(|&g| p.joins[g].payload.as_ref().map(|k| k.column.clone()))
        .collect()
}

/// The result's rows, sorted by their keys.
pub fn rows(p: &QueryPlan, r: &QueryResult, d: &Dictionaries) -> Vec<Row> {
    let mut out: Vec<Row> = r
        .groups
        .iter()
        .map(|&(g, sum, _)| {
            let parts = p.split_group(g);
            let keys = p
                .group
                .iter()
                .zip(parts)
                .map(|(&j, v)| {
                    let k = p.joins[j].payload.as_ref();
                    let col = k.map_or("", |k| k.column.as_str());
                    let value = v + k.map_or(0, |k| k.base);
                    match crate::csv::column_dictionary(col).and_then(|n| d.get(n)) {
                        Some(dict) => dict
                            .get(value as usize)
                            .cloned()
                            .unwrap_or_else(|| format!("#{value}")),
                        None => value.to_string(),
                    }
                })
                .collect();
            Row { keys, value: sum }
        })
        .collect();
    out.sort();
    out
}
