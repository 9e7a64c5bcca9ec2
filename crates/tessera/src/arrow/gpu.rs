//! A table's fields decoded into GPU memory: as stored ([`ArrowTableReader::read_gpu`],
//! [`GpuField`]) or in Arrow's layout ([`ArrowTableReader::read_gpu_arrow`],
//! [`GpuArrowArray`]), the step before exporting them through the Arrow C Device Data
//! Interface ([`super::export_device`]).
//!
//! The columns of all selected fields decode together, whatever the field count: the
//! fixed-size ones (integers, validity and boolean bitmaps, binary bytes) one batch per logical
//! type (one upload, one launch per codec, one wait), the utf8 ones in one batch of offsets
//! (checked on the device, a status word) and one of text; each column then gets its own
//! buffer by a queued device copy. Run-encoded fields (`table.md` §9) are expanded on the
//! device. What is Arrow's layout as decoded:
//! integer, float (bit patterns), date, time, timestamp and duration values; boolean values and
//! validity bitmaps (bits packed least significant bit first, as Arrow's); dictionary codes;
//! binary bytes. What is not, in a [`GpuField`]: utf8 offsets stay per-chunk relative `u32`
//! ends ([`crate::GpuData::Utf8`]), binary values have `u32` lengths rather than offsets,
//! decimals are the stored `i64` (Arrow's Decimal128 is `i128`) and ALP floats are digits,
//! params and exceptions (`table.md` §8). [`GpuField::into_arrow`] closes those gaps on the
//! device with `tessera_gpu::arrow_layout`'s kernels (utf8 offsets rebased and widened to i32
//! or i64, decimals widened, ALP decoded bit for bit as on the CPU, binary lengths scanned
//! into offsets). Fields the writer dictionary-encoded on its own come back as dictionary
//! arrays (the CPU reader gives their plain values).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use arrow_schema::DataType;
use tessera_codecs::{column, text};
use tessera_format::container::{ChunkMeta, ColumnMeta};
use tessera_format::table::{FieldMeta, FieldType, Role, ALP_VECTOR_ROWS};
use tessera_format::{Error, LogicalType, Result};
use tessera_gpu::arrow_layout::{self, AlpColumns, AlpTables};
use tessera_gpu::{codec, CudaSlice, Gpu};

use crate::gpu_column::{GpuColumn, GpuData};
use crate::read::{chunk_refs, locate, utf8_refs, TableReader};

use super::alp::Float;
use super::read::{arrow_field, ArrowTableReader};

/// One field's physical columns decoded on the GPU.
#[derive(Debug)]
pub struct GpuField {
    /// The field as stored (name, type, roles).
    pub meta: FieldMeta,
    /// Values (or dictionary codes).
    pub values: GpuColumn,
    /// The validity bitmap; `None` when the field has no nulls.
    pub validity: Option<GpuColumn>,
    /// Binary value lengths (u32).
    pub lengths: Option<GpuColumn>,
    /// Dictionary values, and binary dictionary lengths.
    pub dictionary: Option<(GpuColumn, Option<GpuColumn>)>,
    /// An ALP float field's params, exception rows and exception bits (`table.md` §8); its
    /// `values` then hold the digits.
    pub alp: Option<[GpuColumn; 3]>,
}

impl ArrowTableReader<'_> {
    /// Decodes the selected fields into GPU memory on `gpu` (payload checksums are verified on
    /// the host first; corrupt chunks give the CPU decoders' errors). The columns of all
    /// selected fields are decoded together: fixed-size columns (values, codes, lengths,
    /// dictionaries, ALP digits, params and exceptions, run values and ends, validity and
    /// boolean bitmaps, binary bytes) one batch per logical type, utf8 columns in one batch of
    /// offsets and one of text (module docs). Run-encoded fields leave with one value a row.
    pub fn read_gpu(&self, gpu: &Gpu) -> Result<Vec<GpuField>> {
        let t: &TableReader = self.table_reader();
        let fields: Vec<&FieldMeta> = self.selected_fields().collect();
        let wanted: Vec<usize> = fields
            .iter()
            .flat_map(|f| f.columns.iter().map(|&(_, c)| c as usize))
            .collect();
        let mut decoded = decode_fixed_columns(t, &wanted, gpu)?;
        decoded.extend(decode_utf8_columns(t, &wanted, gpu)?);
        let batched = RefCell::new(decoded);
        fields
            .into_iter()
            .map(|f| {
                let col = |r: Role| {
                    f.column(r)
                        .map(|c| match batched.borrow_mut().remove(&c) {
                            Some(g) => Ok(g),
                            None => t.read_gpu(c, gpu),
                        })
                        .transpose()
                };
                let values = col(Role::Values)?.ok_or_else(|| {
                    Error::InvalidArgument(format!("field '{}' has no values", f.name))
                })?;
                // A run-encoded field (`table.md` §9) leaves as one value a row.
                let values = match col(Role::RunEnds)? {
                    Some(ends) => expand_runs(gpu, &f.name, values, ends, self.rows())?,
                    None => values,
                };
                let dictionary = match col(Role::DictValues)? {
                    Some(d) => Some((d, col(Role::DictLengths)?)),
                    None => None,
                };
                let alp = match (
                    col(Role::AlpParams)?,
                    col(Role::ExceptionRows)?,
                    col(Role::ExceptionBits)?,
                ) {
                    (Some(p), Some(r), Some(b)) => Some([p, r, b]),
                    _ => None,
                };
                Ok(GpuField {
                    alp,
                    meta: f.clone(),
                    values,
                    validity: col(Role::Validity)?,
                    lengths: col(Role::Lengths)?,
                    dictionary,
                })
            })
            .collect()
    }
}

