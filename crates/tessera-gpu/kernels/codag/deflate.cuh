// deflate.cuh: raw Deflate (RFC 1951: stored, fixed and dynamic Huffman blocks, overlapping
// back-references) on the CODAG framework, one warp per stream, every lane decoding.
//
// Huffman codes are decoded canonically (RFC 1951 §3.2.2: codes of one length are consecutive
// and the first code of each length follows from the counts): per warp, `count[len]` and the
// symbols sorted by (length, symbol) in shared memory, and the decode walks the lengths from
// bits already peeked into registers. Tables are built by all lanes: 16 lanes count lengths,
// every lane places the symbols it owns. What makes a stream bad follows the CPU reference
// (miniz_oxide) so both reject the same streams: codes over-subscribed or incomplete (an
// incomplete literal/length or distance code with one used symbol is allowed; the code-length
// code must be complete), more than 286 literal/length or 30 distance codes, a repeat with no
// previous length or past the table, literal/length symbols 286-287 and distance symbols
// 30-31, distances before the start of the output, LEN != ~NLEN in stored blocks, block type 3.
#ifndef TESSERA_CODAG_DEFLATE_CUH
#define TESSERA_CODAG_DEFLATE_CUH

#include "warp_decoder.cuh"

struct DeflateTables {
    u16 lcount[16];
    u16 dcount[16];
    u16 ccount[16];
    u16 lsym[288];
    u16 dsym[32];
    u16 csym[19];
    u8 lens[288 + 32];
};

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

// Builds the canonical code of `n` symbols from lens[0..n) into count/sym; false when the
// code is over-subscribed, or incomplete with more than one used symbol (or at all, when
// `complete` is required).
__device__ bool deflate_build(const u8* lens, u32 n, u16* count, u16* sym, bool complete) {
    u32 lane = codag_lane();
    __syncwarp();
    if (lane < 16) {
        u32 c = 0;
        for (u32 s = 0; s < n; s++) c += lens[s] == lane;
        count[lane] = (u16)c;
    }
    __syncwarp();
    int left = 1;
    u32 used = 0;
    for (u32 l = 1; l < 16; l++) {
        left = (left << 1) - (int)count[l];
        used += count[l];
    }
    if (left != 0 && (used > 1 || complete)) return false;
    for (u32 s = lane; s < n; s += 32) {
        u32 L = lens[s];
        if (!L) continue;
        u32 off = 0;
        for (u32 l = 1; l < L; l++) off += count[l];
        for (u32 t = 0; t < s; t++) off += lens[t] == L;
        sym[off] = (u16)s;
    }
    __syncwarp();
    return true;
}

// Decodes one symbol; false for a bit pattern that is no code (or runs past the input).
__device__ __forceinline__ bool deflate_symbol(CodagInput& in, const u16* count, const u16* sym, u32& s) {
    u64 bits = codag_peek_lsb(in);
    int code = 0, first = 0, index = 0;
    for (u32 len = 1; len < 16; len++) {
        code |= (int)(bits & 1);
        bits >>= 1;
        int c = count[len];
        if (code - first < c) {
            s = sym[index + code - first];
            return codag_skip(in, len);
        }
        index += c;
        first = (first + c) << 1;
        code <<= 1;
    }
    return false;
}

// `n` (<= 32) bits, least significant first.
__device__ __forceinline__ bool deflate_bits(CodagInput& in, u32 n, u32& v) {
    u64 b = codag_peek_lsb(in);
    v = n ? (u32)(b & ((1ull << n) - 1)) : 0;
    return codag_skip(in, n);
}

// The fixed code (RFC 1951 §3.2.6).
__device__ void deflate_fixed(DeflateTables& t) {
    for (u32 s = codag_lane(); s < 288 + 32; s += 32)
        t.lens[s] = s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : s < 288 ? 8 : 5;
    __syncwarp();
    deflate_build(t.lens, 288, t.lcount, t.lsym, false);
    deflate_build(t.lens + 288, 32, t.dcount, t.dsym, false);
}

