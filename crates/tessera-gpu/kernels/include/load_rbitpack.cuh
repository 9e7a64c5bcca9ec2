// load_rbitpack.cuh: LoadRBitPack, the GPU-RFOR tile loader (rfor.md, paper section 6). A tile
// is one RFOR block of up to 512 values; thread t gets values 4t .. 4t+3 as lane words.
//
// As for FOR, blocks are loaded a group of G at a time (LoadRBitPackGroup: block_starts
// checked, the group's words copied to shared memory with cp.async, contiguously or one slot
// per block), and one warp per block parses the run word (1 <= r <= 512, 1 <= length_reference
// <= 512) and the 2m miniblock bit widths (values <= lane, run lengths <= 10), scans the
// miniblock sizes into word offsets and checks that they fit the block's range. Then, per block
// (LoadRBitPackTile, two barriers in its scan and one after it):
//   1. each thread unpacks up to 4 (value, run length) pairs, values into shared memory;
//   2. the run lengths are checked, and their block-wide inclusive scan gives every run's end,
//      whose total must equal the block's value count;
//   3. each thread finds the run of its first output position by binary search over the run
//      ends, then walks forward for the next three.
// Every read stays inside the block's checked range or the two spare words after it. Failures
// are reported with ts_report and make the tile function return false for every thread.
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
    // Per block of the group, from LoadRBitPackGroup: word offset (in words[]) and bit width
    // of its 2m miniblocks, its run count (0: the block failed a check).
    u32 mb_word[G][MAX_MINIBLOCKS];
    u32 mb_bw[G][MAX_MINIBLOCKS];
    u32 runs[G];
    // Double-buffered by tile parity, so one tile's expansion may still read them while the
    // next tile's values are written.
    T values[2][MAX_RUNS];
    u16 run_end[2][MAX_RUNS];
    BlockScanStorage<u32> scan;
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

    // Metadata: warp w checks block w of the group (several blocks per warp when G > 4).
    for (u32 b = t >> 5; b < G; b += TS_THREADS / 32) rfor_block_meta<LANE, G>(s, q, b, status);
    __syncthreads();
    return q;
}

// RFOR block `tile` (0 .. q.blocks-1) of a loaded group: items[k] = lane value 4t + k.
template <int LANE, int G>
__device__ __forceinline__ bool LoadRBitPackTile(RforGroupStorage<LANE, G>& s, const RforGroup& q, const ChunkDesc& c,
                                                 u32 tile, typename Lane<LANE>::T (&items)[TS_ITEMS], u64* status) {
    typedef typename Lane<LANE>::T T;
    typedef RforGroupStorage<LANE, G> S;
    const u32 RW = S::RW;
    const u32 t = threadIdx.x;
    const u32 k = q.k0 + tile;
    const u32 count = ts_min(TS_RFOR_BLOCK_VALUES, c.total_count - k * TS_RFOR_BLOCK_VALUES);
    const u32 r = s.runs[tile];  // 0: the block failed a check (reported)
    const u32 buf = tile & 1;
    T* values = s.values[buf];
    u16* run_end = s.run_end[buf];

    // 1. values and run lengths of entries 4t .. 4t+3 (all in miniblock t / 8). An invalid run
    // length is reported and poisoned so that the lengths cannot sum to the block's count.
    u32 lengths[TS_ITEMS];
    const u32 j0 = t * TS_ITEMS;
    if (j0 < r) {
        const u32 m = (r + 31) / 32;
        const u32 mq = t >> 3;
        const u32 vbw = s.mb_bw[tile][mq], lbw = s.mb_bw[tile][m + mq];
        const u32 vbit = s.mb_word[tile][mq] * 32 + (j0 & 31) * vbw;
        const u32 lbit = s.mb_word[tile][m + mq] * 32 + (j0 & 31) * lbw;
        const u32 blk = s.mb_word[tile][0] - (RW + 1 + (2 * m + 3) / 4);  // the block's first word
        const T vref = ts_read_lane<LANE>(s.words + blk);
        const u32 lref = s.words[blk + RW] >> 16;
        bool reported = false;
#pragma unroll
        for (u32 i = 0; i < TS_ITEMS; ++i) {
            if (j0 + i < r) {
                values[j0 + i] = (T)(vref + ts_extract<LANE>(s.words, vbit + i * vbw, vbw));
                u32 len_i = lref + ts_extract32(s.words, lbit + i * lbw, lbw);
                if (len_i < 1 || len_i > TS_RFOR_MAX_LENGTH) {
                    // Entry index in the detail, so the first bad entry wins the atomicMin.
                    if (!reported)
                        ts_report(status, TS_CLASS_BLOCK, k, TS_ST_RUN_LENGTH, ((j0 + i) << 17) | (len_i & 0x1FFFFu));
                    reported = true;
                    len_i = 1u << 16;
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

    // 2. run ends. Their total must be the block's value count (a run-length error sorts
    // before the sum error in the status key, as the CPU checks lengths first).
    const u32 total = block_inclusive_sum(lengths, s.scan);
#pragma unroll
    for (u32 i = 0; i < TS_ITEMS; ++i) run_end[j0 + i] = (u16)ts_min(lengths[i], 0xFFFFu);
    const bool ok = r > 0 && total == count;
    if (r > 0 && total != count && t == 0) ts_report(status, TS_CLASS_BLOCK, k, TS_ST_RUN_SUM, total);
    __syncthreads();

    // 3. expand: position p lies in the first run whose end exceeds p.
    if (ok) {
        const u32 p = j0;
        u32 lo = 0, hi = r - 1;
        while (lo < hi) {
            const u32 mid = (lo + hi) >> 1;
            if (run_end[mid] > p) hi = mid; else lo = mid + 1;
        }
        u32 run = lo;
#pragma unroll
        for (u32 i = 0; i < TS_ITEMS; ++i) {
            while (run + 1 < r && run_end[run] <= p + i) ++run;
            items[i] = values[run];
        }
    } else {
#pragma unroll
        for (u32 i = 0; i < TS_ITEMS; ++i) items[i] = 0;
    }
    return ok;
}

// The paper's single-tile form: RFOR block `tile` of chunk `c`, loaded and expanded.
template <int LANE>
__device__ __forceinline__ bool LoadRBitPack(const u32* __restrict__ g, const ChunkDesc& c, u32 tile,
                                             RforGroupStorage<LANE, 1>& s, typename Lane<LANE>::T (&items)[TS_ITEMS],
                                             u64* status) {
    const RforGroup q = LoadRBitPackGroup<LANE, 1>(g, c, tile, s, status);
    return LoadRBitPackTile<LANE, 1>(s, q, c, 0, items, status);
}

#endif
