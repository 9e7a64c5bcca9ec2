// load_rbitpack.cuh: LoadRBitPack, the GPU-RFOR loader (rfor.md, paper section 6). A tile is
// one RFOR block of up to 512 values, decoded by ONE WARP with no thread-block barrier:
//
//   LoadRBitPackWarp (per block)
//   1. lanes 0 and 1 read the block's two block_starts entries and check them; then one
//      coalesced load (lane l: word l of the block) brings value_reference, the run word and the
//      bit-width words, spread by shuffles. Lane l < 2m keeps miniblock l's bit width and first
//      bit (a warp scan of the miniblock sizes); every check of rfor.md steps 1-5 is made here.
//   2. the block is classified:
//      - IDENTITY: r equals the value count, length_reference is 1 and every run-length
//        miniblock has bit width 0, so every run has length 1 (RFOR on data without repeats):
//        position p is run p, nothing to expand.
//      - ONE_RUN: r = 1; its length is checked against the count, its value is the block's.
//      - RUNS: the warp unpacks 4 runs per lane per pass of 128 runs (lane l: runs j0 = 128g
//        + 4l .. j0 + 3, their lengths from one 64-bit window, their values from one or two),
//        checks every length, writes each run's value (value_reference added) to `run_val[j]`
//        in shared memory and a 1 byte in `start_flags` at each run's start but the first (a
//        warp scan of the lengths per pass gives the ends). The lengths must sum to the count.
//        Then the popcounts of the flag words of the four stripes, packed as four bytes, take
//        one warp scan.
//   LoadRBitPackStripe (k = 0..3, in order): lane l gets positions 128k + 4l .. 128k + 4l + 3
//   (every warp store is 512 contiguous bytes). RUNS: the four flag bytes are one word; the
//   scan gives the run of the position before the lane's first, and the byte sums of the word
//   (one multiply) each position's run, read from run_val. IDENTITY: the four values are
//   unpacked straight from the packed words. ONE_RUN: the value.
//
// The packed words are read from global memory (through L1, 32 lanes reading neighbouring
// words), never staged: every read index is clamped to the block's last word, so a read never
// leaves the block's checked range [block_starts[k], block_starts[k+1]); the clamped words only
// feed bits past the block's last entry, which are masked off. Every run index stays below r
// (there are r - 1 flags). Failures are reported with ts_report; the block is then TS_RFOR_CORRUPT.
//
// LoadRBitPack keeps the paper's shape (one block per thread block, thread t holding values
// 4t .. 4t+3): each warp decodes the block with the steps above and keeps its own stripe (the
// metadata work is repeated per warp; the fast kernels use one warp per block instead).
#ifndef TESSERA_LOAD_RBITPACK_CUH
#define TESSERA_LOAD_RBITPACK_CUH

#include "../include/common.cuh"
#include "bitunpack.cuh"
#include "../primitives/block_scan.cuh"

#define TS_RFOR_CORRUPT 0u
#define TS_RFOR_IDENTITY 1u
#define TS_RFOR_ONE_RUN 2u
#define TS_RFOR_RUNS 3u

// A warp's shared memory for the block it decodes (RUNS blocks only).
template <int LANE> struct RforWarpStorage {
    typedef typename Lane<LANE>::T T;
    // Run j's value (value_reference and the caller's `add` included); 16-byte aligned: a lane
    // writes its 4 runs with vector stores.
    __align__(16) T run_val[TS_RFOR_BLOCK_VALUES];
    // Byte p is 1 iff a run other than the first starts at position p.
    __align__(16) u32 start_flags[TS_RFOR_BLOCK_VALUES / 4];
};

