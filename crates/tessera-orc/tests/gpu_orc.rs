//! The GPU path (`tessera_orc::gpu`: compression chunks and integer streams through CODAG)
//! gives the same Arrow batches as the CPU path on every test file, and the same error on
//! hostile streams. Skips with a printed reason without a GPU (TESSERA_REQUIRE_GPU=1 makes that
//! a failure).

use tessera_orc::gpu::{read_batches, read_batches_with, Options};
use tessera_orc::{OrcFile, OrcReader};

use tessera_gpu::testing::gpu;

mod common;
use common::{dir, orc_file_names};

const SUPPORTED_TEST1: [&str; 9] = [
    "boolean1", "byte1", "short1", "int1", "long1", "float1", "double1", "bytes1", "string1",
];

#[test]
fn gpu_batches_equal_cpu_batches_on_every_test_file() {
    let Some(g) = gpu() else { return };
    let names = orc_file_names();
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
        // Streams cut into many small pieces (the test files are small): the same batches.
        for (values, bytes) in [(1, 1), (7, 3), (300, 64)] {
            let opts = Options {
                target_values: values,
                target_bytes: bytes,
            };
            let (gb, rep) = read_batches_with(g, &r, opts)
                .unwrap_or_else(|e| panic!("{name} {opts:?}: gpu: {e}"));
            assert_eq!(cpu, gb, "{name} {opts:?}");
            if values == 1 && f.rows() >= 1000 && rep.rle_v1_chunks + rep.rle_v2_chunks > 0 {
                assert!(
                    rep.rle_v1_chunks + rep.rle_v2_chunks > rep.rle_streams,
                    "{name}: streams were cut: {rep:?}"
                );
            }
        }
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

/// `codag::DeviceTable`: chunks that are slices of one device buffer starting at any byte (the
/// form the ORC reader uses for the uploaded file and the inflated streams) decode like the CPU
/// reference; a chunk whose words would leave the buffer is refused before any launch.
#[test]
fn device_tables_decode_slices_at_any_byte() {
    use tessera_codecs::orc::encode;
    use tessera_gpu::codag::{self, ChunkDesc, Decoder, DeviceTable};
    use tessera_orc::split::{split, RleKind};

    let Some(g) = gpu() else { return };
    let n = 50_000usize;
    let vals: Vec<i64> = (0..n as i64)
        .map(|i| {
            if i % 3000 < 700 {
                42
            } else {
                (i * 7919) % 1000 - 500 + i
            }
        })
        .collect();
    for (d, kind, s) in [
        (Decoder::OrcRleV2, RleKind::V2, encode::rle_v2(&vals, true)),
        (Decoder::OrcRleV1, RleKind::V1, encode::rle_v1(&vals, true)),
    ] {
        let pieces = split(kind, &s, n, 1000).expect("walk");
        assert!(pieces.len() > 10);
        for lead in 0..4usize {
            let mut buf = vec![0xa5u8; lead];
            buf.extend_from_slice(&s);
            let dev = codag::upload_padded(g, &buf, 16).expect("upload");
            let mut at = 0u64;
            let descs: Vec<ChunkDesc> = pieces
                .iter()
                .map(|p| {
                    let c = ChunkDesc {
                        in_start: (lead + p.bytes.start) as u64,
                        out_start: at,
                        in_len: p.bytes.len() as u32,
                        out_cap: p.values as u32,
                        param: 1,
                        reserved: 0,
                    };
                    at += p.values as u64;
                    c
                })
                .collect();
            let t = DeviceTable::new(g, d, dev.len(), &descs).expect("table");
            let mut out = g.alloc::<u8>(n * 8).expect("alloc");
            t.enqueue(g, &dev, &mut out).expect("launch");
            for (i, r) in t.results(g).expect("results").iter().enumerate() {
                assert_eq!(r.status, 0, "{d:?} lead {lead} piece {i}");
                assert_eq!(r.out_len, pieces[i].values, "{d:?} lead {lead} piece {i}");
                assert_eq!(
                    r.in_used,
                    pieces[i].bytes.len(),
                    "{d:?} lead {lead} piece {i}"
                );
            }
            let mut got = vec![0u8; n * 8];
            g.download(&out, &mut got).expect("download");
            let got: Vec<i64> = got
                .chunks_exact(8)
                .map(|w| i64::from_le_bytes(w.try_into().expect("8 bytes")))
                .collect();
            assert_eq!(got, vals, "{d:?} lead {lead}");
        }
    }

    // Deflate streams at every offset modulo 4 in one buffer, one launch.
    let text: Vec<u8> = (0..40_000u32)
        .flat_map(|i| format!("row {} value {};", i % 977, i * 31 % 1013).into_bytes())
        .take(100_000)
        .collect();
    let mut buf = Vec::new();
    let mut descs = Vec::new();
    for (k, level) in [0u8, 1, 6, 9].iter().enumerate() {
        buf.push(0xee);
        let c = miniz_oxide::deflate::compress_to_vec(&text, *level);
        descs.push(ChunkDesc {
            in_start: buf.len() as u64,
            out_start: (k * text.len()) as u64,
            in_len: c.len() as u32,
            out_cap: text.len() as u32,
            param: 0,
            reserved: 0,
        });
        buf.extend_from_slice(&c);
    }
    assert!(descs.iter().any(|d| d.in_start % 4 != 0));
    let dev = codag::upload_padded(g, &buf, 16).expect("upload");
    let t = DeviceTable::new(g, Decoder::Deflate, dev.len(), &descs).expect("table");
    let mut out = g.alloc::<u8>(4 * text.len()).expect("alloc");
    t.enqueue(g, &dev, &mut out).expect("launch");
    for (k, r) in t.results(g).expect("results").iter().enumerate() {
        assert_eq!((r.status, r.out_len), (0, text.len()), "deflate {k}");
        assert_eq!(r.in_used, descs[k].in_len as usize, "deflate {k}");
    }
    let mut got = vec![0u8; 4 * text.len()];
    g.download(&out, &mut got).expect("download");
    for k in 0..4 {
        assert!(
            got[k * text.len()..(k + 1) * text.len()] == text[..],
            "deflate {k}"
        );
    }

    // Words past the buffer: refused.
    let row = |in_start: u64, in_len: u32| ChunkDesc {
        in_start,
        out_start: 0,
        in_len,
        out_cap: 1,
        param: 0,
        reserved: 0,
    };
    for (start, len, ok) in [
        (4, 4, true),
        (5, 5, false),
        (8, 2, false),
        (9, 1, false),
        (11, 0, false),
    ] {
        let r = DeviceTable::new(g, Decoder::OrcByteRle, 10, &[row(start, len)]);
        assert_eq!(r.is_ok(), ok, "chunk {start}+{len} in 10 bytes");
    }
}
