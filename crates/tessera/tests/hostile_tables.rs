//! Golden tables (`testdata/v1/tables/`) with hostile bytes behind valid checksums. Directory
//! bytes, chunk payload bytes (their headers above all) and footer fields are changed, and the
//! checksums each change breaks are recomputed (`container.md` §4-5), so the change reaches the
//! directory, table and codec parsers instead of stopping at a checksum. Each file is read whole
//! through the Arrow reader on the CPU and, when a GPU opens, through the GPU engine and into
//! device memory as Arrow arrays (`read_gpu_arrow`). Nothing may panic; and the GPU agrees with
//! the CPU on every file: both reject it, or both accept it (the GPU engine giving the same
//! batch).

use std::panic::{catch_unwind, AssertUnwindSafe};

use arrow_array::RecordBatch;
use tessera::arrow::ArrowTableReader;
use tessera::format::container::{directory_checksum, FOOTER_LEN, HEADER_LEN};
use tessera::{Engine, Error, Result, TableReader};

/// A golden table and where its checksummed parts lie.
struct Golden {
    name: String,
    bytes: Vec<u8>,
    /// The directory's offset and length (from the footer).
    directory: (usize, usize),
    /// Every chunk payload: offset, length, and where its checksum sits in the file (`None`
    /// where another chunk has the same checksum, so the field is not found unambiguously).
    payloads: Vec<(usize, usize, Option<usize>)>,
}

fn golden() -> Vec<Golden> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/v1/tables");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("testdata/v1/tables")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "tsr"))
        .collect();
    names.sort();
    assert!(
        names.len() >= 5,
        "golden tables missing in {}",
        dir.display()
    );
    names
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).expect("read");
            let t = TableReader::from_bytes(bytes.clone()).expect("a golden table opens");
            let footer = bytes.len() - FOOTER_LEN;
            let word = |at: usize| {
                u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes")) as usize
            };
            let directory = (word(footer), word(footer + 8));
            let dir_bytes = &bytes[directory.0..directory.0 + directory.1];
            let mut payloads = Vec::new();
            for c in t.columns() {
                for ch in &c.chunks {
                    let sum = ch.checksum.to_le_bytes();
                    let mut hits = dir_bytes
                        .windows(8)
                        .enumerate()
                        .filter(|(_, w)| *w == sum)
                        .map(|(i, _)| directory.0 + i);
                    let at = match (hits.next(), hits.next()) {
                        (Some(at), None) => Some(at),
                        _ => None,
                    };
                    payloads.push((ch.offset as usize, ch.compressed_size as usize, at));
                }
            }
            Golden {
                name: path.file_name().expect("name").to_string_lossy().into(),
                bytes,
                directory,
                payloads,
            }
        })
        .collect()
}

/// A deterministic generator (xorshift64*) for positions and changes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    /// A change to one byte: flips of one bit or all, a step, or an extreme value.
    fn change(&mut self, b: u8) -> u8 {
        match self.below(6) {
            0 => b ^ 0xFF,
            1 => b ^ (1 << self.below(8)),
            2 => b.wrapping_add(1),
            3 => b.wrapping_sub(1),
            4 => 0,
            _ => 0xFF,
        }
    }
}

/// The directory checksum in the footer recomputed for `bytes` as they are now.
fn fix_directory_checksum(bytes: &mut [u8], directory: (usize, usize)) {
    let sum = directory_checksum(
        &bytes[..HEADER_LEN],
        &bytes[directory.0..directory.0 + directory.1],
    );
    let at = bytes.len() - FOOTER_LEN + 16;
    bytes[at..at + 8].copy_from_slice(&sum.to_le_bytes());
}

/// One hostile file: what was changed (for failure messages), whether only a payload was, and
/// the bytes.
struct Case {
    what: String,
    payload_only: bool,
    bytes: Vec<u8>,
}

