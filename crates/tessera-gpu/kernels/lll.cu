// lll.cu: LLL decoding (docs/format/lll.md), the paper's two-stage parallel decoder.
//
// One thread block decodes one strip (block x takes strips x, x + gridDim.x, ...). The strip's
// checks of lll.md §7 step 4 come first: word counts, identifier block length and padding, and
// the word array's exact length (m + popcount of the identifiers, summed by the block while it
// copies the identifiers into shared memory). Then its segments, in order, each in **steps** of
// W = THREADS * 8 words (thread t takes words 8t .. 8t + 7 of the step):
//   Staging: the step's window of the word array (a few bytes before its first word to 2 past
//     its last possible one, at most 2 W + 6 bytes) is copied into shared memory with 16-byte
//     loads, one or two per thread, so the parse reads bytes from shared memory.
//   Stage 1: a block-wide exclusive scan of the words' byte sizes (1 + identifier bit) gives
//     every thread's first word offset in the word array (the paper's prefix sums of w); each
//     thread parses its 8 words in order into packed codes (length << 16 | a fill character or
//     a dictionary source; c words of LI / LRL: length 0), then a second scan of the threads'
//     output lengths gives every code's output position (the paper's prefix sums of c).
//   Stage 2: every thread takes an equal share of the step's output bytes, finds the code of
//     its first byte by binary search over the code ends and writes byte by byte into the ring
//     (see lll.cuh): SC / RL / SRL / LRL are fills of one character, SI / LI copies from the
//     dictionary, which is complete before the segment starts, so no byte waits for another.
// When a segment (or the strip's first 4096 bytes) is done it is written to global memory with
// 16-byte streaming stores.
//
// A stored strip (lll.md §4a, format 1.1) is a length check (its bytes must be exactly its output
// length, else LLL_ST_STORED_LENGTH and nothing is written) and a straight copy by the block; a
// fill strip (§4b, format 1.2) is a length check (one byte, else LLL_ST_FILL_LENGTH) and a fill.
//
// What a code needs from before it: a word is the c of a long code iff the word before it is a
// 2-byte word with l = 15 (a c word has identifier 0, so the parse is unambiguous), and the
// previous character p of SRL / LRL is the last byte of the code before, i.e. its SC character
// or the last byte of its dictionary copy, which the parse keeps as a ring position and reads only
// if a run code follows). So a thread replays the (at most two) words of the segment before its
// first word, from the segment-start state, and then knows everything.
//
// Hostile input: every check of lll.md §6 is made (code lengths must sum to the segment's
// length exactly, SI / LI inside the dictionary, SRL / LRL after a set p, a long code's c word
// present in the segment with identifier 0). A failing step stops the strip before any byte of
// it is written (`__syncthreads_or`); the strip's status says which check failed and
// `first_bad` receives the lowest failing strip, from which the host re-runs the CPU decoder for
// the exact error. Global reads of the word array are 16-byte pieces that start inside it (§7
// step 4 makes its length exact; the input padding covers a piece's overhang); parse reads stay
// inside the staged window by construction (each thread's words lie in the step's bytes, which
// the scan of the word sizes bounds by 2 W); ring indices are masked, and nothing is written
// outside the strip's output bytes.
#include "include/common.cuh"
#include "include/lll.cuh"

template <int THREADS>
struct LllShared {
    static const u32 W = THREADS * LLL_WORDS_PER_THREAD;
    // The step's word-array window: LLL_STAGE_BEFORE bytes before the step's first word (the
    // replayed words), its at most 2 W bytes of words, 2 more (a long code's c word past the
    // step), from 16-byte aligned loads (up to 15 bytes of misalignment).
    static const u32 STAGE4 = (LLL_STAGE_BEFORE + 2 * W + 2 + 15) / 16 + 1;
    uint4 ring4[LLL_RING_BYTES / 16];
    uint4 stage4[STAGE4];
    u32 ids[LLL_MAX_ID_WORDS];
    u32 desc[W];
    u16 ends[W];
    u32 seg_w[LLL_MAX_STRIP_SEGMENTS + 1];  // first strip word of each segment, then m
    u32 scan_a[THREADS / 32];
    u32 scan_b[THREADS / 32];
    u32 scan_c[THREADS / 32];
    u32 flag;
};

