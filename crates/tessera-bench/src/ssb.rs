//! `tessera-bench ssb`: the Star Schema Benchmark's 13 queries on tessera's compressed columns.
//!
//! Per query, every result checked equal across the paths:
//! - GPU, data resident: the generated tile-based kernels over the columns as stored (auto's
//!   codec per chunk) and over plain columns (the paper's "None"); CUDA-event time of the
//!   query's kernels (hash builds, probe, their buffers' fills), median of `--runs`, and the
//!   wall time of the whole call (checks and read-back included);
//! - GPU, coprocessor mode: the columns the query reads shipped from page-locked host memory for
//!   each run, compressed against plain; overlapped (the fact table in `--pieces` chunk ranges,
//!   each probed once it has arrived) and serial (everything shipped, then the query); wall time;
//! - the CPU path (all cores), wall time.
//!
//! Also the footprint per column, compressed against plain. Writes `ssb-<device>.json` and
//! `ssb-<device>.md` into `--out`; with `--dump DIR`, the plain values of every column a query
//! reads for `bench/peers/nvcomp_ssb.py` (nvCOMP decompress-then-query).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;
use tessera::gpu::ssb::plan::QueryResult;
use tessera::gpu::ssb::{codegen, CoprocPhases};
use tessera::gpu::Gpu;
use tessera::{Error, Result};
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
    /// Instead of the paths above: lineorder split across this many GPUs of the host (row
    /// ranges on chunk boundaries, dimension tables on each, partial aggregates merged on the
    /// host) against the whole table on GPU 0, compressed columns resident; writes
    /// `ssb-scaling-<device>.{json,md}`.
    #[arg(long)]
    pub gpus: Option<usize>,
    /// Only the GPU-resident paths (compressed and plain, checked equal to each other): no CPU
    /// path, no coprocessor mode (a quick comparison, e.g. of kernel builds).
    #[arg(long)]
    pub resident_only: bool,
    /// Coprocessor mode: the fact table is shipped in this many chunk ranges, each probed as
    /// soon as it has arrived while the next is copied (1: ship everything, then query). A list
    /// (`32,8,16`) measures each, same run; the first fills the main table.
    #[arg(long, value_delimiter = ',', default_values_t = vec![16usize])]
    pub pieces: Vec<usize>,
    /// Also measure the GPU-resident paths (both layouts) with these ways of generating the
    /// query kernels, `loader:min_blocks` each (loader: generic, call, inline, pf, runs,
    /// runsfirst, runsb, lean, batch, upfront, sparse, sparseup, lanes or lanesv; see `tessera_gpu::ssb::codegen::Options`), every result checked equal
    /// to the CPU path's.
    #[arg(long, value_delimiter = ',')]
    pub variants: Vec<String>,
    /// Also measure a scan of each lineorder column (`SUM(column)`, no filter, no join) in both
    /// layouts, per variant (or as the main table's kernels without `--variants`): what loading
    /// a column costs, compressed against plain.
    #[arg(long)]
    pub column_scan: bool,
    /// Only these lineorder columns in `--column-scan` (e.g. `lo_quantity,lo_custkey`, for a
    /// profiler run); all by default.
    #[arg(long, value_delimiter = ',')]
    pub scan_columns: Vec<String>,
    /// Only these queries (e.g. `q1.1,q4.1`, for a profiler run); all 13 by default.
    #[arg(long, value_delimiter = ',')]
    pub queries: Vec<String>,
    /// Writes the plain values of every column a query reads into this folder, once per column
    /// (`<table>.<column>.u32`, little-endian u32), for nvCOMP's decompress-then-query
    /// (`bench/peers/nvcomp_ssb.py`).
    #[arg(long)]
    pub dump: Option<PathBuf>,
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
    /// Coprocessor mode shipping everything before the query (one piece), same run.
    coproc_serial_compressed_ms: f64,
    coproc_serial_plain_ms: f64,
    /// Coprocessor mode per number of pieces measured (`--pieces`), same run.
    coproc_pieces: Vec<PiecesRow>,
    /// Where the overlapped coprocessor calls' time went (medians of the timed runs).
    coproc_compressed_phases: PhasesRow,
    coproc_plain_phases: PhasesRow,
    /// The columns the query reads, `table.column`.
    columns: Vec<String>,
}

/// Medians over timed coprocessor calls of each phase (`tessera::gpu::ssb::CoprocPhases`), ms,
/// and the link rate over the copy span (bytes shipped / `copy_ms`).
#[derive(Debug, Serialize, Clone, Copy, Default)]
struct PhasesRow {
    queue_ms: f64,
    copy_ms: f64,
    copy_gbps: f64,
    tail_ms: f64,
    finish_ms: f64,
    other_ms: f64,
    wall_ms: f64,
}

