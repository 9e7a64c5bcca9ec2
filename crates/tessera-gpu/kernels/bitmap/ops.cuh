// ops.cuh (part of bitmap.cu): AND / OR / XOR / AND-NOT on compressed bitmaps (the merge path
// in three launches or one, and the fused tile path), cardinality, and the word-wise operation on
// plain bitmaps.
#ifndef TESSERA_BITMAP_OPS_CUH
#define TESSERA_BITMAP_OPS_CUH
#include "../include/common.cuh"
#include "../primitives/scan.cuh"
#include "wah.cuh"
#include "writer.cuh"
#include "slots.cuh"
#include "compress.cuh"
#include "decompress.cuh"

// Binary operations on two valid streams of one flavor and length, with their slot ends.
#define BM_OP_SRC(PLWAH, OP)                                                      \
    __shared__ u32 s_end[BM_MERGE_ENDS];                                          \
    __shared__ u32 s_val[BM_MERGE_VALS];                                          \
    __shared__ u32 s_split[2];                                                    \
    BmMergeSrc<PLWAH, OP> src;                                                    \
    src.wa = wa;                                                                  \
    src.ea = ea;                                                                  \
    src.na = na;                                                                  \
    src.wb = wb;                                                                  \
    src.eb = eb;                                                                  \
    src.nb = nb;                                                                  \
    src.n = (u64)na + nb;                                                         \
    src.s_end = s_end;                                                            \
    src.s_val = s_val;                                                            \
    src.s_split = s_split;                                                        \
    src.dlo = 0;                                                                  \
    src.ia_lo = src.ib_lo = src.la = src.lb = 0;                                  \
    src.ia = src.ib = src.prev_e = 0;

#define BM_OP_KERNELS(NAME, PLWAH, OP)                                                                             \
    extern "C" __global__ void __launch_bounds__(BM_WRITER_THREADS)                                                \
        bm_op_reduce_##NAME(const u32* __restrict__ wa, const u32* __restrict__ ea, u32 na, const u32* __restrict__ wb, \
                            const u32* __restrict__ eb, u32 nb, BmAgg* __restrict__ partials) {                    \
        BM_OP_SRC(PLWAH, OP)                                                                                       \
        bm_writer_reduce<PLWAH>(src, partials);                                                                    \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(BM_WRITER_THREADS)                                                \
        bm_op_apply_##NAME(const u32* __restrict__ wa, const u32* __restrict__ ea, u32 na, const u32* __restrict__ wb, \
                           const u32* __restrict__ eb, u32 nb, const BmAgg* __restrict__ partials, u32 max_counter,    \
                           u32 mode, u32* __restrict__ out, u32* __restrict__ ex_out, u32* __restrict__ flags) {   \
        BM_OP_SRC(PLWAH, OP)                                                                                       \
        bm_writer_apply<PLWAH>(src, partials, max_counter, mode, out, ex_out, flags);                              \
    }

#define BM_OP1_KERNEL(NAME, PLWAH, OP)                                                                             \
    extern "C" __global__ void __launch_bounds__(BM_WRITER_THREADS)                                                \
        bm_op1_##NAME(const u32* __restrict__ wa, const u32* __restrict__ ea, u32 na, const u32* __restrict__ wb,  \
                      const u32* __restrict__ eb, u32 nb, uint4* status, u32 tiles, u32 max_counter,             \
                      u32* __restrict__ out, u64 out_cap, u32* counters, uint2* ovf, u32 cap) {                  \
        BM_OP_SRC(PLWAH, OP)                                                                                       \
        bm_writer_onepass<PLWAH>(src, status, tiles, max_counter, out, out_cap, counters, ovf, cap);              \
    }
// (Every operation and flavor is instantiated with BM_OP_ALL_KERNELS after the fused
// operations, below.)


