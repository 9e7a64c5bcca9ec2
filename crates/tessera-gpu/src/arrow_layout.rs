//! Decoded columns rearranged into Arrow's layout on the device (`kernels/arrow/layout.cu`):
//! utf8 offsets from per-chunk relative ends, binary offsets from lengths (a device-wide sum
//! scan), decimals widened to i128, ALP floats (`table.md` §8.2) from their digits, params and
//! exceptions. What a table reader needs to hand
//! its fields to the Arrow C Device Data Interface without a host round trip.
//!
//! Buffers are bytes (`CudaSlice<u8>`), little-endian, as the decoders leave them. Every launch
//! is checked: the host checks what it knows (shapes, totals), the kernels check every index
//! against the lengths they are given and report the lowest faulty one in a status word, which
//! becomes an [`Error`] here.

use std::sync::Arc;

use cudarc::driver::CudaSlice;
use tessera_format::{Error, Result};

use crate::kernels::Module;
use crate::runtime::buffer::Pack;
use crate::runtime::Gpu;
use crate::GpuBuffer;

/// Threads per block of every layout kernel (`TS_AL_THREADS`).
const THREADS: u32 = 256;
/// Blocks at most per launch; the kernels stride over the rest.
const MAX_GRID: u64 = 1 << 16;

/// Status codes of `layout.cu` (`TS_AL_*`).
const ST_SIZE: u64 = 1;
const ST_UTF8_END: u64 = 2;
const ST_OFFSET_LIMIT: u64 = 3;
const ST_ALP_PARAM: u64 = 4;
const ST_EXCEPTION_ROW: u64 = 5;
const ST_RUN_END: u64 = 6;
const ST_UTF8_TEXT: u64 = 7;
const ST_DICT_CODE: u64 = 8;
const ST_LENGTHS: u64 = 9;

/// The rows of a launch that takes one row of a table per item (its grid's y extent, at most
/// 65535): an error naming `what` when there are more.
fn launch_rows(n: usize, what: &str) -> Result<u32> {
    u32::try_from(n)
        .ok()
        .filter(|&c| c <= u32::from(u16::MAX))
        .ok_or_else(|| Error::InvalidArgument(format!("too many {what} for one launch")))
}

fn grid(n: u64) -> u32 {
    grid_for(n, THREADS)
}

/// Blocks of `threads` for a grid-stride kernel over `n` items (also `orc_layout`'s).
pub(crate) fn grid_for(n: u64, threads: u32) -> u32 {
    n.div_ceil(u64::from(threads)).clamp(1, MAX_GRID) as u32
}

/// The error a status word says, `None` when it is all ones (no error).
fn status_error(kernel: &str, status: u64) -> Option<Error> {
    if status == u64::MAX {
        return None;
    }
    let (index, code) = (status >> 8, status & 0xff);
    Some(match code {
        ST_UTF8_END => Error::ValueOutOfRange {
            index,
            ty: "utf8 end offset (within its chunk's text)",
            found: index,
        },
        ST_UTF8_TEXT => Error::ValueOutOfRange {
            index,
            ty: UTF8_TEXT,
            found: index,
        },
        ST_DICT_CODE => Error::InvalidArgument(format!(
            "row {index}: its dictionary code is negative or not below the dictionary's count"
        )),
        ST_LENGTHS => Error::InvalidArgument("its binary lengths sum past the bytes stored".into()),
        ST_OFFSET_LIMIT => Error::InvalidArgument(format!(
            "string {index} ends past i32::MAX bytes of text: use large_utf8"
        )),
        ST_ALP_PARAM => Error::ValueOutOfRange {
            index,
            ty: "ALP params (f <= e <= the type's largest exponent, one a vector)",
            found: index,
        },
        ST_EXCEPTION_ROW => Error::ValueOutOfRange {
            index,
            ty: "ALP exception row (rows ascend, below the table's rows)",
            found: index,
        },
        ST_RUN_END => Error::ValueOutOfRange {
            index,
            ty: "run end (strictly ascending, the last the table's rows)",
            found: index,
        },
        ST_SIZE => Error::Gpu(format!("{kernel}: buffer lengths do not cover the rows")),
        c => Error::Gpu(format!("{kernel}: unknown status code {c} at {index}")),
    })
}

fn checked(gpu: &Gpu, kernel: &str, launch: impl FnOnce(u64) -> Result<()>) -> Result<()> {
    checked_with(gpu, kernel, status_error, launch)
}

/// Runs `launch` with a fresh status word and turns what the kernels reported into an error
/// through `status_error` (this module's codes, or `orc_layout`'s).
pub(crate) fn checked_with(
    gpu: &Gpu,
    kernel: &str,
    status_error: fn(&str, u64) -> Option<Error>,
    launch: impl FnOnce(u64) -> Result<()>,
) -> Result<()> {
    let status = gpu.upload(&[u64::MAX])?;
    launch(gpu.ptr(&status))?;
    let mut host = [0u64];
    gpu.download(&status, &mut host)?;
    status_error(kernel, host[0]).map_or(Ok(()), Err)
}

/// Status words of kernels queued without waiting (one a launch, or one a field of a batched
/// launch), for a caller that reads many statuses back at once ([`Gpu::read_back_parts`]) and
/// then asks [`QueuedCheck::verdicts`] what they say.
#[derive(Debug)]
pub struct QueuedCheck {
    status: GpuBuffer<u64>,
    words: usize,
    kernel: &'static str,
}

impl QueuedCheck {
    /// The device address and byte length of the status words (alive as long as `self`).
    pub fn part(&self, gpu: &Gpu) -> (u64, usize) {
        (gpu.ptr(&self.status), self.words * 8)
    }

