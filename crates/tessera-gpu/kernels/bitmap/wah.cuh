// wah.cuh: WAH / PLWAH words (docs/format/wah.md, plwah.md) and the canonical writer that every
// GPU bitmap operation ends in.
//
// Words: 32 bits, bit 31 = fill flag. A literal (tail) word holds one 31-bit group. A
// fill_word holds the fill bit (bit 30) and a counter of fill groups (WAH: bits 0..29; PLWAH:
// bits 0..24, with a 5-bit position in bits 25..29 naming the one bit in which the group after
// the run differs from the fill group). `src/bitmap/` mirrors every BM_ constant and a test
// parses this file to check both agree.
//
// Elements and slots. Every operation is written as a sequence of **elements** (v, c): a 31-bit
// group value v repeated c times (c = 0: an empty element, skipped; c > 1 only for fill values
// 0 and 0x7FFFFFFF). A compressed stream is read as **slots**: WAH has one slot per word, PLWAH
// two (the word's fill or literal, then the position's group, empty when there is none). The
// inclusive sums of the slot counts (`ends`) say where each slot ends in groups.
//
// The canonical writer (wah.md §4, plwah.md §3) turns any element sequence into the canonical
// words with one reduce-then-scan (primitives/scan.cuh) over elements. The paper's compression
// (Algorithm 2) marks the last group of every "block" (a fill run, or a literal) and scans the
// marks to place the words; here a block end is found locally from the element's neighbours
// and the scanned item is BmAgg = (groups, block ends, end of the last block), whose operator
// (sum, sum, "last one wins, shifted") carries each block's start to its end, so one pass
// gives every word's index *and* its counter:
//   - a literal element is a block end; in PLWAH a literal that directly follows a fill and
//     differs from its fill group in one bit is **folded** into that fill's last word;
//   - a fill element ends a block unless the next non-empty element is the same fill or a
//     folded literal;
//   - block i's word goes to index i; its counter is end - start (start = the previous block's
//     end), split at `max_counter` (the paper's storeWords, Algorithm 4): a run of n groups
//     needs ex = (n - 1) / max_counter full fill_words before its last word. Such runs are rare
//     (2^25 - 1 groups = 1 Gbit for PLWAH, never for WAH within MAX_BITS), so the apply pass
//     writes word i at index i, raises a flag if any ex > 0, and only then the host runs a
//     second apply that writes (word, ex) per block, scans ex and scatters (bm_scatter_fills).
// Each thread owns BM_WRITER_ITEMS consecutive elements; it also looks up to Src::LOOK elements
// back and ahead for the nearest non-empty neighbours (empty elements come at most LOOK - 1 in
// a row in every source here).
#ifndef TESSERA_WAH_CUH
#define TESSERA_WAH_CUH
#include "../include/common.cuh"
#include "../primitives/scan.cuh"

#define BM_GROUP_BITS 31
#define BM_GROUP_ONES 0x7FFFFFFFu
#define BM_FILL_FLAG 0x80000000u
#define BM_FILL_BIT 0x40000000u
#define BM_WAH_COUNTER_MASK 0x3FFFFFFFu
#define BM_PLWAH_COUNTER_MASK 0x01FFFFFFu
#define BM_PLWAH_POSITION_SHIFT 25
#define BM_PLWAH_POSITION_MASK 0x3E000000u

