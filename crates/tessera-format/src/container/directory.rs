//! The column and chunk directory (container.md §3): its in-memory form, its encoding, and the
//! parser that validates every field as it reads it (container.md §5.3).
//!
//! Invariants a parsed [`Directory`] guarantees (so readers and decoders can trust it):
//! - at most [`MAX_COLUMNS`] columns with distinct UTF-8 names of at most [`MAX_NAME_LEN`] bytes;
//! - every chunk's payload lies inside `[16, directory_offset)`, starts 16-aligned, and no two
//!   payloads overlap;
//! - every chunk holds `1..=MAX_CHUNK_VALUES` values and the counts sum to the column's
//!   `value_count`; every chunk but a column's last holds the column's chunk size (its first
//!   chunk's count) and the last holds no more, except in utf8 columns of format 1.2 and later,
//!   whose chunks may hold any count.
//!
//! The parser never reads past the directory's bytes and never sizes an allocation from a field
//! before checking that the remaining bytes can hold what the field announces.

use std::collections::{BTreeMap, HashSet};

use crate::table::{TableMeta, TABLE_MINOR};
use crate::{CodecId, Error, LogicalType, Result, MAX_CHUNK_VALUES};

use super::{HEADER_LEN, PAYLOAD_ALIGN};

/// The minor version from which a utf8 column's chunks may hold different value counts.
pub const VARYING_UTF8_CHUNKS_MINOR: u16 = 2;
/// Most columns one file may hold.
pub const MAX_COLUMNS: u32 = 65535;
/// Longest column name, in bytes of UTF-8.
pub const MAX_NAME_LEN: usize = 1024;
/// Bytes of one chunk entry.
pub const CHUNK_ENTRY_LEN: usize = 32;
/// Bytes of a column entry besides its name, params and chunk entries:
/// name_length 2 + logical_type 1 + requested_codec 1 + params_length 2 + value_count 8 +
/// chunk_count 4. Bounds how many columns the directory's length can hold.
const COLUMN_FIXED_LEN: usize = 18;

/// One chunk's directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkMeta {
    /// Byte offset of the payload from the start of the file (16-aligned).
    pub offset: u64,
    /// Payload length in bytes (padding excluded).
    pub compressed_size: u32,
    /// Values in the chunk.
    pub value_count: u32,
    /// The codec this chunk was encoded with.
    pub codec: CodecId,
    /// xxh3-64 (seed 0) of the payload bytes.
    pub checksum: u64,
}

/// One column's directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnMeta {
    /// The column's name (UTF-8, unique in the file).
    pub name: String,
    /// The column's logical type.
    pub logical_type: LogicalType,
    /// The codec asked for when writing; `None` means auto (chosen per chunk).
    pub requested_codec: Option<CodecId>,
    /// Codec parameters (empty in version 1.0; skipped, not interpreted, from higher minors).
    pub params: Vec<u8>,
    /// Values in the column (the sum of its chunks' counts).
    pub value_count: u64,
    /// The column's chunks, in value order.
    pub chunks: Vec<ChunkMeta>,
}

impl ColumnMeta {
    /// The column's chunk size: the value count of its first chunk (`None` with no chunks).
    /// Every chunk but the last holds exactly this many values, except in a utf8 column of a
    /// format 1.2 file, whose chunks may hold any count ([`ColumnMeta::has_uniform_chunks`]).
    pub fn chunk_size(&self) -> Option<u32> {
        self.chunks.first().map(|c| c.value_count)
    }

    /// Whether every chunk but the last holds the first chunk's count and the last no more (the
    /// rule of every column before format 1.2, and of fixed-size columns in every version).
    pub fn has_uniform_chunks(&self) -> bool {
        let Some(size) = self.chunk_size() else {
            return true;
        };
        let n = self.chunks.len();
        self.chunks[..n - 1].iter().all(|c| c.value_count == size)
            && self.chunks[n - 1].value_count <= size
    }

    /// The index of the first value of each chunk, then the column's value count
    /// (`chunks + 1` entries): where chunk `k`'s values sit in the column.
    pub fn chunk_starts(&self) -> Vec<u64> {
        let mut starts = Vec::with_capacity(self.chunks.len() + 1);
        let mut at = 0u64;
        starts.push(0);
        for c in &self.chunks {
            at += c.value_count as u64;
            starts.push(at);
        }
        starts
    }

