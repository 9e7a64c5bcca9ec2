//! ORC files through the `tessera` binary: `decompress data.orc out.parquet|out.arrow|out.csv`
//! (CPU; `--device gpu` where a GPU is, else a clear error), `compress data.orc out.tsr` and
//! back, by extension or by the `ORC` magic; bad input exits 1 with one line and no output.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use common::{fails_with, ok, stderr, tessera};

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn orc(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/orc")
        .join(name)
}

/// pyarrow's reading of a test file.
fn expected(name: &str) -> RecordBatch {
    let p = orc(&format!("{name}.expected.arrow"));
    let mut r = arrow_ipc::reader::FileReader::try_new(File::open(p).unwrap(), None).unwrap();
    r.next().unwrap().unwrap()
}

fn parquet_rows(p: &Path) -> RecordBatch {
    let r = ParquetRecordBatchReaderBuilder::try_new(File::open(p).unwrap())
        .unwrap()
        .with_batch_size(1 << 20)
        .build()
        .unwrap();
    let b: Vec<RecordBatch> = r.map(|b| b.unwrap()).collect();
    arrow_select_one(b)
}

fn arrow_select_one(b: Vec<RecordBatch>) -> RecordBatch {
    let schema = b[0].schema();
    let cols = (0..schema.fields().len())
        .map(|c| {
            let parts: Vec<&dyn arrow_array::Array> =
                b.iter().map(|x| x.column(c).as_ref()).collect();
            concat(&parts)
        })
        .collect();
    RecordBatch::try_new(schema, cols).unwrap()
}

/// Arrays concatenated with arrow-data's `MutableArrayData` (arrow-select, home of `concat`, is
/// not a dependency of the CLI).
fn concat(parts: &[&dyn arrow_array::Array]) -> arrow_array::ArrayRef {
    let datas: Vec<arrow_data::ArrayData> = parts.iter().map(|a| a.to_data()).collect();
    let refs: Vec<&arrow_data::ArrayData> = datas.iter().collect();
    let total = datas.iter().map(|d| d.len()).sum();
    let mut m = arrow_data::transform::MutableArrayData::new(refs, false, total);
    for (i, d) in datas.iter().enumerate() {
        m.try_extend(i, 0, d.len()).unwrap();
    }
    arrow_array::make_array(m.freeze())
}

#[test]
fn orc_to_parquet_arrow_and_csv_equals_pyarrow() {
    let d = tempfile::tempdir().unwrap();
    let name = "pyarrow-0.12-zlib.orc";
    let want = expected(name);
    let pq = d.path().join("out.parquet");
    let out = tessera(&[&"decompress", &"--device", &"cpu", &orc(name), &pq]);
    ok(&out);
    let err = stderr(&out);
    assert!(err.contains("500 rows"), "{err}");
    let got = parquet_rows(&pq);
    assert_eq!(got.num_rows(), 500);
    for (c, f) in want.schema().fields().iter().enumerate() {
        let g = got.column_by_name(f.name()).unwrap();
        assert_eq!(g.as_ref(), want.column(c).as_ref(), "column {}", f.name());
    }
    // Arrow IPC and CSV outputs, a column selection.
    let ipc = d.path().join("out.arrow");
    ok(&tessera(&[
        &"decompress",
        &"--columns",
        &"str,i64",
        &orc(name),
        &ipc,
    ]));
    let r = arrow_ipc::reader::FileReader::try_new(File::open(&ipc).unwrap(), None).unwrap();
    let names: Vec<String> = r
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["str", "i64"]);
    let csv = d.path().join("out.csv");
    ok(&tessera(&[
        &"decompress",
        &"--columns",
        &"i32",
        &orc(name),
        &csv,
    ]));
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 501);
}

#[test]
fn orc_compresses_to_tsr_and_back() {
    let d = tempfile::tempdir().unwrap();
    let name = "pyarrow-0.11-uncompressed.orc";
    let want = expected(name);
    // By magic: the input's name does not end in .orc.
    let renamed = d.path().join("data.bin");
    std::fs::copy(orc(name), &renamed).unwrap();
    let tsr = d.path().join("t.tsr");
    let cols = "bool,i8,i16,i32,i64,f32,f64,str,bin,date,dec";
    ok(&tessera(&[
        &"compress",
        &"--columns",
        &cols,
        &renamed,
        &tsr,
    ]));
    let pq = d.path().join("back.parquet");
    ok(&tessera(&[&"decompress", &"--device", &"cpu", &tsr, &pq]));
    let got = parquet_rows(&pq);
    for f in cols.split(',') {
        let w = want.column_by_name(f).unwrap();
        let g = got.column_by_name(f).unwrap();
        assert_eq!(g.as_ref(), w.as_ref(), "column {f}");
    }
}

#[test]
fn bad_orc_input_exits_1_with_one_line_and_no_output() {
    let d = tempfile::tempdir().unwrap();
    let good = std::fs::read(orc("pyarrow-0.12-zlib.orc")).unwrap();
    let cut = d.path().join("cut.orc");
    std::fs::write(&cut, &good[..good.len() / 2]).unwrap();
    let out = d.path().join("out.parquet");
    fails_with(&tessera(&[&"decompress", &cut, &out]), "cut.orc");
    assert!(!out.exists());
    let tsr = d.path().join("out.tsr");
    fails_with(&tessera(&[&"compress", &cut, &tsr]), "cut.orc");
    assert!(!tsr.exists());
    // Unsupported column types are named.
    fails_with(
        &tessera(&[&"decompress", &orc("TestOrcFile.test1.orc"), &out]),
        "column `middle`: ORC type struct is not supported",
    );
    assert!(!out.exists());
    // ORC is an input format only.
    fails_with(
        &tessera(&[&"decompress", &orc("decimal.orc"), &d.path().join("x.raw")]),
        "decompresses to a table",
    );
}

#[test]
fn device_gpu_equals_cpu_or_fails_clearly() {
    let d = tempfile::tempdir().unwrap();
    let name = "pyarrow-0.12-zlib.orc";
    let cpu = d.path().join("cpu.parquet");
    let gpu = d.path().join("gpu.parquet");
    ok(&tessera(&[
        &"decompress",
        &"--device",
        &"cpu",
        &orc(name),
        &cpu,
    ]));
    let out = tessera(&[&"decompress", &"--device", &"gpu", &orc(name), &gpu]);
    if out.status.success() {
        assert_eq!(parquet_rows(&cpu), parquet_rows(&gpu));
    } else {
        tessera_gpu::testing::skipped(&format!("the GPU half: {}", stderr(&out).trim()));
        fails_with(&out, "GPU");
        assert!(!gpu.exists());
    }
}
