//! Container tests: writer/reader round trips, and one test per check of container.md §5 on
//! hand-built files (each with a recomputed directory checksum, so the check under test is the
//! one that fires), plus proptests: directory round trips, and no panic on any mutation or
//! truncation of a valid file.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::path::Path;
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use tessera_format::container::{
    checksum, directory_checksum, footer_bytes, ChunkMeta, ColumnMeta, Container, ContainerWriter,
    Directory, MAGIC,
};
use tessera_format::{CodecId, Error, LogicalType};

// ---------------------------------------------------------------- raw file building

/// One raw chunk entry, every field controllable.
#[derive(Clone)]
struct RawChunk {
    offset: u64,
    size: u32,
    count: u32,
    codec: u8,
    reserved: [u8; 7],
    checksum: u64,
}

/// One raw column entry.
#[derive(Clone)]
struct RawColumn {
    name: Vec<u8>,
    ty: u8,
    requested: u8,
    params: Vec<u8>,
    value_count: u64,
    chunks: Vec<RawChunk>,
}

fn raw_directory(columns: &[RawColumn]) -> Vec<u8> {
    let mut d = (columns.len() as u32).to_le_bytes().to_vec();
    for c in columns {
        d.extend_from_slice(&(c.name.len() as u16).to_le_bytes());
        d.extend_from_slice(&c.name);
        d.push(c.ty);
        d.push(c.requested);
        d.extend_from_slice(&(c.params.len() as u16).to_le_bytes());
        d.extend_from_slice(&c.params);
        d.extend_from_slice(&c.value_count.to_le_bytes());
        d.extend_from_slice(&(c.chunks.len() as u32).to_le_bytes());
        for k in &c.chunks {
            d.extend_from_slice(&k.offset.to_le_bytes());
            d.extend_from_slice(&k.size.to_le_bytes());
            d.extend_from_slice(&k.count.to_le_bytes());
            d.push(k.codec);
            d.extend_from_slice(&k.reserved);
            d.extend_from_slice(&k.checksum.to_le_bytes());
        }
    }
    d
}

fn header(major: u16, minor: u16, flags: u32) -> Vec<u8> {
    let mut h = MAGIC.to_vec();
    h.extend_from_slice(&major.to_le_bytes());
    h.extend_from_slice(&minor.to_le_bytes());
    h.extend_from_slice(&flags.to_le_bytes());
    h
}

/// header + payload area + directory + footer with a correct directory checksum.
fn assemble(header: &[u8], payloads: &[u8], directory: &[u8]) -> Vec<u8> {
    let mut f = header.to_vec();
    f.extend_from_slice(payloads);
    let dir_off = f.len() as u64;
    f.extend_from_slice(directory);
    f.extend_from_slice(&footer_bytes(
        dir_off,
        directory.len() as u64,
        directory_checksum(header, directory),
    ));
    f
}

/// Payload area of two chunks at offsets 16 and 48 (relative to the file), 20 and 5 bytes.
fn payload_area() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let p0: Vec<u8> = (0..20u8).collect();
    let p1: Vec<u8> = vec![9, 8, 7, 6, 5];
    let mut area = p0.clone();
    area.resize(32, 0);
    area.extend_from_slice(&p1);
    (area, p0, p1)
}

/// A valid column over `payload_area()`: 512 + 3 u32 values.
fn good_column() -> RawColumn {
    let (_, p0, p1) = payload_area();
    RawColumn {
        name: b"col".to_vec(),
        ty: LogicalType::U32.id(),
        requested: 255,
        params: vec![],
        value_count: 515,
        chunks: vec![
            RawChunk {
                offset: 16,
                size: 20,
                count: 512,
                codec: 1,
                reserved: [0; 7],
                checksum: checksum(&p0),
            },
            RawChunk {
                offset: 48,
                size: 5,
                count: 3,
                codec: 0,
                reserved: [0; 7],
                checksum: checksum(&p1),
            },
        ],
    }
}

fn file_with(columns: &[RawColumn]) -> Vec<u8> {
    file_with_header(&header(1, 0, 0), columns)
}

