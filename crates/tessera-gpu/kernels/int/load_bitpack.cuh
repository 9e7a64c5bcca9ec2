// load_bitpack.cuh: LoadBitPack (GPU-FOR, for.md) and LoadDBitPack (GPU-DFOR, dfor.md), the
// paper's tile loaders (sections 4.2 and 5.2): device functions any kernel can call to get one
// tile of 512 values (D = 4 blocks of 128) in registers, thread t holding values 4t .. 4t+3.
//
// Tiles are loaded a slab of G at a time (ForSlabStorage<LANE, G>; G = 1 is the paper's
// shape), in two steps:
//   LoadBitPackSlab: the thread block reads the slab's block_starts (one coalesced load),
//     checks every entry (non-decreasing, inside the data area) and copies the slab's words to
//     shared memory with cp.async, every copy in flight before the first completes. When the
//     blocks are back to back (always, for our encoders) the copy is one contiguous range;
//     otherwise (slack between blocks: legal, or hostile) each block gets a fixed slot holding at
//     most the largest legal block, and the checks below see whether that is enough.
//     Then four threads per block read its reference and bit-width word, check every
//     bit_width <= lane and that the miniblocks fit in the block's range, and store each
//     miniblock's bit offset and width (the paper's optimization 3: once per slab).
//   LoadBitPackTile / LoadDBitPackTile: for tile g of the slab, each thread reads its block's
//     reference and its miniblock's offset and width (three shared loads) and unpacks its 4
//     values from shared memory. DFOR adds the block-wide inclusive scan of the deltas plus the
//     tile's first_value.
// Nothing is read outside the chunk's payload or the storage: block_starts are checked before
// any data word is requested, and a block whose metadata fails a check is not unpacked. Every
// failure is reported with ts_report; the tile functions return false for the threads of a
// corrupt block. All threads of the TS_THREADS-thread block must call
// these functions together: they synchronize.
#ifndef TESSERA_LOAD_BITPACK_CUH
#define TESSERA_LOAD_BITPACK_CUH

#include "../include/common.cuh"
#include "bitunpack.cuh"
#include "../primitives/block_scan.cuh"

template <int LANE, int G> struct ForSlabStorage {
    typedef typename Lane<LANE>::T T;
    static const u32 RW = Lane<LANE>::REF_WORDS;
    static const u32 BLOCKS = G * TS_DFOR_TILE_BLOCKS;
    // for.md: reference + bit_width word + 4 miniblocks of at most `lane` words.
    static const u32 MAX_BLOCK_WORDS = RW + 1 + TS_FOR_MINIBLOCKS * LANE;
    static const u32 SLOT = MAX_BLOCK_WORDS + 2;  // + 2 spare words for the bit reader
    static const u32 WORDS = BLOCKS * SLOT;
    u32 words[WORDS];
    u32 bs[BLOCKS + 1];     // block_starts of the slab's blocks and the one after
    T first_value[G];       // DFOR, slot layout only
    // Per block and miniblock, computed once per slab (the paper's optimization 3):
    u32 mb_bit[BLOCKS * TS_FOR_MINIBLOCKS];  // bit offset of the miniblock in words[]
    u32 mb_bw[BLOCKS * TS_FOR_MINIBLOCKS];   // its bit_width
    T ref[BLOCKS];                           // the block's reference
    u32 block_ok[BLOCKS];                    // the block passed every check
    BlockScanStorage<T> scan;
};

// What every thread knows about the loaded slab.
struct ForSlab {
    ChunkLayout L;
    u32 k0;          // first block of the slab inside the chunk
    u32 blocks;      // blocks in the slab
    u32 tiles;       // tiles in the slab
    u32 first_tile;  // first tile of the slab inside the chunk
    u32 origin;      // contiguous layout: data-area word held by words[0]; ~0u: slot layout
};

// The checks of one FOR / DFOR block (for.md, dfor.md) shared by every loader: its range of
// len words must hold the reference (rw words), the bit-width word and the four miniblocks, and
// every bit_width must be <= lane. Returns 0, or the status code with its detail (the first
// failing miniblock's index and width, or the words the block needs), as the CPU reports it.
template <int LANE>
__device__ __forceinline__ u32 ts_for_block_check(u32 bww, u32 len, u32 rw, u32& detail) {
    if (len < rw + 1) {
        detail = rw + 1;
        return TS_ST_TRUNCATED;
    }
    u32 sum = 0;
#pragma unroll
    for (u32 mb = 0; mb < TS_FOR_MINIBLOCKS; ++mb) {
        const u32 b = (bww >> (8 * mb)) & 0xFF;
        if (b > (u32)LANE) {
            detail = (mb << 8) | b;
            return TS_ST_BIT_WIDTH;
        }
        sum += b;
    }
    if (rw + 1 + sum > len) {
        detail = rw + 1 + sum;
        return TS_ST_TRUNCATED;
    }
    detail = 0;
    return 0;
}

