// huffman.cu: canonical Huffman (docs/format/huffman.md) on the GPU, after Lyfar and Kulakov,
// *Parallel Huffman encoding on GPU and its use in MySQL*: histogram, encoding (code lookup,
// exclusive prefix sum of code lengths, bit placement) and block-parallel decoding. Every
// launch covers all chunks of a column; the chunk tables (huffman.cuh) come from the host.
//
// Encoding (byte-identical to tessera_codecs::huffman::encode), five launches around one host
// step:
//   huff_histogram      per strip (32 KiB) a shared-memory histogram, four sub-histograms per
//                       warp (lane l counts into copy l % 4, copies in different banks), so
//                       equal bytes of one warp instruction collide at most 8-way; written
//                       per strip and added into the chunk's histogram (256 global atomics
//                       per strip, on 256 different words);
//   (host)              code lengths (package-merge, the CPU's own code), canonical codes,
//                       stream_bits, raw or huffman, every payload's place in the output;
//   huff_strip_bits       bits of each strip = sum over bytes of freq * length (no input read);
//   huff_encode_pack    per strip: its first bit is the sum of the earlier strips' bits
//                       of its chunk; then per 4 KiB sub-tile (16 bytes per thread, held in
//                       registers, loaded one sub-tile ahead), a block-wide exclusive scan of
//                       the threads' code lengths gives every code its bit offset, and every
//                       stream word is assembled whole by one thread -- the thread whose bit
//                       range holds the word's bit 0 -- from its own codes and, for its last
//                       word, the *heads* (first 32 bits) of the next two threads, published in
//                       shared memory before the scan's barrier (the sub-tile's last threads
//                       use the heads of the 32 bytes that follow it). So no word is ever
//                       written twice and no atomics are needed. Words are staged in shared
//                       memory (double-buffered: two barriers per sub-tile) and stored
//                       coalesced. The thread whose range reaches a 4096-bit edge writes that
//                       block's edge record (codes so far, spill);
//   huff_encode_finish  headers, code lengths and block_info (mode 2: u16 entries) from the edge
//                       records.
// Raw chunks are copied by huff_encode_pack.
//
// Decoding, in five launches: huff_decode_tables (per chunk: check the code lengths, build the
// §8 tables), huff_decode_counts (check every block_info word, extract symbol_count), the
// device-wide scan (primitives/scan.cuh) over the counts (each block's output offset), huff_decode_blocks, and
// huff_copy_raw for raw chunks; modes 1 and 2 in one launch (HfDecChunk.mode). huff_decode_blocks:
// a thread block takes a slab of 128 consecutive blocks, copies the multi-symbol table (16 KiB;
// the 13-bit single-symbol table is read through L1) and the slab's stream (each block's 128 words
// and the next block's first 3, at an odd stride of 131 words so that the lanes of a warp hit
// different banks) into shared memory with cp.async (coalesced, all in flight at once), and
// each thread decodes one block
// with the multi-symbol table (up to 3 symbols per lookup, 4 lookups per 64-bit window; an
// entry without symbols means a 13-bit code, resolved by the single-symbol table) while 12 or
// more symbols remain, then one symbol per lookup. Symbols go to a 128-byte slot per
// thread; when a round has filled the slots, the warp stores each thread's run with coalesced
// byte stores (32 consecutive bytes per store). Why one thread per block: a block's codes can
// only be found from its start, and the format gives 4096-bit blocks of about 900 (text) to
// 4096 symbols, so a column of n bytes has n/500 or more independent blocks -- 2 million for a
// gigabyte, enough to fill the GPU many times over -- and no work is repeated (a warp-wide
// split of one block would need speculative decoding from guessed code boundaries and a
// resynchronization pass).
//
// Hostile input: the host checks each chunk's header and payload length; the kernels check the
// code lengths (<= the mode's limit, complete), every block_info entry and padding, that the counts add up, each block's
// output range, every code (a table entry with no code) and each block's end; they never read
// outside a chunk's stream (staged reads stop at the block's end) nor write outside its output
// range. Each chunk gets a status key; the host re-runs the CPU decoder on a flagged chunk for
// the exact Error.
#include "../include/common.cuh"
#include "huffman.cuh"

#define HF_FULL 0xFFFFFFFFu

// ---------------------------------------------------------------------------------------------
// Histogram
// ---------------------------------------------------------------------------------------------

__device__ __forceinline__ void hf_count_word(u32* h, u32 x) {
    atomicAdd(&h[x & 255], 1u);
    atomicAdd(&h[(x >> 8) & 255], 1u);
    atomicAdd(&h[(x >> 16) & 255], 1u);
    atomicAdd(&h[x >> 24], 1u);
}

