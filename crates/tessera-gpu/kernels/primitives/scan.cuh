// scan.cuh: prefix scans with any associative operator, layered CUB-style
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
// thread of a block must call the block-level functions (they synchronize). The single-pass
// form (decoupled look-back, at the end) is for short inputs and relies on in-order dispatch.
#ifndef TESSERA_DEVICE_SCAN_CUH
#define TESSERA_DEVICE_SCAN_CUH
#include "../include/common.cuh"

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
// receives the fold of all THREADS items. Two barriers (ts_bar<BAR, THREADS>: the whole block,
// or named barrier BAR for the first THREADS threads); the storage may be reused on return.
template <int THREADS, typename T, typename Op, int BAR = 0>
__device__ __forceinline__ T ds_block_exclusive(T x, Op op, T identity, DsBlockStorage<THREADS, T>& s, T& total) {
    const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const T incl = ds_warp_inclusive(x, op);
    if (lane == 31) s.warp_total[warp] = incl;
    ts_bar<BAR, THREADS>();
    T prefix = identity, tot = identity;
#pragma unroll
    for (u32 w = 0; w < THREADS / 32; ++w) {
        const T wt = s.warp_total[w];
        if (w < warp) prefix = op(prefix, wt);
        tot = op(tot, wt);
    }
    T excl = ds_shfl_up(incl, 1);
    if (lane == 0) excl = identity;
    ts_bar<BAR, THREADS>();
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

// ---- single pass: decoupled look-back (Merrill and Garland) --------------------------------------
// For short inputs, where each launch and each wait costs more than the data, a scan in one
// launch: tile t folds its items, publishes that aggregate (flag 1), and warp 0 looks back over
// the statuses of the tiles before it, 32 a round, back to the nearest tile that published an
// inclusive prefix (flag 2); then tile t publishes its own inclusive prefix. A status is one
// 16-byte word (three u32 of value, then the flag), written and read whole with volatile vector
// accesses, so no fence is needed to order a flag against its value (CUB's tile status words
// do the same). Forward progress: the tile index is the block index, and blocks are dispatched
// in index order, so a block only ever waits for blocks that are already running (CUB's
// single-pass scans rely on the same). The status array holds one word per tile, zero at launch.
//
// DsPack<T> converts an item to and from the three status u32 (specialised per item type).
template <typename T> struct DsPack;
template <> struct DsPack<u64> {
    static __device__ __forceinline__ uint3 to(u64 x) { return make_uint3((u32)x, (u32)(x >> 32), 0u); }
    static __device__ __forceinline__ u64 from(uint3 v) { return (u64)v.x | ((u64)v.y << 32); }
};

__device__ __forceinline__ void ds_status_publish(uint4* status, u32 t, uint3 v, u32 flag) {
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(status + t), "r"(v.x), "r"(v.y), "r"(v.z),
                 "r"(flag)
                 : "memory");
}
__device__ __forceinline__ uint4 ds_status_read(const uint4* status, u32 t) {
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(status + t)
                 : "memory");
    return v;
}

// The fold of tiles 0 .. tile - 1 (tile > 0), in every lane of the calling warp (all 32 lanes
// call it). Lane l reads tile end - l; lanes past the nearest inclusive status contribute the
// identity, and the rest fold oldest first (the operator need not commute).
template <typename T, typename Op>
__device__ __forceinline__ T ds_lookback_warp(const uint4* status, u32 tile, Op op, T identity) {
    const u32 lane = threadIdx.x & 31u;
    T acc = identity;
    long long end = (long long)tile - 1;
    for (;;) {
        const long long t = end - (long long)lane;
        const uint3 id = DsPack<T>::to(identity);
        // Before tile 0: an inclusive identity.
        uint4 st = t >= 0 ? ds_status_read(status, (u32)t) : make_uint4(id.x, id.y, id.z, 2u);
        while (__any_sync(0xFFFFFFFFu, (st.w & 3u) == 0u)) {
            if ((st.w & 3u) == 0u) {
                __nanosleep(32);
                st = ds_status_read(status, (u32)t);
            }
        }
        const u32 incl = __ballot_sync(0xFFFFFFFFu, (st.w & 3u) == 2u);
        const u32 near = incl ? (u32)__ffs(incl) - 1u : 32u;
        T v = lane <= near ? DsPack<T>::from(make_uint3(st.x, st.y, st.z)) : identity;
#pragma unroll
        for (u32 d = 1; d < 32; d <<= 1) {
            uint3 q = DsPack<T>::to(v);
            q.x = __shfl_down_sync(0xFFFFFFFFu, q.x, d);
            q.y = __shfl_down_sync(0xFFFFFFFFu, q.y, d);
            q.z = __shfl_down_sync(0xFFFFFFFFu, q.z, d);
            if (lane + d < 32) v = op(DsPack<T>::from(q), v);  // the higher lane is the older tile
        }
        uint3 w = DsPack<T>::to(v);
        w.x = __shfl_sync(0xFFFFFFFFu, w.x, 0);
        w.y = __shfl_sync(0xFFFFFFFFu, w.y, 0);
        w.z = __shfl_sync(0xFFFFFFFFu, w.z, 0);
        acc = op(DsPack<T>::from(w), acc);
        if (incl) return acc;
        end -= 32;
    }
}

// The exclusive prefix of tile `tile` (its blocks' fold of all earlier tiles), given the tile's
// aggregate `agg` (the same in every thread); publishes the tile's statuses. Every thread of the
// block calls it and gets the prefix; one barrier (`s_prefix` is block shared memory).
template <typename T, typename Op>
__device__ __forceinline__ T ds_lookback_block(uint4* status, u32 tile, T agg, Op op, T identity, T* s_prefix) {
    if (tile == 0) {
        if (threadIdx.x == 0) ds_status_publish(status, 0, DsPack<T>::to(agg), 2u);
        return identity;
    }
    if (threadIdx.x == 0) ds_status_publish(status, tile, DsPack<T>::to(agg), 1u);
    if (threadIdx.x < 32) {
        const T p = ds_lookback_warp<T>(status, tile, op, identity);
        if (threadIdx.x == 0) {
            ds_status_publish(status, tile, DsPack<T>::to(op(p, agg)), 2u);
            *s_prefix = p;
        }
    }
    __syncthreads();
    return *s_prefix;
}

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
