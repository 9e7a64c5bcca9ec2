// lll.cu: LLL decoding (docs/format/lll.md), the paper's two-stage parallel decoder.
//
// One thread block decodes one strip (block x takes strips x, x + gridDim.x, ...). The strip's
// checks of lll.md §7 step 4 come first: word counts, identifier block length and padding, and
// the word array's exact length (m + popcount of the identifiers, summed by the block while it
// copies the identifiers into shared memory). Then the strip's words, in **steps** of W =
// THREADS * 8 words (thread t takes words 8t .. 8t + 7 of the step) that may span several
// segments (segments of 512 bytes hold a few hundred words; the step count, and with it the
// barrier count, depends on the words, not on the segment size):
//   Staging: the step's window of the word array (a few bytes before its first word to 2 past
//     its last possible one, at most 2 W + 6 bytes) is copied into shared memory with 16-byte
//     loads, one or two per thread, so the parse reads bytes from shared memory.
//   Stage 1: a block-wide exclusive scan of the words' byte sizes (1 + identifier bit) gives
//     every thread's first word offset in the word array (the paper's prefix sums of w); each
//     thread parses its 8 words in order into packed codes (length << 16 | the low half of
//     lll.cuh: a fill, a run at a ring position or a copy's source; c words of LI / LRL: 0),
//     then a second scan of the threads' output lengths gives every code's output position
//     (the paper's prefix sums of c). Each thread writes its 8 code ends and 16-bit
//     descriptions with two 16-byte shared stores (8 narrow stores a thread at a stride of 8
//     entries cost 4- and 8-way bank conflicts). Every per-word operation of this stage runs
//     once per word of the whole input, so it is kept to what a word needs: flags as u32 (bool
//     flags cost byte moves), a code's description flags already where stage 2 wants them, one
//     segment-end check per segment's last word and one per thread, map entries written by
//     a loop that continues where the code before stopped.
//   Stage 2, for each segment the step's bytes fall in, in order, with a barrier between two:
//     every thread takes an equal share of the segment's bytes in the step, finds the code of
//     its first byte (from the step's map of 4-byte positions to codes, or by binary search
//     over the code ends when the step's output is too long for the map) and writes byte by
//     byte into the ring
//     (see lll.cuh): SC / RL / SRL / LRL are fills of one character, SI / LI copies from the
//     dictionary, which is complete before the segment starts, so no byte waits for another.
// When a segment is done it is written to global memory with 16-byte streaming stores. Segments
// are 512 << g bytes (g = 0..3, the payload's segment_bytes, lll.md §2) after the halving ones,
// and each one's dictionary is the at most 4096 strip bytes before it (lll.md §3).
//
// A stored strip (lll.md §4a, format 1.1) is a length check (its bytes must be exactly its output
// length, else LLL_ST_STORED_LENGTH and nothing is written) and a straight copy by the block; a
// fill strip (§4b, format 1.2) is a length check (one byte, else LLL_ST_FILL_LENGTH) and a fill.
//
// What a code needs from before it: a word is the c of a long code iff the word before it is a
// 2-byte word with l = 15 (a c word has identifier 0, so the parse is unambiguous), and the
// previous character p of SRL / LRL is the last byte of the code before, i.e. its SC character
// or the last byte of its dictionary copy, which the parse keeps as a ring position and stage 2
// reads if a run code follows). So a thread reads the (at most two) words of the segment before
// its first word (lll_replay) and then knows everything.
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
#include "../include/common.cuh"
#include "lll.cuh"

template <int THREADS>
struct LllShared {
    static const u32 W = THREADS * LLL_WORDS_PER_THREAD;
    // The step's word-array window: LLL_STAGE_BEFORE bytes before the step's first word (the
    // replayed words), its at most 2 W bytes of words, 2 more (a long code's c word past the
    // step), from 16-byte aligned loads (up to 15 bytes of misalignment).
    static const u32 STAGE4 = (LLL_STAGE_BEFORE + 2 * W + 2 + 15) / 16 + 1;
    uint4 ring4[LLL_RING_BYTES / 16];
    uint4 stage4[2][STAGE4];  // double-buffered: step s + 1's window lands during step s's parse
    u32 ids[LLL_MAX_ID_WORDS];
    // A thread's 8 entries of each are written with one 16-byte store. desc: LLL_D_FILL | ch,
    // LLL_D_RUN_AT | a ring position, or a copy's source offset (see lll.cuh).
    alignas(16) u16 desc[W];
    alignas(16) u16 ends[W];
    // The step's map (map[q]: the step word whose code covers strip position (pos & ~3) + 4 q,
    // for the positions of a step whose output is at most MAP_BYTES long; + 1 entry: pos & ~3
    // may be 3 bytes before pos) lives in the step's own stage buffer, which nobody reads
    // between the parse and the next step's staging into it (issued after the next step's
    // first scan).
    static const u32 MAP_BYTES = 4 * (STAGE4 * 8 - 1) < LLL_MAP_BYTES ? 4 * (STAGE4 * 8 - 1) : LLL_MAP_BYTES;
    u16 seg_w[LLL_MAX_STRIP_SEGMENTS + 1];  // first strip word of each segment, then m
    u32 scan_a[THREADS / 32];
    u32 scan_b[THREADS / 32];
    u32 scan_c[THREADS / 32];
    u32 flag;
};