/// Decodes the fixed-size columns among `cols` (integers, bits, bytes) on `gpu`, all columns
/// of one logical type as one column of their chunks back to back: one upload, one launch per
/// codec and one wait for the whole group instead of for each column (what dominates small
/// tables), then a queued device copy of each column's values into a buffer of its own (a
/// group of one column keeps the decoded buffer). Bits chunks decode at byte boundaries
/// (`ceil(values / 8)` bytes each), so each column's bitmap starts on a byte, as it does when
/// decoded alone.
fn decode_fixed_columns(
    t: &TableReader,
    cols: &[usize],
    gpu: &Gpu,
) -> Result<HashMap<usize, GpuColumn>> {
    let mut groups: BTreeMap<u8, Vec<usize>> = BTreeMap::new();
    for &c in cols {
        let meta = column_meta(t, c)?;
        if meta.logical_type != LogicalType::Utf8 {
            let g = groups.entry(meta.logical_type.id()).or_default();
            if !g.contains(&c) {
                g.push(c);
            }
        }
    }
    let mut out = HashMap::new();
    for group in groups.into_values() {
        let ty = t.columns()[group[0]].logical_type;
        // For each chunk of the batch: its column and its index there.
        let mut owner: Vec<(usize, usize)> = Vec::new();
        let mut refs = Vec::new();
        let mut sizes = Vec::with_capacity(group.len());
        for &c in &group {
            let meta = &t.columns()[c];
            let payloads: Vec<&[u8]> = (0..meta.chunks.len())
                .map(|k| t.container().chunk_payload(c, k))
                .collect::<Result<_>>()?;
            refs.extend(chunk_refs(&meta.chunks, &payloads));
            owner.extend((0..meta.chunks.len()).map(|k| (c, k)));
            let mut bytes = 0usize;
            for ch in &meta.chunks {
                bytes = ty
                    .raw_len(ch.value_count as u64)
                    .and_then(|b| usize::try_from(b).ok())
                    .and_then(|b| bytes.checked_add(b))
                    .ok_or_else(|| Error::InvalidArgument("column larger than memory".into()))?;
            }
            sizes.push(bytes);
        }
        let cpu_error = |i: usize| -> Option<Error> {
            let &(c, k) = owner.get(i)?;
            let meta = &t.columns()[c];
            let ch = &meta.chunks[k];
            let payload = t.container().chunk_payload(c, k).ok()?;
            let mut host = vec![0u8; ty.raw_len(ch.value_count as u64).unwrap_or(0) as usize];
            column::decode_values(ty, ch.codec, payload, ch.value_count as u64, &mut host)
                .err()
                .map(|e| e.in_chunk(&meta.name, k, ch.codec.name()))
        };
        let all = codec::decode_to_device(gpu, ty, &refs).map_err(|be| locate(be, cpu_error).1)?;
        let column = |c: usize, data: CudaSlice<u8>| GpuColumn {
            logical_type: ty,
            len: t.columns()[c].value_count,
            data: GpuData::Raw(data),
        };
        if group.len() == 1 {
            out.insert(group[0], column(group[0], all));
            continue;
        }
        let mut at = 0usize;
        for (&c, &bytes) in group.iter().zip(&sizes) {
            let mut own = gpu.alloc::<u8>(bytes)?;
            gpu.copy_within_device(&all, at, &mut own, 0, bytes)?;
            at += bytes;
            out.insert(c, column(c, own));
        }
    }
    Ok(out)
}

