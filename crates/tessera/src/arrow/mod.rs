//! Tables as Arrow record batches (`docs/format/table.md`).
//!
//! [`ArrowTableWriter`] takes `RecordBatch`es one at a time and streams every field into physical
//! tessera columns (values, validity bitmap, binary lengths, dictionary codes and values), chunk
//! by chunk, interleaved in one `.tsr` file whose table section records the Arrow schema: memory
//! follows the chunk size and the fields, not the table. [`ArrowTableReader`] gives the schema
//! back and the table as `RecordBatch`es, whole or a selection of fields, batch by batch.
//!
//! ```
//! use std::sync::Arc;
//! use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
//! use tessera::arrow::{ArrowTableReader, ArrowTableWriter, ArrowWriteOptions};
//! use tessera::{Engine, TableReader};
//!
//! # fn main() -> tessera::Result<()> {
//! # let dir = tempfile::tempdir().map_err(|e| tessera::Error::io("temp dir", e))?;
//! let path = dir.path().join("t.tsr");
//! let ids: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(3)]));
//! let names: ArrayRef = Arc::new(StringArray::from(vec!["a", "b", "c"]));
//! let batch = RecordBatch::try_from_iter([("id", ids), ("name", names)]).expect("batch");
//!
//! let mut w = ArrowTableWriter::create(&path, batch.schema(), ArrowWriteOptions::default())?;
//! w.write(&batch)?;
//! w.finish()?;
//!
//! let table = TableReader::open(&path)?;
//! let r = ArrowTableReader::new(&table, None)?;
//! let back = r.read_all(&mut Engine::cpu())?;
//! assert_eq!(back, batch);
//! # Ok(()) }
//! ```
//!
//! Types and how each is stored: `table.md` §3. Lists, structs, maps, unions, decimal256,
//! decimals wider than 18 digits and the other Arrow types have no mapping: writing them fails
//! up front with an error that names the field and its type, before any byte is written.

mod alp;
mod device;
mod gpu;
mod read;
mod write;

use arrow_schema::{DataType, TimeUnit as ArrowUnit};
use tessera_format::table::{FieldType, TimeUnit, MAX_DECIMAL_PRECISION};
use tessera_format::{Error, LogicalType, Result};

pub use device::{export_device, ArrowArray, ArrowDeviceArray, ArrowSchema, ARROW_DEVICE_CUDA};
#[doc(hidden)]
pub use gpu::{last_gpu_read_phases, GpuReadPhases};
pub use gpu::{GpuArrowArray, GpuField};
pub use read::{arrow_field, ArrowTableReader, Batches, DEFAULT_BATCH_ROWS};
pub use tessera_format::table::{FieldMeta, Role, TableMeta};
pub use write::{ArrowTableWriter, ArrowWriteOptions, DictionaryChoice, FloatChoice, RunChoice};

fn unit_to(u: &ArrowUnit) -> TimeUnit {
    match u {
        ArrowUnit::Second => TimeUnit::Second,
        ArrowUnit::Millisecond => TimeUnit::Millisecond,
        ArrowUnit::Microsecond => TimeUnit::Microsecond,
        ArrowUnit::Nanosecond => TimeUnit::Nanosecond,
    }
}

fn unit_from(u: TimeUnit) -> ArrowUnit {
    match u {
        TimeUnit::Second => ArrowUnit::Second,
        TimeUnit::Millisecond => ArrowUnit::Millisecond,
        TimeUnit::Microsecond => ArrowUnit::Microsecond,
        TimeUnit::Nanosecond => ArrowUnit::Nanosecond,
    }
}

fn unsupported(field: &str, dt: &DataType, why: &str) -> Error {
    Error::InvalidArgument(format!(
        "column '{field}' has type {dt}, which tessera cannot store{why}"
    ))
}

/// The integer logical type of an Arrow integer type.
fn int_type(dt: &DataType) -> Option<LogicalType> {
    Some(match dt {
        DataType::UInt8 => LogicalType::U8,
        DataType::UInt16 => LogicalType::U16,
        DataType::UInt32 => LogicalType::U32,
        DataType::UInt64 => LogicalType::U64,
        DataType::Int8 => LogicalType::I8,
        DataType::Int16 => LogicalType::I16,
        DataType::Int32 => LogicalType::I32,
        DataType::Int64 => LogicalType::I64,
        _ => return None,
    })
}

