//! The fixed-width value types a column can hold, tied to their [`LogicalType`].

use tessera_format::LogicalType;

/// A value type of an integer column: `u8`..`u64`, `i8`..`i64`. Columns store values
/// little-endian; the library reads and writes them through their in-memory bytes, so on a
/// big-endian host every value is byte-swapped on the way in and out.
pub trait Value: bytemuck::Pod + Send + Sync + std::fmt::Debug {
    /// The column type that stores this Rust type.
    const TYPE: LogicalType;
    /// The value with its bytes reversed (used on big-endian hosts only).
    fn swap_bytes(self) -> Self;
}

macro_rules! value {
    ($($t:ty => $lt:ident),*) => {$(
        impl Value for $t {
            const TYPE: LogicalType = LogicalType::$lt;
            fn swap_bytes(self) -> Self {
                <$t>::swap_bytes(self)
            }
        }
    )*};
}
value!(u8 => U8, u16 => U16, u32 => U32, u64 => U64, i8 => I8, i16 => I16, i32 => I32, i64 => I64);

/// Puts values read as little-endian bytes into host order (a no-op on little-endian hosts).
pub(crate) fn from_le_in_place<T: Value>(values: &mut [T]) {
    if cfg!(target_endian = "big") {
        for v in values {
            *v = v.swap_bytes();
        }
    }
}

/// The little-endian bytes of `values` (borrowed on little-endian hosts).
pub(crate) fn to_le_bytes<T: Value>(values: &[T]) -> std::borrow::Cow<'_, [u8]> {
    if cfg!(target_endian = "big") {
        let swapped: Vec<T> = values.iter().map(|v| v.swap_bytes()).collect();
        std::borrow::Cow::Owned(bytemuck::cast_slice(&swapped).to_vec())
    } else {
        std::borrow::Cow::Borrowed(bytemuck::cast_slice(values))
    }
}
