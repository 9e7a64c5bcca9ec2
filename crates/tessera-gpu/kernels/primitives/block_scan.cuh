// block_scan.cuh: inclusive prefix sums over a tile held in registers, TS_ITEMS per thread in
// thread order (thread t holds tile positions 4t .. 4t+3), for TS_THREADS threads.
//
// Three layers, CUB-style: thread (serial over the 4 items), warp (shuffles), block (one shared
// word per warp). Arithmetic is modulo 2^lane (DFOR decoding) or plain u32 (RFOR run ends: at
// most 512 * 1023 fits). Every thread of the block must call it: it synchronizes once.
#ifndef TESSERA_BLOCK_SCAN_CUH
#define TESSERA_BLOCK_SCAN_CUH

#include "../include/common.cuh"

#define TS_WARPS (TS_THREADS / 32)

template <typename T> __device__ __forceinline__ T warp_inclusive_sum(T x) {
    const u32 lane = threadIdx.x & 31;
#pragma unroll
    for (u32 d = 1; d < 32; d <<= 1) {
        T y = __shfl_up_sync(0xFFFFFFFFu, x, d);
        if (lane >= d) x += y;
    }
    return x;
}

// warp_total is double-buffered: consecutive calls alternate `parity`, so a call need not wait
// for the previous call's readers (one barrier per scan instead of two). Calls two apart with
// the same parity are ordered by the barrier of the call between them.
template <typename T> struct BlockScanStorage {
    T warp_total[2][TS_WARPS];
};

// items become their inclusive prefix sums over the whole tile; returns the tile total.
template <typename T>
__device__ __forceinline__ T block_inclusive_sum(T (&items)[TS_ITEMS], BlockScanStorage<T>& s, u32 parity) {
#pragma unroll
    for (int k = 1; k < TS_ITEMS; ++k) items[k] += items[k - 1];
    const T thread_total = items[TS_ITEMS - 1];
    const T warp_incl = warp_inclusive_sum(thread_total);
    const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    T* totals = s.warp_total[parity & 1];
    if (lane == 31) totals[warp] = warp_incl;
    __syncthreads();
    T prefix = warp_incl - thread_total;
    T total = 0;
#pragma unroll
    for (u32 w = 0; w < TS_WARPS; ++w) {
        const T wt = totals[w];
        if (w < warp) prefix += wt;
        total += wt;
    }
#pragma unroll
    for (int k = 0; k < TS_ITEMS; ++k) items[k] += prefix;
    return total;
}

#endif
