//! LLL decoding on the GPU (`docs/format/lll.md`; kernels in `kernels/lll/lll.cu`), after Funasaka,
//! Nakano and Ito, *Light Loss-Less Data Compression, with GPU Implementation*.
//!
//! The host checks what a kernel must be able to trust, exactly as the CPU decoders do (§7
//! steps 1-3: header, caller's length, strip directory), and turns every chunk's directory into
//! rows of one strip table ([`StripDesc`]: where a strip's bytes are, where its output goes), so
//! one launch decodes every strip of every chunk, one thread block per strip. The kernel checks
//! the rest (step 4 and the words of step 5) and stops a bad strip before writing any byte of
//! the failing step; it leaves a status per strip and the lowest bad strip in one word. The host
//! then re-runs the CPU decoder on that strip's chunk, so every failure is the CPU's exact
//! [`Error`] (the CPU decoder defines the errors; the GPU only has to notice one).
//!
//! Stored strips (format 1.1, `lll.md` §4a: bit 31 of a `strip_starts` entry) are rows with
//! `kind = 1`; the kernel checks their length against the output length and copies them. Fill
//! strips (format 1.2, §4b: bit 30) are rows with `kind = 2`; the kernel checks that they are one
//! byte and fills the strip's output with it.
//!
//! Invariants: the input buffer holds the chunks' payloads back to back plus
//! [`INPUT_PADDING`] readable bytes (the kernel reads identifier blocks as aligned words); every
//! strip row comes from a directory that passed step 3, so its byte range lies inside its
//! chunk's payload and its output range inside the output buffer, which [`enqueue_decode`]
//! checks is long enough. Nothing is allocated from a header field: table sizes come from
//! strip counts checked against the payload length, output lengths from the caller.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::runtime::buffer::{GpuBuffer, Pack};
use cudarc::driver::{CudaSlice, DeviceRepr};
use tessera_codecs::lll as cpu;
use tessera_format::{Error, Result, MAX_CHUNK_VALUES};

use crate::kernels::Module;
use crate::runtime::pinned::PinnedBuffer;
use crate::runtime::{cuda, Gpu};

/// Readable bytes the kernel needs past the last payload byte (`LLL_INPUT_PADDING`).
pub const INPUT_PADDING: usize = 16;
/// Strip status codes (`LLL_ST_*` in lll.cuh), for diagnostics: errors come from the CPU.
pub const STATUS_NAMES: [&str; 10] = [
    "ok",
    "strip shape",
    "word counts truncated",
    "word_count",
    "identifiers truncated",
    "identifier padding",
    "word array length",
    "code",
    "stored strip length",
    "fill strip length",
];

/// One strip for the kernel (`struct LllStrip` in lll.cuh).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StripDesc {
    /// First byte of the strip in the input buffer.
    pub in_start: u64,
    /// First output byte of the strip.
    pub out_start: u64,
    /// Strip bytes.
    pub in_len: u32,
    /// Output bytes, 1..=32768.
    pub out_len: u32,
    /// [`KIND_CODED`], [`KIND_STORED`] (its `in_len` bytes are the output) or [`KIND_FILL`]
    /// (its one byte fills the output).
    pub kind: u32,
    /// The payload's `segment_bytes` (`lll.md` §2: 512, 1024, 2048 or 4096), which fixes a
    /// coded strip's segments (§3).
    pub segment_bytes: u32,
}

// SAFETY: plain-old-data, `#[repr(C)]`, laid out like the CUDA struct (32 bytes, checked by a test).
unsafe impl DeviceRepr for StripDesc {}

/// [`StripDesc::kind`] of a coded strip (`LLL_KIND_CODED`, `lll.md` §4).
pub const KIND_CODED: u32 = 0;
/// [`StripDesc::kind`] of a stored strip (`LLL_KIND_STORED`, §4a).
pub const KIND_STORED: u32 = 1;
/// [`StripDesc::kind`] of a fill strip (`LLL_KIND_FILL`, §4b).
pub const KIND_FILL: u32 = 2;