    /// Appends this check's status words to the `parts` that one read-back gathers
    /// ([`Gpu::read_back_parts`]); returns the check with its index among them.
    pub fn queued(self, gpu: &Gpu, parts: &mut Vec<(u64, usize)>) -> (QueuedCheck, usize) {
        parts.push(self.part(gpu));
        (self, parts.len() - 1)
    }

    /// [`Self::verdicts`] of part `at` of what [`Gpu::read_back_parts`] returned.
    pub fn verdicts_at(&self, read: &[Vec<u8>], at: usize) -> Vec<Result<()>> {
        self.verdicts(read.get(at).map(Vec::as_slice).unwrap_or(&[]))
    }

    /// What each status word says, from their bytes read back after the stream finished
    /// (missing words are an error).
    pub fn verdicts(&self, bytes: &[u8]) -> Vec<Result<()>> {
        (0..self.words)
            .map(|i| match bytes.get(8 * i..8 * i + 8) {
                Some(b) => {
                    let w = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
                    status_error(self.kernel, w).map_or(Ok(()), Err)
                }
                None => Err(Error::Gpu(format!(
                    "{}: status word {i} was not read back",
                    self.kernel
                ))),
            })
            .collect()
    }
}

/// What a batched launch (one row of a table per item) sends to the device, in one allocation
/// filled by one copy (`Gpu::copy_pack`): its table of `u64` words, its status words
/// (all ones, one a row), zeroed scratch words, and room for its outputs after them (never
/// copied). Instead of an allocation and a copy for the table, an allocation and a fill for the
/// status and for the scratch, and an allocation per output: what a small table's read pays
/// per operation, not per byte.
struct Packed {
    /// Device address of the table.
    table: u64,
    /// Device address of the zeroed scratch words.
    zeros: u64,
    check: QueuedCheck,
    /// Each output's room, a view of the allocation.
    outs: Vec<GpuBuffer>,
}

impl Packed {
    /// Lays out and uploads the pack; `table` is given the outputs' device addresses (the
    /// allocation exists before the table is written) and returns the table's words, exactly
    /// `table_words` of them.
    fn upload(
        gpu: &Gpu,
        kernel: &'static str,
        table_words: usize,
        status_words: usize,
        zero_words: usize,
        outs: &[usize],
        table: impl FnOnce(&[u64]) -> Vec<u64>,
    ) -> Result<Packed> {
        let status = vec![u64::MAX; status_words.max(1)];
        let zeros = vec![0u64; zero_words.max(1)];
        fn layout<'b>(parts: [&'b [u64]; 3], outs: &[usize]) -> (Pack<'b>, [usize; 3], Vec<usize>) {
            let mut pack = Pack::default();
            let at = parts.map(|p| pack.place_values(p));
            let outs_at: Vec<usize> = outs.iter().map(|&n| pack.tail(n)).collect();
            (pack, at, outs_at)
        }
        let sized = vec![0u64; table_words.max(1)];
        let (pack, _, outs_at) = layout([&sized, &status, &zeros], outs);
        let arena = Arc::new(gpu.alloc::<u8>(pack.len())?);
        let base = gpu.ptr(&arena);
        let addresses: Vec<u64> = outs_at.iter().map(|&at| base + at as u64).collect();
        let mut words = table(&addresses);
        if words.len() != table_words {
            return Err(Error::Gpu(format!(
                "{kernel}: a table of {} words, {table_words} laid out",
                words.len()
            )));
        }
        if words.is_empty() {
            words.push(0);
        }
        let (pack, [table_at, status_at, zeros_at], _) = layout([&words, &status, &zeros], outs);
        gpu.copy_pack(&pack, &arena)?;
        Ok(Packed {
            table: base + table_at as u64,
            zeros: base + zeros_at as u64,
            check: QueuedCheck {
                status: gpu.view::<u64>(&arena, status_at, status_words.max(1))?,
                words: status_words,
                kernel,
            },
            outs: outs
                .iter()
                .zip(outs_at)
                .map(|(&n, at)| gpu.view::<u8>(&arena, at, n.max(1)))
                .collect::<Result<_>>()?,
        })
    }
}

/// Checks the chunk tables of a utf8 column of `n` strings and `text` bytes
/// (`GpuData::Utf8` in `tessera`): `value_starts` and `data_starts` have one entry a chunk plus
/// one, start at 0, never decrease and end at `n` and `text`; and the text fits the offset type
/// (i32 unless `large`). Returns the chunk count.
pub fn check_utf8_chunks(
    n: u64,
    value_starts: &[u64],
    data_starts: &[u64],
    large: bool,
) -> Result<u32> {
    let ok = |s: &[u64], last: Option<u64>| {
        s.len() >= 2
            && s[0] == 0
            && s.windows(2).all(|w| w[0] <= w[1])
            && last.is_none_or(|l| s.last() == Some(&l))
    };
    if value_starts.len() != data_starts.len()
        || !ok(value_starts, Some(n))
        || !ok(data_starts, None)
    {
        return Err(Error::InvalidArgument(
            "utf8 chunk tables: one start a chunk plus the end, ascending from 0".into(),
        ));
    }
    let text = data_starts[data_starts.len() - 1];
    if !large && text > i32::MAX as u64 {
        return Err(Error::InvalidArgument(format!(
            "{text} bytes of text do not fit utf8's i32 offsets: use large_utf8"
        )));
    }
    u32::try_from(value_starts.len() - 1)
        .map_err(|_| Error::InvalidArgument("too many utf8 chunks for one launch".into()))
}

