// jobs.cu: several integer decodes in one launch (`int_decode_jobs`).
//
// A small table's read queues one decode a codec and logical type (FOR u32, RFOR u32, DFOR u64,
// ...), each over a few slabs: the launches, not the work, set its time. A job is one such
// decode (the arguments `<codec>_decode_<out>` takes) with its share of the grid: blocks
// [first_block[j], first_block[j + 1]) of this launch run job j's loop as if they were that
// kernel's whole grid, with the same checks and status words. The job is the same for every
// thread of a block, so the switch below never diverges inside a block. Shared storage is one
// union: a block runs one job.
#include "../include/common.cuh"
#include "decode_for_column.cuh"
#include "decode_rfor_column.cuh"

#define TS_INT_JOBS_MAX 16

// Job kinds: codec * 4 + output width index (0: 1 byte, 1: 2, 2: 4, 3: 8).
#define TS_JOB_FOR 0
#define TS_JOB_DFOR 4
#define TS_JOB_RFOR 8

// Passed by value (the host's `IntJobs`, int/jobs.rs): field for field, same order.
struct TsIntJobs {
    u64 words[TS_INT_JOBS_MAX];
    u64 chunks[TS_INT_JOBS_MAX];
    u64 out[TS_INT_JOBS_MAX];
    u64 status[TS_INT_JOBS_MAX];
    u64 flip[TS_INT_JOBS_MAX];
    u32 n_chunks[TS_INT_JOBS_MAX];
    u32 total_slabs[TS_INT_JOBS_MAX];
    u32 first_block[TS_INT_JOBS_MAX + 1];  // first_block[n] = the grid's blocks
    u32 kind[TS_INT_JOBS_MAX];
    u32 n;
};

union TsIntJobStorage {
    ForSlabStorage<32, TS_FOR_SLAB_L32> for32;
    ForSlabStorage<64, TS_FOR_SLAB_L64> for64;
    RforWarpStorage<32> rfor32[TS_THREADS / 32];
    RforWarpStorage<64> rfor64[TS_THREADS / 32];
};

extern "C" __global__ void TS_RFOR_BOUNDS int_decode_jobs(const TsIntJobs jobs) {
    __shared__ TsIntJobStorage s;
    const u32 n = jobs.n < TS_INT_JOBS_MAX ? jobs.n : TS_INT_JOBS_MAX;
    u32 j = 0;
    for (u32 i = 1; i < n; ++i)
        if (blockIdx.x >= jobs.first_block[i]) j = i;
    if (n == 0 || blockIdx.x < jobs.first_block[j] || blockIdx.x >= jobs.first_block[j + 1]) return;
    const u32 block = blockIdx.x - jobs.first_block[j];
    const u32 blocks = jobs.first_block[j + 1] - jobs.first_block[j];
    const u32* g = (const u32*)jobs.words[j];
    const ChunkDesc* c = (const ChunkDesc*)jobs.chunks[j];
    const u32 nc = jobs.n_chunks[j], ts = jobs.total_slabs[j];
    u8* out = (u8*)jobs.out[j];
    const u64 flip = jobs.flip[j];
    u64* st = (u64*)jobs.status[j];
    switch (jobs.kind[j]) {
    case TS_JOB_FOR + 0: ts_decode_for_column_in<32, 1, TS_FOR_SLAB_L32, false>(g, c, nc, ts, out, flip, st, s.for32, block, blocks); break;
    case TS_JOB_FOR + 1: ts_decode_for_column_in<32, 2, TS_FOR_SLAB_L32, false>(g, c, nc, ts, out, flip, st, s.for32, block, blocks); break;
    case TS_JOB_FOR + 2: ts_decode_for_column_in<32, 4, TS_FOR_SLAB_L32, false>(g, c, nc, ts, out, flip, st, s.for32, block, blocks); break;
    case TS_JOB_FOR + 3: ts_decode_for_column_in<64, 8, TS_FOR_SLAB_L64, false>(g, c, nc, ts, out, flip, st, s.for64, block, blocks); break;
    case TS_JOB_DFOR + 0: ts_decode_for_column_in<32, 1, TS_FOR_SLAB_L32, true>(g, c, nc, ts, out, flip, st, s.for32, block, blocks); break;
    case TS_JOB_DFOR + 1: ts_decode_for_column_in<32, 2, TS_FOR_SLAB_L32, true>(g, c, nc, ts, out, flip, st, s.for32, block, blocks); break;
    case TS_JOB_DFOR + 2: ts_decode_for_column_in<32, 4, TS_FOR_SLAB_L32, true>(g, c, nc, ts, out, flip, st, s.for32, block, blocks); break;
    case TS_JOB_DFOR + 3: ts_decode_for_column_in<64, 8, TS_FOR_SLAB_L64, true>(g, c, nc, ts, out, flip, st, s.for64, block, blocks); break;
    case TS_JOB_RFOR + 0: rfor_decode_in<32, 1>(g, c, nc, ts, out, flip, st, s.rfor32, block, blocks); break;
    case TS_JOB_RFOR + 1: rfor_decode_in<32, 2>(g, c, nc, ts, out, flip, st, s.rfor32, block, blocks); break;
    case TS_JOB_RFOR + 2: rfor_decode_in<32, 4>(g, c, nc, ts, out, flip, st, s.rfor32, block, blocks); break;
    case TS_JOB_RFOR + 3: rfor_decode_in<64, 8>(g, c, nc, ts, out, flip, st, s.rfor64, block, blocks); break;
    default: break;  // the host never sends another kind
    }
}
