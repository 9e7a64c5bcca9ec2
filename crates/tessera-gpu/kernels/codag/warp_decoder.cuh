// warp_decoder.cuh: the CODAG warp-per-chunk decoding framework (Park et al., "CODAG:
// Characterizing and Optimizing Decompression Algorithms for GPUs"); docs/gpu/codag.md.
//
// One warp decodes one compressed chunk; a thread block holds CODAG_WARPS independent warps, so
// many chunks are in flight per SM and the schedulers hide each warp's latencies with the
// others'. All 32 lanes run the same sequential decoder on the same bytes (no leader lane, no
// broadcast): every lane holds the decoder's state in its own registers, identical across the
// warp, so control flow stays warp-uniform. The lanes split only the memory work:
// - input: coalesced on-demand reads of 128-byte lines (one 4-byte word a lane) into a 512-byte
//   ring per warp in shared memory (`CodagInput`); a decoder asks for the bytes it is about to
//   read (`codag_fill`), reads them from the ring (same address for every lane: a broadcast);
// - output: `CodagOutput<T>` with write_one, write_run(init, len, delta), write_lanes (one value
//   a lane) and memcpy(dist, len), the last one also for overlapping copies (dist < len).
//
// Hostile input: every read is checked against the chunk's input length (a read past it is
// CODAG_ST_TRUNCATED) and every write against the chunk's output capacity (past it is
// CODAG_ST_OUTPUT_OVERFLOW); ring reads past the chunk return 0 and never leave the ring. Global
// loads stay inside the chunk's words: a chunk starts at any byte of the input buffer, the kernel
// reads from the 4-byte word that holds its first byte (the framework then starts `skew` bytes
// into that word), and the host checks that every word from there to the word holding the
// chunk's last byte lies inside the buffer. A decoder reports one status per chunk.
#ifndef TESSERA_CODAG_WARP_DECODER_CUH
#define TESSERA_CODAG_WARP_DECODER_CUH

#include "../include/common.cuh"

#define CODAG_WARPS 4
#define CODAG_THREADS (CODAG_WARPS * 32)
#define CODAG_RING_BYTES 512
#define CODAG_LINE_BYTES 128
// Most bytes past the read position a decoder may ask for at once: what the ring can hold
// while a new line is loaded without overwriting unread bytes.
#define CODAG_MAX_FILL (CODAG_RING_BYTES - CODAG_LINE_BYTES)
// The ring's first four words are repeated after its end (written with them), so a read of up to
// four consecutive words from any ring word needs no wrap of its index.
#define CODAG_RING_MIRROR 16
// A warp's ring allocation.
#define CODAG_RING_ALLOC (CODAG_RING_BYTES + CODAG_RING_MIRROR)

// Per-chunk status codes; src/codag/mod.rs names them (STATUS_NAMES) and re-runs the CPU
// decoder on a flagged chunk for its exact error.
#define CODAG_ST_OK 0
#define CODAG_ST_TRUNCATED 1
#define CODAG_ST_OUTPUT_OVERFLOW 2
#define CODAG_ST_BAD_HEADER 3
#define CODAG_ST_BAD_VARINT 4
#define CODAG_ST_BAD_PATCH 5
#define CODAG_ST_BAD_BLOCK_TYPE 6
#define CODAG_ST_STORED_LEN 7
#define CODAG_ST_BAD_TABLE 8
#define CODAG_ST_BAD_CODE 9
#define CODAG_ST_BAD_DISTANCE 10

// One chunk (struct ChunkDesc in src/codag/mod.rs, 32 bytes).
struct CodagChunk {
    u64 in_start;   // first byte in the input buffer (any byte; the words around it are read)
    u64 out_start;  // first output element
    u32 in_len;     // input bytes
    u32 out_cap;    // output elements the chunk may write (ORC: exactly this many)
    u32 param;      // decoder-specific (ORC integers: bit 0 = signed)
    u32 reserved;
};

__device__ __forceinline__ u32 codag_lane() { return threadIdx.x & 31; }