// What LoadRBitPackWarp leaves each lane of the warp for the block's stripes.
template <int LANE> struct RforBlock {
    typedef typename Lane<LANE>::T T;
    const u32* w;  // the block's first word (global memory)
    u32 last;      // index of its last word: every read is clamped to it
    u32 count;     // values in the block
    u32 mode;      // TS_RFOR_*; TS_RFOR_CORRUPT: the block failed a check (reported)
    u32 mb_bit;    // lane l < 2m: miniblock l's first bit, counted from w
    u32 mb_bw;     // lane l < 2m: its bit width
    T vref;        // value_reference + add
    T one;         // ONE_RUN: the block's value
    // RUNS: per stripe k, in byte k, the run starts before the lane's positions inside the
    // stripe (excl4) and in the whole stripe (tot4); carry counts the stripes done. A byte holds
    // at most 4 * 32 = 128 starts, so one warp scan of the packed bytes serves all four.
    u32 excl4, tot4, carry;
};

// The bw low bits (0 <= bw <= 32) of a 32-bit word, without a branch: a clamped funnel shift of
// ones (bw = 0: none, bw = 32: all).
__device__ __forceinline__ u32 rfor_mask(u32 bw) { return __funnelshift_lc(0xFFFFFFFFu, 0u, bw); }

// Word i of the block, clamped to its last word.
__device__ __forceinline__ u32 rfor_word(const u32* w, u32 last, u32 i) { return __ldg(w + ts_min(i, last)); }

// The 64 bits of the block starting at bit `bit`: lo = bits bit .. bit + 31, hi the next 32.
__device__ __forceinline__ void rfor_window(const u32* w, u32 last, u32 bit, u32& lo, u32& hi) {
    const u32 i = bit >> 5;
    const u32 a = rfor_word(w, last, i), b = rfor_word(w, last, i + 1), c = rfor_word(w, last, i + 2);
    lo = __funnelshift_r(a, b, bit);
    hi = __funnelshift_r(b, c, bit);
}

// One entry (bw <= LANE bits at bit `bit`).
template <int LANE>
__device__ __forceinline__ typename Lane<LANE>::T rfor_entry(const u32* w, u32 last, u32 bit, u32 bw) {
    u32 lo, hi;
    rfor_window(w, last, bit, lo, hi);
    if (LANE == 32) return (typename Lane<LANE>::T)(lo & rfor_mask(bw));
    const u64 mask = bw >= 64 ? ~0ull : (1ull << bw) - 1ull;
    return (typename Lane<LANE>::T)((((u64)hi << 32) | lo) & mask);
}

// Entries e .. e + 3 of a miniblock (v[x] = entry e + x, packed at bw bits from bit `bit`), for
// lane 32 (bw <= 32). Up to 10 bits, all four lie in one 64-bit window (3 * 10 + 10 <= 64, and
// every shift stays below 32); wider, two windows of two entries each.
template <int LANE> struct RforQuad;
template <> struct RforQuad<32> {
    __device__ __forceinline__ static void get(const u32* w, u32 last, u32 bit, u32 bw, u32 (&v)[4]) {
        const u32 mask = rfor_mask(bw);
        u32 lo, hi;
        rfor_window(w, last, bit, lo, hi);
        if (bw <= 10) {
#pragma unroll
            for (u32 x = 0; x < 4; ++x) v[x] = __funnelshift_r(lo, hi, x * bw) & mask;
        } else {
            v[0] = lo & mask;
            v[1] = __funnelshift_rc(lo, hi, bw) & mask;  // shift bw <= 32: clamped, not wrapped
            rfor_window(w, last, bit + 2 * bw, lo, hi);
            v[2] = lo & mask;
            v[3] = __funnelshift_rc(lo, hi, bw) & mask;
        }
    }
};
// Lane 64 (bw <= 64): one 64-bit window per entry.
template <> struct RforQuad<64> {
    __device__ __forceinline__ static void get(const u32* w, u32 last, u32 bit, u32 bw, u64 (&v)[4]) {
#pragma unroll
        for (u32 x = 0; x < 4; ++x) v[x] = rfor_entry<64>(w, last, bit + x * bw, bw);
    }
};

