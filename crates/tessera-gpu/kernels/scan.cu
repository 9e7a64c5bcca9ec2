// scan.cu: device-wide exclusive prefix sum of u32 block sizes (the encoders' block_starts),
// in three launches, CUB's reduce-then-scan shape:
//   1. `scan_reduce_u32`: each thread block sums its SCAN_TILE inputs into partials[block];
//   2. `scan_partials_u32`: one thread block turns partials into their exclusive prefix sums;
//   3. `scan_apply_u32`: each thread block scans its inputs again, adds its partial, writes
//      out[i] = in[0] + ... + in[i-1], and the last input's thread also writes out[n] (the total).
// Sums are modulo 2^32; the host keeps totals below that (it checks the worst case first).
#include "include/common.cuh"
#include "include/block_scan.cuh"

#define SCAN_THREADS TS_THREADS
#define SCAN_TILE (SCAN_THREADS * TS_ITEMS)

extern "C" __global__ void __launch_bounds__(SCAN_THREADS) scan_reduce_u32(const u32* __restrict__ in, u32 n,
                                                                          u32* __restrict__ partials) {
    __shared__ BlockScanStorage<u32> s;
    u32 items[TS_ITEMS];
    const u32 base = blockIdx.x * SCAN_TILE + threadIdx.x * TS_ITEMS;
#pragma unroll
    for (u32 k = 0; k < TS_ITEMS; ++k) items[k] = base + k < n ? in[base + k] : 0u;
    const u32 total = block_inclusive_sum(items, s, 0);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS) scan_partials_u32(u32* __restrict__ partials, u32 m) {
    __shared__ BlockScanStorage<u32> s;
    u32 carry = 0, parity = 0;
    for (u32 tile = 0; tile < m; tile += SCAN_TILE, ++parity) {
        u32 items[TS_ITEMS], orig[TS_ITEMS];
        const u32 base = tile + threadIdx.x * TS_ITEMS;
#pragma unroll
        for (u32 k = 0; k < TS_ITEMS; ++k) orig[k] = items[k] = base + k < m ? partials[base + k] : 0u;
        const u32 total = block_inclusive_sum(items, s, parity);
#pragma unroll
        for (u32 k = 0; k < TS_ITEMS; ++k)
            if (base + k < m) partials[base + k] = carry + items[k] - orig[k];
        carry += total;
    }
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS) scan_apply_u32(const u32* __restrict__ in, u32 n,
                                                                         const u32* __restrict__ partials,
                                                                         u32* __restrict__ out) {
    __shared__ BlockScanStorage<u32> s;
    u32 items[TS_ITEMS], orig[TS_ITEMS];
    const u32 base = blockIdx.x * SCAN_TILE + threadIdx.x * TS_ITEMS;
#pragma unroll
    for (u32 k = 0; k < TS_ITEMS; ++k) orig[k] = items[k] = base + k < n ? in[base + k] : 0u;
    block_inclusive_sum(items, s, 0);
    const u32 carry = partials[blockIdx.x];
#pragma unroll
    for (u32 k = 0; k < TS_ITEMS; ++k) {
        if (base + k < n) out[base + k] = carry + items[k] - orig[k];
        if (base + k + 1 == n) out[n] = carry + items[k];
    }
}
