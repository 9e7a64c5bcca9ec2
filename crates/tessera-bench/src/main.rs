//! `tessera-bench SUITE`: the benchmarks, run on the GPU machine, kept out of the `tessera`
//! binary so that it links none of the peers (lz4_flex, libdeflater, zstd, roaring) or the host
//! probes. Suites: `gpu` ([`gpu`]: decode, fused query, encode and host-to-GPU throughput of
//! GPU-FOR / GPU-DFOR / GPU-RFOR on the papers' data sets, against the device-to-device copy
//! ceiling measured in the same run; see `../shared/design/benchmarking.md`), `bitmap`,
//! `huffman` and `lll`. Results go to `--out` as `<date>-<device>-<suite>.json`, a Markdown
//! table and SVG plots; nvCOMP's figures on the same values come from
//! `bench/peers/nvcomp_bench.py` over the files `--dump` writes.
//!
//! Exit status: 0 on success; 1 with a single `error: ...` line on stderr for bad usage, a
//! failed run or a panic (`--help` and `--version` exit 0).

mod args;
mod bitmap;
mod codag;
mod common;
mod gpu;
mod host;
mod huffman;
mod lll;
mod orc;
mod ssb;
mod svg;
mod tables;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tessera::format::Result;

use args::{BenchArgs, ParseArg};

#[derive(Debug, Parser)]
#[command(
    name = "tessera-bench",
    version,
    about = "Benchmarks of tessera's codecs on the GPU and the CPU, against their peers"
)]
struct Cli {
    #[command(subcommand)]
    suite: Suite,
}

/// The suites; every one takes the same flags and uses those that apply to it.
#[derive(Debug, Subcommand)]
enum Suite {
    /// Integer codecs (GPU-FOR, GPU-DFOR, GPU-RFOR): decode, fused query, encode, host to GPU.
    Gpu(BenchArgs),
    /// WAH / PLWAH bitmaps on the CPU and the GPU, against roaring; the query variants.
    Bitmap(BenchArgs),
    /// Canonical Huffman on the GPU and on all CPU cores.
    Huffman(BenchArgs),
    /// The LLL byte codec against CPU peers (lz4, deflate, zstd) and the copy ceiling.
    Lll(BenchArgs),
    /// CODAG: ORC RLE v1 / v2 and Deflate one warp per chunk, against libdeflate on all cores.
    Codag(BenchArgs),
    /// The Star Schema Benchmark's 13 queries: GPU on compressed vs plain columns (resident and
    /// coprocessor mode), footprint, the CPU path.
    Ssb(ssb::SsbArgs),
    /// A real ORC file (--input) to GPU-resident decoded streams and to Arrow batches, GPU and
    /// CPU (pyarrow's reader is timed by the Python step that wrote the file).
    Orc(BenchArgs),
    /// Whole tables: .tsr against Parquet (zstd, snappy) and Arrow IPC (lz4, zstd), sizes and
    /// CPU read times (CSV files given with --input are tables too).
    Tables(BenchArgs),
}

fn main() -> ExitCode {
    // A panic is a bug: report it on one line like any other failure, without a backtrace.
    std::panic::set_hook(Box::new(|info| {
        eprintln!(
            "error: internal error (a bug in tessera-bench): {}",
            squash(&info.to_string())
        );
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_exit(&e),
    };
    match std::panic::catch_unwind(|| run(&cli.suite)) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("error: {}", squash(&e.to_string()));
            ExitCode::FAILURE
        }
        // The panic hook already printed the message.
        Err(_) => ExitCode::FAILURE,
    }
}

/// Runs the chosen suite.
fn run(suite: &Suite) -> Result<()> {
    match suite {
        Suite::Gpu(args) => gpu::run(args),
        Suite::Bitmap(args) => bitmap::run(args),
        Suite::Huffman(args) => huffman::run(args),
        Suite::Lll(args) => lll::run(args),
        Suite::Codag(args) => codag::run(args),
        Suite::Orc(args) => orc::run(args),
        Suite::Ssb(args) => ssb::run(args),
        Suite::Tables(args) => tables::run(args),
    }
}

/// `--help` and `--version` print to stdout and exit 0; a usage error prints clap's message
/// (without its usage block) as one `error:` line and exits 1.
fn usage_exit(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            eprintln!(
                "error: missing suite (gpu, bitmap, huffman, lll, codag, orc, tables or ssb; see 'tessera-bench --help')"
            );
        }
        _ => {
            // clap's message, then its hints: a usage block and "For more information ...".
            let text = e.to_string();
            let message: String = text
                .lines()
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
                .collect::<Vec<_>>()
                .join(" ");
            let message = squash(&message);
            let message = message.strip_prefix("error: ").unwrap_or(&message);
            eprintln!("error: {message} (see 'tessera-bench --help')");
        }
    }
    ExitCode::FAILURE
}

/// Collapses a message onto one line.
fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{Cli, ParseArg, Suite};

    #[test]
    fn every_suite_takes_the_flags() {
        for suite in ["gpu", "bitmap", "huffman", "lll", "codag", "orc", "tables"] {
            let cli = Cli::try_parse_from([
                "tessera-bench",
                suite,
                "--quick",
                "--values",
                "1000",
                "--lll-parse",
                "fast-decode",
            ])
            .expect("arguments parse");
            let (name, args) = match &cli.suite {
                Suite::Gpu(a) => ("gpu", a),
                Suite::Bitmap(a) => ("bitmap", a),
                Suite::Huffman(a) => ("huffman", a),
                Suite::Lll(a) => ("lll", a),
                Suite::Codag(a) => ("codag", a),
                Suite::Tables(a) => ("tables", a),
                Suite::Orc(a) => ("orc", a),
                Suite::Ssb(_) => unreachable!("not among the suites parsed here"),
            };
            assert_eq!(name, suite);
            assert!(args.quick && args.values == 1000);
            assert_eq!(args.lll_parse, Some(ParseArg::FastDecode));
        }
        assert!(Cli::try_parse_from(["tessera-bench", "bogus"]).is_err());
        assert!(Cli::try_parse_from(["tessera-bench", "lll", "--lll-parse", "tiny"]).is_err());
    }
}
