// primitives.cu: the device-wide primitives as kernels of their own (host side:
// src/primitives/): the sum scans over arrays (scan.cuh, reduce-then-scan in three launches; the
// integer encoders' block offsets, the Huffman decoder's block offsets, the bitmap codec's
// partials passes), and the merge-path test kernel (merge.cuh).
#include "../include/common.cuh"
#include "scan.cuh"
#include "merge.cuh"

DS_SUM_SCAN_KERNELS(u32)
DS_SUM_SCAN_KERNELS(u64)

// ---- merge path test kernel -------------------------------------------------------------------
// Items each thread of the merge test kernel writes.
#define DS_MERGE_ITEMS 8

// Device-wide merge of two sorted u32 arrays (the primitive's test kernel): thread t writes
// merged items t*DS_MERGE_ITEMS .. +DS_MERGE_ITEMS-1 into out, and into from_b whether each came
// from b (1) or a (0).
extern "C" __global__ void __launch_bounds__(128) ds_merge_u32(const u32* __restrict__ a, u32 na, const u32* __restrict__ b,
                                                               u32 nb, u32* __restrict__ out, u32* __restrict__ from_b) {
    const u64 total = (u64)na + nb;
    const u64 d = ((u64)blockIdx.x * blockDim.x + threadIdx.x) * DS_MERGE_ITEMS;
    if (d >= total) return;
    u32 ia = ds_merge_path(a, na, b, nb, d);
    u32 ib = (u32)(d - ia);
    for (u32 k = 0; k < DS_MERGE_ITEMS && d + k < total; ++k) {
        const bool ta = ds_merge_takes_a(a, na, b, nb, ia, ib);
        out[d + k] = ta ? a[ia] : b[ib];
        from_b[d + k] = ta ? 0u : 1u;
        if (ta) ++ia; else ++ib;
    }
}

// ---- copy list --------------------------------------------------------------------------------
// Ranges one launch copies (TS_COPY_LIST_MAX), passed by value: no table to upload.
#define TS_COPY_LIST_MAX 32
#define TS_COPY_LIST_THREADS 256

struct TsCopyList {
    u64 dst[TS_COPY_LIST_MAX];
    u64 src[TS_COPY_LIST_MAX];
    u64 len[TS_COPY_LIST_MAX];
    u32 n;
};

// Copies range blockIdx.y of the list (blocks along x stride over it), at the widest word both
// its ends are aligned to: what many small device-to-device copies cost as one launch. The
// caller guarantees every range lies in live device memory (as for a device-to-device copy).
extern "C" __global__ void __launch_bounds__(TS_COPY_LIST_THREADS) ts_copy_list(TsCopyList list) {
    const u32 i = blockIdx.y;
    if (i >= list.n || i >= TS_COPY_LIST_MAX) return;
    ts_copy_aligned((const unsigned char*)list.src[i], (unsigned char*)list.dst[i], list.len[i],
                    (u64)blockIdx.x * blockDim.x + threadIdx.x, (u64)gridDim.x * blockDim.x);
}
