//! Single-thread LLL decode speed on the bench sets (`bench/data/*.gray`, `text.txt`,
//! `xml.xml`), for tuning the reference decoder without the CLI:
//! `cargo run --release -p tessera-codecs --example lll_decode_speed [-- FILE...] [--runs N] [--bytes N]
//! [--parse smallest|fast-decode]`.
//!
//! Each set is encoded once; each timed run decodes the payload repeatedly into one buffer for
//! at least `--bytes` (100 MB) of output, timed as this thread's CPU time where Linux reports it (the machine
//! may be shared) and wall-clock time otherwise; the table prints the median and the best of
//! `--runs` runs (after one warm-up) as GB/s of output, for `decode_reference` and the `decode_simple` oracle. The decoded bytes
//! are checked against the input. `GHz` is the core's clock (`common::core_ghz`), the mean of one
//! measurement right before the set's runs and one right after, `cyc/B` that clock over the
//! median: the decoder's cycles per output byte, which a shared host's changing clock (or a
//! virtual CPU that gets part of a core) moves much less than it moves GB/s. `add/c` is the
//! integer additions a cycle this thread got right before and right after the set's runs
//! (`common::core_adds_per_cycle`): about 5 when it has a core to itself, less when another
//! thread shares its physical core, which slows the decoder too.

use std::time::Instant;

use tessera_codecs::lll;

mod common;
use common::cpu_ns;

fn main() {
    let common::Args {
        files,
        runs,
        bytes,
        parse,
        ..
    } = common::parse_args(9, 100_000_000, false);
    let opts = lll::EncodeOptions {
        parse,
        ..lll::EncodeOptions::default()
    };
    let simple = std::env::var_os("LLL_SIMPLE").is_some();
    println!(
        "{:<28} {:>9} {:>7} {:>10} {:>10} {:>10} {:>6} {:>6} {:>9}",
        "set", "bytes", "ratio", "ref GB/s", "ref best", "simple", "GHz", "cyc/B", "add/c"
    );
    let (mut sum_log, mut count) = (0f64, 0usize);
    for f in &files {
        let data = std::fs::read(f).unwrap_or_else(|e| panic!("{f}: {e}"));
        let mut p = Vec::new();
        let counts = lll::encode_with(&data, &mut p, &opts).expect("encodes");
        if std::env::var_os("LLL_COUNTS").is_some() {
            println!("{f}: {counts:?}");
            if let Some(dir) = std::env::var_os("LLL_DUMP") {
                let name = std::path::Path::new(f).file_name().expect("file name");
                let path = std::path::Path::new(&dir).join(name).with_extension("lll");
                std::fs::write(path, &p).expect("write payload");
            }
        }
        let mut out = vec![0u8; data.len()];
        lll::decode_reference(&p, &mut out).expect("decodes");
        assert!(out == data, "{f}: decodes wrongly");
        let reps = (bytes / data.len().max(1)).max(1);
        let time = |dec: fn(&[u8], &mut [u8]) -> tessera_format::Result<()>, out: &mut [u8]| {
            let mut v: Vec<f64> = (0..=runs)
                .map(|_| {
                    let (t0, c0) = (Instant::now(), cpu_ns());
                    for _ in 0..reps {
                        dec(std::hint::black_box(&p), out).expect("decodes");
                        std::hint::black_box(&out);
                    }
                    match (c0, cpu_ns()) {
                        (Some(a), Some(b)) if b > a => (b - a) as f64 * 1e-9,
                        _ => t0.elapsed().as_secs_f64(),
                    }
                })
                .skip(1)
                .collect();
            v.sort_by(|a, b| a.total_cmp(b));
            let g = |s: f64| (data.len() * reps) as f64 / s / 1e9;
            (g(v[v.len() / 2]), g(v[0]))
        };
        let before = common::core_ghz();
        let adds0 = before.and_then(common::core_adds_per_cycle);
        let (r, best) = time(lll::decode_reference, &mut out);
        let after = common::core_ghz();
        let adds1 = after.and_then(common::core_adds_per_cycle);
        let ghz = before.zip(after).map(|(a, b)| (a + b) / 2.0);
        let adds = match adds0.zip(adds1) {
            Some((a, b)) => format!("{a:.1}/{b:.1}"),
            None => "-".into(),
        };
        let s = if simple {
            format!("{:.2}", time(lll::decode_simple, &mut out).0)
        } else {
            "-".into()
        };
        let name = std::path::Path::new(f)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (ghz, cpb) = match ghz {
            Some(g) => (format!("{g:.2}"), format!("{:.2}", g / r)),
            None => ("-".into(), "-".into()),
        };
        println!(
            "{:<28} {:>9} {:>7.3} {:>10.3} {:>10.3} {:>10} {:>6} {:>6} {:>9}",
            name,
            data.len(),
            data.len() as f64 / p.len() as f64,
            r,
            best,
            s,
            ghz,
            cpb,
            adds
        );
        sum_log += r.ln();
        count += 1;
    }
    println!("geomean ref GB/s: {:.3}", (sum_log / count as f64).exp());
}
