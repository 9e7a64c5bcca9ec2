//! End-to-end tests of the `tessera` binary: round trips for every codec and type compared byte
//! for byte, `inspect` output, and the error contract (exit status 1, one `error:` line, no
//! panic text or backtrace, no partial files) on bad input and usage.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

mod common;

use common::{fails, ok, stderr, stdout, tessera};

use std::path::{Path, PathBuf};
use std::process::Command;

use tessera_format::container::ContainerWriter;
use tessera_format::{CodecId, LogicalType};

const TYPES: [&str; 8] = ["u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64"];
const CODECS: [&str; 5] = ["auto", "plain", "for", "dfor", "rfor"];

/// Deterministic raw bytes whose values have some structure (so codecs pack them), any width.
fn sample(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len);
    let mut level = 0u8;
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if x % 5 == 0 {
            level = level.wrapping_add((x >> 8) as u8 % 3);
        }
        // Mostly small bytes, some large: mixes bit widths across chunks.
        out.push(if x % 11 == 0 {
            (x >> 16) as u8
        } else {
            level.wrapping_add((x >> 24) as u8 % 4)
        });
    }
    out
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn round_trip_every_codec_and_type() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.bin");
    let packed = dir.path().join("in.tsr");
    let output = dir.path().join("out.bin");
    for (t, ty) in TYPES.iter().enumerate() {
        // 2.5 chunks of 1024 values: a short last chunk and a partial last block.
        let width = LogicalType::from_name(ty).unwrap().width();
        let raw = sample(2560 * width, t as u64 + 1);
        std::fs::write(&input, &raw).unwrap();
        for codec in CODECS {
            // The outputs of the previous round are replaced: --force.
            let o = tessera(&[
                &"compress",
                &"-f",
                &"--type",
                ty,
                &"--codec",
                &codec,
                &"--chunk-values",
                &"1024",
                &input,
                &packed,
            ]);
            ok(&o);
            let o = tessera(&[&"decompress", &"-f", &"--device", &"cpu", &packed, &output]);
            ok(&o);
            assert!(
                std::fs::read(&output).unwrap() == raw,
                "{ty} {codec}: round trip differs"
            );
        }
    }
    assert_eq!(
        files_in(dir.path()),
        ["in.bin", "in.tsr", "out.bin"],
        "no temporary files left"
    );
}

#[test]
fn auto_device_round_trip_reports_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("v.bin");
    let raw = sample(3 * 1024 * 4 + 8, 99);
    std::fs::write(&input, &raw).unwrap();
    let packed = dir.path().join("v.tsr");
    ok(&tessera(&[
        &"compress",
        &"--type",
        &"i32",
        &"--chunk-values",
        &"1024",
        &input,
        &packed,
    ]));
    let out = dir.path().join("v.out");
    let o = tessera(&[&"decompress", &packed, &out]);
    ok(&o);
    assert!(std::fs::read(&out).unwrap() == raw);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("device: gpu") || err.starts_with("device: cpu"),
        "{err}"
    );
}

#[test]
fn empty_input_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("empty.bin");
    std::fs::write(&input, b"").unwrap();
    let packed = dir.path().join("e.tsr");
    ok(&tessera(&[&"compress", &"--type", &"u64", &input, &packed]));
    let out = dir.path().join("e.out");
    ok(&tessera(&[
        &"decompress",
        &"--device",
        &"cpu",
        &packed,
        &out,
    ]));
    assert_eq!(std::fs::read(&out).unwrap().len(), 0);
    let o = tessera(&[&"inspect", &"--json", &packed]);
    ok(&o);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["columns"][0]["values"], 0);
    assert_eq!(v["columns"][0]["chunks"], 0);
}

#[test]
fn inspect_reports_columns() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("data.bin");
    let raw: Vec<u8> = (0u32..5000).flat_map(|v| (v * 3).to_le_bytes()).collect();
    std::fs::write(&input, &raw).unwrap();
    let packed = dir.path().join("d.tsr");
    ok(&tessera(&[
        &"compress",
        &"--type",
        &"u32",
        &"--chunk-values",
        &"2048",
        &"--name",
        &"ids",
        &input,
        &packed,
    ]));

    let o = tessera(&[&"inspect", &"--json", &packed]);
    ok(&o);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let col = &v["columns"][0];
    assert_eq!(v["columns"].as_array().unwrap().len(), 1);
    assert_eq!(col["name"], "ids");
    assert_eq!(col["type"], "u32");
    assert_eq!(col["codec"], "auto");
    assert_eq!(col["values"], 5000);
    assert_eq!(col["uncompressed_bytes"], 20000);
    assert_eq!(col["chunks"], 3);
    assert_eq!(col["chunk_values"], 2048);
    let compressed = col["compressed_bytes"].as_u64().unwrap();
    assert!(compressed > 0 && compressed < 20000, "{compressed}");
    let mix = col["chunk_codecs"].as_object().unwrap();
    assert_eq!(mix.values().map(|n| n.as_u64().unwrap()).sum::<u64>(), 3);
    let bpv = col["bits_per_value"].as_f64().unwrap();
    assert!((bpv - compressed as f64 * 8.0 / 5000.0).abs() < 1e-9);
    assert_eq!(v["version"], "1.0");
    assert_eq!(
        v["file_bytes"].as_u64().unwrap(),
        std::fs::metadata(&packed).unwrap().len()
    );

    let o = tessera(&[&"inspect", &packed]);
    ok(&o);
    let text = stdout(&o);
    assert!(
        text.contains("ids")
            && text.contains("u32")
            && text.contains("auto(")
            && text.contains("5000"),
        "{text}"
    );
    for h in [
        "values",
        "uncompressed",
        "compressed",
        "bits/value",
        "chunks",
    ] {
        assert!(text.contains(h), "{h}: {text}");
    }

    // A fixed codec shows just its name.
    ok(&tessera(&[
        &"compress",
        &"--force",
        &"--type",
        &"u32",
        &"--codec",
        &"dfor",
        &input,
        &packed,
    ]));
    let o = tessera(&[&"inspect", &"--json", &packed]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["columns"][0]["codec"], "dfor");
    assert_eq!(
        v["columns"][0]["name"], "data",
        "default name: the input's stem"
    );
}

