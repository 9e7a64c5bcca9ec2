// store.cuh: writes a thread's 4 decoded lane values to the output column at the logical
// type's width (int-common §2): the inverse of the sign flip (`flip` is the type's sign bit, 0
// for unsigned types) and narrowing for 8- and 16-bit types, where a lane value that does not
// fit is corruption (TS_ST_RANGE, reported with its index inside the chunk).
//
// Stores are 16-byte (u32, 2 x 16 for u64), 8-byte (u16) or 4-byte (u8) vectors when the
// thread's 4 values are all real and the address is aligned; otherwise one value at a time.
// `out` is the column's first byte; `index` the global value index of items[0].
#ifndef TESSERA_STORE_CUH
#define TESSERA_STORE_CUH

#include "../include/common.cuh"

// The arguments every column-decode kernel takes (for/dfor/rfor_decode_<out>): the column's
// payload words, its chunk table, the slab count, the output column, the sign flip, and one
// status word per chunk.
#define TS_DECODE_ARGS                                                                                   \
    const u32 *__restrict__ g, const ChunkDesc *__restrict__ chunks, u32 n_chunks, u32 total_slabs,     \
        u8 *__restrict__ out, u64 flip, u64 *__restrict__ status

template <int OUT_BYTES> struct OutWord;
template <> struct OutWord<1> { typedef u8 T; };
template <> struct OutWord<2> { typedef u16 T; };
template <> struct OutWord<4> { typedef u32 T; };
template <> struct OutWord<8> { typedef u64 T; };

template <int OUT_BYTES, typename T>
__device__ __forceinline__ void ts_store_items(u8* __restrict__ out, u64 index, const T (&items)[TS_ITEMS], u32 valid,
                                               u64 flip, u64* status, u32 chunk_index) {
    typedef typename OutWord<OUT_BYTES>::T O;
    O o[TS_ITEMS];
#pragma unroll
    for (int k = 0; k < TS_ITEMS; ++k) {
        if (OUT_BYTES < 4) {
            const u32 max = OUT_BYTES == 1 ? 0xFFu : 0xFFFFu;
            if ((u32)k < valid && (u64)items[k] > max) {
                ts_report(status, TS_CLASS_VALUES, chunk_index + k, TS_ST_RANGE, (u32)items[k]);
            }
        }
        o[k] = (O)((u64)items[k] ^ flip);
    }
    O* p = reinterpret_cast<O*>(out) + index;
    if (valid == TS_ITEMS && (index & 3) == 0) {
        if (OUT_BYTES == 4) {
            *reinterpret_cast<uint4*>(p) = make_uint4(o[0], o[1], o[2], o[3]);
            return;
        } else if (OUT_BYTES == 2) {
            *reinterpret_cast<uint2*>(p) = make_uint2((u32)o[0] | ((u32)o[1] << 16), (u32)o[2] | ((u32)o[3] << 16));
            return;
        } else if (OUT_BYTES == 1) {
            *reinterpret_cast<u32*>(p) = (u32)o[0] | ((u32)o[1] << 8) | ((u32)o[2] << 16) | ((u32)o[3] << 24);
            return;
        }
    }
    if (OUT_BYTES == 8 && valid == TS_ITEMS && (index & 1) == 0) {
        ulonglong2* v = reinterpret_cast<ulonglong2*>(p);
        v[0] = make_ulonglong2(o[0], o[1]);
        v[1] = make_ulonglong2(o[2], o[3]);
        return;
    }
#pragma unroll
    for (int k = 0; k < TS_ITEMS; ++k)
        if ((u32)k < valid) p[k] = o[k];
}

#endif
