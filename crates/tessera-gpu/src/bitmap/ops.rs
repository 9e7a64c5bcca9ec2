//! AND / OR / XOR / AND-NOT on compressed bitmaps (module docs of `bitmap`;
//! `kernels/bitmap/ops.cuh`), cardinality, and the word-wise operation on plain bitmaps.

use cudarc::driver::CudaSlice;
use tessera_codecs::bitmap::{self, group_count, last_group_mask, ops::Op, Bitmap, Flavor};
use tessera_format::{Error, Result};

use super::decompress::{decode_args, tile_starts_queue};
use super::writer::{run_writer, WriterRun};
use super::{
    download, grid, read_u64, read_words, slot_ends, upload, DeviceBitmap, DevicePlain,
    CMP_THREADS, CMP_TILE, FIXUP_CAP, FIXUP_THREADS, STRIDE_THREADS, WRITER_THREADS, WRITER_TILE,
};
use crate::kernels::Module;
use crate::primitives::scan;
use crate::runtime::Gpu;

fn op_code(op: Op) -> u32 {
    match op {
        Op::And => 0,
        Op::Or => 1,
        Op::Xor => 2,
        Op::AndNot => 3,
    }
}

/// The kernels of `op` on flavor `f` (`BM_OP_ALL_KERNELS` in `kernels/bitmap/ops.cuh`): the
/// three-launch writer's reduce and apply, the one-pass form and the fused form.
struct OpKernels {
    reduce: &'static str,
    apply: &'static str,
    one_pass: &'static str,
    fused: &'static str,
}

fn op_kernels(op: Op, f: Flavor) -> OpKernels {
    macro_rules! k {
        ($n:literal) => {
            OpKernels {
                reduce: concat!("bm_op_reduce_", $n),
                apply: concat!("bm_op_apply_", $n),
                one_pass: concat!("bm_op1_", $n),
                fused: concat!("bm_fop_", $n),
            }
        };
    }
    match (op, f) {
        (Op::And, Flavor::Wah) => k!("and_wah"),
        (Op::Or, Flavor::Wah) => k!("or_wah"),
        (Op::Xor, Flavor::Wah) => k!("xor_wah"),
        (Op::AndNot, Flavor::Wah) => k!("andnot_wah"),
        (Op::And, Flavor::Plwah) => k!("and_plwah"),
        (Op::Or, Flavor::Plwah) => k!("or_plwah"),
        (Op::Xor, Flavor::Plwah) => k!("xor_plwah"),
        (Op::AndNot, Flavor::Plwah) => k!("andnot_plwah"),
    }
}

/// `op(a, b)` on the compressed words, on the device (module docs), by one of two paths:
/// - operands with at least one word per 6 groups together (`FUSED_WORDS_PER_GROUP_INV`): the
///   fused path ([`binary_device_fused`]: decode both tiles, operate, compress, one launch);
/// - sparser ones: the merge path ([`binary_device_merge`]): both operands' slot ends in one
///   launch (`bm_slots_pair_*`), the merge and the writer in one more (`bm_op1_*`, tile
///   prefixes by decoupled look-back), and, where a result run can exceed the counter (PLWAH,
///   more than `2^25 - 1` groups), the overflow fix-up (`bm_overflow_fixup`), queued before the
///   one read of the result's size when the inputs are short. A result with more than
///   [`FIXUP_CAP`] overflowing blocks takes the three-launch writer's overflow path instead.
pub fn binary_device(
    gpu: &Gpu,
    op: Op,
    a: &DeviceBitmap,
    b: &DeviceBitmap,
) -> Result<DeviceBitmap> {
    check_operands(a, b)?;
    let groups = group_count(a.bit_len);
    if FUSED_WORDS_PER_GROUP_INV.saturating_mul(a.len as u64 + b.len as u64) >= groups {
        binary_device_fused(gpu, op, a, b)
    } else {
        binary_device_merge(gpu, op, a, b)
    }
}

/// [`binary_device`] takes the fused path (cost ~ groups) when the operands hold at least one
/// word per this many groups together, else the merge path (cost ~ words). On an H100
/// (`bitmap_gpu_speed --only fop`) the fused path's time barely moves with density while the
/// merge path's grows with the operand words; the two cross near one word per 6 groups.
const FUSED_WORDS_PER_GROUP_INV: u64 = 6;

/// `op(a, b)` by the merge path (`bm_slots_pair_*` + `bm_op1_*`, overflow fix-up as needed).
pub fn binary_device_merge(
    gpu: &Gpu,
    op: Op,
    a: &DeviceBitmap,
    b: &DeviceBitmap,
) -> Result<DeviceBitmap> {
    binary_device_with(gpu, op, a, b, FIXUP_CAP, EAGER_FIXUP_ELEMENTS)
}

