//! Table metadata (`docs/format/table.md`, container 1.3): which Arrow field each physical column
//! of a `.tsr` file belongs to, and the Arrow type that field restores.
//!
//! A field maps to one or more physical columns of the existing logical types, each with a
//! [`Role`]: its values (or, for a dictionary-encoded field, its dictionary codes), its validity
//! bitmap (a `bits` column, absent when the field has no nulls), the byte lengths of binary
//! values, and a dictionary's values (and their lengths). The container knows nothing of Arrow:
//! this module stores the type as ids and checks every reference against the directory, so a
//! reader can trust that each role's column exists, has the role's logical type and, for the
//! roles that hold one entry a row, exactly `row_count` values.

use std::collections::HashSet;

use crate::{Error, LogicalType, Result};

/// The container minor version that defines the table section (`container.md` §3a).
pub const TABLE_MINOR: u16 = 3;
/// The container minor version that adds ALP float fields (`table.md` §8): roles 5-7.
pub const ALP_MINOR: u16 = 4;
/// The container minor version that adds automatic dictionaries of fixed-width fields
/// (`table.md` §6.1): a dict column on a field that is neither an Arrow dictionary nor
/// utf8/binary.
pub const FIXED_DICT_MINOR: u16 = 5;
/// The container minor version that adds run-encoded fields (`table.md` §9): role 8.
pub const RUNS_MINOR: u16 = 6;
/// Rows per ALP vector: each vector of a float field has its own exponent and factor.
pub const ALP_VECTOR_ROWS: u64 = 1024;
/// Most fields a table holds (as many as the container's columns).
pub const MAX_FIELDS: u32 = 65535;
/// Most physical columns one field references (one per role).
pub const MAX_FIELD_COLUMNS: u8 = 5;

/// The unit of a timestamp, time or duration field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// Seconds (id 0).
    Second,
    /// Milliseconds (id 1).
    Millisecond,
    /// Microseconds (id 2).
    Microsecond,
    /// Nanoseconds (id 3).
    Nanosecond,
}

impl TimeUnit {
    /// The unit's id in `table.md` §3.
    pub fn id(self) -> u8 {
        match self {
            TimeUnit::Second => 0,
            TimeUnit::Millisecond => 1,
            TimeUnit::Microsecond => 2,
            TimeUnit::Nanosecond => 3,
        }
    }

    fn from_id(id: u8) -> Option<TimeUnit> {
        Some(match id {
            0 => TimeUnit::Second,
            1 => TimeUnit::Millisecond,
            2 => TimeUnit::Microsecond,
            3 => TimeUnit::Nanosecond,
            _ => return None,
        })
    }
}

/// The Arrow type of a field (for an Arrow dictionary field: its value type).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldType {
    /// An integer type: `LogicalType::U8 ..= LogicalType::I64` (ids 1-8).
    Int(LogicalType),
    /// Boolean, stored as bits (12).
    Boolean,
    /// Float16, its bit patterns as u16 (13).
    Float16,
    /// Float32, its bit patterns as u32 (14).
    Float32,
    /// Float64, its bit patterns as u64 (15).
    Float64,
    /// Days since the epoch, i32 (16).
    Date32,
    /// Milliseconds since the epoch, i64 (17).
    Date64,
    /// i64 since the epoch in `unit`, with an optional time zone (18).
    Timestamp(TimeUnit, Option<String>),
    /// Time of day, i32, in seconds or milliseconds (19).
    Time32(TimeUnit),
    /// Time of day, i64, in microseconds or nanoseconds (20).
    Time64(TimeUnit),
    /// i64 in `unit` (21).
    Duration(TimeUnit),
    /// Decimal128 of precision <= 18, the unscaled value as i64 (22).
    Decimal128 {
        /// Digits, 1..=18.
        precision: u8,
        /// Digits after the point.
        scale: i8,
    },
    /// Utf8, a utf8 column (23).
    Utf8,
    /// LargeUtf8, a utf8 column (24).
    LargeUtf8,
    /// Binary: a bytes column of the values back to back and a u32 column of their lengths (25).
    Binary,
    /// LargeBinary, as Binary (26).
    LargeBinary,
}

/// Largest decimal precision whose unscaled values always fit an i64 (10^18 - 1 < 2^63).
pub const MAX_DECIMAL_PRECISION: u8 = 18;

impl FieldType {
    /// The type's id in `table.md` §3.
    pub fn id(&self) -> u8 {
        match self {
            FieldType::Int(t) => t.id(),
            FieldType::Boolean => 12,
            FieldType::Float16 => 13,
            FieldType::Float32 => 14,
            FieldType::Float64 => 15,
            FieldType::Date32 => 16,
            FieldType::Date64 => 17,
            FieldType::Timestamp(..) => 18,
            FieldType::Time32(_) => 19,
            FieldType::Time64(_) => 20,
            FieldType::Duration(_) => 21,
            FieldType::Decimal128 { .. } => 22,
            FieldType::Utf8 => 23,
            FieldType::LargeUtf8 => 24,
            FieldType::Binary => 25,
            FieldType::LargeBinary => 26,
        }
    }

