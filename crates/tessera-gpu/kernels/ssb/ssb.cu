// ssb.cu: the star-join operators of ops.cuh composed by hand into two kernels, so that every
// operator is compiled by the NVRTC test in CI and exercised by the GPU tests: a hash build over
// one key column and one payload column behind a range filter, and a probe-and-aggregate over
// one fact filter, one join and a grouped sum. The SSB queries themselves are emitted per query
// from the same operators (src/ssb/codegen.rs).
#include "ops.cuh"

extern "C" __global__ void __launch_bounds__(TS_THREADS)
    ssb_example_build(const u32* __restrict__ kw, const SsbChunk* __restrict__ kc, u64* __restrict__ ks,
                      const u32* __restrict__ pw, const SsbChunk* __restrict__ pc, u64* __restrict__ ps,
                      u32 tiles_per_chunk, u32 total_tiles, u32 lo, u32 hi, u64* __restrict__ ht, u32 bits,
                      u32 base, u32 card, u64* __restrict__ qs) {
    for (u32 tile = blockIdx.x; tile < total_tiles; tile += gridDim.x) {
        const u32 ci = tile / tiles_per_chunk, local = tile - ci * tiles_per_chunk;
        u32 flags[TS_ITEMS], group[TS_ITEMS], key[TS_ITEMS], pay[TS_ITEMS];
        SsbInit(SsbTileRows(kc, ci, local), flags, group);
        SsbLoad(pw, pc, ps, ci, local, pay, qs);
        SsbFilter(pay, flags, [=](u32 x) { return x - lo <= hi - lo; });
        if (!SsbAny(flags)) continue;
        SsbLoad(kw, kc, ks, ci, local, key, qs);
        SsbBuild(key, pay, flags, ht, bits, base, card, qs);
    }
}

extern "C" __global__ void __launch_bounds__(TS_THREADS)
    ssb_example_probe(const u32* __restrict__ fw, const SsbChunk* __restrict__ fc, u64* __restrict__ fs,
                      const u32* __restrict__ jw, const SsbChunk* __restrict__ jc, u64* __restrict__ js,
                      const u32* __restrict__ aw, const SsbChunk* __restrict__ ac, u64* __restrict__ as,
                      u32 tiles_per_chunk, u32 total_tiles, u32 lo, u32 hi, const u64* __restrict__ ht, u32 bits,
                      unsigned long long* __restrict__ sums, unsigned long long* __restrict__ counts, u32 n_groups,
                      u64* __restrict__ qs) {
    for (u32 tile = blockIdx.x; tile < total_tiles; tile += gridDim.x) {
        const u32 ci = tile / tiles_per_chunk, local = tile - ci * tiles_per_chunk;
        u32 flags[TS_ITEMS], group[TS_ITEMS], v[TS_ITEMS];
        SsbInit(SsbTileRows(fc, ci, local), flags, group);
        SsbLoad(fw, fc, fs, ci, local, v, qs);
        SsbFilter(v, flags, [=](u32 x) { return x - lo <= hi - lo; });
        if (!SsbAny(flags)) continue;
        SsbLoad(jw, jc, js, ci, local, v, qs);
        SsbProbe(v, flags, group, ht, bits, 1);
        if (!SsbAny(flags)) continue;
        SsbLoad(aw, ac, as, ci, local, v, qs);
        long long value[TS_ITEMS];
#pragma unroll
        for (u32 i = 0; i < TS_ITEMS; ++i) value[i] = v[i];
        SsbAggregate(flags, group, value, sums, counts, n_groups, qs);
    }
}