struct CodagInput {
    const u32* words;  // the chunk's first word
    u8* ring;          // this warp's CODAG_RING_BYTES of shared memory
    u64 bit;           // bits consumed
    u32 len;           // input bytes
    u32 fetched;       // bytes loaded into the ring so far (a multiple of the line size)
};

__device__ __forceinline__ void codag_input_init(CodagInput& in, const u8* base, u32 len, u8* ring) {
    in.words = reinterpret_cast<const u32*>(base);
    in.ring = ring;
    in.bit = 0;
    in.len = len;
    in.fetched = 0;
}

__device__ __forceinline__ u32 codag_pos(const CodagInput& in) { return (u32)(in.bit >> 3); }

// Loads the ring line at in.fetched, a lane a word (and the mirror words with the ring's first
// line); words past the chunk's end are loaded as zeros (never read from global memory), so a
// decoder that peeks past the end sees defined bits.
__device__ __forceinline__ void codag_load_line(CodagInput& in) {
    __syncwarp();  // every lane is done with the bytes this line replaces
    const u32 lane = codag_lane();
    u32 w = (in.fetched >> 2) + lane;
    u32 v = w < ((in.len + 3) >> 2) ? in.words[w] : 0u;
    u32 at = in.fetched % CODAG_RING_BYTES;
    u32* ring = reinterpret_cast<u32*>(in.ring);
    ring[(at >> 2) + lane] = v;
    if (at == 0 && lane < CODAG_RING_MIRROR / 4) ring[CODAG_RING_BYTES / 4 + lane] = v;
    __syncwarp();
    in.fetched += CODAG_LINE_BYTES;
}

// Loads ring lines until the bytes before `end` are in the ring. The caller asks for at most
// CODAG_MAX_FILL bytes past the read position.
__device__ __forceinline__ void codag_load(CodagInput& in, u32 end) {
    u32 cur = codag_pos(in);
    if (in.fetched + CODAG_LINE_BYTES <= cur) in.fetched = cur & ~(CODAG_LINE_BYTES - 1);
    while (in.fetched < end) codag_load_line(in);
}

// Makes the input bytes before `end` readable from the ring; false (nothing loaded) when `end`
// is past the chunk.
__device__ __forceinline__ bool codag_fill(CodagInput& in, u32 end) {
    if (end > in.len) return false;
    codag_load(in, end);
    return true;
}

// The byte at input position `p` (filled before), 0 past the chunk's end.
__device__ __forceinline__ u32 codag_at(const CodagInput& in, u32 p) {
    return p < in.len ? in.ring[p % CODAG_RING_BYTES] : 0u;
}

// Next whole byte (the decoders that call it are byte aligned).
__device__ __forceinline__ bool codag_byte(CodagInput& in, u32& v) {
    u32 p = codag_pos(in);
    if (!codag_fill(in, p + 1)) return false;
    v = codag_at(in, p);
    in.bit += 8;
    return true;
}

// A base-128 varint of at most 10 bytes whose bits fit 64; st says why not.
__device__ __forceinline__ bool codag_varint(CodagInput& in, u64& v, u32& st) {
    v = 0;
    for (u32 i = 0; i < 10; i++) {
        u32 b;
        if (!codag_byte(in, b)) { st = CODAG_ST_TRUNCATED; return false; }
        u64 bits = b & 0x7f;
        if (i == 9 && bits > 1) { st = CODAG_ST_BAD_VARINT; return false; }
        v |= bits << (7 * i);
        if (!(b & 0x80)) return true;
    }
    st = CODAG_ST_BAD_VARINT;
    return false;
}

// `w` (1..64) bits at absolute bit `bit`, most significant first (ORC's bit packing); the bytes
// must be filled.
__device__ __forceinline__ u64 codag_bits_msb(const CodagInput& in, u64 bit, u32 w) {
    u32 p = (u32)(bit >> 3), sh = (u32)(bit & 7);
    u64 hi = 0;
#pragma unroll
    for (u32 i = 0; i < 8; i++) hi = (hi << 8) | codag_at(in, p + i);
    u64 v = hi << sh;
    if (sh) v |= (u64)codag_at(in, p + 8) >> (8 - sh);
    return w >= 64 ? v : v >> (64 - w);
}