#[test]
fn several_columns_need_column_choice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("multi.tsr");
    let mut w = ContainerWriter::create(&path).unwrap();
    let a: Vec<u8> = (0u16..700).flat_map(|v| v.to_le_bytes()).collect();
    let b: Vec<u8> = (0..300).map(|v| (v % 7) as u8).collect();
    for (name, ty, raw) in [("a", LogicalType::U16, &a), ("b", LogicalType::I8, &b)] {
        w.begin_column(name, ty, Some(CodecId::Plain)).unwrap();
        w.write_chunk(CodecId::Plain, (raw.len() / ty.width()) as u32, raw)
            .unwrap();
        w.end_column().unwrap();
    }
    w.finish().unwrap();
    let out = dir.path().join("o");
    let err = fails(&tessera(&[&"decompress", &path, &out]), "no --column");
    assert!(err.contains("--column") && err.contains("a, b"), "{err}");
    fails(
        &tessera(&[&"decompress", &"--column", &"zz", &path, &out]),
        "unknown column",
    );
    ok(&tessera(&[
        &"decompress",
        &"--column",
        &"b",
        &"--device",
        &"cpu",
        &path,
        &out,
    ]));
    assert_eq!(std::fs::read(&out).unwrap(), b);
    let o = tessera(&[&"inspect", &"--json", &path]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["columns"][1]["type"], "i8");
    assert_eq!(v["columns"][0]["values"], 700);
}

#[test]
fn bad_input_fails_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let missing = d.join("missing.bin");
    let odd = d.join("odd.bin");
    std::fs::write(&odd, [1u8; 7]).unwrap();
    let garbage = d.join("garbage.tsr");
    std::fs::write(&garbage, sample(5000, 3)).unwrap();
    let good_raw = d.join("good.bin");
    std::fs::write(&good_raw, sample(8192, 4)).unwrap();
    let good = d.join("good.tsr");
    ok(&tessera(&[
        &"compress",
        &"--type",
        &"u32",
        &"--chunk-values",
        &"512",
        &good_raw,
        &good,
    ]));
    let bytes = std::fs::read(&good).unwrap();
    let truncated = d.join("truncated.tsr");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let tiny = d.join("tiny.tsr");
    std::fs::write(&tiny, &bytes[..20]).unwrap();
    let flipped = d.join("flipped.tsr");
    let mut f = bytes.clone();
    f[100] ^= 0x20; // inside the first payload
    std::fs::write(&flipped, &f).unwrap();
    let out = d.join("out");
    let before = files_in(d);

    let cases: Vec<(&str, Vec<&dyn AsRef<std::ffi::OsStr>>, &str)> = vec![
        (
            "missing input",
            vec![&"compress", &"--type", &"u32", &missing, &out],
            "missing.bin",
        ),
        (
            "odd length",
            vec![&"compress", &"--type", &"u32", &odd, &out],
            "7 bytes",
        ),
        (
            "odd length u16",
            vec![&"compress", &"--type", &"u16", &odd, &out],
            "2-byte",
        ),
        (
            "folder input",
            vec![&"compress", &"--type", &"u8", &d, &out],
            "folder",
        ),
        (
            "wrong --type",
            vec![&"compress", &"--type", &"u33", &good_raw, &out],
            "u33",
        ),
        (
            "bad --codec",
            vec![
                &"compress",
                &"--type",
                &"u32",
                &"--codec",
                &"zstd",
                &good_raw,
                &out,
            ],
            "zstd",
        ),
        (
            "bad --chunk-values",
            vec![
                &"compress",
                &"--type",
                &"u32",
                &"--chunk-values",
                &"1000",
                &good_raw,
                &out,
            ],
            "512",
        ),
        (
            "huge --chunk-values",
            vec![
                &"compress",
                &"--type",
                &"u32",
                &"--chunk-values",
                &"33554432",
                &good_raw,
                &out,
            ],
            "512",
        ),
        (
            "missing output arg",
            vec![&"compress", &"--type", &"u32", &good_raw],
            "OUTPUT",
        ),
        ("unknown flag", vec![&"inspect", &"--yaml", &good], "--yaml"),
        ("unknown subcommand", vec![&"explode"], "explode"),
        ("no subcommand", vec![], "subcommand"),
        (
            "missing .tsr",
            vec![&"decompress", &missing, &out],
            "missing.bin",
        ),
        (
            "garbage .tsr",
            vec![&"decompress", &garbage, &out],
            "not a .tsr file",
        ),
        (
            "truncated .tsr",
            vec![&"decompress", &truncated, &out],
            "magic",
        ),
        ("tiny .tsr", vec![&"decompress", &tiny, &out], "truncated"),
        (
            "flipped payload bit",
            vec![&"decompress", &"--device", &"cpu", &flipped, &out],
            "checksum mismatch",
        ),
        (
            "inspect garbage",
            vec![&"inspect", &garbage],
            "not a .tsr file",
        ),
        ("inspect missing", vec![&"inspect", &missing], "missing.bin"),
        (
            "bad --device",
            vec![&"decompress", &"--device", &"tpu", &good, &out],
            "tpu",
        ),
        (
            "demo zero values",
            vec![&"demo", &"--values", &"0"],
            "values",
        ),
    ];
    for (what, args, needle) in cases {
        let err = fails(&tessera(&args), what);
        assert!(
            err.contains(needle),
            "{what}: {err:?} should mention {needle:?}"
        );
    }
    assert_eq!(
        files_in(d),
        before,
        "failures leave no output or temporary files"
    );
}

