//! `tessera decompress` on gzip files: one file (`FILE.gz OUT`) and many (`--output-dir DIR
//! A.gz B.gz ...`): every good file written under its name without `.gz`, a bad file named on
//! stderr with no output left behind (temporary files of both kinds), an existing output
//! refused without `--force`, the exit status 1 when any file failed, usage errors as one
//! `error:` line. The GPU form is compared with the CPU form where a GPU is present (skipped
//! with a printed reason otherwise; TESSERA_REQUIRE_GPU=1 makes that a failure).
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use common::{command, fails, fails_with, names, ok, stderr, tessera};

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

/// A gzip member of `data` (Deflate at `level`).
fn member(data: &[u8], level: u8) -> Vec<u8> {
    let mut m = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    m.extend(miniz_oxide::deflate::compress_to_vec(data, level));
    m.extend_from_slice(&crc32fast::hash(data).to_le_bytes());
    m.extend_from_slice(&(data.len() as u32).to_le_bytes());
    m
}

/// Lines of text with numbers.
fn text(n: usize, seed: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(n + 32);
    let mut x = seed | 1;
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let words = ["gzip ", "member ", "folder ", "warp ", "the ", "of "];
        out.extend_from_slice(words[(x % 6) as usize].as_bytes());
        if x % 11 == 0 {
            out.extend_from_slice(format!("{}\n", x % 100_000).as_bytes());
        }
    }
    out.truncate(n);
    out
}

/// A good file: its name, gzip bytes and contents.
type GoodFile = (&'static str, Vec<u8>, Vec<u8>);

/// The good files and one with a bad CRC-32.
fn files() -> (Vec<GoodFile>, Vec<u8>) {
    let a = text(300_000, 1);
    let b1 = text(20_000, 2);
    let b2 = text(50_000, 3);
    let mut b = member(&b1, 1);
    b.extend(member(&b2, 9));
    let c = text(10_000, 4);
    let good = vec![
        ("a.gz", member(&a, 6), a.clone()),
        ("b.gz", b, [b1, b2].concat()),
        ("empty.gz", member(&[], 6), Vec::new()),
        ("c.txt.GZ", member(&c, 0), c),
    ];
    let mut bad = member(&a[..100_000], 6);
    let at = bad.len() - 8;
    bad[at] ^= 1;
    (good, bad)
}

/// Writes the files into `dir` (the bad one as `bad.gz`); their paths in an order with the bad
/// one between good ones.
fn write_files(dir: &Path) -> Vec<PathBuf> {
    let (good, bad) = files();
    let mut paths = Vec::new();
    for (k, (name, bytes, _)) in good.iter().enumerate() {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        paths.push(p);
        if k == 1 {
            let p = dir.join("bad.gz");
            std::fs::write(&p, &bad).unwrap();
            paths.push(p);
        }
    }
    paths
}

/// `decompress --output-dir out [extra...] paths...`, with named temporary files when `named`.
fn run_many(out: &Path, extra: &[&str], paths: &[PathBuf], named: bool) -> Output {
    let mut c = command(&[&"decompress", &"--output-dir", &out]);
    c.args(extra).args(paths).stdin(Stdio::null());
    if named {
        c.env("TESSERA_NAMED_TEMP_FILES", "1");
    }
    c.output().unwrap()
}

/// Exit status 1, no panic, the last line `error: ...` mentioning `want`; stderr.
fn fails_after_others(o: &Output, want: &str) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(last.starts_with("error: ") && last.contains(want), "{err}");
    err
}

#[test]
fn output_dir_writes_the_good_files_and_names_the_bad_one() {
    let (good, _) = files();
    for named in [false, true] {
        let d = tempfile::tempdir().unwrap();
        let paths = write_files(d.path());
        let out = d.path().join("out");
        std::fs::create_dir(&out).unwrap();
        for device in ["cpu", "auto"] {
            let o = run_many(&out, &["--device", device], &paths, named);
            let err = fails_after_others(&o, "1 of 5 file(s) failed");
            assert!(
                err.lines()
                    .any(|l| l.contains("bad.gz") && l.contains("CRC-32")),
                "{err}"
            );
            // Only the good files' outputs, no temporary file of the bad one.
            assert_eq!(names(&out), ["a", "b", "c.txt", "empty"], "{err}");
            for (name, _, data) in &good {
                let stem = name.rsplit_once('.').unwrap().0;
                assert!(std::fs::read(out.join(stem)).unwrap() == *data, "{name}");
            }
            for f in std::fs::read_dir(&out).unwrap() {
                std::fs::remove_file(f.unwrap().path()).unwrap();
            }
        }
        // The good files alone: success.
        let only_good: Vec<PathBuf> = paths
            .iter()
            .filter(|p| !p.ends_with("bad.gz"))
            .cloned()
            .collect();
        ok(&run_many(&out, &["--device", "cpu"], &only_good, named));
        assert_eq!(names(&out), ["a", "b", "c.txt", "empty"]);
    }
}

