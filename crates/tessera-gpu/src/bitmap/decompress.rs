//! Decompression (Algorithm 5, output-partitioned; `kernels/bitmap/decompress.cuh`) and the
//! tile starts it reads.

use cudarc::driver::CudaSlice;
use tessera_codecs::bitmap::{self, group_count, Bitmap, Flavor};
use tessera_format::{Error, Result};

use super::{
    download_plain, grid, read_words, upload, upload_payload, DeviceBitmap, DevicePlain,
    DECODE_THREADS, DECODE_TILE, DEC_CHUNK, DEC_SUM_CHUNKS, DEC_SUM_THREADS, STRIDE_THREADS,
};
use crate::kernels::Module;
use crate::primitives::scan;
use crate::runtime::Gpu;

/// Decompresses into `out` (at least `ceil(bit_len / 32)` words). Queued, not waited for.
pub fn decompress_device_into(gpu: &Gpu, d: &DeviceBitmap, out: &mut CudaSlice<u32>) -> Result<()> {
    decompress_queue(gpu, d, out, 0)
}

/// The decompression (`kernels/bitmap/decompress.cuh`, "decompression"): the tile starts (the
/// bitmap's own, or computed by [`tile_starts_queue`]), then the tiles. `status` is 0 or the address of one u32
/// that the tiles OR 1 into when a tile's words do not cover its groups (an invalid
/// `DeviceBitmap`). Queued, not waited for.
fn decompress_queue(
    gpu: &Gpu,
    d: &DeviceBitmap,
    out: &mut CudaSlice<u32>,
    status: u64,
) -> Result<()> {
    let Some(m) = decode_args(d)? else {
        return Ok(());
    };
    let groups = group_count(d.bit_len);
    let out_words = d.bit_len.div_ceil(32);
    if (out.len() as u64) < out_words {
        return Err(Error::InvalidArgument(
            "decompression output buffer too small".into(),
        ));
    }
    let tiles = groups.div_ceil(DECODE_TILE);
    let computed;
    let starts = match &d.tile_starts {
        Some(ts) if ts.len() as u64 >= 2 * (tiles + 1) => ts,
        Some(_) => {
            return Err(Error::InvalidArgument(
                "tile_starts shorter than 2 * (tiles + 1) entries".into(),
            ))
        }
        None => {
            computed = tile_starts_queue(gpu, d)?;
            &computed
        }
    };
    let expand = match d.flavor {
        Flavor::Wah => "bm_dec_expand_wah",
        Flavor::Plwah => "bm_dec_expand_plwah",
    };
    let f_e = gpu.function(Module::Bitmap, expand)?;
    let (pw, pts, po) = (gpu.ptr(&d.words), gpu.ptr(starts), gpu.ptr(out));
    // SAFETY: matches bm_dec_expand_<f>(words, m, tile_starts, groups, out, out_words, status):
    // `words` holds >= m words (decode_args), tile_starts 2 * (tiles + 1) entries (one block
    // per tile b reads entries 2b .. 2b + 2), out >= out_words words (checked above), status is
    // 0 or one u32; reads are clamped to those lengths. `computed` is dropped after the launch:
    // cudarc frees device memory stream-ordered, so only after the kernel ran.
    unsafe {
        gpu.launch(
            &f_e,
            grid(groups, DECODE_TILE)?,
            DECODE_THREADS,
            &[&pw, &m, &pts, &groups, &po, &out_words, &status],
        )?;
    }
    Ok(())
}

/// The checks of a bitmap about to be decoded; `None` when it has no groups, else its word
/// count `m` (> 0, < 2^32).
pub(super) fn decode_args(d: &DeviceBitmap) -> Result<Option<u32>> {
    if d.bit_len > bitmap::MAX_BITS || d.len > d.words.len() {
        return Err(Error::InvalidArgument(
            "bitmap longer than MAX_BITS or than its word buffer".into(),
        ));
    }
    if group_count(d.bit_len) == 0 {
        return Ok(None);
    }
    if d.len == 0 {
        return Err(Error::InvalidArgument(
            "a compressed bitmap of no words cannot hold any bits".into(),
        ));
    }
    u32::try_from(d.len)
        .map(Some)
        .map_err(|_| Error::InvalidArgument("too many words for one GPU bitmap".into()))
}