/// The decode kernel the library launches and its threads per thread block (one thread block
/// per strip): 128 threads, 1024 words per step, the paper's block size. The 64- and 256-thread
/// forms are compiled too, for the benchmarks ([`crate::bench_hooks::lll`]).
const DECODE_KERNEL: (&str, u32) = ("lll_decode_128", 128);

/// Where one chunk sits in a [`DeviceLll`].
#[derive(Debug, Clone, Copy)]
struct ChunkSpan {
    in_start: usize,
    in_len: usize,
    out_len: usize,
    first_strip: u32,
}

/// LLL chunks on the device, ready to decode: payloads back to back, the strip table, status.
pub struct DeviceLll {
    bytes: GpuBuffer<u8>,
    strips: GpuBuffer<StripDesc>,
    status: GpuBuffer<u32>,
    first_bad: GpuBuffer<u32>,
    /// Whether `first_bad` still holds the all-ones it was uploaded with (a packed upload):
    /// the first decode then needs no fill.
    first_bad_fresh: AtomicBool,
    chunks: Vec<ChunkSpan>,
    strip_count: u32,
    in_len: usize,
    out_len: usize,
}

impl std::fmt::Debug for DeviceLll {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceLll")
            .field("chunks", &self.chunks.len())
            .field("strips", &self.strip_count)
            .field("in_len", &self.in_len)
            .field("out_len", &self.out_len)
            .finish_non_exhaustive()
    }
}

/// The CPU decoder's verdict on bytes the GPU side rejected: its error, or (a bug) a note that it
/// accepted them.
fn cpu_error(payload: &[u8], out: &mut [u8], what: &str) -> Error {
    match cpu::decode(payload, out) {
        Err(e) => e,
        Ok(()) => Error::Gpu(format!(
            "LLL: {what}, but the CPU decoder accepts the chunk (GPU/CPU disagreement)"
        )),
    }
}

/// The host's view of a batch of chunks: the strip table and the chunk spans.
fn plan(chunks: &[(&[u8], usize)]) -> Result<(Vec<StripDesc>, Vec<ChunkSpan>, usize, usize)> {
    let mut strips = Vec::new();
    let mut spans = Vec::with_capacity(chunks.len());
    let (mut in_at, mut out_at) = (0usize, 0usize);
    for (c, &(payload, n)) in chunks.iter().enumerate() {
        if n > MAX_CHUNK_VALUES as usize {
            return Err(Error::InvalidArgument(format!(
                "LLL chunk {c}: {n} output bytes exceed {MAX_CHUNK_VALUES}"
            )));
        }
        // §7 steps 1-3, the CPU decoders' own checks and errors.
        let ranges = cpu::strip_directory(payload, n)?;
        let first_strip = u32::try_from(strips.len())
            .map_err(|_| Error::InvalidArgument("more than 2^32 LLL strips".into()))?;
        for (k, r) in ranges.iter().enumerate() {
            let o = k * cpu::STRIP_BYTES;
            strips.push(StripDesc {
                in_start: (in_at + r.start) as u64,
                out_start: (out_at + o) as u64,
                in_len: (r.end - r.start) as u32,
                out_len: (n - o).min(cpu::STRIP_BYTES) as u32,
                kind: match r.kind {
                    cpu::StripKind::Coded => KIND_CODED,
                    cpu::StripKind::Stored => KIND_STORED,
                    cpu::StripKind::Fill => KIND_FILL,
                },
                segment_bytes: r.segment_bytes as u32,
            });
        }
        spans.push(ChunkSpan {
            in_start: in_at,
            in_len: payload.len(),
            out_len: n,
            first_strip,
        });
        in_at += payload.len();
        out_at += n;
    }
    u32::try_from(strips.len())
        .map_err(|_| Error::InvalidArgument("more than 2^32 LLL strips".into()))?;
    Ok((strips, spans, in_at, out_at))
}

