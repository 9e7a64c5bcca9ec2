// device_scan.cuh: prefix scans with any associative operator, layered CUB-style
// warp -> block -> device, in the reduce-then-scan shape (three launches, no spin-waiting, so
// no forward-progress assumption between thread blocks):
//   1. reduce:   each thread block folds its tile of items into partials[tile];
//   2. partials: one thread block turns partials[0..tiles) into their exclusive prefixes and
//                writes the grand total to partials[tiles];
//   3. apply:    each thread block scans its tile again and combines each item with
//                partials[tile] (the tile's exclusive prefix).
// The item of position i comes from a `load(i)` functor, so a kernel can scan something it
// computes on the fly (group counts of compressed words, block ends of a bitmap) without ever
// writing the item array. `ds_reduce_u32` ... `ds_apply_u64` below are the plain-array sum
// scans (u32 modulo 2^32, u64), exclusive or inclusive; tests/gpu_bitmap.rs checks them
// against the CPU.
//
// Invariants: an operator must be associative and `identity` its neutral element; tiles hold
// DS_THREADS * DS_ITEMS items and thread t of a tile holds items t*DS_ITEMS .. t*DS_ITEMS+
// DS_ITEMS-1 (consecutive, so the apply pass can carry a running prefix serially). Every
// thread of a block must call the block-level functions (they synchronize).
#ifndef TESSERA_DEVICE_SCAN_CUH
#define TESSERA_DEVICE_SCAN_CUH
#include "common.cuh"

// Shape of the plain sum scans: 256 threads x 8 items = 2048 items per tile.
#define DS_THREADS 256
#define DS_ITEMS 8
#define DS_TILE (DS_THREADS * DS_ITEMS)
// The partials pass: one block of 1024 threads, 4 partials per thread per step.
#define DS_PARTIAL_THREADS 1024
#define DS_PARTIAL_ITEMS 4

template <typename T> struct DsSum {
    __device__ __forceinline__ T operator()(const T& a, const T& b) const { return a + b; }
};

// Shuffles for the scalar item types; struct item types define their own `ds_shfl_up`
// overload (found by argument-dependent lookup when the templates below are instantiated).
__device__ __forceinline__ u32 ds_shfl_up(u32 x, u32 d) { return __shfl_up_sync(0xFFFFFFFFu, x, d); }
__device__ __forceinline__ u64 ds_shfl_up(u64 x, u32 d) { return __shfl_up_sync(0xFFFFFFFFu, x, d); }

// Warp layer: inclusive scan of one item per lane.
template <typename T, typename Op> __device__ __forceinline__ T ds_warp_inclusive(T x, Op op) {
    const u32 lane = threadIdx.x & 31;
#pragma unroll
    for (u32 d = 1; d < 32; d <<= 1) {
        const T y = ds_shfl_up(x, d);
        if (lane >= d) x = op(y, x);
    }
    return x;
}

template <int THREADS, typename T> struct DsBlockStorage {
    T warp_total[THREADS / 32];
};

// Block layer: exclusive scan of one item per thread (thread 0 gets `identity`); `total`
// receives the fold of all THREADS items. Two barriers; the storage may be reused on return.
template <int THREADS, typename T, typename Op>
__device__ __forceinline__ T ds_block_exclusive(T x, Op op, T identity, DsBlockStorage<THREADS, T>& s, T& total) {
    const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const T incl = ds_warp_inclusive(x, op);
    if (lane == 31) s.warp_total[warp] = incl;
    __syncthreads();
    T prefix = identity, tot = identity;
#pragma unroll
    for (u32 w = 0; w < THREADS / 32; ++w) {
        const T wt = s.warp_total[w];
        if (w < warp) prefix = op(prefix, wt);
        tot = op(tot, wt);
    }
    T excl = ds_shfl_up(incl, 1);
    if (lane == 0) excl = identity;
    __syncthreads();
    total = tot;
    return op(prefix, excl);
}

// Device layer, pass 1: the fold of tile `tile` (items past n are `identity`).
template <int THREADS, int ITEMS, typename T, typename Op, typename Load>
__device__ __forceinline__ T ds_tile_reduce(u64 tile, u64 n, Load& load, Op op, T identity, DsBlockStorage<THREADS, T>& s) {
    const u64 base = tile * (u64)(THREADS * ITEMS) + (u64)threadIdx.x * ITEMS;
    T acc = identity;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k)
        if (base + k < n) acc = op(acc, load(base + k));
    T total;
    ds_block_exclusive<THREADS>(acc, op, identity, s, total);
    return total;
}

