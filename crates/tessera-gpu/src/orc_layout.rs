//! ORC's decoded streams rearranged into Arrow's layout on the device (`kernels/orc/layout.cu`):
//! PRESENT bits into Arrow validity and null counts, values scattered to their rows (narrowed
//! from i64, float bytes copied, timestamps combined), booleans into Arrow bits, strings
//! (direct and dictionary) into i32 offsets and bytes. What `tessera_orc::gpu::read_device`
//! needs to leave ORC columns on the GPU as Arrow arrays.
//!
//! A column is a list of [`ColumnStripe`]s, one per stripe, naming the device addresses of its
//! streams (wherever the decoders left them) and the rows it covers. Row ranks (the value index
//! of each valid row) come from the device-wide sum scan of `primitives::scan` over the
//! validity words' popcounts. Every launch is checked: the kernels check every index against
//! the lengths they are given and report the lowest faulty row in a status word, which becomes
//! an [`Error`] here.

use cudarc::driver::CudaSlice;
use tessera_format::{Error, Result};

use crate::arrow_layout::{self, byte_len};
use crate::codag::download_range;
use crate::kernels::Module;
use crate::primitives::scan::{self, Item};
use crate::runtime::Gpu;

/// Threads per block of every kernel (`TS_OL_THREADS`).
const THREADS: u32 = 256;

/// Status codes of `orc/layout.cu` (`TS_OL_*`).
const ST_SIZE: u64 = 1;
const ST_COUNT: u64 = 2;
const ST_RANGE: u64 = 3;
const ST_TIMESTAMP: u64 = 4;
const ST_LENGTH: u64 = 5;
const ST_DICT_ID: u64 = 6;
const ST_OFFSET_LIMIT: u64 = 7;
const ST_PRESENT: u64 = 8;
const ST_UTF8: u64 = 9;

/// One stripe's part of a column: its rows and where its streams lie on the device. Addresses
/// are raw device addresses (0 where a stream is absent); lengths count elements of the
/// stream's type there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct ColumnStripe {
    /// First row of the column stripe in the column.
    pub row_start: u64,
    /// Its rows.
    pub rows: u64,
    /// PRESENT bits (most significant first, one a row), 0 when every row is valid.
    pub present: u64,
    /// Bytes at `present`.
    pub present_len: u64,
    /// Values of the valid rows: i64 integers, bytes (tinyint), bits (boolean, most
    /// significant first), float or double bytes, string lengths (i64) or dictionary ids (i64).
    pub values: u64,
    /// Values at `values` (bits for booleans).
    pub values_len: u64,
    /// Timestamps: the nanoseconds codes (i64); strings: the bytes (DATA, or DICTIONARY_DATA).
    pub aux: u64,
    /// Elements at `aux`.
    pub aux_len: u64,
    /// Dictionary strings: the entries' lengths (i64).
    pub dict: u64,
    /// Entries at `dict`.
    pub dict_len: u64,
    /// Dictionary strings: the column stripe's first entry among the column's entries (column stripes'
    /// dictionaries back to back).
    pub dict_base: u64,
    /// 1 when the column stripe is a dictionary-encoded string stripe (`values` are ids), else 0
    /// (ORC writers choose the encoding per stripe).
    pub is_dict: u64,
}

/// How [`scatter`] writes values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scatter {
    /// i64 values narrowed to i8 (range checked).
    I8 = 0,
    /// i64 values narrowed to i16.
    I16 = 1,
    /// i64 values narrowed to i32 (ints, dates).
    I32 = 2,
    /// i64 values as they are.
    I64 = 3,
    /// Bytes as i8 (ORC tinyint, byte RLE).
    Byte = 4,
    /// Four raw little-endian bytes (float).
    F32 = 5,
    /// Eight raw little-endian bytes (double).
    F64 = 6,
    /// Seconds from 2015 (`values`) and nanosecond codes (`aux`) as Arrow nanoseconds since
    /// the Unix epoch.
    TimestampNs = 7,
}

impl Scatter {
    /// Output bytes per row.
    pub fn width(self) -> usize {
        match self {
            Scatter::I8 | Scatter::Byte => 1,
            Scatter::I16 => 2,
            Scatter::I32 | Scatter::F32 => 4,
            _ => 8,
        }
    }
}

