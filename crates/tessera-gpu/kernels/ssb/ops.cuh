// ops.cuh: the device-side operators of star-join queries (docs/gpu/ssb.md). A query kernel is
// a short composition of these, emitted per query by src/ssb/codegen.rs and compiled by NVRTC;
// kernels/ssb/ssb.cu composes a few by hand so that every operator is compiled in CI.
//
// Execution shape: ONE WARP takes one tile of TS_TILE_VALUES = 512 rows at a time, with no
// thread-block barrier and no shared-memory staging of the packed words (the shape of
// kernels/int/query.cu's FOR scan). Row 128k + 32m + l of the tile (stripe k = 0..3, m = 0..3)
// is item i = 4k + m of lane l: stripe k is FOR block k of the tile, item m of a stripe is
// what LoadBitPackWarpBlock gives lane l for miniblock m, and every item is one coalesced
// 128-byte row of 32 lanes in a plain column. A lane keeps its 16 rows' "still passing" flags
// as the bits of one word (`pass`, bit i for item i).
//
// Every column of a table is chunked alike (the host checks it), so tile `tile` of every column
// covers the same rows: chunk tile / tiles_per_chunk, tile tile % tiles_per_chunk inside it.
// Each chunk has its own codec (auto's choice); SsbLoad picks the loader per chunk (uniform
// across the warp, so no divergence):
//   FOR   LoadBitPackWarpSlab over the tile's 4 blocks (block_starts, references and
//         bit-width words, checked), then LoadBitPackWarpBlock per block, straight into
//         registers; a block none of whose 128 rows still passes is not read at all;
//   DFOR  the same checks with dfor.md's rules (first_value before block 0, the next tile's
//         first_value at the end of block 3), then each block's deltas and a warp scan per
//         item in row order (a DFOR tile is decoded whole: each block needs the previous
//         blocks' sum);
//   RFOR  LoadRBitPackWarp (the block is the tile), then each row's run found from the run
//         starts: a ballot of the flag bytes of a 32-row item gives the starts among them;
//   plain one 4-byte load per row that still passes (a warp's loads of an item are one
//         coalesced 128-byte row).
// A column whose rows have all failed in the warp's tile is not read (late materialization).
// SsbLoad calls one non-inlined loader that switches on the chunk's codec; SsbLoadAs (below),
// which the generator emits for a column of one codec, runs that codec's loader alone, inlined
// or called.
//
// Operators (warp-wide: every lane of the warp calls them together):
//   SsbTileRows   pass bits of the tile's rows that exist (from the chunk's value count)
//   SsbAny        does any lane of the warp still hold a row?
//   SsbLoad       load-and-decode a column's tile into 16 registers
//   SsbFilter     pass &= pred(value)
//   SsbProbe      hash-table probe: drop rows whose key is absent, add payload * stride to the
//                 row's group index
//   SsbBuild      hash-table insert of the passing rows' (key, payload)
//   SsbAggregate  per-row atomics into the dense (sum, count) arrays, or, for one group,
//                 SsbAccumulate in registers and SsbBlockTotal once per thread block (the only
//                 block-wide operator, after the tile loop)
//
// Errors: the loaders report corrupt chunks into the column's per-chunk status (as the
// decoders do); the operators report into `qs` (the query's status word, an atomicMin of a
// code << 32 | detail): SSB_ST_* below. Nothing is read or written out of bounds on bad input:
// every read stays inside a block's checked range, a failed block decodes to zeros.
#ifndef TESSERA_SSB_OPS_CUH
#define TESSERA_SSB_OPS_CUH

#include "../include/common.cuh"
#include "../int/load_bitpack.cuh"
#include "../int/load_rbitpack.cuh"
#include "../primitives/block_scan.cuh"

// Codec of a chunk, as the host writes it into SsbChunk::codec.
#define SSB_PLAIN 0u
#define SSB_FOR 1u
#define SSB_DFOR 2u
#define SSB_RFOR 3u

// Query status codes (the high word of the status key; the low word is a detail).
#define SSB_ST_DUPLICATE_KEY 1ull   // a dimension key inserted twice
#define SSB_ST_PAYLOAD_RANGE 2ull   // a group key's value outside base .. base + card
#define SSB_ST_TABLE_FULL 3ull      // the hash table has no free slot
#define SSB_ST_GROUP_RANGE 4ull     // a group index past the aggregate arrays
#define SSB_ST_RESERVED_KEY 5ull    // a dimension key of 2^32 - 1 (marks a free slot)
#define SSB_ST_BAD_CODEC 6ull       // a chunk codec the loaders do not know
#define SSB_ST_CODEC_MISMATCH 7ull  // a chunk's codec differs from the one the program expects
#define SSB_ST_LANES 8ull           // a lane-layout or run-start tile that fails its checks

#define SSB_EMPTY 0xFFFFFFFFFFFFFFFFull

// Thread blocks per SM the query kernels are compiled to fit (src/ssb/codegen.rs defines it in
// every program, see codegen::MIN_BLOCKS); 1, for the hand-written kernels of ssb.cu, leaves the
// registers uncapped.
#ifndef SSB_MIN_BLOCKS
#define SSB_MIN_BLOCKS 1
#endif
#define SSB_BOUNDS __launch_bounds__(TS_THREADS, SSB_MIN_BLOCKS)

// Rows a lane holds of a tile (4 stripes of 4 items).
#define SSB_ROWS 16
#define SSB_WARPS (TS_THREADS / 32)
#define SSB_FULL 0xFFFFFFFFu

// One chunk of a column: where its payload lies in the column's word buffer and its codec.
struct SsbChunk {
    ChunkDesc desc;
    u32 codec;
    u32 pad;
};

// Per warp: the RFOR loader's run values and run-start flags (one RFOR block at a time: a
// column is decoded whole before the next is loaded).
typedef RforWarpStorage<32> SsbWarpStorage;

__device__ __forceinline__ void ssb_report(u64* qs, u64 code, u32 detail) { atomicMin(qs, (code << 32) | detail); }

// Row of the tile held as item i by this lane.
__device__ __forceinline__ u32 ssb_row(u32 i) { return 128u * (i >> 2) + 32u * (i & 3u) + (threadIdx.x & 31u); }

#ifndef SSB_FOR_BATCH
#define SSB_FOR_BATCH 0
#endif
#define SSB_TILE_WHOLE SSB_FOR_BATCH

__device__ __forceinline__ u32 SsbTileRows(const SsbChunk* __restrict__ chunks, u32 ci, u32 local) {
    const u32 count = __ldg(&chunks[ci].desc.total_count);
    const u32 first = local * TS_TILE_VALUES;
    const u32 n = first < count ? count - first : 0u;
    // Every tile but a chunk's last is whole: one compare instead of sixteen (SSB_FOR_BATCH's
    // programs; its loader is defined below).
    if (SSB_TILE_WHOLE && n >= TS_TILE_VALUES) return (1u << SSB_ROWS) - 1u;
    u32 pass = 0;
#pragma unroll
    for (u32 i = 0; i < SSB_ROWS; ++i) pass |= (u32)(ssb_row(i) < n) << i;
    return pass;
}

__device__ __forceinline__ bool SsbAny(u32 pass) { return __any_sync(SSB_FULL, pass != 0); }

// Does any lane still hold a row of stripe k?
__device__ __forceinline__ bool ssb_stripe_any(u32 pass, u32 k) { return __any_sync(SSB_FULL, (pass >> (4 * k)) & 0xFu); }

// ---- FOR ----------------------------------------------------------------------------------

__device__ __forceinline__ ForWarpSlab ssb_for_meta(const u32* __restrict__ g, const ChunkDesc c, u32 local, u64* status) {
    return LoadBitPackWarpSlab<TS_DFOR_TILE_BLOCKS>(g, c, local, status);
}

// A column whose FOR tiles were all checked when it became resident (SsbCheckFor below, run by
// the host once per column; codegen::Loader::Upfront): the program loads it as SSB_FOR_CHECKED,
// a codec of the generator's only (its chunks hold SSB_FOR). The host emits such loads only for
// a column whose check found every block_starts entry and every block sound, and the column's
// buffers are not written after, so the tile's metadata is read without the checks: no
// neighbour entries, no length and bit-width tests, no report branches, and the reference and
// bit-width loads wait on the block_starts entry alone. The reads are the ones the checked path
// makes for a sound tile, so they stay inside each block's range.
#define SSB_FOR_CHECKED 4u

__device__ __forceinline__ ForWarpSlab ssb_for_meta_checked(const u32* __restrict__ g, const ChunkDesc c, u32 local) {
    const u32 l = threadIdx.x & 31;
    ForWarpSlab q;
    q.L = ts_chunk_layout(c, TS_FOR_BLOCK_VALUES);
    q.k0 = local * TS_DFOR_TILE_BLOCKS;
    q.blocks = ts_min(TS_DFOR_TILE_BLOCKS, q.L.block_count - q.k0);
    const bool mine = l < q.blocks;
    const u32 e = mine ? __ldg(&g[q.L.block_starts + q.k0 + l]) : 0u;
    q.start = e;
    q.ref = mine ? __ldg(&g[q.L.data + e]) : 0u;
    q.bww = mine ? __ldg(&g[q.L.data + e + 1]) : 0u;
    q.ok = __ballot_sync(SSB_FULL, mine);
    q.equal = __all_sync(SSB_FULL, !mine || q.bww == (q.bww & 0xFFu) * 0x01010101u);
    if (q.equal) q.bww = __funnelshift_lc(0xFFFFFFFFu, 0u, q.bww & 0xFFu);
    return q;
}

