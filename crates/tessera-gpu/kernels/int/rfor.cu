// rfor.cu: GPU-RFOR (docs/format/rfor.md) decode and encode kernels.
//
// Decode: `rfor_decode_<out>`, one launch for every RFOR chunk of a column: a thread block takes
// a slab of 4 blocks of 512 values and each warp decodes one of them alone, with no barrier
// (LoadRBitPackWarp reads and checks the block, unpacks its runs into shared memory and marks
// each run's start; LoadRBitPackStripe gives every position's value from those marks), so the
// column is read once and written once.
//
// Encode, one warp per block:
//   plan  the warp stages the block's values in shared memory, finds run starts (value differs
//         from its predecessor) with a warp-wide scan of per-lane counts, and gathers runs
//         (value, length); then value_reference = min(values), length_reference =
//         min(lengths), and the bit width of each of the m = ceil(r/32) miniblocks of each array;
//         the identity block (every value a run of length 1) replaces the runs when it takes no
//         more words, as on the CPU (rfor.md, "Runs");
//   sizes `rfor_encode_sizes_<lane>` writes the block's size in words;
//   pack  `rfor_encode_pack_<lane>` writes block_starts entry, value_reference, run word,
//         bit-width words and the 2m miniblocks (the last of each array holding only its real
//         entries' bits).
#include "../include/common.cuh"
#include "decode_rfor_column.cuh"
#include "bitpack.cuh"

extern "C" __global__ void TS_RFOR_BOUNDS rfor_decode_u8(TS_DECODE_ARGS) {
    rfor_decode<32, 1>(g, chunks, n_chunks, total_slabs, out, flip, status);
}
extern "C" __global__ void TS_RFOR_BOUNDS rfor_decode_u16(TS_DECODE_ARGS) {
    rfor_decode<32, 2>(g, chunks, n_chunks, total_slabs, out, flip, status);
}
extern "C" __global__ void TS_RFOR_BOUNDS rfor_decode_u32(TS_DECODE_ARGS) {
    rfor_decode<32, 4>(g, chunks, n_chunks, total_slabs, out, flip, status);
}
extern "C" __global__ void TS_RFOR_BOUNDS rfor_decode_u64(TS_DECODE_ARGS) {
    rfor_decode<64, 8>(g, chunks, n_chunks, total_slabs, out, flip, status);
}

// ---- encode -------------------------------------------------------------------------------

#define TS_RFOR_ENC_WARPS 4

template <typename T> struct RforEncodeWarp {
    T vals[TS_RFOR_BLOCK_VALUES];      // the block's values, then the packed run values
    T run_val[TS_RFOR_BLOCK_VALUES];
    u16 run_start[TS_RFOR_BLOCK_VALUES];
    u16 run_len[TS_RFOR_BLOCK_VALUES];  // packed run lengths (length - length_reference)
};

struct RforPlan {
    u32 r;      // runs
    u32 m;      // miniblocks per array
    u32 vbw;    // lane q < m: bit width of value miniblock q
    u32 lbw;    // lane q < m: bit width of run-length miniblock q
    u32 lref;   // length_reference
    u32 words;  // block size in words
};

