// lll.cuh: the LLL byte codec's constants and building blocks (docs/format/lll.md), after
// Funasaka, Nakano and Ito, *Light Loss-Less Data Compression, with GPU Implementation*.
//
// Layout constants: `src/lll/mod.rs` checks every `LLL_` format constant below against
// `tessera_codecs::lll` (a test parses this file).
//
// Shared-memory invariants of the strip decoder (lll.cu):
// - The **ring**: strip byte x lives at ring[x & 8191]. A segment (at most 4096 bytes) and its
//   dictionary (the at most 4096 strip bytes right before it) always fit the ring together, so
//   a segment overwrites only bytes at least 4096 before its dictionary, which went out to
//   global memory when their own segment was done (every segment is written out as soon as it
//   is complete).
// - `ids` holds the strip's identifier bits as little-endian words (bit i = word i of the
//   strip is a 2-byte word), zero past the last identifier byte.
// - Per step of W = THREADS * LLL_WORDS_PER_THREAD words: `stage4[step parity]` holds the step's
//   window of the word array (LLL_STAGE_BEFORE bytes before its first word to 2 past its last
//   possible one; the other buffer receives the next step's window meanwhile; once the step is
//   parsed, its own buffer holds the step's map of 4-byte output positions to codes until the
//   next step's first scan), `ends[k]` is the strip position where the code of the
//   step's word k ends (c words of long codes: length 0), `desc[k]` (16 bits) says how its
//   bytes are made: LLL_D_FILL | ch (SC, RL, SRL, LRL: copies of one character), LLL_D_RUN_AT |
//   q (SRL, LRL after a copy: copies of ring[q]) or, for SI / LI, d such that output byte x
//   comes from ring[(d + x) & 8191]. A step is W words of the strip, whatever segments they
//   belong to.
#ifndef TESSERA_LLL_CUH
#define TESSERA_LLL_CUH

#include "../include/common.cuh"

// lll.md §2, §3, §5. segment_bytes is a header field (one of 512, 1024, 2048, 4096 since format
// 1.3); the host passes it with every strip.
#define LLL_MIN_SEGMENT_BYTES 512
#define LLL_MAX_SEGMENT_BYTES 4096
#define LLL_DICTIONARY_BYTES 4096
#define LLL_FIRST_SEGMENT_BYTES 512
#define LLL_STRIP_BYTES 32768
#define LLL_MAX_STRIP_SEGMENTS 64
#define LLL_HEADER_BYTES 16
#define LLL_RUN_T 4095
#define LLL_LONG_L 15
#define LLL_SHORT_MIN 2
#define LLL_LONG_MIN 18
#define LLL_RL_MIN 2

// Decoder shape.
#define LLL_RING_BYTES 8192
#define LLL_RING_MASK 8191
// ceil(32768 identifier bits / 32): a strip has at most one word per byte.
#define LLL_MAX_ID_WORDS 1024
#define LLL_WORDS_PER_THREAD 8
// A step whose output is at most this long gets a map from each 4-byte position of its output
// to the code covering it, so stage 2 finds a share's first code with one load instead of a
// binary search (longer steps, runs mostly, search).
#define LLL_MAP_BYTES 4096
// The parse's packed codes: length << 16 | low half, whose flags are those of the 16-bit
// descriptions stage 2 reads (LllShared::desc): LLL_D_FILL | ch (a fill), LLL_D_RUN_AT | a ring
// position (a run of the dictionary byte there, SRL / LRL after a copy, resolved in stage 2),
// else a copy from a ring position (< 8192: no flag). A fill's or a run's description is its
// low half as it is; a copy's is its source minus its output position, once that is known:
// output byte x comes from ring[(desc + x) & LLL_RING_MASK].
// p (lll.md §5) unset, in the strip decoder's parse state (LLL_D_FILL | ch or a ring position
// when set): no low half has these bits.
#define LLL_P_UNSET 0x40000000u
#define LLL_D_FILL 0x8000u
#define LLL_D_RUN_AT 0x4000u
// Word-array bytes a step stages before its first word: the (at most two) replayed words.
#define LLL_STAGE_BEFORE 4
// Bytes the host leaves readable past the last payload byte (identifier words are read as
// aligned 32-bit words, up to 8 bytes past an identifier block).
#define LLL_INPUT_PADDING 16

// Strip status codes (0 = decoded). The host maps any nonzero code onto the CPU decoder's exact
// error by re-running it on the chunk; the codes name the first failed check for diagnostics.
#define LLL_ST_OK 0
#define LLL_ST_SHAPE 1            // strip output length 0 or > 32768, or a segment_bytes not of
                                  // lll.md §2 (the host checked it: a host bug, never data)
