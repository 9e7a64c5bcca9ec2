//! The merge path (`kernels/primitives/merge.cuh`): where diagonal d of the merge of two sorted
//! sequences crosses them, so that each thread merges its own items. The bitmap operations use it
//! inside their kernels; the test entry point here runs it alone (`ds_merge_u32`).

use tessera_format::{Error, Result};

use crate::kernels::Module;
use crate::runtime::Gpu;

/// Merged items each thread of `ds_merge_u32` writes (`DS_MERGE_ITEMS` in primitives.cu).
const MERGE_ITEMS: u64 = 8;
/// Threads per thread block of `ds_merge_u32` (its launch bounds).
const MERGE_THREADS: u32 = 128;

/// Merge path over two sorted u32 sequences (the test entry point,
/// [`crate::bench_hooks::merge_u32`]): the merged items and, per item, whether it came from `b`.
pub(crate) fn merge_u32(gpu: &Gpu, a: &[u32], b: &[u32]) -> Result<(Vec<u32>, Vec<u32>)> {
    let n = a.len() + b.len();
    let (d_a, d_b) = (gpu.upload(a)?, gpu.upload(b)?);
    let (d_out, d_from) = (gpu.alloc::<u32>(n)?, gpu.alloc::<u32>(n)?);
    if n > 0 {
        let f = gpu.function(Module::Primitives, "ds_merge_u32")?;
        let (pa, pb, po, pf) = (
            gpu.ptr(&d_a),
            gpu.ptr(&d_b),
            gpu.ptr(&d_out),
            gpu.ptr(&d_from),
        );
        let (na, nb) = (a.len() as u32, b.len() as u32);
        let grid = u32::try_from((n as u64).div_ceil(u64::from(MERGE_THREADS) * MERGE_ITEMS))
            .map_err(|_| Error::InvalidArgument("merge too large for one GPU launch".into()))?;
        // SAFETY: matches ds_merge_u32(a, na, b, nb, out, from_b); out and from_b hold na + nb.
        unsafe {
            gpu.launch(&f, grid, MERGE_THREADS, &[&pa, &na, &pb, &nb, &po, &pf])?;
        }
    }
    let (mut out, mut from) = (vec![0u32; n], vec![0u32; n]);
    if n > 0 {
        gpu.download(&d_out, &mut out)?;
        gpu.download(&d_from, &mut from)?;
    }
    Ok((out, from))
}

#[cfg(test)]
mod tests {
    #[test]
    fn merge_items_match_the_test_kernel() {
        let src = crate::kernels::source(crate::kernels::Module::Primitives).expect("embedded");
        assert!(src.contains(&format!("#define DS_MERGE_ITEMS {}", super::MERGE_ITEMS)));
        assert!(src.contains(&format!("__launch_bounds__({})", super::MERGE_THREADS)));
    }
}