    /// The logical type of the column that holds the values (not dictionary codes).
    pub fn physical(&self) -> LogicalType {
        match self {
            FieldType::Int(t) => *t,
            FieldType::Boolean => LogicalType::Bits,
            FieldType::Float16 => LogicalType::U16,
            FieldType::Float32 => LogicalType::U32,
            FieldType::Float64 => LogicalType::U64,
            FieldType::Date32 | FieldType::Time32(_) => LogicalType::I32,
            FieldType::Date64
            | FieldType::Timestamp(..)
            | FieldType::Time64(_)
            | FieldType::Duration(_)
            | FieldType::Decimal128 { .. } => LogicalType::I64,
            FieldType::Utf8 | FieldType::LargeUtf8 => LogicalType::Utf8,
            FieldType::Binary | FieldType::LargeBinary => LogicalType::Bytes,
        }
    }

    /// Whether values are stored as bytes plus a lengths column.
    pub fn is_binary(&self) -> bool {
        matches!(self, FieldType::Binary | FieldType::LargeBinary)
    }

    fn unit(&self) -> u8 {
        match self {
            FieldType::Timestamp(u, _)
            | FieldType::Time32(u)
            | FieldType::Time64(u)
            | FieldType::Duration(u) => u.id(),
            _ => 0,
        }
    }
}

/// What a physical column holds for its field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// The values, one a row (or, with [`Role::DictValues`], the dictionary codes) (0).
    Values,
    /// The validity bitmap, one bit a row, 1 = valid (1).
    Validity,
    /// The byte length of each binary value, u32, one a row (2).
    Lengths,
    /// The dictionary's values (3).
    DictValues,
    /// The byte length of each binary dictionary value, u32 (4).
    DictLengths,
    /// An ALP float field's exponent and factor per vector of [`ALP_VECTOR_ROWS`] rows, u16
    /// (5, container 1.4).
    AlpParams,
    /// The rows of an ALP float field whose value is stored as its bit pattern, u64, ascending
    /// (6, container 1.4).
    ExceptionRows,
    /// Those rows' bit patterns, u64 (Float64) or u32 (Float32) (7, container 1.4).
    ExceptionBits,
    /// A run-encoded field's run ends, u64, strictly ascending, the last the table's rows; its
    /// values column then holds one value a run (8, container 1.6, `table.md` §9).
    RunEnds,
}

impl Role {
    /// The role's id in `table.md` §3.
    pub fn id(self) -> u8 {
        match self {
            Role::Values => 0,
            Role::Validity => 1,
            Role::Lengths => 2,
            Role::DictValues => 3,
            Role::DictLengths => 4,
            Role::AlpParams => 5,
            Role::ExceptionRows => 6,
            Role::ExceptionBits => 7,
            Role::RunEnds => 8,
        }
    }

    /// Whether the role belongs to an ALP float field (container 1.4).
    pub fn is_alp(self) -> bool {
        matches!(
            self,
            Role::AlpParams | Role::ExceptionRows | Role::ExceptionBits
        )
    }

    fn from_id(id: u8) -> Option<Role> {
        Some(match id {
            0 => Role::Values,
            1 => Role::Validity,
            2 => Role::Lengths,
            3 => Role::DictValues,
            4 => Role::DictLengths,
            5 => Role::AlpParams,
            6 => Role::ExceptionRows,
            7 => Role::ExceptionBits,
            8 => Role::RunEnds,
            _ => return None,
        })
    }

    /// The role's name (also the suffix writers give its column's name).
    pub fn name(self) -> &'static str {
        match self {
            Role::Values => "values",
            Role::Validity => "validity",
            Role::Lengths => "lengths",
            Role::DictValues => "dict",
            Role::DictLengths => "dict_lengths",
            Role::AlpParams => "alp_params",
            Role::ExceptionRows => "exception_rows",
            Role::ExceptionBits => "exception_bits",
            Role::RunEnds => "run_ends",
        }
    }
}

/// One Arrow field of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldMeta {
    /// The field's name (Arrow allows any UTF-8, repeated names included).
    pub name: String,
    /// Its Arrow type (the value type of an Arrow dictionary).
    pub ty: FieldType,
    /// Whether the Arrow field is nullable.
    pub nullable: bool,
    /// `Some(key type)` when the Arrow type is `Dictionary(key, ty)`.
    pub arrow_dictionary: Option<LogicalType>,
    /// The field's Arrow metadata, in order.
    pub metadata: Vec<(String, String)>,
    /// The physical columns, `(role, column index)`, each role at most once.
    pub columns: Vec<(Role, u32)>,
}

impl FieldMeta {
    /// The column index holding `role`, if the field has one.
    pub fn column(&self, role: Role) -> Option<usize> {
        self.columns
            .iter()
            .find(|(r, _)| *r == role)
            .map(|&(_, c)| c as usize)
    }

