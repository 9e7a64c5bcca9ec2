//! The library's table API end to end on the CPU (and on the GPU where there is one): every
//! column type written and read back, ranges of chunks, streaming in and out, utf8 columns whose
//! chunks hold different string counts, and hostile files.

use std::io::Cursor;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tessera::{
    CodecId, ColumnOptions, Device, Engine, Error, GpuData, LogicalType, TableReader, TableWriter,
};

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// An engine on the GPU when one opens; `None` (with the reason printed) otherwise, and a
/// failure when TESSERA_REQUIRE_GPU=1.
fn gpu_engine() -> Option<Engine> {
    Engine::open(Device::Gpu)
        .map_err(|e| tessera::gpu::testing::skipped(&e))
        .ok()
}

/// Lines of varying length (1..=max bytes), some multi-byte UTF-8.
fn lines(n: usize, max: usize, seed: u64) -> Vec<String> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            let len = rng.random_range(1..=max);
            let mut s: String = (0..len)
                .map(|_| (b'a' + rng.random_range(0..26u8)) as char)
                .collect();
            if i % 7 == 0 {
                s.push('é');
            }
            s
        })
        .collect()
}

#[test]
fn every_type_round_trips_on_every_device() {
    let dir = tmp();
    let path = dir.path().join("t.tsr");
    let n = 70_000usize;
    let mut rng = StdRng::seed_from_u64(7);
    let u8s: Vec<u8> = (0..n).map(|_| rng.random()).collect();
    let i16s: Vec<i16> = (0..n).map(|i| (i as i16).wrapping_mul(31)).collect();
    let u32s: Vec<u32> = (0..n as u32).map(|i| i / 3).collect();
    let i64s: Vec<i64> = (0..n as i64).map(|i| i * i - 5_000_000).collect();
    let text: Vec<u8> = b"tessera decodes on the GPU. "
        .iter()
        .cycle()
        .take(n * 3)
        .copied()
        .collect();
    let bit_len = 9_001u64;
    let mut bits = vec![0u8; bit_len.div_ceil(8) as usize];
    for i in (0..bit_len).step_by(3) {
        bits[(i / 8) as usize] |= 1 << (i % 8);
    }
    let strings = lines(5_000, 40, 1);
    let small = ColumnOptions::auto().with_chunk_values(8192);

    let mut w = TableWriter::create(&path).expect("create");
    w.write_values("u8", &u8s, small).expect("u8");
    w.write_values("i16", &i16s, small.with_codec(CodecId::Dfor))
        .expect("i16");
    w.write_values("u32", &u32s, small.with_codec(CodecId::Rfor))
        .expect("u32");
    w.write_values("i64", &i64s, small).expect("i64");
    w.write_bytes("text", &text, small.with_codec(CodecId::Lll))
        .expect("bytes");
    w.write_bits("bits", &bits, bit_len, small).expect("bits");
    let s = w
        .write_strings("s", &strings, ColumnOptions::auto().with_chunk_values(1024))
        .expect("strings");
    assert_eq!(s.values, strings.len() as u64);
    assert_eq!(s.chunks, 5);
    let dir_meta = w.finish().expect("finish");
    assert_eq!(dir_meta.directory.columns.len(), 7);
    assert_eq!(
        dir_meta.file_bytes,
        std::fs::metadata(&path).expect("size").len()
    );

    let r = TableReader::open(&path).expect("open");
    let mut engines = vec![Engine::cpu()];
    engines.extend(gpu_engine());
    for mut e in engines {
        let dev = e.device_name();
        let ix = |name: &str| r.column_index(name).expect("column");
        assert_eq!(
            r.read_values::<u8>(ix("u8"), &mut e).expect("u8"),
            u8s,
            "{dev}"
        );
        assert_eq!(
            r.read_values::<i16>(ix("i16"), &mut e).expect("i16"),
            i16s,
            "{dev}"
        );
        assert_eq!(
            r.read_values::<u32>(ix("u32"), &mut e).expect("u32"),
            u32s,
            "{dev}"
        );
        assert_eq!(
            r.read_values::<i64>(ix("i64"), &mut e).expect("i64"),
            i64s,
            "{dev}"
        );
        assert_eq!(r.read_raw(ix("text"), &mut e).expect("text"), text, "{dev}");
        assert_eq!(r.read_raw(ix("bits"), &mut e).expect("bits"), bits, "{dev}");
        let sc = r.read_strings(ix("s"), 0..5, &mut e).expect("strings");
        assert_eq!(sc.len(), strings.len(), "{dev}");
        for (i, want) in strings.iter().enumerate() {
            assert_eq!(sc.get(i), Some(want.as_str()), "{dev} string {i}");
        }
        // A range of chunks: chunk 2 of u32 holds values 16384..24576.
        let mut part = vec![0u8; r.raw_len(ix("u32"), 2..3).expect("len") as usize];
        r.read_raw_into(ix("u32"), 2..3, &mut part, &mut e)
            .expect("range");
        let want: Vec<u8> = u32s[16384..24576]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(part, want, "{dev}");
        let sc = r.read_strings(ix("s"), 3..5, &mut e).expect("string range");
        assert_eq!(sc.get(0), Some(strings[3072].as_str()), "{dev}");
        // Wrong type asked for.
        assert!(matches!(
            r.read_values::<u64>(ix("u32"), &mut e),
            Err(Error::InvalidArgument(_))
        ));
    }
}

