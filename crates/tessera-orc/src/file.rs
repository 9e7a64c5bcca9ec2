//! The file layout (ORC v1 specification, "File Tail" and "Stripes"): the postscript (last
//! byte = its length), the footer (stripes, type tree, row count), and per stripe its footer
//! (streams and column encodings). Every length and offset is checked against the file before a
//! byte is read, and every message is decoded from a slice that the checks bounded.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;

use prost::Message;

use crate::compress::{decompress, Compression};
use crate::error::{OrcError, Result};
use crate::proto;

/// The most bytes a postscript may take (its length is one byte).
const MAX_POSTSCRIPT: usize = 255;
/// The largest compression block size accepted: ORC writers use 64 KiB to a few MiB; the cap
/// keeps a lying postscript from sizing buffers.
pub const MAX_BLOCK_SIZE: u64 = 64 << 20;
/// ORC's default when the postscript does not say (spec: 256 KiB).
const DEFAULT_BLOCK_SIZE: u64 = 256 << 10;

/// A top-level column's ORC type, as this reader sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrcType {
    /// `boolean`.
    Boolean,
    /// `tinyint`.
    Byte,
    /// `smallint`.
    Short,
    /// `int`.
    Int,
    /// `bigint`.
    Long,
    /// `float`.
    Float,
    /// `double`.
    Double,
    /// `string`, `varchar(n)` and `char(n)` (all UTF-8 bytes as stored).
    String,
    /// `binary`.
    Binary,
    /// `timestamp` (wall clock; see the crate documentation for the time zone semantics).
    Timestamp,
    /// `date`: days since 1970-01-01.
    Date,
    /// `decimal(precision, scale)`.
    Decimal {
        /// Digits in all (ORC files of Hive 0.11 store 0: no limit, read as 38).
        precision: u8,
        /// Digits after the point.
        scale: i8,
    },
    /// A type this reader does not decode; its ORC name.
    Unsupported(String),
}

impl OrcType {
    fn from_proto(t: &proto::Type) -> OrcType {
        let k = t.kind.unwrap_or(-1);
        match k {
            0 => OrcType::Boolean,
            1 => OrcType::Byte,
            2 => OrcType::Short,
            3 => OrcType::Int,
            4 => OrcType::Long,
            5 => OrcType::Float,
            6 => OrcType::Double,
            7 | 16 | 17 => OrcType::String,
            8 => OrcType::Binary,
            9 => OrcType::Timestamp,
            14 => {
                let p = t.precision.unwrap_or(0);
                let s = t.scale.unwrap_or(0);
                // Precision 0 is Hive 0.11's unlimited decimal; ORC readers give it 38 digits.
                let p = if p == 0 { 38 } else { p };
                if p > 38 || s > p {
                    OrcType::Unsupported(format!("decimal({p},{s})"))
                } else {
                    OrcType::Decimal {
                        precision: p as u8,
                        scale: s as i8,
                    }
                }
            }
            15 => OrcType::Date,
            10 => OrcType::Unsupported("list".into()),
            11 => OrcType::Unsupported("map".into()),
            12 => OrcType::Unsupported("struct".into()),
            13 => OrcType::Unsupported("union".into()),
            18 => OrcType::Unsupported("timestamp with local time zone".into()),
            k => OrcType::Unsupported(format!("unknown kind {k}")),
        }
    }

    /// The type's name in error messages and `inspect` output.
    pub fn name(&self) -> String {
        match self {
            OrcType::Boolean => "boolean".into(),
            OrcType::Byte => "tinyint".into(),
            OrcType::Short => "smallint".into(),
            OrcType::Int => "int".into(),
            OrcType::Long => "bigint".into(),
            OrcType::Float => "float".into(),
            OrcType::Double => "double".into(),
            OrcType::String => "string".into(),
            OrcType::Binary => "binary".into(),
            OrcType::Timestamp => "timestamp".into(),
            OrcType::Date => "date".into(),
            OrcType::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
            OrcType::Unsupported(s) => s.clone(),
        }
    }
}

