//! GPU-FOR (`docs/format/for.md`): frame of reference per 128-value block, four miniblocks of
//! 32 horizontally bit-packed values each.
//!
//! Block layout: `reference` (REF_WORDS words), one bit-width word (byte `j` = `bit_width` of
//! miniblock `j`), then the miniblocks back to back. The block writer and the block reader here
//! are shared with DFOR, whose blocks have the same layout (with a signed-min reference over
//! deltas). Invariants the encoder keeps: `reference` is the minimum over the block's real
//! values; padding positions pack 0; `bit_width = lane - leading_zeros(OR of packed values)`,
//! which equals the spec's `lane - leading_zeros(max)` because OR and max share their top bit.

use super::header::{self, Layout, Shape, Writer};
use super::word::{read_u32, Word};
use crate::codec::{AutoRule, AutoSlot};
use tessera_format::{CodecId, Error, Result};

pub(crate) const BLOCK: usize = 128;
pub(crate) const SHAPE: Shape = Shape {
    block_size: 128,
    miniblock_count: 4,
    tile_blocks: 1,
    lead_words: 0,
};

/// `bit_width` of a miniblock of real values `mb` under `reference`: the width of the OR of
/// the packed values `v - reference` (padding packs 0 and adds nothing to the OR).
#[inline(always)]
pub(crate) fn miniblock_width<W: Word>(mb: &[W], reference: W) -> u32 {
    mb.iter()
        .fold(W::ZERO, |a, &v| a.or(v.wsub(reference)))
        .width()
}

/// Words of one FOR-layout block of the real values `vals` (at most 128) under `reference`.
#[inline(always)]
pub(crate) fn block_words<W: Word>(vals: &[W], reference: W) -> usize {
    W::REF_WORDS
        + 1
        + vals
            .chunks(32)
            .map(|mb| miniblock_width(mb, reference) as usize)
            .sum::<usize>()
}

/// Appends one FOR-layout block of the real values `vals` (at most 128; the rest of the block
/// is padding, packed as 0): reference, bit-width word, miniblocks.
#[inline(always)]
pub(crate) fn put_block<W: Word>(vals: &[W], reference: W, out: &mut Vec<u8>) {
    let r = W::REF_WORDS;
    let mut bws = [0u32; 4];
    for (bw, mb) in bws.iter_mut().zip(vals.chunks(32)) {
        *bw = miniblock_width(mb, reference);
    }
    let words = r + 1 + bws.iter().sum::<u32>() as usize;
    let start = out.len();
    out.resize(start + 4 * words, 0);
    let dst = &mut out[start..];
    reference.write_bytes(dst);
    let bw_word = bws[0] | bws[1] << 8 | bws[2] << 16 | bws[3] << 24;
    dst[4 * r..4 * r + 4].copy_from_slice(&bw_word.to_le_bytes());
    let mut at = 4 * (r + 1);
    for (mb, bw) in vals.chunks(32).zip(bws) {
        if bw == 0 {
            continue;
        }
        let mut packed = [W::ZERO; 32];
        match <&[W; 32]>::try_from(mb) {
            Ok(full) => {
                for i in 0..32 {
                    packed[i] = full[i].wsub(reference);
                }
            }
            Err(_) => {
                for (d, &v) in packed.iter_mut().zip(mb) {
                    *d = v.wsub(reference);
                }
            }
        }
        W::pack(bw, &packed, &mut dst[at..]);
        at += 4 * bw as usize;
    }
}

/// Minimum of a non-empty slice (the FOR reference).
#[inline(always)]
fn min_of<W: Word>(vals: &[W]) -> W {
    vals.iter().fold(W::MAX, |a, &v| a.min(v))
}

#[inline(always)]
pub(crate) fn encoded_size<W: Word>(values: &[W]) -> usize {
    let words: usize = values
        .chunks(BLOCK)
        .map(|vals| block_words(vals, min_of(vals)))
        .sum();
    header::prefix_bytes(values.len(), &SHAPE) + 4 * words
}

