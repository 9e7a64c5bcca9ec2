//! What the LLL speed examples (`lll_decode_speed`, `lll_encode_speed`) share: their command
//! line, the default list of bench files, and the bench's host probes (`host`: the thread's CPU
//! clock, the core's clock and share).

#[path = "../../../tessera-bench/src/host.rs"]
mod host;
#[allow(
    unused_imports,
    reason = "each example compiles this module on its own and uses a part"
)]
pub use host::{core_adds_per_cycle, core_ghz, cpu_ns};

/// `files` as given, or, when none were, every `.gray`, `.txt` and `.xml` file of the
/// repository's `bench/data`, sorted.
pub fn bench_files(files: Vec<String>) -> Vec<String> {
    if !files.is_empty() {
        return files;
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/data");
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("bench/data")
        .filter_map(|e| e.ok())
        .map(|e| e.path().display().to_string())
        .filter(|p| p.ends_with(".gray") || p.ends_with(".txt") || p.ends_with(".xml"))
        .collect();
    v.sort();
    v
}

/// The examples' command line: `[--runs N] [--bytes N] [--parse smallest|fast-decode]
/// [--dump DIR] FILES...`, with the
/// example's defaults for runs and bytes; files as [`bench_files`] gives them. `--dump` is
/// taken only where the example allows it.
pub struct Args {
    pub files: Vec<String>,
    pub runs: usize,
    pub bytes: usize,
    pub dump: Option<String>,
    /// The LLL encoder's parse (`lll.md` §9).
    pub parse: tessera_codecs::lll::Parse,
}

pub fn parse_args(runs: usize, bytes: usize, allow_dump: bool) -> Args {
    let mut a = Args {
        files: Vec::new(),
        runs,
        bytes,
        dump: None,
        parse: tessera_codecs::lll::Parse::Smallest,
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--runs" => a.runs = it.next().and_then(|v| v.parse().ok()).expect("--runs N"),
            "--bytes" => a.bytes = it.next().and_then(|v| v.parse().ok()).expect("--bytes N"),
            "--parse" => {
                a.parse = match it.next().as_deref() {
                    Some("smallest") => tessera_codecs::lll::Parse::Smallest,
                    Some("fast-decode") => tessera_codecs::lll::Parse::FastDecode,
                    _ => panic!("--parse smallest|fast-decode"),
                }
            }
            "--dump" if allow_dump => a.dump = Some(it.next().expect("--dump DIR")),
            _ => a.files.push(x),
        }
    }
    a.files = bench_files(std::mem::take(&mut a.files));
    a
}
