//! `tessera-bench ssb`: the Star Schema Benchmark's 13 queries on tessera's compressed columns.
//!
//! Per query, every result checked equal across the paths:
//! - GPU, data resident: the generated tile-based kernels over the columns as stored (auto's
//!   codec per chunk) and over plain columns (the paper's "None"); CUDA-event time of the
//!   query's kernels (hash builds, probe, their buffers' fills), median of `--runs`, and the
//!   wall time of the whole call (checks and read-back included);
//! - GPU, coprocessor mode: the columns the query reads shipped from host memory (pageable) for
//!   each run, compressed against plain, then the query; wall time;
//! - the CPU path (all cores), wall time.
//!
//! Also the footprint per column, compressed against plain. Writes `ssb-<device>.json` and
//! `ssb-<device>.md` into `--out`.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;
use tessera::gpu::ssb::codegen;
use tessera::gpu::ssb::plan::QueryResult;
use tessera::gpu::ssb::SsbTable;
use tessera::gpu::{ChunkRef, Gpu};
use tessera::{CodecId, Error, Result};
use tessera_ssb::{cpu, dataset::Dataset, gen, gpu as sgpu, queries};

use crate::common::{io, median, slug, today};

#[derive(Debug, clap::Args)]
pub struct SsbArgs {
    /// Scale factor to generate (ignored with --data).
    #[arg(long, default_value_t = 20.0)]
    pub sf: f64,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// An existing data set (from `tessera ssb generate`) instead of generating one.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Where a generated data set is written.
    #[arg(long, default_value = "target/ssb-data")]
    pub work: PathBuf,
    /// Folder where the JSON and Markdown results are written.
    #[arg(long, default_value = "bench/results")]
    pub out: PathBuf,
    /// Timed runs per query and path (after one warm-up run); the median is reported.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Timed runs per query of the CPU path and of coprocessor mode.
    #[arg(long, default_value_t = 3)]
    pub slow_runs: usize,
}

#[derive(Debug, Serialize)]
struct QueryRow {
    name: String,
    groups: usize,
    cpu_ms: f64,
    gpu_compressed_ms: f64,
    gpu_plain_ms: f64,
    gpu_compressed_wall_ms: f64,
    gpu_plain_wall_ms: f64,
    coproc_compressed_ms: f64,
    coproc_plain_ms: f64,
    shipped_compressed_bytes: u64,
    shipped_plain_bytes: u64,
}

#[derive(Debug, Serialize)]
struct ColumnRow {
    table: String,
    column: String,
    codecs: String,
    compressed_bytes: u64,
    plain_bytes: u64,
}

#[derive(Debug, Serialize)]
struct Report {
    date: String,
    device: String,
    host_threads: usize,
    sf: f64,
    seed: Option<u64>,
    lineorder_rows: u64,
    generate_s: Option<f64>,
    upload_compressed_s: f64,
    upload_plain_s: f64,
    queries: Vec<QueryRow>,
    columns: Vec<ColumnRow>,
}

type HostColumns = HashMap<(String, String), Vec<(CodecId, Vec<u8>, u32)>>;

fn host_columns(ds: &Dataset, layout: sgpu::Layout) -> Result<HostColumns> {
    let mut out = HashMap::new();
    for (tname, t) in &ds.tables {
        for c in t.columns() {
            out.insert(
                (tname.clone(), c.name.clone()),
                sgpu::column_chunks(t, &c.name, layout)?,
            );
        }
    }
    Ok(out)
}

fn upload_table(gpu: &Gpu, host: &HostColumns, table: &str, cols: &[String]) -> Result<SsbTable> {
    let mut v = Vec::new();
    for c in cols {
        let chunks = host
            .get(&(table.to_string(), c.clone()))
            .ok_or_else(|| Error::InvalidArgument(format!("no column {table}.{c}")))?;
        let refs: Vec<ChunkRef<'_>> = chunks
            .iter()
            .map(|(codec, p, n)| ChunkRef {
                codec: *codec,
                payload: p,
                value_count: *n,
            })
            .collect();
        v.push((c.clone(), gpu.ssb_upload_column(&refs)?));
    }
    gpu.ssb_table(v)
}

