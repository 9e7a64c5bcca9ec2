// decompress.cuh (part of bitmap.cu): Algorithm 5, output-partitioned, and the tile starts it
// reads.
#ifndef TESSERA_BITMAP_DECOMPRESS_CUH
#define TESSERA_BITMAP_DECOMPRESS_CUH
#include "../include/common.cuh"
#include "../primitives/scan.cuh"
#include "wah.cuh"
#include "compress.cuh"

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
// again for every group; no change in time measurable on the H100, where the walk is not what
// bounds the decompression).
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

#endif
