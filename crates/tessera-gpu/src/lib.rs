//! tessera-gpu: the GPU runtime and kernels (API contract; filled in by the GPU work).

use tessera_format::{CodecId, Error, LogicalType, Result};

/// One chunk to decode on the device.
#[derive(Debug, Clone, Copy)]
pub struct ChunkRef<'a> {
    pub codec: CodecId,
    pub payload: &'a [u8],
    pub value_count: u32,
}

/// A handle on one CUDA device.
#[derive(Debug)]
pub struct Gpu {
    _private: (),
}

impl Gpu {
    /// Opens device 0. Fails with [`Error::Gpu`] saying why (no driver, no device, no NVRTC).
    pub fn new() -> Result<Gpu> {
        Err(Error::Gpu("GPU support is not built yet".into()))
    }

    /// Decodes the chunks of one column, in order, into `out` (raw little-endian values).
    pub fn decode_column(&self, ty: LogicalType, chunks: &[ChunkRef<'_>], out: &mut [u8]) -> Result<()> {
        let _ = (ty, chunks, out);
        Err(Error::Gpu("GPU support is not built yet".into()))
    }
}
