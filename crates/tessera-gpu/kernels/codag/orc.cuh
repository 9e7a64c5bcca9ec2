// orc.cuh: ORC's RLE v1, RLE v2 and byte RLE on the CODAG framework, matching
// tessera_codecs::orc (which follows the ORC specification) value for value, and flagging
// exactly the chunks that decoder rejects. A chunk must yield exactly out_cap values; a run
// past that is CODAG_ST_OUTPUT_OVERFLOW.
#ifndef TESSERA_CODAG_ORC_CUH
#define TESSERA_CODAG_ORC_CUH

#include "warp_decoder.cuh"

typedef long long i64;

__device__ __forceinline__ i64 orc_unzigzag(u64 u) { return (i64)(u >> 1) ^ -(i64)(u & 1); }
__device__ __forceinline__ i64 orc_cvt(u64 u, bool sgn) { return sgn ? orc_unzigzag(u) : (i64)u; }

__device__ __forceinline__ u32 orc_decode_width(u32 code) {
    if (code <= 23) return code + 1;
    switch (code) {
        case 24: return 26;
        case 25: return 28;
        case 26: return 30;
        case 27: return 32;
        case 28: return 40;
        case 29: return 48;
        case 30: return 56;
        default: return 64;
    }
}

__device__ __forceinline__ u32 orc_closest_fixed_bits(u32 b) {
    if (b == 0) return 1;
    if (b <= 24) return b;
    if (b <= 26) return 26;
    if (b <= 28) return 28;
    if (b <= 30) return 30;
    if (b <= 32) return 32;
    if (b <= 40) return 40;
    if (b <= 48) return 48;
    if (b <= 56) return 56;
    return 64;
}

// `run` literal varints decoded in parallel: the warp looks at the next 32 input bytes, each lane
// one byte; a byte without the continuation bit ends a varint, so a ballot of those bytes and
// its prefix counts give every lane ending a varint that varint's index and first byte. Those
// lanes gather their varint's bytes and write the value. Varints over 10 bytes or 64 bits and
// input that ends inside a varint are errors (the CPU reports which).
__device__ u32 orc_varints(CodagInput& in, CodagOutput<u64>& out, u32 run, bool sgn) {
    u32 lane = codag_lane();
    u32 p = codag_pos(in), done = 0;
    while (done < run) {
        if (p >= in.len) return CODAG_ST_TRUNCATED;
        u32 end = p + 32 < in.len ? p + 32 : in.len;
        codag_fill(in, end);
        bool inside = p + lane < in.len;
        u32 b = inside ? codag_at(in, p + lane) : 0x80u;
        u32 term = __ballot_sync(0xffffffffu, inside && !(b & 0x80));
        if (!term) return end - p >= 10 ? CODAG_ST_BAD_VARINT : CODAG_ST_TRUNCATED;
        u32 below = term & ((1u << lane) - 1);
        u32 rank = __popc(below);
        u32 take = __popc(term) < run - done ? __popc(term) : run - done;
        bool mine = ((term >> lane) & 1) && rank < take;
        u32 start = below ? 32 - __clz(below) : 0;
        u32 len = lane - start + 1;
        bool bad = mine && (len > 10 || (len == 10 && (b & 0x7f) > 1));
        if (__ballot_sync(0xffffffffu, bad)) return CODAG_ST_BAD_VARINT;
        if (mine) {
            u64 v = 0;
            for (u32 k = 0; k < len; k++) v |= (u64)(codag_at(in, p + start + k) & 0x7f) << (7 * k);
            out.base[out.pos + done + rank] = (u64)orc_cvt(v, sgn);
        }
        // The byte after the last varint taken: the take-th terminator's lane + 1.
        u32 last = __ffs(__ballot_sync(0xffffffffu, mine && rank + 1 == take)) - 1;
        p += last + 1;
        done += take;
    }
    out.pos += run;
    in.bit = (u64)p * 8;
    return CODAG_ST_OK;
}