// The block that warp `warp` of a thread block decodes in slab `slab` (the host counts slabs
// of TS_RFOR_SLAB_L32 / _L64 blocks per chunk: one block per warp) and its chunk; `k` is
// chunk-relative, and `has_block` is false for the warps past a chunk's last block.
struct RforTask {
    u32 ci;
    ChunkDesc c;
    ChunkLayout L;
    u32 k;
    bool has_block;
};
__device__ __forceinline__ RforTask rfor_task(const ChunkDesc* __restrict__ chunks, u32 n_chunks, u32 slab, u32 warp) {
    static_assert(TS_RFOR_SLAB_L32 == TS_THREADS / 32 && TS_RFOR_SLAB_L64 == TS_THREADS / 32,
                  "an RFOR slab is one block per warp");
    RforTask t;
    t.ci = ts_find_chunk_fast(chunks, n_chunks, slab);
    t.c = ts_load_chunk(chunks, t.ci);
    t.L = ts_chunk_layout(t.c, TS_RFOR_BLOCK_VALUES);
    t.k = (slab - t.c.first_slab) * (TS_THREADS / 32) + warp;
    t.has_block = t.k < t.L.block_count;
    return t;
}

// Steps 1-2 for block `k` of chunk `c` (layout L), by the whole warp (every lane calls it; no
// other warp takes part). `add` is added to every value (the decoder folds the sign flip of
// signed types into it: flipping the top bit is adding it). Returns the block in mode
// TS_RFOR_CORRUPT when it fails a check (reported to `status`).
template <int LANE>
__device__ __forceinline__ RforBlock<LANE> LoadRBitPackWarp(const u32* __restrict__ g, const ChunkDesc& c,
                                                            const ChunkLayout& L, u32 k, typename Lane<LANE>::T add,
                                                            RforWarpStorage<LANE>& s, u64* status) {
    typedef typename Lane<LANE>::T T;
    const u32 RW = Lane<LANE>::REF_WORDS;
    const u32 l = threadIdx.x & 31;
    RforBlock<LANE> blk;
    blk.mode = TS_RFOR_CORRUPT;
    blk.carry = 0;
    blk.excl4 = blk.tot4 = 0;
    blk.count = ts_min(TS_RFOR_BLOCK_VALUES, c.total_count - k * TS_RFOR_BLOCK_VALUES);

    // block_starts[k] (lane 0) and block_starts[k + 1] (lane 1). This block checks entry k + 1
    // (and entry 0 for block 0): each entry is checked once, in the order the CPU checks them.
    const u32 e = l < 2 ? __ldg(&g[L.block_starts + k + l]) : 0u;
    const u32 e0 = __shfl_sync(0xFFFFFFFFu, e, 0), e1 = __shfl_sync(0xFFFFFFFFu, e, 1);
    if (l == 0 && k == 0 && e0 > L.data_len) ts_report(status, TS_CLASS_BLOCK_STARTS, 0, TS_ST_BLOCK_START, e0);
    if (l == 0 && (e1 > L.data_len || e1 < e0)) ts_report(status, TS_CLASS_BLOCK_STARTS, k + 1, TS_ST_BLOCK_START, e1);
    if (e0 > e1 || e1 > L.data_len) return blk;  // reported above or by the block before

    const u32 len = e1 - e0;
    blk.w = g + L.data + e0;
    blk.last = len - 1;  // len = 0 reads nothing: the truncation check comes first
    const u32 x = len ? rfor_word(blk.w, blk.last, l) : 0u;
    const u32 run_word = __shfl_sync(0xFFFFFFFFu, x, RW);
    T vref = (T)__shfl_sync(0xFFFFFFFFu, x, 0);
    if (LANE == 64) vref |= (T)((u64)__shfl_sync(0xFFFFFFFFu, x, 1) << 32);
    const u32 r = len >= RW + 1 ? run_word & 0xFFFFu : 0u;
    const u32 lref = len >= RW + 1 ? run_word >> 16 : 0u;
    const u32 m = (r + 31) / 32;
    const u32 bw_words = (2 * m + 3) / 4;
    const u32 bw_word = __shfl_sync(0xFFFFFFFFu, x, ts_min(RW + 1 + l / 4, 31u));
    u32 code = 0, detail = 0;
    if (len < RW + 1) {
        code = TS_ST_TRUNCATED;
        detail = RW + 1;
    } else if (r < 1 || r > TS_RFOR_BLOCK_VALUES) {
        code = TS_ST_RUN_COUNT;
        detail = r;
    } else if (lref < 1 || lref > TS_RFOR_MAX_LENGTH) {
        code = TS_ST_LENGTH_REF;
        detail = lref;
    } else if (RW + 1 + bw_words > len) {
        code = TS_ST_TRUNCATED;
        detail = RW + 1 + bw_words;
    }
    if (code) {  // warp-uniform
        if (l == 0) ts_report(status, TS_CLASS_BLOCK, k, code, detail);
        return blk;
    }
    // Lane l < m: value miniblock l; m <= l < 2m: run-length miniblock l - m.
    const bool active = l < 2 * m;
    const u32 bw = active ? (bw_word >> (8 * (l & 3))) & 0xFFu : 0u;
    const bool is_len = l >= m;
    const u32 mb = is_len ? l - m : l;
    const u32 entries = mb == m - 1 ? r - 32 * (m - 1) : 32u;
    const bool too_wide = active && bw > (is_len ? (u32)TS_RFOR_MAX_LENGTH_BITS : (u32)LANE);
    const u32 wide = __ballot_sync(0xFFFFFFFFu, too_wide);
    const u32 words = active && !wide ? ts_miniblock_words(entries, bw) : 0u;
    const u32 incl = warp_inclusive_sum(words);
    const u32 total = __shfl_sync(0xFFFFFFFFu, incl, 31);
    const u32 first = RW + 1 + bw_words;
    if (wide) {
        const u32 bad = __ffs(wide) - 1;
        const u32 bad_bw = __shfl_sync(0xFFFFFFFFu, bw, bad);
        if (l == 0) ts_report(status, TS_CLASS_BLOCK, k, TS_ST_BIT_WIDTH, (bad << 8) | bad_bw);
        return blk;
    }
    if (first + total > len) {
        if (l == 0) ts_report(status, TS_CLASS_BLOCK, k, TS_ST_TRUNCATED, first + total);
        return blk;
    }
    blk.mb_bit = (first + incl - words) * 32;  // < 32 * 684: 16 miniblocks of <= 32 words, 16 of <= 10
    blk.mb_bw = bw;
    blk.vref = (T)(vref + add);

    // IDENTITY: nothing to check (valid lengths of 1 summing to the count).
    if (r == blk.count && lref == 1 && __ballot_sync(0xFFFFFFFFu, is_len && active && bw != 0) == 0) {
        blk.mode = TS_RFOR_IDENTITY;
        return blk;
    }
    if (r == 1) {
        // ONE_RUN: value miniblock 0 and run-length miniblock 1 hold one entry each.
        const u32 lbw = __shfl_sync(0xFFFFFFFFu, bw, 1), lbit = __shfl_sync(0xFFFFFFFFu, blk.mb_bit, 1);
        const u32 vbw = __shfl_sync(0xFFFFFFFFu, bw, 0), vbit = __shfl_sync(0xFFFFFFFFu, blk.mb_bit, 0);
        u32 lo, hi;
        rfor_window(blk.w, blk.last, lbit, lo, hi);
        const u32 run_len = lref + (lo & rfor_mask(lbw));
        if (run_len > TS_RFOR_MAX_LENGTH || run_len != blk.count) {
            if (l == 0) {
                if (run_len > TS_RFOR_MAX_LENGTH) ts_report(status, TS_CLASS_BLOCK, k, TS_ST_RUN_LENGTH, run_len & 0x1FFFFu);
                else ts_report(status, TS_CLASS_BLOCK, k, TS_ST_RUN_SUM, run_len);
            }
            return blk;
        }
        blk.one = (T)(blk.vref + rfor_entry<LANE>(blk.w, blk.last, vbit, vbw));
        blk.mode = TS_RFOR_ONE_RUN;
        return blk;
    }

    // RUNS. The previous block's stripes may still read s: converge first.
    __syncwarp();
    reinterpret_cast<uint4*>(s.start_flags)[l] = make_uint4(0u, 0u, 0u, 0u);
    __syncwarp();
    u8* flag = reinterpret_cast<u8*>(s.start_flags);
    // Pass g takes runs 128g .. 128g + 127, lane l the four runs j0 = 128g + 4l .. j0 + 3 (one
    // miniblock of each array: 32 runs are 8 lanes); one warp scan per pass places them.
    u32 carry = 0;
    bool bad = false;
    for (u32 j0 = 4 * l; j0 - 4 * l < r; j0 += 128) {
        const u32 q = ts_min(j0 >> 5, m - 1);  // this lane's miniblock (clamped past r)
        const u32 lbw = __shfl_sync(0xFFFFFFFFu, bw, m + q);
        const u32 lbit = __shfl_sync(0xFFFFFFFFu, blk.mb_bit, m + q) + (j0 & 31) * lbw;
        const u32 vbw = __shfl_sync(0xFFFFFFFFu, bw, q);
        const u32 vbit = __shfl_sync(0xFFFFFFFFu, blk.mb_bit, q) + (j0 & 31) * vbw;
        u32 len4[4] = {0u, 0u, 0u, 0u};
        if (j0 < r) {
            u32 lo, hi;
            rfor_window(blk.w, blk.last, lbit, lo, hi);
            const u32 mask = rfor_mask(lbw);
            u32 most = 0;
#pragma unroll
            for (u32 x = 0; x < 4; ++x) {
                // x * lbw <= 30: inside the 64-bit window, one funnel shift.
                const u32 f = __funnelshift_r(lo, hi, x * lbw) & mask;
                len4[x] = j0 + x < r ? lref + f : 0u;
                most = ts_max(most, len4[x]);
            }
            // lref >= 1, so every length is >= 1; only the upper bound can fail.
            if (most > TS_RFOR_MAX_LENGTH) {
#pragma unroll
                for (u32 x = 0; x < 4; ++x) {
                    if (len4[x] > TS_RFOR_MAX_LENGTH && !bad) {
                        // Run index in the detail, so the first bad run wins the atomicMin.
                        ts_report(status, TS_CLASS_BLOCK, k, TS_ST_RUN_LENGTH, ((j0 + x) << 17) | (len4[x] & 0x1FFFFu));
                        bad = true;
                    }
                    len4[x] = 0;
                }
            }
            T v[4];
            RforQuad<LANE>::get(blk.w, blk.last, vbit, vbw, v);
            T* rv = s.run_val + j0;
            if (LANE == 32) {
                *reinterpret_cast<uint4*>(rv) = make_uint4((u32)(blk.vref + v[0]), (u32)(blk.vref + v[1]),
                                                           (u32)(blk.vref + v[2]), (u32)(blk.vref + v[3]));
            } else {
#pragma unroll
                for (u32 x = 0; x < 4; ++x) rv[x] = (T)(blk.vref + v[x]);
            }
        }
        const u32 sum4 = len4[0] + len4[1] + len4[2] + len4[3];
        const u32 incl4 = warp_inclusive_sum(sum4);
        // Run j ends where run j + 1 starts; an end at or past the count starts nothing (the
        // last run's, or a corrupt block's, which the sum check below rejects).
        u32 end = carry + incl4 - sum4;
#pragma unroll
        for (u32 x = 0; x < 4; ++x) {
            end += len4[x];
            if (len4[x] != 0 && end < blk.count) flag[end] = 1;
        }
        carry += __shfl_sync(0xFFFFFFFFu, incl4, 31);
    }
    // The lengths must sum to the block's value count; a run-length error, if any, sorts first
    // in the status key (the CPU checks lengths before their sum).
    bad = __any_sync(0xFFFFFFFFu, bad);
    if (bad || carry != blk.count) {
        if (!bad && l == 0) ts_report(status, TS_CLASS_BLOCK, k, TS_ST_RUN_SUM, carry);
        return blk;
    }
    __syncwarp();
    u32 cnt4 = 0;
#pragma unroll
    for (u32 q = 0; q < 4; ++q) cnt4 |= __popc(s.start_flags[32 * q + l]) << (8 * q);
    const u32 incl4 = warp_inclusive_sum(cnt4);
    blk.excl4 = incl4 - cnt4;
    blk.tot4 = __shfl_sync(0xFFFFFFFFu, incl4, 31);
    blk.mode = TS_RFOR_RUNS;
    return blk;
}

