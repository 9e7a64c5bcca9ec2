//! The Star Schema Benchmark (O'Neil et al.) on tessera's compressed columns.
//!
//! - [`gen`]: the data generator (five tables, dbgen's rules, any scale factor, deterministic
//!   for a seed, multi-core), written as `.tsr` tables with auto codecs;
//! - [`schema`]: the fixed domains and the sorted dictionaries string columns are coded with;
//! - [`csv`] and [`parquet`]: CSV and Parquet export of a generated data set with the strings
//!   restored, for SQL engines (DuckDB checks the 13 queries on the Parquet files);
//! - [`queries`]: the 13 queries as plans of shared operators, results with names;
//! - [`cpu`]: the CPU executor (all cores);
//! - [`gpu`]: the tables uploaded to the GPU (compressed as stored, or plain) and the queries
//!   run by the generated tile-based kernels;
//! - [`dataset`]: a data set directory opened.

pub mod csv;
pub mod gen;
pub mod parquet;
pub mod schema;

pub mod cpu;
pub mod dataset;
pub mod gpu;
pub mod queries;