// The check SsbLoad's FOR loader makes per tile, for every tile of a column at once: the tile's
// block_starts entries and blocks, reported into the chunk's status word with the loader's keys
// (LoadBitPackWarpSlab), and nothing else read. A tile past its chunk's values is not a tile (the
// query kernels never load it) and is skipped. Across the tiles every entry 0 ..= block_count and
// every block is checked once.
__device__ __forceinline__ void SsbCheckFor(const u32* __restrict__ g, const SsbChunk* __restrict__ chunks,
                                            u64* __restrict__ status, u32 ci, u32 local) {
    const ChunkDesc c = ts_load_chunk(reinterpret_cast<const ChunkDesc*>(&chunks[ci].desc), 0);
    if (__ldg(&chunks[ci].codec) != SSB_FOR || (u64)local * TS_TILE_VALUES >= c.total_count) return;
    (void)LoadBitPackWarpSlab<TS_DFOR_TILE_BLOCKS>(g, c, local, status + ci);
}

// The lean FOR loader (codegen::Loader::Lean; the program defines SSB_FOR_LEAN): as below,
// but a block of an equal slab whose bit_width divides 32 (0, 1, 2, 4, 8, 16, 32: on SSB
// lo_discount and lo_suppkey) takes each value from ONE shuffled word: no value of such a
// block crosses a word edge, so the second shuffle of LoadBitPackWarpBlock is not needed, and
// a rotate (a funnel shift of the word with itself) puts the value's bits at the bottom. Per
// value a shuffle, a funnel shift, an AND and an add, against two shuffles and the same three.
// The block's bit_width is warp-uniform, so the choice is a uniform branch per block. Reads and
// checks are LoadBitPackWarpSlab's and LoadBitPackWarpBlock's. Not the default: measured no
// faster over the 13 queries (decision 0031); kept as an option for measuring.
#ifndef SSB_FOR_LEAN
#define SSB_FOR_LEAN 0
#endif

__device__ __forceinline__ void ssb_for_block_equal(const u32* __restrict__ base, const ForWarpSlab& q, u32 k,
                                                    u32 (&w)[TS_FOR_MINIBLOCKS], u32 (&items)[TS_FOR_MINIBLOCKS]) {
    const u32 l = threadIdx.x & 31;
    const u32 start = __shfl_sync(SSB_FULL, q.start, k);
    const u32 ref = __shfl_sync(SSB_FULL, q.ref, k);
    const u32 mask = __shfl_sync(SSB_FULL, q.bww, k);  // 2^bw - 1 (an equal slab)
    const u32 bw = __popc(mask);
    // As LoadBitPackWarpBlock<true>: lane l reads word min(l + 1, bw) - 1 of each miniblock
    // (bw = 0: the bit-width word), all inside the block's checked range.
    const u32* __restrict__ p = base + (start + ts_min(l + 1, bw));
#pragma unroll
    for (u32 m = 0; m < TS_FOR_MINIBLOCKS; ++m, p += bw) w[m] = __ldg(p);
    const u32 bit = l * bw;
    const u32 src = bit >> 5;
    if ((bw & (bw - 1)) == 0) {
        // bw divides 32: value l lies in bits bit mod 32 .. bit mod 32 + bw - 1 of word src.
#pragma unroll
        for (u32 m = 0; m < TS_FOR_MINIBLOCKS; ++m) {
            const u32 x = __shfl_sync(SSB_FULL, w[m], src);
            items[m] = ref + (__funnelshift_r(x, x, bit) & mask);
        }
    } else {
#pragma unroll
        for (u32 m = 0; m < TS_FOR_MINIBLOCKS; ++m) {
            const u32 lo_w = __shfl_sync(SSB_FULL, w[m], src);
            const u32 hi_w = __shfl_sync(SSB_FULL, w[m], src + 1);
            items[m] = ref + (__funnelshift_r(lo_w, hi_w, bit) & mask);
        }
    }
}

// The batched FOR loader (codegen::Loader::Batch; the program defines SSB_FOR_BATCH): the same
// reads and checks as the loader below, in another order. That one reads a block's words and
// unpacks them before it asks for the next block's (a block is skipped by a warp vote, a branch
// the loads cannot be hoisted across), so a tile of four blocks waits four memory round trips
// after its metadata. Here the words of every block that still holds a row are requested first,
// straight into the value registers (v[4k + m] holds lane l's word of block k, miniblock m), and
// then unpacked in place: one round trip for the tile's packed words, and no scratch registers
// (the two shuffles of a value read v[i] in every lane before it is overwritten). Which stripes
// hold rows is one OR-reduction of the lanes' pass words instead of a vote per stripe. The values
// are still zeroed first (SsbLoadAs): left undefined where no block is unpacked, they made ptxas
// spill in the query kernels. The same programs take SsbTileRows' one-compare path for a whole
// tile.

template <bool EQUAL>
__device__ __forceinline__ void ssb_for_batch_words(const u32* __restrict__ base, const ForWarpSlab& q, u32 live,
                                                    u32 (&v)[SSB_ROWS]) {
    const u32 l = threadIdx.x & 31;
#pragma unroll
    for (u32 k = 0; k < TS_DFOR_TILE_BLOCKS; ++k) {
        if (!((live >> k) & 1u)) continue;
        const u32 start = __shfl_sync(SSB_FULL, q.start, k);
        const u32 bww = __shfl_sync(SSB_FULL, q.bww, k);
        if (EQUAL) {
            // As LoadBitPackWarpBlock<true>: lane l reads word min(l + 1, bw) - 1 of each
            // miniblock (bw = 0: the bit-width word), all inside the block's checked range.
            const u32 bw = __popc(bww);
            const u32* __restrict__ p = base + (start + ts_min(l + 1, bw));
#pragma unroll
            for (u32 m = 0; m < TS_FOR_MINIBLOCKS; ++m, p += bw) v[4 * k + m] = __ldg(p);
        } else {
            // As LoadBitPackWarpBlock<false>: lane l loads word l of miniblock m only when
            // l < its bit_width (a failed block, bit-width word 0, loads nothing).
            const u32 offs = bww * 0x01010100u;
            const u32* __restrict__ p = ts_opaque_ptr(base + (start + 1 + l));
#pragma unroll
            for (u32 m = 0; m < TS_FOR_MINIBLOCKS; ++m)
                ts_ldg_if(v[4 * k + m], p + __byte_perm(offs, 0u, 0x4440u + m), l < __byte_perm(bww, 0u, 0x4440u + m));
        }
    }
#pragma unroll
    for (u32 k = 0; k < TS_DFOR_TILE_BLOCKS; ++k) {
        if (!((live >> k) & 1u)) continue;
        const u32 ref = __shfl_sync(SSB_FULL, q.ref, k);
        const u32 bww = __shfl_sync(SSB_FULL, q.bww, k);  // EQUAL: 2^bw - 1
        const u32 bw_eq = EQUAL ? __popc(bww) : 0u;
#pragma unroll
        for (u32 m = 0; m < TS_FOR_MINIBLOCKS; ++m) {
            // LoadBitPackWarpBlock's unpack: words a lane did not load only feed masked bits.
            const u32 bw = EQUAL ? bw_eq : __byte_perm(bww, 0u, 0x4440u + m);
            const u32 bit = l * bw;
            const u32 lo_w = __shfl_sync(SSB_FULL, v[4 * k + m], bit >> 5);
            const u32 hi_w = __shfl_sync(SSB_FULL, v[4 * k + m], (bit >> 5) + 1);
            v[4 * k + m] = ref + (__funnelshift_r(lo_w, hi_w, bit) & (EQUAL ? bww : __funnelshift_lc(0xFFFFFFFFu, 0u, bw)));
        }
    }
}

