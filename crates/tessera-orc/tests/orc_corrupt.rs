//! Hostile ORC files: truncated, lying postscript and footer lengths, streams past their stripe,
//! bad compression chunk headers, RLE runs past the values a stripe announces, compressions and
//! versions this reader does not read. Each gives a typed error, never a panic.

use prost::Message;
use tessera_orc::proto::{Footer, PostScript};
use tessera_orc::{OrcError, OrcFile, OrcReader, Result};

mod common;
use common::dir;

fn read(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(name)).expect("test file")
}

/// Opens and decodes every column of every stripe.
fn read_all(bytes: Vec<u8>) -> Result<usize> {
    let f = OrcFile::from_bytes(bytes)?;
    let r = OrcReader::new(&f, None)?;
    Ok(r.read_all()?.iter().map(|b| b.num_rows()).sum())
}

/// An uncompressed file's tail: postscript, footer, where the footer starts and its metadata.
struct Tail {
    ps: PostScript,
    footer: Footer,
    body: Vec<u8>,
}

fn tail(bytes: &[u8]) -> Tail {
    let ps_len = *bytes.last().expect("bytes") as usize;
    let ps_start = bytes.len() - 1 - ps_len;
    let ps = PostScript::decode(&bytes[ps_start..bytes.len() - 1]).expect("ps");
    assert_eq!(ps.compression, Some(0), "uncompressed test file");
    let fl = ps.footer_length.expect("footer length") as usize;
    let footer = Footer::decode(&bytes[ps_start - fl..ps_start]).expect("footer");
    Tail {
        ps,
        footer,
        body: bytes[..ps_start - fl].to_vec(),
    }
}

fn rebuild(t: &Tail) -> Vec<u8> {
    let mut out = t.body.clone();
    let f = t.footer.encode_to_vec();
    let mut ps = t.ps.clone();
    ps.footer_length = Some(f.len() as u64);
    out.extend_from_slice(&f);
    let p = ps.encode_to_vec();
    out.extend_from_slice(&p);
    out.push(p.len() as u8);
    out
}

const PLAIN: &str = "pyarrow-0.12-uncompressed.orc";
const ZLIB: &str = "pyarrow-0.12-zlib.orc";

#[test]
fn the_rebuilt_file_still_reads() {
    // The helpers above reproduce a readable file: each corruption below changes one thing.
    let b = read(PLAIN);
    assert_eq!(read_all(rebuild(&tail(&b))).expect("rebuilt"), 500);
}

#[test]
fn truncated_files_are_errors() {
    for name in [PLAIN, ZLIB] {
        let b = read(name);
        for cut in [
            0,
            1,
            2,
            3,
            10,
            b.len() / 2,
            b.len() - 200,
            b.len() - 2,
            b.len() - 1,
        ] {
            let e = read_all(b[..cut].to_vec());
            assert!(e.is_err(), "{name} cut at {cut}: {e:?}");
        }
        // No prefix panics.
        for cut in (0..b.len()).step_by(37) {
            let _ = read_all(b[..cut].to_vec());
        }
    }
}

#[test]
fn lying_postscript_lengths_are_errors() {
    let b = read(PLAIN);
    let t = tail(&b);
    for fl in [u64::MAX, b.len() as u64, 0] {
        let mut ps = t.ps.clone();
        ps.footer_length = Some(fl);
        let mut out = b[..b.len() - 1 - *b.last().expect("len") as usize].to_vec();
        let p = ps.encode_to_vec();
        out.extend_from_slice(&p);
        out.push(p.len() as u8);
        let e = read_all(out).expect_err("lying footer length");
        assert!(
            matches!(e, OrcError::OutOfBounds { .. } | OrcError::Malformed { .. }),
            "{e}"
        );
    }
    let mut t2 = tail(&b);
    t2.ps.metadata_length = Some(1 << 40);
    let e = read_all(rebuild(&t2)).expect_err("lying metadata length");
    assert!(matches!(e, OrcError::OutOfBounds { .. }), "{e}");
    let mut t3 = tail(&b);
    t3.ps.compression_block_size = Some(1 << 40);
    let e = read_all(rebuild(&t3)).expect_err("block size");
    assert!(e.to_string().contains("compression block size"), "{e}");
}