fn file_with_header(h: &[u8], columns: &[RawColumn]) -> Vec<u8> {
    let (area, _, _) = payload_area();
    assemble(h, &area, &raw_directory(columns))
}

fn open(bytes: Vec<u8>) -> Result<Container, Error> {
    Container::from_bytes(bytes)
}

fn column_with(f: impl FnOnce(&mut RawColumn)) -> Vec<u8> {
    let mut c = good_column();
    f(&mut c);
    file_with(&[c])
}

// ---------------------------------------------------------------- valid files

#[test]
fn hand_built_file_opens_and_payloads_verify() {
    let c = open(file_with(&[good_column()])).unwrap();
    assert_eq!(c.version(), (1, 0));
    let col = &c.columns()[0];
    assert_eq!(col.name, "col");
    assert_eq!(col.requested_codec, None);
    assert_eq!(col.value_count, 515);
    assert_eq!(col.chunks[1].codec, CodecId::Plain);
    let (_, p0, p1) = payload_area();
    assert_eq!(c.chunk_payload(0, 0).unwrap(), &p0[..]);
    assert_eq!(c.chunk_payload(0, 1).unwrap(), &p1[..]);
    assert!(matches!(
        c.chunk_payload(0, 2),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        c.chunk_payload(1, 0),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn empty_directory_is_valid() {
    let c = open(assemble(&header(1, 0, 0), &[], &0u32.to_le_bytes())).unwrap();
    assert!(c.columns().is_empty());
}

#[test]
fn writer_round_trip_with_several_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.tsr");
    let payloads: Vec<Vec<u8>> = (0..5).map(|i| (0..(i * 7 + 1) as u8).collect()).collect();
    let mut w = ContainerWriter::create(&path).unwrap();
    // An unnamed temporary file (O_TMPFILE) where the filesystem has them, else a named one.
    let tmp = w.temp_path().map(Path::to_path_buf);
    if let Some(tmp) = &tmp {
        assert!(tmp
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(".x.tsr.tmp-"));
        assert!(tmp.exists());
    }
    assert!(!path.exists(), "nothing under the final name before finish");
    w.begin_column("a", LogicalType::U8, Some(CodecId::Plain))
        .unwrap();
    w.write_chunk(CodecId::Plain, 4, &payloads[0]).unwrap();
    w.write_chunk(CodecId::Plain, 4, &payloads[1]).unwrap();
    w.write_chunk(CodecId::Plain, 2, &payloads[2]).unwrap();
    w.end_column().unwrap();
    w.begin_column("empty", LogicalType::I64, Some(CodecId::Dfor))
        .unwrap();
    w.end_column().unwrap();
    w.begin_column("b", LogicalType::I64, None).unwrap();
    w.write_chunk(CodecId::Rfor, 512, &payloads[3]).unwrap();
    w.write_chunk(CodecId::For, 512, &payloads[4]).unwrap();
    let written = w.finish().unwrap(); // ends the open column
    assert!(tmp.is_none_or(|t| !t.exists()));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    let c = Container::open(&path).unwrap();
    assert_eq!(c.directory(), &written);
    let names: Vec<_> = c.columns().iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["a", "empty", "b"]);
    assert_eq!(c.columns()[0].value_count, 10);
    assert_eq!(c.columns()[1].value_count, 0);
    assert_eq!(c.columns()[2].requested_codec, None);
    assert_eq!(c.column_by_name("b").map(|(i, _)| i), Some(2));
    let mut k = 0;
    for (ci, col) in c.columns().iter().enumerate() {
        for (j, ch) in col.chunks.iter().enumerate() {
            assert_eq!(ch.offset % 16, 0);
            assert_eq!(c.chunk_payload(ci, j).unwrap(), &payloads[k][..]);
            k += 1;
        }
    }
    // The padding between payloads is zero.
    let bytes = std::fs::read(&path).unwrap();
    let a = &c.columns()[0].chunks;
    assert!(bytes[(a[0].offset as usize + 1)..a[1].offset as usize]
        .iter()
        .all(|&b| b == 0));
}

#[test]
fn writer_replaces_an_existing_file_and_cleans_up_on_drop() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("y.tsr");
    std::fs::write(&path, b"old").unwrap();
    let w = ContainerWriter::create(&path).unwrap();
    let tmp = w.temp_path().map(Path::to_path_buf);
    drop(w);
    assert!(
        tmp.is_none_or(|t| !t.exists()),
        "dropped writer leaves no temp file"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        b"old",
        "dropped writer leaves the destination alone"
    );
    let mut w = ContainerWriter::create(&path).unwrap();
    w.begin_column("z", LogicalType::U16, None).unwrap();
    w.write_chunk(CodecId::Plain, 1, &[1, 2]).unwrap();
    w.finish().unwrap();
    assert_eq!(Container::open(&path).unwrap().columns()[0].value_count, 1);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
}