// 10 blocks of 128 threads a streaming multiprocessor on sm_90 (228 KiB of shared memory, of which
// 1 KiB per block is the system's), which lll_decode_128's launch bounds (48 registers) ask for:
// hence 16-bit descriptions and segment starts (a strip has at most 32768 words) and the map in
// a stage buffer.
static_assert(10 * (sizeof(LllShared<128>) + 1024) <= 228 * 1024, "LllShared<128> no longer fits 10 blocks an SM");

// One word of a dictionary segment (lll.md §5) at sb[x], identifier `two`. `pend`: the word
// before was a long code's head, so this one is its c word (length 0). `pv` is p: LLL_D_FILL |
// ch, the ring position of the last byte of a copy, or LLL_P_UNSET. Returns the packed code
// (lll.cuh): len << 16 | LLL_D_FILL | ch (a fill), len << 16 | LLL_D_RUN_AT | a ring position (a
// run of the byte there, which lies in the dictionary and is read in stage 2, when it is
// complete: the parse of a step runs before any of the step's bytes are written), or len << 16 |
// the source's ring position (a copy). The word is strip word i of a segment whose words end at w1 (a long code's c word must
// be word i + 1, identifier 0). Sets `err` on a failed §6 check. SC, SI and c words (nearly every
// word) take no branch, so the lanes of a warp, each on its own word, stay together; LI, SRL and
// LRL branch.
__device__ __forceinline__ u32 lll_dict_word(const u8* sb, int x, u32 two, const u32* ids, u32 i, u32 w1, u32 ds,
                                             u32 dict_len, u32& pend, u32& pv, u32& err) {
    const u32 b0 = sb[x], b1 = sb[x + 1];  // b1: the next word's byte for a 1-byte word, unused
    const u32 t = b0 | ((b1 & 15u) << 8), l = b1 >> 4;
    if (two && (l == LLL_LONG_L || t == LLL_RUN_T)) {
        err |= pend;  // a long code's c word must have identifier 0
        u32 n = l + LLL_SHORT_MIN;
        if (l == LLL_LONG_L) {
            err |= (u32)!(i + 1 < w1 && !lll_id(ids, i + 1));
            n = (u32)sb[x + 2] + LLL_LONG_MIN;
        }
        pend = (u32)(l == LLL_LONG_L);
        if (t == LLL_RUN_T) {
            // SRL / LRL: n copies of p, which becomes unset.
            err |= (u32)(pv == LLL_P_UNSET);
            const u32 code = ((pv & LLL_D_FILL) ? (pv & 0xFFFFu) : (LLL_D_RUN_AT | (pv & LLL_RING_MASK))) | (n << 16);
            pv = LLL_P_UNSET;
            return code;
        }
        // LI: dictionary bytes [t, t + n).
        err |= (u32)(t + n > dict_len);
        pv = (ds + t + n - 1) & LLL_RING_MASK;
        return ((ds + t) & LLL_RING_MASK) | (n << 16);
    }
    // SI (dictionary bytes [t, t + n)), SC, or the c word of the long code before.
    const u32 n = l + LLL_SHORT_MIN;
    err |= two & (pend | (u32)(t + n > dict_len));
    const u32 code = two ? (((ds + t) & LLL_RING_MASK) | (n << 16)) : pend ? 0u : (LLL_D_FILL | b0 | (1u << 16));
    pv = two ? ((ds + t + n - 1) & LLL_RING_MASK) : pend ? pv : (LLL_D_FILL | b0);
    pend = 0;
    return code;
}