impl PhasesRow {
    fn median_of(v: &[CoprocPhases], shipped: u64) -> PhasesRow {
        let m = |f: fn(&CoprocPhases) -> f64| median(v.iter().map(f).collect());
        if v.is_empty() {
            return PhasesRow::default();
        }
        let copy_ms = m(|p| p.copy_ms);
        PhasesRow {
            queue_ms: m(|p| p.queue_ms),
            copy_ms,
            copy_gbps: shipped as f64 / copy_ms / 1e6,
            tail_ms: m(|p| p.tail_ms),
            finish_ms: m(|p| p.finish_ms),
            other_ms: m(|p| p.other_ms()),
            wall_ms: m(|p| p.wall_ms),
        }
    }
}

#[derive(Debug, Serialize)]
struct PiecesRow {
    pieces: usize,
    compressed_ms: f64,
    plain_ms: f64,
}

/// GPU-resident times of one way of generating the kernels (`--variants`).
#[derive(Debug, Serialize)]
struct VariantRow {
    options: String,
    /// Per query: (name, compressed ms, plain ms), CUDA events, median.
    queries: Vec<(String, f64, f64)>,
    /// Per lineorder column (`--column-scan`): (column, codecs, compressed ms, plain ms).
    scans: Vec<(String, String, f64, f64)>,
}

#[derive(Debug, Serialize)]
struct ScalingRow {
    name: String,
    groups: usize,
    one_gpu_ms: f64,
    split_ms: f64,
    per_gpu_ms: Vec<f64>,
    one_gpu_wall_ms: f64,
    split_wall_ms: f64,
}

#[derive(Debug, Serialize)]
struct ScalingReport {
    date: String,
    device: String,
    gpus: usize,
    sf: f64,
    lineorder_rows: u64,
    part_rows: Vec<u64>,
    generate_s: Option<f64>,
    queries: Vec<ScalingRow>,
}

#[derive(Debug, Serialize)]
struct ColumnRow {
    table: String,
    column: String,
    codecs: String,
    compressed_bytes: u64,
    plain_bytes: u64,
    /// Device bytes of the column's resident copy (FOR: lane layout, RFOR: run-start layout;
    /// what `lanes` programs read), or the compressed bytes for a column without one.
    lanes_bytes: u64,
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
    /// Host-to-device copy rate (1 GiB, median of 5), pageable and page-locked host memory.
    link_pageable_gbps: f64,
    link_pinned_gbps: f64,
    /// Fact-table pieces of coprocessor mode in the main table.
    coproc_pieces: usize,
    /// How the main table's kernels were generated (`loader:min_blocks`).
    options: String,
    queries: Vec<QueryRow>,
    columns: Vec<ColumnRow>,
    variants: Vec<VariantRow>,
}

type HostColumns = sgpu::HostChunks;
type PinnedColumns = sgpu::PinnedColumns;

/// Coprocessor mode (`tessera_ssb::gpu::run_coprocessor`), timed from the host around the
/// whole call: the result, the wall time in ms and the bytes shipped.
fn coprocessor_run(
    gpu: &Gpu,
    host: &PinnedColumns,
    p: &tessera::gpu::ssb::plan::QueryPlan,
    pieces: usize,
) -> Result<(QueryResult, f64, u64)> {
    let t0 = Instant::now();
    let (r, shipped) = sgpu::run_coprocessor(gpu, host, p, pieces)?;
    Ok((r, t0.elapsed().as_secs_f64() * 1e3, shipped))
}

/// `table.column` of every column `p` reads: the dimension columns of its builds, then the
/// fact columns of its probe.
fn read_columns(p: &tessera::gpu::ssb::plan::QueryPlan) -> Vec<(String, String)> {
    let prog = codegen::program(p);
    let mut v = Vec::new();
    for (j, k) in p.joins.iter().zip(&prog.builds) {
        v.extend(k.columns.iter().map(|c| (j.table.clone(), c.clone())));
    }
    v.extend(
        prog.probe
            .columns
            .iter()
            .map(|c| (queries::FACT.to_string(), c.clone())),
    );
    v
}

