// codag.cu: the CODAG module's kernels, one warp per chunk (warp_decoder.cuh). Each kernel takes
// the chunks' input bytes, their table (CodagChunk), the output buffer, and writes a status,
// an output length and the input bytes used per chunk.
#include "warp_decoder.cuh"
#include "orc.cuh"
#include "deflate.cuh"

#define CODAG_KERNEL(NAME, T, SHARED_DECL, BODY)                                                  \
    extern "C" __global__ void __launch_bounds__(CODAG_THREADS)                                   \
        NAME(const u8* in, const CodagChunk* chunks, u32 n, T* out, u32* status, u32* out_lens,    \
             u32* in_used) {                                                                       \
        __shared__ __align__(16) u8 rings[CODAG_WARPS][CODAG_RING_BYTES];                          \
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

CODAG_KERNEL(codag_orc_rle_v1, u64, , orc_rle_v1(inp, o, ch.param & 1))
CODAG_KERNEL(codag_orc_rle_v2, u64, , orc_rle_v2(inp, o, ch.param & 1))
CODAG_KERNEL(codag_orc_byte_rle, u8, , orc_byte_rle(inp, o))
CODAG_KERNEL(codag_deflate, u8, __shared__ DeflateTables tables[CODAG_WARPS];, deflate_stream(inp, o, tables[warp]))
