//! A table's fields decoded on the GPU into Arrow's layout (`ArrowTableReader::read_gpu_arrow`)
//! (utf8 over several chunks, large_utf8, decimal, ALP Float64 and Float32 with exceptions,
//! ints, booleans, an Arrow dictionary, binary, large_binary) are, buffer by buffer, what the CPU
//! reader gives: offsets, values and validity downloaded and
//! compared exactly; then one field leaves through the Arrow C Device Data Interface. Skips with
//! a printed reason without a GPU, unless TESSERA_REQUIRE_GPU=1.

mod common;

use std::sync::Arc;

use arrow_array::types::Int16Type;
use arrow_array::*;
use arrow_buffer::NullBuffer;
use arrow_data::ArrayData;
use arrow_schema::{DataType, Field, Schema};
use tessera::arrow::{
    export_device, ArrowTableReader, ArrowTableWriter, ArrowWriteOptions, DictionaryChoice,
    FloatChoice, GpuArrowArray, Role, ARROW_DEVICE_CUDA,
};
use tessera::{Engine, Error, TableReader};
use tessera_gpu::{CudaSlice, Gpu};

fn gpu() -> Option<Gpu> {
    Gpu::new()
        .map_err(|e| tessera_gpu::testing::skipped(&e))
        .ok()
}

const ROWS: usize = 5000;

fn table() -> RecordBatch {
    let n = ROWS;
    let nulls = NullBuffer::from((0..n).map(|i| i % 7 != 3).collect::<Vec<_>>());
    let words = ["", "a", "tessera", "GPU-FOR", "ünïcødé", "x"];
    let text = |i: usize| format!("{}{}", words[i % words.len()], i * 31 % 1000);
    let utf8 = StringArray::from_iter((0..n).map(|i| (i % 11 != 5).then(|| text(i))));
    let large = LargeStringArray::from_iter_values((0..n).map(|i| text(i * 7).repeat(i % 4)));
    let dec = Decimal128Array::from_iter((0..n).map(|i| {
        (i % 13 != 0)
            .then_some((i as i128 * 1_234_567 - 4_000_000_000) * if i % 2 == 0 { 1 } else { -1 })
    }))
    .with_precision_and_scale(12, 2)
    .expect("decimal");
    // Prices with two decimals, and exceptions: NaN, -0.0, infinities, a full-precision value.
    let f64s = Float64Array::from_iter_values((0..n).map(|i| match i % 97 {
        5 => f64::NAN,
        17 => -0.0,
        23 => f64::INFINITY,
        41 => f64::NEG_INFINITY,
        60 => std::f64::consts::PI * i as f64,
        _ => (i as f64 * 37.0 % 100_000.0) / 100.0 - 250.0,
    }));
    let f32s = Float32Array::from_iter((0..n).map(|i| match i % 53 {
        7 => None,
        9 => Some(f32::NAN),
        11 => Some(-0.0),
        _ => Some((i % 5000) as f32 / 10.0),
    }));
    let ints = Int32Array::new(
        (0..n as i32).map(|i| i * 7919 - 1_000_000).collect(),
        Some(nulls),
    );
    let bools = BooleanArray::from_iter((0..n).map(|i| (i % 5 != 1).then_some(i % 3 == 0)));
    let dict: DictionaryArray<Int16Type> =
        (0..n).map(|i| (i % 9 != 2).then(|| words[i % 4])).collect();
    let blob = |i: usize| -> Vec<u8> { (0..i % 37).map(|k| (i * 13 + k) as u8).collect() };
    let binary = BinaryArray::from_iter((0..n).map(|i| (i % 6 != 4).then(|| blob(i))));
    let large_binary = LargeBinaryArray::from_iter_values((0..n).map(|i| blob(i * 3)));
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("utf8", Arc::new(utf8)),
        ("large_utf8", Arc::new(large)),
        ("decimal", Arc::new(dec)),
        ("f64", Arc::new(f64s)),
        ("f32", Arc::new(f32s)),
        ("i32", Arc::new(ints)),
        ("bool", Arc::new(bools)),
        ("dict", Arc::new(dict)),
        ("binary", Arc::new(binary)),
        ("large_binary", Arc::new(large_binary)),
    ];
    let fields: Vec<Field> = cols
        .iter()
        .map(|(name, a)| Field::new(*name, a.data_type().clone(), true))
        .collect();
    RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        cols.into_iter().map(|(_, a)| a).collect(),
    )
    .expect("batch")
}

fn bytes(gpu: &Gpu, b: &CudaSlice<u8>, len: usize) -> Vec<u8> {
    assert!(
        b.len() >= len,
        "device buffer of {} bytes, {len} needed",
        b.len()
    );
    let mut host = vec![0u8; len];
    gpu.download(b, &mut host).expect("download");
    host
}