/// Arrow offsets (`n + 1` entries, i32 or, when `large`, i64, `offsets[0] = 0`) of a utf8
/// column of `n` strings whose `ends` (u32, relative to their chunk's text) and chunk tables
/// are those of `GpuData::Utf8` (see [`check_utf8_chunks`]).
pub fn utf8_offsets(
    gpu: &Gpu,
    ends: &CudaSlice<u8>,
    n: u64,
    value_starts: &[u64],
    data_starts: &[u64],
    large: bool,
) -> Result<CudaSlice<u8>> {
    let width = if large { 8 } else { 4 };
    let out_len = n + 1;
    let mut out = gpu.alloc::<u8>(byte_len(out_len, width)?)?;
    if n == 0 && value_starts == [0] && data_starts == [0] {
        // A column with no chunks: the single offset 0.
        gpu.fill_bytes(&mut out, 0)?;
        return Ok(out);
    }
    let chunks = check_utf8_chunks(n, value_starts, data_starts, large)?;
    let (vs, ds) = (gpu.upload(value_starts)?, gpu.upload(data_starts)?);
    let name = if large {
        "ts_arrow_utf8_offsets_i64"
    } else {
        "ts_arrow_utf8_offsets_i32"
    };
    let f = gpu.function(Module::ArrowLayout, name)?;
    let ends_len = (ends.len() / 4) as u64;
    let (pe, pv, pd, po) = (gpu.ptr(ends), gpu.ptr(&vs), gpu.ptr(&ds), gpu.ptr(&out));
    checked(gpu, name, |ps| {
        // SAFETY: matches ts_arrow_utf8_offsets_*(ends, ends_len, value_starts, data_starts,
        // chunks, n, out, out_len, status); the kernel checks n and out_len against the
        // lengths given, which are those of the live buffers above.
        unsafe {
            gpu.launch(
                &f,
                grid(n),
                THREADS,
                &[&pe, &ends_len, &pv, &pd, &chunks, &n, &po, &out_len, &ps],
            )
        }
    })?;
    Ok(out)
}

/// Arrow offsets (`n + 1` entries, i32 or, when `large`, i64, `offsets[0] = 0`) of a binary
/// column of `n` values from their `lengths` (u32), whose bytes, back to back, are `data_len`
/// long: the lengths widened, then a device-wide sum scan. Fails when the lengths add up to
/// more than `data_len` (consumers would read past the bytes) or, for i32, past `i32::MAX`.
pub fn binary_offsets(
    gpu: &Gpu,
    lengths: &CudaSlice<u8>,
    n: u64,
    data_len: u64,
    large: bool,
) -> Result<CudaSlice<u8>> {
    use crate::primitives::scan::{self, Item};
    let widened = gpu.alloc::<u8>(byte_len(n, 8)?)?;
    let wide = gpu.alloc::<u8>(byte_len(n + 1, 8)?)?;
    let partials = gpu.alloc::<u64>(scan::partials_len(n))?;
    let (pl, pw, po) = (gpu.ptr(lengths), gpu.ptr(&widened), gpu.ptr(&wide));
    let lengths_len = (lengths.len() / 4) as u64;
    let widened_len = (widened.len() / 8) as u64;
    let f = gpu.function(Module::ArrowLayout, "ts_arrow_widen_u32_u64")?;
    checked(gpu, "ts_arrow_widen_u32_u64", |ps| {
        // SAFETY: matches ts_arrow_widen_u32_u64(lengths, lengths_len, n, out, out_len, status),
        // with the live buffers' lengths.
        unsafe {
            gpu.launch(
                &f,
                grid(n),
                THREADS,
                &[&pl, &lengths_len, &n, &pw, &widened_len, &ps],
            )
        }
    })?;
    gpu.fill_bytes_raw(po, 0, 8)?;
    if n > 0 {
        // The inclusive scan one entry on: offsets[i + 1] = lengths[0] + ... + lengths[i].
        scan::sum(gpu, Item::U64, pw, n, po + 8, true, gpu.ptr(&partials))?;
    }
    // The scan leaves the total in its scratch's last entry (a few entries a million values).
    let total = if n > 0 {
        let mut p = vec![0u64; scan::partials_len(n)];
        gpu.download(&partials, &mut p)?;
        p[p.len() - 1]
    } else {
        0
    };
    if total > data_len {
        return Err(Error::CountMismatch {
            what: "binary bytes vs the sum of their lengths",
            expected: total,
            found: data_len,
        });
    }
    if large {
        return Ok(wide);
    }
    if total > i32::MAX as u64 {
        return Err(Error::InvalidArgument(format!(
            "{total} bytes of binary values do not fit binary's i32 offsets: use large_binary"
        )));
    }
    let out = gpu.alloc::<u8>(byte_len(n + 1, 4)?)?;
    let (count, out_len) = (n + 1, (out.len() / 4) as u64);
    let wide_len = (wide.len() / 8) as u64;
    let pn = gpu.ptr(&out);
    let f = gpu.function(Module::ArrowLayout, "ts_arrow_narrow_offsets_i32")?;
    checked(gpu, "ts_arrow_narrow_offsets_i32", |ps| {
        // SAFETY: matches ts_arrow_narrow_offsets_i32(wide, wide_len, n, out, out_len, status),
        // with the live buffers' lengths.
        unsafe {
            gpu.launch(
                &f,
                grid(count),
                THREADS,
                &[&po, &wide_len, &count, &pn, &out_len, &ps],
            )
        }
    })?;
    Ok(out)
}

/// Arrow Decimal128 values (i128 little-endian, 16 bytes each) of `n` stored i64 values.
pub fn widen_i64_to_i128(gpu: &Gpu, values: &CudaSlice<u8>, n: u64) -> Result<CudaSlice<u8>> {
    let out = gpu.alloc::<u8>(byte_len(n, 16)?)?;
    let f = gpu.function(Module::ArrowLayout, "ts_arrow_widen_i64_i128")?;
    let (pi, po) = (gpu.ptr(values), gpu.ptr(&out));
    let (in_len, out_len) = ((values.len() / 8) as u64, (out.len() / 16) as u64);
    checked(gpu, "ts_arrow_widen_i64_i128", |ps| {
        // SAFETY: matches ts_arrow_widen_i64_i128(in, in_len, n, out, out_len, status), with the
        // live buffers' lengths.
        unsafe {
            gpu.launch(
                &f,
                grid(n),
                THREADS,
                &[&pi, &in_len, &n, &po, &out_len, &ps],
            )
        }
    })?;
    Ok(out)
}

