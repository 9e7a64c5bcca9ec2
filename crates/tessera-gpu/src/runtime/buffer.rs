//! [`GpuBuffer`]: device memory that is either an allocation of its own or a view of a range
//! of a shared allocation (an arena), kept alive by the views.
//!
//! Why: a read of a small table is dominated by per-operation costs, and each buffer of its
//! own costs an allocation and a free (driver calls on the host). A batch of columns decoded
//! back to back into one allocation hands each column a view of its range instead of a copy
//! into a buffer of its own: no copy launch, no allocation or free per column.
//!
//! Invariants: a view's range lies inside its arena (checked when it is made, [`Gpu::view`]);
//! the arena is freed (stream-ordered) only when its last view has dropped; a view never frees
//! its own address (it is not an allocation).

use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use cudarc::driver::{CudaSlice, DeviceRepr};
use tessera_format::{Error, Result};

use super::Gpu;

/// Device memory of `T` values: an allocation of its own or a view of a shared one (module
/// docs). Dereferences to the [`CudaSlice`] it covers, so it goes wherever one is read.
pub struct GpuBuffer<T = u8> {
    /// The memory; for a view, a slice whose address is not an allocation of its own (leaked,
    /// never freed, when the view drops).
    slice: ManuallyDrop<CudaSlice<T>>,
    /// The allocation a view lies in; `None` when `slice` owns its allocation.
    arena: Option<Arc<CudaSlice<u8>>>,
}

impl<T> GpuBuffer<T> {
    /// Whether this is a view of a shared allocation rather than an allocation of its own.
    pub fn is_view(&self) -> bool {
        self.arena.is_some()
    }

    /// Whether this and `other` are views of one shared allocation.
    pub fn shares_arena_with<U>(&self, other: &GpuBuffer<U>) -> bool {
        match (&self.arena, &other.arena) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl<T> From<CudaSlice<T>> for GpuBuffer<T> {
    fn from(slice: CudaSlice<T>) -> Self {
        GpuBuffer {
            slice: ManuallyDrop::new(slice),
            arena: None,
        }
    }
}

impl<T> Drop for GpuBuffer<T> {
    fn drop(&mut self) {
        // SAFETY: `slice` is taken once, here, and not used again.
        let slice = unsafe { ManuallyDrop::take(&mut self.slice) };
        if self.arena.is_some() {
            // A view's address is inside the arena: not ours to free. `leak` releases the
            // slice's stream handle without freeing; the arena (dropped after this) frees the
            // whole allocation once no view is left.
            let _ = slice.leak();
        } else {
            drop(slice);
        }
    }
}

impl<T> Deref for GpuBuffer<T> {
    type Target = CudaSlice<T>;
    fn deref(&self) -> &CudaSlice<T> {
        &self.slice
    }
}

impl<T> DerefMut for GpuBuffer<T> {
    fn deref_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.slice
    }
}

impl<T> std::fmt::Debug for GpuBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuBuffer")
            .field("len", &self.slice.len())
            .field("view", &self.arena.is_some())
            .finish()
    }
}

impl Gpu {
    /// A view of `len` values of `T` at byte `at` of `arena` (at least one value; `at` a
    /// multiple of `T`'s alignment), keeping the arena alive while it lives. A range outside
    /// the arena is an error.
    pub fn view<T: DeviceRepr>(
        &self,
        arena: &Arc<CudaSlice<u8>>,
        at: usize,
        len: usize,
    ) -> Result<GpuBuffer<T>> {
        let bytes = len.checked_mul(std::mem::size_of::<T>());
        let end = bytes.and_then(|b| at.checked_add(b));
        if len == 0 || end.is_none_or(|e| e > arena.len()) || at % std::mem::align_of::<T>() != 0 {
            return Err(Error::InvalidArgument(format!(
                "a view of {len} values at byte {at} of a {}-byte buffer",
                arena.len()
            )));
        }
        let base = self.ptr(arena);
        // SAFETY: `base + at .. base + at + len * size_of::<T>()` lies inside the live
        // allocation `arena` (checked above), which the view keeps alive; the view never frees
        // it (`Drop` leaks the slice); the caller writes the values before they are read.
        let slice = unsafe { self.stream.upgrade_device_ptr::<T>(base + at as u64, len) };
        Ok(GpuBuffer {
            slice: ManuallyDrop::new(slice),
            arena: Some(arena.clone()),
        })
    }
}