/// Writes the plain values of every column the queries read (`--dump`), each through a
/// temporary name and a rename so the nvCOMP script never reads a half-written file.
fn dump_columns(dir: &std::path::Path, ds: &Dataset, plain: &HostColumns) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut done = std::collections::BTreeSet::new();
    for name in queries::NAMES {
        let p = queries::plan(name, &ds.dict)?;
        for key in read_columns(&p) {
            if !done.insert(key.clone()) {
                continue;
            }
            let chunks = plain
                .get(&key)
                .ok_or_else(|| Error::InvalidArgument(format!("no column {}.{}", key.0, key.1)))?;
            let bytes: Vec<u8> = chunks.iter().flat_map(|c| c.1.iter().copied()).collect();
            let path = dir.join(format!("{}.{}.u32", key.0, key.1));
            let tmp = dir.join(format!(".{}.{}.u32.tmp", key.0, key.1));
            std::fs::write(&tmp, &bytes).map_err(io(&tmp))?;
            std::fs::rename(&tmp, &path).map_err(io(&path))?;
        }
    }
    eprintln!("dumped {} columns to {}", done.len(), dir.display());
    Ok(())
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
    let (dir, generate_s, seed) = data_set(a)?;
    if let Some(n) = a.gpus {
        return scaling(a, &dir, generate_s, n);
    }
    run_paths(a, &dir, generate_s, seed)
}

fn data_set(a: &SsbArgs) -> Result<(PathBuf, Option<f64>, Option<u64>)> {
    Ok(match &a.data {
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
    })
}

fn scale_factor(a: &SsbArgs, dir: &std::path::Path) -> f64 {
    std::fs::read_to_string(dir.join("ssb.json"))
        .ok()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
        .and_then(|v| v["sf"].as_f64())
        .unwrap_or(a.sf)
}