/// A column's validity on the device: Arrow's bitmap and the rank of each 32-row word.
#[derive(Debug)]
pub struct Validity {
    /// Arrow's validity bits (least significant first), whole u32 words.
    pub bits: CudaSlice<u8>,
    /// Valid rows before each 32-row word (u32), the exclusive scan of the words' popcounts.
    ranks: CudaSlice<u8>,
    /// Rows.
    pub rows: u64,
    /// Null rows.
    pub null_count: u64,
    parts: CudaSlice<u64>,
    nparts: u32,
}

fn grid(n: u64) -> u32 {
    arrow_layout::grid_for(n, THREADS)
}

/// The error a status word says, `None` when it is all ones (no error).
fn status_error(kernel: &str, status: u64) -> Option<Error> {
    if status == u64::MAX {
        return None;
    }
    let (row, code) = (status >> 8, status & 0xff);
    Some(match code {
        ST_COUNT => Error::CountMismatch {
            what: "values of the ORC stream (its PRESENT stream has more valid rows)",
            expected: row + 1,
            found: row,
        },
        ST_RANGE => Error::ValueOutOfRange {
            index: row,
            ty: "the column's Arrow integer width",
            found: row,
        },
        ST_TIMESTAMP => Error::ValueOutOfRange {
            index: row,
            ty: "timestamp nanoseconds (code out of range or overflow)",
            found: row,
        },
        ST_LENGTH => Error::InvalidArgument(format!(
            "row {row}: a string length is negative or runs past its stream's bytes"
        )),
        ST_DICT_ID => Error::ValueOutOfRange {
            index: row,
            ty: "dictionary id (below the stripe's dictionary size)",
            found: row,
        },
        ST_OFFSET_LIMIT => Error::InvalidArgument(
            "a string column of 2 GiB or more (Arrow utf8 offsets are i32)".into(),
        ),
        ST_PRESENT => Error::InvalidArgument(format!(
            "row {row}: the PRESENT stream does not cover its stripe's rows"
        )),
        ST_UTF8 => Error::InvalidArgument(format!("row {row}: a string is not valid UTF-8")),
        ST_SIZE => Error::Gpu(format!(
            "{kernel}: buffer lengths or the column stripes do not cover the rows (at {row})"
        )),
        c => Error::Gpu(format!("{kernel}: unknown status code {c} at {row}")),
    })
}

fn checked(gpu: &Gpu, kernel: &str, launch: impl FnOnce(u64) -> Result<()>) -> Result<()> {
    arrow_layout::checked_with(gpu, kernel, status_error, launch)
}

fn words(rows: u64) -> u64 {
    rows.div_ceil(32)
}

/// Arrow's validity of a column of `rows` rows made of `parts` (their rows back to back from
/// row 0), its word ranks and its null count.
///
/// # Safety
/// Every non-zero address in `parts` must point to live device memory of at least the
/// length given beside it (elements of the stream's type), and stay so while the returned
/// [`Validity`] is used by [`scatter`], [`scatter_bool`] or [`strings`].
pub unsafe fn validity(gpu: &Gpu, parts: &[ColumnStripe], rows: u64) -> Result<Validity> {
    let nparts = u32::try_from(parts.len())
        .map_err(|_| Error::InvalidArgument("more than 2^32 column stripes".into()))?;
    if rows >= u64::from(u32::MAX) {
        return Err(Error::InvalidArgument(format!(
            "{rows} rows in one column: ranks are u32"
        )));
    }
    let flat: Vec<u64> = parts.iter().flat_map(fields).collect();
    let parts = gpu.upload(&flat)?;
    let nw = words(rows);
    let bits = gpu.alloc::<u8>(byte_len(nw.max(1), 4)?)?;
    let counts = gpu.alloc::<u8>(byte_len(nw.max(1), 4)?)?;
    let ranks = gpu.alloc::<u8>(byte_len(nw.max(1), 4)?)?;
    let partials = gpu.alloc::<u8>(scan::partials_len(nw) * 4)?;
    let f = gpu.function(Module::OrcLayout, "ts_orc_validity")?;
    let (ps, pb, pc) = (gpu.ptr(&parts), gpu.ptr(&bits), gpu.ptr(&counts));
    checked(gpu, "ts_orc_validity", |st| {
        // SAFETY: matches ts_orc_validity(parts, nparts, rows, words, words_len, counts, status);
        // `bits` and `counts` hold nw u32, the column stripe addresses are the caller's contract.
        unsafe {
            gpu.launch(
                &f,
                grid(nw),
                THREADS,
                &[&ps, &nparts, &rows, &pb, &nw, &pc, &st],
            )
        }
    })?;
    scan::sum(
        gpu,
        Item::U32,
        pc,
        nw,
        gpu.ptr(&ranks),
        false,
        gpu.ptr(&partials),
    )?;
    let mut total = [0u8; 4];
    download_range(gpu, &partials, partials.len() - 4, &mut total)?;
    let valid = u64::from(u32::from_le_bytes(total));
    let null_count = rows
        .checked_sub(valid)
        .ok_or_else(|| Error::Gpu(format!("{valid} valid rows counted among {rows}")))?;
    Ok(Validity {
        bits,
        ranks,
        rows,
        null_count,
        parts,
        nparts,
    })
}

