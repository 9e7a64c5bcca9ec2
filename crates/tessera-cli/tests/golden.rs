//! Golden files (`testdata/v1`, described in `testdata/README.md`).
//!
//! - Every `<codec>-<type>.tsr` decodes, with the fast and the reference decoder, to the bytes of
//!   the `.raw` file next to it.
//! - Every `must-fail/*.tsr` fails with its exact error variant at its exact stage (opening the
//!   container, or a given chunk), and both decoders agree on the variant.
//! - The current writer and encoders reproduce every file byte for byte (the formats are
//!   deterministic). `TESSERA_REGEN_GOLDEN=1 cargo test -p tessera-cli --test golden` rewrites
//!   them instead: do that only for an intended format change, which also needs a new version
//!   folder, since old files must keep decoding.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::path::{Path, PathBuf};

use tessera_codecs::{column, text};
use tessera_format::container::{Container, ContainerWriter};
use tessera_format::{CodecId, Error, LogicalType};

/// Values per golden file, and per chunk: 3 chunks, the last one short (and not a multiple of
/// any block size, so padding is exercised).
const VALUES: usize = 1500;
const CHUNK: usize = 512;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/v1")
}

// ---------------------------------------------------------------- deterministic data

/// xorshift64*: deterministic, dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> i128 {
        (self.next() % n) as i128
    }
}

/// Appends `v` at the type's width (two's complement, wrapping: every value is valid data).
fn push(out: &mut Vec<u8>, ty: LogicalType, v: i128) {
    out.extend_from_slice(&(v as u64).to_le_bytes()[..ty.width()]);
}

/// Words the 1.1 text goldens are made of.
const WORDS: [&str; 12] = [
    "tile",
    "segment",
    "strip",
    "miniblock",
    "bit_width",
    "fill_word",
    "the",
    "of",
    "a",
    "GPU",
    "décodé",
    "列",
];

/// `n` raw values of `ty` shaped for `pattern` (a codec name, or "auto" for a mix per chunk).
/// For bytes: text-like bytes; for bits: `n` bits, packed, density about 1/16 with runs; for
/// utf8: `n` lines of 0-6 words (the line form, every line terminated).
fn values(pattern: &str, ty: LogicalType, n: usize) -> Vec<u8> {
    let mut rng = Rng(0x7e55_e7a0_0000_0001 ^ ((ty.id() as u64) << 8) ^ pattern.len() as u64);
    match ty {
        LogicalType::Bytes => {
            let mut out = Vec::new();
            while out.len() < n {
                out.extend_from_slice(WORDS[rng.below(WORDS.len() as u64) as usize].as_bytes());
                out.push(if rng.below(8) == 0 { b'\n' } else { b' ' });
            }
            out.truncate(n);
            return out;
        }
        LogicalType::Bits => {
            let mut out = vec![0u8; n.div_ceil(8)];
            let mut i = 0;
            while i < n {
                if rng.below(16) == 0 {
                    let long = rng.below(4) == 0;
                    let run = 1 + rng.below(if long { 300 } else { 3 }) as usize;
                    for j in i..(i + run).min(n) {
                        out[j / 8] |= 1 << (j % 8);
                    }
                    i += run;
                } else {
                    i += 1 + rng.below(40) as usize;
                }
            }
            return out;
        }
        LogicalType::Utf8 => {
            let mut out = Vec::new();
            for _ in 0..n {
                let words = rng.below(7);
                for w in 0..words {
                    if w > 0 {
                        out.push(b' ');
                    }
                    out.extend_from_slice(WORDS[rng.below(WORDS.len() as u64) as usize].as_bytes());
                }
                out.push(b'\n');
            }
            return out;
        }
        _ => {}
    }
    let bits = (ty.width() * 8).min(12) as u32;
    let span = 1i128 << (bits - 1);
    // Signed types get negative values; 64-bit types get high bits set.
    let big = if ty.width() == 8 { 1i128 << 40 } else { 0 };
    let offset = if ty.signed() {
        -span / 2 - big
    } else {
        span + big
    };
    let mut out = Vec::with_capacity(n * ty.width());
    let mut acc = offset;
    let mut i = 0;
    while i < n {
        let shape = if pattern == "auto" {
            ["plain", "dfor", "rfor", "for"][(i / CHUNK) % 4]
        } else {
            pattern
        };
        match shape {
            "plain" => push(&mut out, ty, rng.next() as i128),
            "for" => push(&mut out, ty, offset + rng.below(span as u64)),
            "dfor" => {
                acc += rng.below(7) - 2; // mostly rising, some negative deltas
                push(&mut out, ty, acc);
            }
            _ => {
                // rfor: runs of 1..=20 equal values (cut at the end).
                let v = offset + rng.below(span as u64);
                let run = (1 + rng.below(20) as usize).min(n - i);
                for _ in 1..run {
                    push(&mut out, ty, v);
                }
                i += run - 1;
                push(&mut out, ty, v);
            }
        }
        i += 1;
    }
    out
}