#[test]
fn writer_refuses_what_the_format_cannot_hold() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = ContainerWriter::create(dir.path().join("w.tsr")).unwrap();
    let bad = |r: Result<(), Error>| assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    bad(w.write_chunk(CodecId::Plain, 1, &[0]));
    bad(w.end_column());
    w.begin_column("a", LogicalType::U8, None).unwrap();
    bad(w.begin_column("b", LogicalType::U8, None));
    bad(w.write_chunk(CodecId::Plain, 0, &[]));
    bad(w.write_chunk(CodecId::Plain, (1 << 24) + 1, &[0]));
    w.write_chunk(CodecId::Plain, 8, &[0; 8]).unwrap();
    bad(w.write_chunk(CodecId::Plain, 9, &[0; 9]));
    w.write_chunk(CodecId::Plain, 3, &[0; 3]).unwrap();
    bad(w.write_chunk(CodecId::Plain, 3, &[0; 3]));
    w.end_column().unwrap();
    bad(w.begin_column("a", LogicalType::U8, None));
    bad(w.begin_column(&"n".repeat(1025), LogicalType::U8, None));
    assert!(ContainerWriter::create(dir.path().join("no-such-dir").join("f.tsr")).is_err());
}

#[test]
fn higher_minor_and_optional_flags_are_accepted() {
    // A 1.1 file may carry params and bytes after the last column; a 1.0 reader skips them.
    let mut c = good_column();
    c.params = vec![1, 2, 3];
    let mut dir = raw_directory(&[c]);
    dir.extend_from_slice(b"future");
    let (area, _, _) = payload_area();
    let opened = open(assemble(&header(1, 1, 1 << 16), &area, &dir)).unwrap();
    assert_eq!(opened.version(), (1, 1));
    assert_eq!(opened.flags(), 1 << 16);
    assert_eq!(opened.columns()[0].params, [1, 2, 3]);
}

// ---------------------------------------------------------------- §5.1, §5.2

#[test]
fn short_file_is_truncated() {
    for len in [0, 1, 16, 47] {
        let err = open(vec![0; len]).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Truncated {
                    what: "file",
                    needed: 48,
                    ..
                }
            ),
            "{err}"
        );
    }
    let good = file_with(&[good_column()]);
    let err = open(good[..good.len() - 1].to_vec()).unwrap_err();
    assert!(matches!(err, Error::BadMagic { .. }), "cut footer: {err}");
}

#[test]
fn bad_header_magic() {
    let mut f = file_with(&[good_column()]);
    f[1] = b'X';
    assert!(matches!(
        open(f).unwrap_err(),
        Error::BadMagic { offset: 0, .. }
    ));
}

#[test]
fn unknown_major_version() {
    let f = file_with_header(&header(2, 0, 0), &[good_column()]);
    let err = open(f).unwrap_err();
    assert!(
        matches!(
            err,
            Error::UnsupportedVersion {
                found: 2,
                supported: 1,
                ..
            }
        ),
        "{err}"
    );
    let f = file_with_header(&header(0, 0, 0), &[good_column()]);
    assert!(matches!(
        open(f).unwrap_err(),
        Error::UnsupportedVersion { found: 0, .. }
    ));
}

#[test]
fn unknown_must_understand_flag() {
    let f = file_with_header(&header(1, 0, 1), &[good_column()]);
    assert!(matches!(
        open(f).unwrap_err(),
        Error::Unknown { found: 1, .. }
    ));
}