// Stripe k (0..3) of a block that LoadRBitPackWarp returned not corrupt: lane l gets the values
// at positions 128k + 4l .. 128k + 4l + 3 (a warp's stripe is 512 contiguous output bytes).
// The whole warp calls it for k = 0, 1, 2, 3 in order (blk.carry follows the stripes).
// Positions at or past the count (the chunk's last, partial block) get some value of the block.
template <int LANE>
__device__ __forceinline__ void LoadRBitPackStripe(RforBlock<LANE>& blk, const RforWarpStorage<LANE>& s, u32 k,
                                                   typename Lane<LANE>::T (&items)[TS_ITEMS]) {
    typedef typename Lane<LANE>::T T;
    const u32 l = threadIdx.x & 31;
    if (blk.mode == TS_RFOR_RUNS) {
        const u32 fw = s.start_flags[32 * k + l];
        const T* rv = s.run_val + blk.carry + ((blk.excl4 >> (8 * k)) & 0xFFu);
        blk.carry += (blk.tot4 >> (8 * k)) & 0xFFu;
        // Position p + i is in run (runs before the lane) + (flag bytes 0..i of fw): byte i of
        // fw * 0x01010101 (each byte is 0 or 1, so no byte carries into the next).
        if (__all_sync(0xFFFFFFFFu, (fw >> 8) == 0u)) {
            // Long runs: no lane of the warp has a run start among its last three positions.
            const T v = rv[fw];
#pragma unroll
            for (u32 i = 0; i < TS_ITEMS; ++i) items[i] = v;
        } else {
            const u32 sums = fw * 0x01010101u;
#pragma unroll
            for (u32 i = 0; i < TS_ITEMS; ++i) items[i] = rv[(sums >> (8 * i)) & 0xFFu];
        }
    } else if (blk.mode == TS_RFOR_IDENTITY) {
        // Position p is run p; p .. p + 3 lie in one value miniblock (p is a multiple of 4).
        const u32 p = 128 * k + TS_ITEMS * l;
        const u32 vbw = __shfl_sync(0xFFFFFFFFu, blk.mb_bw, p >> 5);
        const u32 vbit = __shfl_sync(0xFFFFFFFFu, blk.mb_bit, p >> 5) + (p & 31) * vbw;
        T v[4];
        RforQuad<LANE>::get(blk.w, blk.last, vbit, vbw, v);
#pragma unroll
        for (u32 i = 0; i < TS_ITEMS; ++i) items[i] = (T)(blk.vref + v[i]);
    } else {
#pragma unroll
        for (u32 i = 0; i < TS_ITEMS; ++i) items[i] = blk.one;
    }
}

