//! WAH words (`docs/format/wah.md` §2) and the payload-level WAH codec.
//!
//! A word with bit 31 clear is a `literal`: bits 0..=30 are one group. A word with bit 31 set
//! is a `fill_word`: bit 30 is the fill bit, bits 0..=29 the `counter` of fill groups
//! (1..=2^30 - 1). The words themselves are made only by [`super::Builder`], so they are
//! canonical; [`decompress`] is the reference decoder and checks `wah.md` §5 in order.

use super::{Bitmap, Flavor, Word};
use tessera_format::{CodecId, Result};

/// WAH in the codec registry; first in the automatic choice for bits (ties go to it).
pub(crate) static CODEC: super::BitmapCodec = super::BitmapCodec {
    id: CodecId::Wah,
    flavor: Flavor::Wah,
    auto_rank: 0,
};

/// Bit 31: set in a fill_word, clear in a literal.
pub const FILL_FLAG: u32 = 1 << 31;
/// Bit 30 of a fill_word: the fill bit.
pub const FILL_BIT: u32 = 1 << 30;
/// Bits 0..=29 of a fill_word: the counter.
pub const COUNTER_MASK: u32 = (1 << 30) - 1;
/// The largest counter: 2^30 - 1 groups.
pub const MAX_COUNTER: u32 = COUNTER_MASK;

const _: () = assert!(FILL_FLAG | FILL_BIT | COUNTER_MASK == u32::MAX);

/// A fill_word of `counter` groups of `fill_bit` (`counter <= MAX_COUNTER`).
pub const fn fill_word(fill_bit: bool, counter: u32) -> u32 {
    FILL_FLAG | if fill_bit { FILL_BIT } else { 0 } | (counter & COUNTER_MASK)
}

/// Splits a WAH word into what it encodes.
pub const fn decode_word(word: u32) -> Word {
    if word & FILL_FLAG == 0 {
        Word::Literal(word)
    } else {
        Word::Fill {
            fill_bit: word & FILL_BIT != 0,
            counter: word & COUNTER_MASK,
            position: 0,
        }
    }
}

/// Compresses `bit_len` packed bits (least significant bit first, `ceil(bit_len / 8)` bytes)
/// and appends the WAH payload to `out`.
pub fn compress(bits: &[u8], bit_len: u64, out: &mut Vec<u8>) -> Result<()> {
    Bitmap::compress(Flavor::Wah, bits, bit_len)?.write_payload(out);
    Ok(())
}

/// The reference decoder: validates a WAH payload (`wah.md` §5) and writes the plain bitmap
/// into `out`, which must be `ceil(bit_len / 8)` bytes ([`super::payload_bit_len`]).
pub fn decompress(payload: &[u8], out: &mut [u8]) -> Result<()> {
    Bitmap::from_payload(Flavor::Wah, payload)?.decompress(out)
}