impl DeviceLll {
    /// Checks each chunk's header and strip directory on the host (an error is the CPU
    /// decoder's for that chunk) and uploads the payloads and the strip table. `chunks` pairs
    /// each payload with its decoded length (at most 2^24 bytes); outputs follow each other.
    pub fn upload(gpu: &Gpu, chunks: &[(&[u8], usize)]) -> Result<DeviceLll> {
        let (strips, spans, in_len, out_len) = plan(chunks)?;
        // While uploads are staged: the payloads (and their padding), the strip table, the
        // status words and the first-bad word (all ones) in one allocation filled by one
        // staged copy, each a view of it, instead of an allocation and a copy each.
        let payloads: Vec<&[u8]> = chunks.iter().map(|(p, _)| *p).collect();
        let all_ones = [0xFFu8; 4];
        let mut pack = Pack::default();
        let bytes_at = pack.place(&payloads, in_len + INPUT_PADDING);
        let strips_at = pack.place_values(&strips);
        let status_at = pack.reserve::<u32>(strips.len());
        let first_bad_at = pack.place(&[&all_ones], 4);
        if let Some(arena) = gpu.upload_pack(&pack)? {
            let strip_count = strips.len() as u32;
            return Ok(DeviceLll {
                bytes: arena.view(gpu, bytes_at, in_len + INPUT_PADDING)?,
                strips: arena.view(gpu, strips_at, strips.len().max(1))?,
                status: arena.view(gpu, status_at, strips.len().max(1))?,
                first_bad: arena.view(gpu, first_bad_at, 1)?,
                first_bad_fresh: AtomicBool::new(true),
                chunks: spans,
                strip_count,
                in_len,
                out_len,
            });
        }
        let mut bytes = Vec::with_capacity(in_len + INPUT_PADDING);
        for (p, _) in chunks {
            bytes.extend_from_slice(p);
        }
        bytes.resize(in_len + INPUT_PADDING, 0);
        DeviceLll::from_parts(gpu, gpu.upload(&bytes)?, strips, spans, in_len, out_len)
    }

    fn from_parts(
        gpu: &Gpu,
        bytes: CudaSlice<u8>,
        strips: Vec<StripDesc>,
        chunks: Vec<ChunkSpan>,
        in_len: usize,
        out_len: usize,
    ) -> Result<DeviceLll> {
        let strip_count = strips.len() as u32;
        Ok(DeviceLll {
            bytes: bytes.into(),
            strips: gpu.upload(&strips)?.into(),
            status: gpu.alloc::<u32>(strips.len())?.into(),
            first_bad: gpu.alloc::<u32>(1)?.into(),
            first_bad_fresh: AtomicBool::new(false),
            chunks,
            strip_count,
            in_len,
            out_len,
        })
    }

    /// Payload bytes on the device (without the padding).
    pub fn compressed_bytes(&self) -> usize {
        self.in_len
    }
    /// Decoded bytes of all chunks.
    pub fn out_len(&self) -> usize {
        self.out_len
    }
    /// Strips of all chunks (thread blocks of a launch).
    pub fn strip_count(&self) -> u32 {
        self.strip_count
    }
    /// Chunks held.
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Copies the payload bytes into new pinned host memory (for timed re-uploads).
    pub fn pin(&self, gpu: &Gpu) -> Result<PinnedBuffer> {
        let mut pinned = gpu.alloc_pinned(self.in_len + INPUT_PADDING)?;
        gpu.download(&self.bytes, pinned.as_mut_slice()?)?;
        Ok(pinned)
    }

    /// Queues a copy of the payload bytes from `pinned` (as [`Self::pin`] made it) to the device,
    /// on the main stream: the upload half of loading compressed data.
    pub fn enqueue_reupload(&mut self, gpu: &Gpu, pinned: &PinnedBuffer) -> Result<()> {
        gpu.enqueue_upload(pinned, self.in_len + INPUT_PADDING, &mut self.bytes)
    }
}

/// Queues the decode of every strip of `input` into `out` (at least `input.out_len()` bytes)
/// on the main stream; [`finish_decode`] then waits and reports errors.
pub fn enqueue_decode(gpu: &Gpu, input: &DeviceLll, out: &mut CudaSlice<u8>) -> Result<()> {
    let (name, threads) = DECODE_KERNEL;
    enqueue_decode_kernel(gpu, input, out, name, threads)
}