/// Alignment of each part of a [`Pack`].
const PACK_ALIGN: usize = 16;

/// The host bytes of several device buffers laid out back to back (each part on
/// [`PACK_ALIGN`] bytes), to become one allocation filled by one staged copy
/// ([`Gpu::upload_pack`]) whose parts are views: what a decoder's upload of payloads, tables,
/// scratch and status words costs as one allocation and one copy instead of one each.
#[derive(Debug, Default)]
pub(crate) struct Pack<'b> {
    parts: Vec<&'b [u8]>,
    at: usize,
    /// Bytes of uncopied room after the copied parts ([`Self::tail`]).
    tail: usize,
}

impl<'b> Pack<'b> {
    /// Appends `bytes` back to back, then zeros up to at least `room` bytes and on to the
    /// alignment; returns the byte where they start.
    pub(crate) fn place(&mut self, bytes: &[&'b [u8]], room: usize) -> usize {
        static PAD: [u8; 4096] = [0; 4096];
        debug_assert_eq!(self.tail, 0, "a part placed after the pack's tail");
        let start = self.at;
        let given: usize = bytes.iter().map(|b| b.len()).sum();
        self.parts.extend(bytes.iter().filter(|b| !b.is_empty()));
        let end = (start + room.max(given)).next_multiple_of(PACK_ALIGN);
        let mut pad = end - start - given;
        while pad > 0 {
            let n = pad.min(PAD.len());
            self.parts.push(&PAD[..n]);
            pad -= n;
        }
        self.at = end;
        start
    }

    /// [`Self::place`] of `T` values, at least one value's room.
    pub(crate) fn place_values<T: DeviceRepr>(&mut self, values: &'b [T]) -> usize {
        // SAFETY: `DeviceRepr` values are plain bytes as the device sees them; the view covers
        // exactly the slice's memory.
        let bytes = unsafe {
            std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
        };
        self.place(&[bytes], std::mem::size_of::<T>())
    }

    /// Room for `len` values of `T` (at least one), zeros as uploaded: scratch the device
    /// writes.
    pub(crate) fn reserve<T>(&mut self, len: usize) -> usize {
        self.place(&[], len.max(1).saturating_mul(std::mem::size_of::<T>()))
    }

    /// Room for `len` bytes (at least one) after every copied part, allocated with the pack
    /// and never copied (undefined until the device writes it): outputs a kernel fills, which
    /// would otherwise be an allocation each. Called after the last [`Self::place`]; returns the
    /// byte where the room starts.
    pub(crate) fn tail(&mut self, len: usize) -> usize {
        let start = self.at.saturating_add(self.tail);
        // Saturating: a size past memory becomes an allocation that fails, never a wrap.
        self.tail = self
            .tail
            .saturating_add(len.max(1))
            .checked_next_multiple_of(PACK_ALIGN)
            .unwrap_or(usize::MAX);
        start
    }

    /// Bytes of the pack, its tail included.
    pub(crate) fn len(&self) -> usize {
        self.at.saturating_add(self.tail)
    }

    /// Bytes copied to the device: the placed parts.
    fn copied(&self) -> usize {
        self.at
    }
}

/// Where an uploaded [`Pack`] lies: `len` bytes at byte `at` of a device allocation (its own,
/// or the range an upload group gave it, [`Gpu::begin_upload_group`]).
#[derive(Debug)]
pub(crate) struct PackArena {
    arena: Arc<CudaSlice<u8>>,
    at: usize,
    len: usize,
}

impl PackArena {
    /// A view of `len` values of `T` at byte `at` of the pack (inside it, checked).
    pub(crate) fn view<T: DeviceRepr>(
        &self,
        gpu: &Gpu,
        at: usize,
        len: usize,
    ) -> Result<GpuBuffer<T>> {
        let end = len
            .checked_mul(std::mem::size_of::<T>())
            .and_then(|b| at.checked_add(b));
        if end.is_none_or(|e| e > self.len) {
            return Err(Error::InvalidArgument(format!(
                "a view of {len} values at byte {at} of a {}-byte pack",
                self.len
            )));
        }
        gpu.view(&self.arena, self.at + at, len)
    }
}

impl Gpu {
    /// One device allocation holding `pack`'s bytes, copied by one staged copy (or, inside an
    /// upload group, a range of the group's allocation, copied with the group's other packs
    /// by one copy when the group is flushed); `None` when uploads are not staged (or the pack
    /// is too large to stage), so that the caller uploads its parts one by one.
    pub(crate) fn upload_pack(&self, pack: &Pack<'_>) -> Result<Option<PackArena>> {
        if !self.stages(pack.len()) {
            return Ok(None);
        }
        if let Some((arena, at)) = self.group_pack(&pack.parts, pack.copied(), pack.len())? {
            return Ok(Some(PackArena {
                arena,
                at,
                len: pack.len(),
            }));
        }
        let arena = self.alloc::<u8>(pack.len())?;
        // Staged: the copied parts are no longer than the pack.
        self.copy_pack(pack, &arena)?;
        Ok(Some(PackArena {
            arena: Arc::new(arena),
            at: 0,
            len: pack.len(),
        }))
    }

