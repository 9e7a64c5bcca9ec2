//! GPU-DFOR (`docs/format/dfor.md`): deltas restarted every **tile** of 4 blocks (512 values),
//! FOR-packed per 128-value block with the block's **signed** minimum delta as reference.
//!
//! Data area: per tile, `first_value` (REF_WORDS words) then the tile's blocks in FOR layout.
//! `block_starts[k]` points at block `k`'s reference, so a tile's `first_value` sits in the
//! `REF_WORDS` words just before `block_starts[4t]`, i.e. at the end of the previous block's
//! `[block_starts[k-1], block_starts[k])` range; decoders take those words off that block's
//! range before checking it (`Error::Truncated` if the block does not fit what is left).
//! Invariants the encoder keeps: `delta[0] = 0` at every tile start, the reference is the
//! signed minimum over the block's real deltas, padding packs 0.

use super::for_::{self, block_meta, put_block, BLOCK};
use super::header::{self, Layout, Shape, Writer};
use super::word::Word;
use crate::codec::{AutoRule, AutoSlot, AUTO_MARGIN};
use tessera_format::{CodecId, Result};

/// Blocks per delta tile (`D`).
pub(crate) const TILE_BLOCKS: usize = 4;
const TILE: usize = TILE_BLOCKS * BLOCK;

fn shape<W: Word>() -> Shape {
    Shape {
        block_size: 128,
        miniblock_count: 4,
        tile_blocks: TILE_BLOCKS as u32,
        lead_words: W::REF_WORDS,
    }
}

/// Deltas of block `b` of `tile` into `d` (lane arithmetic; `delta[0] = 0` at the tile start),
/// and their signed minimum. Returns the number of real deltas.
#[inline(always)]
fn block_deltas<W: Word>(tile: &[W], b: usize, d: &mut [W; BLOCK]) -> (usize, W) {
    let start = b * BLOCK;
    let vals = &tile[start..tile.len().min(start + BLOCK)];
    let prev = if b == 0 { vals[0] } else { tile[start - 1] };
    d[0] = vals[0].wsub(prev);
    // Written over pairs of the input (no carried `prev`) so it vectorises.
    match <&[W; BLOCK]>::try_from(vals) {
        Ok(full) => {
            for i in 1..BLOCK {
                d[i] = full[i].wsub(full[i - 1]);
            }
        }
        Err(_) => {
            for (o, pair) in d[1..].iter_mut().zip(vals.windows(2)) {
                *o = pair[1].wsub(pair[0]);
            }
        }
    }
    let m = vals.len();
    // Signed minimum as an unsigned minimum of sign-flipped keys.
    let min_key = d[..m].iter().fold(W::MAX, |a, &x| a.min(x.xor(W::SIGN)));
    (m, min_key.xor(W::SIGN))
}

#[inline(always)]
pub(crate) fn encoded_size<W: Word>(values: &[W]) -> usize {
    let mut words = 0usize;
    let mut d = [W::ZERO; BLOCK];
    for tile in values.chunks(TILE) {
        words += W::REF_WORDS;
        for b in 0..tile.len().div_ceil(BLOCK) {
            let (m, reference) = block_deltas(tile, b, &mut d);
            words += for_::block_words(&d[..m], reference);
        }
    }
    header::prefix_bytes(values.len(), &shape::<W>()) + 4 * words
}

#[inline(always)]
pub(crate) fn encode<W: Word>(values: &[W], out: &mut Vec<u8>) {
    let n = values.len();
    let sh = shape::<W>();
    let bc = header::block_count(n, &sh);
    out.reserve(
        header::prefix_bytes(n, &sh) + 4 * bc * (2 * W::REF_WORDS + 1) + n * W::BITS as usize / 8,
    );
    let w = Writer::begin(out, &sh, n);
    let mut d = [W::ZERO; BLOCK];
    let mut first_value = [0u8; 8];
    for (t, tile) in values.chunks(TILE).enumerate() {
        tile[0].write_bytes(&mut first_value);
        out.extend_from_slice(&first_value[..4 * W::REF_WORDS]);
        for b in 0..tile.len().div_ceil(BLOCK) {
            w.mark(out, TILE_BLOCKS * t + b);
            let (m, reference) = block_deltas(tile, b, &mut d);
            put_block(&d[..m], reference, out);
        }
    }
    w.mark(out, bc);
}