template <int LANE, int G, bool DELTA>
__device__ __forceinline__ ForSlab ts_load_for_slab(const u32* __restrict__ g, const ChunkDesc& c, u32 slab,
                                                      ForSlabStorage<LANE, G>& s, u64* status) {
    typedef ForSlabStorage<LANE, G> S;
    const u32 RW = S::RW;
    const u32 t = threadIdx.x;
    ForSlab q;
    q.L = ts_chunk_layout(c, TS_FOR_BLOCK_VALUES);
    q.k0 = slab * S::BLOCKS;
    q.blocks = ts_min(S::BLOCKS, q.L.block_count - q.k0);
    q.tiles = (q.blocks + TS_DFOR_TILE_BLOCKS - 1) / TS_DFOR_TILE_BLOCKS;
    q.first_tile = slab * G;
    const u32 data_len = q.L.data_len;
    // DFOR: block_starts[0] >= ref_words (the first tile's first_value precedes block 0).
    const u32 lead = DELTA ? RW : 0u;

    __syncthreads();  // the previous slab's readers of s are done
    if (t <= q.blocks) s.bs[t] = __ldg(&g[q.L.block_starts + q.k0 + t]);
    __syncthreads();

    // Entry k0 + t against its predecessor (entry k0 is the previous slab's to check, except
    // in the chunk's first slab): the atomicMin keeps the first bad entry, as the CPU's
    // sequential scan reports.
    bool entry_ok = true;
    if (t <= q.blocks) {
        const u32 e = s.bs[t];
        const u32 prev = t == 0 ? lead : s.bs[t - 1];
        entry_ok = e <= data_len && e >= prev;
        if (!entry_ok && (t > 0 || q.k0 == 0)) ts_report(status, TS_CLASS_BLOCK_STARTS, q.k0 + t, TS_ST_BLOCK_START, e);
    }
    const u32 start = s.bs[0] - lead;
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
        if (DELTA && t < q.tiles) {
            const u32 b0 = s.bs[TS_DFOR_TILE_BLOCKS * t];
            typename S::T fv = 0;
            if (b0 >= RW && b0 <= data_len) {
                fv = ts_read_lane<LANE>(&g[q.L.data + b0 - RW]);
            }
            s.first_value[t] = fv;
        }
    }
    ts_cp_async_wait();
    __syncthreads();

    // Metadata: thread 4j + m reads block j's reference and bit-width word, checks the block
    // (widths <= lane, miniblocks inside its range) and records miniblock m's bit offset and
    // width, so that unpacking a tile costs every thread three shared loads.
    if (t < S::BLOCKS * TS_FOR_MINIBLOCKS) {
        const u32 j = t / TS_FOR_MINIBLOCKS, m = t % TS_FOR_MINIBLOCKS;
        u32 code = 0, detail = 0, bit = 0, bw = 0;
        bool ok = false;
        typename S::T ref = 0;
        if (j < q.blocks) {
            const u32 b0 = s.bs[j], b1 = s.bs[j + 1];
            if (b0 <= b1 && b1 <= data_len) {
                u32 len = b1 - b0;
                // dfor.md: the next tile's first_value takes the last ref_words words of the
                // range of a tile's last block.
                if (DELTA && (j & 3) == 3 && q.k0 + j + 1 < q.L.block_count) len = len > RW ? len - RW : 0u;
                const u32 base = q.origin != ~0u ? b0 - q.origin : j * S::SLOT;
                // Reads stay in the block's copy: the bit-width word only when len >= RW + 1
                // (MAX_BLOCK_WORDS >= RW + 1).
                const u32 bw_word = len >= RW + 1 ? s.words[base + RW] : 0u;
                code = ts_for_block_check<LANE>(bw_word, len, RW, detail);
                if (code == 0) {
                    ref = ts_read_lane<LANE>(s.words + base);
                    u32 off = RW + 1;
#pragma unroll
                    for (u32 mb = 0; mb < TS_FOR_MINIBLOCKS; ++mb) {
                        const u32 b = (bw_word >> (8 * mb)) & 0xFF;
                        if (mb < m) off += b;
                        if (mb == m) bw = b;
                    }
                    bit = (base + off) * 32;
                }
                ok = code == 0;
                if (!ok && m == 0) ts_report(status, TS_CLASS_BLOCK, q.k0 + j, code, detail);
            }
        }
        s.mb_bit[t] = bit;
        s.mb_bw[t] = ok ? bw : 0u;
        if (m == 0) {
            s.ref[j] = ref;
            s.block_ok[j] = ok;
        }
    }
    __syncthreads();
    return q;
}