// Cardinality: per-tile sums of the set bits of each slot (c copies of v).
template <bool PLWAH> struct BmOnesLoad {
    const u32* words;
    __device__ __forceinline__ u64 operator()(u64 i) const {
        u32 v, c;
        bm_slot_at<PLWAH>(words, i, v, c);
        return (u64)c * (u64)__popc(v);
    }
};
#define BM_ONES_KERNEL(NAME, PLWAH)                                                                                \
    extern "C" __global__ void __launch_bounds__(DS_THREADS)                                                       \
        bm_count_ones_##NAME(const u32* __restrict__ words, u64 m, u64* __restrict__ partials) {                   \
        __shared__ DsBlockStorage<DS_THREADS, u64> s;                                                              \
        BmOnesLoad<PLWAH> load{words};                                                                             \
        const u64 t = ds_tile_reduce<DS_THREADS, DS_ITEMS>((u64)blockIdx.x, PLWAH ? 2 * m : m, load, DsSum<u64>(), \
                                                           (u64)0, s);                                             \
        if (threadIdx.x == 0) partials[blockIdx.x] = t;                                                            \
    }
BM_ONES_KERNEL(wah, false)
BM_ONES_KERNEL(plwah, true)

// ---- fused operations: decode, operate and compress a tile in one block ------------------------
//
// bm_fop_<op>_<flavor>: block t decodes tile t (BM_CMP_TILE = BM_DECODE_TILE groups) of both
// operands through their tile starts (bm_dec_tile), applies the operation to the plain words, and
// compresses the result with the compressor's own tile code (bm_cmp_tile: the look-back gives
// the tile's word offset and carried fill run, and the result gets its tile starts too). Global
// traffic: the operands' compressed words and the result's; nothing plain is materialized,
// where decompress-operate writes and reads three plain bitmaps. Its cost grows with the
// groups, not the words, so the host keeps the merge path (bm_op1) for sparse operands.
// The group before tile t (the kind that seeds its first unit) is op(a's, b's group g0 - 1):
// in the word its tile start names if that word starts before g0, else in the word before it,
// which ends at g0 (bm_fop_group_before).
// status[0] |= 1 when a tile start cannot cover its tile or names no word (as bm_dec_expand);
// the host then rejects the result. Reads stay in bounds whatever the tile starts hold.
// BM_FOP_JOINT: 1 decodes both operands in the same phases where their words fit the load
// buffer together (bm_fop_joint), 0 always one after the other. BM_FOP_MIN_BLOCKS: the launch
// bound (6: 80 registers, some spilled in the one-after-the-other path).
// Measured on an H100 (bitmap_gpu_speed --only fop): the joint decode is faster on sparse
// operands (2^-12) and mixed at 2^-8; launch bounds of 4 or 5 blocks are slower than 6, and 7
// (with or without the joint decode) is no better.
#ifndef BM_FOP_JOINT
#define BM_FOP_JOINT 1
#endif
#ifndef BM_FOP_MIN_BLOCKS
#define BM_FOP_MIN_BLOCKS 6
#endif

template <int OP> __device__ __forceinline__ u32 bm_plain_word_op(u32 a, u32 b) {
    if (OP == BM_OP_AND) return a & b;
    if (OP == BM_OP_OR) return a | b;
    if (OP == BM_OP_XOR) return a ^ b;
    return a & ~b;
}

// Group g0 - 1 (g0 = tile * BM_DECODE_TILE, tile >= 1) of a stream, from its tile starts.
template <bool PLWAH>
__device__ __forceinline__ u32 bm_fop_group_before(const u32* __restrict__ words, u32 m,
                                                   const u32* __restrict__ tile_starts, u32 tile, bool& bad) {
    const u32 ts = tile_starts[2 * tile], s = tile_starts[2 * tile + 1];
    const u32 g0 = tile * BM_DECODE_TILE;  // < groups < 2^32
    if (ts >= m || s > g0 || (s == g0 && ts == 0)) {
        bad = true;
        return 0u;
    }
    // Word ts covers g0 - 1 as well when it starts before g0 (not its last group, as it covers
    // g0 too: any end > g0 says so); else word ts - 1 ends at g0.
    return s < g0 ? bm_word_group<PLWAH>(words[ts], g0 + 1, g0 - 1) : bm_word_group<PLWAH>(words[ts - 1], g0, g0 - 1);
}

