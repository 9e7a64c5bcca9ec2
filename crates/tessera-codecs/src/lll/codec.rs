//! LLL as a chunk codec of bytes (and of utf8 text bytes).

use crate::codec::{AutoRule, AutoSlot, Chunk, Codec, CodecOptions, Family};
use tessera_format::{CodecId, LogicalType, Result};

/// LLL in the codec registry.
pub(crate) struct Lll;

/// The registry entry.
pub(crate) static CODEC: Lll = Lll;

impl Codec for Lll {
    fn id(&self) -> CodecId {
        CodecId::Lll
    }

    /// First in the automatic choice for bytes (ties go to it); on chunks under
    /// [`super::AUTO_MIN_BYTES`] bytes only when it halves them.
    fn auto_slot(&self, family: Family) -> Option<AutoSlot> {
        (family == Family::Bytes).then_some(AutoSlot {
            rank: 0,
            rule: AutoRule::SmallerOnSmallChunksBy {
                min_bytes: super::AUTO_MIN_BYTES,
                num: 1,
                den: 2,
            },
        })
    }

    /// Reads the LLL settings of `opts` (segment size, parse).
    fn encode(&self, chunk: &Chunk<'_>, opts: &CodecOptions, out: &mut Vec<u8>) -> Result<()> {
        let lll_opts = super::EncodeOptions {
            segment_bytes: opts.lll_segment_bytes,
            parse: opts.lll_parse,
        };
        super::encode_with(chunk.raw(), out, &lll_opts).map(|_| ())
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
