//! Plain (`container.md` §2): the raw form as is, for every type: little-endian values at the
//! logical width, bytes, or bits packed least significant bit first (`⌈n / 8⌉` bytes, padding
//! bits zero). Decoding checks the payload length is exactly the raw length (`Truncated` /
//! `TrailingBytes`) and, for bits, that the padding bits are zero.

use crate::codec::{AutoRule, AutoSlot, Chunk, Codec, CodecOptions, Family};
use tessera_format::{CodecId, Error, LogicalType, Result};

/// Plain in the codec registry.
#[derive(Debug)]
pub(crate) struct Plain;

/// The registry entry.
pub(crate) static CODEC: Plain = Plain;

impl Codec for Plain {
    fn id(&self) -> CodecId {
        CodecId::Plain
    }

    /// Tried last by `auto`: on integers it wins ties (a plain chunk decodes by a copy), on
    /// bytes and bits it loses them.
    fn auto_slot(&self, family: Family) -> Option<AutoSlot> {
        let rule = match family {
            Family::Integers => AutoRule::NotLarger,
            Family::Bytes | Family::Bits => AutoRule::Smaller,
        };
        Some(AutoSlot {
            rank: AutoSlot::LAST,
            rule,
        })
    }

    fn encode(&self, chunk: &Chunk<'_>, _: &CodecOptions, out: &mut Vec<u8>) -> Result<()> {
        out.extend_from_slice(chunk.raw());
        Ok(())
    }

    fn encoded_size(&self, chunk: &Chunk<'_>) -> Result<Option<usize>> {
        Ok(Some(chunk.raw().len()))
    }

    fn decode(
        &self,
        ty: LogicalType,
        payload: &[u8],
        value_count: u64,
        out: &mut [u8],
    ) -> Result<()> {
        copy(payload, out)?;
        let tail = value_count % 8;
        if ty == LogicalType::Bits && tail != 0 && out[out.len() - 1] >> tail != 0 {
            return Err(Error::InvalidHeader {
                field: "plain bits padding",
                offset: (out.len() - 1) as u64,
                expected: "zero bits past the bitmap's end".into(),
                found: out[out.len() - 1] as u64,
            });
        }
        Ok(())
    }

    fn decode_reference(
        &self,
        ty: LogicalType,
        payload: &[u8],
        value_count: u64,
        out: &mut [u8],
    ) -> Result<()> {
        self.decode(ty, payload, value_count, out)
    }
}

fn copy(payload: &[u8], out: &mut [u8]) -> Result<()> {
    if payload.len() < out.len() {
        return Err(Error::truncated(
            "plain payload",
            0,
            out.len(),
            payload.len(),
        ));
    }
    if payload.len() > out.len() {
        return Err(Error::TrailingBytes {
            what: "plain payload",
            offset: out.len() as u64,
            count: (payload.len() - out.len()) as u64,
        });
    }
    out.copy_from_slice(payload);
    Ok(())
}
