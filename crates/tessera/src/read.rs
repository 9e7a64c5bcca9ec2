//! Reading tables: [`TableReader`] opens a `.tsr` file and decodes its columns, whole or a range
//! of chunks, on the device an [`Engine`] holds.
//!
//! Every chunk's payload checksum is verified before it is decoded, on either device, and a
//! chunk's output size always comes from the directory's checked value count, never from the
//! payload. Integer columns decode on the GPU in one batched call per range
//! (`tessera_gpu::Gpu::decode_column`); bytes and bits chunks go to their codec's GPU decoder;
//! utf8 chunks decode their end offsets (DFOR) in one batched call and their text with the
//! bytes decoders. Errors name the column and chunk.

use std::io::Write;
use std::ops::Range;
use std::path::Path;
use std::time::{Duration, Instant};

use rayon::prelude::*;
use tessera_codecs::column;
use tessera_codecs::text::{self, Strings};
use tessera_format::container::{ChunkMeta, ColumnMeta, Container};
use tessera_format::{CodecId, Error, LogicalType, Result};
use tessera_gpu::{ChunkRef, Gpu};

use crate::device::Engine;
use crate::value::{from_le_in_place, Value};
use crate::write::UNTERMINATED;

/// Output bytes a batch of chunks decodes into before it is written out (streaming reads).
const STREAM_BATCH_BYTES: usize = 256 << 20;

/// A utf8 column (or range of chunks) in memory: string `i` is
/// `data[offsets[i] as usize..offsets[i + 1] as usize]` (Arrow's large-utf8 layout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StringColumn {
    /// `len + 1` byte offsets into `data`, starting at 0, never decreasing.
    pub offsets: Vec<u64>,
    /// The strings' bytes, back to back.
    pub data: Vec<u8>,
}

impl Default for StringColumn {
    fn default() -> Self {
        StringColumn {
            offsets: vec![0],
            data: Vec::new(),
        }
    }
}

impl StringColumn {
    /// Strings held.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }
    /// Whether no string is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// String `i` as bytes.
    pub fn get_bytes(&self, i: usize) -> Option<&[u8]> {
        let (a, b) = (*self.offsets.get(i)?, *self.offsets.get(i + 1)?);
        self.data.get(a as usize..b as usize)
    }
    /// String `i` (the encoder checked every string is UTF-8; bytes that are not give `None`).
    pub fn get(&self, i: usize) -> Option<&str> {
        std::str::from_utf8(self.get_bytes(i)?).ok()
    }
    /// Every string, in order, as bytes.
    pub fn iter_bytes(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).filter_map(|i| self.get_bytes(i))
    }

    fn append(&mut self, s: &Strings) {
        let base = self.data.len() as u64;
        self.offsets.extend(s.ends.iter().map(|&e| base + e as u64));
        self.data.extend_from_slice(&s.data);
    }
}

/// Opens `.tsr` tables and decodes their columns.
#[derive(Debug)]
pub struct TableReader {
    c: Container,
}

impl TableReader {
    /// Opens the file at `path` (memory-mapped) and validates its header and directory.
    pub fn open(path: impl AsRef<Path>) -> Result<TableReader> {
        Ok(TableReader {
            c: Container::open(path)?,
        })
    }