#[test]
fn bad_end_magic() {
    let mut f = file_with(&[good_column()]);
    let n = f.len();
    f[n - 1] = 0;
    let err = open(f).unwrap_err();
    assert!(
        matches!(err, Error::BadMagic { offset, .. } if offset == n as u64 - 8),
        "{err}"
    );
}

fn with_footer(f: &mut [u8], dir_off: u64, dir_len: u64) {
    let n = f.len();
    f[n - 32..n - 24].copy_from_slice(&dir_off.to_le_bytes());
    f[n - 24..n - 16].copy_from_slice(&dir_len.to_le_bytes());
}

#[test]
fn directory_placement() {
    let good = file_with(&[good_column()]);
    let n = good.len() as u64;
    let dir_off = u64::from_le_bytes(good[good.len() - 32..good.len() - 24].try_into().unwrap());
    let dir_len = n - 32 - dir_off;
    for (off, len, field) in [
        (8, n - 40, "directory_offset"),
        (0, n - 32, "directory_offset"),
        (n, 0, "directory_offset"),
        (u64::MAX - 4, 4, "directory_offset"),
        (dir_off, dir_len + 1, "directory_length"),
        (dir_off, dir_len - 1, "directory_length"),
        (dir_off, u64::MAX, "directory_length"),
    ] {
        let mut f = good.clone();
        with_footer(&mut f, off, len);
        let err = open(f).unwrap_err();
        assert!(
            matches!(err, Error::InvalidHeader { field: f, .. } if f == field),
            "{off} {len}: {err}"
        );
    }
}

#[test]
fn directory_checksum_mismatch() {
    let mut f = file_with(&[good_column()]);
    let n = f.len();
    f[n - 40] ^= 1; // a byte of the directory (the last chunk's checksum)
    let err = open(f).unwrap_err();
    assert!(
        matches!(&err, Error::ChecksumMismatch { what, .. } if what == "directory"),
        "{err}"
    );
    // The header is covered too.
    let mut f = file_with(&[good_column()]);
    f[10] = 1; // minor 1 is acceptable, but the checksum was computed over minor 0
    assert!(matches!(
        open(f).unwrap_err(),
        Error::ChecksumMismatch { .. }
    ));
}

// ---------------------------------------------------------------- §5.3: directory fields

fn assert_invalid(bytes: Vec<u8>, want: &str) {
    let err = open(bytes).unwrap_err();
    let field = match &err {
        Error::InvalidHeader { field, .. } => *field,
        _ => panic!("expected InvalidHeader {want}, got {err:?}"),
    };
    assert_eq!(field, want, "{err}");
}