#[test]
fn help_and_version_exit_zero() {
    for args in [
        vec!["--help"],
        vec!["--version"],
        vec!["compress", "--help"],
        vec!["help", "decompress"],
    ] {
        let o = Command::new(common::bin()).args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        assert!(!o.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn gpu_device_without_a_gpu_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("g.bin");
    let raw = sample(4096, 5);
    std::fs::write(&input, &raw).unwrap();
    let packed = dir.path().join("g.tsr");
    ok(&tessera(&[
        &"compress",
        &"--type",
        &"u32",
        &"--chunk-values",
        &"512",
        &input,
        &packed,
    ]));
    let out = dir.path().join("g.out");
    let o = tessera(&[&"decompress", &"--device", &"gpu", &packed, &out]);
    match tessera_gpu::Gpu::new() {
        Err(_) => {
            let err = fails(&o, "--device gpu");
            assert!(err.contains("GPU"), "{err}");
            assert!(!out.exists());
            fails(
                &tessera(&[&"demo", &"--values", &"1000", &"--device", &"gpu"]),
                "demo --device gpu",
            );
        }
        Ok(_) => {
            // On a GPU machine the same command must decode correctly.
            ok(&o);
            assert!(std::fs::read(&out).unwrap() == raw);
            assert!(stderr(&o).starts_with("device: gpu"), "{}", stderr(&o));
        }
    }
}

#[test]
fn demo_runs_on_small_data() {
    let o = tessera(&[
        &"demo",
        &"--values",
        &"5000",
        &"--chunk-values",
        &"1024",
        &"--device",
        &"cpu",
    ]);
    ok(&o);
    let text = stdout(&o);
    for name in [
        "uniform-b4",
        "sorted-0..n",
        "d3-zipf-1.5",
        "runs-32-b20",
        "bitmap-runs",
        "log-text",
        "strings",
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name}: {text}"));
        assert!(
            line.contains("auto(") && line.contains(" cpu ") && line.ends_with("ok"),
            "{line}"
        );
    }
    for h in [
        "codec(s)",
        "type",
        "ratio",
        "encode MB/s",
        "end-to-end MB/s",
        "GPU kernel GB/s",
        "device: cpu",
    ] {
        assert!(text.contains(h), "{h}: {text}");
    }
    // Under auto the demo runs on whatever is there.
    ok(&tessera(&[&"demo", &"--values", &"700"]));
}

#[test]
fn compress_overwrites_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("x.bin");
    std::fs::write(&input, sample(4000, 6)).unwrap();
    let packed: PathBuf = dir.path().join("x.tsr");
    std::fs::write(&packed, b"previous contents").unwrap();
    // A failing compress (odd length for u64) leaves the old file in place.
    std::fs::write(dir.path().join("odd.bin"), [0u8; 12]).unwrap();
    fails(
        &tessera(&[
            &"compress",
            &"--force",
            &"--type",
            &"u64",
            &dir.path().join("odd.bin"),
            &packed,
        ]),
        "odd",
    );
    assert_eq!(std::fs::read(&packed).unwrap(), b"previous contents");
    ok(&tessera(&[
        &"compress",
        &"--force",
        &"--type",
        &"u16",
        &input,
        &packed,
    ]));
    ok(&tessera(&[&"inspect", &packed]));
    assert_eq!(files_in(dir.path()), ["odd.bin", "x.bin", "x.tsr"]);
}