/// Decodes the utf8 columns among `cols` on `gpu` together: the end offsets of every chunk of
/// every column in one batched DFOR decode, checked on the device in one launch
/// ([`arrow_layout::check_utf8_ends`], a status word instead of downloading the offsets), and
/// the text of every chunk in one batch per decoder; then queued device copies give each
/// column its own buffers (a single utf8 column keeps the decoded ones). Errors name the column
/// and chunk with the CPU decoder's own error, as [`TableReader::read_gpu`] does.
fn decode_utf8_columns(
    t: &TableReader,
    cols: &[usize],
    gpu: &Gpu,
) -> Result<HashMap<usize, GpuColumn>> {
    let mut group: Vec<usize> = Vec::new();
    for &c in cols {
        if column_meta(t, c)?.logical_type == LogicalType::Utf8 && !group.contains(&c) {
            group.push(c);
        }
    }
    let mut out = HashMap::new();
    if group.is_empty() {
        return Ok(out);
    }
    let mut owner: Vec<(usize, usize)> = Vec::new();
    let mut payloads: Vec<&[u8]> = Vec::new();
    for &c in &group {
        for k in 0..t.columns()[c].chunks.len() {
            payloads.push(t.container().chunk_payload(c, k)?);
            owner.push((c, k));
        }
    }
    let cpu_error = |i: usize| -> Error {
        let Some(&(c, k)) = owner.get(i) else {
            return Error::Gpu("a utf8 batch failed outside its chunks".into());
        };
        let meta = &t.columns()[c];
        let ch = &meta.chunks[k];
        match text::decode_utf8_chunk(ch.codec, payloads[i], ch.value_count) {
            Err(e) => e.in_chunk(&meta.name, k, ch.codec.name()),
            Ok(_) => Error::Gpu(format!(
                "column '{}' chunk {k}: the GPU path rejected a chunk the CPU decodes",
                meta.name
            )),
        }
    };
    let metas: Vec<ChunkMeta> = owner
        .iter()
        .map(|&(c, k)| t.columns()[c].chunks[k].clone())
        .collect();
    let refs = utf8_refs(&metas, &payloads, cpu_error)?;
    let cpu_data_error = |k: usize| Some(cpu_error(k)).filter(|e| !matches!(e, Error::Gpu(_)));
    let ends = codec::decode_to_device(gpu, LogicalType::U32, &refs.offsets)
        .map_err(|be| locate(be, cpu_data_error).1)?;
    let mut value_starts = Vec::with_capacity(metas.len() + 1);
    value_starts.push(0u64);
    for m in &metas {
        value_starts.push(value_starts[value_starts.len() - 1] + u64::from(m.value_count));
    }
    let n = value_starts[value_starts.len() - 1];
    let text_sizes: Vec<u64> = refs.data_sizes.iter().map(|&d| d as u64).collect();
    // The offsets decide where consumers read: checked on the device, for every column at once.
    arrow_layout::check_utf8_ends(gpu, &ends, n, &value_starts, &text_sizes).map_err(
        |e| match e {
            Error::ValueOutOfRange { index, .. } => {
                cpu_error(arrow_layout::chunk_of(&value_starts, index))
            }
            e => e,
        },
    )?;
    let data = codec::decode_to_device(gpu, LogicalType::Bytes, &refs.texts)
        .map_err(|be| locate(be, cpu_data_error).1)?;
    let single = group.len() == 1;
    let (mut ends, mut data) = (Some(ends), Some(data));
    let (mut chunk, mut value_at, mut text_at) = (0usize, 0u64, 0u64);
    for &c in &group {
        let meta = &t.columns()[c];
        let mut chunk_value_starts = vec![0u64];
        let mut chunk_data_starts = vec![0u64];
        for (ch, &size) in meta.chunks.iter().zip(&text_sizes[chunk..]) {
            chunk_value_starts
                .push(chunk_value_starts[chunk_value_starts.len() - 1] + u64::from(ch.value_count));
            chunk_data_starts.push(chunk_data_starts[chunk_data_starts.len() - 1] + size);
        }
        chunk += meta.chunks.len();
        let values = chunk_value_starts[chunk_value_starts.len() - 1];
        let text_len = chunk_data_starts[chunk_data_starts.len() - 1];
        let (own_ends, own_data) = if single {
            (ends.take(), data.take())
        } else {
            (None, None)
        };
        let own_ends = match own_ends {
            Some(e) => e,
            None => copy_part(gpu, ends.as_ref(), value_at * 4, values * 4)?,
        };
        let own_data = match own_data {
            Some(d) => d,
            None => copy_part(gpu, data.as_ref(), text_at, text_len)?,
        };
        value_at += values;
        text_at += text_len;
        out.insert(
            c,
            GpuColumn {
                logical_type: LogicalType::Utf8,
                len: meta.value_count,
                data: GpuData::Utf8 {
                    ends: own_ends,
                    data: own_data,
                    chunk_value_starts,
                    chunk_data_starts,
                },
            },
        );
    }
    Ok(out)
}

