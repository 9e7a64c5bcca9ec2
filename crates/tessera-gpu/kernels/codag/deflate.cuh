// deflate.cuh: raw Deflate (RFC 1951: stored, fixed and dynamic Huffman blocks, overlapping
// back-references) on the CODAG framework, one warp per stream, every lane decoding.
//
// Decoding is by lookup tables in shared memory, one set per warp, built by all 32 lanes:
// - the literal/length table is indexed by the next DEFLATE_LIT_BITS input bits and the distance
//   table by the next DEFLATE_DIST_BITS; an entry holds the code's length and what the symbol
//   means with its extra bits folded in (a literal byte, or a length / distance base and its
//   extra-bit count), so a symbol costs one shared load and no table of bases;
// - a literal entry whose code leaves room in the index for a second literal code holds both
//   bytes (two literals per lookup);
// - codes longer than the index (rare by construction: long codes are rare symbols) and bit
//   patterns that are no code have entry 0 and take the canonical walk over `count[len]` and the
//   symbols sorted by (length, symbol), which also says "no code".
// Input bits come from a 64-bit window in registers refilled from the ring (codag_peek64) when
// fewer bits are left than the longest symbol sequence needs (a length, its distance and both
// extra-bit fields: 48 bits). Bits past the chunk's end read as zeros; the position is checked
// against the input length at every refill, before every copy and at the end, so a stream that
// consumed bits past its end is CODAG_ST_TRUNCATED however its last symbols decoded.
// Literals are buffered in registers, lane k holding the k-th pending byte, and written by all
// lanes at once (one coalesced store of up to 32 bytes) before a match copy, at a block's end or
// when 31 are pending.
//
// What makes a stream bad follows the CPU reference (miniz_oxide) so both reject the same
// streams: codes over-subscribed or incomplete (an incomplete literal/length or distance code
// with one used symbol is allowed; the code-length code must be complete), more than 286
// literal/length or 30 distance codes, a repeat with no previous length or past the table,
// literal/length symbols 286-287 and distance symbols 30-31, distances before the start of the
// output, LEN != ~NLEN in stored blocks, block type 3.
#ifndef TESSERA_CODAG_DEFLATE_CUH
#define TESSERA_CODAG_DEFLATE_CUH

#include "warp_decoder.cuh"

#define DEFLATE_LIT_BITS 10
#define DEFLATE_DIST_BITS 8
// The code-length code's codes are at most 7 bits and it must be complete: a 7-bit table
// covers it whole (kept in the distance table's space while a block header is read).
#define DEFLATE_CL_BITS 7

// Table entry (u32): bits 0-3 the code's length (0: long code or no code, take the walk),
// 4-7 extra bits, 8-9 kind, 16-31 the value: a literal byte (and, with bit 14 set, a second
// literal byte in bits 24-31; bits 10-13 then hold both codes' lengths together), a length or
// distance base, or a code-length symbol.
#define DEFLATE_K_LIT 0u
#define DEFLATE_K_BASE 1u
#define DEFLATE_K_END 2u
#define DEFLATE_K_BAD 3u
#define DEFLATE_TWO (1u << 14)

// One warp's tables: the literal/length table indexed by LB bits, the distance table by DB.
// LEAN (the occupancy variant, docs/gpu/codag.md "Warps per SM"): the code lengths, needed only
// while tables are built, live in the distance table's space behind the code-length table
// (deflate_build reads every length before it writes a table entry), and a code longer than the
// table takes the canonical walk from length LB + 1 (`lresume` / `dresume`: the first code and
// the symbol index at that length) instead of from length 1.
template <u32 LB, u32 DB, bool LEAN>
struct DeflateTablesT {
    static constexpr u32 LIT_BITS = LB;
    static constexpr u32 DIST_BITS = DB;
    static constexpr bool IS_LEAN = LEAN;
    static_assert(!LEAN || (4u << DB) >= 4u * (1u << DEFLATE_CL_BITS) + 288 + 32,
                  "the code lengths must fit behind the code-length table");
    u32 lit[1 << LB];
    u32 dist[1 << DB];
    u16 lcount[16];
    u16 dcount[16];
    u16 next[16];
    u16 lsym[288];
    u16 dsym[32];
    u32 lresume;
    u32 dresume;
    u8 own_lens[LEAN ? 4 : 288 + 32];
    __device__ __forceinline__ u8* lens() {
        if constexpr (LEAN) return reinterpret_cast<u8*>(dist + (1u << DEFLATE_CL_BITS));
        else return own_lens;
    }
};
typedef DeflateTablesT<DEFLATE_LIT_BITS, DEFLATE_DIST_BITS, false> DeflateTables;
// The occupancy variant's tables: a 9-bit literal/length table (2 KiB instead of 4) and the code
// lengths behind the code-length table, 4.3 KiB a warp with the input ring instead of 6.5 KiB.
typedef DeflateTablesT<9, DEFLATE_DIST_BITS, true> DeflateTablesLean;

