//! The device-wide scan: one implementation, `kernels/primitives/scan.cuh`, for every caller.
//!
//! It is a reduce-then-scan in three launches (each thread block folds its tile of
//! [`TILE`] items, one thread block scans the tile totals, each thread block scans its tile
//! again from its prefix), layered warp, block, device, over any associative operator and any
//! item type, with items loaded from a functor. The same header has the single-pass form
//! (decoupled look-back, Merrill and Garland), which kernels fuse into their own work where one
//! launch matters more than the data: the bitmap compressor, the one-pass operations and their
//! slot ends. For a plain array the three-launch form is the one used: it makes no assumption
//! about the order in which thread blocks run, and an array scan is a small part of every
//! caller's work.
//!
//! Callers:
//! - the integer encoders (`int/encode.rs`) and the Huffman decoder (`huffman/decode.rs`):
//!   block offsets from block sizes, [`offsets_u32`];
//! - the bitmap codec: sum scans of u32 and u64 arrays ([`sum`]) and the partials pass behind
//!   its own reduce kernels ([`partials`]).
//!
//! Sums are modulo 2^32 for u32 items and 2^64 for u64; callers keep their totals below that.
//! (`kernels/primitives/block_scan.cuh` is not a device-wide scan: it is the scan of one tile
//! held in registers inside the integer decoders.)

use tessera_format::{Error, Result};

use crate::kernels::Module;
use crate::runtime::Gpu;

/// Threads of the reduce and apply passes (`DS_THREADS`).
pub(crate) const THREADS: u32 = 256;
/// Items per thread (`DS_ITEMS`).
pub(crate) const ITEMS: u64 = 8;
/// Items per tile (`DS_TILE`).
pub(crate) const TILE: u64 = THREADS as u64 * ITEMS;
/// Threads of the one thread block of the partials pass (`DS_PARTIAL_THREADS`).
pub(crate) const PARTIAL_THREADS: u32 = 1024;

/// The item type of a scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Item {
    U32,
    U64,
}

impl Item {
    fn kernels(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Item::U32 => ("ds_reduce_u32", "ds_partials_u32", "ds_apply_u32"),
            Item::U64 => ("ds_reduce_u64", "ds_partials_u64", "ds_apply_u64"),
        }
    }
}

/// Tiles of a scan of `n` items (at least 1: the partials pass always runs).
pub(crate) fn tiles(n: u64) -> u64 {
    n.div_ceil(TILE).max(1)
}

/// Entries (of the item type) of the partials buffer of a scan of `n` items: one per tile, then
/// the total.
pub(crate) fn partials_len(n: u64) -> usize {
    tiles(n) as usize + 1
}

fn grid(n: u64) -> Result<u32> {
    u32::try_from(n.div_ceil(TILE).max(1))
        .map_err(|_| Error::InvalidArgument("scan too large for one GPU launch".into()))
}

/// Sum scan of `n` items of `item` at device address `input` into `output` (exclusive, or
/// inclusive when `inclusive`), with `partials` the device address of [`partials_len`]`(n)`
/// items of scratch, whose last entry receives the total. Queued, not waited for.
pub(crate) fn sum(
    gpu: &Gpu,
    item: Item,
    input: u64,
    n: u64,
    output: u64,
    inclusive: bool,
    partials: u64,
) -> Result<()> {
    let (reduce, partial, apply) = item.kernels();
    let f_r = gpu.function(Module::Primitives, reduce)?;
    let f_p = gpu.function(Module::Primitives, partial)?;
    let f_a = gpu.function(Module::Primitives, apply)?;
    let g = grid(n)?;
    let count = tiles(n) as u32;
    let inc = u32::from(inclusive);
    // SAFETY: matches ds_reduce_T(in, n, partials), ds_partials_T(partials, count),
    // ds_apply_T(in, n, partials, out, inclusive) (scan.cuh); `input` and `output` hold n items
    // (callers' contract), `partials` tiles + 1 items.
    unsafe {
        if n > 0 {
            gpu.launch(&f_r, g, THREADS, &[&input, &n, &partials])?;
        } else {
            gpu.fill_bytes_raw(partials, 0, 8)?;
        }
        gpu.launch(&f_p, 1, PARTIAL_THREADS, &[&partials, &count])?;
        if n > 0 {
            gpu.launch(&f_a, g, THREADS, &[&input, &n, &partials, &output, &inc])?;
        }
    }
    Ok(())
}

