// convert.cuh (part of bitmap.cu): Algorithm 6, a valid stream re-encoded canonically in the
// other flavor through the canonical writer.
#ifndef TESSERA_BITMAP_CONVERT_CUH
#define TESSERA_BITMAP_CONVERT_CUH
#include "../include/common.cuh"
#include "wah.cuh"
#include "writer.cuh"

// Conversion: the slots of a valid stream of flavor IN rewritten canonically in flavor OUT.
#define BM_CONVERT_KERNELS(NAME, IN, OUT)                                                                          \
    extern "C" __global__ void __launch_bounds__(BM_WRITER_THREADS)                                                \
        bm_convert_reduce_##NAME(const u32* __restrict__ words, u64 n_slots, BmAgg* __restrict__ partials) {       \
        BmSlotsSrc<IN> src{words, n_slots, 0};                                                                     \
        bm_writer_reduce<OUT>(src, partials);                                                                      \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(BM_WRITER_THREADS)                                                \
        bm_convert_apply_##NAME(const u32* __restrict__ words, u64 n_slots, const BmAgg* __restrict__ partials,    \
                                u32 max_counter, u32 mode, u32* __restrict__ out, u32* __restrict__ ex_out,        \
                                u32* __restrict__ flags) {                                                         \
        BmSlotsSrc<IN> src{words, n_slots, 0};                                                                     \
        bm_writer_apply<OUT>(src, partials, max_counter, mode, out, ex_out, flags);                                \
    }
BM_CONVERT_KERNELS(plwah_to_wah, true, false)
BM_CONVERT_KERNELS(wah_to_plwah, false, true)

#endif
