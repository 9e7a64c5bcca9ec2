//! `tessera_orc::gpu::read_device`: ORC files to GPU-resident Arrow arrays (Arrow's layout
//! built on the device by `tessera_gpu::orc_layout`). Downloaded, every column equals the CPU
//! path's arrays of that column, stripe by stripe, on every test file (pyarrow- and
//! Apache-ORC-written, nulls in every type); the layout kernels refuse hostile column stripes with a
//! typed error. Skips with a printed reason without a GPU (TESSERA_REQUIRE_GPU=1 makes that a
//! failure).

use arrow_array::{Array, ArrayRef};
use tessera::arrow::GpuArrowArray;
use tessera_gpu::arrow_layout::device_address;
use tessera_gpu::orc_layout::{self, ColumnStripe, Scatter};
use tessera_gpu::testing::gpu;
use tessera_gpu::{CudaSlice, Gpu};
use tessera_orc::gpu::{download_array, read_device, read_device_staged};
use tessera_orc::{OrcFile, OrcReader, OrcType};

mod common;
use common::{dir, orc_file_names};

fn down(g: &Gpu, b: &CudaSlice<u8>) -> Vec<u8> {
    let mut v = vec![0u8; b.len()];
    g.download(b, &mut v).expect("download");
    v
}

fn to_host(g: &Gpu, a: &GpuArrowArray) -> ArrayRef {
    download_array(g, a).expect("a valid Arrow array")
}

/// The columns the device builds (decimals and nested types stay on the CPU path).
fn device_columns(f: &OrcFile) -> Vec<String> {
    f.columns()
        .iter()
        .filter(|c| !matches!(c.ty, OrcType::Decimal { .. } | OrcType::Unsupported(_)))
        .map(|c| c.name.clone())
        .collect()
}

#[test]
fn device_arrays_equal_cpu_arrays_on_every_test_file() {
    let Some(g) = gpu() else { return };
    let names = orc_file_names();
    let mut checked = 0;
    let mut nulls_seen = 0u64;
    for name in &names {
        let Ok(f) = OrcFile::open(&dir().join(name)) else {
            continue; // the files the reader refuses are covered by orc_files.rs
        };
        let cols = device_columns(&f);
        if cols.is_empty() {
            continue;
        }
        let r = OrcReader::new(&f, Some(&cols)).expect("reader");
        let Ok(cpu) = r.read_all() else {
            // Files the CPU path refuses (e.g. another writer time zone): the device too.
            assert!(
                read_device(g, &r).is_err(),
                "{name}: the device accepted it"
            );
            continue;
        };
        let (dev, rep) = read_device(g, &r).unwrap_or_else(|e| panic!("{name}: device: {e}"));
        assert_eq!(dev.len(), cols.len(), "{name}");
        for (k, d) in dev.iter().enumerate() {
            assert_eq!(d.name, cols[k], "{name}");
            let host = to_host(g, &d.array);
            assert_eq!(host.null_count() as u64, d.null_count, "{name} {}", d.name);
            nulls_seen += d.null_count;
            let mut at = 0usize;
            for (s, b) in cpu.iter().enumerate() {
                let want = b.column(k);
                let got = host.slice(at, want.len());
                assert_eq!(got.data_type(), want.data_type(), "{name} {}", d.name);
                assert_eq!(
                    got.to_data(),
                    want.to_data(),
                    "{name} column {} stripe {s}",
                    d.name
                );
                at += want.len();
            }
            assert_eq!(at, host.len(), "{name} {}", d.name);
        }
        eprintln!("{name}: {} columns, {rep:?}", dev.len());
        checked += 1;
    }
    assert!(checked >= 10, "{checked} files checked");
    assert!(nulls_seen > 0, "the test files have nulls");
}

#[test]
fn staged_upload_gives_the_same_arrays() {
    let Some(g) = gpu() else { return };
    let f = OrcFile::open(&dir().join("pyarrow-0.12-zlib.orc")).expect("file");
    let cols = device_columns(&f);
    let r = OrcReader::new(&f, Some(&cols)).expect("reader");
    let (a, _) = read_device(g, &r).expect("pageable");
    let mut host = g.alloc_pinned(f.bytes().len()).expect("pinned");
    host.as_mut_slice()
        .expect("pinned")
        .copy_from_slice(f.bytes());
    let (b, _) = read_device_staged(g, &r, &host).expect("pinned");
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(
            to_host(g, &x.array).to_data(),
            to_host(g, &y.array).to_data()
        );
    }
    let short = g.alloc_pinned(4).expect("pinned");
    assert!(read_device_staged(g, &r, &short).is_err());
}

