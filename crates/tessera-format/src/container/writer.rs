//! Writing a `.tsr` file (container.md §6).
//!
//! To a file: payloads stream out to an [`AtomicFile`] in the destination's folder as they are
//! produced; `finish` appends the directory and footer, syncs, and puts the file under its final
//! name. The header goes out first as version 1.0 and is patched to 1.1 at the end when a column
//! needs it, so files of integer columns stay byte-identical 1.0 files.
//!
//! To a stream (stdout, a pipe, a device: [`ContainerWriter::streaming`]): nothing can be
//! patched, so the caller declares the minor version up front; the header says it, and the
//! writer refuses a column, codec or params that needs a later one
//! ([`Error::InvalidArgument`]). This keeps a stream truly streaming (no spooling of the whole
//! file) and, declared as the columns' own minimum, byte-identical to the file form.
//!
//! Invariants: every payload starts at a multiple of 16 (zero padding before it); the directory
//! the writer accumulates always satisfies the checks `Directory::parse` makes (the writer
//! refuses chunks that would break them, with [`Error::InvalidArgument`]); a file's temporary
//! data is removed if the writer is dropped or fails before `finish`.

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use crate::table::{TableMeta, TABLE_MINOR};
use crate::{AtomicFile, CodecId, Error, LogicalType, Result, MAX_CHUNK_VALUES};

use super::directory::check_name;
use super::{
    checksum, directory_checksum, footer_bytes, header_bytes, ChunkMeta, ColumnMeta, Directory,
    PAYLOAD_ALIGN,
};

/// Where the bytes go.
enum Sink {
    /// A file, completed by `finish`; the header can be patched.
    File(AtomicFile),
    /// A stream whose header declared `minor` up front.
    Stream {
        out: Box<dyn Write + Send>,
        minor: u16,
    },
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sink::File(a) => f.debug_tuple("File").field(a).finish(),
            Sink::Stream { minor, .. } => f.debug_struct("Stream").field("minor", minor).finish(),
        }
    }
}

/// Streams columns of chunk payloads into a new `.tsr` file or stream.
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
    out: Sink,
    /// Bytes written so far (the next write's file offset).
    pos: u64,
    columns: Vec<ColumnMeta>,
    names: HashSet<String>,
    open: Option<ColumnMeta>,
    table: Option<TableMeta>,
}

impl ContainerWriter {
    /// Creates the temporary file in `dest`'s folder and writes the header; `finish` replaces
    /// whatever is at `dest`.
    pub fn create(dest: impl AsRef<Path>) -> Result<ContainerWriter> {
        Self::with_file(AtomicFile::create(dest)?)
    }

    /// Writes into `out` (an [`AtomicFile`] made with the replace and temporary-file policy the
    /// caller wants); `finish` finishes it.
    pub fn with_file(out: AtomicFile) -> Result<ContainerWriter> {
        Self::start(Sink::File(out), 0)
    }

    /// Writes a `.tsr` stream into `out` (stdout, a pipe, a device), which is never sought.
    /// The header says version 1.`minor` from the start: every column, codec and params must fit
    /// it (`LogicalType::min_minor`, `CodecId::min_minor`; params need 1). `finish` flushes
    /// `out`. A stream cut short by a failure is not a valid file (its footer is missing), which
    /// a reader reports.
    pub fn streaming(out: Box<dyn Write + Send>, minor: u16) -> Result<ContainerWriter> {
        if minor > super::VERSION_MINOR {
            return Err(Error::InvalidArgument(format!(
                "version 1.{minor} is newer than this build writes (1.{})",
                super::VERSION_MINOR
            )));
        }
        Self::start(Sink::Stream { out, minor }, minor)
    }

    fn start(out: Sink, minor: u16) -> Result<ContainerWriter> {
        let mut w = ContainerWriter {
            out,
            pos: 0,
            columns: Vec::new(),
            names: HashSet::new(),
            open: None,
            table: None,
        };
        w.write_all(&header_bytes(minor))?;
        Ok(w)
    }

    /// The final path the file will have (`None` for a stream).
    pub fn dest(&self) -> Option<&Path> {
        match &self.out {
            Sink::File(a) => Some(a.dest()),
            Sink::Stream { .. } => None,
        }
    }

    /// The named temporary file written until [`ContainerWriter::finish`], if the data is in
    /// one (not for an unnamed temporary file or a stream).
    pub fn temp_path(&self) -> Option<&Path> {
        match &self.out {
            Sink::File(a) => a.temp_path(),
            Sink::Stream { .. } => None,
        }
    }

    /// For a stream: fails when `needed` is past the declared minor version.
    fn fits(&self, needed: u16, what: impl FnOnce() -> String) -> Result<()> {
        match self.out {
            Sink::Stream { minor, .. } if needed > minor => Err(Error::InvalidArgument(format!(
                "{} needs format 1.{needed}, but the stream's header already says 1.{minor}",
                what()
            ))),
            _ => Ok(()),
        }
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
        self.fits(ty.min_minor(), || format!("a {} column", ty.name()))?;
        if let Some(c) = requested {
            self.fits(c.min_minor(), || format!("codec {}", c.name()))?;
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
        self.check_chunk(col, codec, value_count)?;
        let chunk = self.put_payload(codec, value_count, payload)?;
        let col = self
            .open
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("no column is open".into()))?;
        col.value_count += value_count as u64;
        col.chunks.push(chunk);
        Ok(())
    }

