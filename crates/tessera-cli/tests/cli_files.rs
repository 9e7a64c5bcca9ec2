//! File handling of the `tessera` binary, as zstd and gzip handle files: special files and
//! symlinks at the output path, output = input, existing outputs and `--force`, interrupted
//! runs (SIGINT, SIGTERM, SIGKILL) leaving no debris, stdin/stdout pipes both ways, closed
//! pipes, `verify` and `inspect` on good and damaged files, and the messages of issue 34.
//!
//! Runs are interrupted while they block reading a FIFO that the test holds open, after their
//! temporary file exists: deterministic, and fast.
#![cfg(unix)]
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use common::{bin, command, fails, names, ok, stderr, stdout, tessera};

use std::ffi::{CString, OsStr};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use tessera_format::container::ContainerWriter;
use tessera_format::{CodecId, LogicalType};

/// Runs with `input` on stdin.
fn tessera_in(args: &[&dyn AsRef<OsStr>], input: &[u8]) -> Output {
    let mut child = command(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    out
}

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: sends a signal to our own child process.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

/// u32 values with some structure, as little-endian bytes.
fn values(n: usize) -> Vec<u8> {
    (0..n as u32)
        .flat_map(|i| (i / 7 + i.wrapping_mul(2_654_435_761) % 100).to_le_bytes())
        .collect()
}

/// Writes `raw` and compresses it as u32 into `name.tsr` in `dir`.
fn packed(dir: &Path, name: &str, raw: &[u8]) -> PathBuf {
    let input = dir.join(format!("{name}.u32"));
    let out = dir.join(format!("{name}.tsr"));
    std::fs::write(&input, raw).unwrap();
    ok(&tessera(&[
        &"compress",
        &"--type",
        &"u32",
        &"--chunk-values",
        &"4096",
        &input,
        &out,
    ]));
    out
}

/// Waits (bounded) until `cond` holds.
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether process `pid` holds an unnamed (O_TMPFILE) file in `dir`: /proc shows it as
/// `DIR/#INODE (deleted)`.
fn holds_unnamed_file_in(pid: u32, dir: &Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    let dir = dir.canonicalize().unwrap();
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|t| {
            t.parent() == Some(dir.as_path())
                && t.file_name()
                    .is_some_and(|n| n.as_bytes().starts_with(b"#"))
        })
    })
}

#[test]
fn special_files_and_symlinks_at_the_output_are_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let raw = values(50_000);
    let tsr = packed(d, "v", &raw);

    // A FIFO at the output: written in place, not replaced by a regular file.
    let fifo = d.join("out.fifo");
    mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let o = tessera(&[&"decompress", &"--device", &"cpu", &tsr, &fifo]);
    ok(&o);
    assert!(reader.join().unwrap() == raw);
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());

    // A .tsr stream into a FIFO is a valid file.
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    ok(&tessera(&[
        &"compress",
        &"--type",
        &"u32",
        &d.join("v.u32"),
        &fifo,
    ]));
    let streamed = reader.join().unwrap();
    let copy = d.join("copy.tsr");
    std::fs::write(&copy, &streamed).unwrap();
    assert!(ok(&tessera(&[&"verify", &copy])).ends_with(": ok\n"));

    // A symlink to a FIFO: written through the link.
    let link_fifo = d.join("to-fifo");
    std::os::unix::fs::symlink(&fifo, &link_fifo).unwrap();
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    ok(&tessera(&[
        &"decompress",
        &"--device",
        &"cpu",
        &tsr,
        &link_fifo,
    ]));
    assert!(reader.join().unwrap() == raw);
    assert!(std::fs::symlink_metadata(&link_fifo)
        .unwrap()
        .file_type()
        .is_symlink());

    // A symlink to a regular file: an existing output (needs --force); with it the file it
    // points to is replaced and the link stays a link.
    let target = d.join("target.bin");
    std::fs::write(&target, b"old").unwrap();
    let link = d.join("link.bin");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let err = fails(&tessera(&[&"decompress", &tsr, &link]), "link, no --force");
    assert!(
        err.contains("already exists") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read(&target).unwrap(), b"old");
    ok(&tessera(&[&"decompress", &"-f", &tsr, &link]));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read(&target).unwrap() == raw);

    // A dangling symlink is refused, naming the path given.
    let dangling = d.join("dangling");
    std::os::unix::fs::symlink(d.join("nowhere"), &dangling).unwrap();
    let err = fails(
        &tessera(&[&"decompress", &"-f", &tsr, &dangling]),
        "dangling",
    );
    assert!(err.contains("dangling") || err.contains("missing"), "{err}");
    assert!(!d.join("nowhere").exists());

    let mut want = vec![
        "copy.tsr",
        "dangling",
        "link.bin",
        "out.fifo",
        "target.bin",
        "to-fifo",
        "v.tsr",
        "v.u32",
    ];
    want.sort();
    assert_eq!(names(d), want, "no temporary files left");
}

