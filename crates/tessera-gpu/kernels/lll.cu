// lll.cu: LLL decoding (docs/format/lll.md), the paper's two-stage parallel decoder.
//
// One thread block decodes one strip (block x takes strips x, x + gridDim.x, ...). The strip's
// checks of lll.md §7 step 4 come first: word counts, identifier block length and padding, and
// the word array's exact length (m + popcount of the identifiers, summed by the block while it
// copies the identifiers into shared memory). Then its segments, in order, each in **steps** of
// W = THREADS * 4 words (thread t takes words 4t .. 4t + 3 of the step):
//   Stage 1: a block-wide exclusive scan of the words' byte sizes (1 + identifier bit) gives
//     every word's offset in the word array (the paper's prefix sums of w); each thread reads its
//     words and finds their codes and code lengths (c words of LI / LRL: length 0), then a second
//     scan of the code lengths gives every code's output position (the paper's prefix sums of c).
//   Stage 2: every thread takes an equal share of the step's output bytes, finds the code of
//     its first byte by binary search over the code ends, and writes bytes into the ring (see
//     lll.cuh): SC / RL / SRL / LRL are fills of one character, SI / LI copies from the
//     dictionary, which is complete before the segment starts, so no byte waits for another.
// When a segment (or the strip's first 4096 bytes) is done it is written to global memory with
// 16-byte streaming stores.
//
// A stored strip (lll.md §4a, format 1.1) is a length check (its bytes must be exactly its output
// length, else LLL_ST_STORED_LENGTH and nothing is written) and a straight copy by the block.
//
// What a code needs from before it: a word is the c of a long code iff the word before it is a
// 2-byte word with l = 15 (a c word has identifier 0, so the parse is unambiguous), and the
// previous character p of SRL / LRL is the last byte of the code before, i.e. its SC character
// or the last byte of its dictionary copy. So a thread replays the (at most two) words of the
// segment before its first word, from the segment-start state, and then knows everything.
//
// Hostile input: every check of lll.md §6 is made (code lengths must sum to the segment's
// length exactly, SI / LI inside the dictionary, SRL / LRL after a set p, a long code's c word
// present in the segment with identifier 0). A failing step stops the strip before any byte of
// it is written (`__syncthreads_or`); the strip's status says which check failed and
// `first_bad` receives the lowest failing strip, from which the host re-runs the CPU decoder for
// the exact error. Word-array reads are clamped to the strip's array (which §7 step 4 makes
// exact), ring indices are masked, and nothing is written outside the strip's output bytes.
#include "include/common.cuh"
#include "include/lll.cuh"

template <int THREADS>
struct LllShared {
    static const u32 W = THREADS * LLL_WORDS_PER_THREAD;
    uint4 ring4[LLL_RING_BYTES / 16];
    u32 ids[LLL_MAX_ID_WORDS];
    u32 desc[W];
    u16 ends[W];
    u32 seg_w[LLL_MAX_STRIP_SEGMENTS + 1];  // first strip word of each segment, then m
    u32 scan_a[THREADS / 32];
    u32 scan_b[THREADS / 32];
    u32 scan_c[THREADS / 32];
    u32 flag;
};

