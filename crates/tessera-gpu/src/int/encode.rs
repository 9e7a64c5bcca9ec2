//! GPU encoders for GPU-FOR, GPU-DFOR and GPU-RFOR, lanes 32 and 64, byte-identical to the CPU
//! encoders (`tessera_codecs::int::encode`).
//!
//! A column of lane words is cut into chunks of `chunk_values` values (a multiple of 512, so
//! every chunk starts on a block and on a DFOR tile) and encoded in five launches (and one
//! 4-byte memset):
//!
//! 1. `<codec>_encode_sizes_<lane>`: one warp per block plans the block (reference, bit widths;
//!    RFOR: runs) and writes its size in words;
//! 2. the device-wide scan (`primitives::scan::offsets_u32`) of the sizes gives each block's
//!    word offset in the column, `offsets[blocks]` being the total;
//! 3. `<codec>_encode_pack_<lane>`: one warp per block plans again and writes its words, its
//!    block_starts entry and, for a chunk's first and last blocks, the header and the final
//!    block_starts entry.
//!
//! Chunk c's payload starts at word 5c + first_block(c) + offsets[first_block(c)] of the output
//! (4 header words and nb + 1 block_starts words per earlier chunk), so the chunks come out
//! back to back with no second pass.

use cudarc::driver::{CudaSlice, DeviceRepr};
use tessera_codecs::int::LaneWord;
use tessera_format::{CodecId, Error, Lane, Result, MAX_CHUNK_VALUES};

use super::decode::header_constants;
use super::layout::{HEADER_WORDS, THREADS, TILE_VALUES};
use crate::kernels::Module;
use crate::primitives::scan;
use crate::runtime::{cuda, Gpu};

/// Most thread blocks of the plan and pack launches; past it each warp strides over further
/// codec blocks. 2^20 thread blocks of 4 warps cover 4 Mi codec blocks a round, far more than
/// the SMs run at once, so the cap only bounds the grid.
const MAX_ENCODE_GRID: usize = 1 << 20;

/// A column encoded on the device: its chunk payloads back to back.
#[derive(Debug)]
pub struct DeviceEncoded {
    /// The payload words of every chunk, in order.
    pub words: CudaSlice<u32>,
    /// Words used in `words`.
    pub total_words: usize,
    /// Values per chunk (the last may hold fewer).
    pub chunk_values: usize,
    /// Values encoded.
    pub values: usize,
    pub(crate) codec: CodecId,
}

/// Device scratch an encode needs; reused across calls of the same size.
#[derive(Debug)]
pub struct EncodeScratch {
    sizes: CudaSlice<u32>,
    offsets: CudaSlice<u32>,
    partials: CudaSlice<u32>,
    blocks: usize,
}

fn block_values(codec: CodecId) -> Result<usize> {
    header_constants(codec)
        .map(|(b, _, _)| b as usize)
        .ok_or_else(|| Error::InvalidArgument(format!("codec {} has no GPU encoder", codec.name())))
}

fn kernels(codec: CodecId, lane: Lane) -> Result<(Module, &'static str, &'static str)> {
    Ok(match (codec, lane) {
        (CodecId::For, Lane::L32) => (Module::For, "for_encode_sizes_u32", "for_encode_pack_u32"),
        (CodecId::For, Lane::L64) => (Module::For, "for_encode_sizes_u64", "for_encode_pack_u64"),
        (CodecId::Dfor, Lane::L32) => (
            Module::Dfor,
            "dfor_encode_sizes_u32",
            "dfor_encode_pack_u32",
        ),
        (CodecId::Dfor, Lane::L64) => (
            Module::Dfor,
            "dfor_encode_sizes_u64",
            "dfor_encode_pack_u64",
        ),
        (CodecId::Rfor, Lane::L32) => (
            Module::Rfor,
            "rfor_encode_sizes_u32",
            "rfor_encode_pack_u32",
        ),
        (CodecId::Rfor, Lane::L64) => (
            Module::Rfor,
            "rfor_encode_sizes_u64",
            "rfor_encode_pack_u64",
        ),
        (c, _) => {
            return Err(Error::InvalidArgument(format!(
                "codec {} has no GPU encoder",
                c.name()
            )))
        }
    })
}

/// Most words one block of `codec` can take (the output bound).
fn max_block_words(codec: CodecId, lane: Lane) -> usize {
    let rw = lane.ref_words();
    let bits = lane.bits() as usize;
    match codec {
        CodecId::Rfor => rw + 1 + 8 + 16 * bits + 16 * 10,
        CodecId::Dfor => 2 * rw + 1 + 4 * bits,
        _ => rw + 1 + 4 * bits,
    }
}

impl Gpu {
    /// Scratch for encoding `values` values with `codec`.
    pub fn encode_scratch(&self, codec: CodecId, values: usize) -> Result<EncodeScratch> {
        let blocks = values.div_ceil(block_values(codec)?);
        Ok(EncodeScratch {
            sizes: self.alloc(blocks)?,
            offsets: self.alloc(blocks + 1)?,
            partials: self.alloc(scan::partials_len(blocks as u64))?,
            blocks,
        })
    }

