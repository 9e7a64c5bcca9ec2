// merge.cuh: merge path (Green, McColl and Bader; Satish, Harris and Garland's GPU merge, which
// the paper's Algorithm 7 cites) over two sorted sequences a[0..na), b[0..nb) (non-decreasing).
//
// The merged sequence takes a before b on ties (stable). Diagonal d of the merge grid is the
// first d merged items: `ds_merge_path(a, na, b, nb, d)` returns how many of them come from a
// (the rest, d - ia, from b), by binary search along the diagonal, so any thread can start
// merging at any output position with no communication. `ds_merge_step` then merges one item
// at a time. Reads stay inside a[0..na) and b[0..nb).
//
// `ds_upper_bound` (first index whose value is > x) is the same search on one sequence: the
// bitmap kernels use it to find the compressed word covering a group.
#ifndef TESSERA_MERGE_CUH
#define TESSERA_MERGE_CUH
#include "../include/common.cuh"

template <typename T>
__device__ __forceinline__ u32 ds_merge_path(const T* __restrict__ a, u32 na, const T* __restrict__ b, u32 nb, u64 d) {
    u32 lo = d > nb ? (u32)(d - nb) : 0u;
    u32 hi = d < na ? (u32)d : na;
    while (lo < hi) {
        const u32 mid = lo + ((hi - lo) >> 1);
        // a[mid] goes before b[d - 1 - mid] (ties: a first) -> more than mid items come from a.
        if (a[mid] <= b[(u32)(d - 1 - mid)]) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// The same search by a whole warp (all 32 lanes call it with the same arguments; every lane gets
// the result): each round probes 32 points of the remaining range at once and keeps the part
// between the last probe that goes to a and the first that does not, so a range of n shrinks in
// about log32(n) rounds of parallel loads instead of log2(n) dependent ones. The predicate
// "a[mid] goes before b[d - 1 - mid]" is true then false along the diagonal.
template <typename T>
__device__ __forceinline__ u32 ds_merge_path_warp(const T* __restrict__ a, u32 na, const T* __restrict__ b, u32 nb, u64 d) {
    const u32 lane = threadIdx.x & 31u;
    u32 lo = d > nb ? (u32)(d - nb) : 0u;
    u32 hi = d < na ? (u32)d : na;
    while (lo < hi) {
        const u32 span = hi - lo;
        const u32 mid = lo + (u32)(((u64)span * lane) >> 5);  // lo <= mid < hi
        const bool goes_a = a[mid] <= b[(u32)(d - 1 - mid)];
        const u32 t = __popc(__ballot_sync(0xFFFFFFFFu, goes_a));  // lanes 0 .. t-1 go to a
        const u32 m_last = __shfl_sync(0xFFFFFFFFu, mid, t ? t - 1 : 0);
        const u32 m_next = __shfl_sync(0xFFFFFFFFu, mid, t < 32 ? t : 31);
        if (t == 0) {
            hi = lo;  // a[lo] does not go first: the answer is lo
        } else {
            lo = m_last + 1;
            if (t < 32) hi = m_next;
        }
    }
    return lo;
}

// One merge step from (ia, ib): whether the next merged item comes from a.
template <typename T>
__device__ __forceinline__ bool ds_merge_takes_a(const T* __restrict__ a, u32 na, const T* __restrict__ b, u32 nb, u32 ia, u32 ib) {
    return ib >= nb || (ia < na && a[ia] <= b[ib]);
}

// First index i in [lo, hi) with v[i] > x, or hi.
template <typename T> __device__ __forceinline__ u32 ds_upper_bound(const T* __restrict__ v, u32 lo, u32 hi, T x) {
    while (lo < hi) {
        const u32 mid = lo + ((hi - lo) >> 1);
        if (v[mid] <= x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

#endif