#[test]
fn the_output_is_never_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let raw = values(10_000);
    let tsr = packed(d, "same", &raw);
    let input = d.join("same.u32");
    let hard = d.join("hard.tsr");
    std::fs::hard_link(&tsr, &hard).unwrap();
    let before_tsr = std::fs::read(&tsr).unwrap();
    let link = d.join("link.tsr");
    std::os::unix::fs::symlink(&tsr, &link).unwrap();
    for force in [None, Some("--force")] {
        let run = |args: &[&dyn AsRef<OsStr>]| {
            let mut all: Vec<&dyn AsRef<OsStr>> = args.to_vec();
            if let Some(f) = &force {
                all.push(f);
            }
            tessera(&all)
        };
        let cases: Vec<(&str, Output)> = vec![
            (
                "compress x x",
                run(&[&"compress", &"--type", &"u32", &input, &input]),
            ),
            ("decompress x x", run(&[&"decompress", &tsr, &tsr])),
            // Another name for the same file (a hard link), and a symlink to it.
            ("hard link", run(&[&"decompress", &tsr, &hard])),
            ("symlink", run(&[&"decompress", &link, &tsr])),
            ("index", run(&[&"index", &"build", &"--column", &tsr, &tsr])),
        ];
        for (what, o) in cases {
            let err = fails(&o, what);
            assert!(err.contains("is the input"), "{what} {force:?}: {err}");
        }
    }
    assert!(std::fs::read(&input).unwrap() == raw);
    assert!(std::fs::read(&tsr).unwrap() == before_tsr);
}

#[test]
fn an_existing_output_needs_force() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let raw = values(20_000);
    let input = d.join("x.u32");
    std::fs::write(&input, &raw).unwrap();
    let out = d.join("x.tsr");
    std::fs::write(&out, b"precious").unwrap();
    let err = fails(
        &tessera(&[&"compress", &"--type", &"u32", &input, &out]),
        "existing",
    );
    assert!(err.contains("x.tsr") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), b"precious");
    ok(&tessera(&[
        &"compress",
        &"-f",
        &"--type",
        &"u32",
        &input,
        &out,
    ]));
    assert!(ok(&tessera(&[&"verify", &out])).contains("ok"));
    // decompress too, and --force is spelled out as well.
    let back = d.join("back.u32");
    std::fs::write(&back, b"precious").unwrap();
    fails(
        &tessera(&[&"decompress", &out, &back]),
        "decompress existing",
    );
    assert_eq!(std::fs::read(&back).unwrap(), b"precious");
    ok(&tessera(&[&"decompress", &"--force", &out, &back]));
    assert!(std::fs::read(&back).unwrap() == raw);
    // A failure with --force leaves the old file in place.
    std::fs::write(d.join("odd.bin"), [0u8; 7]).unwrap();
    fails(
        &tessera(&[
            &"compress",
            &"-f",
            &"--type",
            &"u32",
            &d.join("odd.bin"),
            &out,
        ]),
        "odd",
    );
    assert!(ok(&tessera(&[&"verify", &out])).contains("ok"));
    assert_eq!(names(d), ["back.u32", "odd.bin", "x.tsr", "x.u32"]);
}

