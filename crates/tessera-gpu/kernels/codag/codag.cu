// codag.cu: the CODAG module's kernels, one warp per chunk (warp_decoder.cuh). Each kernel takes
// the chunks' input bytes, their table (CodagChunk), the output buffer, and writes a status,
// an output length and the input bytes used per chunk.
#include "warp_decoder.cuh"
#include "orc.cuh"
#include "deflate.cuh"

// BOUNDS: __launch_bounds__'s arguments. The one-argument form (CODAG_THREADS) for the kernels
// that need no minimum: `(CODAG_THREADS, 1)` raised the batch loop's registers from 64 to 72.
#define CODAG_KERNEL_BOUNDS(NAME, T, BOUNDS, SHARED_DECL, BODY)                                  \
    extern "C" __global__ void __launch_bounds__ BOUNDS                                           \
        NAME(const u8* in, const CodagChunk* chunks, u32 n, T* out, u32* status, u32* out_lens,    \
             u32* in_used) {                                                                       \
        __shared__ __align__(16) u8 rings[CODAG_WARPS][CODAG_RING_ALLOC];                          \
        SHARED_DECL                                                                                \
        u32 warp = threadIdx.x >> 5;                                                               \
        for (u32 c = blockIdx.x * CODAG_WARPS + warp; c < n; c += gridDim.x * CODAG_WARPS) {       \
            CodagChunk ch = chunks[c];                                                             \
            /* A chunk may start at any byte (slices of a device buffer): read from the word */   \
            /* below it and start `skew` bytes in; the host checks that the words lie inside. */  \
            u32 skew = (u32)(ch.in_start & 3);                                                     \
            CodagInput inp;                                                                        \
            codag_input_init(inp, in + (ch.in_start - skew), ch.in_len + skew, rings[warp]);       \
            inp.bit = (u64)skew * 8;                                                               \
            CodagOutput<T> o;                                                                      \
            o.base = out + ch.out_start;                                                           \
            o.cap = ch.out_cap;                                                                    \
            o.pos = 0;                                                                             \
            u32 st = BODY;                                                                         \
            codag_report(c, st, o.pos, (u32)((inp.bit + 7) >> 3) - skew, status, out_lens, in_used); \
            __syncwarp();                                                                          \
        }                                                                                          \
    }

#define CODAG_KERNEL(NAME, T, SHARED_DECL, BODY) CODAG_KERNEL_BOUNDS(NAME, T, (CODAG_THREADS), SHARED_DECL, BODY)

CODAG_KERNEL(codag_orc_rle_v1, u64, , orc_rle_v1(inp, o, ch.param & 1))
CODAG_KERNEL(codag_orc_rle_v2, u64, , orc_rle_v2(inp, o, ch.param & 1))
CODAG_KERNEL(codag_orc_byte_rle, u8, , orc_byte_rle(inp, o))
// The speculative block loop (deflate_block_spec; docs/gpu/codag.md, "Speculative lookups by
// the idle lanes"; decision 0039): every lane looks up the symbol at its own bit offset, the warp
// follows the chain of symbol starts by shuffles, up to two literal lookups a step. A block whose
// code expects lengths for at least half its symbols takes fused matches (DEFLATE_V_FUSE): every
// lane also decodes the distance after a length at its offset, so a match is one shuffle pair
// and no round between its length and distance ("Fused matches"; decision 0047), and its copies
// keep two pending sets (DEFLATE_V_PEND2), so a copy's loaded bytes are stored one match later
// ("Two pending sets"; decision 0048). Held to 64 registers (8 blocks of 4 warps an SM): left to
// itself ptxas takes 72, 7 blocks.
CODAG_KERNEL_BOUNDS(codag_deflate, u8, (CODAG_THREADS, 8), __shared__ DeflateTables tables[CODAG_WARPS];,
                    (deflate_stream<u8, false, true, DeflateTables, true,
                                    DEFLATE_V_AUTO | DEFLATE_V_FUSE | DEFLATE_V_LEAN | DEFLATE_V_MIRROR |
                                        DEFLATE_V_PEND2>(inp, o, tables[warp], nullptr)))
