// bitpack.cuh: the encoder side of int-common §5, one warp at a time.
//
// `warp_pack_miniblock` writes the `ceil(entries * bw / 32)` words of one miniblock whose packed
// values sit in shared memory: lane w builds output word w (and w + 32 for lane-64 widths over
// 32) by OR-ing in the few values whose bits overlap it, so every word is written exactly once,
// coalesced, with its unused high bits zero (the format is deterministic: CPU and GPU encoders
// must agree byte for byte). Warp reductions (min, or) are butterfly shuffles, for u32 and u64.
#ifndef TESSERA_BITPACK_CUH
#define TESSERA_BITPACK_CUH

#include "../include/common.cuh"

template <typename T> __device__ __forceinline__ T warp_min(T x) {
#pragma unroll
    for (u32 d = 16; d > 0; d >>= 1) {
        const T y = __shfl_xor_sync(0xFFFFFFFFu, x, d);
        x = y < x ? y : x;
    }
    return x;
}

template <typename T> __device__ __forceinline__ T warp_or(T x) {
#pragma unroll
    for (u32 d = 16; d > 0; d >>= 1) x |= __shfl_xor_sync(0xFFFFFFFFu, x, d);
    return x;
}

template <typename T> __device__ __forceinline__ T warp_sum(T x) {
#pragma unroll
    for (u32 d = 16; d > 0; d >>= 1) x += __shfl_xor_sync(0xFFFFFFFFu, x, d);
    return x;
}

// int-common §5: the smallest width that holds x.
__device__ __forceinline__ u32 ts_bit_width(u32 x) { return 32 - __clz(x); }
__device__ __forceinline__ u32 ts_bit_width(u64 x) { return 64 - __clzll(x); }

template <typename S>
__device__ __forceinline__ void warp_pack_miniblock(const S* src, u32 entries, u32 bw, u32* __restrict__ dst) {
    const u32 words = (entries * bw + 31) >> 5;
    for (u32 w = threadIdx.x & 31; w < words; w += 32) {
        const u32 lo_bit = w * 32;
        const u32 first = lo_bit / bw;
        const u32 last = ts_min(entries - 1, (lo_bit + 31) / bw);
        u32 word = 0;
        for (u32 i = first; i <= last; ++i) {
            const u64 v = (u64)src[i];
            const u32 pos = i * bw;
            if (pos >= lo_bit) word |= (u32)(v << (pos - lo_bit));
            else word |= (u32)(v >> (lo_bit - pos));
        }
        dst[w] = word;
    }
}

// A chunk header (int-common §3), written by one lane.
__device__ __forceinline__ void ts_write_header(u32* __restrict__ dst, u32 block_size, u32 miniblocks, u32 count,
                                                u32 tile_blocks) {
    dst[0] = block_size;
    dst[1] = miniblocks;
    dst[2] = count;
    dst[3] = tile_blocks;
}

#endif
