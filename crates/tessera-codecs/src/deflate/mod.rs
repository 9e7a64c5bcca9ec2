//! Deflate (RFC 1951) and its zlib (RFC 1950) and gzip (RFC 1952) wrappers on the CPU: the
//! reference that `tessera_gpu::codag`'s Deflate kernel must match, and the CPU path of
//! `tessera decompress file.gz`.
//!
//! Raw Deflate goes through `miniz_oxide` (pure Rust, so no C toolchain for the library crate;
//! its low-level API reports how many input bytes a stream used, which multi-member gzip and
//! the GPU's member search need). The wrappers are parsed here because the GPU path needs the
//! same header walk (where each member's Deflate data starts) without inflating; checksums come
//! from `crc32fast` and `adler2`.
//!
//! Every output is bounded by a caller's limit, so a hostile stream cannot make us allocate
//! more than the caller allowed.

mod parallel;
pub use parallel::{block_candidates, find_block_start, inflate_parallel};

/// The smallest gzip file [`gzip_decompress`] inflates in parallel.
pub const PARALLEL_MIN_BYTES: usize = 8 << 20;
/// The fewest threads with which [`gzip_decompress`] inflates in parallel.
pub const PARALLEL_MIN_THREADS: usize = 4;

use miniz_oxide::inflate::core::inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
use miniz_oxide::inflate::core::{decompress, DecompressorOxide};
use miniz_oxide::inflate::TINFLStatus;
use tessera_format::{Error, Result};

/// Inflates the raw Deflate stream at the start of `input` into at most `limit` bytes; returns
/// the output and the input bytes the stream used (bytes after its final block are left).
pub fn inflate(input: &[u8], limit: usize) -> Result<(Vec<u8>, usize)> {
    let mut st = Box::<DecompressorOxide>::default();
    let mut out = vec![0u8; input.len().saturating_mul(4).max(256).min(limit.max(1))];
    let (mut in_pos, mut out_pos) = (0usize, 0usize);
    loop {
        let (status, used, wrote) = decompress(
            &mut st,
            &input[in_pos..],
            &mut out,
            out_pos,
            TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF,
        );
        in_pos += used;
        out_pos += wrote;
        match status {
            // The first buffer is at least one byte even for a limit of 0: the limit is
            // checked on what the stream produced.
            TINFLStatus::Done if out_pos > limit => {
                return Err(Error::CountMismatch {
                    what: "Deflate output bytes (at most the limit)",
                    expected: limit as u64,
                    found: out_pos as u64,
                })
            }
            TINFLStatus::Done => {
                out.truncate(out_pos);
                return Ok((out, in_pos));
            }
            TINFLStatus::HasMoreOutput => {
                if out.len() >= limit {
                    return Err(Error::CountMismatch {
                        what: "Deflate output bytes (at most the limit)",
                        expected: limit as u64,
                        found: limit as u64 + 1,
                    });
                }
                let grow = out.len().saturating_mul(2).min(limit);
                out.resize(grow, 0);
            }
            TINFLStatus::NeedsMoreInput | TINFLStatus::FailedCannotMakeProgress => {
                return Err(Error::Truncated {
                    what: "Deflate stream",
                    offset: in_pos as u64,
                    needed: 1,
                    available: 0,
                })
            }
            other => {
                return Err(Error::InvalidHeader {
                    field: "Deflate data (RFC 1951)",
                    offset: in_pos as u64,
                    expected: "a valid block".into(),
                    found: (other as i8) as i64 as u64,
                })
            }
        }
    }
}

/// Where a zlib stream's Deflate data starts (RFC 1950 §2.2: CM = 8, CINFO <= 7, FCHECK, no
/// preset dictionary).
pub fn zlib_header(input: &[u8]) -> Result<usize> {
    if input.len() < 2 {
        return Err(Error::Truncated {
            what: "zlib header",
            offset: 0,
            needed: 2,
            available: input.len() as u64,
        });
    }
    let (cmf, flg) = (input[0], input[1]);
    let bad = |field, expected: &str, found: u64| Error::InvalidHeader {
        field,
        offset: 0,
        expected: expected.into(),
        found,
    };
    if cmf & 15 != 8 || cmf >> 4 > 7 {
        return Err(bad("zlib CMF", "CM 8, CINFO <= 7", cmf as u64));
    }
    if (cmf as u32 * 256 + flg as u32) % 31 != 0 {
        return Err(bad(
            "zlib FCHECK",
            "CMF*256+FLG divisible by 31",
            flg as u64,
        ));
    }
    if flg & 0x20 != 0 {
        return Err(bad("zlib FDICT", "0 (preset dictionaries unsupported)", 1));
    }
    Ok(2)
}

