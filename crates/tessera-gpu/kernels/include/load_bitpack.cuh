// load_bitpack.cuh: LoadBitPack (GPU-FOR, for.md) and LoadDBitPack (GPU-DFOR, dfor.md), the
// paper's tile loaders (section 4.2 and 5.2): device functions any kernel can call to get one
// tile of 512 values in registers, thread t holding values 4t .. 4t+3 as lane words.
//
// How a tile is loaded (D = 4 blocks of 128 values):
//   1. every thread reads the tile's D + 1 block_starts (same addresses for all threads: L1
//      broadcasts) and checks them: non-decreasing, inside the data area;
//   2. the thread block copies each block's words, coalesced, into a fixed slot of shared
//      memory (at most ref_words + 1 + 4 * lane words: a block claiming more is clamped, the
//      checks below then see whether the block needs more than it has);
//   3. after one barrier, the warp of block j (threads 32j .. 32j+31) reads its bit_width word,
//      checks every bit_width <= lane and that the miniblocks fit in the block's range, and
//      computes its own miniblock's word offset with a byte-wise prefix sum (optimization 3 of
//      the paper, done per thread from one shared word, so no further barrier is needed);
//   4. each thread unpacks its 4 consecutive values from shared memory.
// DFOR then adds the block-wide inclusive scan of the deltas and the tile's first_value.
//
// Hostile input never makes a load leave the chunk's payload or a slot: block_starts are
// checked before any data word is read and a block whose metadata fails its checks is not
// unpacked. Failures are reported with ts_report; the loader returns false for the threads of a
// corrupt block (their items are 0). Every thread of the TS_THREADS-thread block must call the
// loaders together: they synchronize.
#ifndef TESSERA_LOAD_BITPACK_CUH
#define TESSERA_LOAD_BITPACK_CUH

#include "common.cuh"
#include "bitunpack.cuh"
#include "block_scan.cuh"

template <int LANE> struct ForTileStorage {
    typedef typename Lane<LANE>::T T;
    static const u32 RW = Lane<LANE>::REF_WORDS;
    // for.md: reference + bit_width word + 4 miniblocks of at most `lane` words.
    static const u32 MAX_BLOCK_WORDS = RW + 1 + TS_FOR_MINIBLOCKS * LANE;
    static const u32 SLOT = MAX_BLOCK_WORDS + 2;  // + 2 spare words for the bit reader
    static const u32 WORDS = TS_DFOR_TILE_BLOCKS * SLOT;
    u32 words[WORDS];
    BlockScanStorage<T> scan;
};

