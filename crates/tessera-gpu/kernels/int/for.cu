// for.cu: GPU-FOR (docs/format/for.md) decode and encode kernels.
//
// Decode: `for_decode_<out>` decodes every FOR chunk of a column in one launch. Block x of the
// grid takes slabs x, x + gridDim.x, ... (one slab per thread block when the grid covers them
// all); a slab is G tiles of 4 blocks = 512 values each, loaded at once by LoadBitPackSlab,
// then unpacked tile by tile (LoadBitPackTile) and written at the logical width (`out` = u8, u16, u32 for lane 32; u64 for lane 64; signed types pass their sign bit in
// `flip`). `status[c]` receives chunk c's first error (common.cuh).
//
// Encode (lane words in, chunk payloads out; chunk_values is a multiple of 512):
//   1. `for_encode_sizes_<lane>`: one warp per block computes the reference (the minimum of the
//      block's real values), the four bit widths and the block's size in words;
//   2. an exclusive scan of the sizes (primitives/scan.cuh) gives every block's word offset;
//   3. `for_encode_pack_<lane>`: one warp per block recomputes its plan, writes its
//      block_starts entry, reference, bit-width word and miniblocks (bitpack.cuh), and the
//      chunk's first/last blocks write its header and final block_starts entry.
// Chunk c's payload starts at word 5c + first_block(c) + offset(first_block(c)): every earlier
// chunk takes 4 header words, nb + 1 block_starts words and its blocks.
#include "../include/common.cuh"
#include "decode_for_column.cuh"
#include "bitpack.cuh"

extern "C" __global__ void TS_TILE_BOUNDS for_decode_u8(TS_DECODE_ARGS) {
    ts_decode_for_column<32, 1, TS_FOR_SLAB_L32, false>(g, chunks, n_chunks, total_slabs, out, flip, status);
}
extern "C" __global__ void TS_TILE_BOUNDS for_decode_u16(TS_DECODE_ARGS) {
    ts_decode_for_column<32, 2, TS_FOR_SLAB_L32, false>(g, chunks, n_chunks, total_slabs, out, flip, status);
}
extern "C" __global__ void TS_TILE_BOUNDS for_decode_u32(TS_DECODE_ARGS) {
    ts_decode_for_column<32, 4, TS_FOR_SLAB_L32, false>(g, chunks, n_chunks, total_slabs, out, flip, status);
}
extern "C" __global__ void TS_TILE_BOUNDS for_decode_u64(TS_DECODE_ARGS) {
    ts_decode_for_column<64, 8, TS_FOR_SLAB_L64, false>(g, chunks, n_chunks, total_slabs, out, flip, status);
}

// ---- encode -------------------------------------------------------------------------------

// The plan of FOR block `block` of the column: lane l holds value 32m + l of miniblock m in
// packed[m] (0 for padding), and every lane gets the reference and the four bit widths.
template <typename T>
__device__ __forceinline__ void for_block_plan(const T* __restrict__ values, u64 n, u64 block, T (&packed)[4], T& ref,
                                               u32 (&bw)[4]) {
    const u32 lane = threadIdx.x & 31;
    const u64 base = block * TS_FOR_BLOCK_VALUES;
    T v[4];
    T mn = (T)~(T)0;
#pragma unroll
    for (u32 m = 0; m < 4; ++m) {
        const u64 i = base + m * 32 + lane;
        v[m] = i < n ? values[i] : (T)0;
        if (i < n && v[m] < mn) mn = v[m];
    }
    ref = warp_min(mn);
#pragma unroll
    for (u32 m = 0; m < 4; ++m) {
        const u64 i = base + m * 32 + lane;
        packed[m] = i < n ? (T)(v[m] - ref) : (T)0;
        bw[m] = ts_bit_width(warp_or(packed[m]));
    }
}

template <typename T>
__device__ __forceinline__ void for_encode_sizes(const T* __restrict__ values, u64 n, u32* __restrict__ block_words) {
    const u32 RW = sizeof(T) / 4;
    const u64 blocks = (n + TS_FOR_BLOCK_VALUES - 1) / TS_FOR_BLOCK_VALUES;
    const u64 warps = (u64)gridDim.x * (blockDim.x / 32);
    for (u64 b = (u64)blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5); b < blocks; b += warps) {
        T packed[4], ref;
        u32 bw[4];
        for_block_plan(values, n, b, packed, ref, bw);
        if ((threadIdx.x & 31) == 0) block_words[b] = RW + 1 + bw[0] + bw[1] + bw[2] + bw[3];
    }
}

template <typename T>
__device__ __forceinline__ void for_encode_pack(const T* __restrict__ values, u64 n, u32 chunk_values,
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
        for_block_plan(values, n, b, packed, ref, bw);
        const u64 c = b / per_chunk;
        const u64 first = c * per_chunk;
        const u32 nb = (u32)(blocks - first < per_chunk ? blocks - first : per_chunk);
        const u32 k = (u32)(b - first);
        const u32 origin = offsets[first];
        u32* chunk = outw + 5 * c + first + origin;
        u32* data = chunk + TS_HEADER_WORDS + nb + 1;
        const u32 start = offsets[b] - origin;
        if (lane == 0) {
            chunk[TS_HEADER_WORDS + k] = start;
            if (k == nb - 1) chunk[TS_HEADER_WORDS + nb] = offsets[b + 1] - origin;
            if (k == 0) {
                const u64 left = n - first * TS_FOR_BLOCK_VALUES;
                ts_write_header(chunk, TS_FOR_BLOCK_VALUES, TS_FOR_MINIBLOCKS,
                                (u32)(left < chunk_values ? left : chunk_values), 1);
            }
        }
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

extern "C" __global__ void __launch_bounds__(TS_THREADS) for_encode_sizes_u32(const u32* values, u64 n, u32* block_words) {
    for_encode_sizes(values, n, block_words);
}
extern "C" __global__ void __launch_bounds__(TS_THREADS) for_encode_sizes_u64(const u64* values, u64 n, u32* block_words) {
    for_encode_sizes(values, n, block_words);
}
extern "C" __global__ void __launch_bounds__(TS_THREADS)
    for_encode_pack_u32(const u32* values, u64 n, u32 chunk_values, const u32* offsets, u32* out) {
    for_encode_pack(values, n, chunk_values, offsets, out);
}
extern "C" __global__ void __launch_bounds__(TS_THREADS)
    for_encode_pack_u64(const u64* values, u64 n, u32 chunk_values, const u32* offsets, u32* out) {
    for_encode_pack(values, n, chunk_values, offsets, out);
}