// The writer: 128 threads x 16 elements = 2048 elements per tile (for compression: 2048 groups
// = exactly 1984 input words).
#define BM_WRITER_THREADS 128
#define BM_WRITER_ITEMS 16
#define BM_WRITER_TILE (BM_WRITER_THREADS * BM_WRITER_ITEMS)
// Decompression: 128 threads x 32 groups (= 31 output words each) = 4096 groups per tile.
#define BM_DECODE_THREADS 128
#define BM_DECODE_GROUPS 32
#define BM_DECODE_TILE (BM_DECODE_THREADS * BM_DECODE_GROUPS)
// Decompression's chunks (decompress.cuh, "decompression"): a chunk is BM_DEC_CHUNK consecutive
// words (one 16-byte load per lane of a warp). Pass 1 sums the group counts of
// BM_DEC_SUM_CHUNKS chunks per thread block of BM_DEC_SUM_THREADS threads (each warp
// BM_DEC_SUM_CHUNKS / 8 of them). A decode tile of a valid stream needs at most
// BM_DEC_MAX_CHUNKS chunks (every word covers >= 1 group, so the chunks strictly inside the
// tile's group range hold <= BM_DECODE_TILE words, plus one chunk at each end); shared memory
// holds that many words and their ends, padded by one word per 32 (BM_DEC_PAD) so that lanes
// walking a dense stream 32 words apart hit distinct banks.
#define BM_DEC_CHUNK 128
#define BM_DEC_SUM_THREADS 256
#define BM_DEC_SUM_CHUNKS 32
#define BM_DEC_MAX_CHUNKS (BM_DECODE_TILE / BM_DEC_CHUNK + 2)
#define BM_DEC_SMEM_WORDS (BM_DEC_MAX_CHUNKS * BM_DEC_CHUNK)
#define BM_DEC_PAD(i) ((i) + ((i) >> 5))
#define BM_DEC_SMEM_PADDED (BM_DEC_SMEM_WORDS + BM_DEC_SMEM_WORDS / 32)
// Word ends are u16 (relative to the tile, at most BM_DECODE_TILE + 1): two per bank word, so
// the padding is two entries per 32, keeping lanes whose words lie ~32 apart in distinct banks.
// Half the shared memory of u32 ends: 8 decode blocks per SM instead of 6.
#define BM_DEC_PAD16(i) ((i) + 2 * ((i) >> 5))
#define BM_DEC_SMEM_PADDED16 (BM_DEC_SMEM_WORDS + 2 * (BM_DEC_SMEM_WORDS / 32))
// Output words per decode tile: 32 groups are exactly 31 words.
#define BM_DECODE_TILE_WORDS (BM_DECODE_TILE / 32 * BM_GROUP_BITS)

// Binary operations (ops::Op): AND, OR, XOR, AND-NOT.
#define BM_OP_AND 0
#define BM_OP_OR 1
#define BM_OP_XOR 2
#define BM_OP_ANDNOT 3

template <int OP> __device__ __forceinline__ u32 bm_op(u32 a, u32 b) {
    if (OP == BM_OP_AND) return a & b;
    if (OP == BM_OP_OR) return a | b;
    if (OP == BM_OP_XOR) return a ^ b;
    return a & ~b & BM_GROUP_ONES;
}

// Kind of a group value: 0 = 0-fill, 1 = 1-fill, 2 = literal.
__device__ __forceinline__ u32 bm_kind(u32 v) { return v == 0u ? 0u : (v == BM_GROUP_ONES ? 1u : 2u); }
__device__ __forceinline__ u32 bm_fill_group(u32 kind) { return kind == 1u ? BM_GROUP_ONES : 0u; }
// PLWAH: whether literal v right after a fill of kind `fk` (0 or 1) folds into its fill_word.
__device__ __forceinline__ bool bm_folds(u32 fk, u32 v) {
    return fk < 2u && bm_kind(v) == 2u && __popc(v ^ bm_fill_group(fk)) == 1;
}

// Slot `half` (0: the word itself, 1: PLWAH's position group) of word w: group value v and
// count c. A fill's counter is taken as is (validation rejects 0 before any writer runs).
template <bool PLWAH> __device__ __forceinline__ void bm_slot(u32 w, u32 half, u32& v, u32& c) {
    if (!(w & BM_FILL_FLAG)) {
        v = half ? 0u : w;
        c = half ? 0u : 1u;
        return;
    }
    const u32 fg = (w & BM_FILL_BIT) ? BM_GROUP_ONES : 0u;
    if (PLWAH) {
        const u32 pos = (w & BM_PLWAH_POSITION_MASK) >> BM_PLWAH_POSITION_SHIFT;
        if (half) {
            v = pos ? fg ^ (1u << (pos - 1)) : fg;
            c = pos ? 1u : 0u;
        } else {
            v = fg;
            c = w & BM_PLWAH_COUNTER_MASK;
        }
    } else {
        v = fg;
        c = w & BM_WAH_COUNTER_MASK;
    }
}