/// About `n` hostile variants of `g`: a third in the directory, the rest in payloads (half of
/// those in the first 32 bytes of a payload, where codec headers are), and a few footer fields
/// and truncations; every checksum the change breaks recomputed.
fn cases(g: &Golden, n: usize, rng: &mut Rng) -> Vec<Case> {
    let mut out = Vec::new();
    let (d_at, d_len) = g.directory;
    for _ in 0..n / 3 {
        let at = d_at + rng.below(d_len);
        let mut b = g.bytes.clone();
        b[at] = rng.change(b[at]);
        if b[at] == g.bytes[at] {
            continue;
        }
        fix_directory_checksum(&mut b, g.directory);
        out.push(Case {
            what: format!("{}: directory byte {}", g.name, at - d_at),
            payload_only: false,
            bytes: b,
        });
    }
    let fixable: Vec<_> = g
        .payloads
        .iter()
        .filter_map(|&(off, len, sum_at)| Some((off, len, sum_at?)))
        .filter(|&(_, len, _)| len > 0)
        .collect();
    assert!(!fixable.is_empty(), "{}: no payload checksum found", g.name);
    for i in 0..n - n / 3 {
        let (off, len, sum_at) = fixable[rng.below(fixable.len())];
        let rel = if i % 2 == 0 {
            rng.below(len.min(32))
        } else {
            rng.below(len)
        };
        let mut b = g.bytes.clone();
        b[off + rel] = rng.change(b[off + rel]);
        if b[off + rel] == g.bytes[off + rel] {
            continue;
        }
        let sum = tessera::format::container::checksum(&b[off..off + len]);
        b[sum_at..sum_at + 8].copy_from_slice(&sum.to_le_bytes());
        fix_directory_checksum(&mut b, g.directory);
        out.push(Case {
            what: format!("{}: payload at {off}, byte {rel} of {len}", g.name),
            payload_only: true,
            bytes: b,
        });
    }
    // The footer's directory offset and length moved, with the checksum over what they name
    // where that range is inside the file; and the file cut short.
    let footer = g.bytes.len() - FOOTER_LEN;
    for (field, delta) in [(0usize, 16i64), (0, -16), (8, 1), (8, -1), (8, 4096)] {
        let mut b = g.bytes.clone();
        let old = [g.directory.0, g.directory.1][field / 8] as i64;
        let new = (old + delta).max(0) as u64;
        b[footer + field..footer + field + 8].copy_from_slice(&new.to_le_bytes());
        let moved = if field == 0 {
            (new as usize, d_len)
        } else {
            (d_at, new as usize)
        };
        if moved.0 + moved.1 <= footer {
            fix_directory_checksum(&mut b, moved);
        }
        out.push(Case {
            what: format!("{}: footer field {field} {delta:+}", g.name),
            payload_only: false,
            bytes: b,
        });
    }
    for cut in [1, 8, FOOTER_LEN, FOOTER_LEN + 1, FOOTER_LEN + d_len / 2] {
        out.push(Case {
            what: format!("{}: {cut} bytes cut off", g.name),
            payload_only: false,
            bytes: g.bytes[..g.bytes.len().saturating_sub(cut)].to_vec(),
        });
    }
    out
}

/// The whole table read on the CPU (or through `engine`).
fn read_with(bytes: &[u8], engine: &mut Engine) -> Result<RecordBatch> {
    let t = TableReader::from_bytes(bytes.to_vec())?;
    let r = ArrowTableReader::new(&t, None)?;
    r.read_all(engine)
}

/// Every field decoded into device memory in Arrow's layout (`read_gpu_arrow`: what leaves
/// through the Arrow C Device Data Interface); `Ok` with the field count. (`read_gpu` alone
/// leaves ALP fields as stored, checked when `into_arrow` decodes them.)
fn read_device(bytes: &[u8], gpu: &tessera::gpu::Gpu) -> Result<usize> {
    let t = TableReader::from_bytes(bytes.to_vec())?;
    let r = ArrowTableReader::new(&t, None)?;
    Ok(r.read_gpu_arrow(gpu)?.len())
}

