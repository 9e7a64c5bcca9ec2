// query.cu: SELECT SUM(x) FROM t WHERE x BETWEEN lo AND hi, over a u32 column.
//
// `sum_between_{for,dfor,rfor}` run the query on the compressed column: FOR with the warp-level
// loader (LoadBitPackWarpSlab / LoadBitPackWarpBlock: a warp per slab of blocks, no shared
// memory), DFOR with a thread block loading a slab of tiles (LoadDBitPackSlab) and taking
// each into registers (LoadDBitPackTile), RFOR with a warp per block (LoadRBitPackWarp, then
// LoadRBitPackStripe); each filters and adds, so the decoded column never touches global memory
// (paper section 7). One launch
// covers every chunk of the column (the same chunk table as the decoders). Each thread keeps a
// u64 partial sum; a block reduction and one atomicAdd per thread block finish it.
// `sum_between_plain` is the same query over the uncompressed column (16-byte loads).
// Corrupt tiles report into status[chunk] and add nothing.
#include "../include/common.cuh"
#include "load_bitpack.cuh"
#include "load_rbitpack.cuh"
#include "bitpack.cuh"

__device__ __forceinline__ void ts_block_add(u64 sum, u64* __restrict__ result) {
    __shared__ u64 warp_sums[TS_THREADS / 32];
    sum = warp_sum(sum);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
        u64 total = 0;
        for (u32 w = 0; w < blockDim.x / 32; ++w) total += warp_sums[w];
        atomicAdd(result, total);
    }
}

__device__ __forceinline__ u64 ts_filter_sum(const u32 (&items)[TS_ITEMS], u32 valid, u32 lo, u32 hi) {
    u64 sum = 0;
#pragma unroll
    for (u32 k = 0; k < TS_ITEMS; ++k)
        if (k < valid && items[k] >= lo && items[k] <= hi) sum += items[k];
    return sum;
}

#define TS_QUERY_ARGS                                                                                      \
    const u32 *__restrict__ g, const ChunkDesc *__restrict__ chunks, u32 n_chunks, u32 total_slabs, u32 lo, \
        u32 hi, u64 *__restrict__ result, u64 *__restrict__ status

// FOR: one warp per slab of TS_FQ_BLOCKS blocks with the warp-level loader (no shared
// memory, no barrier until the final reduction); lane l filters value l of each miniblock.
// A warp's slab is the host's FOR slab (TS_FOR_SLAB_L32 tiles of 4 blocks), so the chunk
// table's first_slab indexes it.
//
// The kernel is issue-bound (ncu, H100, 24 bits: ~140 warp instructions per block
// of 128 values, 0.7-0.78 issued per cycle and scheduler), so what it is shaped for is few
// instructions per block. sm_90 SASS of the block loop (NVRTC 13.0): 58 instructions when the
// slab's blocks have equal bit_widths (q.equal; uniform data nearly always has), 89 when not,
// against 125 for the loop this replaced (one loop for both, testing q.ok and the partial
// block per block, four 64-bit address instructions per load, the mask and source lanes per
// miniblock). Per slab, the chunk search is ts_find_chunk_warp (2 rounds up to 1024 chunks,
// not 8 dependent loads for 250 chunks) and the block checks are branch-free where they pass.
// Caching the chunk across a warp's slabs would not pay: with the host's grid a warp takes
// about two slabs, a grid stride apart, in different chunks.
#define TS_FQ_BLOCKS (TS_FOR_SLAB_L32 * TS_DFOR_TILE_BLOCKS)
#define TS_FQ_WARPS (TS_THREADS / 32)

// lo <= x <= hi as one unsigned comparison: x - lo <= hi - lo = range. Adds the values of
// items[m] (value 32m + lane of a block) that pass; with PARTIAL only those of the block's
// first `valid` values.
template <bool PARTIAL>
__device__ __forceinline__ void ts_fq_add(const u32 (&items)[TS_FOR_MINIBLOCKS], u32 lo, u32 range, u32 valid,
                                          u64& sum) {
    const u32 lane = threadIdx.x & 31;
#pragma unroll
    for (u32 m = 0; m < TS_FOR_MINIBLOCKS; ++m)
        if ((!PARTIAL || 32 * m + lane < valid) && items[m] - lo <= range) sum += items[m];
}

// The slab's blocks: [0, whole) whole, then, when whole < q.blocks, the chunk's last block
// with its first `tail` values. EQUAL is q.equal, known before the loop, so the loop carries no
// test of it.
template <bool EQUAL>
__device__ __forceinline__ void ts_fq_slab(const u32* __restrict__ base, const ForWarpSlab& q, u32 whole, u32 tail,
                                            u32 lo, u32 range, u64& sum) {
    u32 w[TS_FOR_MINIBLOCKS] = {0, 0, 0, 0}, items[TS_FOR_MINIBLOCKS];
#pragma unroll 1
    for (u32 j = 0; j < whole; ++j) {
        LoadBitPackWarpBlock<EQUAL>(base, q, j, w, items);
        ts_fq_add<false>(items, lo, range, TS_FOR_BLOCK_VALUES, sum);
    }
    if (whole < q.blocks) {
        LoadBitPackWarpBlock<EQUAL>(base, q, whole, w, items);
        ts_fq_add<true>(items, lo, range, tail, sum);
    }
}

