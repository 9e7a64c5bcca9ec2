//! Columns decoded into GPU memory, with no host round trip for the values: what a GPU program
//! (a query kernel, a dataframe library) takes as input.

use tessera_codecs::{column, text};
use tessera_format::container::ColumnMeta;
use tessera_format::{Error, LogicalType, Result};
use tessera_gpu::{codec, Gpu, GpuBuffer, ResidentColumn};

use crate::read::{chunk_refs, locate, utf8_refs, TableReader};

/// A column decoded on the GPU.
#[derive(Debug)]
pub struct GpuColumn {
    /// The column's type.
    pub logical_type: LogicalType,
    /// Values (strings for utf8, bits for bits).
    pub len: u64,
    /// The decoded buffers.
    pub data: GpuData,
}

/// The device buffers of a [`GpuColumn`].
#[derive(Debug)]
pub enum GpuData {
    /// Integer values, little-endian at the type's width; bytes, one a value; bits packed least
    /// significant bit first (`ceil(len / 8)` bytes). Buffers may be longer than that, and
    /// may be views of a buffer the read's other columns share ([`GpuBuffer`]).
    Raw(GpuBuffer),
    /// Strings: per chunk, `u32` end offsets relative to the chunk's first byte, and the text.
    /// String `i` of chunk `k` (its index `chunk_value_starts[k] + i` in the column) is
    /// `data[chunk_data_starts[k] + ends[v - 1] .. chunk_data_starts[k] + ends[v]]` with
    /// `v = chunk_value_starts[k] + i` and the previous end 0 at a chunk's first string. The
    /// offsets were checked (never decreasing, each chunk's last one its text size) before
    /// this is returned.
    Utf8 {
        /// `len` end offsets, `u32` little-endian (4 bytes each).
        ends: GpuBuffer,
        /// The text of every chunk, back to back.
        data: GpuBuffer,
        /// Index of each chunk's first string, then `len` (`chunks + 1` entries).
        chunk_value_starts: Vec<u64>,
        /// Byte offset of each chunk's text in `data`, then its length (`chunks + 1` entries).
        chunk_data_starts: Vec<u64>,
    },
}

impl TableReader {
    /// Decodes column `col` into GPU memory on `gpu`. Payload checksums are verified on the host
    /// first; corrupt chunks give the same errors as the CPU decoders.
    pub fn read_gpu(&self, col: usize, gpu: &Gpu) -> Result<GpuColumn> {
        let meta = self
            .columns()
            .get(col)
            .ok_or_else(|| Error::InvalidArgument(format!("no column {col}")))?;
        let payloads: Vec<&[u8]> = (0..meta.chunks.len())
            .map(|k| self.container().chunk_payload(col, k))
            .collect::<Result<_>>()?;
        let data = match meta.logical_type {
            LogicalType::Utf8 => utf8_to_gpu(gpu, meta, &payloads)?,
            ty => {
                let refs = chunk_refs(&meta.chunks, &payloads);
                let cpu_error = |k: usize| {
                    let ch = &meta.chunks[k];
                    let mut host =
                        vec![0u8; ty.raw_len(ch.value_count as u64).unwrap_or(0) as usize];
                    column::decode_values(
                        ty,
                        ch.codec,
                        payloads[k],
                        ch.value_count as u64,
                        &mut host,
                    )
                    .err()
                };
                GpuData::Raw(
                    codec::decode_to_device(gpu, ty, &refs)
                        .map_err(|be| named(meta, locate(be, cpu_error)))?
                        .into(),
                )
            }
        };
        Ok(GpuColumn {
            logical_type: meta.logical_type,
            len: meta.value_count,
            data,
        })
    }
}

/// A located chunk error, named by column, chunk and codec (device failures pass unchanged, so
/// `Device::Auto` can fall back to the CPU).
fn named(meta: &ColumnMeta, (k, e): (usize, Error)) -> Error {
    match e {
        Error::Gpu(_) => e,
        e => match meta.chunks.get(k) {
            Some(ch) => e.in_chunk(&meta.name, k, ch.codec.name()),
            None => e,
        },
    }
}