#[test]
fn column_count_limits() {
    let (area, _, _) = payload_area();
    let mut d = raw_directory(&[good_column()]);
    d[..4].copy_from_slice(&65536u32.to_le_bytes());
    assert_invalid(assemble(&header(1, 0, 0), &area, &d), "column_count");
    // 65535 announced columns in a small directory: Truncated, with no large allocation.
    d[..4].copy_from_slice(&65535u32.to_le_bytes());
    let err = open(assemble(&header(1, 0, 0), &area, &d)).unwrap_err();
    assert!(matches!(err, Error::Truncated { .. }), "{err}");
    let err = open(assemble(&header(1, 0, 0), &area, &[1, 0])).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Truncated {
                what: "column_count",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn chunk_count_larger_than_the_directory() {
    let mut d = raw_directory(&[good_column()]);
    // chunk_count sits after 4 + 2 + 3 + 1 + 1 + 2 + 8 bytes.
    let at = 4 + 2 + 3 + 1 + 1 + 2 + 8;
    d[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let (area, _, _) = payload_area();
    let err = open(assemble(&header(1, 0, 0), &area, &d)).unwrap_err();
    assert!(
        matches!(err, Error::Truncated { what: "chunk entries", needed, .. } if needed == u32::MAX as u64 * 32)
    );
}

#[test]
fn every_truncation_of_the_directory_is_truncated() {
    let d = raw_directory(&[good_column()]);
    let (area, _, _) = payload_area();
    for cut in 0..d.len() {
        let err = open(assemble(&header(1, 0, 0), &area, &d[..cut])).unwrap_err();
        assert!(
            matches!(err, Error::Truncated { .. } | Error::CountMismatch { .. }),
            "cut {cut}: {err}"
        );
    }
}

#[test]
fn name_checks() {
    assert_invalid(
        column_with(|c| c.name = vec![b'a'; 1025]),
        "column name_length",
    );
    assert_invalid(column_with(|c| c.name = vec![b'a', 0xff]), "column name");
    let mut second = good_column();
    second.chunks.clear();
    second.value_count = 0;
    assert_invalid(file_with(&[good_column(), second]), "column name");
    // 1024 bytes is allowed.
    assert!(open(column_with(|c| c.name = vec![b'a'; 1024])).is_ok());
}

#[test]
fn unknown_ids() {
    for ty in [0, 12, 200] {
        let err = open(column_with(|c| c.ty = ty)).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Unknown {
                    what: "logical type",
                    ..
                }
            ),
            "{err}"
        );
    }
    for codec in [4, 254] {
        let err = open(column_with(|c| c.requested = codec)).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Unknown {
                    what: "codec id",
                    ..
                }
            ),
            "{err}"
        );
        let err = open(column_with(|c| c.chunks[1].codec = codec)).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Unknown {
                    what: "codec id",
                    ..
                }
            ),
            "{err}"
        );
    }
    let err = open(column_with(|c| c.chunks[0].codec = 255)).unwrap_err();
    assert!(
        matches!(err, Error::Unknown { .. }),
        "auto is no chunk codec: {err}"
    );
}

#[test]
fn params_in_format_1_0() {
    assert_invalid(column_with(|c| c.params = vec![0]), "column params_length");
}

#[test]
fn chunk_placement() {
    assert_invalid(column_with(|c| c.chunks[0].offset = 24), "chunk offset"); // not aligned
    assert_invalid(column_with(|c| c.chunks[0].offset = 0), "chunk offset"); // inside the header
    assert_invalid(column_with(|c| c.chunks[1].offset = 64), "chunk offset"); // at the directory
    assert_invalid(
        column_with(|c| c.chunks[1].offset = u64::MAX - 15),
        "chunk offset",
    );
    assert_invalid(
        column_with(|c| c.chunks[1].size = 6),
        "chunk compressed_size",
    ); // ends past it
    assert_invalid(
        column_with(|c| c.chunks[0].size = u32::MAX),
        "chunk compressed_size",
    );
    assert_invalid(column_with(|c| c.chunks[0].size = 33), "chunk offset"); // overlaps chunk 1
                                                                            // Overlap across columns, in either order.
    let mut other = good_column();
    other.name = b"other".to_vec();
    other.chunks.truncate(1);
    other.chunks[0].count = 3;
    other.value_count = 3;
    assert_invalid(file_with(&[good_column(), other.clone()]), "chunk offset");
    assert_invalid(file_with(&[other, good_column()]), "chunk offset");
}

#[test]
fn chunk_counts() {
    assert_invalid(column_with(|c| c.chunks[1].count = 0), "chunk value_count");
    assert_invalid(
        column_with(|c| c.chunks[0].count = (1 << 24) + 1),
        "chunk value_count",
    );
    assert_invalid(
        column_with(|c| c.chunks[1].count = 513),
        "chunk value_count",
    );
    let err = open(column_with(|c| c.value_count = 516)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::CountMismatch {
                expected: 516,
                found: 515,
                ..
            }
        ),
        "{err}"
    );
    // 2^24 values in one chunk is allowed.
    assert!(open(column_with(|c| {
        c.chunks.truncate(1);
        c.chunks[0].count = 1 << 24;
        c.value_count = 1 << 24;
    }))
    .is_ok());
}

#[test]
fn short_chunk_before_the_last() {
    // 512, 3, 3: the middle chunk is short but not the last.
    let mut c = good_column();
    c.chunks.push(RawChunk {
        offset: 48,
        size: 0,
        count: 3,
        codec: 0,
        reserved: [0; 7],
        checksum: checksum(&[]),
    });
    c.value_count = 518;
    assert_invalid(file_with(&[c]), "chunk value_count");
}

