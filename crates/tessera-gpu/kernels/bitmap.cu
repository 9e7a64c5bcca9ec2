// bitmap.cu: WAH / PLWAH compressed bitmaps on the GPU (docs/format/wah.md, plwah.md, "GPU
// notes"), after Andrzejewski and Wrembel, GPU-PLWAH (the paper). Host side: src/bitmap.rs.
//
// Kernels (each a thin wrapper over include/wah.cuh, device_scan.cuh, merge.cuh):
//   bm_extend                  the paper's Algorithm 1: packed bits -> one 32-bit word per group
//                              (31 bits + a 0), for callers that want the extended form;
//   bm_compress_{reduce,apply}_<flavor>
//                              Algorithm 2 with Algorithm 4: the canonical writer over the
//                              groups of a plain bitmap (read straight from the packed bits: the
//                              extension is fused into the loads, 2048 groups = 1984 words per
//                              tile staged in shared memory);
//   bm_slots_{reduce,apply}_<flavor>
//                              the group counts of a word stream scanned into slot `ends` (the
//                              scans of Algorithms 5 and 7), checking every counter (status =
//                              the first word with a zero counter) and summing in u64, so the
//                              host can compare the total with ceil(bit_len / 31) before any
//                              kernel trusts `ends`;
//   bm_decompress_<flavor>     Algorithm 5: each thread finds the slot covering its first group
//                              (one binary search per block, then one per thread inside the
//                              block's slot range) and walks 32 groups = 31 output words;
//   bm_convert_*               Algorithm 6 (PLWAH -> WAH, and WAH -> PLWAH): the writer over the
//                              input's slots, which also merges fills longer than the PLWAH
//                              counter into one WAH fill_word;
//   bm_op_<op>_<flavor>        AND / OR / XOR / AND-NOT on compressed bitmaps, improving on
//                              Algorithm 7: the two slot-`ends` sequences are merged by merge
//                              path, each merged item is one element (op of the two covering
//                              groups, repeated for the gap to the previous item; ties give an
//                              empty element), and the writer compacts the fills; no merged
//                              array, pair arrays or extra scans are materialized;
//   bm_scatter_fills           the overflow path: block i's `ex` full fill_words and last word;
//   bm_count_ones_<flavor>     cardinality on the compressed words;
//   bm_plain_op                word-wise op on plain bitmaps (the decompress-operate baseline);
//   ds_* and ds_merge_u32      the device scan and merge primitives, exported for their tests.
//
// Invariants: every writer or decoder input was validated (bm_slots_* + host check) or made
// by a writer; still, every global read is bounded by the lengths passed in.
#include "include/common.cuh"
#include "include/device_scan.cuh"
#include "include/merge.cuh"
#include "include/wah.cuh"

DS_SUM_SCAN_KERNELS(u32)
DS_SUM_SCAN_KERNELS(u64)

extern "C" __global__ void __launch_bounds__(DS_PARTIAL_THREADS) bm_agg_partials(BmAgg* partials, u32 count) {
    ds_scan_partials(partials, count, BmAggOp(), bm_agg_zero());
}

// ---- merge primitive test kernel -------------------------------------------------------------
// Items each thread of the merge test kernel writes.
#define DS_MERGE_ITEMS 8

// Device-wide merge of two sorted u32 arrays (the primitive's test kernel): thread t writes
// merged items t*DS_MERGE_ITEMS .. +DS_MERGE_ITEMS-1 into out, and into from_b whether each came
// from b (1) or a (0).
extern "C" __global__ void __launch_bounds__(128) ds_merge_u32(const u32* __restrict__ a, u32 na, const u32* __restrict__ b,
                                                               u32 nb, u32* __restrict__ out, u32* __restrict__ from_b) {
    const u64 total = (u64)na + nb;
    const u64 d = ((u64)blockIdx.x * blockDim.x + threadIdx.x) * DS_MERGE_ITEMS;
    if (d >= total) return;
    u32 ia = ds_merge_path(a, na, b, nb, d);
    u32 ib = (u32)(d - ia);
    for (u32 k = 0; k < DS_MERGE_ITEMS && d + k < total; ++k) {
        const bool ta = ds_merge_takes_a(a, na, b, nb, ia, ib);
        out[d + k] = ta ? a[ia] : b[ib];
        from_b[d + k] = ta ? 0u : 1u;
        if (ta) ++ia; else ++ib;
    }
}