/// Coprocessor mode: ships the columns `p` reads from host memory, then runs it. Returns the
/// result, the wall time in ms and the bytes shipped.
fn coprocessor_run(
    gpu: &Gpu,
    host: &HostColumns,
    p: &tessera::gpu::ssb::plan::QueryPlan,
) -> Result<(QueryResult, f64, u64)> {
    let prog = codegen::program(p);
    let t0 = Instant::now();
    let fact = upload_table(gpu, host, queries::FACT, &prog.probe.columns)?;
    let mut shipped: u64 = fact.column_bytes().iter().map(|c| c.1).sum();
    let mut dims: HashMap<String, SsbTable> = HashMap::new();
    for (j, k) in p.joins.iter().zip(&prog.builds) {
        let t = upload_table(gpu, host, &j.table, &k.columns)?;
        shipped += t.column_bytes().iter().map(|c| c.1).sum::<u64>();
        dims.insert(j.table.clone(), t);
    }
    let r = gpu.ssb_run(p, &fact, &dims)?;
    Ok((r, t0.elapsed().as_secs_f64() * 1e3, shipped))
}

fn time_ms<R>(runs: usize, mut f: impl FnMut() -> Result<R>) -> Result<(R, f64)> {
    let mut last = f()?;
    let mut v = Vec::new();
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        last = f()?;
        v.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok((last, median(v)))
}

fn same(name: &str, what: &str, a: &QueryResult, b: &QueryResult) -> Result<()> {
    if a == b {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "{name}: {what} differ ({} against {} groups)",
            a.groups.len(),
            b.groups.len()
        )))
    }
}