/// [`enqueue_decode`] with the kernel `name` (one of `lll_decode_{64,128,256}`) of `threads`
/// threads per thread block.
pub(crate) fn enqueue_decode_kernel(
    gpu: &Gpu,
    input: &DeviceLll,
    out: &mut CudaSlice<u8>,
    name: &'static str,
    threads: u32,
) -> Result<()> {
    if out.len() < input.out_len {
        return Err(Error::InvalidArgument(format!(
            "LLL output buffer of {} bytes, {} needed",
            out.len(),
            input.out_len
        )));
    }
    let first_bad = gpu.ptr(&input.first_bad);
    // A packed upload left the word all ones for the first decode; later ones clear it again.
    if !input.first_bad_fresh.swap(false, Ordering::Relaxed) {
        let op = crate::runtime::trace::count(crate::runtime::trace::Op::Fill);
        // SAFETY: `first_bad` addresses one live u32; ordered on the main stream before the
        // launch.
        unsafe {
            cudarc::driver::result::memset_d8_async(first_bad, 0xFF, 4, gpu.stream.cu_stream())
        }
        .map_err(cuda("clearing the LLL status"))?;
        drop(op);
    }
    if input.strip_count == 0 {
        return Ok(());
    }
    let f = gpu.function(Module::Lll, name)?;
    let grid = input.strip_count.min(i32::MAX as u32);
    let (d_in, d_strips) = (gpu.ptr(&input.bytes), gpu.ptr(&input.strips));
    let (d_out, d_status) = (gpu.ptr(out), gpu.ptr(&input.status));
    // SAFETY: the arguments match `lll_decode_*(const u8*, const LllStrip*, u32, u8*, u32*,
    // u32*)`; the input holds every strip's bytes plus INPUT_PADDING (built by `upload` from
    // directories checked like the CPU's), `out` holds out_len >= every strip's output end
    // (checked above), `status` one word per strip; all outlive the launch (callers synchronize
    // before dropping them: `finish_decode`, `Gpu::timed`).
    unsafe {
        gpu.launch(
            &f,
            grid,
            threads,
            &[
                &d_in,
                &d_strips,
                &input.strip_count,
                &d_out,
                &d_status,
                &first_bad,
            ],
        )
    }
}

/// Waits for the decode and turns a flagged strip into the CPU decoder's error for its chunk.
pub fn finish_decode(gpu: &Gpu, input: &DeviceLll) -> Result<()> {
    let bad = first_bad(gpu, input)?;
    flagged_error(gpu, input, bad)
}

/// The CPU decoder's error for a flagged strip, `Ok` when none is.
fn flagged_error(gpu: &Gpu, input: &DeviceLll, bad: Option<(u32, u32)>) -> Result<()> {
    let Some((strip, code)) = bad else {
        return Ok(());
    };
    let c = chunk_of(input, strip);
    let span = input.chunks[c];
    let mut payload = vec![0u8; span.in_len];
    if span.in_len > 0 {
        let view = input
            .bytes
            .slice(span.in_start..span.in_start + span.in_len);
        gpu.stream
            .memcpy_dtoh(&view, &mut payload)
            .map_err(cuda("copying an LLL chunk back"))?;
        gpu.synchronize()?;
    }
    Err(cpu_error(
        &payload,
        &mut vec![0u8; span.out_len],
        &flag_note(strip, code),
    ))
}

fn flag_note(strip: u32, code: u32) -> String {
    format!(
        "the GPU flagged strip {strip} ({})",
        STATUS_NAMES.get(code as usize).unwrap_or(&"unknown status")
    )
}

/// The device address and byte length of the decode's first-flagged-strip word (a u32),
/// which [`enqueue_decode`] fills: for callers that read many decoders' statuses back at once.
pub(crate) fn status_word(gpu: &Gpu, input: &DeviceLll) -> (u64, usize) {
    (gpu.ptr(&input.first_bad), 4)
}

/// [`finish_decode`] with the first-flagged-strip word already read back (after the stream
/// finished): only a flagged strip costs further copies.
pub(crate) fn finish_decode_with(gpu: &Gpu, input: &DeviceLll, first_bad: u32) -> Result<()> {
    let bad = flagged_strip(gpu, input, first_bad)?;
    flagged_error(gpu, input, bad)
}

