//! Writing tables: [`TableWriter`] streams named columns of any type into one `.tsr` file.
//!
//! A column is cut into chunks of `chunk_values` values; chunks are encoded `batch_chunks` at a
//! time in parallel (rayon) and written in order, so peak memory is about
//! `batch_chunks × chunk bytes × 2` (raw + encoded; a batch holds at most 1 GiB of raw values)
//! whatever the column's size. Utf8 columns close a chunk at `chunk_values` strings or
//! [`CHUNK_TEXT_BYTES`] of text, whichever comes first (`docs/format/utf8.md`).

use std::io::{BufRead, Read};
use std::path::Path;
use std::time::{Duration, Instant};

use rayon::prelude::*;
use tessera_codecs::column::{self, CodecOptions};
use tessera_codecs::lll;
use tessera_codecs::text::{self, Strings};
use tessera_format::container::{ContainerWriter, Directory};
use tessera_format::{CodecId, Error, LogicalType, Result, MAX_CHUNK_VALUES};

use crate::value::{to_le_bytes, Value};

/// Values per chunk unless a column says otherwise.
pub const DEFAULT_CHUNK_VALUES: usize = 1 << 20;
/// Most text bytes a utf8 chunk collects before it is closed (unless one string is longer).
pub const CHUNK_TEXT_BYTES: usize = 16 << 20;
/// `text_flags` bit 0 of a utf8 column (`utf8.md` §3): no line feed after the last string.
pub const UNTERMINATED: u8 = 1;
/// Most raw bytes one encode batch holds (unless a single chunk is larger): with 2^24-value
/// chunks of 8-byte values on many cores, `threads × 2` chunks would otherwise take gigabytes.
const MAX_BATCH_BYTES: usize = 1 << 30;

/// Chunks encoded together on the CPU: enough to keep every thread busy while the writer waits.
pub fn default_batch_chunks() -> usize {
    rayon::current_num_threads().max(1) * 2
}

/// How one column is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnOptions {
    /// The codec of every chunk; `None` (auto) chooses the smallest per chunk.
    pub codec: Option<CodecId>,
    /// Values per chunk: a multiple of 512 in `512..=2^24`.
    pub chunk_values: usize,
    /// Encoder settings the payloads record (LLL's segment size and parse).
    pub codec_options: CodecOptions,
    /// Chunks encoded in parallel before they are written.
    pub batch_chunks: usize,
}

impl Default for ColumnOptions {
    fn default() -> Self {
        ColumnOptions {
            codec: None,
            chunk_values: DEFAULT_CHUNK_VALUES,
            codec_options: CodecOptions::default(),
            batch_chunks: default_batch_chunks(),
        }
    }
}

impl ColumnOptions {
    /// Auto codec, default chunk size.
    pub fn auto() -> Self {
        Self::default()
    }
    /// Every chunk with `codec`.
    pub fn with_codec(mut self, codec: CodecId) -> Self {
        self.codec = Some(codec);
        self
    }
    /// Values per chunk.
    pub fn with_chunk_values(mut self, n: usize) -> Self {
        self.chunk_values = n;
        self
    }
    /// LLL's segment size (512, 1024, 2048 or 4096).
    pub fn with_lll_segment_bytes(mut self, n: usize) -> Self {
        self.codec_options.lll_segment_bytes = n;
        self
    }
    /// What LLL's parse minimizes.
    pub fn with_lll_parse(mut self, p: lll::Parse) -> Self {
        self.codec_options.lll_parse = p;
        self
    }

    /// Checks the options against a column of type `ty`.
    pub fn check(&self, ty: LogicalType) -> Result<()> {
        let n = self.chunk_values;
        if n == 0 || n % 512 != 0 || n > MAX_CHUNK_VALUES as usize {
            return Err(Error::InvalidArgument(format!(
                "chunk_values {n} is not a multiple of 512 in 512..={MAX_CHUNK_VALUES}"
            )));
        }
        if let Some(c) = self.codec.filter(|c| !c.supports(ty)) {
            return Err(Error::InvalidArgument(format!(
                "codec {} does not apply to {} columns",
                c.name(),
                ty.name()
            )));
        }
        let seg = self.codec_options.lll_segment_bytes;
        if !lll::SEGMENT_SIZES.contains(&seg) {
            return Err(Error::InvalidArgument(format!(
                "LLL segment size must be 512, 1024, 2048 or 4096, not {seg}"
            )));
        }
        Ok(())
    }
}