fn bit(b: &[u8], i: usize) -> bool {
    b[i / 8] >> (i % 8) & 1 == 1
}

/// Every buffer of `g` against the CPU's `cpu` (offset 0 in both, as the reader builds them).
fn compare(gpu: &Gpu, name: &str, g: &GpuArrowArray, cpu: &ArrayData) {
    let n = cpu.len();
    assert_eq!(g.data_type, *cpu.data_type(), "{name}");
    assert_eq!(g.len as usize, n, "{name}");
    assert_eq!(cpu.offset(), 0, "{name}");
    match (cpu.nulls(), &g.validity) {
        (None, None) => {}
        (Some(nb), Some(v)) => {
            let host = bytes(gpu, v, n.div_ceil(8));
            for i in 0..n {
                assert_eq!(bit(&host, i), nb.is_valid(i), "{name} validity row {i}");
            }
        }
        (c, g) => panic!("{name}: CPU validity {}, GPU {}", c.is_some(), g.is_some()),
    }
    let bufs = cpu.buffers();
    match cpu.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => {
            let w = if matches!(cpu.data_type(), DataType::Utf8 | DataType::Binary) {
                4
            } else {
                8
            };
            let offsets = g.offsets.as_ref().expect("offsets");
            let off = bytes(gpu, offsets, (n + 1) * w);
            assert_eq!(off[..], bufs[0].as_slice()[..(n + 1) * w], "{name} offsets");
            let mut last = [0u8; 8];
            last[..w].copy_from_slice(&off[n * w..]);
            let total = u64::from_le_bytes(last) as usize;
            let text = bytes(gpu, &g.values, total);
            assert_eq!(text[..], bufs[1].as_slice()[..total], "{name} text");
        }
        DataType::Boolean => {
            let host = bytes(gpu, &g.values, n.div_ceil(8));
            let cpu_bits = BooleanArray::from(cpu.clone());
            for i in 0..n {
                assert_eq!(bit(&host, i), cpu_bits.values().value(i), "{name} row {i}");
            }
        }
        DataType::Dictionary(key, _) => {
            let w = key.primitive_width().expect("integer keys");
            let codes = bytes(gpu, &g.values, n * w);
            assert_eq!(codes[..], bufs[0].as_slice()[..n * w], "{name} codes");
            let dict = g.dictionary.as_ref().expect("dictionary values");
            compare(
                gpu,
                &format!("{name} dictionary"),
                dict,
                &cpu.child_data()[0],
            );
        }
        ty => {
            let w = ty.primitive_width().expect("fixed width");
            let host = bytes(gpu, &g.values, n * w);
            assert_eq!(host[..], bufs[0].as_slice()[..n * w], "{name} values");
        }
    }
}

fn write(path: &std::path::Path, batch: &RecordBatch) {
    let opts = ArrowWriteOptions {
        // Several chunks per column: utf8 offsets are rebased across chunks.
        chunk_rows: 1024,
        dictionary: DictionaryChoice::Never,
        floats: FloatChoice::Alp,
        ..ArrowWriteOptions::default()
    };
    let mut w = ArrowTableWriter::create(path, batch.schema(), opts).expect("writer");
    w.write(batch).expect("write");
    w.finish().expect("finish");
}

/// binary and large_binary: bytes columns of many small LLL chunks (1,024 bytes each here),
/// their u32 lengths scanned into Arrow offsets on the device.
#[test]
fn gpu_arrow_layout_of_binary_fields() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("b.tsr");
    let all = table();
    let batch = all
        .project(&(NOT_BINARY..all.num_columns()).collect::<Vec<_>>())
        .expect("project");
    write(&path, &batch);
    let t = TableReader::open(&path).expect("open");
    let r = ArrowTableReader::new(&t, None).expect("table");
    let cpu = r.read_all(&mut Engine::cpu()).expect("CPU read");
    assert_eq!(cpu.num_rows(), ROWS);
    let Some(gpu) = gpu() else { return };
    let fields = r.read_gpu_arrow(&gpu).expect("GPU read");
    for (i, g) in fields.iter().enumerate() {
        let name = cpu.schema().field(i).name().clone();
        compare(&gpu, &name, g, &cpu.column(i).to_data());
    }
}

/// A table of no rows: every field's columns have no chunks; offsets are the single 0.
#[test]
fn gpu_arrow_layout_of_an_empty_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("empty.tsr");
    write(&path, &table().slice(0, 0));
    let t = TableReader::open(&path).expect("open");
    let r = ArrowTableReader::new(&t, None).expect("table");
    let cpu = r.read_all(&mut Engine::cpu()).expect("CPU read");
    assert_eq!(cpu.num_rows(), 0);
    let Some(gpu) = gpu() else { return };
    let fields = r.read_gpu_arrow(&gpu).expect("GPU read");
    for (i, g) in fields.iter().enumerate() {
        let name = cpu.schema().field(i).name().clone();
        compare(&gpu, &name, g, &cpu.column(i).to_data());
    }
}

