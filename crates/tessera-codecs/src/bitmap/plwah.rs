//! PLWAH words (`docs/format/plwah.md` §2), the payload-level PLWAH codec and the conversions
//! between PLWAH and WAH.
//!
//! A word with bit 31 clear is a `literal` (bits 0..=30 are one group). A `fill_word` has bit
//! 31 set, the fill bit in bit 30, a 5-bit `position` in bits 25..=29 and a 25-bit `counter`
//! in bits 0..=24. Position `p != 0` means that after the `counter` fill groups comes one more
//! group: the fill group with bit `p - 1` flipped (the paper's "position list" of one).

use super::{Bitmap, Builder, Flavor, Run, Word};
use tessera_format::{CodecId, Result};

/// PLWAH in the codec registry; in the automatic choice for bits, after WAH.
pub(crate) static CODEC: super::BitmapCodec = super::BitmapCodec {
    id: CodecId::Plwah,
    flavor: Flavor::Plwah,
    auto_rank: 1,
};

/// Bit 31: set in a fill_word, clear in a literal.
pub const FILL_FLAG: u32 = 1 << 31;
/// Bit 30 of a fill_word: the fill bit.
pub const FILL_BIT: u32 = 1 << 30;
/// Bits 25..=29 of a fill_word: the position (0 = none, p = bit p - 1 of the next group).
pub const POSITION_SHIFT: u32 = 25;
/// The position field, in place.
pub const POSITION_MASK: u32 = 0x1F << POSITION_SHIFT;
/// Bits 0..=24 of a fill_word: the counter.
pub const COUNTER_MASK: u32 = (1 << 25) - 1;
/// The largest counter: 2^25 - 1 groups.
pub const MAX_COUNTER: u32 = COUNTER_MASK;

const _: () = assert!(FILL_FLAG | FILL_BIT | POSITION_MASK | COUNTER_MASK == u32::MAX);
const _: () = assert!(FILL_BIT & POSITION_MASK == 0 && POSITION_MASK & COUNTER_MASK == 0);

/// A fill_word: `counter` groups of `fill_bit`, then (if `position != 0`) the fill group with
/// bit `position - 1` flipped. `counter <= MAX_COUNTER`, `position <= 31`.
pub const fn fill_word(fill_bit: bool, counter: u32, position: u32) -> u32 {
    FILL_FLAG
        | if fill_bit { FILL_BIT } else { 0 }
        | ((position << POSITION_SHIFT) & POSITION_MASK)
        | (counter & COUNTER_MASK)
}

/// Splits a PLWAH word into what it encodes.
pub const fn decode_word(word: u32) -> Word {
    if word & FILL_FLAG == 0 {
        Word::Literal(word)
    } else {
        Word::Fill {
            fill_bit: word & FILL_BIT != 0,
            counter: word & COUNTER_MASK,
            position: (word & POSITION_MASK) >> POSITION_SHIFT,
        }
    }
}

/// Compresses `bit_len` packed bits (least significant bit first, `ceil(bit_len / 8)` bytes)
/// and appends the PLWAH payload to `out`.
pub fn compress(bits: &[u8], bit_len: u64, out: &mut Vec<u8>) -> Result<()> {
    Bitmap::compress(Flavor::Plwah, bits, bit_len)?.write_payload(out);
    Ok(())
}

/// The reference decoder: validates a PLWAH payload (`plwah.md` §5) and writes the plain
/// bitmap into `out`, which must be `ceil(bit_len / 8)` bytes ([`super::payload_bit_len`]).
pub fn decompress(payload: &[u8], out: &mut [u8]) -> Result<()> {
    Bitmap::from_payload(Flavor::Plwah, payload)?.decompress(out)
}

/// Re-encodes `bitmap` (either flavor) in `to`, canonically (`plwah.md` §6). PLWAH to WAH is
/// the paper's Algorithm 6 (a fill_word with a position becomes a fill_word and a literal),
/// with fill runs longer than 2^25 - 1 groups merged up to the WAH counter.
pub fn convert(bitmap: &Bitmap, to: Flavor) -> Bitmap {
    let mut b = Builder::new(to, bitmap.bit_len());
    for run in bitmap.runs() {
        match run {
            Run::Fill { fill_bit, count } => b.push_fill(fill_bit, count),
            Run::Literal(group) => b.push_literal(group),
        }
    }
    b.finish_valid()
}

/// PLWAH payload in, WAH payload appended to `out` (validating the input as `plwah.md` §5).
pub fn to_wah(plwah_payload: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let bitmap = Bitmap::from_payload(Flavor::Plwah, plwah_payload)?;
    convert(&bitmap, Flavor::Wah).write_payload(out);
    Ok(())
}
