// load_rbitpack.cuh: LoadRBitPack, the GPU-RFOR loader (rfor.md, paper section 6). A tile is
// one RFOR block of up to 512 values.
//
// Blocks are loaded a group of G at a time (LoadRBitPackGroup: block_starts checked, the
// group's words copied to shared memory with cp.async, contiguously or one slot per block).
// Then each block is decoded by ONE WARP, with no thread-block barrier (LoadRBitPackWarp, then
// LoadRBitPackStripe for each quarter of the output):
//   1. the warp parses the run word (1 <= r <= 512, 1 <= length_reference <= 512) and the 2m
//      miniblock bit widths (values <= lane, run lengths <= 10), scans the miniblock sizes into
//      word offsets and checks that they fit the block's range (rfor_block_meta);
//   2. the warp unpacks the run lengths 32 at a time (lane l: entry 32q + l), checks each
//      (1..=512), and a warp-wide scan per 32 gives every run's end (rfor_run_ends), whose total
//      must be the block's value count;
//   3. lane l takes output positions 128k + 4l .. 128k + 4l + 3 (k = 0..3, so every store of
//      the warp is 512 contiguous bytes): a binary search over the run ends (over the runs
//      that can hold the position: at most count - r + 1) finds the first position's run, a
//      short walk the next three, and each run's value is unpacked straight from the packed
//      words.
// LoadRBitPack keeps the paper's shape (one block per thread block, thread t holding values
// 4t .. 4t+3): warp 0 does steps 1-2, one barrier, every thread does step 3.
// Every read stays inside the block's checked range or the two spare words after it. Failures
// are reported with ts_report; the functions then return false.
#ifndef TESSERA_LOAD_RBITPACK_CUH
#define TESSERA_LOAD_RBITPACK_CUH

#include "common.cuh"
#include "bitunpack.cuh"
#include "block_scan.cuh"

template <int LANE, int G> struct RforGroupStorage {
    typedef typename Lane<LANE>::T T;
    static const u32 RW = Lane<LANE>::REF_WORDS;
    static const u32 MAX_RUNS = TS_RFOR_BLOCK_VALUES;
    static const u32 MAX_MINIBLOCKS = 2 * TS_RFOR_MINIBLOCKS;
    // rfor.md: value_reference, run word, ceil(2m/4) bit-width words, 16 value miniblocks of at
    // most `lane` words and 16 run-length miniblocks of at most 10 words.
    static const u32 MAX_BLOCK_WORDS = RW + 1 + MAX_MINIBLOCKS / 4 + TS_RFOR_MINIBLOCKS * LANE +
                                       TS_RFOR_MINIBLOCKS * TS_RFOR_MAX_LENGTH_BITS;
    static const u32 SLOT = MAX_BLOCK_WORDS + 2;  // + 2 spare words for the bit reader
    static const u32 WORDS = G * SLOT;
    u32 words[WORDS];
    u32 bs[G + 1];
    // Per block of the group (written and read by the warp that decodes it): word offset (in
    // words[]) and bit width of its 2m miniblocks, its first word, its run count (0: the block
    // failed a check), and its run ends.
    u32 mb_word[G][MAX_MINIBLOCKS];
    u32 mb_bw[G][MAX_MINIBLOCKS];
    u32 first_word[G];
    u32 runs[G];
    u32 identity[G];  // nonzero: every run has length 1, and this is the block's value count
    u16 run_end[G][MAX_RUNS];
};

struct RforGroup {
    ChunkLayout L;
    u32 k0;      // first block (= tile) of the group inside the chunk
    u32 blocks;  // blocks in the group
    u32 origin;  // contiguous layout: data-area word held by words[0]; ~0u: slot layout
};