#[test]
fn output_locations_are_checked_before_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The input is a FIFO nobody writes: a run that started the work would block, so an
    // immediate error shows the output was checked first.
    let fifo = d.join("in.fifo");
    mkfifo(&fifo);
    let _writer = {
        // Open the write end without blocking (O_RDWR on a FIFO does not wait on Linux).
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&fifo)
            .unwrap()
    };
    let missing = d.join("no-such-folder").join("out.tsr");
    for (out, needle) in [
        (missing.clone(), "no-such-folder".to_owned()),
        (d.to_path_buf(), "folder".to_owned()),
    ] {
        let t = Instant::now();
        let o = tessera(&[&"compress", &"--type", &"u32", &fifo, &out]);
        let err = fails(&o, "bad output");
        assert!(err.contains(&needle), "{err}");
        assert!(!err.contains(".tmp-"), "names the user's path: {err}");
        assert!(t.elapsed() < Duration::from_secs(20));
    }
    assert_eq!(names(d), ["in.fifo"]);
}

/// Starts `compress` reading the FIFO `fifo` into `out`, feeds it `bytes` and waits until its
/// temporary file holds data (named) or is open (unnamed). The returned writer keeps the FIFO
/// open so the run stays mid-write.
fn start_blocked_compress(
    dir: &Path,
    fifo: &Path,
    out: &Path,
    named: bool,
) -> (Child, std::fs::File) {
    let mut c = command(&[
        &"compress",
        &"--type",
        &"u32",
        &"--chunk-values",
        &"512",
        &fifo,
        &out,
    ]);
    if named {
        c.env("TESSERA_NAMED_TEMP_FILES", "1");
    }
    let child = c
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut w = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
    // More than the output buffer (1 MiB) once compressed, so bytes reach the temporary file.
    w.write_all(&values(3 << 20)).unwrap();
    let pid = child.id();
    let tmp = dir.join(format!(
        ".{}.tmp-{pid}",
        out.file_name().unwrap().to_string_lossy()
    ));
    if named {
        wait_for("named temporary file with data", || {
            std::fs::metadata(&tmp).is_ok_and(|m| m.len() > 0)
        });
    } else {
        wait_for("unnamed temporary file", || holds_unnamed_file_in(pid, dir));
        assert!(!tmp.exists(), "O_TMPFILE: no name in the folder");
    }
    assert!(!out.exists(), "nothing under the final name mid-write");
    (child, w)
}

#[test]
fn interrupted_runs_leave_no_debris() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fifo = d.join("in.fifo");
    mkfifo(&fifo);
    let out = d.join("out.tsr");
    for named in [true, false] {
        for sig in [libc::SIGINT, libc::SIGTERM] {
            let (mut child, w) = start_blocked_compress(d, &fifo, &out, named);
            signal(&child, sig);
            let status = child.wait().unwrap();
            drop(w);
            assert_eq!(status.signal(), Some(sig), "named {named}: {status:?}");
            assert_eq!(names(d), ["in.fifo"], "named {named}, signal {sig}");
        }
    }
}

#[test]
fn sigkill_leaves_no_debris_with_o_tmpfile_and_stale_files_are_removed_later() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fifo = d.join("in.fifo");
    mkfifo(&fifo);
    let out = d.join("out.tsr");
    // The default: an unnamed temporary file, which the kernel frees with the process.
    let (mut child, w) = start_blocked_compress(d, &fifo, &out, false);
    signal(&child, libc::SIGKILL);
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
    drop(w);
    assert_eq!(names(d), ["in.fifo"]);

    // A named temporary file cannot survive kill -9 cleanly: the next run writing the same
    // output recognises it by its dead PID, removes it and says so.
    let (mut child, w) = start_blocked_compress(d, &fifo, &out, true);
    let pid = child.id();
    signal(&child, libc::SIGKILL);
    child.wait().unwrap();
    drop(w);
    let stale = format!(".out.tsr.tmp-{pid}");
    assert_eq!(names(d), [stale.as_str(), "in.fifo"]);
    let input = d.join("in.u32");
    std::fs::write(&input, values(1000)).unwrap();
    let o = tessera(&[&"compress", &"--type", &"u32", &input, &out]);
    ok(&o);
    assert!(
        stderr(&o).contains(&stale) && stderr(&o).contains("removed"),
        "{}",
        stderr(&o)
    );
    assert_eq!(names(d), ["in.fifo", "in.u32", "out.tsr"]);
}

