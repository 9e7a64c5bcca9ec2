//! The streaming encode and decode paths shared by `compress`, `decompress` and `demo`.
//!
//! Encoding reads `batch_chunks` chunks of raw values at a time, encodes them in parallel with
//! rayon and writes the payloads in order, so peak memory is about
//! `batch_chunks × chunk bytes × 2` (raw + encoded; a batch is capped at 1 GiB of raw values)
//! whatever the input's size.
//!
//! Decoding does the same in reverse: a batch of chunks has its payload checksums verified (by
//! [`Container::chunk_payload`]), is decoded on the CPU (one rayon task per chunk) or on the GPU
//! (one `decode_column` call per batch), and is written out in order. A chunk's output size
//! always comes from the directory's checked value count, never from the payload.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use rayon::prelude::*;
use tessera_codecs::column::{self, CodecOptions};
use tessera_format::container::{ColumnMeta, Container, ContainerWriter};
use tessera_format::{CodecId, Error, LogicalType, Result};
use tessera_gpu::{ChunkRef, Gpu};

use crate::{CliError, CliResult};

/// How a column is encoded.
#[derive(Debug, Clone, Copy)]
pub struct EncodeOptions {
    pub ty: LogicalType,
    /// `None`: auto, chosen per chunk.
    pub codec: Option<CodecId>,
    /// Values per chunk (a multiple of 512, at most 2^24).
    pub chunk_values: usize,
    /// Chunks read and encoded together.
    pub batch_chunks: usize,
    /// For bits: the bitmap's length in bits (the input holds `⌈bit_len / 8⌉` bytes).
    pub bit_len: Option<u64>,
    /// Encoder settings the payloads record (the LLL segment size).
    pub codec_options: CodecOptions,
}

/// What encoding a column did.
#[derive(Debug, Clone, Default)]
pub struct EncodeStats {
    pub values: u64,
    pub raw_bytes: u64,
    pub compressed_bytes: u64,
    /// Time spent encoding and writing (not reading the input).
    pub encode_time: Duration,
    /// Chunks written (utf8 columns count them as they go).
    pub chunks: u64,
}

/// Most raw bytes one batch holds (unless a single chunk is larger): with 2^24-value chunks of
/// 8-byte values on many cores, `threads × 2` chunks would otherwise take gigabytes.
const MAX_BATCH_BYTES: usize = 1 << 30;

/// Chunks per batch on the CPU: enough to keep every thread busy while the writer waits.
pub fn cpu_batch_chunks() -> usize {
    rayon::current_num_threads().max(1) * 2
}

/// Reads raw little-endian values from `input` to its end and writes them as column `name`.
/// `progress` advances by the raw bytes consumed.
pub fn encode_column(
    writer: &mut ContainerWriter,
    name: &str,
    opts: &EncodeOptions,
    mut input: impl Read,
    progress: &ProgressBar,
) -> CliResult<EncodeStats> {
    let width = opts.ty.width();
    // Raw bytes of a whole chunk; chunk_values is a multiple of 512, so whole bytes for bits.
    let chunk_bytes = raw_chunk_bytes(opts.ty, opts.chunk_values);
    let batch_bytes = chunk_bytes
        * opts
            .batch_chunks
            .clamp(1, (MAX_BATCH_BYTES / chunk_bytes).max(1));
    writer.begin_column(name, opts.ty, opts.codec)?;
    let mut stats = EncodeStats::default();
    let mut buf = vec![0u8; batch_bytes];
    loop {
        let filled = read_full(&mut input, &mut buf)?;
        if filled == 0 {
            break;
        }
        if filled % width != 0 {
            return Err(CliError(format!(
                "input is {} bytes, not a whole number of {}-byte {} values",
                stats.raw_bytes + filled as u64,
                width,
                opts.ty.name()
            )));
        }
        let first_chunk = (stats.values / opts.chunk_values as u64) as usize;
        // Values in the chunk of `raw` bytes that starts `before` values into the column.
        let count = |raw: &[u8], before: u64| -> CliResult<u64> {
            match opts.bit_len {
                Some(total) if opts.ty == LogicalType::Bits => {
                    let n = (raw.len() as u64 * 8).min(total.saturating_sub(before));
                    if n.div_ceil(8) != raw.len() as u64 {
                        return Err(CliError(format!(
                            "input is longer than the {total}-bit bitmap's {} bytes",
                            total.div_ceil(8)
                        )));
                    }
                    Ok(n)
                }
                _ => Ok((raw.len() / width) as u64),
            }
        };
        let t = Instant::now();
        let encoded: Vec<(CodecId, u64, Vec<u8>)> = buf[..filled]
            .par_chunks(chunk_bytes)
            .enumerate()
            .map(|(i, raw)| {
                let before = stats.values + (i * opts.chunk_values) as u64;
                let n = count(raw, before)?;
                let mut out = Vec::new();
                let codec = column::encode_values_with(
                    opts.ty,
                    opts.codec,
                    raw,
                    n,
                    &mut out,
                    opts.codec_options,
                )
                .map_err(|e| {
                    CliError(format!(
                        "encoding column '{name}' chunk {}: {e}",
                        first_chunk + i
                    ))
                })?;
                Ok((codec, n, out))
            })
            .collect::<CliResult<_>>()?;
        for (codec, n, payload) in &encoded {
            writer.write_chunk(*codec, *n as u32, payload)?;
            stats.compressed_bytes += payload.len() as u64;
            stats.values += n;
        }
        stats.encode_time += t.elapsed();
        stats.raw_bytes += filled as u64;
        progress.inc(filled as u64);
        if filled < buf.len() {
            break; // read_full stops short only at the end of the input
        }
    }
    if let Some(total) = opts.bit_len.filter(|_| opts.ty == LogicalType::Bits) {
        if stats.values != total {
            return Err(CliError(format!(
                "input ended after {} bits of the {total}-bit bitmap",
                stats.values
            )));
        }
    }
    writer.end_column()?;
    Ok(stats)
}