#[test]
fn reserved_bytes() {
    assert_invalid(
        column_with(|c| c.chunks[1].reserved[6] = 1),
        "chunk reserved",
    );
}

#[test]
fn trailing_directory_bytes_in_1_0() {
    let mut d = raw_directory(&[good_column()]);
    d.push(0);
    let (area, _, _) = payload_area();
    let err = open(assemble(&header(1, 0, 0), &area, &d)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::TrailingBytes {
                what: "directory",
                count: 1,
                ..
            }
        ),
        "{err}"
    );
}

// ---------------------------------------------------------------- §5.4: payload checksums

#[test]
fn flipped_payload_bit_names_column_and_chunk() {
    let mut f = file_with(&[good_column()]);
    f[48 + 2] ^= 0x10;
    let c = open(f).unwrap(); // the directory is intact
    assert!(c.chunk_payload(0, 0).is_ok());
    let err = c.chunk_payload(0, 1).unwrap_err();
    match &err {
        Error::ChecksumMismatch { what, .. } => {
            assert!(what.contains("'col'") && what.contains("chunk 1"), "{err}")
        }
        _ => panic!("{err:?}"),
    }
    assert_eq!(c.chunk_payload_unverified(0, 1).unwrap()[2], 7 ^ 0x10);
}

#[test]
fn open_reports_missing_files_and_folders() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        Container::open(dir.path().join("nope")).unwrap_err(),
        Error::Io { .. }
    ));
    assert!(matches!(
        Container::open(dir.path()).unwrap_err(),
        Error::InvalidArgument(_) | Error::Io { .. }
    ));
    let short = dir.path().join("short");
    std::fs::write(&short, [0u8; 10]).unwrap();
    assert!(matches!(
        Container::open(&short).unwrap_err(),
        Error::Truncated { available: 10, .. }
    ));
}

// ---------------------------------------------------------------- proptests

fn arb_type() -> impl Strategy<Value = LogicalType> {
    proptest::sample::select(LogicalType::ALL.to_vec())
}

fn arb_codec() -> impl Strategy<Value = CodecId> {
    proptest::sample::select(CodecId::ALL.to_vec())
}

/// A valid directory: columns with distinct names, chunks laid out one after another.
fn arb_directory() -> impl Strategy<Value = Directory> {
    let column = (
        "[a-z0-9_ ]{0,12}",
        arb_type(),
        proptest::option::of(arb_codec()),
        1u32..=(1 << 24),
        proptest::collection::vec((0u32..5000, arb_codec(), any::<u64>()), 0..6),
        1u32..=(1 << 24),
    );
    proptest::collection::vec(column, 0..5).prop_map(|cols| {
        let mut offset = 16u64;
        let mut columns = Vec::new();
        for (i, (name, ty, requested, size, chunk_specs, last)) in cols.into_iter().enumerate() {
            let n = chunk_specs.len();
            let mut chunks = Vec::new();
            for (k, (bytes, codec, sum)) in chunk_specs.into_iter().enumerate() {
                let count = if k + 1 == n { last.min(size) } else { size };
                chunks.push(ChunkMeta {
                    offset,
                    compressed_size: bytes,
                    value_count: count,
                    codec,
                    checksum: sum,
                });
                offset += (bytes as u64).div_ceil(16) * 16 + 16 * (k as u64 % 2);
            }
            let value_count = chunks.iter().map(|c| c.value_count as u64).sum();
            columns.push(ColumnMeta {
                name: format!("{i}:{name}"),
                logical_type: ty,
                requested_codec: requested,
                params: vec![],
                value_count,
                chunks,
            });
        }
        Directory {
            columns,
            table: None,
        }
    })
}