#[test]
fn pipes_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let raw = values(300_000);
    // compress - - : stdin to stdout; the summary goes to stderr.
    let o = tessera_in(&[&"compress", &"--type", &"u32", &"-", &"-"], &raw);
    ok(&o);
    let tsr = o.stdout.clone();
    assert!(
        stderr(&o).starts_with("stdout: 300000 u32 values"),
        "{}",
        stderr(&o)
    );
    // It is a whole, valid file, equal to the one written to a path (a 1.0 header up front).
    let input = d.join("values.u32");
    std::fs::write(&input, &raw).unwrap();
    let file = d.join("values.tsr");
    ok(&tessera(&[&"compress", &"--type", &"u32", &input, &file]));
    assert!(std::fs::read(&file).unwrap() == tsr);
    // decompress - - and from stdin to a file.
    let o = tessera_in(&[&"decompress", &"--device", &"cpu", &"-", &"-"], &tsr);
    ok(&o);
    assert!(o.stdout == raw);
    let back = d.join("back.u32");
    ok(&tessera_in(
        &[&"decompress", &"--device", &"cpu", &"-", &back],
        &tsr,
    ));
    assert!(std::fs::read(&back).unwrap() == raw);
    // inspect, verify and index query read stdin too.
    assert!(ok(&tessera_in(&[&"inspect", &"-"], &tsr)).starts_with("stdin: format 1.0"));
    assert_eq!(ok(&tessera_in(&[&"verify", &"-"], &tsr)), "stdin: ok\n");
    // A utf8 column through both pipes restores its text exactly.
    let text = b"alpha\nbeta\n\ngamma \xc3\xa9\nno newline at the end";
    let o = tessera_in(&[&"compress", &"--type", &"utf8", &"-", &"-"], text);
    ok(&o);
    let o = tessera_in(&[&"decompress", &"-", &"-"], &o.stdout);
    assert_eq!(ok(&o).as_bytes(), text);
    // bits from a pipe need --bits; bitmap ops read one operand from stdin and write stdout.
    let bits: Vec<u8> = (0..1000u32).map(|i| (i * 37 % 251) as u8).collect();
    let a = tessera_in(
        &[
            &"compress",
            &"--type",
            &"bits",
            &"--bits",
            &"8000",
            &"-",
            &"-",
        ],
        &bits,
    );
    ok(&a);
    let a_file = d.join("a.tsr");
    std::fs::write(&a_file, &a.stdout).unwrap();
    let o = tessera_in(&[&"bitmap", &"xor", &"-", &a_file, &"-"], &a.stdout);
    ok(&o);
    let o = tessera_in(&[&"decompress", &"-", &"-"], &o.stdout);
    assert!(o.stdout.iter().all(|&b| b == 0) && o.stdout.len() == 1000);
    // .tsr data is not read from terminals or written to them: nothing to test without one.
}