pub fn run(a: &SsbArgs) -> Result<()> {
    let (dir, generate_s, seed) = match &a.data {
        Some(d) => (d.clone(), None, None),
        None => {
            let t = Instant::now();
            let g = gen::generate(a.sf, a.seed)?;
            gen::write_tables(&a.work, &g, None)?;
            (
                a.work.clone(),
                Some(t.elapsed().as_secs_f64()),
                Some(a.seed),
            )
        }
    };
    let ds = Dataset::open(&dir)?;
    let sf = std::fs::read_to_string(dir.join("ssb.json"))
        .ok()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
        .and_then(|v| v["sf"].as_f64())
        .unwrap_or(a.sf);
    let gpu = Gpu::new()?;
    let device = gpu.info().name.clone();
    eprintln!("SSB SF {sf} on {device}");
    let t = Instant::now();
    let comp = sgpu::upload(&gpu, &ds, sgpu::Layout::Compressed)?;
    let upload_compressed_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let plain = sgpu::upload(&gpu, &ds, sgpu::Layout::Plain)?;
    let upload_plain_s = t.elapsed().as_secs_f64();
    let host_comp = host_columns(&ds, sgpu::Layout::Compressed)?;
    let host_plain = host_columns(&ds, sgpu::Layout::Plain)?;
    let mut columns = Vec::new();
    for tname in tessera_ssb::dataset::TABLES {
        let t = ds.table(tname)?;
        for c in t.columns() {
            let mix: BTreeMap<&str, usize> = c.chunks.iter().fold(BTreeMap::new(), |mut m, ch| {
                *m.entry(ch.codec.name()).or_insert(0) += 1;
                m
            });
            let codecs = mix
                .iter()
                .map(|(k, v)| format!("{k} x{v}"))
                .collect::<Vec<_>>()
                .join(", ");
            let get = |h: &HostColumns| -> u64 {
                h.get(&(tname.to_string(), c.name.clone()))
                    .map_or(0, |v| v.iter().map(|x| x.1.len() as u64).sum())
            };
            columns.push(ColumnRow {
                table: tname.into(),
                column: c.name.clone(),
                codecs,
                compressed_bytes: get(&host_comp),
                plain_bytes: get(&host_plain),
            });
        }
    }
    let mut report = Report {
        date: today(),
        device: device.clone(),
        host_threads: rayon::current_num_threads(),
        sf,
        seed,
        lineorder_rows: comp.fact.rows(),
        generate_s,
        upload_compressed_s,
        upload_plain_s,
        queries: Vec::new(),
        columns,
    };
    std::fs::create_dir_all(&a.out).map_err(io(&a.out))?;
    let stem = format!("ssb-{}", slug(&device));
    let jp = a.out.join(format!("{stem}.json"));
    let mp = a.out.join(format!("{stem}.md"));
    // Written after every query, so a run cut short keeps what it measured.
    let write = |r: &Report| -> Result<()> {
        let json =
            serde_json::to_vec_pretty(r).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        std::fs::write(&jp, json).map_err(io(&jp))?;
        std::fs::write(&mp, markdown(r)).map_err(io(&mp))?;
        Ok(())
    };
    for name in queries::NAMES {
        let p = queries::plan(name, &ds.dict)?;
        gpu.ssb_prepare(&p)?;
        let (want, cpu_ms) = time_ms(a.slow_runs, || cpu::run(&ds, queries::FACT, &p))?;
        let gpu_time = |t: &sgpu::DeviceTables| -> Result<(QueryResult, f64, f64)> {
            let mut ev = Vec::new();
            let mut wall = Vec::new();
            let mut last = gpu.ssb_run(&p, &t.fact, &t.dims)?;
            for _ in 0..a.runs.max(1) {
                let t0 = Instant::now();
                let (r, ms) = gpu.ssb_run_timed(&p, &t.fact, &t.dims)?;
                wall.push(t0.elapsed().as_secs_f64() * 1e3);
                ev.push(ms as f64);
                last = r;
            }
            Ok((last, median(ev), median(wall)))
        };
        let (rc, c_ms, c_wall) = gpu_time(&comp)?;
        let (rp, p_ms, p_wall) = gpu_time(&plain)?;
        same(name, "GPU compressed and CPU", &rc, &want)?;
        same(name, "GPU plain and CPU", &rp, &want)?;
        let cop = |host: &HostColumns| -> Result<(QueryResult, f64, u64)> {
            let mut last = coprocessor_run(&gpu, host, &p)?;
            let mut v = Vec::new();
            for _ in 0..a.slow_runs.max(1) {
                last = coprocessor_run(&gpu, host, &p)?;
                v.push(last.1);
            }
            Ok((last.0, median(v), last.2))
        };
        let (kc, kc_ms, kc_bytes) = cop(&host_comp)?;
        let (kp, kp_ms, kp_bytes) = cop(&host_plain)?;
        same(name, "coprocessor compressed and CPU", &kc, &want)?;
        same(name, "coprocessor plain and CPU", &kp, &want)?;
        eprintln!(
            "{name}: cpu {cpu_ms:.2} ms, gpu compressed {c_ms:.3} ms, plain {p_ms:.3} ms, coprocessor {kc_ms:.2} / {kp_ms:.2} ms"
        );
        report.queries.push(QueryRow {
            name: name.into(),
            groups: want.groups.len(),
            cpu_ms,
            gpu_compressed_ms: c_ms,
            gpu_plain_ms: p_ms,
            gpu_compressed_wall_ms: c_wall,
            gpu_plain_wall_ms: p_wall,
            coproc_compressed_ms: kc_ms,
            coproc_plain_ms: kp_ms,
            shipped_compressed_bytes: kc_bytes,
            shipped_plain_bytes: kp_bytes,
        });
        write(&report)?;
    }
    eprintln!("wrote {} and {}", jp.display(), mp.display());
    Ok(())
}