#[test]
fn gpu_resident_columns_equal_the_cpu() {
    let Some(engine) = gpu_engine() else { return };
    let gpu = engine.gpu().expect("gpu engine");
    let dir = tmp();
    let path = dir.path().join("g.tsr");
    let n = 100_000usize;
    let vals: Vec<i32> = (0..n as i32).map(|i| (i % 1000) * 7 - 3000).collect();
    let text: Vec<u8> = lines(20_000, 12, 2).join("\n").into_bytes();
    let strings = lines(30_000, 30, 3);
    let bit_len = 100_003u64;
    let bits: Vec<u8> = (0..bit_len.div_ceil(8))
        .map(|i| if i % 5 == 0 { 0xff } else { 0 })
        .collect();
    let mut bits = bits;
    if let Some(last) = bits.last_mut() {
        *last &= (1u8 << (bit_len % 8)) - 1;
    }
    let o = ColumnOptions::auto().with_chunk_values(16384);
    let mut w = TableWriter::create(&path).expect("create");
    w.write_values("v", &vals, o).expect("v");
    w.write_bytes("lll", &text, o.with_codec(CodecId::Lll))
        .expect("lll");
    w.write_bytes("huf", &text, o.with_codec(CodecId::Huffman))
        .expect("huf");
    w.write_bytes("mixed", &text, o).expect("mixed");
    w.write_bits("bits", &bits, bit_len, o).expect("bits");
    w.write_strings("s", &strings, o).expect("s");
    w.finish().expect("finish");
    let r = TableReader::open(&path).expect("open");
    let mut cpu = Engine::cpu();
    for name in ["v", "lll", "huf", "mixed", "bits"] {
        let c = r.column_index(name).expect("column");
        let want = r.read_raw(c, &mut cpu).expect("cpu");
        let g = r.read_gpu(c, gpu).expect("gpu");
        let GpuData::Raw(buf) = &g.data else {
            panic!("{name}: not raw")
        };
        let mut got = vec![0u8; want.len()];
        gpu.download(buf, &mut got).expect("download");
        assert_eq!(got, want, "{name}");
    }
    let c = r.column_index("s").expect("s");
    let g = r.read_gpu(c, gpu).expect("gpu strings");
    let GpuData::Utf8 {
        ends,
        data,
        chunk_value_starts,
        chunk_data_starts,
    } = &g.data
    else {
        panic!("not utf8")
    };
    let mut e = vec![0u8; strings.len() * 4];
    gpu.download(ends, &mut e).expect("ends");
    let mut d = vec![0u8; *chunk_data_starts.last().expect("starts") as usize];
    gpu.download(data, &mut d).expect("data");
    let ends: Vec<u32> = e
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    for k in 0..chunk_value_starts.len() - 1 {
        let base = chunk_data_starts[k] as usize;
        for v in chunk_value_starts[k] as usize..chunk_value_starts[k + 1] as usize {
            let start = if v == chunk_value_starts[k] as usize {
                0
            } else {
                ends[v - 1] as usize
            };
            assert_eq!(
                &d[base + start..base + ends[v] as usize],
                strings[v].as_bytes(),
                "string {v}"
            );
        }
    }
}