__constant__ u16 DEFLATE_LEN_BASE[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                         31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
__constant__ u8 DEFLATE_LEN_EXTRA[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                         2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
__constant__ u16 DEFLATE_DIST_BASE[30] = {1,    2,    3,    4,    5,    7,     9,     13,    17,  25,
                                          33,   49,   65,   97,   129,  193,   257,   385,   513, 769,
                                          1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
__constant__ u8 DEFLATE_DIST_EXTRA[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                          6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
__constant__ u8 DEFLATE_CL_ORDER[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};

// Which table an entry is made for.
#define DEFLATE_T_LIT 0
#define DEFLATE_T_DIST 1
#define DEFLATE_T_CL 2

// The entry of symbol `s` with a code of `len` bits.
__device__ __forceinline__ u32 deflate_entry(u32 table, u32 s, u32 len) {
    if (table == DEFLATE_T_CL) return len | (s << 16);
    if (table == DEFLATE_T_DIST) {
        if (s > 29) return len | (DEFLATE_K_BAD << 8);
        return len | ((u32)DEFLATE_DIST_EXTRA[s] << 4) | (DEFLATE_K_BASE << 8) | ((u32)DEFLATE_DIST_BASE[s] << 16);
    }
    if (s < 256) return len | (DEFLATE_K_LIT << 8) | (s << 16);
    if (s == 256) return len | (DEFLATE_K_END << 8);
    if (s > 285) return len | (DEFLATE_K_BAD << 8);
    s -= 257;
    return len | ((u32)DEFLATE_LEN_EXTRA[s] << 4) | (DEFLATE_K_BASE << 8) | ((u32)DEFLATE_LEN_BASE[s] << 16);
}

// Builds the canonical code of `n` symbols from lens[0..n): `count[len]`, the symbols sorted by
// (length, symbol) in `sym`, and the `bits`-bit lookup table `tab` (entries of `table`'s kind;
// 0 where the code is longer than `bits` or there is none). False when the code is
// over-subscribed, or incomplete with more than one used symbol (or at all, when `complete` is
// required). All lanes: __match_any_sync groups the 32 symbols of a step by length, so counting
// and placing take one step per 32 symbols; the table is filled entry by entry, lanes striding.
__device__ bool deflate_build(const u8* lens, u32 n, u16* count, u16* next, u16* sym, u32* tab, u32 bits,
                              u32 table, bool complete, u32* resume = nullptr) {
    u32 lane = codag_lane();
    __syncwarp();
    if (lane < 16) count[lane] = 0;
    __syncwarp();
    for (u32 b = 0; b < n; b += 32) {
        u32 L = b + lane < n ? lens[b + lane] : 0;
        u32 m = __match_any_sync(0xffffffffu, L);
        if (L && lane == (u32)__ffs(m) - 1) count[L] += (u16)__popc(m);
        __syncwarp();
    }
    int left = 1;
    u32 used = 0;
    for (u32 l = 1; l < 16; l++) {
        left = (left << 1) - (int)count[l];
        used += count[l];
    }
    if (left < 0 || (left != 0 && (used > 1 || complete))) return false;
    if (resume && lane == 0) {
        // Where the canonical walk stands at length bits + 1 (deflate_walk_from).
        u32 first = 0, index = 0;
        for (u32 l = 1; l <= bits; l++) {
            first = (first + count[l]) << 1;
            index += count[l];
        }
        *resume = first | index << 16;
    }
    // next[len]: where the symbols of that length start in sym (then the running place).
    if (lane < 16) {
        u32 off = 0;
        for (u32 l = 1; l < lane; l++) off += count[l];
        next[lane] = (u16)off;
    }
    __syncwarp();
    for (u32 b = 0; b < n; b += 32) {
        u32 L = b + lane < n ? lens[b + lane] : 0;
        u32 m = __match_any_sync(0xffffffffu, L);
        if (L) sym[next[L] + __popc(m & ((1u << lane) - 1))] = (u16)(b + lane);
        __syncwarp();
        if (L && lane == (u32)__ffs(m) - 1) next[L] += (u16)__popc(m);
        __syncwarp();
    }
    // Codes of length L <= bits cover, in canonical (most significant bit first) order, the
    // index range that starts where the shorter ones end; each entry's index is its prefix
    // bit-reversed (Deflate sends codes most significant bit first into an LSB-first stream).
    u32 start = 0, j = 0;
    for (u32 L = 1; L <= bits; L++) {
        u32 c = count[L], sh = bits - L, span = c << sh;
        for (u32 k = lane; k < span; k += 32) {
            u32 m = start + k;
            tab[__brev(m) >> (32 - bits)] = deflate_entry(table, sym[j + (k >> sh)], L);
        }
        start += span;
        j += c;
    }
    for (u32 m = start + lane; m < (1u << bits); m += 32) tab[__brev(m) >> (32 - bits)] = 0;
    __syncwarp();
    return true;
}

// Literal entries whose code leaves room for a second literal's code in the index take that
// literal too. Only the first-literal fields of an entry are read, which this never changes;
// still, each step of 32 entries reads before any lane writes, so no access races.
template <u32 LB = DEFLATE_LIT_BITS>
__device__ void deflate_pair_literals(u32* tab) {
    for (u32 b = 0; b < (1u << LB); b += 32) {
        u32 i = b + codag_lane(), e = tab[i], L = e & 15;
        if (L && ((e >> 8) & 3) == DEFLATE_K_LIT && L < LB) {
            u32 e2 = tab[i >> L], L2 = e2 & 15;
            if (L2 && ((e2 >> 8) & 3) == DEFLATE_K_LIT && L + L2 <= LB)
                e |= DEFLATE_TWO | ((L + L2) << 10) | ((e2 >> 16) & 0xff) << 24;
        }
        __syncwarp();
        tab[i] = e;
        __syncwarp();
    }
}

// The canonical walk for a code longer than the table's index (or no code): the symbol and
// its code length from `bits`, false for a bit pattern that is no code.
__device__ __noinline__ bool deflate_walk(u64 bits, const u16* count, const u16* sym, u32& s, u32& len) {
    int code = 0, first = 0, index = 0;
    for (len = 1; len < 16; len++) {
        code |= (int)(bits & 1);
        bits >>= 1;
        int c = count[len];
        if (code - first < c) {
            s = sym[index + code - first];
            return true;
        }
        index += c;
        first = (first + c) << 1;
        code <<= 1;
    }
    return false;
}

// deflate_walk for a code longer than the table's `from - 1` bits (the table entry of its first
// from - 1 bits is 0, so no shorter code is a prefix of `bits`): the walk resumed at length
// `from` from `resume` (deflate_build). Returns the code's length << 16 | its symbol, 0 for a bit
// pattern that is no code; a value rather than references, so nothing goes through the stack.
__device__ __noinline__ u32 deflate_walk_from(u64 bits, const u16* count, const u16* sym, u32 resume, u32 from) {
    int code = (int)(__brev((u32)bits) >> (32 - from));
    bits >>= from;
    int first = (int)(resume & 0xffff), index = (int)(resume >> 16);
    for (u32 len = from; len < 16; len++) {
        int c = count[len];
        if (code - first < c) return len << 16 | sym[index + code - first];
        index += c;
        first = (first + c) << 1;
        code = code << 1 | (int)(bits & 1);
        bits >>= 1;
    }
    return 0;
}

// The table entry (deflate_entry of `type`) of a code longer than the table: its first table
// bits had an entry with no length. The lean tables resume the canonical walk at length
// `table_bits + 1`, the others walk from length 1. 0 for a bit pattern that is no code.
template <bool LEAN>
__device__ __forceinline__ u32 deflate_long_entry(u64 win, const u16* count, const u16* sym, u32 resume,
                                                  u32 table_bits, u32 type) {
    if constexpr (LEAN) {
        u32 w = deflate_walk_from(win, count, sym, resume, table_bits + 1);
        return w ? deflate_entry(type, w & 0xffff, w >> 16) : 0;
    } else {
        u32 s, len;
        return deflate_walk(win, count, sym, s, len) ? deflate_entry(type, s, len) : 0;
    }
}

// The input bit window: `win` holds the bits from in.bit on, `avail` of them valid.
struct DeflateBits {
    u64 win;
    u32 avail;
};

__device__ __forceinline__ void deflate_refill(CodagInput& in, DeflateBits& b) {
    b.win = codag_peek64(in);
    b.avail = 64;
}

// At least `n` (<= 64) bits in the window.
__device__ __forceinline__ void deflate_need(CodagInput& in, DeflateBits& b, u32 n) {
    if (b.avail < n) deflate_refill(in, b);
}

__device__ __forceinline__ void deflate_drop(CodagInput& in, DeflateBits& b, u32 n) {
    b.win >>= n;
    b.avail -= n;
    in.bit += n;
}

// `n` (<= 32) bits, least significant first.
__device__ __forceinline__ u32 deflate_take(CodagInput& in, DeflateBits& b, u32 n) {
    deflate_need(in, b, n);
    u32 v = (u32)(b.win & ((1ull << n) - 1));
    deflate_drop(in, b, n);
    return v;
}

__device__ __forceinline__ bool deflate_past_end(const CodagInput& in) { return in.bit > (u64)in.len * 8; }

// The fixed code (RFC 1951 §3.2.6).
template <typename TT>
__device__ void deflate_fixed(TT& t) {
    u8* lens = t.lens();
    __syncwarp();
    for (u32 s = codag_lane(); s < 288 + 32; s += 32)
        lens[s] = s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : s < 288 ? 8 : 5;
    __syncwarp();
    deflate_build(lens, 288, t.lcount, t.next, t.lsym, t.lit, TT::LIT_BITS, DEFLATE_T_LIT, false,
                  TT::IS_LEAN ? &t.lresume : nullptr);
    deflate_pair_literals<TT::LIT_BITS>(t.lit);
    deflate_build(lens + 288, 32, t.dcount, t.next, t.dsym, t.dist, TT::DIST_BITS, DEFLATE_T_DIST, false,
                  TT::IS_LEAN ? &t.dresume : nullptr);
}

// A dynamic block's header (§3.2.7).
template <typename TT>
__device__ u32 deflate_dynamic(CodagInput& in, DeflateBits& b, TT& t) {
    u8* lens = t.lens();
    u32 h = deflate_take(in, b, 14);
    u32 hlit = (h & 31) + 257, hdist = ((h >> 5) & 31) + 1, hclen = (h >> 10) + 4;
    if (deflate_past_end(in)) return CODAG_ST_TRUNCATED;
    if (hlit > 286 || hdist > 30) return CODAG_ST_BAD_TABLE;
    // The code-length code lengths, 3 bits each in DEFLATE_CL_ORDER: lane i takes its own.
    deflate_need(in, b, 57);
    u32 lane = codag_lane();
    __syncwarp();
    if (lane < 19) {
        u32 v = lane < hclen ? (u32)(b.win >> (3 * lane)) & 7 : 0;
        lens[DEFLATE_CL_ORDER[lane]] = (u8)v;
    }
    deflate_drop(in, b, 3 * hclen);
    if (deflate_past_end(in)) return CODAG_ST_TRUNCATED;
    u32* cl = t.dist;
    if (!deflate_build(lens, 19, t.lcount, t.next, t.lsym, cl, DEFLATE_CL_BITS, DEFLATE_T_CL, true))
        return CODAG_ST_BAD_TABLE;
    u32 n = hlit + hdist, i = 0;
    u8 prev = 0;
    while (i < n) {
        deflate_need(in, b, 14);
        u32 e = cl[b.win & ((1u << DEFLATE_CL_BITS) - 1)];
        u32 s = e >> 16;
        deflate_drop(in, b, e & 15);
        if (s < 16) {
            if (lane == 0) lens[i] = (u8)s;
            prev = (u8)s;
            i++;
            continue;
        }
        if (s == 16 && i == 0) return CODAG_ST_BAD_TABLE;
        u32 extra = s == 16 ? 2 : s == 17 ? 3 : 7;
        u32 rep = (u32)(b.win & ((1u << extra) - 1)) + (s == 18 ? 11 : 3);
        deflate_drop(in, b, extra);
        if (i + rep > n) return CODAG_ST_BAD_TABLE;
        u8 v = s == 16 ? prev : 0;
        for (u32 k = lane; k < rep; k += 32) lens[i + k] = v;
        prev = v;
        i += rep;
    }
    if (deflate_past_end(in)) return CODAG_ST_TRUNCATED;
    __syncwarp();
    // Distance lengths follow the literal/length ones in lens[]: move them to lens[288..].
    u8 dl = lane < hdist ? lens[hlit + lane] : 0;
    __syncwarp();
    lens[288 + lane] = dl;
    if (!deflate_build(lens, hlit, t.lcount, t.next, t.lsym, t.lit, TT::LIT_BITS, DEFLATE_T_LIT, false,
                       TT::IS_LEAN ? &t.lresume : nullptr))
        return CODAG_ST_BAD_TABLE;
    deflate_pair_literals<TT::LIT_BITS>(t.lit);
    if (!deflate_build(lens + 288, hdist, t.dcount, t.next, t.dsym, t.dist, TT::DIST_BITS, DEFLATE_T_DIST, false,
                       TT::IS_LEAN ? &t.dresume : nullptr))
        return CODAG_ST_BAD_TABLE;
    return CODAG_ST_OK;
}

// Pending literals: lane k holds the k-th byte not yet written; out.pos counts them already.
struct DeflateLits {
    u32 mine;
    u32 n;
};

template <typename T>
__device__ __forceinline__ void deflate_flush(CodagOutput<T>& out, DeflateLits& l) {
    if (codag_lane() < l.n) out.base[out.pos - l.n + codag_lane()] = (T)l.mine;
    l.n = 0;
}

// Span mode (T = u16, one span of a single large stream; docs/gpu/codag.md, "A single large gzip
// file on the GPU"): the span starts at a block candidate with an unknown 32 KiB window before
// it, and stops at the first block boundary that equals a later candidate.
struct DeflateSpan {
    const u64* starts;  // every span's block candidate (absolute bits, ascending)
    u32 n_starts;
    u32 next;           // the first candidate not yet passed (then: where the span stopped)
    u64 bit0;           // the absolute bit of the chunk's bit 0
    bool window;        // back-references before the span are markers (not for the span at bit 0)
};

// Markers: a symbol DEFLATE_MARKER | i is byte i of the 32 KiB window before the span (byte 0 the
// farthest back), tessera_codecs::deflate::parallel's convention.
#define DEFLATE_WINDOW 32768u
#define DEFLATE_MARKER 0x8000u

// A copy whose source starts before the span (dist > out.pos): element i comes from
// pos - dist + (i % dist when the copy overlaps itself), a marker where that is negative.
__device__ __forceinline__ bool deflate_copy_marked(CodagOutput<u16>& out, u32 dist, u32 len) {
    if (dist == 0 || dist > out.pos + DEFLATE_WINDOW || !out.room(len)) return false;
    __syncwarp();
    for (u32 i = codag_lane(); i < len; i += 32) {
        int src = (int)out.pos - (int)dist + (int)(dist >= len ? i : i % dist);
        out.base[out.pos + i] = src < 0 ? (u16)(DEFLATE_MARKER | (u32)((int)DEFLATE_WINDOW + src)) : out.base[src];
    }
    __syncwarp();
    out.pos += len;
    return true;
}

// One Huffman block's symbols, up to its end-of-block code.
template <typename T, bool SPAN>
__device__ __forceinline__ u32 deflate_block(CodagInput& in, DeflateBits& b, CodagOutput<T>& out,
                                             const DeflateTables& t, const DeflateSpan* sp) {
    const u32 lane = codag_lane();
    DeflateLits lit = {0, 0};
    for (;;) {
        // The longest sequence: a length code and its extra bits, a distance code and its.
        if (b.avail < 48) {
            if (deflate_past_end(in)) return CODAG_ST_TRUNCATED;
            deflate_refill(in, b);
        }
        u32 e = t.lit[b.win & ((1u << DEFLATE_LIT_BITS) - 1)];
        if (!(e & 15)) {
            u32 s, len;
            if (!deflate_walk(b.win, t.lcount, t.lsym, s, len)) return CODAG_ST_BAD_CODE;
            e = deflate_entry(DEFLATE_T_LIT, s, len);
        }
        u32 kind = (e >> 8) & 3;
        if (kind == DEFLATE_K_LIT) {
            u32 two = (e >> 14) & 1;
            if (!out.room(1 + two)) return CODAG_ST_OUTPUT_OVERFLOW;
            if (lane == lit.n) lit.mine = (e >> 16) & 0xff;
            if (two && lane == lit.n + 1) lit.mine = e >> 24;
            lit.n += 1 + two;
            out.pos += 1 + two;
            deflate_drop(in, b, two ? (e >> 10) & 15 : e & 15);
            if (lit.n >= 31) deflate_flush(out, lit);
            continue;
        }
        if (kind == DEFLATE_K_END) {
            deflate_drop(in, b, e & 15);
            deflate_flush(out, lit);
            return CODAG_ST_OK;
        }
        if (kind == DEFLATE_K_BAD) return CODAG_ST_BAD_CODE;
        u32 L = e & 15, x = (e >> 4) & 15;
        u32 len = (e >> 16) + ((u32)(b.win >> L) & ((1u << x) - 1));
        deflate_drop(in, b, L + x);
        u32 d = t.dist[b.win & ((1u << DEFLATE_DIST_BITS) - 1)];
        if (!(d & 15)) {
            u32 s, dlen;
            if (!deflate_walk(b.win, t.dcount, t.dsym, s, dlen)) return CODAG_ST_BAD_CODE;
            d = deflate_entry(DEFLATE_T_DIST, s, dlen);
        }
        if (((d >> 8) & 3) == DEFLATE_K_BAD) return CODAG_ST_BAD_CODE;
        L = d & 15;
        x = (d >> 4) & 15;
        u32 dist = (d >> 16) + ((u32)(b.win >> L) & ((1u << x) - 1));
        deflate_drop(in, b, L + x);
        if (deflate_past_end(in)) return CODAG_ST_TRUNCATED;
        if (dist > out.pos) {
            if (!SPAN || !sp->window) return CODAG_ST_BAD_DISTANCE;
            deflate_flush(out, lit);
            if constexpr (SPAN) {
                if (!deflate_copy_marked(out, dist, len)) return CODAG_ST_OUTPUT_OVERFLOW;
            }
            continue;
        }
        deflate_flush(out, lit);
        if (!out.memcpy(dist, len)) return CODAG_ST_OUTPUT_OVERFLOW;
    }
}

// The batch loop (kernel `codag_deflate_batch`, the default before deflate_block_spec; and
// `codag_deflate_w40` on the lean tables): what deflate_block decodes, with less bookkeeping per
// symbol and short copies' stores deferred (docs/gpu/codag.md, "Where the Deflate time goes"):
// - the window's end bit `top` stays fixed between refills, so a symbol only shifts the window
//   and lowers `avail`; in.bit is brought up to date at refills and exits. The position is
//   checked against the input length at every refill (at most 48 bits are consumed between two:
//   zeros past the end decode as some symbols, never past the output's bounds) and at the
//   block's end, so a stream that read past its end is still CODAG_ST_TRUNCATED;
// - pending literals count in out.pos at once and are checked against the capacity when they
//   are stored (at most 32 past it, never written);
// - a copy of at most 32 bytes loads its source, one byte a lane (lane % dist when it overlaps
//   itself: those bytes are already written), and keeps it in a register; the stores wait for
//   the next flush point (the next copy, 31 pending literals, the block's end), so the load's
//   L2 round trip overlaps the decoding of the symbols in between instead of stalling the warp.
//   A copy's source may lie in the deferred bytes or the pending literals, so both are stored
//   and the warp synchronized before any copy loads.
// A match of `len` bytes from `dist` back, in the batch loop (deflate_block_fast; the speculative
// loop has its own, deflate_spec_copy): checked against the output, then the deferred copy
// (lane k < dlen holds byte at + k in dval) and the pending literals (lane k < pend holds the
// k-th in mine) are stored, and the match becomes the deferred copy (up to 32 bytes, lane k
// loading byte k, repeating the last dist bytes where they overlap) or is copied at once.
// Returns the status (CODAG_ST_OK, or the error that ends the block).
template <typename T>
__device__ __forceinline__ u32 deflate_take_match(CodagOutput<T>& out, u32 lane, u32 dist, u32 len, u32 at, T& dval,
                                                  u32& dlen, u32& dpos, u32& pend, u32 mine) {
    if (out.pos > out.cap) return CODAG_ST_OUTPUT_OVERFLOW;
    if (dist > out.pos) return CODAG_ST_BAD_DISTANCE;
    if (!out.room(len)) return CODAG_ST_OUTPUT_OVERFLOW;
    if (lane < dlen) out.base[at + lane] = dval;
    if (lane < pend) out.base[out.pos - pend + lane] = (T)mine;
    pend = 0;
    __syncwarp();  // the stores above are visible to every lane's load below
    if (len <= 32) {
        const T* src = out.base + (out.pos - dist);
        u32 k = lane;
        if (dist < len) k = lane % dist;
        if (lane < len) dval = src[k];
        dlen = len;
        dpos = out.pos;
        out.pos += len;
    } else {
        dlen = 0;
        out.memcpy(dist, len);  // checked above: cannot fail
    }
    return CODAG_ST_OK;
}

template <typename T, typename TT>
__device__ __forceinline__ u32 deflate_block_fast(CodagInput& in, DeflateBits& b, CodagOutput<T>& out,
                                                  const TT& t) {
    const u32 lane = codag_lane();
    const u64 lim_held = TT::IS_LEAN ? 0 : (u64)in.len * 8;
    u64 win = b.win;
    u32 avail = b.avail;
    u64 top = in.bit + avail;  // the absolute bit after the window's last valid bit
    u32 pend = 0, mine = 0;    // pending literals: lane k holds the k-th, at out.pos - pend + k
    u32 dlen = 0, dpos = 0;    // the deferred copy: lane k < dlen holds byte dpos + k in dval
    T dval = 0;
    // LEAN (capped registers): the input's bit length and the deferred copy's position are
    // recomputed where used instead of held; the deferred copy's bytes end where the pending
    // literals begin, so dpos == out.pos - pend - dlen.
    auto lim = [&]() -> u64 {
        if constexpr (TT::IS_LEAN) return (u64)in.len * 8;
        else return lim_held;
    };
    auto dstart = [&]() -> u32 {
        if constexpr (TT::IS_LEAN) return out.pos - pend - dlen;
        else return dpos;
    };
    u32 st = CODAG_ST_OK;
    for (;;) {
        if (avail < 48) {
            u64 at = top - avail;
            in.bit = at;
            if (at > lim()) return CODAG_ST_TRUNCATED;
            win = codag_peek64(in);
            avail = 64;
            top = at + 64;
        }
        u32 e = t.lit[(u32)win & ((1u << TT::LIT_BITS) - 1)];
        if (!(e & 15)) {
            e = deflate_long_entry<TT::IS_LEAN>(win, t.lcount, t.lsym, t.lresume, TT::LIT_BITS, DEFLATE_T_LIT);
            if (!e) { st = CODAG_ST_BAD_CODE; break; }
        }
        if (!(e & 0x300u)) {  // one or two literals
            u32 two = (e >> 14) & 1, k = lane - pend;
            if (k <= two) mine = (e >> (16 + 8 * k)) & 0xff;
            pend += 1 + two;
            out.pos += 1 + two;
            u32 n = two ? (e >> 10) & 15 : e & 15;
            win >>= n;
            avail -= n;
            if (pend >= 31) {
                if (out.pos > out.cap) { st = CODAG_ST_OUTPUT_OVERFLOW; break; }
                if (lane < dlen) out.base[dstart() + lane] = dval;
                if (lane < pend) out.base[out.pos - pend + lane] = (T)mine;
                pend = 0;
                dlen = 0;
            }
            continue;
        }
        if (e & 0x200u) {
            if ((e & 0x300u) == 0x300u) { st = CODAG_ST_BAD_CODE; break; }
            // End of block.
            u32 n = e & 15;
            win >>= n;
            avail -= n;
            if (top - avail > lim()) { st = CODAG_ST_TRUNCATED; break; }
            if (out.pos > out.cap) { st = CODAG_ST_OUTPUT_OVERFLOW; break; }
            if (lane < dlen) out.base[dstart() + lane] = dval;
            if (lane < pend) out.base[out.pos - pend + lane] = (T)mine;
            break;
        }
        u32 L = e & 15, x = (e >> 4) & 15;
        u32 len = (e >> 16) + ((u32)(win >> L) & ((1u << x) - 1));
        win >>= L + x;
        avail -= L + x;
        u32 d = t.dist[(u32)win & ((1u << TT::DIST_BITS) - 1)];
        if (!(d & 15)) {
            d = deflate_long_entry<TT::IS_LEAN>(win, t.dcount, t.dsym, t.dresume, TT::DIST_BITS, DEFLATE_T_DIST);
            if (!d) { st = CODAG_ST_BAD_CODE; break; }
        }
        if ((d & 0x300u) == 0x300u) { st = CODAG_ST_BAD_CODE; break; }
        L = d & 15;
        x = (d >> 4) & 15;
        u32 dist = (d >> 16) + ((u32)(win >> L) & ((1u << x) - 1));
        win >>= L + x;
        avail -= L + x;
        st = deflate_take_match(out, lane, dist, len, dstart(), dval, dlen, dpos, pend, mine);
        if (st != CODAG_ST_OK) break;
    }
    in.bit = top - avail;
    b.win = win;
    b.avail = avail;
    return st;
}

// The speculative block loop (the batch kernel `codag_deflate`; docs/gpu/codag.md, "Speculative
// lookups by the idle lanes"; decision 0039): the lanes, which in deflate_block_fast all decode
// the same symbol, look up the symbols that would start at the next 32 bit offsets at once, and
// the warp then follows the chain of real symbol starts by shuffles.
// - A *round* starts at the absolute bit `base` of a symbol: lane k reads the 32 bits from
//   base + k out of the ring and resolves what a literal/length code and what a distance code
//   starting there would be, extra bits included, into one packed *word* each (`A`, `D`). The
//   table loads of all 32 offsets are issued together, instead of one dependent load a symbol.
// - The warp keeps `p`, the offset of the next symbol from `base`: a symbol is one
//   `__shfl_sync` from lane p, whose word also holds the offset after the symbol (its code and
//   extra bits), so a literal costs no window shift, mask or table load; a literal's word is
//   followed in the same step by the word at the offset it ends at when that is a literal too.
//   A length is followed by the distance word of the lane at the offset it ends at. At p >= 32
//   the next round starts at base + p.
// - The tables hold *spec entries* (deflate_spec_tables, after each build) from which a lane
//   makes its word with one extract of the extra bits and one add.
// - A code longer than the table, a bit pattern that is no code and the invalid symbols
//   (286-287, distances 30-31) are *unresolved* words; when the chain reaches one it is decoded
//   by the canonical walk from the ring (deflate_spec_resolve), and a bit pattern that is no code
//   or an invalid symbol is CODAG_ST_BAD_CODE there. An unresolved distance word holds distance
//   0, so a match's bound check (one branch) also catches it.
// - The output's pending bytes, a short copy's and the literals after it, are one register a
//   lane and one store (deflate_spec_copy); a match's checks are one predicate
//   (deflate_match_bad). Both cut the instructions of a match (docs/gpu/codag.md, "Fewer
//   instructions a match").
// - In fused blocks a copy's loaded bytes wait one match more in a second pending set before
//   their store (deflate_spec_copy2; docs/gpu/codag.md, "Two pending sets").
// Bounds are the batch loop's: the position is checked against the input length at every round
// (at most 31 bits and one symbol of at most 28 bits, 59, are consumed between two; with fused
// matches a length and its distance, 31 + 20 + 28 = 79) and at the block's end; pending bytes
// count in out.pos at once and are checked at their store; copies are checked before anything is
// written. Ring reads past the chunk's end are zeros.
//
// Literal/length spec entry and word: bits 0-5 the bits the symbol takes (code and extra bits;
// in a word, plus the lane's offset: the offset after the symbol, at most 31 + 20), bits 6-7
// the kind, bit 8 two literals, bits 9-12 the code's length and 13-15 the extra bits (entry
// only), bits 16-31 the value (a literal byte, two literal bytes, or the length: the base in an
// entry, the base plus the extra bits in a word).
#define DEFLATE_S_LEN (1u << 6)
#define DEFLATE_S_END (2u << 6)
#define DEFLATE_S_UNRESOLVED (3u << 6)
// Distance spec entry and word: bits 0-6 the bits the symbol takes (in a word, plus the offset
// it starts at: at most 31 + 28, or 31 + 20 + 28 = 79 for a fused match), bit 7 unresolved, bits
// 8-11 the code's length and 12-15 the extra bits (entry only), bits 16-31 the distance (at most
// 32768).
#define DEFLATE_S_DUNRESOLVED (1u << 7)
// The offset after a distance word's symbol (seven bits: a fused match ends up to 79 bits past
// its round's start).
#define DEFLATE_S_DOFFSET 127u

// The spec entry of literal/length table entry `e` (deflate_entry, deflate_pair_literals).
__device__ __forceinline__ u32 deflate_spec_entry_lit(u32 e) {
    u32 L = e & 15, x = (e >> 4) & 15, kind = (e >> 8) & 3, two = (e >> 14) & 1;
    if (!L || kind == DEFLATE_K_BAD) return DEFLATE_S_UNRESOLVED;
    u32 n = two ? (e >> 10) & 15 : L;  // literal entries have no extra bits (x == 0)
    return (e & 0xffff0000u) | x << 13 | L << 9 | two << 8 | kind << 6 | (n + x);
}

// The spec entry of distance table entry `d`.
__device__ __forceinline__ u32 deflate_spec_entry_dist(u32 d) {
    u32 L = d & 15, x = (d >> 4) & 15;
    if (!L || ((d >> 8) & 3) == DEFLATE_K_BAD) return DEFLATE_S_DUNRESOLVED;
    return (d & 0xffff0000u) | x << 12 | L << 8 | (L + x);
}

// The word of spec entry `s` at offset `at`, `bits` the input bits from there: the extra bits
// (after the code's LSHIFT-placed length, XBITS wide at XSHIFT) added to the value, the offset
// to the bits taken. An unresolved entry has no length and no extra bits and stays unresolved.
template <u32 LSHIFT, u32 XSHIFT, u32 XMASK>
__device__ __forceinline__ u32 deflate_spec_word(u32 s, u32 bits, u32 at) {
    u32 L = (s >> LSHIFT) & 15, x = (s >> XSHIFT) & XMASK;
    return s + (((bits >> L) & ((1u << x) - 1)) << 16) + at;
}
__device__ __forceinline__ u32 deflate_spec_lit(u32 s, u32 bits, u32 at) {
    return deflate_spec_word<9, 13, 7>(s, bits, at);
}
__device__ __forceinline__ u32 deflate_spec_dist(u32 s, u32 bits, u32 at) {
    return deflate_spec_word<8, 12, 15>(s, bits, at);
}

// Turns freshly built tables into spec entries, all lanes striding over the entries. Returns
// (COUNT) how many literal/length entries hold a length: a code of L bits fills 2^(LIT_BITS - L)
// entries, so this is the share of the symbols the block's code expects to be lengths, in units
// of 2^-LIT_BITS (long codes, rare by construction, are not counted).
template <typename TT, bool COUNT = false>
__device__ u32 deflate_spec_tables(TT& t) {
    __syncwarp();
    u32 lengths = 0;
    for (u32 i = codag_lane(); i < (1u << TT::LIT_BITS); i += 32) {
        u32 e = t.lit[i];
        if constexpr (COUNT) lengths += (e & 15) && ((e >> 8) & 3) == DEFLATE_K_BASE;
        t.lit[i] = deflate_spec_entry_lit(e);
    }
    for (u32 i = codag_lane(); i < (1u << TT::DIST_BITS); i += 32) t.dist[i] = deflate_spec_entry_dist(t.dist[i]);
    __syncwarp();
    if constexpr (COUNT) return __reduce_add_sync(0xffffffffu, lengths);
    return 0;
}

// 32 input bits from absolute bit `bit`, least significant first, out of a warp's input ring
// (CodagInput::ring; its words loaded by codag_load before). The ring holds whole words at the
// same place modulo its size, so the bit's low 32 bits suffice. MIRROR: the second word read past
// the ring's end into its mirror (CODAG_RING_MIRROR), with no wrap.
template <bool MIRROR = false>
__device__ __forceinline__ u32 deflate_ring32(const u8* ring, u32 bit) {
    const u32* r = reinterpret_cast<const u32*>(ring);
    const u32 m = CODAG_RING_BYTES / 4 - 1;
    u32 wi = (bit >> 5) & m;
    return __funnelshift_r(r[wi], r[MIRROR ? wi + 1 : (wi + 1) & m], bit & 31);
}

// 64 input bits from absolute bit `bit` as two halves (lo first), out of the ring like
// deflate_ring32: three ring words from the bit's word on, past the ring's end into its mirror
// (CODAG_RING_MIRROR) with no wrap, and two funnel shifts.
__device__ __forceinline__ void deflate_ring64(const u8* ring, u32 bit, u32& lo, u32& hi) {
    const u32* r = reinterpret_cast<const u32*>(ring) + ((bit >> 5) & (CODAG_RING_BYTES / 4 - 1));
    lo = __funnelshift_r(r[0], r[1], bit & 31);
    hi = __funnelshift_r(r[1], r[2], bit & 31);
}

// The word of the symbol at absolute bit `bit` (offset `at`) for an unresolved word the chain
// reached, by the canonical walk from length 1: a literal/length symbol, or (DIST) a distance.
// Still unresolved: no code, or an invalid symbol. Not inlined: the chain rarely takes it, and
// inlined its ring reads were hoisted into every symbol's path. Takes the ring pointer, not the
// CodagInput, so that the caller's input state stays in registers.
template <typename TT, bool DIST>
__device__ __noinline__ u32 deflate_spec_resolve(const u8* ring, u32 bit, const TT& t, u32 at) {
    u32 bits = deflate_ring32(ring, bit);
    if constexpr (DIST) {
        u32 d = deflate_long_entry<false>(bits, t.dcount, t.dsym, 0, 0, DEFLATE_T_DIST);
        return deflate_spec_dist(deflate_spec_entry_dist(d), bits, at);
    } else {
        u32 e = deflate_long_entry<false>(bits, t.lcount, t.lsym, 0, 0, DEFLATE_T_LIT);
        return deflate_spec_lit(deflate_spec_entry_lit(e), bits, at);
    }
}

// Where the `npend` pending bytes go: their offset passes through an empty asm at each use, so
// the compiler computes the address where a store needs it instead of hoisting it to the top of
// the speculative loop, where every step (most of which store nothing) paid for it.
template <typename T>
__device__ __forceinline__ T* deflate_pending_at(const CodagOutput<T>& out, u32 npend) {
    u32 at = out.pos - npend;
    asm volatile("mov.b32 %0, %0;" : "+r"(at));
    return out.base + at;
}

// Whether a match of `len` bytes from `dist` back fails a bound check (deflate_take_match's
// three), as one predicate: the speculative loop branches once and works out which check failed
// only on its way out (deflate_match_status).
template <typename T>
__device__ __forceinline__ bool deflate_match_bad(const CodagOutput<T>& out, u32 dist, u32 len) {
    // dist - 1 >= pos: past the output's start, or 0 (an unresolved distance word's).
    return (out.pos > out.cap) | (len > out.cap - out.pos) | (dist - 1u >= out.pos);
}
template <typename T>
__device__ __forceinline__ u32 deflate_match_status(const CodagOutput<T>& out, u32 dist) {
    if (out.pos > out.cap) return CODAG_ST_OUTPUT_OVERFLOW;
    return dist > out.pos ? CODAG_ST_BAD_DISTANCE : CODAG_ST_OUTPUT_OVERFLOW;
}

// A short copy's (len <= 32) bytes loaded into the lanes' pending register `pv`, lane k the k-th,
// once the pending bytes its source may read are stored and visible to every lane: they then stay
// pending (`npend` of them, ending at out.pos). Every lane loads, with no branch: a lane past the
// copy's length reads its last byte again (pending lanes past npend are never stored). The bytes
// read lie in [out.pos - dist, out.pos), written or stored before: byte k of them with k < len <=
// dist, or k < dist when the copy overlaps itself (element i repeats element i % dist).
template <typename T>
__device__ __forceinline__ void deflate_spec_load(CodagOutput<T>& out, u32 lane, u32 dist, u32 len, u32& pv,
                                                  u32& npend) {
    u32 k = min(lane, len - 1);
    if (dist < len) k %= dist;
    pv = out.base[out.pos - dist + k];
    npend = len;
    out.pos += len;
}

// A checked match in the speculative loop: the output's pending bytes (lanes [0, npend) of `pv`:
// the previous short copy's bytes and the literals after it, which lie together just below
// out.pos) are stored by one predicated store before the match's own bytes are read. A short
// copy's bytes then stay pending in `pv`; a long one is copied at once. (The batch loop keeps the
// copy and the literals apart, deflate_take_match: two stores a match.)
template <typename T>
__device__ __forceinline__ void deflate_spec_copy(CodagOutput<T>& out, u32 lane, u32 dist, u32 len, u32& pv,
                                                  u32& npend) {
    if (lane < npend) deflate_pending_at(out, npend)[lane] = (T)pv;
    __syncwarp();  // the stores above are visible to every lane's load below
    if (len <= 32) {
        deflate_spec_load(out, lane, dist, len, pv, npend);
    } else {
        npend = 0;
        out.memcpy(dist, len);  // checked by the caller: cannot fail
    }
}

// A checked match with two pending sets (DEFLATE_V_PEND2): the older set `ov` (`npo` bytes,
// the match before last's copy and the literals after it, just below the newer set) is stored;
// the newer set `pv` (`npend` bytes) stays pending, since the caller stored both when the
// match's source reaches into it (dist < npend + len). A copy's loaded bytes are so stored one
// match later than in deflate_spec_copy, and their load has a whole match more to arrive. The
// new copy's bytes go into `ov` and the newer set becomes the older; the caller then swaps the
// two registers' roles (no register is copied: a move would wait for the load).
template <typename T>
__device__ __forceinline__ void deflate_spec_copy2(CodagOutput<T>& out, u32 lane, u32 dist, u32 len, u32& pv,
                                                   u32& ov, u32& npend, u32& npo) {
    if (lane < npo) deflate_pending_at(out, npend + npo)[lane] = (T)ov;
    npo = npend;
    __syncwarp();  // the stores above are visible to every lane's load below
    if (len <= 32) {
        // A copy that overlaps itself came with both sets stored.
        deflate_spec_load(out, lane, dist, len, ov, npend);
    } else {
        if (lane < npo) deflate_pending_at(out, npo)[lane] = (T)pv;
        npo = 0;
        npend = 0;
        out.memcpy(dist, len);  // checked by the caller: cannot fail
    }
}

// Options of deflate_block_spec (docs/gpu/codag.md, "Fused matches" and "Two pending sets";
// decisions 0047, 0048). FUSE: every
// lane's D is the distance word after a length at its offset, shuffled beside every step's word;
// a round reads its 64 bits through the ring's mirror, and a step tells a length from the other
// kinds by one test, before the literals. MIRROR: a plain round reads its ring words through the
// mirror too. LEAN: rounds inside a block load ring lines without codag_load's rewind test. AUTO
// (deflate_stream): a block whose code expects lengths for at least half its symbols takes the
// other options, any other block the plain loop (with LEAN and MIRROR). PEND2: two pending sets
// (deflate_spec_copy2): a copy's loaded bytes are stored one match later.
#define DEFLATE_V_FUSE 1u
#define DEFLATE_V_MIRROR 2u
#define DEFLATE_V_LEAN 4u
#define DEFLATE_V_AUTO 8u
#define DEFLATE_V_PEND2 16u

template <typename T, typename TT, u32 V = 0>
__device__ __forceinline__ u32 deflate_block_spec(CodagInput& in, DeflateBits& b, CodagOutput<T>& out,
                                                  const TT& t) {
    // The output pointer held in a register pair, opaque to the compiler: left to itself it
    // rebuilt the pointer from the kernel parameter and the chunk's offset at every store and
    // load (six instructions an address instead of three; measured 1.3-3% faster held, the
    // stores and loads then generic rather than global, docs/gpu/codag.md).
    asm("mov.b64 %0, %0;" : "+l"(out.base));
    // A step that finds more than this many bytes pending stores them first, so that its
    // literals (two words of up to two each) still have a lane each.
    constexpr u32 ROOM_FOR_STEP = 28;
    const u32 lane = codag_lane();
    const u64 lim = (u64)in.len * 8;
    u64 base = in.bit;  // the round's first bit
    u32 p = 0;          // the next symbol's offset from base
    // This lane's words for the symbols at base + lane: A the literal/length word; D the distance
    // word there, or (FUSE) the distance word after the length there.
    u32 A = 0, D = 0;
    // The pending bytes (lane k holds the k-th of `pend`, which end at out.pos and count in it
    // already): the last short copy's bytes and the literals after it, stored together by one
    // predicated store when a match needs the output, a step needs the lanes, or the block ends.
    // This lane's byte of them is `mine` in `steps` below; PEND2 keeps an older set as well.
    u32 pend = 0;
    constexpr bool FUSE = (V & DEFLATE_V_FUSE) != 0;
    constexpr bool LEAN = (V & DEFLATE_V_LEAN) != 0;
    // The bytes a round needs loaded past its first word's.
    constexpr u32 AHEAD = FUSE || LEAN ? 16 : 12;
    // LEAN: the block's first round is loaded (with codag_load's rewind test) here; inside the
    // block a round moves at most 79 bits past the last one, which loaded up to four words past
    // its own, so the ring never falls behind and only the lines ahead load.
    if constexpr (LEAN) codag_load(in, ((u32)(base >> 5) << 2) + AHEAD);
    // A round at base + p: false when it starts past the input.
    auto round = [&]() -> bool {
        base += p;
        p = 0;
        in.bit = base;
        if (base > lim) return false;
        u32 end = ((u32)(base >> 5) << 2) + AHEAD;
        if constexpr (LEAN) {
            while (in.fetched < end) codag_load_line(in);
        } else {
            codag_load(in, end);
        }
        // The ring holds three words from base's word: every lane's 32 bits, and the 32 bits of
        // any offset below 32 for the unresolved words; FUSE: a fourth, for the 64 bits from
        // every lane's offset (a length and its distance take at most 20 + 28).
        if constexpr (FUSE) {
            u32 bits, hi;
            deflate_ring64(in.ring, (u32)base + lane, bits, hi);
            u32 e = t.lit[bits & ((1u << TT::LIT_BITS) - 1)];
            A = deflate_spec_lit(e, bits, lane);
            // The distance after a length at this offset: the entry's bits 0-5 are the length's
            // code and extra bits (a literal's or unresolved word's D is never read).
            u32 n = e & 63;
            u32 dbits = __funnelshift_r(bits, hi, n);
            D = deflate_spec_dist(t.dist[dbits & ((1u << TT::DIST_BITS) - 1)], dbits, lane + n);
        } else {
            u32 bits = deflate_ring32<(V & DEFLATE_V_MIRROR) != 0>(in.ring, (u32)base + lane);
            A = deflate_spec_lit(t.lit[bits & ((1u << TT::LIT_BITS) - 1)], bits, lane);
            D = deflate_spec_dist(t.dist[bits & ((1u << TT::DIST_BITS) - 1)], bits, lane);
        }
        return true;
    };
    if (!round()) return CODAG_ST_TRUNCATED;
    constexpr bool PEND2 = (V & DEFLATE_V_PEND2) != 0;
    // PEND2: the older pending set's byte count (deflate_spec_copy2); its bytes lie just below
    // the newer set's.
    u32 npo = 0;
    // Stores the pending bytes: the older set's, then the newer set's.
    auto store_pending = [&](u32 mine, u32 older) {
        if constexpr (PEND2) {
            if (lane < npo) deflate_pending_at(out, pend + npo)[lane] = (T)older;
            npo = 0;
        }
        if (lane < pend) deflate_pending_at(out, pend)[lane] = (T)mine;
        pend = 0;
    };
    // The steps of the block up to its end or an error (the status), or (PEND2) up to a match's
    // copy, after which the two pending sets trade roles (FLIP): `mine` is this lane's byte of
    // the newer set, `older` of the older set. The caller swaps the registers it passes rather
    // than copying one into the other, which would wait for the copy's load.
    constexpr u32 FLIP = ~0u;
    auto steps = [&](u32& mine, u32& older) -> u32 {
        for (;;) {
            if (p >= 32 && !round()) return CODAG_ST_TRUNCATED;
            u32 a = __shfl_sync(0xffffffffu, A, p);
            u32 dd = 0;
            if constexpr (FUSE) dd = __shfl_sync(0xffffffffu, D, p);
            // FUSE: in a block that is mostly matches, a length takes one test and skips the rest.
            if (!FUSE || (a & DEFLATE_S_UNRESOLVED) != DEFLATE_S_LEN) {
            if (!(a & DEFLATE_S_UNRESOLVED)) {  // one or two literals
                if (pend > ROOM_FOR_STEP) {
                    if (out.pos > out.cap) return CODAG_ST_OUTPUT_OVERFLOW;
                    store_pending(mine, older);
                }
                u32 na = 1 + ((a >> 8) & 1), k = lane - pend;
                if (k < na) mine = (a >> (16 + 8 * k)) & 0xff;
                p = a & 63;
                // The next word, taken in the same step when it is one or two literals starting in
                // this round: its lane is known as soon as this word is (one shuffle more, one pass
                // through the loop less; up to 4 literals a step).
                u32 c = __shfl_sync(0xffffffffu, A, p & 31);
                if (p < 32 && !(c & DEFLATE_S_UNRESOLVED)) {
                    u32 kc = k - na;
                    if (kc < 1 + ((c >> 8) & 1)) mine = (c >> (16 + 8 * kc)) & 0xff;
                    na += 1 + ((c >> 8) & 1);
                    p = c & 63;
                }
                pend += na;
                out.pos += na;
                continue;
            }
            // Bit 7 is set in the rare kinds only (the end of the block, an unresolved word): a length
            // costs one test here.
            if (a & DEFLATE_S_END) {
                if ((a & DEFLATE_S_UNRESOLVED) == DEFLATE_S_UNRESOLVED) {
                    a = deflate_spec_resolve<TT, false>(in.ring, (u32)base + p, t, p);
                    if ((a & DEFLATE_S_UNRESOLVED) == DEFLATE_S_UNRESOLVED) return CODAG_ST_BAD_CODE;
                    if constexpr (FUSE) {
                        // A fused D was made for no length at this offset: the resolved length's
                        // distance is decoded from where it ends (its bits are in the ring: at most
                        // 31 + 20 + 28 bits past base).
                        u32 dw = deflate_spec_resolve<TT, true>(in.ring, (u32)base + (a & 63), t, a & 63);
                        if (lane == p) D = dw;
                    }
                    if (lane == p) A = a;  // the resolved word takes its lane's place; decoded next
                    continue;
                }
                p = a & 63;
                if (base + p > lim) return CODAG_ST_TRUNCATED;
                if (out.pos > out.cap) return CODAG_ST_OUTPUT_OVERFLOW;
                store_pending(mine, older);
                return CODAG_ST_OK;
            }
            }
            // A length (3..258); its distance code starts where it ends. FUSE: the distance word is
            // the same lane's, with no round between them.
            u32 len = a >> 16;
            p = a & 63;
            if constexpr (!FUSE) {
                if (p >= 32 && !round()) return CODAG_ST_TRUNCATED;
                dd = __shfl_sync(0xffffffffu, D, p);
            }
            // An unresolved distance word holds distance 0, which fails the bound check: the common
            // path takes one branch for both, and the canonical walk runs inside it.
            u32 dist = dd >> 16;
            // PEND2: a source that reaches into the newer pending set (or overlaps itself, dist <
            // len) takes the same branch, where both sets are stored.
            if (deflate_match_bad(out, dist, len) | (PEND2 && dist < pend + len)) {
                if (dd & DEFLATE_S_DUNRESOLVED) {
                    // An unresolved word's offset is its symbol's start (it took no bits): p, or
                    // (FUSE) where the length ended.
                    u32 at = dd & DEFLATE_S_DOFFSET;
                    dd = deflate_spec_resolve<TT, true>(in.ring, (u32)base + at, t, at);
                    if (dd & DEFLATE_S_DUNRESOLVED) return CODAG_ST_BAD_CODE;
                    dist = dd >> 16;
                }
                if (deflate_match_bad(out, dist, len)) return deflate_match_status(out, dist);
                if (PEND2 && dist < pend + len) store_pending(mine, older);
            }
            p = dd & DEFLATE_S_DOFFSET;
            if constexpr (PEND2) {
                deflate_spec_copy2(out, lane, dist, len, mine, older, pend, npo);
                return FLIP;
            } else {
                deflate_spec_copy(out, lane, dist, len, mine, pend);
            }
        }
    };
    u32 v0 = 0, v1 = 0, st;
    for (;;) {
        st = steps(v0, v1);
        if (!PEND2 || st != FLIP) break;
        st = steps(v1, v0);
        if (st != FLIP) break;
    }
    in.bit = base + p;
    if (st == CODAG_ST_OK) deflate_refill(in, b);
    return st;
}

// One raw Deflate stream into `out`; stops after the final block, or (SPAN) at a block boundary
// that is a later span's candidate (sp->next then names it; after the final block it is
// sp->n_starts). FAST: the batch loop; SPEC (with FAST): the speculative loop.
template <typename T, bool SPAN, bool FAST = false, typename TT = DeflateTables, bool SPEC = false,
          u32 V = 0>
__device__ u32 deflate_stream(CodagInput& in, CodagOutput<T>& out, TT& t, DeflateSpan* sp) {
    DeflateBits b;
    deflate_refill(in, b);
    bool fixed_built = false;
    constexpr bool COUNT = (V & DEFLATE_V_AUTO) != 0;
    // AUTO: whether the current tables' code gives lengths at least half the symbols.
    bool matchy = false;
    // Freshly built tables into spec entries (SPEC), and whether their code is mostly lengths.
    auto spec_tables = [&]() {
        if constexpr (SPEC) matchy = deflate_spec_tables<TT, COUNT>(t) >= (1u << TT::LIT_BITS) / 2;
    };
    for (;;) {
        if constexpr (SPAN) {
            u64 at = sp->bit0 + in.bit;
            while (sp->next < sp->n_starts && sp->starts[sp->next] < at) sp->next++;
            if (sp->next < sp->n_starts && sp->starts[sp->next] == at) return CODAG_ST_OK;
        }
        u32 hdr = deflate_take(in, b, 3);
        if (deflate_past_end(in)) return CODAG_ST_TRUNCATED;
        u32 type = hdr >> 1;
        if (type == 0) {
            in.bit = (in.bit + 7) & ~7ull;
            u32 p = codag_pos(in);
            if (!codag_fill(in, p + 4)) return CODAG_ST_TRUNCATED;
            u32 len = codag_at(in, p) | codag_at(in, p + 1) << 8;
            u32 nlen = codag_at(in, p + 2) | codag_at(in, p + 3) << 8;
            if ((len ^ 0xffff) != nlen) return CODAG_ST_STORED_LEN;
            if (p + 4 + len > in.len) return CODAG_ST_TRUNCATED;
            if (!out.room(len)) return CODAG_ST_OUTPUT_OVERFLOW;
            // Straight from global memory: coalesced byte loads, nothing to decode.
            const u8* src = reinterpret_cast<const u8*>(in.words) + p + 4;
            for (u32 k = codag_lane(); k < len; k += 32) out.base[out.pos + k] = src[k];
            out.pos += len;
            in.bit = (u64)(p + 4 + len) * 8;
            deflate_refill(in, b);
        } else if (type == 3) {
            return CODAG_ST_BAD_BLOCK_TYPE;
        } else {
            if (type == 1) {
                if (!fixed_built) {
                    deflate_fixed(t);
                    spec_tables();
                }
                fixed_built = true;
            } else {
                u32 st = deflate_dynamic(in, b, t);
                fixed_built = false;
                if (st) return st;
                spec_tables();
            }
            u32 st;
            if constexpr (SPEC && COUNT) {
                // Fused matches gain on match-heavy blocks and lose on literal-heavy ones
                // (docs/gpu/codag.md, "Fused matches").
                if (matchy) st = deflate_block_spec<T, TT, (V & ~DEFLATE_V_AUTO)>(in, b, out, t);
                else st = deflate_block_spec<T, TT, (V & (DEFLATE_V_LEAN | DEFLATE_V_MIRROR))>(in, b, out, t);
            } else if constexpr (SPEC) st = deflate_block_spec<T, TT, V>(in, b, out, t);
            else if constexpr (FAST) st = deflate_block_fast<T, TT>(in, b, out, t);
            else st = deflate_block<T, SPAN>(in, b, out, t, sp);
            if (st) return st;
        }
        if (hdr & 1) {
            if constexpr (SPAN) sp->next = sp->n_starts;
            return deflate_past_end(in) ? CODAG_ST_TRUNCATED : CODAG_ST_OK;
        }
    }
}

#endif