/// A top-level column of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrcColumn {
    /// Its field name.
    pub name: String,
    /// Its ORC column id (the index of its node in the type tree; streams are keyed by it).
    pub id: u32,
    /// Its type.
    pub ty: OrcType,
}

/// One stripe's place in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StripeInfo {
    /// First byte of the stripe (its index streams).
    pub offset: u64,
    /// Bytes of index streams, then of data streams, then of the stripe footer.
    pub index_length: u64,
    /// Bytes of data streams.
    pub data_length: u64,
    /// Bytes of the (compressed) stripe footer.
    pub footer_length: u64,
    /// Rows.
    pub rows: u64,
}

/// An ORC file's bytes and its checked metadata.
#[derive(Debug)]
pub struct OrcFile {
    bytes: Vec<u8>,
    compression: Compression,
    block_size: usize,
    version: (u32, u32),
    rows: u64,
    stripes: Vec<StripeInfo>,
    columns: Vec<OrcColumn>,
}

/// A stripe's streams (decompressed on demand) and column encodings.
#[derive(Debug)]
pub struct StripeLayout {
    /// Rows of the stripe.
    pub rows: u64,
    /// Where each `(column id, stream kind)` lies in the file.
    pub streams: HashMap<(u32, i32), Range<usize>>,
    /// Each column's encoding (`proto::encoding_kind`) and dictionary size, by column id.
    pub encodings: Vec<(i32, u32)>,
    /// The writer's time zone (empty when the footer does not say).
    pub writer_timezone: String,
}

fn range_in(
    what: impl FnOnce() -> String,
    start: u64,
    len: u64,
    limit: u64,
) -> Result<Range<usize>> {
    let end = start.checked_add(len);
    match end {
        Some(end) if end <= limit => Ok(start as usize..end as usize),
        _ => Err(OrcError::OutOfBounds {
            what: what(),
            start,
            end: end.unwrap_or(u64::MAX),
            limit,
        }),
    }
}

fn decode_msg<M: Message + Default>(what: &str, bytes: &[u8]) -> Result<M> {
    M::decode(bytes).map_err(|e| OrcError::malformed(what, e.to_string()))
}

impl OrcFile {
    /// Reads and checks the file at `path`.
    pub fn open(path: &Path) -> Result<OrcFile> {
        OrcFile::from_bytes(std::fs::read(path)?)
    }

    /// Checks the tail of an ORC file held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<OrcFile> {
        let len = bytes.len() as u64;
        if bytes.len() < 4 || &bytes[..3] != b"ORC" {
            return Err(OrcError::NotOrc(format!(
                "{} bytes, no `ORC` magic at the start",
                bytes.len()
            )));
        }
        let ps_len = bytes[bytes.len() - 1] as usize;
        debug_assert!(ps_len <= MAX_POSTSCRIPT);
        let ps_start = (bytes.len() - 1)
            .checked_sub(ps_len)
            .filter(|&s| s >= 3 && ps_len > 0)
            .ok_or_else(|| OrcError::OutOfBounds {
                what: "the postscript".into(),
                start: (len - 1).saturating_sub(ps_len as u64),
                end: len - 1,
                limit: len - 1,
            })?;
        let ps: proto::PostScript = decode_msg("postscript", &bytes[ps_start..bytes.len() - 1])?;
        if let Some(m) = &ps.magic {
            if m != "ORC" {
                return Err(OrcError::NotOrc(format!("postscript magic {m:?}")));
            }
        }
        let version = match ps.version.as_slice() {
            [] => (0, 11),
            [a, b, ..] => (*a, *b),
            [a] => (*a, 0),
        };
        if version != (0, 11) && version != (0, 12) {
            return Err(OrcError::Unsupported(format!(
                "file version {}.{} (this reader reads 0.11 and 0.12)",
                version.0, version.1
            )));
        }
        let compression = Compression::from_proto(ps.compression.unwrap_or(0))?;
        let block_size = ps.compression_block_size.unwrap_or(DEFAULT_BLOCK_SIZE);
        if block_size == 0 || block_size > MAX_BLOCK_SIZE {
            return Err(OrcError::malformed(
                "postscript",
                format!("compression block size {block_size} (allowed 1..={MAX_BLOCK_SIZE})"),
            ));
        }
        let block_size = block_size as usize;
        let footer_len = ps.footer_length.unwrap_or(0);
        let meta_len = ps.metadata_length.unwrap_or(0);
        let footer_start = (ps_start as u64)
            .checked_sub(footer_len)
            .filter(|&s| s >= 3);
        let footer_start = footer_start.ok_or_else(|| OrcError::OutOfBounds {
            what: "the footer".into(),
            start: (ps_start as u64).saturating_sub(footer_len),
            end: ps_start as u64,
            limit: ps_start as u64,
        })?;
        let content_end = footer_start.checked_sub(meta_len).filter(|&s| s >= 3);
        let content_end = content_end.ok_or_else(|| OrcError::OutOfBounds {
            what: "the metadata section".into(),
            start: footer_start.saturating_sub(meta_len),
            end: footer_start,
            limit: footer_start,
        })?;
        let footer_bytes = decompress(
            compression,
            block_size,
            &bytes[footer_start as usize..ps_start],
        )
        .map_err(|e| OrcError::malformed("footer", e.to_string()))?;
        let footer: proto::Footer = decode_msg("footer", &footer_bytes)?;