/// The bug of issue #33: utf8 chunks cut by text bytes hold different string counts. Here the
/// 16 MiB text cap closes chunks long before 2^20 strings.
#[test]
fn utf8_chunks_of_different_counts_round_trip_through_lines() {
    let dir = tmp();
    let path = dir.path().join("lines.tsr");
    let mut rng = StdRng::seed_from_u64(33);
    let mut input = Vec::new();
    let mut count = 0u64;
    while input.len() < 40 << 20 {
        let len = rng.random_range(0..60);
        input.extend((0..len).map(|_| b'a' + rng.random_range(0..26u8)));
        input.push(b'\n');
        count += 1;
    }
    input.extend_from_slice(b"no final line feed");
    count += 1;
    let mut w = TableWriter::create(&path).expect("create");
    let mut c = w
        .utf8_column("lines", ColumnOptions::auto().with_codec(CodecId::Plain))
        .expect("column");
    c.push_lines(Cursor::new(&input), |_| {}).expect("lines");
    let s = c.finish().expect("finish column");
    w.finish().expect("finish");
    assert_eq!(s.values, count);
    assert!(s.chunks >= 3, "{} chunks", s.chunks);

    let r = TableReader::open(&path).expect("open");
    assert_eq!(
        r.container().version(),
        (1, 2),
        "varying counts need format 1.2"
    );
    let counts: Vec<u32> = r.columns()[0]
        .chunks
        .iter()
        .map(|c| c.value_count)
        .collect();
    assert!(counts.windows(2).any(|w| w[0] != w[1] && w[1] > w[0]) || counts[1] != counts[0]);
    let mut out = Vec::new();
    r.write_column(0, &mut out, &mut Engine::cpu(), |_| {})
        .expect("write");
    assert!(out == input, "line form differs");
    if let Some(mut g) = gpu_engine() {
        let mut out = Vec::new();
        r.write_column(0, &mut out, &mut g, |_| {})
            .expect("gpu write");
        assert!(out == input, "GPU line form differs");
    }
}

#[test]
fn small_utf8_columns_stay_format_1_1() {
    let dir = tmp();
    let path = dir.path().join("s.tsr");
    let mut w = TableWriter::create(&path).expect("create");
    w.write_strings("s", ["a", "b", "c"], ColumnOptions::auto())
        .expect("s");
    w.finish().expect("finish");
    assert_eq!(
        TableReader::open(&path)
            .expect("open")
            .container()
            .version(),
        (1, 1)
    );
}

#[test]
fn streaming_from_a_reader_equals_writing_from_memory() {
    let dir = tmp();
    let vals: Vec<u16> = (0..50_000u32).map(|i| (i * 13 % 4099) as u16).collect();
    let raw: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
    let a = dir.path().join("a.tsr");
    let b = dir.path().join("b.tsr");
    let o = ColumnOptions::auto().with_chunk_values(4096);
    let mut w = TableWriter::create(&a).expect("a");
    let mut c = w.column("x", LogicalType::U16, o).expect("column");
    let mut seen = 0u64;
    c.push_reader(Cursor::new(&raw), |n| seen += n)
        .expect("stream");
    c.finish().expect("finish column");
    w.finish().expect("finish");
    assert_eq!(seen, raw.len() as u64);
    let mut w = TableWriter::create(&b).expect("b");
    w.write_values("x", &vals, o).expect("values");
    w.finish().expect("finish");
    assert_eq!(std::fs::read(&a).expect("a"), std::fs::read(&b).expect("b"));
}

