//! A [`DeviceColumn`]'s payload in pinned host memory and back: the compressed half of the
//! coprocessor scenario (`runtime::pinned`), timed by the benchmarks against an uncompressed
//! upload.

use tessera_format::{Error, Result};

use super::decode::DeviceColumn;
use crate::runtime::pinned::PinnedBuffer;
use crate::runtime::{cuda, Gpu};

impl Gpu {
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