// The sparse FOR loader (codegen::Loader::Sparse; the program defines SSB_FOR_SPARSE as the
// most rows a tile may still hold for it, and the generator asks for it only at loads that come
// after a filter or a probe): when few of the tile's 512 rows still pass, the warp unpack above
// decodes every value of each block that holds one of them (words, two shuffles a value) to use
// a few. Here each lane extracts only its own passing values, straight from the packed words:
// lane l's item m of stripe k is value l of miniblock m of block k, which lies at bits
// [l * bw, (l + 1) * bw) of that miniblock's bw words (LoadBitPackWarpBlock's unpack reads the
// same bits through its shuffles), so one 4-byte load, a second one only when the value
// crosses a word edge, and a funnel shift; no shuffles per value. The loads touch only the
// sectors of the passing rows, as a plain column's do. Both words lie inside the miniblock
// (bit (l + 1) * bw - 1 < 32 * bw), so inside the block whose checks passed; a miniblock of
// bit_width 0 reads nothing (its values are the reference), and a block that failed a check
// (reference and bit-width word 0) reads nothing and decodes to zeros, as the warp unpack does.
// A slab of equal bit_widths is unpacked by the warp with fewer instructions a value than a
// mixed one (one shift and mask a block, no per-miniblock widths), and its narrow blocks hold
// few sectors, so it takes the sparse path only below a lower count, SSB_FOR_SPARSE_EQUAL.
// Not the default: measured slower than the batched unpack (decision 0040). Each item's loads
// are consumed before the next item's branch, so a tile waits a memory round trip per item
// that holds a passing row, where the batched loader waits one for the whole tile.
#ifndef SSB_FOR_SPARSE
#define SSB_FOR_SPARSE 0
#endif
#ifndef SSB_FOR_SPARSE_EQUAL
#define SSB_FOR_SPARSE_EQUAL 0
#endif

template <bool EQUAL>
__device__ __forceinline__ void ssb_for_sparse_values(const u32* __restrict__ base, const ForWarpSlab& q, u32 live,
                                                      u32 rows, u32 pass, u32 (&v)[SSB_ROWS]) {
    const u32 l = threadIdx.x & 31;
#pragma unroll
    for (u32 k = 0; k < TS_DFOR_TILE_BLOCKS; ++k) {
        if (!((live >> k) & 1u)) continue;
        const u32 start = __shfl_sync(SSB_FULL, q.start, k);
        const u32 ref = __shfl_sync(SSB_FULL, q.ref, k);
        const u32 bww = __shfl_sync(SSB_FULL, q.bww, k);  // EQUAL: 2^bw - 1
        // Miniblock m's words start at byte m of offs (the bit_widths before it, summed).
        const u32 offs = EQUAL ? 0u : bww * 0x01010100u;
        const u32 bw_eq = EQUAL ? __popc(bww) : 0u;
#pragma unroll
        for (u32 m = 0; m < TS_FOR_MINIBLOCKS; ++m) {
            // `rows` (the OR of the lanes' pass words) is warp-uniform: an item no lane holds
            // costs one uniform branch. The lanes that hold it load; the others compute a value
            // nothing reads.
            const u32 i = 4 * k + m;
            if (!((rows >> i) & 1u)) continue;
            const bool mine = (pass >> i) & 1u;
            const u32 bw = EQUAL ? bw_eq : __byte_perm(bww, 0u, 0x4440u + m);
            const u32 off = EQUAL ? m * bw_eq : __byte_perm(offs, 0u, 0x4440u + m);
            const u32 bit = l * bw;
            const u32* __restrict__ p = base + (start + 1 + off + (bit >> 5));
            u32 lo = 0, hi = 0;
            ts_ldg_if(lo, p, mine && bw != 0);
            ts_ldg_if(hi, p + 1, mine && (bit & 31u) + bw > 32);
            v[i] = ref + (__funnelshift_r(lo, hi, bit) & (EQUAL ? bww : __funnelshift_lc(0xFFFFFFFFu, 0u, bw)));
        }
    }
}

// SPARSE: the generator allows the sparse path at this load (SSB_FOR_SPARSE above); it runs
// when the warp's tile holds at most SSB_FOR_SPARSE passing rows (SSB_FOR_SPARSE_EQUAL for a
// slab of equal bit_widths; a warp count, uniform).
template <bool CHECKED, bool SPARSE>
__device__ __forceinline__ void ssb_load_for_batch(const u32* __restrict__ g, const ChunkDesc& c, u32 local,
                                                   u64* status, u32 pass, u32 (&v)[SSB_ROWS]) {
    const ForWarpSlab q = CHECKED ? ssb_for_meta_checked(g, c, local) : ssb_for_meta(g, c, local, status);
    const u32* __restrict__ base = ts_opaque_ptr(g + q.L.data + 1);
    // Bit k: block k exists and a lane still holds a row of its stripe (warp-uniform).
    const u32 rows = __reduce_or_sync(SSB_FULL, pass);
    u32 live = 0;
#pragma unroll
    for (u32 k = 0; k < TS_DFOR_TILE_BLOCKS; ++k) live |= (u32)(k < q.blocks && ((rows >> (4 * k)) & 0xFu)) << k;
    if (SPARSE && SSB_FOR_SPARSE > 0) {
        const u32 n = __reduce_add_sync(SSB_FULL, __popc(pass));
        if (q.equal && n <= SSB_FOR_SPARSE_EQUAL) {
            ssb_for_sparse_values<true>(base, q, live, rows, pass, v);
            return;
        }
        if (!q.equal && n <= SSB_FOR_SPARSE) {
            ssb_for_sparse_values<false>(base, q, live, rows, pass, v);
            return;
        }
    }
    if (q.equal) ssb_for_batch_words<true>(base, q, live, v);
    else ssb_for_batch_words<false>(base, q, live, v);
}

// CHECKED: the column's tiles were checked when it became resident (SSB_FOR_CHECKED above);
// only the batched form has that path, and the sparse one (SPARSE) is built on it.
template <bool CHECKED = false, bool SPARSE = false>
__device__ __forceinline__ void ssb_load_for(const u32* __restrict__ g, const ChunkDesc& c, u32 local, u64* status,
                                             u32 pass, u32 (&v)[SSB_ROWS]) {
    if (SSB_FOR_BATCH || CHECKED) {
        ssb_load_for_batch<CHECKED, SPARSE>(g, c, local, status, pass, v);
        return;
    }
    const ForWarpSlab q = ssb_for_meta(g, c, local, status);
    const u32* __restrict__ base = ts_opaque_ptr(g + q.L.data + 1);
    u32 w[TS_FOR_MINIBLOCKS] = {0, 0, 0, 0}, items[TS_FOR_MINIBLOCKS];
#pragma unroll
    for (u32 k = 0; k < TS_DFOR_TILE_BLOCKS; ++k) {
        if (k < q.blocks && ssb_stripe_any(pass, k)) {
            if (q.equal) {
                if (SSB_FOR_LEAN) ssb_for_block_equal(base, q, k, w, items);
                else LoadBitPackWarpBlock<true>(base, q, k, w, items);
            } else {
                LoadBitPackWarpBlock<false>(base, q, k, w, items);
            }
#pragma unroll
            for (u32 m = 0; m < TS_FOR_MINIBLOCKS; ++m) v[4 * k + m] = items[m];
        }
    }
}

// ---- DFOR ---------------------------------------------------------------------------------

struct SsbDforTile {
    ForWarpSlab q;
    u32 first;  // the tile's first_value
};

// dfor.md's checks of the tile's block_starts and blocks, by the warp, reported with the keys
// ts_load_for_slab uses (so the host maps them to the same errors as the decoder's).
__device__ __forceinline__ SsbDforTile ssb_dfor_meta(const u32* __restrict__ g, const ChunkDesc c, u32 local,
                                                  u64* status) {
    const u32 l = threadIdx.x & 31;
    SsbDforTile t;
    ForWarpSlab& q = t.q;
    q.L = ts_chunk_layout(c, TS_FOR_BLOCK_VALUES);
    q.k0 = local * TS_DFOR_TILE_BLOCKS;
    q.blocks = q.k0 < q.L.block_count ? ts_min(TS_DFOR_TILE_BLOCKS, q.L.block_count - q.k0) : 0u;
    const u32 data_len = q.L.data_len;
    const u32 e = l <= q.blocks ? __ldg(&g[q.L.block_starts + q.k0 + l]) : 0u;
    const u32 prev = __shfl_up_sync(SSB_FULL, e, 1);
    const u32 next = __shfl_down_sync(SSB_FULL, e, 1);
    if (l <= q.blocks) {
        // Entry 0 must leave room for the tile's first_value (one word before it).
        const bool entry_ok = e <= data_len && e >= (l == 0 ? 1u : prev);
        if (!entry_ok && (l > 0 || q.k0 == 0)) ts_report(status, TS_CLASS_BLOCK_STARTS, q.k0 + l, TS_ST_BLOCK_START, e);
    }
    u32 ref = 0, bww = 0;
    bool ok = false;
    if (l < q.blocks && e <= next && next <= data_len) {
        u32 len = next - e;
        // The next tile's first_value takes the last word of the range of a tile's last block.
        if (l == TS_DFOR_TILE_BLOCKS - 1 && q.k0 + l + 1 < q.L.block_count) len = len > 1 ? len - 1 : 0u;
        if (len >= 2) {
            ref = __ldg(&g[q.L.data + e]);
            bww = __ldg(&g[q.L.data + e + 1]);
        }
        u32 detail;
        const u32 code = ts_for_block_check<32>(bww, len, 1, detail);
        ok = code == 0;
        if (!ok) ts_report(status, TS_CLASS_BLOCK, q.k0 + l, code, detail);
    }
    q.start = e;
    q.ref = ok ? ref : 0u;
    q.bww = ok ? bww : 0u;
    q.ok = __ballot_sync(SSB_FULL, ok);
    q.equal = false;
    const u32 b0 = __shfl_sync(SSB_FULL, e, 0);
    t.first = q.blocks > 0 && b0 >= 1 && b0 <= data_len ? __ldg(&g[q.L.data + b0 - 1]) : 0u;
    return t;
}