fn fields(s: &ColumnStripe) -> [u64; 12] {
    [
        s.row_start,
        s.rows,
        s.present,
        s.present_len,
        s.values,
        s.values_len,
        s.aux,
        s.aux_len,
        s.dict,
        s.dict_len,
        s.dict_base,
        s.is_dict,
    ]
}

/// The column's fixed-width values at their rows, `mode.width()` bytes each, nulls zero.
pub fn scatter(gpu: &Gpu, v: &Validity, mode: Scatter) -> Result<CudaSlice<u8>> {
    let out = gpu.alloc::<u8>(byte_len(v.rows.max(1), mode.width())?)?;
    let f = gpu.function(Module::OrcLayout, "ts_orc_scatter")?;
    let (ps, pw, pr, po) = (
        gpu.ptr(&v.parts),
        gpu.ptr(&v.bits),
        gpu.ptr(&v.ranks),
        gpu.ptr(&out),
    );
    let (nw, m, out_len) = (words(v.rows), mode as u32, out.len() as u64);
    checked(gpu, "ts_orc_scatter", |st| {
        // SAFETY: matches ts_orc_scatter(parts, nparts, rows, words, ranks, words_len, mode, out,
        // out_len, status) with the live buffers' lengths; the column stripes' addresses were
        // checked live by `validity`'s contract.
        unsafe {
            gpu.launch(
                &f,
                grid(v.rows),
                THREADS,
                &[
                    &ps, &v.nparts, &v.rows, &pw, &pr, &nw, &m, &po, &out_len, &st,
                ],
            )
        }
    })?;
    Ok(out)
}

/// The column's booleans as Arrow bits (least significant first, whole u32 words), nulls 0.
pub fn scatter_bool(gpu: &Gpu, v: &Validity) -> Result<CudaSlice<u8>> {
    let nw = words(v.rows);
    let out = gpu.alloc::<u8>(byte_len(nw.max(1), 4)?)?;
    let f = gpu.function(Module::OrcLayout, "ts_orc_scatter_bool")?;
    let (ps, pw, pr, po) = (
        gpu.ptr(&v.parts),
        gpu.ptr(&v.bits),
        gpu.ptr(&v.ranks),
        gpu.ptr(&out),
    );
    let out_len = (out.len() / 4) as u64;
    checked(gpu, "ts_orc_scatter_bool", |st| {
        // SAFETY: matches ts_orc_scatter_bool(parts, nparts, rows, words, ranks, words_len, out,
        // out_len, status) with the live buffers' lengths.
        unsafe {
            gpu.launch(
                &f,
                grid(nw),
                THREADS,
                &[&ps, &v.nparts, &v.rows, &pw, &pr, &nw, &po, &out_len, &st],
            )
        }
    })?;
    Ok(out)
}