// ---- element sources -------------------------------------------------------------------------

// The groups of a plain bitmap (packed bits as u32 words, bit i = bit i%32 of word i/32). The
// writer's tile is staged in shared memory with coalesced loads; neighbours outside the tile
// come from global memory. Bits past bit_len are masked off the last group.
struct BmGroupsSrc {
    static const u32 LOOK = 1;
    const u32* __restrict__ bits;
    u64 n_words;  // words of `bits` that may be read
    u64 n;        // groups
    u32 last_mask;
    u32* sm;
    u64 sm_g0;
    u32 sm_groups;
    u64 k;

    __device__ __forceinline__ u32 word(u64 w) const { return w < n_words ? bits[w] : 0u; }
    __device__ __forceinline__ u32 group(u64 g) const {
        u32 x;
        if (g - sm_g0 < (u64)sm_groups) {
            const u32 b = (u32)(g - sm_g0) * BM_GROUP_BITS;
            x = __funnelshift_r(sm[b >> 5], sm[(b >> 5) + 1], b & 31);
        } else {
            const u64 b = g * BM_GROUP_BITS;
            x = __funnelshift_r(word(b >> 5), word((b >> 5) + 1), (u32)(b & 31));
        }
        x &= BM_GROUP_ONES;
        if (g + 1 == n) x &= last_mask;
        return x;
    }
    // g0 is a multiple of 32, so the tile starts on a word: 32 groups = 31 words.
    __device__ __forceinline__ void tile_begin(u64 g0) {
        sm_g0 = g0;
        sm_groups = (u32)(n - g0 < (u64)BM_WRITER_TILE ? n - g0 : (u64)BM_WRITER_TILE);
        const u64 w0 = g0 / 32 * BM_GROUP_BITS;
        const u32 nw = (sm_groups * BM_GROUP_BITS + 31) / 32 + 1;
        for (u32 i = threadIdx.x; i < nw; i += blockDim.x) sm[i] = word(w0 + i);
        __syncthreads();
    }
    __device__ __forceinline__ void seek(u64 kk) { k = kk; }
    __device__ __forceinline__ void next(u32& v, u32& c) {
        v = group(k++);
        c = 1;
    }
};
#define BM_GROUPS_SMEM_WORDS (BM_WRITER_TILE / 32 * BM_GROUP_BITS + 1)

// The slots of a valid word stream (empty PLWAH position slots come alone: LOOK = 2).
template <bool PLWAH> struct BmSlotsSrc {
    static const u32 LOOK = 2;
    const u32* __restrict__ words;
    u64 n;  // slots
    u64 k;
    __device__ __forceinline__ void tile_begin(u64) {}
    __device__ __forceinline__ void seek(u64 kk) { k = kk; }
    __device__ __forceinline__ void next(u32& v, u32& c) { bm_slot_at<PLWAH>(words, k++, v, c); }
};

// The pieces of op(a, b): merged item d of the two slot-`ends` sequences (a first on ties) is
// the element (op(group of a's covering slot, group of b's covering slot), item - previous
// item). The covering slots are the next unmerged ones of each side (module docs of
// src/bitmap.rs prove it); an item equal to the previous one gives an empty element. A value
// appears at most twice in each sequence (a PLWAH fill and its empty position slot), so at
// most 3 empty elements come in a row: LOOK = 4.
template <bool PLWAH, int OP> struct BmMergeSrc {
    static const u32 LOOK = 4;
    const u32* __restrict__ wa;
    const u32* __restrict__ ea;
    u32 na;
    const u32* __restrict__ wb;
    const u32* __restrict__ eb;
    u32 nb;
    u64 n;  // na + nb
    u32 ia, ib, prev_e;
    u32 ca, va, cb, vb;  // cached: slot index ca of a has group va (0xFFFFFFFF: none)

    __device__ __forceinline__ void tile_begin(u64) {}
    __device__ __forceinline__ void seek(u64 d) {
        ia = ds_merge_path(ea, na, eb, nb, d);
        ib = (u32)(d - ia);
        const u32 x = ia ? ea[ia - 1] : 0u, y = ib ? eb[ib - 1] : 0u;
        prev_e = x > y ? x : y;
        ca = cb = 0xFFFFFFFFu;
    }
    __device__ __forceinline__ void next(u32& v, u32& c) {
        const bool ta = ds_merge_takes_a(ea, na, eb, nb, ia, ib);
        const u32 e = ta ? ea[ia] : eb[ib];
        const u32 sa = ia < na ? ia : na - 1, sb = ib < nb ? ib : nb - 1;
        u32 cnt;
        if (sa != ca) {
            bm_slot_at<PLWAH>(wa, sa, va, cnt);
            ca = sa;
        }
        if (sb != cb) {
            bm_slot_at<PLWAH>(wb, sb, vb, cnt);
            cb = sb;
        }
        v = bm_op<OP>(va, vb);
        c = e - prev_e;
        prev_e = e;
        if (ta) ++ia; else ++ib;
    }
};

