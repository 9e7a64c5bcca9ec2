//! ORC types to Arrow types, as pyarrow's ORC reader maps them.

use arrow_schema::{DataType, Field, TimeUnit};

use crate::file::{OrcColumn, OrcType};

/// 2015-01-01 00:00:00 UTC in seconds since the Unix epoch: ORC timestamps count from it.
pub const TIMESTAMP_EPOCH_2015: i64 = 1_420_070_400;

/// The Arrow type of a supported ORC type (`None` for an unsupported one).
pub fn arrow_type(t: &OrcType) -> Option<DataType> {
    Some(match t {
        OrcType::Boolean => DataType::Boolean,
        OrcType::Byte => DataType::Int8,
        OrcType::Short => DataType::Int16,
        OrcType::Int => DataType::Int32,
        OrcType::Long => DataType::Int64,
        OrcType::Float => DataType::Float32,
        OrcType::Double => DataType::Float64,
        OrcType::String => DataType::Utf8,
        OrcType::Binary => DataType::Binary,
        OrcType::Timestamp => DataType::Timestamp(TimeUnit::Nanosecond, None),
        OrcType::Date => DataType::Date32,
        OrcType::Decimal { precision, scale } => DataType::Decimal128(*precision, *scale),
        OrcType::Unsupported(_) => return None,
    })
}

/// The Arrow field of a column (every ORC column may hold nulls).
pub fn arrow_field(c: &OrcColumn) -> Option<Field> {
    Some(Field::new(&c.name, arrow_type(&c.ty)?, true))
}
