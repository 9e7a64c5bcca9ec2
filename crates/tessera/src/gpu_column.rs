//! Columns decoded into GPU memory, with no host round trip for the values: what a GPU program
//! (a query kernel, a dataframe library) takes as input.

use cudarc::driver::CudaView;
use tessera_codecs::bitmap::{self, Flavor};
use tessera_codecs::text;
use tessera_format::container::{ChunkMeta, ColumnMeta};
use tessera_format::{CodecId, Error, LogicalType, Result};
use tessera_gpu::{ChunkRef, CudaSlice, Gpu};

use crate::read::{utf8_parts, TableReader};

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
    /// significant bit first (`ceil(len / 8)` bytes). Buffers may be longer than that.
    Raw(CudaSlice<u8>),
    /// Strings: per chunk, `u32` end offsets relative to the chunk's first byte, and the text.
    /// String `i` of chunk `k` (its index `chunk_value_starts[k] + i` in the column) is
    /// `data[chunk_data_starts[k] + ends[v - 1] .. chunk_data_starts[k] + ends[v]]` with
    /// `v = chunk_value_starts[k] + i` and the previous end 0 at a chunk's first string. The
    /// offsets were checked (never decreasing, each chunk's last one its text size) before
    /// this is returned.
    Utf8 {
        /// `len` end offsets, `u32` little-endian (4 bytes each).
        ends: CudaSlice<u8>,
        /// The text of every chunk, back to back.
        data: CudaSlice<u8>,
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
            ty if ty.is_integer() => GpuData::Raw(ints_to_gpu(gpu, ty, &meta.chunks, &payloads)?),
            ty => {
                let lens: Vec<usize> = meta
                    .chunks
                    .iter()
                    .map(|c| ty.raw_len(c.value_count as u64).unwrap_or(0) as usize)
                    .collect();
                GpuData::Raw(bytes_to_gpu(gpu, ty, meta, &meta.chunks, &payloads, &lens)?)
            }
        };
        Ok(GpuColumn {
            logical_type: meta.logical_type,
            len: meta.value_count,
            data,
        })
    }
}

fn chunk_refs<'a>(chunks: &[ChunkMeta], payloads: &[&'a [u8]]) -> Vec<ChunkRef<'a>> {
    chunks
        .iter()
        .zip(payloads)
        .map(|(ch, p)| ChunkRef {
            codec: ch.codec,
            payload: p,
            value_count: ch.value_count,
        })
        .collect()
}

/// Every chunk of an integer column in one launch per codec.
fn ints_to_gpu(
    gpu: &Gpu,
    ty: LogicalType,
    chunks: &[ChunkMeta],
    payloads: &[&[u8]],
) -> Result<CudaSlice<u8>> {
    let refs = chunk_refs(chunks, payloads);
    let col = gpu.upload_column(ty, &refs)?;
    let mut out = gpu.alloc::<u8>(col.decoded_bytes() as usize)?;
    gpu.enqueue_decode(&col, &mut out)?;
    gpu.finish_decode(&col, Some(&refs))?;
    Ok(out)
}

/// Copies `src` into `dst[at..at + src.len()]` on the device.
fn place(dst: &mut CudaSlice<u8>, at: usize, src: &CudaView<'_, u8>) -> Result<()> {
    if src.is_empty() {
        return Ok(());
    }
    let stream = dst.stream().clone();
    let mut to = dst
        .try_slice_mut(at..at + src.len())
        .ok_or_else(|| Error::Gpu("device copy destination too short".into()))?;
    stream
        .memcpy_dtod(src, &mut to)
        .map_err(|e| Error::Gpu(format!("copying on the device: {e}")))
}

/// Copies host bytes into `dst[at..at + src.len()]`.
fn place_host(dst: &mut CudaSlice<u8>, at: usize, src: &[u8]) -> Result<()> {
    if src.is_empty() {
        return Ok(());
    }
    let stream = dst.stream().clone();
    let mut to = dst
        .try_slice_mut(at..at + src.len())
        .ok_or_else(|| Error::Gpu("device copy destination too short".into()))?;
    stream
        .memcpy_htod(src, &mut to)
        .map_err(|e| Error::Gpu(format!("copying to the device: {e}")))
}

