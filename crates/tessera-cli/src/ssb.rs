//! `tessera ssb generate|run`: the Star Schema Benchmark on compressed columns
//! (`tessera_ssb`): generate the five tables at a scale factor as `.tsr` files (auto codecs),
//! and run the 13 queries on the CPU (all cores) or the GPU (tile-based kernels that decode
//! the compressed tiles inside the query), printing each result and its time. `generate` also
//! exports the tables for SQL engines on request: `--csv` (DIR/csv/) and `--parquet`
//! (DIR/parquet/), the strings restored from their dictionaries.

use std::path::PathBuf;
use std::time::Instant;

use tessera_ssb::{cpu, csv, dataset::Dataset, gen, gpu, queries};

use crate::device::DeviceArg;
use crate::{CliError, CliResult};

#[derive(Debug, clap::Subcommand)]
pub enum SsbCommand {
    /// Generate the SSB tables at scale factor SF into DIR: one .tsr per table (auto codecs),
    /// dict.tsr (the string dictionaries) and ssb.json; on request the same tables as CSV
    /// (--csv) or Parquet (--parquet) for SQL engines.
    Generate(GenerateArgs),
    /// Run SSB queries on a generated data set; print each result and its time.
    Run(RunArgs),
}

#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// Scale factor (lineorder has about SF * 6,000,000 rows).
    #[arg(long)]
    sf: f64,
    /// Seed of the generator (same seed, same data).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Values per chunk (a multiple of 512; default: the library's, 2^20).
    #[arg(long)]
    chunk_values: Option<usize>,
    /// Also write DIR/csv/<table>.csv with the strings restored (for SQL engines).
    #[arg(long)]
    csv: bool,
    /// Also write DIR/parquet/<table>.parquet with the strings restored (for SQL engines:
    /// Int32 columns, lo_orderkey Int64, strings Utf8; zstd, row groups of 2^20 rows).
    #[arg(long)]
    parquet: bool,
    /// Output directory (created if missing).
    dir: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Data set directory (from `tessera ssb generate`).
    dir: PathBuf,
    /// Where the queries run: auto (the GPU when there is one), cpu or gpu.
    #[arg(long, value_enum, default_value = "auto")]
    device: DeviceArg,
    /// Queries to run, comma separated (default: all 13).
    #[arg(long, value_delimiter = ',')]
    queries: Vec<String>,
    /// Runs of each query; the median time is reported (the GPU's first, untimed run compiles
    /// the query's kernels).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: &SsbCommand) -> CliResult<()> {
    match cmd {
        SsbCommand::Generate(a) => generate(a),
        SsbCommand::Run(a) => run_queries(a),
    }
}