/// Inflates a zlib stream (Adler-32 checked) into at most `limit` bytes; returns the output and
/// the bytes used.
pub fn zlib_decompress(input: &[u8], limit: usize) -> Result<(Vec<u8>, usize)> {
    let start = zlib_header(input)?;
    let (out, used) = inflate(&input[start..], limit)?;
    let end = start + used;
    let stored = input.get(end..end + 4).ok_or(Error::Truncated {
        what: "zlib Adler-32",
        offset: end as u64,
        needed: 4,
        available: input.len().saturating_sub(end) as u64,
    })?;
    check_adler(
        &out,
        u32::from_be_bytes([stored[0], stored[1], stored[2], stored[3]]),
    )?;
    Ok((out, end + 4))
}

/// Compares `data`'s Adler-32 with the stored one.
pub fn check_adler(data: &[u8], stored: u32) -> Result<()> {
    let found = adler2::adler32_slice(data);
    if found != stored {
        return Err(Error::ChecksumMismatch {
            what: "zlib Adler-32".into(),
            expected: stored as u64,
            found: found as u64,
        });
    }
    Ok(())
}

/// One gzip member's header facts (RFC 1952 §2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GzipHeader {
    /// Bytes of the header: the Deflate data starts here (relative to the member).
    pub len: usize,
}

/// Parses the gzip member header at the start of `input`: magic, CM = 8, no reserved flags,
/// optional FEXTRA, FNAME, FCOMMENT, and FHCRC (checked).
pub fn gzip_header(input: &[u8]) -> Result<GzipHeader> {
    let trunc = |at: usize, needed: usize| Error::Truncated {
        what: "gzip header",
        offset: at as u64,
        needed: needed as u64,
        available: input.len().saturating_sub(at) as u64,
    };
    if input.len() < 10 {
        return Err(trunc(0, 10));
    }
    if input[0..2] != [0x1f, 0x8b] {
        return Err(Error::BadMagic {
            offset: 0,
            expected: vec![0x1f, 0x8b],
            found: input[0..2].to_vec(),
        });
    }
    if input[2] != 8 {
        return Err(Error::InvalidHeader {
            field: "gzip CM",
            offset: 2,
            expected: "8 (Deflate)".into(),
            found: input[2] as u64,
        });
    }
    let flg = input[3];
    if flg & 0xe0 != 0 {
        return Err(Error::InvalidHeader {
            field: "gzip FLG",
            offset: 3,
            expected: "reserved bits 5-7 clear".into(),
            found: flg as u64,
        });
    }
    let mut at = 10usize;
    if flg & 4 != 0 {
        let x = input.get(at..at + 2).ok_or_else(|| trunc(at, 2))?;
        let xlen = u16::from_le_bytes([x[0], x[1]]) as usize;
        at += 2;
        input.get(at..at + xlen).ok_or_else(|| trunc(at, xlen))?;
        at += xlen;
    }
    for bit in [8u8, 16] {
        if flg & bit != 0 {
            let z = input[at.min(input.len())..]
                .iter()
                .position(|&b| b == 0)
                .ok_or_else(|| trunc(at, 1))?;
            at += z + 1;
        }
    }
    if flg & 2 != 0 {
        let c = input.get(at..at + 2).ok_or_else(|| trunc(at, 2))?;
        let stored = u16::from_le_bytes([c[0], c[1]]);
        let found = crc32fast::hash(&input[..at]) as u16;
        if stored != found {
            return Err(Error::ChecksumMismatch {
                what: "gzip header CRC16".into(),
                expected: stored as u64,
                found: found as u64,
            });
        }
        at += 2;
    }
    Ok(GzipHeader { len: at })
}

