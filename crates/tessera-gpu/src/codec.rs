//! The GPU decoders, one registration each, and the one way a column's chunks reach them.
//!
//! Every GPU decoder implements [`GpuDecoder`]: which `(codec, logical type)` chunks it takes,
//! how it checks and uploads a batch of them ([`GpuBatch`]), and, optionally, a faster path into
//! host memory. [`DECODERS`] lists them; [`ResidentColumn`] groups a column's chunks by decoder,
//! uploads each group as one batch (one launch sequence per batch) and decodes every batch into
//! one device buffer, chunk `k` at the sum of the decoded lengths of chunks `0..k`.
//!
//! Adding a GPU decoder is a module of its own plus one line in [`DECODERS`]; callers (the
//! `tessera` facade) never name a codec. The last entry, [`HostDecoder`], takes any chunk the
//! others do not: it decodes on the CPU at upload time (so a chunk no kernel serves, or a plain
//! chunk, gets the CPU decoder's checks and errors) and copies on the device when decoding.

use cudarc::driver::CudaSlice;
use tessera_codecs::bitmap::{self as cpu_bitmap, Flavor};
use tessera_format::{CodecId, Error, LogicalType, Result};

use crate::primitives::copy::DeviceCopy;
use crate::{bitmap, huffman, lll, ChunkRef, DeviceColumn, Gpu};

/// A decoder of some codecs' chunks on the GPU.
pub trait GpuDecoder: Sync {
    /// A short name, for messages.
    fn name(&self) -> &'static str;

    /// Whether this decoder takes chunks of `codec` in a column of type `ty`.
    fn serves(&self, codec: CodecId, ty: LogicalType) -> bool;

    /// Checks the chunks' headers and copies them to the device as one batch. Chunk `i`
    /// decodes to `ty.raw_len(chunks[i].value_count)` bytes.
    fn upload<'a>(
        &self,
        gpu: &Gpu,
        ty: LogicalType,
        chunks: &[ChunkRef<'a>],
    ) -> Result<Box<dyn GpuBatch + 'a>>;

    /// The host part of [`Self::upload`] alone (headers checked, payloads laid out, decoder
    /// tables built), with no CUDA call, so that a read can prepare its batches on the thread
    /// pool and upload them from the thread that queues its work; `None` when this decoder has
    /// no such split (its [`Self::upload`] then runs when the prepared batch is uploaded).
    fn prepare<'a>(
        &self,
        _ty: LogicalType,
        _chunks: &[ChunkRef<'a>],
    ) -> Option<Result<Box<dyn PreparedBatch<'a> + 'a>>> {
        None
    }

    /// Decodes the chunks straight into host memory (`out` holds exactly their decoded bytes)
    /// when this decoder has a path faster than decoding on the device and downloading; `None`
    /// when it has not.
    fn decode_to_host(
        &self,
        _gpu: &Gpu,
        _ty: LogicalType,
        _chunks: &[ChunkRef<'_>],
        _out: &mut [u8],
    ) -> Option<Result<()>> {
        None
    }
}

/// A batch of chunks resident on the device, ready to be decoded again and again.
pub trait GpuBatch {
    /// Bytes the batch decodes to, its chunks back to back.
    fn decoded_bytes(&self) -> usize;

    /// Decodes the batch into `out[..decoded_bytes()]`, waits, and reports the first corrupt
    /// chunk's error.
    fn decode(&mut self, gpu: &Gpu, out: &mut CudaSlice<u8>) -> Result<()>;

    /// The batch's decoded bytes, back to back, when they already lie on the device as they are
    /// (chunks the CPU decoded at upload): a column served by several decoders then places
    /// them from here, with no scratch buffer and no copy into one. `None` (the default) for a
    /// batch that decodes on the device.
    fn decoded_on_device(&self) -> Option<&CudaSlice<u8>> {
        None
    }

    /// Gives up the batch's [`Self::decoded_on_device`] bytes as a buffer of the caller's, for
    /// a batch that serves a whole column: the column is then those bytes, with no buffer
    /// allocated and no copy. `None` (the default) where the batch has no such bytes; after
    /// `Some`, the batch has nothing left to decode or place.
    fn take_decoded(&mut self) -> Option<CudaSlice<u8>> {
        None
    }