__device__ __forceinline__ void ssb_load_dfor(const u32* __restrict__ g, const ChunkDesc& c, u32 local, u64* status,
                                              u32 (&v)[SSB_ROWS]) {
    const SsbDforTile t = ssb_dfor_meta(g, c, local, status);
    const u32* __restrict__ base = ts_opaque_ptr(g + t.q.L.data + 1);
    u32 w[TS_FOR_MINIBLOCKS] = {0, 0, 0, 0}, items[TS_FOR_MINIBLOCKS];
    u32 carry = t.first;
#pragma unroll
    for (u32 k = 0; k < TS_DFOR_TILE_BLOCKS; ++k) {
        if (k < t.q.blocks) {
            // Deltas (reference added) of block k, then their sums in row order.
            LoadBitPackWarpBlock<false>(base, t.q, k, w, items);
#pragma unroll
            for (u32 m = 0; m < TS_FOR_MINIBLOCKS; ++m) {
                const u32 incl = warp_inclusive_sum(items[m]);
                v[4 * k + m] = carry + incl;
                carry += __shfl_sync(SSB_FULL, incl, 31);
            }
        }
    }
}

// ---- RFOR ---------------------------------------------------------------------------------

__device__ __forceinline__ RforBlock<32> ssb_rfor_meta(const u32* __restrict__ g, const ChunkDesc c, u32 local,
                                                    SsbWarpStorage* s, u64* status) {
    const ChunkLayout L = ts_chunk_layout(c, TS_RFOR_BLOCK_VALUES);
    if (local >= L.block_count) {  // no such block: nothing to read (the tile has no rows)
        RforBlock<32> b = {};
        b.mode = TS_RFOR_CORRUPT;
        return b;
    }
    return LoadRBitPackWarp<32>(g, c, L, local, 0u, *s, status);
}

// The rows of a block ssb_rfor_meta decoded, into v (a corrupt block leaves v as it is).
__device__ __forceinline__ void ssb_rfor_rows(const RforBlock<32>& blk, const SsbWarpStorage* s,
                                              u32 (&v)[SSB_ROWS]) {
    const u32 l = threadIdx.x & 31;
    if (blk.mode == TS_RFOR_RUNS) {
        // Row p's run is the number of run starts at rows 1 .. p (flag byte p is 1 iff a run
        // other than the first starts there; there are r - 1, so every index is < r).
        const u8* flag = reinterpret_cast<const u8*>(s->start_flags);
        const u32 le = (2u << l) - 1u;  // lanes 0 .. l
        u32 run = 0;
#pragma unroll
        for (u32 i = 0; i < SSB_ROWS; ++i) {
            const u32 starts = __ballot_sync(SSB_FULL, flag[ssb_row(i)] != 0);
            v[i] = s->run_val[run + __popc(starts & le)];
            run += __popc(starts);
        }
    } else if (blk.mode == TS_RFOR_IDENTITY) {
        // Row p is run p: entry l of value miniblock i (reads clamped to the block's words).
#pragma unroll
        for (u32 i = 0; i < SSB_ROWS; ++i) {
            const u32 bw = __shfl_sync(SSB_FULL, blk.mb_bw, i);  // row 32i + l: miniblock i
            const u32 bit = __shfl_sync(SSB_FULL, blk.mb_bit, i) + l * bw;
            v[i] = blk.vref + rfor_entry<32>(blk.w, blk.last, bit, bw);
        }
    } else if (blk.mode == TS_RFOR_ONE_RUN) {
#pragma unroll
        for (u32 i = 0; i < SSB_ROWS; ++i) v[i] = blk.one;
    }
}

__device__ __forceinline__ void ssb_load_rfor(const u32* __restrict__ g, const ChunkDesc& c, u32 local, u64* status,
                                              SsbWarpStorage* s, u32 (&v)[SSB_ROWS]) {
    ssb_rfor_rows(ssb_rfor_meta(g, c, local, s, status), s, v);
}

// ---- plain --------------------------------------------------------------------------------

__device__ __forceinline__ void ssb_load_plain(const u32* __restrict__ g, const ChunkDesc& c, u32 local, u32 pass,
                                               u32 (&v)[SSB_ROWS]) {
    const u32 first = local * TS_TILE_VALUES;
    const u32* __restrict__ p = g + c.payload_word + first;
#pragma unroll
    for (u32 i = 0; i < SSB_ROWS; ++i)
        if (((pass >> i) & 1u) && first + ssb_row(i) < c.total_count) v[i] = __ldg(p + ssb_row(i));
}

// A tile's 16 values of one lane, as a non-inlined loader returns them.
struct SsbRows {
    u32 v[SSB_ROWS];
};

// Every codec's loader in one non-inlined function: a query loads several columns, and with
// the loaders inlined at every load the program grows by several thousand instructions a load
// (the driver's JIT then takes tens of seconds a query).
__device__ __noinline__ SsbRows ssb_load_tile(const u32* __restrict__ g, const SsbChunk* __restrict__ chunks,
                                             u64* __restrict__ status, u32 ci, u32 local, u32 pass,
                                             SsbWarpStorage* s, u64* qs) {
    SsbRows r;
#pragma unroll
    for (u32 i = 0; i < SSB_ROWS; ++i) r.v[i] = 0;
    const ChunkDesc c = ts_load_chunk(reinterpret_cast<const ChunkDesc*>(&chunks[ci].desc), 0);
    const u32 codec = __ldg(&chunks[ci].codec);
    switch (codec) {
        case SSB_FOR: ssb_load_for(g, c, local, status + ci, pass, r.v); break;
        case SSB_DFOR: ssb_load_dfor(g, c, local, status + ci, r.v); break;
        case SSB_RFOR: ssb_load_rfor(g, c, local, status + ci, s, r.v); break;
        case SSB_PLAIN: ssb_load_plain(g, c, local, pass, r.v); break;
        default:
            if ((threadIdx.x & 31) == 0) ssb_report(qs, SSB_ST_BAD_CODEC, codec);
    }
    return r;
}

// ---- FOR in the lane layout ---------------------------------------------------------------
//
// A resident copy of a FOR column (src/ssb/lanes.rs has the layout, made at upload; the
// program reads it with codegen::Loader::Lanes). Per tile, one reference and one bit_width for
// its 512 rows, and each lane's 16 rows (32 i + l, the rows ssb_row gives) packed in the lane's
// own stream: word k of lane l at data word 32 k + l, so a warp's load of word k is one
// coalesced 128-byte row and a lane never needs another lane's bits. The bit_width is a
// template argument in each case of the switch, so every value's word and shift are constants:
// a shift (or a funnel shift when it straddles two words), a mask and the add of the reference.
// A tile starts on a word edge or half-way into one (16 bit_width bits a lane a tile); a
// half-way tile is first realigned by a funnel shift of 16 a word.

#define SSB_FOR_LANES 5u

template <u32 W>
__device__ __forceinline__ void ssb_lanes_unpack(const u32* __restrict__ p, bool half, u32 ref,
                                                 u32 (&v)[SSB_ROWS]) {
    // Words of a lane's 16 W bits from a word edge; an even width from half-way needs one more.
    constexpr u32 NA = (W + 1) / 2;
    constexpr bool EXTRA = W > 0 && (W % 2) == 0;
    u32 x[SSB_ROWS + 1];  // the first NA + 1 used
#pragma unroll
    for (u32 j = 0; j < NA; ++j) x[j] = __ldg(p + 32 * j);
    x[NA] = (EXTRA && half) ? __ldg(p + 32 * NA) : 0u;
    if (half) {
#pragma unroll
        for (u32 j = 0; j < NA; ++j) x[j] = __funnelshift_r(x[j], x[j + 1], 16);
    }
#pragma unroll
    for (u32 i = 0; i < SSB_ROWS; ++i) {
        constexpr u32 MASK = W >= 32 ? 0xFFFFFFFFu : (1u << W) - 1u;
        const u32 b = i * W, k = b >> 5, s = b & 31u;
        u32 raw;
        if constexpr (W == 0) raw = 0u;
        else if constexpr (W >= 32) raw = x[i];
        else if (s + W <= 32) raw = (x[k] >> s) & MASK;
        else raw = __funnelshift_r(x[k], x[k + 1], s) & MASK;
        v[i] = ref + raw;
    }
}

#define SSB_LANES_CASE(W)                                                   \
    case W:                                                                 \
        if (W + 1 > LO && W <= HI) ssb_lanes_unpack<W>(p, half, m.x, v);   \
        break;

