//! The GPU path (`tessera_orc::gpu`: compression chunks and integer streams through CODAG)
//! gives the same Arrow batches as the CPU path on every test file, and the same error on
//! hostile streams. Skips with a printed reason without a GPU (TESSERA_REQUIRE_GPU=1 makes that
//! a failure).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use tessera_gpu::Gpu;
use tessera_orc::gpu::read_batches;
use tessera_orc::{OrcFile, OrcReader};

fn gpu() -> Option<&'static Gpu> {
    static GPU: OnceLock<Result<Gpu, String>> = OnceLock::new();
    match GPU.get_or_init(|| Gpu::new().map_err(|e| e.to_string())) {
        Ok(g) => Some(g),
        Err(e) => {
            if std::env::var("TESSERA_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("TESSERA_REQUIRE_GPU=1 but Gpu::new failed: {e}");
            }
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "skipped: {e}");
            None
        }
    }
}

fn dir() -> PathBuf {
    // TESSERA_ORC_TESTDATA: the files elsewhere (the GPU machine runs a copied test binary).
    std::env::var_os("TESSERA_ORC_TESTDATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/orc"))
}

const SUPPORTED_TEST1: [&str; 9] = [
    "boolean1", "byte1", "short1", "int1", "long1", "float1", "double1", "bytes1", "string1",
];

#[test]
fn gpu_batches_equal_cpu_batches_on_every_test_file() {
    let Some(g) = gpu() else { return };
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .expect("testdata/orc")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".orc"))
        .collect();
    names.sort();
    let mut checked = 0;
    for name in &names {
        let Ok(f) = OrcFile::open(&dir().join(name)) else {
            continue; // the files the reader refuses are covered by orc_files.rs
        };
        let cols: Option<Vec<String>> = name
            .starts_with("TestOrcFile.test1")
            .then(|| SUPPORTED_TEST1.iter().map(|s| s.to_string()).collect());
        let cols = if name.starts_with("TestOrcFile.testDate1900") {
            Some(vec!["date".to_string()])
        } else if name.starts_with("TestOrcFile.emptyFile") {
            Some(SUPPORTED_TEST1.iter().map(|s| s.to_string()).collect())
        } else {
            cols
        };
        let r = OrcReader::new(&f, cols.as_deref()).expect("reader");
        let cpu = r.read_all().expect("cpu");
        let (gb, rep) = read_batches(g, &r).unwrap_or_else(|e| panic!("{name}: gpu: {e}"));
        assert_eq!(cpu.len(), gb.len(), "{name}");
        for (a, b) in cpu.iter().zip(&gb) {
            assert_eq!(a, b, "{name}");
        }
        eprintln!("{name}: {rep:?}");
        checked += 1;
    }
    assert!(checked >= 12, "{checked} files checked");
}

#[test]
fn gpu_reports_the_cpu_error_on_hostile_streams() {
    let Some(g) = gpu() else { return };
    for name in [
        "pyarrow-0.12-zlib.orc",
        "pyarrow-0.11-zlib.orc",
        "pyarrow-0.12-uncompressed.orc",
    ] {
        let b = std::fs::read(dir().join(name)).expect("file");
        let f = OrcFile::from_bytes(b.clone()).expect("open");
        let l = f.stripe_layout(0).expect("layout");
        // Column 5 (i64) DATA, column 8 (string) LENGTH: damage a byte in the middle of each.
        for key in [(5u32, 1i32), (8, 2), (1, 0)] {
            let Some(r) = l.streams.get(&key) else {
                continue;
            };
            for at in [r.start + 3, r.start + (r.end - r.start) / 2] {
                let mut c = b.clone();
                c[at] ^= 0x5a;
                let Ok(f) = OrcFile::from_bytes(c) else {
                    continue;
                };
                let rd = OrcReader::new(&f, None).expect("reader");
                let cpu = rd.read_all();
                let gpu = read_batches(g, &rd).map(|x| x.0);
                match (cpu, gpu) {
                    (Ok(a), Ok(b)) => assert_eq!(a, b, "{name} {key:?} {at}"),
                    // The same stripe, column and stream (the GPU's message adds the chunk's
                    // index within its batch).
                    (Err(a), Err(b)) => {
                        let place =
                            |e: String| e.split(" stream:").next().unwrap_or("").to_string();
                        assert_eq!(
                            place(a.to_string()),
                            place(b.to_string()),
                            "{name} {key:?} {at}"
                        )
                    }
                    (a, b) => panic!("{name} {key:?} {at}: cpu {:?} gpu {:?}", a.err(), b.err()),
                }
            }
        }
    }
}
