//! Writing a `.tsr` file (container.md §6): payloads stream out to `.NAME.tmp-PID` in the
//! destination's folder as they are produced; `finish` appends the directory and footer, syncs,
//! and renames over the destination.
//!
//! Invariants: every payload starts at a multiple of 16 (zero padding before it); the directory
//! the writer accumulates always satisfies the checks `Directory::parse` makes (the writer
//! refuses chunks that would break them, with [`Error::InvalidArgument`]); the temporary file is
//! removed if the writer is dropped or fails before the rename.

use std::collections::HashSet;
use std::path::Path;

use crate::{AtomicFile, CodecId, Error, LogicalType, Result, MAX_CHUNK_VALUES};

use super::directory::check_name;
use super::{
    checksum, directory_checksum, footer_bytes, header_bytes, ChunkMeta, ColumnMeta, Directory,
    PAYLOAD_ALIGN,
};

/// Streams columns of chunk payloads into a new `.tsr` file.
///
/// ```no_run
/// # use tessera_format::{container::ContainerWriter, CodecId, LogicalType};
/// # fn main() -> tessera_format::Result<()> {
/// let mut w = ContainerWriter::create("out.tsr")?;
/// w.begin_column("x", LogicalType::U32, Some(CodecId::Plain))?;
/// w.write_chunk(CodecId::Plain, 2, &[1, 0, 0, 0, 2, 0, 0, 0])?;
/// w.end_column()?;
/// w.finish()?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ContainerWriter {
    /// The temporary file; removed if the writer is dropped before `finish`.
    out: AtomicFile,
    /// Bytes written so far (the next write's file offset).
    pos: u64,
    columns: Vec<ColumnMeta>,
    names: HashSet<String>,
    open: Option<ColumnMeta>,
}

impl ContainerWriter {
    /// Creates the temporary file next to `dest` and writes the header.
    pub fn create(dest: impl AsRef<Path>) -> Result<ContainerWriter> {
        let mut w = ContainerWriter {
            out: AtomicFile::create(dest)?,
            pos: 0,
            columns: Vec::new(),
            names: HashSet::new(),
            open: None,
        };
        w.write_all(&header_bytes(0))?;
        Ok(w)
    }

    /// The final path the file will have.
    pub fn dest(&self) -> &Path {
        self.out.dest()
    }

    /// The temporary path written until [`ContainerWriter::finish`].
    pub fn temp_path(&self) -> &Path {
        self.out.temp_path()
    }

    /// Bytes written so far.
    pub fn bytes_written(&self) -> u64 {
        self.pos
    }

    /// Starts a column; its chunks follow with [`ContainerWriter::write_chunk`]. `requested`
    /// `None` records "auto".
    pub fn begin_column(
        &mut self,
        name: &str,
        ty: LogicalType,
        requested: Option<CodecId>,
    ) -> Result<()> {
        if let Some(open) = &self.open {
            return Err(Error::InvalidArgument(format!(
                "column '{}' is still open",
                open.name
            )));
        }
        check_name(name)?;
        if let Some(c) = requested.filter(|c| !c.supports(ty)) {
            return Err(Error::InvalidArgument(format!(
                "codec {} does not apply to {} columns",
                c.name(),
                ty.name()
            )));
        }
        if self.names.contains(name) {
            return Err(Error::InvalidArgument(format!(
                "duplicate column name '{name}'"
            )));
        }
        if self.columns.len() >= super::MAX_COLUMNS as usize {
            return Err(Error::InvalidArgument(format!(
                "a file holds at most {} columns",
                super::MAX_COLUMNS
            )));
        }
        self.open = Some(ColumnMeta {
            name: name.to_owned(),
            logical_type: ty,
            requested_codec: requested,
            params: Vec::new(),
            value_count: 0,
            chunks: Vec::new(),
        });
        Ok(())
    }

