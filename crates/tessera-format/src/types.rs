//! Type and codec ids stored in `.tsr` files (`docs/format/container.md` §3), and the lane each
//! logical integer type is encoded through (`docs/format/int-common.md` §2).

use crate::Error;

/// Most values one chunk may hold (`int-common.md` §7, `container.md` §3). Bounds every
/// allocation a decoder makes from a header field.
pub const MAX_CHUNK_VALUES: u32 = 1 << 24;

/// The unsigned width integer codecs work in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lane {
    /// 32-bit lane: u8, u16, u32, i8, i16, i32.
    L32,
    /// 64-bit lane: u64, i64.
    L64,
}

impl Lane {
    /// Lane width in bits.
    pub const fn bits(self) -> u32 {
        match self {
            Lane::L32 => 32,
            Lane::L64 => 64,
        }
    }
    /// Words (32-bit) a whole lane value takes when stored (references, first values).
    pub const fn ref_words(self) -> usize {
        match self {
            Lane::L32 => 1,
            Lane::L64 => 2,
        }
    }
}

/// A column's logical type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LogicalType {
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
}

impl LogicalType {
    /// Every integer type, in id order.
    pub const ALL: [LogicalType; 8] = [
        LogicalType::U8,
        LogicalType::U16,
        LogicalType::U32,
        LogicalType::U64,
        LogicalType::I8,
        LogicalType::I16,
        LogicalType::I32,
        LogicalType::I64,
    ];

    /// The id stored in the directory.
    pub const fn id(self) -> u8 {
        match self {
            LogicalType::U8 => 1,
            LogicalType::U16 => 2,
            LogicalType::U32 => 3,
            LogicalType::U64 => 4,
            LogicalType::I8 => 5,
            LogicalType::I16 => 6,
            LogicalType::I32 => 7,
            LogicalType::I64 => 8,
        }
    }

    /// Parses a stored id.
    pub fn from_id(id: u8) -> Result<Self, Error> {
        Self::ALL
            .into_iter()
            .find(|t| t.id() == id)
            .ok_or(Error::Unknown {
                what: "logical type",
                found: id as u64,
            })
    }

    /// The name used on the command line and in `inspect`.
    pub const fn name(self) -> &'static str {
        match self {
            LogicalType::U8 => "u8",
            LogicalType::U16 => "u16",
            LogicalType::U32 => "u32",
            LogicalType::U64 => "u64",
            LogicalType::I8 => "i8",
            LogicalType::I16 => "i16",
            LogicalType::I32 => "i32",
            LogicalType::I64 => "i64",
        }
    }

    /// Parses a command-line name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Bytes per value in raw (uncompressed, little-endian) form.
    pub const fn width(self) -> usize {
        match self {
            LogicalType::U8 | LogicalType::I8 => 1,
            LogicalType::U16 | LogicalType::I16 => 2,
            LogicalType::U32 | LogicalType::I32 => 4,
            LogicalType::U64 | LogicalType::I64 => 8,
        }
    }

    /// Whether values are two's-complement signed (their sign bit is flipped into the lane).
    pub const fn signed(self) -> bool {
        matches!(
            self,
            LogicalType::I8 | LogicalType::I16 | LogicalType::I32 | LogicalType::I64
        )
    }

    /// The lane the integer codecs encode this type through.
    pub const fn lane(self) -> Lane {
        match self {
            LogicalType::U64 | LogicalType::I64 => Lane::L64,
            _ => Lane::L32,
        }
    }
}

/// The codec of one chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum CodecId {
    /// Raw little-endian values at the logical width.
    Plain,
    /// GPU-FOR (`docs/format/for.md`).
    For,
    /// GPU-DFOR (`docs/format/dfor.md`).
    Dfor,
    /// GPU-RFOR (`docs/format/rfor.md`).
    Rfor,
}

impl CodecId {
    /// Every concrete codec, in id order.
    pub const ALL: [CodecId; 4] = [CodecId::Plain, CodecId::For, CodecId::Dfor, CodecId::Rfor];
    /// The `requested_codec` id meaning "auto: chosen per chunk".
    pub const AUTO_ID: u8 = 255;

    /// The id stored in the directory.
    pub const fn id(self) -> u8 {
        match self {
            CodecId::Plain => 0,
            CodecId::For => 1,
            CodecId::Dfor => 2,
            CodecId::Rfor => 3,
        }
    }

    /// Parses a stored id (not `AUTO_ID`).
    pub fn from_id(id: u8) -> Result<Self, Error> {
        Self::ALL
            .into_iter()
            .find(|c| c.id() == id)
            .ok_or(Error::Unknown {
                what: "codec id",
                found: id as u64,
            })
    }

    /// The name used on the command line, in specs and in `inspect`.
    pub const fn name(self) -> &'static str {
        match self {
            CodecId::Plain => "plain",
            CodecId::For => "for",
            CodecId::Dfor => "dfor",
            CodecId::Rfor => "rfor",
        }
    }

    /// Parses a command-line name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_unknown_ids_fail() {
        for t in LogicalType::ALL {
            assert_eq!(LogicalType::from_id(t.id()).ok(), Some(t));
            assert_eq!(LogicalType::from_name(t.name()), Some(t));
        }
        for c in CodecId::ALL {
            assert_eq!(CodecId::from_id(c.id()).ok(), Some(c));
            assert_eq!(CodecId::from_name(c.name()), Some(c));
        }
        assert!(LogicalType::from_id(0).is_err());
        assert!(CodecId::from_id(CodecId::AUTO_ID).is_err());
    }
}