    /// Queues the decode into `out[..decoded_bytes()]` without waiting, for a caller that waits
    /// once for many batches ([`Gpu::read_back_parts`]): returns the device address and byte
    /// length of the batch's status words, to be read back once the stream has finished and
    /// given to [`Self::check`]; `None` when there is nothing to read back. The default decodes
    /// and waits ([`Self::decode`]), so a decoder without a queued path stays correct.
    fn enqueue(&mut self, gpu: &Gpu, out: &mut CudaSlice<u8>) -> Result<Option<(u64, usize)>> {
        self.decode(gpu, out).map(|()| None)
    }

    /// The first corrupt chunk's error (as [`Self::decode`] reports it) from the status words
    /// [`Self::enqueue`] named, read back after the stream finished.
    fn check(&self, _gpu: &Gpu, _status: &[u8]) -> Result<()> {
        Ok(())
    }
}

/// A batch whose host work is done ([`GpuDecoder::prepare`]) and whose copies to the device
/// are not queued yet: `Send`, so it may be prepared on another thread than the one uploading.
pub trait PreparedBatch<'a>: Send {
    /// Copies the prepared batch to the device: what [`GpuDecoder::upload`] does after its host
    /// work.
    fn upload(self: Box<Self>, gpu: &Gpu) -> Result<Box<dyn GpuBatch + 'a>>;
}

/// Every GPU decoder, in the order they are asked; [`HostDecoder`] last takes the rest.
pub static DECODERS: &[&dyn GpuDecoder] = &[
    &IntDecoder,
    &lll::LllDecoder,
    &huffman::HuffmanDecoder,
    &bitmap::BitmapDecoder,
    &HostDecoder,
];

/// The decoder that takes chunks of `codec` in a column of type `ty` (always one: the host
/// decoder takes whatever no kernel serves).
pub fn decoder_for(codec: CodecId, ty: LogicalType) -> &'static dyn GpuDecoder {
    DECODERS[decoder_index(codec, ty)]
}

/// The position in [`DECODERS`] of [`decoder_for`]'s decoder: how chunks are grouped into
/// batches. Decoders are told apart by position, never by address: they are zero-sized, and
/// zero-sized statics may share one address (in release builds they do), which once grouped
/// plain chunks with LLL ones.
fn decoder_index(codec: CodecId, ty: LogicalType) -> usize {
    DECODERS
        .iter()
        .position(|d| d.serves(codec, ty))
        .unwrap_or(DECODERS.len() - 1)
}

/// Decoded bytes of a chunk of `value_count` values of `ty`.
fn decoded_len(ty: LogicalType, value_count: u32) -> Result<usize> {
    ty.raw_len(value_count as u64)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| Error::InvalidArgument(format!("{value_count} values of {ty:?}")))
}

/// A failure of one batch, with the column indices of the chunks it holds (the caller's CPU
/// decoder can then name the chunk and give its exact error).
#[derive(Debug)]
pub struct BatchError {
    /// Column indices of the batch's chunks, in column order.
    pub chunks: Vec<usize>,
    /// What the batch reported.
    pub error: Error,
}

struct Resident<'a> {
    /// Column indices of the batch's chunks, in column order.
    chunks: Vec<usize>,
    batch: Box<dyn GpuBatch + 'a>,
    place: Place,
}

/// Where a batch's chunks reach their places in the column.
enum Place {
    /// The batch's chunks are the whole column in order: it decodes into the output.
    Whole,
    /// It decodes into this buffer, and its chunks are copied into place from there.
    Scratch(CudaSlice<u8>),
    /// Its chunks are copied into place from its [`GpuBatch::decoded_on_device`] bytes.
    Decoded,
}

/// Where each chunk's decoded bytes lie in its column, by chunk index: byte offset and length.
#[derive(Debug)]
struct ChunkPlaces {
    starts: Vec<usize>,
    lens: Vec<usize>,
}