/// A utf8 column: every chunk's end offsets in one DFOR launch, the text in one batch per
/// decoder.
fn utf8_to_gpu(gpu: &Gpu, meta: &ColumnMeta, payloads: &[&[u8]]) -> Result<GpuData> {
    let chunks = &meta.chunks;
    let cpu_error = |k: usize| -> Error {
        let ch = &chunks[k];
        match text::decode_utf8_chunk(ch.codec, payloads[k], ch.value_count) {
            Err(e) => e.in_chunk(&meta.name, k, ch.codec.name()),
            Ok(_) => Error::Gpu(format!(
                "column '{}' chunk {k}: the GPU path rejected a chunk the CPU decodes",
                meta.name
            )),
        }
    };
    let refs = utf8_refs(&meta.chunks, payloads, cpu_error)?;
    let cpu_data_error = |k: usize| Some(cpu_error(k)).filter(|e| !matches!(e, Error::Gpu(_)));
    let ends_bytes = codec::decode_to_device(gpu, LogicalType::U32, &refs.offsets)
        .map_err(|be| locate(be, cpu_data_error).1)?;
    // The offsets decide where consumers read: check them on the host (4 bytes a string).
    let mut host_ends = vec![0u32; meta.value_count as usize];
    let host_bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut host_ends);
    gpu.download(&ends_bytes, host_bytes)?;
    crate::value::from_le_in_place(&mut host_ends);
    let mut value_starts = vec![0u64];
    let mut data_starts = vec![0u64];
    let mut at = 0usize;
    for (k, ch) in chunks.iter().enumerate() {
        let e = &host_ends[at..at + ch.value_count as usize];
        at += ch.value_count as usize;
        let ok = e.windows(2).all(|w| w[0] <= w[1])
            && e.last().map_or(0, |&x| x as usize) == refs.data_sizes[k];
        if !ok {
            return Err(cpu_error(k));
        }
        value_starts.push(at as u64);
        data_starts.push(data_starts[k] + refs.data_sizes[k] as u64);
    }
    let data = codec::decode_to_device(gpu, LogicalType::Bytes, &refs.texts)
        .map_err(|be| locate(be, cpu_data_error).1)?;
    Ok(GpuData::Utf8 {
        ends: ends_bytes.into(),
        data: data.into(),
        chunk_value_starts: value_starts,
        chunk_data_starts: data_starts,
    })
}

impl TableReader {
    /// The GPU time (CUDA events, median of `runs` after one warm-up run) of decoding column
    /// `col` with its compressed payloads already in GPU memory: one launch sequence per batch
    /// of the GPU decoder registry (`tessera_gpu::codec`), utf8 as its offsets plus its text.
    /// Chunks no kernel serves (plain) count as device copies. This is the kernels' own speed,
    /// without PCIe transfers; compare it with [`Gpu::copy_ceiling_gbps`].
    pub fn gpu_decode_ms(&self, col: usize, gpu: &Gpu, runs: usize) -> Result<f64> {
        let meta = self
            .columns()
            .get(col)
            .ok_or_else(|| Error::InvalidArgument(format!("no column {col}")))?;
        let payloads: Vec<&[u8]> = (0..meta.chunks.len())
            .map(|k| self.container().chunk_payload(col, k))
            .collect::<Result<_>>()?;
        let batch = |be: tessera_gpu::BatchError| be.error;
        let mut resident = Vec::new();
        if meta.logical_type == LogicalType::Utf8 {
            let refs = utf8_refs(&meta.chunks, &payloads, |k| {
                Error::InvalidArgument(format!(
                    "column '{}' chunk {k}: a damaged utf8 chunk",
                    meta.name
                ))
            })?;
            resident
                .push(ResidentColumn::upload(gpu, LogicalType::U32, &refs.offsets).map_err(batch)?);
            resident
                .push(ResidentColumn::upload(gpu, LogicalType::Bytes, &refs.texts).map_err(batch)?);
        } else {
            let refs = chunk_refs(&meta.chunks, &payloads);
            resident.push(ResidentColumn::upload(gpu, meta.logical_type, &refs).map_err(batch)?);
        }
        let mut outs = resident
            .iter()
            .map(|r| gpu.alloc::<u8>(r.decoded_bytes()))
            .collect::<Result<Vec<_>>>()?;
        gpu.median_ms(runs, || {
            for (r, out) in resident.iter_mut().zip(outs.iter_mut()) {
                r.decode(gpu, out).map_err(batch)?;
            }
            Ok(())
        })
    }
}
