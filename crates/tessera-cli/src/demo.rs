//! `tessera demo`: the whole path on built-in data. Each of `datasets::demo_sets(n)` is
//! compressed with `auto` as one column of a real `.tsr` file in a temporary folder (through the
//! same streaming encoder as `compress`), the file is reopened and validated, every column is
//! decoded (GPU under `auto` when one opens, else CPU), compared with the original values, and
//! a table is printed. Any failed round trip makes the command exit 1.

use std::path::PathBuf;
use std::time::Instant;

use indicatif::ProgressBar;
use tessera_codecs::column::CodecOptions;
use tessera_format::container::{Container, ContainerWriter};
use tessera_format::LogicalType;

use tessera::datasets::{self, Dataset};
use crate::pipeline::{self, Decoder, DeviceArg, EncodeOptions};
use crate::{report, CliError, CliResult};

/// Arguments of `tessera demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Values per data set.
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

/// Little-endian bytes of u32 values.
fn raw_bytes(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn mb_per_s(bytes: u64, secs: f64) -> String {
    if secs <= 0.0 {
        "-".into()
    } else {
        format!("{:.0}", bytes as f64 / secs / 1e6)
    }
}

/// Runs the demo.
pub fn run(a: &DemoArgs) -> CliResult<()> {
    if a.values == 0 {
        return Err(CliError("--values must be at least 1".into()));
    }
    let t_all = Instant::now();
    // Open the device first: `--device gpu` without a GPU fails before any work.
    let mut decoder = Decoder::open(a.device)?;
    let sets: Vec<Dataset> = datasets::demo_sets(a.values);
    let dir = TempDir::new()?;
    let path = dir.0.join("demo.tsr");

    // Encode every set as a column of one file.
    let opts = EncodeOptions {
        ty: LogicalType::U32,
        codec: None,
        chunk_values: a.chunk_values,
        batch_chunks: pipeline::cpu_batch_chunks(),
        bit_len: None,
        codec_options: CodecOptions::default(),
    };
    let mut writer = ContainerWriter::create(&path)?;
    let mut encode_secs = Vec::with_capacity(sets.len());
    for set in &sets {
        let raw = raw_bytes(&set.values);
        let stats = pipeline::encode_column(
            &mut writer,
            &set.name,
            &opts,
            &raw[..],
            &ProgressBar::hidden(),
        )?;
        encode_secs.push(stats.encode_time.as_secs_f64());
    }
    writer.finish()?;

    // Reopen (full validation), decode, compare.
    let c = Container::open(&path)?;
    let mut rows = Vec::new();
    let mut failures = 0;
    for (ci, (set, enc_s)) in sets.iter().zip(&encode_secs).enumerate() {
        let col = &c.columns()[ci];
        let raw = raw_bytes(&set.values);
        let mut out = vec![0u8; col.uncompressed_bytes() as usize];
        let t = Instant::now();
        let result = decoder.decode_chunks(&c, ci, 0..col.chunks.len(), &mut out);
        let dec_s = t.elapsed().as_secs_f64();
        // Read after decoding: under auto a GPU failure switches this very call to the CPU.
        let device = decoder.device_name();
        let verdict = match result {
            Ok(()) if out == raw => "ok".to_owned(),
            Ok(()) => {
                let at = out
                    .iter()
                    .zip(&raw)
                    .position(|(x, y)| x != y)
                    .unwrap_or(out.len().min(raw.len()));
                format!("FAILED: values differ from byte {at}")
            }
            Err(e) => format!("FAILED: {e}"),
        };
        if verdict != "ok" {
            failures += 1;
        }
        let compressed = col.compressed_bytes();
        let bytes = col.uncompressed_bytes();
        rows.push(vec![
            set.name.clone(),
            report::codec_summary(col),
            format!("{:.3}", report::bits_per_value(compressed, col.value_count)),
            if compressed == 0 {
                "-".into()
            } else {
                format!("{:.2}", bytes as f64 / compressed as f64)
            },
            mb_per_s(bytes, *enc_s),
            mb_per_s(bytes, dec_s),
            device.to_owned(),
            verdict,
        ]);
    }
    let headers = [
        "data set",
        "codec(s)",
        "bits/value",
        "ratio",
        "encode MB/s",
        "decode MB/s",
        "device",
        "round trip",
    ];
    print!(
        "{}",
        report::table(
            &headers,
            &["bits/value", "ratio", "encode MB/s", "decode MB/s"],
            &rows
        )
    );
    println!(
        "{} data sets x {} values, {} chunk values, {} threads; {}; {:.1} s in all",
        sets.len(),
        a.values,
        a.chunk_values,
        rayon::current_num_threads(),
        decoder.report(),
        t_all.elapsed().as_secs_f64()
    );
    if failures > 0 {
        return Err(CliError(format!(
            "{failures} of {} round trips failed",
            sets.len()
        )));
    }
    Ok(())
}