/// The tile starts of any valid stream (`kernels/bitmap/decompress.cuh`, "decompression", the
/// three passes: chunk sums, their scan, one warp per tile), in a new buffer of `2 * (tiles + 1)` u32s. Queued,
/// not waited for.
pub(super) fn tile_starts_queue(gpu: &Gpu, d: &DeviceBitmap) -> Result<CudaSlice<u32>> {
    let groups = group_count(d.bit_len);
    let tiles = groups.div_ceil(DECODE_TILE);
    let mut ts = gpu.alloc::<u32>(2 * (tiles as usize + 1))?;
    let Some(m) = decode_args(d)? else {
        gpu.fill_bytes(&mut ts, 0)?;
        return Ok(ts);
    };
    let n_chunks = u64::from(m).div_ceil(DEC_CHUNK);
    let n_sums = n_chunks.div_ceil(DEC_SUM_CHUNKS);
    let chunk_incl = gpu.alloc::<u32>(n_chunks as usize)?;
    let partials = gpu.alloc::<u32>(n_sums as usize + 1)?;
    let (sums, starts) = match d.flavor {
        Flavor::Wah => ("bm_dec_sums_wah", "bm_dec_tile_starts_wah"),
        Flavor::Plwah => ("bm_dec_sums_plwah", "bm_dec_tile_starts_plwah"),
    };
    let f_s = gpu.function(Module::Bitmap, sums)?;
    let f_t = gpu.function(Module::Bitmap, starts)?;
    let (pw, pc, pp, pt) = (
        gpu.ptr(&d.words),
        gpu.ptr(&chunk_incl),
        gpu.ptr(&partials),
        gpu.ptr(&ts),
    );
    // All < 2^32: m is, n_chunks <= m, tiles <= MAX_BITS / 31 / DECODE_TILE.
    let (nc, ns, nt) = (n_chunks as u32, n_sums as u32, tiles as u32);
    // SAFETY: matches bm_dec_sums_<f>(words, m, chunk_incl, partials): `words` holds >= m words
    // (decode_args), chunk_incl n_chunks entries, partials n_sums + 1 (the grid is n_sums
    // blocks, block p writing partials[p] and chunk_incl of its chunks < n_chunks);
    // ds_partials_u32(partials, n_sums); bm_dec_tile_starts_<f>(words, m, chunk_incl, partials,
    // n_chunks, n_sums, tiles, groups, tile_starts): one warp per tile b <= tiles (8 a block of
    // 256), writing entries 2b and 2b + 1 of the 2 (tiles + 1). The temporaries are dropped after
    // the launches: cudarc frees device memory stream-ordered.
    unsafe {
        gpu.launch(
            &f_s,
            grid(n_sums, 1)?,
            DEC_SUM_THREADS,
            &[&pw, &m, &pc, &pp],
        )?;
        scan::partials(gpu, scan::Item::U32, pp, ns)?;
        gpu.launch(
            &f_t,
            grid(tiles + 1, u64::from(STRIDE_THREADS / 32))?,
            STRIDE_THREADS,
            &[&pw, &m, &pc, &pp, &nc, &ns, &nt, &groups, &pt],
        )?;
    }
    drop((chunk_incl, partials));
    Ok(ts)
}

/// [`DeviceBitmap::tile_starts`] as decompression computes them for a bitmap without them (the
/// tests compare them with the compressor's). `2 * (tiles + 1)` u32s; waits.
pub fn compute_tile_starts(gpu: &Gpu, d: &DeviceBitmap) -> Result<Vec<u32>> {
    let ts = tile_starts_queue(gpu, d)?;
    read_words(gpu, &ts, 0, ts.len())
}

/// Decompresses on the device into a new plain bitmap.
pub fn decompress_device(gpu: &Gpu, d: &DeviceBitmap) -> Result<DevicePlain> {
    let mut words = gpu.alloc::<u32>(d.bit_len.div_ceil(32) as usize)?;
    decompress_device_into(gpu, d, &mut words)?;
    Ok(DevicePlain {
        words,
        bit_len: d.bit_len,
    })
}

/// [`decompress_device`], then waits and says whether a decode tile found its words (from its
/// tile start to the next) not covering its groups (never for a valid [`DeviceBitmap`] with
/// right or no tile starts; the hook that lets tests feed the kernels invalid streams).
pub fn decompress_device_checked(gpu: &Gpu, d: &DeviceBitmap) -> Result<(DevicePlain, bool)> {
    let mut words = gpu.alloc::<u32>(d.bit_len.div_ceil(32) as usize)?;
    let status = gpu.alloc::<u32>(1)?;
    let ps = gpu.ptr(&status);
    gpu.fill_bytes_raw(ps, 0, 4)?;
    decompress_queue(gpu, d, &mut words, ps)?;
    let flagged = read_words(gpu, &status, 0, 1)?[0] != 0;
    Ok((
        DevicePlain {
            words,
            bit_len: d.bit_len,
        },
        flagged,
    ))
}

/// Validates a payload and decompresses it on the GPU: `ceil(bit_len / 8)` bytes, or the CPU
/// decoder's error.
pub fn decompress(gpu: &Gpu, flavor: Flavor, payload: &[u8]) -> Result<Vec<u8>> {
    let d = upload_payload(gpu, flavor, payload)?;
    let (plain, flagged) = decompress_device_checked(gpu, &d)?;
    if flagged {
        return Err(Error::Gpu(
            "GPU decompression found a validated stream inconsistent".into(),
        ));
    }
    download_plain(gpu, &plain)
}

/// Decompresses a (valid) CPU bitmap on the GPU.
pub fn decompress_bitmap(gpu: &Gpu, b: &Bitmap) -> Result<Vec<u8>> {
    download_plain(gpu, &decompress_device(gpu, &upload(gpu, b)?)?)
}