// The joint decode (both operands' words fit in the load buffer together: their chunks number
// at most BM_DEC_MAX_CHUNKS, as for every tile of operands with fewer than about 4000 words
// each): a's words at chunk 0, b's at chunk ra.nc, loaded and scanned in the same phases (three
// barriers for both instead of three each), then one walk over both in lockstep, so that no
// thread keeps a's 31 words while b decodes. Ends are always stored (no dense shortcut).
template <bool PLWAH, bool LAST, int OP>
__device__ __forceinline__ void bm_fop_walk2(const u32* swa, const u16* sea, u32 nwa, const u32* swb, const u16* seb,
                                             u32 nwb, u32 rn, u32 r0, u32 (&o)[BM_DECODE_GROUPS - 1]) {
    u32 sa = bm_dec_search(sea, nwa, r0), sb = bm_dec_search(seb, nwb, r0);
    u32 ea = sea[BM_DEC_PAD16(sa)], eb = seb[BM_DEC_PAD16(sb)], fva, lva, fvb, lvb;
    bm_dec_word_values<PLWAH>(swa[BM_DEC_PAD(sa)], fva, lva);
    bm_dec_word_values<PLWAH>(swb[BM_DEC_PAD(sb)], fvb, lvb);
    u32 prev = 0;
#pragma unroll
    for (u32 j = 0; j < BM_DECODE_GROUPS; ++j) {
        const u32 r = r0 + j;
        const u32 xa = bm_dec_next<PLWAH>(swa, sea, nwa, r, sa, ea, fva, lva);
        const u32 xb = bm_dec_next<PLWAH>(swb, seb, nwb, r, sb, eb, fvb, lvb);
        u32 x = bm_op<OP>(xa, xb);
        if (LAST && r >= rn) x = 0u;
        if (j > 0) o[j - 1] = (prev >> (j - 1)) | (x << (32 - j));
        prev = x;
    }
}

template <bool PLWAH, int OP>
__device__ __forceinline__ void bm_fop_joint(const u32* __restrict__ wa, const u32* __restrict__ wb,
                                             const BmDecRange& ra, const BmDecRange& rb, u64 g_lo, u32 rn, u32* sw,
                                             u16* se, u32* s_chunk, u32 (&o)[BM_DECODE_GROUPS - 1],
                                             u32* __restrict__ status) {
    const u32 cb = ra.nc * BM_DEC_CHUNK;  // b's first word in the joint layout (a multiple of 32)
    const u32 nct = ra.nc + rb.nc;
    bm_stage_words<BM_DECODE_THREADS, BM_DEC_SMEM_WORDS, true>(wa + ra.wa, ra.nw, sw);
    bm_stage_words<BM_DECODE_THREADS, BM_DEC_SMEM_WORDS, true>(wb + rb.wa, rb.nw, sw + BM_DEC_PAD(cb));
    __syncthreads();
    const u32 lane = threadIdx.x & 31;
    u32 lane_excl[BM_DEC_WARP_CHUNKS];
    bm_dec_sum_chunks<PLWAH>(sw, ra, rb, nct, lane_excl, s_chunk);
    __syncthreads();
    const u32 t0 = 2 * lane < nct ? s_chunk[2 * lane] : 0u, t1 = 2 * lane + 1 < nct ? s_chunk[2 * lane + 1] : 0u;
    const u32 t_incl = ds_warp_inclusive(t0 + t1, DsSum<u32>());
    const u32 total = __shfl_sync(0xFFFFFFFFu, t_incl, 31);
    // a's total: the joint prefix of chunk ra.nc (<= 33 < 64).
    const u32 ex_a = __shfl_sync(0xFFFFFFFFu, t_incl - t0 - t1, ra.nc >> 1);
    const u32 first_a = __shfl_sync(0xFFFFFFFFu, t0, ra.nc >> 1);
    const u32 total_a = ex_a + ((ra.nc & 1) ? first_a : 0u), total_b = total - total_a;
    if (threadIdx.x == 0) {
        const bool bad_a = ra.bad || (u64)ra.s0 > g_lo || (u64)ra.s0 + total_a < g_lo + rn;
        const bool bad_b = rb.bad || (u64)rb.s0 > g_lo || (u64)rb.s0 + total_b < g_lo + rn;
        if (bad_a || bad_b) atomicOr(status, 1u);
    }
    bm_dec_store_ends<PLWAH>(sw, se, ra, rb, nct, lane_excl, t_incl, t0, t1, total_a, (u32)g_lo, rn);
    __syncthreads();
    const u32 r0 = threadIdx.x * BM_DECODE_GROUPS;
    const u32* swb = sw + BM_DEC_PAD(cb);
    const u16* seb = se + BM_DEC_PAD16(cb);
    if (rn == BM_DECODE_TILE) bm_fop_walk2<PLWAH, false, OP>(sw, se, ra.nw, swb, seb, rb.nw, rn, r0, o);
    else bm_fop_walk2<PLWAH, true, OP>(sw, se, ra.nw, swb, seb, rb.nw, rn, r0, o);
}

