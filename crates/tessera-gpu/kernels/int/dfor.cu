// dfor.cu: GPU-DFOR (docs/format/dfor.md) decode and encode kernels.
//
// Decode: `dfor_decode_<out>`, one launch for every DFOR chunk of a column: each thread block
// loads a slab of delta tiles (4 blocks, 512 values each) at once, LoadDBitPackTile unpacks the
// deltas of each and
// turns them into values with a block-wide inclusive scan plus the tile's first_value, all in
// shared memory and registers: one pass over global memory.
//
// Encode: as for.cu, on deltas. delta[i] = x[i] - x[i-1] inside a tile, delta = 0 at a tile's
// first position; a block's reference is its minimum delta read as signed; packed = delta - ref.
// The first block of each tile is preceded by the tile's first_value (ref_words words), so its
// size includes them and its block_starts entry points just past them.
#include "../include/common.cuh"
#include "decode_for_column.cuh"
#include "bitpack.cuh"

extern "C" __global__ void TS_TILE_BOUNDS dfor_decode_u8(TS_DECODE_ARGS) {
    ts_decode_for_column<32, 1, TS_FOR_SLAB_L32, true>(g, chunks, n_chunks, total_slabs, out, flip, status);
}
extern "C" __global__ void TS_TILE_BOUNDS dfor_decode_u16(TS_DECODE_ARGS) {
    ts_decode_for_column<32, 2, TS_FOR_SLAB_L32, true>(g, chunks, n_chunks, total_slabs, out, flip, status);
}
extern "C" __global__ void TS_TILE_BOUNDS dfor_decode_u32(TS_DECODE_ARGS) {
    ts_decode_for_column<32, 4, TS_FOR_SLAB_L32, true>(g, chunks, n_chunks, total_slabs, out, flip, status);
}
extern "C" __global__ void TS_TILE_BOUNDS dfor_decode_u64(TS_DECODE_ARGS) {
    ts_decode_for_column<64, 8, TS_FOR_SLAB_L64, true>(g, chunks, n_chunks, total_slabs, out, flip, status);
}

// ---- encode -------------------------------------------------------------------------------

template <typename T> struct Signed;
template <> struct Signed<u32> { typedef int T; };
template <> struct Signed<u64> { typedef long long T; };

// Plan of DFOR block `block`: packed deltas (lane l holds position 32m + l in packed[m]), the
// signed-minimum reference and the four bit widths.
template <typename T>
__device__ __forceinline__ void dfor_block_plan(const T* __restrict__ values, u64 n, u64 block, T (&packed)[4], T& ref,
                                                u32 (&bw)[4]) {
    typedef typename Signed<T>::T ST;
    const u32 lane = threadIdx.x & 31;
    const u64 base = block * TS_FOR_BLOCK_VALUES;
    T d[4];
    ST mn = (ST)((~(T)0) >> 1);  // the signed maximum
#pragma unroll
    for (u32 m = 0; m < 4; ++m) {
        const u64 i = base + m * 32 + lane;
        const bool real = i < n;
        const bool tile_start = (i % TS_TILE_VALUES) == 0;
        d[m] = real && !tile_start ? (T)(values[i] - values[i - 1]) : (T)0;
        if (real && (ST)d[m] < mn) mn = (ST)d[m];
    }
    ref = (T)warp_min(mn);
#pragma unroll
    for (u32 m = 0; m < 4; ++m) {
        const u64 i = base + m * 32 + lane;
        packed[m] = i < n ? (T)(d[m] - ref) : (T)0;
        bw[m] = ts_bit_width(warp_or(packed[m]));
    }
}

template <typename T>
__device__ __forceinline__ void dfor_encode_sizes(const T* __restrict__ values, u64 n, u32* __restrict__ block_words) {
    const u32 RW = sizeof(T) / 4;
    const u64 blocks = (n + TS_FOR_BLOCK_VALUES - 1) / TS_FOR_BLOCK_VALUES;
    const u64 warps = (u64)gridDim.x * (blockDim.x / 32);
    for (u64 b = (u64)blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5); b < blocks; b += warps) {
        T packed[4], ref;
        u32 bw[4];
        dfor_block_plan(values, n, b, packed, ref, bw);
        const u32 first_value = (b % TS_DFOR_TILE_BLOCKS) == 0 ? RW : 0u;
        if ((threadIdx.x & 31) == 0) block_words[b] = first_value + RW + 1 + bw[0] + bw[1] + bw[2] + bw[3];
    }
}

