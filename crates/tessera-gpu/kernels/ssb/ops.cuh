// ops.cuh: the device-side operators of star-join queries (docs/gpu/ssb.md). A query kernel is
// a short composition of these, emitted per query by src/ssb/codegen.rs and compiled by NVRTC;
// kernels/ssb/ssb.cu composes a few by hand so that every operator is compiled in CI.
//
// Execution shape (the paper's, section 7): a thread block of TS_THREADS threads takes one tile
// of TS_TILE_VALUES rows at a time, thread t holding rows 4t .. 4t+3 of the tile in registers
// (D = TS_ITEMS = 4). Every column of a table is chunked alike (the host checks it), so tile
// `tile` of every column covers the same rows: chunk tile / tiles_per_chunk, tile
// tile % tiles_per_chunk inside it. Each chunk of each column has its own codec (auto's choice);
// SsbLoad picks the loader per chunk (uniform across the thread block, so no divergence).
//
// Operators (block-wide ones must be called by every thread of the block):
//   SsbTileRows   rows of the tile this thread holds (0..4), from the chunk's value count
//   SsbInit       flags = 1 for the held rows, group index 0
//   SsbAny        block-wide: does any thread still hold a row? (skip loading a column if not)
//   SsbLoad       block-wide: load-and-decode a column's tile into registers
//                 (LoadBitPack / LoadDBitPack / LoadRBitPack, or plain words); the loaders'
//                 own barriers order the reuse of their shared memory from column to column
//   SsbFilter     flags &= pred(value)
//   SsbProbe      hash-table probe: drop rows whose key is absent, add payload * stride to
//                 the group index
//   SsbBuild      hash-table insert of the flagged rows' (key, payload)
//   SsbAggregate  per-row atomics into the dense (sum, count) arrays, or, for one group,
//                 SsbAccumulate in registers and SsbBlockTotal once per thread block
//
// Errors: the loaders report corrupt chunks into the column's per-chunk status (as the
// decoders do); the operators report into `qs` (the query's status word, an atomicMin of a
// code << 32 | detail): SSB_ST_* below. Nothing is written out of bounds on bad input.
#ifndef TESSERA_SSB_OPS_CUH
#define TESSERA_SSB_OPS_CUH

#include "../include/common.cuh"
#include "../int/load_bitpack.cuh"
#include "../int/load_rbitpack.cuh"

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

#define SSB_EMPTY 0xFFFFFFFFFFFFFFFFull

// One chunk of a column: where its payload lies in the column's word buffer and its codec.
struct SsbChunk {
    ChunkDesc desc;
    u32 codec;
    u32 pad;
};

__device__ __forceinline__ void ssb_report(u64* qs, u64 code, u32 detail) { atomicMin(qs, (code << 32) | detail); }

__device__ __forceinline__ u32 SsbTileRows(const SsbChunk* __restrict__ chunks, u32 ci, u32 local) {
    const u32 count = __ldg(&chunks[ci].desc.total_count);
    const u32 pos = local * TS_TILE_VALUES + threadIdx.x * TS_ITEMS;
    return pos < count ? ts_min(TS_ITEMS, count - pos) : 0u;
}

__device__ __forceinline__ void SsbInit(u32 rows, u32 (&flags)[TS_ITEMS], u32 (&group)[TS_ITEMS]) {
#pragma unroll
    for (u32 i = 0; i < TS_ITEMS; ++i) {
        flags[i] = i < rows;
        group[i] = 0;
    }
}

__device__ __forceinline__ bool SsbAny(const u32 (&flags)[TS_ITEMS]) {
    u32 any = 0;
#pragma unroll
    for (u32 i = 0; i < TS_ITEMS; ++i) any |= flags[i];
    return __syncthreads_or(any) != 0;
}

// The loaders, one non-inlined function per codec: a query loads several columns, and with
// every codec's loader inlined at every load the program grows by about 100 KB of PTX a load
// (NVRTC and the driver's JIT then take tens of seconds a query). Each keeps its shared memory
// to itself and returns the tile's 4 values in registers (a uint4 return value).
__device__ __noinline__ uint4 ssb_load_for(const u32* __restrict__ g, const ChunkDesc c, u32 local, u64* status) {
    __shared__ ForSlabStorage<32, 1> s;
    u32 items[TS_ITEMS];
    LoadBitPack<32>(g, c, local, s, items, status);
    return make_uint4(items[0], items[1], items[2], items[3]);
}

__device__ __noinline__ uint4 ssb_load_dfor(const u32* __restrict__ g, const ChunkDesc c, u32 local, u64* status) {
    __shared__ ForSlabStorage<32, 1> s;
    u32 items[TS_ITEMS];
    LoadDBitPack<32>(g, c, local, s, items, status);
    return make_uint4(items[0], items[1], items[2], items[3]);
}

__device__ __noinline__ uint4 ssb_load_rfor(const u32* __restrict__ g, const ChunkDesc c, u32 local, u64* status) {
    __shared__ RforWarpStorage<32> s[TS_THREADS / 32];
    u32 items[TS_ITEMS];
    LoadRBitPack<32>(g, c, local, s, items, status);
    return make_uint4(items[0], items[1], items[2], items[3]);
}

__device__ __forceinline__ uint4 ssb_load_plain(const u32* __restrict__ g, const ChunkDesc& c, u32 local) {
    const u32 first = local * TS_TILE_VALUES + threadIdx.x * TS_ITEMS;
    const u32* p = g + c.payload_word;
    // Plain chunks start 16-byte aligned in the column's buffer (the host pads them).
    if (first + TS_ITEMS <= c.total_count && ((c.payload_word + first) & 3u) == 0)
        return __ldg(reinterpret_cast<const uint4*>(p + first));
    u32 v[TS_ITEMS];
#pragma unroll
    for (u32 i = 0; i < TS_ITEMS; ++i) v[i] = first + i < c.total_count ? __ldg(p + first + i) : 0u;
    return make_uint4(v[0], v[1], v[2], v[3]);
}

