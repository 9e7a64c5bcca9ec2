//! The SSB data generator: the five tables of the Star Schema Benchmark at any scale factor,
//! following dbgen's rules (O'Neil et al., rev. 3, itself after TPC-H's dbgen) for the columns
//! the 13 queries read, deterministic for a seed whatever the number of threads.
//!
//! Rows, for scale factor `SF`: lineorder about `SF * 6,000,000` (`SF * 1,500,000` orders of 1 to
//! 7 lines each, uniform), customer `SF * 30,000`, supplier `SF * 2,000`, part
//! `200,000 * (1 + floor(log2 SF))` (for `SF < 1`, where the logarithm is negative, dbgen's rule
//! gives nothing sensible and the count is scaled linearly: `200,000 * SF`), date 2556 days from
//! 1992-01-01.
//!
//! Values: an order's customer is uniform over the customer keys not divisible by 3 (TPC-H:
//! a third of the customers place no order), its date uniform over the date dimension's days
//! except the last 151; each line's part and supplier are uniform, quantity uniform 1-50,
//! discount 0-10, tax 0-8; extended price = quantity * the part's retail price in cents (TPC-H's
//! formula `90000 + (partkey / 10) % 20001 + 100 * (partkey % 1000)`), revenue = extended price
//! times (100 - discount) / 100, supply cost = 6 * retail price / 10. Customers and suppliers
//! get a uniform nation and a city of it (the nation's name cut to 9 characters and a digit
//! 0-9); parts a uniform manufacturer 1-5, category 1-5 of it and brand 1-40 of that. Order keys
//! are dense (dbgen's are sparse: no query reads them).
//!
//! Work is split into blocks of orders, each with its own random stream seeded from the seed and
//! the block's index, so the output is the same on 2 cores or 16.

use std::path::Path;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use tessera::{ColumnOptions, Result, TableWriter};

use crate::schema::{self, Dictionaries, DATE_DAYS, NATIONS, ORDER_DATE_MARGIN};

/// Orders per generator block (each its own random stream).
const ORDER_BLOCK: usize = 1 << 16;

/// A generated table: named u32 columns of equal length.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub name: &'static str,
    pub columns: Vec<(&'static str, Vec<u32>)>,
}

impl Table {
    /// Rows of the table.
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.1.len())
    }
    /// The column called `name`.
    pub fn column(&self, name: &str) -> Option<&[u32]> {
        self.columns
            .iter()
            .find(|c| c.0 == name)
            .map(|c| c.1.as_slice())
    }
}

/// All five tables.
#[derive(Debug, Clone)]
pub struct Generated {
    pub sf: f64,
    pub seed: u64,
    pub lineorder: Table,
    pub date: Table,
    pub customer: Table,
    pub supplier: Table,
    pub part: Table,
}

impl Generated {
    /// The tables in the order they are written.
    pub fn tables(&self) -> [&Table; 5] {
        [
            &self.lineorder,
            &self.date,
            &self.customer,
            &self.supplier,
            &self.part,
        ]
    }
}

/// Row counts of a scale factor: (orders, customers, suppliers, parts).
pub fn row_counts(sf: f64) -> Result<(usize, usize, usize, usize)> {
    if !(sf.is_finite() && sf > 0.0 && sf <= 10_000.0) {
        return Err(tessera::Error::InvalidArgument(format!(
            "scale factor {sf} outside (0, 10000]"
        )));
    }
    let scaled = |base: f64| ((base * sf).round() as usize).max(1);
    let parts = if sf >= 1.0 {
        200_000 * (1 + sf.log2().floor() as usize)
    } else {
        scaled(200_000.0)
    };
    Ok((
        scaled(1_500_000.0),
        scaled(30_000.0),
        scaled(2_000.0),
        parts,
    ))
}

fn stream(seed: u64, table: u64, block: u64) -> SmallRng {
    // Distinct, well-spread seeds per (table, block); seed_from_u64 mixes them further.
    SmallRng::seed_from_u64(
        seed ^ table.wrapping_mul(0xD1B5_4A32_D192_ED03)
            ^ block.wrapping_mul(0x9E37_79B9_7F4A_7C15),
    )
}

/// TPC-H's retail price of a part, in cents.
pub fn retail_price(partkey: u32) -> u32 {
    90_000 + (partkey / 10) % 20_001 + 100 * (partkey % 1_000)
}