// ---------------------------------------------------------------- building files

/// Encodes `raw` as one column with `requested`, `CHUNK` values per chunk; `patch` may corrupt
/// chunk `k`'s payload and change its directory value count before it is written (the writer
/// then stores a checksum of the corrupted bytes, so the codec's own checks are what fire).
fn build(
    path: &Path,
    ty: LogicalType,
    requested: Option<CodecId>,
    raw: &[u8],
    patch: &dyn Fn(usize, &mut Vec<u8>, &mut u32),
) {
    let mut w = ContainerWriter::create(path).unwrap();
    w.begin_column("values", ty, requested).unwrap();
    let mut put = |k: usize, codec: CodecId, mut payload: Vec<u8>, mut count: u32| {
        patch(k, &mut payload, &mut count);
        w.write_chunk(codec, count, &payload).unwrap();
    };
    match ty {
        LogicalType::Utf8 => {
            let lines: Vec<&[u8]> = raw.split(|&b| b == b'\n').collect();
            let lines = &lines[..lines.len() - 1]; // every line is terminated
            for (k, chunk) in lines.chunks(CHUNK).enumerate() {
                let strings = text::Strings::from_values(chunk.iter().copied()).unwrap();
                let mut payload = Vec::new();
                let codec = text::encode_utf8_chunk(&strings, requested, &mut payload).unwrap();
                put(k, codec, payload, chunk.len() as u32);
            }
        }
        LogicalType::Bits => {
            let total = VALUES as u64;
            for (k, chunk) in raw.chunks(CHUNK / 8).enumerate() {
                let n = (total - (k * CHUNK) as u64).min(CHUNK as u64);
                let mut payload = Vec::new();
                let codec = column::encode_values(ty, requested, chunk, n, &mut payload).unwrap();
                put(k, codec, payload, n as u32);
            }
        }
        _ => {
            for (k, chunk) in raw.chunks(CHUNK * ty.width()).enumerate() {
                let mut payload = Vec::new();
                let codec = column::encode_chunk(ty, requested, chunk, &mut payload).unwrap();
                put(k, codec, payload, (chunk.len() / ty.width()) as u32);
            }
        }
    }
    w.finish().unwrap();
}

fn word(p: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(p[4 * i..4 * i + 4].try_into().unwrap())
}

fn set_word(p: &mut [u8], i: usize, v: u32) {
    p[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
}

/// Word index of block `k`'s first word (int-common §3-§4: 4 header words, then
/// `block_count + 1` block_starts, then the data area).
fn block_word(p: &[u8], k: usize) -> usize {
    let block_size = word(p, 0) as usize;
    let blocks = (word(p, 2) as usize).div_ceil(block_size);
    4 + blocks + 1 + word(p, 4 + k) as usize
}

/// The golden files: name, type, requested codec.
fn golden_set() -> Vec<(String, LogicalType, Option<CodecId>)> {
    let mut set = Vec::new();
    for codec in CodecId::INTEGERS {
        for ty in [
            LogicalType::U8,
            LogicalType::I16,
            LogicalType::U32,
            LogicalType::I64,
        ] {
            set.push((format!("{}-{}", codec.name(), ty.name()), ty, Some(codec)));
        }
    }
    set.push(("auto-u32".into(), LogicalType::U32, None));
    // Format 1.1 types.
    for (ty, codecs) in [
        (
            LogicalType::Bytes,
            [Some(CodecId::Huffman), Some(CodecId::Lll), None],
        ),
        (
            LogicalType::Bits,
            [Some(CodecId::Wah), Some(CodecId::Plwah), None],
        ),
        (
            LogicalType::Utf8,
            [Some(CodecId::Huffman), Some(CodecId::Lll), None],
        ),
    ] {
        for c in codecs {
            let name = format!("{}-{}", c.map_or("auto", CodecId::name), ty.name());
            set.push((name, ty, c));
        }
    }
    set
}

/// Where a must-fail file fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Open,
    Chunk(usize),
}