impl ChunkPlaces {
    /// Appends to `placed` the copies that put `chunks` (back to back in `src`) at their places
    /// in `out`; every range is checked against its buffer.
    fn copies(
        &self,
        gpu: &Gpu,
        chunks: &[usize],
        src: &CudaSlice<u8>,
        out: &CudaSlice<u8>,
        placed: &mut Vec<DeviceCopy>,
    ) -> Result<()> {
        let (src_ptr, out_ptr) = (gpu.ptr(src), gpu.ptr(out));
        let mut at = 0usize;
        for &k in chunks {
            let (start, len) = (self.starts[k], self.lens[k]);
            if at + len > src.len() || start + len > out.len() {
                return Err(Error::Gpu(
                    "a chunk's place lies outside its buffers".into(),
                ));
            }
            placed.push(DeviceCopy {
                dst: out_ptr + start as u64,
                src: src_ptr + at as u64,
                len,
            });
            at += len;
        }
        Ok(())
    }
}

/// A column's chunks uploaded to the device, one batch per decoder: what
/// [`ResidentColumn::decode`] turns into one buffer of decoded values.
pub struct ResidentColumn<'a> {
    batches: Vec<Resident<'a>>,
    places: ChunkPlaces,
    total: usize,
}

impl std::fmt::Debug for ResidentColumn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidentColumn")
            .field("batches", &self.batches.len())
            .field("chunks", &self.places.lens.len())
            .field("decoded_bytes", &self.total)
            .finish()
    }
}

/// One decoder's group of a [`PreparedColumn`]: prepared on the host, or (a decoder with no
/// host/device split) its chunks, uploaded whole by [`PreparedColumn::upload`].
enum Pending<'a> {
    Prepared(Box<dyn PreparedBatch<'a> + 'a>),
    Whole(usize, Vec<ChunkRef<'a>>),
}

/// A column's chunks grouped by decoder with every group's host work done and nothing on the
/// device yet ([`ResidentColumn::prepare`]): `Send`, so a read prepares its columns on the
/// thread pool; [`Self::upload`] then queues their copies from the thread that owns the stream.
pub struct PreparedColumn<'a> {
    groups: Vec<(Vec<usize>, Pending<'a>)>,
    ty: LogicalType,
    places: ChunkPlaces,
    total: usize,
}

impl std::fmt::Debug for PreparedColumn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedColumn")
            .field("groups", &self.groups.len())
            .field("chunks", &self.places.lens.len())
            .field("decoded_bytes", &self.total)
            .finish()
    }
}

impl<'a> ResidentColumn<'a> {
    /// Groups `chunks` (a column of type `ty`, in order) by decoder and uploads each group.
    pub fn upload(
        gpu: &Gpu,
        ty: LogicalType,
        chunks: &[ChunkRef<'a>],
    ) -> std::result::Result<Self, BatchError> {
        Self::prepare(ty, chunks)?.upload(gpu)
    }

    /// The host part of [`Self::upload`]: chunks grouped by decoder and each group's headers
    /// checked and payloads laid out ([`GpuDecoder::prepare`]), with no CUDA call.
    pub fn prepare(
        ty: LogicalType,
        chunks: &[ChunkRef<'a>],
    ) -> std::result::Result<PreparedColumn<'a>, BatchError> {
        let mut starts = Vec::with_capacity(chunks.len());
        let mut lens = Vec::with_capacity(chunks.len());
        let mut total = 0usize;
        for (k, c) in chunks.iter().enumerate() {
            let len = decoded_len(ty, c.value_count).map_err(|error| BatchError {
                chunks: vec![k],
                error,
            })?;
            starts.push(total);
            lens.push(len);
            total = total.checked_add(len).ok_or_else(|| BatchError {
                chunks: vec![k],
                error: Error::InvalidArgument("decoded column size overflows".into()),
            })?;
        }
        let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
        for (k, c) in chunks.iter().enumerate() {
            let d = decoder_index(c.codec, ty);
            match groups.iter_mut().find(|(g, _)| *g == d) {
                Some((_, ks)) => ks.push(k),
                None => groups.push((d, vec![k])),
            }
        }
        let mut prepared = Vec::with_capacity(groups.len());
        for (d, ks) in groups {
            let refs: Vec<ChunkRef<'a>> = ks.iter().map(|&k| chunks[k]).collect();
            let pending = match DECODERS[d].prepare(ty, &refs) {
                Some(Ok(p)) => Pending::Prepared(p),
                Some(Err(error)) => return Err(BatchError { chunks: ks, error }),
                None => Pending::Whole(d, refs),
            };
            prepared.push((ks, pending));
        }
        Ok(PreparedColumn {
            groups: prepared,
            ty,
            places: ChunkPlaces { starts, lens },
            total,
        })
    }
}

impl<'a> PreparedColumn<'a> {
    /// Bytes the column decodes to.
    pub fn decoded_bytes(&self) -> usize {
        self.total
    }

