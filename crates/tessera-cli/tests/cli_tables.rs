//! Tables through the `tessera` binary: Parquet, Arrow IPC and CSV in, `.tsr`, and back out,
//! `--columns` on both sides, `inspect`'s schema, and bad inputs (exit 1, one line, no output).
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use common::{bin, fails_with, ok, tessera};

use std::ffi::OsStr;
use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use arrow_array::{
    ArrayRef, Decimal128Array, Float64Array, Int32Array, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;

fn sample(n: usize) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int32, false),
        Field::new("price", DataType::Float64, true),
        Field::new("city", DataType::Utf8, true),
        Field::new(
            "at",
            DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        Field::new("amount", DataType::Decimal128(12, 2), true),
    ]));
    let cities = ["Oslo", "Lima", "Pune"];
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from((0..n as i32).collect::<Vec<_>>())),
        Arc::new(Float64Array::from(
            (0..n)
                .map(|i| (i % 9 != 0).then_some(i as f64 * 0.01))
                .collect::<Vec<_>>(),
        )),
        Arc::new(StringArray::from(
            (0..n)
                .map(|i| (i % 13 != 0).then_some(cities[i % 3]))
                .collect::<Vec<_>>(),
        )),
        Arc::new(
            TimestampMicrosecondArray::from(
                (0..n)
                    .map(|i| Some(1_700_000_000_000_000 + i as i64))
                    .collect::<Vec<_>>(),
            )
            .with_timezone("UTC"),
        ),
        Arc::new(
            Decimal128Array::from(
                (0..n)
                    .map(|i| (i % 5 != 0).then_some(i as i128 * 7))
                    .collect::<Vec<_>>(),
            )
            .with_precision_and_scale(12, 2)
            .unwrap(),
        ),
    ];
    RecordBatch::try_new(schema, cols).unwrap()
}

fn write_parquet(path: &Path, b: &RecordBatch) {
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), b.schema(), None).unwrap();
    w.write(b).unwrap();
    w.close().unwrap();
}

fn read_parquet(path: &Path) -> RecordBatch {
    let r = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
        .unwrap()
        .with_batch_size(1 << 20)
        .build()
        .unwrap();
    let batches: Vec<RecordBatch> = r.map(|b| b.unwrap()).collect();
    assert_eq!(batches.len(), 1);
    batches.into_iter().next().unwrap()
}

fn read_ipc(path: &Path) -> RecordBatch {
    let r = arrow_ipc::reader::FileReader::try_new(File::open(path).unwrap(), None).unwrap();
    let batches: Vec<RecordBatch> = r.map(|b| b.unwrap()).collect();
    let schema = batches[0].schema();
    let cols = (0..schema.fields().len())
        .map(|c| {
            let datas: Vec<arrow_data::ArrayData> =
                batches.iter().map(|b| b.column(c).to_data()).collect();
            let refs: Vec<&arrow_data::ArrayData> = datas.iter().collect();
            let n = batches.iter().map(|b| b.num_rows()).sum();
            let mut m = arrow_data::transform::MutableArrayData::new(refs, true, n);
            for (i, b) in batches.iter().enumerate() {
                m.try_extend(i, 0, b.num_rows()).unwrap();
            }
            arrow_array::make_array(m.freeze())
        })
        .collect();
    RecordBatch::try_new(schema, cols).unwrap()
}

#[test]
fn parquet_in_parquet_and_arrow_out() {
    let dir = tempfile::tempdir().unwrap();
    let (pq, tsr, back, ipc) = (
        dir.path().join("in.parquet"),
        dir.path().join("t.tsr"),
        dir.path().join("back.parquet"),
        dir.path().join("back.arrow"),
    );
    let b = sample(200_000);
    write_parquet(&pq, &b);
    let out = ok(&tessera(&[&"compress", &pq, &tsr]));
    assert!(out.contains("200000 rows"), "{out}");
    ok(&tessera(&[&"decompress", &"--device", &"cpu", &tsr, &back]));
    let got = read_parquet(&back);
    assert_eq!(got.schema().fields(), b.schema().fields());
    assert_eq!(got.columns(), b.columns());
    ok(&tessera(&[&"decompress", &"--device", &"cpu", &tsr, &ipc]));
    let got = read_ipc(&ipc);
    assert_eq!(got.columns(), b.columns());
    let insp = ok(&tessera(&[&"inspect", &tsr]));
    assert!(insp.contains("table: 200000 rows, 5 fields"), "{insp}");
    assert!(
        insp.contains("at: Timestamp(µs, \"UTC\")") || insp.contains("at: Timestamp("),
        "{insp}"
    );
    assert!(insp.contains("amount: Decimal128(12, 2)"), "{insp}");
}