    /// Whether the values are stored as dictionary codes plus a dictionary.
    pub fn is_dictionary_encoded(&self) -> bool {
        self.column(Role::DictValues).is_some()
    }

    /// Whether the writer dictionary-encoded a fixed-width field on its own (`table.md` §6.1,
    /// container minor 5): a dict column, no Arrow dictionary, and not utf8 or binary.
    pub fn is_fixed_auto_dictionary(&self) -> bool {
        self.is_dictionary_encoded()
            && self.arrow_dictionary.is_none()
            && !matches!(
                self.ty,
                FieldType::Utf8 | FieldType::LargeUtf8 | FieldType::Binary | FieldType::LargeBinary
            )
    }

    /// Whether the float values are stored as ALP digits plus exceptions (`table.md` §8).
    pub fn is_alp(&self) -> bool {
        self.column(Role::AlpParams).is_some()
    }

    /// Whether the values are stored as runs: one value a run plus the runs' ends
    /// (`table.md` §9).
    pub fn is_run_encoded(&self) -> bool {
        self.column(Role::RunEnds).is_some()
    }
}

/// The table section of a directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableMeta {
    /// Rows of the table.
    pub row_count: u64,
    /// The Arrow schema's metadata, in order.
    pub metadata: Vec<(String, String)>,
    /// The fields, in schema order.
    pub fields: Vec<FieldMeta>,
}

