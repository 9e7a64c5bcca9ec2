//! Batched decoding: every chunk of a column in one launch per codec.
//!
//! The host checks what is cheap and must hold before a kernel may trust an offset
//! (`chunk_shape`: alignment, the header constants, total_count against the directory's count,
//! room for block_starts, and block_starts[nb] against the payload's length), then
//! concatenates the integer payloads into one device buffer of words and builds a
//! [`ChunkDesc`] table per codec. One launch per codec present decodes all of that codec's
//! chunks (a column written with one codec takes exactly one launch); plain chunks are device
//! copies. Kernels check everything past block_starts and leave one status key per chunk;
//! [`Gpu::finish_decode`] turns the first bad one (in column order) into the same `Error`
//! variant the CPU decoder returns.

use cudarc::driver::CudaSlice;
use tessera_format::{CodecId, Error, Lane, LogicalType, Result, MAX_CHUNK_VALUES};

use super::layout::{self, ChunkDesc, StatusKey, HEADER_WORDS, TILE_VALUES};
use super::status;
use super::{ChunkRef, IntJob};
use crate::kernels::Module;
use crate::primitives::copy::DeviceCopy;
use crate::runtime::buffer::{GpuBuffer, Pack};
use crate::runtime::{cuda, Gpu};
use std::sync::atomic::{AtomicBool, Ordering};

/// What the host learnt about one integer chunk from its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkShape {
    pub codec: CodecId,
    pub lane: Lane,
    pub total_count: u32,
    pub block_count: u32,
    pub payload_words: u32,
    pub data_len: u32,
    /// block_starts[block_count]: must equal data_len (int-common §4).
    pub last_start: u32,
}

impl ChunkShape {
    pub fn tiles(&self) -> u32 {
        self.total_count.div_ceil(TILE_VALUES as u32)
    }
    /// Slabs of the chunk's decode kernel (layout::slab_tiles tiles each).
    pub fn slabs(&self) -> u32 {
        self.tiles()
            .div_ceil(layout::slab_tiles(self.codec, self.lane))
    }
}

/// (block_size, miniblock_count, tile_blocks) of int-common §3.
pub(crate) fn header_constants(codec: CodecId) -> Option<(u32, u32, u32)> {
    match codec {
        CodecId::For => Some((128, 4, 1)),
        CodecId::Dfor => Some((128, 4, 4)),
        CodecId::Rfor => Some((512, 16, 1)),
        _ => None,
    }
}

pub(crate) fn word(payload: &[u8], i: usize) -> u32 {
    let b = &payload[4 * i..4 * i + 4];
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// The host-side checks of one chunk (module docs). Plain chunks: their length only.
pub(crate) fn chunk_shape(ty: LogicalType, chunk: &ChunkRef<'_>) -> Result<Option<ChunkShape>> {
    let p = chunk.payload;
    let Some((block_size, miniblocks, tile_blocks)) = header_constants(chunk.codec) else {
        let expected = chunk.value_count as usize * ty.width();
        return match p.len().cmp(&expected) {
            std::cmp::Ordering::Less => {
                Err(Error::truncated("plain payload", 0, expected, p.len()))
            }
            std::cmp::Ordering::Greater => Err(Error::TrailingBytes {
                what: "plain payload",
                offset: expected as u64,
                count: (p.len() - expected) as u64,
            }),
            std::cmp::Ordering::Equal => Ok(None),
        };
    };
    if p.len() % 4 != 0 {
        return Err(Error::Misaligned {
            len: p.len() as u64,
        });
    }
    if p.len() < HEADER_WORDS * 4 {
        return Err(Error::truncated(
            "chunk header",
            0,
            HEADER_WORDS * 4,
            p.len(),
        ));
    }
    let field = |i: usize, name: &'static str, expected: u32| -> Result<()> {
        let found = word(p, i);
        if found == expected {
            Ok(())
        } else {
            Err(Error::InvalidHeader {
                field: name,
                offset: 4 * i as u64,
                expected: expected.to_string(),
                found: found as u64,
            })
        }
    };
    field(0, "block_size", block_size)?;
    field(1, "miniblock_count", miniblocks)?;
    field(3, "tile_blocks", tile_blocks)?;
    let total_count = word(p, 2);
    if total_count > MAX_CHUNK_VALUES {
        return Err(Error::InvalidHeader {
            field: "total_count",
            offset: 8,
            expected: format!("<= {MAX_CHUNK_VALUES}"),
            found: total_count as u64,
        });
    }
    if total_count != chunk.value_count {
        return Err(Error::CountMismatch {
            what: "chunk header total_count vs directory value count",
            expected: chunk.value_count as u64,
            found: total_count as u64,
        });
    }
    let block_count = total_count.div_ceil(block_size);
    let words = p.len() / 4;
    let needed = HEADER_WORDS + block_count as usize + 1;
    if words < needed {
        return Err(Error::truncated(
            "block_starts",
            HEADER_WORDS * 4,
            (needed - HEADER_WORDS) * 4,
            p.len() - HEADER_WORDS * 4,
        ));
    }
    let data_len = (words - needed) as u32;
    let last_start = word(p, HEADER_WORDS + block_count as usize);
    let shape = ChunkShape {
        codec: chunk.codec,
        lane: ty.lane(),
        total_count,
        block_count,
        payload_words: words as u32,
        data_len,
        last_start,
    };
    if block_count == 0 {
        // No kernel looks at an empty chunk: its one block_starts entry is checked here.
        if let Some(e) = status::chunk_error(ty, &shape, None, Some(p)) {
            return Err(e);
        }
    }
    Ok(Some(shape))
}

