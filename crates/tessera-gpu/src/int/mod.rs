//! The integer codecs GPU-FOR, GPU-DFOR and GPU-RFOR on the GPU, after Shanbhag et al.,
//! *Tile-based Lightweight Integer Compression in GPU* (SIGMOD '22); kernels in `kernels/int/`.
//!
//! - [`layout`]: the constants and structs shared with the kernels (`kernels/include/common.cuh`);
//! - `decode`: batched decoding, every chunk of a codec in one launch ([`Gpu::upload_column`],
//!   [`Gpu::decode_into`]), with the host-side header checks;
//! - `jobs`: decodes deferred and sent together, several in one launch ([`Gpu::defer_decodes`]);
//! - `status`: kernel status keys turned into the CPU decoders' `Error`s;
//! - `coproc`: the coprocessor path for columns in host memory ([`Gpu::decode_column`]);
//! - `transfer`: a device column's payload to pinned memory and back (the compressed upload);
//! - `query`: the fused `SUM(x) WHERE x BETWEEN lo AND hi` that never writes the decoded column
//!   ([`Gpu::sum_between`]);
//! - `encode`: GPU encoders byte-identical to the CPU's ([`Gpu::encode`], [`Gpu::encode_device`]).
//!
//! Plain chunks travel with the integer ones (a column may mix them) and are device copies.

mod coproc;
mod decode;
mod encode;
mod jobs;
pub mod layout;
mod query;
mod status;
mod transfer;

pub use decode::DeviceColumn;
// For the star-join executor (crate::ssb), which loads chunks with these loaders too.
pub(crate) use decode::{chunk_shape, ChunkShape};
// For the prepared uploads of `crate::codec` (host work apart from the device copies).
pub(crate) use decode::HostColumn;
pub use encode::{DeviceEncoded, EncodeScratch};
pub use jobs::DeferredDecodes;
pub(crate) use jobs::IntJob;
pub(crate) use status::chunk_error;
use tessera_format::CodecId;

#[cfg(doc)]
use crate::Gpu;

/// One chunk to decode on the device.
#[derive(Debug, Clone, Copy)]
pub struct ChunkRef<'a> {
    pub codec: CodecId,
    pub payload: &'a [u8],
    pub value_count: u32,
}
