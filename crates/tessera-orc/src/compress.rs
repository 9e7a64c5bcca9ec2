//! ORC's compression chunks (spec "Compression"): a compressed stream is a sequence of chunks,
//! each a 3-byte little-endian header `length * 2 + isOriginal` and `length` bytes, either
//! stored (`isOriginal`) or compressed by the file's codec; each decompresses to at most the
//! postscript's block size. ORC's "ZLIB" is raw Deflate (RFC 1951, no zlib wrapper).

use std::borrow::Cow;
use std::io::Read;
use std::ops::Range;

use tessera_codecs::deflate;

use crate::error::{OrcError, Result};

/// A file's compression (`CompressionKind` of the postscript).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Streams are stored as they are.
    None,
    /// Raw Deflate chunks (`tessera_codecs::deflate`, or the GPU's CODAG Deflate decoder).
    Zlib,
    /// Raw Snappy chunks (the `snap` crate).
    Snappy,
    /// LZ4 block chunks (the `lz4_flex` crate).
    Lz4,
    /// Zstandard frame chunks (the `zstd` crate).
    Zstd,
}

impl Compression {
    pub(crate) fn from_proto(k: i32) -> Result<Compression> {
        Ok(match k {
            0 => Compression::None,
            1 => Compression::Zlib,
            2 => Compression::Snappy,
            4 => Compression::Lz4,
            5 => Compression::Zstd,
            3 => return Err(OrcError::Unsupported("LZO compression".into())),
            k => return Err(OrcError::Unsupported(format!("compression kind {k}"))),
        })
    }

    /// Its name as ORC spells it.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "NONE",
            Compression::Zlib => "ZLIB",
            Compression::Snappy => "SNAPPY",
            Compression::Lz4 => "LZ4",
            Compression::Zstd => "ZSTD",
        }
    }
}

/// One compression chunk of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkRef {
    /// Its bytes (after the header) within the stream.
    pub range: Range<usize>,
    /// Stored as is (`isOriginal`).
    pub original: bool,
}

/// The chunks of a compressed stream, each checked to lie inside it and to be at most
/// `block_size` bytes.
pub fn chunks(stream: &[u8], block_size: usize) -> Result<Vec<ChunkRef>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < stream.len() {
        let Some(h) = stream.get(at..at + 3) else {
            return Err(OrcError::malformed(
                "compression chunk header",
                format!("at byte {at}: {} bytes left, 3 needed", stream.len() - at),
            ));
        };
        let h = h[0] as usize | (h[1] as usize) << 8 | (h[2] as usize) << 16;
        let (len, original) = (h >> 1, h & 1 == 1);
        let start = at + 3;
        if len > stream.len() - start {
            return Err(OrcError::malformed(
                "compression chunk header",
                format!(
                    "at byte {at}: chunk of {len} bytes, {} left in the stream",
                    stream.len() - start
                ),
            ));
        }
        if len > block_size || (len == 0 && !original) {
            return Err(OrcError::malformed(
                "compression chunk header",
                format!("at byte {at}: chunk of {len} bytes (block size {block_size})"),
            ));
        }
        out.push(ChunkRef {
            range: start..start + len,
            original,
        });
        at = start + len;
    }
    Ok(out)
}

/// Decompresses one chunk's bytes into `out` (at most `block_size` bytes added).
pub fn decompress_chunk(
    c: Compression,
    block_size: usize,
    input: &[u8],
    out: &mut Vec<u8>,
) -> Result<()> {
    let too_big = |n: usize| {
        OrcError::malformed(
            "compression chunk",
            format!("decompresses to {n} bytes, over the block size {block_size}"),
        )
    };
    match c {
        Compression::None => out.extend_from_slice(input),
        Compression::Zlib => {
            let (d, _) = deflate::inflate(input, block_size)?;
            out.extend_from_slice(&d);
        }
        Compression::Snappy => {
            let n = snap::raw::decompress_len(input)
                .map_err(|e| OrcError::malformed("Snappy chunk", e.to_string()))?;
            // Snappy expands at most ~64x (a 64-byte copy from 2-3 bytes), so a length
            // beyond that bound is a lie, whatever the block size.
            if n > block_size || n > input.len().saturating_mul(64).saturating_add(64) {
                return Err(too_big(n));
            }
            let at = out.len();
            out.resize(at + n, 0);
            let got = snap::raw::Decoder::new()
                .decompress(input, &mut out[at..])
                .map_err(|e| OrcError::malformed("Snappy chunk", e.to_string()))?;
            out.truncate(at + got);
        }
        Compression::Lz4 => {
            // LZ4 expands at most 255x: the buffer is bounded by that and the block size.
            let cap = block_size.min(input.len().saturating_mul(255).saturating_add(64));
            let d = lz4_flex::block::decompress(input, cap)
                .map_err(|e| OrcError::malformed("LZ4 chunk", e.to_string()))?;
            out.extend_from_slice(&d);
        }
        Compression::Zstd => {
            let mut dec = zstd::stream::read::Decoder::with_buffer(input)
                .map_err(|e| OrcError::malformed("ZSTD chunk", e.to_string()))?;
            let at = out.len();
            // One byte past the limit tells an over-long chunk from one that fills it.
            let n = (&mut dec)
                .take(block_size as u64 + 1)
                .read_to_end(out)
                .map_err(|e| OrcError::malformed("ZSTD chunk", e.to_string()))?;
            if n > block_size {
                out.truncate(at);
                return Err(too_big(n));
            }
        }
    }
    Ok(())
}

/// A whole stream decompressed (borrowed as it is when the file is not compressed).
pub fn decompress(c: Compression, block_size: usize, stream: &[u8]) -> Result<Cow<'_, [u8]>> {
    if c == Compression::None {
        return Ok(Cow::Borrowed(stream));
    }
    let mut out = Vec::new();
    for ch in chunks(stream, block_size)? {
        let input = &stream[ch.range];
        if ch.original {
            out.extend_from_slice(input);
        } else {
            decompress_chunk(c, block_size, input, &mut out)?;
        }
    }
    Ok(Cow::Owned(out))
}