// The parse state before word i0 of a dictionary segment whose words start at w0 < i0 (x0: word
// i0's offset in sb): `pend` (word i0 is a long code's c word) and p. Only the words i0 - 1 and
// i0 - 2 can matter: a c word has identifier 0, so word i0 - 1 is one iff word i0 - 2 is a long
// code's head; p is set by the last code before i0 that is not a c word. Gives the state that
// lll_dict_word replayed over those two words from the segment-start state gives, on any input.
__device__ __forceinline__ void lll_replay(const u8* sb, int x0, const u32* ids, u32 i0, u32 w0, u32 ds, u32& pend,
                                           u32& pv) {
    const bool back2 = i0 >= w0 + 2;
    // Identifiers of words i0 - 2 (bit 0, 0 when it is not in the segment) and i0 - 1 (bit 1).
    const u32 idb = back2 ? lll_ids(ids, i0 - 2, 2) : (lll_id(ids, i0 - 1) << 1);
    const u32 id1 = idb >> 1, id2 = idb & 1u;
    const int x1 = x0 - 1 - (int)id1;
    const u32 a = sb[x1], b = sb[x1 + 1];
    if (id1) {
        // Word i0 - 1 is a head: SI / LI (p: its last dictionary byte) or SRL / LRL (p unset).
        const u32 t = a | ((b & 15u) << 8), l = b >> 4;
        pend = (u32)(l == LLL_LONG_L);
        const u32 n = pend ? (u32)sb[x1 + 2] + LLL_LONG_MIN : l + LLL_SHORT_MIN;
        pv = t == LLL_RUN_T ? LLL_P_UNSET : ((ds + t + n - 1) & LLL_RING_MASK);
        return;
    }
    pend = 0;
    pv = LLL_D_FILL | a;  // SC
    if (back2 && id2) {
        const u32 a2 = sb[x1 - 2], b2 = sb[x1 - 1];
        if ((b2 >> 4) == LLL_LONG_L) {
            // Word i0 - 1 is the c word (length a + LLL_LONG_MIN) of the long code at i0 - 2.
            const u32 t2 = a2 | ((b2 & 15u) << 8);
            pv = t2 == LLL_RUN_T ? LLL_P_UNSET : ((ds + t2 + a + LLL_LONG_MIN - 1) & LLL_RING_MASK);
        }
    }
}

// Stage 2 of one step in one segment: output bytes [lo, hi) of the strip from the segment's
// codes in the step, its words kl .. kh - 1 (ends and descs of the whole step; ends[kh - 1] >= hi:
// the segment's last code ends at its end, or the step's last code at the step's). Each thread
// takes an equal share of the bytes, finds the code of its first byte (from the step's map,
// else by binary search over the code ends), then writes byte by byte (so the lanes of a warp
// loop equally often), moving to the next code where one ends: a fill, or a copy from the
// dictionary (lll.cuh's ring). The step starts at strip position pos.
template <int THREADS>
__device__ __forceinline__ void lll_step_write(LllShared<THREADS>& sh, u32 lo, u32 hi, u32 kl, u32 kh, u32 pos,
                                               const u16* map) {
    u8* ring = reinterpret_cast<u8*>(sh.ring4);
    // Shares of an odd number of 4-byte ring words, so neighbouring threads hit different banks.
    // The shares start at lo rounded down to a ring word, so they must cover hi - base bytes
    // (up to 3 more than hi - lo): THREADS * per >= hi - base.
    const u32 base = lo & ~3u;
    const u32 per = ((((hi - base) + 4 * THREADS - 1) / (4 * THREADS)) | 1u) * 4;
    const u32 a = ts_max(lo, base + threadIdx.x * per);
    const u32 b = ts_min(hi, base + (threadIdx.x + 1) * per);
    if (a >= b) return;
    u32 k;
    if (map) {
        // The code covering a & ~3 (or, before the step's first byte, the step's first code):
        // at most 3 bytes before a, so the walk below takes at most 3 codes (and c words) more.
        const u32 a4 = a & ~3u;
        k = a4 >= pos ? (u32)map[(a4 - (pos & ~3u)) >> 2] : 0u;
    } else {
        // The first code that ends past a (ends[kh - 1] >= hi > a).
        u32 top = kh - 1;
        k = kl;
        while (k < top) {
            const u32 mid = (k + top) >> 1;
            if (sh.ends[mid] > a) top = mid; else k = mid + 1;
        }
    }
    // The ends never decrease and ends[kh - 1] >= hi >= b, so k stays below kh (a code of an
    // earlier segment, from the map, ends at or before lo: the walk passes it).
    // A run of a dictionary byte (LLL_D_RUN_AT) becomes a fill of that byte when its code is
    // taken: the dictionary is complete (the segments before were written, then a barrier).
    const auto take = [&](u32 d) -> u32 {
        return (d & LLL_D_RUN_AT) ? (LLL_D_FILL | (u32)ring[d & LLL_RING_MASK]) : d;
    };
    u32 end = sh.ends[k], d = take(sh.desc[k]);
    for (u32 x = a; x < b; ++x) {
        while (end <= x) {
            ++k;
            end = sh.ends[k];
            d = take(sh.desc[k]);
        }
        ring[x & LLL_RING_MASK] = (d & LLL_D_FILL) ? (u8)d : ring[(d + x) & LLL_RING_MASK];
    }
}