// Groups word w covers: a literal 1, a fill its counter (PLWAH: plus 1 with a position).
template <bool PLWAH> __device__ __forceinline__ u32 bm_word_groups(u32 w) {
    if (!(w & BM_FILL_FLAG)) return 1u;
    if (PLWAH) return (w & BM_PLWAH_COUNTER_MASK) + ((w & BM_PLWAH_POSITION_MASK) ? 1u : 0u);
    return w & BM_WAH_COUNTER_MASK;
}

// Group r of word w, where the word's groups end (exclusively) at e > r: a literal is its
// group, a fill its fill group, except that a PLWAH fill with position p != 0 ends in ONE
// dirty group (the fill group with bit p - 1 flipped).
// Branch-free (selects only): the decompression walk calls it for every group, unrolled, where
// a branch per call costs a reconvergence point each.
template <bool PLWAH> __device__ __forceinline__ u32 bm_word_group(u32 w, u32 e, u32 r) {
    // The fill bit (bit 30) spread over the group's 31 bits.
    u32 x = (u32)((int)(w << 1) >> 31) & BM_GROUP_ONES;
    if (PLWAH) {
        // (1 << pos) >> 1: bit pos - 1, or 0 for pos = 0 (no dirty group).
        const u32 pos = (w & BM_PLWAH_POSITION_MASK) >> BM_PLWAH_POSITION_SHIFT;
        x ^= r + 1 == e ? (1u << pos) >> 1 : 0u;
    }
    return (w & BM_FILL_FLAG) ? x : w;
}

// Slot k of a word stream.
template <bool PLWAH> __device__ __forceinline__ void bm_slot_at(const u32* __restrict__ words, u64 k, u32& v, u32& c) {
    bm_slot<PLWAH>(words[PLWAH ? (k >> 1) : k], PLWAH ? (u32)(k & 1) : 0u, v, c);
}

// A fill_word for a run of n >= 1 groups: the last word of the run (counter n - ex *
// max_counter) and, in ex, how many full words (counter max_counter) come before it.
template <bool PLWAH> __device__ __forceinline__ u32 bm_fill_word(u32 kind, u32 n, u32 position, u32 max_counter, u32& ex) {
    n = n ? n : 1u;
    ex = (n - 1) / max_counter;
    const u32 counter = n - ex * max_counter;
    return BM_FILL_FLAG | (kind == 1u ? BM_FILL_BIT : 0u) | (PLWAH ? (position << BM_PLWAH_POSITION_SHIFT) : 0u) | counter;
}

// ---- the writer's scan item ----------------------------------------------------------------

// (s, b, l): groups covered, block ends among them, and the end (in groups, counted from the
// aggregate's first group, >= 1) of the last block end, 0 if none.
struct BmAgg {
    u32 s, b, l;
};
struct BmAggOp {
    __device__ __forceinline__ BmAgg operator()(const BmAgg& x, const BmAgg& y) const {
        BmAgg r;
        r.s = x.s + y.s;
        r.b = x.b + y.b;
        r.l = y.l ? x.s + y.l : x.l;
        return r;
    }
};
__device__ __forceinline__ BmAgg ds_shfl_up(const BmAgg& x, u32 d) {
    BmAgg r;
    r.s = __shfl_up_sync(0xFFFFFFFFu, x.s, d);
    r.b = __shfl_up_sync(0xFFFFFFFFu, x.b, d);
    r.l = __shfl_up_sync(0xFFFFFFFFu, x.l, d);
    return r;
}
__device__ __forceinline__ BmAgg bm_agg_zero() {
    BmAgg z;
    z.s = z.b = z.l = 0;
    return z;
}
// A BmAgg is exactly the three u32 of a look-back status word (primitives/scan.cuh).
template <> struct DsPack<BmAgg> {
    static __device__ __forceinline__ uint3 to(const BmAgg& a) { return make_uint3(a.s, a.b, a.l); }
    static __device__ __forceinline__ BmAgg from(uint3 v) {
        BmAgg a;
        a.s = v.x;
        a.b = v.y;
        a.l = v.z;
        return a;
    }
};