#[test]
fn device_arrays_match_the_cpu_verdict_on_hostile_streams() {
    let Some(g) = gpu() else { return };
    for name in ["pyarrow-0.12-zlib.orc", "pyarrow-0.12-uncompressed.orc"] {
        let b = std::fs::read(dir().join(name)).expect("file");
        let f = OrcFile::from_bytes(b.clone()).expect("open");
        let l = f.stripe_layout(0).expect("layout");
        let mut tried = 0;
        for key in l.streams.keys() {
            let r = l.streams[key].clone();
            if r.is_empty() {
                continue;
            }
            for at in [r.start, r.start + r.len() / 2, r.end - 1] {
                let mut c = b.clone();
                c[at] ^= 0x5a;
                let Ok(f) = OrcFile::from_bytes(c) else {
                    continue;
                };
                let cols = device_columns(&f);
                let Ok(rd) = OrcReader::new(&f, Some(&cols)) else {
                    continue;
                };
                tried += 1;
                match (rd.read_all(), read_device(g, &rd)) {
                    (Ok(cpu), Ok((dev, _))) => {
                        for (k, d) in dev.iter().enumerate() {
                            let host = to_host(g, &d.array);
                            let mut at = 0;
                            for bt in &cpu {
                                let want = bt.column(k);
                                assert_eq!(
                                    host.slice(at, want.len()).to_data(),
                                    want.to_data(),
                                    "{name} {key:?} byte {at}"
                                );
                                at += want.len();
                            }
                        }
                    }
                    (Err(_), Err(_)) => {}
                    (a, b) => panic!(
                        "{name} {key:?} byte {at}: cpu {:?} device {:?}",
                        a.err(),
                        b.err()
                    ),
                }
            }
        }
        assert!(tried > 10, "{name}: {tried} damaged files");
    }
}

/// Device buffers of a hand-made column and column stripes pointing into them.
struct Bufs {
    keep: Vec<CudaSlice<u8>>,
}

impl Bufs {
    fn put(&mut self, g: &Gpu, bytes: &[u8]) -> u64 {
        let b = g.upload(bytes).expect("upload");
        let p = device_address(g, &b);
        self.keep.push(b);
        p
    }
    fn ints(&mut self, g: &Gpu, v: &[i64]) -> u64 {
        let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.put(g, &b)
    }
}

fn part(row_start: u64, rows: u64) -> ColumnStripe {
    ColumnStripe {
        row_start,
        rows,
        ..ColumnStripe::default()
    }
}

fn i32s(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4)
        .map(|w| i32::from_le_bytes(w.try_into().expect("4")))
        .collect()
}