fn run_paths(
    a: &SsbArgs,
    dir: &std::path::Path,
    generate_s: Option<f64>,
    seed: Option<u64>,
) -> Result<()> {
    let ds = Dataset::open(dir)?;
    let sf = scale_factor(a, dir);
    let gpu = Gpu::new()?;
    let (link_pageable_gbps, link_pinned_gbps) = if a.resident_only {
        (0.0, 0.0)
    } else {
        gpu.ssb_link_gbps(1 << 30, 5)?
    };
    eprintln!(
        "host to device: pageable {link_pageable_gbps:.1} GB/s, pinned {link_pinned_gbps:.1} GB/s"
    );
    // The variants run other loaders on the same uploaded columns.
    gpu.ssb_set_keep_stored(true)?;
    let device = gpu.info().name.clone();
    eprintln!("SSB SF {sf} on {device}");
    let t = Instant::now();
    let comp = sgpu::upload(&gpu, &ds, sgpu::Layout::Compressed)?;
    let upload_compressed_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let plain = sgpu::upload(&gpu, &ds, sgpu::Layout::Plain)?;
    let upload_plain_s = t.elapsed().as_secs_f64();
    let host_comp = sgpu::host_chunks(&ds, sgpu::Layout::Compressed)?;
    let host_plain = sgpu::host_chunks(&ds, sgpu::Layout::Plain)?;
    if let Some(d) = &a.dump {
        dump_columns(d, &ds, &host_plain)?;
    }
    let (pinned_comp, pinned_plain) = if a.resident_only {
        (PinnedColumns::new(), PinnedColumns::new())
    } else {
        (sgpu::pin(&gpu, &host_comp)?, sgpu::pin(&gpu, &host_plain)?)
    };
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
            let dev_table = if tname == queries::FACT {
                Some(&comp.fact)
            } else {
                comp.dims.get(tname)
            };
            let lanes = dev_table.and_then(|t| {
                t.column_lane_bytes()
                    .into_iter()
                    .find(|(n, _)| n == &c.name)
                    .map(|(_, b)| b)
            });
            let compressed_bytes = get(&host_comp);
            columns.push(ColumnRow {
                table: tname.into(),
                column: c.name.clone(),
                codecs,
                compressed_bytes,
                plain_bytes: get(&host_plain),
                lanes_bytes: lanes.unwrap_or(compressed_bytes),
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
        link_pageable_gbps,
        link_pinned_gbps,
        coproc_pieces: a.pieces.first().copied().unwrap_or(1),
        options: gpu.ssb_options().to_string(),
        queries: Vec::new(),
        columns,
        variants: Vec::new(),
    };
    let variants = a
        .variants
        .iter()
        .map(|v| {
            codegen::Options::parse(v).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "--variants {v}: want loader:min_blocks (generic, call, inline, pf, runs, runsfirst, runsb, lean, batch, upfront, sparse, sparseup, lanes or lanesv; 1..=16)"
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let main_options = gpu.ssb_options();
    // Every query's result (checked against the CPU path's), for the variants' checks.
    let mut wants: std::collections::HashMap<&str, QueryResult> = Default::default();
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
    let names: Vec<&str> = queries::NAMES
        .iter()
        .copied()
        .filter(|n| a.queries.is_empty() || a.queries.iter().any(|q| q == n))
        .collect();
    for &name in &names {
        let p = queries::plan(name, &ds.dict)?;
        gpu.ssb_prepare_on(&p, &comp.fact, &comp.dims)?;
        gpu.ssb_prepare_on(&p, &plain.fact, &plain.dims)?;
        let (want, cpu_ms) = if a.resident_only {
            (gpu.ssb_run(&p, &plain.fact, &plain.dims)?, 0.0)
        } else {
            time_ms(a.slow_runs, || cpu::run(&ds, queries::FACT, &p))?
        };
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
        let phased =
            |host: &PinnedColumns, pieces: usize| -> Result<(QueryResult, f64, u64, PhasesRow)> {
                let mut last = coprocessor_run(&gpu, host, &p, pieces)?;
                let mut v = Vec::new();
                let mut phases = Vec::new();
                for _ in 0..a.slow_runs.max(1) {
                    last = coprocessor_run(&gpu, host, &p, pieces)?;
                    v.push(last.1);
                    phases.extend(gpu.ssb_coprocessor_phases());
                }
                let row = PhasesRow::median_of(&phases, last.2);
                Ok((last.0, median(v), last.2, row))
            };
        let cop = |host: &PinnedColumns, pieces: usize| -> Result<(QueryResult, f64, u64)> {
            let (r, ms, bytes, _) = phased(host, pieces)?;
            Ok((r, ms, bytes))
        };
        let none = (want.clone(), 0.0, 0, PhasesRow::default());
        let ((kc, kc_ms, kc_bytes, kc_phases), (kp, kp_ms, kp_bytes, kp_phases)) =
            if a.resident_only {
                (none.clone(), none.clone())
            } else {
                (
                    phased(&pinned_comp, report.coproc_pieces)?,
                    phased(&pinned_plain, report.coproc_pieces)?,
                )
            };
        let ((sc, sc_ms, _, _), (sp, sp_ms, _, _)) = if a.resident_only {
            (none.clone(), none)
        } else {
            (phased(&pinned_comp, 1)?, phased(&pinned_plain, 1)?)
        };
        let mut coproc_pieces = vec![PiecesRow {
            pieces: report.coproc_pieces,
            compressed_ms: kc_ms,
            plain_ms: kp_ms,
        }];
        if !a.resident_only {
            for &n in a.pieces.iter().skip(1) {
                let (rc, c_ms, _) = cop(&pinned_comp, n)?;
                let (rp, p_ms, _) = cop(&pinned_plain, n)?;
                same(
                    name,
                    &format!("coprocessor {n} pieces compressed and CPU"),
                    &rc,
                    &want,
                )?;
                same(
                    name,
                    &format!("coprocessor {n} pieces plain and CPU"),
                    &rp,
                    &want,
                )?;
                coproc_pieces.push(PiecesRow {
                    pieces: n,
                    compressed_ms: c_ms,
                    plain_ms: p_ms,
                });
            }
        }
        same(name, "coprocessor serial compressed and CPU", &sc, &want)?;
        same(name, "coprocessor serial plain and CPU", &sp, &want)?;
        same(name, "coprocessor compressed and CPU", &kc, &want)?;
        same(name, "coprocessor plain and CPU", &kp, &want)?;
        wants.insert(name, want.clone());
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
            coproc_serial_compressed_ms: sc_ms,
            coproc_serial_plain_ms: sp_ms,
            coproc_pieces,
            coproc_compressed_phases: kc_phases,
            coproc_plain_phases: kp_phases,
            columns: read_columns(&p)
                .into_iter()
                .map(|(t, c)| format!("{t}.{c}"))
                .collect(),
        });
        write(&report)?;
    }
    for o in &variants {
        gpu.ssb_set_options(*o)?;
        let mut row = VariantRow {
            options: o.to_string(),
            queries: Vec::new(),
            scans: Vec::new(),
        };
        for &name in &names {
            let p = queries::plan(name, &ds.dict)?;
            let want = wants.get(name).ok_or_else(|| {
                Error::InvalidArgument(format!("{name}: no result of the CPU path"))
            })?;
            let (rp, p_ms) = resident_ms(&gpu, &p, &plain, a.runs)?;
            let (rc, c_ms) = resident_ms(&gpu, &p, &comp, a.runs)?;
            same(name, &format!("{o} compressed and CPU"), &rc, want)?;
            same(name, &format!("{o} plain and CPU"), &rp, want)?;
            eprintln!("{name} [{o}]: compressed {c_ms:.3} ms, plain {p_ms:.3} ms");
            row.queries.push((name.to_string(), c_ms, p_ms));
        }
        report.variants.push(row);
        write(&report)?;
    }
    if a.column_scan {
        let opts: Vec<codegen::Options> = if variants.is_empty() {
            vec![main_options]
        } else {
            variants.clone()
        };
        let fact = ds.table(queries::FACT)?;
        for o in opts {
            gpu.ssb_set_options(o)?;
            let at = match report
                .variants
                .iter()
                .position(|v| v.options == o.to_string())
            {
                Some(i) => i,
                None => {
                    report.variants.push(VariantRow {
                        options: o.to_string(),
                        queries: Vec::new(),
                        scans: Vec::new(),
                    });
                    report.variants.len() - 1
                }
            };
            for c in fact
                .columns()
                .iter()
                .filter(|c| a.scan_columns.is_empty() || a.scan_columns.contains(&c.name))
            {
                let p = tessera::gpu::ssb::plan::QueryPlan {
                    name: format!("scan {}", c.name),
                    fact_filters: vec![],
                    joins: vec![],
                    group: vec![],
                    aggregate: tessera::gpu::ssb::plan::Aggregate::Sum(c.name.clone()),
                };
                let (rc, c_ms) = resident_ms(&gpu, &p, &comp, a.runs)?;
                let (rp, p_ms) = resident_ms(&gpu, &p, &plain, a.runs)?;
                same(&p.name, "compressed and plain", &rc, &rp)?;
                let codecs = report
                    .columns
                    .iter()
                    .find(|r| r.table == queries::FACT && r.column == c.name)
                    .map_or(String::new(), |r| r.codecs.clone());
                eprintln!(
                    "{} [{o}]: compressed {c_ms:.3} ms, plain {p_ms:.3} ms",
                    p.name
                );
                report.variants[at]
                    .scans
                    .push((c.name.clone(), codecs, c_ms, p_ms));
                write(&report)?;
            }
        }
    }
    gpu.ssb_set_options(main_options)?;
    eprintln!("wrote {} and {}", jp.display(), mp.display());
    Ok(())
}

/// A query on resident tables: compiled and warmed up once, then the median of `runs` CUDA-event
/// times.
fn resident_ms(
    gpu: &Gpu,
    p: &tessera::gpu::ssb::plan::QueryPlan,
    t: &sgpu::DeviceTables,
    runs: usize,
) -> Result<(QueryResult, f64)> {
    let mut last = gpu.ssb_run(p, &t.fact, &t.dims)?;
    let mut ev = Vec::new();
    for _ in 0..runs.max(1) {
        let (r, ms) = gpu.ssb_run_timed(p, &t.fact, &t.dims)?;
        ev.push(ms as f64);
        last = r;
    }
    Ok((last, median(ev)))
}

/// One GPU against `n` GPUs of the host, compressed columns resident (`--gpus`).
fn scaling(a: &SsbArgs, dir: &std::path::Path, generate_s: Option<f64>, n: usize) -> Result<()> {
    let ds = Dataset::open(dir)?;
    let sf = scale_factor(a, dir);
    let found = Gpu::device_count();
    if n < 2 || n > found {
        return Err(Error::InvalidArgument(format!(
            "--gpus {n}: this host has {found} GPUs (need 2 or more, at most {found})"
        )));
    }
    let gpus = (0..n).map(Gpu::open).collect::<Result<Vec<_>>>()?;
    let device = format!("{}x {}", n, gpus[0].info().name);
    eprintln!("SSB SF {sf}: one GPU against {device}");
    let one = sgpu::upload(&gpus[0], &ds, sgpu::Layout::Compressed)?;
    let parts = sgpu::upload_split(&gpus, &ds, sgpu::Layout::Compressed)?;
    let mut report = ScalingReport {
        date: today(),
        device: device.clone(),
        gpus: n,
        sf,
        lineorder_rows: one.fact.rows(),
        part_rows: parts.iter().map(|p| p.fact.rows()).collect(),
        generate_s,
        queries: Vec::new(),
    };
    std::fs::create_dir_all(&a.out).map_err(io(&a.out))?;
    let stem = format!("ssb-scaling-{}", slug(&gpus[0].info().name));
    let jp = a.out.join(format!("{stem}.json"));
    let mp = a.out.join(format!("{stem}.md"));
    for name in queries::NAMES {
        let p = queries::plan(name, &ds.dict)?;
        for g in &gpus {
            g.ssb_prepare(&p)?;
        }
        let want = cpu::run(&ds, queries::FACT, &p)?;
        let (mut ev1, mut w1, mut ev2, mut w2) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut per = vec![Vec::new(); n];
        // Warm-up of both, then the timed runs alternate so that both see the same machine.
        let r1 = gpus[0].ssb_run(&p, &one.fact, &one.dims)?;
        let (r2, _) = sgpu::run_split(&gpus, &parts, &p)?;
        same(name, "one GPU and CPU", &r1, &want)?;
        same(name, "split and CPU", &r2, &want)?;
        for _ in 0..a.runs.max(1) {
            let t = Instant::now();
            let (r, ms) = gpus[0].ssb_run_timed(&p, &one.fact, &one.dims)?;
            w1.push(t.elapsed().as_secs_f64() * 1e3);
            ev1.push(ms as f64);
            same(name, "one GPU and CPU", &r, &want)?;
            let t = Instant::now();
            let (r, ms) = sgpu::run_split(&gpus, &parts, &p)?;
            w2.push(t.elapsed().as_secs_f64() * 1e3);
            // The split query takes as long as its slowest GPU.
            ev2.push(ms.iter().fold(0f64, |m, &x| m.max(x as f64)));
            for (v, &x) in per.iter_mut().zip(&ms) {
                v.push(x as f64);
            }
            same(name, "split and CPU", &r, &want)?;
        }
        let row = ScalingRow {
            name: name.into(),
            groups: want.groups.len(),
            one_gpu_ms: median(ev1),
            split_ms: median(ev2),
            per_gpu_ms: per.into_iter().map(median).collect(),
            one_gpu_wall_ms: median(w1),
            split_wall_ms: median(w2),
        };
        eprintln!(
            "{name}: one GPU {:.3} ms, {n} GPUs {:.3} ms ({:.2}x); wall {:.3} / {:.3} ms",
            row.one_gpu_ms,
            row.split_ms,
            row.one_gpu_ms / row.split_ms,
            row.one_gpu_wall_ms,
            row.split_wall_ms
        );
        report.queries.push(row);
        let json = serde_json::to_vec_pretty(&report)
            .map_err(|e| Error::InvalidArgument(e.to_string()))?;
        std::fs::write(&jp, json).map_err(io(&jp))?;
        std::fs::write(&mp, scaling_markdown(&report)).map_err(io(&mp))?;
    }
    eprintln!("wrote {} and {}", jp.display(), mp.display());
    Ok(())
}

fn scaling_markdown(r: &ScalingReport) -> String {
    let mut m = String::new();
    let _ = writeln!(
        m,
        "# SSB on {} GPUs against one: {} ({})\n\nSF {} ({} lineorder rows, split {:?} on chunk \
         boundaries); compressed columns resident, dimension tables on every GPU, partial \
         aggregates merged on the host; every result checked equal to the CPU path's. GPU time: \
         CUDA events around each GPU's query kernels, the split query's the slowest GPU's; \
         median of the timed runs after a warm-up; wall: the whole call (one host thread a GPU, \
         read-back and merge included).\n",
        r.gpus, r.device, r.date, r.sf, r.lineorder_rows, r.part_rows
    );
    let _ = writeln!(
        m,
        "| query | groups | one GPU ms | {n} GPUs ms | per GPU ms | speedup | wall one ms | wall {n} ms | wall speedup |\n| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
        n = r.gpus
    );
    for q in &r.queries {
        let _ = writeln!(
            m,
            "| {} | {} | {:.3} | {:.3} | {} | {:.2} | {:.3} | {:.3} | {:.2} |",
            q.name,
            q.groups,
            q.one_gpu_ms,
            q.split_ms,
            q.per_gpu_ms
                .iter()
                .map(|x| format!("{x:.3}"))
                .collect::<Vec<_>>()
                .join(" / "),
            q.one_gpu_ms / q.split_ms,
            q.one_gpu_wall_ms,
            q.split_wall_ms,
            q.one_gpu_wall_ms / q.split_wall_ms
        );
    }
    let g = geomean(r.queries.iter().map(|q| q.one_gpu_ms / q.split_ms));
    let gw = geomean(
        r.queries
            .iter()
            .map(|q| q.one_gpu_wall_ms / q.split_wall_ms),
    );
    let _ = writeln!(
        m,
        "\nGeometric mean of one-GPU time / {}-GPU time: GPU time **{g:.2}x**, wall {gw:.2}x.",
        r.gpus
    );
    m
}

fn geomean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x.ln(), n + 1));
    if n == 0 {
        0.0
    } else {
        (s / n as f64).exp()
    }
}