/// What writing a column did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnSummary {
    /// The column's name.
    pub name: String,
    /// Its type.
    pub logical_type: LogicalType,
    /// Values (strings for utf8, bits for bits).
    pub values: u64,
    /// Bytes of the raw form taken in (the line form for utf8 columns read as lines; the
    /// strings' bytes otherwise).
    pub raw_bytes: u64,
    /// Bytes of the chunk payloads written.
    pub compressed_bytes: u64,
    /// Chunks written.
    pub chunks: u64,
    /// Time spent encoding and writing (not producing the input).
    pub encode_time: Duration,
}

impl ColumnSummary {
    fn new(name: &str, ty: LogicalType) -> Self {
        ColumnSummary {
            name: name.to_owned(),
            logical_type: ty,
            values: 0,
            raw_bytes: 0,
            compressed_bytes: 0,
            chunks: 0,
            encode_time: Duration::ZERO,
        }
    }
}

/// Writes named columns into a new `.tsr` file: to a temporary name, renamed over the
/// destination by [`TableWriter::finish`] (a crash or an error leaves nothing under that name).
#[derive(Debug)]
pub struct TableWriter {
    out: ContainerWriter,
}

impl TableWriter {
    /// Starts a table at `path`.
    pub fn create(path: impl AsRef<Path>) -> Result<TableWriter> {
        Ok(TableWriter {
            out: ContainerWriter::create(path)?,
        })
    }

    /// Writes the table through an existing container writer (another destination kind).
    pub fn from_container_writer(out: ContainerWriter) -> TableWriter {
        TableWriter { out }
    }

    /// Bytes written so far.
    pub fn bytes_written(&self) -> u64 {
        self.out.bytes_written()
    }

    /// Starts a column of a fixed-size type (integers, `bytes`; `bits` of 8 bits a byte given):
    /// push its raw little-endian form, then [`ColumnWriter::finish`].
    pub fn column(
        &mut self,
        name: &str,
        ty: LogicalType,
        opts: ColumnOptions,
    ) -> Result<ColumnWriter<'_>> {
        if ty == LogicalType::Utf8 {
            return Err(Error::InvalidArgument(
                "utf8 columns are written with TableWriter::utf8_column".into(),
            ));
        }
        ColumnWriter::new(&mut self.out, name, ty, opts, None)
    }

    /// Starts a bits column of exactly `bit_len` bits: push `ceil(bit_len / 8)` bytes, least
    /// significant bit first, the padding bits of the last byte zero.
    pub fn bits_column(
        &mut self,
        name: &str,
        bit_len: u64,
        opts: ColumnOptions,
    ) -> Result<ColumnWriter<'_>> {
        ColumnWriter::new(&mut self.out, name, LogicalType::Bits, opts, Some(bit_len))
    }

    /// Starts a utf8 column: push strings, then [`Utf8ColumnWriter::finish`].
    pub fn utf8_column(&mut self, name: &str, opts: ColumnOptions) -> Result<Utf8ColumnWriter<'_>> {
        Utf8ColumnWriter::new(&mut self.out, name, opts)
    }

    /// Writes a whole integer column.
    pub fn write_values<T: Value>(
        &mut self,
        name: &str,
        values: &[T],
        opts: ColumnOptions,
    ) -> Result<ColumnSummary> {
        let mut c = self.column(name, T::TYPE, opts)?;
        c.push_values(values)?;
        c.finish()
    }

    /// Writes a whole bytes column.
    pub fn write_bytes(
        &mut self,
        name: &str,
        bytes: &[u8],
        opts: ColumnOptions,
    ) -> Result<ColumnSummary> {
        let mut c = self.column(name, LogicalType::Bytes, opts)?;
        c.push_raw(bytes)?;
        c.finish()
    }

    /// Writes a whole bits column of `bit_len` bits packed least significant bit first.
    pub fn write_bits(
        &mut self,
        name: &str,
        packed: &[u8],
        bit_len: u64,
        opts: ColumnOptions,
    ) -> Result<ColumnSummary> {
        let mut c = self.bits_column(name, bit_len, opts)?;
        c.push_raw(packed)?;
        c.finish()
    }

    /// Writes a whole utf8 column.
    pub fn write_strings<S: AsRef<str>>(
        &mut self,
        name: &str,
        strings: impl IntoIterator<Item = S>,
        opts: ColumnOptions,
    ) -> Result<ColumnSummary> {
        let mut c = self.utf8_column(name, opts)?;
        for s in strings {
            c.push(s.as_ref())?;
        }
        c.finish()
    }

    /// Writes the directory and footer and completes the file (renamed into place, or the
    /// stream flushed).
    pub fn finish(self) -> Result<TableSummary> {
        let (directory, file_bytes) = self.out.finish_sized()?;
        Ok(TableSummary {
            directory,
            file_bytes,
        })
    }
}

