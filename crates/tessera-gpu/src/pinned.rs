//! Page-locked host buffers and timed host-to-device copies, for the coprocessor scenario of
//! the paper (section 9.5): how long it takes to get a column onto the GPU compressed (copy the
//! payload, then decode) against copying it uncompressed. Both copies come from pinned memory,
//! so they run at the link's speed.

use cudarc::driver::{CudaSlice, PinnedHostSlice};
use tessera_format::{Error, Result};

use crate::decode::DeviceColumn;
use crate::runtime::{cuda, Gpu};

/// Page-locked host memory.
#[derive(Debug)]
pub struct PinnedBuffer {
    buf: PinnedHostSlice<u8>,
}

impl PinnedBuffer {
    /// Bytes held.
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    /// The bytes (no copy is in flight when this is called: every queued copy is waited for by
    /// the call that queued it).
    pub fn as_mut_slice(&mut self) -> Result<&mut [u8]> {
        self.buf
            .as_mut_slice()
            .map_err(cuda("reading pinned memory"))
    }
    pub fn as_slice(&self) -> Result<&[u8]> {
        self.buf.as_slice().map_err(cuda("reading pinned memory"))
    }
}

impl Gpu {
    /// `bytes` of page-locked host memory (not write-combined: the host reads it too).
    pub fn alloc_pinned(&self, bytes: usize) -> Result<PinnedBuffer> {
        // SAFETY: the memory is uninitialised; it is only read after being written (callers
        // fill it through `as_mut_slice`, or a copy from the device fills it).
        let buf = unsafe { self.ctx.alloc_pinned_with_flags::<u8>(bytes.max(1), 0) }
            .map_err(cuda("allocating pinned host memory"))?;
        Ok(PinnedBuffer { buf })
    }

    /// Queues a copy of the first `len` bytes of `src` to `dst` on the main stream.
    pub fn enqueue_upload(
        &self,
        src: &PinnedBuffer,
        len: usize,
        dst: &mut CudaSlice<u8>,
    ) -> Result<()> {
        if len > src.len() || len > dst.len() {
            return Err(Error::InvalidArgument(
                "upload longer than its buffers".into(),
            ));
        }
        let host = src.as_slice()?;
        let d = self.ptr(dst);
        // SAFETY: `len` bytes fit both buffers (checked); the pinned source outlives the copy
        // because every caller waits for the stream before dropping or rewriting it.
        unsafe {
            cudarc::driver::result::memcpy_htod_async(d, &host[..len], self.stream.cu_stream())
        }
        .map_err(cuda("copying to the device"))
    }

    /// The column's device payload (its words, then its plain bytes) in a new pinned host
    /// buffer, as [`Self::enqueue_reupload`] sends it.
    pub fn pin_column(&self, col: &DeviceColumn) -> Result<PinnedBuffer> {
        let mut pinned = self.alloc_pinned(col.words_bytes() + col.plain_bytes())?;
        self.pin_column_into(col, &mut pinned)?;
        Ok(pinned)
    }

    /// [`Self::pin_column`] into an existing buffer (pinned allocations are slow: reuse one).
    pub fn pin_column_into(&self, col: &DeviceColumn, pinned: &mut PinnedBuffer) -> Result<()> {
        let words = col.words_bytes();
        let plain = col.plain_bytes();
        if pinned.len() < words + plain {
            return Err(Error::InvalidArgument(
                "pinned buffer smaller than the column".into(),
            ));
        }
        {
            let host = pinned.as_mut_slice()?;
            // SAFETY: the device buffers hold at least `words` and `plain` bytes; the pinned
            // destination holds both; the stream is synchronized below before it is read.
            unsafe {
                use cudarc::driver::result as r;
                if words > 0 {
                    r::memcpy_dtoh_async(
                        &mut host[..words],
                        self.ptr(&col.words),
                        self.stream.cu_stream(),
                    )
                    .map_err(cuda("copying from the device"))?;
                }
                if plain > 0 {
                    r::memcpy_dtoh_async(
                        &mut host[words..words + plain],
                        self.ptr(&col.plain),
                        self.stream.cu_stream(),
                    )
                    .map_err(cuda("copying from the device"))?;
                }
            }
        }
        self.synchronize()
    }

    /// Queues the copy of a pinned column payload (from [`Self::pin_column`]) into the
    /// column's device buffers: time it with a decode to get the compressed upload path.
    pub fn enqueue_reupload(&self, col: &DeviceColumn, src: &PinnedBuffer) -> Result<()> {
        let words = col.words_bytes();
        let plain = col.plain_bytes();
        if src.len() < words + plain {
            return Err(Error::InvalidArgument(
                "pinned buffer smaller than the column".into(),
            ));
        }
        let host = src.as_slice()?;
        // SAFETY: sizes checked above against both sides; callers wait before reusing `src`.
        unsafe {
            use cudarc::driver::result as r;
            if words > 0 {
                r::memcpy_htod_async(
                    self.ptr(&col.words),
                    &host[..words],
                    self.stream.cu_stream(),
                )
                .map_err(cuda("copying to the device"))?;
            }
            if plain > 0 {
                r::memcpy_htod_async(
                    self.ptr(&col.plain),
                    &host[words..words + plain],
                    self.stream.cu_stream(),
                )
                .map_err(cuda("copying to the device"))?;
            }
        }
        Ok(())
    }
}
