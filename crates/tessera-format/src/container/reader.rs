//! Opening a `.tsr` file: the checks of container.md §5, in its order, before anything is
//! trusted; then verified access to chunk payloads.
//!
//! Files are memory-mapped when the platform allows it (payloads are then handed to decoders
//! and the GPU upload without copies) and read into memory otherwise. Either way a
//! [`Container`] holds the whole file's bytes and a [`Directory`] whose every offset has been
//! checked against them, so `chunk_payload` slices without further bounds doubts.

use std::fs::File;
use std::path::Path;

use crate::{Error, Result};

use super::{
    directory_checksum, ChunkMeta, ColumnMeta, Directory, END_MAGIC, FOOTER_LEN, HEADER_LEN, MAGIC,
    MIN_FILE_LEN, MUST_UNDERSTAND_FLAGS, VERSION_MAJOR,
};

/// The bytes of an opened file.
enum Backing {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Backing {
    fn bytes(&self) -> &[u8] {
        match self {
            Backing::Mapped(m) => m,
            Backing::Owned(v) => v,
        }
    }
}

/// An opened, validated `.tsr` file.
pub struct Container {
    backing: Backing,
    version_minor: u16,
    flags: u32,
    directory_offset: u64,
    directory: Directory,
}

impl std::fmt::Debug for Container {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Container")
            .field("len", &self.backing.bytes().len())
            .field("version_minor", &self.version_minor)
            .field("directory_offset", &self.directory_offset)
            .field("directory", &self.directory)
            .finish()
    }
}

