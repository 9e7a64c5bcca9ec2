//! Staged uploads: while a [`StagedUploads`] guard is alive, [`Gpu::upload`] copies its source
//! into a page-locked staging buffer the handle keeps and queues the copy to the device from
//! there, instead of copying from pageable memory.
//!
//! Why: a copy from pageable memory runs at a fraction of the link's speed (the driver stages
//! it through its own buffers on one thread), and the driver waits for the stream before it
//! starts one, so an upload queued after a launch stalls the host until that launch finishes.
//! A read that uploads a table's payloads and tables of many decoders pays both on every upload.
//! From page-locked memory the copy is queued like a launch and runs at the link's speed; the
//! host's part is a memory copy (on all cores for large sources).
//!
//! Invariants: bytes of the staging buffer are written by the host only when no queued copy
//! still reads them. Uploads take the buffer's bytes in order from the start; when the next
//! source does not fit behind the previous ones, the host waits for the stream (every queued
//! copy from the buffer has then completed) and starts again from the beginning, growing the
//! buffer when the source is larger than it. The next upload after a wait for the stream that
//! began once every copy from the buffer had been queued ([`Gpu::synchronize`]; no upload group
//! open) also starts from the beginning: those copies have all completed, and reusing the
//! buffer's first bytes keeps them in the host's caches from one round of uploads to the next
//! (a read of a small table stages the same few hundred KB each time; spread over the whole
//! buffer, the host's copies into it missed the caches). The buffer lives in the handle's
//! state, so staged uploads are serialized by the state's lock.

use std::sync::atomic::{AtomicU64, Ordering};

use std::sync::Arc;

use cudarc::driver::{CudaSlice, DeviceRepr, PinnedHostSlice};
use rayon::prelude::*;
use tessera_format::{Error, Result};

use super::trace::{count, Op};
use super::{cuda, Gpu};

/// Sources larger than this go the pageable way: a staging buffer that large would pin more
/// host memory than a read of a small table is worth.
pub const STAGED_MAX_BYTES: usize = 256 << 20;
/// The smallest staging buffer.
const MIN_STAGING_BYTES: usize = 4 << 20;
/// Sources from this size on are copied into the staging buffer by all cores.
const PARALLEL_BYTES: usize = 1 << 20;
/// Piece of a source one host thread copies.
const PIECE_BYTES: usize = 256 << 10;
/// Each upload starts at a multiple of this in the buffer (DMA likes aligned sources).
const ALIGN: usize = 256;

/// Nanoseconds the host spent copying sources into staging buffers, process-wide (what part of
/// a read's upload phase is that copy: [`staged_copy_ns`]).
static STAGED_COPY_NS: AtomicU64 = AtomicU64::new(0);

/// Nanoseconds the host has spent copying sources into staging buffers since the process
/// started (all handles, all threads): a caller's phase timing subtracts two readings.
#[doc(hidden)]
pub fn staged_copy_ns() -> u64 {
    STAGED_COPY_NS.load(Ordering::Relaxed)
}

/// The handle's staging buffer and how much of it this round of uploads has taken.
struct Staging {
    host: PinnedHostSlice<u8>,
    used: usize,
    /// The upload group in progress ([`Gpu::begin_upload_group`]).
    group: Option<Group>,
}

/// An upload group: one device allocation that mirrors the staging buffer from `start` on, so
/// that a pack staged at byte `start + k` lies at byte `k` of `arena`, and every pack of the
/// group reaches the device by one copy of the staged span ([`UploadGroup::flush`]).
struct Group {
    arena: Arc<CudaSlice<u8>>,
    start: usize,
    /// Staged byte ranges to copy (packs' copied parts, neighbours merged), in order.
    ranges: Vec<(usize, usize)>,
}

/// Packs whose uncopied room is larger than this keep an allocation of their own rather than
/// spend the group's room (and staging room) on it.
const GROUP_MAX_TAIL: usize = 64 << 10;
/// Staged ranges of a group at most this far apart are copied as one, the bytes between
/// included (alignment padding and small uncopied room): one copy is cheaper than two.
const GROUP_MERGE_GAP: usize = 16 << 10;