type Patch = Box<dyn Fn(usize, &mut Vec<u8>, &mut u32)>;

/// A must-fail file: name, how it is made, where it fails, the variant.
struct MustFail {
    name: &'static str,
    ty: LogicalType,
    codec: CodecId,
    /// Values in the file.
    values: usize,
    /// Corrupts chunk payloads before they are written (checksum then recomputed).
    patch: Patch,
    /// Corrupts the finished file's bytes.
    damage: fn(&mut Vec<u8>),
    stage: Stage,
    variant: &'static str,
}

fn no_patch() -> Patch {
    Box::new(|_, _, _| {})
}

fn no_damage(_: &mut Vec<u8>) {}

/// Recomputes the directory checksum after the header was changed (so only the change under
/// test is wrong).
fn fix_directory_checksum(f: &mut [u8]) {
    let n = f.len();
    let off = u64::from_le_bytes(f[n - 32..n - 24].try_into().unwrap()) as usize;
    let sum = tessera_format::container::directory_checksum(&f[..16], &f[off..n - 32]);
    f[n - 16..n - 8].copy_from_slice(&sum.to_le_bytes());
}

fn must_fail_set() -> Vec<MustFail> {
    use LogicalType::*;
    let base = |name, damage, stage, variant| MustFail {
        name,
        ty: U32,
        codec: CodecId::For,
        values: VALUES,
        patch: no_patch(),
        damage,
        stage,
        variant,
    };
    let payload = |name, ty, codec, patch: Patch, stage, variant| MustFail {
        name,
        ty,
        codec,
        values: VALUES,
        patch,
        damage: no_damage,
        stage,
        variant,
    };
    // One chunk of 512 values whose header and directory both claim 65536: its block_starts
    // alone (513 words) would run past the payload's end.
    let counts_past_data = MustFail {
        values: CHUNK,
        ..payload(
            "for-counts-past-data",
            U32,
            CodecId::For,
            Box::new(|k, p, count| {
                if k == 0 {
                    set_word(p, 2, 65536);
                    *count = 65536;
                }
            }),
            Stage::Chunk(0),
            "Truncated",
        )
    };
    vec![
        // Format 1.1 types.
        payload(
            "utf8-data-size-too-big",
            Utf8,
            CodecId::Huffman,
            Box::new(|k, p, _| {
                if k == 0 {
                    set_word(p, 1, 0x7fff_ffff);
                }
            }),
            Stage::Chunk(0),
            "InvalidHeader",
        ),
        payload(
            "utf8-offsets-past-end",
            Utf8,
            CodecId::Lll,
            Box::new(|k, p, _| {
                if k == 1 {
                    set_word(p, 0, 0x00ff_ffff);
                }
            }),
            Stage::Chunk(1),
            "Truncated",
        ),
        payload(
            "utf8-last-end-mismatch",
            Utf8,
            CodecId::Huffman,
            Box::new(|k, p, _| {
                if k == 2 {
                    let d = word(p, 1);
                    set_word(p, 1, d - 1);
                }
            }),
            Stage::Chunk(2),
            "CountMismatch",
        ),
        payload(
            "bits-wah-count-mismatch",
            Bits,
            CodecId::Wah,
            Box::new(|k, _, count| {
                if k == 2 {
                    *count -= 1;
                }
            }),
            Stage::Chunk(2),
            "CountMismatch",
        ),
        payload(
            "bits-plain-padding-set",
            Bits,
            CodecId::Plain,
            Box::new(|k, p, _| {
                if k == 2 {
                    let last = p.len() - 1;
                    p[last] |= 0x80;
                }
            }),
            Stage::Chunk(2),
            "InvalidHeader",
        ),
        payload(
            "bytes-lll-cut",
            Bytes,
            CodecId::Lll,
            Box::new(|k, p, _| {
                if k == 1 {
                    p.truncate(p.len() - 3);
                }
            }),
            Stage::Chunk(1),
            "Truncated",
        ),
        payload(
            "bytes-huffman-count-mismatch",
            Bytes,
            CodecId::Huffman,
            Box::new(|k, _, count| {
                if k == 2 {
                    *count -= 1;
                }
            }),
            Stage::Chunk(2),
            "CountMismatch",
        ),
        counts_past_data,
        base("truncated", |f| f.truncate(40), Stage::Open, "Truncated"),
        base(
            "truncated-footer",
            |f| f.truncate(f.len() - 16),
            Stage::Open,
            "BadMagic",
        ),
        base("bad-magic", |f| f[1] = b'X', Stage::Open, "BadMagic"),
        base(
            "major-version-2",
            |f| {
                f[8] = 2;
                fix_directory_checksum(f);
            },
            Stage::Open,
            "UnsupportedVersion",
        ),
        base(
            "flipped-directory-bit",
            |f| {
                let n = f.len();
                f[n - 40] ^= 0x04; // inside the last chunk entry
            },
            Stage::Open,
            "ChecksumMismatch",
        ),
        base(
            "flipped-payload-bit",
            |f| {
                // Chunk 1 starts after chunk 0's payload; its header's total_count word is at +8.
                let c = Container::from_bytes(f.clone()).unwrap();
                let at = c.columns()[0].chunks[1].offset as usize + 8;
                f[at] ^= 0x01;
            },
            Stage::Chunk(1),
            "ChecksumMismatch",
        ),
        payload(
            "for-block-start-past-end",
            U32,
            CodecId::For,
            Box::new(|k, p, _| {
                if k == 0 {
                    set_word(p, 4 + 2, 0x00ff_ffff); // block_starts[2]
                }
            }),
            Stage::Chunk(0),
            "BlockStartOutOfRange",
        ),
        payload(
            "for-bit-width-over-lane",
            U32,
            CodecId::For,
            Box::new(|k, p, _| {
                if k == 0 {
                    let bw = block_word(p, 1) + 1; // after block 1's 1-word reference
                    p[4 * bw] = 33; // miniblock 0
                }
            }),
            Stage::Chunk(0),
            "BitWidthTooLarge",
        ),
        payload(
            "dfor-bit-width-over-lane",
            U32,
            CodecId::Dfor,
            Box::new(|k, p, _| {
                if k == 0 {
                    let bw = block_word(p, 2) + 1;
                    p[4 * bw + 3] = 40; // miniblock 3
                }
            }),
            Stage::Chunk(0),
            "BitWidthTooLarge",
        ),
        payload(
            "rfor-bit-width-over-lane-i64",
            I64,
            CodecId::Rfor,
            Box::new(|k, p, _| {
                if k == 0 {
                    let bw = block_word(p, 0) + 2 + 1; // 2-word value_reference, run_word
                    p[4 * bw] = 65; // value miniblock 0
                }
            }),
            Stage::Chunk(0),
            "BitWidthTooLarge",
        ),
        payload(
            "for-count-mismatch",
            U32,
            CodecId::For,
            Box::new(|k, p, _| {
                if k == 0 {
                    set_word(p, 2, 513); // header total_count; the directory keeps 512
                }
            }),
            Stage::Chunk(0),
            "CountMismatch",
        ),
        payload(
            "rfor-counts-past-data",
            U32,
            CodecId::Rfor,
            Box::new(|k, p, count| {
                if k == 2 {
                    // One value more than the runs of the last (476-value) chunk cover.
                    set_word(p, 2, 477);
                    *count = 477;
                }
            }),
            Stage::Chunk(2),
            "CountMismatch",
        ),
    ]
}