// Strip bytes [ws, we) from the ring to dst (the output of strip byte ws).
template <int THREADS>
__device__ __forceinline__ void lll_write_out(const LllShared<THREADS>& sh, u8* dst, u32 ws, u32 we) {
    const u8* ring = reinterpret_cast<const u8*>(sh.ring4);
    const u32 n = we - ws;
    const u32 r = ws & LLL_RING_MASK;  // a multiple of 512: 16-byte aligned
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

// Starts copying the word-array window of a step of nw words whose first word is at array
// offset arr_base into buf (cp.async: no thread waits here): [arr_base - LLL_STAGE_BEFORE,
// arr_base + 2 nw + 2), as far as the step's words can reach, from 16-byte aligned pieces that
// start before the array's end (so they end at most 15 bytes past it: the input padding).
// Pieces past the end keep stale bytes, which no valid word uses (a 1-byte word's unused second
// byte, a failing long code's c). Returns the window's offset in its first piece.
template <int THREADS>
__device__ __forceinline__ u32 lll_stage(uint4* buf, const u8* A, size_t a_end, u32 arr_base, u32 nw) {
    const size_t wa = reinterpret_cast<size_t>(A) + arr_base - LLL_STAGE_BEFORE;
    const u32 off = (u32)(wa & 15);
    const uint4* gp = reinterpret_cast<const uint4*>(wa - off);
    const u32 pieces = ts_min(LllShared<THREADS>::STAGE4, (off + LLL_STAGE_BEFORE + 2 * nw + 2 + 15) / 16);
    for (u32 q = threadIdx.x; q < pieces; q += THREADS)
        if (reinterpret_cast<size_t>(gp + q) < a_end) ts_cp_async16(buf + q, gp + q);
    return off;
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
    const int gs = lll_segment_shift(st.segment_bytes);
    if (gs < 0) return LLL_ST_SHAPE;
    const u32 g = (u32)gs;
    const u32 S = lll_segment_count(L, g);

    // lll.md §7 step 4: word counts, identifiers, word array length.
    if (n_in < 2 * S) return LLL_ST_COUNTS_TRUNCATED;
    if (tid == 0) {
        u32 m = 0, bad = 0;
        for (u32 j = 0; j < S; ++j) {
            u32 s, e, ds;
            lll_segment(j, L, g, s, e, ds);
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

    // lll.md §6 in steps of W words of the strip. A step may hold the end of one segment and
    // the starts of others: each word is parsed with its own segment's state (p and a pending
    // c word reset at a segment's first word), its code must end inside its segment and a
    // segment's last code at the segment's end, and stage 2 writes the step's bytes segment by
    // segment, a barrier between two (a segment's copies may read the one before it).
    u32 arr_base = 0;  // word-array offset of the step's first word
    u32 pos = 0;       // strip position where the step's first code starts
    u32 jc = 0;        // the segment stage 2 is in, and its range [cs, ce) (uniform)
    u32 cs, ce, cds;
    lll_segment(0, L, g, cs, ce, cds);
    u32 off = lll_stage<THREADS>(sh.stage4[0], A, a_end, 0, ts_min(W, m));
    for (u32 step0 = 0; step0 < m; step0 += W) {
        // The step's window of the word array, whose copy the previous step (or the strip's
        // start) began: wait for this thread's pieces; the scan below publishes all of them.
        // The buffer the next step's window goes to was last read by the previous step's parse,
        // which every thread finished before that step's second scan.
        const u32 nw = ts_min(W, m - step0);
        const u32 cur = (step0 / W) & 1u;
        ts_cp_async_wait();
        // sb[x] = array byte arr_base + x, for x in [-LLL_STAGE_BEFORE, 2 W + 2).
        const u8* sb = reinterpret_cast<const u8*>(sh.stage4[cur]) + LLL_STAGE_BEFORE + off;

        // Stage 1a: word offsets (relative to arr_base).
        const u32 i0 = step0 + tid * LLL_WORDS_PER_THREAD;
        const u32 nv = i0 < m ? ts_min(LLL_WORDS_PER_THREAD, m - i0) : 0;
        const u32 bits = nv ? lll_ids(sh.ids, i0, nv) : 0;
        u32 step_bytes;
        const int x0 = (int)lll_block_exclusive_sum<THREADS>(nv + __popc(bits), sh.scan_a, step_bytes);
        // The next step's window, while this one parses.
        u32 next_off = 0;
        if (step0 + W < m)
            next_off = lll_stage<THREADS>(sh.stage4[cur ^ 1u], A, a_end, arr_base + step_bytes, ts_min(W, m - step0 - W));

        // Stage 1b: each thread parses its words in order into packed codes (c words of long
        // codes: length 0) and notes which of them end a segment.
        // x stays in [x0 - 4, step_bytes + 2): the thread's words lie in the step's step_bytes
        // <= 2 W bytes, a replay reaches at most 4 bytes back, a long code's c byte 1 past.
        // dsc: the packed codes; last: bit k set if word k is its segment's last; j0, e0: the
        // segment of the thread's first word and its end.
        u32 dsc[LLL_WORDS_PER_THREAD], last = 0, j0 = 0, e0 = 0, bad = 0;
#pragma unroll
        for (u32 k = 0; k < LLL_WORDS_PER_THREAD; ++k) dsc[k] = 0;
        if (nv) {
            // The segment of word i0: the last j with seg_w[j] <= i0 (word counts are >= 1, so
            // seg_w increases).
            u32 j = 0, top = S - 1;
            while (j < top) {
                const u32 mid = (j + top + 1) >> 1;
                if (sh.seg_w[mid] <= i0) j = mid; else top = mid - 1;
            }
            u32 s, e, ds;
            lll_segment(j, L, g, s, e, ds);
            j0 = j;
            e0 = e;
            u32 w1 = sh.seg_w[j + 1];
            u32 pend = 0, pv = LLL_P_UNSET;
            // The state before word i0 (lll_replay); none to replay at a segment's first word.
            if (j > 0 && i0 > sh.seg_w[j]) lll_replay(sb, x0, sh.ids, i0, sh.seg_w[j], ds, pend, pv);
            int x = x0;
#pragma unroll
            for (u32 k = 0; k < LLL_WORDS_PER_THREAD; ++k) {
                if (k < nv) {
                    const u32 i = i0 + k;
                    if (i == w1) {
                        // The next segment starts (every segment has a word, so one at a time).
                        ++j;
                        lll_segment(j, L, g, s, e, ds);
                        w1 = sh.seg_w[j + 1];
                        pend = 0;
                        pv = LLL_P_UNSET;
                    }
                    const u32 two = (bits >> k) & 1u;
                    if (j == 0) {
                        // SC, or RL: l + 2 copies of the character (lll.md §5).
                        const u32 n = two ? (u32)sb[x + 1] + LLL_RL_MIN : 1u;
                        dsc[k] = LLL_D_FILL | (u32)sb[x] | (n << 16);
                    } else {
                        dsc[k] = lll_dict_word(sb, x, two, sh.ids, i, w1, ds, s - ds, pend, pv, bad);
                    }
                    x += 1 + (int)two;
                }
            }
            // The segments' last words among the thread's: every segment from j0 to j - 1 ends
            // inside them, segment j if its next segment's first word w1 is past them.
#pragma unroll 1
            for (u32 jj = j0; jj < j; ++jj) last |= 1u << (sh.seg_w[jj + 1] - 1 - i0);
            if (w1 <= i0 + nv) last |= 1u << (w1 - 1 - i0);
        }
        u32 total_len = 0;
#pragma unroll
        for (u32 k = 0; k < LLL_WORDS_PER_THREAD; ++k) total_len += dsc[k] >> 16;
        u32 step_out;
        const u32 pre = lll_block_exclusive_sum<THREADS>(total_len, sh.scan_b, step_out);
        u32 at = pos + pre;
        // The step's map (when its output is short enough) gets the entries q in [qa, qe) of
        // each code: those whose position pos4 + 4 q the code covers. The codes tile the
        // step's output, so each code's entries start where the code before it left off.
        const bool mapped = step_out <= LllShared<THREADS>::MAP_BYTES;
        u16* const map = reinterpret_cast<u16*>(sh.stage4[cur]);
        const u32 pos4 = pos & ~3u;
        const u32 qcap = mapped ? LllShared<THREADS>::MAP_BYTES / 4 + 1 : 0u;
        u32 qa = ts_min((at - pos4 + 3) >> 2, qcap);
        u32 endp[LLL_WORDS_PER_THREAD / 2], descp[LLL_WORDS_PER_THREAD / 2];
        // Words past nv have dsc 0 (length 0): their entries are written but never read.
#pragma unroll
        for (u32 k = 0; k < LLL_WORDS_PER_THREAD; ++k) {
            const u32 d = dsc[k];
            // A fill's or a run's description is the low half of its code; a copy's is its
            // source relative to its output position.
            const u32 v = (d & (LLL_D_FILL | LLL_D_RUN_AT)) ? d : ((d - at) & LLL_RING_MASK);
            at += d >> 16;
            const u32 qe = ts_min((at - pos4 + 3) >> 2, qcap);
#pragma unroll 1
            for (; qa < qe; ++qa) map[qa] = (u16)(tid * LLL_WORDS_PER_THREAD + k);
            // lll.md §6: a code ends inside its segment, the segment's last one at its end. The
            // ends only grow, so checking each segment's last code here and the thread's last
            // code against its segment's end below covers every code.
            if ((last >> k) & 1u) {
                bad |= (u32)(at != e0);
                u32 s1, ds1;
                lll_segment(++j0, L, g, s1, e0, ds1);
            }
            if (k & 1) {
                endp[k >> 1] = __byte_perm(endp[k >> 1], at, 0x5410);
                descp[k >> 1] = __byte_perm(descp[k >> 1], v, 0x5410);
            } else {
                endp[k >> 1] = at;
                descp[k >> 1] = v;
            }
        }
        bad |= (u32)(nv != 0 && at > e0);
        if (nv) {
            // A thread's 8 ends and descs in two 16-byte stores (entries past nv are never read).
            *reinterpret_cast<uint4*>(&sh.ends[tid * LLL_WORDS_PER_THREAD]) = make_uint4(endp[0], endp[1], endp[2], endp[3]);
            *reinterpret_cast<uint4*>(&sh.desc[tid * LLL_WORDS_PER_THREAD]) =
                make_uint4(descp[0], descp[1], descp[2], descp[3]);
        }
        if (__syncthreads_or(bad)) {
            ts_cp_async_wait();  // the next step's copy must land before the next strip's staging
            return LLL_ST_CODE;
        }
        // Stage 2, segment by segment; a finished segment goes out to global memory.
        const u32 hi = pos + step_out, step_pos = pos;
        while (pos < hi) {
            const u32 b = ts_min(hi, ce);
            // The segment's words in the step, relative to step0.
            const u32 kl = ts_max(sh.seg_w[jc], step0) - step0;
            const u32 kh = ts_min(sh.seg_w[jc + 1], step0 + nw) - step0;
            lll_step_write<THREADS>(sh, pos, b, kl, kh, step_pos, mapped ? map : nullptr);
            pos = b;
            if (pos == ce) {
                __syncthreads();
                lll_write_out<THREADS>(sh, out + st.out_start + cs, cs, ce);
                if (++jc < S) lll_segment(jc, L, g, cs, ce, cds);
            }
        }
        arr_base += step_bytes;
        off = next_off;
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
        st.segment_bytes = __ldg(&strips[k].segment_bytes);
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

extern "C" __global__ void __launch_bounds__(64, 12) lll_decode_64(LLL_DECODE_ARGS) {
    lll_decode<64>(in, strips, n_strips, out, status, first_bad);
}
extern "C" __global__ void __launch_bounds__(128, 10) lll_decode_128(LLL_DECODE_ARGS) {
    lll_decode<128>(in, strips, n_strips, out, status, first_bad);
}
extern "C" __global__ void __launch_bounds__(256, 4) lll_decode_256(LLL_DECODE_ARGS) {
    lll_decode<256>(in, strips, n_strips, out, status, first_bad);
}