// Sub-histograms per thread block: HF_HIST_COPIES per warp, lane l counting into copy l % 4,
// so equal bytes in one warp instruction collide at most 8-way (a single-symbol input), not
// 32-way. Copies are 257 words apart: the same bin of different copies lies in different banks.
#define HF_HIST_COPIES 4
#define HF_HIST_STRIDE 257
#define HF_HIST_SUBS (HF_ENC_THREADS / 32 * HF_HIST_COPIES)

// One thread block per strip of HF_STRIP_BYTES bytes (strips of the last chunk may be short).
// strip_hist (optional, 0 = none): 256 counts per strip. chunk_hist: 256 counts per chunk, added
// to (the host zeroes it first).
extern "C" __global__ void __launch_bounds__(HF_ENC_THREADS)
    huff_histogram(const u8* __restrict__ data, u64 n, u32 strips_per_chunk, u32* __restrict__ strip_hist,
                   u32* __restrict__ chunk_hist) {
    __shared__ u32 h[HF_HIST_SUBS * HF_HIST_STRIDE];
    const u32 t = threadIdx.x;
    for (u32 i = t; i < HF_HIST_SUBS * HF_HIST_STRIDE; i += HF_ENC_THREADS) h[i] = 0;
    __syncthreads();
    const u64 lo = (u64)blockIdx.x * HF_STRIP_BYTES;
    const u32 cnt = (u32)(n - lo < HF_STRIP_BYTES ? n - lo : HF_STRIP_BYTES);
    const uint4* p = reinterpret_cast<const uint4*>(data + lo);
    const u32 vecs = cnt >> 4;
    u32* mine = h + ((t >> 5) * HF_HIST_COPIES + (t & (HF_HIST_COPIES - 1))) * HF_HIST_STRIDE;
    // HF_STRIP_BYTES / 16 / HF_ENC_THREADS = 8 vector loads per thread, all issued before counting.
    uint4 v[HF_STRIP_BYTES / 16 / HF_ENC_THREADS];
#pragma unroll
    for (u32 r = 0; r < HF_STRIP_BYTES / 16 / HF_ENC_THREADS; ++r) {
        const u32 i = r * HF_ENC_THREADS + t;
        v[r] = i < vecs ? __ldg(p + i) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (u32 r = 0; r < HF_STRIP_BYTES / 16 / HF_ENC_THREADS; ++r) {
        if (r * HF_ENC_THREADS + t < vecs) {
            hf_count_word(mine, v[r].x);
            hf_count_word(mine, v[r].y);
            hf_count_word(mine, v[r].z);
            hf_count_word(mine, v[r].w);
        }
    }
    for (u32 i = (vecs << 4) + t; i < cnt; i += HF_ENC_THREADS) atomicAdd(&mine[data[lo + i]], 1u);
    __syncthreads();
    u32 sum = 0;
#pragma unroll
    for (u32 w = 0; w < HF_HIST_SUBS; ++w) sum += h[w * HF_HIST_STRIDE + t];
    if (strip_hist) strip_hist[(u64)blockIdx.x * HF_SYMBOLS + t] = sum;
    if (sum) atomicAdd(&chunk_hist[(u64)(blockIdx.x / strips_per_chunk) * HF_SYMBOLS + t], sum);
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

// codes: 256 words per chunk, `code | length << 16` (code bit-reversed: its first bit at bit 0).
// One warp per strip: bits = sum of count * length.
extern "C" __global__ void __launch_bounds__(HF_ENC_THREADS)
    huff_strip_bits(const u32* __restrict__ strip_hist, u32 n_strips, u32 strips_per_chunk, const u32* __restrict__ codes,
                  u32* __restrict__ strip_bits) {
    const u32 lane = threadIdx.x & 31;
    const u32 g = blockIdx.x * (HF_ENC_THREADS / 32) + (threadIdx.x >> 5);
    if (g >= n_strips) return;
    const u32* hist = strip_hist + (u64)g * HF_SYMBOLS;
    const u32* cl = codes + (u64)(g / strips_per_chunk) * HF_SYMBOLS;
    u32 bits = 0;
#pragma unroll
    for (u32 s = lane; s < HF_SYMBOLS; s += 32) bits += hist[s] * (__ldg(&cl[s]) >> 16);
#pragma unroll
    for (u32 d = 16; d > 0; d >>= 1) bits += __shfl_xor_sync(HF_FULL, bits, d);
    if (lane == 0) strip_bits[g] = bits;
}

// Sixteen bytes of the input from `p` (16-byte aligned when n == 16); bytes past n read as 0.
__device__ __forceinline__ uint4 hf_load16(const u8* __restrict__ p, u32 n) {
    if (n >= 16) return __ldg(reinterpret_cast<const uint4*>(p));
    u32 w[4] = {0, 0, 0, 0};
    for (u32 b = 0; b < n; ++b) w[b >> 2] |= (u32)p[b] << (8 * (b & 3));
    return make_uint4(w[0], w[1], w[2], w[3]);
}

__device__ __forceinline__ u32 hf_byte(const uint4& v, u32 b) {
    const u32 w = b < 4 ? v.x : b < 8 ? v.y : b < 12 ? v.z : v.w;
    return (w >> (8 * (b & 3))) & 0xFF;
}

// The first (up to) 32 stream bits of `n` bytes and their total number of bits: what a thread
// contributes to the word its predecessor finishes. Only the 2 halo "threads" call this.
__device__ __forceinline__ u32 hf_head(const u32* s_code, const uint4& v, u32 n, u32& bits) {
    u32 head = 0;
    bits = 0;
#pragma unroll
    for (u32 b = 0; b < HF_ENC_ITEMS; ++b) {
        const u32 e = b < n ? s_code[hf_byte(v, b)] : 0;
        if (bits < 32) head |= (e & 0xFFFF) << bits;
        bits += e >> 16;
    }
    return head;
}

// One thread block per strip. out: the payload words of every chunk; edges: one record per
// 4096-bit block (HF_EDGE_*), at chunk.edge_base + block.
//
// Per sub-tile of 4 KiB, thread t holds bytes 16t .. 16t+15 in registers (loaded one sub-tile
// ahead) and their 16 code entries:
//   1. the sum of its code lengths, and its *head*: its first (up to) 32 stream bits; the warp
//      scans the sums (shuffles), warp totals and heads go to shared memory; barrier A;
//   2. its first bit = carry + the block-wide exclusive sum; it assembles the words whose bit 0
//      lies in its range: full words as they fill, and its last word completed with the heads
//      of threads t+1 and t+2 (every full thread has 16 codes of at least 1 bit, so two heads
//      always reach the word's end; threads 256 and 257 are the 32 bytes after the sub-tile,
//      in the chunk, computed by threads 0 and 1). Words go to a shared stage; barrier B;
//   3. the stage is stored coalesced.
// Heads, warp totals and stage are double-buffered by sub-tile parity, so two barriers per
// sub-tile suffice: a buffer is rewritten two sub-tiles later, after a barrier that every
// reader of its previous contents has passed.
extern "C" __global__ void __launch_bounds__(HF_ENC_THREADS, 5)
    huff_encode_pack(const u8* __restrict__ data, const HfEncChunk* __restrict__ chunks, u32 strips_per_chunk,
                     const u32* __restrict__ strip_bits, const u32* __restrict__ codes, u32* __restrict__ out,
                     u32* __restrict__ edges) {
    __shared__ u32 s_code[HF_SYMBOLS];
    __shared__ u32 s_stage[2][HF_STAGE_WORDS];
    __shared__ u32 s_head[2][HF_ENC_THREADS + 2];
    __shared__ u32 s_hbits[2][HF_ENC_THREADS + 2];
    __shared__ u32 s_warp[2][HF_ENC_THREADS / 32];
    const u32 t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const u32 c = blockIdx.x / strips_per_chunk, j = blockIdx.x % strips_per_chunk;
    const HfEncChunk ch = chunks[c];
    const u32 strip_lo = j * HF_STRIP_BYTES;
    if (strip_lo >= ch.count) return;  // uniform: no such strip
    const u32 strip_n = ch.count - strip_lo < HF_STRIP_BYTES ? ch.count - strip_lo : HF_STRIP_BYTES;
    const u8* in = data + ch.in_offset + strip_lo;

    if (ch.mode == HF_MODE_RAW) {
        // §2 raw: the bytes after the 4 header words, the last word zero-padded. The input is
        // 16-byte aligned here (chunks and strips start at multiples of HF_STRIP_BYTES).
        u32* dst = out + ch.out_word + HF_HEADER_WORDS + strip_lo / 4;
        const u32 words = (strip_n + 3) >> 2;
        for (u32 i = t; i < words; i += HF_ENC_THREADS) {
            u32 w;
            if (4 * i + 4 <= strip_n) {
                w = __ldg(reinterpret_cast<const u32*>(in) + i);
            } else {
                w = 0;
                for (u32 b = 0; 4 * i + b < strip_n; ++b) w |= (u32)in[4 * i + b] << (8 * b);
            }
            dst[i] = w;
        }
        return;
    }

    // The strip's first bit: the bits of the chunk's earlier strips (the scan's barriers
    // also publish s_code).
    s_code[t] = codes[(u64)c * HF_SYMBOLS + t];
    u32 part = 0;
    for (u32 i = t; i < j; i += HF_ENC_THREADS) part += strip_bits[(u64)c * strips_per_chunk + i];
    u32 carry;
    hf_block_exclusive_sum(part, s_warp[0], carry);
    u32* stream = out + ch.out_word + HF_HEADER_WORDS + HF_LENGTHS_WORDS + ch.info_words;

    const u32 first = HF_ENC_ITEMS * t;
    auto mine_of = [&](u32 lo) -> u32 {
        const u32 sub_n = strip_n - lo < HF_SUBTILE_BYTES ? strip_n - lo : HF_SUBTILE_BYTES;
        return sub_n > first ? (sub_n - first < HF_ENC_ITEMS ? sub_n - first : HF_ENC_ITEMS) : 0;
    };
    uint4 next = hf_load16(in + first, mine_of(0));
    u32 buf = 0;
    for (u32 lo = 0; lo < strip_n; lo += HF_SUBTILE_BYTES, buf ^= 1) {
        const uint4 v = next;
        const u32 mine = mine_of(lo);
        if (lo + HF_SUBTILE_BYTES < strip_n) next = hf_load16(in + lo + HF_SUBTILE_BYTES + first, mine_of(lo + HF_SUBTILE_BYTES));
        const u32 idx0 = strip_lo + lo;  // chunk index of the sub-tile's first byte

        // 1. Code entries, bit count, head.
        u32 e[HF_ENC_ITEMS];
        u32 bits = 0, head = 0;
#pragma unroll
        for (u32 b = 0; b < HF_ENC_ITEMS; ++b) {
            e[b] = b < mine ? s_code[hf_byte(v, b)] : 0;
            if (bits < 32) head |= (e[b] & 0xFFFF) << bits;
            bits += e[b] >> 16;
        }
        s_head[buf][t] = head;
        s_hbits[buf][t] = bits;
        if (t < 2) {
            // The 32 bytes after the sub-tile that lie in the chunk (the next sub-tile's or the
            // next strip's first bytes).
            const u32 h = idx0 + HF_SUBTILE_BYTES + HF_ENC_ITEMS * t;
            const u32 hn = h < ch.count ? (ch.count - h < HF_ENC_ITEMS ? ch.count - h : HF_ENC_ITEMS) : 0;
            uint4 hv = make_uint4(0, 0, 0, 0);
            if (hn) hv = hf_load16(in + lo + HF_SUBTILE_BYTES + HF_ENC_ITEMS * t, hn);
            u32 hb;
            s_head[buf][HF_ENC_THREADS + t] = hf_head(s_code, hv, hn, hb);
            s_hbits[buf][HF_ENC_THREADS + t] = hb;
        }
        u32 incl = bits;
#pragma unroll
        for (u32 d = 1; d < 32; d <<= 1) {
            const u32 y = __shfl_up_sync(HF_FULL, incl, d);
            if (lane >= d) incl += y;
        }
        if (lane == 31) s_warp[buf][warp] = incl;
        __syncthreads();  // A

        u32 prefix = 0, total = 0;
#pragma unroll
        for (u32 w = 0; w < HF_ENC_THREADS / 32; ++w) {
            const u32 x = s_warp[buf][w];
            if (w < warp) prefix += x;
            total += x;
        }
        const u32 start = carry + prefix + incl - bits;
        // Words this sub-tile owns: those whose bit 0 lies in [carry, carry + total).
        const u32 wbase = (carry + 31) >> 5;
        const u32 wend = (carry + total + 31) >> 5;

        // 2. Words. `acc` holds nb pending bits of word `wcur`; the thread owns wcur when its
        // bit 0 lies at or after `start`.
        u32* stage = s_stage[buf];
        u64 acc = 0;
        u32 nb = start & 31, wcur = start >> 5;
        bool owned = nb == 0;
#pragma unroll
        for (u32 b = 0; b < HF_ENC_ITEMS; ++b) {
            acc |= (u64)(e[b] & 0xFFFF) << nb;
            nb += e[b] >> 16;
            if (nb >= 32) {
                if (owned) stage[wcur - wbase] = (u32)acc;
                owned = true;
                ++wcur;
                acc >>= 32;
                nb -= 32;
            }
        }
        if (owned && nb > 0) {
            // The last word starts in this thread's range: the next threads' heads finish it.
            u32 w = (u32)acc | (s_head[buf][t + 1] << nb);
            const u32 b1 = s_hbits[buf][t + 1];
            if (nb + b1 < 32) w |= s_head[buf][t + 2] << (nb + b1);
            stage[wcur - wbase] = w;
        }
        // §4: the code that reaches a block edge is its block's last; its excess is the spill.
        // A thread's 16 codes (<= 208 bits) reach at most one edge.
        const u32 edge = (start | (HF_BLOCK_BITS - 1)) + 1;
        if (bits && start + bits >= edge) {
            const u32 k = start / HF_BLOCK_BITS;
            u32 pos = start;
#pragma unroll
            for (u32 b = 0; b < HF_ENC_ITEMS; ++b) {
                const u32 len = e[b] >> 16;
                if (pos < edge && pos + len >= edge && k < ch.block_count)
                    edges[ch.edge_base + k] = (idx0 + first + b + 1) | ((pos + len - edge) << HF_EDGE_SPILL_SHIFT);
                pos += len;
            }
        }
        __syncthreads();  // B

        // 3. Coalesced stores.
        for (u32 i = t; i < wend - wbase; i += HF_ENC_THREADS) stream[wbase + i] = stage[i];
        carry += total;
    }
}

// Headers and code lengths (preamble: 68 words per chunk from the host; raw chunks use the
// first 4) and every block_info word from the edge records (§4, mode 2: the thread of an even
// block k writes the word of blocks k and k + 1, or of block k and the zero padding entry).
// Grid-stride over both.
extern "C" __global__ void __launch_bounds__(HF_ENC_THREADS)
    huff_encode_finish(const HfEncChunk* __restrict__ chunks, u32 n_chunks, const u32* __restrict__ preamble,
                       const u32* __restrict__ edges, u32 total_blocks, u32* __restrict__ out) {
    const u32 stride = gridDim.x * blockDim.x;
    const u32 pre = HF_HEADER_WORDS + HF_LENGTHS_WORDS;
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n_chunks * pre; i += stride) {
        const u32 c = i / pre, wi = i % pre;
        if (chunks[c].mode == HF_MODE_RAW && wi >= HF_HEADER_WORDS) continue;
        out[chunks[c].out_word + wi] = preamble[i];
    }
    for (u32 g = blockIdx.x * blockDim.x + threadIdx.x; g < total_blocks; g += stride) {
        const u32 c = hf_find_row(reinterpret_cast<const u32*>(chunks), n_chunks, HF_ENC_ROW_WORDS, HF_ENC_EDGE_BASE, g);
        const HfEncChunk ch = chunks[c];
        const u32 k = g - ch.edge_base;
        if (k & 1) continue;
        const u32 nb = ch.block_count;
        u32 word = 0;
        for (u32 h = 0; h < 2 && k + h < nb; ++h) {
            const u32 b = k + h;
            const bool last = b + 1 == nb;
            const u32 upto = last ? ch.count : (edges[g + h] & HF_EDGE_COUNT_MASK);
            const u32 prev = b ? (edges[g + h - 1] & HF_EDGE_COUNT_MASK) : 0;
            const u32 n = upto - prev;
            const u32 entry = last ? n : ((n - 1) | ((edges[g + h] >> HF_EDGE_SPILL_SHIFT) << HF_COUNT_BITS));
            word |= entry << (16 * h);
        }
        out[ch.out_word + pre + k / 2] = word;
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

// One thread block of 256 threads per huffman chunk: checks the code lengths (§7 step 5: at
// most 12 bits in mode 1, 13 in mode 2; complete, or one symbol of length 1) and builds the §8
// tables at tables + chunk.table * HF_TABLE_WORDS (all zero when invalid).
extern "C" __global__ void __launch_bounds__(256)
    huff_decode_tables(const HfDecChunk* __restrict__ chunks, const u32* __restrict__ words, u32* __restrict__ tables,
                       u64* __restrict__ status) {
    __shared__ u8 len[HF_SYMBOLS];
    __shared__ u16 single[HF_SINGLE_SIZE];
    __shared__ u32 count[HF_MAX_CODE_LENGTH + 1], next[HF_MAX_CODE_LENGTH + 1];
    __shared__ u32 kraft, used, bad;
    const u32 t = threadIdx.x, c = blockIdx.x;
    const HfDecChunk ch = chunks[c];
    const u32 max_len = ch.mode == HF_MODE_HUFFMAN ? HF_MAX_CODE_LENGTH : HF_MAX_CODE_LENGTH_V1;
    if (t < HF_SYMBOLS / 4) {
        const u32 w = words[ch.payload_word + HF_HEADER_WORDS + t];
        len[4 * t] = w;
        len[4 * t + 1] = w >> 8;
        len[4 * t + 2] = w >> 16;
        len[4 * t + 3] = w >> 24;
    }
    if (t <= HF_MAX_CODE_LENGTH) count[t] = 0;
    if (t == 0) kraft = used = bad = 0;
    for (u32 i = t; i < HF_SINGLE_SIZE; i += 256) single[i] = 0;
    __syncthreads();
    const u32 l = len[t];
    if (l > max_len) atomicOr(&bad, 1u);
    else if (l) {
        // Kraft sum in units of 2^-13 (a mode 1 table's lengths are at most 12).
        atomicAdd(&kraft, 1u << (HF_MAX_CODE_LENGTH - l));
        atomicAdd(&used, 1u);
        atomicAdd(&count[l], 1u);
    }
    __syncthreads();
    const bool ok = !bad && (kraft == HF_SINGLE_SIZE || (used == 1 && kraft == HF_SINGLE_SIZE / 2));
    if (t == 0) {
        if (!ok) ts_report(&status[c], TS_CLASS_BLOCK_STARTS, 0, HF_ST_TABLE, 0);
        u32 code = 0;  // §3, RFC 1951 §3.2.2
        for (u32 b = 1; b <= HF_MAX_CODE_LENGTH; ++b) {
            code = (code + (b > 1 ? count[b - 1] : 0)) << 1;
            next[b] = code;
        }
    }
    __syncthreads();
    u32* tab = tables + (u64)ch.table * HF_TABLE_WORDS;
    if (ok) {
        if (l) {
            u32 rank = 0;
            for (u32 s = 0; s < t; ++s) rank += len[s] == l;
            const u32 code = next[l] + rank;
            const u32 rev = __brev(code) >> (32 - l);
            for (u32 i = rev; i < HF_SINGLE_SIZE; i += 1u << l) single[i] = (u16)(t | (l << 8));
        }
        __syncthreads();
        for (u32 i = t; i < HF_MULTI_SIZE; i += 256) {
            // i >> at < 2^12: its single entry is right for codes of at most 12 - at bits, the
            // only ones that fit.
            u32 at = 0, n = 0, syms = 0;
            while (n < 3) {
                const u32 s = single[i >> at];
                const u32 sl = s >> 8;
                if (sl == 0 || at + sl > HF_MULTI_BITS) break;
                syms |= (s & 0xFF) << (8 * n);
                ++n;
                at += sl;
            }
            tab[i] = syms | (n << HF_ENTRY_COUNT_SHIFT) | (at << HF_ENTRY_BITS_SHIFT);
        }
    } else {
        for (u32 i = t; i < HF_MULTI_SIZE; i += 256) tab[i] = 0;
    }
    for (u32 i = t; i < HF_SINGLE_SIZE / 2; i += 256)
        tab[HF_MULTI_SIZE + i] = (u32)single[2 * i] | ((u32)single[2 * i + 1] << 16);
}

// Grid-stride over every block of every chunk: checks its block_info entry (§7 step 5; in
// mode 2 the last block's thread also checks the padding entry) and writes its symbol_count
// for the scan.
extern "C" __global__ void __launch_bounds__(256)
    huff_decode_counts(const HfDecChunk* __restrict__ chunks, u32 n_chunks, const u32* __restrict__ words,
                       u32 total_blocks, u32* __restrict__ counts, u64* __restrict__ status) {
    for (u32 g = blockIdx.x * blockDim.x + threadIdx.x; g < total_blocks; g += gridDim.x * blockDim.x) {
        const u32 c = hf_find_row(reinterpret_cast<const u32*>(chunks), n_chunks, HF_DEC_ROW_WORDS, HF_DEC_FIRST_BLOCK, g);
        const HfDecChunk ch = chunks[c];
        const u64 info_w = ch.payload_word + HF_HEADER_WORDS + HF_LENGTHS_WORDS;
        const u32 nb = ch.block_count, k = g - ch.first_block;
        u32 count, spill;
        bool ok;
        hf_block_info(words, info_w, ch.mode, k, nb, count, spill, ok);
        if (ok && ch.mode == HF_MODE_HUFFMAN && k + 1 == nb && (nb & 1))
            ok = (__ldg(&words[info_w + (nb >> 1)]) >> 16) == 0;
        if (!ok) ts_report(&status[c], TS_CLASS_BLOCK_STARTS, k, HF_ST_INFO, count);
        counts[g] = ok ? count : 0;
    }
}

__device__ __forceinline__ void hf_flag(u64* status, u32 block, u32 code, u32 detail) {
    ts_report(status, TS_CLASS_BLOCK, block, code, detail);
}

// One thread block per slab of HF_DEC_SLAB blocks; dynamic shared memory of
// HF_DEC_SMEM_BYTES (see src/huffman/mod.rs). offsets: exclusive prefix sums of every block's
// symbol_count over the launch (modulo 2^32), offsets[total_blocks] the total.
extern "C" __global__ void __launch_bounds__(HF_DEC_THREADS, 2)
    huff_decode_blocks(const HfDecChunk* __restrict__ chunks, u32 n_chunks, const u32* __restrict__ words,
                       const u32* __restrict__ tables, const u32* __restrict__ offsets, u8* __restrict__ out,
                       u64* __restrict__ status) {
    extern __shared__ __align__(16) u32 hf_smem[];
    const u32* s_multi = hf_smem;
    u32* s_stream = hf_smem + HF_MULTI_SIZE;
    u8* s_out = reinterpret_cast<u8*>(s_stream + HF_DEC_SLAB * HF_STAGE_STRIDE);

    const u32 t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const u32 c = hf_find_row(reinterpret_cast<const u32*>(chunks), n_chunks, HF_DEC_ROW_WORDS, HF_DEC_FIRST_SLAB,
                              blockIdx.x);
    const HfDecChunk ch = chunks[c];
    const u32 nb = ch.block_count;
    const u32 k0 = (blockIdx.x - ch.first_slab) * HF_DEC_SLAB;
    const u32 nblk = nb - k0 < HF_DEC_SLAB ? nb - k0 : HF_DEC_SLAB;
    const u64 info_w = ch.payload_word + HF_HEADER_WORDS + HF_LENGTHS_WORDS;
    const u64 stream_w = info_w + ch.info_words;
    const u32 stream_words = (ch.stream_bits + 31) >> 5;

    // The multi-symbol table and the slab's stream words, all copies in flight at once: block
    // b's words (and the next block's first three) at b * HF_STAGE_STRIDE. Words past the
    // chunk's stream read as 0 (§6). The single-symbol table (block tails, 13-bit codes) stays
    // in global memory and is read through L1.
    const u32* tab = tables + (u64)ch.table * HF_TABLE_WORDS;
    const u16* g_single = reinterpret_cast<const u16*>(tab + HF_MULTI_SIZE);
    for (u32 i = t; i < HF_MULTI_SIZE; i += HF_DEC_THREADS) ts_cp_async4(hf_smem + i, tab + i);
    const u32 staged = nblk * HF_STAGE_STRIDE;
    for (u32 i = t; i < staged; i += HF_DEC_THREADS) {
        const u32 b = i / HF_STAGE_STRIDE;
        const u32 sw = (k0 + b) * HF_BLOCK_WORDS + (i - b * HF_STAGE_STRIDE);
        if (sw < stream_words) ts_cp_async4(s_stream + i, words + stream_w + sw);
        else s_stream[i] = 0;
    }
    ts_cp_async_wait();
    __syncthreads();

    // This thread's block (§5-6), in bits from the block's left edge.
    const u32 k = k0 + t;
    const u32* bits = s_stream + t * HF_STAGE_STRIDE;
    bool live = t < nblk;
    u32 count = 0, pos = 0, end = 0;
    u64 out_at = 0;
    if (live) {
        u32 spill, prev = 0, prev_count;
        bool ok, prev_ok = true;
        hf_block_info(words, info_w, ch.mode, k, nb, count, spill, ok);
        if (k) hf_block_info(words, info_w, ch.mode, k - 1, nb, prev_count, prev, prev_ok);
        const u32 base = offsets[ch.first_block];
        const u32 rel = offsets[ch.first_block + k] - base;
        if (k + 1 == nb && offsets[ch.first_block + nb] - base != ch.total_count)
            ts_report(&status[c], TS_CLASS_BLOCK_STARTS, k, HF_ST_COUNT_SUM, 0);
        if (!ok || !prev_ok) {
            hf_flag(&status[c], k, HF_ST_INFO, count);
            live = false;
        } else if (rel > ch.total_count || count > ch.total_count - rel) {
            hf_flag(&status[c], k, HF_ST_RANGE, rel);
            live = false;
        }
        pos = prev;
        end = k + 1 == nb ? ch.stream_bits - k * HF_BLOCK_BITS : HF_BLOCK_BITS + spill;
        out_at = ch.out_index + rel;
    }
    // Invariant of every read below: pos <= end <= 4096 + HF_MAX_SPILL, so the peek's three
    // words lie in the block's HF_STAGE_STRIDE staged words.

    u8* slot = s_out + t * HF_OUT_STRIDE;
    const u8* wslots = s_out + warp * 32 * HF_OUT_STRIDE;
    u32 done = 0;
    while (__any_sync(HF_FULL, live && done < count)) {
        u32 got = 0;
        if (live && done < count) {
            // Four multi-symbol lookups per 64-bit window while 12 or more symbols remain (so a
            // lookup never goes past the block's count) and the slot has room for 12.
            while (count - done - got >= 12 && got <= HF_OUT_SLOT - 12) {
                if (pos > end) {
                    hf_flag(&status[c], k, HF_ST_END, pos);
                    live = false;
                    break;
                }
                // Four lookups of at most 13 bits each: 52 of the window's 64 bits.
                u64 win = hf_peek64(bits, pos);
#pragma unroll
                for (u32 r = 0; r < 4; ++r) {
                    const u32 e = s_multi[win & (HF_MULTI_SIZE - 1)];
                    const u32 n = (e >> HF_ENTRY_COUNT_SHIFT) & 3;
                    if (n == 0) {
                        // A 13-bit code (mode 2), or none.
                        const u32 e1 = __ldg(&g_single[win & (HF_SINGLE_SIZE - 1)]);
                        const u32 l1 = e1 >> 8;
                        if (l1 == 0) {
                            live = false;
                            break;
                        }
                        slot[got++] = (u8)e1;
                        pos += l1;
                        win >>= l1;
                        continue;
                    }
                    slot[got] = (u8)e;
                    slot[got + 1] = (u8)(e >> 8);
                    slot[got + 2] = (u8)(e >> 16);
                    got += n;
                    const u32 used = e >> HF_ENTRY_BITS_SHIFT;
                    pos += used;
                    win >>= used;
                }
                if (!live) {
                    hf_flag(&status[c], k, HF_ST_CODE, pos);
                    break;
                }
            }
            // The block's last symbols, one lookup each.
            while (live && count - done - got < 12 && done + got < count && got < HF_OUT_SLOT) {
                if (pos > end) {
                    hf_flag(&status[c], k, HF_ST_END, pos);
                    live = false;
                    break;
                }
                const u32 e = __ldg(&g_single[(u32)hf_peek64(bits, pos) & (HF_SINGLE_SIZE - 1)]);
                const u32 len = e >> 8;
                if (len == 0) {
                    hf_flag(&status[c], k, HF_ST_CODE, pos);
                    live = false;
                    break;
                }
                slot[got++] = (u8)e;
                pos += len;
            }
        }
        __syncwarp();
        // The warp stores each lane's run: 32 consecutive bytes per store.
        for (u32 L = 0; L < 32; ++L) {
            const u32 g = __shfl_sync(HF_FULL, got, L);
            const u64 at = __shfl_sync(HF_FULL, out_at + done, L);
            for (u32 i = lane; i < g; i += 32) out[at + i] = wslots[L * HF_OUT_STRIDE + i];
        }
        done += got;
        __syncwarp();
    }
    if (live && pos != end) hf_flag(&status[c], k, HF_ST_END, pos);
}

// Raw chunks: one thread block per piece of HF_RAW_PIECE bytes.
extern "C" __global__ void __launch_bounds__(256)
    huff_copy_raw(const HfRawChunk* __restrict__ raws, u32 n_raw, const u32* __restrict__ words, u8* __restrict__ out) {
    const u32 r = hf_find_row(reinterpret_cast<const u32*>(raws), n_raw, 6, 5, blockIdx.x);
    const HfRawChunk ch = raws[r];
    const u32 lo = (blockIdx.x - ch.first_piece) * HF_RAW_PIECE;
    if (lo >= ch.total_count) return;
    const u32 n = ch.total_count - lo < HF_RAW_PIECE ? ch.total_count - lo : HF_RAW_PIECE;
    const u32* src = words + ch.payload_word + HF_HEADER_WORDS + lo / 4;
    u8* dst = out + ch.out_index + lo;
    const bool aligned = ((ch.out_index + lo) & 3) == 0;
    for (u32 i = threadIdx.x; 4 * i < n; i += blockDim.x) {
        const u32 w = __ldg(src + i);
        if (aligned && 4 * i + 4 <= n) {
            *reinterpret_cast<u32*>(dst + 4 * i) = w;
        } else {
            for (u32 b = 0; b < 4 && 4 * i + b < n; ++b) dst[4 * i + b] = (u8)(w >> (8 * b));
        }
    }
}
