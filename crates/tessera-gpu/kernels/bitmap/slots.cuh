// slots.cuh (part of bitmap.cu): slot ends of a stream: the validation of uploaded words, and
// the scans that decompression and the merge-path operations read.
#ifndef TESSERA_BITMAP_SLOTS_CUH
#define TESSERA_BITMAP_SLOTS_CUH
#include "../include/common.cuh"
#include "../primitives/scan.cuh"
#include "wah.cuh"

// ---- slot ends (validation, and the scans of decompression and the operations) -----------------

// Reduce: u64 sums of slot counts per tile, and the first fill_word with counter 0 (status =
// its word index; all ones = none).
template <bool PLWAH>
__device__ __forceinline__ void bm_slots_reduce(const u32* __restrict__ words, u64 m, u64* __restrict__ partials,
                                                u64* __restrict__ status) {
    __shared__ DsBlockStorage<DS_THREADS, u64> s;
    const u64 n = PLWAH ? 2 * m : m;
    const u64 base = (u64)blockIdx.x * DS_TILE + (u64)threadIdx.x * DS_ITEMS;
    u64 acc = 0;
#pragma unroll
    for (int k = 0; k < DS_ITEMS; ++k) {
        const u64 i = base + k;
        if (i < n) {
            u32 v, c;
            bm_slot_at<PLWAH>(words, i, v, c);
            acc += c;
            const u32 w = words[PLWAH ? (i >> 1) : i];
            if ((!PLWAH || (i & 1) == 0) && (w & BM_FILL_FLAG) && c == 0) atomicMin(status, PLWAH ? (i >> 1) : i);
        }
    }
    u64 total;
    ds_block_exclusive<DS_THREADS>(acc, DsSum<u64>(), (u64)0, s, total);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

template <bool PLWAH> struct BmSlotCountLoad {
    const u32* words;
    __device__ __forceinline__ u64 operator()(u64 i) const {
        u32 v, c;
        bm_slot_at<PLWAH>(words, i, v, c);
        return c;
    }
};
struct BmEndsStore {
    u32* ends;
    __device__ __forceinline__ void operator()(u64 i, u64, u64 incl) const { ends[i] = (u32)incl; }
};

#define BM_SLOTS_KERNELS(NAME, PLWAH)                                                                              \
    extern "C" __global__ void __launch_bounds__(DS_THREADS)                                                       \
        bm_slots_reduce_##NAME(const u32* __restrict__ words, u64 m, u64* __restrict__ partials, u64* __restrict__ status) { \
        bm_slots_reduce<PLWAH>(words, m, partials, status);                                                        \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(DS_THREADS)                                                       \
        bm_slots_apply_##NAME(const u32* __restrict__ words, u64 m, const u64* __restrict__ partials, u32* __restrict__ ends) { \
        __shared__ DsBlockStorage<DS_THREADS, u64> s;                                                              \
        BmSlotCountLoad<PLWAH> load{words};                                                                        \
        BmEndsStore store{ends};                                                                                   \
        ds_tile_apply<DS_THREADS, DS_ITEMS>((u64)blockIdx.x, PLWAH ? 2 * m : m, load, store, DsSum<u64>(), (u64)0, \
                                            partials, s);                                                          \
    }
BM_SLOTS_KERNELS(wah, false)
BM_SLOTS_KERNELS(plwah, true)

// Slot ends of both operands of an operation in one launch (src/bitmap/ `binary_device`):
// blocks 0 .. tiles_a - 1 scan a's slots, the rest b's, each operand with its own decoupled
// look-back (status: tiles_a then tiles_b zeroed words; b's tiles wait only on b's, which have
// lower block indices). Only for validated streams (DeviceBitmap): group totals < 2^32, so the
// u32 ends are exact. Each thread keeps its DS_ITEMS counts in registers between the tile's
// fold and its stores, so the words are read once.
template <bool PLWAH>
__device__ __forceinline__ void bm_slots_onepass(const u32* __restrict__ words, u64 m, u32* __restrict__ ends, uint4* status,
                                                 u32 tile) {
    __shared__ DsBlockStorage<DS_THREADS, u64> s;
    __shared__ u64 s_prefix;
    const u64 n = PLWAH ? 2 * m : m;
    const u64 base = (u64)tile * DS_TILE + (u64)threadIdx.x * DS_ITEMS;
    u32 c[DS_ITEMS];
    u64 acc = 0;
#pragma unroll
    for (int k = 0; k < DS_ITEMS; ++k) {
        c[k] = 0;
        if (base + k < n) {
            u32 v;
            bm_slot_at<PLWAH>(words, base + k, v, c[k]);
        }
        acc += c[k];
    }
    u64 total;
    const u64 excl = ds_block_exclusive<DS_THREADS>(acc, DsSum<u64>(), (u64)0, s, total);
    u64 run = ds_lookback_block<u64>(status, tile, total, DsSum<u64>(), (u64)0, &s_prefix) + excl;
#pragma unroll
    for (int k = 0; k < DS_ITEMS; ++k) {
        run += c[k];
        if (base + k < n) ends[base + k] = (u32)run;
    }
}
#define BM_SLOTS_PAIR_KERNEL(NAME, PLWAH)                                                                          \
    extern "C" __global__ void __launch_bounds__(DS_THREADS)                                                       \
        bm_slots_pair_##NAME(const u32* __restrict__ wa, u64 ma, u32* __restrict__ ea, const u32* __restrict__ wb, \
                             u64 mb, u32* __restrict__ eb, uint4* status, u32 tiles_a) {                         \
        if (blockIdx.x < tiles_a) bm_slots_onepass<PLWAH>(wa, ma, ea, status, blockIdx.x);                         \
        else bm_slots_onepass<PLWAH>(wb, mb, eb, status + tiles_a, blockIdx.x - tiles_a);                          \
    }
BM_SLOTS_PAIR_KERNEL(wah, false)
BM_SLOTS_PAIR_KERNEL(plwah, true)

#endif