/// Bytes or bits chunks (or utf8 text payloads) decoded into one device buffer, chunk `k` at the
/// sum of `lens[..k]`: the LLL chunks in one launch, the Huffman chunks in one launch, each
/// bitmap chunk by itself, plain chunks copied.
fn bytes_to_gpu(
    gpu: &Gpu,
    ty: LogicalType,
    meta: &ColumnMeta,
    chunks: &[ChunkMeta],
    payloads: &[&[u8]],
    lens: &[usize],
) -> Result<CudaSlice<u8>> {
    let mut starts = Vec::with_capacity(lens.len());
    let mut total = 0usize;
    for &l in lens {
        starts.push(total);
        total += l;
    }
    let mut out = gpu.alloc::<u8>(total)?;
    let name = |k: usize, e: Error| e.in_chunk(&meta.name, k, chunks[k].codec.name());
    for codec in [CodecId::Lll, CodecId::Huffman] {
        let ks: Vec<usize> = (0..chunks.len())
            .filter(|&k| chunks[k].codec == codec)
            .collect();
        if ks.is_empty() {
            continue;
        }
        let group_len: usize = ks.iter().map(|&k| lens[k]).sum();
        let mut scratch = gpu.alloc::<u8>(group_len)?;
        let decoded = match codec {
            CodecId::Lll => {
                let parts: Vec<(&[u8], usize)> =
                    ks.iter().map(|&k| (payloads[k], lens[k])).collect();
                tessera_gpu::lll::DeviceLll::upload(gpu, &parts)
                    .and_then(|d| tessera_gpu::lll::decode_device(gpu, &d, &mut scratch))
            }
            _ => {
                let ps: Vec<&[u8]> = ks.iter().map(|&k| payloads[k]).collect();
                let counts: Vec<usize> = ks.iter().map(|&k| lens[k]).collect();
                tessera_gpu::huffman::upload_chunks(gpu, &ps, &counts)
                    .and_then(|e| tessera_gpu::huffman::decode_device(gpu, &e, &mut scratch))
            }
        };
        if let Err(e) = decoded {
            // The batched decoders report a batch's first failure; the CPU decoder names the
            // chunk and gives the exact error.
            return Err(first_cpu_error(ty, chunks, payloads, &ks, lens)
                .map(|(k, ce)| name(k, ce))
                .unwrap_or(e));
        }
        let mut at = 0usize;
        for &k in &ks {
            // Copies of a whole group into place: cheap next to decoding, and they keep each
            // codec's launch over all of its chunks.
            let src = scratch
                .try_slice(at..at + lens[k])
                .ok_or_else(|| Error::Gpu("device copy source too short".into()))?;
            place(&mut out, starts[k], &src)?;
            at += lens[k];
        }
    }
    for (k, ch) in chunks.iter().enumerate() {
        match ch.codec {
            CodecId::Lll | CodecId::Huffman => {}
            CodecId::Wah | CodecId::Plwah if ty == LogicalType::Bits => {
                let flavor = if ch.codec == CodecId::Wah {
                    Flavor::Wah
                } else {
                    Flavor::Plwah
                };
                let bits = bitmap::payload_bit_len(flavor, payloads[k]).map_err(|e| name(k, e))?;
                if bits != ch.value_count as u64 {
                    return Err(name(
                        k,
                        Error::CountMismatch {
                            what: "bitmap bit length",
                            expected: ch.value_count as u64,
                            found: bits,
                        },
                    ));
                }
                let d = tessera_gpu::bitmap::upload_payload(gpu, flavor, payloads[k])
                    .map_err(|e| name(k, e))?;
                let plain = tessera_gpu::bitmap::decompress_device(gpu, &d)?;
                // SAFETY: u8 has no invalid bit patterns and alignment 1, and the view covers
                // `lens[k]` = ceil(bits / 8) bytes of the `ceil(bits / 32)` words allocated.
                let bytes = unsafe { plain.words.transmute::<u8>(lens[k]) }
                    .ok_or_else(|| Error::Gpu("bitmap words shorter than its bytes".into()))?;
                place(&mut out, starts[k], &bytes)?;
            }
            codec => {
                // Plain (or a codec the type does not take: the CPU path gives its error).
                let mut host = vec![0u8; lens[k]];
                tessera_codecs::column::decode_values(
                    ty,
                    codec,
                    payloads[k],
                    ch.value_count as u64,
                    &mut host,
                )
                .map_err(|e| name(k, e))?;
                place_host(&mut out, starts[k], &host)?;
            }
        }
    }
    gpu.synchronize()?;
    Ok(out)
}

