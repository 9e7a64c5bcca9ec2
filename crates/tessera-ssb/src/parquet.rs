//! Parquet export of an SSB data set: `DIR/<table>.parquet` for the five tables, with the
//! columns, names and values of the CSV export ([`crate::csv`]): strings restored from their
//! dictionary codes (Arrow `Utf8`), integers as Arrow `Int32`, except `lo_orderkey` as `Int64`
//! (the specification gives it as "int up to SF 300": beyond, order keys need more than 31 bits;
//! every other column's domain is bounded well below 2^31 at any scale factor the generator
//! accepts). Every value is checked on the way: a code outside its dictionary or an integer
//! outside its column's type is an error, never a wrapped value.
//!
//! A SQL engine (DuckDB in the tests and the timing peer, `read_parquet`) reads the files as
//! they are.
//!
//! Memory: a table is written [`ROW_GROUP_ROWS`] rows at a time, one row group each, so beside
//! the generated columns only one row group's arrays and its encoded pages are held (lineorder
//! at SF 20 is 120 M rows). Each file is written under a temporary name and renamed when
//! complete ([`tessera::format::AtomicFile`]), so a failed export leaves no partial file under a
//! final name.
//!
//! Compression: zstd (level 1, the parquet crate's default level). The files are written once
//! and read whole by a SQL engine (DuckDB loads them into its own tables), so their size on
//! disk counts and the codec's speed hardly does: at SF 1 zstd's files are 0.86x snappy's, and
//! writing them and DuckDB's load took the same time within the noise of a shared 2-core VM
//! (figures in `docs/gpu/ssb.md`). DuckDB and pyarrow read zstd pages natively.

use std::path::Path;
use std::sync::Arc;

use ::parquet::arrow::ArrowWriter;
use ::parquet::basic::{Compression, ZstdLevel};
use ::parquet::errors::ParquetError;
use ::parquet::file::properties::WriterProperties;
use arrow_array::{ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use tessera::format::AtomicFile;
use tessera::{Error, Result};

use crate::csv::column_dictionary;
use crate::gen::{Generated, Table};
use crate::schema::Dictionaries;

/// Rows of a row group (the last of a table may hold fewer): the parquet crate's default
/// maximum, about 1 M rows (lineorder's is 50-60 MB of Arrow arrays while it is written).
pub const ROW_GROUP_ROWS: usize = 1 << 20;

/// The Arrow type of an SSB column in the export: `Utf8` for a dictionary-coded string column,
/// `Int64` for `lo_orderkey`, `Int32` for every other.
pub fn column_type(column: &str) -> DataType {
    if column_dictionary(column).is_some() {
        DataType::Utf8
    } else if column == "lo_orderkey" {
        DataType::Int64
    } else {
        DataType::Int32
    }
}

/// The Arrow schema of a table's export: its columns in order, none nullable.
pub fn table_schema(t: &Table) -> SchemaRef {
    Arc::new(Schema::new(
        t.columns
            .iter()
            .map(|(name, _)| Field::new(*name, column_type(name), false))
            .collect::<Vec<_>>(),
    ))
}

fn parquet_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("{}: parquet: {e}", path.display()))
}

/// A failed write of the file: an I/O error (a full disk) stays one, with its kind.
fn write_error(path: &Path, e: ParquetError) -> Error {
    match e {
        ParquetError::External(inner) => match inner.downcast::<std::io::Error>() {
            Ok(io) => Error::io(path.display().to_string(), *io),
            Err(other) => parquet_error(path, other),
        },
        e => parquet_error(path, e),
    }
}

/// Rows `rows` of one column as the Arrow array of its export type.
fn column_array(
    name: &str,
    values: &[u32],
    dict: &Dictionaries,
    rows: std::ops::Range<usize>,
) -> Result<ArrayRef> {
    let values = values.get(rows.clone()).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "{name}: rows {}..{} past its {} values",
            rows.start,
            rows.end,
            values.len()
        ))
    })?;
    Ok(match column_type(name) {
        DataType::Utf8 => {
            let words = column_dictionary(name)
                .and_then(|d| dict.get(d))
                .ok_or_else(|| Error::InvalidArgument(format!("{name}: no dictionary")))?;
            let strings = values
                .iter()
                .map(|&v| {
                    words.get(v as usize).map(String::as_str).ok_or_else(|| {
                        Error::InvalidArgument(format!("{name}: code {v} outside its dictionary"))
                    })
                })
                .collect::<Result<Vec<&str>>>()?;
            Arc::new(StringArray::from(strings))
        }
        DataType::Int64 => Arc::new(Int64Array::from(
            values.iter().map(|&v| i64::from(v)).collect::<Vec<_>>(),
        )),
        _ => Arc::new(Int32Array::from(
            values
                .iter()
                .map(|&v| {
                    i32::try_from(v).map_err(|_| {
                        Error::InvalidArgument(format!("{name}: value {v} does not fit Int32"))
                    })
                })
                .collect::<Result<Vec<i32>>>()?,
        )),
    })
}

/// Writes one table to `path`, `row_group_rows` rows a row group.
fn write_table(path: &Path, t: &Table, dict: &Dictionaries, row_group_rows: usize) -> Result<()> {
    let rows = t.rows();
    if let Some((name, v)) = t.columns.iter().find(|c| c.1.len() != rows) {
        return Err(Error::InvalidArgument(format!(
            "{}: column {name} has {} values, the table {rows} rows",
            t.name,
            v.len()
        )));
    }
    let schema = table_schema(t);
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_max_row_group_row_count(Some(row_group_rows))
        .build();
    let file = AtomicFile::create(path)?;
    let mut w = ArrowWriter::try_new(file, schema.clone(), Some(props))
        .map_err(|e| write_error(path, e))?;
    let mut start = 0;
    while start < rows {
        let end = rows.min(start + row_group_rows);
        let arrays = t
            .columns
            .iter()
            .map(|(name, values)| column_array(name, values, dict, start..end))
            .collect::<Result<Vec<_>>>()?;
        let batch =
            RecordBatch::try_new(schema.clone(), arrays).map_err(|e| parquet_error(path, e))?;
        w.write(&batch).map_err(|e| write_error(path, e))?;
        // One row group per batch: the writer holds at most one row group's pages.
        w.flush().map_err(|e| write_error(path, e))?;
        start = end;
    }
    w.into_inner().map_err(|e| write_error(path, e))?.finish()
}

/// Writes `DIR/<table>.parquet` for every table, [`ROW_GROUP_ROWS`] rows a row group.
pub fn export(dir: &Path, g: &Generated) -> Result<()> {
    export_with(dir, g, ROW_GROUP_ROWS)
}

/// [`export`] with `row_group_rows` rows a row group (at least 1).
pub fn export_with(dir: &Path, g: &Generated, row_group_rows: usize) -> Result<()> {
    if row_group_rows == 0 {
        return Err(Error::InvalidArgument(
            "parquet export: 0 rows a row group".into(),
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display().to_string(), e))?;
    let dict = Dictionaries::standard();
    for t in g.tables() {
        write_table(
            &dir.join(format!("{}.parquet", t.name)),
            t,
            &dict,
            row_group_rows,
        )?;
    }
    Ok(())
}