    /// Copies `pack`'s parts to the start of `arena` (at least [`Pack::len`] bytes, checked):
    /// by one staged copy while uploads are staged, else by one copy of the parts gathered on
    /// the host. For a caller that needs the allocation's address before it writes the parts.
    pub(crate) fn copy_pack(&self, pack: &Pack<'_>, arena: &CudaSlice<u8>) -> Result<()> {
        if arena.len() < pack.len() {
            return Err(Error::InvalidArgument(format!(
                "a {}-byte pack into a {}-byte buffer",
                pack.len(),
                arena.len()
            )));
        }
        let bytes = pack.copied();
        if bytes == 0 {
            return Ok(());
        }
        if self.stages(bytes) {
            return self.staged_copy(&pack.parts, bytes, self.ptr(arena));
        }
        let host: Vec<u8> = pack.parts.concat();
        let _op = super::trace::count(super::trace::Op::HostToDevice);
        // SAFETY: `arena` holds at least `host.len()` bytes (checked above); the source is
        // pageable memory, which the driver has copied before the call returns.
        unsafe {
            cudarc::driver::result::memcpy_htod_async(
                self.ptr(arena),
                &host,
                self.stream.cu_stream(),
            )
        }
        .map_err(super::cuda("copying to the device"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Packs uploaded inside an upload group arrive byte for byte, those before an operation
    /// on the stream (which flushes the group) and those after it (which go the usual way),
    /// the group's packs as ranges of one allocation; a view past a pack is refused.
    #[test]
    fn packs_of_an_upload_group_arrive_whole() {
        let Some(gpu) = crate::testing::gpu() else {
            return;
        };
        let _staged = gpu.stage_uploads();
        let data: Vec<Vec<u8>> = (0..6)
            .map(|k| (0..1000 + 777 * k).map(|i| (i * 31 + k) as u8).collect())
            .collect();
        let group = gpu
            .begin_upload_group(1 << 20)
            .expect("a group")
            .expect("uploads are staged");
        let mut packs = Vec::new();
        for (k, d) in data.iter().enumerate() {
            let mut pack = Pack::default();
            let at = pack.place(&[d.as_slice()], 1);
            pack.tail(100 * k);
            let arena = gpu.upload_pack(&pack).expect("an upload").expect("staged");
            packs.push((arena, at, d.len()));
            if k == 2 {
                // Queued work flushes the group: packs 0-2 are on the device before it runs.
                gpu.synchronize().expect("a wait");
            }
        }
        group.flush().expect("a flush");
        for ((arena, at, n), d) in packs.iter().zip(&data) {
            let v: GpuBuffer<u8> = arena.view(gpu, *at, *n).expect("a view");
            let mut host = vec![0u8; *n];
            gpu.download(&v, &mut host).expect("a download");
            assert_eq!(&host, d);
            assert!(arena.view::<u8>(gpu, *at, arena.len + 1).is_err());
        }
        let shared = |a: usize, b: usize| Arc::ptr_eq(&packs[a].0.arena, &packs[b].0.arena);
        assert!(shared(0, 1) && shared(1, 2));
        assert!(!shared(2, 3) && !shared(3, 4));
    }
}
