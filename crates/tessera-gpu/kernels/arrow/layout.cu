// layout.cu: decoded columns rearranged into Arrow's layout on the device (host side:
// src/arrow_layout.rs), so a table's fields can leave through the Arrow C Device Data
// Interface without a host round trip:
// - utf8 offsets: per-chunk relative u32 ends plus each chunk's text start become Arrow's
//   i32 or i64 offsets (offsets[0] = 0);
// - binary offsets: u32 lengths widened for the device-wide sum scan, the sums narrowed to i32;
// - decimals: stored i64 unscaled values widened to Arrow's Decimal128 (i128, little-endian);
// - utf8 end offsets of a whole batch of chunks checked on the device (never decreasing in a
//   chunk, each chunk's last one its text size), so the host never downloads them;
// - runs (docs/format/table.md §9): one value a run and the runs' ends expanded into one
//   value a row, one field a launch or many fields in one launch;
// - ALP floats (docs/format/table.md §8.2): digits times 10^f times 10^-e, in the IEEE
//   operations and order the CPU uses, then the exceptions scattered over their rows.
//
// Every kernel is handed the lengths of the buffers it reads and writes and checks each index
// against them; a problem is reported in one u64 status word (host-initialised to
// TS_STATUS_OK) as `index << 8 | code` by atomicMin, so the host sees the lowest index at
// fault, the first one a sequential reader would meet.
#include "../include/common.cuh"

#define TS_AL_SIZE 1          // a length passed does not cover the work (index 0)
#define TS_AL_UTF8_END 2      // a string's end lies past its chunk's text
#define TS_AL_OFFSET_LIMIT 3  // an offset does not fit the output offset type
#define TS_AL_ALP_PARAM 4     // a row's vector has no (e, f), or an invalid one
#define TS_AL_EXCEPTION_ROW 5 // an exception row past the rows, or not ascending
#define TS_AL_RUN_END 6       // a run end not above the one before, or the last not the rows
#define TS_AL_UTF8_TEXT 7     // a chunk's text is not UTF-8, or a string ends inside a character
                              // (index: the chunk's first string)
#define TS_AL_DICT_CODE 8     // a valid row's dictionary code is negative or not below the count
#define TS_AL_LENGTHS 9       // binary lengths sum past the bytes stored (index 0)

#define TS_AL_THREADS 256

__device__ __forceinline__ void ts_al_report(u64* status, u64 index, u32 code) {
    atomicMin(status, (index << 8) | (u64)code);
}