/// Block `k`'s byte range minus the next tile's `first_value` at its end, its payload offset,
/// and (for a tile's first block) the tile's `first_value`.
#[inline(always)]
fn block_range<'a, W: Word>(lay: &Layout<'a>, k: usize) -> (&'a [u8], usize, Option<W>) {
    let (s, e) = lay.block(k);
    let next_is_tile = k + 1 < lay.block_count && (k + 1) % TILE_BLOCKS == 0;
    let lead = if next_is_tile { 4 * W::REF_WORDS } else { 0 };
    let end = s.max(e.saturating_sub(lead));
    // `s >= 4 * REF_WORDS` for a tile's first block: block 0 by `header::parse`, later ones
    // because the previous block's range kept those words back and was checked to fit.
    let first_value =
        (k % TILE_BLOCKS == 0).then(|| W::read(lay.data, s.saturating_sub(4 * W::REF_WORDS)));
    (&lay.data[s..end], lay.data_offset + s, first_value)
}

#[inline(always)]
pub(crate) fn decode<W: Word>(payload: &[u8], out: &mut [W]) -> Result<()> {
    let lay = header::parse(payload, &shape::<W>(), out.len())?;
    let mut acc = W::ZERO;
    for (k, dst) in out.chunks_mut(BLOCK).enumerate() {
        let (blk, off, first_value) = block_range::<W>(&lay, k);
        let (reference, bws, head) = block_meta::<W>(blk, k, off, "dfor block")?;
        if let Some(f) = first_value {
            acc = f;
        }
        // Unpack the deltas and run the inclusive prefix sum in one pass, continuing from the
        // previous block of the tile.
        let mut at = 4 * head;
        for (chunk, bw) in dst.chunks_mut(32).zip(bws) {
            let bytes = blk.get(at..).unwrap_or(&[]);
            at += 4 * bw as usize;
            match <&mut [W; 32]>::try_from(&mut *chunk) {
                Ok(full) => acc = W::unpack_scan(bw, bytes, reference, acc, full),
                Err(_) => {
                    let mut t = [W::ZERO; 32];
                    acc = W::unpack_scan(bw, bytes, reference, acc, &mut t);
                    chunk.copy_from_slice(&t[..chunk.len()]);
                }
            }
        }
    }
    Ok(())
}

pub(crate) fn decode_reference<W: Word>(payload: &[u8], out: &mut [W]) -> Result<()> {
    let lay = header::parse(payload, &shape::<W>(), out.len())?;
    let n = out.len();
    for t in 0..lay.block_count.div_ceil(TILE_BLOCKS) {
        let tile_first = TILE * t;
        let tile_last = n.min(tile_first + TILE);
        let mut first_value = W::ZERO;
        // First the deltas of every block of the tile (each decoded exactly like a FOR block)...
        for k in TILE_BLOCKS * t..lay.block_count.min(TILE_BLOCKS * (t + 1)) {
            let (blk, off, fv) = block_range::<W>(&lay, k);
            if let Some(f) = fv {
                first_value = f;
            }
            let first = BLOCK * k;
            let last = n.min(first + BLOCK);
            for_::decode_block_reference(blk, k, off, "dfor block", &mut out[first..last])?;
        }
        // ...then x[i] = first_value + delta[0] + ... + delta[i].
        let mut x = first_value;
        for v in &mut out[tile_first..tile_last] {
            x = x.wadd(*v);
            *v = x;
        }
    }
    Ok(())
}

/// GPU-DFOR in the codec registry.
pub(crate) struct Dfor;

/// The registry entry.
pub(crate) static CODEC: super::IntCodec<Dfor> = super::IntCodec::new();

impl super::Kernels for Dfor {
    const ID: CodecId = CodecId::Dfor;
    /// In `auto`, chosen over FOR only when at least `AUTO_MARGIN` smaller: it decodes
    /// slower than FOR.
    const AUTO: AutoSlot = AutoSlot {
        rank: 1,
        rule: AutoRule::SmallerThanFirstBy {
            num: AUTO_MARGIN.0,
            den: AUTO_MARGIN.1,
        },
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
