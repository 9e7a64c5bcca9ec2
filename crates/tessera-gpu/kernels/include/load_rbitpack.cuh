// load_rbitpack.cuh: LoadRBitPack, the GPU-RFOR loader (rfor.md, paper section 6). A tile is
// one RFOR block of up to 512 values.
//
// Blocks are loaded a group of G at a time (LoadRBitPackGroup: block_starts checked, the
// group's words copied to shared memory with cp.async, contiguously or one slot per block).
// Then each block is decoded by ONE WARP, with no thread-block barrier (LoadRBitPackWarp, then
// LoadRBitPackStripe for each quarter of the output, in order):
//   1. the warp parses the run word (1 <= r <= 512, 1 <= length_reference <= 512) and the 2m
//      miniblock bit widths (values <= lane, run lengths <= 10), scans the miniblock sizes into
//      word offsets and checks that they fit the block's range (rfor_block_meta);
//   2. the warp unpacks the run lengths 128 at a time (lane l: entries 4l .. 4l + 3 of the
//      128, one 64-bit window of one miniblock), checks each (1..=512), and a warp-wide scan
//      per 128 gives every run's end, whose total must be the block's value count; each end
//      before the count is a run start, marked by a 1 byte in the block's `start_flags` (512
//      bytes, one per position: rfor_run_starts). Then the popcounts of the flag words of all
//      four stripes, packed as four bytes, take one more warp scan (LoadRBitPackWarp);
//   3. lane l takes output positions 128k + 4l .. 128k + 4l + 3 (k = 0..3, so every store of
//      the warp is 512 contiguous bytes). Those four flag bytes are one word: the packed scan
//      (plus the stripes before) gives the run of the position before the lane's first, and
//      a masked popcount of the word each position's run (rfor_expand_quad); each run's value
//      is unpacked straight from the packed words, without a branch. No search, no loop over
//      runs.
// A block whose runs are all of length 1 (RFOR on data without repeats) skips the flags: its
// position p is run p.
// LoadRBitPack keeps the paper's shape (one block per thread block, thread t holding values
// 4t .. 4t+3): warp 0 does steps 1-2, one barrier, every thread does step 3, each warp adding
// the flags of the warps before it.
// Every read stays inside the block's checked range or the two spare words after it; a run index
// never passes r - 1 (there are r - 1 flags at most). Failures are reported with ts_report; the
// functions then return false.
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
    // Per block: byte p is 1 iff a run other than the first starts at position p (16-byte
    // aligned: cleared with one 16-byte store per lane).
    __align__(16) u32 start_flags[G][TS_RFOR_BLOCK_VALUES / 4];
    u32 words[WORDS];
    u32 bs[G + 1];
    // Per block of the group (written and read by the warp that decodes it): the first bit (in
    // words[]) and the bit width of its 2m miniblocks, its first word, its run count (0: the
    // block failed a check).
    u32 mb_bit[G][MAX_MINIBLOCKS];
    u32 mb_bw[G][MAX_MINIBLOCKS];
    u32 first_word[G];
    u32 runs[G];
    u32 identity[G];  // nonzero: every run has length 1, and this is the block's value count
};

// What LoadRBitPackWarp leaves a warp for its block's four stripes: the run count (0: the block
// is corrupt) and, per stripe k, in byte k, the run starts before the lane's positions inside
// the stripe (excl4) and in the whole stripe (tot4); carry counts the stripes done. A byte
// holds at most 4 * 32 = 128 starts, so one warp scan of the packed bytes serves all four.
struct RforRuns {
    u32 r;
    u32 excl4;
    u32 tot4;
    u32 carry;
};

struct RforGroup {
    ChunkLayout L;
    u32 k0;      // first block (= tile) of the group inside the chunk
    u32 blocks;  // blocks in the group
    u32 origin;  // contiguous layout: data-area word held by words[0]; ~0u: slot layout
};