// Parses and checks block `b` of a loaded group: one warp. Lane l < m handles value
// miniblock l, lane m <= l < 2m run-length miniblock l - m; a warp-wide scan of the miniblock
// sizes gives their word offsets. Leaves s.runs[b] = 0 when the block fails a check.
template <int LANE, int G>
__device__ __forceinline__ void rfor_block_meta(RforGroupStorage<LANE, G>& s, const RforGroup& q, u32 b, u64* status) {
    typedef RforGroupStorage<LANE, G> S;
    const u32 RW = S::RW;
    const u32 l = threadIdx.x & 31;
    const u32 k = q.k0 + b;
    u32 runs = 0;
    if (b < q.blocks) {
        const u32 b0 = s.bs[b], b1 = s.bs[b + 1];
        if (b0 <= b1 && b1 <= q.L.data_len) {
            const u32 len = b1 - b0;
            const u32* blk = q.origin != ~0u ? s.words + (b0 - q.origin) : s.words + b * S::SLOT;
            const u32 base = (u32)(blk - s.words);
            u32 code = 0, detail = 0;
            const u32 r = len >= RW + 1 ? blk[RW] & 0xFFFFu : 0u;
            const u32 lref = len >= RW + 1 ? blk[RW] >> 16 : 0u;
            if (len < RW + 1) {
                code = TS_ST_TRUNCATED;
                detail = RW + 1;
            } else if (r < 1 || r > S::MAX_RUNS) {
                code = TS_ST_RUN_COUNT;
                detail = r;
            } else if (lref < 1 || lref > TS_RFOR_MAX_LENGTH) {
                code = TS_ST_LENGTH_REF;
                detail = lref;
            } else {
                const u32 m = (r + 31) / 32;
                const u32 bw_words = (2 * m + 3) / 4;
                if (RW + 1 + bw_words > len) {
                    code = TS_ST_TRUNCATED;
                    detail = RW + 1 + bw_words;
                } else {
                    const bool active = l < 2 * m;
                    const u32 bw = active ? (blk[RW + 1 + l / 4] >> (8 * (l & 3))) & 0xFF : 0u;
                    const bool is_len = l >= m;
                    const u32 mb = is_len ? l - m : l;
                    const u32 entries = mb == m - 1 ? r - 32 * (m - 1) : 32u;
                    const bool too_wide = active && bw > (is_len ? (u32)TS_RFOR_MAX_LENGTH_BITS : (u32)LANE);
                    const u32 wide = __ballot_sync(0xFFFFFFFFu, too_wide);
                    const u32 words = active && !wide ? ts_miniblock_words(entries, bw) : 0u;
                    const u32 incl = warp_inclusive_sum(words);
                    const u32 total = __shfl_sync(0xFFFFFFFFu, incl, 31);
                    const u32 first = RW + 1 + bw_words;
                    s.mb_word[b][l] = base + first + incl - words;
                    s.mb_bw[b][l] = bw;
                    if (l == 0) s.first_word[b] = base;
                    if (wide) {
                        const u32 bad = __ffs(wide) - 1;
                        const u32 bad_bw = __shfl_sync(0xFFFFFFFFu, bw, bad);
                        code = TS_ST_BIT_WIDTH;
                        detail = (bad << 8) | bad_bw;
                    } else if (first + total > len) {
                        code = TS_ST_TRUNCATED;
                        detail = first + total;
                    }
                }
            }
            if (code && l == 0) ts_report(status, TS_CLASS_BLOCK, k, code, detail);
            runs = code ? 0u : r;
        }
    }
    if (l == 0) s.runs[b] = runs;
    __syncwarp();
}

// Loads group `group` (blocks G*group .. G*group + G - 1) of RFOR chunk `c` into `s`.
template <int LANE, int G>
__device__ __forceinline__ RforGroup LoadRBitPackGroup(const u32* __restrict__ g, const ChunkDesc& c, u32 group,
                                                       RforGroupStorage<LANE, G>& s, u64* status) {
    typedef RforGroupStorage<LANE, G> S;
    const u32 t = threadIdx.x;
    RforGroup q;
    q.L = ts_chunk_layout(c, TS_RFOR_BLOCK_VALUES);
    q.k0 = group * G;
    q.blocks = ts_min(G, q.L.block_count - q.k0);
    const u32 data_len = q.L.data_len;

    __syncthreads();  // the previous group's readers of s are done
    if (t <= q.blocks) s.bs[t] = __ldg(&g[q.L.block_starts + q.k0 + t]);
    __syncthreads();
    bool entry_ok = true;
    if (t <= q.blocks) {
        const u32 e = s.bs[t];
        entry_ok = e <= data_len && (t == 0 || e >= s.bs[t - 1]);
        if (!entry_ok && (t > 0 || q.k0 == 0)) ts_report(status, TS_CLASS_BLOCK_STARTS, q.k0 + t, TS_ST_BLOCK_START, e);
    }
    const u32 start = s.bs[0];
    const u32 span = s.bs[q.blocks] - start;
    const bool contiguous = __syncthreads_and(entry_ok) && span + 2 <= S::WORDS;
    if (contiguous) {
        q.origin = start;
        for (u32 i = t; i < span; i += TS_THREADS) ts_cp_async4(&s.words[i], &g[q.L.data + start + i]);
    } else {
        q.origin = ~0u;
        for (u32 i = t; i < S::WORDS; i += TS_THREADS) {
            const u32 j = i / S::SLOT;
            const u32 off = i - j * S::SLOT;
            if (j < q.blocks) {
                const u32 b0 = s.bs[j], b1 = s.bs[j + 1];
                if (b0 <= b1 && b1 <= data_len && off < ts_min(b1 - b0, S::MAX_BLOCK_WORDS))
                    ts_cp_async4(&s.words[i], &g[q.L.data + b0 + off]);
            }
        }
    }
    ts_cp_async_wait();
    __syncthreads();
    return q;
}

