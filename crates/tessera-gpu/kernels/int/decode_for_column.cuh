// decode_for_column.cuh: the column-decode loop shared by for_decode_* and dfor_decode_*.
//
// Each thread block walks slabs of tiles (grid-stride), finds the slab's chunk, loads the
// slab once (LoadBitPackSlab / LoadDBitPackSlab: block_starts checked, words copied to shared
// memory), then unpacks tile by tile into registers and stores the chunk's real values only.
// DELTA (compile time) picks the DFOR loaders; everything else is identical for the two codecs.
#ifndef TESSERA_DECODE_FOR_COLUMN_CUH
#define TESSERA_DECODE_FOR_COLUMN_CUH

#include "../include/common.cuh"
#include "load_bitpack.cuh"
#include "store.cuh"

// The loop of thread block `block` of `blocks` (the grid, or a job's share of one: jobs.cu) with
// the caller's shared storage.
template <int LANE, int OUT_BYTES, int G, bool DELTA>
__device__ __forceinline__ void ts_decode_for_column_in(const u32* __restrict__ g, const ChunkDesc* __restrict__ chunks,
                                                        u32 n_chunks, u32 total_slabs, u8* __restrict__ out, u64 flip,
                                                        u64* __restrict__ status, ForSlabStorage<LANE, G>& s, u32 block,
                                                        u32 blocks) {
    typename Lane<LANE>::T items[TS_ITEMS];
    for (u32 slab = block; slab < total_slabs; slab += blocks) {
        const u32 ci = ts_find_chunk(chunks, n_chunks, slab);
        const ChunkDesc c = ts_load_chunk(chunks, ci);
        const ForSlab q = DELTA ? LoadDBitPackSlab<LANE, G>(g, c, slab - c.first_slab, s, status + ci)
                                 : LoadBitPackSlab<LANE, G>(g, c, slab - c.first_slab, s, status + ci);
        if (DELTA && G >= TS_THREADS / 32) {
            // One warp per tile: the scan needs no thread-block barrier. (Lane 64 slabs hold
            // 2 tiles: half the warps would idle, so they keep the block-wide scan below.)
            const u32 lane = threadIdx.x & 31;
            for (u32 tile = threadIdx.x >> 5; tile < q.tiles; tile += TS_THREADS / 32) {
                typename Lane<LANE>::T carry = ts_dfor_first_value<LANE, G>(s, q, tile);
#pragma unroll 1
                for (u32 k = 0; k < TS_DFOR_TILE_BLOCKS; ++k) {
                    const bool ok = LoadDBitPackWarpStripe<LANE, G>(s, q, tile, k, carry, items);
                    const u32 pos = (q.first_tile + tile) * TS_TILE_VALUES + k * TS_FOR_BLOCK_VALUES + lane * TS_ITEMS;
                    const u32 valid = pos < c.total_count ? ts_min(TS_ITEMS, c.total_count - pos) : 0u;
                    if (ok && valid) ts_store_items<OUT_BYTES>(out, c.out_index + pos, items, valid, flip, status + ci, pos);
                }
            }
            continue;
        }
        for (u32 tile = 0; tile < q.tiles; ++tile) {
            const bool ok = DELTA ? LoadDBitPackTile<LANE, G>(s, q, tile, items, status + ci)
                                  : LoadBitPackTile<LANE, G>(s, q, tile, items, status + ci);
            const u32 pos = (q.first_tile + tile) * TS_TILE_VALUES + threadIdx.x * TS_ITEMS;
            const u32 valid = pos < c.total_count ? ts_min(TS_ITEMS, c.total_count - pos) : 0u;
            if (ok && valid) ts_store_items<OUT_BYTES>(out, c.out_index + pos, items, valid, flip, status + ci, pos);
        }
    }
}

template <int LANE, int OUT_BYTES, int G, bool DELTA>
__device__ __forceinline__ void ts_decode_for_column(const u32* __restrict__ g, const ChunkDesc* __restrict__ chunks,
                                                     u32 n_chunks, u32 total_slabs, u8* __restrict__ out, u64 flip,
                                                     u64* __restrict__ status) {
    __shared__ ForSlabStorage<LANE, G> s;
    ts_decode_for_column_in<LANE, OUT_BYTES, G, DELTA>(g, chunks, n_chunks, total_slabs, out, flip, status, s,
                                                       blockIdx.x, gridDim.x);
}

#endif