// A dynamic block's header (§3.2.7).
__device__ u32 deflate_dynamic(CodagInput& in, DeflateTables& t) {
    u32 hlit, hdist, hclen;
    if (!deflate_bits(in, 5, hlit) || !deflate_bits(in, 5, hdist) || !deflate_bits(in, 4, hclen))
        return CODAG_ST_TRUNCATED;
    hlit += 257;
    hdist += 1;
    hclen += 4;
    if (hlit > 286 || hdist > 30) return CODAG_ST_BAD_TABLE;
    __syncwarp();
    if (codag_lane() < 19) t.lens[DEFLATE_CL_ORDER[codag_lane()]] = 0;
    __syncwarp();
    for (u32 i = 0; i < hclen; i++) {
        u32 v;
        if (!deflate_bits(in, 3, v)) return CODAG_ST_TRUNCATED;
        if (codag_lane() == 0) t.lens[DEFLATE_CL_ORDER[i]] = (u8)v;
    }
    __syncwarp();
    if (!deflate_build(t.lens, 19, t.ccount, t.csym, true)) return CODAG_ST_BAD_TABLE;
    u32 n = hlit + hdist, i = 0;
    while (i < n) {
        u32 s;
        if (!deflate_symbol(in, t.ccount, t.csym, s)) return CODAG_ST_BAD_CODE;
        if (s < 16) {
            if (codag_lane() == 0) t.lens[i] = (u8)s;
            i++;
            continue;
        }
        if (s == 16 && i == 0) return CODAG_ST_BAD_TABLE;
        u32 extra = s == 16 ? 2 : s == 17 ? 3 : 7, rep;
        if (!deflate_bits(in, extra, rep)) return CODAG_ST_TRUNCATED;
        rep += s == 16 ? 3 : s == 17 ? 3 : 11;
        if (i + rep > n) return CODAG_ST_BAD_TABLE;
        __syncwarp();
        u8 v = s == 16 ? t.lens[i - 1] : 0;
        __syncwarp();
        for (u32 k = codag_lane(); k < rep; k += 32) t.lens[i + k] = v;
        i += rep;
    }
    __syncwarp();
    // Distance lengths follow the literal/length ones in lens[]: move them to lens[288..].
    u8 dl = codag_lane() < hdist ? t.lens[hlit + codag_lane()] : 0;
    __syncwarp();
    t.lens[288 + codag_lane()] = dl;
    if (!deflate_build(t.lens, hlit, t.lcount, t.lsym, false)) return CODAG_ST_BAD_TABLE;
    if (!deflate_build(t.lens + 288, hdist, t.dcount, t.dsym, false)) return CODAG_ST_BAD_TABLE;
    return CODAG_ST_OK;
}

// One raw Deflate stream into `out`; stops after the final block.
__device__ u32 deflate_stream(CodagInput& in, CodagOutput<u8>& out, DeflateTables& t) {
    for (;;) {
        u32 hdr;
        if (!deflate_bits(in, 3, hdr)) return CODAG_ST_TRUNCATED;
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
        } else if (type == 3) {
            return CODAG_ST_BAD_BLOCK_TYPE;
        } else {
            if (type == 1) {
                deflate_fixed(t);
            } else {
                u32 st = deflate_dynamic(in, t);
                if (st) return st;
            }
            for (;;) {
                u32 s;
                if (!deflate_symbol(in, t.lcount, t.lsym, s)) return CODAG_ST_BAD_CODE;
                if (s < 256) {
                    if (!out.write_one((u8)s)) return CODAG_ST_OUTPUT_OVERFLOW;
                    continue;
                }
                if (s == 256) break;
                if (s > 285) return CODAG_ST_BAD_CODE;
                u32 e, len, ds, dist;
                s -= 257;
                if (!deflate_bits(in, DEFLATE_LEN_EXTRA[s], e)) return CODAG_ST_TRUNCATED;
                len = DEFLATE_LEN_BASE[s] + e;
                if (!deflate_symbol(in, t.dcount, t.dsym, ds)) return CODAG_ST_BAD_CODE;
                if (ds > 29) return CODAG_ST_BAD_CODE;
                if (!deflate_bits(in, DEFLATE_DIST_EXTRA[ds], e)) return CODAG_ST_TRUNCATED;
                dist = DEFLATE_DIST_BASE[ds] + e;
                if (dist > out.pos) return CODAG_ST_BAD_DISTANCE;
                if (!out.memcpy(dist, len)) return CODAG_ST_OUTPUT_OVERFLOW;
            }
        }
        if (hdr & 1) return CODAG_ST_OK;
    }
}

#endif