impl Container {
    /// Opens and validates the file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Container> {
        let path = path.as_ref();
        let file = File::open(path)
            .map_err(|e| Error::io(format!("cannot open {}", path.display()), e))?;
        let meta = file
            .metadata()
            .map_err(|e| Error::io(format!("cannot stat {}", path.display()), e))?;
        if !meta.is_file() {
            return Err(Error::InvalidArgument(format!(
                "{} is not a regular file",
                path.display()
            )));
        }
        // Check the size before mapping: mapping an empty file fails, and a short file is
        // reported the same way whichever path reads it.
        if meta.len() < MIN_FILE_LEN {
            return Err(Error::Truncated {
                what: "file",
                offset: 0,
                needed: MIN_FILE_LEN,
                available: meta.len(),
            });
        }
        // SAFETY: the map is read-only and tessera never modifies a finished file in place
        // (writers rename a new file over it, which leaves this mapping on the old inode). Another
        // process truncating the file while it is mapped is outside what we can defend against;
        // every byte read from the map is validated as hostile input, so concurrent changes to
        // its contents can produce errors, not unsoundness in our code.
        let backing = match unsafe { memmap2::Mmap::map(&file) } {
            Ok(m) => Backing::Mapped(m),
            Err(_) => {
                // Some filesystems cannot map; read the file instead.
                let bytes = std::fs::read(path)
                    .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
                Backing::Owned(bytes)
            }
        };
        Self::validate(backing)
    }

    /// Validates a file already in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Container> {
        Self::validate(Backing::Owned(bytes))
    }

    fn validate(backing: Backing) -> Result<Container> {
        let bytes = backing.bytes();
        let len = bytes.len() as u64;
        // §5.1: size, header magic, version, flags, footer end magic.
        if len < MIN_FILE_LEN {
            return Err(Error::Truncated {
                what: "file",
                offset: 0,
                needed: MIN_FILE_LEN,
                available: len,
            });
        }
        let header = &bytes[..HEADER_LEN];
        if header[..8] != MAGIC {
            return Err(Error::BadMagic {
                offset: 0,
                expected: MAGIC.to_vec(),
                found: header[..8].to_vec(),
            });
        }
        let major = u16::from_le_bytes([header[8], header[9]]);
        if major != VERSION_MAJOR {
            return Err(Error::UnsupportedVersion {
                what: "container major",
                found: major as u32,
                supported: VERSION_MAJOR as u32,
            });
        }
        let version_minor = u16::from_le_bytes([header[10], header[11]]);
        let flags = u32::from_le_bytes([header[12], header[13], header[14], header[15]]);
        // Version 1.x defines no must-understand flag; optional bits (16..=31) are ignored.
        if flags & MUST_UNDERSTAND_FLAGS != 0 {
            return Err(Error::Unknown {
                what: "must-understand flag bits",
                found: (flags & MUST_UNDERSTAND_FLAGS) as u64,
            });
        }
        let footer_at = bytes.len() - FOOTER_LEN;
        let footer = &bytes[footer_at..];
        if footer[24..32] != END_MAGIC {
            return Err(Error::BadMagic {
                offset: len - 8,
                expected: END_MAGIC.to_vec(),
                found: footer[24..32].to_vec(),
            });
        }
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&footer[i..i + 8]);
            u64::from_le_bytes(w)
        };
        let (directory_offset, directory_length, stored_checksum) = (word(0), word(8), word(16));

        // §5.2: the directory sits between the header and the footer and fills that space.
        let footer_at = footer_at as u64;
        if directory_offset < HEADER_LEN as u64 || directory_offset > footer_at {
            return Err(Error::InvalidHeader {
                field: "directory_offset",
                offset: footer_at,
                expected: format!("in [{HEADER_LEN}, {footer_at}]"),
                found: directory_offset,
            });
        }
        if directory_length != footer_at - directory_offset {
            return Err(Error::InvalidHeader {
                field: "directory_length",
                offset: footer_at + 8,
                expected: format!(
                    "{} (directory_offset + directory_length + 32 = file size)",
                    footer_at - directory_offset
                ),
                found: directory_length,
            });
        }

        // §5.3: checksum, then every field.
        let dir_bytes = &bytes[directory_offset as usize..footer_at as usize];
        let computed = directory_checksum(header, dir_bytes);
        if computed != stored_checksum {
            return Err(Error::ChecksumMismatch {
                what: "directory".into(),
                expected: stored_checksum,
                found: computed,
            });
        }
        let directory = Directory::parse(dir_bytes, directory_offset, version_minor)?;
        Ok(Container {
            backing,
            version_minor,
            flags,
            directory_offset,
            directory,
        })
    }

    /// The file's format version `(major, minor)`.
    pub fn version(&self) -> (u16, u16) {
        (VERSION_MAJOR, self.version_minor)
    }

    /// The header's flags (only optional bits can be set in a file that opened).
    pub fn flags(&self) -> u32 {
        self.flags
    }

    /// The file's size in bytes.
    pub fn file_len(&self) -> u64 {
        self.backing.bytes().len() as u64
    }

    /// Where the directory starts.
    pub fn directory_offset(&self) -> u64 {
        self.directory_offset
    }

    /// The validated directory.
    pub fn directory(&self) -> &Directory {
        &self.directory
    }

    /// The columns, in file order.
    pub fn columns(&self) -> &[ColumnMeta] {
        &self.directory.columns
    }

    /// The column called `name`, with its index.
    pub fn column_by_name(&self, name: &str) -> Option<(usize, &ColumnMeta)> {
        self.directory
            .columns
            .iter()
            .enumerate()
            .find(|(_, c)| c.name == name)
    }

    /// The payload of chunk `chunk` of column `column`, after checking its xxh3-64 checksum
    /// ([`Error::ChecksumMismatch`] naming the column and chunk otherwise). Indices out of range
    /// are [`Error::InvalidArgument`].
    pub fn chunk_payload(&self, column: usize, chunk: usize) -> Result<&[u8]> {
        let (col, meta) = self.chunk_meta(column, chunk)?;
        let payload = self.payload_unverified(meta);
        let computed = super::checksum(payload);
        if computed != meta.checksum {
            return Err(Error::ChecksumMismatch {
                what: format!("column '{}' (#{column}) chunk {chunk} payload", col.name),
                expected: meta.checksum,
                found: computed,
            });
        }
        Ok(payload)
    }

    /// The payload bytes of a chunk without checking its checksum (for tools that report on
    /// corrupt files; decoders must use [`Container::chunk_payload`]).
    pub fn chunk_payload_unverified(&self, column: usize, chunk: usize) -> Result<&[u8]> {
        let (_, meta) = self.chunk_meta(column, chunk)?;
        Ok(self.payload_unverified(meta))
    }

    fn chunk_meta(&self, column: usize, chunk: usize) -> Result<(&ColumnMeta, &ChunkMeta)> {
        let col = self.directory.columns.get(column).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "column #{column} does not exist ({} columns)",
                self.directory.columns.len()
            ))
        })?;
        let meta = col.chunks.get(chunk).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "column '{}' has no chunk {chunk} ({} chunks)",
                col.name,
                col.chunks.len()
            ))
        })?;
        Ok((col, meta))
    }

    fn payload_unverified(&self, meta: &ChunkMeta) -> &[u8] {
        // The directory parser checked offset + size <= directory_offset <= file length.
        let start = meta.offset as usize;
        &self.backing.bytes()[start..start + meta.compressed_size as usize]
    }
}