// LO..HI: the bit_widths the column's tiles have (the generator reads them from the copy): the
// switch holds only those cases, and a tile of another width is reported, never decoded.
// A tile's entry in a resident copy's tile table (both layouts): the chunk's words, where its
// data area starts, the tile's two table words (reference, start << 6 | bit_width), and whether
// the tile and the table lie inside the chunk (else m is zeros).
struct SsbCopyTile {
    const u32* base;
    u32 data;
    uint2 m;
    bool ok;
};

__device__ __forceinline__ SsbCopyTile ssb_copy_tile(const u32* __restrict__ g, const ChunkDesc& c, u32 local) {
    SsbCopyTile e;
    const u32 tiles = (u32)(((u64)c.total_count + TS_TILE_VALUES - 1) / TS_TILE_VALUES);
    e.data = (2u * tiles + 31u) & ~31u;
    e.base = g + c.payload_word;
    e.ok = local < tiles && e.data <= c.payload_words;
    e.m = make_uint2(0u, 0u);
    // The chunk starts on a 32-word edge, so the tile's two table words are one 8-byte load.
    if (e.ok) e.m = __ldg(reinterpret_cast<const uint2*>(e.base) + local);
    return e;
}

template <u32 LO, u32 HI>
__device__ __forceinline__ void ssb_load_for_lanes(const u32* __restrict__ g, const ChunkDesc& c, u32 ci, u32 local,
                                                   u64* qs, u32 (&v)[SSB_ROWS]) {
    const SsbCopyTile e = ssb_copy_tile(g, c, local);
    const uint2 m = e.m;
    const u32 w = m.y & 63u, o16 = m.y >> 6;
    const bool half = (o16 & 1u) != 0;
    const u32 need = (16u * (o16 & 1u) + 16u * w + 31u) >> 5;
    const bool ok =
        e.ok && w + 1 > LO && w <= HI && (u64)e.data + 32ull * ((u64)(o16 >> 1) + need) <= c.payload_words;
    if (!ok) {
        if ((threadIdx.x & 31) == 0) ssb_report(qs, SSB_ST_LANES, ci);
        return;
    }
    const u32* __restrict__ p = e.base + e.data + 32u * (o16 >> 1) + (threadIdx.x & 31u);
    switch (w) {
        SSB_LANES_CASE(0) SSB_LANES_CASE(1) SSB_LANES_CASE(2) SSB_LANES_CASE(3) SSB_LANES_CASE(4)
        SSB_LANES_CASE(5) SSB_LANES_CASE(6) SSB_LANES_CASE(7) SSB_LANES_CASE(8) SSB_LANES_CASE(9)
        SSB_LANES_CASE(10) SSB_LANES_CASE(11) SSB_LANES_CASE(12) SSB_LANES_CASE(13) SSB_LANES_CASE(14)
        SSB_LANES_CASE(15) SSB_LANES_CASE(16) SSB_LANES_CASE(17) SSB_LANES_CASE(18) SSB_LANES_CASE(19)
        SSB_LANES_CASE(20) SSB_LANES_CASE(21) SSB_LANES_CASE(22) SSB_LANES_CASE(23) SSB_LANES_CASE(24)
        SSB_LANES_CASE(25) SSB_LANES_CASE(26) SSB_LANES_CASE(27) SSB_LANES_CASE(28) SSB_LANES_CASE(29)
        SSB_LANES_CASE(30) SSB_LANES_CASE(31) SSB_LANES_CASE(32)
        default: break;
    }
}
#undef SSB_LANES_CASE

// SsbLoadAs for a column read from its lane-layout copy (chunks of codec SSB_FOR_LANES), always
// expanded at the load.
template <u32 LO, u32 HI>
__device__ __forceinline__ void SsbLoadLanes(const u32* __restrict__ g, const SsbChunk* __restrict__ chunks,
                                             u64* __restrict__ status, u32 ci, u32 local, u32 pass,
                                             u32 (&v)[SSB_ROWS], SsbWarpStorage* s, u64* qs) {
    (void)status;
    (void)s;
#pragma unroll
    for (u32 i = 0; i < SSB_ROWS; ++i) v[i] = 0;
    if (!SsbAny(pass)) return;
    const u32 codec = __ldg(&chunks[ci].codec);
    if (codec != SSB_FOR_LANES) {
        if ((threadIdx.x & 31) == 0) ssb_report(qs, SSB_ST_CODEC_MISMATCH, codec);
        return;
    }
    const ChunkDesc c = ts_load_chunk(reinterpret_cast<const ChunkDesc*>(&chunks[ci].desc), 0);
    ssb_load_for_lanes<LO, HI>(g, c, ci, local, qs, v);
}

// ---- RFOR in the run-start layout ---------------------------------------------------------
//
// A resident copy of an RFOR column (src/ssb/lanes.rs, encode_runs; read by codegen::Loader::
// Lanes programs): per tile, 16 flag words (bit l of word i: row 32 i + l starts a run; row 0
// always does) and the runs' values FOR-packed in order at one bit_width. Lanes 0..15 read the
// flag words in one load, a 16-lane scan of their popcounts gives the runs before each item,
// and the row held as item i by lane l is run pre_i + popc(flags_i & lanes 0..l) - 1: no run
// lengths to expand, no flag bytes to scatter. Run values are read through L1 (a warp's reads
// lie in the tile's few value words), every index clamped to the tile's last value word.

#define SSB_RFOR_STARTS 6u

struct SsbStartsTile {
    const u32* vals;  // the tile's run values (global memory)
    u32 last;         // index of their last word: reads are clamped to it
    u32 w, ref;       // bit_width and reference of the run values
    u32 f;            // lane l < 16: flag word l (rows 32 l .. 32 l + 31)
    u32 pre;          // lane l < 16: runs started before row 32 l
    u32 r;            // runs in the tile
    bool ok;          // the tile passed its checks (warp-uniform; else reported)
};

__device__ __forceinline__ SsbStartsTile ssb_starts_meta(const u32* __restrict__ g, const ChunkDesc& c, u32 ci,
                                                         u32 local, u64* qs) {
    const u32 l = threadIdx.x & 31;
    SsbStartsTile t;
    const SsbCopyTile e = ssb_copy_tile(g, c, local);
    const u32* __restrict__ base = e.base;
    bool ok = e.ok;
    t.w = e.m.y & 63u;
    t.ref = e.m.x;
    const u64 at = (u64)e.data + (e.m.y >> 6);
    ok = ok && t.w <= 32 && at + 16 <= c.payload_words;
    t.f = (ok && l < 16) ? __ldg(base + at + l) : 0u;
    u32 incl = __popc(t.f);
#pragma unroll
    for (u32 d = 1; d < 16; d <<= 1) {
        const u32 y = __shfl_up_sync(SSB_FULL, incl, d);
        if (l >= d) incl += y;
    }
    t.r = __shfl_sync(SSB_FULL, incl, 15);
    t.pre = incl - __popc(t.f);
    const u32 nw = (u32)(((u64)t.r * t.w + 31) >> 5);
    ok = ok && (__shfl_sync(SSB_FULL, t.f, 0) & 1u) != 0 && at + 16 + nw <= c.payload_words;
    t.ok = ok;
    t.vals = base + (ok ? at + 16 : 0);
    t.last = nw > 0 ? nw - 1 : 0u;
    if (!ok && l == 0) ssb_report(qs, SSB_ST_LANES, ci);
    return t;
}

// Run j's value (j < t.r).
__device__ __forceinline__ u32 ssb_starts_value(const SsbStartsTile& t, u32 j) {
    if (t.w == 0) return t.ref;
    const u32 bit = j * t.w, i = bit >> 5;
    const u32 a = __ldg(t.vals + ts_min(i, t.last)), b = __ldg(t.vals + ts_min(i + 1, t.last));
    return t.ref + (__funnelshift_r(a, b, bit) & rfor_mask(t.w));
}

// The run of the row held as item i by this lane (< t.r).
__device__ __forceinline__ u32 ssb_starts_run(const SsbStartsTile& t, u32 i, u32 le) {
    const u32 fi = __shfl_sync(SSB_FULL, t.f, i), pi = __shfl_sync(SSB_FULL, t.pre, i);
    return pi + __popc(fi & le) - 1u;
}

// The rows' values: each run's value into the warp's run_val (lane l: runs l, l + 32, ...),
// then each row's from its run.
__device__ __forceinline__ void ssb_load_rfor_starts(const u32* __restrict__ g, const ChunkDesc& c, u32 ci,
                                                     u32 local, u64* qs, SsbWarpStorage* s, u32 (&v)[SSB_ROWS]) {
    const SsbStartsTile t = ssb_starts_meta(g, c, ci, local, qs);
    if (!t.ok) return;
    const u32 l = threadIdx.x & 31;
    __syncwarp();  // the previous tile's reads of run_val are done
    for (u32 j = l; j < t.r; j += 32) s->run_val[j] = ssb_starts_value(t, j);
    __syncwarp();
    const u32 le = (2u << l) - 1u;
#pragma unroll
    for (u32 i = 0; i < SSB_ROWS; ++i) v[i] = s->run_val[ssb_starts_run(t, i, le)];
}

