//! tessera-codecs: CPU encoders and decoders.
//!
//! - [`codec`]: the [`codec::Codec`] trait every codec implements and the registry that the
//!   chunk functions dispatch through (its module notes say how to add a codec).
//! - [`int`]: the tile-based integer codecs GPU-FOR, GPU-DFOR and GPU-RFOR over 32- and 64-bit
//!   lanes (`docs/format/{int-common,for,dfor,rfor}.md`), each with a reference decoder that reads
//!   like its spec and a fast decoder that must match it value for value.
//! - [`column`](mod@column): chunks of a column of any logical integer type, as raw little-endian bytes in and
//!   out: the lane mapping, plain storage and the automatic (smallest) codec choice.
//! - [`bitmap`]: WAH and PLWAH compressed bitmaps (`docs/format/{wah,plwah}.md`): compression,
//!   a reference decoder, PLWAH / WAH conversion and bitwise operations on the compressed words.
//! - [`huffman`]: canonical Huffman coding of bytes with code lengths limited to 12 bits and a
//!   block-decodable bit stream (`docs/format/huffman.md`): encoder, reference decoder and a fast
//!   multi-symbol-table decoder that must match it byte for byte.
//! - [`lll`]: LLL dictionary and run-length coding of bytes in independent 32 KiB strips
//!   (`docs/format/lll.md`): optimal-parse encoder, reference decoder and a parallel fast decoder.

pub mod bitmap;
pub mod codec;
pub mod column;
pub mod deflate;
pub mod huffman;
pub mod int;
pub mod lll;
pub mod orc;
mod plain;
pub mod text;
