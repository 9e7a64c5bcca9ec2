// ssb.cu: the star-join operators of ops.cuh composed by hand into two kernels, so that every
// operator is compiled by the NVRTC test in CI and exercised by the GPU tests: a hash build over
// one key column and one payload column behind a range filter, and a probe-and-aggregate over
// one fact filter, one join and a grouped sum. The SSB queries themselves are emitted per query
// from the same operators (src/ssb/codegen.rs).
#include "ops.cuh"

extern "C" __global__ void SSB_BOUNDS
    ssb_example_build(const u32* __restrict__ kw, const SsbChunk* __restrict__ kc, u64* __restrict__ ks,
                      const u32* __restrict__ pw, const SsbChunk* __restrict__ pc, u64* __restrict__ ps,
                      u32 tiles_per_chunk, u32 total_tiles, u32 lo, u32 hi, u64* __restrict__ ht, u32 bits,
                      u32 base, u32 card, u64* __restrict__ qs) {
    __shared__ SsbWarpStorage ssb_ws[SSB_WARPS];
    SsbWarpStorage* ssb_s = &ssb_ws[threadIdx.x >> 5];
    SSB_TILE_LOOP(total_tiles) {
        const u32 ci = tile / tiles_per_chunk, local = tile - ci * tiles_per_chunk;
        u32 pass = SsbTileRows(kc, ci, local);
        u32 key[SSB_ROWS], pay[SSB_ROWS];
        SsbLoad(pw, pc, ps, ci, local, pass, pay, ssb_s, qs);
        SsbFilter(pay, pass, [=](u32 x) { return x - lo <= hi - lo; });
        if (!SsbAny(pass)) continue;
        SsbLoad(kw, kc, ks, ci, local, pass, key, ssb_s, qs);
        SsbBuild(key, pay, pass, ht, bits, base, card, qs);
    }
}

extern "C" __global__ void SSB_BOUNDS
    ssb_example_probe(const u32* __restrict__ fw, const SsbChunk* __restrict__ fc, u64* __restrict__ fs,
                      const u32* __restrict__ jw, const SsbChunk* __restrict__ jc, u64* __restrict__ js,
                      const u32* __restrict__ aw, const SsbChunk* __restrict__ ac, u64* __restrict__ as,
                      u32 tiles_per_chunk, u32 total_tiles, u32 lo, u32 hi, const u64* __restrict__ ht, u32 bits,
                      unsigned long long* __restrict__ sums, unsigned long long* __restrict__ counts, u32 n_groups,
                      u64* __restrict__ qs) {
    __shared__ SsbWarpStorage ssb_ws[SSB_WARPS];
    SsbWarpStorage* ssb_s = &ssb_ws[threadIdx.x >> 5];
    SSB_TILE_LOOP(total_tiles) {
        const u32 ci = tile / tiles_per_chunk, local = tile - ci * tiles_per_chunk;
        u32 pass = SsbTileRows(fc, ci, local);
        u32 group[SSB_ROWS] = {}, v[SSB_ROWS];
        SsbLoad(fw, fc, fs, ci, local, pass, v, ssb_s, qs);
        SsbFilter(v, pass, [=](u32 x) { return x - lo <= hi - lo; });
        if (!SsbAny(pass)) continue;
        SsbLoad(jw, jc, js, ci, local, pass, v, ssb_s, qs);
        SsbProbe(v, pass, group, ht, bits, 1);
        if (!SsbAny(pass)) continue;
        SsbLoad(aw, ac, as, ci, local, pass, v, ssb_s, qs);
        SsbAggregate(pass, group, [&](u32 i) { return (long long)v[i]; }, sums, counts, n_groups, qs);
    }
}

// The groups a query reached, compacted out of its dense (sum, count) arrays: triples (group,
// sum, count) in any order, so the host reads back only those (q4.3's dense array has 1.75 M
// groups of which 800 are reached; reading it whole cost more than the query). `n_out` counts
// every reached group; a triple is written only below `capacity` (the host sizes `out` for
// every group, and reports a count past it as an error).
extern "C" __global__ void ssb_compact_groups(const unsigned long long* __restrict__ sums,
                                              const unsigned long long* __restrict__ counts, u32 n_groups,
                                              unsigned long long* __restrict__ out, u32 capacity,
                                              unsigned int* __restrict__ n_out) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long g = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; g < n_groups;
         g += stride) {
        const unsigned long long c = counts[g];
        if (c == 0) continue;
        const u32 at = atomicAdd(n_out, 1u);
        if (at < capacity) {
            out[3ull * at] = g;
            out[3ull * at + 1] = sums[g];
            out[3ull * at + 2] = c;
        }
    }
}

// Checks every FOR tile of a resident column once (SsbCheckFor), so that the query programs may
// load it as SSB_FOR_CHECKED (codegen::Loader::Upfront): a warp a tile, reports into the
// per-chunk status words as the query loaders would.
extern "C" __global__ void SSB_BOUNDS ssb_check_for(const u32* __restrict__ g, const SsbChunk* __restrict__ chunks,
                                                    u64* __restrict__ status, u32 tiles_per_chunk,
                                                    u32 total_tiles) {
    SSB_TILE_LOOP(total_tiles) {
        const u32 ci = tile / tiles_per_chunk, local = tile - ci * tiles_per_chunk;
        SsbCheckFor(g, chunks, status, ci, local);
    }
}