// One word of a dictionary segment (lll.md §5) at sb[x], identifier `two`. `pend`: the word
// before was a long code's head, so this one is its c word (length 0). `pv` is p: LLL_FILL | ch,
// the ring position of the last byte of a copy (read only if a run code follows: the dictionary
// does not change during the segment), or LLL_P_UNSET. Returns the packed code: len << 16 |
// LLL_FILL | ch (a fill) or len << 16 | the source's ring position (a copy). The word is strip
// word i of a segment whose words end at w1 (a long code's c word must be word i + 1, identifier
// 0). Sets `err` on a failed §6 check. SC, SI and c words (nearly every word) take no branch, so
// the lanes of a warp, each on its own word, stay together; LI, SRL and LRL branch.
__device__ __forceinline__ u32 lll_dict_word(const u8* sb, int x, u32 two, const u32* ids, u32 i, u32 w1, u32 ds,
                                             u32 dict_len, const u8* ring, bool& pend, u32& pv, bool& err) {
    const u32 b0 = sb[x], b1 = sb[x + 1];  // b1: the next word's byte for a 1-byte word, unused
    const u32 t = b0 | ((b1 & 15u) << 8), l = b1 >> 4;
    if (two && (l == LLL_LONG_L || t == LLL_RUN_T)) {
        err |= pend;  // a long code's c word must have identifier 0
        u32 n = l + LLL_SHORT_MIN;
        if (l == LLL_LONG_L) {
            err |= !(i + 1 < w1 && !lll_id(ids, i + 1));
            n = (u32)sb[x + 2] + LLL_LONG_MIN;
        }
        pend = l == LLL_LONG_L;
        if (t == LLL_RUN_T) {
            // SRL / LRL: n copies of p, which becomes unset.
            err |= pv == LLL_P_UNSET;
            const u32 ch = (pv & LLL_FILL) ? (pv & 0xFFu) : (u32)ring[pv & LLL_RING_MASK];
            pv = LLL_P_UNSET;
            return LLL_FILL | ch | (n << 16);
        }
        // LI: dictionary bytes [t, t + n).
        err |= t + n > dict_len;
        pv = (ds + t + n - 1) & LLL_RING_MASK;
        return (ds + t) | (n << 16);
    }
    // SI (dictionary bytes [t, t + n)), SC, or the c word of the long code before.
    const u32 n = l + LLL_SHORT_MIN;
    err |= two && (pend || t + n > dict_len);
    const u32 code = two ? ((ds + t) | (n << 16)) : pend ? 0u : (LLL_FILL | b0 | (1u << 16));
    pv = two ? ((ds + t + n - 1) & LLL_RING_MASK) : pend ? pv : (LLL_FILL | b0);
    pend = false;
    return code;
}

// Stage 2 of one step: output bytes [lo, hi) of the strip from the step's nw codes. Each thread
// takes an equal share of the bytes, finds the code of its first byte by binary search over the
// code ends, then writes byte by byte (so the lanes of a warp loop equally often), moving to the
// next code where one ends: a fill, or a copy from the dictionary (lll.cuh's ring).
template <int THREADS>
__device__ __forceinline__ void lll_step_write(LllShared<THREADS>& sh, u32 lo, u32 hi, u32 nw) {
    u8* ring = reinterpret_cast<u8*>(sh.ring4);
    // Shares of an odd number of 4-byte ring words, so neighbouring threads hit different banks.
    // The shares start at lo rounded down to a ring word, so they must cover hi - base bytes
    // (up to 3 more than hi - lo): THREADS * per >= hi - base.
    const u32 base = lo & ~3u;
    const u32 per = ((((hi - base) + 4 * THREADS - 1) / (4 * THREADS)) | 1u) * 4;
    const u32 a = ts_max(lo, base + threadIdx.x * per);
    const u32 b = ts_min(hi, base + (threadIdx.x + 1) * per);
    if (a >= b) return;
    // The first code that ends past a (ends[nw - 1] == hi > a).
    u32 k = 0, top = nw - 1;
    while (k < top) {
        const u32 mid = (k + top) >> 1;
        if (sh.ends[mid] > a) top = mid; else k = mid + 1;
    }
    // The ends never decrease and ends[nw - 1] = hi >= b, so k stays below nw.
    u32 end = sh.ends[k], d = sh.desc[k];
    for (u32 x = a; x < b; ++x) {
        while (end <= x) {
            ++k;
            end = sh.ends[k];
            d = sh.desc[k];
        }
        ring[x & LLL_RING_MASK] = (d & LLL_FILL) ? (u8)d : ring[(d + x) & LLL_RING_MASK];
    }
}