__device__ __forceinline__ u64 ts_al_thread() { return (u64)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ u64 ts_al_stride() { return (u64)gridDim.x * blockDim.x; }

// Row i of chunk k (value_starts[k] <= i < value_starts[k + 1]) ends at data_starts[k] +
// ends[i]; out[i + 1] receives that, out[0] = 0. value_starts and data_starts hold chunks + 1
// entries, value_starts[chunks] == n.
template <typename O>
__device__ void ts_al_utf8_offsets(const u32* __restrict__ ends, u64 ends_len, const u64* __restrict__ value_starts,
                                   const u64* __restrict__ data_starts, u32 chunks, u64 n, O* __restrict__ out,
                                   u64 out_len, u64 limit, u64* status) {
    if (chunks == 0 || n > ends_len || out_len < n + 1 || value_starts[chunks] != n) {
        if (ts_al_thread() == 0) ts_al_report(status, 0, TS_AL_SIZE);
        return;
    }
    if (ts_al_thread() == 0) out[0] = (O)0;
    for (u64 i = ts_al_thread(); i < n; i += ts_al_stride()) {
        // The last chunk starting at or before i (empty chunks share their start with the next).
        u32 lo = 0, hi = chunks - 1;
        while (lo < hi) {
            const u32 mid = (lo + hi + 1) / 2;
            if (value_starts[mid] <= i) lo = mid; else hi = mid - 1;
        }
        const u64 end = ends[i];
        if (end > data_starts[lo + 1] - data_starts[lo]) {
            ts_al_report(status, i, TS_AL_UTF8_END);
            continue;
        }
        const u64 off = data_starts[lo] + end;
        if (off > limit) {
            ts_al_report(status, i, TS_AL_OFFSET_LIMIT);
            continue;
        }
        out[i + 1] = (O)off;
    }
}

extern "C" __global__ void __launch_bounds__(TS_AL_THREADS)
    ts_arrow_utf8_offsets_i32(const u32* __restrict__ ends, u64 ends_len, const u64* __restrict__ value_starts,
                              const u64* __restrict__ data_starts, u32 chunks, u64 n, int* __restrict__ out,
                              u64 out_len, u64* status) {
    ts_al_utf8_offsets<int>(ends, ends_len, value_starts, data_starts, chunks, n, out, out_len, 0x7FFFFFFFull,
                            status);
}

extern "C" __global__ void __launch_bounds__(TS_AL_THREADS)
    ts_arrow_utf8_offsets_i64(const u32* __restrict__ ends, u64 ends_len, const u64* __restrict__ value_starts,
                              const u64* __restrict__ data_starts, u32 chunks, u64 n, long long* __restrict__ out,
                              u64 out_len, u64* status) {
    ts_al_utf8_offsets<long long>(ends, ends_len, value_starts, data_starts, chunks, n, out, out_len,
                                  0x7FFFFFFFFFFFFFFFull, status);
}

// out[2i], out[2i + 1] = the low and high words of i128(in[i]) (out_len counts i128 values).
extern "C" __global__ void __launch_bounds__(TS_AL_THREADS)
    ts_arrow_widen_i64_i128(const long long* __restrict__ in, u64 in_len, u64 n, long long* __restrict__ out,
                            u64 out_len, u64* status) {
    if (n > in_len || n > out_len) {
        if (ts_al_thread() == 0) ts_al_report(status, 0, TS_AL_SIZE);
        return;
    }
    for (u64 i = ts_al_thread(); i < n; i += ts_al_stride()) {
        const long long v = in[i];
        out[2 * i] = v;
        out[2 * i + 1] = v >> 63;
    }
}

// table.md §8.2: row r of vector r / rows_per_vector, (e, f) = params[v] (e low byte, f high
// byte, f <= e <= max_e); f10 and if10 hold max_e + 1 entries, the CPU's own tables. The
// conversion and both products round to nearest with no contraction (the _rn intrinsics), left
// to right, as the CPU's `d as f64 * F10[f] * IF10[e]`.
extern "C" __global__ void __launch_bounds__(TS_AL_THREADS)
    ts_arrow_alp_f64(const long long* __restrict__ digits, u64 digits_len, const u16* __restrict__ params,
                     u64 params_len, const double* __restrict__ f10, const double* __restrict__ if10, u32 max_e,
                     u64 rows_per_vector, u64 n, unsigned long long* __restrict__ out, u64 out_len, u64* status) {
    if (n > digits_len || n > out_len || rows_per_vector == 0) {
        if (ts_al_thread() == 0) ts_al_report(status, 0, TS_AL_SIZE);
        return;
    }
    for (u64 r = ts_al_thread(); r < n; r += ts_al_stride()) {
        const u64 v = r / rows_per_vector;
        if (v >= params_len) {
            ts_al_report(status, r, TS_AL_ALP_PARAM);
            continue;
        }
        const u32 p = params[v];
        const u32 e = p & 0xff, f = p >> 8;
        if (f > e || e > max_e) {
            ts_al_report(status, r, TS_AL_ALP_PARAM);
            continue;
        }
        const double x = __dmul_rn(__dmul_rn(__ll2double_rn(digits[r]), f10[f]), if10[e]);
        out[r] = (unsigned long long)__double_as_longlong(x);
    }
}

// The binary32 twin of ts_arrow_alp_f64: `(float)d` rounds the i64 once, to nearest.
extern "C" __global__ void __launch_bounds__(TS_AL_THREADS)
    ts_arrow_alp_f32(const long long* __restrict__ digits, u64 digits_len, const u16* __restrict__ params,
                     u64 params_len, const float* __restrict__ f10, const float* __restrict__ if10, u32 max_e,
                     u64 rows_per_vector, u64 n, u32* __restrict__ out, u64 out_len, u64* status) {
    if (n > digits_len || n > out_len || rows_per_vector == 0) {
        if (ts_al_thread() == 0) ts_al_report(status, 0, TS_AL_SIZE);
        return;
    }
    for (u64 r = ts_al_thread(); r < n; r += ts_al_stride()) {
        const u64 v = r / rows_per_vector;
        if (v >= params_len) {
            ts_al_report(status, r, TS_AL_ALP_PARAM);
            continue;
        }
        const u32 p = params[v];
        const u32 e = p & 0xff, f = p >> 8;
        if (f > e || e > max_e) {
            ts_al_report(status, r, TS_AL_ALP_PARAM);
            continue;
        }
        const float x = __fmul_rn(__fmul_rn(__ll2float_rn(digits[r]), f10[f]), if10[e]);
        out[r] = __float_as_uint(x);
    }
}

// Exception j overwrites row rows[j] with bits[j]; rows ascend strictly and stay below n
// (launched after the digits kernel on the same stream, so the exceptions win).
template <typename B>
__device__ void ts_al_alp_exceptions(const u64* __restrict__ rows, const B* __restrict__ bits, u64 count,
                                     u64 rows_len, u64 bits_len, u64 n, B* __restrict__ out, u64 out_len,
                                     u64* status) {
    if (count > rows_len || count > bits_len || n > out_len) {
        if (ts_al_thread() == 0) ts_al_report(status, 0, TS_AL_SIZE);
        return;
    }
    for (u64 j = ts_al_thread(); j < count; j += ts_al_stride()) {
        const u64 row = rows[j];
        if (row >= n || (j > 0 && rows[j - 1] >= row)) {
            ts_al_report(status, j, TS_AL_EXCEPTION_ROW);
            continue;
        }
        out[row] = bits[j];
    }
}

extern "C" __global__ void __launch_bounds__(TS_AL_THREADS)
    ts_arrow_alp_exceptions_u64(const u64* __restrict__ rows, const u64* __restrict__ bits, u64 count, u64 rows_len,
                                u64 bits_len, u64 n, u64* __restrict__ out, u64 out_len, u64* status) {
    ts_al_alp_exceptions<u64>(rows, bits, count, rows_len, bits_len, n, out, out_len, status);
}

extern "C" __global__ void __launch_bounds__(TS_AL_THREADS)
    ts_arrow_alp_exceptions_u32(const u64* __restrict__ rows, const u32* __restrict__ bits, u64 count, u64 rows_len,
                                u64 bits_len, u64 n, u32* __restrict__ out, u64 out_len, u64* status) {
    ts_al_alp_exceptions<u32>(rows, bits, count, rows_len, bits_len, n, out, out_len, status);
}

// Binary offsets, step 1: out[i] = lengths[i] widened to u64, the input of the device-wide sum
// scan (primitives/scan.cuh) that turns them into offsets.
extern "C" __global__ void __launch_bounds__(TS_AL_THREADS)
    ts_arrow_widen_u32_u64(const u32* __restrict__ lengths, u64 lengths_len, u64 n, u64* __restrict__ out,
                           u64 out_len, u64* status) {
    if (n > lengths_len || n > out_len) {
        if (ts_al_thread() == 0) ts_al_report(status, 0, TS_AL_SIZE);
        return;
    }
    for (u64 i = ts_al_thread(); i < n; i += ts_al_stride()) out[i] = lengths[i];
}

// Binary offsets, step 2 for i32 offsets: the n + 1 u64 offsets narrowed, each checked against
// i32's limit (the host checked the total, which bounds them all; this keeps the kernel safe
// on its own).
extern "C" __global__ void __launch_bounds__(TS_AL_THREADS)
    ts_arrow_narrow_offsets_i32(const u64* __restrict__ wide, u64 wide_len, u64 n, int* __restrict__ out,
                                u64 out_len, u64* status) {
    if (n > wide_len || n > out_len) {
        if (ts_al_thread() == 0) ts_al_report(status, 0, TS_AL_SIZE);
        return;
    }
    for (u64 i = ts_al_thread(); i < n; i += ts_al_stride()) {
        const u64 v = wide[i];
        if (v > 0x7FFFFFFFull) {
            ts_al_report(status, i, TS_AL_OFFSET_LIMIT);
            continue;
        }
        out[i] = (int)v;
    }
}

// table.md §9: row i takes the value of the first run r whose end ends[r] lies above i; runs
// hold `width`-byte values (1, 2, 4 or 8), ends ascend strictly and the last is n. Every
// thread checks the runs it strides over, so a run-end fault is reported even when no row
// lands in the faulty run; rows search only the first `runs` ends, so they stay in bounds
// whatever the ends hold.
template <typename T>
__device__ void ts_al_expand_runs(const T* __restrict__ values, const u64* __restrict__ ends, u64 runs, u64 n,
                                  T* __restrict__ out, u64* status) {
    for (u64 r = ts_al_thread(); r < runs; r += ts_al_stride()) {
        const u64 lo = r == 0 ? 0 : ends[r - 1];
        if (ends[r] <= lo || ends[r] > n || (r == runs - 1 && ends[r] != n)) ts_al_report(status, r, TS_AL_RUN_END);
    }
    for (u64 i = ts_al_thread(); i < n; i += ts_al_stride()) {
        u64 lo = 0, hi = runs - 1;
        while (lo < hi) {
            const u64 mid = lo + (hi - lo) / 2;
            if (ends[mid] > i) hi = mid; else lo = mid + 1;
        }
        out[i] = values[lo];
    }
}

extern "C" __global__ void __launch_bounds__(TS_AL_THREADS)
    ts_arrow_expand_runs(const void* __restrict__ values, u64 values_len, const u64* __restrict__ ends, u64 ends_len,
                         u64 runs, u32 width, u64 n, void* __restrict__ out, u64 out_len, u64* status) {
    if (runs > values_len || runs > ends_len || n > out_len || (n > 0 && runs == 0)) {
        if (ts_al_thread() == 0) ts_al_report(status, 0, TS_AL_SIZE);
        return;
    }
    if (n == 0) return;
    switch (width) {
        case 1: ts_al_expand_runs<unsigned char>((const unsigned char*)values, ends, runs, n, (unsigned char*)out, status); break;
        case 2: ts_al_expand_runs<u16>((const u16*)values, ends, runs, n, (u16*)out, status); break;
        case 4: ts_al_expand_runs<u32>((const u32*)values, ends, runs, n, (u32*)out, status); break;
        case 8: ts_al_expand_runs<u64>((const u64*)values, ends, runs, n, (u64*)out, status); break;
        default: if (ts_al_thread() == 0) ts_al_report(status, 0, TS_AL_SIZE);
    }
}

// Many run-encoded fields expanded by one launch: field f is fields[f] (blockIdx.y picks it,
// the x blocks stride over its runs and rows) and reports in its own status word status[f],
// with the codes and checks of ts_arrow_expand_runs. The host lays the table out (one row of
// TsAlRuns a field, `count` rows) and gives each field's live buffer lengths.
struct TsAlRuns {
    const void* values;
    u64 values_len;
    const u64* ends;
    u64 ends_len;
    u64 runs;
    u64 n;
    void* out;
    u64 out_len;
    u64 width;
};

extern "C" __global__ void __launch_bounds__(TS_AL_THREADS)
    ts_arrow_expand_runs_many(const TsAlRuns* __restrict__ fields, u32 count, u64* status) {
    if (blockIdx.y >= count) return;
    const TsAlRuns f = fields[blockIdx.y];
    u64* st = status + blockIdx.y;
    if (f.runs > f.values_len || f.runs > f.ends_len || f.n > f.out_len || (f.n > 0 && f.runs == 0)) {
        if (ts_al_thread() == 0) ts_al_report(st, 0, TS_AL_SIZE);
        return;
    }
    if (f.n == 0) return;
    switch (f.width) {
        case 1: ts_al_expand_runs<unsigned char>((const unsigned char*)f.values, f.ends, f.runs, f.n, (unsigned char*)f.out, st); break;
        case 2: ts_al_expand_runs<u16>((const u16*)f.values, f.ends, f.runs, f.n, (u16*)f.out, st); break;
        case 4: ts_al_expand_runs<u32>((const u32*)f.values, f.ends, f.runs, f.n, (u32*)f.out, st); break;
        case 8: ts_al_expand_runs<u64>((const u64*)f.values, f.ends, f.runs, f.n, (u64*)f.out, st); break;
        default: if (ts_al_thread() == 0) ts_al_report(st, 0, TS_AL_SIZE);
    }
}

// A UTF-8 continuation byte (10xxxxxx).
__device__ __forceinline__ bool ts_al_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// The bytes of the character a lead byte starts (2-4), or 0 for a byte that starts none: a
// continuation, the overlong leads C0 and C1, and F5-FF (past U+10FFFF).
__device__ __forceinline__ u32 ts_al_utf8_len(unsigned char c) {
    return c >= 0xC2 && c <= 0xDF ? 2 : (c & 0xF0) == 0xE0 ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
}

// Whether byte j of `text` (len bytes) is well placed in UTF-8 (RFC 3629): an ASCII byte; a
// lead whose character's bytes all follow inside the text, continuations, the second in the
// range its lead allows (no overlong form, no surrogate, nothing past U+10FFFF); or a
// continuation that the nearest non-continuation byte at most 3 back claims. Every byte
// checked this way makes the whole text valid UTF-8: each lead checks its own character, and
// each continuation belongs to one.
__device__ __forceinline__ bool ts_al_utf8_byte_ok(const unsigned char* __restrict__ text, u64 len, u64 j) {
    const unsigned char c = text[j];
    if (c < 0x80) return true;
    if (ts_al_continuation(c)) {
        for (u32 d = 1; d <= 3 && d <= j; ++d) {
            const unsigned char p = text[j - d];
            if (!ts_al_continuation(p)) return ts_al_utf8_len(p) > d;
        }
        return false;
    }
    const u32 n = ts_al_utf8_len(c);
    if (n == 0 || j + n > len) return false;
    const unsigned char c1 = text[j + 1];
    const unsigned char lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    const unsigned char hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    if (c1 < lo || c1 > hi) return false;
    for (u32 k = 2; k < n; ++k)
        if (!ts_al_continuation(text[j + k])) return false;
    return true;
}

// The last chunk starting at or before `i` under `starts` (chunks + 1 entries; empty chunks
// share their start with the next).
__device__ __forceinline__ u32 ts_al_chunk_of(const u64* __restrict__ starts, u32 chunks, u64 i) {
    u32 lo = 0, hi = chunks - 1;
    while (lo < hi) {
        const u32 mid = (lo + hi + 1) / 2;
        if (starts[mid] <= i) lo = mid; else hi = mid - 1;
    }
    return lo;
}

// The utf8 columns of a read, once their ends and text are decoded: per string, its end inside
// its chunk's text, never below the one before, the chunk's last string ending at the text's
// end (TS_AL_UTF8_END); per string and chunk start, no character cut (the byte at a string's
// start or end, when inside the text, is no continuation); and per text byte, valid UTF-8
// (TS_AL_UTF8_TEXT, reported at the chunk's first string). Chunk k's text starts at
// data_starts[k] (the text_sizes summed before it). Every read is checked against ends_len and
// text_len, the buffers' live lengths.
extern "C" __global__ void __launch_bounds__(TS_AL_THREADS)
    ts_arrow_check_utf8(const u32* __restrict__ ends, u64 ends_len, const u64* __restrict__ value_starts,
                        const u64* __restrict__ text_sizes, const u64* __restrict__ data_starts, u32 chunks,
                        u64 n, const unsigned char* __restrict__ text, u64 text_len, u64* status) {
    if (chunks == 0 || n > ends_len || value_starts[chunks] != n || data_starts[chunks] > text_len) {
        if (ts_al_thread() == 0) ts_al_report(status, 0, TS_AL_SIZE);
        return;
    }
    const u64 text_end = data_starts[chunks];
    const u64 work = n > text_end ? n : text_end;
    for (u64 i = ts_al_thread(); i < work; i += ts_al_stride()) {
        if (i < n) {
            const u32 lo = ts_al_chunk_of(value_starts, chunks, i);
            const u32 e = ends[i];
            const bool descends = i > value_starts[lo] && ends[i - 1] > e;
            const bool short_or_long = i + 1 == value_starts[lo + 1] && (u64)e != text_sizes[lo];
            if (descends || short_or_long || (u64)e > text_sizes[lo]) {
                ts_al_report(status, i, TS_AL_UTF8_END);
            } else {
                const u64 at = data_starts[lo] + e;
                const bool cut_end = at < text_end && ts_al_continuation(text[at]);
                const bool cut_start = i == value_starts[lo] && data_starts[lo] < text_end &&
                                       ts_al_continuation(text[data_starts[lo]]);
                if (cut_end || cut_start) ts_al_report(status, value_starts[lo], TS_AL_UTF8_TEXT);
            }
        }
        if (i < text_end && !ts_al_utf8_byte_ok(text, text_end, i)) {
            // The chunk whose text holds byte i: the last with data_starts[k] <= i and text.
            u32 k = ts_al_chunk_of(data_starts, chunks, i);
            while (k > 0 && text_sizes[k] == 0) --k;
            ts_al_report(status, value_starts[k], TS_AL_UTF8_TEXT);
        }
    }
}

// Dictionary codes of many fields checked by one launch: field f is fields[f] (blockIdx.y picks
// it, the x blocks stride over its rows) and reports in its own status word status[f]. A row is
// valid when the field has no validity bitmap or the row's bit (least significant first) is
// set; a valid row's code (`width` bytes, two's complement when `is_signed`) must be at least 0
// and below `dict_count` (TS_AL_DICT_CODE at the row), what Arrow's dictionary arrays promise the
// readers that index the dictionary with them. Lengths are the live buffers': codes_len in
// codes, validity_len in bytes.
struct TsAlCodes {
    const void* codes;
    u64 codes_len;
    const unsigned char* validity;
    u64 validity_len;
    u64 rows;
    u64 dict_count;
    u64 width;
    u64 is_signed;
};

template <typename U, typename S>
__device__ void ts_al_check_codes(const TsAlCodes& f, u64* status) {
    const U* codes = (const U*)f.codes;
    for (u64 i = ts_al_thread(); i < f.rows; i += ts_al_stride()) {
        if (f.validity != nullptr && !((f.validity[i / 8] >> (i % 8)) & 1)) continue;
        const U c = codes[i];
        const bool negative = f.is_signed && (S)c < 0;
        if (negative || (u64)c >= f.dict_count) ts_al_report(status, i, TS_AL_DICT_CODE);
    }
}

extern "C" __global__ void __launch_bounds__(TS_AL_THREADS)
    ts_arrow_check_codes_many(const TsAlCodes* __restrict__ fields, u32 count, u64* status) {
    if (blockIdx.y >= count) return;
    const TsAlCodes f = fields[blockIdx.y];
    u64* st = status + blockIdx.y;
    if (f.rows > f.codes_len || (f.validity != nullptr && (f.rows + 7) / 8 > f.validity_len)) {
        if (ts_al_thread() == 0) ts_al_report(st, 0, TS_AL_SIZE);
        return;
    }
    switch (f.width) {
        case 1: ts_al_check_codes<unsigned char, signed char>(f, st); break;
        case 2: ts_al_check_codes<u16, short>(f, st); break;
        case 4: ts_al_check_codes<u32, int>(f, st); break;
        case 8: ts_al_check_codes<u64, long long>(f, st); break;
        default: if (ts_al_thread() == 0) ts_al_report(st, 0, TS_AL_SIZE);
    }
}

// Binary lengths of many fields summed by one launch: field f is fields[f] (blockIdx.y picks it,
// the x blocks stride over its rows); its `rows` u32 lengths must not sum past `bytes`, the
// values the field's bytes column holds (TS_AL_LENGTHS in the field's own status word). Each
// block adds its part to sums[f] and counts itself in arrived[f] (both zeroed by the host); the
// block that arrives last compares the total.
struct TsAlLengths {
    const u32* lengths;
    u64 lengths_len;
    u64 rows;
    u64 bytes;
};

extern "C" __global__ void __launch_bounds__(TS_AL_THREADS)
    ts_arrow_check_lengths_many(const TsAlLengths* __restrict__ fields, u32 count, u64* sums, u32* arrived,
                                u64* status) {
    __shared__ u64 warp_sums[TS_AL_THREADS / 32];
    if (blockIdx.y >= count) return;
    const TsAlLengths f = fields[blockIdx.y];
    u64* st = status + blockIdx.y;
    if (f.rows > f.lengths_len) {
        if (ts_al_thread() == 0) ts_al_report(st, 0, TS_AL_SIZE);
        return;
    }
    u64 local = 0;
    for (u64 i = ts_al_thread(); i < f.rows; i += ts_al_stride()) local += f.lengths[i];
    for (int d = 16; d > 0; d /= 2) local += __shfl_down_sync(0xffffffffu, local, d);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = local;
    __syncthreads();
    if (threadIdx.x == 0) {
        u64 block = 0;
        for (int w = 0; w < TS_AL_THREADS / 32; ++w) block += warp_sums[w];
        atomicAdd((unsigned long long*)&sums[blockIdx.y], (unsigned long long)block);
        __threadfence();
        if (atomicAdd(&arrived[blockIdx.y], 1u) == gridDim.x - 1) {
            const u64 total = atomicAdd((unsigned long long*)&sums[blockIdx.y], 0ull);
            if (total > f.bytes) ts_al_report(st, 0, TS_AL_LENGTHS);
        }
    }
}

// Byte ranges of decoded batches copied into buffers of their own, many in one launch: part p
// (blockIdx.y; the x blocks stride over its bytes) copies `len` bytes of `src` from byte `at`
// to the start of `dst`. The host lays the table out (one row of TsAlCopy a part, `count`
// rows) with each buffer's live length; a part whose range does not fit them copies nothing and
// is reported at its index (TS_AL_SIZE). Aligned parts move 16, 8 or 4 bytes a thread.
struct TsAlCopy {
    const unsigned char* src;
    u64 src_len;
    u64 at;
    unsigned char* dst;
    u64 dst_len;
    u64 len;
};

extern "C" __global__ void __launch_bounds__(TS_AL_THREADS)
    ts_arrow_copy_parts(const TsAlCopy* __restrict__ parts, u32 count, u64* status) {
    if (blockIdx.y >= count) return;
    const TsAlCopy p = parts[blockIdx.y];
    if (p.at > p.src_len || p.len > p.src_len - p.at || p.len > p.dst_len) {
        if (ts_al_thread() == 0) ts_al_report(status, blockIdx.y, TS_AL_SIZE);
        return;
    }
    ts_copy_aligned(p.src + p.at, p.dst, p.len, ts_al_thread(), ts_al_stride());
}