    /// Queues every group's copies to the device (groups with no host/device split are
    /// uploaded whole here): the column as [`ResidentColumn::upload`] gives it.
    pub fn upload(self, gpu: &Gpu) -> std::result::Result<ResidentColumn<'a>, BatchError> {
        let whole = self.groups.len() == 1;
        let mut batches = Vec::with_capacity(self.groups.len());
        for (ks, pending) in self.groups {
            let batch = match pending {
                Pending::Prepared(p) => p.upload(gpu),
                Pending::Whole(d, refs) => DECODERS[d].upload(gpu, self.ty, &refs),
            };
            let batch = match batch {
                Ok(b) => b,
                Err(error) => return Err(BatchError { chunks: ks, error }),
            };
            let place = if whole {
                Place::Whole
            } else if batch.decoded_on_device().is_some() {
                Place::Decoded
            } else {
                match gpu.alloc::<u8>(batch.decoded_bytes()) {
                    Ok(s) => Place::Scratch(s),
                    Err(error) => return Err(BatchError { chunks: ks, error }),
                }
            };
            batches.push(Resident {
                chunks: ks,
                batch,
                place,
            });
        }
        Ok(ResidentColumn {
            batches,
            places: self.places,
            total: self.total,
        })
    }
}

impl<'a> ResidentColumn<'a> {
    /// Bytes the column decodes to.
    pub fn decoded_bytes(&self) -> usize {
        self.total
    }

    /// Launch sequences one decode takes (one per batch).
    pub fn batch_count(&self) -> usize {
        self.batches.len()
    }

    /// Decodes every batch into `out[..decoded_bytes()]` and waits. A column served by one
    /// decoder decodes in place; otherwise each batch decodes into its scratch buffer (or has
    /// its bytes already, decoded on the CPU) and its chunks are copied into place on the
    /// device.
    pub fn decode(
        &mut self,
        gpu: &Gpu,
        out: &mut CudaSlice<u8>,
    ) -> std::result::Result<(), BatchError> {
        self.check_output(out)?;
        let mut placed: Vec<DeviceCopy> = Vec::new();
        for r in &mut self.batches {
            let fail = |error| BatchError {
                chunks: r.chunks.clone(),
                error,
            };
            let src = match &mut r.place {
                Place::Whole => {
                    r.batch.decode(gpu, out).map_err(fail)?;
                    continue;
                }
                Place::Scratch(scratch) => {
                    r.batch.decode(gpu, scratch).map_err(fail)?;
                    &*scratch
                }
                Place::Decoded => r
                    .batch
                    .decoded_on_device()
                    .ok_or_else(|| fail(no_decoded()))?,
            };
            self.places
                .copies(gpu, &r.chunks, src, out, &mut placed)
                .map_err(fail)?;
        }
        // Each batch's decode has waited for its own work; only the placing copies are queued.
        if !placed.is_empty() {
            // SAFETY: every range was checked against its live buffer; chunks' places in `out`
            // do not overlap; the sources and `out` live until the wait below.
            unsafe { gpu.copy_list(&placed) }
                .and_then(|()| gpu.synchronize())
                .map_err(|error| BatchError {
                    chunks: Vec::new(),
                    error,
                })?;
        }
        Ok(())
    }
}