/// A new device buffer holding `len` bytes of `src` from byte `at` (a queued copy).
fn copy_part(gpu: &Gpu, src: Option<&CudaSlice<u8>>, at: u64, len: u64) -> Result<CudaSlice<u8>> {
    let src = src.ok_or_else(|| Error::InvalidArgument("a batch handed out twice".into()))?;
    let (at, len) = (
        usize::try_from(at)
            .map_err(|_| Error::InvalidArgument("batch larger than memory".into()))?,
        usize::try_from(len)
            .map_err(|_| Error::InvalidArgument("batch larger than memory".into()))?,
    );
    let mut own = gpu.alloc::<u8>(len)?;
    gpu.copy_within_device(src, at, &mut own, 0, len)?;
    Ok(own)
}

fn column_meta(t: &TableReader, c: usize) -> Result<&ColumnMeta> {
    t.columns()
        .get(c)
        .ok_or_else(|| Error::InvalidArgument(format!("no column {c}")))
}

/// One value a row from a run-encoded field's run values and run ends, expanded on the device.
fn expand_runs(
    gpu: &Gpu,
    name: &str,
    values: GpuColumn,
    ends: GpuColumn,
    rows: u64,
) -> Result<GpuColumn> {
    if values.len != ends.len {
        return Err(in_field(
            name,
            Error::CountMismatch {
                what: "run values vs run ends",
                expected: ends.len,
                found: values.len,
            },
        ));
    }
    let ty = values.logical_type;
    let runs = ends.len;
    let (v, e) = (raw(name, values)?, raw(name, ends)?);
    let out = arrow_layout::expand_runs(gpu, &v, &e, runs, ty.width(), rows)
        .map_err(|er| in_field(name, er))?;
    Ok(GpuColumn {
        logical_type: ty,
        len: rows,
        data: GpuData::Raw(out),
    })
}

/// One field (or a dictionary's values) as Arrow arrays hold it, in GPU memory: the buffers of
/// Arrow's columnar format, little-endian, with no offset into them.
#[derive(Debug)]
pub struct GpuArrowArray {
    /// The Arrow type (a dictionary type for dictionary-encoded fields).
    pub data_type: DataType,
    /// Rows.
    pub len: u64,
    /// The validity bitmap (least significant bit first, at least `ceil(len / 8)` bytes);
    /// `None` when the field has no nulls.
    pub validity: Option<CudaSlice<u8>>,
    /// `len + 1` offsets (i32, or i64 for large types) of variable-size values.
    pub offsets: Option<CudaSlice<u8>>,
    /// Values at the type's width, bits for booleans, text and bytes for variable-size types,
    /// codes for dictionaries. May be longer than the rows need.
    pub values: CudaSlice<u8>,
    /// The dictionary's values, for dictionary-encoded fields.
    pub dictionary: Option<Box<GpuArrowArray>>,
}

impl ArrowTableReader<'_> {
    /// Decodes the selected fields into GPU memory on `gpu` in Arrow's layout
    /// ([`GpuField::into_arrow`]). Fields the writer dictionary-encoded on its own (utf8,
    /// binary and, from format 1.5, fixed-width fields that are not Arrow dictionaries,
    /// `table.md` §6.1) come back as dictionary arrays of their codes, not as the plain values
    /// the CPU reader restores.
    pub fn read_gpu_arrow(&self, gpu: &Gpu) -> Result<Vec<GpuArrowArray>> {
        self.read_gpu(gpu)?
            .into_iter()
            .map(|f| f.into_arrow(gpu))
            .collect()
    }
}