/// Generates every table of scale factor `sf` from `seed`.
pub fn generate(sf: f64, seed: u64) -> Result<Generated> {
    let (orders, customers, suppliers, parts) = row_counts(sf)?;
    let dict = Dictionaries::standard();
    let date = date_table(&dict)?;
    let customer = people("customer", "c", customers, seed, 1, &dict)?;
    let supplier = people("supplier", "s", suppliers, seed, 2, &dict)?;
    let part = part_table(parts, seed, &dict)?;
    let lineorder = lineorder_table(orders, customers, suppliers, parts, seed)?;
    Ok(Generated {
        sf,
        seed,
        lineorder,
        date,
        customer,
        supplier,
        part,
    })
}

fn date_table(dict: &Dictionaries) -> Result<Table> {
    let days = schema::days();
    let mut ym = Vec::with_capacity(DATE_DAYS);
    for d in &days {
        ym.push(dict.code("yearmonth", &schema::yearmonth_name(d.year, d.month))?);
    }
    Ok(Table {
        name: "date",
        columns: vec![
            ("d_datekey", days.iter().map(|d| d.key()).collect()),
            ("d_year", days.iter().map(|d| d.year).collect()),
            (
                "d_yearmonthnum",
                days.iter().map(|d| d.year * 100 + d.month).collect(),
            ),
            ("d_yearmonth", ym),
            (
                "d_weeknuminyear",
                days.iter().map(|d| d.week_in_year()).collect(),
            ),
        ],
    })
}

/// Customer or supplier: key, city, nation, region.
fn people(
    name: &'static str,
    prefix: &'static str,
    n: usize,
    seed: u64,
    table: u64,
    dict: &Dictionaries,
) -> Result<Table> {
    let mut nation_codes = [0u32; 25];
    let mut region_codes = [0u32; 25];
    let mut city_codes = [[0u32; 10]; 25];
    for (i, (nation, region)) in NATIONS.iter().enumerate() {
        nation_codes[i] = dict.code("nation", nation)?;
        region_codes[i] = dict.code("region", schema::REGIONS[*region])?;
        for d in 0..10 {
            city_codes[i][d as usize] = dict.code("city", &schema::city_name(nation, d))?;
        }
    }
    let mut rng = stream(seed, table, 0);
    let (mut city, mut nation, mut region) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for _ in 0..n {
        let k = rng.random_range(0..25usize);
        city.push(city_codes[k][rng.random_range(0..10usize)]);
        nation.push(nation_codes[k]);
        region.push(region_codes[k]);
    }
    let names: [&'static str; 4] = match prefix {
        "c" => ["c_custkey", "c_city", "c_nation", "c_region"],
        _ => ["s_suppkey", "s_city", "s_nation", "s_region"],
    };
    Ok(Table {
        name,
        columns: vec![
            (names[0], (1..=n as u32).collect()),
            (names[1], city),
            (names[2], nation),
            (names[3], region),
        ],
    })
}

fn part_table(n: usize, seed: u64, dict: &Dictionaries) -> Result<Table> {
    let mut rng = stream(seed, 3, 0);
    let (mut mfgr, mut category, mut brand) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let mut brand_codes = vec![0u32; 5 * 5 * 40];
    let mut category_codes = [0u32; 25];
    let mut mfgr_codes = [0u32; 5];
    for m in 1..=5u32 {
        mfgr_codes[m as usize - 1] = dict.code("mfgr", &format!("MFGR#{m}"))?;
        for c in 1..=5u32 {
            let ci = ((m - 1) * 5 + c - 1) as usize;
            category_codes[ci] = dict.code("category", &format!("MFGR#{m}{c}"))?;
            for b in 1..=40u32 {
                brand_codes[ci * 40 + b as usize - 1] =
                    dict.code("brand1", &format!("MFGR#{m}{c}{b}"))?;
            }
        }
    }
    for _ in 0..n {
        let m = rng.random_range(0..5usize);
        let c = rng.random_range(0..5usize);
        let b = rng.random_range(0..40usize);
        mfgr.push(mfgr_codes[m]);
        category.push(category_codes[m * 5 + c]);
        brand.push(brand_codes[(m * 5 + c) * 40 + b]);
    }
    Ok(Table {
        name: "part",
        columns: vec![
            ("p_partkey", (1..=n as u32).collect()),
            ("p_mfgr", mfgr),
            ("p_category", category),
            ("p_brand1", brand),
        ],
    })
}

