//! The Parquet export read back by the parquet crate's Arrow reader equals the generated tables:
//! the columns and their types, the row groups, and every value (strings through the
//! dictionaries, as the CSV export writes them). A bad code is an error that leaves no file.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::fs::File;
use std::path::Path;

use arrow_array::{Array, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use tessera_ssb::gen::{self, Generated, Table};
use tessera_ssb::schema::Dictionaries;
use tessera_ssb::{csv, parquet as ssb_parquet};

/// (row groups' row counts, every batch) of a Parquet file.
fn read(path: &Path) -> (Vec<i64>, Vec<RecordBatch>) {
    let b = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let groups = b
        .metadata()
        .row_groups()
        .iter()
        .map(|g| g.num_rows())
        .collect();
    let batches = b
        .with_batch_size(3000)
        .build()
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    (groups, batches)
}

/// Every value of `t` equals the file's, column by column, in row order.
fn check_table(dir: &Path, t: &Table, dict: &Dictionaries, row_group_rows: usize) {
    let path = dir.join(format!("{}.parquet", t.name));
    let (groups, batches) = read(&path);
    let rows = t.rows();
    assert!(rows > 0, "{}", t.name);
    let want_groups: Vec<i64> = (0..rows)
        .step_by(row_group_rows)
        .map(|s| (rows.min(s + row_group_rows) - s) as i64)
        .collect();
    assert_eq!(groups, want_groups, "{}: row groups", t.name);
    let schema = batches[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let want_names: Vec<&str> = t.columns.iter().map(|c| c.0).collect();
    assert_eq!(names, want_names, "{}", t.name);
    assert_eq!(
        batches.iter().map(|b| b.num_rows()).sum::<usize>(),
        rows,
        "{}",
        t.name
    );
    for (i, (name, values)) in t.columns.iter().enumerate() {
        let field = schema.field(i);
        assert!(!field.is_nullable(), "{name}");
        let mut row = 0;
        for b in &batches {
            let col = b.column(i);
            assert_eq!(col.null_count(), 0, "{name}");
            let n = col.len();
            match csv::column_dictionary(name) {
                Some(d) => {
                    assert_eq!(field.data_type(), &DataType::Utf8, "{name}");
                    let words = dict.get(d).unwrap();
                    let got = col.as_any().downcast_ref::<StringArray>().unwrap();
                    for k in 0..n {
                        assert_eq!(
                            got.value(k),
                            words[values[row + k] as usize],
                            "{name} row {}",
                            row + k
                        );
                    }
                }
                None if *name == "lo_orderkey" => {
                    assert_eq!(field.data_type(), &DataType::Int64, "{name}");
                    let got = col.as_any().downcast_ref::<Int64Array>().unwrap();
                    for k in 0..n {
                        assert_eq!(
                            got.value(k),
                            i64::from(values[row + k]),
                            "{name} row {}",
                            row + k
                        );
                    }
                }
                None => {
                    assert_eq!(field.data_type(), &DataType::Int32, "{name}");
                    let got = col.as_any().downcast_ref::<Int32Array>().unwrap();
                    for k in 0..n {
                        assert_eq!(
                            i64::from(got.value(k)),
                            i64::from(values[row + k]),
                            "{name} row {}",
                            row + k
                        );
                    }
                }
            }
            row += n;
        }
        assert_eq!(row, rows, "{name}");
    }
}

fn generated() -> Generated {
    gen::generate(0.01, 3).unwrap()
}

#[test]
fn every_value_reads_back_in_small_row_groups() {
    let g = generated();
    let dir = tempfile::tempdir().unwrap();
    // 4,000 rows a row group: lineorder (about 60,000 rows) in many, with a partial last one
    // that batches of 3,000 rows cross.
    ssb_parquet::export_with(dir.path(), &g, 4000).unwrap();
    let dict = Dictionaries::standard();
    for t in g.tables() {
        check_table(dir.path(), t, &dict, 4000);
    }
    // The strings are the specification's, not codes written as text.
    let (_, b) = read(&dir.path().join("part.parquet"));
    let mfgr = b[0]
        .column_by_name("p_mfgr")
        .unwrap()
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap()
        .value(0)
        .to_string();
    assert!(
        ["MFGR#1", "MFGR#2", "MFGR#3", "MFGR#4", "MFGR#5"].contains(&mfgr.as_str()),
        "{mfgr}"
    );
}

#[test]
fn the_default_export_reads_back() {
    let g = generated();
    let dir = tempfile::tempdir().unwrap();
    ssb_parquet::export(dir.path(), &g).unwrap();
    let dict = Dictionaries::standard();
    for t in g.tables() {
        check_table(dir.path(), t, &dict, ssb_parquet::ROW_GROUP_ROWS);
    }
    // The same directory written again is replaced whole.
    ssb_parquet::export(dir.path(), &g).unwrap();
    check_table(dir.path(), &g.lineorder, &dict, ssb_parquet::ROW_GROUP_ROWS);
}

#[test]
fn bad_values_are_errors_and_leave_no_file() {
    let mut g = generated();
    let dir = tempfile::tempdir().unwrap();
    // A code past the city dictionary (250 names) in the last row of customer.
    let city = &mut g.customer.columns[1];
    assert_eq!(city.0, "c_city");
    *city.1.last_mut().unwrap() = 250;
    let err = ssb_parquet::export(dir.path(), &g).unwrap_err().to_string();
    assert!(
        err.contains("c_city") && err.contains("250"),
        "unexpected error: {err}"
    );
    // lineorder and date were written before customer; customer is not there, not even
    // under a temporary name.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["date.parquet", "lineorder.parquet"]);

    // A value that does not fit Int32.
    let mut g = generated();
    g.part.columns[0].1[5] = u32::MAX;
    let err = ssb_parquet::export(&dir.path().join("b"), &g)
        .unwrap_err()
        .to_string();
    assert!(err.contains("p_partkey"), "unexpected error: {err}");

    // A column shorter than its table.
    let mut g = generated();
    g.supplier.columns[2].1.pop();
    let err = ssb_parquet::export(&dir.path().join("c"), &g)
        .unwrap_err()
        .to_string();
    assert!(err.contains("s_nation"), "unexpected error: {err}");

    assert!(ssb_parquet::export_with(&dir.path().join("d"), &generated(), 0).is_err());
}