/// A batch placed from its decoded bytes that has none (never, by construction).
fn no_decoded() -> Error {
    Error::Gpu("a batch placed from its decoded bytes has none".into())
}

impl ResidentColumn<'_> {
    /// `out` holds the column's decoded bytes.
    fn check_output(&self, out: &CudaSlice<u8>) -> std::result::Result<(), BatchError> {
        if out.len() < self.total {
            return Err(BatchError {
                chunks: Vec::new(),
                error: Error::InvalidArgument(format!(
                    "output holds {} bytes, the column needs {}",
                    out.len(),
                    self.total
                )),
            });
        }
        Ok(())
    }
}

/// Where the status words of a queued [`ResidentColumn`] decode are: per batch, its index in
/// the caller's list of parts to read back (`None`: nothing to read back).
#[derive(Debug, Clone, Default)]
pub struct QueuedDecode {
    parts: Vec<Option<usize>>,
}

impl ResidentColumn<'_> {
    /// Queues the decode of every batch into `out[..decoded_bytes()]` without waiting (a
    /// column served by several decoders gets its placing copies queued too) and appends each
    /// batch's status words to `parts`: read them back with [`Gpu::read_back_parts`] and give
    /// them to [`Self::check`]. The batches (and `out`) must live until then.
    pub fn enqueue(
        &mut self,
        gpu: &Gpu,
        out: &mut CudaSlice<u8>,
        parts: &mut Vec<(u64, usize)>,
    ) -> std::result::Result<QueuedDecode, BatchError> {
        self.check_output(out)?;
        let mut queued = QueuedDecode::default();
        // Chunks decoded into a batch's scratch buffer (or on the CPU), placed in the column by
        // one copy list once every batch is queued.
        let mut placed: Vec<DeviceCopy> = Vec::new();
        for r in &mut self.batches {
            let fail = |error| BatchError {
                chunks: r.chunks.clone(),
                error,
            };
            let (status, src) = match &mut r.place {
                Place::Whole => (r.batch.enqueue(gpu, out).map_err(fail)?, None),
                Place::Scratch(scratch) => {
                    let status = r.batch.enqueue(gpu, scratch).map_err(fail)?;
                    (status, Some(&*scratch))
                }
                // Decoded on the CPU at upload: nothing to decode, nothing to read back.
                Place::Decoded => {
                    let src = r
                        .batch
                        .decoded_on_device()
                        .ok_or_else(|| fail(no_decoded()))?;
                    (None, Some(src))
                }
            };
            if let Some(src) = src {
                self.places
                    .copies(gpu, &r.chunks, src, out, &mut placed)
                    .map_err(fail)?;
            }
            queued.parts.push(status.map(|s| {
                parts.push(s);
                parts.len() - 1
            }));
        }
        // SAFETY: every range was checked against its live buffer above; chunks' places in
        // `out` do not overlap; the scratch buffers and `out` live until the caller has read
        // the status back (this method's contract).
        unsafe { gpu.copy_list(&placed) }.map_err(|error| BatchError {
            chunks: Vec::new(),
            error,
        })?;
        Ok(queued)
    }

    /// The first failing batch's error (in batch order, as [`Self::decode`] reports it) from
    /// the status words read back after [`Self::enqueue`]; `read` holds every part's bytes.
    /// [`Self::enqueue`] into a buffer of the column's own, returned with the queued decode:
    /// where one batch decoded on the CPU serves the whole column, the buffer is that batch's
    /// upload (no allocation, no device copy, nothing queued); else a new buffer of
    /// [`Self::decoded_bytes`] (at least one byte) decoded into.
    pub fn enqueue_owned(
        &mut self,
        gpu: &Gpu,
        parts: &mut Vec<(u64, usize)>,
    ) -> std::result::Result<(CudaSlice<u8>, QueuedDecode), BatchError> {
        if let [r] = self.batches.as_mut_slice() {
            if matches!(r.place, Place::Whole) {
                if let Some(values) = r.batch.take_decoded() {
                    // Checked on the CPU at upload: no status words.
                    let queued = QueuedDecode { parts: vec![None] };
                    return Ok((values, queued));
                }
            }
        }
        let mut out = gpu.alloc::<u8>(self.total).map_err(|error| BatchError {
            chunks: Vec::new(),
            error,
        })?;
        let queued = self.enqueue(gpu, &mut out, parts)?;
        Ok((out, queued))
    }

    pub fn check(
        &self,
        gpu: &Gpu,
        queued: &QueuedDecode,
        read: &[Vec<u8>],
    ) -> std::result::Result<(), BatchError> {
        for (r, part) in self.batches.iter().zip(&queued.parts) {
            let status = match part {
                Some(i) => read.get(*i).map(Vec::as_slice).ok_or_else(|| BatchError {
                    chunks: r.chunks.clone(),
                    error: Error::Gpu("a batch's status words were not read back".into()),
                })?,
                None => &[],
            };
            if part.is_some() {
                r.batch.check(gpu, status).map_err(|error| BatchError {
                    chunks: r.chunks.clone(),
                    error,
                })?;
            }
        }
        Ok(())
    }
}