// RLE v1: runs (write_run with the byte delta) and literal varints (orc_varints).
__device__ u32 orc_rle_v1(CodagInput& in, CodagOutput<u64>& out, bool sgn) {
    u32 st = CODAG_ST_OK;
    while (out.pos < out.cap) {
        u32 h;
        if (!codag_byte(in, h)) return CODAG_ST_TRUNCATED;
        if (h < 128) {
            u32 d;
            if (!codag_byte(in, d)) return CODAG_ST_TRUNCATED;
            u64 u;
            if (!codag_varint(in, u, st)) return st;
            if (!out.write_run((u64)orc_cvt(u, sgn), h + 3, (u64)(i64)(signed char)(u8)d)) return CODAG_ST_OUTPUT_OVERFLOW;
        } else {
            u32 run = 256 - h;
            if (!out.room(run)) return CODAG_ST_OUTPUT_OVERFLOW;
            st = orc_varints(in, out, run, sgn);
            if (st) return st;
        }
    }
    return st;
}

// `n` values of `w` bits packed from bit `bit`, 32 at a time (lane i takes value i of each
// group), each passed to `put(lane_value, count)`; false when the bytes run past the chunk.
template <typename F>
__device__ __forceinline__ bool orc_unpack(CodagInput& in, u64 bit, u32 w, u32 n, F put) {
    for (u32 g = 0; g < n; g += 32) {
        u32 k = n - g < 32 ? n - g : 32;
        u64 end_bit = bit + (u64)(g + k) * w;
        u64 first = bit + (u64)g * w;
        // Make the group's bytes readable: at most 32 * 64 / 8 + 1 bytes past the group start.
        in.bit = first & ~7ull;
        if (!codag_fill(in, (u32)((end_bit + 7) >> 3))) return false;
        u64 v = 0;
        if (codag_lane() < k) v = codag_bits_msb(in, first + (u64)codag_lane() * w, w);
        put(v, k);
    }
    return true;
}