impl GpuField {
    /// Rearranges the decoded columns into Arrow's layout on the device: utf8 offsets rebased
    /// and widened to i32 or i64, decimals widened to i128, ALP floats decoded (`table.md`
    /// §8.2), binary lengths scanned into offsets; every other type is Arrow's layout as
    /// decoded.
    pub fn into_arrow(self, gpu: &Gpu) -> Result<GpuArrowArray> {
        let name = self.meta.name.clone();
        let validity = self.validity.map(|v| raw(&name, v)).transpose()?;
        let field_type = arrow_field(&self.meta).data_type().clone();
        if let Some((dict_values, dict_lengths)) = self.dictionary {
            let code_ty = self.values.logical_type;
            let value_type = match &field_type {
                DataType::Dictionary(_, v) => (**v).clone(),
                other => other.clone(),
            };
            let dict = plain(
                gpu,
                &name,
                &self.meta.ty,
                value_type.clone(),
                dict_values,
                dict_lengths,
                None,
            )?;
            let key_type = match field_type {
                DataType::Dictionary(k, _) => *k,
                _ => super::int_data_type(code_ty),
            };
            return Ok(GpuArrowArray {
                data_type: DataType::Dictionary(Box::new(key_type), Box::new(value_type)),
                len: self.values.len,
                validity,
                offsets: None,
                values: raw(&name, self.values)?,
                dictionary: Some(Box::new(dict)),
            });
        }
        let mut a = plain(
            gpu,
            &name,
            &self.meta.ty,
            field_type,
            self.values,
            self.lengths,
            self.alp,
        )?;
        a.validity = validity;
        Ok(a)
    }
}

/// A field's values (or a dictionary's) of stored type `ty` as an Arrow array with no validity.
fn plain(
    gpu: &Gpu,
    name: &str,
    ty: &FieldType,
    data_type: DataType,
    values: GpuColumn,
    lengths: Option<GpuColumn>,
    alp: Option<[GpuColumn; 3]>,
) -> Result<GpuArrowArray> {
    let len = values.len;
    let (offsets, values) = match (ty, values.data, alp) {
        (
            FieldType::Utf8 | FieldType::LargeUtf8,
            GpuData::Utf8 {
                ends,
                data,
                chunk_value_starts,
                chunk_data_starts,
            },
            _,
        ) => {
            let large = *ty == FieldType::LargeUtf8;
            let offsets = arrow_layout::utf8_offsets(
                gpu,
                &ends,
                len,
                &chunk_value_starts,
                &chunk_data_starts,
                large,
            )
            .map_err(|e| in_field(name, e))?;
            (Some(offsets), data)
        }
        (FieldType::Binary | FieldType::LargeBinary, GpuData::Raw(data), _) => {
            // The bytes column counts bytes; the rows are the lengths.
            let lengths = lengths.ok_or_else(|| {
                Error::InvalidArgument(format!("field '{name}': binary values without lengths"))
            })?;
            let rows = lengths.len;
            let lengths = raw(name, lengths)?;
            let large = *ty == FieldType::LargeBinary;
            let offsets = arrow_layout::binary_offsets(gpu, &lengths, rows, len, large)
                .map_err(|e| in_field(name, e))?;
            return Ok(GpuArrowArray {
                data_type,
                len: rows,
                validity: None,
                offsets: Some(offsets),
                values: data,
                dictionary: None,
            });
        }
        (FieldType::Decimal128 { .. }, GpuData::Raw(v), _) => (
            None,
            arrow_layout::widen_i64_to_i128(gpu, &v, len).map_err(|e| in_field(name, e))?,
        ),
        (FieldType::Float32 | FieldType::Float64, GpuData::Raw(digits), Some([p, r, b])) => {
            let float = if *ty == FieldType::Float32 {
                Float::F32
            } else {
                Float::F64
            };
            (None, alp_values(gpu, name, float, len, &digits, p, r, b)?)
        }
        (_, GpuData::Raw(v), None) => (None, v),
        _ => {
            return Err(Error::InvalidArgument(format!(
                "field '{name}': its stored columns do not match its type"
            )))
        }
    };
    Ok(GpuArrowArray {
        data_type,
        len,
        validity: None,
        offsets,
        values,
        dictionary: None,
    })
}