/// Lineorder's columns, in the order they are stored.
pub const LINEORDER_COLUMNS: [&str; 12] = [
    "lo_orderkey",
    "lo_linenumber",
    "lo_custkey",
    "lo_partkey",
    "lo_suppkey",
    "lo_orderdate",
    "lo_quantity",
    "lo_extendedprice",
    "lo_discount",
    "lo_revenue",
    "lo_supplycost",
    "lo_tax",
];

fn lineorder_table(
    orders: usize,
    customers: usize,
    suppliers: usize,
    parts: usize,
    seed: u64,
) -> Result<Table> {
    let days: Vec<u32> = schema::days().iter().map(|d| d.key()).collect();
    let order_days = DATE_DAYS - ORDER_DATE_MARGIN;
    let blocks = orders.div_ceil(ORDER_BLOCK);
    // Pass 1: lines per order, from each block's own stream; pass 2 fills the rows.
    let lines: Vec<Vec<u8>> = (0..blocks)
        .into_par_iter()
        .map(|b| {
            let n = ORDER_BLOCK.min(orders - b * ORDER_BLOCK);
            let mut rng = stream(seed, 4, b as u64);
            (0..n).map(|_| rng.random_range(1..=7u8)).collect()
        })
        .collect();
    let block_rows: Vec<usize> = lines
        .iter()
        .map(|l| l.iter().map(|&x| x as usize).sum())
        .collect();
    let rows: usize = block_rows.iter().sum();
    if rows > u32::MAX as usize {
        return Err(tessera::Error::InvalidArgument(format!(
            "{rows} lineorder rows: more than 2^32"
        )));
    }
    let mut cols: Vec<Vec<u32>> = (0..LINEORDER_COLUMNS.len())
        .map(|_| vec![0u32; rows])
        .collect();
    // Per block, one mutable slice of every column.
    let mut per_block: Vec<Vec<&mut [u32]>> = (0..blocks).map(|_| Vec::new()).collect();
    for col in cols.iter_mut() {
        let mut rest: &mut [u32] = col.as_mut_slice();
        for (b, &n) in block_rows.iter().enumerate() {
            let (head, tail) = rest.split_at_mut(n);
            per_block[b].push(head);
            rest = tail;
        }
    }
    let customers = customers as u32;
    per_block
        .into_par_iter()
        .zip(lines.par_iter())
        .enumerate()
        .for_each(|(b, (mut out, lines))| {
            let mut rng = stream(seed, 5, b as u64);
            let mut row = 0;
            for (i, &nl) in lines.iter().enumerate() {
                let orderkey = (b * ORDER_BLOCK + i + 1) as u32;
                // TPC-H: customers whose key is divisible by 3 place no order.
                let custkey = if customers < 3 {
                    1
                } else {
                    loop {
                        let k = rng.random_range(1..=customers);
                        if k % 3 != 0 {
                            break k;
                        }
                    }
                };
                let orderdate = days[rng.random_range(0..order_days)];
                for line in 1..=nl as u32 {
                    let partkey = rng.random_range(1..=parts as u32);
                    let suppkey = rng.random_range(1..=suppliers as u32);
                    let quantity = rng.random_range(1..=50u32);
                    let discount = rng.random_range(0..=10u32);
                    let tax = rng.random_range(0..=8u32);
                    let price = retail_price(partkey);
                    let extended = quantity * price;
                    let revenue = (extended as u64 * (100 - discount) as u64 / 100) as u32;
                    let values = [
                        orderkey,
                        line,
                        custkey,
                        partkey,
                        suppkey,
                        orderdate,
                        quantity,
                        extended,
                        discount,
                        revenue,
                        6 * price / 10,
                        tax,
                    ];
                    for (c, v) in out.iter_mut().zip(values) {
                        c[row] = v;
                    }
                    row += 1;
                }
            }
        });
    Ok(Table {
        name: "lineorder",
        columns: LINEORDER_COLUMNS.iter().copied().zip(cols).collect(),
    })
}