    /// Reads a table held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<TableReader> {
        Ok(TableReader {
            c: Container::from_bytes(bytes)?,
        })
    }

    /// Wraps an opened container.
    pub fn from_container(c: Container) -> TableReader {
        TableReader { c }
    }

    /// The container underneath (directory, version, raw payloads).
    pub fn container(&self) -> &Container {
        &self.c
    }

    /// The columns, in file order.
    pub fn columns(&self) -> &[ColumnMeta] {
        self.c.columns()
    }

    /// The index of the column called `name`.
    pub fn column_index(&self, name: &str) -> Result<usize> {
        self.c
            .column_by_name(name)
            .map(|(i, _)| i)
            .ok_or_else(|| Error::InvalidArgument(format!("no column '{name}'")))
    }

    fn column(&self, col: usize) -> Result<&ColumnMeta> {
        self.c.columns().get(col).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "column {col} of a table of {}",
                self.c.columns().len()
            ))
        })
    }

    fn chunk_range(&self, col: usize, chunks: &Range<usize>) -> Result<&[ChunkMeta]> {
        let meta = self.column(col)?;
        meta.chunks.get(chunks.clone()).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "chunks {}..{} of column '{}', which has {}",
                chunks.start,
                chunks.end,
                meta.name,
                meta.chunks.len()
            ))
        })
    }

    /// Bytes the raw form of `chunks` of a fixed-size column takes (little-endian values;
    /// packed bits for bits: chunks hold multiples of 8 bits but the column's last).
    pub fn raw_len(&self, col: usize, chunks: Range<usize>) -> Result<u64> {
        let meta = self.column(col)?;
        let ty = meta.logical_type;
        if ty == LogicalType::Utf8 {
            return Err(Error::InvalidArgument(format!(
                "column '{}' is utf8: read it with read_strings",
                meta.name
            )));
        }
        Ok(self
            .chunk_range(col, &chunks)?
            .iter()
            .map(|c| ty.raw_len(c.value_count as u64).unwrap_or(0))
            .sum())
    }

    /// Decodes `chunks` of fixed-size column `col` into `out`, which must hold exactly their
    /// raw form ([`TableReader::raw_len`]).
    pub fn read_raw_into(
        &self,
        col: usize,
        chunks: Range<usize>,
        out: &mut [u8],
        engine: &mut Engine,
    ) -> Result<()> {
        let expected = self.raw_len(col, chunks.clone())?;
        if expected != out.len() as u64 {
            return Err(Error::InvalidArgument(format!(
                "output buffer of {} bytes for {expected} bytes of values",
                out.len()
            )));
        }
        let meta = self.column(col)?;
        let metas = self.chunk_range(col, &chunks)?;
        let payloads: Vec<&[u8]> = chunks
            .clone()
            .into_par_iter()
            .map(|k| self.c.chunk_payload(col, k))
            .collect::<Result<_>>()?;
        if let Some(gpu) = engine.gpu() {
            match decode_fixed_gpu(gpu, meta, metas, &payloads, out) {
                Ok(()) => return Ok(()),
                Err((_, e @ Error::Gpu(_))) => engine.gpu_failed(e)?,
                Err((_, e)) => {
                    // A data error: the CPU decoders name the chunk and give the exact error.
                    decode_fixed_cpu(meta, metas, &payloads, out, chunks.start)?;
                    return Err(Error::Gpu(format!(
                        "the GPU rejected chunks {}..{} of column '{}' that the CPU decodes: {e}",
                        chunks.start, chunks.end, meta.name
                    )));
                }
            }
        }
        decode_fixed_cpu(meta, metas, &payloads, out, chunks.start)
    }

    /// The whole raw form of fixed-size column `col`.
    pub fn read_raw(&self, col: usize, engine: &mut Engine) -> Result<Vec<u8>> {
        let n = self.column(col)?.chunks.len();
        let len = usize::try_from(self.raw_len(col, 0..n)?)
            .map_err(|_| Error::InvalidArgument("column larger than memory".into()))?;
        let mut out = vec![0u8; len];
        self.read_raw_into(col, 0..n, &mut out, engine)?;
        Ok(out)
    }

    /// The values of integer column `col`; `T` must be its type.
    pub fn read_values<T: Value>(&self, col: usize, engine: &mut Engine) -> Result<Vec<T>> {
        let meta = self.column(col)?;
        if meta.logical_type != T::TYPE {
            return Err(Error::InvalidArgument(format!(
                "column '{}' holds {} values, not {}",
                meta.name,
                meta.logical_type.name(),
                T::TYPE.name()
            )));
        }
        let n = usize::try_from(meta.value_count)
            .map_err(|_| Error::InvalidArgument("column larger than memory".into()))?;
        let mut values = vec![T::zeroed(); n];
        self.read_raw_into(
            col,
            0..meta.chunks.len(),
            bytemuck::cast_slice_mut(&mut values),
            engine,
        )?;
        from_le_in_place(&mut values);
        Ok(values)
    }

    /// Decodes `chunks` of utf8 column `col`.
    pub fn read_strings(
        &self,
        col: usize,
        chunks: Range<usize>,
        engine: &mut Engine,
    ) -> Result<StringColumn> {
        let mut out = StringColumn::default();
        for s in self.decode_utf8(col, chunks, engine)? {
            out.append(&s);
        }
        Ok(out)
    }

    /// Decodes `chunks` of utf8 column `col`, one [`Strings`] per chunk.
    fn decode_utf8(
        &self,
        col: usize,
        chunks: Range<usize>,
        engine: &mut Engine,
    ) -> Result<Vec<Strings>> {
        let meta = self.column(col)?;
        if meta.logical_type != LogicalType::Utf8 {
            return Err(Error::InvalidArgument(format!(
                "column '{}' is {}, not utf8",
                meta.name,
                meta.logical_type.name()
            )));
        }
        let metas = self.chunk_range(col, &chunks)?;
        let payloads: Vec<&[u8]> = chunks
            .clone()
            .into_par_iter()
            .map(|k| self.c.chunk_payload(col, k))
            .collect::<Result<_>>()?;
        if let Some(gpu) = engine.gpu() {
            match decode_utf8_gpu(gpu, metas, &payloads) {
                Ok(s) => return Ok(s),
                Err((i, e)) => engine
                    .gpu_failed(e)
                    .map_err(|e| e.in_chunk(&meta.name, chunks.start + i, codec_name(metas, i)))?,
            }
        }
        metas
            .par_iter()
            .zip(&payloads)
            .enumerate()
            .map(|(i, (ch, p))| {
                text::decode_utf8_chunk(ch.codec, p, ch.value_count)
                    .map_err(|e| e.in_chunk(&meta.name, chunks.start + i, ch.codec.name()))
            })
            .collect()
    }

    /// Writes column `col` to `sink` in its raw form (little-endian values, packed bits, bytes)
    /// or, for utf8, its line form (`utf8.md` §3), a batch of chunks at a time; `progress` is
    /// told the bytes written. Returns the time spent decoding.
    pub fn write_column(
        &self,
        col: usize,
        mut sink: impl Write,
        engine: &mut Engine,
        mut progress: impl FnMut(u64),
    ) -> Result<Duration> {
        let meta = self.column(col)?;
        let n = meta.chunks.len();
        let mut spent = Duration::ZERO;
        let mut start = 0;
        let mut buf = Vec::new();
        while start < n {
            if meta.logical_type == LogicalType::Utf8 {
                // Text sizes are known only from the payloads: batch by compressed bytes.
                let mut end = start + 1;
                let mut bytes = meta.chunks[start].compressed_size as usize;
                while end < n && bytes < STREAM_BATCH_BYTES / 4 {
                    bytes += meta.chunks[end].compressed_size as usize;
                    end += 1;
                }
                let t = Instant::now();
                let decoded = self.decode_utf8(col, start..end, engine)?;
                spent += t.elapsed();
                let unterminated = meta.params.first().is_some_and(|f| f & UNTERMINATED != 0);
                buf.clear();
                for (i, s) in decoded.iter().enumerate() {
                    let last_chunk = start + i + 1 == n;
                    for (j, v) in s.iter().enumerate() {
                        if v.contains(&b'\n') {
                            return Err(Error::InvalidArgument(format!(
                                "column '{}' chunk {} string {j} holds a line feed: the line form cannot hold it",
                                meta.name,
                                start + i
                            )));
                        }
                        buf.extend_from_slice(v);
                        if !(last_chunk && j + 1 == s.len() && unterminated) {
                            buf.push(b'\n');
                        }
                    }
                }
                start = end;
            } else {
                let ty = meta.logical_type;
                let mut end = start;
                let mut bytes = 0usize;
                while end < n && (end == start || bytes < STREAM_BATCH_BYTES) {
                    bytes += ty.raw_len(meta.chunks[end].value_count as u64).unwrap_or(0) as usize;
                    end += 1;
                }
                buf.resize(bytes, 0);
                let t = Instant::now();
                self.read_raw_into(col, start..end, &mut buf, engine)?;
                spent += t.elapsed();
                start = end;
            }
            sink.write_all(&buf)
                .map_err(|e| Error::io("cannot write output", e))?;
            progress(buf.len() as u64);
        }
        sink.flush()
            .map_err(|e| Error::io("cannot write output", e))?;
        Ok(spent)
    }
}