// The paper's shape: RFOR block `tile` of chunk `c` decoded by the whole thread block, thread
// t getting values 4t .. 4t+3 (warp w decodes the block and keeps stripe w). `s` holds one
// RforWarpStorage per warp.
template <int LANE>
__device__ __forceinline__ bool LoadRBitPack(const u32* __restrict__ g, const ChunkDesc& c, u32 tile,
                                             RforWarpStorage<LANE> (&s)[TS_THREADS / 32],
                                             typename Lane<LANE>::T (&items)[TS_ITEMS], u64* status) {
    const ChunkLayout L = ts_chunk_layout(c, TS_RFOR_BLOCK_VALUES);
    const u32 warp = threadIdx.x >> 5;
    RforBlock<LANE> blk = LoadRBitPackWarp<LANE>(g, c, L, tile, 0, s[warp], status);
    if (blk.mode == TS_RFOR_CORRUPT) {
#pragma unroll
        for (u32 i = 0; i < TS_ITEMS; ++i) items[i] = 0;
        return false;
    }
    // The stripes before this warp's only advance the run count.
    for (u32 k = 0; k < warp; ++k) blk.carry += (blk.tot4 >> (8 * k)) & 0xFFu;
    LoadRBitPackStripe<LANE>(blk, s[warp], warp, items);
    return true;
}

#endif