template <bool PLWAH, int OP>
__device__ __forceinline__ void bm_fop(const u32* __restrict__ wa, u32 ma, const u32* __restrict__ tsa,
                                       const u32* __restrict__ wb, u32 mb, const u32* __restrict__ tsb, u64 groups,
                                       u32 last_mask, u32 max_counter, uint4* status, u32* counters, u32 tiles,
                                       u32* __restrict__ out, u64 out_cap, u32* __restrict__ tile_starts) {
    static_assert(BM_CMP_THREADS == BM_DECODE_THREADS, "a thread decodes the unit it compresses");
    static_assert(BM_DEC_SMEM_PADDED >= BM_CMP_TILE_WORDS, "the load buffer holds a result tile");
    __shared__ __align__(16) u32 sw[BM_DEC_SMEM_PADDED];  // loaded words; then the result tile
    __shared__ u16 se[BM_DEC_SMEM_PADDED16];
    __shared__ u32 s_chunk[BM_DEC_MAX_CHUNKS];
    const u32 tile = blockIdx.x;
    // Uniform over the grid (no tile may leave while a later one waits on it): ma, mb >= 1 for
    // any bitmap with groups, which the host checks.
    if (tile >= tiles || ma == 0 || mb == 0) return;
    u32* const dec_status = counters + 1;
    u32 prev_word = 0;
    if (threadIdx.x == 0 && tile > 0) {
        bool bad = false;
        const u32 ga = bm_fop_group_before<PLWAH>(wa, ma, tsa, tile, bad);
        const u32 gb = bm_fop_group_before<PLWAH>(wb, mb, tsb, tile, bad);
        if (bad) atomicOr(dec_status, 1u);
        prev_word = bm_op<OP>(ga, gb) << 1;
    }
    u32 o[BM_DECODE_GROUPS - 1];
    const BmDecRange ra = bm_dec_range(tsa, ma, tile), rb = bm_dec_range(tsb, mb, tile);
    if (BM_FOP_JOINT && ra.nc + rb.nc <= BM_DEC_MAX_CHUNKS) {  // uniform
        const u64 g_lo = (u64)tile * BM_DECODE_TILE;
        const u32 rn = (u32)(groups - g_lo < (u64)BM_DECODE_TILE ? groups - g_lo : (u64)BM_DECODE_TILE);
        bm_fop_joint<PLWAH, OP>(wa, wb, ra, rb, g_lo, rn, sw, se, s_chunk, o, dec_status);
        __syncthreads();  // sw becomes the result tile
#pragma unroll
        for (u32 j = 0; j < BM_DECODE_GROUPS - 1; ++j) sw[threadIdx.x * BM_GROUP_BITS + j] = o[j];
    } else {
        // One operand after the other, a's words kept in registers while b decodes.
        bm_dec_tile<PLWAH>(wa, ma, tsa, groups, tile, sw, se, s_chunk, o, dec_status);
        u32 oa[BM_DECODE_GROUPS - 1];
#pragma unroll
        for (u32 j = 0; j < BM_DECODE_GROUPS - 1; ++j) oa[j] = o[j];
        __syncthreads();  // sw, se, s_chunk are free
        bm_dec_tile<PLWAH>(wb, mb, tsb, groups, tile, sw, se, s_chunk, o, dec_status);
        __syncthreads();  // sw becomes the result tile
#pragma unroll
        for (u32 j = 0; j < BM_DECODE_GROUPS - 1; ++j)
            sw[threadIdx.x * BM_GROUP_BITS + j] = bm_plain_word_op<OP>(oa[j], o[j]);
    }
    __syncthreads();
    bm_cmp_tile<PLWAH, false>(sw, prev_word, groups, last_mask, max_counter, status, counters, tiles, out, out_cap,
                       tile_starts);
}