/// The variant's name, to compare error kinds exactly.
fn variant(e: &Error) -> &'static str {
    match e {
        Error::Truncated { .. } => "Truncated",
        Error::BadMagic { .. } => "BadMagic",
        Error::UnsupportedVersion { .. } => "UnsupportedVersion",
        Error::InvalidHeader { .. } => "InvalidHeader",
        Error::ChecksumMismatch { .. } => "ChecksumMismatch",
        Error::Misaligned { .. } => "Misaligned",
        Error::BlockStartOutOfRange { .. } => "BlockStartOutOfRange",
        Error::BitWidthTooLarge { .. } => "BitWidthTooLarge",
        Error::CountMismatch { .. } => "CountMismatch",
        Error::ValueOutOfRange { .. } => "ValueOutOfRange",
        Error::TrailingBytes { .. } => "TrailingBytes",
        Error::Unknown { .. } => "Unknown",
        Error::InvalidArgument(_) => "InvalidArgument",
        Error::Gpu(_) => "Gpu",
        Error::Io { .. } => "Io",
        _ => "other",
    }
}

/// Writes every golden and must-fail file into `out`.
fn generate(out: &Path) {
    std::fs::create_dir_all(out.join("must-fail")).unwrap();
    for (name, ty, codec) in golden_set() {
        let raw = values(codec.map_or("auto", CodecId::name), ty, VALUES);
        build(
            &out.join(format!("{name}.tsr")),
            ty,
            codec,
            &raw,
            &|_, _, _| {},
        );
        std::fs::write(out.join(format!("{name}.raw")), &raw).unwrap();
    }
    for m in must_fail_set() {
        let raw = values(m.codec.name(), m.ty, m.values);
        let path = out.join("must-fail").join(format!("{}.tsr", m.name));
        build(&path, m.ty, Some(m.codec), &raw, &*m.patch);
        let mut bytes = std::fs::read(&path).unwrap();
        (m.damage)(&mut bytes);
        std::fs::write(&path, bytes).unwrap();
    }
}