template <typename T>
__device__ __forceinline__ RforPlan rfor_block_plan(const T* __restrict__ values, u64 n, u64 block, RforEncodeWarp<T>& w,
                                                    T& vref) {
    const u32 RW = sizeof(T) / 4;
    const u32 lane = threadIdx.x & 31;
    const u64 base = block * TS_RFOR_BLOCK_VALUES;
    const u32 cnt = (u32)(n - base < TS_RFOR_BLOCK_VALUES ? n - base : TS_RFOR_BLOCK_VALUES);
    for (u32 i = lane; i < cnt; i += 32) w.vals[i] = values[base + i];
    __syncwarp();
    // Run starts among this lane's 16 consecutive positions.
    const u32 p0 = lane * 16;
    u32 flags = 0;
#pragma unroll
    for (u32 i = 0; i < 16; ++i) {
        const u32 p = p0 + i;
        if (p < cnt && (p == 0 || w.vals[p] != w.vals[p - 1])) flags |= 1u << i;
    }
    const u32 mine = __popc(flags);
    const u32 incl = warp_inclusive_sum(mine);
    u32 r = __shfl_sync(0xFFFFFFFFu, incl, 31);
    u32 run = incl - mine;
    while (flags) {
        const u32 i = __ffs(flags) - 1;
        flags &= flags - 1;
        w.run_val[run] = w.vals[p0 + i];
        w.run_start[run] = (u16)(p0 + i);
        ++run;
    }
    __syncwarp();
    // References: minimum value, minimum run length.
    T vmin = (T)~(T)0;
    u32 lmin = 0xFFFFFFFFu;
    for (u32 j = lane; j < r; j += 32) {
        const T v = w.run_val[j];
        vmin = v < vmin ? v : vmin;
        const u32 len = (j + 1 < r ? (u32)w.run_start[j + 1] : cnt) - w.run_start[j];
        lmin = len < lmin ? len : lmin;
    }
    vref = warp_min(vmin);
    u32 lref = warp_min(lmin);
    // Bit widths of the maximal runs, miniblock by miniblock; lane q keeps those of miniblock q.
    u32 m = (r + 31) / 32;
    u32 vbw = 0, lbw = 0, words = 0;
    for (u32 q = 0; q < m; ++q) {
        const u32 j = q * 32 + lane;
        T pv = 0;
        u32 pl = 0;
        if (j < r) {
            pv = (T)(w.run_val[j] - vref);
            pl = (j + 1 < r ? (u32)w.run_start[j + 1] : cnt) - w.run_start[j] - lref;
        }
        const u32 vb = ts_bit_width(warp_or(pv));
        const u32 lb = ts_bit_width(warp_or(pl));
        const u32 entries = q == m - 1 ? r - 32 * (m - 1) : 32u;
        words += ts_miniblock_words(entries, vb) + ts_miniblock_words(entries, lb);
        if (lane == q) {
            vbw = vb;
            lbw = lb;
        }
    }
    // The identity block (every value a run of length 1) when it takes no more words (rfor.md,
    // "Runs"; the CPU encoder's block_runs). Its value_reference is the same minimum.
    bool identity = false;
    if (r < cnt) {
        const u32 mi = (cnt + 31) / 32;
        u32 ibw = 0, iwords = 0;
        for (u32 q = 0; q < mi; ++q) {
            const u32 j = q * 32 + lane;
            const T pv = j < cnt ? (T)(w.vals[j] - vref) : (T)0;
            const u32 vb = ts_bit_width(warp_or(pv));
            iwords += ts_miniblock_words(q == mi - 1 ? cnt - 32 * (mi - 1) : 32u, vb);
            if (lane == q) ibw = vb;
        }
        if ((2 * mi + 3) / 4 + iwords <= (2 * m + 3) / 4 + words) {
            identity = true;
            r = cnt;
            m = mi;
            lref = 1;
            vbw = ibw;
            lbw = 0;
            words = iwords;
        }
    }
    // The packed arrays, rewritten in place (each lane only touches its own entries j = 32q +
    // lane, and reads w.vals[j] only at its own j).
    __syncwarp();
    for (u32 q = 0; q < m; ++q) {
        const u32 j = q * 32 + lane;
        if (j < r) {
            if (identity) {
                w.vals[j] = (T)(w.vals[j] - vref);
                w.run_len[j] = 0;
            } else {
                w.vals[j] = (T)(w.run_val[j] - vref);
                w.run_len[j] = (u16)((j + 1 < r ? (u32)w.run_start[j + 1] : cnt) - w.run_start[j] - lref);
            }
        }
    }
    __syncwarp();
    RforPlan p;
    p.r = r;
    p.m = m;
    p.vbw = vbw;
    p.lbw = lbw;
    p.lref = lref;
    p.words = RW + 1 + (2 * m + 3) / 4 + words;
    return p;
}

template <typename T>
__device__ __forceinline__ void rfor_encode_sizes(const T* __restrict__ values, u64 n, u32* __restrict__ block_words) {
    __shared__ RforEncodeWarp<T> ws[TS_RFOR_ENC_WARPS];
    RforEncodeWarp<T>& w = ws[threadIdx.x >> 5];
    const u64 blocks = (n + TS_RFOR_BLOCK_VALUES - 1) / TS_RFOR_BLOCK_VALUES;
    const u64 warps = (u64)gridDim.x * (blockDim.x / 32);
    for (u64 b = (u64)blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5); b < blocks; b += warps) {
        T vref;
        const RforPlan p = rfor_block_plan(values, n, b, w, vref);
        if ((threadIdx.x & 31) == 0) block_words[b] = p.words;
        __syncwarp();
    }
}