        let mut stripes = Vec::with_capacity(footer.stripes.len());
        let mut total_rows = 0u64;
        for (i, s) in footer.stripes.iter().enumerate() {
            let st = StripeInfo {
                offset: s.offset.unwrap_or(0),
                index_length: s.index_length.unwrap_or(0),
                data_length: s.data_length.unwrap_or(0),
                footer_length: s.footer_length.unwrap_or(0),
                rows: s.number_of_rows.unwrap_or(0),
            };
            let span = st
                .index_length
                .checked_add(st.data_length)
                .and_then(|x| x.checked_add(st.footer_length))
                .unwrap_or(u64::MAX);
            if st.offset < 3 {
                return Err(OrcError::malformed(
                    format!("stripe {i}"),
                    format!("offset {} inside the file header", st.offset),
                ));
            }
            range_in(|| format!("stripe {i}"), st.offset, span, content_end)?;
            if st.footer_length == 0 {
                return Err(OrcError::malformed(
                    format!("stripe {i}"),
                    "no stripe footer",
                ));
            }
            if s.encrypt_stripe_id.is_some() {
                return Err(OrcError::Unsupported("encrypted stripes".into()));
            }
            total_rows = total_rows
                .checked_add(st.rows)
                .ok_or_else(|| OrcError::malformed("footer", "stripe row counts overflow"))?;
            stripes.push(st);
        }
        let rows = footer.number_of_rows.unwrap_or(total_rows);
        if rows != total_rows {
            return Err(OrcError::malformed(
                "footer",
                format!("{rows} rows, the stripes hold {total_rows}"),
            ));
        }
        let columns = top_columns(&footer.types)?;
        Ok(OrcFile {
            bytes,
            compression,
            block_size,
            version,
            rows,
            stripes,
            columns,
        })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
    /// The compression of every stream and metadata section.
    pub fn compression(&self) -> Compression {
        self.compression
    }
    /// The largest decompressed size of one compression chunk.
    pub fn block_size(&self) -> usize {
        self.block_size
    }
    /// `(major, minor)` file version: (0, 11) or (0, 12).
    pub fn version(&self) -> (u32, u32) {
        self.version
    }
    /// Rows in the file.
    pub fn rows(&self) -> u64 {
        self.rows
    }
    /// The stripes.
    pub fn stripes(&self) -> &[StripeInfo] {
        &self.stripes
    }
    /// The top-level columns, in file order.
    pub fn columns(&self) -> &[OrcColumn] {
        &self.columns
    }

