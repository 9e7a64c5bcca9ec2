//! `tessera demo`: the whole path on built-in data, through the library's table API. One table
//! holds the integer data sets of `tessera::datasets::demo_sets`, a bitmap, log-like bytes and a
//! utf8 column of short strings, each compressed with `auto`. The device is opened and its
//! one-time setup (context, kernel compilation) done and reported before anything is timed.
//! Each column is decoded end to end (host bytes in, host bytes out) on the device and compared
//! with the original; on a GPU the kernels' own decode speed (payloads already in GPU memory)
//! is shown beside the device's copy ceiling. Any failed round trip makes the command exit 1.

use std::path::PathBuf;
use std::time::Instant;

use tessera::datasets::{self, Dataset};
use tessera::{ColumnOptions, ColumnSummary, TableReader, TableWriter};

use crate::device::DeviceArg;
use crate::{report, CliError, CliResult};

/// Arguments of `tessera demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Values per integer data set (the bitmap holds 8x as many bits, the bytes column 4x as many
    /// bytes, the utf8 column a quarter as many strings).
    #[arg(long, default_value_t = 1 << 22)]
    values: usize,
    /// Where to decode: auto uses the GPU when one is available, else the CPU.
    #[arg(long, value_enum, default_value_t = DeviceArg::Auto)]
    device: DeviceArg,
    /// Values per chunk (a multiple of 512, at most 2^24).
    #[arg(long, default_value = "1048576", value_parser = crate::parse_chunk_values)]
    chunk_values: usize,
}