    /// Bytes the column takes in raw form (little-endian values; packed bits for bits). 0 for
    /// utf8, whose text size is known only from its chunk payloads (`utf8.md` §1).
    pub fn uncompressed_bytes(&self) -> u64 {
        match self.logical_type {
            LogicalType::Bits => self.value_count.div_ceil(8),
            LogicalType::Utf8 => 0,
            t => self.value_count.saturating_mul(t.width() as u64),
        }
    }

    /// Sum of the chunks' payload sizes (alignment padding excluded).
    pub fn compressed_bytes(&self) -> u64 {
        self.chunks.iter().map(|c| c.compressed_size as u64).sum()
    }

    /// How many chunks use each codec.
    pub fn codec_mix(&self) -> BTreeMap<CodecId, usize> {
        let mut mix = BTreeMap::new();
        for c in &self.chunks {
            *mix.entry(c.codec).or_insert(0) += 1;
        }
        mix
    }

    /// The name of the requested codec (`auto` for `None`).
    pub fn requested_codec_name(&self) -> &'static str {
        self.requested_codec.map_or("auto", CodecId::name)
    }
}

/// The parsed directory: every column of a file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Directory {
    /// The columns, in file order.
    pub columns: Vec<ColumnMeta>,
    /// The table section (container 1.3, `table.md`): the Arrow fields the columns hold.
    pub table: Option<TableMeta>,
}

impl Directory {
    /// The lowest format minor version that defines every type, codec and param used.
    pub fn min_minor(&self) -> u16 {
        self.columns
            .iter()
            .map(|c| {
                let chunks = c.chunks.iter().map(|k| k.codec.min_minor());
                let requested = c.requested_codec.map_or(0, |r| r.min_minor());
                let params = u16::from(!c.params.is_empty());
                let varying = if c.has_uniform_chunks() {
                    0
                } else {
                    VARYING_UTF8_CHUNKS_MINOR
                };
                chunks
                    .chain([c.logical_type.min_minor(), requested, params, varying])
                    .max()
                    .unwrap_or(0)
            })
            .max()
            .unwrap_or(0)
            .max(self.table.as_ref().map_or(0, TableMeta::min_minor))
    }