/// Checks a gzip member's trailer (CRC-32 and ISIZE, little endian) against its output.
pub fn check_gzip_trailer(data: &[u8], trailer: &[u8], member_at: usize) -> Result<()> {
    let t = trailer.get(..8).ok_or(Error::Truncated {
        what: "gzip trailer",
        offset: member_at as u64,
        needed: 8,
        available: trailer.len() as u64,
    })?;
    let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
    let isize = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
    let found = crc32fast::hash(data);
    if found != crc {
        return Err(Error::ChecksumMismatch {
            what: format!("gzip CRC-32 of the member at byte {member_at}"),
            expected: crc as u64,
            found: found as u64,
        });
    }
    if isize != data.len() as u32 {
        return Err(Error::CountMismatch {
            what: "gzip ISIZE (output bytes mod 2^32)",
            expected: isize as u64,
            found: data.len() as u32 as u64,
        });
    }
    Ok(())
}

/// Whether [`gzip_decompress`] tries the parallel decoder on the first member of `input` with
/// `threads` threads: the file holds at least [`PARALLEL_MIN_BYTES`], at least
/// [`PARALLEL_MIN_THREADS`] threads are at hand (per core that decoder is slower than
/// `miniz_oxide`, so fewer would not gain), and another gzip header parses at no more than one
/// offset per 4 MiB. A header-like pattern inside compressed data turns up about once in tens of
/// MiB, so a large single member still qualifies; a file of many small members (as bgzip
/// writes) has far more and decodes member by member. Where a file of a few large members
/// qualifies, the speculative spans past the first member are wasted work, done once.
pub fn tries_parallel(input: &[u8], threads: usize) -> bool {
    if threads < PARALLEL_MIN_THREADS || input.len() < PARALLEL_MIN_BYTES {
        return false;
    }
    let most = input.len() >> 22;
    (1..input.len().saturating_sub(9))
        .filter(|&p| input[p..p + 3] == [0x1f, 0x8b, 8] && gzip_header(&input[p..]).is_ok())
        .nth(most)
        .is_none()
}

/// Decompresses a whole gzip file, every member (RFC 1952 §2.2: members follow each other),
/// into at most `limit` bytes; each member's CRC-32 and ISIZE are checked.
///
/// The first member of a file for which [`tries_parallel`] holds is inflated in parallel
/// ([`inflate_parallel`]); where that fails, and for every later member, the sequential decoder
/// decides, so errors are the same either way.
pub fn gzip_decompress(input: &[u8], limit: usize) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    let threads = rayon::current_num_threads();
    let mut parallel = tries_parallel(input, threads);
    loop {
        let h = gzip_header(&input[at..]).map_err(|e| shift(e, at))?;
        let data_at = at + h.len;
        let body = &input[data_at..];
        let left = limit - out.len();
        // A failure of the parallel decoder (corrupt data, or spans from false block candidates
        // over their memory budget) is left to the sequential one, whose errors are the
        // reference.
        let (member, used) = match parallel.then(|| {
            let span = (body.len() / (4 * threads)).clamp(1 << 20, 16 << 20);
            inflate_parallel(body, left, span)
        }) {
            Some(Ok(r)) => r,
            _ => inflate(body, left).map_err(|e| shift(e, data_at))?,
        };
        parallel = false;
        let end = data_at + used;
        check_gzip_trailer(&member, &input[end..], at)?;
        if out.is_empty() {
            out = member;
        } else {
            out.extend_from_slice(&member);
        }
        at = end + 8;
        if at == input.len() {
            return Ok(out);
        }
    }
}

/// Moves an error's offset by `by` (a member's position in the file).
fn shift(e: Error, by: usize) -> Error {
    match e {
        Error::Truncated {
            what,
            offset,
            needed,
            available,
        } => Error::Truncated {
            what,
            offset: offset + by as u64,
            needed,
            available,
        },
        Error::InvalidHeader {
            field,
            offset,
            expected,
            found,
        } => Error::InvalidHeader {
            field,
            offset: offset + by as u64,
            expected,
            found,
        },
        Error::BadMagic {
            offset,
            expected,
            found,
        } => Error::BadMagic {
            offset: offset + by as u64,
            expected,
            found,
        },
        e => e,
    }
}
