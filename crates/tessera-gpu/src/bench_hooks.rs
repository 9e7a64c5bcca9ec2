//! Entry points kept only for benchmarks, examples and the tests that cross-check one path
//! against another: launch variants, forced paths, tuning knobs and phase timings. None of them
//! is needed to encode, decode or query; the codec modules ([`crate::lll`], [`crate::huffman`],
//! [`crate::bitmap`], [`crate::Gpu`]) hold everything that is.

use cudarc::driver::CudaSlice;
use tessera_format::Result;

use crate::{DeviceColumn, Gpu};

/// Caps the thread blocks of every integer tile kernel (`None`: one thread block per slab of
/// tiles; with a cap, each thread block loops over slabs): a tuning knob.
pub fn set_grid_limit(gpu: &Gpu, limit: Option<u32>) {
    gpu.set_grid_limit(limit);
}

/// `SUM(x) WHERE lo <= x <= hi` through the paper's one-tile loaders (one tile per thread block
/// per step): slower than [`Gpu::sum_between`]; it keeps the single-tile device API compiled and
/// tested.
pub fn sum_between_tilewise(gpu: &Gpu, col: &DeviceColumn, lo: u32, hi: u32) -> Result<u64> {
    gpu.sum_between_tilewise(col, lo, hi)
}

/// Exclusive (or inclusive) sum scan of u32 values by the device-wide scan, modulo 2^32.
pub fn scan_u32(gpu: &Gpu, values: &[u32], inclusive: bool) -> Result<Vec<u32>> {
    crate::primitives::scan::scan_u32(gpu, values, inclusive)
}

/// [`scan_u32`] for u64 values (modulo 2^64).
pub fn scan_u64(gpu: &Gpu, values: &[u64], inclusive: bool) -> Result<Vec<u64>> {
    crate::primitives::scan::scan_u64(gpu, values, inclusive)
}

/// Block offsets as the integer encoders and the Huffman decoder compute them: `sizes.len() + 1`
/// values, `offsets[0] = 0` and `offsets[i + 1] = sizes[0] + ... + sizes[i]` (modulo 2^32).
pub fn offsets_u32(gpu: &Gpu, sizes: &[u32]) -> Result<Vec<u32>> {
    crate::primitives::scan::offsets_u32_host(gpu, sizes)
}

/// Merge path over two sorted u32 sequences: the merged items and, per item, whether it came
/// from `b`.
pub fn merge_u32(gpu: &Gpu, a: &[u32], b: &[u32]) -> Result<(Vec<u32>, Vec<u32>)> {
    crate::primitives::merge::merge_u32(gpu, a, b)
}

/// LLL: the decode kernel's thread-block sizes.
pub mod lll {
    use super::*;
    use crate::lll::DeviceLll;

    /// Threads per thread block of the LLL decode kernel (one thread block per strip). The
    /// library launches [`Variant::Threads128`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum Variant {
        /// 64 threads, 512 words per step: cheaper barriers and more strips per SM.
        Threads64,
        /// 128 threads, 1024 words per step (the paper's block size).
        #[default]
        Threads128,
        /// 256 threads, 2048 words per step.
        Threads256,
    }

    impl Variant {
        /// Every variant.
        pub const ALL: [Variant; 3] =
            [Variant::Threads64, Variant::Threads128, Variant::Threads256];

        fn kernel(self) -> (&'static str, u32) {
            match self {
                Variant::Threads64 => ("lll_decode_64", 64),
                Variant::Threads128 => ("lll_decode_128", 128),
                Variant::Threads256 => ("lll_decode_256", 256),
            }
        }

        /// A short name (`64`, `128`, `256`).
        pub fn name(self) -> &'static str {
            match self {
                Variant::Threads64 => "64",
                Variant::Threads128 => "128",
                Variant::Threads256 => "256",
            }
        }
    }

    /// [`crate::lll::enqueue_decode`] with the kernel of `variant`; [`crate::lll::finish_decode`]
    /// then waits and reports errors.
    pub fn enqueue_decode(
        gpu: &Gpu,
        input: &DeviceLll,
        out: &mut CudaSlice<u8>,
        variant: Variant,
    ) -> Result<()> {
        let (name, threads) = variant.kernel();
        crate::lll::enqueue_decode_kernel(gpu, input, out, name, threads)
    }
}

/// Huffman: the encoder's phase timings.
pub mod huffman {
    use super::*;
    use crate::huffman::{EncodeScratch, HuffmanEncoded};
    use tessera_format::Error;

    pub use crate::huffman::encode::EncodeTimings;

    /// [`crate::huffman::encode_device`] with CUDA events between its phases (which costs a
    /// little time of its own, so end-to-end timings use the plain call).
    pub fn encode_device_timed(
        gpu: &Gpu,
        data: &CudaSlice<u8>,
        n: usize,
        chunk_bytes: usize,
        scratch: &mut EncodeScratch,
    ) -> Result<(HuffmanEncoded, EncodeTimings)> {
        let (enc, timings) =
            crate::huffman::encode::encode_device_phases(gpu, data, n, chunk_bytes, scratch, true)?;
        let timings =
            timings.ok_or_else(|| Error::Gpu("the encoder recorded no phase timings".into()))?;
        Ok((enc, timings))
    }
}

/// Bitmaps: the paths [`crate::bitmap::binary_device`] and [`crate::bitmap::compress_device`]
/// choose between, forced, and the kernels' test inputs (small counters that reach the overflow
/// paths, invalid streams).
pub mod bitmap {
    pub use crate::bitmap::compress::{
        compress_device_with_max_counter, compress_device_writer, compress_with_max_counter,
    };
    pub use crate::bitmap::decompress::{compute_tile_starts, decompress_device_checked};
    pub use crate::bitmap::ops::{
        binary_device_fused, binary_device_fused_with_max_counter, binary_device_merge,
        binary_device_staged, binary_device_with,
    };
}
