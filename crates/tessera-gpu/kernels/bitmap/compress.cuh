// compress.cuh (part of bitmap.cu): plain bits to canonical words: compression by heads (one
// launch), the same through the canonical writer (the cross-check), and Algorithm 1 alone.
#ifndef TESSERA_BITMAP_COMPRESS_CUH
#define TESSERA_BITMAP_COMPRESS_CUH
#include "../include/common.cuh"
#include "../primitives/scan.cuh"
#include "wah.cuh"
#include "writer.cuh"

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
// One launch (bm_cmp_<flavor>) and one host read of the word total (src/bitmap/, when the
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
// Choices measured on an H100 (bitmap_gpu_speed; the figures are in the GPU design notes):
// - where PLWAH tests folds (bm_cmp_classify; BM_CMP_LAZY_FOLD): 0 in the extraction loop, 1
//   after it, 2 in the loop when the whole warp extracts, 3 after it for literals after a
//   1-fill only, those after a 0-fill from a mask of one-bit groups built in the loop. 3 is
//   kept: it is the fastest at the middle densities (2^-6, 2^-7), where a literal after a
//   0-fill is the common fold candidate (about 7 a unit at 2^-6), and level with 1 elsewhere;
//   the loop's mask costs 3 instructions a group;
// - how a warp copies its words (bm_cmp_copy): a unit a round, a binary search for 32 words a
//   round, by warp between those two, or (3, kept) by warp between a unit a round and 32 words
//   a round found from a start mask. At 2^-6 a warp's units hold ~14 words, too few rounds for
//   the search: it copied a unit a round, and ncu put the copy at 23% of the kernel's
//   instructions. 3 weighs BM_CMP_COPY_WINDOW_COST * rounds against BM_CMP_COPY_UNIT_COST *
//   busy units;
// - staging a tile with cp.async (no register round trip) and 4 look-back items a lane were
//   slower at every density tried.
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

// A tile's status word is written and read whole with primitives/scan.cuh's volatile vector
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
// Measured (H100, bitmap_gpu_speed): the whole block looking back (512 tiles a round) is slower
// than one warp (the block's combines cost every tile issue slots, and each round two
// barriers); of one warp's windows, 1 item a lane combined by bm_cmp_window is the fastest
// tried (2 and 4 items, and a shuffle scan of bm_cmp_combine, were slower).
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
// store needs no test (about 48 instructions a step instead of 56); a store
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
// (bm_cmp_tile, LW). Measured on an H100 (bitmap_gpu_speed, queued): the look-back warp is
// faster at every density but the sparsest (2^-16), where 8 blocks an SM (registers) instead of
// 10 cost more than the look-back it hides. Tried with it and not kept (slower or within noise):
// streaming cache hints on the staged loads and the stores; a shorter look-back poll; sparse
// warps writing their heads' words straight to global memory after the join instead of in place
// before it (the head walk is what hides the look-back's latency); the look-back warp publishing
// the inclusive aggregate as soon as it has the prefix (a barrier.arrive hand-off from warp 0);
// and phase 2 as an unrolled 32-group pass over the unit's words in registers, writing each
// warp's words compacted (dense warps' compacted stores all hit one bank; sparse ones miss the
// instruction cache and spill).
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

#endif