/// The lowest flagged strip and its status code, if any.
fn first_bad(gpu: &Gpu, input: &DeviceLll) -> Result<Option<(u32, u32)>> {
    let mut bad = [0u32];
    gpu.download(&input.first_bad, &mut bad)?;
    flagged_strip(gpu, input, bad[0])
}

/// The strip `first_bad` names and its status code, `None` when it names none.
fn flagged_strip(gpu: &Gpu, input: &DeviceLll, first_bad: u32) -> Result<Option<(u32, u32)>> {
    let bad = [first_bad];
    if bad[0] == u32::MAX || input.strip_count == 0 {
        return Ok(None);
    }
    if bad[0] >= input.strip_count {
        return Err(Error::Gpu(format!(
            "LLL kernel reported strip {} of {}",
            bad[0], input.strip_count
        )));
    }
    let mut code = [0u32];
    let view = input.status.slice(bad[0] as usize..bad[0] as usize + 1);
    gpu.stream
        .memcpy_dtoh(&view, &mut code)
        .map_err(cuda("reading an LLL strip status"))?;
    gpu.synchronize()?;
    Ok(Some((bad[0], code[0])))
}

/// The chunk that holds `strip`.
fn chunk_of(input: &DeviceLll, strip: u32) -> usize {
    input
        .chunks
        .partition_point(|c| c.first_strip <= strip)
        .saturating_sub(1)
}

/// Decodes every chunk of `input` into `out` (device memory, at least `input.out_len()` bytes):
/// the device-resident path, no host transfer but the status word.
pub fn decode_device(gpu: &Gpu, input: &DeviceLll, out: &mut CudaSlice<u8>) -> Result<()> {
    enqueue_decode(gpu, input, out)?;
    finish_decode(gpu, input)
}

/// Decodes one LLL chunk on the GPU: `payload` must decode to exactly `out.len()` bytes. The
/// result (and any error) equals `tessera_codecs::lll::decode`'s.
pub fn decode(gpu: &Gpu, payload: &[u8], out: &mut [u8]) -> Result<()> {
    if out.is_empty() {
        // Nothing to launch; the header and directory are still checked.
        cpu::strip_directory(payload, 0)?;
        return Ok(());
    }
    // `upload` checks §7 steps 1-3 (the CPU's errors) before anything reaches the GPU.
    let input = DeviceLll::upload(gpu, &[(payload, out.len())])?;
    let mut d_out = gpu.alloc::<u8>(out.len())?;
    enqueue_decode(gpu, &input, &mut d_out)?;
    if let Some((strip, code)) = first_bad(gpu, &input)? {
        return Err(cpu_error(payload, out, &flag_note(strip, code)));
    }
    gpu.download(&d_out, out)
}

#[cfg(test)]
mod model;

#[cfg(test)]
mod tests {
    use super::*;