#[allow(clippy::too_many_arguments)]
fn alp_values(
    gpu: &Gpu,
    name: &str,
    float: Float,
    len: u64,
    digits: &CudaSlice<u8>,
    params: GpuColumn,
    rows: GpuColumn,
    bits: GpuColumn,
) -> Result<CudaSlice<u8>> {
    if rows.len != bits.len {
        return Err(in_field(
            name,
            Error::CountMismatch {
                what: "ALP exception bits vs exception rows",
                expected: rows.len,
                found: bits.len,
            },
        ));
    }
    let (params_len, exceptions) = (params.len, rows.len);
    let (p, r, b) = (raw(name, params)?, raw(name, rows)?, raw(name, bits)?);
    let cols = AlpColumns {
        digits,
        params: &p,
        params_len,
        exception_rows: &r,
        exception_bits: &b,
        exceptions,
    };
    let out = match float {
        Float::F64 => {
            let (f10, if10) = alp_tables_f64();
            let t = AlpTables::F64 {
                f10: &f10,
                if10: &if10,
            };
            arrow_layout::alp_decode(gpu, cols, t, ALP_VECTOR_ROWS, len)
        }
        Float::F32 => {
            let (f10, if10) = alp_tables_f32();
            let t = AlpTables::F32 {
                f10: &f10,
                if10: &if10,
            };
            arrow_layout::alp_decode(gpu, cols, t, ALP_VECTOR_ROWS, len)
        }
    };
    out.map_err(|e| in_field(name, e))
}

/// The CPU decoder's powers of ten for Float64 (`table.md` §8.2): 10^i, exact, and the
/// binary64 nearest 10^-i, read back from the CPU's own decode so both sides share one table.
fn alp_tables_f64() -> (Vec<f64>, Vec<f64>) {
    let n = Float::F64.max_e() as i32 + 1;
    let f10 = (0..n).map(|i| 10f64.powi(i)).collect();
    let if10 = (0..n as u8)
        .map(|e| f64::from_bits(Float::F64.decode(1, e, 0)))
        .collect();
    (f10, if10)
}

/// [`alp_tables_f64`] for Float32.
fn alp_tables_f32() -> (Vec<f32>, Vec<f32>) {
    let n = Float::F32.max_e() as i32 + 1;
    let f10 = (0..n).map(|i| 10f32.powi(i)).collect();
    let if10 = (0..n as u8)
        .map(|e| f32::from_bits(Float::F32.decode(1, e, 0) as u32))
        .collect();
    (f10, if10)
}

fn raw(name: &str, c: GpuColumn) -> Result<CudaSlice<u8>> {
    match c.data {
        GpuData::Raw(v) => Ok(v),
        GpuData::Utf8 { .. } => Err(Error::InvalidArgument(format!(
            "field '{name}': a utf8 column where fixed-size values belong"
        ))),
    }
}

fn in_field(name: &str, e: Error) -> Error {
    match e {
        Error::InvalidArgument(m) => Error::InvalidArgument(format!("field '{name}': {m}")),
        Error::Gpu(m) => Error::Gpu(format!("field '{name}': {m}")),
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tables the GPU gets reproduce the CPU's decode bit for bit (powers of ten exact,
    /// inverse powers the CPU's), over every `(e, f)` and digits of every size.
    #[test]
    fn alp_tables_are_the_cpus() {
        let (f10, if10) = alp_tables_f64();
        let (g10, ig10) = alp_tables_f32();
        assert_eq!((f10.len(), g10.len()), (19, 11));
        for (i, x) in f10.iter().enumerate() {
            assert_eq!(*x, format!("1e{i}").parse::<f64>().expect("literal"));
        }
        for (i, x) in g10.iter().enumerate() {
            assert_eq!(*x, format!("1e{i}").parse::<f32>().expect("literal"));
        }
        let digits = [
            0i64,
            1,
            -1,
            7,
            123_456_789,
            -98_765_432_109,
            1 << 53,
            (1 << 62) - 1,
        ];
        for e in 0..=18u8 {
            for f in 0..=e {
                for &d in &digits {
                    let x = d as f64 * f10[f as usize] * if10[e as usize];
                    assert_eq!(x.to_bits(), Float::F64.decode(d, e, f), "{d} {e} {f}");
                    if e <= 10 {
                        let y = d as f32 * g10[f as usize] * ig10[e as usize];
                        assert_eq!(y.to_bits() as u64, Float::F32.decode(d, e, f));
                    }
                }
            }
        }
    }

    /// ALP params pack `e` low and `f` high, as the kernels unpack them.
    #[test]
    fn alp_params_pack_as_the_kernels_read_them() {
        let p = super::super::alp::pack(12, 3);
        assert_eq!((p & 0xff, p >> 8), (12, 3));
        assert_eq!(super::super::alp::unpack(Float::F64, p), Some((12, 3)));
        assert_eq!(super::super::alp::unpack(Float::F32, p), None);
    }
}