/// Raw bytes of a chunk of `values` values of a fixed-size type.
pub fn raw_chunk_bytes(ty: LogicalType, values: usize) -> usize {
    ty.raw_len(values as u64).unwrap_or(values as u64) as usize
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io("cannot read input", e)),
        }
    }
    Ok(filled)
}

/// The device `--device` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceArg {
    /// The GPU when one can be opened, else the CPU.
    Auto,
    /// The CPU, chunks in parallel.
    Cpu,
    /// The GPU; fails when none can be opened.
    Gpu,
}

/// Where chunks are decoded.
#[derive(Debug)]
pub struct Decoder {
    gpu: Option<Gpu>,
    /// Under `auto`, a GPU failure (not a data error) switches to the CPU.
    may_fall_back: bool,
    /// Why the CPU is used under `auto`, for the one-line device report.
    note: Option<String>,
}

/// The message inside an [`Error::Gpu`], or the whole error.
fn gpu_reason(e: &Error) -> String {
    match e {
        Error::Gpu(m) => m.clone(),
        other => other.to_string(),
    }
}

impl Decoder {
    /// Opens the device `arg` asks for. `gpu` fails when no GPU can be opened; `auto` falls back.
    pub fn open(arg: DeviceArg) -> Result<Decoder> {
        match arg {
            DeviceArg::Cpu => Ok(Decoder {
                gpu: None,
                may_fall_back: false,
                note: None,
            }),
            DeviceArg::Gpu => Ok(Decoder {
                gpu: Some(Gpu::new()?),
                may_fall_back: false,
                note: None,
            }),
            DeviceArg::Auto => match Gpu::new() {
                Ok(g) => Ok(Decoder {
                    gpu: Some(g),
                    may_fall_back: true,
                    note: None,
                }),
                Err(e) => Ok(Decoder {
                    gpu: None,
                    may_fall_back: false,
                    note: Some(format!("GPU unavailable: {}", gpu_reason(&e))),
                }),
            },
        }
    }

    /// Records why some work ran on the CPU although a GPU is open (for the device report).
    pub fn note_cpu(&mut self, why: &str) {
        if self.gpu.is_some() {
            self.note = Some(why.to_owned());
        }
    }

    /// The GPU, when decoding goes there.
    pub fn gpu(&self) -> Option<&Gpu> {
        self.gpu.as_ref()
    }