// Strip bytes [ws, we) from the ring to dst (the output of strip byte ws).
template <int THREADS>
__device__ __forceinline__ void lll_write_out(const LllShared<THREADS>& sh, u8* dst, u32 ws, u32 we) {
    const u8* ring = reinterpret_cast<const u8*>(sh.ring4);
    const u32 n = we - ws;
    const u32 r = ws & LLL_RING_MASK;  // 0 or 4096: 16-byte aligned
    u32 done = 0;
    if ((reinterpret_cast<size_t>(dst) & 15) == 0) {
        const uint4* s4 = reinterpret_cast<const uint4*>(ring + r);
        uint4* d4 = reinterpret_cast<uint4*>(dst);
        for (u32 i = threadIdx.x; i < n / 16; i += THREADS) __stcs(d4 + i, s4[i]);
        done = n & ~15u;
    }
    for (u32 i = done + threadIdx.x; i < n; i += THREADS) dst[i] = ring[r + i];
}

// A stored strip's n bytes from src to dst: 16-byte loads and streaming stores where src and dst
// are equally aligned (the bytes before the first 16-byte boundary and after the last go one by
// one), bytes otherwise. Reads exactly src[0, n), writes exactly dst[0, n).
template <int THREADS>
__device__ __forceinline__ void lll_copy_stored(const u8* __restrict__ src, u8* __restrict__ dst, u32 n) {
    const u32 mis = (u32)(reinterpret_cast<size_t>(src) & 15);
    u32 head = n, body = 0;
    if (mis == (u32)(reinterpret_cast<size_t>(dst) & 15)) {
        head = ts_min((16u - mis) & 15u, n);
        body = (n - head) / 16;
    }
    for (u32 i = threadIdx.x; i < head; i += THREADS) dst[i] = __ldg(src + i);
    const uint4* s4 = reinterpret_cast<const uint4*>(src + head);
    uint4* d4 = reinterpret_cast<uint4*>(dst + head);
    for (u32 i = threadIdx.x; i < body; i += THREADS) __stcs(d4 + i, __ldg(s4 + i));
    for (u32 i = head + 16 * body + threadIdx.x; i < n; i += THREADS) dst[i] = __ldg(src + i);
}

// n copies of b at dst: byte stores up to the first 16-byte boundary and after the last, 16-byte
// streaming stores between. Writes exactly dst[0, n).
template <int THREADS>
__device__ __forceinline__ void lll_fill(u8* __restrict__ dst, u32 n, u8 b) {
    const u32 head = ts_min((16u - (u32)(reinterpret_cast<size_t>(dst) & 15)) & 15u, n);
    const u32 body = (n - head) / 16;
    for (u32 i = threadIdx.x; i < head; i += THREADS) dst[i] = b;
    const u32 w = 0x01010101u * b;
    const uint4 v = make_uint4(w, w, w, w);
    uint4* d4 = reinterpret_cast<uint4*>(dst + head);
    for (u32 i = threadIdx.x; i < body; i += THREADS) __stcs(d4 + i, v);
    for (u32 i = head + 16 * body + threadIdx.x; i < n; i += THREADS) dst[i] = b;
}

