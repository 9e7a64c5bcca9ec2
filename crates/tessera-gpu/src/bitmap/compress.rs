//! Compression of plain bitmaps on the device: by heads in one launch (`bm_cmp_*`,
//! `kernels/bitmap/compress.cuh`), through the canonical writer (the cross-check), and the
//! paper's Algorithm 1 alone.

use cudarc::driver::CudaSlice;
use tessera_codecs::bitmap::{self, group_count, last_group_mask, Bitmap, Flavor};
use tessera_format::{Error, Result};

use super::writer::{run_writer, WriterRun};
use super::{
    download, grid, read_words, upload_plain, DeviceBitmap, DevicePlain, CMP_BLOCK, CMP_TILE,
    STRIDE_THREADS,
};
use crate::kernels::Module;
use crate::runtime::Gpu;

/// Most thread blocks of `bm_extend`; past them its threads stride over the groups.
const MAX_EXTEND_GRID: u32 = 1 << 16;

/// Compresses a plain bitmap on the device, canonically (`wah.md` §4).
pub fn compress_device(gpu: &Gpu, flavor: Flavor, plain: &DevicePlain) -> Result<DeviceBitmap> {
    compress_device_with_max_counter(gpu, flavor, plain, flavor.max_counter())
}

/// [`compress_device`] with fill runs split at `max_counter` groups: the GPU twin of
/// `Bitmap::compress_with_max_counter`, which makes the overflow path (the paper's
/// Algorithm 4) reachable with small bitmaps.
pub fn compress_device_with_max_counter(
    gpu: &Gpu,
    flavor: Flavor,
    plain: &DevicePlain,
    max_counter: u64,
) -> Result<DeviceBitmap> {
    queue_compress(gpu, flavor, plain, max_counter)?.finish(gpu)
}

/// A compression queued on the GPU's stream and not waited for: [`PendingBitmap::finish`]
/// reads its word count (the one host wait) and gives the [`DeviceBitmap`]. Queue several
/// before finishing the first to keep the GPU busy between them.
pub fn compress_device_queued(
    gpu: &Gpu,
    flavor: Flavor,
    plain: &DevicePlain,
) -> Result<PendingBitmap> {
    queue_compress(gpu, flavor, plain, flavor.max_counter())
}

/// A GPU compression whose words are being written on the stream; its word count is not on the
/// host yet. Dropping it without [`finish`](Self::finish) frees its buffers stream-ordered.
#[derive(Debug)]
pub struct PendingBitmap {
    flavor: Flavor,
    bit_len: u64,
    groups: u64,
    words: CudaSlice<u32>,
    tile_starts: Option<CudaSlice<u32>>,
    /// The look-back state and the index of the word total in it; `None` for an empty bitmap.
    state: Option<(CudaSlice<u32>, usize)>,
}

impl PendingBitmap {
    /// Waits for the compression and reads its word count (checked against the group count:
    /// every word covers at least one group).
    pub fn finish(self, gpu: &Gpu) -> Result<DeviceBitmap> {
        let len = match &self.state {
            None => 0,
            Some((state, at)) => read_words(gpu, state, *at, 1)?[0] as usize,
        };
        if len as u64 > self.groups {
            return Err(Error::Gpu(format!(
                "GPU compression counted {len} words for {} groups",
                self.groups
            )));
        }
        Ok(DeviceBitmap {
            flavor: self.flavor,
            bit_len: self.bit_len,
            words: self.words,
            len,
            tile_starts: self.tile_starts,
        })
    }
}

/// Compression by heads (`kernels/bitmap/compress.cuh`, "compression by heads"): one launch of
/// `bm_cmp_*`, one block per tile of [`CMP_TILE`] groups, the tiles' word offsets and the fill
/// runs that cross tiles found by a decoupled look-back. Queued, not waited for.
fn queue_compress(
    gpu: &Gpu,
    flavor: Flavor,
    plain: &DevicePlain,
    max_counter: u64,
) -> Result<PendingBitmap> {
    let groups = check_compress_args(flavor, plain, max_counter)?;
    if groups == 0 {
        return Ok(PendingBitmap {
            flavor,
            bit_len: plain.bit_len,
            groups,
            words: gpu.alloc::<u32>(1)?,
            tile_starts: None,
            state: None,
        });
    }
    let bits = gpu.ptr(&plain.words);
    let n_words = plain.word_count() as u64;
    let mask = last_group_mask(plain.bit_len);
    let max = max_counter as u32;
    // groups <= ceil(MAX_BITS / 31), so tiles < 2^16 and every count below fits u32.
    let tiles = groups.div_ceil(CMP_TILE);
    let t = tiles as usize;
    // The look-back state: a 16-byte status word per tile (zero: nothing published yet), then
    // the word total; one buffer, so one memset.
    let mut state = gpu.alloc::<u32>(4 * t + 1)?;
    gpu.fill_bytes(&mut state, 0)?;
    // Every word covers at least one group: at most `groups` words.
    let out = gpu.alloc::<u32>(groups as usize)?;
    // A compression tile is a decode tile (`BM_CMP_TILE == BM_DECODE_TILE`): tile t writes its
    // tile start, the last tile also the end entry.
    let tile_starts = gpu.alloc::<u32>(2 * (t + 1))?;
    let (ps, pout, pts) = (gpu.ptr(&state), gpu.ptr(&out), gpu.ptr(&tile_starts));
    let pc = ps + 16 * tiles;
    let name = match flavor {
        Flavor::Wah => "bm_cmp_wah",
        Flavor::Plwah => "bm_cmp_plwah",
    };
    let f = gpu.function(Module::Bitmap, name)?;
    let g = grid(groups, CMP_TILE)?;
    let nt = tiles as u32;
    let cap = groups;
    // SAFETY: matches bm_cmp_<f>(bits, n_words, groups, last_mask, max_counter, status,
    // counters, tiles, out, out_cap, tile_starts): `bits` holds >= n_words words (checked);
    // `state` holds 4 * tiles + 1 zeroed words: `status` (16-byte aligned, as every allocation
    // is) the tiles' status words, `counters` the total; one block per tile (g == tiles), each
    // writing only its own status word and tile_starts[2t], [2t + 1] (the last tile also
    // [2 tiles], [2 tiles + 1]: 2 (tiles + 1) entries); out[< out_cap = groups] only. The
    // buffers live in the PendingBitmap, so past the kernel (drops are stream-ordered).
    unsafe {
        gpu.launch(
            &f,
            g,
            CMP_BLOCK,
            &[
                &bits, &n_words, &groups, &mask, &max, &ps, &pc, &nt, &pout, &cap, &pts,
            ],
        )?;
    }
    Ok(PendingBitmap {
        flavor,
        bit_len: plain.bit_len,
        groups,
        words: out,
        tile_starts: Some(tile_starts),
        state: Some((state, 4 * t)),
    })
}