/// What a finished [`TableWriter`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSummary {
    /// Every column and chunk.
    pub directory: Directory,
    /// The file's size in bytes.
    pub file_bytes: u64,
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

/// Streams one column of a fixed-size type (see [`TableWriter::column`]).
#[derive(Debug)]
pub struct ColumnWriter<'a> {
    out: &'a mut ContainerWriter,
    ty: LogicalType,
    opts: ColumnOptions,
    /// For bits columns: the length in bits promised up front.
    bit_len: Option<u64>,
    /// Raw bytes of whole chunks not yet encoded (at most one batch).
    buf: Vec<u8>,
    chunk_bytes: usize,
    batch_bytes: usize,
    summary: ColumnSummary,
}

impl<'a> ColumnWriter<'a> {
    fn new(
        out: &'a mut ContainerWriter,
        name: &str,
        ty: LogicalType,
        opts: ColumnOptions,
        bit_len: Option<u64>,
    ) -> Result<Self> {
        opts.check(ty)?;
        // Whole bytes for bits too: chunk_values is a multiple of 512.
        let chunk_bytes = ty
            .raw_len(opts.chunk_values as u64)
            .map_or(opts.chunk_values, |n| n as usize);
        let batch_bytes = chunk_bytes
            * opts
                .batch_chunks
                .clamp(1, (MAX_BATCH_BYTES / chunk_bytes).max(1));
        out.begin_column(name, ty, opts.codec)?;
        Ok(ColumnWriter {
            out,
            ty,
            opts,
            bit_len,
            buf: Vec::with_capacity(batch_bytes),
            chunk_bytes,
            batch_bytes,
            summary: ColumnSummary::new(name, ty),
        })
    }