#[test]
fn columns_on_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    let (pq, tsr, csv) = (
        dir.path().join("in.parquet"),
        dir.path().join("t.tsr"),
        dir.path().join("out.csv"),
    );
    write_parquet(&pq, &sample(100));
    ok(&tessera(&[
        &"compress",
        &"--columns",
        &"city,id,price",
        &pq,
        &tsr,
    ]));
    let insp = ok(&tessera(&[&"inspect", &tsr]));
    assert!(insp.contains("3 fields"), "{insp}");
    ok(&tessera(&[
        &"decompress",
        &"--columns",
        &"id,city",
        &tsr,
        &csv,
    ]));
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("id,city"));
    assert_eq!(lines.next(), Some("0,"));
    assert_eq!(lines.next(), Some("1,Lima"));
    assert_eq!(text.lines().count(), 101);
    fails_with(
        &tessera(&[&"decompress", &"-f", &"--columns", &"nope", &tsr, &csv]),
        "nope",
    );
}

#[test]
fn csv_in_and_out() {
    let dir = tempfile::tempdir().unwrap();
    let (csv, tsr, back) = (
        dir.path().join("in.csv"),
        dir.path().join("t.tsr"),
        dir.path().join("back.csv"),
    );
    let text = "a,b,c\n1,x,0.5\n2,,1.5\n3,z,\n";
    std::fs::write(&csv, text).unwrap();
    ok(&tessera(&[&"compress", &csv, &tsr]));
    ok(&tessera(&[&"decompress", &tsr, &back]));
    assert_eq!(std::fs::read_to_string(&back).unwrap(), text);
}

#[test]
fn csv_bad_row_names_row_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let (csv, tsr) = (dir.path().join("bad.csv"), dir.path().join("t.tsr"));
    // Inference sees the first 10000 rows as integers; a later row does not parse.
    let mut text = String::from("n,s\n");
    for i in 0..12_000 {
        text.push_str(&format!("{i},w\n"));
    }
    text.push_str("oops,w\n");
    std::fs::write(&csv, text).unwrap();
    let out = tessera(&[&"compress", &csv, &tsr]);
    fails_with(&out, "line");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("oops"), "{err}");
    assert!(!tsr.exists(), "no partial output");
}

#[test]
fn corrupt_inputs_fail_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let tsr = dir.path().join("t.tsr");
    let pq = dir.path().join("bad.parquet");
    std::fs::write(&pq, b"PAR1 this is not parquet at all PAR1").unwrap();
    fails_with(&tessera(&[&"compress", &pq, &tsr]), "bad.parquet");
    assert!(!tsr.exists());

    // A real Parquet file cut in half.
    let good = dir.path().join("good.parquet");
    write_parquet(&good, &sample(5000));
    let bytes = std::fs::read(&good).unwrap();
    let cut = dir.path().join("cut.parquet");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    fails_with(&tessera(&[&"compress", &cut, &tsr]), "cut.parquet");
    assert!(!tsr.exists());

    let arrow = dir.path().join("bad.arrow");
    std::fs::write(&arrow, b"ARROW1\0\0garbage").unwrap();
    fails_with(&tessera(&[&"compress", &arrow, &tsr]), "bad.arrow");
    assert!(!tsr.exists());
}

#[test]
fn unsupported_type_names_the_column() {
    let dir = tempfile::tempdir().unwrap();
    let (pq, tsr) = (dir.path().join("l.parquet"), dir.path().join("t.tsr"));
    let list =
        arrow_array::ListArray::from_iter_primitive::<arrow_array::types::Int32Type, _, _>(vec![
            Some(vec![Some(1)]),
            None,
        ]);
    let b = RecordBatch::try_from_iter([
        ("ok", Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef),
        ("tags", Arc::new(list) as ArrayRef),
    ])
    .unwrap();
    write_parquet(&pq, &b);
    fails_with(&tessera(&[&"compress", &pq, &tsr]), "column 'tags'");
    assert!(!tsr.exists());
}

