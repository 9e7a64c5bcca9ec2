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
//!
//! Many files ([`gunzip_many`]): the candidates of every file are the chunks of one launch, each
//! file's members followed and checked as above; a file the GPU cannot finish (a bad file, a
//! broken chain) is decoded on the CPU, so its outcome is the CPU's, while the other files keep
//! their GPU output. A file of at least [`MANY_ALONE_BYTES`] goes to [`gunzip`] on its own.

use tessera_codecs::deflate as cpu;
use tessera_format::{Error, Result};

use rayon::prelude::*;

use super::spans::{inflate_spans, SpanReport};
use super::{decode_to_host, Chunk, Decoder, HostImage};
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

/// Every offset of `file` where a gzip member header parses (`(offset, header bytes)`), and a
/// chunk per candidate: its Deflate data up to the next candidate, its capacity the ISIZE in
/// the 4 bytes before the next candidate (the file's last 4 for the last one) bounded by
/// [`MAX_RATIO`] of those bytes.
fn member_candidates(file: &[u8]) -> (Vec<(usize, usize)>, Vec<Chunk<'_>>) {
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
    (starts, chunks)
}

/// Follows the members of `file` from offset 0 through its candidates `starts` (decoded as
/// chunks `first..` of `d`): the file's output and its member count, `Ok(None)` when the chain
/// breaks on the GPU. Errors: a member's trailer is missing or does not match its output, or
/// the bytes after a member are no gzip header.
fn follow_members(
    file: &[u8],
    starts: &[(usize, usize)],
    d: &HostImage,
    first: usize,
) -> Result<Option<(Vec<u8>, usize)>> {
    let mut out = Vec::new();
    let (mut k, mut members) = (0usize, 0usize);
    loop {
        let Some(&(p, h)) = starts.get(k) else {
            return Ok(None);
        };
        let (Some(r), Some(data)) = (d.results.get(first + k), d.output(first + k)) else {
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
            return Ok(Some((out, members)));
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
    let (starts, chunks) = member_candidates(file);
    let d = decode_to_host(gpu, Decoder::Deflate, &chunks)?;
    Ok(follow_members(file, &starts, &d, 0)?.map(|(out, members)| {
        (
            out,
            GunzipReport {
                members,
                candidates: starts.len(),
                spans: 0,
            },
        )
    }))
}

/// A file at least this large is decoded by [`gunzip`] on its own rather than in the batch of
/// [`gunzip_many`]: a batch launch lasts as long as its longest member, and one warp decodes
/// 31-81 MB/s of output, so a member of this size on one warp (about 0.1-1 s) would hold the
/// whole batch, while [`gunzip`] decodes it in spans. Below it, the batch's other members run
/// beside the longest one. Chosen from those one-warp figures, not tuned.
pub const MANY_ALONE_BYTES: usize = 8 << 20;

/// Device bytes (compressed input plus output capacity) one [`gunzip_many`] launch takes at
/// most: files are gathered in order into a launch until the next would pass it. A file whose
/// own capacities pass it (only an ISIZE far beyond what its bytes are likely to hold, or
/// Deflate data close to its largest expansion) decodes on the CPU, whose output grows with
/// what is decoded.
pub const MANY_LAUNCH_BYTES: usize = 4 << 30;

/// What [`gunzip_many`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GunzipManyReport {
    /// Files given.
    pub files: usize,
    /// Batch launches (one unless the files' capacities pass [`MANY_LAUNCH_BYTES`]).
    pub launches: usize,
    /// Files decoded in a batch launch.
    pub batched: usize,
    /// Members of those files.
    pub members: usize,
    /// Candidate member starts decoded in the batch launches (members + false candidates).
    pub candidates: usize,
    /// Files of at least [`MANY_ALONE_BYTES`] decoded by [`gunzip`] on their own.
    pub alone: usize,
    /// Files decoded on the CPU: a bad file (its error is the CPU's), or one the GPU declined.
    pub cpu: usize,
}

/// Reports of several calls (a caller that takes its files in groups) added field by field.
impl std::ops::AddAssign for GunzipManyReport {
    fn add_assign(&mut self, r: Self) {
        self.files += r.files;
        self.launches += r.launches;
        self.batched += r.batched;
        self.members += r.members;
        self.candidates += r.candidates;
        self.alone += r.alone;
        self.cpu += r.cpu;
    }
}

/// Decodes many gzip files (RFC 1952, every member, CRC-32 and ISIZE checked) on the GPU, the
/// members of all files in one launch: each file's output or its error (exactly the CPU's,
/// `tessera_codecs::deflate::gzip_decompress`). Errors: the launch fails.
pub fn gunzip_many(gpu: &Gpu, files: &[&[u8]]) -> Result<Vec<Result<Vec<u8>>>> {
    Ok(gunzip_many_with_report(gpu, files)?.0)
}

/// How one file of a [`gunzip_many`] call is decoded.
enum Route {
    /// In batch launch `launch`, its candidates from chunk `first` on.
    Batch {
        launch: usize,
        first: usize,
        starts: Vec<(usize, usize)>,
    },
    /// By [`gunzip`] on its own.
    Alone,
    /// On the CPU.
    Cpu,
}

/// [`gunzip_many`] with what it did.
///
/// Each file's member headers are found as [`gunzip`] finds them (every offset where a header
/// parses is a candidate, its capacity bounded by Deflate's largest expansion of its bytes, so
/// no capacity comes from ISIZE alone); the candidates of all files are chunks of one launch
/// (more only past [`MANY_LAUNCH_BYTES`]); each file's members are then followed from its
/// offset 0 and their CRC-32 and ISIZE checked. A file whose header does not parse, whose
/// chain breaks (a member the kernel flags, a member whose output differs from its ISIZE, a
/// false candidate cutting a member's capacity, bytes after a member that are no member) or
/// whose capacities pass the launch budget is decoded on the CPU (files in parallel), so its
/// outcome, output or error, is the CPU's. A file of at least [`MANY_ALONE_BYTES`] goes to
/// [`gunzip`] (one member in spans), and to the CPU where that declines.
pub fn gunzip_many_with_report(
    gpu: &Gpu,
    files: &[&[u8]],
) -> Result<(Vec<Result<Vec<u8>>>, GunzipManyReport)> {
    let mut report = GunzipManyReport {
        files: files.len(),
        ..GunzipManyReport::default()
    };
    let mut routes = Vec::with_capacity(files.len());
    let mut launches: Vec<Vec<Chunk<'_>>> = Vec::new();
    let mut launch_bytes = 0usize;
    for file in files {
        if cpu::gzip_header(file).is_err() {
            routes.push(Route::Cpu);
            continue;
        }
        if file.len() >= MANY_ALONE_BYTES {
            routes.push(Route::Alone);
            continue;
        }
        let (starts, chunks) = member_candidates(file);
        let bytes = chunks.iter().fold(0usize, |a, c| {
            a.saturating_add(c.input.len()).saturating_add(c.out_cap)
        });
        if bytes > MANY_LAUNCH_BYTES {
            routes.push(Route::Cpu);
            continue;
        }
        if launches.is_empty() || launch_bytes + bytes > MANY_LAUNCH_BYTES {
            launches.push(Vec::new());
            launch_bytes = 0;
        }
        launch_bytes += bytes;
        let batch = launches.len() - 1;
        let first = launches[batch].len();
        launches[batch].extend(chunks);
        routes.push(Route::Batch {
            launch: batch,
            first,
            starts,
        });
    }
    let mut decoded = Vec::with_capacity(launches.len());
    for chunks in &launches {
        report.candidates += chunks.len();
        decoded.push(decode_to_host(gpu, Decoder::Deflate, chunks)?);
    }
    report.launches = decoded.len();

    let mut out: Vec<Option<Result<Vec<u8>>>> = Vec::with_capacity(files.len());
    for (file, route) in files.iter().zip(&routes) {
        let done = match route {
            Route::Batch {
                launch,
                first,
                starts,
            } => match follow_members(file, starts, &decoded[*launch], *first) {
                Ok(Some((data, members))) => {
                    report.batched += 1;
                    report.members += members;
                    Some(data)
                }
                // The CPU's decode gives the error, or the output the GPU could not chain.
                Ok(None) | Err(_) => None,
            },
            Route::Alone => match gunzip(gpu, file) {
                Ok(Some((data, _))) => {
                    report.alone += 1;
                    Some(data)
                }
                Err(e @ Error::Gpu(_)) => return Err(e),
                Ok(None) | Err(_) => None,
            },
            Route::Cpu => None,
        };
        out.push(done.map(Ok));
    }
    drop(decoded);
    let cpu_files: Vec<usize> = (0..files.len()).filter(|&i| out[i].is_none()).collect();
    report.cpu = cpu_files.len();
    let cpu_out: Vec<Result<Vec<u8>>> = cpu_files
        .par_iter()
        .map(|&i| cpu::gzip_decompress(files[i], usize::MAX))
        .collect();
    for (i, r) in cpu_files.into_iter().zip(cpu_out) {
        out[i] = Some(r);
    }
    Ok((
        out.into_iter()
            .map(|r| r.unwrap_or_else(|| Err(Error::Gpu("gzip file left undecoded".into()))))
            .collect(),
        report,
    ))
}
