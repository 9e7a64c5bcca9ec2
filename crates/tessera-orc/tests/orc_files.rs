//! ORC files written by pyarrow (every supported type, nulls none/some/all, file versions 0.11
//! and 0.12, compression NONE/ZLIB/SNAPPY/ZSTD/LZ4) and by Apache ORC's Java writer read to the
//! same Arrow arrays as pyarrow's ORC reader (its reading is stored beside each file as
//! `NAME.expected.arrow`, written by `tests/make_orc.py`).

use std::fs::File;

use arrow_array::{Array, RecordBatch};
use tessera_orc::{OrcError, OrcFile, OrcReader};

mod common;
use common::dir;

fn expected(name: &str) -> (RecordBatch, usize) {
    let p = dir().join(format!("{name}.expected.arrow"));
    let r = arrow_ipc::reader::FileReader::try_new(File::open(&p).expect("expected file"), None)
        .expect("ipc");
    let schema = r.schema();
    let total: usize = schema.metadata()["total_rows"].parse().expect("total_rows");
    let batches: Vec<RecordBatch> = r.map(|b| b.expect("batch")).collect();
    let b = arrow_select_concat(&schema, &batches);
    (b, total)
}

/// The batches as one (row slices compared one batch at a time instead of concatenating).
fn arrow_select_concat(schema: &arrow_schema::SchemaRef, b: &[RecordBatch]) -> RecordBatch {
    match b {
        [one] => one.clone(),
        [] => RecordBatch::new_empty(schema.clone()),
        _ => panic!("expected files hold one batch"),
    }
}

fn check_file(name: &str) {
    let (want, total) = expected(name);
    let f = OrcFile::open(&dir().join(name)).expect("open");
    assert_eq!(f.rows() as usize, total, "{name}: rows");
    let cols: Vec<String> = want
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let r = OrcReader::new(&f, Some(&cols)).expect("reader");
    for (a, b) in r.schema().fields().iter().zip(want.schema().fields()) {
        assert_eq!(a.data_type(), b.data_type(), "{name}: type of {}", a.name());
    }
    let mut at = 0usize;
    for batch in r.batches() {
        let batch = batch.unwrap_or_else(|e| panic!("{name}: {e}"));
        let n = batch.num_rows().min(want.num_rows().saturating_sub(at));
        if n == 0 {
            at += batch.num_rows();
            continue;
        }
        for (c, col) in cols.iter().enumerate() {
            let got = batch.column(c).slice(0, n);
            let exp = want.column(c).slice(at, n);
            if got.as_ref() != exp.as_ref() {
                for i in 0..n {
                    let (g, e) = (got.slice(i, 1), exp.slice(i, 1));
                    assert!(
                        g.as_ref() == e.as_ref(),
                        "{name}: column {col}, row {}: got {g:?}, pyarrow {e:?}",
                        at + i
                    );
                }
            }
        }
        at += batch.num_rows();
    }
    assert_eq!(at, total, "{name}: rows read");
}

#[test]
fn pyarrow_files_read_as_pyarrow_reads_them() {
    for v in ["0.11", "0.12"] {
        for c in ["uncompressed", "zlib", "snappy", "zstd", "lz4"] {
            let name = format!("pyarrow-{v}-{c}.orc");
            if dir().join(&name).exists() {
                check_file(&name);
            } else {
                assert!(
                    v == "0.11" && (c == "snappy" || c == "lz4"),
                    "{name} missing"
                );
            }
        }
    }
}

#[test]
fn pyarrow_files_have_several_stripes_and_both_rle_versions() {
    let f11 = OrcFile::open(&dir().join("pyarrow-0.11-uncompressed.orc")).expect("open");
    let f12 = OrcFile::open(&dir().join("pyarrow-0.12-uncompressed.orc")).expect("open");
    assert_eq!((f11.version(), f12.version()), ((0, 11), (0, 12)));
    assert!(f12.stripes().len() > 1);
    let enc = |f: &OrcFile| f.stripe_layout(0).expect("stripe").encodings;
    // 0.11 files use RLE v1 (DIRECT, DICTIONARY), 0.12 files RLE v2.
    // (floats and doubles are DIRECT in both.)
    assert!(enc(&f11).iter().all(|e| e.0 == 0 || e.0 == 1));
    assert!(enc(&f12).iter().any(|e| e.0 == 2));
    // Some string column is dictionary encoded.
    assert!(enc(&f11).iter().any(|e| e.0 == 1));
    assert!(enc(&f12).iter().any(|e| e.0 == 3));
}

#[test]
fn apache_example_files_read_as_pyarrow_reads_them() {
    for name in [
        "TestOrcFile.test1.orc",
        "demo-12-zlib.orc",
        "TestOrcFile.testDate1900.orc",
        "decimal.orc",
        "over1k_bloom.orc",
        "TestOrcFile.emptyFile.orc",
    ] {
        check_file(name);
    }
}

#[test]
fn unsupported_types_name_the_column() {
    let f = OrcFile::open(&dir().join("TestOrcFile.test1.orc")).expect("open");
    let e = OrcReader::new(&f, None).expect_err("list/map/struct columns");
    assert!(
        matches!(&e, OrcError::UnsupportedType { column, ty } if column == "middle" && ty == "struct"),
        "{e}"
    );
    let e = OrcReader::new(&f, Some(&["map".to_string()])).expect_err("map");
    assert_eq!(
        e.to_string(),
        "column `map`: ORC type map is not supported by this reader"
    );
    let e = OrcReader::new(&f, Some(&["nope".to_string()])).expect_err("unknown");
    assert!(e.to_string().starts_with("no column named `nope`"), "{e}");
    // A file whose root is not a struct.
    let e = OrcFile::open(&dir().join("TestOrcFile.testTimestamp.orc")).expect_err("root");
    assert!(e.to_string().contains("root type other than struct"), "{e}");
}