#[test]
fn raw_files_still_need_type_and_work() {
    let dir = tempfile::tempdir().unwrap();
    let (raw, tsr, back) = (
        dir.path().join("v.u32"),
        dir.path().join("v.tsr"),
        dir.path().join("back.u32"),
    );
    let vals: Vec<u8> = (0u32..1000).flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&raw, &vals).unwrap();
    fails_with(&tessera(&[&"compress", &raw, &tsr]), "--type");
    ok(&tessera(&[&"compress", &"--type", &"u32", &raw, &tsr]));
    ok(&tessera(&[&"decompress", &tsr, &back]));
    assert_eq!(std::fs::read(&back).unwrap(), vals);
    // A file of plain columns is not a table.
    fails_with(
        &tessera(&[&"decompress", &tsr, &dir.path().join("x.parquet")]),
        "not an Arrow table",
    );
}

/// A Parquet file of `batches` row groups of 256 Ki rows (an id, a decimal-like double, a
/// short string): its decoded size grows with `batches`, its row groups do not.
fn big_parquet(path: &Path, batches: usize) -> u64 {
    let rows = 256 * 1024;
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("price", DataType::Float64, false),
        Field::new("note", DataType::Utf8, false),
    ]));
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(rows))
        .build();
    let mut w =
        ArrowWriter::try_new(File::create(path).unwrap(), schema.clone(), Some(props)).unwrap();
    let mut decoded = 0u64;
    for b in 0..batches {
        let base = (b * rows) as i64;
        let ids: Vec<i64> = (base..base + rows as i64).collect();
        let prices: Vec<f64> = ids
            .iter()
            .map(|i| (i * 7919 % 100_000) as f64 / 100.0)
            .collect();
        let notes: Vec<String> = ids
            .iter()
            .map(|i| format!("note {}", i * 31 % 99_991))
            .collect();
        decoded += (rows * 16) as u64 + notes.iter().map(|s| s.len() as u64 + 4).sum::<u64>();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(arrow_array::Int64Array::from(ids)) as ArrayRef,
                Arc::new(Float64Array::from(prices)),
                Arc::new(StringArray::from(notes)),
            ],
        )
        .unwrap();
        w.write(&batch).unwrap();
    }
    w.close().unwrap();
    decoded
}

/// Runs `tessera args` and returns its peak resident set in bytes (`wait4`'s rusage of that
/// one child, so other tests' children do not count) and its stderr.
fn peak_rss(args: &[&dyn AsRef<OsStr>]) -> (u64, Vec<u8>) {
    use std::io::Read;
    #[allow(
        clippy::zombie_processes,
        reason = "wait4 below reaps the child (std's wait would not give its rusage)"
    )]
    let mut child = Command::new(bin())
        .args(args.iter().map(|a| a.as_ref()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        // Peak memory follows the chunk size times the threads: fix both, and cap glibc's
        // per-thread heaps, whose count otherwise varies the peak from run to run.
        .env("RAYON_NUM_THREADS", "2")
        .env("MALLOC_ARENA_MAX", "2")
        .spawn()
        .unwrap();
    let mut err = Vec::new();
    child.stderr.take().unwrap().read_to_end(&mut err).unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it for the child `pid` that this
    // process spawned and has not waited for.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: `status` and `usage` are valid for writes for the duration of the call.
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(got, pid, "wait4");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "tessera failed: {}",
        String::from_utf8_lossy(&err)
    );
    // Linux reports ru_maxrss in KiB.
    (usage.ru_maxrss as u64 * 1024, err)
}

#[test]
fn compress_memory_follows_the_chunk_not_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut peaks = Vec::new();
    for batches in [4usize, 16] {
        let input = dir.path().join(format!("t{batches}.parquet"));
        let decoded = big_parquet(&input, batches);
        let out = dir.path().join(format!("t{batches}.tsr"));
        let (peak, err) = peak_rss(&[&"compress", &input, &out, &"--chunk-values", &"65536"]);
        // stderr is a pipe here, not a terminal: no progress bar, nothing at all.
        assert!(err.is_empty(), "stderr: {}", String::from_utf8_lossy(&err));
        println!(
            "{batches} row groups: {decoded} bytes decoded, peak RSS {} MiB",
            peak >> 20
        );
        peaks.push((decoded, peak));
    }
    let ((small_table, small_peak), (big_table, big_peak)) = (peaks[0], peaks[1]);
    // Four times the table gives (nearly) the same peak, and the big table never fits in it.
    assert!(
        big_peak < small_peak + small_peak / 4 + (16 << 20),
        "peak RSS {big_peak} for {big_table} bytes against {small_peak} for {small_table}"
    );
    assert!(big_peak < big_table, "peak {big_peak} >= table {big_table}");
}