    /// Encodes `values` (lane words on the device) into chunks of `chunk_values` values.
    /// Queues the work on the main stream and waits for the total size only at the end.
    pub fn encode_device<W: LaneWord + DeviceRepr>(
        &self,
        codec: CodecId,
        values: &CudaSlice<W>,
        n: usize,
        chunk_values: usize,
        scratch: &mut EncodeScratch,
        out: Option<CudaSlice<u32>>,
    ) -> Result<DeviceEncoded> {
        let bv = block_values(codec)?;
        if chunk_values == 0
            || chunk_values % TILE_VALUES != 0
            || chunk_values > MAX_CHUNK_VALUES as usize
        {
            return Err(Error::InvalidArgument(format!(
                "GPU encoders need chunk_values a multiple of {TILE_VALUES} and at most {MAX_CHUNK_VALUES}, got {chunk_values}"
            )));
        }
        if n > values.len() {
            return Err(Error::InvalidArgument(
                "more values than the device buffer holds".into(),
            ));
        }
        let lane = W::LANE;
        let blocks = n.div_ceil(bv);
        let chunks = n.div_ceil(chunk_values).max(1);
        let bound = chunks * (HEADER_WORDS + 1) + blocks * (1 + max_block_words(codec, lane));
        if blocks as u64 * max_block_words(codec, lane) as u64 >= u32::MAX as u64 {
            return Err(Error::InvalidArgument(
                "column too large for one GPU encode (2^32 words)".into(),
            ));
        }
        let mut words = match out {
            Some(buf) if buf.len() >= bound => buf,
            _ => self.alloc::<u32>(bound)?,
        };
        if n == 0 {
            let (block_size, miniblocks, tile_blocks) =
                header_constants(codec).unwrap_or((0, 0, 0));
            let empty = [block_size, miniblocks, 0, tile_blocks, 0];
            let mut view = words.slice_mut(..empty.len());
            self.stream
                .memcpy_htod(&empty, &mut view)
                .map_err(cuda("copying to the device"))?;
            self.synchronize()?;
            return Ok(DeviceEncoded {
                words,
                total_words: empty.len(),
                chunk_values,
                values: 0,
                codec,
            });
        }
        if scratch.blocks < blocks {
            *scratch = self.encode_scratch(codec, n)?;
        }
        let (module, sizes_k, pack_k) = kernels(codec, lane)?;
        let f_sizes = self.function(module, sizes_k)?;
        let f_pack = self.function(module, pack_k)?;
        let (vals, sizes, offsets, partials, out_ptr) = (
            self.ptr(values),
            self.ptr(&scratch.sizes),
            self.ptr(&scratch.offsets),
            self.ptr(&scratch.partials),
            self.ptr(&words),
        );
        let n64 = n as u64;
        let cv = chunk_values as u32;
        let warps_per_block = THREADS as usize / 32;
        let grid = blocks.div_ceil(warps_per_block).min(MAX_ENCODE_GRID) as u32;
        // SAFETY: arguments match the kernels' parameter lists in int/for.cu, dfor.cu, rfor.cu;
        // `values` holds n lane words; `sizes` holds `blocks` words; `words` holds the
        // worst-case output (`bound`, computed from the largest legal block). The buffers
        // outlive the synchronization below.
        unsafe { self.launch(&f_sizes, grid, THREADS, &[&vals, &n64, &sizes])? };
        // `offsets` holds blocks + 1 words, `partials` scan::partials_len(blocks) (encode_scratch).
        scan::offsets_u32(self, sizes, blocks as u64, offsets, partials)?;
        // SAFETY: as above; `offsets` holds blocks + 1 words, written by the scan before.
        unsafe {
            self.launch(
                &f_pack,
                grid,
                THREADS,
                &[&vals, &n64, &cv, &offsets, &out_ptr],
            )?;
        }
        let mut total = [0u32];
        let last = scratch.offsets.slice(blocks..blocks + 1);
        self.stream
            .memcpy_dtoh(&last, &mut total)
            .map_err(cuda("copying from the device"))?;
        self.synchronize()?;
        let total_words = chunks * (HEADER_WORDS + 1) + blocks + total[0] as usize;
        Ok(DeviceEncoded {
            words,
            total_words,
            chunk_values,
            values: n,
            codec,
        })
    }

    /// Encodes `values` on the GPU and returns one payload per chunk of `chunk_values` values
    /// (an empty input gives one empty chunk), byte for byte what the CPU encoder writes.
    pub fn encode<W: LaneWord + DeviceRepr>(
        &self,
        codec: CodecId,
        values: &[W],
        chunk_values: usize,
    ) -> Result<Vec<Vec<u8>>> {
        let d_values = self.upload(values)?;
        let mut scratch = self.encode_scratch(codec, values.len())?;
        let enc = self.encode_device(
            codec,
            &d_values,
            values.len(),
            chunk_values,
            &mut scratch,
            None,
        )?;
        self.download_encoded(&enc)
    }

    /// Splits a device-encoded column into its chunk payloads on the host.
    pub fn download_encoded(&self, enc: &DeviceEncoded) -> Result<Vec<Vec<u8>>> {
        let mut words = vec![0u32; enc.total_words];
        self.download(&enc.words, &mut words)?;
        let bv = block_values(enc.codec)?;
        let chunks = enc.values.div_ceil(enc.chunk_values).max(1);
        let mut out = Vec::with_capacity(chunks);
        let mut pos = 0usize;
        for c in 0..chunks {
            let n = enc
                .values
                .saturating_sub(c * enc.chunk_values)
                .min(enc.chunk_values);
            let nb = n.div_ceil(bv);
            let bs_last = HEADER_WORDS + nb;
            let len = words
                .get(pos + bs_last)
                .map(|&data| bs_last + 1 + data as usize)
                .filter(|&len| pos + len <= words.len())
                .ok_or_else(|| Error::Gpu("GPU encoder output is inconsistent".into()))?;
            out.push(
                words[pos..pos + len]
                    .iter()
                    .flat_map(|w| w.to_le_bytes())
                    .collect(),
            );
            pos += len;
        }
        if pos != enc.total_words {
            return Err(Error::Gpu(format!(
                "GPU encoder wrote {} words, chunks hold {pos}",
                enc.total_words
            )));
        }
        Ok(out)
    }
}