/// The decode kernels, by kind ([`decode_kind`]): FOR, DFOR, RFOR, each writing 1, 2, 4 and 8
/// bytes a value. The kinds are `jobs.cu`'s too.
const DECODE_KERNELS: [(Module, &str); 12] = [
    (Module::For, "for_decode_u8"),
    (Module::For, "for_decode_u16"),
    (Module::For, "for_decode_u32"),
    (Module::For, "for_decode_u64"),
    (Module::Dfor, "dfor_decode_u8"),
    (Module::Dfor, "dfor_decode_u16"),
    (Module::Dfor, "dfor_decode_u32"),
    (Module::Dfor, "dfor_decode_u64"),
    (Module::Rfor, "rfor_decode_u8"),
    (Module::Rfor, "rfor_decode_u16"),
    (Module::Rfor, "rfor_decode_u32"),
    (Module::Rfor, "rfor_decode_u64"),
];

/// The kind of decode that writes `codec` chunks as values of `ty`: `codec * 4 + width index`,
/// its row in [`DECODE_KERNELS`].
pub(crate) fn decode_kind(codec: CodecId, ty: LogicalType) -> Result<u32> {
    use LogicalType as T;
    let w = match ty {
        T::U8 | T::I8 => 0,
        T::U16 | T::I16 => 1,
        T::U32 | T::I32 => 2,
        T::U64 | T::I64 => 3,
        other => {
            return Err(Error::InvalidArgument(format!(
                "no GPU decoder for type {other:?}"
            )))
        }
    };
    let c = match codec {
        CodecId::For => 0,
        CodecId::Dfor => 1,
        CodecId::Rfor => 2,
        other => {
            return Err(Error::InvalidArgument(format!(
                "codec {} has no decode kernel",
                other.name()
            )))
        }
    };
    Ok(c * 4 + w)
}

/// The kernel of a decode kind ([`decode_kind`]).
pub(crate) fn kind_kernel(kind: u32) -> Result<(Module, &'static str)> {
    DECODE_KERNELS
        .get(kind as usize)
        .copied()
        .ok_or_else(|| Error::InvalidArgument(format!("no decode kernel of kind {kind}")))
}

/// The decode kernel for `codec` writing `ty`.
pub(crate) fn decode_kernel(codec: CodecId, ty: LogicalType) -> Result<(Module, &'static str)> {
    kind_kernel(decode_kind(codec, ty)?)
}

/// The sign bit the lane mapping flips for `ty` (int-common §2), 0 for unsigned types.
pub(crate) fn sign_flip(ty: LogicalType) -> u64 {
    if ty.signed() {
        1u64 << (8 * ty.width() - 1)
    } else {
        0
    }
}

/// One integer chunk of a [`HostColumn`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct IntChunk {
    /// Index of the chunk in the column.
    pub column_index: usize,
    pub shape: ChunkShape,
    pub desc: ChunkDesc,
}