#[inline(always)]
pub(crate) fn encode<W: Word>(values: &[W], out: &mut Vec<u8>) {
    let n = values.len();
    // Upper bound: every miniblock at full width. Reserving it once avoids regrowth.
    let bc = header::block_count(n, &SHAPE);
    out.reserve(
        header::prefix_bytes(n, &SHAPE) + 4 * bc * (W::REF_WORDS + 1) + n * W::BITS as usize / 8,
    );
    let w = Writer::begin(out, &SHAPE, n);
    for (k, vals) in values.chunks(BLOCK).enumerate() {
        w.mark(out, k);
        put_block(vals, min_of(vals), out);
    }
    w.mark(out, bc);
}

/// Reads and checks a FOR-layout block's reference and bit widths; returns the reference, the
/// widths and the word offset of miniblock 0. `blk` is the block's range
/// `[block_starts[k], block_starts[k+1])` (minus DFOR's next `first_value`), `off` its byte
/// offset in the payload.
#[inline(always)]
pub(crate) fn block_meta<W: Word>(
    blk: &[u8],
    k: usize,
    off: usize,
    what: &'static str,
) -> Result<(W, [u32; 4], usize)> {
    let head = W::REF_WORDS + 1;
    if blk.len() < 4 * head {
        return Err(Error::truncated(what, off, 4 * head, blk.len()));
    }
    let reference = W::read(blk, 0);
    let bw_word = read_u32(blk, 4 * W::REF_WORDS);
    let mut bws = [0u32; 4];
    let mut words = head;
    for (j, bw) in bws.iter_mut().enumerate() {
        *bw = (bw_word >> (8 * j)) & 0xff;
        if *bw > W::BITS {
            return Err(Error::BitWidthTooLarge {
                block: k as u64,
                miniblock: j as u32,
                found: *bw,
                max: W::BITS,
            });
        }
        words += *bw as usize;
    }
    if blk.len() < 4 * words {
        return Err(Error::truncated(what, off, 4 * words, blk.len()));
    }
    Ok((reference, bws, head))
}

/// Unpacks a checked FOR-layout block into `dst` (its real values, at most 128), adding
/// `reference`. Full miniblocks unpack straight into `dst`; a partial one goes through a
/// scratch miniblock so nothing past `dst` is written.
#[inline(always)]
pub(crate) fn unpack_block<W: Word>(
    blk: &[u8],
    head: usize,
    bws: [u32; 4],
    reference: W,
    dst: &mut [W],
) {
    let mut at = 4 * head;
    for (chunk, bw) in dst.chunks_mut(32).zip(bws) {
        let bytes = blk.get(at..).unwrap_or(&[]);
        at += 4 * bw as usize;
        match <&mut [W; 32]>::try_from(&mut *chunk) {
            Ok(full) => W::unpack_add(bw, bytes, reference, full),
            Err(_) => {
                let mut t = [W::ZERO; 32];
                W::unpack_add(bw, bytes, reference, &mut t);
                chunk.copy_from_slice(&t[..chunk.len()]);
            }
        }
    }
}

/// Byte range of block `k` and its payload offset.
#[inline(always)]
pub(crate) fn block_slice<'a>(lay: &Layout<'a>, k: usize) -> (&'a [u8], usize) {
    let (s, e) = lay.block(k);
    (&lay.data[s..e], lay.data_offset + s)
}

#[inline(always)]
pub(crate) fn decode<W: Word>(payload: &[u8], out: &mut [W]) -> Result<()> {
    let lay = header::parse(payload, &SHAPE, out.len())?;
    for (k, dst) in out.chunks_mut(BLOCK).enumerate() {
        let (blk, off) = block_slice(&lay, k);
        let (reference, bws, head) = block_meta::<W>(blk, k, off, "for block")?;
        unpack_block(blk, head, bws, reference, dst);
    }
    Ok(())
}

