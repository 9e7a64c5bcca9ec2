//! `tessera ssb generate`'s exports for SQL engines: `--parquet` writes DIR/parquet/<table>.parquet,
//! which read back (parquet crate, Arrow reader) hold cell for cell what `--csv` writes for the
//! same scale factor and seed, with the row counts of ssb.json; bad arguments are one-line errors.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use common::{fails_with, ok, tessera};

use std::fs::File;
use std::path::Path;

use arrow_array::{Array, Int32Array, Int64Array, StringArray};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

const TABLES: [&str; 5] = ["lineorder", "date", "customer", "supplier", "part"];

/// A Parquet file as CSV text the way the CSV export writes it: a header line, integers in
/// decimal, strings in double quotes.
fn parquet_as_csv(path: &Path) -> String {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap();
    let mut out = String::new();
    let mut header = false;
    for batch in reader {
        let batch = batch.unwrap();
        if !header {
            let names: Vec<&str> = batch
                .schema_ref()
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect();
            out.push_str(&names.join(","));
            out.push('\n');
            header = true;
        }
        let cells: Vec<Box<dyn Fn(usize) -> String + '_>> = batch
            .columns()
            .iter()
            .map(|c| -> Box<dyn Fn(usize) -> String + '_> {
                assert_eq!(c.null_count(), 0);
                match c.data_type() {
                    DataType::Int32 => {
                        let a = c.as_any().downcast_ref::<Int32Array>().unwrap();
                        Box::new(move |r| a.value(r).to_string())
                    }
                    DataType::Int64 => {
                        let a = c.as_any().downcast_ref::<Int64Array>().unwrap();
                        Box::new(move |r| a.value(r).to_string())
                    }
                    DataType::Utf8 => {
                        let a = c.as_any().downcast_ref::<StringArray>().unwrap();
                        Box::new(move |r| format!("\"{}\"", a.value(r)))
                    }
                    t => panic!("unexpected column type {t}"),
                }
            })
            .collect();
        for r in 0..batch.num_rows() {
            let row: Vec<String> = cells.iter().map(|f| f(r)).collect();
            out.push_str(&row.join(","));
            out.push('\n');
        }
    }
    out
}

#[test]
fn parquet_export_equals_the_csv_export() {
    let d = tempfile::tempdir().unwrap();
    let (pq, cs) = (d.path().join("pq"), d.path().join("cs"));
    let generate = |export: &str, dir: &Path| {
        ok(&tessera(&[
            &"ssb",
            &"generate",
            &"--sf",
            &"0.01",
            &"--seed",
            &"5",
            &export,
            &dir,
        ]))
    };
    let out = generate("--parquet", &pq);
    assert!(out.contains("exported to"), "{out}");
    assert!(!pq.join("csv").exists());
    generate("--csv", &cs);
    assert!(!cs.join("parquet").exists());
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(pq.join("ssb.json")).unwrap()).unwrap();
    for t in TABLES {
        let from_parquet = parquet_as_csv(&pq.join("parquet").join(format!("{t}.parquet")));
        let csv = std::fs::read_to_string(cs.join("csv").join(format!("{t}.csv"))).unwrap();
        let rows = meta["rows"][t].as_u64().unwrap() as usize;
        assert!(rows > 0, "{t}");
        assert_eq!(from_parquet.lines().count(), rows + 1, "{t}");
        // Compared line by line so that a difference names its row.
        for (i, (a, b)) in from_parquet.lines().zip(csv.lines()).enumerate() {
            assert_eq!(a, b, "{t}: line {i}");
        }
        assert_eq!(from_parquet.lines().count(), csv.lines().count(), "{t}");
    }
}

#[test]
fn bad_generate_arguments_are_one_line_errors() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("x");
    fails_with(
        &tessera(&[&"ssb", &"generate", &"--sf", &"0", &"--parquet", &dir]),
        "scale factor",
    );
    assert!(!dir.join("parquet").exists());
}