    fn defines() -> std::collections::HashMap<String, String> {
        crate::kernels::header("lll/lll.cuh")
            .expect("lll.cuh is embedded")
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                (it.next() == Some("#define")).then_some(())?;
                let name = it.next()?.strip_prefix("LLL_")?.to_string();
                Some((name, it.next().unwrap_or("").to_string()))
            })
            .collect()
    }

    #[test]
    fn host_constants_match_lll_cuh() {
        let d = defines();
        let num = |k: &str| -> usize {
            let v = d
                .get(k)
                .unwrap_or_else(|| panic!("LLL_{k} missing"))
                .trim_end_matches('u');
            match v.strip_prefix("0x") {
                Some(h) => usize::from_str_radix(h, 16),
                None => v.parse(),
            }
            .unwrap_or_else(|_| panic!("LLL_{k} not a number"))
        };
        assert_eq!(num("MIN_SEGMENT_BYTES"), cpu::SEGMENT_SIZES[0]);
        assert_eq!(num("MAX_SEGMENT_BYTES"), cpu::MAX_SEGMENT_BYTES);
        assert_eq!(num("DICTIONARY_BYTES"), cpu::DICTIONARY_BYTES);
        assert_eq!(num("FIRST_SEGMENT_BYTES"), cpu::FIRST_SEGMENT_BYTES);
        assert_eq!(num("STRIP_BYTES"), cpu::STRIP_BYTES);
        assert_eq!(num("MAX_STRIP_SEGMENTS"), cpu::MAX_STRIP_SEGMENTS);
        assert_eq!(num("HEADER_BYTES"), cpu::HEADER_BYTES);
        assert_eq!(num("RUN_T"), cpu::RUN_T as usize);
        assert_eq!(num("LONG_L"), cpu::LONG_L as usize);
        assert_eq!(num("SHORT_MIN"), cpu::SHORT_MIN);
        assert_eq!(num("LONG_MIN"), cpu::LONG_MIN);
        assert_eq!(num("RL_MIN"), cpu::RL_MIN);
        assert_eq!(num("INPUT_PADDING"), INPUT_PADDING);
        // A segment and its dictionary fit the ring together.
        assert_eq!(
            num("RING_BYTES"),
            cpu::MAX_SEGMENT_BYTES + cpu::DICTIONARY_BYTES
        );
        assert_eq!(num("MAX_ID_WORDS"), cpu::STRIP_BYTES / 32);
        assert_eq!(num("ST_FILL_LENGTH") + 1, STATUS_NAMES.len());
        assert_eq!(num("ST_STORED_LENGTH") + 1, num("ST_FILL_LENGTH"));
        assert_eq!(num("ST_CODE") + 1, num("ST_STORED_LENGTH"));
        assert_eq!(num("KIND_CODED"), KIND_CODED as usize);
        assert_eq!(num("KIND_STORED"), KIND_STORED as usize);
        assert_eq!(num("KIND_FILL"), KIND_FILL as usize);
        assert_eq!(std::mem::size_of::<StripDesc>(), 32);
        // The kernel model's shape is the kernel's.
        assert_eq!(num("WORDS_PER_THREAD"), super::model::WPT as usize);
        assert_eq!(num("STAGE_BEFORE"), super::model::STAGE_BEFORE);
        assert_eq!(num("MAP_BYTES"), super::model::MAP_BYTES as usize);
        assert_eq!(num("D_FILL"), super::model::D_FILL as usize);
        assert_eq!(num("D_RUN_AT"), super::model::D_RUN_AT as usize);
        // The map of a 128-thread step covers LLL_MAP_BYTES (its stage buffer holds it).
        assert_eq!(super::model::map_bytes(1024), super::model::MAP_BYTES);
    }
}

/// LLL chunks of bytes (and utf8 text) columns, all of a column's in one launch.
#[derive(Debug)]
pub struct LllDecoder;

struct LllBatch(DeviceLll);

impl crate::codec::GpuDecoder for LllDecoder {
    fn name(&self) -> &'static str {
        "lll"
    }

    fn serves(&self, codec: tessera_format::CodecId, ty: tessera_format::LogicalType) -> bool {
        codec == tessera_format::CodecId::Lll && ty == tessera_format::LogicalType::Bytes
    }

    fn upload<'a>(
        &self,
        gpu: &Gpu,
        _ty: tessera_format::LogicalType,
        chunks: &[crate::ChunkRef<'a>],
    ) -> Result<Box<dyn crate::codec::GpuBatch + 'a>> {
        let parts: Vec<(&[u8], usize)> = chunks
            .iter()
            .map(|c| (c.payload, c.value_count as usize))
            .collect();
        Ok(Box::new(LllBatch(DeviceLll::upload(gpu, &parts)?)))
    }
}

impl crate::codec::GpuBatch for LllBatch {
    fn decoded_bytes(&self) -> usize {
        self.0.out_len()
    }

    fn decode(&mut self, gpu: &Gpu, out: &mut CudaSlice<u8>) -> Result<()> {
        decode_device(gpu, &self.0, out)
    }

    fn enqueue(&mut self, gpu: &Gpu, out: &mut CudaSlice<u8>) -> Result<Option<(u64, usize)>> {
        enqueue_decode(gpu, &self.0, out)?;
        Ok(Some(status_word(gpu, &self.0)))
    }

    fn check(&self, gpu: &Gpu, status: &[u8]) -> Result<()> {
        let b = status
            .get(..4)
            .ok_or_else(|| Error::Gpu("the LLL status word was not read back".into()))?;
        finish_decode_with(gpu, &self.0, u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}