/// The column's strings as Arrow's i32 offsets (`rows + 1`) and bytes. A dictionary column stripe
/// (`is_dict`) holds ids in `values`, entry lengths in `dict` and its dictionary's bytes in
/// `aux`; a direct one lengths in `values` and bytes in `aux`. `parts` are the ones given
/// to [`validity`]. `utf8`: every row is checked to be well-formed UTF-8 (Arrow's utf8 type),
/// else bytes (binary).
pub fn strings(
    gpu: &Gpu,
    v: &Validity,
    parts: &[ColumnStripe],
    utf8: bool,
) -> Result<(CudaSlice<u8>, CudaSlice<u8>)> {
    let dictionary = parts.iter().any(|s| s.is_dict != 0);
    let rows = v.rows;
    let nw = words(rows);
    let (ps, pw, pr) = (gpu.ptr(&v.parts), gpu.ptr(&v.bits), gpu.ptr(&v.ranks));
    // Dictionary entries' offsets (the column stripes' dictionaries back to back).
    let entries: u64 = if dictionary {
        let mut at = 0u64;
        for s in parts {
            if s.dict_base != at {
                return Err(Error::InvalidArgument(
                    "dictionary bases do not follow the column stripes' entries".into(),
                ));
            }
            at = at
                .checked_add(s.dict_len)
                .ok_or_else(|| Error::InvalidArgument("dictionary entries overflow".into()))?;
        }
        at
    } else {
        0
    };
    let dict_offs = if dictionary {
        let lens = gpu.alloc::<u64>(entries.max(1) as usize)?;
        let offs = gpu.alloc::<u64>(entries as usize + 1)?;
        let partials = gpu.alloc::<u64>(scan::partials_len(entries))?;
        let (pl, po) = (gpu.ptr(&lens), gpu.ptr(&offs));
        let f = gpu.function(Module::OrcLayout, "ts_orc_dict_lengths")?;
        let nparts = v.nparts;
        checked(gpu, "ts_orc_dict_lengths", |st| {
            // SAFETY: matches ts_orc_dict_lengths(parts, nparts, entries, out, out_len, status).
            unsafe {
                gpu.launch(
                    &f,
                    grid(entries),
                    THREADS,
                    &[&ps, &nparts, &entries, &pl, &entries, &st],
                )
            }
        })?;
        offsets_u64(gpu, pl, entries, po, gpu.ptr(&partials))?;
        let f = gpu.function(Module::OrcLayout, "ts_orc_dict_check")?;
        let offs_len = entries + 1;
        checked(gpu, "ts_orc_dict_check", |st| {
            // SAFETY: matches ts_orc_dict_check(parts, nparts, entries, offs, offs_len, status).
            unsafe {
                gpu.launch(
                    &f,
                    grid(entries),
                    THREADS,
                    &[&ps, &nparts, &entries, &po, &offs_len, &st],
                )
            }
        })?;
        Some(offs)
    } else {
        None
    };
    let (pd, pd_len) = match &dict_offs {
        Some(o) => (gpu.ptr(o), o.len() as u64),
        None => (0u64, 0u64),
    };
    let lens = gpu.alloc::<u64>(rows.max(1) as usize)?;
    let offs = gpu.alloc::<u8>(byte_len(rows + 1, 8)?)?;
    let partials = gpu.alloc::<u64>(scan::partials_len(rows))?;
    let (pl, po) = (gpu.ptr(&lens), gpu.ptr(&offs));
    let f = gpu.function(Module::OrcLayout, "ts_orc_string_lengths")?;
    checked(gpu, "ts_orc_string_lengths", |st| {
        // SAFETY: matches ts_orc_string_lengths(parts, nparts, rows, words, ranks, words_len,
        // dict_offs, dict_offs_len, out, out_len, status) with the live buffers' lengths.
        unsafe {
            gpu.launch(
                &f,
                grid(rows),
                THREADS,
                &[
                    &ps, &v.nparts, &rows, &pw, &pr, &nw, &pd, &pd_len, &pl, &rows, &st,
                ],
            )
        }
    })?;
    offsets_u64(gpu, pl, rows, po, gpu.ptr(&partials))?;
    let mut end = [0u8; 8];
    download_range(gpu, &offs, rows as usize * 8, &mut end)?;
    let total = [u64::from_le_bytes(end)];
    if total[0] > i32::MAX as u64 {
        return Err(
            status_error("strings", ST_OFFSET_LIMIT << 8 | ST_OFFSET_LIMIT)
                .unwrap_or_else(|| Error::Gpu("offset limit".into())),
        );
    }
    let bytes = gpu.alloc::<u8>(total[0].max(1) as usize)?;
    let out_offs = gpu.alloc::<u8>(byte_len(rows + 1, 4)?)?;
    let (pb, poo) = (gpu.ptr(&bytes), gpu.ptr(&out_offs));
    let (offs_len, oo_len, b_len) = (rows + 1, rows + 1, bytes.len() as u64);
    let utf8 = u32::from(utf8);
    let f = gpu.function(Module::OrcLayout, "ts_orc_string_copy")?;
    checked(gpu, "ts_orc_string_copy", |st| {
        // SAFETY: matches ts_orc_string_copy(parts, nparts, rows, words, ranks, words_len,
        // dict_offs, dict_offs_len, offs, offs_len, out_offs, out_offs_len, out, out_len, utf8,
        // status) with the live buffers' lengths.
        unsafe {
            gpu.launch(
                &f,
                grid(rows),
                THREADS,
                &[
                    &ps, &v.nparts, &rows, &pw, &pr, &nw, &pd, &pd_len, &po, &offs_len, &poo,
                    &oo_len, &pb, &b_len, &utf8, &st,
                ],
            )
        }
    })?;
    Ok((out_offs, bytes))
}

