// common.cuh: what every tessera kernel shares.
//
// - Fixed-width integer names (NVRTC has no <cstdint>).
// - The format constants of docs/format/int-common.md. `src/int/layout.rs` mirrors every `TS_`
//   constant below and a test parses this file to check that both agree.
// - `ChunkDesc`: one row of the per-chunk table that lets a single launch decode every chunk of
//   a column. Chunk payloads are concatenated in one device buffer of 32-bit words; the host
//   has already checked each chunk's header (constants, total_count, payload_words >= 5 + nb and
//   block_starts[nb] == data-area length), so kernels may read the header and block_starts
//   without further checks. Everything past block_starts is hostile and checked here.
// - The status word: kernels report corrupt input with `ts_report`, an atomicMin on one u64 per
//   chunk, so the host sees the error that comes first in the chunk (lowest block, then lowest
//   code), the order the CPU reference decoder finds them in.
#ifndef TESSERA_COMMON_CUH
#define TESSERA_COMMON_CUH

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

// int-common §3: header words and the per-codec constants.
#define TS_HEADER_WORDS 4
#define TS_MINIBLOCK_VALUES 32
#define TS_FOR_BLOCK_VALUES 128
#define TS_FOR_MINIBLOCKS 4
#define TS_DFOR_TILE_BLOCKS 4
#define TS_RFOR_BLOCK_VALUES 512
#define TS_RFOR_MINIBLOCKS 16
// rfor.md: run lengths are 1..=512, so their bit widths are at most 10.
#define TS_RFOR_MAX_LENGTH 512
#define TS_RFOR_MAX_LENGTH_BITS 10

// Execution shape shared by every tile kernel: a thread block of TS_THREADS threads decodes a
// tile of TS_TILE_VALUES values (FOR: D = 4 blocks; DFOR: one delta tile; RFOR: one block),
// thread t holding values 4t .. 4t+3 in registers.
#define TS_THREADS 128
#define TS_ITEMS 4
#define TS_TILE_VALUES 512

// Launch bounds of the tile kernels: 128 threads, and registers capped so that 16 thread
// blocks (2048 threads) fit an SM: the decoders are latency-bound, occupancy is what hides it.
#define TS_TILE_BOUNDS __launch_bounds__(TS_THREADS, 16)
// RFOR: 40 registers (12 thread blocks per SM) avoid spills; the 32 that 16 blocks allow spill.
// Its shared memory (10 KB for lane 32, 18 KB for lane 64) is not the limit.
#define TS_RFOR_BOUNDS __launch_bounds__(TS_THREADS, 12)

// Tiles a thread block loads at once (a "slab"): all of a slab's words are requested before
// the first is used, so each thread block keeps several kilobytes in flight and the two
// dependent global round trips (block_starts, then data) are paid once per slab, not per
// tile. Chosen per codec and lane so that 16 thread blocks of shared memory fit an SM.
#define TS_FOR_SLAB_L32 4
#define TS_FOR_SLAB_L64 2
// RFOR: one block per warp.
#define TS_RFOR_SLAB_L32 4
#define TS_RFOR_SLAB_L64 4

// Status codes (the low 4 bits of a status key's code field). The host maps each onto an
// `Error` variant (src/int/status.rs).
#define TS_ST_BLOCK_START 1   // block_starts entry goes backwards or past the data area
#define TS_ST_TRUNCATED 2     // a block's metadata implies words past block_starts[k+1]
#define TS_ST_BIT_WIDTH 3     // bit_width > lane (RFOR run lengths: > 10)
#define TS_ST_RUN_COUNT 4     // RFOR run count r outside 1..=512
#define TS_ST_RUN_LENGTH 5    // RFOR run length outside 1..=512
#define TS_ST_RUN_SUM 6       // RFOR run lengths do not sum to the block's value count
#define TS_ST_RANGE 7         // decoded value does not fit the (narrow) logical type
#define TS_ST_LENGTH_REF 8    // RFOR length_reference outside 1..=512

// A status key, smaller = reported first:
//   bits 63..60  class: 0 block_starts, 1 block contents, 2 decoded values
//   bits 59..36  position: block index (class 0, 1) or value index inside the chunk (class 2)
//   bits 35..32  code (TS_ST_*)
//   bits 31..0   detail: the offending value (TS_ST_BIT_WIDTH: miniblock << 8 | bit_width;
//                TS_ST_TRUNCATED: words the block needs; TS_ST_RUN_LENGTH: entry << 17 | length)
// `TS_STATUS_OK` (all ones) means no error.
#define TS_STATUS_OK 0xFFFFFFFFFFFFFFFFull
#define TS_CLASS_BLOCK_STARTS 0
#define TS_CLASS_BLOCK 1
#define TS_CLASS_VALUES 2