// Device layer, pass 2 (one thread block of DS_PARTIAL_THREADS): partials[0..count) become
// their exclusive prefixes, partials[count] the total.
template <typename T, typename Op> __device__ __forceinline__ void ds_scan_partials(T* partials, u32 count, Op op, T identity) {
    __shared__ DsBlockStorage<DS_PARTIAL_THREADS, T> s;
    T carry = identity;
    for (u32 step = 0; step < count; step += DS_PARTIAL_THREADS * DS_PARTIAL_ITEMS) {
        const u32 base = step + threadIdx.x * DS_PARTIAL_ITEMS;
        T items[DS_PARTIAL_ITEMS];
        T acc = identity;
#pragma unroll
        for (int k = 0; k < DS_PARTIAL_ITEMS; ++k) {
            items[k] = base + k < count ? partials[base + k] : identity;
            acc = op(acc, items[k]);
        }
        T total;
        T run = op(carry, ds_block_exclusive<DS_PARTIAL_THREADS>(acc, op, identity, s, total));
#pragma unroll
        for (int k = 0; k < DS_PARTIAL_ITEMS; ++k) {
            if (base + k < count) partials[base + k] = run;
            run = op(run, items[k]);
        }
        carry = op(carry, total);
    }
    if (threadIdx.x == 0) partials[count] = carry;
}

// Device layer, pass 3 for scans whose result is one value per item: calls
// store(i, exclusive_i, inclusive_i) for every item of the tile.
template <int THREADS, int ITEMS, typename T, typename Op, typename Load, typename Store>
__device__ __forceinline__ void ds_tile_apply(u64 tile, u64 n, Load& load, Store& store, Op op, T identity,
                                              const T* __restrict__ partials, DsBlockStorage<THREADS, T>& s) {
    const u64 base = tile * (u64)(THREADS * ITEMS) + (u64)threadIdx.x * ITEMS;
    T items[ITEMS];
    T acc = identity;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        items[k] = base + k < n ? load(base + k) : identity;
        acc = op(acc, items[k]);
    }
    T total;
    T run = op(partials[tile], ds_block_exclusive<THREADS>(acc, op, identity, s, total));
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const T next = op(run, items[k]);
        if (base + k < n) store(base + k, run, next);
        run = next;
    }
}

// ---- plain sum scans over arrays -----------------------------------------------------------

template <typename T> struct DsArrayLoad {
    const T* p;
    __device__ __forceinline__ T operator()(u64 i) const { return p[i]; }
};
template <typename T> struct DsArrayStore {
    T* out;
    u32 inclusive;
    __device__ __forceinline__ void operator()(u64 i, T excl, T incl) const { out[i] = inclusive ? incl : excl; }
};

#define DS_SUM_SCAN_KERNELS(T)                                                                              \
    extern "C" __global__ void __launch_bounds__(DS_THREADS) ds_reduce_##T(const T* __restrict__ in, u64 n,     \
                                                                          T* __restrict__ partials) {        \
        __shared__ DsBlockStorage<DS_THREADS, T> s;                                                         \
        DsArrayLoad<T> load{in};                                                                            \
        const T t = ds_tile_reduce<DS_THREADS, DS_ITEMS>((u64)blockIdx.x, n, load, DsSum<T>(), (T)0, s);    \
        if (threadIdx.x == 0) partials[blockIdx.x] = t;                                                     \
    }                                                                                                       \
    extern "C" __global__ void __launch_bounds__(DS_PARTIAL_THREADS) ds_partials_##T(T* partials, u32 count) { \
        ds_scan_partials(partials, count, DsSum<T>(), (T)0);                                                \
    }                                                                                                       \
    extern "C" __global__ void __launch_bounds__(DS_THREADS) ds_apply_##T(const T* __restrict__ in, u64 n,      \
                                                                         const T* __restrict__ partials,     \
                                                                         T* __restrict__ out, u32 inclusive) { \
        __shared__ DsBlockStorage<DS_THREADS, T> s;                                                         \
        DsArrayLoad<T> load{in};                                                                            \
        DsArrayStore<T> store{out, inclusive};                                                              \
        ds_tile_apply<DS_THREADS, DS_ITEMS>((u64)blockIdx.x, n, load, store, DsSum<T>(), (T)0, partials, s); \
    }

#endif