/// Block offsets from block sizes: `offsets[0] = 0` and `offsets[i + 1] = sizes[0] + ... +
/// sizes[i]` (modulo 2^32), so `offsets[n]` is the total. `sizes` is the device address of `n`
/// u32, `offsets` of `n + 1`, `partials` of [`partials_len`]`(n)`. Queued, not waited for.
pub(crate) fn offsets_u32(
    gpu: &Gpu,
    sizes: u64,
    n: u64,
    offsets: u64,
    partials: u64,
) -> Result<()> {
    gpu.fill_bytes_raw(offsets, 0, 4)?;
    if n == 0 {
        return Ok(());
    }
    if n <= TILE {
        // One tile: its prefix is 0, so the apply pass alone scans it (the reduce and partials
        // passes only give later tiles their prefixes): one launch instead of three.
        gpu.fill_bytes_raw(partials, 0, 4)?;
        let f_a = gpu.function(Module::Primitives, Item::U32.kernels().2)?;
        let inc = 1u32;
        let out = offsets + 4;
        // SAFETY: matches ds_apply_u32(in, n, partials, out, inclusive) (scan.cuh): `sizes`
        // holds n items, `offsets + 4` n more, `partials` at least one (partials_len(n) >= 2),
        // its first the prefix of the one tile.
        return unsafe { gpu.launch(&f_a, 1, THREADS, &[&sizes, &n, &partials, &out, &inc]) };
    }
    // The inclusive scan, written one entry on: the exclusive scan with the total at the end.
    sum(gpu, Item::U32, sizes, n, offsets + 4, true, partials)
}

/// The partials pass alone, behind a codec's own reduce kernel: `partials[0..count)` (items of
/// `item`) become their exclusive prefix sums and `partials[count]` their total. Queued.
pub(crate) fn partials(gpu: &Gpu, item: Item, partials: u64, count: u32) -> Result<()> {
    let f = gpu.function(Module::Primitives, item.kernels().1)?;
    // SAFETY: matches ds_partials_T(partials, count); callers' `partials` holds count + 1 items.
    unsafe { gpu.launch(&f, 1, PARTIAL_THREADS, &[&partials, &count]) }
}

/// Exclusive (or inclusive) sum scan of u32 values on the GPU, modulo 2^32 (the test entry
/// point, [`crate::bench_hooks::scan_u32`]).
pub(crate) fn scan_u32(gpu: &Gpu, values: &[u32], inclusive: bool) -> Result<Vec<u32>> {
    let d_in = gpu.upload(values)?;
    let d_out = gpu.alloc::<u32>(values.len())?;
    let p = gpu.alloc::<u32>(partials_len(values.len() as u64))?;
    let n = values.len() as u64;
    sum(
        gpu,
        Item::U32,
        gpu.ptr(&d_in),
        n,
        gpu.ptr(&d_out),
        inclusive,
        gpu.ptr(&p),
    )?;
    let mut out = vec![0u32; values.len()];
    gpu.download(&d_out, &mut out)?;
    Ok(out)
}

/// [`scan_u32`] for u64 values (modulo 2^64).
pub(crate) fn scan_u64(gpu: &Gpu, values: &[u64], inclusive: bool) -> Result<Vec<u64>> {
    let d_in = gpu.upload(values)?;
    let d_out = gpu.alloc::<u64>(values.len())?;
    let p = gpu.alloc::<u64>(partials_len(values.len() as u64))?;
    let n = values.len() as u64;
    sum(
        gpu,
        Item::U64,
        gpu.ptr(&d_in),
        n,
        gpu.ptr(&d_out),
        inclusive,
        gpu.ptr(&p),
    )?;
    let mut out = vec![0u64; values.len()];
    gpu.download(&d_out, &mut out)?;
    Ok(out)
}

/// Block offsets of `sizes` by [`offsets_u32`] (the test entry point,
/// [`crate::bench_hooks::offsets_u32`]): `sizes.len() + 1` values.
pub(crate) fn offsets_u32_host(gpu: &Gpu, sizes: &[u32]) -> Result<Vec<u32>> {
    let n = sizes.len() as u64;
    let d_in = gpu.upload(sizes)?;
    let d_out = gpu.alloc::<u32>(sizes.len() + 1)?;
    let p = gpu.alloc::<u32>(partials_len(n))?;
    offsets_u32(gpu, gpu.ptr(&d_in), n, gpu.ptr(&d_out), gpu.ptr(&p))?;
    let mut out = vec![0u32; sizes.len() + 1];
    gpu.download(&d_out, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_constants_match_scan_cuh() {
        let d: std::collections::HashMap<&str, &str> =
            crate::kernels::header("primitives/scan.cuh")
                .expect("scan.cuh is embedded")
                .lines()
                .filter_map(|l| {
                    let mut it = l.split_whitespace();
                    (it.next() == Some("#define")).then_some(())?;
                    Some((it.next()?, it.next().unwrap_or("")))
                })
                .collect();
        assert_eq!(d["DS_THREADS"], THREADS.to_string());
        assert_eq!(d["DS_ITEMS"], ITEMS.to_string());
        assert_eq!(d["DS_PARTIAL_THREADS"], PARTIAL_THREADS.to_string());
    }

    #[test]
    fn partials_hold_a_total_after_the_tiles() {
        assert_eq!(partials_len(0), 2);
        assert_eq!(partials_len(1), 2);
        assert_eq!(partials_len(TILE), 2);
        assert_eq!(partials_len(TILE + 1), 3);
    }
}