struct ChunkDesc {
    u64 payload_word;   // first word of the chunk payload (its header) in the words buffer
    u64 out_index;      // index of the chunk's first value in the output column
    u32 payload_words;  // payload length in words
    u32 total_count;    // values in the chunk (header word 2)
    u32 first_tile;     // global index of the chunk's first tile
    u32 first_slab;    // global index of the chunk's first slab (slabs never span chunks)
};

__device__ __forceinline__ void ts_report(u64* status, u32 cls, u32 position, u32 code, u32 detail) {
    u64 key = ((u64)cls << 60) | ((u64)(position & 0xFFFFFFu) << 36) | ((u64)(code & 0xFu) << 32) | detail;
    atomicMin(status, key);
}

__device__ __forceinline__ u32 ts_min(u32 a, u32 b) { return a < b ? a : b; }
__device__ __forceinline__ u32 ts_max(u32 a, u32 b) { return a > b ? a : b; }

// The chunk that holds global slab `slab`: the last row whose first_slab <= slab. The
// table is tiny and every thread of a block asks for the same rows, so these loads hit L1 as
// broadcasts.
__device__ __forceinline__ u32 ts_find_chunk(const ChunkDesc* __restrict__ chunks, u32 n_chunks, u32 slab) {
    u32 lo = 0, hi = n_chunks;
    while (hi - lo > 1) {
        u32 mid = (lo + hi) >> 1;
        if (__ldg(&chunks[mid].first_slab) <= slab) lo = mid; else hi = mid;
    }
    return lo;
}

// ts_find_chunk, first trying the row that equal chunks would give (every chunk of a column
// but the last holds the same number of slabs when the writer's chunk size is a multiple of
// the slab's values, the usual case): two dependent loads instead of log2(n_chunks). A table
// that does not fit the guess falls back to the search, so any table gives the same row.
__device__ __forceinline__ u32 ts_find_chunk_fast(const ChunkDesc* __restrict__ chunks, u32 n_chunks, u32 slab) {
    if (n_chunks > 1) {
        const u32 g1 = __ldg(&chunks[1].first_slab);  // slabs of chunk 0
        if (g1 != 0) {
            const u32 i = ts_min(slab / g1, n_chunks - 1);
            if (__ldg(&chunks[i].first_slab) <= slab && (i + 1 == n_chunks || __ldg(&chunks[i + 1].first_slab) > slab))
                return i;
        }
    }
    return ts_find_chunk(chunks, n_chunks, slab);
}

// ts_find_chunk for a whole warp asking about the same slab (every lane must call it): a
// 32-way search, each lane testing one row per round, so ceil(log32(n_chunks)) rounds (2 up to
// 1024 chunks) of one load each instead of log2(n_chunks) dependent loads.
__device__ __forceinline__ u32 ts_find_chunk_warp(const ChunkDesc* __restrict__ chunks, u32 n_chunks, u32 slab) {
    const u32 l = threadIdx.x & 31;
    u32 lo = 0, n = n_chunks;  // the row is in [lo, lo + n), and row lo qualifies
    while (n > 1) {
        const u32 step = (n + 31) >> 5;
        const u32 i = l * step;  // lane 0 tests row lo, known to qualify
        const bool le = i < n && (l == 0 || __ldg(&chunks[lo + i].first_slab) <= slab);
        const u32 k = 31 - __clz(__ballot_sync(0xFFFFFFFFu, le));
        lo += k * step;
        n = ts_min(step, n - k * step);
    }
    return lo;
}

// The same search by tile, for kernels that take one tile at a time (the paper's loaders).
__device__ __forceinline__ u32 ts_find_chunk_by_tile(const ChunkDesc* __restrict__ chunks, u32 n_chunks, u32 tile) {
    u32 lo = 0, hi = n_chunks;
    while (hi - lo > 1) {
        u32 mid = (lo + hi) >> 1;
        if (__ldg(&chunks[mid].first_tile) <= tile) lo = mid; else hi = mid;
    }
    return lo;
}

__device__ __forceinline__ ChunkDesc ts_load_chunk(const ChunkDesc* __restrict__ chunks, u32 i) {
    ChunkDesc c;
    c.payload_word = __ldg(&chunks[i].payload_word);
    c.out_index = __ldg(&chunks[i].out_index);
    c.payload_words = __ldg(&chunks[i].payload_words);
    c.total_count = __ldg(&chunks[i].total_count);
    c.first_tile = __ldg(&chunks[i].first_tile);
    c.first_slab = __ldg(&chunks[i].first_slab);
    return c;
}