fn put_str32(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_metadata(out: &mut Vec<u8>, kv: &[(String, String)]) {
    out.extend_from_slice(&(kv.len() as u32).to_le_bytes());
    for (k, v) in kv {
        put_str32(out, k);
        put_str32(out, v);
    }
}

impl TableMeta {
    /// The lowest container minor version that defines everything the section uses.
    pub fn min_minor(&self) -> u16 {
        if self.fields.iter().any(FieldMeta::is_run_encoded) {
            RUNS_MINOR
        } else if self.fields.iter().any(FieldMeta::is_fixed_auto_dictionary) {
            FIXED_DICT_MINOR
        } else if self.fields.iter().any(FieldMeta::is_alp) {
            ALP_MINOR
        } else {
            TABLE_MINOR
        }
    }

    /// The section's bytes (`table.md` §2), without the length prefix the directory adds.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        if self.fields.len() > MAX_FIELDS as usize {
            return Err(Error::InvalidArgument(format!(
                "{} fields; a table holds at most {MAX_FIELDS}",
                self.fields.len()
            )));
        }
        let mut out = Vec::new();
        out.extend_from_slice(&self.row_count.to_le_bytes());
        put_metadata(&mut out, &self.metadata);
        out.extend_from_slice(&(self.fields.len() as u32).to_le_bytes());
        for f in &self.fields {
            let name_len = u16::try_from(f.name.len()).map_err(|_| {
                Error::InvalidArgument(format!("field name of {} bytes", f.name.len()))
            })?;
            out.extend_from_slice(&name_len.to_le_bytes());
            out.extend_from_slice(f.name.as_bytes());
            out.push(f.ty.id());
            out.push(u8::from(f.nullable) | (u8::from(f.arrow_dictionary.is_some()) << 1));
            out.push(f.arrow_dictionary.map_or(0, |k| k.id()));
            out.push(f.ty.unit());
            let (precision, scale) = match f.ty {
                FieldType::Decimal128 { precision, scale } => (precision, scale),
                _ => (0, 0),
            };
            out.push(precision);
            out.push(scale as u8);
            let tz = match &f.ty {
                FieldType::Timestamp(_, Some(tz)) => tz.as_str(),
                _ => "",
            };
            let tz_len = u16::try_from(tz.len())
                .map_err(|_| Error::InvalidArgument(format!("time zone of {} bytes", tz.len())))?;
            out.extend_from_slice(&tz_len.to_le_bytes());
            out.extend_from_slice(tz.as_bytes());
            put_metadata(&mut out, &f.metadata);
            if f.columns.is_empty() || f.columns.len() > MAX_FIELD_COLUMNS as usize {
                return Err(Error::InvalidArgument(format!(
                    "field '{}' references {} columns",
                    f.name,
                    f.columns.len()
                )));
            }
            out.push(f.columns.len() as u8);
            for (role, col) in &f.columns {
                out.push(role.id());
                out.extend_from_slice(&col.to_le_bytes());
            }
        }
        Ok(out)
    }

    /// Parses a table section at file offset `base` and checks it against the directory's
    /// `columns` (`table.md` §4).
    pub fn parse(
        bytes: &[u8],
        base: u64,
        columns: &[crate::container::ColumnMeta],
    ) -> Result<Self> {
        Self::parse_minor(bytes, base, columns, crate::container::VERSION_MINOR)
    }

    /// [`TableMeta::parse`] for a file of version 1.`minor`: the ALP roles (5-7) exist from
    /// [`ALP_MINOR`] on.
    pub fn parse_minor(
        bytes: &[u8],
        base: u64,
        columns: &[crate::container::ColumnMeta],
        minor: u16,
    ) -> Result<Self> {
        let max_role = if minor >= RUNS_MINOR {
            8
        } else if minor >= ALP_MINOR {
            7
        } else {
            4
        };
        let mut cur = Reader {
            bytes,
            pos: 0,
            base,
        };
        let row_count = cur.u64("table row_count")?;
        let metadata = cur.metadata("table metadata")?;
        let count_at = cur.at();
        let field_count = cur.u32("table field_count")?;
        if field_count > MAX_FIELDS {
            return Err(cur.invalid(
                "table field_count",
                count_at,
                format!("<= {MAX_FIELDS}"),
                field_count as u64,
            ));
        }
        // A field takes at least 17 bytes: bounds the allocation by the section's length.
        let mut fields = Vec::with_capacity((field_count as usize).min(cur.remaining() / 17));
        let mut used = HashSet::new();
        for _ in 0..field_count {
            let name_len = cur.u16("field name_length")? as usize;
            let name = cur.string(name_len, "field name")?;
            let type_at = cur.at();
            let type_id = cur.u8("field type")?;
            let flags_at = cur.at();
            let flags = cur.u8("field flags")?;
            if flags & !3 != 0 {
                return Err(cur.invalid(
                    "field flags",
                    flags_at,
                    "only bits 0 and 1".into(),
                    flags as u64,
                ));
            }
            let key_at = cur.at();
            let key_id = cur.u8("field key_type")?;
            let unit_at = cur.at();
            let unit_id = cur.u8("field unit")?;
            let precision_at = cur.at();
            let precision = cur.u8("field precision")?;
            let scale = cur.u8("field scale")? as i8;
            let tz_len = cur.u16("field tz_length")? as usize;
            let tz = cur.string(tz_len, "field time zone")?;
            let field_metadata = cur.metadata("field metadata")?;
            let unit = |ok: &[TimeUnit]| {
                TimeUnit::from_id(unit_id)
                    .filter(|u| ok.contains(u))
                    .ok_or_else(|| {
                        cur.invalid(
                            "field unit",
                            unit_at,
                            format!("one of {ok:?}"),
                            unit_id as u64,
                        )
                    })
            };
            use TimeUnit::*;
            let ty = match type_id {
                1..=8 => FieldType::Int(LogicalType::from_id(type_id)?),
                12 => FieldType::Boolean,
                13 => FieldType::Float16,
                14 => FieldType::Float32,
                15 => FieldType::Float64,
                16 => FieldType::Date32,
                17 => FieldType::Date64,
                18 => FieldType::Timestamp(
                    unit(&[Second, Millisecond, Microsecond, Nanosecond])?,
                    (tz_len > 0).then_some(tz.clone()),
                ),
                19 => FieldType::Time32(unit(&[Second, Millisecond])?),
                20 => FieldType::Time64(unit(&[Microsecond, Nanosecond])?),
                21 => FieldType::Duration(unit(&[Second, Millisecond, Microsecond, Nanosecond])?),
                22 => {
                    if precision == 0 || precision > MAX_DECIMAL_PRECISION {
                        return Err(cur.invalid(
                            "field precision",
                            precision_at,
                            format!("1..={MAX_DECIMAL_PRECISION}"),
                            precision as u64,
                        ));
                    }
                    FieldType::Decimal128 { precision, scale }
                }
                23 => FieldType::Utf8,
                24 => FieldType::LargeUtf8,
                25 => FieldType::Binary,
                26 => FieldType::LargeBinary,
                _ => {
                    return Err(cur.invalid(
                        "field type",
                        type_at,
                        "an id of table.md §3".into(),
                        type_id as u64,
                    ))
                }
            };
            if !matches!(
                ty,
                FieldType::Timestamp(..)
                    | FieldType::Time32(_)
                    | FieldType::Time64(_)
                    | FieldType::Duration(_)
            ) && unit_id != 0
            {
                return Err(cur.invalid(
                    "field unit",
                    unit_at,
                    "0 for this type".into(),
                    unit_id as u64,
                ));
            }
            if !matches!(ty, FieldType::Decimal128 { .. }) && (precision != 0 || scale != 0) {
                return Err(cur.invalid(
                    "field precision",
                    precision_at,
                    "0 for this type".into(),
                    precision as u64,
                ));
            }
            if !matches!(ty, FieldType::Timestamp(..)) && tz_len != 0 {
                return Err(cur.invalid(
                    "field tz_length",
                    precision_at + 2,
                    "0 for this type".into(),
                    tz_len as u64,
                ));
            }
            let arrow_dictionary = if flags & 2 != 0 {
                let k = LogicalType::from_id(key_id).ok().filter(|k| k.is_integer());
                Some(k.ok_or_else(|| {
                    cur.invalid(
                        "field key_type",
                        key_at,
                        "an integer type id (1-8)".into(),
                        key_id as u64,
                    )
                })?)
            } else if key_id != 0 {
                return Err(cur.invalid(
                    "field key_type",
                    key_at,
                    "0 (not a dictionary)".into(),
                    key_id as u64,
                ));
            } else {
                None
            };
            let ncols_at = cur.at();
            let ncols = cur.u8("field column_count")?;
            if ncols == 0 || ncols > MAX_FIELD_COLUMNS {
                return Err(cur.invalid(
                    "field column_count",
                    ncols_at,
                    format!("1..={MAX_FIELD_COLUMNS}"),
                    ncols as u64,
                ));
            }
            let mut refs = Vec::with_capacity(ncols as usize);
            for _ in 0..ncols {
                let role_at = cur.at();
                let role_id = cur.u8("field column role")?;
                let role = Role::from_id(role_id)
                    .filter(|_| role_id <= max_role)
                    .ok_or_else(|| {
                        cur.invalid(
                            "field column role",
                            role_at,
                            format!("0..={max_role}"),
                            role_id as u64,
                        )
                    })?;
                let col_at = cur.at();
                let col = cur.u32("field column index")?;
                if col as usize >= columns.len() || !used.insert(col) {
                    return Err(cur.invalid(
                        "field column index",
                        col_at,
                        format!("a column below {} no other role uses", columns.len()),
                        col as u64,
                    ));
                }
                if refs.iter().any(|(r, _)| *r == role) {
                    return Err(cur.invalid(
                        "field column role",
                        role_at,
                        "each role once".into(),
                        role_id as u64,
                    ));
                }
                refs.push((role, col));
            }
            let field = FieldMeta {
                name,
                ty,
                nullable: flags & 1 != 0,
                arrow_dictionary,
                metadata: field_metadata,
                columns: refs,
            };
            check_field(&field, row_count, columns, ncols_at)?;
            if field.is_fixed_auto_dictionary()
                && (minor < FIXED_DICT_MINOR || field.ty == FieldType::Boolean)
            {
                return Err(cur.invalid(
                    "field columns",
                    ncols_at,
                    format!(
                        "field '{}': a dictionary of a {} field only from minor {FIXED_DICT_MINOR} on, \
                         and never of booleans",
                        field.name,
                        field.ty.physical().name()
                    ),
                    u64::from(minor),
                ));
            }
            fields.push(field);
        }
        Ok(TableMeta {
            row_count,
            metadata,
            fields,
        })
    }
}

