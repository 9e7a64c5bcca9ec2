// bitmap.cu: WAH / PLWAH compressed bitmaps on the GPU (docs/format/wah.md, plwah.md, "GPU
// notes"), after Andrzejewski and Wrembel, GPU-PLWAH (the paper). Host side: src/bitmap.rs.
//
// Kernels (each a thin wrapper over include/wah.cuh, device_scan.cuh, merge.cuh):
//   bm_extend                  the paper's Algorithm 1: packed bits -> one 32-bit word per group
//                              (31 bits + a 0), for callers that want the extended form;
//   bm_cmp_<flavor>            compression (Algorithms 1, 2 and 4, by heads), one pass: each
//                              group decides locally whether it starts a word, each tile counts
//                              and stages its words, a decoupled look-back over the tiles gives
//                              its offset and the fill run carried into it (see "compression by
//                              heads");
//   bm_compress_{reduce,apply}_<flavor>
//                              the same through the general canonical writer over the groups of
//                              a plain bitmap (2048 groups = 1984 words per tile staged in shared
//                              memory): the previous path, kept as a cross-check for the tests;
//   bm_slots_{reduce,apply}_<flavor>
//                              the group counts of a word stream scanned into slot `ends` (the
//                              scans of Algorithms 5 and 7), checking every counter (status =
//                              the first word with a zero counter) and summing in u64, so the
//                              host can compare the total with ceil(bit_len / 31) before any
//                              kernel trusts `ends`;
//   bm_dec_expand_<flavor>     Algorithm 5, output-partitioned: tile b (4096 groups) loads the
//                              words from its *tile start* (the word covering its first group,
//                              which the compressor writes as it goes) into shared memory, scans
//                              their ends there, and each thread walks 32 groups = 31 output
//                              words; bm_dec_{sums,tile_starts}_<flavor> compute the tile starts
//                              of a bitmap that has none (see "decompression");
//   bm_convert_*               Algorithm 6 (PLWAH -> WAH, and WAH -> PLWAH): the writer over the
//                              input's slots, which also merges fills longer than the PLWAH
//                              counter into one WAH fill_word;
//   bm_op_<op>_<flavor>        AND / OR / XOR / AND-NOT on compressed bitmaps, improving on
//                              Algorithm 7: the two slot-`ends` sequences are merged by merge
//                              path, each merged item is one element (op of the two covering
//                              groups, repeated for the gap to the previous item; ties give an
//                              empty element), and the writer compacts the fills; no merged
//                              array, pair arrays or extra scans are materialized;
//   bm_op1_<op>_<flavor>       the same writer in one launch (decoupled look-back), and
//   bm_slots_pair_<flavor>     both operands' slot ends in one launch: the path of operations on
//                              short bitmaps, where launches and waits cost more than the data;
//   bm_fop_<op>_<flavor>       the same operations by tiles (the path of operands with at least
//                              a word per 6 groups): decode both operands' tile from their tile
//                              starts, operate, compress with the compressor's tile code (see
//                              "fused operations");
//   bm_overflow_fixup          its overflow path (a short list of blocks needing full fill_words);
//   bm_scatter_fills           the overflow path: block i's `ex` full fill_words and last word;
//   bm_overflow_fills          the same with the scan of ex, in one thread block (small results);
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
//
// Staged per tile (tile_begin, every thread of the block): warps 0 and 1 find the merge-path
// split of the first and the last diagonal any thread of the tile visits (dlo = tile0 - LOOK,
// dhi = tile0 + TILE + LOOK, clipped), one 32-way warp search each; then the block copies a's
// ends ea[ia_lo - 1 .. ia_hi] and the groups of a's slots ia_lo .. ia_hi (slot indices clamped
// to na - 1), and the same of b, into shared memory. Every later step of every thread reads
// shared memory only: before, each thread binary-searched its diagonal in global memory and
// took two dependent global loads per item, and a tile was a chain of about 40 L2 round trips.
// Bounds: the path from (ia_lo, ib_lo) to (ia_hi, ib_hi) is monotone, so every diagonal in
// [dlo, dhi] has ia in [ia_lo, ia_hi] and ib in [ib_lo, ib_hi]; la + lb = dhi - dlo <=
// BM_MERGE_SPAN.
#define BM_MERGE_LOOK 4
#define BM_MERGE_SPAN (BM_WRITER_TILE + 2 * BM_MERGE_LOOK)
#define BM_MERGE_ENDS (BM_MERGE_SPAN + 4)  // a: la + 2 ends, then b: lb + 2
#define BM_MERGE_VALS (BM_MERGE_SPAN + 2)  // a: la + 1 groups, then b: lb + 1
template <bool PLWAH, int OP> struct BmMergeSrc {
    static const u32 LOOK = BM_MERGE_LOOK;
    const u32* __restrict__ wa;
    const u32* __restrict__ ea;
    u32 na;
    const u32* __restrict__ wb;
    const u32* __restrict__ eb;
    u32 nb;
    u64 n;  // na + nb
    u32* s_end;
    u32* s_val;
    u32* s_split;
    u64 dlo;
    u32 ia_lo, ib_lo, la, lb;
    u32 ia, ib, prev_e;

    __device__ __forceinline__ u32 end_a(u32 i) const { return s_end[i - ia_lo + 1]; }
    __device__ __forceinline__ u32 end_b(u32 i) const { return s_end[la + 2 + (i - ib_lo + 1)]; }

    __device__ __forceinline__ void tile_begin(u64 tile0) {
        dlo = tile0 >= LOOK ? tile0 - LOOK : 0;
        const u64 dhi = tile0 + BM_WRITER_TILE + LOOK < n ? tile0 + BM_WRITER_TILE + LOOK : n;
        const u32 warp = threadIdx.x >> 5;
        if (warp < 2) {
            const u32 i = ds_merge_path_warp(ea, na, eb, nb, warp ? dhi : dlo);
            if ((threadIdx.x & 31u) == 0) s_split[warp] = i;
        }
        __syncthreads();
        ia_lo = s_split[0];
        ib_lo = (u32)(dlo - ia_lo);
        la = s_split[1] - ia_lo;
        lb = (u32)(dhi - s_split[1]) - ib_lo;
        for (u32 p = threadIdx.x; p < la + 2; p += BM_WRITER_THREADS) {
            const u32 g = ia_lo + p - 1;  // wraps to 0xFFFFFFFF for p = 0 at ia_lo = 0: not read
            s_end[p] = (p + ia_lo >= 1 && g < na) ? ea[g] : 0u;
        }
        for (u32 p = threadIdx.x; p < lb + 2; p += BM_WRITER_THREADS) {
            const u32 g = ib_lo + p - 1;
            s_end[la + 2 + p] = (p + ib_lo >= 1 && g < nb) ? eb[g] : 0u;
        }
        for (u32 p = threadIdx.x; p < la + 1; p += BM_WRITER_THREADS) {
            u32 v = 0, c;
            if (na) bm_slot_at<PLWAH>(wa, min(ia_lo + p, na - 1), v, c);
            s_val[p] = v;
        }
        for (u32 p = threadIdx.x; p < lb + 1; p += BM_WRITER_THREADS) {
            u32 v = 0, c;
            if (nb) bm_slot_at<PLWAH>(wb, min(ib_lo + p, nb - 1), v, c);
            s_val[la + 1 + p] = v;
        }
        __syncthreads();
    }
    __device__ __forceinline__ void seek(u64 d) {
        ia = ia_lo + ds_merge_path(s_end + 1, la, s_end + la + 3, lb, d - dlo);
        ib = (u32)(d - ia);
        const u32 x = ia ? end_a(ia - 1) : 0u, y = ib ? end_b(ib - 1) : 0u;
        prev_e = x > y ? x : y;
    }
    __device__ __forceinline__ void next(u32& v, u32& c) {
        const bool ta = ib >= nb || (ia < na && end_a(ia) <= end_b(ib));
        const u32 e = ta ? end_a(ia) : end_b(ib);
        const u32 sa = ia < na ? ia : na - 1, sb = ib < nb ? ib : nb - 1;
        const u32 va = s_val[sa >= ia_lo ? sa - ia_lo : 0u];
        const u32 vb = s_val[la + 1 + (sb >= ib_lo ? sb - ib_lo : 0u)];
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

// ---- compression by heads (plain bits -> canonical words; wah.md "GPU notes") -----------------
//
// A group g is a 0-fill, a 1-fill or a literal (kind 0, 1, 2). Group g is a *boundary* when it
// is the first group, a literal, or a fill of another kind than group g - 1; a PLWAH literal
// right after a fill that differs from the fill group in one bit is *folded* (plwah.md §3); a
// *head* is a boundary that is not folded. Every head starts one block of the canonical stream
// (wah.md §4): a literal head is one literal word; a fill head's run ends at the next boundary
// e (G when none), so its n = e - g groups are ex = (n - 1) / max_counter full fill_words and a
// last one of n - ex * max_counter groups, carrying the position of e when e is folded. All of
// it is local to g and g - 1 except e, which is found by a suffix-min over boundary *keys*
// (position << 5 | fold position: unique per boundary, so the min carries the fold along).
//
// One launch (bm_cmp_<flavor>) and one host read of the word total (src/bitmap.rs, when the
// caller finishes the queued compression). Block t takes tile t (blocks are dispatched in index
// order, so every tile before it has started) with its BM_CMP_THREADS unit threads and one
// look-back warp, which from the block's start gets the aggregate of all tiles before it (step
// 3) while the unit threads:
//   1. stage the tile's BM_CMP_TILE_WORDS input words in shared memory (16-byte loads); thread
//      t classifies unit t (32 groups = 31 words) into masks (boundaries, folds, heads) on the
//      fly, and takes the kind of the group before it from the staged word before its own;
//   2. find where each head's run ends (a block suffix-min of the units' first boundary keys)
//      and count the tile's *closed* words: every head except the *open* one, a fill head whose
//      run leaves the tile (a fill run's words are written by the tile where the run ends). A run
//      closed in the tile is one word with every real counter, so a unit's count is a popcount;
//   3. publish the tile's aggregate (closed words, first boundary, open head; one uint4); the
//      look-back warp's decoupled look-back reads 32 tiles a round (BM_CMP_LOOK_ITEMS a lane,
//      the window's aggregate by bm_cmp_window) back to the nearest tile that published an
//      inclusive aggregate; once the two meet, the tile publishes its own inclusive aggregate
//      and writes its *tile start* for decompression (the word covering its first group:
//      bm_cmp_tile_start);
//   4. store: the run carried in from an earlier tile, which ends at this tile's first boundary
//      (its fill_words first), then its closed words: thread t walks unit t's closed heads and
//      writes their words over the unit's staged words (bm_cmp_heads, before the meeting, as
//      tile-relative offsets need no prefix), then each warp copies its units' words to global
//      memory, coalesced (bm_cmp_copy). Tiny test counters instead write one unit per warp and
//      one group per lane (bm_cmp_write). The last tile also writes the run that is still open
//      at the end of the bitmap and the word total (counters[0]).
// Invariants: groups < 2^32 (MAX_BITS), so positions, counts and word totals fit u32 and keys
// u64; every word total is <= G (each word covers >= 1 group) = the output's capacity, and
// every store is still checked against out_cap; reads are bounded by n_words (padding 0); the
// last group is masked with last_mask; status (tiles 16-byte words) is zero at launch.
#define BM_CMP_NONE 0xFFFFFFFFFFFFFFFFull
// Measured choices (H100, bitmap_gpu_speed, same run): where PLWAH tests folds
// (bm_cmp_classify; 0 in the extraction loop, 1 after it, 2 in the loop when the whole warp
// extracts, 3 after it for literals after a 1-fill only, those after a 0-fill from a mask of
// one-bit groups built in the loop), 2026-11-22 with the earlier head walk, at 2^-4 / 2^-12:
// 0.342 / 0.159, 0.347 / 0.156, 0.331 / 0.156 ms; 2026-11-22 (session 13) with the heads-only
// walk and the look-back warp, queued, at 2^-1 / 2^-4 / 2^-8: 2: 0.261 / 0.276 / 0.206 ms, 1:
// 0.227 / 0.259 / 0.165 ms; 2026-11-23 (session 14), queued, PLWAH at 2^-1 / 2^-4 / 2^-5 /
// 2^-6 / 2^-7 / 2^-8 / 2^-16, 1: 0.225 / 0.248 / 0.253 / 0.227 / 0.179 / 0.157 / 0.120 ms, 3
// (two runs): 0.229-0.231 / 0.248-0.251 / 0.244-0.255 / 0.217-0.219 / 0.171-0.175 /
// 0.152-0.157 / 0.117-0.121 ms (a literal after a 0-fill is the common fold candidate of the
// middle densities, about 7 a unit at 2^-6, and the loop's mask costs 3 instructions a
// group). How a warp copies its words (bm_cmp_copy; removed modes 0 a unit a round, 1 a
// binary search for 32 words a round, 2 by warp between those two; landed, 3: by warp between
// a unit a round and 32 words a round found from a start mask), WAH 2^-1 / 2^-4 / 2^-8 (an earlier head walk): 0.238 /
// 0.267 / -, 0.266 / 0.301 / 0.191, 0.251 / 0.274 / 0.191 ms; session 13, PLWAH 2^-1 / 2^-4 /
// 2^-8, 1: 0.268 / 0.295 / 0.165, 2: 0.224 / 0.255 / 0.168 ms; session 15 (2026-11-23, both
// with the cheaper head-walk steps), PLWAH 2^-5 / 2^-6 / 2^-7 / 2^-8, 2: 0.232 / 0.207 /
// 0.174 / 0.157, 3: 0.228 / 0.193 / 0.174 / 0.152 ms (at 2^-6 a warp's units have ~14 words,
// too few rounds for 2's search: it copied a unit a round, 32 rounds of ~22 instructions;
// ncu put the copy at 23% of the kernel's instructions). 3's thresholds: WINDOW_COST *
// rounds < UNIT_COST * busy units (1 and 1 measured the same, 2026-11-23). Modes 0-2 are in
// git history before session 15's cleanup. Staging a tile
// with cp.async (no register round trip) was slower at every density (session 13: PLWAH 2^-8
// 0.192 against 0.168 ms), as were 4 look-back items a lane (0.190 ms).
#ifndef BM_CMP_LAZY_FOLD
#define BM_CMP_LAZY_FOLD 3
#endif
#ifndef BM_CMP_COPY_WINDOW_COST
#define BM_CMP_COPY_WINDOW_COST 5
#endif
#ifndef BM_CMP_COPY_UNIT_COST
#define BM_CMP_COPY_UNIT_COST 4
#endif

__device__ __forceinline__ u64 bm_min64(u64 a, u64 b) { return a < b ? a : b; }

// Exclusive suffix-min across the THREADS first threads of a block (min over threads > t;
// BM_CMP_NONE for the last); `total` gets the min over all of them. Synchronizes twice
// (ts_bar<BAR, THREADS>).
template <int THREADS, int BAR = 0>
__device__ __forceinline__ u64 bm_block_suffix_min(u64 x, u64* s_w, u64& total) {
    const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    u64 incl = x;
#pragma unroll
    for (u32 d = 1; d < 32; d <<= 1) {
        const u64 y = __shfl_down_sync(0xFFFFFFFFu, incl, d);
        if (lane + d < 32) incl = bm_min64(incl, y);
    }
    u64 excl = __shfl_down_sync(0xFFFFFFFFu, incl, 1);
    if (lane == 31) excl = BM_CMP_NONE;
    if (lane == 0) s_w[warp] = incl;
    ts_bar<BAR, THREADS>();
    u64 tot = BM_CMP_NONE;
#pragma unroll
    for (u32 w = 0; w < THREADS / 32; ++w) {
        const u64 m = s_w[w];
        if (w > warp) excl = bm_min64(excl, m);
        tot = bm_min64(tot, m);
    }
    ts_bar<BAR, THREADS>();
    total = tot;
    return excl;
}

// Group j (0..31) of the unit whose 31 words start at p: bits 31j .. 31j + 30. Word 30's top
// bit is group 31's last, so group 31 reads no word past the unit.
__device__ __forceinline__ u32 bm_cmp_group(const u32* p, u32 j) {
    const u32 b = j * BM_GROUP_BITS;
    const u32 lo = p[b >> 5];
    const u32 hi = j < 31 ? p[(b >> 5) + 1] : 0u;
    return __funnelshift_r(lo, hi, b & 31) & BM_GROUP_ONES;
}
// The position (1..31) of a folded literal x: the bit in which it differs from its fill group
// (0 when x has one bit set, all ones when it has 30: never both).
__device__ __forceinline__ u32 bm_cmp_fold_position(u32 x) {
    return (u32)__ffs(__popc(x) == 1 ? x : x ^ BM_GROUP_ONES);
}
// The same when the fill's groups km are known (0, or BM_GROUP_ONES for a 1-fill): the highest
// set bit of x ^ km, with no popcount.
__device__ __forceinline__ u32 bm_cmp_fold_position(u32 x, u32 km) { return 32u - (u32)__clz(x ^ km); }

// The kind and fold masks of a unit's 32 groups extracted from its words w (LAST: the unit holds
// the bitmap's last group, group nv - 1, masked with last_mask; a template so that the other
// units' loop carries no per-group test for it). FOLD: test PLWAH folds here, into f; SINGLE:
// mark the groups with at most one bit set in `single`, from which bm_cmp_classify takes the
// folds after 0-fills (BM_CMP_LAZY_FOLD 3).
template <bool PLWAH, bool LAST, bool FOLD, bool SINGLE>
__device__ __forceinline__ void bm_cmp_extract(const u32 (&w)[31], u32 pk, u32 nv, u32 last_mask, u32& z, u32& o,
                                               u32& f, u32& single) {
    bool prev_fill = pk < 2u, prev_one = pk == 1u;
#pragma unroll
    for (u32 j = 0; j < 32; ++j) {
        const u32 bb = j * BM_GROUP_BITS;
        const u32 lo = w[bb >> 5];
        const u32 hi = (bb >> 5) + 1 < 31 ? w[(bb >> 5) + 1] : 0u;
        u32 x = __funnelshift_r(lo, hi, bb & 31) & BM_GROUP_ONES;
        if (LAST && j + 1 == nv) x &= last_mask;
        const bool iz = x == 0u, io = x == BM_GROUP_ONES;
        z |= iz ? 1u << j : 0u;
        o |= io ? 1u << j : 0u;
        if (SINGLE) single |= (x & (x - 1u)) == 0u ? 1u << j : 0u;
        if (PLWAH && FOLD) {
            const bool fold = prev_fill && !iz && !io && __popc(x ^ (prev_one ? BM_GROUP_ONES : 0u)) == 1;
            f |= fold ? 1u << j : 0u;
            prev_fill = iz || io;
            prev_one = io;
        }
    }
}

// Phase 1, one thread per unit (thread t: groups 32t .. 32t + 31 of the tile, from the staged
// words p = sm + 31t): the masks of the unit's nv valid groups (bit j: group j), built on the
// fly without keeping the 32 group values (a thread holds only its 31 words). `pk` is the kind
// of the group before the unit (3: none). b = boundaries, f = folded literals (PLWAH), l =
// literals, o = 1-fills; heads are b & ~f. Returns the key of the unit's first boundary
// (position << 5 | fold position), BM_CMP_NONE if none.
template <bool PLWAH>
__device__ __forceinline__ u64 bm_cmp_classify(const u32* p, u32 pk, u32 nv, bool has_last, u32 last_mask, u64 ug0,
                                               u32& b, u32& f, u32& l, u32& o) {
    u32 w[31];
    u32 any = 0, all = 0xFFFFFFFFu;
#pragma unroll
    for (u32 i = 0; i < 31; ++i) {
        w[i] = p[i];
        any |= w[i];
        all &= w[i];
    }
    const u32 valid = nv == 32 ? 0xFFFFFFFFu : (1u << nv) - 1u;
    // PLWAH folds: found after the extraction loop, for only the literals right after a fill
    // (about 3 a unit at 2^-8, none at 2^-1), rather than tested for every group in the loop
    // (BM_CMP_LAZY_FOLD above; the bitmap's last unit tests in the loop, where it masks).
#if BM_CMP_LAZY_FOLD == 0
    const bool fold_in_loop = true;
#elif BM_CMP_LAZY_FOLD == 1 || BM_CMP_LAZY_FOLD == 3
    const bool fold_in_loop = has_last;
#else
    // (every lane votes: has_last must not skip the __all_sync)
    const bool extracts = any != 0u && !(all == 0xFFFFFFFFu && nv == 32 && !has_last);
    const bool warp_extracts = PLWAH && __all_sync(0xFFFFFFFFu, extracts);
    const bool fold_in_loop = has_last || warp_extracts;
#endif
    u32 z = 0, single = 0;
    o = f = 0;
    // A unit of 31 zero words is 32 0-fills, of 31 all-ones words (not the bitmap's last unit)
    // 32 1-fills: most units at the extreme densities skip the group extraction.
    if (any == 0u) {
        z = valid;
    } else if (all == 0xFFFFFFFFu && nv == 32 && !has_last) {
        o = valid;
    } else {
        if (has_last) bm_cmp_extract<PLWAH, true, true, false>(w, pk, nv, last_mask, z, o, f, single);
        else if (fold_in_loop) bm_cmp_extract<PLWAH, false, true, false>(w, pk, nv, last_mask, z, o, f, single);
        else bm_cmp_extract<PLWAH, false, false, PLWAH && BM_CMP_LAZY_FOLD == 3>(w, pk, nv, last_mask, z, o, f, single);
        z &= valid;
        o &= valid;
        f &= valid;
    }
    l = valid & ~z & ~o;
    const u32 zp = (z << 1) | (pk == 0u ? 1u : 0u);
    const u32 op = (o << 1) | (pk == 1u ? 1u : 0u);
    if (PLWAH && !fold_in_loop) {
        // Only a literal right after a fill can fold.
#if BM_CMP_LAZY_FOLD == 3
        // A literal after a 0-fill folds when it has one bit, which the extraction loop noted
        // (`single`); only those after a 1-fill are tested here.
        f |= l & zp & single;
        for (u32 x = l & op; x; x &= x - 1) {
#else
        for (u32 x = l & (zp | op); x; x &= x - 1) {
#endif
            const u32 j = (u32)__ffs(x) - 1;
            const u32 g = bm_cmp_group(p, j) & (has_last && j + 1 == nv ? last_mask : BM_GROUP_ONES);
            if (__popc(g ^ (((op >> j) & 1u) ? BM_GROUP_ONES : 0u)) == 1) f |= 1u << j;
        }
    }
    b = l | (z & ~zp) | (o & ~op);
    if (!b) return BM_CMP_NONE;
    const u32 j0 = (u32)__ffs(b) - 1;
    const u32 fold0 = PLWAH && ((f >> j0) & 1u) ? bm_cmp_fold_position(bm_cmp_group(p, j0) & (has_last && j0 + 1 == nv ? last_mask : BM_GROUP_ONES)) : 0u;
    return ((ug0 + j0) << 5) | fold0;
}

// Copies n words from global memory at src (16-byte aligned) into shared memory, word i at
// sm[BM_DEC_PAD(i)] when PAD (the decompression's bank-spread layout), else at sm[i]: 16-byte
// loads of up to MAX words, every load issued before the first store, then the tail word by
// word. Shared by the compression's staged tiles and the decompression's chunk loads.
template <u32 THREADS, u32 MAX, bool PAD>
__device__ __forceinline__ void bm_stage_words(const u32* __restrict__ src, u32 n, u32* sm) {
    const u32 n4 = n / 4;
    const uint4* s4 = reinterpret_cast<const uint4*>(src);
    const u32 LOADS = (MAX / 4 + THREADS - 1) / THREADS;
    uint4 v[LOADS];
#pragma unroll
    for (u32 k = 0; k < LOADS; ++k) {
        const u32 q = threadIdx.x + k * THREADS;
        if (q < n4) v[k] = s4[q];
    }
#pragma unroll
    for (u32 k = 0; k < LOADS; ++k) {
        const u32 q = threadIdx.x + k * THREADS;
        if (q < n4) {
            if (PAD) {
                const u32 i = 4 * q;
                sm[BM_DEC_PAD(i)] = v[k].x;
                sm[BM_DEC_PAD(i + 1)] = v[k].y;
                sm[BM_DEC_PAD(i + 2)] = v[k].z;
                sm[BM_DEC_PAD(i + 3)] = v[k].w;
            } else {
                reinterpret_cast<uint4*>(sm)[q] = v[k];
            }
        }
    }
    for (u32 i = 4 * n4 + threadIdx.x; i < n; i += THREADS) sm[PAD ? BM_DEC_PAD(i) : i] = src[i];
}

// Loads a whole tile's input words (BM_CMP_TILE_WORDS from w0, 0 past n_words) into sm.
__device__ __forceinline__ void bm_cmp_stage(const u32* __restrict__ bits, u64 n_words, u64 w0, u32* sm) {
    if (w0 + BM_CMP_TILE_WORDS <= n_words) {
        // w0 * 4 = tile * 15872 bytes: 16-byte aligned.
        bm_stage_words<BM_CMP_THREADS, BM_CMP_TILE_WORDS, false>(bits + w0, BM_CMP_TILE_WORDS, sm);
    } else {
        for (u32 i = threadIdx.x; i < BM_CMP_TILE_WORDS; i += BM_CMP_THREADS)
            sm[i] = w0 + i < n_words ? bits[w0 + i] : 0u;
    }
}

// Words of a fill run of n >= 1 groups: its full fill_words and the last one.
__device__ __forceinline__ u32 bm_cmp_run_words(u32 n, u32 max_counter) {
    if (n <= max_counter) return 1u;  // always, but with tiny test counters
    return 1u + (n - 1) / max_counter;
}

// What a stretch of tiles contributes, packed as the tile status word it is published in (one
// uint4, so the look-back combines what it reads without unpacking, in 32-bit operations):
//   x = closed words (every head's words except the open one's),
//   y = the group of its first boundary (BM_CMP_NONE32: none),
//   z = the start group of its open fill head (BM_CMP_NONE32: none; a stretch with no boundary
//       has no open head of its own: the run through it belongs to an earlier stretch),
//   w = flag (bits 0-1: 0 nothing published yet, 1 the tile alone, 2 tiles 0 .. t) | the first
//       boundary's fold position << 2 | the open head's fill kind << 7.
// Group indices are < 0xFFFFFFFF (groups < 2^32). The identity is {0, NONE, NONE, 0}.
#define BM_CMP_NONE32 0xFFFFFFFFu
#define BM_CMP_FOLD_BITS (31u << 2)
#define BM_CMP_KIND_BIT (1u << 7)
__device__ __forceinline__ uint4 bm_cmp_agg_identity() { return make_uint4(0u, BM_CMP_NONE32, BM_CMP_NONE32, 0u); }
// a then b (a earlier): a's open run ends at b's first boundary, if b has one. Flags are dropped.
__device__ __forceinline__ uint4 bm_cmp_combine(const uint4& a, const uint4& b, u32 max_counter) {
    const bool bf = b.y != BM_CMP_NONE32, af = a.y != BM_CMP_NONE32;
    uint4 r;
    r.x = a.x + b.x + (bf && a.z != BM_CMP_NONE32 ? bm_cmp_run_words(b.y - a.z, max_counter) : 0u);
    r.y = af ? a.y : b.y;
    r.z = bf ? b.z : a.z;
    r.w = ((af ? a.w : b.w) & BM_CMP_FOLD_BITS) | ((bf ? b.w : a.w) & BM_CMP_KIND_BIT);
    return r;
}

// A tile's status word is written and read whole with device_scan.cuh's volatile vector
// accesses (as CUB's tile status words are, so neither side needs a fence); the flag is the low
// two bits of its last u32, beside the fold position and the open head's kind.
__device__ __forceinline__ void bm_cmp_publish(uint4* status, u32 tile, u32 flag, const uint4& a) {
    ds_status_publish(status, tile, make_uint3(a.x, a.y, a.z), (a.w & ~3u) | flag);
}
__device__ __forceinline__ uint4 bm_cmp_status(const uint4* status, long long t) {
    return ds_status_read(status + t, 0u);
}
// The aggregate of tiles 0 .. tile - 1 (tile > 0), run by warp WARP, valid in every lane. Each
// round the warp reads 32 * BM_CMP_LOOK_ITEMS predecessors (lane i: the i-th group of
// BM_CMP_LOOK_ITEMS, newest first), waits until each has published something, and combines
// back to the nearest one with an inclusive aggregate, if any (else it goes on with the next,
// older window). A tile publishes its inclusive aggregate only once its look-back is done, so
// its successors wait on every round's latency: a round must be short more than wide.
// Measured (H100, bitmap_gpu_speed): 2026-11-22, WAH at 2^-16, the whole block with 4 items
// (512 tiles a round) 0.219 ms, one warp with 4 items 0.161 ms in the same run (the block's
// combines cost every tile issue slots, and each round two barriers); in another run one warp
// with 2 / 4 / 8 items: 0.157 / 0.165 / 0.249 ms. Session 14 (2026-11-22), look-back warp,
// queued, PLWAH at 2^-8 / 2^-16, two runs each: the window by a shuffle scan of
// bm_cmp_combine, 2 items, 0.167-0.172 / 0.131-0.135 ms; by bm_cmp_window, 2 items 0.162-0.163
// / 0.129 ms, 1 item 0.154-0.158 / 0.116-0.119 ms, 4 items 0.191-0.194 / 0.160-0.166 ms.
#define BM_CMP_LOOK_ITEMS 1
// The aggregate of a warp's window of tiles (lane i: the stretch v, lane 0 the newest), from
// lane 0 back to lane `near` (0xFFFFFFFF: all 32), the same in every lane. Rather than a
// shuffle scan of bm_cmp_combine (5 rounds of 4 shuffles and a combine), it builds the
// result directly: a fill run closes at each stretch's first boundary and starts at the open
// head of the nearest older stretch with a boundary (the next set bit of a ballot); the closed
// words are one warp sum (REDUX); the first boundary is the oldest stretch's with one, the open
// head the newest's. This is the tile status's combine (bm_cmp_combine) folded over the
// lanes, so `near`'s inclusive aggregate ends the fold as it would a scan.
__device__ __forceinline__ uint4 bm_cmp_window(const uint4& v, u32 lane, u32 near, u32 max_counter) {
    const u32 live = near >= 31 ? 0xFFFFFFFFu : (2u << near) - 1u;  // lanes 0 .. near
    const bool hb = v.y != BM_CMP_NONE32;
    const u32 bmask = __ballot_sync(0xFFFFFFFFu, hb) & live;
    const u32 older = bmask & ~((2u << lane) - 1u);  // lane 31: 2 << 31 = 0, so none
    const u32 src = older ? (u32)__ffs(older) - 1 : lane;
    const u32 zsrc = __shfl_sync(0xFFFFFFFFu, v.z, src);
    u32 x = v.x + (hb && older && zsrc != BM_CMP_NONE32 ? bm_cmp_run_words(v.y - zsrc, max_counter) : 0u);
    if (!((live >> lane) & 1u)) x = 0;
    const u32 sum = __reduce_add_sync(0xFFFFFFFFu, x);
    const u32 first = bmask ? 31u - (u32)__clz(bmask) : 0u, open = bmask ? (u32)__ffs(bmask) - 1 : 0u;
    const u32 fy = __shfl_sync(0xFFFFFFFFu, v.y, first), fw = __shfl_sync(0xFFFFFFFFu, v.w, first);
    const u32 oz = __shfl_sync(0xFFFFFFFFu, v.z, open), ow = __shfl_sync(0xFFFFFFFFu, v.w, open);
    if (!bmask) return make_uint4(sum, BM_CMP_NONE32, BM_CMP_NONE32, 0u);
    return make_uint4(sum, fy, oz, (fw & BM_CMP_FOLD_BITS) | (ow & BM_CMP_KIND_BIT));
}
template <u32 WARP>
__device__ __forceinline__ uint4 bm_cmp_lookback(const uint4* status, u32 tile, u32 max_counter) {
    const u32 lane = threadIdx.x - WARP * 32;  // in warp WARP, where it is used
    uint4 acc = bm_cmp_agg_identity();
    long long end = (long long)tile - 1;
    if (threadIdx.x >> 5 == WARP) for (;;) {
        uint4 st[BM_CMP_LOOK_ITEMS];
        bool has_incl = false;
        uint4 v = bm_cmp_agg_identity();
        {
            bool waiting = false;
#pragma unroll
            for (u32 i = 0; i < BM_CMP_LOOK_ITEMS; ++i) {
                const long long t = end - (long long)(lane * BM_CMP_LOOK_ITEMS + i);
                // Before tile 0: an inclusive identity (never combined: tile 0 is inclusive).
                st[i] = t >= 0 ? bm_cmp_status(status, t) : make_uint4(0u, BM_CMP_NONE32, BM_CMP_NONE32, 2u);
                waiting |= (st[i].w & 3u) == 0u;
            }
            while (waiting) {
                __nanosleep(64);
                waiting = false;
#pragma unroll
                for (u32 i = 0; i < BM_CMP_LOOK_ITEMS; ++i) {
                    if ((st[i].w & 3u) == 0u) {
                        st[i] = bm_cmp_status(status, end - (long long)(lane * BM_CMP_LOOK_ITEMS + i));
                        waiting |= (st[i].w & 3u) == 0u;
                    }
                }
            }
            // The lane's items, oldest first; an inclusive item replaces everything older.
#pragma unroll
            for (int i = BM_CMP_LOOK_ITEMS - 1; i >= 0; --i) {
                if ((st[i].w & 3u) == 2u) {
                    v = st[i];
                    has_incl = true;
                } else {
                    v = bm_cmp_combine(v, st[i], max_counter);
                }
            }
        }
        // The nearest lane with an inclusive item; every lane past it contributes nothing.
        const u32 incl = __ballot_sync(0xFFFFFFFFu, has_incl);
        const u32 near = incl ? (u32)__ffs(incl) - 1 : 0xFFFFFFFFu;
        acc = bm_cmp_combine(bm_cmp_window(v, lane, near, max_counter), acc, max_counter);
        if (near != 0xFFFFFFFFu) break;
        end -= 32 * BM_CMP_LOOK_ITEMS;
    }
    return acc;
}

// The words of fill run `open` (start << 1 | kind) ending at boundary key `end_key`, stored at
// out[at ..]: its full fill_words, then the last one (carrying end_key's fold position). The
// block's threads share the stores.
template <bool PLWAH>
__device__ __forceinline__ void bm_cmp_store_run(u64 open, u64 end_key, u32 max_counter, u64 at, u32* __restrict__ out,
                                                 u64 out_cap) {
    const u32 kind = (u32)(open & 1u);
    const u32 n = (u32)((end_key >> 5) - (open >> 1));
    u32 ex;
    const u32 w = bm_fill_word<PLWAH>(kind, n, (u32)(end_key & 31), max_counter, ex);
    const u32 full = BM_FILL_FLAG | (kind ? BM_FILL_BIT : 0u) | max_counter;
    for (u32 e = threadIdx.x; e <= ex; e += BM_CMP_THREADS)
        if (at + e < out_cap) out[at + e] = e < ex ? full : w;
}

// Phase 1's word count of the unit, given `next`, the key of the first boundary after the unit in
// the tile (BM_CMP_NONE if none): every head is one word (a literal, or a fill run that ends at
// the next boundary), except the *open* head, a fill head with no boundary after it in the tile,
// whose run is counted and written by a later tile (its start and kind go to `open`). `hc` gets
// the closed heads. A run closed inside the tile has n < BM_CMP_TILE groups, so with
// max_counter >= BM_CMP_TILE (every real counter) it is one word and the count is a popcount;
// only tiny test counters walk the heads for their full fill_words.
__device__ __forceinline__ u32 bm_cmp_count(u32 b, u32 h, u32 l, u32 o, u64 ug0, u64 next, u32 max_counter, u32& hc,
                                            u64& open) {
    hc = h;
    open = BM_CMP_NONE;
    if (!h) return 0;
    const u32 jh = 31u - (u32)__clz(h);
    if (next == BM_CMP_NONE && !((l >> jh) & 1u) && (b >> jh) == 1u) {
        hc &= ~(1u << jh);
        open = ((ug0 + jh) << 1) | ((o >> jh) & 1u);
    }
    if (max_counter >= BM_CMP_TILE) return (u32)__popc(hc);
    u32 words = 0;
    for (u32 x = hc; x; x &= x - 1) {
        const u32 j = (u32)__ffs(x) - 1;
        if ((l >> j) & 1u) {
            words += 1;
        } else {
            const u32 nb = b & (0xFFFFFFFEu << j);
            const u32 n = nb ? (u32)__ffs(nb) - 1 - j : (u32)((next >> 5) - (ug0 + j));
            words += bm_cmp_run_words(n, max_counter);
        }
    }
    return words;
}

// Phase 2 with tiny test counters (max_counter < BM_CMP_TILE, full fill_words; real counters
// use bm_cmp_heads and bm_cmp_copy), one warp per unit (lane j: group j), after the look-back:
// the closed words of the warp's BM_CMP_THREADS / 4 units, stored at out[base + index] (the unit's first index from the
// block scan, excl, plus the closed heads below the lane). Per-thread loops over a unit's 32
// groups cost every group a long serial step at the middle densities, where most units have
// several heads; here a group costs a few instructions, and a unit without closed heads (most
// of them at the sparse densities) costs one shared-memory read. A warp's store instruction
// writes a unit's words, which are consecutive. Word i of the tile goes to ob[i] if i < room (the
// output's capacity left past the tile's base, so every store stays checked). `last_tg` is the
// bitmap's last group's index in the tile (0xFFFFFFFF: not in this tile). s_unit[u] = (closed heads, boundaries, folded
// literals, excl); s_next[u] = the unit's `next` key relative to the tile (group - g0) << 5 |
// fold position (0xFFFFFFFF: none).
template <bool PLWAH>
__device__ __forceinline__ void bm_cmp_write(const u32* sm, const uint4* s_unit, const u32* s_next, u32 last_tg,
                                             u32 last_mask, u32 max_counter, u32* __restrict__ ob, u32 room) {
    const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const u32 below = (1u << lane) - 1u;
    const bool small = max_counter < BM_CMP_TILE;  // uniform; only tiny test counters
    const u32 per_warp = BM_CMP_THREADS / (BM_CMP_THREADS / 32);
    for (u32 i = 0; i < per_warp; ++i) {
        const u32 unit = warp * per_warp + i;
        const uint4 m = s_unit[unit];
        if (!m.x) continue;  // uniform across the warp
        // Group `lane` of the unit: bits 31 lane .. 31 lane + 30 of its words, i.e. of words
        // lane - 1 and lane (lane 0: word 0 alone), read once per lane and shared by a shuffle.
        const u32* p = sm + unit * BM_GROUP_BITS;
        const u32 x = lane < 31 ? p[lane] : 0u;
        const u32 lo = __shfl_up_sync(0xFFFFFFFFu, x, 1);
        const u32 tg = unit * 32 + lane;  // the group's index in the tile
        u32 v = __funnelshift_r(lo, x, (lane * BM_GROUP_BITS) & 31) & BM_GROUP_ONES;
        if (tg == last_tg) v &= last_mask;
        // A fill head's run ends at the next boundary in the unit, else at `next`.
        const u32 nb = m.y & (0xFFFFFFFEu << lane);
        const u32 e = nb ? (u32)__ffs(nb) - 1 : 0u;
        u32 efp = 0;
        if (PLWAH) {
            const u32 fp = ((m.z >> lane) & 1u) ? bm_cmp_fold_position(v) : 0u;
            efp = __shfl_sync(0xFFFFFFFFu, fp, e);
        }
        const bool head = (m.x >> lane) & 1u;
        u32 w = v, ex = 0;
        if (v == 0u || v == BM_GROUP_ONES) {
            u32 n, pos;
            if (nb) {
                n = e - lane;
                pos = efp;
            } else {
                const u32 nx = s_next[unit];
                n = (nx >> 5) - tg;
                pos = nx & 31u;
            }
            if (!small) {
                w = BM_FILL_FLAG | (v ? BM_FILL_BIT : 0u) | (PLWAH ? (pos << BM_PLWAH_POSITION_SHIFT) : 0u) | n;
            } else if (head) {
                w = bm_fill_word<PLWAH>(v ? 1u : 0u, n, pos, max_counter, ex);
            }
        }
        if (!small) {
            const u32 at = m.w + (u32)__popc(m.x & below);
            if (head && at < room) ob[at] = w;
        } else {
            // Full fill_words first: each head's words start at the scan of (1 + ex).
            const u32 c = head ? ex + 1 : 0u;
            u32 inc = c;
#pragma unroll
            for (u32 d = 1; d < 32; d <<= 1) {
                const u32 y = __shfl_up_sync(0xFFFFFFFFu, inc, d);
                if (lane >= d) inc += y;
            }
            const u32 at = m.w + inc - c;
            const u32 full = BM_FILL_FLAG | (v ? BM_FILL_BIT : 0u) | max_counter;
            for (u32 k = 0; k < c; ++k)
                if (at + k < room) ob[at + k] = k < ex ? full : w;
        }
    }
}

// Clears the bits past the bitmap's last group (group nv - 1 of the unit whose words are p,
// masked with last_mask) in the unit's staged words, for the head walk, which then reads that
// group like any other. The last unit's thread, once, after every read of p by phase 1.
__device__ __forceinline__ void bm_cmp_mask_tail(u32* p, u32 nv, u32 last_mask) {
    const u32 cut = (nv - 1) * BM_GROUP_BITS + (u32)__popc(last_mask);  // the unit's first bit past the end
    for (u32 i = cut / 32; i < BM_GROUP_BITS; ++i) {
        const u32 lo = i * 32;
        p[i] &= cut <= lo ? 0u : (1u << (cut - lo)) - 1u;  // cut - lo < 32 here
    }
}

// Phase 2 with real counters (max_counter >= BM_CMP_TILE: one word per closed head), one thread
// per unit: thread t walks its unit's closed heads (hc) in order and writes head k's word over
// its own staged words, at p[k] (k < 31) or *extra (k = 31: a unit of 32 literal heads has one
// word more than its 31 input words). A literal head's word is its group; a fill head's run
// ends at the next boundary e in the unit (else at `next`), and when e is a folded literal
// (PLWAH) the fill word carries e's position, read from e's group right there: the boundary
// before a folded literal is always its fill head, so the walk never visits the folds (at 2^-8
// about as many as the heads), and a fold that is the unit's first boundary belongs to a run
// from an earlier unit, which took its position from that unit's `next`. Each step is
// branch-free apart from the loop: one group read (the literal's, or the fold's after a fill),
// selected words. In place is safe: at head j >= k (k heads before it) the thread reads staged
// words >= floor(31 j / 32) >= j - 1 >= k - 1 before storing word k - 1 (one word is held
// back), and later steps read words >= j. Only the thread itself reads its unit's words after
// phase 1, so no barrier is needed; the heads are tile-relative, so warps 1.. run this during
// warp 0's look-back. The bitmap's last group is read masked: bm_cmp_mask_tail has cleared the
// bits past it in the staged words. The first step is peeled off so that the loop's held-back
// store needs no test (about 48 instructions a step instead of 56, 2026-11-23); a store
// pointer instead of the index, or a clamped read instead of the predicated one in
// bm_cmp_group, made ptxas spill in bm_cmp_plwah.
template <bool PLWAH>
__device__ __forceinline__ void bm_cmp_heads(u32* p, u32* extra, u32 hc, u32 b, u32 f, u32 l, u32 o, u64 ug0,
                                             u64 next) {
    if (!hc) return;
    // A fill head without a boundary after it in the unit ends at `next` (another unit of the
    // tile: the open head, whose run leaves the tile, is not in hc).
    const u32 nx = (u32)((next >> 5) - ug0), npos = (u32)next & 31u;
    // Head j's word. The walk's first step is peeled off below, so that every loop step stores
    // the word held back from the step before, at the next index, without a test.
    auto word = [&](u32 j) -> u32 {
        const bool lit = (l >> j) & 1u;
        const u32 nb = b & (0xFFFFFFFEu << j);  // the boundaries after j (none when j = 31)
        const u32 e = nb ? (u32)__ffs(nb) - 1 : 0u;
        const bool efold = PLWAH && !lit && nb && ((f >> e) & 1u);
        // Read whether needed or not (a group of the unit's words, maybe already overwritten
        // when unneeded): selects cost less than the branches around the read.
        const u32 g = bm_cmp_group(p, lit ? j : e);
        const u32 km = ((o >> j) & 1u) ? BM_GROUP_ONES : 0u;  // the fill's groups
        const u32 pos = nb ? (efold ? bm_cmp_fold_position(g, km) : 0u) : npos;
        const u32 fw = BM_FILL_FLAG | (km & BM_FILL_BIT) | (PLWAH ? pos << BM_PLWAH_POSITION_SHIFT : 0u) |
                       ((nb ? e : nx) - j);
        return lit ? g : fw;
    };
    u32 x = hc;
    u32 held = word((u32)__ffs(x) - 1);
    u32 k = 0;
    for (x &= x - 1; x; x &= x - 1) {
        const u32 w = word((u32)__ffs(x) - 1);
        p[k++] = held;  // the word held back from the step before (k <= 30 here)
        held = w;
    }
    if (k < BM_GROUP_BITS) p[k] = held;
    else *extra = held;
}

// Stores a warp's units' words (written in place by bm_cmp_heads) to ob[excl ..] (excl: the
// unit's offset in the tile, c: its words; lane i holds unit 32 warp + i's), coalesced. Units
// with few words (the middle and sparse densities) are copied 32 words a round, each lane
// finding its word's unit from the warp's start mask and rank table (a binary search over the
// warp's offsets, 5 shuffles a round, was slower: see the measured choices above); units with
// many (the dense ones) one unit a round. Word i of the tile goes to ob[i] if i < room. s_scratch: 2 *
// BM_CMP_THREADS words of shared memory that nothing else uses meanwhile (the small-counter
// writer's s_unit, unused with real counters).
__device__ __forceinline__ void bm_cmp_copy(const u32* sm, const u32* s_extra, u32 c, u32 excl, u32* __restrict__ ob,
                                            u32 room, u32* s_scratch) {
    const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const u32 busy = __ballot_sync(0xFFFFFFFFu, c != 0u);
    if (!busy) return;
    const u32 wbase = __shfl_sync(0xFFFFFFFFu, excl, 0);
    const u32 wend = __shfl_sync(0xFFFFFFFFu, excl + c, 31);
    const u32 rounds = (wend - wbase + 31) / 32;
    if (BM_CMP_COPY_WINDOW_COST * rounds < BM_CMP_COPY_UNIT_COST * (u32)__popc(busy)) {
        // 32 words a round, each lane finding its word's unit from two warp tables in
        // s_scratch: a mask of the positions (relative to wbase) where a unit starts (32 words,
        // 1024 positions), and the busy units by rank (rank r: start << 5 | unit). Round r's
        // mask word gives the rank of each lane's unit: the starts before the round plus those
        // in it at or below the lane, minus one.
        u32* const s_starts = s_scratch + warp * 32;
        u32* const s_rank = s_scratch + BM_CMP_THREADS + warp * 32;
        const u32 rel = excl - wbase;
        s_starts[lane] = 0u;
        __syncwarp();
        if (c) {
            atomicOr(&s_starts[rel >> 5], 1u << (rel & 31));
            s_rank[__popc(busy & ((1u << lane) - 1u))] = (rel << 5) | lane;
        }
        __syncwarp();
        const u32 le = 0xFFFFFFFFu >> (31 - lane);  // lanes 0 .. lane
        const u32 n = wend - wbase;
        u32 before = 0;  // busy units starting before the round
        for (u32 r = 0; r < rounds; ++r) {
            const u32 m = s_starts[r];
            const u32 i = r * 32 + lane;  // the word this lane copies, relative to wbase
            const u32 v = s_rank[before + (u32)__popc(m & le) - 1u];
            const u32 kk = i - (v >> 5), unit = warp * 32 + (v & 31u);
            const u32 at = wbase + i;
            if (i < n && at < room) ob[at] = kk < 31 ? sm[unit * BM_GROUP_BITS + kk] : s_extra[unit];
            before += (u32)__popc(m);
        }
        return;
    }
    // One unit a round.
    for (u32 todo = busy; todo; todo &= todo - 1) {
        const u32 u = (u32)__ffs(todo) - 1;
        const u32 cu = __shfl_sync(0xFFFFFFFFu, c, u), eu = __shfl_sync(0xFFFFFFFFu, excl, u);
        const u32 unit = warp * 32 + u, at = eu + lane;
        if (lane < cu && at < room) ob[at] = lane < 31 ? sm[unit * BM_GROUP_BITS + lane] : s_extra[unit];
    }
}

// Tile t's tile start (see "decompression": the word covering group g0 = t * BM_CMP_TILE and the
// group it starts at), from the aggregate of the tiles before it and the tile's first boundary
// key. Thread 0, after the look-back.
//   - No run carried in (prefix.z = NONE): the stretch before g0 ends with a literal (or a fill
//     run closed by a folded literal), so g0 is a head and its word is the tile's first.
//   - A fill run from group h carried in (written at prefix.x, by the tile where it ends: the
//     tiles between have no closed words): if g0 is an unfolded boundary, the run ended at g0
//     and g0's head comes after the run's words; if g0 is the run's folded literal, the run's last
//     word covers it (n = g0 - h fill groups, word (n - 1) / max_counter); else g0 is fill group
//     g0 - h of the run, in word (g0 - h) / max_counter (<= the run's last, (n - 1) / max).
__device__ __forceinline__ void bm_cmp_tile_start(u32* __restrict__ tile_starts, u32 tile, u32 g0, const uint4& prefix,
                                                  u64 tile_first, u32 max_counter) {
    u32 word = prefix.x, start = g0;
    if (prefix.z != BM_CMP_NONE32) {
        const u32 h = prefix.z;
        const bool at_g0 = tile_first != BM_CMP_NONE && (u32)(tile_first >> 5) == g0;
        if (at_g0 && (tile_first & 31) == 0) {
            word += bm_cmp_run_words(g0 - h, max_counter);
        } else {
            const u32 k = at_g0 ? (g0 - h - 1) / max_counter : (g0 - h) / max_counter;
            word += k;
            start = h + k * max_counter;
        }
    }
    tile_starts[2 * tile] = word;
    tile_starts[2 * tile + 1] = start;
}

// Phases 1-4 of tile blockIdx.x, whose BM_CMP_TILE_WORDS plain words the block's first
// BM_CMP_THREADS threads (the *unit threads*) have staged in sm (and synchronized); prev_word's
// bits 1..31 are the group before the tile (read by thread 0 only; any value for tile 0).
// Shared by bm_cmp (sm: the plain input) and the fused operations (sm: op of the two operands'
// decoded tiles). Overwrites sm.
//   LW = false: a block of BM_CMP_THREADS; warp 0 looks back once the tile's own aggregate is
//     published, while warps 1.. write their units' words; then warp 0 writes its own.
//   LW = true: a block of BM_CMP_THREADS + 32; the extra *look-back warp* looks back from the
//     start, while the unit threads stage and classify the tile (the caller calls this with
//     every thread, the look-back warp without staging), so the look-back is off the unit
//     threads' path and every tile publishes its inclusive aggregate sooner, which shortens its
//     successors' look-backs. The unit threads synchronize among themselves with named barrier
//     1, and with the look-back warp once, with named barrier 2, when they need the prefix.
template <bool PLWAH, bool LW>
__device__ __forceinline__ void bm_cmp_tile(u32* sm, u32 prev_word, u64 groups, u32 last_mask, u32 max_counter,
                                            uint4* status, u32* counters, u32 tiles, u32* __restrict__ out,
                                            u64 out_cap, u32* __restrict__ tile_starts) {
    constexpr int BAR = LW ? 1 : 0;
    static_assert(BM_CMP_TILE == BM_DECODE_TILE, "a compression tile is a decode tile");
    __shared__ uint4 s_unit[BM_CMP_THREADS];
    __shared__ u32 s_next[BM_CMP_THREADS];
    __shared__ u64 s_min[BM_CMP_THREADS / 32];
    __shared__ DsBlockStorage<BM_CMP_THREADS, u32> s_sum;
    __shared__ u64 s_open;
    __shared__ uint4 s_prefix;                // the look-back's aggregate of the tiles before
    __shared__ u32 s_extra[BM_CMP_THREADS];  // the 32nd word of a unit of 32 literal heads
    // Tile = block index: blocks are dispatched in index order, so every tile a block waits
    // for in its look-back has been dispatched before it (CUB's decoupled look-back relies on
    // the same). A ticket counter would cost every tile one more L2 round trip.
    const u32 tile = blockIdx.x;
    if (LW && threadIdx.x >= BM_CMP_THREADS) {
        // The look-back warp: its aggregate goes to the unit threads at the join, and then it
        // is done (everything after the join is the unit threads').
        const uint4 prefix = tile > 0 ? bm_cmp_lookback<BM_CMP_THREADS / 32>(status, tile, max_counter)
                                      : bm_cmp_agg_identity();
        if (threadIdx.x == BM_CMP_THREADS) s_prefix = prefix;
        ts_bar<2, BM_CMP_THREADS + 32>();
        return;
    }
    if (threadIdx.x == 0) s_open = BM_CMP_NONE;  // ordered before its writers by the suffix-min
    const u64 g0 = (u64)tile * BM_CMP_TILE;
    const u64 ug0 = g0 + (u64)threadIdx.x * 32;
    const u32 nv = ug0 >= groups ? 0u : (groups - ug0 >= 32 ? 32u : (u32)(groups - ug0));
    const bool has_last = nv > 0 && ug0 + nv == groups;
    // Phase 1: thread t classifies unit t; the group before it is the top 31 bits of the word
    // before its words (the previous unit's group 31), or of prev_word for the tile's first.
    const u32* p = sm + threadIdx.x * BM_GROUP_BITS;
    u32 pk = 3;
    if (threadIdx.x > 0) pk = bm_kind(p[-1] >> 1);
    else if (tile > 0) pk = bm_kind(prev_word >> 1);
    u32 b, f, l, o;
    const u64 first = bm_cmp_classify<PLWAH>(p, pk, nv, has_last, last_mask, ug0, b, f, l, o);
    u64 tile_first;
    const u64 next = bm_block_suffix_min<BM_CMP_THREADS, BAR>(first, s_min, tile_first);
    // Every thread has read its p[-1] (before the suffix-min's barriers), so the last unit's
    // thread may now clear the bits past the bitmap's end in its own words.
    if (has_last) bm_cmp_mask_tail(sm + threadIdx.x * BM_GROUP_BITS, nv, last_mask);
    u32 hc;
    u64 open;
    const u32 words = bm_cmp_count(b, b & ~f, l, o, ug0, next, max_counter, hc, open);
    if (open != BM_CMP_NONE) s_open = open;  // at most one thread of the tile has the open head
    u32 tile_words;
    const u32 excl = ds_block_exclusive<BM_CMP_THREADS, u32, DsSum<u32>, BAR>(words, DsSum<u32>(), 0u, s_sum, tile_words);
    // Tiny test counters: the warp-per-unit writer (bm_cmp_write), which handles full
    // fill_words; every real counter: the in-place head walk and a copy (bm_cmp_heads).
    const bool small = max_counter < BM_CMP_TILE;  // uniform
    if (small) {
        s_unit[threadIdx.x] = make_uint4(hc, b, f, excl);
        s_next[threadIdx.x] = next == BM_CMP_NONE ? 0xFFFFFFFFu : ((u32)((next >> 5) - g0) << 5) | (u32)(next & 31);
    }
    ts_bar<BAR, BM_CMP_THREADS>();  // s_open, s_unit, s_next
    const u64 so = s_open;
    const uint4 local = make_uint4(tile_words, tile_first == BM_CMP_NONE ? BM_CMP_NONE32 : (u32)(tile_first >> 5),
                                   so == BM_CMP_NONE ? BM_CMP_NONE32 : (u32)(so >> 1),
                                   ((u32)(tile_first & 31) << 2) | (so == BM_CMP_NONE ? 0u : (u32)(so & 1) << 7));
    const u32 warp = threadIdx.x >> 5;
    u32* const pw = sm + threadIdx.x * BM_GROUP_BITS;
    if (tile > 0 && threadIdx.x == 0) bm_cmp_publish(status, tile, 1, local);
    uint4 prefix = bm_cmp_agg_identity();
    if (LW) {
        // Every unit thread writes its unit's words in place, then joins the look-back warp.
        if (!small) bm_cmp_heads<PLWAH>(pw, &s_extra[threadIdx.x], hc, b, f, l, o, ug0, next);
        ts_bar<2, BM_CMP_THREADS + 32>();
        prefix = s_prefix;
    } else {
        // Warps 1.. write their units' words in place while warp 0 looks back, then warp 0.
        if (!small && warp != 0) bm_cmp_heads<PLWAH>(pw, &s_extra[threadIdx.x], hc, b, f, l, o, ug0, next);
        if (tile > 0) {
            const uint4 a = bm_cmp_lookback<0>(status, tile, max_counter);
            if (threadIdx.x == 0) s_prefix = a;
            __syncthreads();
            prefix = s_prefix;
        }
        if (!small && warp == 0) bm_cmp_heads<PLWAH>(pw, &s_extra[threadIdx.x], hc, b, f, l, o, ug0, next);
    }
    const uint4 incl = bm_cmp_combine(prefix, local, max_counter);
    if (threadIdx.x == 0) bm_cmp_publish(status, tile, 2, incl);
    if (threadIdx.x == 0) bm_cmp_tile_start(tile_starts, tile, (u32)g0, prefix, tile_first, max_counter);
    __syncwarp();  // a warp copies its own units' words
    u64 base = prefix.x;
    if (tile_first != BM_CMP_NONE && prefix.z != BM_CMP_NONE32) {
        const u64 po = ((u64)prefix.z << 1) | ((prefix.w & BM_CMP_KIND_BIT) ? 1u : 0u);
        bm_cmp_store_run<PLWAH>(po, tile_first, max_counter, base, out, out_cap);
        base += bm_cmp_run_words((u32)(tile_first >> 5) - prefix.z, max_counter);
    }
    {
        const u64 left = base < out_cap ? out_cap - base : 0;
        const u32 room = left > 0xFFFFFFFFull ? 0xFFFFFFFFu : (u32)left;
        const u32 last_tg = groups - g0 <= BM_CMP_TILE ? (u32)(groups - 1 - g0) : BM_CMP_NONE32;
        if (small) bm_cmp_write<PLWAH>(sm, s_unit, s_next, last_tg, last_mask, max_counter, room ? out + base : out, room);
        else bm_cmp_copy(sm, s_extra, words, excl, room ? out + base : out, room, reinterpret_cast<u32*>(s_unit));
    }
    if (tile == tiles - 1) {
        // The run still open at the end of the bitmap ends at group `groups`, with no fold.
        u64 total = incl.x;
        if (incl.z != BM_CMP_NONE32) {
            const u64 io = ((u64)incl.z << 1) | ((incl.w & BM_CMP_KIND_BIT) ? 1u : 0u);
            bm_cmp_store_run<PLWAH>(io, groups << 5, max_counter, total, out, out_cap);
            total += bm_cmp_run_words((u32)groups - incl.z, max_counter);
        }
        if (threadIdx.x == 0) {
            counters[0] = (u32)total;
            tile_starts[2 * tiles] = (u32)total;  // the end entry: (m, groups)
            tile_starts[2 * tiles + 1] = (u32)groups;
        }
    }
}

// The compression kernel: a block of BM_CMP_THREADS unit threads and a look-back warp
// (bm_cmp_tile, LW). Measured (H100, 2026-11-22, bitmap_gpu_speed, queued, same run) without /
// with the look-back warp (both with the shuffle-scan window of 2 items), PLWAH at 2^-1 / 2^-4
// / 2^-8 / 2^-16: 0.254 / 0.292 / 0.179 / 0.123 against 0.228 / 0.257 / 0.169 / 0.130 ms (WAH
// alike): slower only at 2^-16, where 8 blocks a SM (registers) instead of 10 cost more than
// the look-back it hides. Also measured in session 14 with the look-back warp, PLWAH 2^-8, and
// not kept: streaming cache hints on the staged loads and the stores (0.169-0.172 ms against
// 0.167-0.169), a 16 ns look-back poll instead of 64 (0.168-0.170), and sparse warps writing
// their heads' words straight to global memory after the join instead of in place before it
// (0.207-0.208 ms: the head walk is what hides the look-back's latency). Session 15, not
// kept: the look-back warp publishing the inclusive aggregate as soon as it has the prefix and
// the tile's own aggregate (a barrier.arrive hand-off from warp 0), not after the head walk:
// PLWAH 2^-7 / 2^-8 0.187-0.191 / 0.161-0.165 against 0.177 / 0.158 ms on the session-14
// kernel, within noise on this one; and phase 2 as an unrolled 32-group pass over the unit's
// words in registers, writing each warp's words compacted: PLWAH 2^-1 0.328 (dense warps'
// compacted stores all hit one bank), 2^-8 0.215 ms (instruction-cache misses; spills).
#define BM_CMP_BLOCK (BM_CMP_THREADS + 32)
template <bool PLWAH>
__device__ __forceinline__ void bm_cmp(const u32* __restrict__ bits, u64 n_words, u64 groups, u32 last_mask,
                                       u32 max_counter, uint4* status, u32* counters, u32 tiles,
                                       u32* __restrict__ out, u64 out_cap, u32* __restrict__ tile_starts) {
    __shared__ __align__(16) u32 sm[BM_CMP_TILE_WORDS];  // the staged input
    const u32 tile = blockIdx.x;
    if (tile >= tiles) return;  // uniform; never with the host's grid
    const u64 w0 = (u64)tile * BM_CMP_TILE_WORDS;
    u32 prev_word = 0;
    if (threadIdx.x < BM_CMP_THREADS) {
        // The group before the tile is bits 1..31 of word w0 - 1 (g0 is a multiple of 32, and
        // that group is never the bitmap's last); read early, by thread 0 only.
        if (threadIdx.x == 0 && tile > 0 && w0 - 1 < n_words) prev_word = bits[w0 - 1];
        bm_cmp_stage(bits, n_words, w0, sm);
        ts_bar<1, BM_CMP_THREADS>();
    }
    bm_cmp_tile<PLWAH, true>(sm, prev_word, groups, last_mask, max_counter, status, counters, tiles, out, out_cap,
                             tile_starts);
}

// At most 48 registers (8 blocks of 160 threads per SM; shared memory would allow 10): PLWAH's
// classification otherwise takes 64, and fewer blocks fit; 10 blocks (32 registers) spill.
#define BM_CMP_KERNELS(NAME, PLWAH)                                                                                  \
    extern "C" __global__ void __launch_bounds__(BM_CMP_BLOCK, 8)                                                   \
        bm_cmp_##NAME(const u32* __restrict__ bits, u64 n_words, u64 groups, u32 last_mask, u32 max_counter,         \
                      uint4* status, u32* counters, u32 tiles, u32* __restrict__ out,                                \
                      u64 out_cap, u32* __restrict__ tile_starts) {                                                  \
        bm_cmp<PLWAH>(bits, n_words, groups, last_mask, max_counter, status, counters, tiles, out, out_cap,         \
                      tile_starts);                                                                                  \
    }
BM_CMP_KERNELS(wah, false)
BM_CMP_KERNELS(plwah, true)

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

// ---- operations in one pass (short inputs: src/bitmap.rs `binary_device`) ------------------------
// The same writer as bm_op_{reduce,apply}, with the tiles' prefixes from a decoupled look-back
// (device_scan.cuh) instead of a partials pass: one launch instead of three, and the inputs are
// read once. counters: [0] the result's block count (written by the last tile), [1] 1 if some
// block needs full fill_words before its last word (counter overflow, wah.md §4 rule 2), [2]
// how many such blocks; the first `cap` of them go to `ovf` as (block, ex) for
// bm_overflow_fixup. status: one zeroed 16-byte word per tile.
struct BmStageListEmit {
    u32* stage;
    u32 b0;
    u32* counters;
    uint2* ovf;
    u32 cap;
    __device__ __forceinline__ void operator()(u32 b, u32 word, u32 ex) const {
        const u32 i = b - b0;
        if (i < BM_WRITER_TILE) stage[i] = word;
        if (ex) {
            counters[1] = 1u;
            const u32 k = atomicAdd(&counters[2], 1u);
            if (k < cap) ovf[k] = make_uint2(b, ex);
        }
    }
};

template <bool PLWAH, typename Src>
__device__ __forceinline__ void bm_writer_onepass(Src& src, uint4* status, u32 tiles, u32 max_counter, u32* __restrict__ out,
                                                  u64 out_cap, u32* counters, uint2* ovf, u32 cap) {
    __shared__ DsBlockStorage<BM_WRITER_THREADS, BmAgg> s;
    __shared__ u32 stage[BM_WRITER_TILE];
    __shared__ BmAgg s_prefix;
    const u32 tile = blockIdx.x;
    const u64 tile0 = (u64)tile * BM_WRITER_TILE;
    src.tile_begin(tile0);
    u32 v[BM_WRITER_ITEMS], c[BM_WRITER_ITEMS], em, fm, pk;
    const BmAgg a = bm_writer_load<PLWAH, BM_WRITER_ITEMS>(src, tile0 + threadIdx.x * BM_WRITER_ITEMS, v, c, em, fm, pk);
    BmAgg total;
    const BmAgg excl = ds_block_exclusive<BM_WRITER_THREADS>(a, BmAggOp(), bm_agg_zero(), s, total);
    const BmAgg tile_prefix = ds_lookback_block<BmAgg>(status, tile, total, BmAggOp(), bm_agg_zero(), &s_prefix);
    const BmAgg prefix = BmAggOp()(tile_prefix, excl);
    BmStageListEmit e{stage, tile_prefix.b, counters, ovf, cap};
    bm_writer_emit<PLWAH, BM_WRITER_ITEMS>(v, c, em, fm, pk, prefix, max_counter, e);
    __syncthreads();
    const u32 nb = total.b < BM_WRITER_TILE ? total.b : BM_WRITER_TILE;
    for (u32 i = threadIdx.x; i < nb; i += BM_WRITER_THREADS)
        if ((u64)tile_prefix.b + i < out_cap) out[tile_prefix.b + i] = stage[i];
    if (tile + 1 == tiles && threadIdx.x == 0) counters[0] = tile_prefix.b + total.b;
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


// A split block's words from out[at] on: e fill_words of counter max_counter (the kind of its
// last word w), then w; nothing at or past `room`.
__device__ __forceinline__ void bm_write_split(u32* __restrict__ out, u64 at, u32 w, u32 e, u32 max_counter, u64 room) {
    const u32 full = (w & (BM_FILL_FLAG | BM_FILL_BIT)) | max_counter;
    for (u32 j = 0; j < e && at + j < room; ++j) out[at + j] = full;
    if (at + e < room) out[at + e] = w;
}

// The overflow path's last step: block i (of `blocks`) writes ex[i] fill_words of counter
// max_counter, then its last word, from word i + ex_prefix[i] on.
extern "C" __global__ void bm_scatter_fills(const u32* __restrict__ words, const u32* __restrict__ ex,
                                            const u32* __restrict__ ex_prefix, u32 blocks, u32 max_counter,
                                            u32* __restrict__ out) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < blocks; i += (u64)gridDim.x * blockDim.x)
        bm_write_split(out, i + ex_prefix[i], words[i], ex[i], max_counter, ~0ull);
}

// The overflow path in one launch of one thread block, for results of few blocks (the common
// overflow: two sparse PLWAH operands whose AND is one fill longer than a 25-bit counter): the
// exclusive scan of ex and the scatter of bm_scatter_fills, then out_len[0] = blocks + the sum
// of ex. `out` holds `room` = blocks + floor(groups / max_counter) words (sum(ex) is at most
// that: each ex word stands for max_counter of the result's groups). One launch and one read instead of a
// three-launch scan, a read and a fourth launch: on small results those round trips are the
// whole cost.
#define BM_OVF_ITEMS 4
extern "C" __global__ void __launch_bounds__(DS_PARTIAL_THREADS)
    bm_overflow_fills(const u32* __restrict__ words, const u32* __restrict__ ex, u32 blocks, u32 max_counter,
                      u32* __restrict__ out, u64 room, u32* __restrict__ out_len) {
    __shared__ DsBlockStorage<DS_PARTIAL_THREADS, u32> s;
    u32 carry = 0;
    for (u32 step = 0; step < blocks; step += DS_PARTIAL_THREADS * BM_OVF_ITEMS) {
        const u32 base = step + threadIdx.x * BM_OVF_ITEMS;
        u32 e[BM_OVF_ITEMS], acc = 0;
#pragma unroll
        for (u32 k = 0; k < BM_OVF_ITEMS; ++k) {
            e[k] = base + k < blocks ? ex[base + k] : 0u;
            acc += e[k];
        }
        u32 total;
        u32 run = carry + ds_block_exclusive<DS_PARTIAL_THREADS>(acc, DsSum<u32>(), 0u, s, total);
#pragma unroll
        for (u32 k = 0; k < BM_OVF_ITEMS; ++k) {
            const u32 i = base + k;
            // Bounded by `room` all the same (the host reports a total past it as an error).
            if (i < blocks) bm_write_split(out, (u64)i + run, words[i], e[k], max_counter, room);
            run += e[k];
        }
        carry += total;
    }
    if (threadIdx.x == 0) out_len[0] = blocks + carry;
}

// The overflow path of a one-pass result with at most BM_FIXUP_CAP overflowing blocks: the
// result with every listed block b's ex full fill_words inserted before its last word. Block b
// moves to b + S(b), S(b) = the sum of ex over listed blocks <= b. Every thread block sorts the
// (short) list in shared memory by rank (block indices are distinct), then copies its share of
// the words. Does nothing without overflow (counters[1] == 0) or with a list longer than `cap`
// (the host then takes the general overflow path); otherwise counters[3] = the word total.
// Writes stay below `room`; reads of `out` below counters[0] <= out_cap.
extern "C" __global__ void __launch_bounds__(BM_FIXUP_THREADS)
    bm_overflow_fixup(const u32* __restrict__ out, u64 out_cap, u32* counters, const uint2* __restrict__ ovf, u32 cap,
                      u32 max_counter, u32* __restrict__ words, u64 room) {
    __shared__ u32 s_b[BM_FIXUP_CAP], s_x[BM_FIXUP_CAP], s_sorted[BM_FIXUP_CAP], s_incl[BM_FIXUP_CAP];
    if (counters[1] == 0u) return;
    const u32 n = counters[2];
    if (n > cap || n > BM_FIXUP_CAP) return;
    const u32 blocks = counters[0];
    if ((u64)blocks > out_cap) return;
    for (u32 i = threadIdx.x; i < n; i += BM_FIXUP_THREADS) {
        const uint2 e = ovf[i];
        s_b[i] = e.x;
        s_x[i] = e.y;
    }
    __syncthreads();
    u64 total_ex = 0;
    for (u32 i = threadIdx.x; i < n; i += BM_FIXUP_THREADS) {
        u32 rank = 0;
        u64 incl = s_x[i];
        for (u32 j = 0; j < n; ++j) {
            if (s_b[j] < s_b[i]) {
                ++rank;
                incl += s_x[j];
            }
        }
        s_sorted[rank] = s_b[i];
        s_incl[rank] = (u32)incl;  // <= groups / max_counter < 2^32
    }
    for (u32 j = 0; j < n; ++j) total_ex += s_x[j];
    __syncthreads();
    for (u64 b = (u64)blockIdx.x * BM_FIXUP_THREADS + threadIdx.x; b < blocks; b += (u64)gridDim.x * BM_FIXUP_THREADS) {
        // k = the number of listed blocks <= b.
        const u32 k = ds_upper_bound(s_sorted, 0u, n, (u32)b);
        const u64 at = b + (k ? s_incl[k - 1] : 0u);
        const u32 w = out[b];
        if (k && s_sorted[k - 1] == (u32)b) {
            const u32 ex = s_incl[k - 1] - (k > 1 ? s_incl[k - 2] : 0u);
            bm_write_split(words, at - ex, w, ex, max_counter, room);
        } else if (at < room) {
            words[at] = w;
        }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) counters[3] = (u32)(blocks + total_ex);
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

// Slot ends of both operands of an operation in one launch (src/bitmap.rs `binary_device`):
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

// ---- decompression (Algorithm 5, output-partitioned) -------------------------------------------
//
// Decode tile b covers groups [b*T, b*T + T) (T = BM_DECODE_TILE = BM_CMP_TILE) and writes their
// BM_DECODE_TILE_WORDS plain words. What it needs of the stream is its *tile start*:
// tile_starts[2b] = the index of the word covering group b*T, tile_starts[2b + 1] = the group
// that word starts at (<= b*T); entry b = tiles is (m, groups). The words covering the tile are
// then tile_starts[2b] ..= tile_starts[2b + 2] (at most T + 1 of them: each covers >= 1 group).
//   - A GPU compressor writes them as it compresses (bm_cmp: each tile knows, after its
//     look-back, which word covers its first group), so decompressing its output reads the
//     compressed words once: traffic C + P (compressed bytes, plain bytes).
//   - Otherwise (a stream uploaded, or written by an operation) three passes make them first,
//     reading the words one more time (traffic 2C + P):
//     1. bm_dec_sums_<flavor>: per chunk of BM_DEC_CHUNK words, the sum of its words' group
//        counts (one 16-byte load per lane), scanned inside the thread block: chunk_incl[c] =
//        inclusive sum of the chunks of c's pass-1 block up to c; partials[p] = block p's total.
//     2. ds_partials_u32 turns partials into exclusive prefixes (partials[np] = the total), so
//        chunk c ends at group end(c) = partials[c / BM_DEC_SUM_CHUNKS] + chunk_incl[c].
//     3. bm_dec_tile_starts_<flavor>: one warp per tile b <= tiles: the first chunk ending after
//        b*T (two binary searches), then a warp scan of that chunk's words finds the word.
// bm_dec_expand_<flavor>: tile b loads its words into shared memory (16-byte loads from the
// anchor word rounded down to 4; the up to 3 words before it count no groups), computes each
// word's end in groups relative to the tile, clamped to [0, rn + 1] (rn = groups in the tile;
// rn + 1 keeps a PLWAH fill's dirty group out of the tile when the fill runs past it): each warp
// scans its chunks of 128 words (lane: 4 words), then scans the chunk totals itself (no second
// barrier), and stores each word end as u16. Thread t binary-searches the word covering its first group
// 32t and walks its 32 groups (= 31 output words, kept in registers); the block stages the 3968
// words in shared memory and writes them with 16-byte stores.
// Sums are u32: a valid stream (`DeviceBitmap`) has ceil(bit_len / 31) < 2^32 groups (MAX_BITS =
// 2^32), so no sum wraps. Hostile tile starts or words can only make the output wrong, never a
// read or write out of bounds: every word index is clamped to [0, m), the words loaded to
// BM_DEC_SMEM_WORDS, every store to out_words; and a tile whose words do not cover its groups
// sets *status (when status is not null).

template <bool PLWAH>
__device__ __forceinline__ void bm_dec_sums(const u32* __restrict__ words, u32 m, u32* __restrict__ chunk_incl,
                                            u32* __restrict__ partials) {
    const u32 PER_WARP = BM_DEC_SUM_CHUNKS / (BM_DEC_SUM_THREADS / 32);
    __shared__ u32 sums[BM_DEC_SUM_CHUNKS];
    const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const u32 n_chunks = (u32)(((u64)m + BM_DEC_CHUNK - 1) / BM_DEC_CHUNK);
    const u64 c_first = (u64)blockIdx.x * BM_DEC_SUM_CHUNKS + warp * PER_WARP;
    u32 acc[PER_WARP];
#pragma unroll
    for (u32 k = 0; k < PER_WARP; ++k) {
        const u64 i = (c_first + k) * BM_DEC_CHUNK + lane * 4;
        u32 a = 0;
        if (i + 4 <= m) {
            const uint4 q = *reinterpret_cast<const uint4*>(words + i);
            a = bm_word_groups<PLWAH>(q.x) + bm_word_groups<PLWAH>(q.y) + bm_word_groups<PLWAH>(q.z) +
                bm_word_groups<PLWAH>(q.w);
        } else {
            for (u32 j = 0; j < 4; ++j)
                if (i + j < m) a += bm_word_groups<PLWAH>(words[i + j]);
        }
        acc[k] = a;
    }
#pragma unroll
    for (u32 d = 16; d > 0; d >>= 1) {
#pragma unroll
        for (u32 k = 0; k < PER_WARP; ++k) acc[k] += __shfl_xor_sync(0xFFFFFFFFu, acc[k], d);
    }
    if (lane == 0) {
#pragma unroll
        for (u32 k = 0; k < PER_WARP; ++k) sums[warp * PER_WARP + k] = acc[k];
    }
    __syncthreads();
    if (warp == 0) {
        const u32 incl = ds_warp_inclusive(sums[lane], DsSum<u32>());
        const u64 c = (u64)blockIdx.x * BM_DEC_SUM_CHUNKS + lane;
        if (c < n_chunks) chunk_incl[c] = incl;
        if (lane == 31) partials[blockIdx.x] = incl;
    }
}

// Where chunk c ends, in groups (after ds_partials_u32).
__device__ __forceinline__ u32 bm_dec_chunk_end(const u32* __restrict__ chunk_incl, const u32* __restrict__ partials,
                                                u32 c) {
    return partials[c / BM_DEC_SUM_CHUNKS] + chunk_incl[c];
}

// Pass 3 of the fallback: warp b's tile start (b <= tiles; entry `tiles` is (m, groups)). A tile
// whose group no chunk reaches (only with an invalid stream) gets (m, x), which the expand
// flags.
template <bool PLWAH>
__device__ __forceinline__ void bm_dec_tile_starts(const u32* __restrict__ words, u32 m,
                                                   const u32* __restrict__ chunk_incl,
                                                   const u32* __restrict__ partials, u32 n_chunks, u32 n_sums,
                                                   u32 tiles, u64 groups, u32* __restrict__ tile_starts) {
    const u32 b = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (b > tiles) return;  // uniform per warp
    const u32 x = b * BM_DECODE_TILE;
    if (b == tiles) {
        if (lane == 0) {
            tile_starts[2 * b] = m;
            tile_starts[2 * b + 1] = (u32)groups;
        }
        return;
    }
    // Pass-1 block p ends at partials[p + 1]: the first one ending after x ...
    const u32 p = ds_upper_bound(partials + 1, 0u, n_sums, x);
    u32 c = n_chunks;
    if (p < n_sums) {
        // ... and in it the first chunk ending after x (partials[p] <= x).
        const u32 lo = p * BM_DEC_SUM_CHUNKS;
        const u32 hi = lo + BM_DEC_SUM_CHUNKS < n_chunks ? lo + BM_DEC_SUM_CHUNKS : n_chunks;
        c = ds_upper_bound(chunk_incl, lo, hi, x - partials[p]);
    }
    if (c >= n_chunks) {
        if (lane == 0) {
            tile_starts[2 * b] = m;
            tile_starts[2 * b + 1] = x;
        }
        return;
    }
    // The chunk's words: lane l has words 4l .. 4l + 3; the first word ending after x.
    const u32 base = c ? bm_dec_chunk_end(chunk_incl, partials, c - 1) : 0u;
    const u64 i0 = (u64)c * BM_DEC_CHUNK + lane * 4;
    u32 cnt[4], sum = 0;
#pragma unroll
    for (u32 q = 0; q < 4; ++q) {
        cnt[q] = i0 + q < m ? bm_word_groups<PLWAH>(words[i0 + q]) : 0u;
        sum += cnt[q];
    }
    const u32 incl = ds_warp_inclusive(sum, DsSum<u32>());
    const u32 hit = __ballot_sync(0xFFFFFFFFu, base + incl > x);
    if (!hit) {  // the chunk ends after x: only an invalid stream gets here
        if (lane == 0) {
            tile_starts[2 * b] = m;
            tile_starts[2 * b + 1] = x;
        }
        return;
    }
    if (lane == (u32)__ffs(hit) - 1) {
        u32 end = base + incl - sum;
#pragma unroll
        for (u32 q = 0; q < 4; ++q) {
            const u32 start = end;
            end += cnt[q];
            if (start <= x && end > x) {
                tile_starts[2 * b] = (u32)(i0 + q);
                tile_starts[2 * b + 1] = start;
            }
        }
    }
}

// Chunks of 128 words a decode tile scans: its words start at the anchor rounded down to a
// multiple of 4, so at most BM_DECODE_TILE + 4 words, in BM_DEC_MAX_CHUNKS chunks.
#define BM_DEC_WARP_CHUNKS ((BM_DEC_MAX_CHUNKS + BM_DECODE_THREADS / 32 - 1) / (BM_DECODE_THREADS / 32))

// The walk's view of word w: fv = the value of its groups but the last, lv = of its last group
// (they differ only for a PLWAH fill with a position: its dirty group). Computed once per word
// the walk steps onto, so that a group that stays on its word costs a compare and a select
// (sm_90 SASS, PLWAH: about 10 instructions a group instead of 23 when the word was decoded
// again for every group; no change in time measurable on the H100, 2026-11-22, where the walk
// is not what bounds the decompression).
template <bool PLWAH> __device__ __forceinline__ void bm_dec_word_values(u32 w, u32& fv, u32& lv) {
    const bool fill = (w & BM_FILL_FLAG) != 0u;
    fv = fill ? ((u32)((int)(w << 1) >> 31) & BM_GROUP_ONES) : w;
    lv = fv;
    if (PLWAH) lv ^= fill ? (1u << ((w & BM_PLWAH_POSITION_MASK) >> BM_PLWAH_POSITION_SHIFT)) >> 1 : 0u;
}

// The first of nw words whose end (se) is past group r, or nw - 1 if none.
__device__ __forceinline__ u32 bm_dec_search(const u16* se, u32 nw, u32 r) {
    u32 lo = 0, hi = nw;
    while (lo < hi) {
        const u32 mid = (lo + hi) >> 1;
        if (se[BM_DEC_PAD16(mid)] <= r) lo = mid + 1; else hi = mid;
    }
    return lo < nw ? lo : nw - 1;
}

// Group r of the walk (r ascending): steps to the next word once r is past the current word's
// end e (word s, values fv / lv), then gives r's value. One step suffices: see bm_dec_walk.
template <bool PLWAH>
__device__ __forceinline__ u32 bm_dec_next(const u32* sw, const u16* se, u32 nw, u32 r, u32& s, u32& e, u32& fv,
                                           u32& lv) {
    if (e <= r && s + 1 < nw) {
        ++s;
        e = se[BM_DEC_PAD16(s)];
        bm_dec_word_values<PLWAH>(sw[BM_DEC_PAD(s)], fv, lv);
    }
    return (PLWAH && r + 1 == e) ? lv : fv;
}

// Thread t's 32 groups r0 .. r0 + 31 from word s (ending at e, values fv / lv), stepping to the
// next word once a group passes e. One step suffices: ends strictly increase inside the tile
// (every word of a valid stream covers >= 1 group), so the word after the one ending at r
// covers r. A hostile stream (or tile start) only gets wrong output: s stays < nw. LAST (the
// bitmap's last tile, rn < BM_DECODE_TILE): groups >= rn are 0; a template so that the other
// tiles carry no per-group test.
template <bool PLWAH, bool LAST>
__device__ __forceinline__ void bm_dec_walk(const u32* sw, const u16* se, u32 nw, u32 rn, u32 r0, u32 s, u32 e, u32 fv,
                                            u32 lv, u32 (&o)[BM_DECODE_GROUPS - 1]) {
    u32 prev = 0;
#pragma unroll
    for (u32 j = 0; j < BM_DECODE_GROUPS; ++j) {
        const u32 r = r0 + j;
        u32 x = bm_dec_next<PLWAH>(sw, se, nw, r, s, e, fv, lv);
        if (LAST && r >= rn) x = 0u;
        // Output word j - 1 of the thread: bits j-1.. of group j-1, then the low bits of group j.
        if (j > 0) o[j - 1] = (prev >> (j - 1)) | (x << (32 - j));
        prev = x;
    }
}

// The words decode tile b loads, clamped: from its anchor (the tile start, rounded down to a
// 16-byte boundary) to the next tile's anchor, at most BM_DEC_SMEM_WORDS. bad: the tile starts
// name no word or an empty or too long range (the tile is then flagged). Every thread reads the
// same three entries.
struct BmDecRange {
    u32 wa, nw, skip, nc, s0;
    bool bad;
};
__device__ __forceinline__ BmDecRange bm_dec_range(const u32* __restrict__ tile_starts, u32 m, u32 b) {
    const uint2 a0 = reinterpret_cast<const uint2*>(tile_starts)[b];
    const u32 a1 = tile_starts[2 * b + 2];
    u32 first = a0.x, last = a1;
    BmDecRange r;
    r.s0 = a0.y;
    r.bad = false;
    if (first >= m) {
        first = m - 1;
        r.bad = true;
    }
    if (last >= m) last = m - 1;  // the last tile's normal case (its entry is m)
    if (last < first) {
        last = first;
        r.bad = true;
    }
    r.wa = first & ~3u;
    if (last - r.wa >= BM_DEC_SMEM_WORDS) {
        last = r.wa + BM_DEC_SMEM_WORDS - 1;
        r.bad = true;
    }
    r.nw = last + 1 - r.wa;
    r.skip = first - r.wa;
    r.nc = (r.nw + BM_DEC_CHUNK - 1) / BM_DEC_CHUNK;
    return r;
}

// Word ends of the loaded words, by chunks of BM_DEC_CHUNK: chunks k < nct hold stream a's
// words (k < ra.nc) and then, for the fused operations' joint decode, stream b's (from chunk
// ra.nc, which is word ra.nc * BM_DEC_CHUNK of sw: a multiple of 32, so the padded index of a
// word of b is PAD(that) + PAD(its own index)); one stream passes rb = ra and nct = ra.nc.
// Step 1: warp w takes chunks w, w + 4, ...; lane l sums the group counts of the chunk's words
// 4l .. 4l + 3 (the padded layout puts the 32 lanes' words in 32 banks; words before the
// anchor or past the stream count 0: selects, not branches; reads stay inside sw as k <
// BM_DEC_MAX_CHUNKS) and keeps its exclusive prefix in the chunk; lane 31 stores the chunk's
// total.
// Where lane `lane`'s four words of chunk k lie: i0 = their first index in their own stream
// (a's below chunk ra.nc, else b's), j0 = in the joint layout of sw / se; skip, nw, s0 = that
// stream's range.
struct BmDecChunk {
    u32 i0, j0, skip, nw, s0;
};
__device__ __forceinline__ BmDecChunk bm_dec_chunk(const BmDecRange& ra, const BmDecRange& rb, u32 k, u32 lane) {
    const bool isb = k >= ra.nc;
    BmDecChunk c;
    c.skip = isb ? rb.skip : ra.skip;
    c.nw = isb ? rb.nw : ra.nw;
    c.s0 = isb ? rb.s0 : ra.s0;
    c.i0 = (isb ? k - ra.nc : k) * BM_DEC_CHUNK + lane * (BM_DEC_CHUNK / 32);
    c.j0 = k * BM_DEC_CHUNK + lane * (BM_DEC_CHUNK / 32);
    return c;
}

template <bool PLWAH>
__device__ __forceinline__ void bm_dec_sum_chunks(const u32* sw, const BmDecRange& ra, const BmDecRange& rb, u32 nct,
                                                  u32 (&lane_excl)[BM_DEC_WARP_CHUNKS], u32* s_chunk) {
    const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
    for (u32 i = 0; i < BM_DEC_WARP_CHUNKS; ++i) {
        const u32 k = warp + i * (BM_DECODE_THREADS / 32);
        if (k >= nct) break;  // uniform per warp
        const BmDecChunk ch = bm_dec_chunk(ra, rb, k, lane);
        u32 sum = 0;
#pragma unroll
        for (u32 q = 0; q < BM_DEC_CHUNK / 32; ++q) {
            const u32 c = bm_word_groups<PLWAH>(sw[BM_DEC_PAD(ch.j0 + q)]);
            sum += (ch.i0 + q >= ch.skip && ch.i0 + q < ch.nw) ? c : 0u;
        }
        const u32 incl = ds_warp_inclusive(sum, DsSum<u32>());
        lane_excl[i] = incl - sum;
        if (lane == 31) s_chunk[k] = incl;
    }
}

// Step 3 (after the barrier and the scan of the chunk totals, t_incl over lanes holding chunks
// 2l and 2l + 1 = t0, t1): each word's end, u32 (a valid stream has fewer than 2^32 groups,
// so g_lo fits), clamped to [0, rn + 1] relative to the tile, stored as u16 in se. Stream b's
// ends start at its own s0: its chunks' prefixes less a's total.
template <bool PLWAH>
__device__ __forceinline__ void bm_dec_store_ends(const u32* sw, u16* se, const BmDecRange& ra, const BmDecRange& rb,
                                                  u32 nct, const u32 (&lane_excl)[BM_DEC_WARP_CHUNKS], u32 t_incl,
                                                  u32 t0, u32 t1, u32 total_a, u32 g_lo32, u32 rn) {
    const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
    for (u32 i = 0; i < BM_DEC_WARP_CHUNKS; ++i) {
        const u32 k = warp + i * (BM_DECODE_THREADS / 32);
        if (k >= nct) break;  // uniform per warp
        const BmDecChunk ch = bm_dec_chunk(ra, rb, k, lane);
        // Chunk k's prefix: lane k / 2's exclusive sum, plus its first total when k is odd.
        const u32 ex2 = __shfl_sync(0xFFFFFFFFu, t_incl - t0 - t1, k >> 1);
        const u32 first = __shfl_sync(0xFFFFFFFFu, t0, k >> 1);
        u32 end = ch.s0 + ex2 + ((k & 1) ? first : 0u) - (k >= ra.nc ? total_a : 0u) + lane_excl[i];
#pragma unroll
        for (u32 q = 0; q < BM_DEC_CHUNK / 32; ++q) {
            const u32 c = bm_word_groups<PLWAH>(sw[BM_DEC_PAD(ch.j0 + q)]);
            end += (ch.i0 + q >= ch.skip && ch.i0 + q < ch.nw) ? c : 0u;
            const u32 rel = end <= g_lo32 ? 0u : ts_min(end - g_lo32, rn + 1);
            if (ch.i0 + q < ch.nw) se[BM_DEC_PAD16(ch.j0 + q)] = (u16)rel;
        }
    }
}

// Decode tile b (b * BM_DECODE_TILE < groups, m >= 1: the caller's uniform checks) of a stream
// into registers: thread t's o = the tile's plain words 31t .. 31t + 30 (groups past the
// bitmap's end are 0). sw (BM_DEC_SMEM_PADDED words, 16-byte aligned) holds the loaded words,
// se (BM_DEC_SMEM_PADDED16) their ends, s_chunk (BM_DEC_MAX_CHUNKS) the chunk totals; the
// caller synchronizes before reusing them. Shared by bm_dec_expand and the fused operations.
template <bool PLWAH>
__device__ __forceinline__ void bm_dec_tile(const u32* __restrict__ words, u32 m, const u32* __restrict__ tile_starts,
                                            u64 groups, u32 b, u32* sw, u16* se, u32* s_chunk,
                                            u32 (&o)[BM_DECODE_GROUPS - 1], u32* __restrict__ status) {
    const u64 g_lo = (u64)b * BM_DECODE_TILE;
    const u32 rn = (u32)(groups - g_lo < (u64)BM_DECODE_TILE ? groups - g_lo : (u64)BM_DECODE_TILE);
    const BmDecRange rg = bm_dec_range(tile_starts, m, b);
    const u32 wa = rg.wa, nw = rg.nw, skip = rg.skip, nc = rg.nc, s0 = rg.s0;
    const bool bad = rg.bad;

    // Load: 16-byte loads (wa is a multiple of 4), all issued before any is stored, then the tail.
    bm_stage_words<BM_DECODE_THREADS, BM_DEC_SMEM_WORDS, true>(words + wa, nw, sw);
    __syncthreads();

    const u32 lane = threadIdx.x & 31;
    u32 lane_excl[BM_DEC_WARP_CHUNKS];
    bm_dec_sum_chunks<PLWAH>(sw, rg, rg, nc, lane_excl, s_chunk);
    static_assert(BM_DEC_MAX_CHUNKS <= 64, "two chunk totals per lane");
    __syncthreads();
    // Step 2: every warp scans the chunk totals (two per lane; no further barrier): chunk k of
    // the warp starts at its exclusive prefix, the tile's words cover `total` groups.
    const u32 t0 = 2 * lane < nc ? s_chunk[2 * lane] : 0u, t1 = 2 * lane + 1 < nc ? s_chunk[2 * lane + 1] : 0u;
    const u32 t_incl = ds_warp_inclusive(t0 + t1, DsSum<u32>());
    const u32 total = __shfl_sync(0xFFFFFFFFu, t_incl, 31);
    if (threadIdx.x == 0 && status) {
        if (bad || (u64)s0 > g_lo || (u64)s0 + total < g_lo + rn) atomicOr(status, 1u);
    }
    // Dense tile: every loaded word from the anchor on covers one group (total = words), so group
    // r of the tile is word skip + (g_lo - s0) + r. No word ends to store, no search: the common
    // case of dense bitmaps, whose words are nearly all literals. (Uniform per block.)
    const bool dense = !bad && total == nw - skip && (u64)s0 <= g_lo;
    if (!dense) bm_dec_store_ends<PLWAH>(sw, se, rg, rg, nc, lane_excl, t_incl, t0, t1, 0u, (u32)g_lo, rn);
    __syncthreads();

    // The walk: thread t's groups 32t .. 32t + 31 of the tile.
    const u32 r0 = threadIdx.x * BM_DECODE_GROUPS;
    if (dense) {
        // Clamped reads: a hostile stream only gets wrong output. The padded layout keeps the
        // 32 threads' reads of one step in 32 banks.
        const u32 d = skip + (u32)(g_lo - s0);
        u32 prev = 0;
#pragma unroll
        for (u32 j = 0; j < BM_DECODE_GROUPS; ++j) {
            const u32 r = r0 + j, s = d + r;
            const u32 x = (r < rn && s < nw) ? bm_word_group<PLWAH>(sw[BM_DEC_PAD(s)], r + 1, r) : 0u;
            if (j > 0) o[j - 1] = (prev >> (j - 1)) | (x << (32 - j));
            prev = x;
        }
    } else {
        const u32 s = bm_dec_search(se, nw, r0);
        u32 e = se[BM_DEC_PAD16(s)], fv, lv;
        bm_dec_word_values<PLWAH>(sw[BM_DEC_PAD(s)], fv, lv);
        if (rn == BM_DECODE_TILE) bm_dec_walk<PLWAH, false>(sw, se, nw, rn, r0, s, e, fv, lv, o);
        else bm_dec_walk<PLWAH, true>(sw, se, nw, rn, r0, s, e, fv, lv, o);
    }
}

template <bool PLWAH>
__device__ __forceinline__ void bm_dec_expand(const u32* __restrict__ words, u32 m,
                                              const u32* __restrict__ tile_starts, u64 groups,
                                              u32* __restrict__ out, u64 out_words, u32* __restrict__ status) {
    __shared__ __align__(16) u32 sw[BM_DEC_SMEM_PADDED];  // words; then the output stage
    __shared__ u16 se[BM_DEC_SMEM_PADDED16];              // word ends, relative to the tile (u16)
    __shared__ u32 s_chunk[BM_DEC_MAX_CHUNKS];            // chunk totals
    const u32 b = blockIdx.x;
    if ((u64)b * BM_DECODE_TILE >= groups || m == 0) return;  // uniform per block
    u32 o[BM_DECODE_GROUPS - 1];
    bm_dec_tile<PLWAH>(words, m, tile_starts, groups, b, sw, se, s_chunk, o, status);
    __syncthreads();  // every walk is done: sw becomes the stage

    u32* stage = sw;
#pragma unroll
    for (u32 j = 0; j < BM_DECODE_GROUPS - 1; ++j) stage[threadIdx.x * (BM_DECODE_GROUPS - 1) + j] = o[j];
    __syncthreads();
    const u64 w0 = (u64)b * BM_DECODE_TILE_WORDS;  // < out_words, as g_lo < groups
    const u64 left = out_words - w0;
    if (left >= BM_DECODE_TILE_WORDS) {
        // w0 * 4 bytes is a multiple of 16 (BM_DECODE_TILE_WORDS = 3968 = 4 * 992).
        uint4* o4 = reinterpret_cast<uint4*>(out + w0);
        const uint4* s4 = reinterpret_cast<const uint4*>(stage);
        for (u32 q = threadIdx.x; q < BM_DECODE_TILE_WORDS / 4; q += BM_DECODE_THREADS) o4[q] = s4[q];
    } else {
        for (u32 i = threadIdx.x; i < (u32)left; i += BM_DECODE_THREADS) out[w0 + i] = stage[i];
    }
}

#define BM_DEC_KERNELS(NAME, PLWAH)                                                                                \
    extern "C" __global__ void __launch_bounds__(BM_DEC_SUM_THREADS)                                               \
        bm_dec_sums_##NAME(const u32* __restrict__ words, u32 m, u32* __restrict__ chunk_incl,                     \
                           u32* __restrict__ partials) {                                                           \
        bm_dec_sums<PLWAH>(words, m, chunk_incl, partials);                                                        \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(256)                                                              \
        bm_dec_tile_starts_##NAME(const u32* __restrict__ words, u32 m, const u32* __restrict__ chunk_incl,        \
                                  const u32* __restrict__ partials, u32 n_chunks, u32 n_sums, u32 tiles,           \
                                  u64 groups, u32* __restrict__ tile_starts) {                                     \
        bm_dec_tile_starts<PLWAH>(words, m, chunk_incl, partials, n_chunks, n_sums, tiles, groups, tile_starts);   \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(BM_DECODE_THREADS)                                                \
        bm_dec_expand_##NAME(const u32* __restrict__ words, u32 m, const u32* __restrict__ tile_starts, u64 groups, \
                             u32* __restrict__ out, u64 out_words, u32* __restrict__ status) {                     \
        bm_dec_expand<PLWAH>(words, m, tile_starts, groups, out, out_words, status);                               \
    }
BM_DEC_KERNELS(wah, false)
BM_DEC_KERNELS(plwah, true)

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
// Measured (H100, 2026-11-22, bitmap_gpu_speed --only fop, 1,677,721,600 bits, median of 5,
// same run, PLWAH AND / OR ms at 2^-8): joint 0: 0.514 / 0.678, joint 1: 0.541 / 0.635; at
// 2^-12: 0.404 / 0.450 -> 0.324 / 0.420. Bounds 4, 5, 7 blocks (joint 0): 2^-8 PLWAH OR 0.82,
// 0.75, 0.70 against 0.70 at 6; 7 blocks with the joint decode is no better at 2^-1 / 2^-4.
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