// counters: [0] the result's word total (written by the last tile), [1] the decode status.
#define BM_FOP_KERNEL(NAME, PLWAH, OP)                                                                             \
    extern "C" __global__ void __launch_bounds__(BM_CMP_THREADS, BM_FOP_MIN_BLOCKS)                                \
        bm_fop_##NAME(const u32* __restrict__ wa, u32 ma, const u32* __restrict__ tsa, const u32* __restrict__ wb, \
                      u32 mb, const u32* __restrict__ tsb, u64 groups, u32 last_mask, u32 max_counter,            \
                      uint4* status, u32* counters, u32 tiles, u32* __restrict__ out, u64 out_cap,                \
                      u32* __restrict__ tile_starts) {                                                            \
        bm_fop<PLWAH, OP>(wa, ma, tsa, wb, mb, tsb, groups, last_mask, max_counter, status, counters, tiles, out,  \
                          out_cap, tile_starts);                                                                  \
    }
// Every operation and flavor: the three-launch writer's reduce and apply, the one-pass form
// and the fused form.
#define BM_OP_ALL_KERNELS(NAME, PLWAH, OP) \
    BM_OP_KERNELS(NAME, PLWAH, OP)         \
    BM_OP1_KERNEL(NAME, PLWAH, OP)         \
    BM_FOP_KERNEL(NAME, PLWAH, OP)
BM_OP_ALL_KERNELS(and_wah, false, BM_OP_AND)
BM_OP_ALL_KERNELS(or_wah, false, BM_OP_OR)
BM_OP_ALL_KERNELS(xor_wah, false, BM_OP_XOR)
BM_OP_ALL_KERNELS(andnot_wah, false, BM_OP_ANDNOT)
BM_OP_ALL_KERNELS(and_plwah, true, BM_OP_AND)
BM_OP_ALL_KERNELS(or_plwah, true, BM_OP_OR)
BM_OP_ALL_KERNELS(xor_plwah, true, BM_OP_XOR)
BM_OP_ALL_KERNELS(andnot_plwah, true, BM_OP_ANDNOT)

// out = op(a, b) word by word over n plain words (16-byte vectors, then the tail).
extern "C" __global__ void bm_plain_op(const u32* __restrict__ a, const u32* __restrict__ b, u32* __restrict__ out, u64 n,
                                       u32 op) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const u64 nv = n / 4;
    const uint4* a4 = reinterpret_cast<const uint4*>(a);
    const uint4* b4 = reinterpret_cast<const uint4*>(b);
    uint4* o4 = reinterpret_cast<uint4*>(out);
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < nv; i += stride) {
        const uint4 x = a4[i], y = b4[i];
        uint4 r;
        if (op == BM_OP_AND) r = make_uint4(x.x & y.x, x.y & y.y, x.z & y.z, x.w & y.w);
        else if (op == BM_OP_OR) r = make_uint4(x.x | y.x, x.y | y.y, x.z | y.z, x.w | y.w);
        else if (op == BM_OP_XOR) r = make_uint4(x.x ^ y.x, x.y ^ y.y, x.z ^ y.z, x.w ^ y.w);
        else r = make_uint4(x.x & ~y.x, x.y & ~y.y, x.z & ~y.z, x.w & ~y.w);
        o4[i] = r;
    }
    for (u64 i = nv * 4 + (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const u32 x = a[i], y = b[i];
        out[i] = op == BM_OP_AND ? (x & y) : op == BM_OP_OR ? (x | y) : op == BM_OP_XOR ? (x ^ y) : (x & ~y);
    }
}

#endif