/// The first chunk among `ks` whose CPU decode fails, with its error.
fn first_cpu_error(
    ty: LogicalType,
    chunks: &[ChunkMeta],
    payloads: &[&[u8]],
    ks: &[usize],
    lens: &[usize],
) -> Option<(usize, Error)> {
    ks.iter().find_map(|&k| {
        let mut host = vec![0u8; lens[k]];
        tessera_codecs::column::decode_values(
            ty,
            chunks[k].codec,
            payloads[k],
            lens[k] as u64,
            &mut host,
        )
        .err()
        .map(|e| (k, e))
    })
}

/// A utf8 column: every chunk's end offsets in one DFOR launch, the text by codec.
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
    let mut offsets = Vec::with_capacity(chunks.len());
    let mut texts = Vec::with_capacity(chunks.len());
    let mut data_sizes = Vec::with_capacity(chunks.len());
    for (k, (ch, p)) in chunks.iter().zip(payloads).enumerate() {
        let parts = utf8_parts(p)
            .filter(|_| ch.codec.supports(LogicalType::Utf8))
            .ok_or_else(|| cpu_error(k))?;
        offsets.push(ChunkRef {
            codec: CodecId::Dfor,
            payload: parts.offsets,
            value_count: ch.value_count,
        });
        texts.push(parts.text);
        data_sizes.push(parts.data_size);
    }
    let col = gpu
        .upload_column(LogicalType::U32, &offsets)
        .map_err(|e| match e {
            Error::Gpu(_) => e,
            _ => (0..chunks.len()).map(cpu_error).next().unwrap_or(e),
        })?;
    let mut ends_bytes = gpu.alloc::<u8>(col.decoded_bytes() as usize)?;
    gpu.enqueue_decode(&col, &mut ends_bytes)?;
    gpu.finish_decode(&col, Some(&offsets))?;
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
            && e.last().map_or(0, |&x| x as usize) == data_sizes[k];
        if !ok {
            return Err(cpu_error(k));
        }
        value_starts.push(at as u64);
        data_starts.push(data_starts[k] + data_sizes[k] as u64);
    }
    let data = bytes_to_gpu(gpu, LogicalType::Bytes, meta, chunks, &texts, &data_sizes)?;
    Ok(GpuData::Utf8 {
        ends: ends_bytes,
        data,
        chunk_value_starts: value_starts,
        chunk_data_starts: data_starts,
    })
}

/// A column's compressed payloads resident on the GPU, ready to be decoded again and again:
/// what [`TableReader::gpu_decode_ms`] times.
enum Resident {
    Ints(tessera_gpu::DeviceColumn, CudaSlice<u8>),
    Lll(tessera_gpu::lll::DeviceLll, CudaSlice<u8>),
    Huffman(
        tessera_gpu::huffman::HuffmanEncoded,
        Box<tessera_gpu::huffman::DecodePlan>,
        CudaSlice<u8>,
    ),
    Bitmap(tessera_gpu::bitmap::DeviceBitmap, CudaSlice<u32>),
}

impl Resident {
    /// The chunks `ks` of `texts` (bytes payloads decoding to `lens`) with codec `codec`.
    fn bytes(
        gpu: &Gpu,
        codec: CodecId,
        texts: &[&[u8]],
        lens: &[usize],
        ks: &[usize],
    ) -> Result<Option<Resident>> {
        if ks.is_empty() {
            return Ok(None);
        }
        let total: usize = ks.iter().map(|&k| lens[k]).sum();
        let out = gpu.alloc::<u8>(total)?;
        Ok(match codec {
            CodecId::Lll => {
                let parts: Vec<(&[u8], usize)> = ks.iter().map(|&k| (texts[k], lens[k])).collect();
                Some(Resident::Lll(
                    tessera_gpu::lll::DeviceLll::upload(gpu, &parts)?,
                    out,
                ))
            }
            CodecId::Huffman => {
                let ps: Vec<&[u8]> = ks.iter().map(|&k| texts[k]).collect();
                let counts: Vec<usize> = ks.iter().map(|&k| lens[k]).collect();
                let enc = tessera_gpu::huffman::upload_chunks(gpu, &ps, &counts)?;
                let plan = tessera_gpu::huffman::plan_decode(gpu, &enc)?;
                Some(Resident::Huffman(enc, Box::new(plan), out))
            }
            _ => None,
        })
    }