proptest! {
    #[test]
    fn directory_round_trips(dir in arb_directory()) {
        let bytes = dir.to_bytes().unwrap();
        let end = dir.columns.iter().flat_map(|c| &c.chunks).map(|c| c.offset + c.compressed_size as u64).max();
        let dir_off = end.unwrap_or(16).max(16) + 1;
        let back = Directory::parse(&bytes, dir_off, 0).unwrap();
        prop_assert_eq!(back, dir);
    }

    #[test]
    fn directory_parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400), minor in 0u16..2) {
        let _ = Directory::parse(&bytes, 1 << 20, minor);
    }

    #[test]
    fn mutated_files_fail_cleanly(
        flips in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 1..4),
        fix_checksum in any::<bool>(),
    ) {
        // Mutate a valid file anywhere; optionally recompute the directory checksum so the
        // field checks behind it are exercised. Opening and reading must never panic.
        let mut f = file_with(&[good_column()]);
        let n = f.len();
        for (i, x) in flips {
            f[i.index(n)] ^= x | 1;
        }
        if fix_checksum {
            let dir_off = u64::from_le_bytes(f[n - 32..n - 24].try_into().unwrap());
            if (16..=(n as u64 - 32)).contains(&dir_off) {
                let sum = directory_checksum(&f[..16], &f[dir_off as usize..n - 32]);
                f[n - 16..n - 8].copy_from_slice(&sum.to_le_bytes());
            }
        }
        if let Ok(c) = open(f) {
            for (ci, col) in c.columns().iter().enumerate() {
                for k in 0..col.chunks.len() {
                    let _ = c.chunk_payload(ci, k);
                }
            }
        }
    }

    #[test]
    fn truncated_files_fail(cut in 0usize..200) {
        let f = file_with(&[good_column()]);
        let cut = cut.min(f.len() - 1);
        prop_assert!(open(f[..cut].to_vec()).is_err());
    }
}

/// A stream sink whose bytes the test reads back.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes the same columns to `w`.
fn write_sample(w: &mut ContainerWriter, utf8: bool) {
    w.begin_column("a", LogicalType::U16, None).unwrap();
    w.write_chunk(CodecId::Plain, 2, &[1, 0, 2, 0]).unwrap();
    w.end_column().unwrap();
    if utf8 {
        w.begin_column("s", LogicalType::Utf8, Some(CodecId::Plain))
            .unwrap();
        w.set_params(&[1]).unwrap();
        w.end_column().unwrap();
    }
}

#[test]
fn streams_equal_files_at_their_declared_version() {
    let dir = tempfile::tempdir().unwrap();
    for (utf8, minor) in [(false, 0), (true, 1), (false, 1)] {
        let path = dir.path().join(format!("s{utf8}{minor}.tsr"));
        let sink = Shared::default();
        let mut s = ContainerWriter::streaming(Box::new(sink.clone()), minor).unwrap();
        assert!(s.dest().is_none() && s.temp_path().is_none());
        write_sample(&mut s, utf8);
        let (dir_s, size) = s.finish_sized().unwrap();
        let streamed = sink.0.lock().unwrap().clone();
        assert_eq!(size, streamed.len() as u64);
        let c = Container::from_bytes(streamed.clone()).unwrap();
        assert_eq!(c.directory(), &dir_s);
        assert_eq!(c.version(), (1, minor));
        let mut f = ContainerWriter::create(&path).unwrap();
        write_sample(&mut f, utf8);
        f.finish().unwrap();
        let file = std::fs::read(&path).unwrap();
        if minor == Container::open(&path).unwrap().version().1 {
            assert_eq!(file, streamed, "utf8 {utf8}, minor {minor}");
        } else {
            // Declared 1.1 for 1.0 columns: only the header's minor and the directory checksum
            // (which covers the header) differ.
            assert_eq!(file.len(), streamed.len());
            assert_ne!(file, streamed);
        }
    }
}

#[test]
fn a_stream_refuses_what_its_header_cannot_say() {
    let mut s = ContainerWriter::streaming(Box::new(Shared::default()), 0).unwrap();
    let bad = |r: Result<(), Error>| assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    bad(s.begin_column("b", LogicalType::Bits, None));
    bad(s.begin_column("u", LogicalType::U8, Some(CodecId::Lll)));
    s.begin_column("u", LogicalType::U8, None).unwrap();
    bad(s.set_params(&[1]));
    assert!(ContainerWriter::streaming(Box::new(Shared::default()), 9).is_err());
}