/// Where the overlapped coprocessor calls' wall time went, per query and layout.
fn phases_markdown(m: &mut String, r: &Report) {
    if r.queries
        .iter()
        .all(|q| q.coproc_compressed_phases.wall_ms == 0.0)
    {
        return;
    }
    let _ = writeln!(
        m,
        "### Coprocessor phases\n\nOverlapped calls ({} pieces), medians of the timed runs, ms: \
         queue = host, call start to the last copy queued; copy = device, first copy's start \
         to the last one's end (CUDA events on the copy stream; GB/s = payload bytes shipped \
         / copy); tail = device, last copy's end to the status words and groups in host \
         memory (last probe, compaction, read-back); finish = host, after the wait (checks, \
         result, free); other = wall - the rest: the copies start as soon as the first is \
         queued, so queue overlaps copy and other is negative where the host was still \
         queueing; queue + other is the time before the first copy started plus the host's \
         wake-up at the end.\n",
        r.coproc_pieces
    );
    let _ = writeln!(
        m,
        "| query | layout | wall ms | queue ms | copy ms | GB/s | tail ms | finish ms | other ms |\n\
         | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for q in &r.queries {
        for (layout, x) in [
            ("compressed", &q.coproc_compressed_phases),
            ("plain", &q.coproc_plain_phases),
        ] {
            let _ = writeln!(
                m,
                "| {} | {layout} | {:.2} | {:.3} | {:.2} | {:.1} | {:.3} | {:.3} | {:.3} |",
                q.name,
                x.wall_ms,
                x.queue_ms,
                x.copy_ms,
                x.copy_gbps,
                x.tail_ms,
                x.finish_ms,
                x.other_ms
            );
        }
    }
    let _ = writeln!(m);
}

