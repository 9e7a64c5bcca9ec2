//! The canonical writer (`kernels/bitmap/writer.cuh`, module docs of `wah.cuh`) in its
//! three-launch form: reduce, partials, apply over the elements of a source; then, only if some
//! run needs full fill_words, the overflow path. The GPU paths that emit words through it: the
//! conversions, the staged binary operations, and the writer-based compression (a cross-check).

use tessera_codecs::bitmap::{group_count, Flavor};
use tessera_format::{Error, Result};

use super::{
    grid, read_u64, read_words, DeviceBitmap, STRIDE_THREADS, WRITER_THREADS, WRITER_TILE,
};
use crate::kernels::Module;
use crate::primitives::scan;
use crate::runtime::{Gpu, KernelArg};

/// The arguments every writer launch gets after its source's.
pub(super) struct WriterRun<'a> {
    pub flavor: Flavor,
    pub bit_len: u64,
    pub elements: u64,
    pub reduce: &'static str,
    pub apply: &'static str,
    pub src: Vec<&'a dyn KernelArg>,
    pub max_counter: u32,
}

/// Results of at most this many blocks take the overflow path's one-launch form
/// (`bm_overflow_fills`: one thread block loops over them, 4096 a step); larger ones the scan of
/// `ex` and a scatter. Up to this size one thread block's loop costs less than the scan's three
/// launches and a read.
const OVERFLOW_ONE_BLOCK: usize = 1 << 16;
/// Most thread blocks of `bm_scatter_fills`; past them its threads stride over the blocks.
const MAX_SCATTER_GRID: u32 = 65_535;