    /// Indices into [`OrcFile::columns`] of the named columns (all when `None`), each of a
    /// supported type.
    pub fn select(&self, names: Option<&[String]>) -> Result<Vec<usize>> {
        let idx: Vec<usize> = match names {
            None => (0..self.columns.len()).collect(),
            Some(ns) => ns
                .iter()
                .map(|n| {
                    self.columns
                        .iter()
                        .position(|c| &c.name == n)
                        .ok_or_else(|| OrcError::NoColumn {
                            name: n.clone(),
                            have: self
                                .columns
                                .iter()
                                .map(|c| c.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", "),
                        })
                })
                .collect::<Result<_>>()?,
        };
        for &i in &idx {
            let c = &self.columns[i];
            if let OrcType::Unsupported(t) = &c.ty {
                return Err(OrcError::UnsupportedType {
                    column: c.name.clone(),
                    ty: t.clone(),
                });
            }
        }
        Ok(idx)
    }

    /// Reads stripe `s`'s footer and places its streams.
    pub fn stripe_layout(&self, s: usize) -> Result<StripeLayout> {
        let st = self.stripes.get(s).ok_or_else(|| {
            OrcError::malformed("stripe index", format!("{s} of {}", self.stripes.len()))
        })?;
        // `from_bytes` checked that the whole stripe lies inside the file.
        let data_end = st.offset + st.index_length + st.data_length;
        let footer = &self.bytes[data_end as usize..(data_end + st.footer_length) as usize];
        let what = || format!("stripe {s} footer");
        let fb = decompress(self.compression, self.block_size, footer)
            .map_err(|e| OrcError::malformed(what(), e.to_string()))?;
        let sf: proto::StripeFooter = decode_msg(&what(), &fb)?;
        let mut streams = HashMap::with_capacity(sf.streams.len());
        let mut at = st.offset;
        for (k, stream) in sf.streams.iter().enumerate() {
            let len = stream.length.unwrap_or(0);
            let col = stream.column.unwrap_or(0);
            let kind = stream.kind.unwrap_or(-1);
            let r = range_in(
                || format!("stripe {s} stream {k} (column {col}, kind {kind})"),
                at,
                len,
                data_end,
            )?;
            at = r.end as u64;
            if streams.insert((col, kind), r).is_some() {
                return Err(OrcError::malformed(
                    what(),
                    format!("two streams of kind {kind} for column {col}"),
                ));
            }
        }
        Ok(StripeLayout {
            rows: st.rows,
            streams,
            encodings: sf
                .columns
                .iter()
                .map(|c| (c.kind.unwrap_or(0), c.dictionary_size.unwrap_or(0)))
                .collect(),
            writer_timezone: sf.writer_timezone.unwrap_or_default(),
        })
    }
}

/// The root struct's fields. Type ids are checked to form a tree in pre-order (each child after
/// its parent, inside the table) so that no walk can loop.
fn top_columns(types: &[proto::Type]) -> Result<Vec<OrcColumn>> {
    let Some(root) = types.first() else {
        return Err(OrcError::malformed("footer", "no types"));
    };
    if root.kind != Some(12) {
        return Err(OrcError::Unsupported(format!(
            "a root type other than struct (kind {:?})",
            root.kind
        )));
    }
    for (i, t) in types.iter().enumerate() {
        for &c in &t.subtypes {
            if c as usize <= i || c as usize >= types.len() {
                return Err(OrcError::malformed(
                    "type tree",
                    format!("type {i} has child {c} (of {} types)", types.len()),
                ));
            }
        }
    }
    if root.field_names.len() != root.subtypes.len() {
        return Err(OrcError::malformed(
            "type tree",
            format!(
                "root struct has {} children and {} names",
                root.subtypes.len(),
                root.field_names.len()
            ),
        ));
    }
    Ok(root
        .subtypes
        .iter()
        .zip(&root.field_names)
        .map(|(&id, name)| OrcColumn {
            name: name.clone(),
            id,
            ty: OrcType::from_proto(&types[id as usize]),
        })
        .collect())
}