extern "C" __global__ void __launch_bounds__(TS_THREADS, 12) sum_between_for(TS_QUERY_ARGS) {
    const u32 range = hi - lo;
    const bool empty = lo > hi;  // an empty range adds nothing
    u64 sum = 0;
    for (u32 slab = blockIdx.x * TS_FQ_WARPS + (threadIdx.x >> 5); slab < total_slabs;
         slab += gridDim.x * TS_FQ_WARPS) {
        const u32 ci = ts_find_chunk_warp(chunks, n_chunks, slab);
        const ChunkDesc c = ts_load_chunk(chunks, ci);
        const ForWarpSlab q = LoadBitPackWarpSlab<TS_FQ_BLOCKS>(g, c, slab - c.first_slab, status + ci);
        if (empty) continue;  // the checks above still ran and reported
        // Per block: three shuffles (block_starts entry, reference, bit-width word), a 64-bit
        // multiply-add per load from `base`, no test of q.ok (a failed block decodes to zeros
        // and adds 0) and no test for a partial block: only the chunk's last block can be one,
        // and it is taken after the loop.
        const u32* __restrict__ base = ts_opaque_ptr(g + q.L.data + 1);
        const u32 tail = c.total_count % TS_FOR_BLOCK_VALUES;
        const u32 whole = q.blocks - (tail != 0 && q.k0 + q.blocks == q.L.block_count ? 1u : 0u);
        if (q.equal) ts_fq_slab<true>(base, q, whole, tail, lo, range, sum);
        else ts_fq_slab<false>(base, q, whole, tail, lo, range, sum);
        // (Tried on the H100 and slower: fetching block j + 1 while unpacking block j, and
        // issuing the loads of 2 or 4 blocks before unpacking any, by about 10% at 8 and 24
        // bits per value. The kernel is issue-bound, not latency-bound: more loads in flight
        // only cost registers (the most-sampled stall was the first use of the block's loads).
        // A first "one 64-bit base per block with 32-bit miniblock offsets" was slower by about
        // 18%; its SASS was not kept. Here the base is per
        // slab and each load address one IMAD.WIDE.U32 (ts_opaque_ptr keeps the compiler from
        // folding it back into 64-bit index arithmetic).
        // Tried for SASS count only: the EQUAL loop unrolled by 2, 115 instructions per 2
        // blocks against 2 x 58; the general path's loads as `mov 0; @p ld` (93 against 89) or
        // as `w = l < bw ? __ldg(p) : 0` in C++ (a zero or a predicated move per load).)
    }
    ts_block_add(sum, result);
}

extern "C" __global__ void TS_TILE_BOUNDS sum_between_dfor(TS_QUERY_ARGS) {
    __shared__ ForSlabStorage<32, TS_FOR_SLAB_L32> s;
    u32 items[TS_ITEMS];
    u64 sum = 0;
    for (u32 slab = blockIdx.x; slab < total_slabs; slab += gridDim.x) {
        const u32 ci = ts_find_chunk(chunks, n_chunks, slab);
        const ChunkDesc c = ts_load_chunk(chunks, ci);
        const ForSlab q = LoadDBitPackSlab<32, TS_FOR_SLAB_L32>(g, c, slab - c.first_slab, s, status + ci);
        // One warp per tile (LoadDBitPackWarpStripe): no thread-block barrier per tile.
        for (u32 tile = threadIdx.x >> 5; tile < q.tiles; tile += TS_THREADS / 32) {
            u32 carry = ts_dfor_first_value<32, TS_FOR_SLAB_L32>(s, q, tile);
#pragma unroll 1
            for (u32 k = 0; k < TS_DFOR_TILE_BLOCKS; ++k) {
                const bool ok = LoadDBitPackWarpStripe<32, TS_FOR_SLAB_L32>(s, q, tile, k, carry, items);
                const u32 pos = (q.first_tile + tile) * TS_TILE_VALUES + k * TS_FOR_BLOCK_VALUES + (threadIdx.x & 31) * TS_ITEMS;
                const u32 valid = pos < c.total_count ? ts_min(TS_ITEMS, c.total_count - pos) : 0u;
                if (ok) sum += ts_filter_sum(items, valid, lo, hi);
            }
        }
    }
    ts_block_add(sum, result);
}