#define LLL_ST_COUNTS_TRUNCATED 2 // fewer than 2 S bytes for the word counts
#define LLL_ST_WORD_COUNT 3       // a word_count outside 1..=len_j
#define LLL_ST_IDS_TRUNCATED 4    // fewer bytes than the identifier block needs
#define LLL_ST_PADDING 5          // identifier padding bits not 0
#define LLL_ST_ARRAY_LENGTH 6     // word array not exactly m + popcount bytes
#define LLL_ST_CODE 7             // a word fails lll.md §6, or a segment's codes miss its length
#define LLL_ST_STORED_LENGTH 8    // a stored strip (lll.md §4a) not exactly its output length
#define LLL_ST_FILL_LENGTH 9      // a fill strip (lll.md §4b) not exactly one byte

// LllStrip::kind (lll.md §2: bits 30 and 31 of a strip_starts entry).
#define LLL_KIND_CODED 0          // word counts, identifiers, words (lll.md §4)
#define LLL_KIND_STORED 1         // its bytes are its output (lll.md §4a, format 1.1)
#define LLL_KIND_FILL 2           // one byte that fills its output (lll.md §4b, format 1.2)

// One strip to decode: its bytes in the input buffer and its place in the output.
struct LllStrip {
    u64 in_start;   // first byte of the strip (its word counts) in the input buffer
    u64 out_start;  // first output byte of the strip
    u32 in_len;     // strip bytes (directory difference, checked by the host)
    u32 out_len;    // 1..=32768
    u32 kind;       // LLL_KIND_CODED, LLL_KIND_STORED or LLL_KIND_FILL
    u32 segment_bytes;  // the payload's (lll.md §2): 512, 1024, 2048 or 4096
};

// log2(segment_bytes / 512) (0..3) if segment_bytes is one of lll.md §2's sizes, else -1.
__device__ __forceinline__ int lll_segment_shift(u32 segment_bytes) {
    const bool ok = segment_bytes >= LLL_MIN_SEGMENT_BYTES && segment_bytes <= LLL_MAX_SEGMENT_BYTES &&
                    (segment_bytes & (segment_bytes - 1)) == 0;
    return ok ? (int)(__ffs(segment_bytes) - 1) - 9 : -1;
}

// The segments of a strip of L bytes with segments of 512 << g bytes (lll.md §3): the halving
// segments [0, 512), [512, 1024), [1024, 2048), ... up to 512 << g (g + 1 of them), then one per
// 512 << g bytes.
__device__ __forceinline__ u32 lll_segment_count(u32 L, u32 g) {
    const u32 sb = LLL_FIRST_SEGMENT_BYTES << g;
    if (L <= sb) return L > 2048 ? 4 : L > 1024 ? 3 : L > 512 ? 2 : 1;
    return g + 1 + (L - 1) / sb;
}

// Segment j of that strip: output [s, e), dictionary [ds, s) (empty for j = 0): the at most
// LLL_DICTIONARY_BYTES strip bytes right before the segment.
__device__ __forceinline__ void lll_segment(u32 j, u32 L, u32 g, u32& s, u32& e, u32& ds) {
    if (j <= g) {
        s = j == 0 ? 0u : 256u << j;  // 0, 512, 1024, 2048
        e = j == 0 ? 512u : 2 * s;
    } else {
        s = (j - g) * (LLL_FIRST_SEGMENT_BYTES << g);
        e = s + (LLL_FIRST_SEGMENT_BYTES << g);
    }
    e = ts_min(e, L);
    ds = s > LLL_DICTIONARY_BYTES ? s - LLL_DICTIONARY_BYTES : 0u;
}

// ---- warp and block layers -----------------------------------------------------------------

__device__ __forceinline__ u32 lll_warp_inclusive_sum(u32 x) {
    const u32 lane = threadIdx.x & 31;
#pragma unroll
    for (u32 d = 1; d < 32; d <<= 1) {
        const u32 y = __shfl_up_sync(0xFFFFFFFFu, x, d);
        if (lane >= d) x += y;
    }
    return x;
}

// Exclusive prefix sum of x over the thread block, and the block total. Every thread calls it;
// it synchronizes once. `warp_total` (THREADS / 32 words) must not be in use by another scan
// whose readers may still be running: each call site owns its storage.
template <int THREADS>
__device__ __forceinline__ u32 lll_block_exclusive_sum(u32 x, u32* warp_total, u32& total) {
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 incl = lll_warp_inclusive_sum(x);
    if (lane == 31) warp_total[warp] = incl;
    __syncthreads();
    u32 prefix = incl - x, sum = 0;
#pragma unroll
    for (u32 w = 0; w < THREADS / 32; ++w) {
        const u32 v = warp_total[w];
        if (w < warp) prefix += v;
        sum += v;
    }
    total = sum;
    return prefix;
}

// Identifier bit of strip word i (1 = a 2-byte word).
__device__ __forceinline__ u32 lll_id(const u32* ids, u32 i) { return (ids[i >> 5] >> (i & 31)) & 1u; }

// n <= 8 identifier bits of words i .. i + n - 1, word i in bit 0.
__device__ __forceinline__ u32 lll_ids(const u32* ids, u32 i, u32 n) {
    const u32 w = i >> 5, sh = i & 31;
    u32 v = ids[w] >> sh;
    if (sh + n > 32) v |= ids[w + 1] << (32 - sh);
    return v & ((1u << n) - 1u);
}

#endif