    /// Decodes once; queued work is waited for.
    fn decode(&mut self, gpu: &Gpu) -> Result<()> {
        match self {
            Resident::Ints(col, out) => {
                gpu.enqueue_decode(col, out)?;
                gpu.finish_decode(col, None)
            }
            Resident::Lll(input, out) => tessera_gpu::lll::decode_device(gpu, input, out),
            Resident::Huffman(enc, plan, out) => {
                tessera_gpu::huffman::decode_planned(gpu, enc, plan, out)
            }
            Resident::Bitmap(d, out) => {
                tessera_gpu::bitmap::decompress_device_into(gpu, d, out)?;
                gpu.synchronize()
            }
        }
    }
}

impl TableReader {
    /// The GPU time (CUDA events, median of `runs` after one warm-up run) of decoding column
    /// `col` with its compressed payloads already in GPU memory: one launch sequence per codec
    /// group (integer codecs together, LLL chunks together, Huffman chunks together, each bitmap
    /// chunk), utf8 as its offsets plus its text. Plain chunks are not counted (a copy). This is
    /// the kernels' own speed, without PCIe transfers; compare it with
    /// [`Gpu::copy_ceiling_gbps`].
    pub fn gpu_decode_ms(&self, col: usize, gpu: &Gpu, runs: usize) -> Result<f64> {
        let meta = self
            .columns()
            .get(col)
            .ok_or_else(|| Error::InvalidArgument(format!("no column {col}")))?;
        let payloads: Vec<&[u8]> = (0..meta.chunks.len())
            .map(|k| self.container().chunk_payload(col, k))
            .collect::<Result<_>>()?;
        let chunks = &meta.chunks;
        let ty = meta.logical_type;
        let mut resident = Vec::new();
        let group = |codec: CodecId| -> Vec<usize> {
            (0..chunks.len())
                .filter(|&k| chunks[k].codec == codec)
                .collect()
        };
        if ty.is_integer() {
            let refs = chunk_refs(chunks, &payloads);
            let dc = gpu.upload_column(ty, &refs)?;
            let out = gpu.alloc::<u8>(dc.decoded_bytes() as usize)?;
            resident.push(Resident::Ints(dc, out));
        } else if ty == LogicalType::Bits {
            for (k, ch) in chunks.iter().enumerate() {
                let flavor = match ch.codec {
                    CodecId::Wah => Flavor::Wah,
                    CodecId::Plwah => Flavor::Plwah,
                    _ => continue,
                };
                let d = tessera_gpu::bitmap::upload_payload(gpu, flavor, payloads[k])?;
                let words = gpu.alloc::<u32>(d.bit_len.div_ceil(32) as usize)?;
                resident.push(Resident::Bitmap(d, words));
            }
        } else {
            let (texts, lens): (Vec<&[u8]>, Vec<usize>) = if ty == LogicalType::Utf8 {
                let mut offsets = Vec::new();
                let mut texts = Vec::new();
                let mut lens = Vec::new();
                for (ch, p) in chunks.iter().zip(&payloads) {
                    let parts = utf8_parts(p)
                        .ok_or_else(|| Error::InvalidArgument("a damaged utf8 chunk".into()))?;
                    offsets.push(ChunkRef {
                        codec: CodecId::Dfor,
                        payload: parts.offsets,
                        value_count: ch.value_count,
                    });
                    texts.push(parts.text);
                    lens.push(parts.data_size);
                }
                let dc = gpu.upload_column(LogicalType::U32, &offsets)?;
                let out = gpu.alloc::<u8>(dc.decoded_bytes() as usize)?;
                resident.push(Resident::Ints(dc, out));
                (texts, lens)
            } else {
                let lens = chunks.iter().map(|c| c.value_count as usize).collect();
                (payloads.clone(), lens)
            };
            for codec in [CodecId::Lll, CodecId::Huffman] {
                resident.extend(Resident::bytes(gpu, codec, &texts, &lens, &group(codec))?);
            }
        }
        gpu.median_ms(runs, || {
            for r in resident.iter_mut() {
                r.decode(gpu)?;
            }
            Ok(())
        })
    }
}
