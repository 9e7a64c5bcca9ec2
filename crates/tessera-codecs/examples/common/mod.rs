//! What the LLL speed examples (`lll_decode_speed`, `lll_encode_speed`) share: their command
//! line, the thread's CPU clock and the default list of bench files.

/// Nanoseconds this thread has run on a CPU (`/proc/thread-self/schedstat`, Linux), so that a
/// busy shared machine's other work does not count; `None` where it is missing (callers fall
/// back to wall-clock time).
pub fn cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// The core's clock in GHz right now, from a chain of dependent 64-bit multiplies (3 cycles each
/// on current Intel and AMD cores; a chain of `add reg, imm` does not do: Intel's Golden Cove
/// renamer folds those, and measured 6-12 "GHz") timed by the wall clock over about 50 ms;
/// `None` off x86-64. A shared host
/// changes its cores' clocks with its load, so the examples print this next to their figures:
/// GHz / (GB/s) is the decoder's cycles per byte, which does not move with the clock.
#[allow(
    dead_code,
    reason = "used by lll_decode_speed; each example compiles this module on its own"
)]
pub fn core_ghz() -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        // 8 dependent multiplies a loop iteration: 24 cycles; the loop counter is a chain of its
        // own.
        let chain = |iters: u64| {
            let mut x = 3u64;
            let y = std::hint::black_box(5u64);
            let mut n = iters;
            let t0 = std::time::Instant::now();
            // SAFETY: register arithmetic only; no memory, no stack, flags clobbered.
            unsafe {
                std::arch::asm!(
                    "2:",
                    "imul {x}, {y}", "imul {x}, {y}", "imul {x}, {y}", "imul {x}, {y}",
                    "imul {x}, {y}", "imul {x}, {y}", "imul {x}, {y}", "imul {x}, {y}",
                    "dec {n}",
                    "jnz 2b",
                    x = inout(reg) x,
                    n = inout(reg) n,
                    y = in(reg) y,
                    options(nomem, nostack),
                );
            }
            std::hint::black_box((x, n));
            t0.elapsed().as_secs_f64()
        };
        chain(1_000_000); // warm-up: the clock ramps up
        let iters = 4_000_000; // 96 M cycles: 24-48 ms at 2-4 GHz
        let s = (0..3).map(|_| chain(iters)).fold(f64::INFINITY, f64::min);
        Some(24.0 * iters as f64 / s / 1e9)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

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