// Decodes one strip; returns its status (uniform over the thread block).
template <int THREADS>
__device__ __forceinline__ u32 lll_decode_strip(const u8* __restrict__ in, const LllStrip st, u8* __restrict__ out,
                                                LllShared<THREADS>& sh) {
    const u32 W = LllShared<THREADS>::W;
    const u32 tid = threadIdx.x;
    const u32 L = st.out_len;
    if (L == 0 || L > LLL_STRIP_BYTES) return LLL_ST_SHAPE;
    const u8* p = in + st.in_start;
    const u32 n_in = st.in_len;
    if (st.kind == LLL_KIND_STORED) {
        // lll.md §4a: exactly L bytes, copied (the host checked they lie inside the input).
        if (n_in != L) return LLL_ST_STORED_LENGTH;
        lll_copy_stored<THREADS>(p, out + st.out_start, L);
        return LLL_ST_OK;
    }
    if (st.kind == LLL_KIND_FILL) {
        // lll.md §4b: one byte (inside the input, checked by the host), L copies.
        if (n_in != 1) return LLL_ST_FILL_LENGTH;
        lll_fill<THREADS>(out + st.out_start, L, __ldg(p));
        return LLL_ST_OK;
    }
    const u32 S = lll_segment_count(L);

    // lll.md §7 step 4: word counts, identifiers, word array length.
    if (n_in < 2 * S) return LLL_ST_COUNTS_TRUNCATED;
    if (tid == 0) {
        u32 m = 0, bad = 0;
        for (u32 j = 0; j < S; ++j) {
            u32 s, e, ds;
            lll_segment(j, L, s, e, ds);
            const u32 c = (u32)__ldg(p + 2 * j) | ((u32)__ldg(p + 2 * j + 1) << 8);
            if (c == 0 || c > e - s) bad = 1;
            sh.seg_w[j] = m;
            m += c;
        }
        sh.seg_w[S] = m;
        sh.flag = bad;
    }
    __syncthreads();
    if (sh.flag) return LLL_ST_WORD_COUNT;
    const u32 m = sh.seg_w[S];
    const u32 ids_at = 2 * S;
    const u32 ids_len = (m + 7) / 8;
    if (n_in - ids_at < ids_len) return LLL_ST_IDS_TRUNCATED;
    if ((m & 7) != 0 && (__ldg(p + ids_at + ids_len - 1) >> (m & 7)) != 0) return LLL_ST_PADDING;
    u32 ones = 0;
    {
        // Identifier bytes [ids_at, ids_at + ids_len) as little-endian words, from aligned loads.
        const u64 at = st.in_start + ids_at;
        const u32* src = reinterpret_cast<const u32*>(in + (at & ~3ull));
        const u32 shift = (u32)(at & 3) * 8;
        const u32 words = (ids_len + 3) / 4;
        for (u32 w = tid; w < words; w += THREADS) {
            u32 v = __funnelshift_r(__ldg(src + w), __ldg(src + w + 1), shift);
            const u32 valid = ids_len - 4 * w;
            if (valid < 4) v &= (1u << (8 * valid)) - 1u;
            sh.ids[w] = v;
            ones += __popc(v);
        }
    }
    u32 total_ones;
    lll_block_exclusive_sum<THREADS>(ones, sh.scan_c, total_ones);  // also publishes sh.ids
    const u32 arr_at = ids_at + ids_len;
    if (n_in - arr_at != m + total_ones) return LLL_ST_ARRAY_LENGTH;
    // The word array [A, A + alen) and the 16-byte pieces of it each step stages.
    const u8* A = p + arr_at;
    const u32 alen = m + total_ones;
    const size_t a_end = reinterpret_cast<size_t>(A) + alen;
    u8* ring = reinterpret_cast<u8*>(sh.ring4);

    // lll.md §6: the segments in order.
    u32 arr_base = 0;  // word-array offset of the segment's (step's) first word
    for (u32 j = 0; j < S; ++j) {
        u32 s, e, ds;
        lll_segment(j, L, s, e, ds);
        const u32 w0 = sh.seg_w[j], w1 = sh.seg_w[j + 1];
        const bool dict = j > 0;
        const u32 dict_len = s - ds;
        u32 pos = s;
        for (u32 step0 = w0; step0 < w1; step0 += W) {
            // Stage the window [arr_base - LLL_STAGE_BEFORE, arr_base + 2 nw + 2) of the array
            // (as far as the step's nw words can reach), from 16-byte aligned loads that start
            // before the array's end (so they end at most 15 bytes past it: the input padding).
            // Pieces past the end keep stale bytes, which no valid word uses (a 1-byte word's
            // unused second byte, a failing long code's c). The previous step read the window
            // before its second scan, so no thread still reads it; the scan below publishes it.
            const u32 nw = ts_min(W, w1 - step0);
            const size_t wa = reinterpret_cast<size_t>(A) + arr_base - LLL_STAGE_BEFORE;
            const u32 off = (u32)(wa & 15);
            const uint4* g = reinterpret_cast<const uint4*>(wa - off);
            const u32 pieces = ts_min(LllShared<THREADS>::STAGE4, (off + LLL_STAGE_BEFORE + 2 * nw + 2 + 15) / 16);
            for (u32 q = tid; q < pieces; q += THREADS)
                if (reinterpret_cast<size_t>(g + q) < a_end) sh.stage4[q] = __ldg(g + q);
            // sb[x] = array byte arr_base + x, for x in [-LLL_STAGE_BEFORE, 2 W + 2).
            const u8* sb = reinterpret_cast<const u8*>(sh.stage4) + LLL_STAGE_BEFORE + off;

            // Stage 1a: word offsets (relative to arr_base).
            const u32 i0 = step0 + tid * LLL_WORDS_PER_THREAD;
            const u32 nv = i0 < w1 ? ts_min(LLL_WORDS_PER_THREAD, w1 - i0) : 0;
            const u32 bits = nv ? lll_ids(sh.ids, i0, nv) : 0;
            u32 step_bytes;
            const int x0 = (int)lll_block_exclusive_sum<THREADS>(nv + __popc(bits), sh.scan_a, step_bytes);

            // Stage 1b: each thread parses its words in order into packed codes (c words of long
            // codes: length 0). x stays in [x0 - 4, step_bytes + 2): the thread's words lie in
            // the step's step_bytes <= 2 W bytes, a replay reaches at most 4 bytes back, a long
            // code's c byte 1 past.
            u32 dsc[LLL_WORDS_PER_THREAD];
            bool bad = false;
            if (!dict) {
                // SC, or RL: l + 2 copies of the character (lll.md §5).
                int x = x0;
#pragma unroll
                for (u32 k = 0; k < LLL_WORDS_PER_THREAD; ++k) {
                    dsc[k] = 0;
                    if (k < nv) {
                        const u32 two = (bits >> k) & 1u;
                        const u32 n = two ? (u32)sb[x + 1] + LLL_RL_MIN : 1u;
                        dsc[k] = LLL_FILL | (u32)sb[x] | (n << 16);
                        x += 1 + (int)two;
                    }
                }
            } else {
                // Replay up to two earlier words of the segment (they may lie in the step
                // before) to learn p and whether word i0 is a c word.
                bool pend = false, ignored = false;
                u32 pv = LLL_P_UNSET;
                const bool back1 = nv && i0 >= w0 + 1;
                const bool back2 = nv && i0 >= w0 + 2;
                const u32 id1 = back1 ? lll_id(sh.ids, i0 - 1) : 0u;
                const u32 id2 = back2 ? lll_id(sh.ids, i0 - 2) : 0u;
                if (back2)
                    lll_dict_word(sb, x0 - 2 - (int)(id1 + id2), id2, sh.ids, i0 - 2, w1, ds, dict_len, ring, pend,
                                  pv, ignored);
                if (back1)
                    lll_dict_word(sb, x0 - 1 - (int)id1, id1, sh.ids, i0 - 1, w1, ds, dict_len, ring, pend, pv,
                                  ignored);
                int x = x0;
#pragma unroll
                for (u32 k = 0; k < LLL_WORDS_PER_THREAD; ++k) {
                    dsc[k] = 0;
                    if (k < nv) {
                        const u32 two = (bits >> k) & 1u;
                        dsc[k] = lll_dict_word(sb, x, two, sh.ids, i0 + k, w1, ds, dict_len, ring, pend, pv, bad);
                        x += 1 + (int)two;
                    }
                }
            }
            u32 total_len = 0;
#pragma unroll
            for (u32 k = 0; k < LLL_WORDS_PER_THREAD; ++k) total_len += (dsc[k] >> 16) & 0x7FFFu;
            u32 step_out;
            const u32 pre = lll_block_exclusive_sum<THREADS>(total_len, sh.scan_b, step_out);
            // The step's codes must fit the segment; the last step must end it exactly.
            const u32 left = e - pos;
            if (step_out > left || (step0 + W >= w1 && step_out != left)) bad = true;
            u32 at = pos + pre;
#pragma unroll
            for (u32 k = 0; k < LLL_WORDS_PER_THREAD; ++k) {
                if (k < nv) {
                    const u32 d = dsc[k];
                    const u32 v = (d & LLL_FILL) ? (d & (LLL_FILL | 0xFFu)) : (((d & 0xFFFFu) - at) & LLL_RING_MASK);
                    at += (d >> 16) & 0x7FFFu;
                    sh.ends[tid * LLL_WORDS_PER_THREAD + k] = (u16)at;
                    sh.desc[tid * LLL_WORDS_PER_THREAD + k] = v;
                }
            }
            if (__syncthreads_or(bad)) return LLL_ST_CODE;
            // Stage 2.
            lll_step_write<THREADS>(sh, pos, pos + step_out, nw);
            pos += step_out;
            arr_base += step_bytes;
        }
        if (j >= 3 || j == S - 1) {
            __syncthreads();
            const u32 ws = j < 4 ? 0u : s;
            lll_write_out<THREADS>(sh, out + st.out_start + ws, ws, e);
        }
    }
    return LLL_ST_OK;
}

