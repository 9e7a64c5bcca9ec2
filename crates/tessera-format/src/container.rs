//! The `.tsr` container (`docs/format/container.md`): a 16-byte header, 16-aligned chunk
//! payloads, a directory of columns and chunks, and a 32-byte footer.
//!
//! - [`ContainerWriter`] streams payloads to a temporary file in the destination's folder, then
//!   writes the directory and footer, syncs and puts it under the final name (a crash never
//!   leaves a half-written file under the final name; a writer dropped before
//!   [`ContainerWriter::finish`] removes its temporary file); or it streams a whole file to
//!   stdout, a pipe or a device ([`ContainerWriter::streaming`]).
//! - [`Container`] opens a file and runs every check of container.md §5 before it hands out
//!   anything: no field read from the file sizes an allocation before it is bounded by the
//!   directory's length. [`Container::chunk_payload`] verifies a chunk's xxh3-64 checksum before
//!   returning its bytes.
//! - [`Directory`] is the parsed directory; [`Directory::encode`] and [`Directory::parse`] are
//!   public so tests and tools can build and check directories without files.
//!
//! The container never looks inside a payload: codecs (`tessera-codecs`) own that.

mod directory;
mod reader;
mod writer;

pub use directory::{
    ChunkMeta, ColumnMeta, Directory, CHUNK_ENTRY_LEN, MAX_COLUMNS, MAX_NAME_LEN,
    VARYING_UTF8_CHUNKS_MINOR,
};
pub use reader::Container;
pub use writer::ContainerWriter;

/// Header magic: `"\x89TSR\r\n\x1a\n"` (container.md §1).
pub const MAGIC: [u8; 8] = *b"\x89TSR\r\n\x1a\n";
/// Footer end magic: `"TSREND\r\n"` (container.md §4).
pub const END_MAGIC: [u8; 8] = *b"TSREND\r\n";
/// The major version this build reads and writes.
pub const VERSION_MAJOR: u16 = 1;
/// The highest minor version this build writes (it reads any minor of [`VERSION_MAJOR`]). A file
/// declares the lowest minor that defines everything it uses: 0 for integer columns only, 1 with
/// a bytes, bits or utf8 column, 2 when a utf8 column's chunks hold different value counts
/// ([`Directory::min_minor`]), 3 with a table section (`table.md`), 4 when the table has ALP
/// float fields (`table.md` §8), 5 when it has automatic dictionaries of fixed-width fields
/// (`table.md` §6.1), 6 when it has run-encoded fields (`table.md` §9).
pub const VERSION_MINOR: u16 = 6;
/// Flag bits 0..=15 must be understood by a reader; version 1.0 defines none of them.
pub const MUST_UNDERSTAND_FLAGS: u32 = 0x0000_ffff;
/// Bytes in the file header.
pub const HEADER_LEN: usize = 16;
/// Bytes in the footer.
pub const FOOTER_LEN: usize = 32;
/// Smallest file a reader looks into (container.md §5.1): header plus footer.
pub const MIN_FILE_LEN: u64 = (HEADER_LEN + FOOTER_LEN) as u64;
/// Alignment of every chunk payload's start.
pub const PAYLOAD_ALIGN: u64 = 16;

/// The xxh3-64 (seed 0) checksum used for payloads and the directory.
pub fn checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// The 16 header bytes of a version 1.`minor` file with no flags.
pub fn header_bytes(minor: u16) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&MAGIC);
    h[8..10].copy_from_slice(&VERSION_MAJOR.to_le_bytes());
    h[10..12].copy_from_slice(&minor.to_le_bytes());
    // flags (12..16) stay zero.
    h
}

/// The directory checksum of container.md §4: xxh3-64 of the header bytes then the directory.
pub fn directory_checksum(header: &[u8], directory: &[u8]) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3Default::new();
    h.update(header);
    h.update(directory);
    h.digest()
}

/// The 32 footer bytes for a directory at `directory_offset`.
pub fn footer_bytes(
    directory_offset: u64,
    directory_length: u64,
    directory_checksum: u64,
) -> [u8; FOOTER_LEN] {
    let mut f = [0u8; FOOTER_LEN];
    f[0..8].copy_from_slice(&directory_offset.to_le_bytes());
    f[8..16].copy_from_slice(&directory_length.to_le_bytes());
    f[16..24].copy_from_slice(&directory_checksum.to_le_bytes());
    f[24..32].copy_from_slice(&END_MAGIC);
    f
}