// Block j of a loaded slab, the four values lane l (0..31) of its warp-sized stripe holds:
// items[k] = packed value 4l + k of the block plus its reference. Returns whether the block
// decoded.
template <int LANE, int G>
__device__ __forceinline__ bool ts_unpack_for_block(const ForSlabStorage<LANE, G>& s, const ForSlab& q, u32 j, u32 l,
                                                    typename Lane<LANE>::T (&items)[TS_ITEMS]) {
    typedef typename Lane<LANE>::T T;
    const u32 mb = j * TS_FOR_MINIBLOCKS + (l >> 3);  // l's miniblock
    const u32 i0 = (l & 7) * TS_ITEMS;                // its first value in the miniblock
    const bool ok = j < q.blocks && s.block_ok[j];
    const T ref = ok ? s.ref[j] : (T)0;
    const u32 bw = ok ? s.mb_bw[mb] : 0u;
    const u32 bit = ok ? s.mb_bit[mb] + i0 * bw : 0u;
#pragma unroll
    for (int k = 0; k < TS_ITEMS; ++k) items[k] = (T)(ref + ts_extract<LANE>(s.words, bit + k * bw, bw));
    return ok;
}

// Tile `tile` (0 .. q.tiles-1) of a loaded slab: items[k] = packed value 4t + k of the tile
// plus its block's reference. Returns whether this thread's block decoded.
template <int LANE, int G>
__device__ __forceinline__ bool ts_unpack_for_tile(const ForSlabStorage<LANE, G>& s, const ForSlab& q, u32 tile,
                                                   typename Lane<LANE>::T (&items)[TS_ITEMS]) {
    const u32 t = threadIdx.x;
    return ts_unpack_for_block<LANE, G>(s, q, tile * TS_DFOR_TILE_BLOCKS + (t >> 5), t & 31, items);
}

// The first_value of DFOR tile `tile` of a loaded slab.
template <int LANE, int G>
__device__ __forceinline__ typename Lane<LANE>::T ts_dfor_first_value(const ForSlabStorage<LANE, G>& s, const ForSlab& q,
                                                                      u32 tile) {
    if (q.origin != ~0u)
        return ts_read_lane<LANE>(s.words + (s.bs[tile * TS_DFOR_TILE_BLOCKS] - Lane<LANE>::REF_WORDS - q.origin));
    return s.first_value[tile];
}

// ---- the API ----------------------------------------------------------------------------

// Loads slab `slab` (tiles G*slab .. G*slab + G - 1) of FOR chunk `c` into `s`.
template <int LANE, int G>
__device__ __forceinline__ ForSlab LoadBitPackSlab(const u32* __restrict__ g, const ChunkDesc& c, u32 slab,
                                                     ForSlabStorage<LANE, G>& s, u64* status) {
    return ts_load_for_slab<LANE, G, false>(g, c, slab, s, status);
}

// GPU-FOR tile `tile` of a loaded slab: items[k] = lane value 4t + k of the tile.
template <int LANE, int G>
__device__ __forceinline__ bool LoadBitPackTile(const ForSlabStorage<LANE, G>& s, const ForSlab& q, u32 tile,
                                                typename Lane<LANE>::T (&items)[TS_ITEMS], u64* status) {
    (void)status;
    return ts_unpack_for_tile<LANE, G>(s, q, tile, items);
}

// Loads slab `slab` of DFOR chunk `c` into `s`.
template <int LANE, int G>
__device__ __forceinline__ ForSlab LoadDBitPackSlab(const u32* __restrict__ g, const ChunkDesc& c, u32 slab,
                                                      ForSlabStorage<LANE, G>& s, u64* status) {
    return ts_load_for_slab<LANE, G, true>(g, c, slab, s, status);
}