/// Checks on the device the utf8 columns of a read once decoded: the end offsets (`ends`, u32,
/// `n` of them) and the text (`text`) of chunks decoded back to back. Chunk `k` holds strings
/// `value_starts[k] .. value_starts[k + 1]` (`chunks + 1` entries from 0 to `n`, never
/// decreasing) and `text_sizes[k]` bytes of text, after the chunks before it; within a chunk the
/// ends never decrease and the last is the text size; an empty chunk has no text. The text is
/// valid UTF-8 and no string starts or ends inside a character, what Arrow's `Utf8` and
/// `LargeUtf8` arrays promise their readers. One launch and one status word for any number of
/// columns, instead of downloading them. A fault is `Error::ValueOutOfRange` whose `index` is
/// the lowest faulty string (an end offset) or the first string of the lowest chunk whose text
/// is not UTF-8 (`ty` [`UTF8_TEXT`]); the host names its chunk with [`chunk_of`].
pub fn check_utf8(
    gpu: &Gpu,
    ends: &CudaSlice<u8>,
    n: u64,
    value_starts: &[u64],
    text_sizes: &[u64],
    text: &CudaSlice<u8>,
) -> Result<()> {
    let Some(q) = check_utf8_queued(gpu, ends, n, value_starts, text_sizes, text)? else {
        return Ok(());
    };
    let read = gpu.read_back_parts(&[q.part(gpu)])?;
    q.verdicts(&read[0]).remove(0)
}

/// What [`check_utf8`] calls text that is not UTF-8, or a string that starts or ends inside a
/// character (the `ty` of its `Error::ValueOutOfRange`).
pub const UTF8_TEXT: &str = "utf8 text (valid UTF-8, strings on character boundaries)";

/// [`check_utf8`] queued without waiting: the host's checks are done (an error now), the
/// device's come back through the returned status word (`None` when there are no strings).
/// `ends` and `text` must live until the status is read back.
pub fn check_utf8_queued(
    gpu: &Gpu,
    ends: &CudaSlice<u8>,
    n: u64,
    value_starts: &[u64],
    text_sizes: &[u64],
    text: &CudaSlice<u8>,
) -> Result<Option<QueuedCheck>> {
    let ok = value_starts.len() == text_sizes.len() + 1
        && value_starts.first() == Some(&0)
        && value_starts.last() == Some(&n)
        && value_starts.windows(2).all(|w| w[0] <= w[1]);
    if !ok {
        return Err(Error::InvalidArgument(
            "utf8 chunk tables: one start a chunk plus the end, ascending from 0".into(),
        ));
    }
    if let Some(k) = (0..text_sizes.len())
        .find(|&k| value_starts[k] == value_starts[k + 1] && text_sizes[k] != 0)
    {
        return Err(Error::ValueOutOfRange {
            index: value_starts[k],
            ty: "utf8 end offset (an empty chunk has no text)",
            found: text_sizes[k],
        });
    }
    if n == 0 {
        return Ok(None);
    }
    let chunks = u32::try_from(text_sizes.len())
        .map_err(|_| Error::InvalidArgument("too many utf8 chunks for one launch".into()))?;
    // The three tables in one upload: value_starts, text_sizes, then data_starts (the sizes
    // summed; a sum past the text is the kernel's TS_AL_SIZE, not an overflow here).
    let mut tables: Vec<u64> = value_starts.iter().chain(text_sizes).copied().collect();
    let mut at = 0u64;
    tables.push(0);
    for &size in text_sizes {
        at = at.saturating_add(size);
        tables.push(at);
    }
    let packed = Packed::upload(gpu, "ts_arrow_check_utf8", tables.len(), 1, 0, &[], |_| {
        tables
    })?;
    let f = gpu.function(Module::ArrowLayout, "ts_arrow_check_utf8")?;
    let ends_len = (ends.len() / 4) as u64;
    let text_len = text.len() as u64;
    let pe = gpu.ptr(ends);
    let pv = packed.table;
    let pt = pv + 8 * value_starts.len() as u64;
    let pd = pt + 8 * text_sizes.len() as u64;
    let px = gpu.ptr(text);
    // Threads cover the strings and the text bytes, whichever are more.
    let work = n.max(at.min(text_len));
    let q = packed.check;
    let ps = gpu.ptr(&q.status);
    // SAFETY: matches ts_arrow_check_utf8(ends, ends_len, value_starts, text_sizes,
    // data_starts, chunks, n, text, text_len, status); value_starts holds chunks + 1 entries
    // ending at n (checked above), text_sizes chunks and data_starts chunks + 1 right after
    // them, and ends_len and text_len are the live buffers' lengths. The tables share the
    // status's allocation, which lives with the caller (as do `ends` and `text`) until it reads
    // the status back.
    unsafe {
        gpu.launch(
            &f,
            grid(work),
            THREADS,
            &[
                &pe, &ends_len, &pv, &pt, &pd, &chunks, &n, &px, &text_len, &ps,
            ],
        )?;
    }
    Ok(Some(q))
}

/// The chunk that string `index` belongs to under `value_starts` (as [`check_utf8`] takes
/// them): the last chunk starting at or before it.
pub fn chunk_of(value_starts: &[u64], index: u64) -> usize {
    value_starts
        .partition_point(|&s| s <= index)
        .saturating_sub(1)
        .min(value_starts.len().saturating_sub(2))
}

