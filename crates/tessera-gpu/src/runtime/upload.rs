//! Host-to-device copies from pageable memory at close to the link's speed.
//!
//! A copy from pageable memory goes through the driver's own staging, one thread, at a fraction
//! of what the link carries from page-locked memory (the reports in `bench/results/` give both
//! for each card). [`Gpu::upload_pageable`] copies through a ring of page-locked slots that the
//! handle keeps between calls: the host's threads fill one slot while the link drains the ones
//! filled before it, so the copy runs at the slower of the host's memory copy on all cores and
//! the link.
//!
//! Invariants: a slot is written by the host only after its `done` event (recorded after the
//! slot's queued copy) has fired; the ring lives in the handle's state, so calls that upload
//! through it are serialized by the state's lock.

use cudarc::driver::{CudaEvent, CudaSlice, PinnedHostSlice};
use rayon::prelude::*;
use tessera_format::{Error, Result};

use super::trace::{count, Op};
use super::{cuda, Gpu};

/// Bytes of one page-locked slot.
const SLOT_BYTES: usize = 8 << 20;
/// Slots in the ring: enough that the host never waits on the link while it is the faster one.
const SLOTS: usize = 4;
/// Below this a single plain copy costs less than the ring's per-slot steps would save.
pub const RING_MIN_BYTES: usize = 2 * SLOT_BYTES;
/// Piece of a slot one host thread copies.
const PIECE_BYTES: usize = 512 << 10;

struct Slot {
    host: PinnedHostSlice<u8>,
    done: CudaEvent,
    /// Whether a copy from this slot was ever queued (so `done` was recorded).
    queued: bool,
}

/// The handle's ring of page-locked slots.
struct Ring {
    slots: Vec<Slot>,
}

impl Gpu {
    fn new_ring(&self) -> Result<Ring> {
        let mut slots = Vec::with_capacity(SLOTS);
        for _ in 0..SLOTS {
            // SAFETY: uninitialised page-locked memory, only read by a copy after the host has
            // written the bytes that copy reads.
            let host = unsafe { self.ctx.alloc_pinned_with_flags::<u8>(SLOT_BYTES, 0) }
                .map_err(cuda("allocating pinned host memory"))?;
            let done = self
                .ctx
                .new_event(None)
                .map_err(cuda("creating an event"))?;
            slots.push(Slot {
                host,
                done,
                queued: false,
            });
        }
        Ok(Ring { slots })
    }

    /// Copies `src` to the start of `dst` on the main stream, in stream order with the work
    /// queued before and after it. Returns once every byte of `src` has been read (the caller
    /// may drop or change it); the copy to the device may still be in flight, as for any queued
    /// work. Large copies go through the handle's page-locked ring (module docs), small ones
    /// through one plain copy.
    pub fn upload_pageable(&self, src: &[u8], dst: &mut CudaSlice<u8>) -> Result<()> {
        if src.len() > dst.len() {
            return Err(Error::InvalidArgument(format!(
                "upload of {} bytes into a device buffer of {}",
                src.len(),
                dst.len()
            )));
        }
        if src.is_empty() {
            return Ok(());
        }
        if src.len() < RING_MIN_BYTES {
            let mut view = dst.slice_mut(..src.len());
            let _op = count(Op::HostToDevice);
            return self
                .stream
                .memcpy_htod(src, &mut view)
                .map_err(cuda("copying to the device"));
        }
        let base = self.ptr(dst);
        let stream = self.stream.cu_stream();
        self.with_state::<Ring, _>(|ring| {
            if ring.is_none() {
                *ring = Some(self.new_ring()?);
            }
            let Some(ring) = ring.as_mut() else {
                return Err(Error::Gpu("upload ring missing".into()));
            };
            for (i, part) in src.chunks(SLOT_BYTES).enumerate() {
                let slot = &mut ring.slots[i % SLOTS];
                if slot.queued {
                    slot.done
                        .synchronize()
                        .map_err(cuda("waiting for the GPU"))?;
                }
                let host = slot
                    .host
                    .as_mut_slice()
                    .map_err(cuda("writing pinned memory"))?;
                let host = &mut host[..part.len()];
                host.par_chunks_mut(PIECE_BYTES)
                    .zip(part.par_chunks(PIECE_BYTES))
                    .for_each(|(d, s)| d.copy_from_slice(s));
                let at = (i * SLOT_BYTES) as u64;
                let _op = count(Op::HostToDevice);
                // SAFETY: `part` ends at or before `src.len()`, which fits `dst` (checked), so
                // the device range lies inside `dst`; the page-locked source is not written
                // again before `done` (recorded next) has fired.
                unsafe {
                    cudarc::driver::result::memcpy_htod_async(base + at, &*host, stream)
                        .map_err(cuda("copying to the device"))?;
                }
                slot.done
                    .record(&self.stream)
                    .map_err(cuda("recording an event"))?;
                slot.queued = true;
            }
            Ok(())
        })
    }
}