// GPU-DFOR tile `tile` of a loaded slab: deltas unpacked, then x = first_value + inclusive
// scan. Returns false for threads of a corrupt block or past the chunk's last block.
template <int LANE, int G>
__device__ __forceinline__ bool LoadDBitPackTile(ForSlabStorage<LANE, G>& s, const ForSlab& q, u32 tile,
                                                 typename Lane<LANE>::T (&items)[TS_ITEMS], u64* status) {
    typedef typename Lane<LANE>::T T;
    (void)status;
    const bool ok = ts_unpack_for_tile<LANE, G>(s, q, tile, items);
    const T first_value = ts_dfor_first_value<LANE, G>(s, q, tile);
    // A corrupt block spoils the scan of its whole tile; its error is already reported and the
    // tile's output is not trusted (the decode fails).
    // Consecutive tiles alternate the scan's buffer; slabs are separated by barriers.
    block_inclusive_sum(items, s.scan, tile);
#pragma unroll
    for (int k = 0; k < TS_ITEMS; ++k) items[k] += first_value;
    return ok;
}

// GPU-DFOR tile `tile` of a loaded slab decoded by ONE WARP, with no thread-block barrier:
// stripe k (= block k of the tile, called for k = 0, 1, 2, 3 in order) gives lane l the values
// at tile positions 128k + 4l .. 128k + 4l + 3. `carry` enters as the tile's first_value
// (ts_dfor_first_value) and leaves as the last value of the stripe, the same in every lane.
// Returns false when the stripe's block is corrupt or past the chunk's last block; a corrupt
// block spoils the rest of its tile, as in LoadDBitPackTile.
template <int LANE, int G>
__device__ __forceinline__ bool LoadDBitPackWarpStripe(const ForSlabStorage<LANE, G>& s, const ForSlab& q, u32 tile,
                                                       u32 k, typename Lane<LANE>::T& carry,
                                                       typename Lane<LANE>::T (&items)[TS_ITEMS]) {
    typedef typename Lane<LANE>::T T;
    const u32 l = threadIdx.x & 31;
    const bool ok = ts_unpack_for_block<LANE, G>(s, q, tile * TS_DFOR_TILE_BLOCKS + k, l, items);
#pragma unroll
    for (int i = 1; i < TS_ITEMS; ++i) items[i] += items[i - 1];
    const T incl = warp_inclusive_sum(items[TS_ITEMS - 1]);
    const T prefix = carry + incl - items[TS_ITEMS - 1];
#pragma unroll
    for (int i = 0; i < TS_ITEMS; ++i) items[i] += prefix;
    carry += __shfl_sync(0xFFFFFFFFu, incl, 31);
    return ok;
}

// The paper's single-tile forms: tile `tile` of chunk `c`, loaded and unpacked in one call.
template <int LANE>
__device__ __forceinline__ bool LoadBitPack(const u32* __restrict__ g, const ChunkDesc& c, u32 tile,
                                            ForSlabStorage<LANE, 1>& s, typename Lane<LANE>::T (&items)[TS_ITEMS],
                                            u64* status) {
    const ForSlab q = LoadBitPackSlab<LANE, 1>(g, c, tile, s, status);
    return LoadBitPackTile<LANE, 1>(s, q, 0, items, status);
}

template <int LANE>
__device__ __forceinline__ bool LoadDBitPack(const u32* __restrict__ g, const ChunkDesc& c, u32 tile,
                                             ForSlabStorage<LANE, 1>& s, typename Lane<LANE>::T (&items)[TS_ITEMS],
                                             u64* status) {
    const ForSlab q = LoadDBitPackSlab<LANE, 1>(g, c, tile, s, status);
    return LoadDBitPackTile<LANE, 1>(s, q, 0, items, status);
}

// ---- warp-level GPU-FOR loader (lane 32): no shared memory, no barrier ----------------------
//
// For kernels that consume a column once (a scan, a fused query), staging tiles in shared
// memory costs more than it saves: the barriers of a thread-block slab and the shared-memory
// traffic bound the decode rate well below what HBM delivers. Here one warp takes a slab of
// blocks alone:
//   LoadBitPackWarpSlab: lane t reads block_starts entry k0 + t and, for t < blocks, block
//     k0 + t's reference and bit-width word (two coalesced loads for the whole slab), and
//     checks them with ts_for_block_check, as ts_load_for_slab does (same status keys);
//   LoadBitPackWarpBlock: block j's four miniblocks, each read with ONE coalesced load (lane l
//     holds word l of the miniblock), and lane l's value of each assembled from two shuffled
//     words: items[m] = value 32m + l of the block.
// Reads stay inside a block that passed its checks. A block that failed one keeps a reference
// and a bit-width word of 0 here: it reads nothing and decodes to 128 zeros (a sum may add it).
struct ForWarpSlab {
    ChunkLayout L;
    u32 k0;      // first block of the slab inside the chunk
    u32 blocks;  // blocks in the slab (<= 32)
    u32 start;   // lane t < blocks: block_starts entry of block k0 + t
    u32 ref;     // lane t < blocks: its reference (0 when the block failed a check)
    u32 bww;     // lane t < blocks: its bit-width word (0 when the block failed a check);
                 // when `equal`, 2^bw - 1 for its bit_width bw (the four are equal)
    u32 ok;      // bit t: block k0 + t passed every check
    bool equal;  // warp-uniform: every block passed its checks and has four equal bit_widths
};