/// `n` values of `width` bytes (1, 2, 4 or 8), one a row, from a run-encoded column
/// (`table.md` §9): `runs` values and their `ends` (u64, strictly ascending, the last `n`).
/// Faulty ends are an error naming the lowest faulty run.
pub fn expand_runs(
    gpu: &Gpu,
    values: &CudaSlice<u8>,
    ends: &CudaSlice<u8>,
    runs: u64,
    width: usize,
    n: u64,
) -> Result<CudaSlice<u8>> {
    if ![1, 2, 4, 8].contains(&width) {
        return Err(Error::InvalidArgument(format!(
            "runs of {width}-byte values (1, 2, 4 or 8)"
        )));
    }
    let out = gpu.alloc::<u8>(byte_len(n, width)?.max(1))?;
    let f = gpu.function(Module::ArrowLayout, "ts_arrow_expand_runs")?;
    let (pv, pe, po) = (gpu.ptr(values), gpu.ptr(ends), gpu.ptr(&out));
    let values_len = (values.len() / width) as u64;
    let ends_len = (ends.len() / 8) as u64;
    let out_len = (out.len() / width) as u64;
    let w = width as u32;
    checked(gpu, "ts_arrow_expand_runs", |ps| {
        // SAFETY: matches ts_arrow_expand_runs(values, values_len, ends, ends_len, runs, width,
        // n, out, out_len, status), with the live buffers' lengths in values of `width` bytes
        // (u64 for the ends).
        unsafe {
            gpu.launch(
                &f,
                grid(n.max(runs)),
                THREADS,
                &[
                    &pv,
                    &values_len,
                    &pe,
                    &ends_len,
                    &runs,
                    &w,
                    &n,
                    &po,
                    &out_len,
                    &ps,
                ],
            )
        }
    })?;
    Ok(out)
}

/// One run-encoded field for [`expand_runs_many`]: `runs` values of `width` bytes (1, 2, 4 or
/// 8) and their u64 `ends` (strictly ascending, the last `n`), to become `n` values.
#[derive(Debug, Clone, Copy)]
pub struct RunField<'a> {
    /// One value a run.
    pub values: &'a CudaSlice<u8>,
    /// The runs' ends (u64).
    pub ends: &'a CudaSlice<u8>,
    /// Runs held.
    pub runs: u64,
    /// Bytes a value.
    pub width: usize,
    /// Rows to expand to.
    pub n: u64,
}

/// [`expand_runs`] for many fields in one launch, queued without waiting: each field's output
/// buffer, and one status word a field (its faulty ends, as [`expand_runs`] reports them).
/// The inputs must live until the status is read back.
pub fn expand_runs_many(
    gpu: &Gpu,
    fields: &[RunField<'_>],
) -> Result<(Vec<GpuBuffer>, Option<QueuedCheck>)> {
    if fields.is_empty() {
        return Ok((Vec::new(), None));
    }
    let count = launch_rows(fields.len(), "run-encoded fields")?;
    let mut out_bytes = Vec::with_capacity(fields.len());
    let mut widest = 1u64;
    for f in fields {
        if ![1, 2, 4, 8].contains(&f.width) {
            return Err(Error::InvalidArgument(format!(
                "runs of {}-byte values (1, 2, 4 or 8)",
                f.width
            )));
        }
        out_bytes.push(byte_len(f.n, f.width)?.max(1));
        widest = widest.max(f.n.max(f.runs));
    }
    // The outputs are views of the table's allocation.
    let mut packed = Packed::upload(
        gpu,
        "ts_arrow_expand_runs_many",
        9 * fields.len(),
        fields.len(),
        0,
        &out_bytes,
        |outs| {
            let mut table: Vec<u64> = Vec::with_capacity(9 * fields.len());
            for ((f, &out), &bytes) in fields.iter().zip(outs).zip(&out_bytes) {
                // The row of `TsAlRuns`: values, values_len, ends, ends_len, runs, n, out,
                // out_len, width; lengths are the live buffers' in values of their own width.
                table.extend([
                    gpu.ptr(f.values),
                    (f.values.len() / f.width) as u64,
                    gpu.ptr(f.ends),
                    (f.ends.len() / 8) as u64,
                    f.runs,
                    f.n,
                    out,
                    (bytes / f.width) as u64,
                    f.width as u64,
                ]);
            }
            table
        },
    )?;
    let outs = std::mem::take(&mut packed.outs);
    let q = packed.check;
    let f = gpu.function(Module::ArrowLayout, "ts_arrow_expand_runs_many")?;
    let (pt, ps) = (packed.table, gpu.ptr(&q.status));
    // SAFETY: matches ts_arrow_expand_runs_many(fields, count, status): the table at `pt` holds
    // `count` rows of TsAlRuns (nine 8-byte words each, as laid out above) whose lengths are
    // those of live buffers, and `status` one word a field; blockIdx.y < count (the grid's y
    // extent). The table and the outputs share the status's allocation; inputs, outputs and
    // the status live with the caller until it reads the status back.
    unsafe {
        gpu.launch_2d(&f, (grid(widest), count), THREADS, &[&pt, &count, &ps])?;
    }
    Ok((outs, Some(q)))
}

/// A dictionary-encoded field's codes and validity on the device ([`check_codes_many`]).
#[derive(Debug, Clone, Copy)]
pub struct CodeField<'a> {
    /// One code a row, `width` bytes each.
    pub codes: &'a CudaSlice<u8>,
    /// Bytes a code: 1, 2, 4 or 8.
    pub width: usize,
    /// Whether codes are signed (two's complement).
    pub signed: bool,
    /// The rows' validity bits (least significant first); `None`: every row is valid.
    pub validity: Option<&'a CudaSlice<u8>>,
    /// Rows.
    pub rows: u64,
    /// Values in the dictionary.
    pub dict_count: u64,
}