// 64 bits from the read position, least significant first (Deflate's order), zeros past the
// chunk's end: three aligned ring words and a funnel shift (the bytes of the last word past the
// chunk are the layout's zero padding). Consuming past the end is the caller's check.
__device__ __forceinline__ u64 codag_peek64(CodagInput& in) {
    u32 wb = (u32)(in.bit >> 5) << 2;
    codag_load(in, wb + 12);
    const u32* r = reinterpret_cast<const u32*>(in.ring);
    u32 wi = (wb % CODAG_RING_BYTES) >> 2, m = CODAG_RING_BYTES / 4 - 1;
    u32 w0 = r[wi], w1 = r[(wi + 1) & m], w2 = r[(wi + 2) & m];
    u32 s = (u32)in.bit & 31;
    u64 v = ((u64)w1 << 32 | w0) >> s;
    if (s) v |= (u64)w2 << (64 - s);
    return v;
}

// The chunk's output: `cap` elements of T from `base`; `pos` is uniform across the warp.
template <typename T>
struct CodagOutput {
    T* base;
    u32 cap;
    u32 pos;

    __device__ __forceinline__ bool room(u32 n) const { return n <= cap - pos; }

    // One value, written by lane 0.
    __device__ __forceinline__ bool write_one(T v) {
        if (!room(1)) return false;
        if (codag_lane() == 0) base[pos] = v;
        pos += 1;
        return true;
    }

    // init, init + delta, ... (len values), lanes striding: consecutive lanes, consecutive
    // addresses.
    __device__ __forceinline__ bool write_run(T init, u32 len, T delta) {
        if (!room(len)) return false;
        for (u32 i = codag_lane(); i < len; i += 32) base[pos + i] = (T)(init + (T)i * delta);
        pos += len;
        return true;
    }

    // Lane l < n writes its own `v` at pos + l (values each lane decoded itself).
    __device__ __forceinline__ bool write_lanes(u32 n, T v) {
        if (!room(n)) return false;
        if (codag_lane() < n) base[pos + codag_lane()] = v;
        pos += n;
        return true;
    }

    // Copies `len` elements from `dist` back in this chunk's output. When dist < len the
    // source overlaps what is being written; the result is the last `dist` elements repeated,
    // so element i comes from pos - dist + i % dist, which is already written: every lane
    // independent. A distance of at most 32 (runs, short repeats) reads those elements once,
    // one a lane, and every pass takes them from the lanes (no further loads, no division past
    // the first).
    __device__ __forceinline__ bool memcpy(u32 dist, u32 len) {
        if (dist == 0 || dist > pos || !room(len)) return false;
        __syncwarp();  // earlier writes of other lanes are visible
        const T* src = base + (pos - dist);
        T* dst = base + pos;
        u32 lane = codag_lane();
        if (dist >= len) {
            for (u32 i = lane; i < len; i += 32) dst[i] = src[i];
        } else if (dist <= 32) {
            T v = lane < dist ? src[lane] : (T)0;
            u32 r = lane % dist, step = 32 % dist;
            for (u32 b = 0; b < len; b += 32) {
                T x = sizeof(T) == 8 ? (T)__shfl_sync(0xffffffffu, (u64)v, r)
                                     : (T)__shfl_sync(0xffffffffu, (u32)v, r);
                if (b + lane < len) dst[b + lane] = x;
                r += step;
                if (r >= dist) r -= dist;
            }
        } else {
            for (u32 i = lane; i < len; i += 32) dst[i] = src[i < dist ? i : i % dist];
        }
        __syncwarp();
        pos += len;
        return true;
    }
};

// Writes the chunk's status and output length (lane 0).
__device__ __forceinline__ void codag_report(u32 c, u32 st, u32 out_len, u32 in_used, u32* status,
                                             u32* out_lens, u32* in_used_out) {
    if (codag_lane() == 0) {
        status[c] = st;
        out_lens[c] = out_len;
        in_used_out[c] = in_used;
    }
}

#endif