fn codec_name(metas: &[ChunkMeta], i: usize) -> &'static str {
    metas.get(i).map_or("?", |c| c.codec.name())
}

/// CPU decode of fixed-size chunks, in parallel; `first` is the first chunk's index (errors).
fn decode_fixed_cpu(
    meta: &ColumnMeta,
    metas: &[ChunkMeta],
    payloads: &[&[u8]],
    out: &mut [u8],
    first: usize,
) -> Result<()> {
    let ty = meta.logical_type;
    let mut parts = Vec::with_capacity(metas.len());
    let mut rest = out;
    for ch in metas {
        let len = ty.raw_len(ch.value_count as u64).unwrap_or(0) as usize;
        let (a, b) = rest.split_at_mut(len);
        parts.push(a);
        rest = b;
    }
    parts
        .into_par_iter()
        .zip(metas.par_iter().zip(payloads.par_iter()))
        .enumerate()
        .try_for_each(|(i, (dst, (ch, payload)))| {
            column::decode_values(ty, ch.codec, payload, ch.value_count as u64, dst)
                .map_err(|e| e.in_chunk(&meta.name, first + i, ch.codec.name()))
        })
}

/// GPU decode of fixed-size chunks into host memory, through the GPU decoder registry (one batch
/// per decoder; integer columns take the coprocessor path). An error carries the index (in
/// `metas`) of the chunk it concerns.
fn decode_fixed_gpu(
    gpu: &Gpu,
    meta: &ColumnMeta,
    metas: &[ChunkMeta],
    payloads: &[&[u8]],
    out: &mut [u8],
) -> std::result::Result<(), (usize, Error)> {
    let ty = meta.logical_type;
    let refs = chunk_refs(metas, payloads);
    tessera_gpu::codec::decode_to_host(gpu, ty, &refs, out).map_err(|be| {
        locate(be, |k| {
            let mut host = vec![0u8; ty.raw_len(metas[k].value_count as u64).unwrap_or(0) as usize];
            column::decode_values(
                ty,
                metas[k].codec,
                payloads[k],
                metas[k].value_count as u64,
                &mut host,
            )
            .err()
        })
    })
}