// ---- the canonical writer's three passes -------------------------------------------------------

template <bool PLWAH, typename Src> __device__ __forceinline__ void bm_writer_reduce(Src& src, BmAgg* __restrict__ partials) {
    __shared__ DsBlockStorage<BM_WRITER_THREADS, BmAgg> s;
    const u64 tile0 = (u64)blockIdx.x * BM_WRITER_TILE;
    src.tile_begin(tile0);
    u32 v[BM_WRITER_ITEMS], c[BM_WRITER_ITEMS], em, fm, pk;
    const BmAgg a = bm_writer_load<PLWAH, BM_WRITER_ITEMS>(src, tile0 + threadIdx.x * BM_WRITER_ITEMS, v, c, em, fm, pk);
    BmAgg total;
    ds_block_exclusive<BM_WRITER_THREADS>(a, BmAggOp(), bm_agg_zero(), s, total);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// Mode 0: words go to shared memory, then out[first block of the tile ..] with coalesced
// stores; a run that needs full fill_words before its last raises flags[0].
struct BmStageEmit {
    u32* stage;
    u32 b0;
    u32* flags;
    __device__ __forceinline__ void operator()(u32 b, u32 word, u32 ex) const {
        const u32 i = b - b0;
        if (i < BM_WRITER_TILE) stage[i] = word;
        if (ex) flags[0] = 1u;
    }
};
// Mode 1 (overflow path): word and ex of block b to their arrays.
struct BmDirectEmit {
    u32* words;
    u32* ex;
    __device__ __forceinline__ void operator()(u32 b, u32 word, u32 e) const {
        words[b] = word;
        ex[b] = e;
    }
};

template <bool PLWAH, typename Src>
__device__ __forceinline__ void bm_writer_apply(Src& src, const BmAgg* __restrict__ partials, u32 max_counter, u32 mode,
                                                u32* __restrict__ out, u32* __restrict__ ex_out, u32* __restrict__ flags) {
    __shared__ DsBlockStorage<BM_WRITER_THREADS, BmAgg> s;
    __shared__ u32 stage[BM_WRITER_TILE];
    const u64 tile0 = (u64)blockIdx.x * BM_WRITER_TILE;
    src.tile_begin(tile0);
    u32 v[BM_WRITER_ITEMS], c[BM_WRITER_ITEMS], em, fm, pk;
    const BmAgg a = bm_writer_load<PLWAH, BM_WRITER_ITEMS>(src, tile0 + threadIdx.x * BM_WRITER_ITEMS, v, c, em, fm, pk);
    BmAgg total;
    const BmAgg excl = ds_block_exclusive<BM_WRITER_THREADS>(a, BmAggOp(), bm_agg_zero(), s, total);
    const BmAgg tile_prefix = partials[blockIdx.x];
    const BmAgg prefix = BmAggOp()(tile_prefix, excl);
    if (mode == 0) {
        BmStageEmit e{stage, tile_prefix.b, flags};
        bm_writer_emit<PLWAH, BM_WRITER_ITEMS>(v, c, em, fm, pk, prefix, max_counter, e);
        __syncthreads();
        const u32 nb = total.b < BM_WRITER_TILE ? total.b : BM_WRITER_TILE;
        for (u32 i = threadIdx.x; i < nb; i += BM_WRITER_THREADS) out[tile_prefix.b + i] = stage[i];
    } else {
        BmDirectEmit e{out, ex_out};
        bm_writer_emit<PLWAH, BM_WRITER_ITEMS>(v, c, em, fm, pk, prefix, max_counter, e);
    }
}

// Compression: the groups of `bits` (n_words words, bit_len bits, G groups).
#define BM_GROUPS_SRC                                                                 \
    __shared__ u32 sm[BM_GROUPS_SMEM_WORDS];                                          \
    BmGroupsSrc src;                                                                  \
    src.bits = bits;                                                                  \
    src.n_words = n_words;                                                            \
    src.n = groups;                                                                   \
    src.last_mask = last_mask;                                                        \
    src.sm = sm;                                                                      \
    src.sm_g0 = 0;                                                                    \
    src.sm_groups = 0;                                                                \
    src.k = 0;

#define BM_COMPRESS_KERNELS(NAME, PLWAH)                                                                           \
    extern "C" __global__ void __launch_bounds__(BM_WRITER_THREADS)                                                \
        bm_compress_reduce_##NAME(const u32* __restrict__ bits, u64 n_words, u64 groups, u32 last_mask,            \
                                  BmAgg* __restrict__ partials) {                                                  \
        BM_GROUPS_SRC                                                                                              \
        bm_writer_reduce<PLWAH>(src, partials);                                                                    \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(BM_WRITER_THREADS)                                                \
        bm_compress_apply_##NAME(const u32* __restrict__ bits, u64 n_words, u64 groups, u32 last_mask,             \
                                 const BmAgg* __restrict__ partials, u32 max_counter, u32 mode, u32* __restrict__ out, \
                                 u32* __restrict__ ex_out, u32* __restrict__ flags) {                              \
        BM_GROUPS_SRC                                                                                              \
        bm_writer_apply<PLWAH>(src, partials, max_counter, mode, out, ex_out, flags);                              \
    }
