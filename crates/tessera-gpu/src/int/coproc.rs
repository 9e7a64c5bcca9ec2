//! The coprocessor path: [`Gpu::decode_column`] for columns that live in host memory.
//!
//! The column is cut at chunk boundaries into slices (about `SLICE_IN_BYTES` of payload or
//! `SLICE_OUT_BYTES` of output each). Two slots, each with its own stream, pinned input and
//! output buffers and device buffers, take slices in turn: while slot A's slice is copied in,
//! decoded and copied out on A's stream, the host fills slot B's pinned input with the next
//! slice and empties B's pinned output of the previous one into the caller's buffer. So the
//! host-to-device copies, the decoding and the device-to-host copies of neighbouring slices
//! overlap (the H100 has separate copy engines per direction).
//!
//! Invariants: a slot's buffers are touched by the host only after its `done` event (recorded
//! after its last queued copy) has completed; every slot is drained before the function returns,
//! error or not, so no queued copy outlives the caller's borrow of `out`.

use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, PinnedHostSlice};
use tessera_format::{Error, LogicalType, Result};

use super::decode::{decode_kernel, sign_flip, HostColumn};
use super::layout::{ChunkDesc, StatusKey, THREADS};
use super::status;
use super::ChunkRef;
use crate::runtime::{cuda, Gpu};

/// Payload bytes per slice (a slice holds at least one chunk).
const SLICE_IN_BYTES: usize = 32 << 20;
/// Output bytes per slice.
const SLICE_OUT_BYTES: usize = 128 << 20;

/// One slot of the two-slot pipeline.
pub(crate) struct Slot {
    stream: Arc<CudaStream>,
    done: CudaEvent,
    host_in: PinnedHostSlice<u32>,
    host_plain: PinnedHostSlice<u8>,
    host_out: PinnedHostSlice<u8>,
    host_status: PinnedHostSlice<u64>,
    dev_in: CudaSlice<u32>,
    dev_plain: CudaSlice<u8>,
    dev_out: CudaSlice<u8>,
    dev_status: CudaSlice<u64>,
    dev_tables: CudaSlice<ChunkDesc>,
}

/// Pinned and device buffers of the pipeline, kept between calls in the handle's state.
pub(crate) struct Staging {
    slots: Vec<Slot>,
    cap: Capacity,
}

impl std::fmt::Debug for Staging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Staging")
            .field("cap", &self.cap)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Capacity {
    words: usize,
    plain: usize,
    out: usize,
    chunks: usize,
}

impl Capacity {
    fn covers(&self, o: &Capacity) -> bool {
        self.words >= o.words
            && self.plain >= o.plain
            && self.out >= o.out
            && self.chunks >= o.chunks
    }
    fn max(&self, o: &Capacity) -> Capacity {
        Capacity {
            words: self.words.max(o.words),
            plain: self.plain.max(o.plain),
            out: self.out.max(o.out),
            chunks: self.chunks.max(o.chunks),
        }
    }
}

/// A slice of the column: chunks [start, end).
struct SliceSpec {
    start: usize,
    end: usize,
    out_byte: usize,
    out_bytes: usize,
}