/// Operations on at most this many slots in all queue the overflow fix-up before reading the
/// result's size (so a short PLWAH operation waits once); longer ones launch it only when the
/// read shows an overflow (its output buffer is as large as the inputs).
const EAGER_FIXUP_ELEMENTS: u64 = 1 << 20;

/// Most thread blocks of `bm_overflow_fixup`; past them its threads stride over the elements.
const MAX_FIXUP_GRID: u32 = 1024;
/// Thread blocks per SM `bm_plain_op` is launched with (8 of 256 threads fill an SM's 2048
/// thread slots), a grid-stride loop doing the rest.
const PLAIN_OP_BLOCKS_PER_SM: u32 = 8;

fn check_operands(a: &DeviceBitmap, b: &DeviceBitmap) -> Result<()> {
    if a.flavor != b.flavor || a.bit_len != b.bit_len {
        return Err(Error::InvalidArgument(format!(
            "bitmap operands differ: {:?} of {} bits and {:?} of {} bits",
            a.flavor, a.bit_len, b.flavor, b.bit_len
        )));
    }
    Ok(())
}

fn empty_result(gpu: &Gpu, a: &DeviceBitmap) -> Result<DeviceBitmap> {
    Ok(DeviceBitmap {
        flavor: a.flavor,
        bit_len: a.bit_len,
        words: gpu.alloc::<u32>(1)?,
        len: 0,
        tile_starts: None,
    })
}