/// The fields of `table()` before the two binary ones.
const NOT_BINARY: usize = 8;

#[test]
fn gpu_arrow_layout_matches_the_cpu_reader_buffer_for_buffer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.tsr");
    let batch = table()
        .project(&(0..NOT_BINARY).collect::<Vec<_>>())
        .expect("project");
    write(&path, &batch);

    let t = TableReader::open(&path).expect("open");
    let r = ArrowTableReader::new(&t, None).expect("table");
    let cpu = r.read_all(&mut Engine::cpu()).expect("CPU read");
    assert_eq!(cpu.num_rows(), ROWS);
    // The stored forms the kernels rearrange: utf8 in several chunks, both floats as ALP.
    let fields_meta = &r.table_meta().fields;
    let utf8_values = fields_meta[0].column(Role::Values).expect("utf8 values");
    assert!(t.columns()[utf8_values].chunks.len() > 1);
    for f in &fields_meta[3..5] {
        assert!(f.column(Role::AlpParams).is_some(), "{} is not ALP", f.name);
    }
    // The table and its CPU reading above run everywhere; the GPU part needs a device.
    let Some(gpu) = gpu() else { return };
    let fields = r.read_gpu_arrow(&gpu).expect("GPU read");
    assert_eq!(fields.len(), cpu.num_columns());
    for (i, g) in fields.iter().enumerate() {
        let name = cpu.schema().field(i).name().clone();
        compare(&gpu, &name, g, &cpu.column(i).to_data());
    }

    // The decimal field through the C Device Data Interface: CUDA, two buffers (validity and
    // values, both present); release frees them and marks the array released.
    let mut fields = fields;
    let dec = fields.remove(2);
    let first_values = {
        let mut host = [0u8; 16];
        gpu.download(&dec.values, &mut host).expect("download");
        host
    };
    let (mut exported, schema) = export_device(&gpu, dec, "decimal").expect("export");
    assert_eq!(schema.format(), "d:12,2");
    assert_eq!(exported.device_type, ARROW_DEVICE_CUDA);
    assert!(exported.sync_event.is_null());
    let a = &mut exported.array;
    assert_eq!((a.length, a.n_buffers, a.offset), (ROWS as i64, 2, 0));
    // SAFETY: an exported array's buffer table holds n_buffers entries.
    let b = unsafe { std::slice::from_raw_parts(a.buffers, 2) };
    assert!(!b[0].is_null() && !b[1].is_null());
    let cpu_dec = cpu.column(2).to_data();
    assert_eq!(first_values[..], cpu_dec.buffers()[0].as_slice()[..16]);
    let release = a.release.expect("unreleased");
    // SAFETY: the array was exported above and not yet released.
    unsafe { release(a) };
    assert!(a.is_released());
}

/// Params, exception rows, exception bits, and whether the CPU accepts them.
type AlpCase = (Vec<u16>, Vec<u64>, Vec<u64>, bool);

/// Hostile ALP columns (what no writer writes) fail on the GPU with the CPU's error variant;
/// a hand-built valid one decodes to the CPU's bits.
#[test]
fn hostile_alp_columns_fail_on_the_gpu_as_on_the_cpu() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.tsr");
    let digits: Vec<i64> = (0..1500).map(|d| d * 7 - 3000).collect();
    let mut cases: Vec<AlpCase> = vec![
        // Valid: e = 2, f = 0, then e = 3, f = 1; two exceptions.
        (
            vec![2, 0x0103],
            vec![7, 1499],
            vec![f64::NAN.to_bits(), (-0.0f64).to_bits()],
            true,
        ),
    ];
    // f above e, e above the type's limit.
    for bad in [0x0302u16, 19] {
        cases.push((vec![2, bad], vec![], vec![], false));
    }
    // Exception rows that do not ascend, or reach past the table.
    for rows in [[9u64, 9], [9, 3], [9, 1500]] {
        cases.push((vec![2, 2], rows.to_vec(), vec![0, 0], false));
    }
    let gpu = gpu();
    for (params, rows, bits, valid) in cases {
        common::alp_file(&path, &digits, &params, &rows, &bits);
        let t = TableReader::open(&path).expect("open");
        let r = ArrowTableReader::new(&t, None).expect("table");
        let cpu = r.read_all(&mut Engine::cpu());
        assert_eq!(cpu.is_ok(), valid, "{params:?} {rows:?}");
        let Some(gpu) = gpu.as_ref() else { continue };
        let got = r.read_gpu_arrow(gpu);
        match (cpu, got) {
            (Ok(cpu), Ok(g)) => compare(gpu, "x", &g[0], &cpu.column(0).to_data()),
            (Err(Error::ValueOutOfRange { .. }), Err(Error::ValueOutOfRange { .. })) => {}
            (c, g) => panic!("{params:?} {rows:?}: CPU {c:?}, GPU {g:?}"),
        }
    }
}

