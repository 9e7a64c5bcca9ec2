//! Many device-to-device copies in one launch (`ts_copy_list` in
//! `kernels/primitives/primitives.cu`): the ranges travel as the kernel's argument, so a list
//! costs one launch instead of one copy call (host) and one copy operation (device) each.
//!
//! Why: a small table's read queues a few dozen such copies (status words gathered for the one
//! read-back, chunks placed in their column, plain chunks copied into place), each a few
//! microseconds of host time and of device time whatever its size. Long ranges keep their own
//! copy, which moves large bytes at the copy engine's speed.

use cudarc::driver::DeviceRepr;
use tessera_format::Result;

use crate::kernels::Module;
use crate::runtime::trace::{count, Op};
use crate::runtime::{cuda, Gpu};

/// Ranges one launch copies (`TS_COPY_LIST_MAX`).
pub(crate) const LIST_MAX: usize = 32;
/// Threads a block (`TS_COPY_LIST_THREADS`).
const THREADS: u32 = 256;
/// Ranges from this many bytes on are copied by a copy of their own.
pub(crate) const LIST_BYTES: usize = 256 << 10;
/// Most thread blocks along a range; the rest stride.
const MAX_BLOCKS: u64 = 1024;

/// `struct TsCopyList` of the kernel, passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
struct CopyList {
    dst: [u64; LIST_MAX],
    src: [u64; LIST_MAX],
    len: [u64; LIST_MAX],
    n: u32,
}

// SAFETY: plain `#[repr(C)]` data laid out as `struct TsCopyList` (u64 arrays, then a u32).
unsafe impl DeviceRepr for CopyList {}

/// One device-to-device copy: `len` bytes from device address `src` to `dst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DeviceCopy {
    pub dst: u64,
    pub src: u64,
    pub len: usize,
}

impl Gpu {
    /// Queues `copies` on the main stream, in order with the work queued before and after:
    /// ranges shorter than [`LIST_BYTES`] by one launch for every [`LIST_MAX`] of them (a
    /// single one by a copy call), longer ones by a copy each. While a deferral is open
    /// ([`Gpu::defer_decodes`]) they are recorded and queued with it, after its decodes.
    ///
    /// # Safety
    /// Every range must lie in live device memory until the copies complete, and no
    /// destination may overlap another range of the list.
    pub(crate) unsafe fn copy_list(&self, copies: &[DeviceCopy]) -> Result<()> {
        if self.defer_copies(copies)? {
            return Ok(());
        }
        // SAFETY: forwarded.
        unsafe { self.copy_list_now(copies) }
    }

    /// [`Self::copy_list`], never deferred ([`Gpu::defer_decodes`]).
    ///
    /// # Safety
    /// As for [`Self::copy_list`].
    pub(crate) unsafe fn copy_list_now(&self, copies: &[DeviceCopy]) -> Result<()> {
        self.flush_pending()?;
        let (short, long): (Vec<DeviceCopy>, Vec<DeviceCopy>) = copies
            .iter()
            .filter(|c| c.len > 0)
            .partition(|c| c.len < LIST_BYTES);
        let one = |c: &DeviceCopy| {
            let _op = count(Op::DeviceToDevice);
            // SAFETY: the caller's contract: both ranges are live device memory.
            unsafe {
                cudarc::driver::result::memcpy_dtod_async(
                    c.dst,
                    c.src,
                    c.len,
                    self.stream.cu_stream(),
                )
            }
            .map_err(cuda("copying on the device"))
        };
        for c in &long {
            one(c)?;
        }
        if short.len() == 1 {
            return one(&short[0]);
        }
        for group in short.chunks(LIST_MAX) {
            let mut list = CopyList {
                dst: [0; LIST_MAX],
                src: [0; LIST_MAX],
                len: [0; LIST_MAX],
                n: group.len() as u32,
            };
            let mut longest = 1u64;
            for (i, c) in group.iter().enumerate() {
                list.dst[i] = c.dst;
                list.src[i] = c.src;
                list.len[i] = c.len as u64;
                longest = longest.max(c.len as u64);
            }
            let f = self.function(Module::Primitives, "ts_copy_list")?;
            let blocks = longest
                .div_ceil(16 * u64::from(THREADS))
                .clamp(1, MAX_BLOCKS) as u32;
            // SAFETY: matches ts_copy_list(TsCopyList) by value; blockIdx.y < n (the grid's y
            // extent); the ranges are live device memory (the caller's contract).
            unsafe { self.launch_2d(&f, (blocks, group.len() as u32), THREADS, &[&list])? };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The list's length and block width are the kernel source's, and its layout is
    /// `struct TsCopyList`'s: three arrays of u64, a u32, padded to 8 bytes.
    #[test]
    fn list_matches_the_kernel() {
        let src = crate::kernels::source(Module::Primitives).expect("embedded");
        assert!(src.contains(&format!("#define TS_COPY_LIST_MAX {LIST_MAX}")));
        assert!(src.contains(&format!("#define TS_COPY_LIST_THREADS {THREADS}")));
        assert_eq!(std::mem::size_of::<CopyList>(), 3 * LIST_MAX * 8 + 8);
        assert_eq!(std::mem::align_of::<CopyList>(), 8);
    }
}
