// load_rbitpack.cuh: LoadRBitPack, the GPU-RFOR tile loader (rfor.md, paper section 6). A tile
// is one RFOR block of up to 512 values; thread t gets values 4t .. 4t+3 as lane words.
//
//   1. every thread reads block_starts[k] and [k+1] (L1 broadcasts) and checks the range;
//   2. the thread block copies the block's words (clamped to the largest legal block) into
//      shared memory, coalesced;
//   3. warp 0 parses the run word (1 <= r <= 512, 1 <= length_reference <= 512) and the 2m
//      miniblock bit widths (values <= lane, run lengths <= 10), scans the miniblock sizes into word offsets and checks that they fit the block;
//   4. each thread unpacks up to 4 (value, run length) pairs; the block-wide inclusive scan of
//      the run lengths gives every run's end; their total must equal the block's value count;
//   5. each thread finds the run of its first output position by binary search over the run
//      ends in shared memory, then walks forward for the next three.
// Every read stays inside the block's checked range or the two spare words after it. Failures
// are reported with ts_report and make the loader return false for every thread.
#ifndef TESSERA_LOAD_RBITPACK_CUH
#define TESSERA_LOAD_RBITPACK_CUH

#include "common.cuh"
#include "bitunpack.cuh"
#include "block_scan.cuh"

template <int LANE> struct RforTileStorage {
    typedef typename Lane<LANE>::T T;
    static const u32 RW = Lane<LANE>::REF_WORDS;
    static const u32 MAX_RUNS = TS_RFOR_BLOCK_VALUES;
    static const u32 MAX_MINIBLOCKS = 2 * TS_RFOR_MINIBLOCKS;
    // rfor.md: value_reference, run word, ceil(2m/4) bit-width words, 16 value miniblocks of at
    // most `lane` words and 16 run-length miniblocks of at most 10 words.
    static const u32 MAX_BLOCK_WORDS = RW + 1 + MAX_MINIBLOCKS / 4 + TS_RFOR_MINIBLOCKS * LANE +
                                       TS_RFOR_MINIBLOCKS * TS_RFOR_MAX_LENGTH_BITS;
    u32 words[MAX_BLOCK_WORDS + 2];  // + 2 spare words for the bit reader
    T values[MAX_RUNS];
    u32 run_end[MAX_RUNS];
    u32 mb_word[MAX_MINIBLOCKS];
    u32 mb_bw[MAX_MINIBLOCKS];
    u32 ok;
    BlockScanStorage<u32> scan;
};