/// Coprocessor mode per number of pieces (`--pieces` with several).
fn pieces_markdown(m: &mut String, r: &Report) {
    let Some(first) = r.queries.first() else {
        return;
    };
    if first.coproc_pieces.len() < 2 {
        return;
    }
    let ns: Vec<usize> = first.coproc_pieces.iter().map(|x| x.pieces).collect();
    let _ = writeln!(
        m,
        "### Coprocessor mode by pieces\n\nThe fact table shipped in N chunk ranges, same run; \
         wall ms compressed / plain, and plain / compressed.\n"
    );
    let head: String = ns
        .iter()
        .map(|n| format!(" {n} pieces ms | ratio |"))
        .collect();
    let _ = writeln!(m, "| query |{head}");
    let _ = writeln!(m, "| --- |{}", " ---: | ---: |".repeat(ns.len()));
    for q in &r.queries {
        let cells: String = q
            .coproc_pieces
            .iter()
            .map(|x| {
                format!(
                    " {:.2} / {:.2} | {:.2} |",
                    x.compressed_ms,
                    x.plain_ms,
                    x.plain_ms / x.compressed_ms
                )
            })
            .collect();
        let _ = writeln!(m, "| {} |{cells}", q.name);
    }
    let means: String = (0..ns.len())
        .map(|i| {
            let g = geomean(
                r.queries
                    .iter()
                    .filter_map(|q| q.coproc_pieces.get(i).map(|x| x.plain_ms / x.compressed_ms)),
            );
            format!(" | **{g:.3}x** |")
        })
        .collect();
    let _ = writeln!(m, "| geometric mean |{means}\n");
}