/// A read's outcome in a line: what it read, or its error.
fn verdict<T>(r: &Result<T>) -> String {
    match r {
        Ok(_) => "read it".into(),
        Err(e) => format!("failed: {e}"),
    }
}

/// Runs `f`, turning a panic into a test failure that names the case.
fn no_panic<T>(what: &str, path: &str, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| panic!("{what}: the {path} panicked"))
}

/// How many hostile variants of each golden table: 240, or `TESSERA_HOSTILE_CASES` for a
/// longer sweep.
fn cases_per_table() -> usize {
    std::env::var("TESSERA_HOSTILE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(240)
}

#[test]
fn hostile_golden_tables_fail_cleanly_and_alike_on_cpu_and_gpu() {
    let mut gpu = Engine::open(tessera::Device::Gpu)
        .map_err(|e| tessera::gpu::testing::skipped(&e))
        .ok();
    let per_table = cases_per_table();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut total, mut accepted, mut decoder_errors) = (0usize, 0usize, 0usize);
    let mut disagreements: Vec<String> = Vec::new();
    for g in golden() {
        read_with(&g.bytes, &mut Engine::cpu()).expect("a golden table reads");
        for case in cases(&g, per_table, &mut rng) {
            total += 1;
            let cpu = no_panic(&case.what, "CPU read", || {
                read_with(&case.bytes, &mut Engine::cpu())
            });
            match &cpu {
                // A changed directory may describe another valid table (a name, a time zone,
                // fewer fields: `table.md` §4 asks no field for every column).
                Ok(_) => accepted += 1,
                // A payload's checksum was recomputed: what rejects it is the decoder.
                Err(Error::ChecksumMismatch { .. }) if case.payload_only => {
                    panic!("{}: the checksum was not recomputed", case.what)
                }
                Err(_) if case.payload_only => decoder_errors += 1,
                Err(_) => {}
            }
            let Some(engine) = gpu.as_mut() else {
                continue;
            };
            let via_gpu = no_panic(&case.what, "GPU engine read", || {
                read_with(&case.bytes, engine)
            });
            match (&cpu, &via_gpu) {
                (Ok(a), Ok(b)) if a != b => {
                    disagreements.push(format!("{}: the GPU decodes otherwise", case.what))
                }
                (Ok(_), Ok(_)) | (Err(_), Err(_)) => {}
                _ => disagreements.push(format!(
                    "{}: CPU {}, GPU engine {}",
                    case.what,
                    verdict(&cpu),
                    verdict(&via_gpu)
                )),
            }
            let resident = no_panic(&case.what, "device-resident read", || {
                read_device(&case.bytes, engine.gpu().expect("a GPU engine has a GPU"))
            });
            if resident.is_ok() != cpu.is_ok() {
                disagreements.push(format!(
                    "{}: CPU {}, device-resident read {}",
                    case.what,
                    verdict(&cpu),
                    verdict(&resident)
                ));
            }
        }
    }
    // Every disagreement at once (the first ones), so that one run on a GPU shows each kind.
    assert!(
        disagreements.is_empty(),
        "{} disagreements between the GPU and the CPU, the first:\n{}",
        disagreements.len(),
        disagreements[..disagreements.len().min(25)].join("\n")
    );
    println!(
        "{total} hostile variants of the golden tables: {accepted} read (changes the formats \
         cannot see, such as a value's bits), {} rejected ({decoder_errors} of them by a \
         decoder behind a valid checksum){}",
        total - accepted,
        if gpu.is_some() {
            ", the GPU agreeing on each"
        } else {
            ""
        }
    );
    // The changes reach past the checksums: decoders reject some payloads, and some payload
    // changes are values that decode.
    assert!(total >= 5 * per_table, "{total} variants");
    assert!(accepted > 0, "no variant read");
    assert!(decoder_errors > 0, "no decoder saw a hostile payload");
}