// One thread's elements k0 .. k0 + ITEMS - 1, classified. `prev_kind` is the kind of the last
// non-empty element before k0 (3 = none); bit i of endmask / foldmask: element k0 + i ends a
// block / is a folded literal. Returns the thread's BmAgg.
template <bool PLWAH, int ITEMS, typename Src>
__device__ __forceinline__ BmAgg bm_writer_load(Src& src, u64 k0, u32 (&v)[ITEMS], u32 (&c)[ITEMS], u32& endmask,
                                                u32& foldmask, u32& prev_kind) {
    endmask = foldmask = 0;
    prev_kind = 3;
    if (k0 >= src.n) {  // a thread past the end: no elements, and no read at all
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) v[i] = c[i] = 0;
        return bm_agg_zero();
    }
    const u64 kb = k0 >= Src::LOOK ? k0 - Src::LOOK : 0;
    src.seek(kb);
    u32 pk = 3;
    for (u64 k = kb; k < k0; ++k) {
        u32 x, n;
        src.next(x, n);
        if (n) pk = bm_kind(x);
    }
    prev_kind = pk;
    foldmask = 0;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        if (k0 + i < src.n) {
            src.next(v[i], c[i]);
        } else {
            v[i] = 0;
            c[i] = 0;
        }
        if (c[i]) {
            if (PLWAH && bm_folds(pk, v[i])) foldmask |= 1u << i;
            pk = bm_kind(v[i]);
        }
    }
    // The first non-empty element after the thread's own.
    u32 nk = 3;
    bool nfold = false;
    const u64 kend = k0 + ITEMS;
    for (u64 k = kend; k < src.n && k < kend + Src::LOOK; ++k) {
        u32 x, n;
        src.next(x, n);
        if (n) {
            nk = bm_kind(x);
            nfold = PLWAH && bm_folds(pk, x);
            break;
        }
    }
    endmask = 0;
#pragma unroll
    for (int i = ITEMS - 1; i >= 0; --i) {
        if (c[i]) {
            const u32 kd = bm_kind(v[i]);
            if (kd == 2u || nk == 3u || (nk != kd && !nfold)) endmask |= 1u << i;
            nk = kd;
            nfold = (foldmask >> i) & 1u;
        }
    }
    BmAgg a = bm_agg_zero();
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        a.s += c[i];
        if ((endmask >> i) & 1u) {
            a.b += 1;
            a.l = a.s;
        }
    }
    return a;
}

// Writes the words of the blocks ending among the thread's elements: emit(index, word, ex).
// `prefix` is the BmAgg of every element before k0.
template <bool PLWAH, int ITEMS, typename Emit>
__device__ __forceinline__ void bm_writer_emit(const u32 (&v)[ITEMS], const u32 (&c)[ITEMS], u32 endmask, u32 foldmask,
                                               u32 prev_kind, BmAgg prefix, u32 max_counter, Emit& emit) {
    u32 pos = prefix.s, last = prefix.l, b = prefix.b, pk = prev_kind;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        if (!c[i]) continue;
        const u32 before = pos;
        pos += c[i];
        const u32 kd = bm_kind(v[i]);
        if ((endmask >> i) & 1u) {
            u32 word, ex = 0;
            if ((foldmask >> i) & 1u) {
                word = bm_fill_word<PLWAH>(pk, before - last, (u32)__ffs(v[i] ^ bm_fill_group(pk)), max_counter, ex);
            } else if (kd == 2u) {
                word = v[i];
            } else {
                word = bm_fill_word<PLWAH>(kd, pos - last, 0u, max_counter, ex);
            }
            emit(b, word, ex);
            ++b;
            last = pos;
        }
        pk = kd;
    }
}

// ---- compression by heads (compress.cuh, "compression by heads") ------------------------------
// A compression tile is BM_CMP_THREADS units of 32 groups (one unit per thread: 32 groups are
// exactly 31 input words), so BM_CMP_TILE groups and BM_CMP_TILE_WORDS input words, staged whole
// with 16-byte loads. The look-back state is one 16-byte status word per tile.
#define BM_CMP_THREADS 128
#define BM_CMP_TILE 4096
#define BM_CMP_TILE_WORDS 3968

// The one-pass operations' overflow fix-up (writer.cuh, bm_overflow_fixup): the most blocks
// needing full fill_words it takes, and its threads per block.
#define BM_FIXUP_CAP 1024
#define BM_FIXUP_THREADS 256

#endif