    /// Appends one chunk payload of the open column: `value_count` values encoded with `codec`.
    /// Every chunk but the column's last must hold the column's first chunk's count.
    pub fn write_chunk(&mut self, codec: CodecId, value_count: u32, payload: &[u8]) -> Result<()> {
        let col = self
            .open
            .as_ref()
            .ok_or_else(|| Error::InvalidArgument("no column is open".into()))?;
        if !codec.supports(col.logical_type) {
            return Err(Error::InvalidArgument(format!(
                "codec {} does not apply to {} columns",
                codec.name(),
                col.logical_type.name()
            )));
        }
        if value_count == 0 || value_count > MAX_CHUNK_VALUES {
            return Err(Error::InvalidArgument(format!(
                "chunk of {value_count} values (allowed 1..={MAX_CHUNK_VALUES})"
            )));
        }
        // utf8 chunks may hold different counts (format 1.2, written only when they do).
        if let Some(size) = col
            .chunk_size()
            .filter(|_| col.logical_type != LogicalType::Utf8)
        {
            let last = col.chunks.last().map_or(size, |c| c.value_count);
            if last != size {
                return Err(Error::InvalidArgument(format!(
                    "column '{}': a chunk follows a short chunk of {last} values (chunk size {size})",
                    col.name
                )));
            }
            if value_count > size {
                return Err(Error::InvalidArgument(format!(
                    "column '{}': chunk of {value_count} values exceeds the chunk size {size}",
                    col.name
                )));
            }
        }
        let compressed_size = u32::try_from(payload.len()).map_err(|_| {
            Error::InvalidArgument(format!(
                "chunk payload of {} bytes exceeds 4 GiB",
                payload.len()
            ))
        })?;
        let pad = (PAYLOAD_ALIGN - self.pos % PAYLOAD_ALIGN) % PAYLOAD_ALIGN;
        self.write_all(&[0u8; PAYLOAD_ALIGN as usize][..pad as usize])?;
        let offset = self.pos;
        let sum = checksum(payload);
        self.write_all(payload)?;
        let col = self
            .open
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("no column is open".into()))?;
        col.value_count += value_count as u64;
        col.chunks.push(ChunkMeta {
            offset,
            compressed_size,
            value_count,
            codec,
            checksum: sum,
        });
        Ok(())
    }

    /// Sets the open column's params (container.md §3.1: defined for utf8 columns only).
    pub fn set_params(&mut self, params: &[u8]) -> Result<()> {
        let col = self
            .open
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("no column is open".into()))?;
        col.params = params.to_vec();
        Ok(())
    }

    /// Ends the open column.
    pub fn end_column(&mut self) -> Result<()> {
        let col = self
            .open
            .take()
            .ok_or_else(|| Error::InvalidArgument("no column is open".into()))?;
        self.names.insert(col.name.clone());
        self.columns.push(col);
        Ok(())
    }

    /// Writes the directory and footer (ending an open column first), syncs the file and renames
    /// it over the destination. Returns the directory written.
    pub fn finish(mut self) -> Result<Directory> {
        if self.open.is_some() {
            self.end_column()?;
        }
        let directory = Directory {
            columns: std::mem::take(&mut self.columns),
        };
        let dir_bytes = directory.to_bytes()?;
        let directory_offset = self.pos;
        // The header went out as 1.0 before any column was known; a file that uses 1.1 types
        // or codecs says so.
        let minor = directory.min_minor();
        let header = header_bytes(minor);
        if minor != 0 {
            self.out.write_at(0, &header)?;
        }
        let sum = directory_checksum(&header, &dir_bytes);
        self.write_all(&dir_bytes)?;
        self.write_all(&footer_bytes(directory_offset, dir_bytes.len() as u64, sum))?;
        self.out.finish()?;
        Ok(directory)
    }

    fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_bytes(bytes)?;
        self.pos += bytes.len() as u64;
        Ok(())
    }
}