#[test]
fn lying_footers_are_errors() {
    let b = read(PLAIN);
    // A stripe past the end of the file.
    let mut t = tail(&b);
    t.footer.stripes[0].data_length = Some(1 << 40);
    let e = read_all(rebuild(&t)).expect_err("stripe past the file");
    assert!(matches!(e, OrcError::OutOfBounds { .. }), "{e}");
    // Streams past their stripe: the stripe starts 10 bytes later (its footer where it was), so
    // its streams' lengths add up past its data.
    let mut t = tail(&b);
    let s0 = &mut t.footer.stripes[0];
    s0.offset = Some(s0.offset.expect("offset") + 10);
    s0.data_length = Some(s0.data_length.expect("data") - 10);
    let e = read_all(rebuild(&t)).expect_err("streams past the stripe");
    assert!(
        matches!(&e, OrcError::OutOfBounds { what, .. } if what.contains("stream")),
        "{e}"
    );
    // Row counts that disagree.
    let mut t = tail(&b);
    t.footer.number_of_rows = Some(241);
    assert!(read_all(rebuild(&t)).is_err());
    // More rows in a stripe than its streams hold, and fewer (a run past the end).
    for rows in [
        t.footer.stripes[0].number_of_rows.expect("rows") + 5,
        3,
        1 << 40,
    ] {
        let mut t = tail(&b);
        let old = t.footer.stripes[0].number_of_rows.expect("rows");
        t.footer.stripes[0].number_of_rows = Some(rows);
        t.footer.number_of_rows = Some(500 - old + rows);
        let e = read_all(rebuild(&t)).expect_err("stripe rows");
        assert!(matches!(e, OrcError::Stream { .. }), "rows {rows}: {e}");
    }
    // A child type id that points back up the tree.
    let mut t = tail(&b);
    t.footer.types[0].subtypes[0] = 0;
    assert!(read_all(rebuild(&t)).is_err());
}

#[test]
fn bad_compression_chunk_headers_are_errors() {
    let b = read(ZLIB);
    let f = OrcFile::from_bytes(b.clone()).expect("open");
    let l = f.stripe_layout(0).expect("layout");
    // The DATA stream of column 5 (i64): its first chunk header.
    let r = l.streams[&(5, 1)].clone();
    for hdr in [[0xff, 0xff, 0xff], [0, 0, 0], [0x01, 0x00, 0x10]] {
        let mut c = b.clone();
        c[r.start..r.start + 3].copy_from_slice(&hdr);
        let e = read_all(c).expect_err("bad chunk header");
        assert!(e.to_string().contains("compression chunk"), "{e}");
    }
    // A chunk whose Deflate bytes are garbage.
    let mut c = b.clone();
    for x in &mut c[r.start + 3..r.start + 12] {
        *x = 0xff;
    }
    assert!(read_all(c).is_err());
}

#[test]
fn unsupported_compression_and_versions_are_clear_errors() {
    let b = read(PLAIN);
    let mut t = tail(&b);
    t.ps.compression = Some(3);
    let e = read_all(rebuild(&t)).expect_err("lzo");
    assert_eq!(e.to_string(), "unsupported ORC feature: LZO compression");
    let mut t = tail(&b);
    t.ps.version = vec![19, 99];
    let e = read_all(rebuild(&t)).expect_err("version");
    assert!(e.to_string().contains("file version 19.99"), "{e}");
    let mut t = tail(&b);
    t.ps.magic = Some("XYZ".into());
    assert!(matches!(read_all(rebuild(&t)), Err(OrcError::NotOrc(_))));
    assert!(matches!(
        read_all(b"PAR1xxxxxx".to_vec()),
        Err(OrcError::NotOrc(_))
    ));
}

#[test]
fn flipped_bytes_never_panic() {
    for name in [
        PLAIN,
        ZLIB,
        "pyarrow-0.11-zlib.orc",
        "pyarrow-0.12-snappy.orc",
    ] {
        let b = read(name);
        let mut x = 0x9e3779b97f4a7c15u64;
        for _ in 0..400 {
            let mut c = b.clone();
            for _ in 0..3 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let at = (x % c.len() as u64) as usize;
                c[at] ^= (x >> 32) as u8 | 1;
            }
            let _ = read_all(c);
        }
    }
}
