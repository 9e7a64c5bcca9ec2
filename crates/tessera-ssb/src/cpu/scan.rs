//! The fact scan's row loops: filter, probe and aggregate over a chunk's decoded columns, a
//! selection vector (`sel`: row indices that passed so far) carried between them with each
//! row's compact group index (`gidx`). Every loop writes its row unconditionally and advances
//! the output by whether it passed, so the selectivity costs no branch mispredictions.

use tessera::gpu::ssb::plan::{Aggregate, Filter};

use super::join::Probe;

/// Keeps the first `n` rows of `sel` whose value passes `f`, returning how many; with `all`,
/// `sel` is every row of the chunk (not yet written). `sel` holds at least a chunk's rows, so
/// no loop resizes (or clears) it.
pub fn filter_rows(f: &Filter, values: &[u32], sel: &mut [u32], n: usize, all: bool) -> usize {
    let n = if all { values.len() } else { n };
    let mut w = 0;
    if let [(lo, hi)] = f.ranges[..] {
        if lo > hi {
            return 0;
        }
        // One range: one unsigned comparison a row.
        let range = hi - lo;
        if all {
            for (i, &v) in values.iter().enumerate() {
                sel[w] = i as u32;
                w += (v.wrapping_sub(lo) <= range) as usize;
            }
        } else {
            for r in 0..n {
                let i = sel[r];
                sel[w] = i;
                w += (values[i as usize].wrapping_sub(lo) <= range) as usize;
            }
        }
    } else {
        for r in 0..n {
            let i = if all { r as u32 } else { sel[r] };
            sel[w] = i;
            w += f.passes(values[i as usize]) as usize;
        }
    }
    w
}

/// The first step of a chunk is a probe: every row's key looked up, the hits kept with their
/// contribution; returns how many.
#[inline(always)]
pub fn probe_all<P: Probe>(t: &P, keys: &[u32], sel: &mut [u32], gidx: &mut [u32]) -> usize {
    let (sel, gidx) = (&mut sel[..keys.len()], &mut gidx[..keys.len()]);
    let mut w = 0;
    for (i, &k) in keys.iter().enumerate() {
        let (hit, c) = t.lookup(k);
        sel[w] = i as u32;
        gidx[w] = c;
        w += hit as usize;
    }
    w
}

/// A later probe: the first `n` selected rows' keys looked up, the hits kept, their
/// contributions added; returns how many.
#[inline(always)]
pub fn probe_selected<P: Probe>(
    t: &P,
    keys: &[u32],
    sel: &mut [u32],
    gidx: &mut [u32],
    n: usize,
) -> usize {
    let mut w = 0;
    for r in 0..n {
        let i = sel[r];
        let (hit, c) = t.lookup(keys[i as usize]);
        sel[w] = i;
        gidx[w] = gidx[r].wrapping_add(c);
        w += hit as usize;
    }
    w
}

/// Adds the selected rows' aggregate values into their groups.
pub fn aggregate(
    agg: &Aggregate,
    a: &[u32],
    b: &[u32],
    sel: &[u32],
    gidx: &[u32],
    sums: &mut [i64],
    rows: &mut [u64],
) {
    #[inline(always)]
    fn each(
        sel: &[u32],
        gidx: &[u32],
        sums: &mut [i64],
        rows: &mut [u64],
        value: impl Fn(usize) -> i64,
    ) {
        for (&r, &g) in sel.iter().zip(gidx) {
            let g = g as usize;
            sums[g] = sums[g].wrapping_add(value(r as usize));
            rows[g] += 1;
        }
    }
    match agg {
        Aggregate::Sum(_) => each(sel, gidx, sums, rows, |r| a[r] as i64),
        Aggregate::SumProduct(..) => each(sel, gidx, sums, rows, |r| a[r] as i64 * b[r] as i64),
        Aggregate::SumDifference(..) => each(sel, gidx, sums, rows, |r| a[r] as i64 - b[r] as i64),
    }
}