template <u32 BLOCKS>
__device__ __forceinline__ ForWarpSlab LoadBitPackWarpSlab(const u32* __restrict__ g, const ChunkDesc& c, u32 slab,
                                                             u64* status) {
    static_assert(BLOCKS < 32, "one lane per block_starts entry");
    const u32 l = threadIdx.x & 31;
    ForWarpSlab q;
    q.L = ts_chunk_layout(c, TS_FOR_BLOCK_VALUES);
    q.k0 = slab * BLOCKS;
    q.blocks = ts_min(BLOCKS, q.L.block_count - q.k0);
    const u32 data_len = q.L.data_len;
    const u32 e = l <= q.blocks ? __ldg(&g[q.L.block_starts + q.k0 + l]) : 0u;
    const u32 prev = __shfl_up_sync(0xFFFFFFFFu, e, 1);
    const u32 next = __shfl_down_sync(0xFFFFFFFFu, e, 1);
    if (l <= q.blocks) {
        // Entry k0 + l against its predecessor (entry k0 is the previous slab's to report,
        // except in the chunk's first slab), as ts_load_for_slab.
        const bool entry_ok = e <= data_len && e >= (l == 0 ? 0u : prev);
        if (!entry_ok && (l > 0 || q.k0 == 0)) ts_report(status, TS_CLASS_BLOCK_STARTS, q.k0 + l, TS_ST_BLOCK_START, e);
    }
    u32 ref = 0, bww = 0;
    bool ok = false;
    if (l < q.blocks && e <= next && next <= data_len) {
        const u32 len = next - e;
        if (len >= 2) {
            ref = __ldg(&g[q.L.data + e]);
            bww = __ldg(&g[q.L.data + e + 1]);
        }
        // The checks of ts_for_block_check without a branch per miniblock: every byte of
        // bww <= 32 (bit 7 set, or bits 0..6 + 0x5F reaching 0x80) and then the four summed
        // (<= 128: byte 3 of bww * 0x01010101) fit the range. Only a block that fails runs
        // ts_for_block_check, for its status key.
        const bool widths_ok = ((bww | ((bww & 0x7F7F7F7Fu) + 0x5F5F5F5Fu)) & 0x80808080u) == 0;
        ok = len >= 2 && widths_ok && 2 + ((bww * 0x01010101u) >> 24) <= len;
        if (!ok) {
            u32 detail;
            const u32 code = ts_for_block_check<32>(bww, len, 1, detail);
            ts_report(status, TS_CLASS_BLOCK, q.k0 + l, code, detail);
        }
    }
    q.start = e;
    q.ref = ok ? ref : 0u;
    q.bww = ok ? bww : 0u;
    q.ok = __ballot_sync(0xFFFFFFFFu, ok);
    q.equal = __all_sync(0xFFFFFFFFu, l >= q.blocks || (ok && bww == (bww & 0xFFu) * 0x01010101u));
    // An equal slab's blocks need bw and the mask 2^bw - 1: the mask it is, bw = popc(mask)
    // per block (one instruction; computing the mask from bw there takes three, the all-ones
    // operand included).
    if (q.equal) q.bww = __funnelshift_lc(0xFFFFFFFFu, 0u, q.bww & 0xFFu);
    return q;
}

// w = *p where `load` holds, else w keeps its value: one predicated load into w's register.
// (Written as `w = load ? __ldg(p) : 0`, the compiler adds an instruction per load: a zero,
// or a move from a scratch register.)
__device__ __forceinline__ void ts_ldg_if(u32& w, const u32* p, bool load) {
    asm("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %2, 0;\n\t@p ld.global.nc.u32 %0, [%1];\n\t}"
        : "+r"(w)
        : "l"(p), "r"((u32)load));
}