/// Checks on the device, for many dictionary-encoded fields in one launch, that every valid
/// row's code indexes its dictionary (at least 0, below the count), as Arrow's dictionary
/// arrays promise the readers that index with them; queued without waiting, one status word a
/// field (a fault: `Error::InvalidArgument` naming the lowest faulty row). The inputs must live
/// until the status is read back.
pub fn check_codes_many(gpu: &Gpu, fields: &[CodeField<'_>]) -> Result<Option<QueuedCheck>> {
    if fields.is_empty() {
        return Ok(None);
    }
    let count = launch_rows(fields.len(), "dictionary fields")?;
    let mut table: Vec<u64> = Vec::with_capacity(8 * fields.len());
    let mut most = 1u64;
    for f in fields {
        if ![1, 2, 4, 8].contains(&f.width) {
            return Err(Error::InvalidArgument(format!(
                "dictionary codes of {} bytes (1, 2, 4 or 8)",
                f.width
            )));
        }
        // The row of `TsAlCodes`: codes, codes_len, validity, validity_len, rows, dict_count,
        // width, is_signed; lengths are the live buffers'.
        table.extend([
            gpu.ptr(f.codes),
            (f.codes.len() / f.width) as u64,
            f.validity.map_or(0, |v| gpu.ptr(v)),
            f.validity.map_or(0, |v| v.len() as u64),
            f.rows,
            f.dict_count,
            f.width as u64,
            u64::from(f.signed),
        ]);
        most = most.max(f.rows);
    }
    let packed = Packed::upload(
        gpu,
        "ts_arrow_check_codes_many",
        table.len(),
        fields.len(),
        0,
        &[],
        |_| table,
    )?;
    let q = packed.check;
    let f = gpu.function(Module::ArrowLayout, "ts_arrow_check_codes_many")?;
    let (pt, ps) = (packed.table, gpu.ptr(&q.status));
    // SAFETY: matches ts_arrow_check_codes_many(fields, count, status): the table at `pt` holds `count`
    // rows of TsAlCodes (eight 8-byte words each, as laid out above, a null validity pointer
    // for none) whose lengths are those of live buffers, and `status` one word a field;
    // blockIdx.y < count (the grid's y extent). The table shares the status's allocation; the
    // inputs and the status live with the caller until it reads the status back.
    unsafe {
        gpu.launch_2d(&f, (grid(most), count), THREADS, &[&pt, &count, &ps])?;
    }
    Ok(Some(q))
}

/// A binary field's lengths on the device and the bytes stored for them
/// ([`check_lengths_many`]).
#[derive(Debug, Clone, Copy)]
pub struct LengthsField<'a> {
    /// One u32 length a value.
    pub lengths: &'a CudaSlice<u8>,
    /// Values (lengths).
    pub rows: u64,
    /// Bytes stored for them (the bytes column's value count).
    pub bytes: u64,
}

/// Checks on the device, for many binary fields (or binary dictionaries) in one launch, that
/// the lengths do not sum past the bytes stored, so offsets scanned from them stay inside the
/// values; queued without waiting, one status word a field (a fault: `Error::InvalidArgument`).
/// The lengths must live until the status is read back.
pub fn check_lengths_many(gpu: &Gpu, fields: &[LengthsField<'_>]) -> Result<Option<QueuedCheck>> {
    if fields.is_empty() {
        return Ok(None);
    }
    let count = launch_rows(fields.len(), "binary fields")?;
    let mut table: Vec<u64> = Vec::with_capacity(4 * fields.len());
    let mut most = 1u64;
    for f in fields {
        // The row of `TsAlLengths`: lengths, lengths_len (in lengths, the live buffer's), rows,
        // bytes.
        table.extend([
            gpu.ptr(f.lengths),
            (f.lengths.len() / 4) as u64,
            f.rows,
            f.bytes,
        ]);
        most = most.max(f.rows);
    }
    // Per field a u64 sum and a u32 arrival count (in u64 words), zeroed.
    let packed = Packed::upload(
        gpu,
        "ts_arrow_check_lengths_many",
        table.len(),
        fields.len(),
        2 * fields.len(),
        &[],
        |_| table,
    )?;
    let q = packed.check;
    let f = gpu.function(Module::ArrowLayout, "ts_arrow_check_lengths_many")?;
    let (pt, ps) = (packed.table, gpu.ptr(&q.status));
    let sums = packed.zeros;
    let arrived = sums + 8 * fields.len() as u64;
    // SAFETY: matches ts_arrow_check_lengths_many(fields, count, sums, arrived, status):
    // the table at `pt` holds `count` rows of TsAlLengths (four 8-byte words each, as laid out
    // above) whose lengths are those of live buffers, the zeroed scratch a u64 sum then a u32
    // count (within the second half's words) a field, `status` one word a field;
    // blockIdx.y < count. Table and scratch share the status's allocation; the lengths and
    // the status live with the caller until it reads the status back.
    unsafe {
        gpu.launch_2d(
            &f,
            (grid(most), count),
            THREADS,
            &[&pt, &count, &sums, &arrived, &ps],
        )?;
    }
    Ok(Some(q))
}

/// A byte range of a device buffer to be copied into a buffer of its own
/// ([`copy_parts_queued`]).
#[derive(Debug, Clone, Copy)]
pub struct CopyPart<'a> {
    /// The buffer the bytes are in.
    pub src: &'a CudaSlice<u8>,
    /// First byte of the range.
    pub at: usize,
    /// Bytes in the range.
    pub len: usize,
}