fn generate(a: &GenerateArgs) -> CliResult<()> {
    if let Some(n) = a.chunk_values {
        if n == 0 || n % 512 != 0 {
            return Err(CliError(format!(
                "--chunk-values {n}: must be a positive multiple of 512"
            )));
        }
    }
    let t = Instant::now();
    let g = gen::generate(a.sf, a.seed)?;
    let gen_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let w = gen::write_tables(&a.dir, &g, a.chunk_values)?;
    let write_s = t.elapsed().as_secs_f64();
    // (folder, seconds) of each export asked for.
    let mut exports = Vec::new();
    if a.csv {
        let (dir, t) = (a.dir.join("csv"), Instant::now());
        csv::export(&dir, &g)?;
        exports.push((dir, t.elapsed().as_secs_f64()));
    }
    if a.parquet {
        let (dir, t) = (a.dir.join("parquet"), Instant::now());
        tessera_ssb::parquet::export(&dir, &g)?;
        exports.push((dir, t.elapsed().as_secs_f64()));
    }
    println!(
        "SSB SF {} (seed {}) in {}: generated in {gen_s:.2} s, compressed and written in {write_s:.2} s",
        a.sf,
        a.seed,
        a.dir.display()
    );
    println!(
        "{:<10} {:>12} {:>14} {:>14} {:>7}",
        "table", "rows", "uncompressed", "file bytes", "ratio"
    );
    for (name, rows, file, raw) in &w.tables {
        println!(
            "{name:<10} {rows:>12} {raw:>14} {file:>14} {:>7.2}",
            *raw as f64 / (*file).max(1) as f64
        );
    }
    for (dir, s) in &exports {
        println!("exported to {} in {s:.2} s", dir.display());
    }
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn run_queries(a: &RunArgs) -> CliResult<()> {
    let ds = Dataset::open(&a.dir)?;
    let names: Vec<String> = if a.queries.is_empty() {
        queries::NAMES.iter().map(|s| s.to_string()).collect()
    } else {
        a.queries.clone()
    };
    let plans = names
        .iter()
        .map(|n| queries::plan(n, &ds.dict))
        .collect::<tessera::Result<Vec<_>>>()?;
    let engine = a.device.open()?;
    let repeat = a.repeat.max(1);
    let (device, upload_s, dev_tables) = match engine.gpu() {
        Some(g) => {
            let t = Instant::now();
            let tables = gpu::upload(g, &ds, gpu::Layout::Compressed)?;
            (
                format!("GPU: {}", g.info().name),
                Some(t.elapsed().as_secs_f64()),
                Some((g, tables)),
            )
        }
        None => (
            format!("CPU: {} threads", rayon::current_num_threads()),
            None,
            None,
        ),
    };
    let mut out = Vec::new();
    for p in &plans {
        let mut times = Vec::with_capacity(repeat);
        let mut result = None;
        if let Some((g, t)) = &dev_tables {
            // Compiles the query's kernels outside the timed runs.
            g.ssb_prepare_on(p, &t.fact, &t.dims)?;
            for _ in 0..repeat {
                let t0 = Instant::now();
                result = Some(gpu::run(g, t, p)?);
                times.push(t0.elapsed().as_secs_f64() * 1e3);
            }
        } else {
            for _ in 0..repeat {
                let t0 = Instant::now();
                result = Some(cpu::run(&ds, queries::FACT, p)?);
                times.push(t0.elapsed().as_secs_f64() * 1e3);
            }
        }
        let r = result.unwrap_or_default();
        out.push((p, queries::rows(p, &r, &ds.dict), median(times)));
    }
    if a.json {
        let qs: Vec<serde_json::Value> = out
            .iter()
            .map(|(p, rows, ms)| {
                serde_json::json!({
                    "name": p.name,
                    "ms": ms,
                    "columns": queries::key_columns(p)
                        .into_iter()
                        .chain([cpu::aggregate_name(&p.aggregate)])
                        .collect::<Vec<_>>(),
                    "rows": rows
                        .iter()
                        .map(|r| {
                            let mut v: Vec<serde_json::Value> =
                                r.keys.iter().map(|k| serde_json::json!(k)).collect();
                            v.push(serde_json::json!(r.value));
                            v
                        })
                        .collect::<Vec<_>>(),
                })
            })
            .collect();
        let doc = serde_json::json!({
            "device": device,
            "upload_s": upload_s,
            "repeat": repeat,
            "queries": qs,
        });
        println!("{doc}");
        return Ok(());
    }
    println!("device: {device}");
    if let Some(s) = upload_s {
        println!("tables uploaded to the GPU (compressed, as stored) in {s:.3} s");
    }
    for (p, rows, ms) in &out {
        println!();
        println!(
            "{}: {ms:.3} ms (median of {repeat}), {} row{}",
            p.name,
            rows.len(),
            if rows.len() == 1 { "" } else { "s" }
        );
        let cols: Vec<String> = queries::key_columns(p)
            .into_iter()
            .chain([cpu::aggregate_name(&p.aggregate)])
            .collect();
        println!("  {}", cols.join(" | "));
        for r in rows {
            let mut line: Vec<String> = r.keys.clone();
            line.push(r.value.to_string());
            println!("  {}", line.join(" | "));
        }
    }
    Ok(())
}
