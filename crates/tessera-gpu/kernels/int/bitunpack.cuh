// bitunpack.cuh: the bit reader of int-common §5 (horizontal bit-packing).
//
// Value i of a miniblock with width bit_width occupies bits [i*bw, (i+1)*bw) of the miniblock's
// bit string, least significant bit first. `ts_extract` returns the bw bits that start at bit
// `bit` of the word array `w` (in shared memory). It always reads w[bit/32] and w[bit/32 + 1]
// (lane 64: also + 2) and masks, so callers keep two spare words after every region they read
// (the slot padding of the tile storages). bw == 0 reads nothing and yields 0.
#ifndef TESSERA_BITUNPACK_CUH
#define TESSERA_BITUNPACK_CUH

#include "../include/common.cuh"

__device__ __forceinline__ u32 ts_extract32(const u32* w, u32 bit, u32 bw) {
    if (bw == 0) return 0;
    const u32 i = bit >> 5, s = bit & 31;
    const u32 v = __funnelshift_r(w[i], w[i + 1], s);
    return bw >= 32 ? v : (v & ((1u << bw) - 1u));
}

__device__ __forceinline__ u64 ts_extract64(const u32* w, u32 bit, u32 bw) {
    if (bw == 0) return 0;
    const u32 i = bit >> 5, s = bit & 31;
    const u32 w1 = w[i + 1];
    const u32 lo = __funnelshift_r(w[i], w1, s);
    const u32 hi = bw + s > 32 ? __funnelshift_r(w1, w[i + 2], s) : 0u;
    const u64 v = ((u64)hi << 32) | lo;
    return bw >= 64 ? v : (v & ((1ull << bw) - 1ull));
}

template <int LANE> __device__ __forceinline__ typename Lane<LANE>::T ts_extract(const u32* w, u32 bit, u32 bw);
template <> __device__ __forceinline__ u32 ts_extract<32>(const u32* w, u32 bit, u32 bw) {
    return ts_extract32(w, bit, bw);
}
template <> __device__ __forceinline__ u64 ts_extract<64>(const u32* w, u32 bit, u32 bw) {
    return ts_extract64(w, bit, bw);
}

// Words a miniblock of `entries` values at width bw occupies (rfor.md: the last miniblock of an
// RFOR array stores only its entries' bits; a full miniblock takes exactly bw words).
__device__ __forceinline__ u32 ts_miniblock_words(u32 entries, u32 bw) { return (entries * bw + 31) >> 5; }

#endif