// The bw low bits (0 <= bw <= 32) of a 32-bit word, without a branch: a clamped funnel shift of
// ones (bw = 0: none, bw = 32: all).
__device__ __forceinline__ u32 rfor_mask(u32 bw) { return __funnelshift_lc(0xFFFFFFFFu, 0u, bw); }

// ts_extract without its bw == 0 branch (lane 32): reads w[bit/32] and w[bit/32 + 1], which a
// miniblock's bit offset always has inside words[] (a checked block ends at least two words
// before the array's end), and masks to bw bits (bw = 0: 0).
template <int LANE> __device__ __forceinline__ typename Lane<LANE>::T rfor_value(const u32* w, u32 bit, u32 bw);
template <> __device__ __forceinline__ u32 rfor_value<32>(const u32* w, u32 bit, u32 bw) {
    const u32 i = bit >> 5;
    return __funnelshift_r(w[i], w[i + 1], bit) & rfor_mask(bw);
}
template <> __device__ __forceinline__ u64 rfor_value<64>(const u32* w, u32 bit, u32 bw) {
    return ts_extract64(w, bit, bw);
}

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
                    s.mb_bit[b][l] = (base + first + incl - words) * 32;
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

// Step 2 for block `b` of a loaded group, by one warp: run starts into s.start_flags[b]. Returns
// the run count, or 0 when the block is corrupt (reported).
template <int LANE, int G>
__device__ __forceinline__ u32 rfor_run_starts(RforGroupStorage<LANE, G>& s, const RforGroup& q, const ChunkDesc& c, u32 b,
                                               u64* status) {
    typedef RforGroupStorage<LANE, G> S;
    const u32 RW = S::RW;
    const u32 l = threadIdx.x & 31;
    const u32 k = q.k0 + b;
    const u32 r = s.runs[b];
    if (r == 0) return 0;  // uniform across the warp
    const u32 count = ts_min(TS_RFOR_BLOCK_VALUES, c.total_count - k * TS_RFOR_BLOCK_VALUES);
    const u32 m = (r + 31) / 32;
    const u32 lref = s.words[s.first_word[b] + RW] >> 16;
    // Data without runs (RFOR chosen for a column that has none, or a block of distinct values):
    // r equals the value count, length_reference is 1 and every run-length miniblock has bit
    // width 0, so every length is exactly 1 and their sum is the count: nothing to check, no
    // flags to build, and position p is run p (rfor_expand_quad's identity case).
    const u32 lbw_l = l < m ? s.mb_bw[b][m + l] : 0u;
    if (r == count && lref == 1 && __ballot_sync(0xFFFFFFFFu, lbw_l != 0) == 0) {
        if (l == 0) s.identity[b] = count;
        __syncwarp();
        return r;
    }
    reinterpret_cast<uint4*>(s.start_flags[b])[l] = make_uint4(0u, 0u, 0u, 0u);
    __syncwarp();
    u8* flag = reinterpret_cast<u8*>(s.start_flags[b]);
    // Pass g takes entries 128g .. 128g + 127, lane l the four entries j0 = 128g + 4l .. j0 + 3
    // (one run-length miniblock: 32 entries are 8 lanes): one 64-bit window of the packed
    // lengths gives all four (4 * 10 bits at most), and one warp scan per 128 runs places them.
    u32 carry = 0;
    bool bad = false;
    for (u32 j0 = 4 * l; j0 - 4 * l < r; j0 += 128) {
        u32 len[4] = {0u, 0u, 0u, 0u};
        if (j0 < r) {
            const u32 lbw = s.mb_bw[b][m + (j0 >> 5)];
            const u32 bit = s.mb_bit[b][m + (j0 >> 5)] + (j0 & 31) * lbw;
            // Entry j0 starts inside the block, which ends at least two words before the
            // array's end; only a zero-width miniblock at the block's very end can start on
            // that last word, and its reads are masked off: the clamp keeps them in words[].
            const u32 i = ts_min(bit >> 5, S::WORDS - 3);
            const u32 w1 = s.words[i + 1];
            const u32 lo = __funnelshift_r(s.words[i], w1, bit);
            const u32 hi = __funnelshift_r(w1, s.words[i + 2], bit);
            const u32 mask = rfor_mask(lbw);
            u32 most = 0;
#pragma unroll
            for (u32 x = 0; x < 4; ++x) {
                // x * lbw <= 30: inside the 64-bit window, one funnel shift.
                const u32 f = __funnelshift_r(lo, hi, x * lbw) & mask;
                len[x] = j0 + x < r ? lref + f : 0u;
                most = ts_max(most, len[x]);
            }
            // lref >= 1, so every length is >= 1; only the upper bound can fail.
            if (most > TS_RFOR_MAX_LENGTH) {
#pragma unroll
                for (u32 x = 0; x < 4; ++x) {
                    if (len[x] > TS_RFOR_MAX_LENGTH && !bad) {
                        // Entry index in the detail, so the first bad entry wins the atomicMin.
                        ts_report(status, TS_CLASS_BLOCK, k, TS_ST_RUN_LENGTH, ((j0 + x) << 17) | (len[x] & 0x1FFFFu));
                        bad = true;
                    }
                    len[x] = 0;
                }
            }
        }
        const u32 total = len[0] + len[1] + len[2] + len[3];
        const u32 incl = warp_inclusive_sum(total);
        // Run j ends where run j + 1 starts; an end at or past the count starts nothing (the
        // last run's, or a corrupt block's, which the sum check below rejects).
        u32 end = carry + incl - total;
#pragma unroll
        for (u32 x = 0; x < 4; ++x) {
            end += len[x];
            if (len[x] != 0 && end < count) flag[end] = 1;
        }
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

// Step 3: values at positions p .. p+3 of block `b` (p a multiple of 4), whose start flags are
// the word `fw` (s.start_flags[b][p / 4]), with `before` runs starting in 1 .. p - 1 (so
// position p - 1 is in run `before`). Identity blocks ignore fw and before.
template <int LANE, int G>
__device__ __forceinline__ void rfor_expand_quad(const RforGroupStorage<LANE, G>& s, u32 b, u32 p, u32 fw, u32 before,
                                                 typename Lane<LANE>::T (&items)[TS_ITEMS]) {
    typedef typename Lane<LANE>::T T;
    const T vref = ts_read_lane<LANE>(s.words + s.first_word[b]);
    const u32 count = s.identity[b];
    if (count) {
        // Position p is run p; p .. p+3 lie in one value miniblock (p is a multiple of 4).
        // Positions at or past the count (the chunk's last, partial block) read nothing: the
        // last miniblock stores only its entries' bits.
        const u32 vbw = s.mb_bw[b][p >> 5];
        const u32 bit = s.mb_bit[b][p >> 5] + (p & 31) * vbw;
#pragma unroll
        for (u32 i = 0; i < TS_ITEMS; ++i)
            items[i] = p + i < count ? (T)(vref + rfor_value<LANE>(s.words, bit + i * vbw, vbw)) : (T)0;
        return;
    }
    // Position p + i is in run `before` plus the flags of p .. p + i (byte i of fw and below).
    // At most r - 1 flags exist, so every run index is below r: positions past the count (a
    // partial block) take the last run, inside the checked miniblocks.
    // Long runs (few flags): when no lane of the warp has a run start among its last three
    // positions, each lane's four values are one run's, unpacked once (warp-uniform branch).
    if (__all_sync(0xFFFFFFFFu, (fw >> 8) == 0u)) {
        const u32 run = before + (fw & 0xFFu);
        const u32 vbw = s.mb_bw[b][run >> 5];
        const T v = (T)(vref + rfor_value<LANE>(s.words, s.mb_bit[b][run >> 5] + (run & 31) * vbw, vbw));
#pragma unroll
        for (u32 i = 0; i < TS_ITEMS; ++i) items[i] = v;
        return;
    }
#pragma unroll
    for (u32 i = 0; i < TS_ITEMS; ++i) {
        const u32 run = before + __popc(fw & (0xFFFFFFFFu >> (24 - 8 * i)));
        const u32 vbw = s.mb_bw[b][run >> 5];
        items[i] = (T)(vref + rfor_value<LANE>(s.words, s.mb_bit[b][run >> 5] + (run & 31) * vbw, vbw));
    }
}

// Decodes block `b` (< q.blocks) of a loaded group with one warp, up to its run starts: the
// returned r is the run count, or 0 when the block is corrupt (reported). Every lane of the warp
// must call it; no other warp takes part. Then LoadRBitPackStripe gives the values.
template <int LANE, int G>
__device__ __forceinline__ RforRuns LoadRBitPackWarp(RforGroupStorage<LANE, G>& s, const RforGroup& q, const ChunkDesc& c,
                                                     u32 b, u64* status) {
    rfor_block_meta<LANE, G>(s, q, b, status);
    RforRuns w;
    w.r = rfor_run_starts<LANE, G>(s, q, c, b, status);
    w.carry = 0;
    u32 cnt4 = 0;
    // One run (a block of one value): no flags, nothing to count.
    if (w.r > 1 && s.identity[b] == 0) {
        const u32 l = threadIdx.x & 31;
#pragma unroll
        for (u32 k = 0; k < 4; ++k) cnt4 |= __popc(s.start_flags[b][32 * k + l]) << (8 * k);
    }
    const u32 incl4 = warp_inclusive_sum(cnt4);
    w.excl4 = incl4 - cnt4;
    w.tot4 = __shfl_sync(0xFFFFFFFFu, incl4, 31);
    return w;
}

// Stripe k (0..3) of block `b` after LoadRBitPackWarp returned `w` with w.r > 0: lane l gets the
// values at positions 128k + 4l .. 128k + 4l + 3 (a warp's stripe is 512 contiguous output
// bytes). The whole warp calls it for k = 0, 1, 2, 3 in order (w.carry follows the stripes).
template <int LANE, int G>
__device__ __forceinline__ void LoadRBitPackStripe(const RforGroupStorage<LANE, G>& s, u32 b, u32 k, RforRuns& w,
                                                   typename Lane<LANE>::T (&items)[TS_ITEMS]) {
    const u32 l = threadIdx.x & 31;
    const u32 fw = s.identity[b] || w.r == 1 ? 0u : s.start_flags[b][32 * k + l];
    rfor_expand_quad<LANE, G>(s, b, 128 * k + TS_ITEMS * l, fw, w.carry + ((w.excl4 >> (8 * k)) & 0xFFu), items);
    w.carry += (w.tot4 >> (8 * k)) & 0xFFu;
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
        const u32 r = rfor_run_starts<LANE, 1>(s, q, c, 0, status);
        if (threadIdx.x == 0) s.runs[0] = r;
    }
    __syncthreads();
    const u32 r = s.runs[0];
    if (r == 0) {
#pragma unroll
        for (u32 i = 0; i < TS_ITEMS; ++i) items[i] = 0;
        return false;
    }
    // Thread t's flags are word t; the run starts before it: the flags of the warps before
    // this one (lane l adding words l, l + 32, ... below the warp's first), then the warp scan.
    const u32 t = threadIdx.x, l = t & 31, w0 = t & ~31u;
    const bool flags = s.identity[0] == 0;
    u32 prior = 0;
    for (u32 x = l; x < w0; x += 32) prior += flags ? __popc(s.start_flags[0][x]) : 0u;
    prior = __shfl_sync(0xFFFFFFFFu, warp_inclusive_sum(prior), 31);
    const u32 fw = flags ? s.start_flags[0][t] : 0u;
    const u32 cnt = __popc(fw);
    const u32 incl = warp_inclusive_sum(cnt);
    rfor_expand_quad<LANE, 1>(s, 0, TS_ITEMS * t, fw, prior + incl - cnt, items);
    return true;
}

#endif