// Step 2 for block `b` of a loaded group, by one warp: run ends into s.run_end[b]. Returns the
// run count, or 0 when the block is corrupt (reported).
template <int LANE, int G>
__device__ __forceinline__ u32 rfor_run_ends(RforGroupStorage<LANE, G>& s, const RforGroup& q, const ChunkDesc& c, u32 b,
                                             u64* status) {
    const u32 RW = RforGroupStorage<LANE, G>::RW;
    const u32 l = threadIdx.x & 31;
    const u32 k = q.k0 + b;
    const u32 r = s.runs[b];
    if (r == 0) return 0;  // uniform across the warp
    const u32 count = ts_min(TS_RFOR_BLOCK_VALUES, c.total_count - k * TS_RFOR_BLOCK_VALUES);
    const u32 m = (r + 31) / 32;
    const u32 lref = s.words[s.first_word[b] + RW] >> 16;
    // Data without runs (RFOR chosen for a column that has none, or a block of distinct values):
    // r equals the value count, length_reference is 1 and every run-length miniblock has bit
    // width 0, so every length is exactly 1 and their sum is the count: nothing to check, no run
    // ends to build, and position p is run p (rfor_expand's identity case).
    const u32 lbw_l = l < m ? s.mb_bw[b][m + l] : 0u;
    if (r == count && lref == 1 && __ballot_sync(0xFFFFFFFFu, lbw_l != 0) == 0) {
        if (l == 0) s.identity[b] = count;
        __syncwarp();
        return r;
    }
    // Row q = entries 32q .. 32q+31 = run-length miniblock q, lane l taking entry 32q + l: one
    // warp scan per row, so a block of few runs (RFOR's case) costs one short scan.
    u32 carry = 0;
    bool bad = false;
    for (u32 q = 0; q < m; ++q) {
        const u32 j = 32 * q + l;
        const u32 lbw = s.mb_bw[b][m + q];
        u32 len = 0;
        if (j < r) {
            len = lref + ts_extract32(s.words, s.mb_word[b][m + q] * 32 + l * lbw, lbw);
            if (len < 1 || len > TS_RFOR_MAX_LENGTH) {
                // Entry index in the detail, so the first bad entry wins the atomicMin.
                ts_report(status, TS_CLASS_BLOCK, k, TS_ST_RUN_LENGTH, (j << 17) | (len & 0x1FFFFu));
                bad = true;
                len = 0;
            }
        }
        const u32 incl = warp_inclusive_sum(len);
        if (j < r) s.run_end[b][j] = (u16)ts_min(carry + incl, 0xFFFFu);
        carry += __shfl_sync(0xFFFFFFFFu, incl, 31);
    }
    // The lengths must sum to the block's value count; a run-length error, if any, sorts first
    // in the status key (the CPU checks lengths before their sum).
    bad = __any_sync(0xFFFFFFFFu, bad);
    if (bad || carry != count) {
        if (!bad && l == 0) ts_report(status, TS_CLASS_BLOCK, k, TS_ST_RUN_SUM, carry);
        return 0;
    }
    // Valid lengths (each >= 1) that sum to r values are all 1.
    if (l == 0) s.identity[b] = r == count ? count : 0u;
    __syncwarp();
    return r;
}