    /// Appends raw little-endian values (bytes for bytes, packed bits for bits).
    pub fn push_raw(&mut self, mut raw: &[u8]) -> Result<()> {
        while !raw.is_empty() {
            let take = (self.batch_bytes - self.buf.len()).min(raw.len());
            self.buf.extend_from_slice(&raw[..take]);
            raw = &raw[take..];
            if self.buf.len() == self.batch_bytes {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Appends values of the column's type.
    pub fn push_values<T: Value>(&mut self, values: &[T]) -> Result<()> {
        if T::TYPE != self.ty {
            return Err(Error::InvalidArgument(format!(
                "{} values pushed into a {} column",
                T::TYPE.name(),
                self.ty.name()
            )));
        }
        self.push_raw(&to_le_bytes(values))
    }

    /// Appends everything `input` holds (raw little-endian values), reading a batch at a time;
    /// `progress` is told the bytes consumed.
    pub fn push_reader(
        &mut self,
        mut input: impl Read,
        mut progress: impl FnMut(u64),
    ) -> Result<()> {
        loop {
            let at = self.buf.len();
            self.buf.resize(self.batch_bytes, 0);
            let got = read_full(&mut input, &mut self.buf[at..]);
            let n = *got.as_ref().unwrap_or(&0);
            self.buf.truncate(at + n);
            got?;
            progress(n as u64);
            if self.buf.len() < self.batch_bytes {
                return Ok(()); // read_full stops short only at the end of the input
            }
            self.flush()?;
        }
    }

    /// Values in a chunk of `raw` bytes that starts `before` values into the column.
    fn count(ty: LogicalType, bit_len: Option<u64>, raw: &[u8], before: u64) -> Result<u64> {
        match bit_len {
            Some(total) => {
                let n = (raw.len() as u64 * 8).min(total.saturating_sub(before));
                if n.div_ceil(8) != raw.len() as u64 {
                    return Err(Error::InvalidArgument(format!(
                        "input is longer than the {total}-bit bitmap's {} bytes",
                        total.div_ceil(8)
                    )));
                }
                Ok(n)
            }
            None if ty == LogicalType::Bits => Ok(raw.len() as u64 * 8),
            None => Ok((raw.len() / ty.width()) as u64),
        }
    }

    /// Encodes and writes the buffered chunks.
    fn flush(&mut self) -> Result<()> {
        let filled = self.buf.len();
        if filled == 0 {
            return Ok(());
        }
        let width = self.ty.width();
        if self.ty != LogicalType::Bits && filled % width != 0 {
            return Err(Error::InvalidArgument(format!(
                "input is {} bytes, not a whole number of {width}-byte {} values",
                self.summary.raw_bytes + filled as u64,
                self.ty.name()
            )));
        }
        let t = Instant::now();
        let first_chunk = self.summary.chunks as usize;
        let before = self.summary.values;
        let name = &self.summary.name;
        // Only plain data goes into the parallel closure (the container writer may hold a
        // stream that is not Sync).
        let (ty, opts, bit_len) = (self.ty, self.opts, self.bit_len);
        let encoded: Vec<(CodecId, u64, Vec<u8>)> = self
            .buf
            .par_chunks(self.chunk_bytes)
            .enumerate()
            .map(|(i, raw)| {
                let n = Self::count(ty, bit_len, raw, before + (i * opts.chunk_values) as u64)?;
                let mut out = Vec::new();
                let codec = column::encode_values_with(
                    ty,
                    opts.codec,
                    raw,
                    n,
                    &mut out,
                    opts.codec_options,
                )
                .map_err(|e| e.in_chunk(name, first_chunk + i, "encoding"))?;
                Ok((codec, n, out))
            })
            .collect::<Result<_>>()?;
        for (codec, n, payload) in &encoded {
            self.out.write_chunk(*codec, *n as u32, payload)?;
            self.summary.compressed_bytes += payload.len() as u64;
            self.summary.values += n;
            self.summary.chunks += 1;
        }
        self.summary.encode_time += t.elapsed();
        self.summary.raw_bytes += filled as u64;
        self.buf.clear();
        Ok(())
    }

    /// Encodes what is left and closes the column.
    pub fn finish(mut self) -> Result<ColumnSummary> {
        self.flush()?;
        if let Some(total) = self.bit_len {
            if self.summary.values != total {
                return Err(Error::InvalidArgument(format!(
                    "input ended after {} bits of the {total}-bit bitmap",
                    self.summary.values
                )));
            }
        }
        self.out.end_column()?;
        Ok(self.summary)
    }
}

/// Streams one utf8 column (see [`TableWriter::utf8_column`]).
#[derive(Debug)]
pub struct Utf8ColumnWriter<'a> {
    out: &'a mut ContainerWriter,
    opts: ColumnOptions,
    current: Strings,
    batch: Vec<Strings>,
    /// The line form read by [`Utf8ColumnWriter::push_lines`] ended without a line feed.
    unterminated: bool,
    summary: ColumnSummary,
}

impl<'a> Utf8ColumnWriter<'a> {
    fn new(out: &'a mut ContainerWriter, name: &str, opts: ColumnOptions) -> Result<Self> {
        opts.check(LogicalType::Utf8)?;
        out.begin_column(name, LogicalType::Utf8, opts.codec)?;
        Ok(Utf8ColumnWriter {
            out,
            opts,
            current: Strings::default(),
            batch: Vec::new(),
            unterminated: false,
            summary: ColumnSummary::new(name, LogicalType::Utf8),
        })
    }

    /// Appends one string.
    pub fn push(&mut self, s: &str) -> Result<()> {
        self.summary.raw_bytes += s.len() as u64;
        self.push_checked(s.as_bytes())
    }

    fn push_checked(&mut self, s: &[u8]) -> Result<()> {
        if !self.current.is_empty()
            && (self.current.len() >= self.opts.chunk_values
                || self.current.data.len() + s.len() > CHUNK_TEXT_BYTES)
        {
            self.batch.push(std::mem::take(&mut self.current));
            if self.batch.len() >= self.opts.batch_chunks.max(1) {
                self.flush()?;
            }
        }
        self.current.data.extend_from_slice(s);
        let end = u32::try_from(self.current.data.len())
            .ok()
            .filter(|&e| e as u64 <= text::MAX_TEXT_BYTES)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "string {} is longer than {} bytes",
                    self.strings_so_far() + 1,
                    text::MAX_TEXT_BYTES
                ))
            })?;
        self.current.ends.push(end);
        Ok(())
    }

    fn strings_so_far(&self) -> u64 {
        self.summary.values
            + self.batch.iter().map(|s| s.len() as u64).sum::<u64>()
            + self.current.len() as u64
    }

    /// Appends the strings of a line form (`utf8.md` §3): one string a line, a final line
    /// feed optional (whether it was there is kept). `progress` is told the bytes consumed.
    pub fn push_lines(
        &mut self,
        mut input: impl BufRead,
        mut progress: impl FnMut(u64),
    ) -> Result<()> {
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = input
                .read_until(b'\n', &mut line)
                .map_err(|e| Error::io("cannot read input", e))?;
            if n == 0 {
                return Ok(());
            }
            self.summary.raw_bytes += n as u64;
            progress(n as u64);
            self.unterminated = line.last() != Some(&b'\n');
            if !self.unterminated {
                line.pop();
            }
            if std::str::from_utf8(&line).is_err() {
                return Err(Error::InvalidArgument(format!(
                    "line {} is not UTF-8",
                    self.strings_so_far() + 1
                )));
            }
            self.push_checked(&line)?;
        }
    }

    fn flush(&mut self) -> Result<()> {
        let t = Instant::now();
        let first_chunk = self.summary.chunks as usize;
        let (opts, name) = (self.opts, &self.summary.name);
        let encoded: Vec<(CodecId, Vec<u8>)> = self
            .batch
            .par_iter()
            .enumerate()
            .map(|(i, s)| {
                let mut out = Vec::new();
                let codec =
                    text::encode_utf8_chunk_with(s, opts.codec, &mut out, opts.codec_options)
                        .map_err(|e| e.in_chunk(name, first_chunk + i, "encoding"))?;
                Ok((codec, out))
            })
            .collect::<Result<_>>()?;
        for ((codec, payload), s) in encoded.iter().zip(&self.batch) {
            self.out.write_chunk(*codec, s.len() as u32, payload)?;
            self.summary.compressed_bytes += payload.len() as u64;
            self.summary.values += s.len() as u64;
            self.summary.chunks += 1;
        }
        self.summary.encode_time += t.elapsed();
        self.batch.clear();
        Ok(())
    }

    /// Encodes what is left and closes the column.
    pub fn finish(mut self) -> Result<ColumnSummary> {
        if !self.current.is_empty() {
            let last = std::mem::take(&mut self.current);
            self.batch.push(last);
        }
        self.flush()?;
        if self.unterminated {
            self.out.set_params(&[UNTERMINATED])?;
        }
        self.out.end_column()?;
        Ok(self.summary)
    }
}