fn geomean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x.ln(), n + 1));
    if n == 0 {
        0.0
    } else {
        (s / n as f64).exp()
    }
}

fn markdown(r: &Report) -> String {
    let mut m = String::new();
    let _ = writeln!(
        m,
        "# SSB on compressed columns: {} ({})\n\nSF {} ({} lineorder rows); host threads: {}; \
         generated with `tessera-bench ssb`. Every result of every path was checked equal to \
         the CPU path's before any time was kept.\n",
        r.device, r.date, r.sf, r.lineorder_rows, r.host_threads
    );
    let _ = writeln!(
        m,
        "GPU times: CUDA events around the query's kernels (hash builds, probe, their \
         buffers' fills), median of the timed runs after a warm-up; wall: the whole call, \
         status checks and read-back included. Coprocessor: the columns the query reads shipped \
         from pageable host memory, then the query, wall time. CPU: all host threads, wall \
         time.\n"
    );
    let _ = writeln!(
        m,
        "| query | groups | GPU compressed ms | GPU plain ms | plain / compressed | wall compressed ms | wall plain ms | coprocessor compressed ms | coprocessor plain ms | plain / compressed | CPU ms |"
    );
    let _ = writeln!(
        m,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for q in &r.queries {
        let _ = writeln!(
            m,
            "| {} | {} | {:.3} | {:.3} | {:.2} | {:.3} | {:.3} | {:.2} | {:.2} | {:.2} | {:.1} |",
            q.name,
            q.groups,
            q.gpu_compressed_ms,
            q.gpu_plain_ms,
            q.gpu_plain_ms / q.gpu_compressed_ms,
            q.gpu_compressed_wall_ms,
            q.gpu_plain_wall_ms,
            q.coproc_compressed_ms,
            q.coproc_plain_ms,
            q.coproc_plain_ms / q.coproc_compressed_ms,
            q.cpu_ms
        );
    }
    let g = geomean(
        r.queries
            .iter()
            .map(|q| q.gpu_plain_ms / q.gpu_compressed_ms),
    );
    let gc = geomean(
        r.queries
            .iter()
            .map(|q| q.coproc_plain_ms / q.coproc_compressed_ms),
    );
    let _ = writeln!(
        m,
        "\nGeometric mean over the queries measured of plain time / compressed time: resident \
         **{g:.2}x**, coprocessor **{gc:.2}x**.\n"
    );
    let total_c: u64 = r.columns.iter().map(|c| c.compressed_bytes).sum();
    let total_p: u64 = r.columns.iter().map(|c| c.plain_bytes).sum();
    let lo_c: u64 = r
        .columns
        .iter()
        .filter(|c| c.table == "lineorder")
        .map(|c| c.compressed_bytes)
        .sum();
    let lo_p: u64 = r
        .columns
        .iter()
        .filter(|c| c.table == "lineorder")
        .map(|c| c.plain_bytes)
        .sum();
    let _ = writeln!(
        m,
        "## Footprint\n\nAll tables: {total_c} bytes compressed against {total_p} plain \
         (**{:.2}x** smaller); lineorder: {lo_c} against {lo_p} ({:.2}x).\n",
        total_p as f64 / total_c.max(1) as f64,
        lo_p as f64 / lo_c.max(1) as f64
    );
    let _ = writeln!(
        m,
        "| table | column | codecs (chunks) | compressed bytes | plain bytes | ratio |"
    );
    let _ = writeln!(m, "| --- | --- | --- | ---: | ---: | ---: |");
    for c in &r.columns {
        let _ = writeln!(
            m,
            "| {} | {} | {} | {} | {} | {:.2} |",
            c.table,
            c.column,
            c.codecs,
            c.compressed_bytes,
            c.plain_bytes,
            c.plain_bytes as f64 / c.compressed_bytes.max(1) as f64
        );
    }
    m
}
