//! gzip files (RFC 1952) on the GPU: every member's Deflate data in one launch.
//!
//! Where a member ends is only known once its Deflate data is decoded, so the members are found
//! speculatively: every offset where a valid gzip header parses (`tessera_codecs::deflate::
//! gzip_header`) is a candidate, and each candidate's Deflate stream is decoded in the same
//! launch, its output capacity bounded by the ISIZE stored in the 4 bytes before the next
//! candidate (the file's last 4 bytes for the last one) and by Deflate's largest expansion
//! (1032:1) of the bytes up to it, so no capacity comes from an unchecked field alone. The true
//! members are then the chain from offset 0: a member at `p` whose stream used `u` bytes is
//! followed by the next at `p + header + u + 8` (or by the end of the file). False candidates
//! (a header-like pattern inside compressed data) only cost their decode. CRC-32 and ISIZE of
//! every member are checked on the host. When the chain breaks on the GPU (a true member's
//! capacity was cut by a false candidate's ISIZE, or the output of a member reaches 4 GiB so
//! its ISIZE wrapped), the caller gets `None` and decodes on the CPU.
//!
//! A file of at least [`SPAN_MIN_BYTES`] is first tried as a single member whose one Deflate
//! stream is decoded in parallel, a warp per span ([`gunzip_single`], [`super::spans`]); when the
//! first member does not end at the file's end the members are decoded as above. A single-member
//! file below that size decodes on one warp.

use tessera_codecs::deflate as cpu;
use tessera_format::{Error, Result};

use super::spans::{inflate_spans, SpanReport};
use super::{decode_chunks_with_results, Chunk, Decoder};
use crate::Gpu;

/// Files at least this large are first tried as one member decoded in spans.
pub const SPAN_MIN_BYTES: usize = 1 << 20;
/// Input bytes per span: more spans decode faster but cost more block candidate searches on
/// the host; 256 KiB was the fastest of 16 KiB to 1 MiB on 200 MB of text
/// (`bench/results/codag-h200.md`).
pub const SPAN_BYTES: usize = 256 << 10;

/// What the GPU did with a gzip file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GunzipReport {
    /// Members of the file.
    pub members: usize,
    /// Candidate member starts decoded (members + false candidates), or block candidates of a
    /// single member decoded in spans.
    pub candidates: usize,
    /// Spans of the chain when the file was decoded as one member in spans, else 0.
    pub spans: usize,
}

/// The gzip file `file` as exactly one member whose Deflate stream is decoded in spans of about
/// `span_bytes` on the GPU. `Ok(None)` when the file is not exactly one member, when the span
/// decoder fails or when the CRC-32 or ISIZE do not match: the caller then decodes the file
/// another way, whose outcome (output or error) is the reference. Errors: the file's first
/// bytes are no gzip header, or a CUDA failure.
pub fn gunzip_single(
    gpu: &Gpu,
    file: &[u8],
    span_bytes: usize,
) -> Result<Option<(Vec<u8>, SpanReport)>> {
    let h = cpu::gzip_header(file)?.len;
    let Some((data, used, report)) = inflate_spans(gpu, &file[h..], usize::MAX, span_bytes)? else {
        return Ok(None);
    };
    let end = h + used;
    match file.get(end..) {
        Some(trailer) if trailer.len() == 8 => {}
        _ => return Ok(None),
    }
    if cpu::check_gzip_trailer(&data, &file[end..], 0).is_err() {
        return Ok(None);
    }
    Ok(Some((data, report)))
}

/// Deflate's largest expansion: a 258-byte match in at most 2 bits gives under 1032 output
/// bytes per input byte.
const MAX_RATIO: usize = 1032;

/// Decodes the gzip file `file` on the GPU; `Ok(None)` when its members could not all be
/// decoded there (the caller falls back to the CPU). Errors: the file's first bytes are no gzip
/// header, a checksum fails, or the launch fails.
pub fn gunzip(gpu: &Gpu, file: &[u8]) -> Result<Option<(Vec<u8>, GunzipReport)>> {
    cpu::gzip_header(file)?;
    if file.len() >= SPAN_MIN_BYTES {
        if let Some((data, r)) = gunzip_single(gpu, file, SPAN_BYTES)? {
            let report = GunzipReport {
                members: 1,
                candidates: r.candidates,
                spans: r.chain,
            };
            return Ok(Some((data, report)));
        }
    }
    let starts: Vec<(usize, usize)> = (0..file.len().saturating_sub(9))
        .filter(|&p| file[p] == 0x1f && file[p + 1] == 0x8b && file[p + 2] == 8)
        .filter_map(|p| cpu::gzip_header(&file[p..]).ok().map(|h| (p, h.len)))
        .collect();
    let mut chunks = Vec::with_capacity(starts.len());
    for (k, &(p, h)) in starts.iter().enumerate() {
        let next = starts.get(k + 1).map_or(file.len(), |s| s.0);
        let isize = if next >= 4 && next - 4 >= p + h {
            u32::from_le_bytes([
                file[next - 4],
                file[next - 3],
                file[next - 2],
                file[next - 1],
            ]) as usize
        } else {
            0
        };
        let cap = isize.min((next - (p + h)).saturating_mul(MAX_RATIO));
        chunks.push(Chunk {
            input: &file[p + h..next.max(p + h)],
            out_cap: cap,
            signed: false,
        });
    }
    let outs = decode_chunks_with_results(gpu, Decoder::Deflate, &chunks)?;
    let mut out = Vec::new();
    let (mut k, mut members) = (0usize, 0usize);
    loop {
        let (p, h) = starts[k];
        let (r, Ok(data)) = &outs[k] else {
            return Ok(None);
        };
        let end = p + h + r.in_used;
        let trailer = file.get(end..end + 8).ok_or(Error::Truncated {
            what: "gzip trailer",
            offset: end as u64,
            needed: 8,
            available: file.len().saturating_sub(end) as u64,
        })?;
        cpu::check_gzip_trailer(data, trailer, p)?;
        out.extend_from_slice(data);
        members += 1;
        let next = end + 8;
        if next == file.len() {
            let report = GunzipReport {
                members,
                candidates: starts.len(),
                spans: 0,
            };
            return Ok(Some((out, report)));
        }
        // The next member must start right after this one's trailer.
        match starts[k + 1..].iter().position(|s| s.0 == next) {
            Some(j) => k += 1 + j,
            None => {
                cpu::gzip_header(&file[next..])?;
                return Ok(None);
            }
        }
    }
}
