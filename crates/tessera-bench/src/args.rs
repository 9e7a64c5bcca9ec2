//! The flags of every suite, and `--lll-parse`'s values.

use std::path::PathBuf;

use tessera::codecs::lll::Parse;

/// `--lll-parse`: what the LLL encoder's parse minimizes ([`Parse`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ParseArg {
    /// The fewest bytes.
    Smallest,
    /// No 2-byte copies or runs: fewer words to decode.
    FastDecode,
}

impl ParseArg {
    /// The encoder's setting.
    pub fn parse(self) -> Parse {
        match self {
            ParseArg::Smallest => Parse::Smallest,
            ParseArg::FastDecode => Parse::FastDecode,
        }
    }
}

/// The flags of every suite.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Values per data set.
    #[arg(long, default_value_t = 250_000_000)]
    pub values: usize,
    /// Folder where JSON and Markdown results are written.
    #[arg(long, default_value = "bench/results")]
    pub out: PathBuf,
    /// Run a subset of the data sets (a bit-width sweep in steps of 4 and one or two sets of
    /// each other family).
    #[arg(long)]
    pub quick: bool,
    /// Only data sets whose name contains one of these (comma-separated) substrings; a filter
    /// that starts with `=` takes the set of exactly that name (`=uniform-b1` is not `-b10`).
    #[arg(long, value_delimiter = ',')]
    pub sets: Vec<String>,
    /// Write each data set's values (raw little-endian u32) to `DIR/<set>.u32` for the nvCOMP
    /// peer script.
    #[arg(long)]
    pub dump: Option<PathBuf>,
    /// Dump only these (comma-separated) sets.
    #[arg(long, value_delimiter = ',')]
    pub dump_sets: Vec<String>,
    /// `gpu` suite: only write the `--sets` to `--dump` and stop (no GPU needed), for nvCOMP
    /// runs over more sets than one bench call measures.
    #[arg(long, requires = "dump")]
    pub dump_only: bool,
    /// Values per chunk (a multiple of 512, at most 2^24).
    #[arg(long, default_value_t = 1 << 20)]
    pub chunk_values: usize,
    /// Timed runs per measurement (the median is reported; at least 5).
    #[arg(long, default_value_t = 7)]
    pub runs: usize,
    /// Also time each decoder with persistent grids (thread blocks looping over tiles).
    #[arg(long)]
    pub tune: bool,
    /// Results of an earlier run (JSON) to merge with this one: sets measured now replace
    /// those of the same name.
    #[arg(long)]
    pub merge: Option<PathBuf>,
    /// Input files for the byte suites (`huffman`, `lll`): real text, XML or images. Each is
    /// measured on its own and repeated up to `--bytes`.
    #[arg(long, value_delimiter = ',')]
    pub input: Vec<PathBuf>,
    /// Bytes per data set for the byte suites (inputs are repeated up to this size).
    #[arg(long, default_value_t = 1 << 30)]
    pub bytes: usize,
    /// `bitmap` suite: only these densities 2^-k, as comma-separated k in 1..=16 (e.g.
    /// `1,4,8,12,16`).
    #[arg(long, value_delimiter = ',')]
    pub densities: Vec<u32>,
    /// `lll` suite: the LLL segment size (`lll.md` §2: 512, 1024, 2048 or 4096) the sets are
    /// encoded with; default the encoder's (512).
    #[arg(long)]
    pub segment_bytes: Option<usize>,
    /// `lll` suite: what the LLL encoder's parse minimizes (`lll.md` §9): `smallest` (the
    /// default) or `fast-decode` (no 2-byte copies or runs).
    #[arg(long, value_enum)]
    pub lll_parse: Option<ParseArg>,
}

impl BenchArgs {
    /// Whether `--sets` selects the data set `name` (every set when it is empty).
    pub fn selects(&self, name: &str) -> bool {
        self.sets.is_empty()
            || self.sets.iter().any(|f| match f.strip_prefix('=') {
                Some(exact) => name == exact,
                None => name.contains(f.as_str()),
            })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        bench: super::BenchArgs,
    }

    fn args(cmd: &[&str]) -> super::BenchArgs {
        Cli::try_parse_from(["tessera-bench"].iter().chain(cmd))
            .expect("arguments parse")
            .bench
    }

    #[test]
    fn set_filters_match_substrings_or_exact_names() {
        assert!(args(&[]).selects("uniform-b10"));
        let sub = args(&["--sets", "uniform-b1,zipf"]);
        assert!(
            sub.selects("uniform-b1") && sub.selects("uniform-b17") && sub.selects("d3-zipf-2")
        );
        assert!(!sub.selects("uniform-b2"));
        let exact = args(&["--sets", "=uniform-b1,=d1-sorted-2^2"]);
        assert!(exact.selects("uniform-b1") && exact.selects("d1-sorted-2^2"));
        assert!(!exact.selects("uniform-b10") && !exact.selects("d1-sorted-2^20"));
        assert!(!exact.selects("=uniform-b1"));
    }
}