BM_COMPRESS_KERNELS(wah, false)
BM_COMPRESS_KERNELS(plwah, true)

// Conversion: the slots of a valid stream of flavor IN rewritten canonically in flavor OUT.
#define BM_CONVERT_KERNELS(NAME, IN, OUT)                                                                          \
    extern "C" __global__ void __launch_bounds__(BM_WRITER_THREADS)                                                \
        bm_convert_reduce_##NAME(const u32* __restrict__ words, u64 n_slots, BmAgg* __restrict__ partials) {       \
        BmSlotsSrc<IN> src{words, n_slots, 0};                                                                     \
        bm_writer_reduce<OUT>(src, partials);                                                                      \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(BM_WRITER_THREADS)                                                \
        bm_convert_apply_##NAME(const u32* __restrict__ words, u64 n_slots, const BmAgg* __restrict__ partials,    \
                                u32 max_counter, u32 mode, u32* __restrict__ out, u32* __restrict__ ex_out,        \
                                u32* __restrict__ flags) {                                                         \
        BmSlotsSrc<IN> src{words, n_slots, 0};                                                                     \
        bm_writer_apply<OUT>(src, partials, max_counter, mode, out, ex_out, flags);                                \
    }
BM_CONVERT_KERNELS(plwah_to_wah, true, false)
BM_CONVERT_KERNELS(wah_to_plwah, false, true)

// Binary operations on two valid streams of one flavor and length, with their slot ends.
#define BM_OP_SRC(PLWAH, OP)                                                      \
    BmMergeSrc<PLWAH, OP> src;                                                    \
    src.wa = wa;                                                                  \
    src.ea = ea;                                                                  \
    src.na = na;                                                                  \
    src.wb = wb;                                                                  \
    src.eb = eb;                                                                  \
    src.nb = nb;                                                                  \
    src.n = (u64)na + nb;                                                         \
    src.ia = src.ib = src.prev_e = 0;                                             \
    src.ca = src.cb = 0xFFFFFFFFu;                                                \
    src.va = src.vb = 0;

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
BM_OP_KERNELS(and_wah, false, BM_OP_AND)
BM_OP_KERNELS(or_wah, false, BM_OP_OR)
BM_OP_KERNELS(xor_wah, false, BM_OP_XOR)
BM_OP_KERNELS(andnot_wah, false, BM_OP_ANDNOT)
BM_OP_KERNELS(and_plwah, true, BM_OP_AND)
BM_OP_KERNELS(or_plwah, true, BM_OP_OR)
BM_OP_KERNELS(xor_plwah, true, BM_OP_XOR)
BM_OP_KERNELS(andnot_plwah, true, BM_OP_ANDNOT)

// The overflow path's last step: block i (of `blocks`) writes ex[i] fill_words of counter
// max_counter, then its last word, from word i + ex_prefix[i] on.
extern "C" __global__ void bm_scatter_fills(const u32* __restrict__ words, const u32* __restrict__ ex,
                                            const u32* __restrict__ ex_prefix, u32 blocks, u32 max_counter,
                                            u32* __restrict__ out) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < blocks; i += (u64)gridDim.x * blockDim.x) {
        const u32 w = words[i], e = ex[i];
        const u64 base = i + ex_prefix[i];
        const u32 full = (w & (BM_FILL_FLAG | BM_FILL_BIT)) | max_counter;
        for (u32 j = 0; j < e; ++j) out[base + j] = full;
        out[base + e] = w;
    }
}

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