/// Copies each of `parts` into a new buffer of its own (at least one byte long), all in one
/// launch, queued without waiting: what a batch decoded as one column hands its columns,
/// instead of one queued copy a column. A range past its buffer is an error here; the kernel
/// checks again against the lengths it is given and reports in the returned status word. The
/// sources must live until the status is read back.
pub fn copy_parts_queued(
    gpu: &Gpu,
    parts: &[CopyPart<'_>],
) -> Result<(Vec<GpuBuffer>, Option<QueuedCheck>)> {
    if parts.is_empty() {
        return Ok((Vec::new(), None));
    }
    let count = launch_rows(parts.len(), "parts")?;
    let mut longest = 1u64;
    for p in parts {
        if p.at.checked_add(p.len).is_none_or(|end| end > p.src.len()) {
            return Err(Error::InvalidArgument(format!(
                "bytes {} .. {} + {} of a {}-byte buffer",
                p.at,
                p.at,
                p.len,
                p.src.len()
            )));
        }
        // The x blocks cover the longest part at 16 bytes a thread; the rest stride.
        longest = longest.max((p.len as u64).div_ceil(16));
    }
    // Each part's own buffer is a view of the table's allocation (at least one byte).
    let out_bytes: Vec<usize> = parts.iter().map(|p| p.len.max(1)).collect();
    let mut packed = Packed::upload(
        gpu,
        "ts_arrow_copy_parts",
        6 * parts.len(),
        1,
        0,
        &out_bytes,
        |outs| {
            let mut table: Vec<u64> = Vec::with_capacity(6 * parts.len());
            for ((p, &out), &bytes) in parts.iter().zip(outs).zip(&out_bytes) {
                // The row of `TsAlCopy`: src, src_len, at, dst, dst_len, len (bytes).
                table.extend([
                    gpu.ptr(p.src),
                    p.src.len() as u64,
                    p.at as u64,
                    out,
                    bytes as u64,
                    p.len as u64,
                ]);
            }
            table
        },
    )?;
    let outs = std::mem::take(&mut packed.outs);
    let q = packed.check;
    let f = gpu.function(Module::ArrowLayout, "ts_arrow_copy_parts")?;
    let (pt, ps) = (packed.table, gpu.ptr(&q.status));
    // SAFETY: matches ts_arrow_copy_parts(parts, count, status): the table at `pt` holds `count` rows of
    // TsAlCopy (six 8-byte words each, as laid out above) whose lengths are those of live
    // buffers, and `status` one word; blockIdx.y < count (the grid's y extent). The table and
    // the outputs share the status's allocation; sources, outputs and the status live with the
    // caller until it reads the status back.
    unsafe {
        gpu.launch_2d(&f, (grid(longest), count), THREADS, &[&pt, &count, &ps])?;
    }
    Ok((outs, Some(q)))
}

/// The powers of ten of one float type, exactly the CPU decoder's: `f10[i]` = 10^i, `if10[i]`
/// the value nearest 10^-i, `i` up to the type's largest exponent.
#[derive(Debug, Clone, Copy)]
pub enum AlpTables<'a> {
    /// Float64 (`e <= 18`).
    F64 {
        /// 10^i.
        f10: &'a [f64],
        /// Nearest 10^-i.
        if10: &'a [f64],
    },
    /// Float32 (`e <= 10`).
    F32 {
        /// 10^i.
        f10: &'a [f32],
        /// Nearest 10^-i.
        if10: &'a [f32],
    },
}

/// An ALP field's stored columns on the device (`table.md` §8.1), all little-endian.
#[derive(Debug, Clone, Copy)]
pub struct AlpColumns<'a> {
    /// i64 digits, one a row.
    pub digits: &'a CudaSlice<u8>,
    /// u16 packed `(e, f)`, one a vector.
    pub params: &'a CudaSlice<u8>,
    /// Params held (vectors).
    pub params_len: u64,
    /// u64 exception rows.
    pub exception_rows: &'a CudaSlice<u8>,
    /// u32 (Float32) or u64 (Float64) exception bit patterns.
    pub exception_bits: &'a CudaSlice<u8>,
    /// Exceptions held (in both columns).
    pub exceptions: u64,
}