/// The arguments' checks shared by both compressors; returns the group count.
fn check_compress_args(flavor: Flavor, plain: &DevicePlain, max_counter: u64) -> Result<u64> {
    if max_counter == 0 || max_counter > flavor.max_counter() {
        return Err(Error::InvalidArgument(format!(
            "max_counter {max_counter} outside 1..={}",
            flavor.max_counter()
        )));
    }
    if plain.bit_len > bitmap::MAX_BITS || plain.words.len() < plain.word_count() {
        return Err(Error::InvalidArgument(
            "plain bitmap larger than its buffer or MAX_BITS".into(),
        ));
    }
    Ok(group_count(plain.bit_len))
}

/// Compression through the general canonical writer (`bm_compress_*`: reduce + partials +
/// apply over the groups, `wah.cuh`), the path [`compress_device_with_max_counter`] replaced;
/// kept so tests can check the two GPU compressors against each other and the CPU.
pub fn compress_device_writer(
    gpu: &Gpu,
    flavor: Flavor,
    plain: &DevicePlain,
    max_counter: u64,
) -> Result<DeviceBitmap> {
    let groups = check_compress_args(flavor, plain, max_counter)?;
    let bits = gpu.ptr(&plain.words);
    let n_words = plain.word_count() as u64;
    let mask = last_group_mask(plain.bit_len);
    let (reduce, apply) = match flavor {
        Flavor::Wah => ("bm_compress_reduce_wah", "bm_compress_apply_wah"),
        Flavor::Plwah => ("bm_compress_reduce_plwah", "bm_compress_apply_plwah"),
    };
    run_writer(
        gpu,
        WriterRun {
            flavor,
            bit_len: plain.bit_len,
            elements: groups,
            reduce,
            apply,
            src: vec![&bits, &n_words, &groups, &mask],
            max_counter: max_counter as u32,
        },
    )
}

/// Compresses `bit_len` packed bits (`Bitmap::compress`'s contract) on the GPU.
pub fn compress(gpu: &Gpu, flavor: Flavor, bits: &[u8], bit_len: u64) -> Result<Bitmap> {
    let plain = upload_plain(gpu, bits, bit_len)?;
    download(gpu, &compress_device(gpu, flavor, &plain)?)
}

/// [`compress`] with an artificial maximum counter (`Bitmap::compress_with_max_counter`).
pub fn compress_with_max_counter(
    gpu: &Gpu,
    flavor: Flavor,
    bits: &[u8],
    bit_len: u64,
    max_counter: u64,
) -> Result<Bitmap> {
    if max_counter == 0 || max_counter > flavor.max_counter() {
        return Bitmap::compress_with_max_counter(flavor, bits, bit_len, max_counter);
    }
    let plain = upload_plain(gpu, bits, bit_len)?;
    download(
        gpu,
        &compress_device_with_max_counter(gpu, flavor, &plain, max_counter)?,
    )
}

/// The paper's Algorithm 1 alone: one word per group (31 bits and a 0), the extended bitmap.
pub fn extend_device(gpu: &Gpu, plain: &DevicePlain) -> Result<CudaSlice<u32>> {
    let groups = group_count(plain.bit_len);
    let out = gpu.alloc::<u32>(groups as usize)?;
    if groups > 0 {
        let f = gpu.function(Module::Bitmap, "bm_extend")?;
        let (bits, po) = (gpu.ptr(&plain.words), gpu.ptr(&out));
        let n_words = plain.word_count() as u64;
        let mask = last_group_mask(plain.bit_len);
        // SAFETY: matches bm_extend(bits, n_words, groups, last_mask, out); reads < n_words words
        // of `plain`, writes `groups` words of `out`.
        unsafe {
            gpu.launch(
                &f,
                grid(groups, u64::from(STRIDE_THREADS))?.min(MAX_EXTEND_GRID),
                STRIDE_THREADS,
                &[&bits, &n_words, &groups, &mask, &po],
            )?;
        }
    }
    Ok(out)
}
