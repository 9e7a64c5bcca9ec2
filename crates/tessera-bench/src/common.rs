//! Measurement helpers shared by every bench suite: medians of timed runs (CUDA events on the
//! GPU, wall clock on the CPU, one untimed warm-up first), throughput, and the names of result
//! files (`<date>-<device slug>-<suite>.*`).

use std::path::Path;
use std::time::Instant;

use tessera::format::{Error, Result};

/// The median (upper median for an even count); NaN for no samples.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Decimal GB/s of `bytes` moved in `ms` milliseconds.
pub fn gbps<B: TryInto<u64>>(bytes: B, ms: f64) -> f64 {
    bytes.try_into().unwrap_or(u64::MAX) as f64 / (ms * 1e-3) / 1e9
}

/// Medians of the wall time and of this thread's CPU time (ms; `None` where the CPU time is not
/// reported) of `work` over `runs` runs after a warm-up, from the same runs. For work that runs
/// on the calling thread only: the pair tells a slow core from a core taken away.
pub fn wall_and_thread_cpu_ms<R>(
    runs: usize,
    mut work: impl FnMut() -> Result<R>,
) -> Result<(f64, Option<f64>)> {
    work()?;
    let (mut wall, mut cpu) = (Vec::with_capacity(runs), Some(Vec::with_capacity(runs)));
    for _ in 0..runs {
        let c0 = super::host::cpu_ns();
        let t0 = Instant::now();
        std::hint::black_box(work()?);
        wall.push(t0.elapsed().as_secs_f64() * 1e3);
        match (c0, super::host::cpu_ns(), cpu.as_mut()) {
            (Some(a), Some(b), Some(v)) if b >= a => v.push((b - a) as f64 * 1e-6),
            _ => cpu = None,
        }
    }
    Ok((median(wall), cpu.map(median)))
}

/// Median wall time (ms) of `work` over `runs` runs after a warm-up.
pub fn wall_ms<R>(runs: usize, work: impl FnMut() -> Result<R>) -> Result<f64> {
    Ok(wall_and_thread_cpu_ms(runs, work)?.0)
}

/// Days since 1970-01-01 to (y, m, d) (Howard Hinnant's civil_from_days).
pub fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Today's UTC date, `YYYY-MM-DD`.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = civil((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// A file-name slug: lowercase alphanumerics, runs of anything else as one `-`.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

/// Writes a suite's results into `dir` as `<date>-<device slug>-<suite>.json` (the report),
/// plus one file per `(suffix, text)` of `extra` (`.md`, `-throughput.svg`, ...).
pub fn write_results(
    dir: &Path,
    date: &str,
    device: &str,
    suite: &str,
    report: &impl serde::Serialize,
    extra: &[(&str, String)],
) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let stem = format!("{date}-{}-{suite}", slug(device));
    let json =
        serde_json::to_vec_pretty(report).map_err(|e| Error::InvalidArgument(e.to_string()))?;
    let p = dir.join(format!("{stem}.json"));
    std::fs::write(&p, json).map_err(io(&p))?;
    for (suffix, text) in extra {
        let p = dir.join(format!("{stem}{suffix}"));
        std::fs::write(&p, text).map_err(io(&p))?;
    }
    Ok(())
}

/// Maps an I/O error on `path` to `Error::Io` naming it.
pub fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::io(path.display().to_string(), e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_slugs_medians() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(19_723), (2024, 1, 1));
        assert_eq!(slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert!(median(Vec::new()).is_nan());
        assert_eq!(gbps(2_000_000_000u64, 1000.0), 2.0);
        assert_eq!(gbps(2_000_000_000usize, 1000.0), 2.0);
    }
}