/// While alive, the packs the decoders upload on its handle (their batched uploads) take ranges
/// of one device allocation and are copied together by [`UploadGroup::flush`], one copy for the
/// group instead of an allocation and a copy a pack. Any work queued on the handle's stream flushes it first,
/// so nothing reads a pack before its bytes are there; dropping the guard flushes too.
#[derive(Debug)]
pub struct UploadGroup<'g> {
    gpu: &'g Gpu,
}

impl UploadGroup<'_> {
    /// Queues the copy of every pack of the group to the device and ends the group.
    pub fn flush(self) -> Result<()> {
        self.gpu.flush_pending()
    }
}

impl Drop for UploadGroup<'_> {
    fn drop(&mut self) {
        // Errors surface at the handle's next operation, which reports its own.
        let _ = self.gpu.flush_pending();
    }
}

/// While alive, [`Gpu::upload`] on its handle goes through the page-locked staging buffer
/// (module docs). Guards nest; uploads return to the pageable way when the last one drops.
#[derive(Debug)]
pub struct StagedUploads<'g> {
    gpu: &'g Gpu,
}

impl Drop for StagedUploads<'_> {
    fn drop(&mut self) {
        self.gpu.staged.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Gpu {
    /// Routes this handle's [`Gpu::upload`]s through its page-locked staging buffer until the
    /// returned guard drops (module docs): for a caller that uploads many buffers and queues
    /// work between them.
    pub fn stage_uploads(&self) -> StagedUploads<'_> {
        self.staged.fetch_add(1, Ordering::Relaxed);
        StagedUploads { gpu: self }
    }

    /// Whether a [`StagedUploads`] guard is alive: its holder orders all its work on the main
    /// stream and waits once, so uploads need not wait for the stream themselves.
    pub(crate) fn is_staging(&self) -> bool {
        self.staged.load(Ordering::Relaxed) > 0
    }

    /// Whether [`Gpu::upload`] should stage a source of `bytes` bytes.
    pub(crate) fn stages(&self, bytes: usize) -> bool {
        bytes > 0 && bytes <= STAGED_MAX_BYTES && self.staged.load(Ordering::Relaxed) > 0
    }

    /// Copies `pieces` (each a multiple of 4 bytes long, `words` words in all) back to back into
    /// a new device buffer of `u32` words, little-endian as the bytes are: through the staging
    /// buffer with the host copying each piece into it once while a [`StagedUploads`] guard is
    /// alive, else gathered on the host and uploaded. What a caller whose data sits in several
    /// places (a column's chunk payloads) uploads without a host copy of its own first.
    pub fn upload_words(&self, pieces: &[&[u8]], words: usize) -> Result<CudaSlice<u32>> {
        let bytes: usize = pieces.iter().map(|p| p.len()).sum();
        if bytes != words * 4 || pieces.iter().any(|p| p.len() % 4 != 0) {
            return Err(Error::InvalidArgument(format!(
                "{bytes} bytes in pieces are not {words} words"
            )));
        }
        if !self.stages(bytes) {
            let mut host: Vec<u32> = Vec::with_capacity(words);
            for p in pieces {
                host.extend(
                    p.chunks_exact(4)
                        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                );
            }
            return self.upload(&host);
        }
        let dst = self.alloc::<u32>(words)?;
        // `dst` holds `words` words = `bytes` bytes (checked above).
        self.staged_copy(pieces, bytes, self.ptr(&dst))?;
        Ok(dst)
    }

    /// The staging buffer with `bytes` free at `used` (a new or larger buffer, or the same one
    /// started over, after waiting for the copies queued from it).
    fn staging_room<'s>(
        &self,
        state: &'s mut Option<Staging>,
        bytes: usize,
    ) -> Result<&'s mut Staging> {
        let need_new = match state.as_ref() {
            None => true,
            Some(s) => bytes > s.host.len(),
        };
        if need_new {
            if let Some(s) = state.as_mut() {
                // A group's bytes are copied from the old buffer first; it may still be read
                // by queued copies.
                if s.group.is_some() {
                    self.flush_group_of(s)?;
                }
                self.synchronize()?;
            }
            let cap = bytes.next_power_of_two().max(MIN_STAGING_BYTES);
            // SAFETY: uninitialised page-locked memory; the host writes each byte before a
            // queued copy reads it.
            let host = unsafe { self.ctx.alloc_pinned_with_flags::<u8>(cap, 0) }
                .map_err(cuda("allocating pinned host memory"))?;
            *state = Some(Staging {
                host,
                used: 0,
                group: None,
            });
        }
        let Some(s) = state.as_mut() else {
            return Err(Error::Gpu("staging buffer missing".into()));
        };
        // Counted after each copy is queued (the state's lock is held meanwhile), so a wait
        // that began at or after the last count has seen every copy from the buffer complete.
        if s.group.is_none()
            && rewinds()
            && self.staging_waited.load(Ordering::Acquire)
                >= self.staging_queued.load(Ordering::Acquire)
        {
            s.used = 0;
        }
        if s.used + bytes > s.host.len() {
            // Every copy queued from the buffer completes before the host writes it again (a
            // group's bytes are copied first: they would be overwritten).
            if s.group.is_some() {
                self.flush_group_of(s)?;
            }
            self.synchronize()?;
            s.used = 0;
        }
        Ok(s)
    }

    /// Makes the next `bytes` bytes of staged uploads fit the staging buffer without a wait:
    /// a buffer too small is replaced by one that holds them, and one whose free tail is too
    /// short starts over from its beginning (both after waiting for the stream, which a caller
    /// does here, before it queues its work, rather than in the middle of it). For a caller
    /// that knows what one round of uploads will take in all, so the buffer neither wraps nor
    /// grows inside it.
    pub fn reserve_staging(&self, bytes: usize) -> Result<()> {
        if bytes == 0 || bytes > STAGED_MAX_BYTES {
            return Ok(());
        }
        self.with_state::<Staging, _>(|state| self.staging_room(state, bytes).map(|_| ()))
    }

    /// Copies `src` into the staging buffer and queues its copy to the start of `dst` (which
    /// holds at least `src.len()` values) on the main stream.
    pub(crate) fn upload_staged<T: DeviceRepr>(
        &self,
        src: &[T],
        dst: &mut CudaSlice<T>,
    ) -> Result<()> {
        if src.len() > dst.len() {
            return Err(Error::InvalidArgument(
                "staged upload longer than its device buffer".into(),
            ));
        }
        let bytes = std::mem::size_of_val(src);
        // SAFETY: `T: DeviceRepr` values are plain bytes as the device sees them (what every
        // copy to the device relies on); the view covers exactly `src`'s memory.
        let src: &[u8] = unsafe { std::slice::from_raw_parts(src.as_ptr().cast::<u8>(), bytes) };
        // `src` fits `dst` (checked above).
        self.staged_copy(&[src], bytes, self.ptr(dst))
    }

    /// Copies `pieces` (`bytes` in all) back to back into the staging buffer and queues one copy
    /// of them to device address `base`, which the caller has checked holds `bytes` bytes.
    pub(crate) fn staged_copy(&self, pieces: &[&[u8]], bytes: usize, base: u64) -> Result<()> {
        self.with_state::<Staging, _>(|state| {
            let s = self.staging_room(state, bytes)?;
            let at = s.used;
            let host = s
                .host
                .as_mut_slice()
                .map_err(cuda("writing pinned memory"))?;
            fill(&mut host[at..at + bytes], pieces);
            let _op = count(Op::HostToDevice);
            let part = &host[at..at + bytes];
            // SAFETY: the caller checked that `base` holds `bytes` bytes; the page-locked source
            // is not written again before the stream has passed this copy (module invariants).
            unsafe {
                cudarc::driver::result::memcpy_htod_async(base, part, self.stream.cu_stream())
            }
            .map_err(cuda("copying to the device"))?;
            self.staging_queued.fetch_add(1, Ordering::AcqRel);
            s.used = (at + bytes).next_multiple_of(ALIGN).min(s.host.len());
            Ok(())
        })
    }
}