template <int LANE>
__device__ __forceinline__ bool LoadRBitPack(const u32* __restrict__ g, const ChunkDesc& c, u32 tile,
                                             RforTileStorage<LANE>& s, typename Lane<LANE>::T (&items)[TS_ITEMS],
                                             u64* status) {
    typedef typename Lane<LANE>::T T;
    typedef RforTileStorage<LANE> S;
    const u32 RW = S::RW;
    const u32 t = threadIdx.x;
    const ChunkLayout L = ts_chunk_layout(c, TS_RFOR_BLOCK_VALUES);
    const u32 k = tile;
    const u32 count = ts_min(TS_RFOR_BLOCK_VALUES, c.total_count - k * TS_RFOR_BLOCK_VALUES);

    // 1. the block's range.
    const u32 b0 = __ldg(&g[L.block_starts + k]);
    const u32 b1 = __ldg(&g[L.block_starts + k + 1]);
    const bool range_ok = b0 <= b1 && b1 <= L.data_len;
    if (t == 0) {
        if (k == 0 && b0 > L.data_len) ts_report(status, TS_CLASS_BLOCK_STARTS, 0, TS_ST_BLOCK_START, b0);
        else if (b1 < b0 || b1 > L.data_len) ts_report(status, TS_CLASS_BLOCK_STARTS, k + 1, TS_ST_BLOCK_START, b1);
    }
    const u32 len = range_ok ? ts_min(b1 - b0, S::MAX_BLOCK_WORDS) : 0u;

    // 2. the block's words.
    __syncthreads();  // the previous tile's readers of s are done
    for (u32 i = t; i < len; i += TS_THREADS) s.words[i] = __ldg(&g[L.data + b0 + i]);
    if (t == 0) s.ok = 0;
    __syncthreads();

    // 3. metadata, by warp 0.
    u32 r = 0;
    bool ok = false;
    if (range_ok && len >= RW + 1) {
        r = s.words[RW] & 0xFFFFu;
        ok = true;
    }
    if (t < 32 && range_ok) {
        u32 code = 0, detail = 0;
        if (len < RW + 1) {
            code = TS_ST_TRUNCATED;
            detail = RW + 1;
        } else if (r < 1 || r > S::MAX_RUNS) {
            code = TS_ST_RUN_COUNT;
            detail = r;
        } else if ((s.words[RW] >> 16) < 1 || (s.words[RW] >> 16) > TS_RFOR_MAX_LENGTH) {
            code = TS_ST_LENGTH_REF;
            detail = s.words[RW] >> 16;
        } else {
            const u32 m = (r + 31) / 32;
            const u32 bw_words = (2 * m + 3) / 4;
            if (RW + 1 + bw_words > len) {
                code = TS_ST_TRUNCATED;
                detail = RW + 1 + bw_words;
            } else {
                // lane l < m: value miniblock l; m <= l < 2m: run-length miniblock l - m.
                const u32 l = t;
                const bool active = l < 2 * m;
                const u32 bw = active ? (s.words[RW + 1 + l / 4] >> (8 * (l & 3))) & 0xFF : 0u;
                const bool is_len = l >= m;
                const u32 mb = is_len ? l - m : l;
                const u32 entries = mb == m - 1 ? r - 32 * (m - 1) : 32u;
                const bool too_wide = active && bw > (is_len ? (u32)TS_RFOR_MAX_LENGTH_BITS : (u32)LANE);
                const u32 wide = __ballot_sync(0xFFFFFFFFu, too_wide);
                const u32 words = active && !wide ? ts_miniblock_words(entries, bw) : 0u;
                const u32 incl = warp_inclusive_sum(words);
                const u32 total = __shfl_sync(0xFFFFFFFFu, incl, 31);
                const u32 first = RW + 1 + bw_words;
                if (active) {
                    s.mb_word[l] = first + incl - words;
                    s.mb_bw[l] = bw;
                }
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
        if (t == 0) {
            if (code) ts_report(status, TS_CLASS_BLOCK, k, code, detail);
            else s.ok = 1;
        }
    }
    __syncthreads();
    ok = ok && s.ok;

    // 4. values and run lengths of entries 4t .. 4t+3 (all in miniblock t / 8).
    u32 lengths[TS_ITEMS];
    const u32 j0 = t * TS_ITEMS;
    bool lengths_ok = true;
    if (ok) {
        const u32 m = (r + 31) / 32;
        const u32 q = t >> 3;
        const bool any = j0 < r;
        const u32 vbw = any ? s.mb_bw[q] : 0u, lbw = any ? s.mb_bw[m + q] : 0u;
        const u32 vbit = any ? s.mb_word[q] * 32 + (j0 & 31) * vbw : 0u;
        const u32 lbit = any ? s.mb_word[m + q] * 32 + (j0 & 31) * lbw : 0u;
        const T vref = ts_read_lane<LANE>(s.words);
        const u32 lref = s.words[RW] >> 16;
#pragma unroll
        for (u32 i = 0; i < TS_ITEMS; ++i) {
            if (j0 + i < r) {
                s.values[j0 + i] = (T)(vref + ts_extract<LANE>(s.words, vbit + i * vbw, vbw));
                const u32 len_i = lref + ts_extract32(s.words, lbit + i * lbw, lbw);
                if (len_i < 1 || len_i > TS_RFOR_MAX_LENGTH) {
                    // Entry index in the detail, so the first bad entry wins the atomicMin.
                    if (lengths_ok) ts_report(status, TS_CLASS_BLOCK, k, TS_ST_RUN_LENGTH, ((j0 + i) << 17) | (len_i & 0x1FFFFu));
                    lengths_ok = false;
                }
                lengths[i] = len_i;
            } else {
                lengths[i] = 0;
            }
        }
    } else {
#pragma unroll
        for (u32 i = 0; i < TS_ITEMS; ++i) lengths[i] = 0;
    }
    const bool all_lengths_ok = __syncthreads_and(lengths_ok);
    const u32 total = block_inclusive_sum(lengths, s.scan);
#pragma unroll
    for (u32 i = 0; i < TS_ITEMS; ++i) s.run_end[j0 + i] = lengths[i];
    if (ok && all_lengths_ok && total != count && t == 0) ts_report(status, TS_CLASS_BLOCK, k, TS_ST_RUN_SUM, total);
    ok = ok && all_lengths_ok && total == count;
    __syncthreads();

    // 5. expand: position p lies in the first run whose end exceeds p.
    if (ok) {
        u32 p = j0;
        u32 lo = 0, hi = r - 1;
        while (lo < hi) {
            const u32 mid = (lo + hi) >> 1;
            if (s.run_end[mid] > p) hi = mid; else lo = mid + 1;
        }
        u32 run = lo;
#pragma unroll
        for (u32 i = 0; i < TS_ITEMS; ++i) {
            while (run + 1 < r && s.run_end[run] <= p + i) ++run;
            items[i] = s.values[run];
        }
    } else {
#pragma unroll
        for (u32 i = 0; i < TS_ITEMS; ++i) items[i] = 0;
    }
    return ok;
}

#endif