/// Runs the canonical writer (module docs of `wah.cuh`): reduce, partials, apply; then, only if
/// some run needs full fill_words, the overflow path. Waits for the word count.
pub(super) fn run_writer(gpu: &Gpu, w: WriterRun<'_>) -> Result<DeviceBitmap> {
    if w.elements == 0 {
        return Ok(DeviceBitmap {
            flavor: w.flavor,
            bit_len: w.bit_len,
            words: gpu.alloc::<u32>(1)?,
            len: 0,
            tile_starts: None,
        });
    }
    let tiles = w.elements.div_ceil(WRITER_TILE);
    let g = grid(w.elements, WRITER_TILE)?;
    // The partials (tiles + 1 BmAggs of 3 words) and, right after them, the overflow flag: one
    // read brings back the total and the flag (each read is a copy and a wait, a large share of
    // the time of an operation on small bitmaps).
    let flag_at = 3 * (tiles as usize + 1);
    let partials = gpu.alloc::<u32>(flag_at + 1)?;
    let out = gpu.alloc::<u32>(w.elements as usize)?;
    let (p, o) = (gpu.ptr(&partials), gpu.ptr(&out));
    let fl = p + 4 * flag_at as u64;
    gpu.fill_bytes_raw(fl, 0, 4)?;
    let f_r = gpu.function(Module::Bitmap, w.reduce)?;
    let f_p = gpu.function(Module::Bitmap, "bm_agg_partials")?;
    let f_a = gpu.function(Module::Bitmap, w.apply)?;
    let count = tiles as u32;
    let mode0 = 0u32;
    let mut r_args = w.src.clone();
    r_args.push(&p);
    let mut a_args = w.src.clone();
    a_args.extend_from_slice(&[&p as &dyn KernelArg, &w.max_counter, &mode0, &o, &o, &fl]);
    // SAFETY: `w.src` are the source's leading parameters of both kernels (set by the callers
    // below, which own the buffers they point to); then partials (tiles + 1 BmAggs), and for the
    // apply max_counter, mode, out (elements words: mode 0 writes one word per block, at most
    // one block per element), ex_out (unused in mode 0) and flags (the one word after the partials).
    unsafe {
        gpu.launch(&f_r, g, WRITER_THREADS, &r_args)?;
        gpu.launch(&f_p, 1, scan::PARTIAL_THREADS, &[&p, &count])?;
        gpu.launch(&f_a, g, WRITER_THREADS, &a_args)?;
    }
    // The last BmAgg (the total) and the flag after it.
    let tail = read_words(gpu, &partials, 3 * tiles as usize, 4)?;
    let (blocks, flag) = (tail[1] as usize, tail[3]);
    if flag == 0 {
        return Ok(DeviceBitmap {
            flavor: w.flavor,
            bit_len: w.bit_len,
            words: out,
            len: blocks,
            tile_starts: None,
        });
    }
    // Overflow: (word, ex) per block, a scan of ex, then the scatter.
    let last = gpu.alloc::<u32>(blocks)?;
    let ex = gpu.alloc::<u32>(blocks)?;
    let (pl, pe) = (gpu.ptr(&last), gpu.ptr(&ex));
    let mode1 = 1u32;
    let mut a_args = w.src.clone();
    a_args.extend_from_slice(&[&p as &dyn KernelArg, &w.max_counter, &mode1, &pl, &pe, &fl]);
    // SAFETY: as above; in mode 1 the apply writes words[b] and ex[b] for every block b <
    // blocks, both arrays holding `blocks` words.
    unsafe { gpu.launch(&f_a, g, WRITER_THREADS, &a_args)? };
    if blocks <= OVERFLOW_ONE_BLOCK {
        // sum(ex) <= floor(groups / max_counter): every ex word holds max_counter groups.
        let room = blocks + (group_count(w.bit_len) / u64::from(w.max_counter.max(1))) as usize;
        let words = gpu.alloc::<u32>(room)?;
        let len = gpu.alloc::<u32>(1)?;
        let (pw, pn) = (gpu.ptr(&words), gpu.ptr(&len));
        let f_o = gpu.function(Module::Bitmap, "bm_overflow_fills")?;
        let (nb, room64) = (blocks as u32, room as u64);
        // SAFETY: matches bm_overflow_fills(words, ex, blocks, max_counter, out, room, out_len):
        // `last` and `ex` hold `blocks` words, `words` room words (the kernel writes below
        // room), `len` one.
        unsafe {
            gpu.launch(
                &f_o,
                1,
                scan::PARTIAL_THREADS,
                &[&pl, &pe, &nb, &w.max_counter, &pw, &room64, &pn],
            )?;
        }
        let total = read_words(gpu, &len, 0, 1)?[0] as usize;
        if total > room {
            return Err(Error::Gpu(format!(
                "bitmap writer: {total} words after splitting fills, room for {room}"
            )));
        }
        return Ok(DeviceBitmap {
            flavor: w.flavor,
            bit_len: w.bit_len,
            words,
            len: total,
            tile_starts: None,
        });
    }
    let ex_prefix = gpu.alloc::<u32>(blocks)?;
    let pep = gpu.ptr(&ex_prefix);
    // u64 storage for the u32 partials (tiles + 1 of them fit the first half).
    let ex_partials = gpu.alloc::<u64>(scan::partials_len(blocks as u64))?;
    let ex_tiles = scan::tiles(blocks as u64) as usize;
    scan::sum(
        gpu,
        scan::Item::U32,
        pe,
        blocks as u64,
        pep,
        false,
        gpu.ptr(&ex_partials),
    )?;
    // The u32 partials live in the u64 buffer: u32 entry `ex_tiles` is the low (even) or high
    // (odd) half of u64 entry ex_tiles / 2.
    let whole = read_u64(gpu, &ex_partials, ex_tiles / 2)?;
    let ex_total = if ex_tiles % 2 == 0 {
        whole as u32
    } else {
        (whole >> 32) as u32
    } as usize;
    let words = gpu.alloc::<u32>(blocks + ex_total)?;
    let pw = gpu.ptr(&words);
    let f_s = gpu.function(Module::Bitmap, "bm_scatter_fills")?;
    let nb = blocks as u32;
    // SAFETY: matches bm_scatter_fills(words, ex, ex_prefix, blocks, max_counter, out); block i
    // writes words i + ex_prefix[i] ..= i + ex_prefix[i] + ex[i] < blocks + ex_total.
    unsafe {
        gpu.launch(
            &f_s,
            grid(blocks as u64, u64::from(STRIDE_THREADS))?.min(MAX_SCATTER_GRID),
            STRIDE_THREADS,
            &[&pl, &pe, &pep, &nb, &w.max_counter, &pw],
        )?;
    }
    gpu.synchronize()?;
    Ok(DeviceBitmap {
        flavor: w.flavor,
        bit_len: w.bit_len,
        words,
        len: blocks + ex_total,
        tile_starts: None,
    })
}
