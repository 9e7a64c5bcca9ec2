//! Page-locked host buffers and queued host-to-device copies from them, which run at the link's
//! speed: the coprocessor scenario of the paper (section 9.5), how long it takes to get a column
//! onto the GPU compressed (copy the payload, then decode) against copying it uncompressed.

use cudarc::driver::{CudaSlice, PinnedHostSlice};
use tessera_format::{Error, Result};

use super::{cuda, Gpu};

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
        let _op = super::trace::count(super::trace::Op::HostToDevice);
        // SAFETY: `len` bytes fit both buffers (checked); the pinned source outlives the copy
        // because every caller waits for the stream before dropping or rewriting it.
        unsafe {
            cudarc::driver::result::memcpy_htod_async(d, &host[..len], self.stream.cu_stream())
        }
        .map_err(cuda("copying to the device"))
    }
}