/// Decodes every chunk of every column with both decoders; returns the raw bytes of column 0,
/// or the stage and error of the first failure (checking the decoders agree on the variant).
fn decode_file(path: &Path) -> Result<Vec<u8>, (Stage, Error)> {
    let c = Container::open(path).map_err(|e| (Stage::Open, e))?;
    let mut all = Vec::new();
    for (ci, col) in c.columns().iter().enumerate() {
        for (k, ch) in col.chunks.iter().enumerate() {
            let payload = c.chunk_payload(ci, k).map_err(|e| (Stage::Chunk(k), e))?;
            let ty = col.logical_type;
            let n = ch.value_count as u64;
            let (r_fast, r_ref, fast, reference) = if ty == LogicalType::Utf8 {
                // The line form, every line terminated (the goldens' columns have no params).
                let lines = |s: text::Strings| {
                    let mut out = Vec::new();
                    for v in s.iter() {
                        out.extend_from_slice(v);
                        out.push(b'\n');
                    }
                    out
                };
                let f = text::decode_utf8_chunk(ch.codec, payload, ch.value_count);
                let r = text::decode_utf8_chunk_reference(ch.codec, payload, ch.value_count);
                let (fv, rv) = (
                    f.as_ref().ok().cloned().map(lines).unwrap_or_default(),
                    r.as_ref().ok().cloned().map(lines).unwrap_or_default(),
                );
                (f.map(|_| ()), r.map(|_| ()), fv, rv)
            } else {
                let mut fast = vec![0u8; ty.raw_len(n).unwrap() as usize];
                let mut reference = fast.clone();
                let f = column::decode_values(ty, ch.codec, payload, n, &mut fast);
                let r = column::decode_values_reference(ty, ch.codec, payload, n, &mut reference);
                (f, r, fast, reference)
            };
            match (r_fast, r_ref) {
                (Ok(()), Ok(())) => {
                    assert_eq!(
                        fast,
                        reference,
                        "{}: chunk {k}: fast and reference decoders differ",
                        path.display()
                    );
                    if ci == 0 {
                        all.extend_from_slice(&fast);
                    }
                }
                (Err(a), Err(b)) => {
                    assert_eq!(
                        variant(&a),
                        variant(&b),
                        "{}: decoders disagree: {a} / {b}",
                        path.display()
                    );
                    return Err((Stage::Chunk(k), a));
                }
                (a, b) => panic!(
                    "{}: chunk {k}: one decoder failed: {a:?} / {b:?}",
                    path.display()
                ),
            }
        }
    }
    Ok(all)
}