// A barrier for the THREADS first threads of the block: __syncthreads() when ID is 0 (every
// thread of the block arrives), else named barrier ID for exactly THREADS threads, so that the
// other warps of the block (e.g. a look-back warp) can run apart meanwhile. The named form is
// PTX's non-aligned barrier.sync: bar.sync is barrier.sync.aligned, which requires every thread
// of a warp to execute the same instruction, and warps reach these barriers diverged (after a
// per-thread loop), which compute-sanitizer's synccheck flagged. A __syncwarp() before the
// barrier (converging the warp) made ptxas emit slower code (the bitmap compression on an H100,
// PLWAH 2^-8: about 20% slower with it).
template <int ID, int THREADS>
__device__ __forceinline__ void ts_bar() {
    if constexpr (ID == 0) {
        __syncthreads();
    } else {
        asm volatile("barrier.sync %0, %1;\n" ::"n"(ID), "n"(THREADS) : "memory");
    }
}

// Asynchronous global -> shared copy of one word (cp.async, sm_80+): a thread issues all its
// copies without waiting for any, then ts_cp_async_wait() before the barrier that publishes
// them. Older architectures copy through a register.
__device__ __forceinline__ void ts_cp_async4(u32* smem, const u32* gmem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(gmem) : "memory");
#else
    *smem = __ldg(gmem);
#endif
}

// The same for 16 bytes (both addresses 16-byte aligned), bypassing L1.
__device__ __forceinline__ void ts_cp_async16(uint4* smem, const uint4* gmem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
#else
    *smem = __ldg(gmem);
#endif
}

__device__ __forceinline__ void ts_cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// Where a chunk's block_starts and data area are in the words buffer.
struct ChunkLayout {
    u64 block_starts;  // word index of block_starts[0]
    u64 data;          // word index of the data area
    u32 data_len;      // data area length in words
    u32 block_count;
};

__device__ __forceinline__ ChunkLayout ts_chunk_layout(const ChunkDesc& c, u32 block_values) {
    ChunkLayout l;
    l.block_count = (c.total_count + block_values - 1) / block_values;
    l.block_starts = c.payload_word + TS_HEADER_WORDS;
    l.data = l.block_starts + l.block_count + 1;
    l.data_len = c.payload_words - TS_HEADER_WORDS - (l.block_count + 1);
    return l;
}

// Lanes (int-common §2): the unsigned word type and how many 32-bit words a whole value takes.
template <int LANE> struct Lane;
template <> struct Lane<32> {
    typedef u32 T;
    static const u32 REF_WORDS = 1;
};
template <> struct Lane<64> {
    typedef u64 T;
    static const u32 REF_WORDS = 2;
};

// A whole lane value stored at w (low word first).
template <int LANE> __device__ __forceinline__ typename Lane<LANE>::T ts_read_lane(const u32* w);
template <> __device__ __forceinline__ u32 ts_read_lane<32>(const u32* w) { return w[0]; }
template <> __device__ __forceinline__ u64 ts_read_lane<64>(const u32* w) {
    return (u64)w[0] | ((u64)w[1] << 32);
}

// Copies `len` bytes from src to dst with the grid's threads, thread t taking indices t,
// t + stride, ...: in words of W (src and dst both aligned to W), then the tail byte by byte.
template <typename W>
__device__ __forceinline__ void ts_copy_words(const unsigned char* src, unsigned char* dst, u64 len, u64 t,
                                              u64 stride) {
    const u64 words = len / sizeof(W);
    const W* s = (const W*)src;
    W* d = (W*)dst;
    for (u64 i = t; i < words; i += stride) d[i] = s[i];
    for (u64 i = words * sizeof(W) + t; i < len; i += stride) dst[i] = src[i];
}

// ts_copy_words at the widest word (16, 8, 4 or 1 bytes) both ends are aligned to: what the
// copy kernels (arrow layout's parts, the runtime's copy list) share.
__device__ __forceinline__ void ts_copy_aligned(const unsigned char* src, unsigned char* dst, u64 len, u64 t,
                                                u64 stride) {
    const u64 align = (u64)src | (u64)dst;
    if (align % 16 == 0) ts_copy_words<uint4>(src, dst, len, t, stride);
    else if (align % 8 == 0) ts_copy_words<u64>(src, dst, len, t, stride);
    else if (align % 4 == 0) ts_copy_words<u32>(src, dst, len, t, stride);
    else ts_copy_words<unsigned char>(src, dst, len, t, stride);
}

#endif