extern "C" __global__ void TS_RFOR_BOUNDS sum_between_rfor(TS_QUERY_ARGS) {
    __shared__ RforWarpStorage<32> s[TS_THREADS / 32];
    u32 items[TS_ITEMS];
    u64 sum = 0;
    const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for (u32 slab = blockIdx.x; slab < total_slabs; slab += gridDim.x) {
        const RforTask t = rfor_task(chunks, n_chunks, slab, warp);  // one block per warp
        if (!t.has_block) continue;
        RforBlock<32> blk = LoadRBitPackWarp<32>(g, t.c, t.L, t.k, 0u, s[warp], status + t.ci);
        if (blk.mode == TS_RFOR_CORRUPT) continue;
#pragma unroll
        for (u32 q = 0; q < 4; ++q) {
            LoadRBitPackStripe<32>(blk, s[warp], q, items);
            const u32 pos = t.k * TS_RFOR_BLOCK_VALUES + 128 * q + TS_ITEMS * lane;
            const u32 valid = pos < t.c.total_count ? ts_min(TS_ITEMS, t.c.total_count - pos) : 0u;
            sum += ts_filter_sum(items, valid, lo, hi);
        }
    }
    ts_block_add(sum, result);
}

// The same query through the paper's one-tile loaders (LoadBitPack, LoadDBitPack,
// LoadRBitPack: one tile per thread block per step, thread t holding values 4t .. 4t+3). Slower
// than the slab kernels above; kept so that the single-tile API is compiled and tested.
#define TS_QUERY_ARGS_TILES                                                                               \
    const u32 *__restrict__ g, const ChunkDesc *__restrict__ chunks, u32 n_chunks, u32 total_tiles, u32 lo, \
        u32 hi, u64 *__restrict__ result, u64 *__restrict__ status

template <int CODEC>
__device__ __forceinline__ void sum_between_tilewise(TS_QUERY_ARGS_TILES) {
    __shared__ ForSlabStorage<32, 1> sf;
    __shared__ RforWarpStorage<32> sr[TS_THREADS / 32];
    u32 items[TS_ITEMS];
    u64 sum = 0;
    for (u32 tile = blockIdx.x; tile < total_tiles; tile += gridDim.x) {
        const u32 ci = ts_find_chunk_by_tile(chunks, n_chunks, tile);
        const ChunkDesc c = ts_load_chunk(chunks, ci);
        const u32 local = tile - c.first_tile;
        bool ok;
        if (CODEC == 1) ok = LoadBitPack<32>(g, c, local, sf, items, status + ci);
        else if (CODEC == 2) ok = LoadDBitPack<32>(g, c, local, sf, items, status + ci);
        else ok = LoadRBitPack<32>(g, c, local, sr, items, status + ci);
        const u32 pos = local * TS_TILE_VALUES + threadIdx.x * TS_ITEMS;
        const u32 valid = pos < c.total_count ? ts_min(TS_ITEMS, c.total_count - pos) : 0u;
        if (ok) sum += ts_filter_sum(items, valid, lo, hi);
    }
    ts_block_add(sum, result);
}

extern "C" __global__ void TS_RFOR_BOUNDS sum_between_tilewise_for(TS_QUERY_ARGS_TILES) {
    sum_between_tilewise<1>(g, chunks, n_chunks, total_tiles, lo, hi, result, status);
}
extern "C" __global__ void TS_RFOR_BOUNDS sum_between_tilewise_dfor(TS_QUERY_ARGS_TILES) {
    sum_between_tilewise<2>(g, chunks, n_chunks, total_tiles, lo, hi, result, status);
}
extern "C" __global__ void TS_RFOR_BOUNDS sum_between_tilewise_rfor(TS_QUERY_ARGS_TILES) {
    sum_between_tilewise<3>(g, chunks, n_chunks, total_tiles, lo, hi, result, status);
}

extern "C" __global__ void __launch_bounds__(TS_THREADS) sum_between_plain(const u32* __restrict__ values, u64 n, u32 lo,
                                                                          u32 hi, u64* __restrict__ result) {
    u64 sum = 0;
    const u64 quads = n / 4;
    const uint4* v4 = reinterpret_cast<const uint4*>(values);
    const u64 stride = (u64)gridDim.x * blockDim.x;
    // Four independent 16-byte loads in flight per thread per step.
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < quads; i += 4 * stride) {
        uint4 q[4];
#pragma unroll
        for (u32 k = 0; k < 4; ++k) q[k] = i + k * stride < quads ? __ldg(&v4[i + k * stride]) : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (u32 k = 0; k < 4; ++k) {
            const u32 items[TS_ITEMS] = {q[k].x, q[k].y, q[k].z, q[k].w};
            sum += ts_filter_sum(items, i + k * stride < quads ? TS_ITEMS : 0u, lo, hi);
        }
    }
    for (u64 i = quads * 4 + (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const u32 x = values[i];
        if (x >= lo && x <= hi) sum += x;
    }
    ts_block_add(sum, result);
}