// ---- loaders specialized to one codec ----------------------------------------------------
//
// The generator knows each column's codecs when the query runs on uploaded columns: when every
// chunk of a column has the same codec (auto picks one per column on SSB's lineorder), it emits
// SsbLoadAs<CODEC, INLINE> instead of SsbLoad: no switch, and with INLINE no call either (the
// loader is expanded at the load). A chunk of another codec (the chunk table is data; the
// program is text generated from it) decodes to zeros and is reported as SSB_ST_CODEC_MISMATCH,
// never read as the wrong codec.


template <u32 CODEC, bool SPARSE = false>
__device__ __forceinline__ void ssb_load_known(const u32* __restrict__ g, const SsbChunk* __restrict__ chunks,
                                               u64* __restrict__ status, u32 ci, u32 local, u32 pass,
                                               SsbWarpStorage* s, u64* qs, u32 (&v)[SSB_ROWS]) {
#pragma unroll
    for (u32 i = 0; i < SSB_ROWS; ++i) v[i] = 0;
    const u32 codec = __ldg(&chunks[ci].codec);
    if (codec != (CODEC == SSB_FOR_CHECKED ? SSB_FOR : CODEC)) {
        if ((threadIdx.x & 31) == 0) ssb_report(qs, SSB_ST_CODEC_MISMATCH, codec);
        return;
    }
    const ChunkDesc c = ts_load_chunk(reinterpret_cast<const ChunkDesc*>(&chunks[ci].desc), 0);
    if (CODEC == SSB_FOR_CHECKED) ssb_load_for<true, SPARSE>(g, c, local, status + ci, pass, v);
    else if (CODEC == SSB_FOR) ssb_load_for<false, SPARSE>(g, c, local, status + ci, pass, v);
    else if (CODEC == SSB_DFOR) ssb_load_dfor(g, c, local, status + ci, v);
    else if (CODEC == SSB_RFOR) ssb_load_rfor(g, c, local, status + ci, s, v);
    else if (CODEC == SSB_RFOR_STARTS) ssb_load_rfor_starts(g, c, ci, local, qs, s, v);
    else ssb_load_plain(g, c, local, pass, v);
}

template <u32 CODEC, bool SPARSE>
__device__ __noinline__ SsbRows ssb_load_tile_as(const u32* __restrict__ g, const SsbChunk* __restrict__ chunks,
                                                u64* __restrict__ status, u32 ci, u32 local, u32 pass,
                                                SsbWarpStorage* s, u64* qs) {
    SsbRows r;
    ssb_load_known<CODEC, SPARSE>(g, chunks, status, ci, local, pass, s, qs, r.v);
    return r;
}

// SsbLoad for a column whose chunks all have codec CODEC: expanded in place (INLINE) or one
// call of the codec's own loader. SPARSE (FOR only): a load after a filter or probe, where the
// sparse FOR path may run (SSB_FOR_SPARSE).
template <u32 CODEC, bool INLINE, bool SPARSE = false>
__device__ __forceinline__ void SsbLoadAs(const u32* __restrict__ g, const SsbChunk* __restrict__ chunks,
                                          u64* __restrict__ status, u32 ci, u32 local, u32 pass, u32 (&v)[SSB_ROWS],
                                          SsbWarpStorage* s, u64* qs) {
    if (!SsbAny(pass)) {
#pragma unroll
        for (u32 i = 0; i < SSB_ROWS; ++i) v[i] = 0;
        return;
    }
    if (INLINE) {
        ssb_load_known<CODEC, SPARSE>(g, chunks, status, ci, local, pass, s, qs, v);
    } else {
        const SsbRows r = ssb_load_tile_as<CODEC, SPARSE>(g, chunks, status, ci, local, pass, s, qs);
#pragma unroll
        for (u32 i = 0; i < SSB_ROWS; ++i) v[i] = r.v[i];
    }
}

// Tile `local` of chunk `ci` of a column (payload words `g`, chunk table `chunks`, per-chunk
// status `status`) into v: v[i] the value of row ssb_row(i), for the rows of `pass` at least
// (others may hold anything). `s` is the warp's SsbWarpStorage.
__device__ __forceinline__ void SsbLoad(const u32* __restrict__ g, const SsbChunk* __restrict__ chunks,
                                        u64* __restrict__ status, u32 ci, u32 local, u32 pass, u32 (&v)[SSB_ROWS],
                                        SsbWarpStorage* s, u64* qs) {
    if (!SsbAny(pass)) {
#pragma unroll
        for (u32 i = 0; i < SSB_ROWS; ++i) v[i] = 0;
        return;
    }
    const SsbRows r = ssb_load_tile(g, chunks, status, ci, local, pass, s, qs);
#pragma unroll
    for (u32 i = 0; i < SSB_ROWS; ++i) v[i] = r.v[i];
}

template <typename Pred>
__device__ __forceinline__ void SsbFilter(const u32 (&v)[SSB_ROWS], u32& pass, Pred pred) {
#pragma unroll
    for (u32 i = 0; i < SSB_ROWS; ++i) pass &= ~((u32)!pred(v[i]) << i);
}

__device__ __forceinline__ u32 ssb_hash(u32 key, u32 bits) { return (key * 0x9E3779B1u) >> (32 - bits); }

// Probes the table (2^bits slots) for each passing row's key; a miss clears the row, a hit
// adds payload * stride to the row's group index.
__device__ __forceinline__ void SsbProbe(const u32 (&keys)[SSB_ROWS], u32& pass, u32 (&group)[SSB_ROWS],
                                         const u64* __restrict__ ht, u32 bits, u32 stride) {
    const u32 mask = (1u << bits) - 1;
#pragma unroll
    for (u32 i = 0; i < SSB_ROWS; ++i) {
        if (!((pass >> i) & 1u)) continue;
        u32 slot = ssb_hash(keys[i], bits);
        bool found = false;
        u32 payload = 0;
        // At most every slot once: a table is never full (the build reports it), but a bound
        // keeps a corrupt table from looping.
        for (u32 n = 0; n <= mask; ++n) {
            const u64 e = __ldg(&ht[slot]);
            if (e == SSB_EMPTY) break;
            if ((u32)(e >> 32) == keys[i]) {
                found = true;
                payload = (u32)e;
                break;
            }
            slot = (slot + 1) & mask;
        }
        if (!found) pass &= ~(1u << i);
        group[i] += payload * stride;
    }
}

// Inserts the passing rows' (key, payload - base) into the table; payloads must be < card.
__device__ __forceinline__ void SsbBuild(const u32 (&keys)[SSB_ROWS], const u32 (&payload)[SSB_ROWS], u32 pass,
                                         u64* __restrict__ ht, u32 bits, u32 base, u32 card, u64* qs) {
    const u32 mask = (1u << bits) - 1;
#pragma unroll
    for (u32 i = 0; i < SSB_ROWS; ++i) {
        if (!((pass >> i) & 1u)) continue;
        const u32 p = payload[i] - base;
        if (p >= card) {
            ssb_report(qs, SSB_ST_PAYLOAD_RANGE, payload[i]);
            continue;
        }
        if (keys[i] == 0xFFFFFFFFu) {
            ssb_report(qs, SSB_ST_RESERVED_KEY, keys[i]);
            continue;
        }
        const u64 entry = ((u64)keys[i] << 32) | p;
        u32 slot = ssb_hash(keys[i], bits);
        bool placed = false;
        for (u32 n = 0; n <= mask; ++n) {
            const u64 prev = atomicCAS(&ht[slot], SSB_EMPTY, entry);
            if (prev == SSB_EMPTY) {
                placed = true;
                break;
            }
            if ((u32)(prev >> 32) == keys[i]) {
                ssb_report(qs, SSB_ST_DUPLICATE_KEY, keys[i]);
                placed = true;
                break;
            }
            slot = (slot + 1) & mask;
        }
        if (!placed) ssb_report(qs, SSB_ST_TABLE_FULL, keys[i]);
    }
}

// ---- probing per run, not per row (codegen::Loader::Runs) --------------------------------
//
// A foreign key stored as RFOR (lo_orderdate, lo_custkey: an order's line items share them)
// holds about a quarter as many runs as rows. SsbProbeRuns decodes the tile's block
// (LoadRBitPackWarp: the run values and the run-start flags in the warp's storage), probes the
// hash table once per run, overwriting the run's value with the probe's result (its payload, or
// SSB_RUN_MISS), and then gives each row its run's result, found as ssb_rfor_rows finds a row's
// value (a ballot of the start flags of a 32-row item, a popcount). So a tile costs one probe
// per run where SsbProbe costs one per row item (a warp executes an item's probe when any of its
// lanes still holds that row, which after a filter passing a tenth of the rows is nearly always),
// and the key's row values are never formed. The generator uses it for an RFOR key that no other
// step of the query reads.

// No payload: payloads are < card <= 2^32 - 1 (the build rejects any other).
#define SSB_RUN_MISS 0xFFFFFFFFu