#[test]
fn a_closed_pipe_ends_the_run_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let raw = values(2_000_000);
    let tsr = packed(d, "big", &raw);
    let mut child = command(&[&"decompress", &"--device", &"cpu", &tsr, &"-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut first = [0u8; 10];
    out.read_exact(&mut first).unwrap();
    assert_eq!(first[..], raw[..10]);
    drop(out); // like `| head -c 10`
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.signal(), Some(libc::SIGPIPE), "{:?}", o.status);
    assert_eq!(stderr(&o), "", "no message for a closed pipe");
    assert_eq!(names(d), ["big.tsr", "big.u32"]);

    // index query --ids | head
    let ix = d.join("ix.tsr");
    ok(&tessera(&[&"index", &"build", &"--column", &tsr, &ix]));
    let mut child = command(&[
        &"index",
        &"query",
        &ix,
        &"--range",
        &"0..100000000",
        &"--ids",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut line = [0u8; 16];
    out.read_exact(&mut line).unwrap();
    drop(out);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.signal(), Some(libc::SIGPIPE), "{:?}", o.status);
    assert_eq!(stderr(&o), "");
}

/// A u32 column of one chunk whose directory entry claims `claimed` values for a plain payload
/// of `actual` values (checksums all correct).
fn lying_file(path: &Path, actual: usize, claimed: u32) {
    let mut w = ContainerWriter::create(path).unwrap();
    w.begin_column("x", LogicalType::U32, Some(CodecId::Plain))
        .unwrap();
    w.write_chunk(CodecId::Plain, claimed, &values(actual))
        .unwrap();
    w.end_column().unwrap();
    w.finish().unwrap();
}

#[test]
fn verify_and_inspect_on_good_and_damaged_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let raw = values(40_000);
    let good = packed(d, "good", &raw);
    let bytes = std::fs::read(&good).unwrap();
    // One bit flipped in a payload.
    let flipped = d.join("flipped.tsr");
    let mut f = bytes.clone();
    f[200] ^= 0x10;
    std::fs::write(&flipped, &f).unwrap();
    // Valid checksums, but the directory claims 2^24 values for a 1024-value payload.
    let lying = d.join("lying.tsr");
    lying_file(&lying, 1024, 1 << 24);
    let not_tsr = d.join("notes.txt");
    std::fs::write(
        &not_tsr,
        b"just some text, long enough to be more than 48 bytes of it",
    )
    .unwrap();
    let empty = d.join("empty.tsr");
    std::fs::write(&empty, b"").unwrap();

    assert_eq!(
        ok(&tessera(&[&"verify", &good])),
        format!("{}: ok\n", good.display())
    );

    let o = tessera(&[
        &"verify",
        &good,
        &flipped,
        &lying,
        &not_tsr,
        &empty,
        &d.join("missing"),
    ]);
    let err = fails(&o, "verify damaged");
    assert!(err.contains("5 of 6"), "{err}");
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6, "{out}");
    assert_eq!(lines[0], format!("{}: ok", good.display()));
    for (line, needle) in lines[1..].iter().zip([
        "checksum mismatch",
        "chunk 0",
        "not a .tsr file",
        "empty",
        "missing",
    ]) {
        assert!(line.contains(": damaged: "), "{line}");
        assert!(line.contains(needle), "{needle}: {line}");
    }

    // inspect validates what it reports: damaged files are errors, not tables.
    for (file, needle) in [
        (&flipped, "checksum mismatch"),
        (&lying, "damaged"),
        (&not_tsr, "not a .tsr file"),
    ] {
        let o = tessera(&[&"inspect", file]);
        let err = fails(&o, "inspect damaged");
        assert!(err.contains(needle), "{needle}: {err}");
        assert_eq!(stdout(&o), "");
    }
    // inspect --verify shows what the directory says, then the verdict.
    let o = tessera(&[&"inspect", &"--verify", &lying]);
    fails(&o, "inspect --verify damaged");
    let out = stdout(&o);
    assert!(out.contains("16777216"), "{out}");
    assert!(out.lines().last().unwrap().contains(": damaged: "), "{out}");
    let o = tessera(&[&"inspect", &"--verify", &good]);
    assert!(ok(&o).lines().last().unwrap().ends_with(": ok"));
    let o = tessera(&[&"inspect", &"--verify", &"--json", &lying]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["verdict"].as_str().unwrap().starts_with("damaged"));
}