// Steps 1-4 above, shared by FOR and DFOR. Returns whether this thread's block decoded; items
// are the packed values plus the block's reference (FOR: values; DFOR: deltas).
template <int LANE, bool DELTA>
__device__ __forceinline__ bool ts_load_for_tile(const u32* __restrict__ g, const ChunkDesc& c, u32 tile,
                                                 ForTileStorage<LANE>& s,
                                                 typename Lane<LANE>::T (&items)[TS_ITEMS],
                                                 typename Lane<LANE>::T& first_value, u64* status) {
    typedef typename Lane<LANE>::T T;
    typedef ForTileStorage<LANE> S;
    const u32 RW = S::RW;
    const u32 t = threadIdx.x;
    const ChunkLayout L = ts_chunk_layout(c, TS_FOR_BLOCK_VALUES);
    const u32 k0 = tile * TS_DFOR_TILE_BLOCKS;
    const u32 kb = ts_min(TS_DFOR_TILE_BLOCKS, L.block_count - k0);  // blocks in this tile

    // 1. block_starts of the tile. Block j may be read iff bs[j] <= bs[j+1] <= data_len.
    // DFOR: block_starts[0] >= ref_words (the first tile's first_value precedes block 0).
    const u32 lead = DELTA ? RW : 0u;
    u32 bs[TS_DFOR_TILE_BLOCKS + 1];
#pragma unroll
    for (u32 j = 0; j <= TS_DFOR_TILE_BLOCKS; ++j) bs[j] = j <= kb ? __ldg(&g[L.block_starts + k0 + j]) : 0u;
    if (t == 0) {
        // Entries k0+1 .. k0+kb are this tile's to check (entry 0 too in tile 0), each against
        // its predecessor, in order: the first bad one is reported, as the CPU's sequential
        // scan of block_starts would.
#pragma unroll
        for (u32 e = 0; e <= TS_DFOR_TILE_BLOCKS; ++e) {
            if (e > kb || (e == 0 && k0 != 0)) continue;
            const u32 prev = e == 0 ? lead : bs[e - 1];
            if (bs[e] > L.data_len || bs[e] < prev) {
                ts_report(status, TS_CLASS_BLOCK_STARTS, k0 + e, TS_ST_BLOCK_START, bs[e]);
                break;
            }
        }
    }
    const u32 j = t >> 5;               // block of this thread inside the tile
    const u32 q = (t & 31) >> 3;        // miniblock inside the block
    const u32 i0 = (t & 7) * TS_ITEMS;  // first value inside the miniblock
    u32 lens[TS_DFOR_TILE_BLOCKS];      // words block j may use; 0 when it may not be read
    bool my_range = false;
    u32 my_len = 0;                     // block j's range, in words (DFOR: minus the next tile's first_value)
#pragma unroll
    for (u32 b = 0; b < TS_DFOR_TILE_BLOCKS; ++b) {
        const bool ok = b < kb && bs[b] <= bs[b + 1] && bs[b + 1] <= L.data_len;
        u32 len = ok ? bs[b + 1] - bs[b] : 0u;
        // dfor.md: the next tile's first_value takes the last ref_words words of the range of
        // a tile's last block.
        if (DELTA && b == TS_DFOR_TILE_BLOCKS - 1 && k0 + TS_DFOR_TILE_BLOCKS < L.block_count) len = len > RW ? len - RW : 0u;
        lens[b] = ts_min(len, S::MAX_BLOCK_WORDS);
        if (b == j) {
            my_range = ok;
            my_len = len;
        }
    }

    // DFOR: the tile's first_value, in the RW words before block k0 (checked to lie inside the
    // data area here; block k0 - 1 is checked to leave room for it by its own tile).
    if (DELTA) {
        first_value = 0;
        if (kb > 0 && bs[0] >= RW && bs[0] <= L.data_len) {
            if (RW == 1) {
                first_value = (T)__ldg(&g[L.data + bs[0] - 1]);
            } else {
                first_value = (T)((u64)__ldg(&g[L.data + bs[0] - 2]) | ((u64)__ldg(&g[L.data + bs[0] - 1]) << 32));
            }
        }
    }

    // 2. copy each block's words into its slot.
    __syncthreads();  // the previous tile's readers of s.words are done
#pragma unroll
    for (u32 i = t; i < S::WORDS; i += TS_THREADS) {
        const u32 b = i / S::SLOT;
        const u32 off = i - b * S::SLOT;
        u32 len = lens[0], start = bs[0];
        if (b == 1) { len = lens[1]; start = bs[1]; }
        if (b == 2) { len = lens[2]; start = bs[2]; }
        if (b == 3) { len = lens[3]; start = bs[3]; }
        if (off < len) s.words[i] = __ldg(&g[L.data + start + off]);
    }
    __syncthreads();

    // 3. the block's metadata, read by its own warp.
    const u32 len = my_len;
    const u32* slot = s.words + j * S::SLOT;
    bool ok = false;
    T ref = 0;
    u32 bit = 0, bw = 0;
    if (my_range) {
        u32 code = 0, detail = 0;
        if (len < RW + 1) {
            code = TS_ST_TRUNCATED;
            detail = RW + 1;
        } else {
            // Reads stay in the slot: len >= RW + 1 and MAX_BLOCK_WORDS >= RW + 1.
            ref = ts_read_lane<LANE>(slot);
            const u32 bw_word = slot[RW];
            u32 off = RW + 1, sum = 0;
#pragma unroll
            for (u32 m = 0; m < TS_FOR_MINIBLOCKS; ++m) {
                const u32 b = (bw_word >> (8 * m)) & 0xFF;
                if (b > (u32)LANE && code == 0) {
                    code = TS_ST_BIT_WIDTH;
                    detail = (m << 8) | b;
                }
                if (m < q) off += b;
                if (m == q) bw = b;
                sum += b;
            }
            if (code == 0 && RW + 1 + sum > len) {
                code = TS_ST_TRUNCATED;
                detail = RW + 1 + sum;
            }
            bit = off * 32 + i0 * bw;
        }
        ok = code == 0;
        if (!ok && (t & 31) == 0) ts_report(status, TS_CLASS_BLOCK, k0 + j, code, detail);
    }

    // 4. unpack.
#pragma unroll
    for (int k = 0; k < TS_ITEMS; ++k) {
        items[k] = ok ? (T)(ref + ts_extract<LANE>(slot, bit + k * bw, bw)) : (T)0;
    }
    return ok;
}

// GPU-FOR tile `tile` (4 blocks) of chunk `c`: items[k] = lane value 4t + k of the tile.
template <int LANE>
__device__ __forceinline__ bool LoadBitPack(const u32* __restrict__ g, const ChunkDesc& c, u32 tile,
                                            ForTileStorage<LANE>& s, typename Lane<LANE>::T (&items)[TS_ITEMS],
                                            u64* status) {
    typename Lane<LANE>::T unused;
    return ts_load_for_tile<LANE, false>(g, c, tile, s, items, unused, status);
}

// GPU-DFOR tile `tile` of chunk `c`: deltas unpacked, then x = first_value + inclusive scan.
// Returns false for every thread when any block of the tile is corrupt (the scan mixes them).
template <int LANE>
__device__ __forceinline__ bool LoadDBitPack(const u32* __restrict__ g, const ChunkDesc& c, u32 tile,
                                             ForTileStorage<LANE>& s, typename Lane<LANE>::T (&items)[TS_ITEMS],
                                             u64* status) {
    typedef typename Lane<LANE>::T T;
    T first_value = 0;
    const bool ok = ts_load_for_tile<LANE, true>(g, c, tile, s, items, first_value, status);
    const ChunkLayout L = ts_chunk_layout(c, TS_FOR_BLOCK_VALUES);
    const u32 kb = ts_min(TS_DFOR_TILE_BLOCKS, L.block_count - tile * TS_DFOR_TILE_BLOCKS);
    // Threads of blocks past the chunk's end hold no values; any other failure spoils the tile.
    const bool counts = (threadIdx.x >> 5) < kb;
    const bool all_ok = __syncthreads_and(ok || !counts);
    block_inclusive_sum(items, s.scan);
#pragma unroll
    for (int k = 0; k < TS_ITEMS; ++k) items[k] += first_value;
    return all_ok && counts;
}

#endif
