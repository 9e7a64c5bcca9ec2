//! End-to-end tests of the `tessera-bench` binary that need no GPU: its command line (help,
//! suites, the error contract: exit status 1, one `error:` line, no panic text) and the `gpu`
//! suite's `--dump-only`, which writes the data sets for the nvCOMP peer script.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::path::PathBuf;
use std::process::{Command, Output};

const SUITES: [&str; 4] = ["gpu", "bitmap", "huffman", "lll"];

/// The binary under test: `TESSERA_BENCH_BIN` when set (test executables bundled for another
/// machine cannot use the build machine's path), else the one cargo built for this test.
fn bin() -> PathBuf {
    std::env::var_os("TESSERA_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tessera-bench")))
}

fn bench(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    Command::new(bin())
        .args(args.iter().map(|a| a.as_ref()))
        .env("RUST_BACKTRACE", "1") // a panic would print a backtrace: the tests check there is none
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Exit status 1 and exactly one stderr line, `error: ...`, with no panic or backtrace; returns
/// the line.
fn assert_fails(o: &Output, what: &str) -> String {
    let err = stderr(o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{what}: status {:?}, stderr: {err}",
        o.status
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{what}: stderr is not one line: {err}");
    assert!(lines[0].starts_with("error: "), "{what}: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{what}: {err}"
    );
    lines[0].to_owned()
}

#[test]
fn help_lists_the_suites_and_each_suite_its_flags() {
    let o = bench(&[&"--help"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let help = stdout(&o);
    for suite in SUITES {
        assert!(help.contains(suite), "--help lacks {suite}: {help}");
    }
    for suite in SUITES {
        let o = bench(&[&suite, &"--help"]);
        assert_eq!(o.status.code(), Some(0), "{suite} --help: {}", stderr(&o));
        let help = stdout(&o);
        for flag in [
            "--values",
            "--out",
            "--quick",
            "--sets",
            "--runs",
            "--lll-parse",
        ] {
            assert!(help.contains(flag), "{suite} --help lacks {flag}: {help}");
        }
    }
    let o = bench(&[&"--version"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).starts_with("tessera-bench "), "{}", stdout(&o));
}

#[test]
fn usage_errors_are_one_line() {
    let err = assert_fails(&bench(&[]), "no suite");
    assert!(
        err.contains("gpu, bitmap, huffman, lll, codag, orc, tables or ssb"),
        "{err}"
    );
    let err = assert_fails(&bench(&[&"nosuch"]), "unknown suite");
    assert!(
        err.contains("nosuch") && err.contains("tessera-bench --help"),
        "{err}"
    );
    let err = assert_fails(
        &bench(&[&"lll", &"--lll-parse", &"tiny"]),
        "bad --lll-parse",
    );
    assert!(err.contains("tiny"), "{err}");
    let err = assert_fails(&bench(&[&"gpu", &"--values", &"many"]), "bad --values");
    assert!(err.contains("many"), "{err}");
    // --dump-only needs --dump.
    let err = assert_fails(&bench(&[&"gpu", &"--dump-only"]), "--dump-only alone");
    assert!(err.contains("--dump"), "{err}");
}

#[test]
fn run_errors_are_one_line() {
    let err = assert_fails(&bench(&[&"gpu", &"--runs", &"3"]), "too few runs");
    assert!(err.contains("--runs must be at least 5"), "{err}");
}

#[test]
fn bench_gpu_dump_only_writes_the_exact_sets_without_a_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let o = bench(&[
        &"gpu",
        &"--dump-only",
        &"--values",
        &"1000",
        &"--sets",
        &"=uniform-b3,=d1-sorted-2^4",
        &"--dump",
        &dir.path(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["d1-sorted-2^4.u32", "uniform-b3.u32"]);
    let words = |name: &str| -> Vec<u32> {
        let b = std::fs::read(dir.path().join(name)).unwrap();
        assert_eq!(b.len(), 4000, "{name}");
        b.chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let u = words("uniform-b3.u32");
    assert!(u.iter().all(|&v| v < 8) && u.iter().any(|&v| v >= 4));
    let d = words("d1-sorted-2^4.u32");
    assert!(d.windows(2).all(|w| w[0] <= w[1]) && d[999] < 16 && d[0] < d[999]);
    // A filter that selects nothing is an error, not an empty folder.
    let none = bench(&[
        &"gpu",
        &"--dump-only",
        &"--values",
        &"10",
        &"--sets",
        &"=uniform-b",
        &"--dump",
        &dir.path(),
    ]);
    assert_fails(&none, "a filter that selects nothing");
}
