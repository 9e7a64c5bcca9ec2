//! Huffman as a chunk codec of bytes (and of utf8 text bytes).

use crate::codec::{AutoRule, AutoSlot, Chunk, Codec, CodecOptions, Family};
use tessera_format::{CodecId, LogicalType, Result};

/// Huffman in the codec registry.
pub(crate) struct Huffman;

/// The registry entry.
pub(crate) static CODEC: Huffman = Huffman;

impl Codec for Huffman {
    fn id(&self) -> CodecId {
        CodecId::Huffman
    }

    /// Second in the automatic choice for bytes, after LLL. Its exact size
    /// ([`super::encoded_size`]) is not offered: the plan it needs (histogram, code lengths) is
    /// much of the encoder's work, so `auto` encodes once into a scratch buffer instead.
    fn auto_slot(&self, family: Family) -> Option<AutoSlot> {
        (family == Family::Bytes).then_some(AutoSlot {
            rank: 1,
            rule: AutoRule::SmallerOnChunksOf {
                min_bytes: super::AUTO_MIN_BYTES,
            },
        })
    }

    fn encode(&self, chunk: &Chunk<'_>, _: &CodecOptions, out: &mut Vec<u8>) -> Result<()> {
        super::encode(chunk.raw(), out)
    }

    fn decode(&self, _: LogicalType, payload: &[u8], _: u64, out: &mut [u8]) -> Result<()> {
        super::decode(payload, out)
    }

    fn decode_reference(
        &self,
        _: LogicalType,
        payload: &[u8],
        _: u64,
        out: &mut [u8],
    ) -> Result<()> {
        super::decode_reference(payload, out)
    }
}