/// `table.md` §4: which roles a field must have, their columns' types and counts.
fn check_field(
    f: &FieldMeta,
    rows: u64,
    columns: &[crate::container::ColumnMeta],
    at: u64,
) -> Result<()> {
    let bad = |what: String| Error::InvalidHeader {
        field: "field columns",
        offset: at,
        expected: format!("field '{}': {what}", f.name),
        found: f.columns.len() as u64,
    };
    let dict = f.column(Role::DictValues).is_some();
    let binary = f.ty.is_binary();
    let alp = f.is_alp();
    let float = matches!(f.ty, FieldType::Float32 | FieldType::Float64);
    let runs = f.is_run_encoded();
    if runs
        && (dict
            || alp
            || binary
            || f.ty == FieldType::Boolean
            || f.ty.physical() == LogicalType::Utf8)
    {
        return Err(bad(
            "run ends belong to fixed-width fields other than booleans, without a dictionary or ALP"
                .into(),
        ));
    }
    let mut needed = vec![Role::Values];
    if alp {
        if !float || dict {
            return Err(bad(
                "ALP columns belong to Float32 and Float64 fields only".into()
            ));
        }
        needed.extend([Role::ExceptionRows, Role::ExceptionBits]);
    } else if f.columns.iter().any(|(r, _)| r.is_alp()) {
        return Err(bad("exception columns without an alp_params column".into()));
    }
    if binary {
        needed.push(if dict {
            Role::DictLengths
        } else {
            Role::Lengths
        });
    }
    if f.arrow_dictionary.is_some() && !dict {
        return Err(bad("an Arrow dictionary field needs a dict column".into()));
    }
    for r in needed {
        if f.column(r).is_none() {
            return Err(bad(format!("a {} column", r.name())));
        }
    }
    for &(role, col) in &f.columns {
        let meta = &columns[col as usize];
        let (ty_ok, count): (bool, Option<u64>) = match role {
            Role::Values if dict => (
                meta.logical_type.is_integer()
                    && f.arrow_dictionary.is_none_or(|k| k == meta.logical_type),
                Some(rows),
            ),
            Role::Values if alp => (meta.logical_type == LogicalType::I64, Some(rows)),
            Role::Values if runs => (
                meta.logical_type == f.ty.physical()
                    && f.column(Role::RunEnds)
                        .is_some_and(|c| columns[c].value_count == meta.value_count),
                None,
            ),
            Role::RunEnds => (
                meta.logical_type == LogicalType::U64
                    && meta.value_count <= rows
                    && (rows == 0 || meta.value_count > 0),
                None,
            ),
            Role::Values => (
                meta.logical_type == f.ty.physical(),
                (!binary).then_some(rows),
            ),
            Role::AlpParams => (
                meta.logical_type == LogicalType::U16,
                Some(rows.div_ceil(ALP_VECTOR_ROWS)),
            ),
            Role::ExceptionRows => (meta.logical_type == LogicalType::U64, None),
            Role::ExceptionBits => (
                meta.logical_type == f.ty.physical()
                    && f.column(Role::ExceptionRows)
                        .is_some_and(|c| columns[c].value_count == meta.value_count),
                None,
            ),
            Role::Validity => (
                meta.logical_type == LogicalType::Bits && f.nullable,
                Some(rows),
            ),
            Role::Lengths => (
                meta.logical_type == LogicalType::U32 && binary && !dict,
                Some(rows),
            ),
            Role::DictValues => (meta.logical_type == f.ty.physical(), None),
            Role::DictLengths => (
                meta.logical_type == LogicalType::U32 && binary && dict,
                None,
            ),
        };
        if !ty_ok {
            return Err(bad(format!(
                "the {} column '{}' may not be {} here",
                role.name(),
                meta.name,
                meta.logical_type.name()
            )));
        }
        if let Some(n) = count.filter(|&n| n != meta.value_count) {
            return Err(bad(format!(
                "the {} column '{}' holds {} values, the table {n} rows",
                role.name(),
                meta.name,
                meta.value_count
            )));
        }
    }
    Ok(())
}