/// Decodes a column's chunks on the GPU into a new device buffer (at least one byte long, so
/// possibly longer than the decoded bytes).
pub fn decode_to_device(
    gpu: &Gpu,
    ty: LogicalType,
    chunks: &[ChunkRef<'_>],
) -> std::result::Result<CudaSlice<u8>, BatchError> {
    let mut col = ResidentColumn::upload(gpu, ty, chunks)?;
    let mut out = gpu
        .alloc::<u8>(col.decoded_bytes())
        .map_err(|error| BatchError {
            chunks: Vec::new(),
            error,
        })?;
    col.decode(gpu, &mut out)?;
    Ok(out)
}

/// Decodes a column's chunks on the GPU into host memory (`out` holds exactly their decoded
/// bytes): through the decoder's own host path when one decoder serves every chunk and has one,
/// else on the device and downloaded.
pub fn decode_to_host(
    gpu: &Gpu,
    ty: LogicalType,
    chunks: &[ChunkRef<'_>],
    out: &mut [u8],
) -> std::result::Result<(), BatchError> {
    let all = || (0..chunks.len()).collect::<Vec<_>>();
    if let Some(first) = chunks.first() {
        let i = decoder_index(first.codec, ty);
        let d = DECODERS[i];
        if chunks.iter().all(|c| decoder_index(c.codec, ty) == i) {
            if let Some(r) = d.decode_to_host(gpu, ty, chunks, out) {
                return r.map_err(|error| BatchError {
                    chunks: all(),
                    error,
                });
            }
        }
    }
    let mut col = ResidentColumn::upload(gpu, ty, chunks)?;
    if out.len() != col.decoded_bytes() {
        return Err(BatchError {
            chunks: Vec::new(),
            error: Error::InvalidArgument(format!(
                "output holds {} bytes, the column decodes to {}",
                out.len(),
                col.decoded_bytes()
            )),
        });
    }
    if out.is_empty() {
        return Ok(());
    }
    let device_error = |error| BatchError {
        chunks: Vec::new(),
        error,
    };
    // Device buffers are never empty, so the buffer may be longer than `out`: only `out.len()`
    // bytes come back.
    let mut dev = gpu.alloc::<u8>(col.decoded_bytes()).map_err(device_error)?;
    col.decode(gpu, &mut dev)?;
    gpu.download(&dev, out).map_err(device_error)
}

/// GPU-FOR / DFOR / RFOR (and plain chunks of integer columns): every chunk of a codec in one
/// launch, straight into the column's place.
#[derive(Debug)]
pub struct IntDecoder;

struct IntBatch<'a> {
    col: DeviceColumn,
    refs: Vec<ChunkRef<'a>>,
}

impl GpuDecoder for IntDecoder {
    fn name(&self) -> &'static str {
        "integer tiles"
    }

    fn serves(&self, codec: CodecId, ty: LogicalType) -> bool {
        ty.is_integer()
            && matches!(
                codec,
                CodecId::For | CodecId::Dfor | CodecId::Rfor | CodecId::Plain
            )
    }

    fn upload<'a>(
        &self,
        gpu: &Gpu,
        ty: LogicalType,
        chunks: &[ChunkRef<'a>],
    ) -> Result<Box<dyn GpuBatch + 'a>> {
        Ok(Box::new(IntBatch {
            col: gpu.upload_column(ty, chunks)?,
            refs: chunks.to_vec(),
        }))
    }

    fn prepare<'a>(
        &self,
        ty: LogicalType,
        chunks: &[ChunkRef<'a>],
    ) -> Option<Result<Box<dyn PreparedBatch<'a> + 'a>>> {
        Some(
            crate::int::HostColumn::build_shapes(ty, chunks).map(|(host, sources, words)| {
                Box::new(PreparedInt {
                    ty,
                    host,
                    sources,
                    words,
                    refs: chunks.to_vec(),
                }) as Box<dyn PreparedBatch<'a> + 'a>
            }),
        )
    }

    fn decode_to_host(
        &self,
        gpu: &Gpu,
        ty: LogicalType,
        chunks: &[ChunkRef<'_>],
        out: &mut [u8],
    ) -> Option<Result<()>> {
        // The coprocessor path: pinned staging and overlapped copies.
        Some(gpu.decode_column(ty, chunks, out))
    }
}