/// The chunks of a column as the GPU decoders take them.
pub(crate) fn chunk_refs<'a>(metas: &[ChunkMeta], payloads: &[&'a [u8]]) -> Vec<ChunkRef<'a>> {
    metas
        .iter()
        .zip(payloads)
        .map(|(ch, p)| ChunkRef {
            codec: ch.codec,
            payload: p,
            value_count: ch.value_count,
        })
        .collect()
}

/// The chunk a failed GPU batch concerns, and the error to report: for a data error, the first
/// of the batch's chunks the CPU decoder (`cpu_error`) rejects, with the CPU's exact error; a
/// device failure (or a data error the CPU does not reproduce) is returned as the batch gave it.
pub(crate) fn locate(
    be: tessera_gpu::BatchError,
    cpu_error: impl Fn(usize) -> Option<Error>,
) -> (usize, Error) {
    let first = be.chunks.first().copied().unwrap_or(0);
    if matches!(be.error, Error::Gpu(_)) {
        return (first, be.error);
    }
    be.chunks
        .iter()
        .find_map(|&k| cpu_error(k).map(|e| (k, e)))
        .unwrap_or((first, be.error))
}

/// The parts of a utf8 chunk payload (`utf8.md` §1), checked as the CPU decoder checks them.
pub(crate) struct Utf8Parts<'a> {
    pub(crate) offsets: &'a [u8],
    pub(crate) data_size: usize,
    pub(crate) text: &'a [u8],
}

pub(crate) fn utf8_parts(payload: &[u8]) -> Option<Utf8Parts<'_>> {
    let header = payload.get(..text::HEADER_BYTES)?;
    let offsets_size = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let data_size = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as u64;
    if data_size > text::MAX_TEXT_BYTES {
        return None;
    }
    let rest = &payload[text::HEADER_BYTES..];
    if offsets_size > rest.len() {
        return None;
    }
    let (offsets, text) = rest.split_at(offsets_size);
    Some(Utf8Parts {
        offsets,
        data_size: data_size as usize,
        text,
    })
}