// Step 3: values at positions p .. p+3 of block `b` (r runs, run ends ready).
template <int LANE, int G>
__device__ __forceinline__ void rfor_expand(const RforGroupStorage<LANE, G>& s, u32 b, u32 r, u32 p,
                                            typename Lane<LANE>::T (&items)[TS_ITEMS]) {
    typedef typename Lane<LANE>::T T;
    const u32 RW = RforGroupStorage<LANE, G>::RW;
    const T vref = ts_read_lane<LANE>(s.words + s.first_word[b]);
    const u32 count = s.identity[b];
    if (count) {
        // Position p is run p; p .. p+3 lie in one value miniblock (p is a multiple of 4).
        // Positions at or past the count (the chunk's last, partial block) read nothing: the
        // last miniblock stores only its entries' bits.
        const u32 mq = p >> 5;
        const u32 vbw = s.mb_bw[b][mq];
        const u32 bit = s.mb_word[b][mq] * 32 + (p & 31) * vbw;
#pragma unroll
        for (u32 i = 0; i < TS_ITEMS; ++i)
            items[i] = p + i < count ? (T)(vref + ts_extract<LANE>(s.words, bit + i * vbw, vbw)) : (T)0;
        return;
    }
    const u16* run_end = s.run_end[b];
    // Every run holds at least one value, so position p lies in a run j with
    // p - (count - r) <= j <= p (count = run_end[r - 1], checked): the search spans
    // min(r, count - r + 1) runs, one or two steps on data with few repeats, not log2(512).
    const u32 extra = run_end[r - 1] - r;
    u32 hi = ts_min(p, r - 1);
    u32 lo = ts_min(p > extra ? p - extra : 0u, hi);
    while (lo < hi) {
        const u32 mid = (lo + hi) >> 1;
        if (run_end[mid] > p) hi = mid; else lo = mid + 1;
    }
    u32 run = lo, have = ~0u;
    T v = 0;
#pragma unroll
    for (u32 i = 0; i < TS_ITEMS; ++i) {
        while (run + 1 < r && run_end[run] <= p + i) ++run;
        if (run != have) {
            const u32 mq = run >> 5;
            const u32 vbw = s.mb_bw[b][mq];
            v = (T)(vref + ts_extract<LANE>(s.words, s.mb_word[b][mq] * 32 + (run & 31) * vbw, vbw));
            have = run;
        }
        items[i] = v;
    }
    (void)RW;
}

// Decodes block `b` (< q.blocks) of a loaded group with one warp, up to its run ends: returns
// the run count r, or 0 when the block is corrupt (reported). Every lane of the warp must call
// it; no other warp takes part. Then LoadRBitPackStripe gives the values.
template <int LANE, int G>
__device__ __forceinline__ u32 LoadRBitPackWarp(RforGroupStorage<LANE, G>& s, const RforGroup& q, const ChunkDesc& c,
                                                u32 b, u64* status) {
    rfor_block_meta<LANE, G>(s, q, b, status);
    return rfor_run_ends<LANE, G>(s, q, c, b, status);
}

// Stripe k (0..3) of block `b` after LoadRBitPackWarp returned r > 0: lane l gets the values at
// positions 128k + 4l .. 128k + 4l + 3 (a warp's stripe is 512 contiguous output bytes).
template <int LANE, int G>
__device__ __forceinline__ void LoadRBitPackStripe(const RforGroupStorage<LANE, G>& s, u32 b, u32 r, u32 k,
                                                   typename Lane<LANE>::T (&items)[TS_ITEMS]) {
    rfor_expand<LANE, G>(s, b, r, 128 * k + TS_ITEMS * (threadIdx.x & 31), items);
}

// The paper's shape: RFOR block `tile` of chunk `c` decoded by the whole thread block, thread
// t getting values 4t .. 4t+3.
template <int LANE>
__device__ __forceinline__ bool LoadRBitPack(const u32* __restrict__ g, const ChunkDesc& c, u32 tile,
                                             RforGroupStorage<LANE, 1>& s, typename Lane<LANE>::T (&items)[TS_ITEMS],
                                             u64* status) {
    const RforGroup q = LoadRBitPackGroup<LANE, 1>(g, c, tile, s, status);
    if (threadIdx.x < 32) {
        rfor_block_meta<LANE, 1>(s, q, 0, status);
        const u32 r = rfor_run_ends<LANE, 1>(s, q, c, 0, status);
        if (threadIdx.x == 0) s.runs[0] = r;
    }
    __syncthreads();
    const u32 r = s.runs[0];
    if (r == 0) {
#pragma unroll
        for (u32 i = 0; i < TS_ITEMS; ++i) items[i] = 0;
        return false;
    }
    rfor_expand<LANE, 1>(s, 0, r, TS_ITEMS * threadIdx.x, items);
    return true;
}

#endif