/// Reads `width` bits starting at bit `bit` of the bit string held by `words` (bit `j` is bit
/// `j % 32` of word `j / 32`), one bit at a time: the spec's definition, literally.
pub(crate) fn read_bits_reference(words: &[u8], bit: usize, width: u32) -> u64 {
    let mut v = 0u64;
    for b in 0..width as usize {
        let j = bit + b;
        let word = read_u32(words, 4 * (j / 32));
        v |= (((word >> (j % 32)) & 1) as u64) << b;
    }
    v
}

/// Reference decoder of one FOR-layout block (also DFOR's): reads like `for.md`.
pub(crate) fn decode_block_reference<W: Word>(
    blk: &[u8],
    k: usize,
    off: usize,
    what: &'static str,
    out: &mut [W],
) -> Result<()> {
    let ref_words = W::REF_WORDS;
    if blk.len() < 4 * (ref_words + 1) {
        return Err(Error::truncated(what, off, 4 * (ref_words + 1), blk.len()));
    }
    let reference = W::read(blk, 0);
    let bit_width_word = read_u32(blk, 4 * ref_words);
    let mut bit_width = [0u32; 4];
    for (j, bw) in bit_width.iter_mut().enumerate() {
        // Byte j (least significant first) of the bit-width word.
        *bw = (bit_width_word >> (8 * j)) & 0xff;
        if *bw > W::BITS {
            return Err(Error::BitWidthTooLarge {
                block: k as u64,
                miniblock: j as u32,
                found: *bw,
                max: W::BITS,
            });
        }
    }
    let block_words = ref_words + 1 + bit_width.iter().sum::<u32>() as usize;
    if block_words * 4 > blk.len() {
        return Err(Error::truncated(what, off, 4 * block_words, blk.len()));
    }
    for (i, o) in out.iter_mut().enumerate() {
        let j = i / 32;
        // Miniblock j starts after the reference, the bit-width word and miniblocks 0..j.
        let start = ref_words + 1 + bit_width[..j].iter().sum::<u32>() as usize;
        let packed = read_bits_reference(
            blk,
            32 * start + (i % 32) * bit_width[j] as usize,
            bit_width[j],
        );
        *o = reference.wadd(W::from_u64(packed));
    }
    Ok(())
}

pub(crate) fn decode_reference<W: Word>(payload: &[u8], out: &mut [W]) -> Result<()> {
    let lay = header::parse(payload, &SHAPE, out.len())?;
    let n = out.len();
    for k in 0..lay.block_count {
        let (blk, off) = block_slice(&lay, k);
        let first = BLOCK * k;
        let last = n.min(first + BLOCK);
        decode_block_reference(blk, k, off, "for block", &mut out[first..last])?;
    }
    Ok(())
}

/// GPU-FOR in the codec registry.
pub(crate) struct For;

/// The registry entry.
pub(crate) static CODEC: super::IntCodec<For> = super::IntCodec::new();

impl super::Kernels for For {
    const ID: CodecId = CodecId::For;
    /// In `auto`, the first candidate: it decodes fastest of the three, so DFOR and RFOR must
    /// beat its size by `AUTO_MARGIN`.
    const AUTO: AutoSlot = AutoSlot {
        rank: 0,
        rule: AutoRule::Smaller,
    };
    #[inline(always)]
    fn encode<W: Word>(values: &[W], out: &mut Vec<u8>) {
        encode(values, out)
    }
    #[inline(always)]
    fn encoded_size<W: Word>(values: &[W]) -> usize {
        encoded_size(values)
    }
    #[inline(always)]
    fn decode<W: Word>(payload: &[u8], out: &mut [W]) -> Result<()> {
        decode(payload, out)
    }
    fn decode_reference<W: Word>(payload: &[u8], out: &mut [W]) -> Result<()> {
        decode_reference(payload, out)
    }
}