/// Little-endian reads over the table section that fail with [`Error::Truncated`].
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Reader<'a> {
    fn at(&self) -> u64 {
        self.base + self.pos as u64
    }
    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }
    fn invalid(&self, field: &'static str, offset: u64, expected: String, found: u64) -> Error {
        Error::InvalidHeader {
            field,
            offset,
            expected,
            found,
        }
    }
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(Error::Truncated {
                what,
                offset: self.at(),
                needed: n as u64,
                available: self.remaining() as u64,
            });
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &'static str) -> Result<u16> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self, what: &'static str) -> Result<u32> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self, what: &'static str) -> Result<u64> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8, what)?);
        Ok(u64::from_le_bytes(a))
    }
    fn string(&mut self, n: usize, what: &'static str) -> Result<String> {
        let at = self.at();
        let b = self.take(n, what)?;
        std::str::from_utf8(b)
            .map(str::to_owned)
            .map_err(|e| Error::InvalidHeader {
                field: what,
                offset: at + e.valid_up_to() as u64,
                expected: "UTF-8".into(),
                found: b.get(e.valid_up_to()).copied().unwrap_or(0) as u64,
            })
    }
    fn metadata(&mut self, what: &'static str) -> Result<Vec<(String, String)>> {
        let n = self.u32(what)? as usize;
        // Each pair takes at least 8 bytes.
        let mut kv = Vec::with_capacity(n.min(self.remaining() / 8));
        for _ in 0..n {
            let k = self.u32(what)? as usize;
            let key = self.string(k, what)?;
            let v = self.u32(what)? as usize;
            let value = self.string(v, what)?;
            kv.push((key, value));
        }
        Ok(kv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::{ColumnMeta, Directory};
    use crate::CodecId;

    fn col(name: &str, ty: LogicalType, n: u64) -> ColumnMeta {
        let chunks = if n == 0 {
            vec![]
        } else {
            vec![crate::container::ChunkMeta {
                offset: 16,
                compressed_size: 0,
                value_count: n as u32,
                codec: CodecId::Plain,
                checksum: 0,
            }]
        };
        ColumnMeta {
            name: name.into(),
            logical_type: ty,
            requested_codec: None,
            params: vec![],
            value_count: n,
            chunks,
        }
    }

    fn field(name: &str, ty: FieldType, columns: Vec<(Role, u32)>) -> FieldMeta {
        FieldMeta {
            name: name.into(),
            ty,
            nullable: true,
            arrow_dictionary: None,
            metadata: vec![("k".into(), "v".into())],
            columns,
        }
    }

    fn parse(table: &TableMeta, columns: Vec<ColumnMeta>) -> Result<Directory> {
        // Payload placement is not what these tests check: give every column its own range.
        let mut columns = columns;
        for (i, c) in columns.iter_mut().enumerate() {
            for ch in &mut c.chunks {
                ch.offset = 16 * (i as u64 + 1);
            }
        }
        let dir = Directory {
            columns,
            table: Some(table.clone()),
        };
        let bytes = dir.to_bytes()?;
        Directory::parse(&bytes, 1 << 20, TABLE_MINOR)
    }

    #[test]
    fn round_trip_and_minor() {
        let t = TableMeta {
            row_count: 3,
            metadata: vec![("a".into(), "b".into())],
            fields: vec![
                field(
                    "ts",
                    FieldType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
                    vec![(Role::Values, 0), (Role::Validity, 1)],
                ),
                field(
                    "b",
                    FieldType::Binary,
                    vec![(Role::Values, 2), (Role::Lengths, 3)],
                ),
                field(
                    "d",
                    FieldType::Decimal128 {
                        precision: 18,
                        scale: -2,
                    },
                    vec![(Role::Values, 4)],
                ),
            ],
        };
        let cols = vec![
            col("ts", LogicalType::I64, 3),
            col("ts.validity", LogicalType::Bits, 3),
            col("b", LogicalType::Bytes, 7),
            col("b.lengths", LogicalType::U32, 3),
            col("d", LogicalType::I64, 3),
        ];
        let dir = parse(&t, cols).expect("parses");
        assert_eq!(dir.table.as_ref(), Some(&t));
        assert_eq!(dir.min_minor(), TABLE_MINOR);
    }

    #[test]
    fn hostile_sections_fail() {
        let ok_cols = || vec![col("x", LogicalType::I32, 3)];
        let base = TableMeta {
            row_count: 3,
            metadata: vec![],
            fields: vec![field(
                "x",
                FieldType::Int(LogicalType::I32),
                vec![(Role::Values, 0)],
            )],
        };
        parse(&base, ok_cols()).expect("valid");
        // Wrong type for the role.
        let mut t = base.clone();
        t.fields[0].ty = FieldType::Float64;
        assert!(matches!(
            parse(&t, ok_cols()),
            Err(Error::InvalidHeader { .. })
        ));
        // Row count differs from the column's.
        let mut t = base.clone();
        t.row_count = 4;
        assert!(matches!(
            parse(&t, ok_cols()),
            Err(Error::InvalidHeader { .. })
        ));
        // A column that does not exist.
        let mut t = base.clone();
        t.fields[0].columns = vec![(Role::Values, 9)];
        assert!(matches!(
            parse(&t, ok_cols()),
            Err(Error::InvalidHeader { .. })
        ));
        // Validity in a field that is not nullable.
        let mut t = base.clone();
        t.fields[0].nullable = false;
        t.fields[0].columns.push((Role::Validity, 1));
        let cols = vec![
            col("x", LogicalType::I32, 3),
            col("v", LogicalType::Bits, 3),
        ];
        assert!(matches!(parse(&t, cols), Err(Error::InvalidHeader { .. })));
        // Every truncation of the section is an error, never a panic.
        let bytes = base.to_bytes().expect("bytes");
        for cut in 0..bytes.len() {
            assert!(
                TableMeta::parse(&bytes[..cut], 0, &ok_cols()).is_err(),
                "cut at {cut}"
            );
        }
        // Flipping any byte gives a clean result (an error or a different valid table).
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0xff;
            let _ = TableMeta::parse(&b, 0, &ok_cols());
        }
    }
    fn alp_table(rows: u64) -> (TableMeta, Vec<ColumnMeta>) {
        let t = TableMeta {
            row_count: rows,
            metadata: vec![],
            fields: vec![field(
                "x",
                FieldType::Float64,
                vec![
                    (Role::Values, 0),
                    (Role::AlpParams, 1),
                    (Role::ExceptionRows, 2),
                    (Role::ExceptionBits, 3),
                ],
            )],
        };
        let cols = vec![
            col("x", LogicalType::I64, rows),
            col(
                "x.alp_params",
                LogicalType::U16,
                rows.div_ceil(ALP_VECTOR_ROWS),
            ),
            col("x.exception_rows", LogicalType::U64, 2),
            col("x.exception_bits", LogicalType::U64, 2),
        ];
        (t, cols)
    }

    #[test]
    fn alp_fields_need_minor_4_and_their_columns() {
        let (t, cols) = alp_table(3000);
        let dir = Directory {
            columns: cols.clone(),
            table: Some(t.clone()),
        };
        assert_eq!(dir.min_minor(), ALP_MINOR);
        let bytes = dir.to_bytes().expect("bytes");
        let back = Directory::parse(&bytes, 1 << 20, ALP_MINOR).expect("parses");
        assert_eq!(back.table.as_ref(), Some(&t));
        // A 1.3 file may not use roles 5-7.
        assert!(matches!(
            Directory::parse(&bytes, 1 << 20, TABLE_MINOR),
            Err(Error::InvalidHeader { .. })
        ));
        let at4 = |t: &TableMeta, cols: Vec<ColumnMeta>| {
            let dir = Directory {
                columns: cols,
                table: Some(t.clone()),
            };
            Directory::parse(&dir.to_bytes().expect("bytes"), 1 << 20, ALP_MINOR)
        };
        // Exception columns of different counts.
        let mut c = cols.clone();
        c[3] = col("x.exception_bits", LogicalType::U64, 3);
        assert!(matches!(at4(&t, c), Err(Error::InvalidHeader { .. })));
        // Params not one a vector.
        let mut c = cols.clone();
        c[1] = col("x.alp_params", LogicalType::U16, 2);
        assert!(matches!(at4(&t, c), Err(Error::InvalidHeader { .. })));
        // Float32 bits must be u32.
        let mut t32 = t.clone();
        t32.fields[0].ty = FieldType::Float32;
        assert!(matches!(
            at4(&t32, cols.clone()),
            Err(Error::InvalidHeader { .. })
        ));
        // ALP on an integer field, and exceptions without params.
        let mut ti = t.clone();
        ti.fields[0].ty = FieldType::Int(LogicalType::I64);
        assert!(matches!(
            at4(&ti, cols.clone()),
            Err(Error::InvalidHeader { .. })
        ));
        let mut tn = t.clone();
        tn.fields[0].columns.remove(1);
        assert!(matches!(at4(&tn, cols), Err(Error::InvalidHeader { .. })));
    }

    /// An integer field stored as codes + dictionary without being an Arrow dictionary
    /// (`table.md` §6.1) needs minor 5; a Boolean field never has a dictionary.
    #[test]
    fn fixed_width_dictionaries_need_minor_5() {
        let table = |ty: FieldType, dict_ty: LogicalType| {
            let t = TableMeta {
                row_count: 1000,
                metadata: vec![],
                fields: vec![field(
                    "flight",
                    ty,
                    vec![(Role::Values, 0), (Role::DictValues, 1)],
                )],
            };
            let cols = vec![
                col("flight", LogicalType::U32, 1000),
                col("flight.dict", dict_ty, 40),
            ];
            Directory {
                columns: cols,
                table: Some(t),
            }
        };
        let dir = table(FieldType::Int(LogicalType::I64), LogicalType::I64);
        assert!(dir.table.as_ref().expect("table").fields[0].is_fixed_auto_dictionary());
        assert_eq!(dir.min_minor(), FIXED_DICT_MINOR);
        let bytes = dir.to_bytes().expect("bytes");
        let back = Directory::parse(&bytes, 1 << 20, FIXED_DICT_MINOR).expect("parses");
        assert_eq!(back.table, dir.table);
        assert!(matches!(
            Directory::parse(&bytes, 1 << 20, ALP_MINOR),
            Err(Error::InvalidHeader { .. })
        ));
        let bools = table(FieldType::Boolean, LogicalType::Bits);
        let bytes = bools.to_bytes().expect("bytes");
        assert!(matches!(
            Directory::parse(&bytes, 1 << 20, FIXED_DICT_MINOR),
            Err(Error::InvalidHeader { .. })
        ));
    }

    /// A run-encoded field (`table.md` §9) needs minor 6, equal value and run-end counts, at
    /// most one run a row, and a fixed-width type without dictionary or ALP.
    #[test]
    fn runs_need_minor_6_and_matching_columns() {
        let dir = |ty: FieldType, vt: LogicalType, values: u64, ends: u64, extra: Option<Role>| {
            let mut columns = vec![(Role::Values, 0), (Role::RunEnds, 1)];
            let mut cols = vec![
                col("day", vt, values),
                col("day.run_ends", LogicalType::U64, ends),
            ];
            if let Some(r) = extra {
                columns.push((r, 2));
                cols.push(col("day.extra", vt, 3));
            }
            Directory {
                columns: cols,
                table: Some(TableMeta {
                    row_count: 1000,
                    metadata: vec![],
                    fields: vec![field("day", ty, columns)],
                }),
            }
        };
        let int = FieldType::Int(LogicalType::I32);
        let good = dir(int.clone(), LogicalType::I32, 31, 31, None);
        assert_eq!(good.min_minor(), RUNS_MINOR);
        let bytes = good.to_bytes().expect("bytes");
        let back = Directory::parse(&bytes, 1 << 20, RUNS_MINOR).expect("parses");
        assert_eq!(back.table, good.table);
        assert!(back.table.expect("table").fields[0].is_run_encoded());
        // A 1.5 file has no role 8.
        assert!(matches!(
            Directory::parse(&bytes, 1 << 20, FIXED_DICT_MINOR),
            Err(Error::InvalidHeader { .. })
        ));
        for bad in [
            dir(int.clone(), LogicalType::I32, 30, 31, None),
            dir(int.clone(), LogicalType::I32, 1001, 1001, None),
            dir(int.clone(), LogicalType::I32, 0, 0, None),
            dir(int.clone(), LogicalType::I64, 31, 31, None),
            dir(int, LogicalType::I32, 31, 31, Some(Role::DictValues)),
            dir(FieldType::Boolean, LogicalType::Bits, 31, 31, None),
        ] {
            let bytes = bad.to_bytes().expect("bytes");
            assert!(
                matches!(
                    Directory::parse(&bytes, 1 << 20, RUNS_MINOR),
                    Err(Error::InvalidHeader { .. })
                ),
                "{:?}",
                bad.table
            );
        }
    }
}