/// What [`write_tables`] wrote.
#[derive(Debug, Clone)]
pub struct Written {
    /// (table, rows, file bytes, uncompressed bytes of its columns)
    pub tables: Vec<(String, usize, u64, u64)>,
}

/// Writes one `.tsr` per table under `dir` (auto codecs; `chunk_values` values a chunk, the
/// library's default when `None`), `dict.tsr` with the dictionaries as utf8 columns, and
/// `ssb.json` with the scale factor, seed and row counts.
pub fn write_tables(dir: &Path, g: &Generated, chunk_values: Option<usize>) -> Result<Written> {
    std::fs::create_dir_all(dir).map_err(|e| tessera::Error::io(dir.display().to_string(), e))?;
    let mut opts = ColumnOptions::auto();
    if let Some(n) = chunk_values {
        opts = opts.with_chunk_values(n);
    }
    let mut tables = Vec::new();
    for t in g.tables() {
        let path = dir.join(format!("{}.tsr", t.name));
        let mut w = TableWriter::create(&path)?;
        let mut raw = 0u64;
        for (name, values) in &t.columns {
            w.write_values(name, values, opts)?;
            raw += values.len() as u64 * 4;
        }
        let s = w.finish()?;
        tables.push((t.name.to_string(), t.rows(), s.file_bytes, raw));
    }
    let dict = Dictionaries::standard();
    let mut w = TableWriter::create(dir.join("dict.tsr"))?;
    for name in schema::DICTIONARY_NAMES {
        let words = dict.get(name).unwrap_or_default();
        w.write_strings(name, words, ColumnOptions::auto())?;
    }
    w.finish()?;
    let meta = serde_json::json!({
        "sf": g.sf,
        "seed": g.seed,
        "rows": tables.iter().map(|t| (t.0.clone(), t.1)).collect::<std::collections::BTreeMap<_, _>>(),
    });
    let text = serde_json::to_string_pretty(&meta)
        .map_err(|e| tessera::Error::InvalidArgument(format!("ssb.json: {e}")))?;
    write_atomic(&dir.join("ssb.json"), text.as_bytes())?;
    Ok(Written { tables })
}

/// Writes a small file through the container crate's temp-then-rename writer.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = tessera::format::AtomicFile::create(path)?;
    f.write_bytes(bytes)?;
    f.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_counts_follow_the_specification() {
        assert_eq!(
            row_counts(1.0).ok(),
            Some((1_500_000, 30_000, 2_000, 200_000))
        );
        assert_eq!(
            row_counts(20.0).ok(),
            Some((30_000_000, 600_000, 40_000, 1_000_000))
        );
        assert_eq!(row_counts(0.01).ok(), Some((15_000, 300, 20, 2_000)));
        assert!(row_counts(0.0).is_err());
        assert!(row_counts(f64::NAN).is_err());
    }

    #[test]
    fn generation_is_deterministic_and_values_stay_in_their_domains() {
        let a = generate(0.05, 7).expect("generates");
        let b = generate(0.05, 7).expect("generates");
        let c = generate(0.05, 8).expect("generates");
        for (x, y) in a.tables().iter().zip(b.tables()) {
            assert_eq!(x.columns, y.columns);
        }
        assert_ne!(a.lineorder.columns, c.lineorder.columns);
        let lo = &a.lineorder;
        let rows = lo.rows();
        // About 4 lines an order.
        assert!(rows > 75_000 * 3 && rows < 75_000 * 5, "{rows}");
        let col = |n: &str| lo.column(n).expect("column");
        assert!(col("lo_quantity").iter().all(|&q| (1..=50).contains(&q)));
        assert!(col("lo_discount").iter().all(|&d| d <= 10));
        assert!(col("lo_custkey").iter().all(|&k| k % 3 != 0 && k >= 1));
        assert!(col("lo_orderdate")
            .iter()
            .all(|&d| (19920101..=19980802).contains(&d)));
        for i in 0..rows {
            let p = retail_price(col("lo_partkey")[i]);
            assert_eq!(col("lo_extendedprice")[i], col("lo_quantity")[i] * p);
            assert_eq!(col("lo_supplycost")[i], 6 * p / 10);
        }
        let parts = a.part.rows() as u32;
        assert!(col("lo_partkey").iter().all(|&k| k >= 1 && k <= parts));
    }
}
