//! Utf8 columns in their line form (`docs/format/utf8.md` §3): `compress --type utf8` reads one
//! string a line, `decompress` writes them back byte for byte.
//!
//! Encoding streams: lines are read in batches, cut into chunks of at most `chunk_values`
//! strings and [`CHUNK_TEXT_BYTES`] of text (a longer single line gets a chunk of its own),
//! encoded in parallel and written in order. Whether the input ended with a line feed is kept in
//! the column's params (`text_flags` bit 0, `unterminated`), so the output equals the input.

use std::io::{BufRead, Write};
use std::time::Instant;

use indicatif::ProgressBar;
use rayon::prelude::*;
use tessera_codecs::text::{self, Strings};
use tessera_format::container::{ColumnMeta, Container, ContainerWriter};
use tessera_format::{CodecId, Error, Result};

use crate::pipeline::{with_column, Decoder, EncodeOptions, EncodeStats};
use crate::{CliError, CliResult};

/// Most text bytes a chunk collects before it is closed (unless one line is longer).
pub const CHUNK_TEXT_BYTES: usize = 16 << 20;
/// `text_flags` bit 0: no line feed after the last string.
pub const UNTERMINATED: u8 = 1;

/// Whether the column's line form ends without a line feed (`utf8.md` §3).
pub fn unterminated(col: &ColumnMeta) -> bool {
    col.params.first().is_some_and(|f| f & UNTERMINATED != 0)
}

/// Reads lines from `input` to its end and writes them as utf8 column `name`.
pub fn encode_lines(
    writer: &mut ContainerWriter,
    name: &str,
    opts: &EncodeOptions,
    mut input: impl BufRead,
    progress: &ProgressBar,
) -> CliResult<EncodeStats> {
    writer.begin_column(name, opts.ty, opts.codec)?;
    let mut stats = EncodeStats::default();
    let mut ended_with_newline = true;
    let mut line = Vec::new();
    let mut batch: Vec<Strings> = Vec::new();
    let mut current = Strings::default();
    let batch_chunks = opts.batch_chunks.max(1);
    loop {
        line.clear();
        let n = input
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::io("cannot read input", e))?;
        if n == 0 {
            break;
        }
        stats.raw_bytes += n as u64;
        progress.inc(n as u64);
        ended_with_newline = line.last() == Some(&b'\n');
        if ended_with_newline {
            line.pop();
        }
        if !current.is_empty()
            && (current.len() >= opts.chunk_values
                || current.data.len() + line.len() > CHUNK_TEXT_BYTES)
        {
            batch.push(std::mem::take(&mut current));
            if batch.len() >= batch_chunks {
                flush(writer, name, opts, &mut batch, &mut stats)?;
            }
        }
        let line_no = stats.values + current.len() as u64 + 1;
        if std::str::from_utf8(&line).is_err() {
            return Err(CliError(format!("line {line_no} is not UTF-8")));
        }
        current.data.extend_from_slice(&line);
        let end = u32::try_from(current.data.len())
            .ok()
            .filter(|&e| e as u64 <= text::MAX_TEXT_BYTES)
            .ok_or_else(|| {
                CliError(format!(
                    "line {line_no} is longer than {} bytes",
                    text::MAX_TEXT_BYTES
                ))
            })?;
        current.ends.push(end);
    }
    if !current.is_empty() {
        batch.push(current);
    }
    flush(writer, name, opts, &mut batch, &mut stats)?;
    if !ended_with_newline {
        writer.set_params(&[UNTERMINATED])?;
    }
    writer.end_column()?;
    Ok(stats)
}

fn flush(
    writer: &mut ContainerWriter,
    name: &str,
    opts: &EncodeOptions,
    batch: &mut Vec<Strings>,
    stats: &mut EncodeStats,
) -> CliResult<()> {
    let first_chunk = stats.chunks;
    let t = Instant::now();
    let encoded: Vec<(CodecId, Vec<u8>)> = batch
        .par_iter()
        .enumerate()
        .map(|(i, s)| {
            let mut out = Vec::new();
            let codec = text::encode_utf8_chunk_with(s, opts.codec, &mut out, opts.codec_options)
                .map_err(|e| {
                CliError(format!(
                    "encoding column '{name}' chunk {}: {e}",
                    first_chunk + i as u64
                ))
            })?;
            Ok((codec, out))
        })
        .collect::<CliResult<_>>()?;
    for ((codec, payload), s) in encoded.iter().zip(batch.iter()) {
        writer.write_chunk(*codec, s.len() as u32, payload)?;
        stats.compressed_bytes += payload.len() as u64;
        stats.values += s.len() as u64;
        stats.chunks += 1;
    }
    stats.encode_time += t.elapsed();
    batch.clear();
    Ok(())
}

/// Writes utf8 column `ci` to `sink` in its line form. Chunks are decoded in parallel batches on
/// the CPU. Returns the time spent decoding.
pub fn decode_lines_to(
    c: &Container,
    ci: usize,
    decoder: &mut Decoder,
    mut sink: impl Write,
    progress: &ProgressBar,
) -> CliResult<std::time::Duration> {
    let col = &c.columns()[ci];
    let last_unterminated = unterminated(col);
    let batch = crate::pipeline::cpu_batch_chunks();
    decoder.note_cpu("utf8 columns decode on the CPU: their GPU path is not wired yet");
    let mut spent = std::time::Duration::ZERO;
    let mut start = 0;
    let mut buf = Vec::new();
    while start < col.chunks.len() {
        let end = (start + batch).min(col.chunks.len());
        let t = Instant::now();
        let decoded: Vec<Strings> = (start..end)
            .into_par_iter()
            .map(|k| {
                let payload = c.chunk_payload(ci, k)?;
                let ch = &col.chunks[k];
                text::decode_utf8_chunk(ch.codec, payload, ch.value_count)
            })
            .collect::<Vec<Result<Strings>>>()
            .into_iter()
            .enumerate()
            .map(|(i, r)| r.map_err(|e| with_column(e, col, start + i)))
            .collect::<CliResult<_>>()?;
        spent += t.elapsed();
        for (i, s) in decoded.iter().enumerate() {
            buf.clear();
            let last_chunk = start + i + 1 == col.chunks.len();
            for (j, v) in s.iter().enumerate() {
                buf.extend_from_slice(v);
                if !(last_chunk && j + 1 == s.len() && last_unterminated) {
                    buf.push(b'\n');
                }
            }
            sink.write_all(&buf)
                .map_err(|e| Error::io("cannot write output", e))?;
            progress.inc(buf.len() as u64);
        }
        start = end;
    }
    Ok(spent)
}