/// [`binary_device`] with its overflow list capacity (at most [`FIXUP_CAP`]; 0 sends every
/// overflow to the general path) and the input size up to which the fix-up is queued before
/// the read: test hooks, so that every overflow path runs in the tests.
pub fn binary_device_with(
    gpu: &Gpu,
    op: Op,
    a: &DeviceBitmap,
    b: &DeviceBitmap,
    cap: u32,
    eager_elements: u64,
) -> Result<DeviceBitmap> {
    check_operands(a, b)?;
    let groups = group_count(a.bit_len);
    if groups == 0 {
        return empty_result(gpu, a);
    }
    let cap = cap.min(FIXUP_CAP);
    let too_large = || Error::InvalidArgument("bitmap too large".into());
    let (na, nb) = (
        u32::try_from(a.slots()).map_err(|_| too_large())?,
        u32::try_from(b.slots()).map_err(|_| too_large())?,
    );
    let elements = u64::from(na) + u64::from(nb);
    let (ta, tb) = (scan::tiles(u64::from(na)), scan::tiles(u64::from(nb)));
    let wt = elements.div_ceil(WRITER_TILE);
    // One zeroed buffer: the look-back status words (16 bytes per tile) of a's slots, b's
    // slots and the writer, then the writer's four counters.
    let status_words = 4 * (ta + tb + wt) as usize;
    let scratch = gpu.alloc::<u32>(status_words + 4)?;
    let ends = gpu.alloc::<u32>(elements as usize)?;
    let out = gpu.alloc::<u32>(elements as usize)?;
    let ovf = gpu.alloc::<u32>(2 * cap.max(1) as usize)?;
    let (ps, pe, po, pv) = (
        gpu.ptr(&scratch),
        gpu.ptr(&ends),
        gpu.ptr(&out),
        gpu.ptr(&ovf),
    );
    gpu.fill_bytes_raw(ps, 0, 4 * (status_words + 4))?;
    let (ps_w, pc) = (ps + 16 * (ta + tb), ps + 4 * status_words as u64);
    let (pwa, pwb, pea, peb) = (
        gpu.ptr(&a.words),
        gpu.ptr(&b.words),
        pe,
        pe + 4 * u64::from(na),
    );
    let pair = gpu.function(
        Module::Bitmap,
        match a.flavor {
            Flavor::Wah => "bm_slots_pair_wah",
            Flavor::Plwah => "bm_slots_pair_plwah",
        },
    )?;
    let f_op = gpu.function(Module::Bitmap, op_kernels(op, a.flavor).one_pass)?;
    let (ma, mb, ta32) = (a.len as u64, b.len as u64, ta as u32);
    let (wt32, max_counter, out_cap) = (
        u32::try_from(wt).map_err(|_| too_large())?,
        a.flavor.max_counter() as u32,
        elements,
    );
    let grid_pair = u32::try_from(ta + tb).map_err(|_| too_large())?;
    // SAFETY: bm_slots_pair_<f>(wa, ma, ea, wb, mb, eb, status, tiles_a): a's and b's words
    // hold ma and mb words (valid DeviceBitmaps), ea and eb na and nb u32 (ends), status ta +
    // tb zeroed 16-byte words. bm_op1_<op>_<f>(wa, ea, na, wb, eb, nb, status, tiles,
    // max_counter, out, out_cap, counters, ovf, cap): status wt zeroed words, out
    // `elements` words (at most one block per element), counters 4 zeroed words, ovf 2 * cap
    // words. Every buffer outlives the read below, which waits for the launches.
    unsafe {
        gpu.launch(
            &pair,
            grid_pair,
            scan::THREADS,
            &[&pwa, &ma, &pea, &pwb, &mb, &peb, &ps, &ta32],
        )?;
        gpu.launch(
            &f_op,
            wt32,
            WRITER_THREADS,
            &[
                &pwa,
                &pea,
                &na,
                &pwb,
                &peb,
                &nb,
                &ps_w,
                &wt32,
                &max_counter,
                &po,
                &out_cap,
                &pc,
                &pv,
                &cap,
            ],
        )?;
    }
    // A run longer than the counter exists only in PLWAH results of more than 2^25 - 1 groups.
    let may_overflow = groups > u64::from(max_counter);
    // sum(ex) <= floor(groups / max_counter): every full fill_word holds max_counter groups.
    let room = elements + groups / u64::from(max_counter.max(1));
    let fixup = |words: &CudaSlice<u32>| -> Result<()> {
        let f = gpu.function(Module::Bitmap, "bm_overflow_fixup")?;
        let pw = gpu.ptr(words);
        let g = grid(elements, u64::from(FIXUP_THREADS))?.min(MAX_FIXUP_GRID);
        // SAFETY: bm_overflow_fixup(out, out_cap, counters, ovf, cap, max_counter, words,
        // room): out holds out_cap words, counters 4, ovf 2 * cap, words room (every store is
        // checked against room).
        unsafe {
            gpu.launch(
                &f,
                g,
                FIXUP_THREADS,
                &[&po, &out_cap, &pc, &pv, &cap, &max_counter, &pw, &room],
            )
        }
    };
    let eager = may_overflow && elements <= eager_elements;
    let mut fixed = None;
    if eager {
        let words = gpu.alloc::<u32>(room as usize)?;
        fixup(&words)?;
        fixed = Some(words);
    }
    let c = read_words(gpu, &scratch, status_words, 4)?;
    let (blocks, overflow, listed, total) = (c[0] as usize, c[1] != 0, c[2], c[3] as usize);
    if !overflow {
        if blocks as u64 > elements {
            return Err(Error::Gpu(format!(
                "bitmap operation: {blocks} blocks from {elements} elements"
            )));
        }
        return Ok(DeviceBitmap {
            flavor: a.flavor,
            bit_len: a.bit_len,
            words: out,
            len: blocks,
            tile_starts: None,
        });
    }
    if listed > cap {
        return binary_device_staged(gpu, op, a, b);
    }
    let (words, total) = match fixed {
        Some(w) => (w, total),
        None => {
            let w = gpu.alloc::<u32>(room as usize)?;
            fixup(&w)?;
            let t = read_words(gpu, &scratch, status_words + 3, 1)?[0] as usize;
            (w, t)
        }
    };
    if total as u64 > room {
        return Err(Error::Gpu(format!(
            "bitmap operation: {total} words after splitting fills, room for {room}"
        )));
    }
    Ok(DeviceBitmap {
        flavor: a.flavor,
        bit_len: a.bit_len,
        words,
        len: total,
        tile_starts: None,
    })
}

/// `op(a, b)` by tiles (`bm_fop_*`, `kernels/bitmap/ops.cuh`, "fused operations"): one block per
/// tile of [`CMP_TILE`] groups decodes both operands' tile from their tile starts, applies `op`
/// to the plain words and compresses the result with the compressor's tile code, so the result
/// is what [`super::compress_device`] makes of the plain `op(a, b)`, tile starts included. Nothing
/// plain reaches global memory; the cost follows the groups rather than the words, which is
/// why [`binary_device`] keeps the merge path for sparse operands. Operands without tile
/// starts get them computed first. Waits for one read (word total and decode status); a tile
/// start that does not cover its tile is an error.
pub fn binary_device_fused(
    gpu: &Gpu,
    op: Op,
    a: &DeviceBitmap,
    b: &DeviceBitmap,
) -> Result<DeviceBitmap> {
    binary_device_fused_with_max_counter(gpu, op, a, b, a.flavor.max_counter())
}