/// `offsets[0] = 0`, `offsets[i + 1]` the sum of `lens[..=i]` (u64 device addresses, `n` and
/// `n + 1` items). Queued.
fn offsets_u64(gpu: &Gpu, lens: u64, n: u64, offsets: u64, partials: u64) -> Result<()> {
    gpu.fill_bytes_raw(offsets, 0, 8)?;
    if n == 0 {
        return Ok(());
    }
    scan::sum(gpu, Item::U64, lens, n, offsets + 8, true, partials)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_words_name_the_row_and_problem() {
        assert!(status_error("k", u64::MAX).is_none());
        assert!(matches!(
            status_error("k", (9 << 8) | ST_DICT_ID),
            Some(Error::ValueOutOfRange { index: 9, .. })
        ));
        assert!(matches!(
            status_error("k", (4 << 8) | ST_COUNT),
            Some(Error::CountMismatch { found: 4, .. })
        ));
        assert!(matches!(status_error("k", ST_SIZE), Some(Error::Gpu(_))));
    }

    /// The status codes, the column stripe's fields and the launch width here are the kernel
    /// source's.
    #[test]
    fn constants_match_the_kernels() {
        let src = crate::kernels::source(Module::OrcLayout).expect("source");
        for (name, v) in [
            ("TS_OL_SIZE", ST_SIZE),
            ("TS_OL_COUNT", ST_COUNT),
            ("TS_OL_RANGE", ST_RANGE),
            ("TS_OL_TIMESTAMP", ST_TIMESTAMP),
            ("TS_OL_LENGTH", ST_LENGTH),
            ("TS_OL_DICT_ID", ST_DICT_ID),
            ("TS_OL_OFFSET_LIMIT", ST_OFFSET_LIMIT),
            ("TS_OL_PRESENT", ST_PRESENT),
            ("TS_OL_UTF8", ST_UTF8),
            ("TS_OL_THREADS", u64::from(THREADS)),
            (
                "TS_OL_FIELDS",
                fields(&ColumnStripe::default()).len() as u64,
            ),
            ("TS_OL_TIMESTAMP_NS", Scatter::TimestampNs as u64),
            ("TS_OL_F64", Scatter::F64 as u64),
            ("TS_OL_I8", Scatter::I8 as u64),
        ] {
            let line = format!("#define {name} {v}");
            assert!(
                src.lines().any(|l| l.starts_with(&line)
                    && l[line.len()..].starts_with([' ', '\t'])
                    || l.trim_end() == line),
                "{line} in orc/layout.cu"
            );
        }
    }
}