#[test]
fn layout_kernels_scatter_and_gather_across_column_stripes() {
    let Some(g) = gpu() else { return };
    let mut m = Bufs { keep: Vec::new() };
    // ColumnStripe 0: 10 rows, PRESENT 1011_0111 11 -> 8 valid; column stripe 1: 5 rows, no PRESENT.
    let p0 = m.put(g, &[0b1011_0111, 0b1100_0000]);
    let v0 = m.ints(g, &[1, -2, 3, 4, 5, 6, 7, -128]);
    let v1 = m.ints(g, &[10, 20, 30, 40, 50]);
    let parts = [
        ColumnStripe {
            present: p0,
            present_len: 2,
            values: v0,
            values_len: 8,
            ..part(0, 10)
        },
        ColumnStripe {
            values: v1,
            values_len: 5,
            ..part(10, 5)
        },
    ];
    // SAFETY: every address is a live buffer of `m` of at least the given length.
    let v = unsafe { orc_layout::validity(g, &parts, 15) }.expect("validity");
    assert_eq!(v.null_count, 2);
    let bits = down(g, &v.bits);
    let valid: Vec<bool> = (0..15).map(|i| bits[i / 8] >> (i % 8) & 1 == 1).collect();
    let want_valid = [
        true, false, true, true, false, true, true, true, true, true, true, true, true, true, true,
    ];
    assert_eq!(valid, want_valid);
    let out = down(g, &orc_layout::scatter(g, &v, Scatter::I8).expect("i8"));
    assert_eq!(
        out[..15].iter().map(|&b| b as i8).collect::<Vec<_>>(),
        [1, 0, -2, 3, 0, 4, 5, 6, 7, -128, 10, 20, 30, 40, 50]
    );
    let out = down(g, &orc_layout::scatter(g, &v, Scatter::I32).expect("i32"));
    assert_eq!(
        i32s(&out)[..15],
        [1, 0, -2, 3, 0, 4, 5, 6, 7, -128, 10, 20, 30, 40, 50]
    );

    // Strings: column stripe 0 direct (lengths, bytes), column stripe 1 a dictionary of 3 entries.
    let l0 = m.ints(g, &[1, 0, 2, 1, 1, 3, 1, 2]);
    let d0 = m.put(g, b"abcdefghijkl");
    let ids = m.ints(g, &[2, 0, 1, 2, 2]);
    let dl = m.ints(g, &[2, 1, 3]);
    let dd = m.put(g, b"xxyzzz");
    let parts = [
        ColumnStripe {
            present: p0,
            present_len: 2,
            values: l0,
            values_len: 8,
            aux: d0,
            aux_len: 12,
            ..part(0, 10)
        },
        ColumnStripe {
            values: ids,
            values_len: 5,
            aux: dd,
            aux_len: 6,
            dict: dl,
            dict_len: 3,
            dict_base: 0,
            is_dict: 1,
            ..part(10, 5)
        },
    ];
    // SAFETY: as above.
    let v = unsafe { orc_layout::validity(g, &parts, 15) }.expect("validity");
    let (o, b) = orc_layout::strings(g, &v, &parts, true).expect("strings");
    let o = i32s(&down(g, &o));
    let b = down(g, &b);
    let rows: Vec<&[u8]> = (0..15)
        .map(|i| &b[o[i] as usize..o[i + 1] as usize])
        .collect();
    let want: [&[u8]; 15] = [
        b"a", b"", b"", b"bc", b"", b"d", b"e", b"fgh", b"i", b"jk", b"zzz", b"xx", b"y", b"zzz",
        b"zzz",
    ];
    assert_eq!(rows, want);

    // Booleans: 8 valid bits 1010_1100 in column stripe 0, 5 bits 11010 in column stripe 1.
    let bv0 = m.put(g, &[0b1010_1100]);
    let bv1 = m.put(g, &[0b1101_0000]);
    let parts = [
        ColumnStripe {
            present: p0,
            present_len: 2,
            values: bv0,
            values_len: 8,
            ..part(0, 10)
        },
        ColumnStripe {
            values: bv1,
            values_len: 5,
            ..part(10, 5)
        },
    ];
    // SAFETY: as above.
    let v = unsafe { orc_layout::validity(g, &parts, 15) }.expect("validity");
    let out = down(g, &orc_layout::scatter_bool(g, &v).expect("bool"));
    let got: Vec<bool> = (0..15).map(|i| out[i / 8] >> (i % 8) & 1 == 1).collect();
    let want = [
        true, false, false, true, false, false, true, true, false, false, true, true, false, true,
        false,
    ];
    assert_eq!(got, want);
}