    /// Appends the directory's bytes (container.md §3) to `out`. Fails with
    /// [`Error::InvalidArgument`] on what the format cannot hold (too many columns, long or
    /// duplicate names, params in version 1.0, more than `u32::MAX` chunks). It does not check
    /// chunk placement: [`Directory::parse`] does, and the writer only produces valid placement.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<()> {
        if self.columns.len() > MAX_COLUMNS as usize {
            return Err(Error::InvalidArgument(format!(
                "{} columns; a file holds at most {MAX_COLUMNS}",
                self.columns.len()
            )));
        }
        let mut names = HashSet::new();
        out.extend_from_slice(&(self.columns.len() as u32).to_le_bytes());
        for col in &self.columns {
            check_name(&col.name)?;
            if !names.insert(col.name.as_str()) {
                return Err(Error::InvalidArgument(format!(
                    "duplicate column name '{}'",
                    col.name
                )));
            }
            if !col.params.is_empty() && col.logical_type != LogicalType::Utf8 {
                return Err(Error::InvalidArgument(format!(
                    "column '{}': params are defined for utf8 columns only",
                    col.name
                )));
            }
            if col.params.len() > u16::MAX as usize {
                return Err(Error::InvalidArgument(format!(
                    "column '{}': params longer than {} bytes",
                    col.name,
                    u16::MAX
                )));
            }
            let chunk_count = u32::try_from(col.chunks.len()).map_err(|_| {
                Error::InvalidArgument(format!(
                    "column '{}' has more than {} chunks",
                    col.name,
                    u32::MAX
                ))
            })?;
            out.extend_from_slice(&(col.name.len() as u16).to_le_bytes());
            out.extend_from_slice(col.name.as_bytes());
            out.push(col.logical_type.id());
            out.push(col.requested_codec.map_or(CodecId::AUTO_ID, CodecId::id));
            out.extend_from_slice(&(col.params.len() as u16).to_le_bytes());
            out.extend_from_slice(&col.params);
            out.extend_from_slice(&col.value_count.to_le_bytes());
            out.extend_from_slice(&chunk_count.to_le_bytes());
            for ch in &col.chunks {
                out.extend_from_slice(&ch.offset.to_le_bytes());
                out.extend_from_slice(&ch.compressed_size.to_le_bytes());
                out.extend_from_slice(&ch.value_count.to_le_bytes());
                out.push(ch.codec.id());
                out.extend_from_slice(&[0u8; 7]);
                out.extend_from_slice(&ch.checksum.to_le_bytes());
            }
        }
        if let Some(table) = &self.table {
            let bytes = table.to_bytes()?;
            let len = u32::try_from(bytes.len()).map_err(|_| {
                Error::InvalidArgument(format!("table section of {} bytes", bytes.len()))
            })?;
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&bytes);
        }
        Ok(())
    }

    /// Encodes into a new vector.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.encode(&mut out)?;
        Ok(out)
    }

    /// Parses and validates directory bytes that sit at `directory_offset` in a file of format
    /// minor version `minor` (container.md §3, §5.3). Error offsets are file offsets.
    ///
    /// In a minor-0 file, non-empty params and bytes after the last column are errors; a higher
    /// minor may add them (additions only), so they are skipped there.
    pub fn parse(bytes: &[u8], directory_offset: u64, minor: u16) -> Result<Directory> {
        let mut cur = Cursor {
            bytes,
            pos: 0,
            base: directory_offset,
        };
        let column_count_at = cur.file_offset();
        let column_count = cur.u32("column_count")?;
        if column_count > MAX_COLUMNS {
            return Err(Error::InvalidHeader {
                field: "column_count",
                offset: column_count_at,
                expected: format!("<= {MAX_COLUMNS}"),
                found: column_count as u64,
            });
        }
        // Each column entry takes at least COLUMN_FIXED_LEN bytes: that bounds the allocation.
        let cap = (column_count as usize).min(cur.remaining() / COLUMN_FIXED_LEN);
        let mut columns = Vec::with_capacity(cap);
        let mut names = HashSet::new();
        // (offset, end, field offset, column, chunk) of every payload, to check overlaps.
        let mut ranges: Vec<(u64, u64, u64, usize, usize)> = Vec::new();
        for col_idx in 0..column_count as usize {
            let col = parse_column(&mut cur, directory_offset, minor, col_idx, &mut ranges)?;
            if !names.insert(col.name.clone()) {
                return Err(Error::InvalidHeader {
                    field: "column name",
                    offset: cur.file_offset(),
                    expected: format!("a name no earlier column uses ('{}' is repeated)", col.name),
                    found: col_idx as u64,
                });
            }
            columns.push(col);
        }
        // container.md §3a: from 1.3, an optional table section follows the last column; bytes
        // after it belong to later minors and are skipped.
        let mut table = None;
        if minor >= TABLE_MINOR && cur.remaining() > 0 {
            let len = cur.u32("table_length")? as usize;
            let at = cur.file_offset();
            let bytes = cur.take(len, "table section")?;
            table = Some(TableMeta::parse_minor(bytes, at, &columns, minor)?);
        }
        if minor == 0 && cur.remaining() > 0 {
            return Err(Error::TrailingBytes {
                what: "directory",
                offset: cur.file_offset(),
                count: cur.remaining() as u64,
            });
        }
        // Payload ranges must not overlap (container.md §3). Sorting is O(chunks log chunks),
        // and the chunk count is bounded by the directory length / 32.
        ranges.sort_unstable();
        for pair in ranges.windows(2) {
            let (prev, next) = (pair[0], pair[1]);
            if next.0 < prev.1 {
                return Err(Error::InvalidHeader {
                    field: "chunk offset",
                    offset: next.2,
                    expected: format!(
                        ">= {} (the end of column {} chunk {}'s payload; payloads may not overlap)",
                        prev.1, prev.3, prev.4
                    ),
                    found: next.0,
                });
            }
        }
        Ok(Directory { columns, table })
    }
}

