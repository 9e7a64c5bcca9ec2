//! tessera-gpu: the GPU side of tessera: a CUDA runtime (cudarc with dynamic loading, kernels
//! compiled by NVRTC at run time for the device's own architecture) and the tile-based kernels
//! of Shanbhag et al., *Tile-based Lightweight Integer Compression in GPU* (SIGMOD '22):
//!
//! - batched decoding of GPU-FOR / GPU-DFOR / GPU-RFOR columns, every chunk of a codec in one
//!   launch ([`Gpu::upload_column`], [`Gpu::decode_into`]), and the coprocessor path for columns
//!   in host memory ([`Gpu::decode_column`]);
//! - the tile loaders `LoadBitPack`, `LoadDBitPack`, `LoadRBitPack` (`kernels/include/`) and a
//!   fused `SUM(x) WHERE x BETWEEN lo AND hi` that never writes the decoded column
//!   ([`Gpu::sum_between`]);
//! - GPU encoders byte-identical to the CPU's ([`Gpu::encode`], [`Gpu::encode_device`]).
//!
//! Nothing here needs CUDA at build time. Without a driver, device or NVRTC, [`Gpu::new`]
//! returns [`tessera_format::Error::Gpu`] saying which, and callers fall back to the CPU.
//! Corrupt payloads give the same `Error` variants as the CPU decoders, never a crash: the host
//! checks headers, kernels check everything else and report a status per chunk.

pub mod bitmap;
mod coproc;
mod decode;
mod encode;
pub mod huffman;
pub mod kernels;
pub mod layout;
pub mod lll;
mod pinned;
mod query;
mod runtime;
mod status;

pub use cudarc::driver::CudaSlice;
pub use decode::DeviceColumn;
pub use encode::{DeviceEncoded, EncodeScratch};
pub use pinned::PinnedBuffer;
pub use runtime::{DeviceInfo, Gpu};
use tessera_format::CodecId;

/// One chunk to decode on the device.
#[derive(Debug, Clone, Copy)]
pub struct ChunkRef<'a> {
    pub codec: CodecId,
    pub payload: &'a [u8],
    pub value_count: u32,
}