#[test]
fn layout_kernels_refuse_hostile_column_stripes() {
    let Some(g) = gpu() else { return };
    let mut m = Bufs { keep: Vec::new() };
    let all = m.put(g, &[0xff, 0xff]);
    let big = m.ints(g, &[1, 300, 3]);
    let two = m.ints(g, &[1, 2]);
    let s = |values, values_len| ColumnStripe {
        present: all,
        present_len: 2,
        values,
        values_len,
        ..part(0, 3)
    };
    let run =
        |parts: &[ColumnStripe], rows: u64, f: &dyn Fn(&orc_layout::Validity) -> bool| -> bool {
            // SAFETY: every address is a live buffer of `m` of at least the given length.
            match unsafe { orc_layout::validity(g, parts, rows) } {
                Err(e) => {
                    eprintln!("validity: {e}");
                    true
                }
                Ok(v) => f(&v),
            }
        };
    let scatter_err = |mode| {
        move |v: &orc_layout::Validity| match orc_layout::scatter(g, v, mode) {
            Err(e) => {
                eprintln!("{mode:?}: {e}");
                true
            }
            Ok(_) => false,
        }
    };
    // A value that does not fit i8; fits i16.
    assert!(run(&[s(big, 3)], 3, &scatter_err(Scatter::I8)));
    assert!(!run(&[s(big, 3)], 3, &scatter_err(Scatter::I16)));
    // PRESENT has 3 valid rows, the stream 2 values.
    assert!(run(&[s(two, 2)], 3, &scatter_err(Scatter::I64)));
    // PRESENT bytes short of the rows.
    assert!(run(
        &[ColumnStripe {
            present_len: 0,
            ..s(big, 3)
        }],
        3,
        &scatter_err(Scatter::I64)
    ));
    // Column stripes that do not cover the rows, or overlap.
    assert!(run(&[s(big, 3)], 4, &scatter_err(Scatter::I64)));
    assert!(run(
        &[
            s(big, 3),
            ColumnStripe {
                row_start: 2,
                ..s(big, 3)
            }
        ],
        6,
        &scatter_err(Scatter::I64)
    ));
    // A timestamp nanoseconds code out of range.
    let secs = m.ints(g, &[0, 0, 0]);
    let codes = m.ints(g, &[8, 1 << 40, 8]);
    assert!(run(
        &[ColumnStripe {
            aux: codes,
            aux_len: 3,
            ..s(secs, 3)
        }],
        3,
        &scatter_err(Scatter::TimestampNs)
    ));
    // Timestamps whose nanoseconds stream is shorter than the seconds.
    assert!(run(
        &[ColumnStripe {
            aux: codes,
            aux_len: 2,
            ..s(secs, 3)
        }],
        3,
        &scatter_err(Scatter::TimestampNs)
    ));
    // Strings: a length past the data, a negative length, a dictionary id past the
    // dictionary, a dictionary entry past the dictionary's bytes, a negative entry length.
    let strings_err = |parts: [ColumnStripe; 1]| {
        run(
            &parts,
            3,
            &|v| match orc_layout::strings(g, v, &parts, true) {
                Err(e) => {
                    eprintln!("strings: {e}");
                    true
                }
                Ok(_) => false,
            },
        )
    };
    let bytes = m.put(g, b"abcdef");
    let lens_ok = m.ints(g, &[1, 2, 3]);
    let lens_long = m.ints(g, &[1, 2, 4]);
    let lens_neg = m.ints(g, &[1, -1, 3]);
    let direct = |values| ColumnStripe {
        aux: bytes,
        aux_len: 6,
        ..s(values, 3)
    };
    assert!(!strings_err([direct(lens_ok)]));
    // Bytes that are not UTF-8 (an overlong form, a lone continuation byte).
    let bad = m.put(g, &[b'a', 0xc0, 0x80, 0x80, b'b', b'c']);
    assert!(strings_err([ColumnStripe {
        aux: bad,
        ..direct(lens_ok)
    }]));
    assert!(strings_err([direct(lens_long)]));
    assert!(strings_err([direct(lens_neg)]));
    let ids_ok = m.ints(g, &[0, 1, 0]);
    let ids_past = m.ints(g, &[0, 2, 0]);
    let ids_neg = m.ints(g, &[0, -1, 0]);
    let dict_ok = m.ints(g, &[2, 4]);
    let dict_long = m.ints(g, &[2, 5]);
    let dict_neg = m.ints(g, &[-2, 4]);
    let dict = |values, d| ColumnStripe {
        aux: bytes,
        aux_len: 6,
        dict: d,
        dict_len: 2,
        is_dict: 1,
        ..s(values, 3)
    };
    assert!(!strings_err([dict(ids_ok, dict_ok)]));
    assert!(strings_err([dict(ids_past, dict_ok)]));
    assert!(strings_err([dict(ids_neg, dict_ok)]));
    assert!(strings_err([dict(ids_ok, dict_long)]));
    assert!(strings_err([dict(ids_ok, dict_neg)]));
    // A dictionary column stripe with no dictionary entries at all.
    assert!(strings_err([ColumnStripe {
        dict_len: 0,
        ..dict(ids_ok, dict_ok)
    }]));
}