// Measured against the default (TESSERA_CODAG_DEFLATE_KERNEL): the default before, with one
// pending set (`codag_deflate_f1`), fused matches on every block (`codag_deflate_fused`), and the
// speculative loop without them (`codag_deflate_spec`).
CODAG_KERNEL(codag_deflate_f1, u8, __shared__ DeflateTables tables[CODAG_WARPS];,
             (deflate_stream<u8, false, true, DeflateTables, true,
                             DEFLATE_V_AUTO | DEFLATE_V_FUSE | DEFLATE_V_LEAN | DEFLATE_V_MIRROR>(
                 inp, o, tables[warp], nullptr)))
CODAG_KERNEL(codag_deflate_fused, u8, __shared__ DeflateTables tables[CODAG_WARPS];,
             (deflate_stream<u8, false, true, DeflateTables, true, DEFLATE_V_FUSE | DEFLATE_V_LEAN | DEFLATE_V_MIRROR>(
                 inp, o, tables[warp], nullptr)))
CODAG_KERNEL(codag_deflate_spec, u8, __shared__ DeflateTables tables[CODAG_WARPS];,
             (deflate_stream<u8, false, true, DeflateTables, true>(inp, o, tables[warp], nullptr)))
// The batch loop (deflate_block_fast), the default before the speculative loop: kept to measure
// against (TESSERA_CODAG_DEFLATE_KERNEL=codag_deflate_batch, src/codag/mod.rs).
CODAG_KERNEL(codag_deflate_batch, u8, __shared__ DeflateTables tables[CODAG_WARPS];,
             (deflate_stream<u8, false, true>(inp, o, tables[warp], nullptr)))
// The occupancy variant (docs/gpu/codag.md, "Warps per SM"; decision 0034): the batch loop on
// the lean tables (DeflateTablesLean: 17.3 KiB of shared memory a block instead of 26.2), the
// registers capped at 48 so that 10 blocks of 4 warps fit an SM instead of 8. Against the batch
// loop full batches gain about as much as the noise while a lone warp loses more (its walks and
// spills are on the latency path); the speculative loop gained nothing from 40 warps (decision
// 0039). Selectable for measurements.
CODAG_KERNEL_BOUNDS(codag_deflate_w40, u8, (CODAG_THREADS, 10), __shared__ DeflateTablesLean tables[CODAG_WARPS];,
                    (deflate_stream<u8, false, true, DeflateTablesLean>(inp, o, tables[warp], nullptr)))
// The batch decoder with the span path's block loop (deflate_block), kept to measure the
// batch loop against (TESSERA_CODAG_DEFLATE_KERNEL=codag_deflate_ref, src/codag/mod.rs).
CODAG_KERNEL(codag_deflate_ref, u8, __shared__ DeflateTables tables[CODAG_WARPS];, (deflate_stream<u8, false>(inp, o, tables[warp], nullptr)))

// One large Deflate stream cut into spans (docs/gpu/codag.md, "A single large gzip file on the
// GPU"): chunk c is span c, decoded from its block candidate starts[c] (the chunk's in_start is
// the candidate's byte, `param` its bit in that byte, reserved bit 0: markers allowed) into 16-bit
// symbols until a block boundary equals a later candidate or the final block ends. Reports per
// span: status, symbols written, the absolute bit where it stopped and the candidate index it
// stopped at (n at the stream's end).
extern "C" __global__ void __launch_bounds__(CODAG_THREADS)
    codag_deflate_spans(const u8* in, const CodagChunk* chunks, u32 n, const u64* starts, u16* out, u32* status,
                        u32* out_lens, u64* end_bits, u32* next) {
    __shared__ __align__(16) u8 rings[CODAG_WARPS][CODAG_RING_ALLOC];
    __shared__ DeflateTables tables[CODAG_WARPS];
    u32 warp = threadIdx.x >> 5;
    for (u32 c = blockIdx.x * CODAG_WARPS + warp; c < n; c += gridDim.x * CODAG_WARPS) {
        CodagChunk ch = chunks[c];
        u32 skew = (u32)(ch.in_start & 3);
        CodagInput inp;
        codag_input_init(inp, in + (ch.in_start - skew), ch.in_len + skew, rings[warp]);
        inp.bit = (u64)skew * 8 + (ch.param & 7);
        CodagOutput<u16> o;
        o.base = out + ch.out_start;
        o.cap = ch.out_cap;
        o.pos = 0;
        DeflateSpan sp;
        sp.starts = starts;
        sp.n_starts = n;
        sp.next = c + 1;
        sp.bit0 = (ch.in_start - skew) * 8;
        sp.window = (ch.reserved & 1) != 0;
        u32 st = deflate_stream<u16, true>(inp, o, tables[warp], &sp);
        if (codag_lane() == 0) {
            status[c] = st;
            out_lens[c] = o.pos;
            end_bits[c] = sp.bit0 + inp.bit;
            next[c] = sp.next;
        }
        __syncwarp();
    }
}