/// A temporary folder removed when dropped (also when a panic unwinds through the demo).
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> CliResult<TempDir> {
        let path = std::env::temp_dir().join(format!("tessera-demo-{}", std::process::id()));
        std::fs::create_dir_all(&path)
            .map_err(|e| CliError(format!("cannot create {}: {e}", path.display())))?;
        Ok(TempDir(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The original data of one demo column, in its raw form (utf8: the strings).
enum Original {
    Raw(Vec<u8>),
    Strings(Vec<String>),
}

fn rate(bytes: u64, secs: f64, unit: f64) -> String {
    if secs <= 0.0 {
        "-".into()
    } else {
        format!("{:.0}", bytes as f64 / secs / unit)
    }
}

/// Runs the demo.
pub fn run(a: &DemoArgs) -> CliResult<()> {
    if a.values == 0 {
        return Err(CliError("--values must be at least 1".into()));
    }
    let t_all = Instant::now();
    // Open the device first: `--device gpu` without a GPU fails before any work.
    let t_setup = Instant::now();
    let mut engine = a.device.open()?;
    engine.warm_up()?;
    let mut setup_s = t_setup.elapsed().as_secs_f64();

    let dir = TempDir::new()?;
    let path = dir.0.join("demo.tsr");
    let opts = ColumnOptions::auto().with_chunk_values(a.chunk_values);
    let mut w = TableWriter::create(&path)?;
    let mut columns: Vec<(ColumnSummary, Original)> = Vec::new();
    for Dataset { name, values } in datasets::demo_sets(a.values) {
        let s = w.write_values(&name, &values, opts)?;
        let raw = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        columns.push((s, Original::Raw(raw)));
    }
    let bits = a.values as u64 * 8;
    let bitmap = datasets::bitmap(bits);
    columns.push((
        w.write_bits("bitmap-runs", &bitmap, bits, opts)?,
        Original::Raw(bitmap),
    ));
    let text = datasets::text(a.values * 4);
    columns.push((w.write_bytes("log-text", &text, opts)?, Original::Raw(text)));
    let strings = datasets::strings((a.values / 4).max(1));
    columns.push((
        w.write_strings("strings", &strings, opts)?,
        Original::Strings(strings),
    ));
    w.finish()?;

    // Reopen (full validation), decode, compare.
    let r = TableReader::open(&path)?;
    // The GPU's host-side staging (pinned buffers for streamed uploads) is sized by the first
    // reads; one untimed read of the largest integer column sizes it, so the timings below
    // are steady state. It counts as setup.
    if engine.gpu().is_some() {
        let t = Instant::now();
        let largest = (0..r.columns().len())
            .filter(|&ci| r.columns()[ci].logical_type.is_integer())
            .max_by_key(|&ci| r.columns()[ci].compressed_bytes());
        if let Some(ci) = largest {
            r.read_raw(ci, &mut engine)?;
        }
        setup_s += t.elapsed().as_secs_f64();
    }
    println!(
        "device: {}; setup {setup_s:.2} s (context, kernel compilation, pinned staging), not in the timings below",
        engine.describe()
    );
    let mut rows = Vec::new();
    let mut failures = 0;
    for (ci, (summary, original)) in columns.iter().enumerate() {
        let col = &r.columns()[ci];
        let t = Instant::now();
        let verdict = match original {
            Original::Raw(want) => match r.read_raw(ci, &mut engine) {
                Ok(got) if &got == want => "ok".to_owned(),
                Ok(got) => format!(
                    "FAILED: differs from byte {}",
                    got.iter()
                        .zip(want)
                        .position(|(x, y)| x != y)
                        .unwrap_or(got.len().min(want.len()))
                ),
                Err(e) => format!("FAILED: {e}"),
            },
            Original::Strings(want) => match r.read_strings(ci, 0..col.chunks.len(), &mut engine) {
                Ok(got) => match want
                    .iter()
                    .enumerate()
                    .find(|(i, s)| got.get(*i) != Some(s.as_str()))
                {
                    None if got.len() == want.len() => "ok".to_owned(),
                    None => format!("FAILED: {} strings, {} expected", got.len(), want.len()),
                    Some((i, _)) => format!("FAILED: string {i} differs"),
                },
                Err(e) => format!("FAILED: {e}"),
            },
        };
        let end_to_end = t.elapsed().as_secs_f64();
        if verdict != "ok" {
            failures += 1;
        }
        // The kernels alone: payloads already on the GPU, CUDA events.
        let kernel = match engine.gpu() {
            Some(g) if verdict == "ok" => match r.gpu_decode_ms(ci, g, 5) {
                Ok(ms) => rate(summary.raw_bytes, ms / 1e3, 1e9),
                Err(e) => format!("error: {e}"),
            },
            _ => "-".into(),
        };
        let compressed = col.compressed_bytes();
        rows.push(vec![
            col.name.clone(),
            col.logical_type.name().to_owned(),
            report::codec_summary(col),
            if compressed == 0 {
                "-".into()
            } else {
                format!("{:.2}", summary.raw_bytes as f64 / compressed as f64)
            },
            rate(summary.raw_bytes, summary.encode_time.as_secs_f64(), 1e6),
            rate(summary.raw_bytes, end_to_end, 1e6),
            kernel,
            engine.device_name().to_owned(),
            verdict,
        ]);
    }
    let headers = [
        "column",
        "type",
        "codec(s)",
        "ratio",
        "encode MB/s",
        "end-to-end MB/s",
        "GPU kernel GB/s",
        "device",
        "round trip",
    ];
    print!(
        "{}",
        report::table(
            &headers,
            &["ratio", "encode MB/s", "end-to-end MB/s", "GPU kernel GB/s"],
            &rows
        )
    );
    if let Some(g) = engine.gpu() {
        let bytes = (a.values * 4).max(1 << 20);
        let src = g.alloc::<u8>(bytes)?;
        let mut dst = g.alloc::<u8>(bytes)?;
        println!(
            "GPU copy ceiling (device to device, read + write): {:.0} GB/s",
            g.copy_ceiling_gbps(&src, &mut dst, 5)?
        );
    }
    println!(
        "encode: CPU, {} threads; end-to-end: compressed bytes in host memory to decoded bytes in host memory; {}; {:.1} s in all",
        rayon::current_num_threads(),
        engine.report(),
        t_all.elapsed().as_secs_f64()
    );
    if failures > 0 {
        return Err(CliError(format!(
            "{failures} of {} round trips failed",
            columns.len()
        )));
    }
    Ok(())
}