// Tile `local` of chunk `ci` of a column (payload words `g`, chunk table `chunks`, per-chunk
// status `status`) into items: values 4t .. 4t+3 of the tile (0 past the chunk's end).
__device__ __forceinline__ void SsbLoad(const u32* __restrict__ g, const SsbChunk* __restrict__ chunks,
                                        u64* __restrict__ status, u32 ci, u32 local, u32 (&items)[TS_ITEMS],
                                        u64* qs) {
    const SsbChunk ch = chunks[ci];
    uint4 v = make_uint4(0, 0, 0, 0);
    switch (ch.codec) {
        case SSB_FOR: v = ssb_load_for(g, ch.desc, local, status + ci); break;
        case SSB_DFOR: v = ssb_load_dfor(g, ch.desc, local, status + ci); break;
        case SSB_RFOR: v = ssb_load_rfor(g, ch.desc, local, status + ci); break;
        case SSB_PLAIN: v = ssb_load_plain(g, ch.desc, local); break;
        default:
            if (threadIdx.x == 0) ssb_report(qs, SSB_ST_BAD_CODEC, ch.codec);
    }
    items[0] = v.x;
    items[1] = v.y;
    items[2] = v.z;
    items[3] = v.w;
}

template <typename Pred>
__device__ __forceinline__ void SsbFilter(const u32 (&items)[TS_ITEMS], u32 (&flags)[TS_ITEMS], Pred pred) {
#pragma unroll
    for (u32 i = 0; i < TS_ITEMS; ++i) flags[i] = flags[i] && pred(items[i]);
}

__device__ __forceinline__ u32 ssb_hash(u32 key, u32 bits) { return (key * 0x9E3779B1u) >> (32 - bits); }

// Probes the table (2^bits slots) for each flagged row's key; a miss clears the flag, a hit
// adds payload * stride to the row's group index.
__device__ __forceinline__ void SsbProbe(const u32 (&keys)[TS_ITEMS], u32 (&flags)[TS_ITEMS],
                                         u32 (&group)[TS_ITEMS], const u64* __restrict__ ht, u32 bits,
                                         u32 stride) {
    const u32 mask = (1u << bits) - 1;
#pragma unroll
    for (u32 i = 0; i < TS_ITEMS; ++i) {
        if (!flags[i]) continue;
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
        flags[i] = found;
        group[i] += payload * stride;
    }
}

// Inserts the flagged rows' (key, payload - base) into the table; payloads must be < card.
__device__ __forceinline__ void SsbBuild(const u32 (&keys)[TS_ITEMS], const u32 (&payload)[TS_ITEMS],
                                         const u32 (&flags)[TS_ITEMS], u64* __restrict__ ht, u32 bits,
                                         u32 base, u32 card, u64* qs) {
    const u32 mask = (1u << bits) - 1;
#pragma unroll
    for (u32 i = 0; i < TS_ITEMS; ++i) {
        if (!flags[i]) continue;
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

// Per flagged row: sums[group] += value, counts[group] += 1 (value's 64 bits wrap like the
// CPU's wrapping add).
__device__ __forceinline__ void SsbAggregate(const u32 (&flags)[TS_ITEMS], const u32 (&group)[TS_ITEMS],
                                             const long long (&value)[TS_ITEMS], unsigned long long* __restrict__ sums,
                                             unsigned long long* __restrict__ counts, u32 n_groups, u64* qs) {
#pragma unroll
    for (u32 i = 0; i < TS_ITEMS; ++i) {
        if (!flags[i]) continue;
        if (group[i] >= n_groups) {
            ssb_report(qs, SSB_ST_GROUP_RANGE, group[i]);
            continue;
        }
        atomicAdd(&sums[group[i]], (unsigned long long)value[i]);
        atomicAdd(&counts[group[i]], 1ull);
    }
}

// One group: accumulate in registers...
__device__ __forceinline__ void SsbAccumulate(const u32 (&flags)[TS_ITEMS], const long long (&value)[TS_ITEMS],
                                              unsigned long long& sum, unsigned long long& count) {
#pragma unroll
    for (u32 i = 0; i < TS_ITEMS; ++i)
        if (flags[i]) {
            sum += (unsigned long long)value[i];
            count += 1;
        }
}

// ...and add the thread block's total once (block-wide).
__device__ __forceinline__ void SsbBlockTotal(unsigned long long sum, unsigned long long count,
                                              unsigned long long* __restrict__ sums,
                                              unsigned long long* __restrict__ counts) {
    __shared__ unsigned long long part[2][TS_THREADS / 32];
    for (int o = 16; o > 0; o >>= 1) {
        sum += __shfl_down_sync(0xFFFFFFFFu, sum, o);
        count += __shfl_down_sync(0xFFFFFFFFu, count, o);
    }
    if ((threadIdx.x & 31) == 0) {
        part[0][threadIdx.x >> 5] = sum;
        part[1][threadIdx.x >> 5] = count;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long s = 0, c = 0;
        for (u32 w = 0; w < TS_THREADS / 32; ++w) {
            s += part[0][w];
            c += part[1][w];
        }
        if (c) {
            atomicAdd(&sums[0], s);
            atomicAdd(&counts[0], c);
        }
    }
}

#endif
