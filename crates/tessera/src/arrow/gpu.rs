//! A table's fields decoded into GPU memory: as stored ([`ArrowTableReader::read_gpu`],
//! [`GpuField`]) or in Arrow's layout ([`ArrowTableReader::read_gpu_arrow`],
//! [`GpuArrowArray`]), the step before exporting them through the Arrow C Device Data
//! Interface ([`super::export_device`]).
//!
//! The integer columns of all selected fields decode together, one batch per logical type (one
//! upload, one launch per codec, one wait); bitmaps, bytes and text go through
//! [`TableReader::read_gpu`] column by column. What is Arrow's layout as decoded:
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
use tessera_codecs::column;
use tessera_format::table::{FieldMeta, FieldType, Role, ALP_VECTOR_ROWS};
use tessera_format::{Error, Result};
use tessera_gpu::arrow_layout::{self, AlpColumns, AlpTables};
use tessera_gpu::{codec, CudaSlice, Gpu};

use crate::gpu_column::{GpuColumn, GpuData};
use crate::read::{chunk_refs, locate, TableReader};

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
    /// the host first; corrupt chunks give the CPU decoders' errors). The integer columns of
    /// all selected fields (values, codes, lengths, integer dictionaries, ALP digits, params
    /// and exceptions) are decoded together, one batch per logical type
    /// (one upload, one launch per codec, one wait); bits, bytes and utf8 columns by their own
    /// decoders.
    pub fn read_gpu(&self, gpu: &Gpu) -> Result<Vec<GpuField>> {
        let t: &TableReader = self.table_reader();
        let fields: Vec<&FieldMeta> = self.selected_fields().collect();
        let wanted: Vec<usize> = fields
            .iter()
            .flat_map(|f| f.columns.iter().map(|&(_, c)| c as usize))
            .collect();
        let batched = RefCell::new(decode_integer_columns(t, &wanted, gpu)?);
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

/// Decodes the integer columns among `cols` on `gpu`, all columns of one logical type as one
/// column of their chunks back to back: one upload, one launch per codec and one wait for the
/// whole group instead of for each column (what dominates small tables), then a device copy
/// of each column's values into a buffer of its own (queued, no wait). Types with a single
/// column are left to [`TableReader::read_gpu`]; so are columns that are not integers.
fn decode_integer_columns(
    t: &TableReader,
    cols: &[usize],
    gpu: &Gpu,
) -> Result<HashMap<usize, GpuColumn>> {
    let mut groups: BTreeMap<u8, Vec<usize>> = BTreeMap::new();
    for &c in cols {
        let meta = t
            .columns()
            .get(c)
            .ok_or_else(|| Error::InvalidArgument(format!("no column {c}")))?;
        if meta.logical_type.is_integer() {
            let g = groups.entry(meta.logical_type.id()).or_default();
            if !g.contains(&c) {
                g.push(c);
            }
        }
    }
    let mut out = HashMap::new();
    for group in groups.into_values().filter(|g| g.len() > 1) {
        let ty = t.columns()[group[0]].logical_type;
        let width = ty.width() as u64;
        // For each chunk of the batch: its column and its index there.
        let mut owner: Vec<(usize, usize)> = Vec::new();
        let mut refs = Vec::new();
        for &c in &group {
            let meta = &t.columns()[c];
            let payloads: Vec<&[u8]> = (0..meta.chunks.len())
                .map(|k| t.container().chunk_payload(c, k))
                .collect::<Result<_>>()?;
            refs.extend(chunk_refs(&meta.chunks, &payloads));
            owner.extend((0..meta.chunks.len()).map(|k| (c, k)));
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
        let mut at = 0u64;
        for &c in &group {
            let len = t.columns()[c].value_count;
            let bytes = len
                .checked_mul(width)
                .and_then(|b| usize::try_from(b).ok())
                .ok_or_else(|| Error::InvalidArgument("column larger than memory".into()))?;
            let mut own = gpu.alloc::<u8>(bytes)?;
            gpu.copy_within_device(&all, at as usize, &mut own, 0, bytes)?;
            at += bytes as u64;
            out.insert(
                c,
                GpuColumn {
                    logical_type: ty,
                    len,
                    data: GpuData::Raw(own),
                },
            );
        }
    }
    Ok(out)
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