/// Run-encoded fields of every width expanded by one launch (`expand_runs_many`, what
/// `read_gpu` uses) give what each gives expanded alone and what the runs say; a field with
/// faulty ends fails in its own status word (the lowest faulty run), the others unharmed.
#[test]
fn runs_of_many_fields_expand_in_one_launch() {
    use tessera_gpu::arrow_layout::{expand_runs, expand_runs_many, RunField};
    let Some(gpu) = gpu() else {
        return;
    };
    let n = 3000u64;
    let le = |w: usize, v: &[u64]| -> Vec<u8> {
        v.iter()
            .flat_map(|x| x.to_le_bytes()[..w].to_vec())
            .collect()
    };
    let ascending = |runs: u64| (1..=runs).map(|i| i * n / runs).collect::<Vec<u64>>();
    // (width, run values, run ends, faulty)
    let cases: Vec<(usize, Vec<u64>, Vec<u64>, bool)> = vec![
        (1, vec![1, 2, 3], vec![10, 2000, 3000], false),
        (2, (0..50).map(|i| i * 1000).collect(), ascending(50), false),
        (4, vec![7], vec![3000], false),
        (4, vec![1, 2, 3], vec![10, 10, 3000], true),
        (
            8,
            (0..3000).map(|i| i << 40).collect(),
            ascending(3000),
            false,
        ),
        (8, vec![5, 6], vec![10, 2999], true),
    ];
    let bufs: Vec<(CudaSlice<u8>, CudaSlice<u8>)> = cases
        .iter()
        .map(|(w, v, e, _)| {
            (
                gpu.upload(&le(*w, v)).expect("values"),
                gpu.upload(&le(8, e)).expect("ends"),
            )
        })
        .collect();
    let fields: Vec<RunField<'_>> = cases
        .iter()
        .zip(&bufs)
        .map(|((w, _, e, _), (v, d))| RunField {
            values: v,
            ends: d,
            runs: e.len() as u64,
            width: *w,
            n,
        })
        .collect();
    let (outs, check) = expand_runs_many(&gpu, &fields).expect("queued");
    let check = check.expect("a status word a field");
    let read = gpu.read_back_parts(&[check.part(&gpu)]).expect("read back");
    let verdicts = check.verdicts(&read[0]);
    assert_eq!((outs.len(), verdicts.len()), (cases.len(), cases.len()));
    for (i, ((w, v, e, faulty), verdict)) in cases.iter().zip(verdicts).enumerate() {
        let alone = expand_runs(&gpu, &bufs[i].0, &bufs[i].1, e.len() as u64, *w, n);
        if *faulty {
            assert!(
                matches!(verdict, Err(Error::ValueOutOfRange { .. })),
                "field {i}: {verdict:?}"
            );
            assert!(
                matches!(alone, Err(Error::ValueOutOfRange { .. })),
                "field {i}"
            );
            continue;
        }
        verdict.expect("good runs");
        let mut want = Vec::new();
        let mut at = 0u64;
        for (x, &end) in v.iter().zip(e) {
            for _ in at..end {
                want.push(*x);
            }
            at = end;
        }
        let want = le(*w, &want);
        let alone = alone.expect("alone");
        assert_eq!(bytes(&gpu, &outs[i], want.len()), want, "field {i}");
        assert_eq!(bytes(&gpu, &alone, want.len()), want, "field {i} alone");
    }
}

/// One launch copies byte ranges of several buffers into buffers of their own: ranges at every
/// alignment (16-, 8-, 4-byte and odd starts and lengths, empty ones) come out byte for byte, and
/// a range past its buffer is refused on the host before anything is queued.
#[test]
fn byte_ranges_copy_out_in_one_launch() {
    use tessera_gpu::arrow_layout::{copy_parts_queued, CopyPart};
    let Some(gpu) = gpu() else {
        return;
    };
    let a: Vec<u8> = (0..70_001u32).map(|i| (i * 7 + i / 251) as u8).collect();
    let b: Vec<u8> = (0..333u32).map(|i| (i * 13 + 5) as u8).collect();
    let (da, db) = (gpu.upload(&a).expect("a"), gpu.upload(&b).expect("b"));
    let cuts: Vec<(bool, usize, usize)> = vec![
        (true, 0, 40_000),
        (true, 40_000, 16),
        (true, 40_016, 8),
        (true, 40_024, 4),
        (true, 40_028, 29_973),
        (true, 70_001, 0),
        (false, 0, 333),
        (false, 3, 1),
        (false, 5, 301),
    ];
    let parts: Vec<CopyPart<'_>> = cuts
        .iter()
        .map(|&(in_a, at, len)| CopyPart {
            src: if in_a { &da } else { &db },
            at,
            len,
        })
        .collect();
    let (outs, check) = copy_parts_queued(&gpu, &parts).expect("queued");
    let q = check.expect("a status word");
    let read = gpu.read_back_parts(&[q.part(&gpu)]).expect("read back");
    for v in q.verdicts(&read[0]) {
        v.expect("every range fits");
    }
    assert_eq!(outs.len(), cuts.len());
    for (&(in_a, at, len), out) in cuts.iter().zip(&outs) {
        let src = if in_a { &a } else { &b };
        assert_eq!(bytes(&gpu, out, len), src[at..at + len], "{at} + {len}");
    }
    let past = [CopyPart {
        src: &db,
        at: 300,
        len: 34,
    }];
    assert!(matches!(
        copy_parts_queued(&gpu, &past),
        Err(Error::InvalidArgument(_))
    ));
}