__device__ u32 orc_rle_v2(CodagInput& in, CodagOutput<u64>& out, bool sgn) {
    u32 st = CODAG_ST_OK;
    while (out.pos < out.cap) {
        u32 first;
        if (!codag_byte(in, first)) return CODAG_ST_TRUNCATED;
        u32 kind = first >> 6;
        if (kind == 0) {
            u32 wb = ((first >> 3) & 7) + 1, run = (first & 7) + 3;
            u64 u = 0;
            for (u32 i = 0; i < wb; i++) {
                u32 b;
                if (!codag_byte(in, b)) return CODAG_ST_TRUNCATED;
                u = (u << 8) | b;
            }
            if (!out.write_run((u64)orc_cvt(u, sgn), run, 0)) return CODAG_ST_OUTPUT_OVERFLOW;
            continue;
        }
        u32 second;
        if (!codag_byte(in, second)) return CODAG_ST_TRUNCATED;
        u32 run = (((first & 1) << 8) | second) + 1;
        u32 code = (first >> 1) & 31;
        if (kind == 1) {
            u32 w = orc_decode_width(code);
            if (!out.room(run)) return CODAG_ST_OUTPUT_OVERFLOW;
            u64 start = in.bit;
            bool ok = orc_unpack(in, start, w, run, [&](u64 v, u32 k) { out.write_lanes(k, (u64)orc_cvt(v, sgn)); });
            if (!ok) return CODAG_ST_TRUNCATED;
            in.bit = start + (((u64)run * w + 7) & ~7ull);
        } else if (kind == 2) {
            u32 w = orc_decode_width(code);
            u32 b2, b3;
            if (!codag_byte(in, b2) || !codag_byte(in, b3)) return CODAG_ST_TRUNCATED;
            u32 bw = (b2 >> 5) + 1, pw = orc_decode_width(b2 & 31), pgw = (b3 >> 5) + 1, pll = b3 & 31;
            if (pw + pgw > 64) return CODAG_ST_BAD_HEADER;
            if (!out.room(run)) return CODAG_ST_OUTPUT_OVERFLOW;
            u64 raw = 0;
            for (u32 i = 0; i < bw; i++) {
                u32 b;
                if (!codag_byte(in, b)) return CODAG_ST_TRUNCATED;
                raw = (raw << 8) | b;
            }
            u64 sign = 1ull << (bw * 8 - 1);
            i64 base = (raw & sign) ? -(i64)(raw & ~sign) : (i64)raw;
            u64 start = in.bit;
            u64 patch_bit = start + (((u64)run * w + 7) & ~7ull);
            u32 pfw = orc_closest_fixed_bits(pw + pgw);
            // The CPU decoder reads the data and the whole patch list before patching: check
            // both lie inside the chunk first.
            if (((patch_bit + (u64)pll * pfw + 7) >> 3) > in.len) return CODAG_ST_TRUNCATED;
            u32 at = out.pos;
            orc_unpack(in, start, w, run, [&](u64 v, u32 k) { out.write_lanes(k, (u64)base + v); });
            in.bit = patch_bit;
            codag_fill(in, (u32)((patch_bit + (u64)pll * pfw + 7) >> 3));
            __syncwarp();
            u64 pmask = pw >= 64 ? ~0ull : ((1ull << pw) - 1);
            u64 wmask = w >= 64 ? ~0ull : ((1ull << w) - 1);
            u32 idx = 0;
            for (u32 k = 0; k < pll; k++) {
                u64 e = codag_bits_msb(in, patch_bit + (u64)k * pfw, pfw);
                u64 gap = pw >= 64 ? 0 : e >> pw, patch = e & pmask;
                idx += (u32)gap;
                if (gap == 255 && patch == 0) continue;
                if (idx >= run) return CODAG_ST_BAD_PATCH;
                if (codag_lane() == 0) {
                    u64* p = out.base + at + idx;
                    u64 data = (*p - (u64)base) & wmask;
                    u64 shifted = w >= 64 ? 0 : patch << w;
                    *p = (u64)base + (data | shifted);
                }
                __syncwarp();
            }
            in.bit = patch_bit + (((u64)pll * pfw + 7) & ~7ull);
        } else {
            u32 w = code == 0 ? 0 : orc_decode_width(code);
            u64 ub, ud;
            if (!codag_varint(in, ub, st)) return st;
            if (!codag_varint(in, ud, st)) return st;
            i64 base = orc_cvt(ub, sgn), delta = orc_unzigzag(ud);
            if (w != 0 && run < 2) return CODAG_ST_BAD_HEADER;
            if (!out.room(run)) return CODAG_ST_OUTPUT_OVERFLOW;
            if (w == 0) {
                out.write_run((u64)base, run, (u64)delta);
                continue;
            }
            out.write_lanes(2, codag_lane() == 0 ? (u64)base : (u64)base + (u64)delta);
            u64 prev = (u64)base + (u64)delta;
            bool neg = delta < 0;
            u64 start = in.bit;
            bool ok = orc_unpack(in, start, w, run - 2, [&](u64 d, u32 k) {
                // Inclusive warp scan of the signed steps, then the running value.
                u64 s = neg ? (u64)0 - d : d;
                if (codag_lane() >= k) s = 0;
#pragma unroll
                for (u32 o = 1; o < 32; o <<= 1) {
                    u64 t = __shfl_up_sync(0xffffffffu, s, o);
                    if (codag_lane() >= o) s += t;
                }
                out.write_lanes(k, prev + s);
                prev += __shfl_sync(0xffffffffu, s, k - 1);
            });
            if (!ok) return CODAG_ST_TRUNCATED;
            in.bit = start + (((u64)(run - 2) * w + 7) & ~7ull);
        }
    }
    return st;
}

// Byte RLE (and boolean streams, whose bytes it yields): runs by write_run, literals copied
// from the ring by all lanes.
__device__ u32 orc_byte_rle(CodagInput& in, CodagOutput<u8>& out) {
    while (out.pos < out.cap) {
        u32 h;
        if (!codag_byte(in, h)) return CODAG_ST_TRUNCATED;
        if (h < 128) {
            u32 v;
            if (!codag_byte(in, v)) return CODAG_ST_TRUNCATED;
            if (!out.write_run((u8)v, h + 3, 0)) return CODAG_ST_OUTPUT_OVERFLOW;
        } else {
            u32 run = 256 - h, p = codag_pos(in);
            if (!out.room(run)) return CODAG_ST_OUTPUT_OVERFLOW;
            if (!codag_fill(in, p + run)) return CODAG_ST_TRUNCATED;
            for (u32 i = codag_lane(); i < run; i += 32) out.base[out.pos + i] = (u8)codag_at(in, p + i);
            out.pos += run;
            in.bit += (u64)run * 8;
        }
    }
    return CODAG_ST_OK;
}

#endif