/// An integer batch checked and laid out on the host ([`crate::int::HostColumn`]) with its
/// payloads left where they are: they are copied once, straight into the upload.
struct PreparedInt<'a> {
    ty: LogicalType,
    host: crate::int::HostColumn,
    /// Indices in `refs` of the payloads whose words the column's words are, in order.
    sources: Vec<usize>,
    /// Words in those payloads.
    words: usize,
    refs: Vec<ChunkRef<'a>>,
}

impl<'a> PreparedBatch<'a> for PreparedInt<'a> {
    fn upload(self: Box<Self>, gpu: &Gpu) -> Result<Box<dyn GpuBatch + 'a>> {
        let pieces: Vec<&[u8]> = self.sources.iter().map(|&i| self.refs[i].payload).collect();
        Ok(Box::new(IntBatch {
            col: gpu.upload_prepared_column(self.ty, &self.host, &pieces, self.words)?,
            refs: self.refs,
        }))
    }
}

impl GpuBatch for IntBatch<'_> {
    fn decoded_bytes(&self) -> usize {
        self.col.decoded_bytes() as usize
    }

    fn decode(&mut self, gpu: &Gpu, out: &mut CudaSlice<u8>) -> Result<()> {
        gpu.enqueue_decode(&self.col, out)?;
        gpu.finish_decode(&self.col, Some(&self.refs))
    }

    fn enqueue(&mut self, gpu: &Gpu, out: &mut CudaSlice<u8>) -> Result<Option<(u64, usize)>> {
        gpu.enqueue_decode(&self.col, out)?;
        Ok(Some(gpu.decode_status(&self.col)))
    }

    fn check(&self, _gpu: &Gpu, status: &[u8]) -> Result<()> {
        let keys: Vec<u64> = status
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            .collect();
        Gpu::check_decode_keys(&self.col, &keys, Some(&self.refs))
    }
}

/// Any chunk no kernel serves (plain bytes and bits, or a codec the type does not take):
/// decoded and checked by the CPU decoder at upload time, copied on the device when decoding.
#[derive(Debug)]
pub struct HostDecoder;

struct HostBatch {
    /// At least `len` bytes (a device buffer is never empty); `None` once given up
    /// ([`GpuBatch::take_decoded`]).
    values: Option<CudaSlice<u8>>,
    len: usize,
}

impl HostBatch {
    fn values(&self) -> Result<&CudaSlice<u8>> {
        self.values
            .as_ref()
            .ok_or_else(|| Error::Gpu("a batch's decoded bytes were given up".into()))
    }
}