/// The utf8 check of a read (`arrow_layout::check_utf8`) says what `std::str::from_utf8` says
/// of every string: texts of valid characters of every length and of hostile bytes (stray
/// continuations, overlong forms, surrogates, leads past U+10FFFF or with too few
/// continuations), cut into strings at any byte, in chunks of their own; a fault is reported at
/// the lowest chunk that holds a string that is not UTF-8.
#[test]
fn utf8_check_agrees_with_std_on_hostile_text() {
    use tessera_gpu::arrow_layout::{check_utf8, chunk_of, UTF8_TEXT};
    let Some(gpu) = gpu() else {
        return;
    };
    let valid: [&str; 10] = [
        "a",
        "Z~",
        "é",
        "€",
        "𝄞",
        "\u{7ff}",
        "\u{800}",
        "\u{ffff}",
        "\u{10000}",
        "\u{10ffff}",
    ];
    let hostile: [&[u8]; 12] = [
        &[0x80],
        &[0xBF],
        &[0xC0, 0x80],
        &[0xC1, 0xBF],
        &[0xE0, 0x80, 0x80],
        &[0xED, 0xA0, 0x80],
        &[0xF0, 0x80, 0x80, 0x80],
        &[0xF4, 0x90, 0x80, 0x80],
        &[0xF5, 0x80, 0x80, 0x80],
        &[0xFF],
        &[0xE2, 0x82],
        &[0xF0, 0x9D, 0x84],
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let (mut clean, mut faulty) = (0, 0);
    for trial in 0..400 {
        // A third of the trials only valid characters cut between them; the others add hostile
        // bytes and cut anywhere.
        let bad = trial % 3 != 0;
        let (mut text, mut ends) = (Vec::<u8>::new(), Vec::<u32>::new());
        let (mut value_starts, mut text_sizes) = (vec![0u64], Vec::<u64>::new());
        let mut strings: Vec<(usize, usize)> = Vec::new();
        for _ in 0..1 + next(5) {
            let chunk_start = text.len();
            let count = if next(6) == 0 { 0 } else { 1 + next(12) };
            let mut cuts = Vec::new();
            if count > 0 {
                for _ in 0..1 + next(40) {
                    if bad && next(10) == 0 {
                        text.extend_from_slice(hostile[next(hostile.len())]);
                    } else {
                        text.extend_from_slice(valid[next(valid.len())].as_bytes());
                    }
                    cuts.push(text.len() - chunk_start);
                }
                let size = text.len() - chunk_start;
                let mut ends_here: Vec<usize> = (0..count - 1)
                    .map(|_| {
                        if bad {
                            next(size + 1)
                        } else {
                            cuts[next(cuts.len())]
                        }
                    })
                    .collect();
                ends_here.sort_unstable();
                ends_here.push(size);
                let mut start = 0;
                for e in ends_here {
                    ends.push(e as u32);
                    strings.push((chunk_start + start, chunk_start + e));
                    start = e;
                }
            }
            text_sizes.push((text.len() - chunk_start) as u64);
            value_starts.push(ends.len() as u64);
        }
        if ends.is_empty() {
            continue;
        }
        let expected = strings
            .iter()
            .position(|&(a, b)| std::str::from_utf8(&text[a..b]).is_err())
            .map(|i| chunk_of(&value_starts, i as u64));
        let ends_bytes: Vec<u8> = ends.iter().flat_map(|e| e.to_le_bytes()).collect();
        let d_ends = gpu.upload(&ends_bytes).expect("ends");
        let d_text = gpu.upload(&text).expect("text");
        let n = ends.len() as u64;
        let got = check_utf8(&gpu, &d_ends, n, &value_starts, &text_sizes, &d_text);
        match (expected, got) {
            (None, Ok(())) => clean += 1,
            (Some(k), Err(Error::ValueOutOfRange { index, ty, .. })) if ty == UTF8_TEXT => {
                assert_eq!(chunk_of(&value_starts, index), k, "trial {trial}");
                faulty += 1;
            }
            (e, g) => panic!("trial {trial}: expected a fault in chunk {e:?}, got {g:?}"),
        }
    }
    println!("utf8 check: {clean} clean texts accepted, {faulty} faulty ones placed");
    assert!(
        clean > 100 && faulty > 100,
        "{clean} clean, {faulty} faulty"
    );
}

/// The dictionary code check (`arrow_layout::check_codes_many`) finds, per field, the lowest
/// valid row whose code is negative or not below the dictionary's count, for codes of every
/// width, signed and unsigned, with and without validity, many fields in one launch.
#[test]
fn dictionary_codes_are_checked_field_by_field() {
    use tessera_gpu::arrow_layout::{check_codes_many, CodeField};
    let Some(gpu) = gpu() else {
        return;
    };
    let rows = 3000usize;
    let mut specs = Vec::new();
    for (f, &(width, signed)) in [
        (1, false),
        (1, true),
        (2, false),
        (4, true),
        (8, false),
        (8, true),
    ]
    .iter()
    .enumerate()
    {
        for (bad_at, nullable) in [
            (None, false),
            (Some(2999usize), false),
            (Some(17 + f), true),
        ] {
            let dict_count = 5 + 7 * f as u64;
            let mut codes: Vec<i64> = (0..rows)
                .map(|i| ((i * 31 + f) as u64 % dict_count) as i64)
                .collect();
            let valid: Vec<bool> = (0..rows).map(|i| !nullable || i % 5 != 1).collect();
            // Bad codes on null rows are ignored; one bad code on a valid row is the fault.
            codes[1] = -1;
            codes[6] = dict_count as i64;
            if let Some(r) = bad_at {
                codes[r] = if signed { -3 } else { dict_count as i64 };
            }
            let expected =
                (0..rows).find(|&i| valid[i] && (codes[i] < 0 || codes[i] as u64 >= dict_count));
            let bytes: Vec<u8> = codes
                .iter()
                .flat_map(|&c| c.to_le_bytes()[..width].to_vec())
                .collect();
            let mut bits = vec![0u8; rows.div_ceil(8)];
            for (i, _) in valid.iter().enumerate().filter(|(_, v)| **v) {
                bits[i / 8] |= 1 << (i % 8);
            }
            specs.push((width, signed, nullable, dict_count, bytes, bits, expected));
        }
    }
    let uploaded: Vec<_> = specs
        .iter()
        .map(|s| {
            (
                gpu.upload(&s.4).expect("codes"),
                gpu.upload(&s.5).expect("validity"),
            )
        })
        .collect();
    let fields: Vec<CodeField<'_>> = specs
        .iter()
        .zip(&uploaded)
        .map(|(s, (codes, validity))| CodeField {
            codes,
            width: s.0,
            signed: s.1,
            validity: s.2.then_some(validity),
            rows: rows as u64,
            dict_count: s.3,
        })
        .collect();
    let q = check_codes_many(&gpu, &fields)
        .expect("queued")
        .expect("a status word a field");
    let read = gpu.read_back_parts(&[q.part(&gpu)]).expect("read back");
    let verdicts = q.verdicts(&read[0]);
    assert_eq!(verdicts.len(), specs.len());
    let mut faults = 0;
    for (s, v) in specs.iter().zip(verdicts) {
        match (s.6, v) {
            (None, Ok(())) => {}
            (Some(row), Err(Error::InvalidArgument(m))) => {
                assert!(m.starts_with(&format!("row {row}:")), "{m}");
                faults += 1;
            }
            (e, v) => panic!("width {} signed {}: expected {e:?}, got {v:?}", s.0, s.1),
        }
    }
    assert!(faults >= 12, "{faults} faults found");
}

/// The binary lengths check (`arrow_layout::check_lengths_many`) sums each field's lengths
/// across many thread blocks and flags exactly the fields whose lengths sum past the bytes
/// stored (one past, far past), not those that sum to them or below.
#[test]
fn binary_lengths_are_summed_field_by_field() {
    use tessera_gpu::arrow_layout::{check_lengths_many, LengthsField};
    let Some(gpu) = gpu() else {
        return;
    };
    let sizes = [0usize, 1, 255, 256, 257, 100_000, 1_000_003];
    let lengths: Vec<Vec<u32>> = sizes
        .iter()
        .map(|&n| (0..n as u32).map(|i| i % 97 + (i >> 13)).collect())
        .collect();
    let sums: Vec<u64> = lengths
        .iter()
        .map(|l| l.iter().map(|&x| u64::from(x)).sum())
        .collect();
    let uploaded: Vec<_> = lengths
        .iter()
        .map(|l| {
            let b: Vec<u8> = l.iter().flat_map(|x| x.to_le_bytes()).collect();
            gpu.upload(&b).expect("lengths")
        })
        .collect();
    let mut fields = Vec::new();
    let mut expect_fault = Vec::new();
    for (k, d) in uploaded.iter().enumerate() {
        for stored in [sums[k] + 5, sums[k], sums[k].wrapping_sub(1), sums[k] / 2] {
            if stored > sums[k] + 5 {
                continue; // an empty field has nothing to sum past
            }
            fields.push(LengthsField {
                lengths: d,
                rows: sizes[k] as u64,
                bytes: stored,
            });
            expect_fault.push(sums[k] > stored);
        }
    }
    let q = check_lengths_many(&gpu, &fields)
        .expect("queued")
        .expect("a status word a field");
    let read = gpu.read_back_parts(&[q.part(&gpu)]).expect("read back");
    let verdicts = q.verdicts(&read[0]);
    assert_eq!(verdicts.len(), fields.len());
    for ((f, fault), v) in fields.iter().zip(&expect_fault).zip(verdicts) {
        assert_eq!(
            v.is_err(),
            *fault,
            "{} rows, {} bytes: {v:?}",
            f.rows,
            f.bytes
        );
    }
    assert!(expect_fault.iter().filter(|&&f| f).count() >= 10);
}

/// Uploads staged through the handle's page-locked buffer (`Gpu::stage_uploads`) arrive byte
/// for byte: many small ones, one larger than the buffer first allocated (it grows) and enough
/// in all to wrap around it (the host waits before writing bytes a queued copy still reads).
#[test]
fn staged_uploads_arrive_intact() {
    let Some(gpu) = gpu() else {
        return;
    };
    let sources: Vec<Vec<u8>> = [1usize, 7, 4096, 100_000, 3 << 20, 9 << 20, 5 << 20, 6 << 20]
        .iter()
        .enumerate()
        .map(|(k, &n)| (0..n).map(|i| (i * 31 + k * 7 + i / 4093) as u8).collect())
        .collect();
    let staged = gpu.stage_uploads();
    let mut on_device = Vec::new();
    for round in 0..3 {
        for s in &sources {
            on_device.push((round, gpu.upload(s).expect("staged upload")));
        }
    }
    drop(staged);
    gpu.synchronize().expect("sync");
    for (i, (_, d)) in on_device.iter().enumerate() {
        let s = &sources[i % sources.len()];
        assert_eq!(&bytes(&gpu, d, s.len()), s, "upload {i}");
    }
}

/// Uploads staged after `Gpu::reserve_staging` arrive byte for byte: a reservation larger than
/// the buffer replaces it, one that does not fit its free tail starts it over (after the
/// copies queued from it are done), and uploads beyond what was reserved still wrap safely.
#[test]
fn reserved_staging_keeps_uploads_intact() {
    let Some(gpu) = gpu() else {
        return;
    };
    let sources: Vec<Vec<u8>> = [3usize, 5000, 2 << 20, 700_001, 6 << 20]
        .iter()
        .enumerate()
        .map(|(k, &n)| (0..n).map(|i| (i * 13 + k * 5 + i / 997) as u8).collect())
        .collect();
    let total: usize = sources.iter().map(Vec::len).sum();
    let staged = gpu.stage_uploads();
    let mut on_device = Vec::new();
    for reserve in [total + (1 << 20), total / 2, 64 << 20, 0] {
        gpu.reserve_staging(reserve).expect("reserve");
        for s in &sources {
            on_device.push(gpu.upload(s).expect("staged upload"));
        }
    }
    drop(staged);
    gpu.synchronize().expect("sync");
    for (i, d) in on_device.iter().enumerate() {
        let s = &sources[i % sources.len()];
        assert_eq!(&bytes(&gpu, d, s.len()), s, "upload {i}");
    }
}

/// Words uploaded from several pieces (`Gpu::upload_words`, what the integer decoder's
/// prepared upload does with a column's chunk payloads) arrive back to back, byte for byte,
/// staged (small and large, past the staging buffer's free tail) or not; pieces that are not
/// whole words, or not the words announced, are refused.
#[test]
fn words_from_pieces_arrive_back_to_back() {
    let Some(gpu) = gpu() else {
        return;
    };
    let file: Vec<u8> = (0..(12usize << 20))
        .map(|i| (i * 7 + i / 251) as u8)
        .collect();
    let cases: [&[(usize, usize)]; 3] = [
        &[(4, 8), (100, 40), (0, 4)],
        &[(1 << 20, 3 << 20), (16, 2 << 20), (9 << 20, 4096)],
        &[(0, 0), (8, 5 << 20), (0, 0)],
    ];
    for staged in [false, true] {
        let guard = staged.then(|| gpu.stage_uploads());
        let mut out = Vec::new();
        for pieces in cases {
            let refs: Vec<&[u8]> = pieces.iter().map(|&(at, n)| &file[at..at + n]).collect();
            let want: Vec<u8> = refs.concat();
            let words = gpu
                .upload_words(&refs, want.len() / 4)
                .expect("upload words");
            out.push((words, want));
        }
        drop(guard);
        gpu.synchronize().expect("sync");
        for (i, (words, want)) in out.iter().enumerate() {
            let mut got = vec![0u32; want.len() / 4];
            gpu.download(words, &mut got).expect("download");
            let got: Vec<u8> = got.iter().flat_map(|w| w.to_le_bytes()).collect();
            assert!(got == *want, "case {i} staged {staged}");
        }
    }
    assert!(gpu.upload_words(&[&file[..6]], 1).is_err());
    assert!(gpu.upload_words(&[&file[..8]], 3).is_err());
}

/// The fields of one read share device buffers: the columns of a batch (ints of one type,
/// utf8 offsets and text) are views of the batch's decoded buffer, bitmaps that do not start
/// on 8 bytes are copied out. Each field stays intact whatever the order its siblings are
/// dropped, exported or released in (memcheck over this test shows no access to freed memory).
#[test]
fn fields_sharing_a_buffer_outlive_their_siblings_in_any_order() {
    let n = ROWS;
    let nulls = |k: usize| NullBuffer::from((0..n).map(|i| i % k != 1).collect::<Vec<_>>());
    let i32s = |m: i32, k: usize| {
        Arc::new(Int32Array::new(
            (0..n as i32).map(|i| i.wrapping_mul(m) - 77).collect(),
            Some(nulls(k)),
        )) as ArrayRef
    };
    let text = |m: usize| {
        Arc::new(StringArray::from_iter(
            (0..n).map(|i| (i % 9 != 4).then(|| format!("v{}", i * m % 613))),
        )) as ArrayRef
    };
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("a", i32s(7919, 7)),
        ("b", i32s(31, 5)),
        ("c", i32s(-3, 3)),
        (
            "d",
            Arc::new(Int64Array::from_iter_values(
                (0..n as i64).map(|i| i * 1_000_003),
            )),
        ),
        ("s", text(17)),
        ("t", text(5)),
    ];
    let fields: Vec<Field> = cols
        .iter()
        .map(|(name, a)| Field::new(*name, a.data_type().clone(), true))
        .collect();
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        cols.into_iter().map(|(_, a)| a).collect(),
    )
    .expect("batch");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("shared.tsr");
    write(&path, &batch);
    let t = TableReader::open(&path).expect("open");
    let r = ArrowTableReader::new(&t, None).expect("table");
    let cpu = r.read_all(&mut Engine::cpu()).expect("CPU read");
    let Some(gpu) = gpu() else { return };
    let fields = r.read_gpu_arrow(&gpu).expect("GPU read");
    let names: Vec<String> = (0..cpu.num_columns())
        .map(|i| cpu.schema().field(i).name().clone())
        .collect();
    // The int32 fields' values and both utf8 fields' text are views of their batch's buffer.
    for i in [0, 1, 2, 4, 5] {
        assert!(fields[i].values.is_view(), "{} values not a view", names[i]);
    }
    // 5,000 rows of bits are 625 bytes: the first bitmap of the batch is a view of its buffer,
    // the second and third start off 8 bytes and are copied out, into the copy launch's own
    // allocation.
    let validity = |i: usize| fields[i].validity.as_ref().expect("validity");
    assert!(validity(0).is_view());
    assert!(validity(1).shares_arena_with(validity(2)));
    assert!(!validity(1).shares_arena_with(validity(0)));
    let mut live: Vec<(usize, GpuArrowArray)> = fields.into_iter().enumerate().collect();
    let check = |live: &[(usize, GpuArrowArray)]| {
        for (i, g) in live {
            compare(&gpu, &names[*i], g, &cpu.column(*i).to_data());
        }
    };
    check(&live);
    // Drop a middle sibling, export one and keep it, drop the first, release the export, drop
    // the rest one by one: every field left reads what the CPU reads after each step.
    live.remove(1);
    check(&live);
    let (_, s) = live.remove(3);
    let (mut exported, _) = export_device(&gpu, s, "s").expect("export");
    check(&live);
    live.remove(0);
    check(&live);
    let release = exported.array.release.expect("unreleased");
    // SAFETY: the array was exported above and not yet released.
    unsafe { release(&mut exported.array) };
    assert!(exported.array.is_released());
    check(&live);
    while !live.is_empty() {
        live.remove(live.len() / 2);
        check(&live);
    }
}
