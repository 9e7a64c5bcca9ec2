//! One large raw Deflate stream decoded on the GPU in parallel: the speculative two-pass method
//! of `tessera_codecs::deflate::inflate_parallel` (whose module docs explain it), a warp per
//! span (`docs/gpu/codag.md`, "A single large gzip file on the GPU").
//!
//! 1. **Find** on the host: [`cpu::block_candidates`], one range search per span in parallel on
//!    the CPU's threads (why the host: `docs/gpu/codag.md`).
//! 2. **Decode** (`codag_deflate_spans`): one launch, a warp per span from its block candidate,
//!    into 16-bit symbols (markers for bytes of the unknown window before the span), until a
//!    block boundary equals a later candidate or the final block ends. Each span's capacity is
//!    [`FIRST_RATIO`] symbols per input byte up to the next candidate; when a span of the chain
//!    overflows (highly compressible data, or a span that decoded past a false candidate) the
//!    launch is repeated with 8 times the room for every span that overflowed, up to Deflate's
//!    largest expansion of the rest of the stream, while all capacities stay within the memory
//!    budget.
//! 3. **Chain** on the host from bit 0 (the indices the spans stopped at), as the CPU does: spans
//!    off the chain started at false candidates and are ignored.
//! 4. **Resolve** on the device: `codag_span_windows` builds every span's 32 KiB window in order
//!    (each from the one before and the span's own last symbols), then `codag_span_resolve`
//!    turns every span's symbols into bytes at once.
//!
//! Any failure (a span of the chain with a decode error, capacities over the budget, a marker
//! naming a byte before the stream) gives `Ok(None)`: the caller decodes sequentially, so the
//! outcome is the CPU's, never a wrong output. Allocations come from the input's length and the
//! caller's limit only, never from the stream's contents.

use std::time::Instant;

use cudarc::driver::CudaSlice;
use tessera_codecs::deflate as cpu;
use tessera_format::{Error, Result};

use super::{upload_padded, ChunkDesc, WARPS};
use crate::kernels::Module;
use crate::Gpu;

/// Symbols per input byte a span may first write (text compresses 3-5x; room for a span that
/// decodes past one false candidate).
pub const FIRST_RATIO: usize = 8;
/// Deflate's largest expansion: output bytes per input byte (a 258-byte match in 2 bits).
const MAX_RATIO: usize = 1032;
/// Device bytes the span symbols may take at most (2 per symbol); a stream that needs more is
/// left to the caller's sequential decode.
pub const SYMBOL_BUDGET_BYTES: usize = 32 << 30;
/// The window a back-reference reaches (RFC 1951 §3.2.5).
const WINDOW: usize = 32 * 1024;
/// `CODAG_ST_OUTPUT_OVERFLOW`.
const ST_OVERFLOW: u32 = 2;

/// What the span decoder did, with the time of each phase (host clock, each phase waited for).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SpanReport {
    /// Block candidates (spans decoded, bit 0 included).
    pub candidates: usize,
    /// Spans on the chain from bit 0.
    pub chain: usize,
    /// Decode launches (more than one when a span of the chain overflowed its capacity).
    pub launches: usize,
    /// Finding the block candidates on the host, ms.
    pub find_ms: f64,
    /// Uploading the stream, ms.
    pub upload_ms: f64,
    /// The span decode launches and their results, ms.
    pub decode_ms: f64,
    /// Windows and resolve kernels, ms.
    pub resolve_ms: f64,
    /// Copying the output to the host, ms.
    pub download_ms: f64,
}

