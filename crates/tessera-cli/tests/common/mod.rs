//! Helpers shared by the CLI tests: run the binary, and check that it succeeded or failed the
//! way the CLI promises (exit status 1, one `error:` line on stderr, no panic).

// Each test file uses only some of these.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The binary under test: `TESSERA_BIN` when set (test executables bundled for another machine
/// cannot use the build machine's path), else the one cargo built for this test.
pub fn bin() -> PathBuf {
    std::env::var_os("TESSERA_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tessera")))
}

/// A command running the binary with `args`. A panic would print a backtrace, which the checks
/// below look for; the tests see temporary files under their hidden names.
pub fn command(args: &[&dyn AsRef<OsStr>]) -> Command {
    let mut c = Command::new(bin());
    c.args(args.iter().map(|a| a.as_ref()))
        .env("RUST_BACKTRACE", "1")
        .env_remove("TESSERA_NAMED_TEMP_FILES");
    c
}

/// Runs the binary with `args` and no stdin.
pub fn tessera(args: &[&dyn AsRef<OsStr>]) -> Output {
    command(args).stdin(Stdio::null()).output().unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Success with no panic; returns stdout.
pub fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        stdout(o),
        stderr(o)
    );
    assert!(!stderr(o).contains("panicked"), "{}", stderr(o));
    stdout(o)
}

/// Exit status 1 and exactly one stderr line, `error: ...`, with no panic or backtrace; returns
/// it. `what` names the case in a failure message.
pub fn fails(o: &Output, what: &str) -> String {
    let err = stderr(o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{what}: status {:?}, stderr: {err}",
        o.status
    );
    assert_eq!(err.lines().count(), 1, "{what}: not one line: {err:?}");
    assert!(err.starts_with("error: "), "{what}: {err:?}");
    for bad in ["panicked", "backtrace", "RUST_BACKTRACE", "internal error"] {
        assert!(!err.contains(bad), "{what}: {err:?}");
    }
    err
}

/// [`fails`], and the line mentions `want`.
pub fn fails_with(o: &Output, want: &str) -> String {
    let err = fails(o, want);
    assert!(err.contains(want), "'{want}' in: {err}");
    err
}

/// The names of the entries of `dir`, sorted (what a command left behind).
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}