fn int_data_type(t: LogicalType) -> DataType {
    match t {
        LogicalType::U8 => DataType::UInt8,
        LogicalType::U16 => DataType::UInt16,
        LogicalType::U32 => DataType::UInt32,
        LogicalType::U64 => DataType::UInt64,
        LogicalType::I8 => DataType::Int8,
        LogicalType::I16 => DataType::Int16,
        LogicalType::I32 => DataType::Int32,
        _ => DataType::Int64,
    }
}

/// The stored type of an Arrow (value) type, or the error naming the field.
fn value_type(field: &str, dt: &DataType) -> Result<FieldType> {
    if let Some(t) = int_type(dt) {
        return Ok(FieldType::Int(t));
    }
    Ok(match dt {
        DataType::Boolean => FieldType::Boolean,
        DataType::Float16 => FieldType::Float16,
        DataType::Float32 => FieldType::Float32,
        DataType::Float64 => FieldType::Float64,
        DataType::Date32 => FieldType::Date32,
        DataType::Date64 => FieldType::Date64,
        DataType::Timestamp(u, tz) => {
            FieldType::Timestamp(unit_to(u), tz.as_deref().map(str::to_owned))
        }
        DataType::Time32(u) => FieldType::Time32(unit_to(u)),
        DataType::Time64(u) => FieldType::Time64(unit_to(u)),
        DataType::Duration(u) => FieldType::Duration(unit_to(u)),
        DataType::Decimal128(p, s) if *p <= MAX_DECIMAL_PRECISION => FieldType::Decimal128 {
            precision: *p,
            scale: *s,
        },
        DataType::Decimal128(..) => {
            return Err(unsupported(
                field,
                dt,
                " (decimal128 is stored as a scaled i64: precision at most 18)",
            ))
        }
        DataType::Utf8 => FieldType::Utf8,
        DataType::LargeUtf8 => FieldType::LargeUtf8,
        DataType::Binary => FieldType::Binary,
        DataType::LargeBinary => FieldType::LargeBinary,
        _ => return Err(unsupported(field, dt, "")),
    })
}

/// The stored type of an Arrow field's type: `(type, Some(key type) for a dictionary)`.
pub(crate) fn field_type(field: &str, dt: &DataType) -> Result<(FieldType, Option<LogicalType>)> {
    if let DataType::Dictionary(k, v) = dt {
        let key = int_type(k)
            .ok_or_else(|| unsupported(field, dt, " (dictionary keys must be integers)"))?;
        let value = value_type(field, v)?;
        if value == FieldType::Boolean {
            return Err(unsupported(field, dt, " (a dictionary of booleans)"));
        }
        return Ok((value, Some(key)));
    }
    Ok((value_type(field, dt)?, None))
}

/// The Arrow type a stored field restores.
pub(crate) fn data_type(ty: &FieldType, dict: Option<LogicalType>) -> DataType {
    let v = match ty {
        FieldType::Int(t) => int_data_type(*t),
        FieldType::Boolean => DataType::Boolean,
        FieldType::Float16 => DataType::Float16,
        FieldType::Float32 => DataType::Float32,
        FieldType::Float64 => DataType::Float64,
        FieldType::Date32 => DataType::Date32,
        FieldType::Date64 => DataType::Date64,
        FieldType::Timestamp(u, tz) => {
            DataType::Timestamp(unit_from(*u), tz.as_deref().map(Into::into))
        }
        FieldType::Time32(u) => DataType::Time32(unit_from(*u)),
        FieldType::Time64(u) => DataType::Time64(unit_from(*u)),
        FieldType::Duration(u) => DataType::Duration(unit_from(*u)),
        FieldType::Decimal128 { precision, scale } => DataType::Decimal128(*precision, *scale),
        FieldType::Utf8 => DataType::Utf8,
        FieldType::LargeUtf8 => DataType::LargeUtf8,
        FieldType::Binary => DataType::Binary,
        FieldType::LargeBinary => DataType::LargeBinary,
    };
    match dict {
        Some(k) => DataType::Dictionary(Box::new(int_data_type(k)), Box::new(v)),
        None => v,
    }
}

/// Checks an Arrow schema can be stored: the error names the first field that cannot.
pub fn check_schema(schema: &arrow_schema::Schema) -> Result<()> {
    for f in schema.fields() {
        field_type(f.name(), f.data_type())?;
    }
    Ok(())
}

fn arrow_err(what: &str, e: arrow_schema::ArrowError) -> Error {
    Error::InvalidArgument(format!("{what}: {e}"))
}