/// Whether the staging buffer starts over after a wait (module docs):
/// `TESSERA_STAGING_REWIND=0` turns it off, for measuring; read once.
fn rewinds() -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    !super::switched_off(&OFF, "TESSERA_STAGING_REWIND")
}

/// Copies `pieces` back to back into `part` (exactly their length): on all cores for large
/// sources.
fn fill(part: &mut [u8], pieces: &[&[u8]]) {
    let start = std::time::Instant::now();
    let bytes = part.len();
    let mut targets: Vec<(&mut [u8], &[u8])> = Vec::with_capacity(pieces.len());
    let mut rest: &mut [u8] = part;
    for p in pieces {
        let (d, tail) = rest.split_at_mut(p.len());
        targets.push((d, p));
        rest = tail;
    }
    if bytes >= PARALLEL_BYTES {
        // Pieces of every source, so one large source is shared out too.
        targets
            .par_iter_mut()
            .flat_map_iter(|(d, s)| d.chunks_mut(PIECE_BYTES).zip(s.chunks(PIECE_BYTES)))
            .for_each(|(d, s)| d.copy_from_slice(s));
    } else {
        for (d, s) in &mut targets {
            d.copy_from_slice(s);
        }
    }
    let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    STAGED_COPY_NS.fetch_add(ns, Ordering::Relaxed);
}

