// writer.cuh (part of bitmap.cu): the canonical writer every GPU path that emits words goes
// through (wah.cuh has its element algebra): the element sources (groups of a plain bitmap, slots
// of a stream, merged slots of two streams), the three-launch form (reduce, partials, apply), the
// one-launch form with a decoupled look-back, and the overflow path for runs longer than a
// fill_word's counter.
#ifndef TESSERA_BITMAP_WRITER_CUH
#define TESSERA_BITMAP_WRITER_CUH
#include "../include/common.cuh"
#include "../primitives/scan.cuh"
#include "../primitives/merge.cuh"
#include "wah.cuh"

extern "C" __global__ void __launch_bounds__(DS_PARTIAL_THREADS) bm_agg_partials(BmAgg* partials, u32 count) {
    ds_scan_partials(partials, count, BmAggOp(), bm_agg_zero());
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
// src/bitmap/ prove it); an item equal to the previous one gives an empty element. A value
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

// ---- operations in one pass (short inputs: src/bitmap/ `binary_device`) ------------------------
// The same writer as bm_op_{reduce,apply}, with the tiles' prefixes from a decoupled look-back
// (primitives/scan.cuh) instead of a partials pass: one launch instead of three, and the inputs are
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

#endif