// ---- decompression (Algorithm 5) -------------------------------------------------------------

template <bool PLWAH>
__device__ __forceinline__ void bm_decompress(const u32* __restrict__ words, u32 n_slots, const u32* __restrict__ ends,
                                              u64 groups, u32* __restrict__ out, u64 out_words) {
    __shared__ u32 stage[BM_DECODE_THREADS * (BM_DECODE_GROUPS - 1)];
    __shared__ u32 range[2];
    const u64 g_lo = (u64)blockIdx.x * BM_DECODE_TILE;
    if (g_lo >= groups) return;  // uniform per block
    const u64 g_hi = g_lo + BM_DECODE_TILE < groups ? g_lo + BM_DECODE_TILE : groups;
    if (threadIdx.x == 0) range[0] = ds_upper_bound(ends, 0u, n_slots, (u32)g_lo);
    if (threadIdx.x == 32) {
        const u32 r = ds_upper_bound(ends, 0u, n_slots, (u32)(g_hi - 1));
        range[1] = r < n_slots ? r + 1 : n_slots;
    }
    __syncthreads();
    const u64 g0 = g_lo + (u64)threadIdx.x * BM_DECODE_GROUPS;
    const u32 lo = range[0], hi = range[1] > range[0] ? range[1] : range[0];
    u32 s = g0 < groups ? ds_upper_bound(ends, lo, hi, (u32)g0) : n_slots;
    u32 prev = 0;
    u32* st = stage + threadIdx.x * (BM_DECODE_GROUPS - 1);
#pragma unroll 4
    for (u32 j = 0; j < BM_DECODE_GROUPS; ++j) {
        const u64 g = g0 + j;
        u32 x = 0;
        if (g < groups) {
            while (s < n_slots && ends[s] <= (u32)g) ++s;
            if (s < n_slots) {
                u32 c;
                bm_slot_at<PLWAH>(words, s, x, c);
            }
        }
        // Output word j - 1 of the thread: bits j-1.. of group j-1, then the low bits of group j.
        if (j > 0) st[j - 1] = (prev >> (j - 1)) | (x << (32 - j));
        prev = x;
    }
    __syncthreads();
    const u64 w0 = g_lo / 32 * BM_GROUP_BITS;
    for (u32 i = threadIdx.x; i < BM_DECODE_THREADS * (BM_DECODE_GROUPS - 1); i += BM_DECODE_THREADS)
        if (w0 + i < out_words) out[w0 + i] = stage[i];
}

extern "C" __global__ void __launch_bounds__(BM_DECODE_THREADS)
    bm_decompress_wah(const u32* __restrict__ words, u32 n_slots, const u32* __restrict__ ends, u64 groups,
                      u32* __restrict__ out, u64 out_words) {
    bm_decompress<false>(words, n_slots, ends, groups, out, out_words);
}
extern "C" __global__ void __launch_bounds__(BM_DECODE_THREADS)
    bm_decompress_plwah(const u32* __restrict__ words, u32 n_slots, const u32* __restrict__ ends, u64 groups,
                        u32* __restrict__ out, u64 out_words) {
    bm_decompress<true>(words, n_slots, ends, groups, out, out_words);
}

// ---- Algorithm 1 and the plain baseline ------------------------------------------------------

// The extended bitmap: word g = group g (31 bits, bit 31 = 0), the last group masked.
extern "C" __global__ void bm_extend(const u32* __restrict__ bits, u64 n_words, u64 groups, u32 last_mask,
                                     u32* __restrict__ out) {
    for (u64 g = (u64)blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += (u64)gridDim.x * blockDim.x) {
        const u64 b = g * BM_GROUP_BITS;
        const u64 w = b >> 5;
        const u32 lo = w < n_words ? bits[w] : 0u, hi = w + 1 < n_words ? bits[w + 1] : 0u;
        u32 x = __funnelshift_r(lo, hi, (u32)(b & 31)) & BM_GROUP_ONES;
        if (g + 1 == groups) x &= last_mask;
        out[g] = x;
    }
}

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