#[test]
fn output_dir_refuses_an_existing_output_without_force() {
    let (good, _) = files();
    let d = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = write_files(d.path())
        .into_iter()
        .filter(|p| !p.ends_with("bad.gz"))
        .collect();
    let out = d.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("b"), b"already here").unwrap();
    let o = run_many(&out, &[], &paths, false);
    let err = fails_after_others(&o, "1 of 4 file(s) failed");
    assert!(
        err.contains("already exists") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read(out.join("b")).unwrap(), b"already here");
    assert!(std::fs::read(out.join("a")).unwrap() == good[0].2);
    // With --force every output is (re)written.
    ok(&run_many(&out, &["-f"], &paths, false));
    assert!(std::fs::read(out.join("b")).unwrap() == good[1].2);
    assert_eq!(names(&out), ["a", "b", "c.txt", "empty"]);
}

#[test]
fn one_file_form_is_unchanged() {
    let (good, bad) = files();
    let d = tempfile::tempdir().unwrap();
    let gz = d.path().join("b.gz");
    std::fs::write(&gz, &good[1].1).unwrap();
    let out = d.path().join("b.out");
    ok(&tessera(&[&"decompress", &"--device", &"cpu", &gz, &out]));
    assert!(std::fs::read(&out).unwrap() == good[1].2);
    // An existing output needs --force; a bad file leaves no output.
    fails_with(&tessera(&[&"decompress", &gz, &out]), "--force");
    let bad_gz = d.path().join("bad.gz");
    std::fs::write(&bad_gz, &bad).unwrap();
    let bad_out = d.path().join("bad.out");
    fails_with(&tessera(&[&"decompress", &bad_gz, &bad_out]), "CRC-32");
    assert!(!bad_out.exists());
    fails_with(&tessera(&[&"decompress", &gz]), "OUTPUT");
}

#[test]
fn output_dir_usage_errors() {
    let d = tempfile::tempdir().unwrap();
    let paths = write_files(d.path());
    let out = d.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let plain = d.path().join("plain.bin");
    std::fs::write(&plain, b"x").unwrap();
    let other = d.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let other_a = other.join("a.gz");
    std::fs::copy(&paths[0], &other_a).unwrap();
    let missing = d.path().join("no-such-folder");
    let cases: Vec<(&str, Vec<&dyn AsRef<std::ffi::OsStr>>, &str)> = vec![
        (
            "not .gz",
            vec![&"decompress", &"--output-dir", &out, &paths[0], &plain],
            "plain.bin",
        ),
        (
            "stdin",
            vec![&"decompress", &"--output-dir", &out, &"-"],
            "takes .gz files",
        ),
        (
            "two inputs, one output",
            vec![&"decompress", &"--output-dir", &out, &paths[0], &other_a],
            "both be written",
        ),
        (
            "no folder",
            vec![&"decompress", &"--output-dir", &missing, &paths[0]],
            "no-such-folder",
        ),
        (
            "a file as the folder",
            vec![&"decompress", &"--output-dir", &plain, &paths[0]],
            "not a folder",
        ),
        (
            "--column",
            vec![
                &"decompress",
                &"--output-dir",
                &out,
                &"--column",
                &"x",
                &paths[0],
            ],
            "--column",
        ),
        (
            "three positionals without --output-dir",
            vec![&"decompress", &paths[0], &paths[2], &paths[3]],
            "--output-dir",
        ),
    ];
    for (what, args, want) in cases {
        let err = fails(&tessera(&args), what);
        assert!(err.contains(want), "{what}: {err}");
    }
    // Nothing was written by any of them.
    assert!(names(&out).is_empty());
}

/// The GPU form writes what the CPU form writes, and names the same bad file.
#[test]
fn output_dir_on_the_gpu_equals_the_cpu() {
    let d = tempfile::tempdir().unwrap();
    let paths = write_files(d.path());
    let (gpu_out, cpu_out) = (d.path().join("gpu"), d.path().join("cpu"));
    std::fs::create_dir(&gpu_out).unwrap();
    std::fs::create_dir(&cpu_out).unwrap();
    let o = run_many(&gpu_out, &["--device", "gpu"], &paths, false);
    let err = stderr(&o);
    if err.contains("error: GPU:") {
        assert!(
            std::env::var_os("TESSERA_REQUIRE_GPU").is_none_or(|v| v != "1"),
            "TESSERA_REQUIRE_GPU=1 but: {err}"
        );
        eprintln!("skipped: {err}");
        return;
    }
    let err = fails_after_others(&o, "1 of 5 file(s) failed");
    assert!(
        err.contains("bad.gz") && err.contains("GPU: 4 file(s)"),
        "{err}"
    );
    fails_after_others(
        &run_many(&cpu_out, &["--device", "cpu"], &paths, false),
        "1 of 5",
    );
    assert_eq!(names(&gpu_out), names(&cpu_out));
    for n in names(&cpu_out) {
        assert!(
            std::fs::read(gpu_out.join(&n)).unwrap() == std::fs::read(cpu_out.join(&n)).unwrap()
        );
    }
}