/// Parses one column entry and its chunk entries; records payload ranges in `ranges`.
fn parse_column(
    cur: &mut Cursor<'_>,
    directory_offset: u64,
    minor: u16,
    col_idx: usize,
    ranges: &mut Vec<(u64, u64, u64, usize, usize)>,
) -> Result<ColumnMeta> {
    let name_len_at = cur.file_offset();
    let name_len = cur.u16("column name_length")? as usize;
    if name_len > MAX_NAME_LEN {
        return Err(Error::InvalidHeader {
            field: "column name_length",
            offset: name_len_at,
            expected: format!("<= {MAX_NAME_LEN}"),
            found: name_len as u64,
        });
    }
    let name_at = cur.file_offset();
    let name_bytes = cur.take(name_len, "column name")?;
    let name = std::str::from_utf8(name_bytes)
        .map_err(|e| Error::InvalidHeader {
            field: "column name",
            offset: name_at + e.valid_up_to() as u64,
            expected: "UTF-8".into(),
            found: name_bytes.get(e.valid_up_to()).copied().unwrap_or(0) as u64,
        })?
        .to_owned();
    let logical_type = LogicalType::from_id(cur.u8("column logical_type")?)?;
    let requested = cur.u8("column requested_codec")?;
    let requested_codec = if requested == CodecId::AUTO_ID {
        None
    } else {
        Some(CodecId::from_id(requested)?)
    };
    let params_len_at = cur.file_offset();
    let params_len = cur.u16("column params_length")? as usize;
    if minor == 0 && params_len != 0 {
        return Err(Error::InvalidHeader {
            field: "column params_length",
            offset: params_len_at,
            expected: "0 (format 1.0 defines no params)".into(),
            found: params_len as u64,
        });
    }
    let params_at = cur.file_offset();
    let params = cur.take(params_len, "column params")?.to_vec();
    // utf8.md §3: empty, or one `text_flags` byte with only bit 0 defined.
    if logical_type == LogicalType::Utf8
        && (params.len() > 1 || params.first().is_some_and(|f| f & !1 != 0))
    {
        return Err(Error::InvalidHeader {
            field: "utf8 column params (text_flags)",
            offset: params_at,
            expected: "empty, or one byte with only bit 0 set".into(),
            found: params.first().copied().unwrap_or(0) as u64,
        });
    }
    let value_count = cur.u64("column value_count")?;
    let chunk_count_at = cur.file_offset();
    let chunk_count = cur.u32("column chunk_count")? as usize;
    // Check the entries fit before allocating for them.
    let needed = (chunk_count as u64) * CHUNK_ENTRY_LEN as u64;
    if needed > cur.remaining() as u64 {
        return Err(Error::Truncated {
            what: "chunk entries",
            offset: chunk_count_at + 4,
            needed,
            available: cur.remaining() as u64,
        });
    }
    let mut chunks = Vec::with_capacity(chunk_count);
    // Format 1.2: a utf8 column's chunks may hold different counts (they are cut by text bytes
    // as well as by strings), so only the fixed-size types keep the uniform chunk size.
    let varying = logical_type == LogicalType::Utf8 && minor >= VARYING_UTF8_CHUNKS_MINOR;
    let mut sum: u64 = 0;
    let mut chunk_size: u32 = 0;
    // File offset of the previous chunk's value_count, and whether it was short.
    let mut prev_short: Option<(u64, u32)> = None;
    for chunk_idx in 0..chunk_count {
        let offset_at = cur.file_offset();
        let offset = cur.u64("chunk offset")?;
        let size = cur.u32("chunk compressed_size")?;
        let count_at = cur.file_offset();
        let count = cur.u32("chunk value_count")?;
        let codec = CodecId::from_id(cur.u8("chunk codec")?)?;
        let reserved_at = cur.file_offset();
        let reserved = cur.take(7, "chunk reserved")?;
        if let Some(pos) = reserved.iter().position(|&b| b != 0) {
            return Err(Error::InvalidHeader {
                field: "chunk reserved",
                offset: reserved_at + pos as u64,
                expected: "0".into(),
                found: reserved[pos] as u64,
            });
        }
        let checksum = cur.u64("chunk checksum")?;

        if offset % PAYLOAD_ALIGN != 0 {
            return Err(Error::InvalidHeader {
                field: "chunk offset",
                offset: offset_at,
                expected: format!("a multiple of {PAYLOAD_ALIGN}"),
                found: offset,
            });
        }
        if offset < HEADER_LEN as u64 || offset >= directory_offset {
            return Err(Error::InvalidHeader {
                field: "chunk offset",
                offset: offset_at,
                expected: format!("in [{HEADER_LEN}, {directory_offset})"),
                found: offset,
            });
        }
        let end = offset + size as u64; // offset < directory_offset <= u64::MAX - 32: no overflow
        if end > directory_offset {
            return Err(Error::InvalidHeader {
                field: "chunk compressed_size",
                offset: offset_at + 8,
                expected: format!(
                    "<= {} (the payload must end before the directory)",
                    directory_offset - offset
                ),
                found: size as u64,
            });
        }
        if count == 0 || count > MAX_CHUNK_VALUES {
            return Err(Error::InvalidHeader {
                field: "chunk value_count",
                offset: count_at,
                expected: format!("1..={MAX_CHUNK_VALUES}"),
                found: count as u64,
            });
        }
        if chunk_idx == 0 {
            chunk_size = count;
        } else if !varying {
            if let Some((at, short)) = prev_short {
                return Err(Error::InvalidHeader {
                    field: "chunk value_count",
                    offset: at,
                    expected: format!("{chunk_size} (the column's chunk size: only the last chunk may hold fewer)"),
                    found: short as u64,
                });
            }
            if count > chunk_size {
                return Err(Error::InvalidHeader {
                    field: "chunk value_count",
                    offset: count_at,
                    expected: format!("<= {chunk_size} (the column's chunk size)"),
                    found: count as u64,
                });
            }
        }
        if count < chunk_size && !varying {
            prev_short = Some((count_at, count));
        }
        sum += count as u64; // at most 2^32 chunks of at most 2^24 values: no overflow
        ranges.push((offset, end, offset_at, col_idx, chunk_idx));
        chunks.push(ChunkMeta {
            offset,
            compressed_size: size,
            value_count: count,
            codec,
            checksum,
        });
    }
    if sum != value_count {
        return Err(Error::CountMismatch {
            what: "column value_count vs the sum of its chunks' value counts",
            expected: value_count,
            found: sum,
        });
    }
    Ok(ColumnMeta {
        name,
        logical_type,
        requested_codec,
        params,
        value_count,
        chunks,
    })
}