template <typename T>
__device__ __forceinline__ void rfor_encode_pack(const T* __restrict__ values, u64 n, u32 chunk_values,
                                                 const u32* __restrict__ offsets, u32* __restrict__ outw) {
    __shared__ RforEncodeWarp<T> ws[TS_RFOR_ENC_WARPS];
    RforEncodeWarp<T>& w = ws[threadIdx.x >> 5];
    const u32 RW = sizeof(T) / 4;
    const u32 lane = threadIdx.x & 31;
    const u64 blocks = (n + TS_RFOR_BLOCK_VALUES - 1) / TS_RFOR_BLOCK_VALUES;
    const u32 per_chunk = chunk_values / TS_RFOR_BLOCK_VALUES;
    const u64 warps = (u64)gridDim.x * (blockDim.x / 32);
    for (u64 b = (u64)blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5); b < blocks; b += warps) {
        T vref;
        const RforPlan p = rfor_block_plan(values, n, b, w, vref);
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
                const u64 left = n - first * TS_RFOR_BLOCK_VALUES;
                ts_write_header(chunk, TS_RFOR_BLOCK_VALUES, TS_RFOR_MINIBLOCKS,
                                (u32)(left < chunk_values ? left : chunk_values), 1);
            }
        }
        u32* blk = data + start;
        if (lane < RW) blk[lane] = (u32)((u64)vref >> (32 * lane));
        if (lane == RW) blk[RW] = p.r | (p.lref << 16);
        // Bit-width words: byte i < m is value miniblock i's width, byte m + i run-length i's.
        const u32 bw_words = (2 * p.m + 3) / 4;
        u32 word = 0;
#pragma unroll
        for (u32 b4 = 0; b4 < 4; ++b4) {
            const u32 i = lane * 4 + b4;
            const u32 v = __shfl_sync(0xFFFFFFFFu, p.vbw, i & 31);
            const u32 l = __shfl_sync(0xFFFFFFFFu, p.lbw, (i - p.m) & 31);
            const u32 byte = i < p.m ? v : (i < 2 * p.m ? l : 0u);
            word |= byte << (8 * b4);
        }
        if (lane < bw_words) blk[RW + 1 + lane] = word;
        // Miniblocks: all value miniblocks, then all run-length miniblocks.
        u32 off = RW + 1 + bw_words;
        for (u32 q = 0; q < p.m; ++q) {
            const u32 entries = q == p.m - 1 ? p.r - 32 * (p.m - 1) : 32u;
            const u32 bw = __shfl_sync(0xFFFFFFFFu, p.vbw, q);
            warp_pack_miniblock(&w.vals[q * 32], entries, bw, blk + off);
            off += ts_miniblock_words(entries, bw);
        }
        for (u32 q = 0; q < p.m; ++q) {
            const u32 entries = q == p.m - 1 ? p.r - 32 * (p.m - 1) : 32u;
            const u32 bw = __shfl_sync(0xFFFFFFFFu, p.lbw, q);
            warp_pack_miniblock(&w.run_len[q * 32], entries, bw, blk + off);
            off += ts_miniblock_words(entries, bw);
        }
        __syncwarp();
    }
}

extern "C" __global__ void __launch_bounds__(TS_THREADS) rfor_encode_sizes_u32(const u32* values, u64 n, u32* block_words) {
    rfor_encode_sizes(values, n, block_words);
}
extern "C" __global__ void __launch_bounds__(TS_THREADS) rfor_encode_sizes_u64(const u64* values, u64 n, u32* block_words) {
    rfor_encode_sizes(values, n, block_words);
}
extern "C" __global__ void __launch_bounds__(TS_THREADS)
    rfor_encode_pack_u32(const u32* values, u64 n, u32 chunk_values, const u32* offsets, u32* out) {
    rfor_encode_pack(values, n, chunk_values, offsets, out);
}
extern "C" __global__ void __launch_bounds__(TS_THREADS)
    rfor_encode_pack_u64(const u64* values, u64 n, u32 chunk_values, const u32* offsets, u32* out) {
    rfor_encode_pack(values, n, chunk_values, offsets, out);
}
