//! `SELECT SUM(x) FROM t WHERE x BETWEEN lo AND hi` on the GPU, over a u32 column.
//!
//! On a compressed column the query kernels (`kernels/int/query.cu`) call LoadBitPack /
//! LoadDBitPack / LoadRBitPack to get each tile in registers and never write the decoded
//! column; one launch
//! per codec present (plain chunks are summed by the uncompressed kernel over the column's
//! plain bytes, which works because a sum does not care about order). The same query over an
//! uncompressed column in device memory is [`Gpu::sum_between_values`].

use cudarc::driver::CudaSlice;
use tessera_format::{CodecId, Error, LogicalType, Result};

use super::decode::DeviceColumn;
use super::layout::THREADS;
use crate::kernels::Module;
use crate::runtime::Gpu;

/// Most thread blocks per SM of the grid-stride query over plain values: enough to fill every SM
/// several times over, each thread block looping over the rest.
const PLAIN_BLOCKS_PER_SM: u32 = 16;
/// Most thread blocks per SM of the fused queries' persistent grid: each thread block adds many
/// tiles before its one atomic on the result, so the cap also bounds the atomics.
const FUSED_BLOCKS_PER_SM: u32 = PLAIN_BLOCKS_PER_SM * 8;
/// Most thread blocks per SM of the one-tile queries, each looping over tiles.
const TILEWISE_BLOCKS_PER_SM: u32 = 64;

fn query_kernel(codec: CodecId) -> Result<&'static str> {
    Ok(match codec {
        CodecId::For => "sum_between_for",
        CodecId::Dfor => "sum_between_dfor",
        CodecId::Rfor => "sum_between_rfor",
        other => {
            return Err(Error::InvalidArgument(format!(
                "no fused query for codec {}",
                other.name()
            )))
        }
    })
}

impl Gpu {
    /// Thread blocks for a grid-stride kernel: enough to fill every SM several times over.
    fn stride_grid(&self, items: u64) -> u32 {
        let full = u64::from(self.info.sm_count.max(1) * PLAIN_BLOCKS_PER_SM);
        items.div_ceil(THREADS as u64).clamp(1, full) as u32
    }

    /// Queues the fused query on `col` (a u32 column) into `result` (one u64, zeroed here).
    pub fn enqueue_sum_between(
        &self,
        col: &DeviceColumn,
        lo: u32,
        hi: u32,
        result: &mut CudaSlice<u64>,
    ) -> Result<()> {
        if col.ty != LogicalType::U32 {
            return Err(Error::InvalidArgument(format!(
                "sum_between needs a u32 column, not {}",
                col.ty.name()
            )));
        }
        let res = self.ptr(result);
        self.fill_bytes_raw(res, 0, 8)?;
        let status = self.ptr(&col.status);
        self.fill_bytes_raw(status, 0xFF, col.status_slots * 8)?;
        // The query writes the slots: the next decode fills them again.
        col.status_fresh
            .store(false, std::sync::atomic::Ordering::Relaxed);
        let words = self.ptr(&col.words);
        for g in &col.batches {
            let f = self.function(Module::Query, query_kernel(g.codec)?)?;
            let table = self.ptr(&g.table);
            let n_chunks = g.chunks.len() as u32;
            let status_g = status + 8 * g.status_base as u64;
            // A persistent grid: each thread block adds many tiles before its one atomic. The
            // FOR kernel gives each of its warps a slab, so it needs a quarter of the blocks.
            let per_block = if g.codec == CodecId::For {
                THREADS / 32
            } else {
                1
            };
            let grid = self
                .tile_grid(g.total_slabs.div_ceil(per_block))
                .min(self.info.sm_count.max(1) * FUSED_BLOCKS_PER_SM);
            // SAFETY: matches `sum_between_<codec>(g, chunks, n_chunks, total_slabs, lo, hi,
            // result, status)`; the table, payload words, result and status buffers are those of
            // the column, checked at upload, and live until the caller synchronizes.
            unsafe {
                self.launch(
                    &f,
                    grid,
                    THREADS,
                    &[
                        &words,
                        &table,
                        &n_chunks,
                        &g.total_slabs,
                        &lo,
                        &hi,
                        &res,
                        &status_g,
                    ],
                )?;
            }
        }
        if !col.plain_chunks.is_empty() {
            let plain = self.ptr(&col.plain);
            let n = col.plain_chunks.iter().map(|p| p.bytes).sum::<u64>() / 4;
            self.launch_sum_plain(plain, n, lo, hi, res)?;
        }
        Ok(())
    }