/// The bit patterns (u64 for Float64, u32 for Float32) of `n` rows of an ALP field of
/// `rows_per_vector`-row vectors.
pub fn alp_decode(
    gpu: &Gpu,
    cols: AlpColumns<'_>,
    tables: AlpTables<'_>,
    rows_per_vector: u64,
    n: u64,
) -> Result<CudaSlice<u8>> {
    let (width, max_e, name, exc_name) = match tables {
        AlpTables::F64 { f10, if10 } => (
            8,
            f10.len().min(if10.len()),
            "ts_arrow_alp_f64",
            "ts_arrow_alp_exceptions_u64",
        ),
        AlpTables::F32 { f10, if10 } => (
            4,
            f10.len().min(if10.len()),
            "ts_arrow_alp_f32",
            "ts_arrow_alp_exceptions_u32",
        ),
    };
    if max_e == 0 {
        return Err(Error::InvalidArgument("empty ALP power tables".into()));
    }
    let max_e = (max_e - 1) as u32;
    let (f10, if10) = match tables {
        AlpTables::F64 { f10, if10 } => (
            gpu.upload(&le_bytes(f10.iter().map(|x| x.to_le_bytes())))?,
            gpu.upload(&le_bytes(if10.iter().map(|x| x.to_le_bytes())))?,
        ),
        AlpTables::F32 { f10, if10 } => (
            gpu.upload(&le_bytes(f10.iter().map(|x| x.to_le_bytes())))?,
            gpu.upload(&le_bytes(if10.iter().map(|x| x.to_le_bytes())))?,
        ),
    };
    let out = gpu.alloc::<u8>(byte_len(n, width)?)?;
    let out_len = (out.len() / width) as u64;
    let digits_len = (cols.digits.len() / 8) as u64;
    let params_len = cols.params_len.min((cols.params.len() / 2) as u64);
    let (pd, pp, pf, pi, po) = (
        gpu.ptr(cols.digits),
        gpu.ptr(cols.params),
        gpu.ptr(&f10),
        gpu.ptr(&if10),
        gpu.ptr(&out),
    );
    let f = gpu.function(Module::ArrowLayout, name)?;
    checked(gpu, name, |ps| {
        // SAFETY: matches ts_arrow_alp_*(digits, digits_len, params, params_len, f10, if10,
        // max_e, rows_per_vector, n, out, out_len, status); the tables hold max_e + 1 entries
        // and every length is that of the live buffer it describes.
        unsafe {
            gpu.launch(
                &f,
                grid(n),
                THREADS,
                &[
                    &pd,
                    &digits_len,
                    &pp,
                    &params_len,
                    &pf,
                    &pi,
                    &max_e,
                    &rows_per_vector,
                    &n,
                    &po,
                    &out_len,
                    &ps,
                ],
            )
        }
    })?;
    if cols.exceptions > 0 {
        let f = gpu.function(Module::ArrowLayout, exc_name)?;
        let (pr, pb) = (gpu.ptr(cols.exception_rows), gpu.ptr(cols.exception_bits));
        let count = cols.exceptions;
        let rows_len = (cols.exception_rows.len() / 8) as u64;
        let bits_len = (cols.exception_bits.len() / width) as u64;
        checked(gpu, exc_name, |ps| {
            // SAFETY: matches ts_arrow_alp_exceptions_*(rows, bits, count, rows_len, bits_len,
            // n, out, out_len, status), with the live buffers' lengths.
            unsafe {
                gpu.launch(
                    &f,
                    grid(count),
                    THREADS,
                    &[
                        &pr, &pb, &count, &rows_len, &bits_len, &n, &po, &out_len, &ps,
                    ],
                )
            }
        })?;
    }
    Ok(out)
}

/// The device address of `buf` (what the Arrow C Device Data Interface's buffers hold).
pub fn device_address(gpu: &Gpu, buf: &CudaSlice<u8>) -> u64 {
    gpu.ptr(buf)
}

/// The CUDA device ordinal of `gpu` (the Arrow C Device Data Interface's `device_id`).
pub fn device_ordinal(gpu: &Gpu) -> usize {
    gpu.ctx.ordinal()
}

fn le_bytes<const W: usize>(values: impl Iterator<Item = [u8; W]>) -> Vec<u8> {
    values.flatten().collect()
}

pub(crate) fn byte_len(n: u64, width: usize) -> Result<usize> {
    n.checked_mul(width as u64)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| Error::InvalidArgument(format!("{n} values too many for one buffer")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_tables_are_checked_and_counted() {
        assert_eq!(
            check_utf8_chunks(5, &[0, 2, 2, 5], &[0, 7, 7, 9], false).ok(),
            Some(3)
        );
        assert_eq!(check_utf8_chunks(0, &[0, 0], &[0, 0], false).ok(), Some(1));
        // Not ending at n, not ascending, not from 0, lengths differ, empty.
        assert!(check_utf8_chunks(6, &[0, 2, 5], &[0, 7, 9], false).is_err());
        assert!(check_utf8_chunks(5, &[0, 3, 2, 5], &[0, 1, 2, 3], false).is_err());
        assert!(check_utf8_chunks(5, &[0, 2, 5], &[0, 7, 6], false).is_err());
        assert!(check_utf8_chunks(5, &[1, 2, 5], &[0, 7, 9], false).is_err());
        assert!(check_utf8_chunks(5, &[0, 5], &[0, 3, 9], false).is_err());
        assert!(check_utf8_chunks(0, &[], &[], false).is_err());
    }

    #[test]
    fn text_past_i32_max_needs_large_utf8() {
        let big = i32::MAX as u64 + 1;
        match check_utf8_chunks(2, &[0, 1, 2], &[0, big - 1, big], false) {
            Err(e) => assert!(e.to_string().contains("use large_utf8"), "{e}"),
            Ok(c) => panic!("{c} chunks accepted"),
        }
        assert!(check_utf8_chunks(2, &[0, 1, 2], &[0, big - 1, big], true).is_ok());
        assert!(check_utf8_chunks(2, &[0, 1, 2], &[0, 1, i32::MAX as u64], false).is_ok());
    }

    #[test]
    fn status_words_name_the_row_and_problem() {
        assert!(status_error("k", u64::MAX).is_none());
        match status_error("k", (7 << 8) | ST_EXCEPTION_ROW) {
            Some(Error::ValueOutOfRange { index: 7, .. }) => {}
            other => panic!("{other:?}"),
        }
        let e = status_error("k", (3 << 8) | ST_OFFSET_LIMIT).expect("an error");
        assert!(e.to_string().contains("use large_utf8"), "{e}");
        assert!(matches!(status_error("k", ST_SIZE), Some(Error::Gpu(_))));
    }

    /// The status codes and launch width here are the kernel source's.
    #[test]
    fn constants_match_the_kernels() {
        let src = crate::kernels::source(Module::ArrowLayout).expect("embedded");
        for (name, v) in [
            ("TS_AL_SIZE", ST_SIZE),
            ("TS_AL_UTF8_END", ST_UTF8_END),
            ("TS_AL_OFFSET_LIMIT", ST_OFFSET_LIMIT),
            ("TS_AL_ALP_PARAM", ST_ALP_PARAM),
            ("TS_AL_EXCEPTION_ROW", ST_EXCEPTION_ROW),
            ("TS_AL_RUN_END", ST_RUN_END),
            ("TS_AL_THREADS", u64::from(THREADS)),
        ] {
            assert!(src.contains(&format!("#define {name} {v}")), "{name}");
        }
    }
}