impl GpuDecoder for HostDecoder {
    fn name(&self) -> &'static str {
        "host"
    }

    fn serves(&self, _codec: CodecId, _ty: LogicalType) -> bool {
        true
    }

    fn upload<'a>(
        &self,
        gpu: &Gpu,
        ty: LogicalType,
        chunks: &[ChunkRef<'a>],
    ) -> Result<Box<dyn GpuBatch + 'a>> {
        Box::new(host_decode(ty, chunks)?).upload(gpu)
    }

    fn prepare<'a>(
        &self,
        ty: LogicalType,
        chunks: &[ChunkRef<'a>],
    ) -> Option<Result<Box<dyn PreparedBatch<'a> + 'a>>> {
        Some(host_decode(ty, chunks).map(|h| Box::new(h) as Box<dyn PreparedBatch<'a> + 'a>))
    }
}

/// Chunks the CPU decoded, not yet on the device.
struct HostDecoded(Vec<u8>);

/// The CPU decoder's values of `chunks`, back to back (its checks and errors).
fn host_decode(ty: LogicalType, chunks: &[ChunkRef<'_>]) -> Result<HostDecoded> {
    let mut host = Vec::new();
    for c in chunks {
        let at = host.len();
        host.resize(at + decoded_len(ty, c.value_count)?, 0);
        tessera_codecs::column::decode_values(
            ty,
            c.codec,
            c.payload,
            c.value_count as u64,
            &mut host[at..],
        )?;
    }
    Ok(HostDecoded(host))
}

impl<'a> PreparedBatch<'a> for HostDecoded {
    fn upload(self: Box<Self>, gpu: &Gpu) -> Result<Box<dyn GpuBatch + 'a>> {
        let values = gpu.upload(&self.0)?;
        Ok(Box::new(HostBatch {
            values: Some(values),
            len: self.0.len(),
        }))
    }
}

impl GpuBatch for HostBatch {
    fn decoded_bytes(&self) -> usize {
        self.len
    }

    fn decode(&mut self, gpu: &Gpu, out: &mut CudaSlice<u8>) -> Result<()> {
        gpu.copy_within_device(self.values()?, 0, out, 0, self.len)?;
        gpu.synchronize()
    }

    fn enqueue(&mut self, gpu: &Gpu, out: &mut CudaSlice<u8>) -> Result<Option<(u64, usize)>> {
        // The CPU decoder checked the chunks at upload: nothing to read back.
        gpu.copy_within_device(self.values()?, 0, out, 0, self.len)?;
        Ok(None)
    }

    fn decoded_on_device(&self) -> Option<&CudaSlice<u8>> {
        self.values.as_ref()
    }

    fn take_decoded(&mut self) -> Option<CudaSlice<u8>> {
        self.values.take()
    }
}

/// Checks that a bitmap payload holds `value_count` bits, as the CPU decoder does.
pub(crate) fn check_bit_len(flavor: Flavor, payload: &[u8], value_count: u32) -> Result<()> {
    let bits = cpu_bitmap::payload_bit_len(flavor, payload)?;
    if bits != value_count as u64 {
        return Err(Error::CountMismatch {
            what: "bitmap bit length",
            expected: value_count as u64,
            found: bits,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every chunk kind the CPU registry writes reaches exactly the decoder meant for it; the
    /// host decoder takes only what no kernel serves.
    #[test]
    fn every_chunk_kind_has_its_decoder() {
        for c in tessera_codecs::codec::REGISTRY.iter() {
            for ty in LogicalType::ALL {
                if !c.serves(ty) || ty == LogicalType::Utf8 {
                    continue;
                }
                let expected = match (c.id(), ty) {
                    (CodecId::For | CodecId::Dfor | CodecId::Rfor | CodecId::Plain, t)
                        if t.is_integer() =>
                    {
                        "integer tiles"
                    }
                    (CodecId::Lll, LogicalType::Bytes) => "lll",
                    (CodecId::Huffman, LogicalType::Bytes) => "huffman",
                    (CodecId::Wah | CodecId::Plwah, LogicalType::Bits) => "bitmap",
                    _ => "host",
                };
                assert_eq!(
                    decoder_for(c.id(), ty).name(),
                    expected,
                    "{} chunks of {ty:?}",
                    c.name()
                );
                let serving = DECODERS.iter().filter(|d| d.serves(c.id(), ty)).count();
                assert!(serving >= 1, "{} chunks of {ty:?}: no decoder", c.name());
            }
        }
    }
}