template <int THREADS>
__device__ __forceinline__ void lll_decode(const u8* __restrict__ in, const LllStrip* __restrict__ strips, u32 n_strips,
                                           u8* __restrict__ out, u32* __restrict__ status, u32* __restrict__ first_bad) {
    __shared__ LllShared<THREADS> sh;
    for (u32 k = blockIdx.x; k < n_strips; k += gridDim.x) {
        LllStrip st;
        st.in_start = __ldg(&strips[k].in_start);
        st.out_start = __ldg(&strips[k].out_start);
        st.in_len = __ldg(&strips[k].in_len);
        st.out_len = __ldg(&strips[k].out_len);
        st.kind = __ldg(&strips[k].kind);
        st.reserved = 0;
        const u32 code = lll_decode_strip<THREADS>(in, st, out, sh);
        if (threadIdx.x == 0) {
            status[k] = code;
            if (code != LLL_ST_OK) atomicMin(first_bad, k);
        }
        __syncthreads();  // the next strip reuses the shared memory
    }
}

#define LLL_DECODE_ARGS                                                                                            \
    const u8 *__restrict__ in, const LllStrip *__restrict__ strips, u32 n_strips, u8 *__restrict__ out,           \
        u32 *__restrict__ status, u32 *__restrict__ first_bad

extern "C" __global__ void __launch_bounds__(128, 8) lll_decode_128(LLL_DECODE_ARGS) {
    lll_decode<128>(in, strips, n_strips, out, status, first_bad);
}
extern "C" __global__ void __launch_bounds__(256, 4) lll_decode_256(LLL_DECODE_ARGS) {
    lll_decode<256>(in, strips, n_strips, out, status, first_bad);
}