// Stage 2 of one step: output bytes [lo, hi) of the strip from the step's nw codes.
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
    if (st.stored) {
        // lll.md §4a: exactly L bytes, copied (the host checked they lie inside the input).
        if (n_in != L) return LLL_ST_STORED_LENGTH;
        lll_copy_stored<THREADS>(p, out + st.out_start, L);
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
    const u8* A = p + arr_at;
    const u32 a_last = m + total_ones - 1;  // m >= 1: the array is never empty
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
            // Stage 1a: word offsets.
            const u32 i0 = step0 + tid * LLL_WORDS_PER_THREAD;
            const u32 nv = i0 < w1 ? ts_min(LLL_WORDS_PER_THREAD, w1 - i0) : 0;
            const u32 bits = nv ? lll_ids(sh.ids, i0, nv) : 0;
            u32 step_bytes;
            const u32 x0 = arr_base + lll_block_exclusive_sum<THREADS>(nv + __popc(bits), sh.scan_a, step_bytes);

            // Stage 1b: codes and their lengths. Dictionary segments replay up to two earlier
            // words of the segment (k < 0) to learn p and whether word i0 is a c word.
            const bool back1 = dict && nv && i0 >= w0 + 1;
            const bool back2 = dict && nv && i0 >= w0 + 2;
            u32 x = x0;
            if (back1) x -= 1 + lll_id(sh.ids, i0 - 1);
            if (back2) x -= 1 + lll_id(sh.ids, i0 - 2);
            u32 len[LLL_WORDS_PER_THREAD], dsc[LLL_WORDS_PER_THREAD];
            bool bad = false, pend = false, pset = false;
            u32 pch = 0;
#pragma unroll
            for (int k = -2; k < LLL_WORDS_PER_THREAD; ++k) {
                const bool exists = k == -2 ? back2 : k == -1 ? back1 : (u32)k < nv;
                if (!exists) continue;
                const u32 i = i0 + k;
                const u32 two = k >= 0 ? (bits >> k) & 1u : lll_id(sh.ids, i);
                const u32 b0 = __ldg(A + ts_min(x, a_last));
                u32 n, d;
                bool err = false;
                if (!dict) {
                    // SC, or RL: l + 2 copies of the character (lll.md §5).
                    n = two ? (u32)__ldg(A + ts_min(x + 1, a_last)) + LLL_RL_MIN : 1u;
                    d = LLL_FILL | b0;
                } else if (!two) {
                    if (pend) {
                        // The c of the long code before: its head made the code.
                        n = 0;
                        d = 0;
                        pend = false;
                    } else {
                        n = 1;
                        d = LLL_FILL | b0;
                        pset = true;
                        pch = b0;
                    }
                } else {
                    const u32 b1 = __ldg(A + ts_min(x + 1, a_last));
                    const u32 t = b0 | ((b1 & 15u) << 8), l = b1 >> 4;
                    err = pend;  // a long code's c word must have identifier 0
                    pend = false;
                    if (l == LLL_LONG_L) {
                        const bool has_c = i + 1 < w1 && !lll_id(sh.ids, i + 1);
                        err |= !has_c;
                        n = (has_c ? (u32)__ldg(A + ts_min(x + 2, a_last)) : 0u) + LLL_LONG_MIN;
                        pend = true;
                    } else {
                        n = l + LLL_SHORT_MIN;
                    }
                    if (t == LLL_RUN_T) {
                        // SRL / LRL: n copies of p, which becomes unset.
                        err |= !pset;
                        d = LLL_FILL | pch;
                        pset = false;
                    } else {
                        // SI / LI: dictionary bytes [t, t + n); d is the source's strip position
                        // until the code's output position is known.
                        err |= t + n > dict_len;
                        d = ds + t;
                        pset = true;
                        pch = ring[(ds + t + n - 1) & LLL_RING_MASK];
                    }
                }
                x += 1 + two;
                if (k >= 0) {
                    len[k] = n;
                    dsc[k] = d;
                    bad |= err;
                }
            }
            u32 total_len = 0;
#pragma unroll
            for (u32 k = 0; k < LLL_WORDS_PER_THREAD; ++k)
                if (k < nv) total_len += len[k];
            u32 step_out;
            const u32 pre = lll_block_exclusive_sum<THREADS>(total_len, sh.scan_b, step_out);
            // The step's codes must fit the segment; the last step must end it exactly.
            const u32 left = e - pos;
            if (step_out > left || (step0 + W >= w1 && step_out != left)) bad = true;
            u32 at = pos + pre;
#pragma unroll
            for (u32 k = 0; k < LLL_WORDS_PER_THREAD; ++k) {
                if (k < nv) {
                    u32 d = dsc[k];
                    if (!(d & LLL_FILL)) d = (d - at) & LLL_RING_MASK;
                    at += len[k];
                    sh.ends[tid * LLL_WORDS_PER_THREAD + k] = (u16)at;
                    sh.desc[tid * LLL_WORDS_PER_THREAD + k] = d;
                }
            }
            if (__syncthreads_or(bad)) return LLL_ST_CODE;
            // Stage 2.
            lll_step_write<THREADS>(sh, pos, pos + step_out, ts_min(W, w1 - step0));
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
        st.stored = __ldg(&strips[k].stored);
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