    fn launch_sum_plain(&self, values: u64, n: u64, lo: u32, hi: u32, res: u64) -> Result<()> {
        let f = self.function(Module::Query, "sum_between_plain")?;
        // SAFETY: matches `sum_between_plain(values, n, lo, hi, result)`; `values` addresses n
        // u32 values (16-byte aligned: device allocations are) and `res` one u64.
        unsafe {
            self.launch(
                &f,
                self.stride_grid(n / 4),
                THREADS,
                &[&values, &n, &lo, &hi, &res],
            )
        }
    }

    /// The same query through the paper's one-tile loaders (`LoadBitPack`, `LoadDBitPack`,
    /// `LoadRBitPack`: one tile per thread block per step). Slower than [`Self::sum_between`];
    /// it keeps the single-tile device API compiled and tested
    /// ([`crate::bench_hooks::sum_between_tilewise`]).
    pub(crate) fn sum_between_tilewise(&self, col: &DeviceColumn, lo: u32, hi: u32) -> Result<u64> {
        if col.ty != LogicalType::U32 {
            return Err(Error::InvalidArgument(format!(
                "sum_between needs a u32 column, not {}",
                col.ty.name()
            )));
        }
        let result = self.alloc::<u64>(1)?;
        let res = self.ptr(&result);
        self.fill_bytes_raw(res, 0, 8)?;
        let status = self.ptr(&col.status);
        self.fill_bytes_raw(status, 0xFF, col.status_slots * 8)?;
        // The query writes the slots: the next decode fills them again.
        col.status_fresh
            .store(false, std::sync::atomic::Ordering::Relaxed);
        let words = self.ptr(&col.words);
        for g in &col.batches {
            let name = match g.codec {
                CodecId::For => "sum_between_tilewise_for",
                CodecId::Dfor => "sum_between_tilewise_dfor",
                CodecId::Rfor => "sum_between_tilewise_rfor",
                other => {
                    return Err(Error::InvalidArgument(format!(
                        "no fused query for {}",
                        other.name()
                    )))
                }
            };
            let f = self.function(Module::Query, name)?;
            let table = self.ptr(&g.table);
            let n_chunks = g.chunks.len() as u32;
            let tiles: u32 = g.chunks.iter().map(|c| c.shape.tiles()).sum();
            let status_g = status + 8 * g.status_base as u64;
            let grid = tiles.clamp(1, self.info.sm_count.max(1) * TILEWISE_BLOCKS_PER_SM);
            // SAFETY: matches `sum_between_tilewise_<codec>(g, chunks, n_chunks, total_tiles, lo,
            // hi, result, status)`; the buffers are the column's (checked at upload) and live
            // until the download below synchronizes.
            unsafe {
                self.launch(
                    &f,
                    grid,
                    THREADS,
                    &[&words, &table, &n_chunks, &tiles, &lo, &hi, &res, &status_g],
                )?;
            }
        }
        if !col.plain_chunks.is_empty() {
            let n = col.plain_chunks.iter().map(|p| p.bytes).sum::<u64>() / 4;
            self.launch_sum_plain(self.ptr(&col.plain), n, lo, hi, res)?;
        }
        self.finish_decode(col, None)?;
        let mut sum = [0u64];
        self.download(&result, &mut sum)?;
        Ok(sum[0])
    }

    /// The fused query over a compressed u32 column: SUM(x) for lo <= x <= hi.
    pub fn sum_between(&self, col: &DeviceColumn, lo: u32, hi: u32) -> Result<u64> {
        let mut result = self.alloc::<u64>(1)?;
        self.enqueue_sum_between(col, lo, hi, &mut result)?;
        self.finish_decode(col, None)?;
        let mut sum = [0u64];
        self.download(&result, &mut sum)?;
        Ok(sum[0])
    }

    /// Queues the query over an uncompressed column of `n` values into `result` (zeroed here).
    pub fn enqueue_sum_between_values(
        &self,
        values: &CudaSlice<u32>,
        n: usize,
        lo: u32,
        hi: u32,
        result: &mut CudaSlice<u64>,
    ) -> Result<()> {
        if n > values.len() {
            return Err(Error::InvalidArgument(
                "more values than the device buffer holds".into(),
            ));
        }
        let res = self.ptr(result);
        self.fill_bytes_raw(res, 0, 8)?;
        self.launch_sum_plain(self.ptr(values), n as u64, lo, hi, res)
    }

    /// The query over an uncompressed u32 column in device memory.
    pub fn sum_between_values(
        &self,
        values: &CudaSlice<u32>,
        n: usize,
        lo: u32,
        hi: u32,
    ) -> Result<u64> {
        let mut result = self.alloc::<u64>(1)?;
        self.enqueue_sum_between_values(values, n, lo, hi, &mut result)?;
        let mut sum = [0u64];
        self.download(&result, &mut sum)?;
        Ok(sum[0])
    }
}