template <typename T>
__device__ __forceinline__ void dfor_encode_pack(const T* __restrict__ values, u64 n, u32 chunk_values,
                                                 const u32* __restrict__ offsets, u32* __restrict__ outw) {
    __shared__ T stage[TS_THREADS / 32][TS_FOR_BLOCK_VALUES];
    const u32 RW = sizeof(T) / 4;
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u64 blocks = (n + TS_FOR_BLOCK_VALUES - 1) / TS_FOR_BLOCK_VALUES;
    const u32 per_chunk = chunk_values / TS_FOR_BLOCK_VALUES;
    const u64 warps = (u64)gridDim.x * (blockDim.x / 32);
    for (u64 b = (u64)blockIdx.x * (blockDim.x / 32) + warp; b < blocks; b += warps) {
        T packed[4], ref;
        u32 bw[4];
        dfor_block_plan(values, n, b, packed, ref, bw);
        const u64 c = b / per_chunk;
        const u64 first = c * per_chunk;
        const u32 nb = (u32)(blocks - first < per_chunk ? blocks - first : per_chunk);
        const u32 k = (u32)(b - first);
        const u32 origin = offsets[first];
        u32* chunk = outw + 5 * c + first + origin;
        u32* data = chunk + TS_HEADER_WORDS + nb + 1;
        const bool tile_first = (k % TS_DFOR_TILE_BLOCKS) == 0;
        const u32 start = offsets[b] - origin + (tile_first ? RW : 0u);  // block_starts[k]
        if (lane == 0) {
            chunk[TS_HEADER_WORDS + k] = start;
            if (k == nb - 1) chunk[TS_HEADER_WORDS + nb] = offsets[b + 1] - origin;
            if (k == 0) {
                const u64 left = n - first * TS_FOR_BLOCK_VALUES;
                ts_write_header(chunk, TS_FOR_BLOCK_VALUES, TS_FOR_MINIBLOCKS,
                                (u32)(left < chunk_values ? left : chunk_values), TS_DFOR_TILE_BLOCKS);
            }
        }
        if (tile_first && lane < RW) data[start - RW + lane] = (u32)((u64)values[b * TS_FOR_BLOCK_VALUES] >> (32 * lane));
        if (lane < RW) data[start + lane] = (u32)((u64)ref >> (32 * lane));
        if (lane == RW) data[start + RW] = bw[0] | (bw[1] << 8) | (bw[2] << 16) | (bw[3] << 24);
#pragma unroll
        for (u32 m = 0; m < 4; ++m) stage[warp][m * 32 + lane] = packed[m];
        __syncwarp();
        u32 off = start + RW + 1;
#pragma unroll
        for (u32 m = 0; m < 4; ++m) {
            warp_pack_miniblock(&stage[warp][m * 32], 32, bw[m], data + off);
            off += bw[m];
        }
        __syncwarp();
    }
}

extern "C" __global__ void __launch_bounds__(TS_THREADS) dfor_encode_sizes_u32(const u32* values, u64 n, u32* block_words) {
    dfor_encode_sizes(values, n, block_words);
}
extern "C" __global__ void __launch_bounds__(TS_THREADS) dfor_encode_sizes_u64(const u64* values, u64 n, u32* block_words) {
    dfor_encode_sizes(values, n, block_words);
}
extern "C" __global__ void __launch_bounds__(TS_THREADS)
    dfor_encode_pack_u32(const u32* values, u64 n, u32 chunk_values, const u32* offsets, u32* out) {
    dfor_encode_pack(values, n, chunk_values, offsets, out);
}
extern "C" __global__ void __launch_bounds__(TS_THREADS)
    dfor_encode_pack_u64(const u64* values, u64 n, u32 chunk_values, const u32* offsets, u32* out) {
    dfor_encode_pack(values, n, chunk_values, offsets, out);
}