impl Gpu {
    /// Starts an upload group (the returned guard's docs) for the next `bytes` of staged
    /// uploads: room for them in the staging buffer (as [`Self::reserve_staging`]) and one
    /// device allocation of `bytes` that the group's packs take ranges of. Packs that do not
    /// fit what is left go the usual way. `None` when uploads are not staged or `bytes` is 0
    /// or too large to stage.
    pub fn begin_upload_group(&self, bytes: usize) -> Result<Option<UploadGroup<'_>>> {
        if bytes == 0 || !self.stages(bytes) {
            return Ok(None);
        }
        self.flush_pending()?;
        let arena = Arc::new(self.alloc::<u8>(bytes)?);
        self.with_state::<Staging, _>(|state| {
            let s = self.staging_room(state, bytes)?;
            s.group = Some(Group {
                arena,
                start: s.used,
                ranges: Vec::new(),
            });
            Ok(())
        })?;
        self.grouped.store(true, Ordering::Relaxed);
        Ok(Some(UploadGroup { gpu: self }))
    }

    /// Inside an upload group: stages `pieces` (`copied` bytes, the start of a pack of `len`
    /// bytes) and returns the group's allocation with the byte where the pack lies in it;
    /// nothing is copied to the device yet. `None` when no group is open or the pack does not
    /// fit it.
    pub(crate) fn group_pack(
        &self,
        pieces: &[&[u8]],
        copied: usize,
        len: usize,
    ) -> Result<Option<(Arc<CudaSlice<u8>>, usize)>> {
        if !self.grouped.load(Ordering::Relaxed) || len - copied > GROUP_MAX_TAIL {
            return Ok(None);
        }
        self.with_state::<Staging, _>(|state| {
            let Some(s) = state.as_mut() else {
                return Ok(None);
            };
            let cap = s.host.len();
            let Some(g) = s.group.as_mut() else {
                return Ok(None);
            };
            let at = s.used;
            let Some(off) = at.checked_sub(g.start) else {
                return Ok(None);
            };
            let end = at.checked_add(len);
            if end.is_none_or(|e| e > cap) || off.saturating_add(len) > g.arena.len() {
                return Ok(None);
            }
            let host = s
                .host
                .as_mut_slice()
                .map_err(cuda("writing pinned memory"))?;
            fill(&mut host[at..at + copied], pieces);
            match g.ranges.last_mut() {
                Some(last) if at - last.1 <= GROUP_MERGE_GAP => last.1 = at + copied,
                _ => g.ranges.push((at, at + copied)),
            }
            s.used = (at + len).next_multiple_of(ALIGN).min(cap);
            Ok(Some((g.arena.clone(), off)))
        })
    }

    /// Sends what waits to be queued: a deferral's decodes and copies ([`Gpu::defer_decodes`]),
    /// then the copies of an open upload group's packs, ending both (nothing when neither is
    /// open): what every operation that queues work on the stream does first.
    pub(crate) fn flush_pending(&self) -> Result<()> {
        // Deferred decodes go first: their launches flush the group before they are queued.
        self.flush_deferred()?;
        if !self.grouped.load(Ordering::Relaxed) {
            return Ok(());
        }
        self.with_state::<Staging, _>(|state| match state.as_mut() {
            Some(s) => self.flush_group_of(s),
            None => {
                self.grouped.store(false, Ordering::Relaxed);
                Ok(())
            }
        })
    }

    fn flush_group_of(&self, s: &mut Staging) -> Result<()> {
        self.grouped.store(false, Ordering::Relaxed);
        let Some(g) = s.group.take() else {
            return Ok(());
        };
        let host = s.host.as_slice().map_err(cuda("reading pinned memory"))?;
        let base = self.ptr(&g.arena);
        for &(a, b) in &g.ranges {
            let part = &host[a..b];
            let _op = count(Op::HostToDevice);
            // SAFETY: the range was staged at `a - start` of the arena's mirror and lies inside
            // the arena (checked when the pack was placed); the page-locked source is not
            // written again before the stream has passed this copy (module invariants: the
            // buffer's bytes past `used` are written only after a wait).
            unsafe {
                cudarc::driver::result::memcpy_htod_async(
                    base + (a - g.start) as u64,
                    part,
                    self.stream.cu_stream(),
                )
            }
            .map_err(cuda("copying to the device"))?;
        }
        self.staging_queued.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the next staged upload would start in the handle's staging buffer, were it not
    /// for a rewind.
    fn staging_used(gpu: &Gpu) -> usize {
        gpu.with_state::<Staging, _>(|state| Ok(state.as_ref().map_or(0, |s| s.used)))
            .expect("the handle's state")
    }

    /// The staging buffer starts over after a wait, and only after one: uploads queued one
    /// after another take bytes after each other, the first after a wait takes the buffer's
    /// first bytes, and every upload arrives whole.
    #[test]
    fn a_wait_rewinds_the_staging_buffer_and_uploads_arrive_whole() {
        if crate::testing::gpu().is_none() {
            return;
        }
        if !rewinds() {
            eprintln!("skipped: TESSERA_STAGING_REWIND=0 turns the rewind off");
            return;
        }
        // A handle of its own: no other test stages on it meanwhile.
        let gpu = Gpu::new().expect("a GPU handle");
        let _staged = gpu.stage_uploads();
        let data: Vec<Vec<u8>> = (0..6)
            .map(|k| {
                (0..50_000 + 3_333 * k)
                    .map(|i| (i * 7 + k * 13) as u8)
                    .collect()
            })
            .collect();
        let room = |n: usize| n.next_multiple_of(ALIGN);
        let mut uploaded = Vec::new();
        uploaded.push(gpu.upload(&data[0]).expect("an upload"));
        uploaded.push(gpu.upload(&data[1]).expect("an upload"));
        assert_eq!(
            staging_used(&gpu),
            room(data[0].len()) + room(data[1].len())
        );
        gpu.synchronize().expect("a wait");
        let mut last = 0;
        for d in &data[2..] {
            uploaded.push(gpu.upload(d).expect("an upload"));
            let used = staging_used(&gpu);
            assert_eq!(
                used,
                last + room(d.len()),
                "after a wait, from the beginning, then in order"
            );
            last = used;
        }
        for (dev, d) in uploaded.iter().zip(&data) {
            let mut host = vec![0u8; d.len()];
            gpu.download(dev, &mut host).expect("a download");
            assert!(host == *d, "a staged upload arrives whole");
        }
    }
}