// The payload of `key`, or SSB_RUN_MISS, given the entry `e` already read from its first slot
// `slot`: linear probing as SsbProbe, every slot at most once (so a corrupt table cannot loop).
__device__ __forceinline__ u32 ssb_probe_from(u64 e, u32 key, u32 slot, const u64* __restrict__ ht, u32 mask) {
    for (u32 n = 0; n <= mask; ++n) {
        if (e == SSB_EMPTY) return SSB_RUN_MISS;
        if ((u32)(e >> 32) == key) return (u32)e;
        slot = (slot + 1) & mask;
        e = __ldg(&ht[slot]);
    }
    return SSB_RUN_MISS;
}

// `key`'s payload or SSB_RUN_MISS, probed from its first slot.
__device__ __forceinline__ u32 ssb_probe_key(u32 key, const u64* __restrict__ ht, u32 bits, u32 mask) {
    const u32 slot = ssb_hash(key, bits);
    return ssb_probe_from(__ldg(&ht[slot]), key, slot, ht, mask);
}

// A probe's result for the lane's row i: a miss clears the row, a payload adds to its group.
__device__ __forceinline__ void ssb_take_probe(u32 res, u32 i, u32& pass, u32 (&group)[SSB_ROWS], u32 stride) {
    if (res == SSB_RUN_MISS) pass &= ~(1u << i);
    else group[i] += res * stride;
}

// SsbProbe with the first slots of a stripe's four rows read together (their loads in flight
// at once, not one after another), then each row's probe continued from its entry. Same result.
__device__ __forceinline__ void SsbProbe4(const u32 (&keys)[SSB_ROWS], u32& pass, u32 (&group)[SSB_ROWS],
                                          const u64* __restrict__ ht, u32 bits, u32 stride) {
    const u32 mask = (1u << bits) - 1;
#pragma unroll
    for (u32 k = 0; k < SSB_ROWS / 4; ++k) {
        if (!__any_sync(SSB_FULL, (pass >> (4 * k)) & 0xFu)) continue;
        u64 e[4];
#pragma unroll
        for (u32 m = 0; m < 4; ++m) {
            const u32 i = 4 * k + m;
            e[m] = (pass >> i) & 1u ? __ldg(&ht[ssb_hash(keys[i], bits)]) : SSB_EMPTY;
        }
#pragma unroll
        for (u32 m = 0; m < 4; ++m) {
            const u32 i = 4 * k + m;
            if (!((pass >> i) & 1u)) continue;
            ssb_take_probe(ssb_probe_from(e[m], keys[i], ssb_hash(keys[i], bits), ht, mask), i, pass, group, stride);
        }
    }
}

// Runs 0..r-1 of a tile probed once each, the result (payload or SSB_RUN_MISS) in the warp's
// run_val: lane l takes runs l, l + 32, ..., four a pass with their first slots read together.
// key(j) is run j's key (it may read run_val[j], which is overwritten only after).
template <typename Key>
__device__ __forceinline__ void ssb_probe_runs_into(u32 r, Key key_of, const u64* __restrict__ ht, u32 bits,
                                                    u32 mask, SsbWarpStorage* s) {
    const u32 l = threadIdx.x & 31;
    for (u32 j0 = l; j0 < r; j0 += 128) {
        u32 key[4];
        u64 e[4];
#pragma unroll
        for (u32 x = 0; x < 4; ++x) {
            const u32 j = j0 + 32 * x;
            key[x] = j < r ? key_of(j) : 0u;
            e[x] = j < r ? __ldg(&ht[ssb_hash(key[x], bits)]) : SSB_EMPTY;
        }
#pragma unroll
        for (u32 x = 0; x < 4; ++x) {
            const u32 j = j0 + 32 * x;
            if (j < r) s->run_val[j] = ssb_probe_from(e[x], key[x], ssb_hash(key[x], bits), ht, mask);
        }
    }
}

// Probes the table for the key column's tile (chunk ci, tile `local`; every chunk RFOR, as the
// generator found it) as SsbProbe does with its rows, a run at a time. A chunk of another codec
// is reported (SSB_ST_CODEC_MISMATCH) and probed as zeros, as SsbLoadAs loads it; a block that is
// not RUNS (IDENTITY: no repeats; ONE_RUN; corrupt: reported, zeros) is probed per row, except
// that ONE_RUN's one value is probed once.
__device__ __forceinline__ void SsbProbeRuns(const u32* __restrict__ g, const SsbChunk* __restrict__ chunks,
                                             u64* __restrict__ status, u32 ci, u32 local, u32& pass,
                                             u32 (&group)[SSB_ROWS], const u64* __restrict__ ht, u32 bits,
                                             u32 stride, SsbWarpStorage* s, u64* qs) {
    if (!SsbAny(pass)) return;
    const u32 mask = (1u << bits) - 1;
    u32 v[SSB_ROWS];
#pragma unroll
    for (u32 i = 0; i < SSB_ROWS; ++i) v[i] = 0;
    const u32 codec = __ldg(&chunks[ci].codec);
    if (codec != SSB_RFOR) {
        if ((threadIdx.x & 31) == 0) ssb_report(qs, SSB_ST_CODEC_MISMATCH, codec);
        SsbProbe(v, pass, group, ht, bits, stride);
        return;
    }
    const ChunkDesc c = ts_load_chunk(reinterpret_cast<const ChunkDesc*>(&chunks[ci].desc), 0);
    const RforBlock<32> blk = ssb_rfor_meta(g, c, local, s, status + ci);
    if (blk.mode == TS_RFOR_ONE_RUN) {
        const u32 res = ssb_probe_key(blk.one, ht, bits, mask);
        if (res == SSB_RUN_MISS) {
            pass = 0;
        } else {
#pragma unroll
            for (u32 i = 0; i < SSB_ROWS; ++i) group[i] += res * stride;
        }
        return;
    }
    if (blk.mode != TS_RFOR_RUNS) {
        ssb_rfor_rows(blk, s, v);
        SsbProbe(v, pass, group, ht, bits, stride);
        return;
    }
    const u32 l = threadIdx.x & 31;
    // r - 1 run starts, counted per stripe in the bytes of tot4 (each <= 128).
    const u32 t4 = blk.tot4;
    const u32 r = 1u + (t4 & 0xFFu) + ((t4 >> 8) & 0xFFu) + ((t4 >> 16) & 0xFFu) + (t4 >> 24);
    ssb_probe_runs_into(r, [&](u32 j) { return s->run_val[j]; }, ht, bits, mask, s);
    __syncwarp();
    // Row p's run: the run starts at rows 1 .. p (as ssb_rfor_rows); every index is < r.
    const u8* flag = reinterpret_cast<const u8*>(s->start_flags);
    const u32 le = (2u << l) - 1u;
    u32 run = 0;
#pragma unroll
    for (u32 i = 0; i < SSB_ROWS; ++i) {
        const u32 starts = __ballot_sync(SSB_FULL, flag[ssb_row(i)] != 0);
        ssb_take_probe(s->run_val[run + __popc(starts & le)], i, pass, group, stride);
        run += __popc(starts);
    }
}

// SsbProbeRuns for a key column read from its run-start copy (chunks of codec SSB_RFOR_STARTS):
// each run's key probed once (lane l: runs l, l + 32, ...; four first slots read together), the
// result in the warp's run_val, each row given its run's. In codegen::Loader::LanesVote
// programs (SSB_LANES_VOTE, the most items), a tile where few items hold a passing row probes
// those rows alone.
__device__ __forceinline__ void SsbProbeRunStarts(const u32* __restrict__ g, const SsbChunk* __restrict__ chunks,
                                                  u64* __restrict__ status, u32 ci, u32 local, u32& pass,
                                                  u32 (&group)[SSB_ROWS], const u64* __restrict__ ht, u32 bits,
                                                  u32 stride, SsbWarpStorage* s, u64* qs) {
    (void)status;
    if (!SsbAny(pass)) return;
    const u32 codec = __ldg(&chunks[ci].codec);
    if (codec != SSB_RFOR_STARTS) {
        if ((threadIdx.x & 31) == 0) ssb_report(qs, SSB_ST_CODEC_MISMATCH, codec);
        pass = 0;
        return;
    }
    const ChunkDesc c = ts_load_chunk(reinterpret_cast<const ChunkDesc*>(&chunks[ci].desc), 0);
    const SsbStartsTile t = ssb_starts_meta(g, c, ci, local, qs);
    if (!t.ok) {
        pass = 0;
        return;
    }
    const u32 mask = (1u << bits) - 1;
    const u32 l = threadIdx.x & 31;
    const u32 le = (2u << l) - 1u;
#ifdef SSB_LANES_VOTE
    // Few items (32 rows, one a lane) still hold a passing row, by a warp vote: each passing row
    // looks its own run's key up (a run index is two shuffles and a popcount, its value a load
    // or two), item by item behind a warp-uniform branch, instead of every run of the tile
    // being probed.
    const u32 need = __reduce_or_sync(SSB_FULL, pass);
    if (__popc(need) <= SSB_LANES_VOTE) {
#pragma unroll
        for (u32 i = 0; i < SSB_ROWS; ++i) {
            if (!((need >> i) & 1u)) continue;
            const u32 run = ssb_starts_run(t, i, le);
            if (!((pass >> i) & 1u)) continue;
            ssb_take_probe(ssb_probe_key(ssb_starts_value(t, run), ht, bits, mask), i, pass, group, stride);
        }
        return;
    }
#endif
    // Every item read back, none skipped: a branch per item would keep the compiler from
    // issuing the 16 items' shared-memory loads together (measured slower).
    __syncwarp();  // the previous tile's reads of run_val are done
    ssb_probe_runs_into(t.r, [&](u32 j) { return ssb_starts_value(t, j); }, ht, bits, mask, s);
    __syncwarp();
#pragma unroll
    for (u32 i = 0; i < SSB_ROWS; ++i) {
        ssb_take_probe(s->run_val[ssb_starts_run(t, i, le)], i, pass, group, stride);
    }
}

