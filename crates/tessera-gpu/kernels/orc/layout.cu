// orc/layout.cu: ORC's decoded streams rearranged into Arrow's layout on the device (host side:
// src/orc_layout.rs). A column is a list of column stripes, one per stripe; each column stripe names where
// its streams lie in device memory (raw addresses and their lengths, in elements) and the rows
// it covers in the output:
// - validity: PRESENT (one bit a row, most significant bit first, per column stripe) becomes Arrow's
//   validity words (least significant bit first, rows of all column stripes back to back) and one
//   popcount per 32-row word, which the device-wide sum scan (primitives/scan.cuh) turns into
//   the rank of each word: a row's value index is its rank minus its column stripe's first rank;
// - scatter: each valid row takes its value (narrowed from i64 with a range check, copied from
//   float bytes, or timestamps combined from seconds and nanoseconds), a null row zeros;
// - booleans: value bits (most significant first) scattered into Arrow's bits;
// - strings: per-row lengths (direct: LENGTH; dictionary: the entry's length, its offsets
//   scanned from the dictionary's LENGTH stream), scanned into offsets, then the bytes copied.
//
// Every kernel is handed the lengths of what it reads and writes and checks each index against
// them; a problem is reported in one u64 status word (host-initialised to TS_STATUS_OK) as
// `index << 8 | code` by atomicMin, so the host sees the lowest row at fault.
#include "../include/common.cuh"

#define TS_OL_SIZE 1         // a length passed does not cover the work (index 0)
#define TS_OL_COUNT 2        // a valid row past its column stripe's values (PRESENT disagrees with them)
#define TS_OL_RANGE 3        // a value does not fit the Arrow type's width
#define TS_OL_TIMESTAMP 4    // a timestamp's nanoseconds code is out of range, or it overflows
#define TS_OL_LENGTH 5       // a length is negative or runs past its column stripe's bytes
#define TS_OL_DICT_ID 6      // a dictionary id past the column stripe's dictionary
#define TS_OL_OFFSET_LIMIT 7 // the column's bytes pass i32::MAX
#define TS_OL_PRESENT 8      // a column stripe's PRESENT bytes do not cover its rows
#define TS_OL_UTF8 9         // a string row is not well-formed UTF-8

#define TS_OL_THREADS 256

// Fields of one column stripe (u64 each, TS_OL_FIELDS a column stripe).
#define TS_OL_ROW_START 0  // first row of the column stripe in the column
#define TS_OL_ROWS 1       // its rows
#define TS_OL_PRESENT_PTR 2 // PRESENT bits (MSB first), 0 when every row is valid
#define TS_OL_PRESENT_LEN 3 // bytes there
#define TS_OL_VALS_PTR 4   // values of the valid rows (i64, bytes, bits, floats, lengths, ids)
#define TS_OL_VALS_LEN 5   // values there
#define TS_OL_AUX_PTR 6    // timestamps: nanoseconds (i64); strings: the bytes (DATA or DICTIONARY_DATA)
#define TS_OL_AUX_LEN 7    // elements there
#define TS_OL_DICT_PTR 8   // dictionary entry lengths (i64)
#define TS_OL_DICT_LEN 9   // entries
#define TS_OL_DICT_BASE 10 // the column stripe's first entry among the column's entries
#define TS_OL_IS_DICT 11   // 1: a dictionary-encoded string column stripe (values are ids)
#define TS_OL_FIELDS 12

// Scatter modes of ts_orc_scatter.
#define TS_OL_I8 0
#define TS_OL_I16 1
#define TS_OL_I32 2
#define TS_OL_I64 3
#define TS_OL_BYTE 4
#define TS_OL_F32 5
#define TS_OL_F64 6
#define TS_OL_TIMESTAMP_NS 7

// 2015-01-01 00:00:00 UTC in seconds since the Unix epoch: ORC timestamps count from it.
#define TS_OL_EPOCH_2015 1420070400ll