    /// `"gpu"` or `"cpu"`: where the next chunks will be decoded.
    pub fn device_name(&self) -> &'static str {
        if self.gpu.is_some() {
            "gpu"
        } else {
            "cpu"
        }
    }

    /// The one-line device report: `device: cpu (GPU unavailable: ...)`.
    pub fn report(&self) -> String {
        match &self.note {
            Some(n) => format!("device: {} ({n})", self.device_name()),
            None => format!("device: {}", self.device_name()),
        }
    }

    /// Chunks per decode batch for a column: CPU threads × 2 on the CPU; up to 256 MiB of
    /// output per launch on the GPU, so transfers are large but memory stays bounded.
    pub fn batch_chunks(&self, col: &ColumnMeta) -> usize {
        let chunk_bytes = raw_chunk_bytes(col.logical_type, col.chunk_size().unwrap_or(1) as usize);
        if self.gpu.is_some() {
            ((256usize << 20) / chunk_bytes.max(1)).max(1)
        } else {
            cpu_batch_chunks().clamp(1, (MAX_BATCH_BYTES / chunk_bytes.max(1)).max(1))
        }
    }

    /// Decodes chunks `range` of column `ci` into `out`, which holds exactly their values.
    /// Checksums are verified first on either device.
    pub fn decode_chunks(
        &mut self,
        c: &Container,
        ci: usize,
        range: std::ops::Range<usize>,
        out: &mut [u8],
    ) -> CliResult<()> {
        let col = &c.columns()[ci];
        let ty = col.logical_type;
        let chunks = &col.chunks[range.clone()];
        let expected: u64 = chunks
            .iter()
            .map(|ch| raw_chunk_bytes(ty, ch.value_count as usize) as u64)
            .sum();
        if expected != out.len() as u64 {
            return Err(CliError(format!(
                "output buffer of {} bytes for {expected} bytes of values",
                out.len()
            )));
        }
        let payloads: Vec<&[u8]> = range
            .clone()
            .into_par_iter()
            .map(|k| c.chunk_payload(ci, k))
            .collect::<Result<_>>()?;
        if let Some(gpu) = self.gpu.as_ref().filter(|_| ty.is_integer()) {
            let refs: Vec<ChunkRef<'_>> = chunks
                .iter()
                .zip(&payloads)
                .map(|(ch, p)| ChunkRef {
                    codec: ch.codec,
                    payload: p,
                    value_count: ch.value_count,
                })
                .collect();
            match gpu.decode_column(ty, &refs, out) {
                Ok(()) => return Ok(()),
                Err(Error::Gpu(m)) if self.may_fall_back => {
                    // A device failure, not a data error: finish on the CPU.
                    self.gpu = None;
                    self.note = Some(format!("GPU failed, fell back: {m}"));
                }
                // The GPU reports a batch's first failure without always knowing the chunk.
                Err(e @ (Error::ChecksumMismatch { .. } | Error::Io { .. } | Error::Gpu(_))) => {
                    return Err(e.into())
                }
                Err(e) => {
                    return Err(CliError(format!(
                        "column '{}' chunks {}..{} (gpu): {e}",
                        col.name, range.start, range.end
                    )))
                }
            }
        }
        if let Some(gpu) = self.gpu.as_ref().filter(|_| !ty.is_integer()) {
            match crate::gpu_bytes::decode_chunks(gpu, ty, chunks, &payloads, out) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err((i, Error::Gpu(m))) if self.may_fall_back => {
                    let _ = i;
                    self.gpu = None;
                    self.note = Some(format!("GPU failed, fell back: {m}"));
                }
                Err((i, e)) => return Err(with_column(e, col, range.start + i)),
            }
        }
        let chunk_bytes = raw_chunk_bytes(ty, col.chunk_size().unwrap_or(1) as usize);
        out.par_chunks_mut(chunk_bytes)
            .zip(chunks.par_iter().zip(payloads.par_iter()))
            .enumerate()
            .try_for_each(|(i, (dst, (ch, payload)))| {
                column::decode_values(ty, ch.codec, payload, ch.value_count as u64, dst)
                    .map_err(|e| with_column(e, col, range.start + i))
            })
    }
}

/// A decoder's error with the column and chunk it concerned (the codecs do not know them).
pub fn with_column(e: Error, col: &ColumnMeta, chunk: usize) -> CliError {
    match e {
        // These already say where, or concern no particular chunk.
        Error::ChecksumMismatch { .. } | Error::Io { .. } | Error::Gpu(_) => e.into(),
        other => CliError(format!(
            "column '{}' chunk {chunk} ({}): {other}",
            col.name,
            col.chunks.get(chunk).map_or("?", |c| c.codec.name())
        )),
    }
}

/// Streams column `ci` to `sink` in batches. Returns the time spent decoding.
pub fn decode_column_to(
    c: &Container,
    ci: usize,
    decoder: &mut Decoder,
    mut sink: impl Write,
    progress: &ProgressBar,
) -> CliResult<Duration> {
    let col = &c.columns()[ci];
    let ty = col.logical_type;
    let batch = decoder.batch_chunks(col);
    let mut buf = Vec::new();
    let mut spent = Duration::ZERO;
    let mut start = 0;
    while start < col.chunks.len() {
        let end = (start + batch).min(col.chunks.len());
        let bytes: usize = col.chunks[start..end]
            .iter()
            .map(|ch| raw_chunk_bytes(ty, ch.value_count as usize))
            .sum();
        buf.resize(bytes, 0);
        let t = Instant::now();
        decoder.decode_chunks(c, ci, start..end, &mut buf)?;
        spent += t.elapsed();
        sink.write_all(&buf)
            .map_err(|e| Error::io("cannot write output", e))?;
        progress.inc(bytes as u64);
        start = end;
    }
    Ok(spent)
}
