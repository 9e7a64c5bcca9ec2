//! The Star Schema Benchmark (O'Neil et al.) on tessera's compressed columns.
//!
//! - [`gen`]: the data generator (five tables, dbgen's rules, any scale factor, deterministic
//!   for a seed, multi-core), written as `.tsr` tables with auto codecs;
//! - [`schema`]: the fixed domains and the sorted dictionaries string columns are coded with;
//! - [`csv`]: CSV export of a generated data set with the strings restored (for DuckDB);

pub mod csv;
pub mod gen;
pub mod schema;