// Per passing row i: sums[group[i]] += value(i), counts[group[i]] += 1 (value's 64 bits wrap
// like the CPU's wrapping add). `value` is computed per row where it is used, so no array of
// 64-bit values is held.
template <typename Value>
__device__ __forceinline__ void SsbAggregate(u32 pass, const u32 (&group)[SSB_ROWS], Value value,
                                             unsigned long long* __restrict__ sums,
                                             unsigned long long* __restrict__ counts, u32 n_groups, u64* qs) {
#pragma unroll
    for (u32 i = 0; i < SSB_ROWS; ++i) {
        if (!((pass >> i) & 1u)) continue;
        if (group[i] >= n_groups) {
            ssb_report(qs, SSB_ST_GROUP_RANGE, group[i]);
            continue;
        }
        atomicAdd(&sums[group[i]], (unsigned long long)value(i));
        atomicAdd(&counts[group[i]], 1ull);
    }
}

// One group: accumulate in registers...
template <typename Value>
__device__ __forceinline__ void SsbAccumulate(u32 pass, Value value, unsigned long long& sum,
                                              unsigned long long& count) {
#pragma unroll
    for (u32 i = 0; i < SSB_ROWS; ++i)
        if ((pass >> i) & 1u) sum += (unsigned long long)value(i);
    count += __popc(pass);
}

// ...and add the thread block's total once (block-wide, after the tile loop).
__device__ __forceinline__ void SsbBlockTotal(unsigned long long sum, unsigned long long count,
                                              unsigned long long* __restrict__ sums,
                                              unsigned long long* __restrict__ counts) {
    __shared__ unsigned long long part[2][SSB_WARPS];
    for (int o = 16; o > 0; o >>= 1) {
        sum += __shfl_down_sync(SSB_FULL, sum, o);
        count += __shfl_down_sync(SSB_FULL, count, o);
    }
    if ((threadIdx.x & 31) == 0) {
        part[0][threadIdx.x >> 5] = sum;
        part[1][threadIdx.x >> 5] = count;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long s = 0, c = 0;
        for (u32 w = 0; w < SSB_WARPS; ++w) {
            s += part[0][w];
            c += part[1][w];
        }
        if (c) {
            atomicAdd(&sums[0], s);
            atomicAdd(&counts[0], c);
        }
    }
}

// ---- prefetching the tiles ahead (codegen::Loader::Prefetch) -------------------------------
//
// A compressed tile's loader chases three dependent loads before its packed words (chunk table,
// block_starts, the blocks' reference and bit-width words): with one tile a warp at a time, each
// is a full round trip to memory. The probe kernel of the `pf` loader pipelines them across the
// warp's tiles: while it works on tile t it issues, per column, the L2 prefetch of the whole
// payload range of tile t + stride (from the block_starts entries it loaded during the previous
// tile, held in one register a lane), and the load of tile t + 2 stride's block_starts entries.
// So when the warp reaches a tile, its block_starts line was loaded two tiles ago and its headers
// and packed words are in L2. Prefetches are hints that read nothing into registers; every
// address prefetched lies inside the chunk's checked data range (plain: its values), and the
// loaders still check everything they read. Not the default: profiled on an H200, the kernels
// are bound by instructions more than by these waits, and the prefetches add instructions and
// read tiles that late materialization would skip (docs/gpu/ssb.md).

// tile + step when both are below total, else ~0u (no such tile; no overflow).
__device__ __forceinline__ u32 ssb_next(u32 tile, u32 step, u32 total) {
    return tile < total && step < total - tile ? tile + step : 0xFFFFFFFFu;
}

// Blocks of a tile and values of a block, per codec (RFOR's block is the tile).
template <u32 CODEC>
struct SsbTileShape {
    static const u32 BLOCKS = CODEC == SSB_RFOR ? 1u : TS_DFOR_TILE_BLOCKS;
    static const u32 VALUES = CODEC == SSB_RFOR ? TS_RFOR_BLOCK_VALUES : TS_FOR_BLOCK_VALUES;
};

// Where tile `nt` lies: its chunk's layout and first block, and the blocks it holds (0: none).
template <u32 CODEC>
__device__ __forceinline__ u32 ssb_pf_tile(const SsbChunk* __restrict__ chunks, u32 nt, u32 tiles_per_chunk,
                                           ChunkDesc& c, ChunkLayout& L, u32& k0) {
    typedef SsbTileShape<CODEC> S;
    const u32 ci = nt / tiles_per_chunk, local = nt - ci * tiles_per_chunk;
    c.payload_word = __ldg(&chunks[ci].desc.payload_word);
    c.payload_words = __ldg(&chunks[ci].desc.payload_words);
    c.total_count = __ldg(&chunks[ci].desc.total_count);
    if (CODEC == SSB_PLAIN) {
        k0 = local * TS_TILE_VALUES;
        return k0 < c.total_count ? 1u : 0u;
    }
    L = ts_chunk_layout(c, S::VALUES);
    k0 = local * S::BLOCKS;
    // block_starts must lie inside the payload (the upload checked the header; a chunk table
    // that says otherwise gets no prefetch, and the loader reports it).
    if (k0 >= L.block_count || (u64)TS_HEADER_WORDS + L.block_count + 1 > c.payload_words) return 0u;
    return ts_min(S::BLOCKS, L.block_count - k0);
}

// Stage 1, for tile `nt` (~0u: none): lane l <= blocks returns block_starts entry k0 + l.
template <u32 CODEC>
__device__ __forceinline__ u32 SsbPrefetchMeta(const u32* __restrict__ g, const SsbChunk* __restrict__ chunks, u32 nt,
                                               u32 tiles_per_chunk, u32 total_tiles) {
    if (CODEC == SSB_PLAIN || nt >= total_tiles) return 0u;
    ChunkDesc c;
    ChunkLayout L;
    u32 k0;
    const u32 nb = ssb_pf_tile<CODEC>(chunks, nt, tiles_per_chunk, c, L, k0);
    const u32 l = threadIdx.x & 31;
    return nb > 0 && l <= nb ? __ldg(&g[L.block_starts + k0 + l]) : 0u;
}

// Stage 2, for tile `nt` (~0u: none; warp-uniform): an L2 prefetch of every 128-byte line of
// the tile's payload range, found from `e` (stage 1's entries for the same tile).
template <u32 CODEC>
__device__ __forceinline__ void SsbPrefetchData(const u32* __restrict__ g, const SsbChunk* __restrict__ chunks, u32 nt,
                                                u32 e, u32 tiles_per_chunk, u32 total_tiles) {
    if (nt >= total_tiles) return;
    ChunkDesc c;
    ChunkLayout L;
    u32 k0;
    const u32 nb = ssb_pf_tile<CODEC>(chunks, nt, tiles_per_chunk, c, L, k0);
    if (nb == 0) return;
    u64 lo, hi;
    if (CODEC == SSB_PLAIN) {
        lo = c.payload_word + k0;
        hi = lo + ts_min(TS_TILE_VALUES, c.total_count - k0);
        if (c.total_count > c.payload_words) return;
    } else {
        u32 a = __shfl_sync(SSB_FULL, e, 0);
        const u32 b = __shfl_sync(SSB_FULL, e, nb);
        if (CODEC == SSB_DFOR && a >= 1) a -= 1;  // the tile's first_value precedes block 0
        if (!(a <= b && b <= L.data_len)) return;
        lo = L.data + a;
        hi = L.data + b;
    }
    const size_t p0 = reinterpret_cast<size_t>(g + lo), p1 = reinterpret_cast<size_t>(g + hi);
    for (size_t p = (p0 & ~(size_t)127) + 128 * (threadIdx.x & 31); p < p1; p += 128 * 32) {
        const size_t at = p < p0 ? p0 : p;
        asm volatile("prefetch.global.L2 [%0];" ::"l"(at));
    }
}

// The tile loop of a query kernel: warp `w` of the grid takes tiles w, w + warps, ...
#define SSB_TILE_LOOP(total_tiles)                                                                     \
    for (u32 tile = blockIdx.x * SSB_WARPS + (threadIdx.x >> 5); tile < (total_tiles); tile += gridDim.x * SSB_WARPS)

#endif