// The window before every span of the chain, in order: window i + 1 (the last 32 KiB of the
// output before span i + 1) is the end of window i followed by span i's last symbols, each
// marker replaced from window i. One thread block walks the chain; each step depends only on the
// one before and the span's own symbols. Window i's byte j is the byte DEFLATE_WINDOW - j before
// span i; span_out[i] (output bytes before span i) says how many of those exist. A marker naming
// a byte before the stream, or a range outside the buffers, sets *err.
__device__ __forceinline__ u8 deflate_resolve(u16 s, const u8* win, u64 before, u32* err) {
    if (s < DEFLATE_MARKER) return (u8)s;
    u32 m = s & (DEFLATE_MARKER - 1);
    if ((u64)(DEFLATE_WINDOW - m) > before) {
        atomicOr(err, 1u);
        return 0;
    }
    return win[m];
}

extern "C" __global__ void __launch_bounds__(1024)
    codag_span_windows(const u16* sym, u64 sym_len, const u64* sym_at, const u32* lens, const u64* span_out,
                       u32 n_chain, u8* windows, u64 windows_len, u32* err) {
    if ((u64)n_chain * DEFLATE_WINDOW > windows_len) {
        if (threadIdx.x == 0) atomicOr(err, 2u);
        return;
    }
    for (u32 j = threadIdx.x; j < DEFLATE_WINDOW; j += blockDim.x) windows[j] = 0;
    __syncthreads();
    for (u32 i = 0; i + 1 < n_chain; i++) {
        const u8* prev = windows + (u64)i * DEFLATE_WINDOW;
        u8* nxt = windows + (u64)(i + 1) * DEFLATE_WINDOW;
        u32 len = lens[i];
        u64 at = sym_at[i], before = span_out[i];
        if (at + len > sym_len || at + len < at) {
            if (threadIdx.x == 0) atomicOr(err, 2u);
            return;
        }
        u32 tail = len < DEFLATE_WINDOW ? len : DEFLATE_WINDOW;
#pragma unroll 4
        for (u32 j = threadIdx.x; j < DEFLATE_WINDOW; j += blockDim.x) {
            nxt[j] = j >= DEFLATE_WINDOW - tail ? deflate_resolve(sym[at + len - (DEFLATE_WINDOW - j)], prev, before, err)
                                                : prev[j + len];
        }
        __syncthreads();
    }
}

// Every span's symbols into bytes at once, markers from the span's window: a thread block per
// span (grid-striding over the chain), its threads striding over the span.
extern "C" __global__ void __launch_bounds__(1024)
    codag_span_resolve(const u16* sym, u64 sym_len, const u64* sym_at, const u32* lens, const u64* span_out,
                       u32 n_chain, const u8* windows, u64 windows_len, u8* out, u64 out_len, u32* err) {
    for (u32 i = blockIdx.x; i < n_chain; i += gridDim.x) {
        u32 len = lens[i];
        u64 at = sym_at[i], o = span_out[i];
        if (at + len > sym_len || at + len < at || o + len > out_len || o + len < o ||
            (u64)(i + 1) * DEFLATE_WINDOW > windows_len) {
            if (threadIdx.x == 0) atomicOr(err, 2u);
            continue;
        }
        const u8* win = windows + (u64)i * DEFLATE_WINDOW;
        for (u32 j = threadIdx.x; j < len; j += blockDim.x) out[o + j] = deflate_resolve(sym[at + j], win, o, err);
    }
}
