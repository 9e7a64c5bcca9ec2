//! GPU work on bytes and bits columns for `decompress`, `demo` and `bitmap`: each chunk goes to
//! its codec's GPU decoder (`tessera_gpu::{huffman, lll, bitmap}`), whose output and errors equal
//! the CPU decoders'. Plain chunks are copied on the host. One launch sequence per chunk: simple,
//! and the chunks are large (1 Mi values by default), so launch overhead stays small next to the
//! transfer of the chunk itself.

use tessera_codecs::bitmap::ops::{self, Op};
use tessera_codecs::bitmap::{self, Bitmap, Flavor};
use tessera_format::container::ChunkMeta;
use tessera_format::{CodecId, Error, LogicalType, Result};
use tessera_gpu::Gpu;

/// `op(a, b)` on compressed bitmaps: on the GPU when there is one, else on the CPU.
pub fn bitmap_op(gpu: Option<&Gpu>, op: Op, a: &Bitmap, b: &Bitmap) -> Result<Bitmap> {
    match gpu {
        Some(g) => tessera_gpu::bitmap::binary(g, op, a, b),
        None => ops::binary(op, a, b),
    }
}

/// Decodes `chunks` (payloads already checksum-verified) into `out`, back to back, on the GPU.
/// `Ok(false)`: nothing done, decode on the CPU (a type without GPU decoders). An error carries
/// the index (in `chunks`) of the chunk it concerns.
pub fn decode_chunks(
    gpu: &Gpu,
    ty: LogicalType,
    chunks: &[ChunkMeta],
    payloads: &[&[u8]],
    out: &mut [u8],
) -> std::result::Result<bool, (usize, Error)> {
    if !matches!(ty, LogicalType::Bytes | LogicalType::Bits) {
        return Ok(false);
    }
    let mut at = 0usize;
    for (i, (ch, payload)) in chunks.iter().zip(payloads).enumerate() {
        let n = ch.value_count as u64;
        let len = ty.raw_len(n).unwrap_or(0) as usize;
        let dst = out
            .get_mut(at..at + len)
            .ok_or_else(|| (i, Error::InvalidArgument("output buffer too small".into())))?;
        decode_one(gpu, ty, ch.codec, payload, n, dst).map_err(|e| (i, e))?;
        at += len;
    }
    Ok(true)
}

fn decode_one(
    gpu: &Gpu,
    ty: LogicalType,
    codec: CodecId,
    payload: &[u8],
    n: u64,
    dst: &mut [u8],
) -> Result<()> {
    match codec {
        CodecId::Huffman => tessera_gpu::huffman::decode(gpu, payload, dst),
        CodecId::Lll => tessera_gpu::lll::decode(gpu, payload, dst),
        CodecId::Wah | CodecId::Plwah => {
            let flavor = if codec == CodecId::Wah {
                Flavor::Wah
            } else {
                Flavor::Plwah
            };
            let bits = bitmap::payload_bit_len(flavor, payload)?;
            if bits != n {
                return Err(Error::CountMismatch {
                    what: "bitmap bit length",
                    expected: n,
                    found: bits,
                });
            }
            let plain = tessera_gpu::bitmap::decompress(gpu, flavor, payload)?;
            if plain.len() != dst.len() {
                return Err(Error::Gpu(format!(
                    "GPU bitmap decompression gave {} bytes for {n} bits",
                    plain.len()
                )));
            }
            dst.copy_from_slice(&plain);
            Ok(())
        }
        // Plain chunks and anything else: the CPU path (same checks).
        _ => tessera_codecs::column::decode_values(ty, codec, payload, n, dst),
    }
}
