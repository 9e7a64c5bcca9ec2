// decode_rfor_column.cuh: the column-decode loop of rfor_decode_* (rfor.cu) and of the RFOR jobs
// of int_decode_jobs (jobs.cu): a thread block takes a slab of 4 blocks of 512 values and each
// warp decodes one of them alone, with no barrier.
#ifndef TESSERA_DECODE_RFOR_COLUMN_CUH
#define TESSERA_DECODE_RFOR_COLUMN_CUH

#include "../include/common.cuh"
#include "load_rbitpack.cuh"
#include "store.cuh"

// The loop of thread block `block` of `blocks` (the grid, or a job's share of one: jobs.cu) with
// the caller's shared storage, one RforWarpStorage a warp.
template <int LANE, int OUT_BYTES>
__device__ __forceinline__ void rfor_decode_in(const u32* __restrict__ g, const ChunkDesc* __restrict__ chunks,
                                               u32 n_chunks, u32 total_slabs, u8* __restrict__ out, u64 flip,
                                               u64* __restrict__ status, RforWarpStorage<LANE>* s, u32 block,
                                               u32 blocks) {
    typedef typename Lane<LANE>::T T;
    T items[TS_ITEMS];
    const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    // Signed types: flipping the top bit of a 32- or 64-bit output is adding it, folded into
    // value_reference. Narrow outputs keep the flip at the store, after their range check.
    const T add = OUT_BYTES >= 4 ? (T)flip : (T)0;
    const u64 store_flip = OUT_BYTES >= 4 ? 0ull : flip;
    for (u32 slab = block; slab < total_slabs; slab += blocks) {
        // One warp per block, no thread-block barrier.
        const RforTask t = rfor_task(chunks, n_chunks, slab, warp);
        if (!t.has_block) continue;
        RforBlock<LANE> blk = LoadRBitPackWarp<LANE>(g, t.c, t.L, t.k, add, s[warp], status + t.ci);
        if (blk.mode == TS_RFOR_CORRUPT) continue;
#pragma unroll
        for (u32 q = 0; q < 4; ++q) {
            LoadRBitPackStripe<LANE>(blk, s[warp], q, items);
            const u32 pos = t.k * TS_RFOR_BLOCK_VALUES + 128 * q + TS_ITEMS * lane;
            const u32 valid = pos < t.c.total_count ? ts_min(TS_ITEMS, t.c.total_count - pos) : 0u;
            if (valid) ts_store_items<OUT_BYTES>(out, t.c.out_index + pos, items, valid, store_flip, status + t.ci, pos);
        }
    }
}

template <int LANE, int OUT_BYTES>
__device__ __forceinline__ void rfor_decode(const u32* __restrict__ g, const ChunkDesc* __restrict__ chunks, u32 n_chunks,
                                            u32 total_slabs, u8* __restrict__ out, u64 flip, u64* __restrict__ status) {
    __shared__ RforWarpStorage<LANE> s[TS_THREADS / 32];
    rfor_decode_in<LANE, OUT_BYTES>(g, chunks, n_chunks, total_slabs, out, flip, status, s, blockIdx.x, gridDim.x);
}

#endif