/// The parts of a utf8 column as the GPU decoders take them: every chunk's end offsets (DFOR,
/// `utf8.md` §1) and every chunk's text, with each chunk's text size.
pub(crate) struct Utf8Refs<'a> {
    pub(crate) offsets: Vec<ChunkRef<'a>>,
    pub(crate) texts: Vec<ChunkRef<'a>>,
    pub(crate) data_sizes: Vec<usize>,
}

pub(crate) fn utf8_refs<'a, E>(
    metas: &[ChunkMeta],
    payloads: &[&'a [u8]],
    cpu_error: impl Fn(usize) -> E,
) -> std::result::Result<Utf8Refs<'a>, E> {
    let mut r = Utf8Refs {
        offsets: Vec::with_capacity(payloads.len()),
        texts: Vec::with_capacity(payloads.len()),
        data_sizes: Vec::with_capacity(payloads.len()),
    };
    for (k, (ch, p)) in metas.iter().zip(payloads).enumerate() {
        let parts = utf8_parts(p)
            .filter(|_| ch.codec.supports(LogicalType::Utf8))
            .ok_or_else(|| cpu_error(k))?;
        r.offsets.push(ChunkRef {
            codec: CodecId::Dfor,
            payload: parts.offsets,
            value_count: ch.value_count,
        });
        r.texts.push(ChunkRef {
            codec: ch.codec,
            payload: parts.text,
            value_count: parts.data_size as u32,
        });
        r.data_sizes.push(parts.data_size);
    }
    Ok(r)
}

/// GPU decode of utf8 chunks: every chunk's end offsets in one batched DFOR launch, the text of
/// each chunk on its codec's GPU decoder. A chunk the GPU path finds wrong is decoded again by
/// GPU decode of utf8 chunks: every chunk's end offsets in one batched DFOR launch, the text of
/// every chunk in one batch per decoder. A chunk the GPU path finds wrong is decoded again by
/// the CPU decoder, whose error (the exact one the CPU path gives) is returned.
fn decode_utf8_gpu(
    gpu: &Gpu,
    metas: &[ChunkMeta],
    payloads: &[&[u8]],
) -> std::result::Result<Vec<Strings>, (usize, Error)> {
    let cpu_error = |i: usize| -> (usize, Error) {
        let ch = &metas[i];
        match text::decode_utf8_chunk(ch.codec, payloads[i], ch.value_count) {
            Err(e) => (i, e),
            Ok(_) => (
                i,
                Error::Gpu("the GPU rejected a utf8 chunk the CPU decoder accepts".into()),
            ),
        }
    };
    let cpu_data_error = |k: usize| {
        let (_, e) = cpu_error(k);
        (!matches!(e, Error::Gpu(_))).then_some(e)
    };
    let refs = utf8_refs(metas, payloads, cpu_error)?;
    let total: usize = metas.iter().map(|c| c.value_count as usize).sum();
    let mut ends = vec![0u32; total];
    tessera_gpu::codec::decode_to_host(
        gpu,
        LogicalType::U32,
        &refs.offsets,
        bytemuck::cast_slice_mut(&mut ends),
    )
    .map_err(|be| locate(be, cpu_data_error))?;
    from_le_in_place(&mut ends);
    let mut at = 0usize;
    for (i, (ch, &size)) in metas.iter().zip(&refs.data_sizes).enumerate() {
        let chunk_ends = &ends[at..at + ch.value_count as usize];
        at += ch.value_count as usize;
        let ordered = chunk_ends.windows(2).all(|w| w[0] <= w[1])
            && chunk_ends.last().map_or(0, |&e| e as usize) == size;
        if !ordered {
            return Err(cpu_error(i));
        }
    }
    // Every chunk's text in one batch per decoder, into one host buffer.
    let mut data = vec![0u8; refs.data_sizes.iter().sum()];
    tessera_gpu::codec::decode_to_host(gpu, LogicalType::Bytes, &refs.texts, &mut data)
        .map_err(|be| locate(be, cpu_data_error))?;
    let mut out = Vec::with_capacity(metas.len());
    let (mut at, mut data_at) = (0usize, 0usize);
    for (ch, &size) in metas.iter().zip(&refs.data_sizes) {
        out.push(Strings {
            ends: ends[at..at + ch.value_count as usize].to_vec(),
            data: data[data_at..data_at + size].to_vec(),
        });
        at += ch.value_count as usize;
        data_at += size;
    }
    Ok(out)
}