    /// Declares a column whose chunks are written with [`ContainerWriter::write_chunk_to`],
    /// interleaved with other declared columns' chunks (a table streamed a row batch at a time:
    /// `docs/format/table.md` §5). Returns its index. Not while a column is open.
    pub fn add_column(
        &mut self,
        name: &str,
        ty: LogicalType,
        requested: Option<CodecId>,
    ) -> Result<usize> {
        self.begin_column(name, ty, requested)?;
        self.end_column()?;
        Ok(self.columns.len() - 1)
    }

    /// Appends one chunk payload to declared column `col` ([`ContainerWriter::add_column`]),
    /// with the checks of [`ContainerWriter::write_chunk`].
    pub fn write_chunk_to(
        &mut self,
        col: usize,
        codec: CodecId,
        value_count: u32,
        payload: &[u8],
    ) -> Result<()> {
        let meta = self
            .columns
            .get(col)
            .ok_or_else(|| Error::InvalidArgument(format!("no column #{col}")))?;
        self.check_chunk(meta, codec, value_count)?;
        let chunk = self.put_payload(codec, value_count, payload)?;
        let meta = &mut self.columns[col];
        meta.value_count += value_count as u64;
        meta.chunks.push(chunk);
        Ok(())
    }

    /// Sets declared column `col`'s params (utf8 columns only, container.md §3).
    pub fn set_params_of(&mut self, col: usize, params: &[u8]) -> Result<()> {
        if !params.is_empty() {
            self.fits(1, || "column params".to_owned())?;
        }
        let meta = self
            .columns
            .get_mut(col)
            .ok_or_else(|| Error::InvalidArgument(format!("no column #{col}")))?;
        meta.params = params.to_vec();
        Ok(())
    }

    /// Records the table section (`table.md`) the directory ends with; the file is then 1.3
    /// (1.4 with ALP float fields). It is checked against the columns when the directory is
    /// written.
    pub fn set_table(&mut self, table: TableMeta) -> Result<()> {
        self.fits(table.min_minor().max(TABLE_MINOR), || {
            "a table section".to_owned()
        })?;
        self.table = Some(table);
        Ok(())
    }

    /// The columns closed or declared so far.
    pub fn columns(&self) -> &[ColumnMeta] {
        &self.columns
    }

    fn check_chunk(&self, col: &ColumnMeta, codec: CodecId, value_count: u32) -> Result<()> {
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
        self.fits(codec.min_minor(), || format!("codec {}", codec.name()))?;
        if let Some(size) = col.chunk_size() {
            let last = col.chunks.last().map_or(size, |c| c.value_count);
            if last != size || value_count > size {
                let name = col.name.clone();
                self.fits(super::VARYING_UTF8_CHUNKS_MINOR, || {
                    format!("utf8 column '{name}' with chunks of different counts")
                })?;
            }
        }
        Ok(())
    }

    /// Writes a payload at the next 16-aligned offset; returns its directory entry.
    fn put_payload(
        &mut self,
        codec: CodecId,
        value_count: u32,
        payload: &[u8],
    ) -> Result<ChunkMeta> {
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
        Ok(ChunkMeta {
            offset,
            compressed_size,
            value_count,
            codec,
            checksum: sum,
        })
    }

    /// Sets the open column's params (container.md §3.1: defined for utf8 columns only).
    pub fn set_params(&mut self, params: &[u8]) -> Result<()> {
        if !params.is_empty() {
            self.fits(1, || "column params".to_owned())?;
        }
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

    /// Writes the directory and footer (ending an open column first) and completes the output:
    /// a file is synced and put under its final name, a stream is flushed. Returns the
    /// directory written.
    pub fn finish(self) -> Result<Directory> {
        self.finish_sized().map(|(d, _)| d)
    }

    /// [`ContainerWriter::finish`], also returning the size of the whole file in bytes.
    pub fn finish_sized(mut self) -> Result<(Directory, u64)> {
        if self.open.is_some() {
            self.end_column()?;
        }
        let directory = Directory {
            columns: std::mem::take(&mut self.columns),
            table: self.table.take(),
        };
        let dir_bytes = directory.to_bytes()?;
        if let Some(table) = &directory.table {
            // The reader's checks, run before anything is named: a bad table is a writer bug
            // and must not reach a file.
            let bytes = table.to_bytes()?;
            TableMeta::parse(&bytes, 0, &directory.columns)?;
        }
        let directory_offset = self.pos;
        let minor = directory.min_minor();
        let header = match &mut self.out {
            // The header went out as 1.0 before any column was known; a file that uses 1.1
            // types or codecs says so.
            Sink::File(out) => {
                let header = header_bytes(minor);
                if minor != 0 {
                    out.write_at(0, &header)?;
                }
                header
            }
            // `fits` kept every column within the declared version.
            Sink::Stream {
                minor: declared, ..
            } => header_bytes(*declared),
        };
        let sum = directory_checksum(&header, &dir_bytes);
        self.write_all(&dir_bytes)?;
        self.write_all(&footer_bytes(directory_offset, dir_bytes.len() as u64, sum))?;
        let size = self.pos;
        match self.out {
            Sink::File(out) => out.finish()?,
            Sink::Stream { mut out, .. } => out
                .flush()
                .map_err(|e| Error::io("cannot write the .tsr stream", e))?,
        }
        Ok((directory, size))
    }

    fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        match &mut self.out {
            Sink::File(out) => out.write_bytes(bytes)?,
            Sink::Stream { out, .. } => out
                .write_all(bytes)
                .map_err(|e| Error::io("cannot write the .tsr stream", e))?,
        }
        self.pos += bytes.len() as u64;
        Ok(())
    }
}
