//! Type and codec ids stored in `.tsr` files (`docs/format/container.md` §3), the lane each
//! logical integer type is encoded through (`docs/format/int-common.md` §2), and which codec
//! serves which type.
//!
//! Format 1.0 defined the integer types (ids 1-8) and codecs (0-3); 1.1 adds the byte, bit and
//! text types (9-11) with their codecs (WAH 16, PLWAH 17, Huffman 32, LLL 48). A writer declares
//! minor 1 exactly when a column uses one of them ([`LogicalType::min_minor`],
//! [`CodecId::min_minor`]), so files of integer columns stay byte-identical 1.0 files.

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
    /// Any bytes; a value is one byte (codecs: plain, huffman, lll).
    Bytes,
    /// A bitmap; a value is one bit, packed least significant bit first in raw form (codecs:
    /// plain, wah, plwah).
    Bits,
    /// Strings; a value is one string, stored per chunk as DFOR end offsets plus the
    /// concatenated bytes (`docs/format/utf8.md`; codecs: plain, huffman, lll).
    Utf8,
}

impl LogicalType {
    /// Every type, in id order.
    pub const ALL: [LogicalType; 11] = [
        LogicalType::U8,
        LogicalType::U16,
        LogicalType::U32,
        LogicalType::U64,
        LogicalType::I8,
        LogicalType::I16,
        LogicalType::I32,
        LogicalType::I64,
        LogicalType::Bytes,
        LogicalType::Bits,
        LogicalType::Utf8,
    ];