fn plan_slices(ty: LogicalType, chunks: &[ChunkRef<'_>]) -> (Vec<SliceSpec>, Capacity) {
    let mut slices = Vec::new();
    let mut cap = Capacity::default();
    let mut i = 0;
    let mut out_byte = 0;
    while i < chunks.len() {
        let start = i;
        let (mut words, mut plain, mut out) = (0usize, 0usize, 0usize);
        while i < chunks.len() {
            let c = &chunks[i];
            let c_out = c.value_count as usize * ty.width();
            let (cw, cp) = if c.codec == tessera_format::CodecId::Plain {
                (0, c.payload.len())
            } else {
                (c.payload.len() / 4, 0)
            };
            if i > start
                && (4 * (words + cw) + plain + cp > SLICE_IN_BYTES || out + c_out > SLICE_OUT_BYTES)
            {
                break;
            }
            words += cw;
            plain += cp;
            out += c_out;
            i += 1;
        }
        cap = cap.max(&Capacity {
            words,
            plain,
            out,
            chunks: i - start,
        });
        slices.push(SliceSpec {
            start,
            end: i,
            out_byte,
            out_bytes: out,
        });
        out_byte += out;
    }
    (slices, cap)
}

impl Gpu {
    fn new_slot(&self, cap: &Capacity) -> Result<Slot> {
        let stream = self.ctx.new_stream().map_err(cuda("creating a stream"))?;
        let done = self
            .ctx
            .new_event(None)
            .map_err(cuda("creating an event"))?;
        // SAFETY: pinned buffers are written by the host or by a copy before they are read.
        let (host_in, host_plain, host_out, host_status) = unsafe {
            (
                self.ctx.alloc_pinned::<u32>(cap.words.max(1)),
                self.ctx.alloc_pinned::<u8>(cap.plain.max(1)),
                // Read back by the host: not write-combined.
                self.ctx.alloc_pinned_with_flags::<u8>(cap.out.max(1), 0),
                self.ctx
                    .alloc_pinned_with_flags::<u64>(cap.chunks.max(1), 0),
            )
        };
        let pin = cuda("allocating pinned host memory");
        let slot = Slot {
            stream,
            done,
            host_in: host_in.map_err(&pin)?,
            host_plain: host_plain.map_err(&pin)?,
            host_out: host_out.map_err(&pin)?,
            host_status: host_status.map_err(&pin)?,
            dev_in: self.alloc(cap.words)?,
            dev_plain: self.alloc(cap.plain)?,
            dev_out: self.alloc(cap.out)?,
            dev_status: self.alloc(cap.chunks)?,
            dev_tables: self.alloc(cap.chunks)?,
        };
        // The device buffers are allocated in the main stream's order; the slot's stream uses
        // them next.
        self.synchronize()?;
        Ok(slot)
    }

    /// Decodes the chunks of one column, in order, into `out` (raw little-endian values at the
    /// logical type's width; `out.len()` must be the column's decoded size). Large columns
    /// stream through pinned memory on two streams (module docs).
    pub fn decode_column(
        &self,
        ty: LogicalType,
        chunks: &[ChunkRef<'_>],
        out: &mut [u8],
    ) -> Result<()> {
        let needed: usize = chunks
            .iter()
            .map(|c| c.value_count as usize * ty.width())
            .sum();
        if out.len() != needed {
            return Err(Error::InvalidArgument(format!(
                "output holds {} bytes, the column decodes to {needed}",
                out.len()
            )));
        }
        let (slices, cap) = plan_slices(ty, chunks);
        // The staging buffers live in the handle between calls (pinned allocations are slow).
        self.with_state::<Staging, _>(|staging| {
            if staging.as_ref().is_none_or(|s| !s.cap.covers(&cap)) {
                let cap = staging.as_ref().map_or(cap, |s| s.cap.max(&cap));
                *staging = None; // free the old buffers first
                let slots = vec![self.new_slot(&cap)?, self.new_slot(&cap)?];
                *staging = Some(Staging { slots, cap });
            }
            let Some(st) = staging.as_mut() else {
                return Err(Error::Gpu("staging buffers missing".into()));
            };
            self.run_slices(st, ty, chunks, &slices, out)
        })
    }

    /// Streams the slices through the two slots (module docs).
    fn run_slices(
        &self,
        st: &mut Staging,
        ty: LogicalType,
        chunks: &[ChunkRef<'_>],
        slices: &[SliceSpec],
        out: &mut [u8],
    ) -> Result<()> {
        // pending[s] = the slice slot s is working on, with its host-side column (for errors).
        let mut pending: Vec<Option<(usize, HostColumn)>> = vec![None, None];
        let mut result = Ok(());
        for (i, spec) in slices.iter().enumerate() {
            let s = i % 2;
            if let Some((j, host)) = pending[s].take() {
                let r = self.collect(&mut st.slots[s], ty, &slices[j], &host, chunks, out);
                if r.is_err() {
                    result = r;
                    break;
                }
            }
            let host = match HostColumn::build(ty, &chunks[spec.start..spec.end]) {
                Ok(h) => h,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            if let Err(e) = self.submit(&mut st.slots[s], ty, &host) {
                result = Err(e);
                break;
            }
            pending[s] = Some((i, host));
        }
        // Drain both slots, in slice order, even after an error.
        let mut order: Vec<(usize, usize)> = pending
            .iter()
            .enumerate()
            .filter_map(|(s, p)| p.as_ref().map(|(j, _)| (*j, s)))
            .collect();
        order.sort();
        for (_, s) in order {
            if let Some((j, host)) = pending[s].take() {
                let r = self.collect(&mut st.slots[s], ty, &slices[j], &host, chunks, out);
                if result.is_ok() {
                    result = r;
                }
            }
        }
        result
    }

    /// Queues copy-in, decode and copy-out of one slice on its slot's stream.
    fn submit(&self, slot: &mut Slot, ty: LogicalType, host: &HostColumn) -> Result<()> {
        let stream = slot.stream.clone();
        let cs = stream.cu_stream();
        let copy = cuda("queueing a copy");
        // Stage the slice in pinned memory (the previous use of this slot has completed).
        let host_in = slot.host_in.as_mut_slice().map_err(&copy)?;
        host_in[..host.words.len()].copy_from_slice(&host.words);
        let host_plain = slot.host_plain.as_mut_slice().map_err(&copy)?;
        host_plain[..host.plain.len()].copy_from_slice(&host.plain);
        let mut descs = Vec::new();
        let mut launches = Vec::new();
        for (codec, batch) in &host.batches {
            let base = descs.len();
            descs.extend(batch.iter().map(|c| c.desc));
            let slabs: u32 = batch.iter().map(|c| c.shape.slabs()).sum();
            launches.push((*codec, base, batch.len(), slabs));
        }
        let (d_in, d_plain, d_out, d_status, d_tables) = (
            self.ptr(&slot.dev_in),
            self.ptr(&slot.dev_plain),
            self.ptr(&slot.dev_out),
            self.ptr(&slot.dev_status),
            self.ptr(&slot.dev_tables),
        );
        // SAFETY (copies and memset): every device range lies inside the slot's buffers, sized
        // by `plan_slices` for the largest slice; host sources are the slot's pinned buffers
        // (or, for the small chunk table, a Vec that the synchronous staging of pageable memory
        // has consumed before the call returns). The slot is not reused before `done` fires.
        unsafe {
            use cudarc::driver::result as r;
            let host_in = slot.host_in.as_mut_slice().map_err(&copy)?;
            if !host.words.is_empty() {
                r::memcpy_htod_async(d_in, &host_in[..host.words.len()], cs).map_err(&copy)?;
            }
            let host_plain = slot.host_plain.as_mut_slice().map_err(&copy)?;
            if !host.plain.is_empty() {
                r::memcpy_htod_async(d_plain, &host_plain[..host.plain.len()], cs)
                    .map_err(&copy)?;
            }
            if !descs.is_empty() {
                r::memcpy_htod_async(d_tables, &descs[..], cs).map_err(&copy)?;
                r::memset_d8_async(d_status, 0xFF, descs.len() * 8, cs).map_err(&copy)?;
            }
        }
        let flip = sign_flip(ty);
        for (codec, base, n, slabs) in launches {
            let (module, name) = decode_kernel(codec, ty)?;
            let f = self.function(module, name)?;
            let table = d_tables + (base * std::mem::size_of::<ChunkDesc>()) as u64;
            let status = d_status + 8 * base as u64;
            let n_chunks = n as u32;
            // SAFETY: matches `<codec>_decode_<out>`; the table rows were checked by
            // HostColumn::build against the payload words copied to `d_in`, and their out_index
            // values are slice-relative, inside `d_out` (sized for the slice's output).
            unsafe {
                self.launch_on(
                    &stream,
                    &f,
                    self.tile_grid(slabs),
                    THREADS,
                    &[&d_in, &table, &n_chunks, &slabs, &d_out, &flip, &status],
                )?;
            }
        }
        let out_bytes = host.values as usize * ty.width();
        // SAFETY: as above; the destinations are the slot's pinned buffers, large enough.
        unsafe {
            use cudarc::driver::result as r;
            for p in &host.plain_chunks {
                if p.bytes > 0 {
                    r::memcpy_dtod_async(
                        d_out + p.out_byte,
                        d_plain + p.src_byte,
                        p.bytes as usize,
                        cs,
                    )
                    .map_err(&copy)?;
                }
            }
            let host_out = slot.host_out.as_mut_slice().map_err(&copy)?;
            if out_bytes > 0 {
                r::memcpy_dtoh_async(&mut host_out[..out_bytes], d_out, cs).map_err(&copy)?;
            }
            let host_status = slot.host_status.as_mut_slice().map_err(&copy)?;
            if !descs.is_empty() {
                r::memcpy_dtoh_async(&mut host_status[..descs.len()], d_status, cs)
                    .map_err(&copy)?;
            }
        }
        slot.done
            .record(&stream)
            .map_err(cuda("recording an event"))
    }

    /// Waits for a slot, copies its output into `out` and checks its chunks' status.
    fn collect(
        &self,
        slot: &mut Slot,
        ty: LogicalType,
        spec: &SliceSpec,
        host: &HostColumn,
        chunks: &[ChunkRef<'_>],
        out: &mut [u8],
    ) -> Result<()> {
        slot.done
            .synchronize()
            .map_err(cuda("waiting for the GPU"))?;
        let copy = cuda("reading pinned memory");
        let mut first: Option<(usize, Error)> = None;
        let keys = slot.host_status.as_slice().map_err(&copy)?;
        let mut base = 0;
        for (_, batch) in &host.batches {
            for (i, c) in batch.iter().enumerate() {
                let key = StatusKey::decode(keys[base + i]);
                let column_index = spec.start + c.column_index;
                if first.as_ref().is_some_and(|(ci, _)| *ci < column_index) {
                    continue;
                }
                let payload = chunks.get(column_index).map(|c| c.payload);
                if let Some(e) = status::chunk_error(ty, &c.shape, key, payload) {
                    first = Some((column_index, e));
                }
            }
            base += batch.len();
        }
        if let Some((_, e)) = first {
            return Err(e);
        }
        let src = &slot.host_out.as_slice().map_err(&copy)?[..spec.out_bytes];
        parallel_copy(&mut out[spec.out_byte..spec.out_byte + spec.out_bytes], src);
        Ok(())
    }
}

/// memcpy on several threads: one core cannot keep up with PCIe.
fn parallel_copy(dst: &mut [u8], src: &[u8]) {
    const PIECE: usize = 8 << 20;
    if dst.len() <= PIECE {
        dst.copy_from_slice(src);
        return;
    }
    let threads = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .min(8);
    let piece = dst.len().div_ceil(threads);
    std::thread::scope(|s| {
        for (d, c) in dst.chunks_mut(piece).zip(src.chunks(piece)) {
            s.spawn(move || d.copy_from_slice(c));
        }
    });
}