#[test]
fn messages_of_issue_34() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // --help no longer says integer data only.
    let help = ok(&tessera(&[&"--help"]));
    assert!(
        help.contains("bytes, bits and text") && help.contains("verify"),
        "{help}"
    );
    // Counts name what they count; "-> N bytes" is the file's size.
    let input = d.join("blob.bin");
    std::fs::write(&input, vec![7u8; 3000]).unwrap();
    let out = d.join("blob.tsr");
    let summary = ok(&tessera(&[&"compress", &"--type", &"bytes", &input, &out]));
    assert!(summary.contains(": 3000 bytes, 3000 -> "), "{summary}");
    let size = std::fs::metadata(&out).unwrap().len();
    assert!(summary.contains(&format!("-> {size} bytes")), "{summary}");
    // A file of another kind.
    let err = fails(&tessera(&[&"decompress", &bin(), &d.join("x")]), "ELF");
    assert!(err.contains("not a .tsr file"), "{err}");
    // A missing output folder names the path given, not a temporary file.
    let missing = d.join("nope").join("out.bin");
    let err = fails(&tessera(&[&"decompress", &out, &missing]), "no folder");
    assert!(
        err.contains(&missing.display().to_string()) && !err.contains(".tmp-"),
        "{err}"
    );
    // Control characters in column names are escaped when printed.
    let named = d.join("named.tsr");
    ok(&tessera(&[
        &"compress",
        &"--type",
        &"u32",
        &"--name",
        &"evil\x1b[31m\nname",
        &input,
        &named,
    ]));
    let text = ok(&tessera(&[&"inspect", &named]));
    assert!(text.contains("evil\\u{1b}[31m\\nname"), "{text}");
    assert!(!text.contains('\x1b'));
    let err = fails(
        &tessera(&[&"decompress", &"--column", &"a\x07b", &named, &d.join("y")]),
        "bell",
    );
    assert!(err.contains("a\\u{7}b") && !err.contains('\x07'), "{err}");
    // Negative values after --in and --range.
    let signed: Vec<u8> = (-50i32..50).flat_map(|v| v.to_le_bytes()).collect();
    let si = d.join("s.i32");
    std::fs::write(&si, signed).unwrap();
    let st = d.join("s.tsr");
    ok(&tessera(&[&"compress", &"--type", &"i32", &si, &st]));
    let ix = d.join("s.ix");
    ok(&tessera(&[&"index", &"build", &"--column", &st, &ix]));
    let o = ok(&tessera(&[
        &"index", &"query", &ix, &"--in", &"-1", &"--ids",
    ]));
    assert_eq!(o.lines().nth(1), Some("49"), "{o}");
    let o = ok(&tessera(&[&"index", &"query", &ix, &"--range", &"-3..-1"]));
    assert!(o.starts_with("3 rows"), "{o}");
}

#[test]
fn bitmaps_of_different_chunking_combine() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let n_bits = 100_000usize;
    let a: Vec<bool> = (0..n_bits)
        .map(|i| (i / 700) % 2 == 0 || i % 13 == 0)
        .collect();
    let b: Vec<bool> = (0..n_bits)
        .map(|i| (i / 1100) % 3 == 0 || i % 7 == 0)
        .collect();
    let pack = |bits: &[bool]| {
        let mut out = vec![0u8; bits.len().div_ceil(8)];
        for (i, &x) in bits.iter().enumerate() {
            out[i / 8] |= (x as u8) << (i % 8);
        }
        out
    };
    std::fs::write(d.join("a.bits"), pack(&a)).unwrap();
    std::fs::write(d.join("b.bits"), pack(&b)).unwrap();
    for (name, chunk, codec) in [("a", "8192", "wah"), ("b", "3072", "plain")] {
        ok(&tessera(&[
            &"compress",
            &"--type",
            &"bits",
            &"--codec",
            &codec,
            &"--chunk-values",
            &chunk,
            &d.join(format!("{name}.bits")),
            &d.join(format!("{name}.tsr")),
        ]));
    }
    for (op, f) in [
        ("and", (|x, y| x && y) as fn(bool, bool) -> bool),
        ("xor", |x, y| x ^ y),
        ("andnot", |x, y| x && !y),
    ] {
        for (first, second, fwd) in [("a", "b", true), ("b", "a", false)] {
            let out = d.join(format!("{op}-{first}.tsr"));
            ok(&tessera(&[
                &"bitmap",
                &op,
                &"--device",
                &"cpu",
                &d.join(format!("{first}.tsr")),
                &d.join(format!("{second}.tsr")),
                &out,
            ]));
            let o = tessera(&[&"decompress", &out, &"-"]);
            let want: Vec<bool> = if fwd {
                a.iter().zip(&b).map(|(&x, &y)| f(x, y)).collect()
            } else {
                b.iter().zip(&a).map(|(&x, &y)| f(x, y)).collect()
            };
            assert!(o.stdout == pack(&want), "{op} {first} {second}");
        }
    }
}
