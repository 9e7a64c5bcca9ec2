//! Single-thread LLL encode speed on the bench sets (`bench/data/*.gray`, `text.txt`,
//! `xml.xml`), for tuning the encoder without the CLI:
//! `cargo run --release -p tessera-codecs --example lll_encode_speed [-- FILE...] [--runs N]
//! [--bytes N] [--dump DIR]`.
//!
//! Every run encodes the whole file inside a 1-thread rayon pool (so the figure is one core's,
//! not the machine's), repeatedly for at least `--bytes` (4 MB) of input (the CPU-time clock may
//! tick only every few milliseconds), timed as this thread's CPU time where Linux reports it
//! (the machine may be shared) and wall-clock time otherwise; the table prints the median and the
//! best of `--runs` runs (after one warm-up) as MB/s of input. `--dump DIR` writes each payload to
//! `DIR/<file>.lll`, so two builds' outputs can be compared byte for byte.

use std::time::Instant;

use tessera_codecs::lll;

mod common;
use common::cpu_ns;

fn main() {
    let common::Args {
        files,
        runs,
        bytes,
        dump,
        parse,
    } = common::parse_args(5, 4_000_000, true);
    let opts = lll::EncodeOptions {
        parse,
        ..lll::EncodeOptions::default()
    };
    // One worker: the pool's thread runs every strip, and `install` runs the closure on it, so
    // the CPU-time clock read inside the closure sees all the work.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("1-thread pool");
    println!(
        "{:<28} {:>9} {:>7} {:>10} {:>10}",
        "set", "bytes", "ratio", "MB/s", "best MB/s"
    );
    let (mut sum_log, mut count) = (0f64, 0usize);
    for f in &files {
        let data = std::fs::read(f).unwrap_or_else(|e| panic!("{f}: {e}"));
        let mut p = Vec::new();
        let reps = (bytes / data.len().max(1)).max(1);
        let mut v: Vec<f64> = pool.install(|| {
            (0..=runs)
                .map(|_| {
                    let (t0, c0) = (Instant::now(), cpu_ns());
                    for _ in 0..reps {
                        lll::encode_with(std::hint::black_box(&data), &mut p, &opts)
                            .expect("encodes");
                        std::hint::black_box(&p);
                    }
                    match (c0, cpu_ns()) {
                        (Some(a), Some(b)) if b > a => (b - a) as f64 * 1e-9,
                        _ => t0.elapsed().as_secs_f64(),
                    }
                })
                .skip(1)
                .collect()
        });
        v.sort_by(|a, b| a.total_cmp(b));
        let mbs = |s: f64| (data.len() * reps) as f64 / s / 1e6;
        let mut out = vec![0u8; data.len()];
        lll::decode_reference(&p, &mut out).expect("decodes");
        assert!(out == data, "{f}: decodes wrongly");
        let name = std::path::Path::new(f)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(dir) = &dump {
            let path = std::path::Path::new(dir).join(format!("{name}.lll"));
            std::fs::write(path, &p).expect("write payload");
        }
        let r = mbs(v[v.len() / 2]);
        println!(
            "{:<28} {:>9} {:>7.3} {:>10.2} {:>10.2}",
            name,
            data.len(),
            data.len() as f64 / p.len() as f64,
            r,
            mbs(v[0])
        );
        sum_log += r.ln();
        count += 1;
    }
    println!("geomean MB/s: {:.2}", (sum_log / count as f64).exp());
}