    /// Every integer type, in id order.
    pub const INTEGERS: [LogicalType; 8] = [
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
            LogicalType::Bytes => 9,
            LogicalType::Bits => 10,
            LogicalType::Utf8 => 11,
        }
    }

    /// Whether this is one of the integer types (the FOR family's domain).
    pub const fn is_integer(self) -> bool {
        self.id() <= 8
    }

    /// The lowest format minor version that defines this type.
    pub const fn min_minor(self) -> u16 {
        if self.is_integer() {
            0
        } else {
            1
        }
    }

    /// Bytes of the raw form of `value_count` values, where it is fixed (`None` for utf8, whose
    /// strings vary in length): `value_count × width` for integers and bytes, `⌈value_count /
    /// 8⌉` for bits.
    pub const fn raw_len(self, value_count: u64) -> Option<u64> {
        match self {
            LogicalType::Bits => Some(value_count.div_ceil(8)),
            LogicalType::Utf8 => None,
            _ => Some(value_count * self.width() as u64),
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
            LogicalType::Bytes => "bytes",
            LogicalType::Bits => "bits",
            LogicalType::Utf8 => "utf8",
        }
    }

    /// Parses a command-line name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Bytes per value in raw (uncompressed, little-endian) form; 1 for bytes, and for bits
    /// and utf8, whose values are not whole bytes, the 1 of their byte stream (see
    /// [`LogicalType::raw_len`]).
    pub const fn width(self) -> usize {
        match self {
            LogicalType::U8 | LogicalType::I8 => 1,
            LogicalType::Bytes | LogicalType::Bits | LogicalType::Utf8 => 1,
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
    /// WAH bitmap (`docs/format/wah.md`).
    Wah,
    /// PLWAH bitmap (`docs/format/plwah.md`).
    Plwah,
    /// Canonical Huffman (`docs/format/huffman.md`).
    Huffman,
    /// LLL byte codec (`docs/format/lll.md`).
    Lll,
}

/// One row of the codec table: what the format says about a codec.
#[derive(Clone, Copy)]
struct CodecRow {
    codec: CodecId,
    /// The id stored in the directory.
    id: u8,
    /// The name used on the command line, in specs and in `inspect`.
    name: &'static str,
    /// The lowest format minor version that defines the codec.
    min_minor: u16,
    /// The logical types whose chunks may use it, as a set of type ids ([`type_set`]).
    serves: u32,
}

/// The set of `types` as a bit mask over their ids.
const fn type_set(types: &[LogicalType]) -> u32 {
    let mut set = 0;
    let mut i = 0;
    while i < types.len() {
        set |= 1 << types[i].id();
        i += 1;
    }
    set
}

/// Every codec's facts, one row per codec in `CodecId` declaration order (so a codec's row is
/// `CODECS[codec as usize]`, which the assertion below checks at compile time). Adding a codec
/// to the format is a variant and a row here.
const CODECS: [CodecRow; 8] = [
    CodecRow {
        codec: CodecId::Plain,
        id: 0,
        name: "plain",
        min_minor: 0,
        serves: type_set(&LogicalType::ALL),
    },
    CodecRow {
        codec: CodecId::For,
        id: 1,
        name: "for",
        min_minor: 0,
        serves: type_set(&LogicalType::INTEGERS),
    },
    CodecRow {
        codec: CodecId::Dfor,
        id: 2,
        name: "dfor",
        min_minor: 0,
        serves: type_set(&LogicalType::INTEGERS),
    },
    CodecRow {
        codec: CodecId::Rfor,
        id: 3,
        name: "rfor",
        min_minor: 0,
        serves: type_set(&LogicalType::INTEGERS),
    },
    CodecRow {
        codec: CodecId::Wah,
        id: 16,
        name: "wah",
        min_minor: 1,
        serves: type_set(&[LogicalType::Bits]),
    },
    CodecRow {
        codec: CodecId::Plwah,
        id: 17,
        name: "plwah",
        min_minor: 1,
        serves: type_set(&[LogicalType::Bits]),
    },
    CodecRow {
        codec: CodecId::Huffman,
        id: 32,
        name: "huffman",
        min_minor: 1,
        serves: type_set(&[LogicalType::Bytes, LogicalType::Utf8]),
    },
    CodecRow {
        codec: CodecId::Lll,
        id: 48,
        name: "lll",
        min_minor: 1,
        serves: type_set(&[LogicalType::Bytes, LogicalType::Utf8]),
    },
];

// Rows are in declaration order, ids are distinct and none is the auto id.
const _: () = {
    let mut i = 0;
    while i < CODECS.len() {
        assert!(CODECS[i].codec as usize == i);
        assert!(CODECS[i].id != CodecId::AUTO_ID);
        let mut j = 0;
        while j < i {
            assert!(CODECS[j].id != CODECS[i].id);
            j += 1;
        }
        i += 1;
    }
};

impl CodecId {
    /// Every concrete codec, in id order.
    pub const ALL: [CodecId; CODECS.len()] = {
        let mut all = [CodecId::Plain; CODECS.len()];
        let mut i = 0;
        while i < all.len() {
            all[i] = CODECS[i].codec;
            i += 1;
        }
        all
    };
    /// The codecs of integer columns, in id order.
    pub const INTEGERS: [CodecId; 4] = [CodecId::Plain, CodecId::For, CodecId::Dfor, CodecId::Rfor];
    /// The `requested_codec` id meaning "auto: chosen per chunk".
    pub const AUTO_ID: u8 = 255;

    const fn row(self) -> CodecRow {
        CODECS[self as usize]
    }

    /// The id stored in the directory.
    pub const fn id(self) -> u8 {
        self.row().id
    }

    /// The lowest format minor version that defines this codec.
    pub const fn min_minor(self) -> u16 {
        self.row().min_minor
    }

    /// Whether chunks of `ty` may use this codec.
    pub const fn supports(self, ty: LogicalType) -> bool {
        self.row().serves & (1 << ty.id()) != 0
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
        self.row().name
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
        assert!(LogicalType::from_id(12).is_err());
        assert!(CodecId::from_id(CodecId::AUTO_ID).is_err());
        assert!(CodecId::from_id(4).is_err());
    }

    #[test]
    fn codecs_serve_their_types_and_new_ids_need_minor_1() {
        for t in LogicalType::ALL {
            assert!(CodecId::Plain.supports(t));
            assert_eq!(CodecId::For.supports(t), t.is_integer());
            assert_eq!(CodecId::Wah.supports(t), t == LogicalType::Bits);
            assert_eq!(
                CodecId::Lll.supports(t),
                matches!(t, LogicalType::Bytes | LogicalType::Utf8)
            );
            assert_eq!(t.min_minor(), u16::from(!t.is_integer()));
        }
        for c in CodecId::ALL {
            assert_eq!(c.min_minor(), u16::from(!CodecId::INTEGERS.contains(&c)));
            assert_eq!(
                CodecId::INTEGERS.contains(&c),
                LogicalType::INTEGERS.iter().all(|&t| c.supports(t))
            );
            assert_eq!(
                c.supports(LogicalType::Bytes),
                c.supports(LogicalType::Utf8)
            );
        }
        // The table's facts as the format documents them (`container.md` §3).
        let ids: Vec<(u8, &str)> = CodecId::ALL.iter().map(|c| (c.id(), c.name())).collect();
        assert_eq!(
            ids,
            [
                (0, "plain"),
                (1, "for"),
                (2, "dfor"),
                (3, "rfor"),
                (16, "wah"),
                (17, "plwah"),
                (32, "huffman"),
                (48, "lll")
            ]
        );
        assert!(CodecId::ALL.windows(2).all(|w| w[0].id() < w[1].id()));
        assert_eq!(LogicalType::Bits.raw_len(9), Some(2));
        assert_eq!(LogicalType::U32.raw_len(3), Some(12));
        assert_eq!(LogicalType::Utf8.raw_len(3), None);
    }
}
