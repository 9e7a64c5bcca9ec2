// huffman.cuh: the canonical Huffman format's constants (docs/format/huffman.md) and the
// per-chunk tables the kernels of huffman.cu read. `src/huffman/mod.rs` mirrors every `HF_`
// constant and both structs; a test parses this file to check that both agree.
//
// Encoding works on **strips** of HF_STRIP_BYTES input bytes (strips never span chunks: a
// chunk holds a multiple of HF_STRIP_BYTES bytes, except the last); a strip is packed in
// **sub-tiles** of HF_ENC_THREADS * HF_ENC_ITEMS bytes, thread t holding bytes 16t .. 16t+15.
// Decoding works on **slabs** of HF_DEC_SLAB consecutive 4096-bit blocks of one chunk (slabs
// never span chunks), one thread per block.
#ifndef TESSERA_HUFFMAN_CUH
#define TESSERA_HUFFMAN_CUH

#include "../include/common.cuh"

// huffman.md §2-5. Mode 2 (written and read): codes of at most 13 bits, block_info one u16 per
// block ((symbol_count - 1) | spill << 12; the last block's entry is its symbol_count), padded
// to a whole word. Mode 1 (format version 1, read only): codes of at most 12 bits, one u32 word
// per block (symbol_count | spill << 16, bits 24..31 zero).
#define HF_SYMBOLS 256
#define HF_MAX_CODE_LENGTH 13
#define HF_MAX_CODE_LENGTH_V1 12
#define HF_BLOCK_BITS 4096
#define HF_BLOCK_WORDS 128
#define HF_MAX_SPILL 12
#define HF_MAX_SPILL_V1 11
#define HF_COUNT_BITS 12
#define HF_COUNT_MASK 0xFFF
#define HF_HEADER_WORDS 4
#define HF_LENGTHS_WORDS 64
#define HF_MODE_RAW 0
#define HF_MODE_HUFFMAN_V1 1
#define HF_MODE_HUFFMAN 2
// §8: the multi-symbol table is indexed by the next 12 bits (entry: symbols in bytes 0..2,
// count in bits 24..25, bits in 26..29; count 0: the next code is 13 bits long, or none); the
// single-symbol table by the next 13 bits (symbol | length << 8, length 0: no code).
#define HF_MULTI_BITS 12
#define HF_MULTI_SIZE 4096
#define HF_SINGLE_SIZE 8192
#define HF_ENTRY_COUNT_SHIFT 24
#define HF_ENTRY_BITS_SHIFT 26

// Encoder shape.
#define HF_STRIP_BYTES 32768
#define HF_ENC_THREADS 256
#define HF_ENC_ITEMS 16
#define HF_SUBTILE_BYTES 4096
// Bytes past a sub-tile a thread may look at to finish its last word: a word has 32 bits and
// every code at least 1, so at most 31 more codes.
#define HF_HALO_BYTES 32
// Words a sub-tile's codes can fill: 4096 codes of at most 13 bits, plus two for words that
// straddle its ends.
#define HF_STAGE_WORDS 1666
// An edge record (encoder scratch, one per 4096-bit block): bits 0..24 the number of codes up
// to and including the block's last code (chunk-relative, <= 2^24), bits 25..28 its spill.
#define HF_EDGE_SPILL_SHIFT 25
#define HF_EDGE_COUNT_MASK 0x1FFFFFF

// Decoder shape: one thread per block, HF_DEC_SLAB blocks per thread block; per lane a
// staging slot of HF_OUT_SLOT output bytes, flushed by the whole warp with coalesced stores.
// Slots are HF_OUT_STRIDE bytes apart so that lanes at the same slot offset hit different
// shared-memory banks.
#define HF_DEC_THREADS 128
#define HF_DEC_SLAB 128
#define HF_OUT_SLOT 128
#define HF_OUT_STRIDE 132
// Each block's stream words are staged HF_STAGE_STRIDE words apart: its 128 words and the next
// block's first 3 (its last code may spill HF_MAX_SPILL bits past the edge and the 64-bit peek
// reads two words past the current one). 131 is odd, so the 32 lanes of a warp, reading at
// the same offset of their blocks, hit 32 different banks.
#define HF_STAGE_STRIDE 131
// Words of one chunk's decode tables in global memory: the multi-symbol table (4096 words,
// staged in shared memory by the decoder), then the single-symbol table (8192 u16, two per
// word, read through L1: only block tails and 13-bit codes use it).
#define HF_TABLE_WORDS 8192

// Status codes (low 4 bits of a status key's code field, class TS_CLASS_BLOCK; position = block
// index in the chunk). Any of them makes the host re-run the CPU decoder for the exact Error.
#define HF_ST_TABLE 1       // code lengths over the mode's limit or not a complete code (position 0)
#define HF_ST_INFO 2        // block_info entry: reserved bits, spill, symbol_count or padding out of range
#define HF_ST_COUNT_SUM 3   // the symbol counts do not add up to total_count
#define HF_ST_CODE 4        // no code starts at a position (InvalidCode)
#define HF_ST_END 5         // a block's codes do not end at its end (BlockEndMismatch)
#define HF_ST_RANGE 6       // a block's output range leaves the chunk's