/// Resident times per way of generating the kernels, and the column scans (`--variants`,
/// `--column-scan`).
fn variants_markdown(m: &mut String, r: &Report) {
    let with_queries: Vec<&VariantRow> = r
        .variants
        .iter()
        .filter(|v| !v.queries.is_empty())
        .collect();
    if !with_queries.is_empty() {
        let _ = writeln!(
            m,
            "### Resident, by kernel generation\n\nGPU ms (CUDA events, median) compressed / \
             plain per `loader:thread blocks per SM`, same run, same data; every result checked \
             equal to the CPU path's.\n"
        );
        let head: String = with_queries
            .iter()
            .map(|v| format!(" `{}` ms | ratio |", v.options))
            .collect();
        let _ = writeln!(m, "| query |{head}");
        let _ = writeln!(m, "| --- |{}", " ---: | ---: |".repeat(with_queries.len()));
        for (i, q) in r.queries.iter().enumerate() {
            let cells: String = with_queries
                .iter()
                .map(|v| match v.queries.get(i) {
                    Some((_, c, p)) => format!(" {c:.3} / {p:.3} | {:.2} |", p / c),
                    None => " | |".into(),
                })
                .collect();
            let _ = writeln!(m, "| {} |{cells}", q.name);
        }
        let means: String = with_queries
            .iter()
            .map(|v| {
                let g = geomean(v.queries.iter().map(|(_, c, p)| p / c));
                let gc = geomean(v.queries.iter().map(|x| x.1));
                let gp = geomean(v.queries.iter().map(|x| x.2));
                format!(" {gc:.3} / {gp:.3} | **{g:.2}x** |")
            })
            .collect();
        let _ = writeln!(m, "| geometric mean |{means}\n");
    }
    for v in r.variants.iter().filter(|v| !v.scans.is_empty()) {
        let _ = writeln!(
            m,
            "### Column scans, `{}`\n\n`SUM(column)` over all of lineorder (no filter, no \
             join): GPU ms, CUDA events, median.\n\n| column | codecs | compressed ms | plain ms \
             | plain / compressed |\n| --- | --- | ---: | ---: | ---: |",
            v.options
        );
        for (c, codecs, cm, pm) in &v.scans {
            let _ = writeln!(m, "| {c} | {codecs} | {cm:.3} | {pm:.3} | {:.2} |", pm / cm);
        }
        let g = geomean(v.scans.iter().map(|x| x.3 / x.2));
        let _ = writeln!(m, "| geometric mean | | | | **{g:.2}x** |\n");
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
         from page-locked host memory (laid out as on the device) for each run, wall time of \
         the whole call; overlapped: the fact table in {} chunk ranges on a copy stream, each \
         probed as soon as it has arrived (hash tables built once the dimensions have); \
         serial: everything shipped, then the query. Host to device (1 GiB copies): pageable {:.1} \
         GB/s, page-locked {:.1} GB/s. CPU: all host threads, wall time.\n",
        r.coproc_pieces, r.link_pageable_gbps, r.link_pinned_gbps
    );
    let _ = writeln!(
        m,
        "| query | groups | GPU compressed ms | GPU plain ms | plain / compressed | wall compressed ms | wall plain ms | coprocessor compressed ms | coprocessor plain ms | plain / compressed | serial compressed ms | serial plain ms | plain / compressed | CPU ms |"
    );
    let _ = writeln!(
        m,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for q in &r.queries {
        let _ = writeln!(
            m,
            "| {} | {} | {:.3} | {:.3} | {:.2} | {:.3} | {:.3} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} |",
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
            q.coproc_serial_compressed_ms,
            q.coproc_serial_plain_ms,
            q.coproc_serial_plain_ms / q.coproc_serial_compressed_ms,
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
    let gs = geomean(
        r.queries
            .iter()
            .map(|q| q.coproc_serial_plain_ms / q.coproc_serial_compressed_ms),
    );
    let _ = writeln!(
        m,
        "\nGeometric mean over the queries measured of plain time / compressed time: resident \
         **{g:.2}x**, coprocessor overlapped **{gc:.3}x** (serial {gs:.3}x). Kernels generated \
         as `{}` (loader:thread blocks per SM).\n",
        r.options
    );
    phases_markdown(&mut m, r);
    pieces_markdown(&mut m, r);
    variants_markdown(&mut m, r);
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
    let total_l: u64 = r.columns.iter().map(|c| c.lanes_bytes).sum();
    let _ = writeln!(
        m,
        "Resident copies (FOR columns in the lane layout, RFOR columns in the run-start \
         layout; what `lanes` programs read): {total_l} bytes (**{:.2}x** smaller than plain).\n",
        total_p as f64 / total_l.max(1) as f64
    );
    let _ = writeln!(
        m,
        "| table | column | codecs (chunks) | compressed bytes | plain bytes | ratio | resident copy bytes | ratio |"
    );
    let _ = writeln!(m, "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |");
    for c in &r.columns {
        let _ = writeln!(
            m,
            "| {} | {} | {} | {} | {} | {:.2} | {} | {:.2} |",
            c.table,
            c.column,
            c.codecs,
            c.compressed_bytes,
            c.plain_bytes,
            c.plain_bytes as f64 / c.compressed_bytes.max(1) as f64,
            c.lanes_bytes,
            c.plain_bytes as f64 / c.lanes_bytes.max(1) as f64
        );
    }
    m
}