/// Checks a column name against the format's limits (writers call this up front).
pub(crate) fn check_name(name: &str) -> Result<()> {
    if name.len() > MAX_NAME_LEN {
        return Err(Error::InvalidArgument(format!(
            "column name of {} bytes; at most {MAX_NAME_LEN} allowed",
            name.len()
        )));
    }
    Ok(())
}

/// Little-endian reads over the directory bytes that fail with [`Error::Truncated`] (at the
/// file offset) instead of reading past them.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Cursor<'a> {
    fn file_offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(Error::Truncated {
                what,
                offset: self.file_offset(),
                needed: n as u64,
                available: self.remaining() as u64,
            });
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    fn u16(&mut self, what: &'static str) -> Result<u16> {
        self.array(what).map(u16::from_le_bytes)
    }

    fn u32(&mut self, what: &'static str) -> Result<u32> {
        self.array(what).map(u32::from_le_bytes)
    }

    fn u64(&mut self, what: &'static str) -> Result<u64> {
        self.array(what).map(u64::from_le_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(offset: u64, size: u32, count: u32) -> ChunkMeta {
        ChunkMeta {
            offset,
            compressed_size: size,
            value_count: count,
            codec: CodecId::For,
            checksum: 7,
        }
    }

    fn column(name: &str, chunks: Vec<ChunkMeta>) -> ColumnMeta {
        let value_count = chunks.iter().map(|c| c.value_count as u64).sum();
        ColumnMeta {
            name: name.into(),
            logical_type: LogicalType::U32,
            requested_codec: None,
            params: vec![],
            value_count,
            chunks,
        }
    }

    #[test]
    fn round_trip_and_metrics() {
        let dir = Directory {
            table: None,
            columns: vec![
                column("a", vec![chunk(16, 100, 512), chunk(128, 10, 3)]),
                column("b", vec![]),
            ],
        };
        let bytes = dir.to_bytes().expect("encodes");
        let back = Directory::parse(&bytes, 1000, 0).expect("parses");
        assert_eq!(back, dir);
        assert_eq!(back.columns[0].chunk_size(), Some(512));
        assert_eq!(back.columns[0].compressed_bytes(), 110);
        assert_eq!(back.columns[0].uncompressed_bytes(), 515 * 4);
        assert_eq!(back.columns[0].requested_codec_name(), "auto");
    }

    #[test]
    fn short_chunk_before_last_fails() {
        let dir = Directory {
            table: None,
            columns: vec![column(
                "a",
                vec![chunk(16, 8, 512), chunk(32, 8, 3), chunk(48, 8, 3)],
            )],
        };
        let bytes = dir.to_bytes().expect("encodes");
        let err = Directory::parse(&bytes, 1000, 0).expect_err("must fail");
        assert!(
            matches!(
                err,
                Error::InvalidHeader {
                    field: "chunk value_count",
                    found: 3,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn encode_rejects_duplicates_and_long_names() {
        let dup = Directory {
            table: None,
            columns: vec![column("a", vec![]), column("a", vec![])],
        };
        assert!(matches!(dup.to_bytes(), Err(Error::InvalidArgument(_))));
        let long = Directory {
            table: None,
            columns: vec![column(&"x".repeat(MAX_NAME_LEN + 1), vec![])],
        };
        assert!(matches!(long.to_bytes(), Err(Error::InvalidArgument(_))));
    }
}