#[test]
fn golden_files_decode_to_their_raw_values() {
    let d = dir();
    for (name, ty, codec) in golden_set() {
        let path = d.join(format!("{name}.tsr"));
        let want = std::fs::read(d.join(format!("{name}.raw"))).unwrap();
        let got = decode_file(&path).unwrap_or_else(|(s, e)| panic!("{name}: {s:?}: {e}"));
        assert!(got == want, "{name}: decoded values differ from {name}.raw");
        let c = Container::open(&path).unwrap();
        // Integer files stay 1.0 files; the 1.1 types make a 1.1 file.
        assert_eq!(c.version(), (1, u16::from(!ty.is_integer())), "{name}");
        let col = &c.columns()[0];
        assert_eq!(
            (col.value_count as usize, col.chunks.len()),
            (VALUES, VALUES.div_ceil(CHUNK)),
            "{name}"
        );
        assert_eq!(col.requested_codec, codec, "{name}");
        if let Some(codec) = codec {
            assert!(
                col.chunks.iter().all(|ch| ch.codec == codec),
                "{name}: chunk codecs"
            );
        }
    }
}

/// Files written before LLL format 1.3 (4096-byte segments), kept in `testdata/v1/lll-1.2/` and
/// never regenerated: readers of 1.3 must keep decoding them (`docs/format/lll.md`, versions).
#[test]
fn lll_1_2_files_still_decode() {
    let d = dir().join("lll-1.2");
    for name in ["lll-bytes", "lll-utf8", "auto-utf8"] {
        let path = d.join(format!("{name}.tsr"));
        let want = std::fs::read(d.join(format!("{name}.raw"))).unwrap();
        let got = decode_file(&path).unwrap_or_else(|(s, e)| panic!("{name}: {s:?}: {e}"));
        assert!(got == want, "lll-1.2/{name}: decoded values differ");
        // They are the old layout, not copies of the current files.
        let current = std::fs::read(dir().join(format!("{name}.tsr"))).unwrap();
        assert!(
            std::fs::read(&path).unwrap() != current,
            "lll-1.2/{name} equals the current file"
        );
    }
}

#[test]
fn auto_golden_mixes_codecs() {
    let c = Container::open(dir().join("auto-u32.tsr")).unwrap();
    assert!(
        c.columns()[0].codec_mix().len() >= 2,
        "{:?}",
        c.columns()[0].codec_mix()
    );
}

#[test]
fn must_fail_files_fail_with_their_variant() {
    let d = dir().join("must-fail");
    let mut seen = 0;
    for m in must_fail_set() {
        let path = d.join(format!("{}.tsr", m.name));
        match decode_file(&path) {
            Ok(_) => panic!("{}: decoded without error", m.name),
            Err((stage, e)) => {
                assert_eq!(
                    (stage, variant(&e)),
                    (m.stage, m.variant),
                    "{}: {e}",
                    m.name
                );
            }
        }
        seen += 1;
    }
    // No stray files without an expectation.
    let on_disk = std::fs::read_dir(&d)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "tsr")
        })
        .count();
    assert_eq!(on_disk, seen, "every must-fail file has an expected error");
}

#[test]
fn golden_files_match_current_encoders() {
    let d = dir();
    if std::env::var("TESSERA_REGEN_GOLDEN").is_ok_and(|v| v == "1") {
        generate(&d);
        eprintln!("regenerated {}", d.display());
        return;
    }
    let fresh = tempfile::tempdir().unwrap();
    generate(fresh.path());
    let mut compared = 0;
    for sub in ["", "must-fail"] {
        for entry in std::fs::read_dir(fresh.path().join(sub)).unwrap() {
            let entry = entry.unwrap();
            if entry.path().is_dir() {
                continue;
            }
            let name = PathBuf::from(sub).join(entry.file_name());
            let old = std::fs::read(d.join(&name)).unwrap_or_else(|_| {
                panic!("testdata/v1/{} is missing: regenerate", name.display())
            });
            assert!(
                std::fs::read(entry.path()).unwrap() == old,
                "testdata/v1/{} differs from what the current writer and encoders produce",
                name.display()
            );
            compared += 1;
        }
    }
    assert_eq!(compared, golden_set().len() * 2 + must_fail_set().len());
}