/// Per-span results of one decode launch.
struct Launch {
    status: Vec<u32>,
    out_lens: Vec<u32>,
    end_bits: Vec<u64>,
    next: Vec<u32>,
    descs: Vec<ChunkDesc>,
    symbols: CudaSlice<u16>,
    sym_len: usize,
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Inflates the raw Deflate stream at the start of `stream` (at most `limit` output bytes),
/// spans of about `span_bytes` of input each decoded by a warp; returns the output, the input
/// bytes the stream used and the [`SpanReport`], or `Ok(None)` where the caller must decode
/// sequentially. Errors: CUDA failures only.
pub fn inflate_spans(
    gpu: &Gpu,
    stream: &[u8],
    limit: usize,
    span_bytes: usize,
) -> Result<Option<(Vec<u8>, usize, SpanReport)>> {
    // Positions in a span are u32 on the device.
    if stream.is_empty() || stream.len() > (u32::MAX as usize) - 64 {
        return Ok(None);
    }
    let mut report = SpanReport::default();
    let t = Instant::now();
    let starts = cpu::block_candidates(stream, span_bytes);
    report.find_ms = ms(t);
    report.candidates = starts.len();
    let t = Instant::now();
    let d_in = upload_padded(gpu, stream, 16)?;
    let d_starts = gpu.upload(&starts)?;
    gpu.synchronize()?;
    report.upload_ms = ms(t);

    let t = Instant::now();
    let mut ratios = vec![FIRST_RATIO; starts.len()];
    let (launch, chain) = loop {
        let Some(launch) = decode(gpu, stream, &d_in, &d_starts, &starts, limit, &ratios)? else {
            return Ok(None);
        };
        report.launches += 1;
        match follow(&launch, starts.len()) {
            Chain::Done(chain) => break (launch, chain),
            Chain::Failed => return Ok(None),
            Chain::Overflow(k) => {
                // At Deflate's bound already: the stream is bad.
                if ratios[k] >= MAX_RATIO * 2 {
                    return Ok(None);
                }
                // Every span that overflowed gets more room, so data that compresses well
                // everywhere needs a few launches, not one per span.
                for (r, &st) in ratios.iter_mut().zip(&launch.status) {
                    if st == ST_OVERFLOW {
                        *r = (*r * 8).min(MAX_RATIO * 2);
                    }
                }
            }
        }
    };
    report.decode_ms = ms(t);
    report.chain = chain.len();

    let t = Instant::now();
    let mut total = 0usize;
    let (mut sym_at, mut lens, mut span_out) = (vec![], vec![], vec![]);
    for &k in &chain {
        sym_at.push(launch.descs[k].out_start);
        lens.push(launch.out_lens[k]);
        span_out.push(total as u64);
        total = match total.checked_add(launch.out_lens[k] as usize) {
            Some(t) if t <= limit => t,
            _ => return Ok(None),
        };
    }
    let last = chain[chain.len() - 1];
    let used = usize::try_from(launch.end_bits[last].div_ceil(8)).unwrap_or(usize::MAX);
    if used > stream.len() {
        return Ok(None);
    }
    let n_chain = chain.len() as u32;
    let (d_at, d_lens, d_span_out) = (
        gpu.upload(&sym_at)?,
        gpu.upload(&lens)?,
        gpu.upload(&span_out)?,
    );
    let windows_len = chain
        .len()
        .checked_mul(WINDOW)
        .ok_or_else(|| Error::InvalidArgument("span windows over the address space".into()))?;
    let d_windows = gpu.alloc::<u8>(windows_len)?;
    let d_out = gpu.alloc::<u8>(total.max(1))?;
    let mut d_err = gpu.alloc::<u32>(1)?;
    gpu.fill_bytes(&mut d_err, 0)?;
    let (sym_len, win_len, out_len) = (launch.sym_len as u64, windows_len as u64, total as u64);
    let f = gpu.function(Module::Codag, "codag_span_windows")?;
    let (p_sym, p_at, p_lens, p_so, p_win, p_err, p_out) = (
        gpu.ptr(&launch.symbols),
        gpu.ptr(&d_at),
        gpu.ptr(&d_lens),
        gpu.ptr(&d_span_out),
        gpu.ptr(&d_windows),
        gpu.ptr(&d_err),
        gpu.ptr(&d_out),
    );
    // SAFETY: the arguments match `codag_span_windows(const u16*, u64, const u64*, const u32*,
    // const u64*, u32, u8*, u64, u32*)`; the tables hold `n_chain` entries each, the buffers'
    // lengths are passed and every access is checked against them in the kernel; all buffers
    // outlive the launch (the download below waits for it).
    unsafe {
        gpu.launch(
            &f,
            1,
            1024,
            &[
                &p_sym, &sym_len, &p_at, &p_lens, &p_so, &n_chain, &p_win, &win_len, &p_err,
            ],
        )?;
    }
    let f = gpu.function(Module::Codag, "codag_span_resolve")?;
    // SAFETY: as above, for `codag_span_resolve(..., const u8* windows, u64, u8* out, u64,
    // u32*)`; `d_out` holds `total` bytes, the sum of the chain's lengths.
    unsafe {
        gpu.launch(
            &f,
            n_chain.min(65_535),
            1024,
            &[
                &p_sym, &sym_len, &p_at, &p_lens, &p_so, &n_chain, &p_win, &win_len, &p_out,
                &out_len, &p_err,
            ],
        )?;
    }
    let mut err = [0u32];
    gpu.download(&d_err, &mut err)?;
    report.resolve_ms = ms(t);
    if err[0] != 0 {
        return Ok(None);
    }
    let t = Instant::now();
    let mut out = vec![0u8; total];
    gpu.download(&d_out, &mut out)?;
    report.download_ms = ms(t);
    Ok(Some((out, used, report)))
}

/// One launch of the span decoder, span `k` with room for `ratios[k]` symbols per input byte
/// up to the next candidate; `None` when the capacities exceed the budget.
fn decode(
    gpu: &Gpu,
    stream: &[u8],
    d_in: &CudaSlice<u8>,
    d_starts: &CudaSlice<u64>,
    starts: &[u64],
    limit: usize,
    ratios: &[usize],
) -> Result<Option<Launch>> {
    let n = starts.len();
    let mut descs = Vec::with_capacity(n);
    let mut at = 0usize;
    for (k, &s) in starts.iter().enumerate() {
        let byte = (s / 8) as usize;
        let next = starts
            .get(k + 1)
            .map_or(stream.len(), |&e| (e / 8) as usize + 1);
        let rest = stream.len() - byte;
        let cap = (next - byte)
            .saturating_mul(ratios[k])
            .min(rest.saturating_mul(MAX_RATIO))
            .min(limit)
            .clamp(1, u32::MAX as usize);
        descs.push(ChunkDesc {
            in_start: byte as u64,
            out_start: at as u64,
            in_len: rest as u32,
            out_cap: cap as u32,
            param: (s & 7) as u32,
            reserved: (k > 0) as u32,
        });
        // Symbols start at multiples of 16 (aligned stores for the warps).
        at = match at.checked_add(cap.next_multiple_of(16)) {
            Some(a) if a.saturating_mul(2) <= SYMBOL_BUDGET_BYTES => a,
            _ => return Ok(None),
        };
    }
    let d_descs = gpu.upload(&descs)?;
    // A device too small for the capacities leaves the stream to the sequential decode.
    let Ok(symbols) = gpu.alloc::<u16>(at.max(1)) else {
        return Ok(None);
    };
    let (status, out_lens) = (gpu.alloc::<u32>(n)?, gpu.alloc::<u32>(n)?);
    let (end_bits, next) = (gpu.alloc::<u64>(n)?, gpu.alloc::<u32>(n)?);
    let f = gpu.function(Module::Codag, "codag_deflate_spans")?;
    let n32 = n as u32;
    let grid = n32.div_ceil(WARPS).min(i32::MAX as u32);
    let p = (
        gpu.ptr(d_in),
        gpu.ptr(&d_descs),
        gpu.ptr(d_starts),
        gpu.ptr(&symbols),
        gpu.ptr(&status),
        gpu.ptr(&out_lens),
        gpu.ptr(&end_bits),
        gpu.ptr(&next),
    );
    // SAFETY: the arguments match `codag_deflate_spans(const u8*, const CodagChunk*, u32, const
    // u64*, u16*, u32*, u32*, u64*, u32*)`. Every span reads the words from its start byte to the
    // stream's end, inside `d_in` (the stream and 16 zero bytes); its symbols lie in
    // [out_start, out_start + out_cap) inside `symbols` (`at` elements); `d_starts` and the
    // result buffers hold `n` entries. All outlive the launch (the downloads wait for it).
    unsafe {
        gpu.launch(
            &f,
            grid,
            WARPS * 32,
            &[&p.0, &p.1, &n32, &p.2, &p.3, &p.4, &p.5, &p.6, &p.7],
        )?;
    }
    let mut l = Launch {
        status: vec![0; n],
        out_lens: vec![0; n],
        end_bits: vec![0; n],
        next: vec![0; n],
        descs,
        symbols,
        sym_len: at,
    };
    gpu.download(&status, &mut l.status)?;
    gpu.download(&out_lens, &mut l.out_lens)?;
    gpu.download(&end_bits, &mut l.end_bits)?;
    gpu.download(&next, &mut l.next)?;
    Ok(Some(l))
}

enum Chain {
    /// The spans of the chain from bit 0, in order.
    Done(Vec<usize>),
    /// This span of the chain ran out of capacity.
    Overflow(usize),
    /// A span of the chain failed otherwise, or the chain does not advance.
    Failed,
}

/// Follows the spans from bit 0 through the candidates each stopped at.
fn follow(l: &Launch, n: usize) -> Chain {
    let mut chain = Vec::new();
    let mut k = 0usize;
    loop {
        match l.status[k] {
            0 => {}
            ST_OVERFLOW => return Chain::Overflow(k),
            _ => return Chain::Failed,
        }
        chain.push(k);
        let next = l.next[k] as usize;
        if next >= n {
            return Chain::Done(chain);
        }
        if next <= k {
            return Chain::Failed;
        }
        k = next;
    }
}