/// [`binary_device_fused`] with the result's fill runs split at `max_counter` groups (the
/// compressor's test hook: the overflow path with small bitmaps).
pub fn binary_device_fused_with_max_counter(
    gpu: &Gpu,
    op: Op,
    a: &DeviceBitmap,
    b: &DeviceBitmap,
    max_counter: u64,
) -> Result<DeviceBitmap> {
    check_operands(a, b)?;
    if max_counter == 0 || max_counter > a.flavor.max_counter() {
        return Err(Error::InvalidArgument(format!(
            "max_counter {max_counter} outside 1..={}",
            a.flavor.max_counter()
        )));
    }
    let groups = group_count(a.bit_len);
    let (Some(ma), Some(mb)) = (decode_args(a)?, decode_args(b)?) else {
        return empty_result(gpu, a);
    };
    let tiles = groups.div_ceil(CMP_TILE);
    let t = tiles as usize;
    let starts = |d: &DeviceBitmap| -> Result<Option<CudaSlice<u32>>> {
        match &d.tile_starts {
            Some(ts) if ts.len() >= 2 * (t + 1) => Ok(None),
            Some(_) => Err(Error::InvalidArgument(
                "tile_starts shorter than 2 * (tiles + 1) entries".into(),
            )),
            None => tile_starts_queue(gpu, d).map(Some),
        }
    };
    let (ca, cb) = (starts(a)?, starts(b)?);
    let tsa = ca
        .as_ref()
        .or(a.tile_starts.as_ref())
        .expect("checked above");
    let tsb = cb
        .as_ref()
        .or(b.tile_starts.as_ref())
        .expect("checked above");
    // The look-back state: a 16-byte status word per tile, then the word total and the decode
    // status; one zeroed buffer.
    let mut state = gpu.alloc::<u32>(4 * t + 2)?;
    gpu.fill_bytes(&mut state, 0)?;
    let out = gpu.alloc::<u32>(groups as usize)?;
    let tile_starts = gpu.alloc::<u32>(2 * (t + 1))?;
    let (ps, pout, pts) = (gpu.ptr(&state), gpu.ptr(&out), gpu.ptr(&tile_starts));
    let pc = ps + 16 * tiles;
    let (pwa, pwb, ptsa, ptsb) = (
        gpu.ptr(&a.words),
        gpu.ptr(&b.words),
        gpu.ptr(tsa),
        gpu.ptr(tsb),
    );
    let f = gpu.function(Module::Bitmap, op_kernels(op, a.flavor).fused)?;
    let mask = last_group_mask(a.bit_len);
    let max = max_counter as u32;
    let nt = tiles as u32;
    let cap = groups;
    // SAFETY: matches bm_fop_<op>_<f>(wa, ma, tsa, wb, mb, tsb, groups, last_mask,
    // max_counter, status, counters, tiles, out, out_cap, tile_starts): a's and b's words hold
    // ma, mb >= 1 words (decode_args), their tile starts >= 2 * (tiles + 1) entries (checked or
    // just computed); `state` holds 4 * tiles + 2 zeroed words: the tiles' status words, then
    // counters[0] (total) and [1] (decode status); one block per tile, each writing its own
    // status word and tile_starts[2t], [2t + 1] (the last tile also the end entry), out[<
    // groups] only. Temporaries are freed stream-ordered, after the kernel.
    unsafe {
        gpu.launch(
            &f,
            grid(groups, CMP_TILE)?,
            CMP_THREADS,
            &[
                &pwa, &ma, &ptsa, &pwb, &mb, &ptsb, &groups, &mask, &max, &ps, &pc, &nt, &pout,
                &cap, &pts,
            ],
        )?;
    }
    let c = read_words(gpu, &state, 4 * t, 2)?;
    drop((state, ca, cb));
    let (len, bad) = (c[0] as usize, c[1] != 0);
    if bad {
        return Err(Error::InvalidArgument(
            "bitmap operand's tile_starts do not cover its tiles".into(),
        ));
    }
    if len as u64 > groups {
        return Err(Error::Gpu(format!(
            "fused bitmap operation counted {len} words for {groups} groups"
        )));
    }
    Ok(DeviceBitmap {
        flavor: a.flavor,
        bit_len: a.bit_len,
        words: out,
        len,
        tile_starts: Some(tile_starts),
    })
}