#[test]
fn bad_input_gives_errors_that_name_the_place() {
    let dir = tmp();
    let path = dir.path().join("c.tsr");
    let vals: Vec<u32> = (0..20_000).map(|i| i * 7).collect();
    let mut w = TableWriter::create(&path).expect("create");
    // Options checked before anything is written.
    assert!(w
        .write_values("x", &vals, ColumnOptions::auto().with_chunk_values(1000))
        .is_err());
    assert!(w
        .write_bytes("y", b"abc", ColumnOptions::auto().with_codec(CodecId::Rfor))
        .is_err());
    let mut c = w
        .column("odd", LogicalType::U32, ColumnOptions::auto())
        .expect("column");
    c.push_raw(&[1, 2, 3]).expect("buffered");
    assert!(matches!(c.finish(), Err(Error::InvalidArgument(_))));
    drop(w);
    assert!(
        !path.exists(),
        "nothing under the final name after a failed write"
    );

    let mut w = TableWriter::create(&path).expect("create");
    w.write_values(
        "x",
        &vals,
        ColumnOptions::auto()
            .with_codec(CodecId::For)
            .with_chunk_values(4096),
    )
    .expect("x");
    w.finish().expect("finish");
    let mut bytes = std::fs::read(&path).expect("read");
    // Damage the payload of chunk 1 (the second 16-aligned payload) and fix nothing else.
    let r = TableReader::open(&path).expect("open");
    let off = r.columns()[0].chunks[1].offset as usize + 20;
    bytes[off] ^= 0x40;
    let r = TableReader::from_bytes(bytes).expect("directory still valid");
    let err = r
        .read_values::<u32>(0, &mut Engine::cpu())
        .expect_err("checksum");
    assert!(matches!(err, Error::ChecksumMismatch { .. }), "{err}");
    assert!(err.to_string().contains("chunk 1"), "{err}");
}

/// Columns whose chunks decode to no bytes at all (utf8 chunks of empty strings, beside chunks
/// with text) read back on every device: a device buffer is never empty, so the GPU paths must
/// not take its length for the data's.
#[test]
fn empty_strings_and_empty_text_chunks_round_trip_on_every_device() {
    let dir = tmp();
    let path = dir.path().join("e.tsr");
    let mut strings = vec![String::new(); 3000];
    strings.extend(lines(2000, 9, 4));
    strings.extend(vec![String::new(); 1500]);
    let o = ColumnOptions::auto().with_chunk_values(1024);
    let mut w = TableWriter::create(&path).expect("create");
    w.write_strings("s", &strings, o).expect("s");
    w.write_strings("plain", &strings, o.with_codec(CodecId::Plain))
        .expect("plain");
    w.write_strings("empty", vec![String::new(); 2500], o)
        .expect("empty");
    w.finish().expect("finish");
    let r = TableReader::open(&path).expect("open");
    let mut engines = vec![Engine::cpu()];
    engines.extend(gpu_engine());
    for mut e in engines {
        let dev = e.describe();
        for name in ["s", "plain", "empty"] {
            let c = r.column_index(name).expect("column");
            let chunks = r.columns()[c].chunks.len();
            let sc = r.read_strings(c, 0..chunks, &mut e).expect("strings");
            if name == "empty" {
                assert_eq!(sc.len(), 2500, "{dev} {name}");
                assert!(sc.data.is_empty(), "{dev} {name}");
            } else {
                assert_eq!(sc.len(), strings.len(), "{dev} {name}");
                for (i, s) in strings.iter().enumerate() {
                    assert_eq!(sc.get(i), Some(s.as_str()), "{dev} {name} string {i}");
                }
            }
        }
    }
}