// A huffman-mode chunk to decode (host-validated header: mode 1 or 2, block_bits 4096, payload
// length exactly as §2 computes from mode and stream_bits, total_count the expected byte count).
struct HfDecChunk {
    u64 payload_word;  // the chunk's header in the words buffer
    u64 out_index;     // first output byte
    u32 total_count;   // bytes in the chunk
    u32 stream_bits;
    u32 block_count;   // ceil(stream_bits / 4096)
    u32 first_block;   // index of block 0 among the launch's blocks
    u32 first_slab;   // index of slab 0 among the launch's slabs
    u32 table;         // index of the chunk's decode tables
    u32 mode;          // HF_MODE_HUFFMAN_V1 or HF_MODE_HUFFMAN
    u32 info_words;    // words of block_info (block_count, or ceil(block_count / 2) in mode 2)
};
// Row stride of HfDecChunk in u32 words, and the fields hf_find_row searches.
#define HF_DEC_ROW_WORDS 12
#define HF_DEC_FIRST_BLOCK 7
#define HF_DEC_FIRST_SLAB 8

// (symbol_count, spill) of block k of a chunk (§4): mode 2 reads u16 entry k, mode 1 word k.
// `ok` is false when the entry is out of range (reserved bits, spill, count).
__device__ __forceinline__ void hf_block_info(const u32* __restrict__ words, u64 info_w, u32 mode, u32 k, u32 nb,
                                              u32& count, u32& spill, bool& ok) {
    const bool last = k + 1 == nb;
    if (mode == HF_MODE_HUFFMAN) {
        const u32 w = __ldg(&words[info_w + (k >> 1)]);
        const u32 e = (k & 1) ? (w >> 16) : (w & 0xFFFF);
        if (last) {
            count = e;
            spill = 0;
            ok = e <= HF_BLOCK_BITS;
        } else {
            count = (e & HF_COUNT_MASK) + 1;
            spill = e >> HF_COUNT_BITS;
            ok = spill <= HF_MAX_SPILL;
        }
    } else {
        const u32 w = __ldg(&words[info_w + k]);
        count = w & 0xFFFF;
        spill = (w >> 16) & 0xFF;
        ok = (w >> 24) == 0 && spill <= (last ? 0u : (u32)HF_MAX_SPILL_V1) && count <= HF_BLOCK_BITS;
    }
}

// A raw-mode chunk to copy (header checked on the host).
struct HfRawChunk {
    u64 payload_word;
    u64 out_index;
    u32 total_count;
    u32 first_piece;  // index of its first piece of HF_RAW_PIECE bytes among the launch's
};
#define HF_RAW_PIECE 16384

// A chunk to encode: the host has planned it (code lengths, stream_bits, mode, payload place).
struct HfEncChunk {
    u64 in_offset;    // first input byte
    u64 out_word;     // the payload's first word in the output
    u32 count;        // input bytes
    u32 mode;         // HF_MODE_RAW or HF_MODE_HUFFMAN
    u32 stream_bits;
    u32 block_count;
    u32 edge_base;    // index of the chunk's block 0 in the edge records
    u32 info_words;   // words of block_info: ceil(block_count / 2)
};
// Row stride of HfEncChunk in u32 words, and the field hf_find_row searches.
#define HF_ENC_ROW_WORDS 10
#define HF_ENC_EDGE_BASE 8

// The last row of `rows` (stride in u32 words, field at `field`) whose key is <= x: the chunk
// holding global slab / block / piece x. Rows are few and every thread of a block asks for
// the same ones (L1 broadcasts).
__device__ __forceinline__ u32 hf_find_row(const u32* __restrict__ rows, u32 n, u32 stride, u32 field, u32 x) {
    u32 lo = 0, hi = n;
    while (hi - lo > 1) {
        const u32 mid = (lo + hi) >> 1;
        if (__ldg(&rows[mid * stride + field]) <= x) lo = mid; else hi = mid;
    }
    return lo;
}

// At least 64 stream bits from bit `pos` of `s` (bit 0 of the result is bit `pos`); reads
// words pos/32 .. pos/32 + 2.
__device__ __forceinline__ u64 hf_peek64(const u32* s, u32 pos) {
    const u32 i = pos >> 5, sh = pos & 31;
    const u32 a = s[i], b = s[i + 1], c = s[i + 2];
    const u32 lo = __funnelshift_r(a, b, sh);
    const u32 hi = __funnelshift_r(b, c, sh);
    return ((u64)hi << 32) | lo;
}

// Exclusive prefix sum over the HF_ENC_THREADS threads of a block (one barrier pair); returns
// the exclusive sum, `total` gets the block's total. `warp_tot` holds HF_ENC_THREADS / 32 words.
__device__ __forceinline__ u32 hf_block_exclusive_sum(u32 x, u32* warp_tot, u32& total) {
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    u32 incl = x;
#pragma unroll
    for (u32 d = 1; d < 32; d <<= 1) {
        const u32 y = __shfl_up_sync(0xFFFFFFFFu, incl, d);
        if (lane >= d) incl += y;
    }
    if (lane == 31) warp_tot[warp] = incl;
    __syncthreads();
    u32 prefix = 0, sum = 0;
#pragma unroll
    for (u32 w = 0; w < HF_ENC_THREADS / 32; ++w) {
        const u32 t = warp_tot[w];
        if (w < warp) prefix += t;
        sum += t;
    }
    __syncthreads();
    total = sum;
    return prefix + incl - x;
}

#endif