/// A plain chunk: bytes copied as they are.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlainChunk {
    pub src_byte: u64,
    pub out_byte: u64,
    pub bytes: u64,
}

/// A column's chunks checked and laid out for the device, still on the host.
#[derive(Debug, Default)]
pub(crate) struct HostColumn {
    pub words: Vec<u32>,
    pub plain: Vec<u8>,
    /// Integer chunks batched by codec (For, Dfor, Rfor), in column order inside a batch.
    pub batches: Vec<(CodecId, Vec<IntChunk>)>,
    pub plain_chunks: Vec<PlainChunk>,
    pub values: u64,
}

impl HostColumn {
    pub fn build(ty: LogicalType, chunks: &[ChunkRef<'_>]) -> Result<HostColumn> {
        let (mut col, sources, words) = Self::build_shapes(ty, chunks)?;
        let pieces: Vec<&[u8]> = sources.iter().map(|&i| chunks[i].payload).collect();
        col.words = gather_words(&pieces, words);
        Ok(col)
    }

    /// [`Self::build`] without gathering the payload words (`words` stays empty): the column's
    /// checks, descriptors and plain bytes, the indices in `chunks` of the payloads whose words
    /// make up the column's words, in order, and how many words they hold. What a caller that
    /// copies those payloads to the device itself takes ([`Gpu::upload_prepared_column`]).
    pub fn build_shapes(
        ty: LogicalType,
        chunks: &[ChunkRef<'_>],
    ) -> Result<(HostColumn, Vec<usize>, usize)> {
        let mut col = HostColumn::default();
        // (codec, its chunks, tiles so far, slabs so far)
        let mut per_codec: Vec<(CodecId, Vec<IntChunk>, u32, u32)> =
            [CodecId::For, CodecId::Dfor, CodecId::Rfor]
                .into_iter()
                .map(|c| (c, Vec::new(), 0, 0))
                .collect();
        let mut word_sources: Vec<usize> = Vec::new();
        let mut word_count = 0usize;
        for (i, c) in chunks.iter().enumerate() {
            let out_index = col.values;
            col.values += c.value_count as u64;
            match chunk_shape(ty, c)? {
                None => {
                    let p = PlainChunk {
                        src_byte: col.plain.len() as u64,
                        out_byte: out_index * ty.width() as u64,
                        bytes: c.payload.len() as u64,
                    };
                    // Neighbouring plain chunks are neighbours on both sides: one copy.
                    match col.plain_chunks.last_mut() {
                        Some(last)
                            if last.src_byte + last.bytes == p.src_byte
                                && last.out_byte + last.bytes == p.out_byte =>
                        {
                            last.bytes += p.bytes
                        }
                        _ => col.plain_chunks.push(p),
                    }
                    col.plain.extend_from_slice(c.payload);
                }
                Some(shape) if shape.total_count == 0 => {}
                Some(shape) => {
                    let batch = per_codec
                        .iter_mut()
                        .find(|g| g.0 == c.codec)
                        .ok_or_else(|| {
                            Error::InvalidArgument(format!(
                                "codec {} cannot be decoded here",
                                c.codec.name()
                            ))
                        })?;
                    let desc = ChunkDesc {
                        payload_word: word_count as u64,
                        out_index,
                        payload_words: shape.payload_words,
                        total_count: shape.total_count,
                        first_tile: batch.2,
                        first_slab: batch.3,
                    };
                    batch.2 = batch.2.checked_add(shape.tiles()).ok_or_else(|| {
                        Error::InvalidArgument(
                            "column too large for one launch (2^32 tiles)".into(),
                        )
                    })?;
                    batch.3 += shape.slabs();
                    word_count += c.payload.len() / 4;
                    word_sources.push(i);
                    batch.1.push(IntChunk {
                        column_index: i,
                        shape,
                        desc,
                    });
                }
            }
        }
        col.batches = per_codec
            .into_iter()
            .filter(|g| !g.1.is_empty())
            .map(|(c, v, _, _)| (c, v))
            .collect();
        Ok((col, word_sources, word_count))
    }
}

/// The little-endian words of `sources` (each a multiple of 4 bytes long, `words` in all),
/// back to back.
pub(crate) fn gather_words(sources: &[&[u8]], words: usize) -> Vec<u32> {
    let mut out = Vec::with_capacity(words);
    for s in sources {
        out.extend(
            s.chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
    }
    out
}

/// A column uploaded to the device, ready to decode or query any number of times.
#[derive(Debug)]
pub struct DeviceColumn {
    pub(crate) ty: LogicalType,
    pub(crate) values: u64,
    pub(crate) words: GpuBuffer<u32>,
    pub(crate) plain: GpuBuffer<u8>,
    pub(crate) plain_chunks: Vec<PlainChunk>,
    pub(crate) batches: Vec<DeviceBatch>,
    pub(crate) status: GpuBuffer<u64>,
    /// Whether the status slots still hold the all-ones they were uploaded with (a packed
    /// upload, [`Gpu::upload_prepared_column`]): the first decode then needs no fill.
    pub(crate) status_fresh: AtomicBool,
    pub(crate) status_slots: usize,
    pub(crate) compressed_bytes: u64,
    pub(crate) word_count: usize,
    pub(crate) plain_count: usize,
}

#[derive(Debug)]
pub(crate) struct DeviceBatch {
    pub codec: CodecId,
    pub table: GpuBuffer<ChunkDesc>,
    pub chunks: Vec<IntChunk>,
    pub total_slabs: u32,
    /// Index of the slab's first chunk in the status buffer.
    pub status_base: usize,
}

impl DeviceColumn {
    /// The column's logical type.
    pub fn logical_type(&self) -> LogicalType {
        self.ty
    }
    /// Values in the column.
    pub fn value_count(&self) -> u64 {
        self.values
    }
    /// Bytes of the decoded column.
    pub fn decoded_bytes(&self) -> u64 {
        self.values * self.ty.width() as u64
    }
    /// Bytes of payload on the device (what a decode reads).
    pub fn compressed_bytes(&self) -> u64 {
        self.compressed_bytes
    }
    pub(crate) fn words_bytes(&self) -> usize {
        self.word_count * 4
    }
    pub(crate) fn plain_bytes(&self) -> usize {
        self.plain_count
    }
}

impl Gpu {
    pub(crate) fn upload_host_column(
        &self,
        ty: LogicalType,
        host: &HostColumn,
    ) -> Result<DeviceColumn> {
        let words = self.upload(&host.words)?;
        self.upload_host_column_with(ty, host, words, host.words.len())
    }

    /// [`Self::upload_host_column`] of a column from [`HostColumn::build_shapes`]: its words
    /// are `pieces` (the payloads it named, `word_count` words in all), copied to the device in
    /// one upload with no gathered host copy ([`Gpu::upload_words`]).
    pub(crate) fn upload_prepared_column(
        &self,
        ty: LogicalType,
        host: &HostColumn,
        pieces: &[&[u8]],
        word_count: usize,
    ) -> Result<DeviceColumn> {
        if let Some(col) = self.upload_packed_column(ty, host, pieces, word_count)? {
            return Ok(col);
        }
        let words = self.upload_words(pieces, word_count)?;
        self.upload_host_column_with(ty, host, words, word_count)
    }

    /// [`Self::upload_prepared_column`] while uploads are staged: the words, plain chunks,
    /// every codec's chunk table and the status slots (all ones) in one device allocation
    /// filled by one staged copy, each part a view of it ([`Gpu::view`]), instead of an
    /// allocation and a copy each (and a fill for the status): what a small table's read pays
    /// per operation, not per byte. `None` when uploads are not staged (or the column is too
    /// large to stage): the caller uploads the parts one by one.
    fn upload_packed_column(
        &self,
        ty: LogicalType,
        host: &HostColumn,
        pieces: &[&[u8]],
        word_count: usize,
    ) -> Result<Option<DeviceColumn>> {
        let words_bytes = word_count * 4;
        let given: usize = pieces.iter().map(|p| p.len()).sum();
        if given != words_bytes || pieces.iter().any(|p| p.len() % 4 != 0) {
            return Err(Error::InvalidArgument(format!(
                "{given} bytes in pieces are not {word_count} words"
            )));
        }
        let descs: Vec<Vec<ChunkDesc>> = host
            .batches
            .iter()
            .map(|(_, chunks)| chunks.iter().map(|c| c.desc).collect())
            .collect();
        let slots: usize = host.batches.iter().map(|(_, c)| c.len()).sum();
        let status_bytes = vec![0xFFu8; slots.max(1) * 8];
        let mut pack = Pack::default();
        let words_at = pack.place(pieces, 4);
        let plain_at = pack.place(&[&host.plain], 1);
        let table_at: Vec<usize> = descs.iter().map(|d| pack.place_values(d)).collect();
        let status_at = pack.place(&[&status_bytes], 8);
        let Some(arena) = self.upload_pack(&pack)? else {
            return Ok(None);
        };
        let mut batches = Vec::with_capacity(host.batches.len());
        let mut base = 0usize;
        for (((codec, chunks), at), d) in host.batches.iter().zip(table_at).zip(&descs) {
            batches.push(DeviceBatch {
                codec: *codec,
                table: arena.view::<ChunkDesc>(self, at, d.len().max(1))?,
                chunks: chunks.clone(),
                total_slabs: chunks.iter().map(|c| c.shape.slabs()).sum(),
                status_base: base,
            });
            base += chunks.len();
        }
        Ok(Some(DeviceColumn {
            ty,
            values: host.values,
            words: arena.view::<u32>(self, words_at, word_count.max(1))?,
            plain: arena.view::<u8>(self, plain_at, host.plain.len().max(1))?,
            plain_chunks: host.plain_chunks.clone(),
            batches,
            status: arena.view::<u64>(self, status_at, slots.max(1))?,
            status_fresh: AtomicBool::new(true),
            status_slots: slots,
            compressed_bytes: words_bytes as u64 + host.plain.len() as u64,
            word_count,
            plain_count: host.plain.len(),
        }))
    }

    fn upload_host_column_with(
        &self,
        ty: LogicalType,
        host: &HostColumn,
        words: CudaSlice<u32>,
        word_count: usize,
    ) -> Result<DeviceColumn> {
        let plain = self.upload(&host.plain)?;
        let mut batches = Vec::new();
        let mut slots = 0;
        for (codec, chunks) in &host.batches {
            let descs: Vec<ChunkDesc> = chunks.iter().map(|c| c.desc).collect();
            let total_slabs = chunks.iter().map(|c| c.shape.slabs()).sum();
            batches.push(DeviceBatch {
                codec: *codec,
                table: self.upload(&descs)?.into(),
                chunks: chunks.clone(),
                total_slabs,
                status_base: slots,
            });
            slots += chunks.len();
        }
        let status = self.alloc::<u64>(slots)?;
        // A staged read orders everything on the stream and waits once at its end.
        if !self.is_staging() {
            self.synchronize()?;
        }
        Ok(DeviceColumn {
            ty,
            values: host.values,
            words: words.into(),
            plain: plain.into(),
            plain_chunks: host.plain_chunks.clone(),
            batches,
            status: status.into(),
            status_fresh: AtomicBool::new(false),
            status_slots: slots,
            compressed_bytes: word_count as u64 * 4 + host.plain.len() as u64,
            word_count,
            plain_count: host.plain.len(),
        })
    }

    /// Checks the chunks' headers and copies the column to the device.
    pub fn upload_column(&self, ty: LogicalType, chunks: &[ChunkRef<'_>]) -> Result<DeviceColumn> {
        let host = HostColumn::build(ty, chunks)?;
        self.upload_host_column(ty, &host)
    }

    /// Queues the decode of `col` into `out` (at least `col.decoded_bytes()` bytes) on the main
    /// stream; [`Self::finish_decode`] waits and reports corrupt chunks.
    pub fn enqueue_decode(&self, col: &DeviceColumn, out: &mut CudaSlice<u8>) -> Result<()> {
        if (out.len() as u64) < col.decoded_bytes() {
            return Err(Error::InvalidArgument(format!(
                "output holds {} bytes, the column needs {}",
                out.len(),
                col.decoded_bytes()
            )));
        }
        let out_ptr = self.ptr(out);
        let words = self.ptr(&col.words);
        let plain = self.ptr(&col.plain);
        let status = self.ptr(&col.status);
        // A packed upload left the slots all ones for the first decode; later ones refill them.
        if !col.status_fresh.swap(false, Ordering::Relaxed) {
            self.fill_bytes_now(status, 0xFF, col.status_slots * 8)?;
        }
        let flip = sign_flip(col.ty);
        for g in &col.batches {
            let kind = decode_kind(g.codec, col.ty)?;
            // `words` holds every payload the table names (checked by chunk_shape), `table` has
            // n_chunks rows, `out` holds the whole decoded column (checked above) and the status
            // n_chunks slots from status_base; all live until the caller has read the status.
            self.queue_int_job(IntJob {
                kind,
                words,
                chunks: self.ptr(&g.table),
                n_chunks: g.chunks.len() as u32,
                total_slabs: g.total_slabs,
                out: out_ptr,
                flip,
                status: status + 8 * g.status_base as u64,
            })?;
        }
        let copies: Vec<DeviceCopy> = col
            .plain_chunks
            .iter()
            .map(|p| DeviceCopy {
                dst: out_ptr + p.out_byte,
                src: plain + p.src_byte,
                len: p.bytes as usize,
            })
            .collect();
        // SAFETY: each source range lies in `col.plain`, each destination in `out` (the
        // chunk's values are part of the column checked above), chunks apart from each other.
        unsafe { self.copy_list(&copies) }
    }

    pub(crate) fn fill_bytes_raw(&self, ptr: u64, value: u8, bytes: usize) -> Result<()> {
        self.flush_pending()?;
        self.fill_bytes_now(ptr, value, bytes)
    }

    /// [`Self::fill_bytes_raw`] with nothing flushed first: for a decode's status slots, whose
    /// fill goes ahead of its deferred job (`int/jobs.rs`) and which only that column's jobs
    /// write (a packed upload's slots arrive all ones, as the fill leaves them).
    fn fill_bytes_now(&self, ptr: u64, value: u8, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        let _op = crate::runtime::trace::count(crate::runtime::trace::Op::Fill);
        // SAFETY: callers pass a pointer to at least `bytes` bytes of a live device buffer.
        unsafe {
            cudarc::driver::result::memset_d8_async(ptr, value, bytes, self.stream.cu_stream())
        }
        .map_err(cuda("filling device memory"))
    }

    /// Waits for a queued decode (or query) of `col` and returns the first corrupt chunk's
    /// error, in column order. `payloads`, when given (the chunks `col` was made of), lets the
    /// error carry the exact offsets the CPU decoder would report.
    pub fn finish_decode(
        &self,
        col: &DeviceColumn,
        payloads: Option<&[ChunkRef<'_>]>,
    ) -> Result<()> {
        let mut keys = vec![0u64; col.status_slots];
        self.download(&col.status, &mut keys)?;
        Gpu::check_decode_keys(col, &keys, payloads)
    }

    /// The device address and byte length of `col`'s status keys (one u64 a chunk), which a
    /// queued decode fills: for callers that read many decoders' statuses back at once.
    pub(crate) fn decode_status(&self, col: &DeviceColumn) -> (u64, usize) {
        (self.ptr(&col.status), col.status_slots * 8)
    }

    /// [`Self::finish_decode`]'s verdict on status keys already read back (`keys` shorter than
    /// the column's slots is an error, never a panic).
    pub(crate) fn check_decode_keys(
        col: &DeviceColumn,
        keys: &[u64],
        payloads: Option<&[ChunkRef<'_>]>,
    ) -> Result<()> {
        if keys.len() < col.status_slots {
            return Err(Error::Gpu(format!(
                "{} status keys read back, the column has {}",
                keys.len(),
                col.status_slots
            )));
        }
        let mut first: Option<(usize, Error)> = None;
        for g in &col.batches {
            for (i, c) in g.chunks.iter().enumerate() {
                if first.as_ref().is_some_and(|(ci, _)| *ci < c.column_index) {
                    continue;
                }
                let key = StatusKey::decode(keys[g.status_base + i]);
                let payload = payloads
                    .and_then(|p| p.get(c.column_index))
                    .map(|p| p.payload);
                if let Some(e) = status::chunk_error(col.ty, &c.shape, key, payload) {
                    first = Some((c.column_index, e));
                }
            }
        }
        match first {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }

    /// Decodes `col` into `out` and waits.
    pub fn decode_into(&self, col: &DeviceColumn, out: &mut CudaSlice<u8>) -> Result<()> {
        self.enqueue_decode(col, out)?;
        self.finish_decode(col, None)
    }
}
