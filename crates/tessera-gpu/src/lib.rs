//! tessera-gpu: the GPU side of tessera: a CUDA runtime (cudarc with dynamic loading, kernels
//! compiled by NVRTC at run time for the device's own architecture) and the kernels of every
//! codec, each matching its CPU decoder byte for byte and error for error.
//!
//! # Layout
//!
//! The crate is arranged by codec over two shared layers; `kernels/` (the CUDA sources) follows
//! the same plan.
//!
//! - **runtime** (`runtime/`): the device handle [`Gpu`] and [`DeviceInfo`], the NVRTC module
//!   cache, kernel launches and their arguments, streams, pinned host memory ([`PinnedBuffer`]),
//!   CUDA-event timing. The kernel sources and their NVRTC compilation: [`kernels`]. Kernels:
//!   `kernels/include/` (types and helpers every kernel shares).
//! - **primitives** (`primitives/`, crate-internal): the one device-wide scan and the merge
//!   path. Kernels: `kernels/primitives/`.
//! - **integer codecs** GPU-FOR / DFOR / RFOR (`int/`): [`layout`], decode ([`DeviceColumn`],
//!   [`ChunkRef`]), encode ([`DeviceEncoded`], [`EncodeScratch`]), the fused query, the
//!   coprocessor path, status keys to errors. Kernels: `kernels/int/`.
//! - **LLL** ([`lll`]; the CPU model of its kernel, for the tests, in `lll/model.rs`). Kernels:
//!   `kernels/lll/`.
//! - **canonical Huffman** ([`huffman`]: histogram, encode, decode). Kernels: `kernels/huffman/`.
//! - **WAH / PLWAH bitmaps** ([`bitmap`]: compress, decompress, convert, binary operations, over
//!   the canonical writer). Kernels: `kernels/bitmap/`, one module whose source is split by the
//!   same operations.
//! - **CODAG** ([`codag`]): ORC integer encodings and Deflate decoded one warp per chunk.
//!   Kernels: `kernels/codag/`.
//! - **Arrow layout** ([`arrow_layout`]): decoded columns rearranged into Arrow's buffers
//!   (offsets, i128 decimals, ALP floats) for the Arrow C Device Data Interface. Kernels:
//!   `kernels/arrow/`.
//! - **bench hooks** ([`bench_hooks`]): launch variants, forced paths, tuning knobs and phase
//!   timings, kept only for benchmarks, examples and tests.
//!
//! - **decoder registry** ([`codec`]): the trait every GPU decoder implements
//!   ([`codec::GpuDecoder`]), the list of them ([`codec::DECODERS`]), and
//!   [`codec::ResidentColumn`], which decodes any column's chunks through them in one batch per
//!   decoder. Adding a GPU decoder is a module plus one line there.
//!
//! The runtime knows no codec: it loads kernels by [`kernels::Module`] and name, and keeps what
//! a codec wants kept between calls without knowing what it is. Codecs depend on the runtime and
//! the primitives, never on each other.
//!
//! # The integer codecs
//!
//! After Shanbhag et al., *Tile-based Lightweight Integer Compression in GPU* (SIGMOD '22):
//! - batched decoding of GPU-FOR / GPU-DFOR / GPU-RFOR columns, every chunk of a codec in one
//!   launch ([`Gpu::upload_column`], [`Gpu::decode_into`]), and the coprocessor path for columns
//!   in host memory ([`Gpu::decode_column`]);
//! - the tile loaders `LoadBitPack`, `LoadDBitPack`, `LoadRBitPack` (`kernels/int/`) and a
//!   fused `SUM(x) WHERE x BETWEEN lo AND hi` that never writes the decoded column
//!   ([`Gpu::sum_between`]);
//! - GPU encoders byte-identical to the CPU's ([`Gpu::encode`], [`Gpu::encode_device`]).
//!
//! # Failure
//!
//! Nothing here needs CUDA at build time. Without a driver, device or NVRTC, [`Gpu::new`]
//! returns [`tessera_format::Error::Gpu`] saying which, and callers fall back to the CPU.
//! Corrupt payloads give the same `Error` variants as the CPU decoders, never a crash: the host
//! checks headers, kernels check everything else and report a status per chunk.

pub mod arrow_layout;
pub mod bench_hooks;
pub mod bitmap;
pub mod codag;
pub mod codec;
pub mod huffman;
mod int;
pub mod kernels;
pub mod lll;
pub mod orc_layout;
mod primitives;
mod runtime;
pub mod ssb;
pub mod testing;

pub use codec::{BatchError, GpuBatch, GpuDecoder, ResidentColumn};
pub use cudarc::driver::CudaSlice;
pub use int::layout;
pub use int::{ChunkRef, DeferredDecodes, DeviceColumn, DeviceEncoded, EncodeScratch};
pub use runtime::buffer::GpuBuffer;
pub use runtime::pinned::PinnedBuffer;
pub use runtime::staging::{staged_copy_ns, StagedUploads, UploadGroup};
pub use runtime::timing::TraceSpan;
pub use runtime::trace::{
    log_mark, op_timing, set_op_timing, start_op_log, take_op_log, LoggedOp, OpTimes, TraceCounts,
};
pub use runtime::upload::RING_MIN_BYTES as UPLOAD_RING_MIN_BYTES;
pub use runtime::{DeviceInfo, Gpu};