__device__ __forceinline__ void ts_ol_report(u64* status, u64 index, u32 code) {
    atomicMin(status, (index << 8) | (u64)code);
}

__device__ __forceinline__ u64 ts_ol_thread() { return (u64)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ u64 ts_ol_stride() { return (u64)gridDim.x * blockDim.x; }

__device__ __forceinline__ const u64* ts_ol_part(const u64* parts, u32 s) { return parts + (u64)s * TS_OL_FIELDS; }

// The column stripe holding `key` by the ascending start field `field` (TS_OL_ROW_START for a
// row, TS_OL_DICT_BASE for a dictionary entry): the last whose start is at or before it; empty
// column stripes share their start with the next. `nparts` > 0.
__device__ u32 ts_ol_find(const u64* parts, u32 nparts, u32 field, u64 key) {
    u32 lo = 0, hi = nparts - 1;
    while (lo < hi) {
        const u32 mid = (lo + hi + 1) / 2;
        if (ts_ol_part(parts, mid)[field] <= key) lo = mid; else hi = mid - 1;
    }
    return lo;
}

// Valid rows before `row`, from the validity words and their exclusive ranks.
__device__ __forceinline__ u64 ts_ol_rank(const u32* words, const u32* ranks, u64 row) {
    const u64 w = row >> 5;
    const u32 bit = (u32)(row & 31);
    const u32 below = bit == 0 ? 0u : (words[w] & (0xFFFFFFFFu >> (32 - bit)));
    return (u64)ranks[w] + (u64)__popc(below);
}

__device__ __forceinline__ bool ts_ol_valid(const u32* words, u64 row) { return (words[row >> 5] >> (row & 31)) & 1u; }

// The column stripes' table, checked by one thread of each block (it is small): starts ascend, each
// column stripe ends where the next starts, the last at `rows`. Every thread of the block calls it.
__device__ bool ts_ol_table_ok(const u64* parts, u32 nparts, u64 rows) {
    __shared__ int ok;
    if (threadIdx.x == 0) {
        bool good = nparts > 0 || rows == 0;
        u64 at = 0;
        for (u32 s = 0; good && s < nparts; ++s) {
            const u64* g = ts_ol_part(parts, s);
            good = g[TS_OL_ROW_START] == at && g[TS_OL_ROWS] <= rows - at;
            at += g[TS_OL_ROWS];
        }
        ok = good && at == rows;
    }
    __syncthreads();
    return ok != 0;
}

// One thread a 32-row word: Arrow's validity word and its popcount.
extern "C" __global__ void __launch_bounds__(TS_OL_THREADS)
    ts_orc_validity(const u64* __restrict__ parts, u32 nparts, u64 rows, u32* __restrict__ words, u64 words_len,
                    u32* __restrict__ counts, u64* status) {
    const u64 nw = (rows + 31) / 32;
    if (!ts_ol_table_ok(parts, nparts, rows) || words_len < nw) {
        if (ts_ol_thread() == 0) ts_ol_report(status, 0, TS_OL_SIZE);
        return;
    }
    for (u64 w = ts_ol_thread(); w < nw; w += ts_ol_stride()) {
        const u64 r0 = w * 32;
        const u64 r1 = r0 + 32 < rows ? r0 + 32 : rows;
        u32 s = ts_ol_find(parts, nparts, TS_OL_ROW_START, r0);
        u32 word = 0;
        for (u64 r = r0; r < r1; ++r) {
            while (s + 1 < nparts && ts_ol_part(parts, s + 1)[TS_OL_ROW_START] <= r) ++s;
            const u64* g = ts_ol_part(parts, s);
            u32 bit = 1;
            if (g[TS_OL_PRESENT_PTR] != 0) {
                const u64 i = r - g[TS_OL_ROW_START];
                if (i / 8 >= g[TS_OL_PRESENT_LEN]) {
                    ts_ol_report(status, r, TS_OL_PRESENT);
                    bit = 0;
                } else {
                    const u8* p = (const u8*)g[TS_OL_PRESENT_PTR];
                    bit = (p[i / 8] >> (7 - (u32)(i % 8))) & 1u;
                }
            }
            word |= bit << (u32)(r - r0);
        }
        words[w] = word;
        counts[w] = (u32)__popc(word);
    }
}

// The value index of valid row `row` in column stripe `g`, checked against the column stripe's values.
__device__ __forceinline__ bool ts_ol_value_index(const u64* g, const u32* words, const u32* ranks, u64 row, u64* v,
                                                  u64* status) {
    *v = ts_ol_rank(words, ranks, row) - ts_ol_rank(words, ranks, g[TS_OL_ROW_START]);
    if (*v >= g[TS_OL_VALS_LEN]) {
        ts_ol_report(status, row, TS_OL_COUNT);
        return false;
    }
    return true;
}

__device__ __forceinline__ u32 ts_ol_width(u32 mode) {
    switch (mode) {
    case TS_OL_I8: case TS_OL_BYTE: return 1;
    case TS_OL_I16: return 2;
    case TS_OL_I32: case TS_OL_F32: return 4;
    default: return 8;
    }
}

// ORC's nanoseconds code (trailing-zero count in the low 3 bits) and seconds from 2015 as
// nanoseconds since the Unix epoch, as the CPU path's `timestamp_ns` computes them; false on
// overflow or a code out of range.
__device__ bool ts_ol_timestamp(long long secs, long long code, long long* out) {
    const u32 z = (u32)(code & 7);
    long long nanos = code >> 3;
    if (z != 0) {
        long long m = 1;
        for (u32 k = 0; k < z + 1; ++k) m *= 10;
        if (nanos > 0 ? nanos > 9223372036854775807ll / m : nanos < (-9223372036854775807ll - 1) / m) return false;
        nanos *= m;
    }
    if (nanos <= -1000000000ll || nanos >= 1000000000ll) return false;
    if (secs > 9223372036854775807ll - TS_OL_EPOCH_2015) return false;
    long long s = secs + TS_OL_EPOCH_2015;
    if (s < 0 && nanos > 999999ll) s -= 1;
    const long long lim = 9223372036854775807ll / 1000000000ll;
    if (s > lim || s < -lim - 1) return false;
    long long t = s * 1000000000ll;
    if ((nanos > 0 && t > 9223372036854775807ll - nanos) || (nanos < 0 && t < (-9223372036854775807ll - 1) - nanos))
        return false;
    *out = t + nanos;
    return true;
}

// One thread a row: fixed-width values at Arrow's width (`mode`), nulls zero.
extern "C" __global__ void __launch_bounds__(TS_OL_THREADS)
    ts_orc_scatter(const u64* __restrict__ parts, u32 nparts, u64 rows, const u32* __restrict__ words,
                   const u32* __restrict__ ranks, u64 words_len, u32 mode, u8* __restrict__ out, u64 out_len,
                   u64* status) {
    const u32 w = ts_ol_width(mode);
    if (!ts_ol_table_ok(parts, nparts, rows) || words_len < (rows + 31) / 32 || out_len / w < rows ||
        mode > TS_OL_TIMESTAMP_NS) {
        if (ts_ol_thread() == 0) ts_ol_report(status, 0, TS_OL_SIZE);
        return;
    }
    for (u64 r = ts_ol_thread(); r < rows; r += ts_ol_stride()) {
        u8* o = out + r * w;
        long long x = 0;
        const u64* g = ts_ol_part(parts, ts_ol_find(parts, nparts, TS_OL_ROW_START, r));
        u64 v;
        if (ts_ol_valid(words, r) && ts_ol_value_index(g, words, ranks, r, &v, status)) {
            const u8* src = (const u8*)g[TS_OL_VALS_PTR];
            switch (mode) {
            case TS_OL_BYTE: x = (long long)(signed char)src[v]; break;
            case TS_OL_F32:
            case TS_OL_F64:
                // Raw little-endian bytes at any alignment (a stream starts at any byte).
                for (u32 k = 0; k < w; ++k) o[k] = src[v * w + k];
                continue;
            case TS_OL_TIMESTAMP_NS: {
                const long long secs = ((const long long*)src)[v];
                if (v >= g[TS_OL_AUX_LEN]) {
                    ts_ol_report(status, r, TS_OL_COUNT);
                    break;
                }
                const long long code = ((const long long*)g[TS_OL_AUX_PTR])[v];
                if (!ts_ol_timestamp(secs, code, &x)) {
                    ts_ol_report(status, r, TS_OL_TIMESTAMP);
                    x = 0;
                }
                break;
            }
            default: {
                x = ((const long long*)src)[v];
                const long long lo = mode == TS_OL_I8 ? -128ll : mode == TS_OL_I16 ? -32768ll : -2147483648ll;
                const long long hi = mode == TS_OL_I8 ? 127ll : mode == TS_OL_I16 ? 32767ll : 2147483647ll;
                if (mode != TS_OL_I64 && (x < lo || x > hi)) {
                    ts_ol_report(status, r, TS_OL_RANGE);
                    x = 0;
                }
            }
            }
        }
        switch (w) {
        case 1: *o = (u8)x; break;
        case 2: *(short*)o = (short)x; break;
        case 4: *(int*)o = (int)x; break;
        default: *(long long*)o = x;
        }
    }
}

// One thread a 32-row word: boolean values (bits MSB first, one a valid row) into Arrow's bits.
extern "C" __global__ void __launch_bounds__(TS_OL_THREADS)
    ts_orc_scatter_bool(const u64* __restrict__ parts, u32 nparts, u64 rows, const u32* __restrict__ words,
                        const u32* __restrict__ ranks, u64 words_len, u32* __restrict__ out, u64 out_len,
                        u64* status) {
    const u64 nw = (rows + 31) / 32;
    if (!ts_ol_table_ok(parts, nparts, rows) || words_len < nw || out_len < nw) {
        if (ts_ol_thread() == 0) ts_ol_report(status, 0, TS_OL_SIZE);
        return;
    }
    for (u64 wi = ts_ol_thread(); wi < nw; wi += ts_ol_stride()) {
        const u64 r0 = wi * 32;
        const u64 r1 = r0 + 32 < rows ? r0 + 32 : rows;
        u32 word = 0;
        for (u64 r = r0; r < r1; ++r) {
            if (!ts_ol_valid(words, r)) continue;
            const u64* g = ts_ol_part(parts, ts_ol_find(parts, nparts, TS_OL_ROW_START, r));
            u64 v;
            if (!ts_ol_value_index(g, words, ranks, r, &v, status)) continue;
            const u8* src = (const u8*)g[TS_OL_VALS_PTR];
            word |= (u32)((src[v / 8] >> (7 - (u32)(v % 8))) & 1u) << (u32)(r - r0);
        }
        out[wi] = word;
    }
}

// One thread a dictionary entry (the column's entries, column stripes back to back): its length
// from the column stripe's LENGTH stream, checked non-negative.
extern "C" __global__ void __launch_bounds__(TS_OL_THREADS)
    ts_orc_dict_lengths(const u64* __restrict__ parts, u32 nparts, u64 entries, u64* __restrict__ out, u64 out_len,
                        u64* status) {
    if (out_len < entries || (entries > 0 && nparts == 0)) {
        if (ts_ol_thread() == 0) ts_ol_report(status, 0, TS_OL_SIZE);
        return;
    }
    for (u64 e = ts_ol_thread(); e < entries; e += ts_ol_stride()) {
        const u64* g = ts_ol_part(parts, ts_ol_find(parts, nparts, TS_OL_DICT_BASE, e));
        const u64 i = e - g[TS_OL_DICT_BASE];
        if (i >= g[TS_OL_DICT_LEN]) {
            ts_ol_report(status, e, TS_OL_SIZE);
            out[e] = 0;
            continue;
        }
        const long long l = ((const long long*)g[TS_OL_DICT_PTR])[i];
        if (l < 0 || (u64)l > g[TS_OL_AUX_LEN]) {
            ts_ol_report(status, e, TS_OL_LENGTH);
            out[e] = 0;
            continue;
        }
        out[e] = (u64)l;
    }
}

// One thread a dictionary entry: it ends inside its column stripe's DICTIONARY_DATA. `offs` holds
// entries + 1 offsets (exclusive sums of the lengths, the total last).
extern "C" __global__ void __launch_bounds__(TS_OL_THREADS)
    ts_orc_dict_check(const u64* __restrict__ parts, u32 nparts, u64 entries, const u64* __restrict__ offs,
                      u64 offs_len, u64* status) {
    if (offs_len < entries + 1 || (entries > 0 && nparts == 0)) {
        if (ts_ol_thread() == 0) ts_ol_report(status, 0, TS_OL_SIZE);
        return;
    }
    for (u64 e = ts_ol_thread(); e < entries; e += ts_ol_stride()) {
        const u64* g = ts_ol_part(parts, ts_ol_find(parts, nparts, TS_OL_DICT_BASE, e));
        if (g[TS_OL_DICT_BASE] > e) {
            ts_ol_report(status, e, TS_OL_SIZE);
            continue;
        }
        if (offs[e + 1] - offs[g[TS_OL_DICT_BASE]] > g[TS_OL_AUX_LEN]) ts_ol_report(status, e, TS_OL_LENGTH);
    }
}

// The dictionary entry of valid row `row` (its index among the column's entries).
__device__ __forceinline__ bool ts_ol_entry(const u64* g, u64 v, u64 row, u64* e, u64* status) {
    const long long id = ((const long long*)g[TS_OL_VALS_PTR])[v];
    if (id < 0 || (u64)id >= g[TS_OL_DICT_LEN]) {
        ts_ol_report(status, row, TS_OL_DICT_ID);
        return false;
    }
    *e = g[TS_OL_DICT_BASE] + (u64)id;
    return true;
}

// One thread a row: its string's length (0 for a null row); `dict_offs` (entries + 1) when a
// column stripe is dictionary-encoded (stripes may differ), else null.
extern "C" __global__ void __launch_bounds__(TS_OL_THREADS)
    ts_orc_string_lengths(const u64* __restrict__ parts, u32 nparts, u64 rows, const u32* __restrict__ words,
                          const u32* __restrict__ ranks, u64 words_len, const u64* __restrict__ dict_offs,
                          u64 dict_offs_len, u64* __restrict__ out, u64 out_len, u64* status) {
    if (!ts_ol_table_ok(parts, nparts, rows) || words_len < (rows + 31) / 32 || out_len < rows) {
        if (ts_ol_thread() == 0) ts_ol_report(status, 0, TS_OL_SIZE);
        return;
    }
    for (u64 r = ts_ol_thread(); r < rows; r += ts_ol_stride()) {
        u64 len = 0;
        const u64* g = ts_ol_part(parts, ts_ol_find(parts, nparts, TS_OL_ROW_START, r));
        u64 v;
        if (ts_ol_valid(words, r) && ts_ol_value_index(g, words, ranks, r, &v, status)) {
            if (g[TS_OL_IS_DICT] != 0) {
                u64 e;
                if (ts_ol_entry(g, v, r, &e, status)) {
                    if (dict_offs == 0 || e + 1 >= dict_offs_len) ts_ol_report(status, r, TS_OL_SIZE);
                    else len = dict_offs[e + 1] - dict_offs[e];
                }
            } else {
                const long long l = ((const long long*)g[TS_OL_VALS_PTR])[v];
                if (l < 0 || (u64)l > g[TS_OL_AUX_LEN]) ts_ol_report(status, r, TS_OL_LENGTH);
                else len = (u64)l;
            }
        }
        out[r] = len;
    }
}

// Whether `p[0..n)` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
// past U+10FFFF), what Arrow's utf8 arrays promise and the CPU path checks.
__device__ bool ts_ol_utf8(const u8* p, u64 n) {
    u64 i = 0;
    while (i < n) {
        const u32 c = p[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        u32 need, lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) need = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else return false;
        if (n - i <= need) return false;
        const u32 c1 = p[i + 1];
        if (c1 < lo || c1 > hi) return false;
        for (u32 k = 2; k <= need; ++k)
            if ((p[i + k] & 0xC0) != 0x80) return false;
        i += need + 1;
    }
    return true;
}

// One thread a row: Arrow's i32 offset of the row (and the end after the last) from the u64
// offsets (rows + 1), and the row's bytes copied from its column stripe's DATA (direct: the bytes
// follow the column stripe's lengths) or its dictionary entry; `utf8`: each row checked to be
// well-formed UTF-8.
extern "C" __global__ void __launch_bounds__(TS_OL_THREADS)
    ts_orc_string_copy(const u64* __restrict__ parts, u32 nparts, u64 rows, const u32* __restrict__ words,
                       const u32* __restrict__ ranks, u64 words_len, const u64* __restrict__ dict_offs,
                       u64 dict_offs_len, const u64* __restrict__ offs, u64 offs_len, int* __restrict__ out_offs,
                       u64 out_offs_len, u8* __restrict__ out, u64 out_len, u32 utf8, u64* status) {
    if (!ts_ol_table_ok(parts, nparts, rows) || words_len < (rows + 31) / 32 || offs_len < rows + 1 ||
        out_offs_len < rows + 1 || out_len < offs[rows]) {
        if (ts_ol_thread() == 0) ts_ol_report(status, 0, TS_OL_SIZE);
        return;
    }
    if (ts_ol_thread() == 0) {
        out_offs[0] = 0;
        if (offs[rows] > 2147483647ull) ts_ol_report(status, rows, TS_OL_OFFSET_LIMIT);
    }
    for (u64 r = ts_ol_thread(); r < rows; r += ts_ol_stride()) {
        const u64 end = offs[r + 1];
        if (end > 2147483647ull) {
            ts_ol_report(status, r, TS_OL_OFFSET_LIMIT);
            continue;
        }
        out_offs[r + 1] = (int)end;
        const u64 at = offs[r];
        const u64 len = end - at;
        if (len == 0 || !ts_ol_valid(words, r)) continue;
        const u64* g = ts_ol_part(parts, ts_ol_find(parts, nparts, TS_OL_ROW_START, r));
        u64 src_at;
        if (g[TS_OL_IS_DICT] != 0) {
            u64 v, e;
            if (!ts_ol_value_index(g, words, ranks, r, &v, status) || !ts_ol_entry(g, v, r, &e, status)) continue;
            if (dict_offs == 0 || e + 1 >= dict_offs_len) {
                ts_ol_report(status, r, TS_OL_SIZE);
                continue;
            }
            src_at = dict_offs[e] - dict_offs[g[TS_OL_DICT_BASE]];
        } else {
            src_at = at - offs[g[TS_OL_ROW_START]];
        }
        if (src_at > g[TS_OL_AUX_LEN] || len > g[TS_OL_AUX_LEN] - src_at) {
            ts_ol_report(status, r, TS_OL_LENGTH);
            continue;
        }
        const u8* src = (const u8*)g[TS_OL_AUX_PTR] + src_at;
        for (u64 k = 0; k < len; ++k) out[at + k] = src[k];
        if (utf8 != 0 && !ts_ol_utf8(src, len)) ts_ol_report(status, r, TS_OL_UTF8);
    }
}