/// `op(a, b)` through the three-launch writer (slot ends per operand, then reduce, partials,
/// apply, and the general overflow path): the path of results with many overflowing blocks,
/// and a cross-check for the tests.
pub fn binary_device_staged(
    gpu: &Gpu,
    op: Op,
    a: &DeviceBitmap,
    b: &DeviceBitmap,
) -> Result<DeviceBitmap> {
    check_operands(a, b)?;
    if group_count(a.bit_len) == 0 {
        return empty_result(gpu, a);
    }
    let (ea, eb) = (slot_ends(gpu, a)?, slot_ends(gpu, b)?);
    let (na, nb) = (
        u32::try_from(a.slots()).map_err(|_| Error::InvalidArgument("bitmap too large".into()))?,
        u32::try_from(b.slots()).map_err(|_| Error::InvalidArgument("bitmap too large".into()))?,
    );
    let (pwa, pea, pwb, peb) = (
        gpu.ptr(&a.words),
        gpu.ptr(&ea.ends),
        gpu.ptr(&b.words),
        gpu.ptr(&eb.ends),
    );
    let OpKernels { reduce, apply, .. } = op_kernels(op, a.flavor);
    run_writer(
        gpu,
        WriterRun {
            flavor: a.flavor,
            bit_len: a.bit_len,
            elements: u64::from(na) + u64::from(nb),
            reduce,
            apply,
            src: vec![&pwa, &pea, &na, &pwb, &peb, &nb],
            max_counter: a.flavor.max_counter() as u32,
        },
    )
}

/// `op(a, b)` of two CPU bitmaps on the GPU: `ops::binary`'s result, word for word.
pub fn binary(gpu: &Gpu, op: Op, a: &Bitmap, b: &Bitmap) -> Result<Bitmap> {
    if a.flavor() != b.flavor() || a.bit_len() != b.bit_len() {
        return bitmap::ops::binary(op, a, b);
    }
    let (da, db) = (upload(gpu, a)?, upload(gpu, b)?);
    download(gpu, &binary_device(gpu, op, &da, &db)?)
}

/// The number of set bits, on the device (waits for it).
pub fn count_ones_device(gpu: &Gpu, d: &DeviceBitmap) -> Result<u64> {
    let n = d.slots();
    if n == 0 {
        return Ok(0);
    }
    let tiles = n.div_ceil(scan::TILE);
    let partials = gpu.alloc::<u64>(tiles as usize + 1)?;
    let (pw, pp) = (gpu.ptr(&d.words), gpu.ptr(&partials));
    let m = d.len as u64;
    let name = match d.flavor {
        Flavor::Wah => "bm_count_ones_wah",
        Flavor::Plwah => "bm_count_ones_plwah",
    };
    let f = gpu.function(Module::Bitmap, name)?;
    let count = tiles as u32;
    // SAFETY: matches bm_count_ones_<f>(words, m, partials); `partials` holds tiles + 1 u64.
    unsafe { gpu.launch(&f, grid(n, scan::TILE)?, scan::THREADS, &[&pw, &m, &pp])? };
    scan::partials(gpu, scan::Item::U64, pp, count)?;
    read_u64(gpu, &partials, tiles as usize)
}

/// [`count_ones_device`] for a CPU bitmap.
pub fn count_ones(gpu: &Gpu, b: &Bitmap) -> Result<u64> {
    count_ones_device(gpu, &upload(gpu, b)?)
}

/// `op(a, b)` word by word on plain device bitmaps of one length (the decompress-operate
/// baseline). Queued, not waited for.
pub fn plain_op_device(
    gpu: &Gpu,
    op: Op,
    a: &DevicePlain,
    b: &DevicePlain,
    out: &mut DevicePlain,
) -> Result<()> {
    let n = a.word_count();
    if a.bit_len != b.bit_len
        || out.bit_len != a.bit_len
        || b.words.len() < n
        || out.words.len() < n
    {
        return Err(Error::InvalidArgument(
            "plain bitmaps of different lengths".into(),
        ));
    }
    if n == 0 {
        return Ok(());
    }
    let f = gpu.function(Module::Bitmap, "bm_plain_op")?;
    let (pa, pb, po) = (gpu.ptr(&a.words), gpu.ptr(&b.words), gpu.ptr(&out.words));
    let n64 = n as u64;
    let code = op_code(op);
    // Enough thread blocks to fill every SM, no more than one per 1024 words (a thread takes 4
    // words a step); the rest by grid stride.
    let blocks = (gpu.info().sm_count.max(1) * PLAIN_OP_BLOCKS_PER_SM)
        .min(grid(n64, 4 * u64::from(STRIDE_THREADS))?);
    // SAFETY: matches bm_plain_op(a, b, out, n, op); all three hold >= n words (checked) and are
    // 16-byte aligned (device allocations).
    unsafe { gpu.launch(&f, blocks, STRIDE_THREADS, &[&pa, &pb, &po, &n64, &code]) }
}