// The pointer itself, as computed: left to itself the compiler folds a sum of pointer and
// offsets back into one 64-bit index per load (a 64-bit add, a shift and an add to g: four
// instructions a load, against one IMAD.WIDE.U32 from a pointer).
__device__ __forceinline__ const u32* ts_opaque_ptr(const u32* p) {
    asm("mov.b64 %0, %0;" : "+l"(p));
    return p;
}

// Block j (< q.blocks) of a warp slab: items[m] = value 32m + lane (reference added).
// `base` = g + q.L.data + 1, set once per slab: every load address is then one
// IMAD.WIDE.U32 away. `w` is scratch for the block's words, carried from call to call (lanes
// that load nothing need no zero; any value they hold is masked away below). Lean on purpose,
// since a scan does little else per value: per value a 32nd of a load, two shuffles, a funnel
// shift, an AND and an add.
//
// EQUAL (q.equal, the common case: every block of the slab passed its checks and has four
// equal bit_widths bw): the shuffle source lanes, the shift and the mask are computed once per
// block, and the loads need no predicate: lane l reads word min(l + 1, bw) - 1 of each
// miniblock, that is word l for l < bw, the miniblock's last word for l >= bw, and for bw = 0
// the word before the miniblocks (the bit-width word): all inside the block's checked range,
// and what lanes >= bw read is masked away. Otherwise (mixed widths, or a slab with a block
// that failed its checks) everything is per miniblock, lane l loading word l only when
// l < bit_width, so a failed block (bit-width word 0) loads nothing.
template <bool EQUAL>
__device__ __forceinline__ void LoadBitPackWarpBlock(const u32* __restrict__ base, const ForWarpSlab& q, u32 j,
                                                     u32 (&w)[TS_FOR_MINIBLOCKS], u32 (&items)[TS_FOR_MINIBLOCKS]) {
    const u32 l = threadIdx.x & 31;
    const u32 start = __shfl_sync(0xFFFFFFFFu, q.start, j);
    const u32 ref = __shfl_sync(0xFFFFFFFFu, q.ref, j);
    const u32 bww = __shfl_sync(0xFFFFFFFFu, q.bww, j);  // EQUAL: 2^bw - 1
    const u32 bw_eq = EQUAL ? __popc(bww) : 0u;
    if (EQUAL) {
        // Miniblock m + 1 starts bw words after miniblock m.
        const u32* __restrict__ p = base + (start + ts_min(l + 1, bw_eq));
#pragma unroll
        for (u32 m = 0; m < TS_FOR_MINIBLOCKS; ++m, p += bw_eq) w[m] = __ldg(p);
    } else {
        // Byte m: the word offset of miniblock m from the block's first miniblock word (at
        // most 3 * 32: no carry between bytes, as every bit_width <= 32).
        const u32 offs = bww * 0x01010100u;
        const u32* __restrict__ p = ts_opaque_ptr(base + (start + 1 + l));
#pragma unroll
        for (u32 m = 0; m < TS_FOR_MINIBLOCKS; ++m)
            ts_ldg_if(w[m], p + __byte_perm(offs, 0u, 0x4440u + m), l < __byte_perm(bww, 0u, 0x4440u + m));
    }
#pragma unroll
    for (u32 m = 0; m < TS_FOR_MINIBLOCKS; ++m) {
        const u32 bw = EQUAL ? bw_eq : __byte_perm(bww, 0u, 0x4440u + m);  // byte m
        // Value l spans bits [l*bw, l*bw + bw): word i = l*bw/32 <= bw - 1 and, when it
        // crosses a word edge, word i + 1 <= bw - 1 (both loaded above by lanes i, i + 1 < bw).
        // Otherwise the second word (of a lane >= bw, or lane i + 1 = 32, read as lane 0:
        // shuffles take the source lane modulo 32) only feeds bits that the mask clears; bw = 0
        // masks everything.
        const u32 bit = l * bw;
        const u32 lo_w = __shfl_sync(0xFFFFFFFFu, w[m], bit >> 5);
        const u32 hi_w = __shfl_sync(0xFFFFFFFFu, w[m], (bit >> 5) + 1);
        // __funnelshift_r shifts by bit mod 32; __funnelshift_lc(~0, 0, bw) = 2^bw - 1 for bw
        // in 0..=32, in one instruction.
        items[m] = ref + (__funnelshift_r(lo_w, hi_w, bit) & (EQUAL ? bww : __funnelshift_lc(0xFFFFFFFFu, 0u, bw)));
    }
}

#endif
