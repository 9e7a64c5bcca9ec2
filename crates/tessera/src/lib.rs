//! tessera: analytical columns in lightweight compressed formats that an NVIDIA GPU decodes at
//! close to memory bandwidth and any CPU decodes too.
//!
//! A table is a `.tsr` file of named columns. [`TableWriter`] writes one, column by column,
//! streaming; [`TableReader`] reads columns back, whole or a range of chunks, on the device an
//! [`Engine`] holds ([`Device::Auto`]: the GPU when there is one, else the CPU), into host
//! memory, a writer, or GPU memory ([`TableReader::read_gpu`]).
//!
//! ```
//! use tessera::{ColumnOptions, Device, Engine, TableReader, TableWriter};
//!
//! # fn main() -> tessera::Result<()> {
//! # let dir = tempfile::tempdir().map_err(|e| tessera::Error::io("temp dir", e))?;
//! let path = dir.path().join("orders.tsr");
//! let ids: Vec<u32> = (0..100_000).collect();
//! let qty: Vec<i16> = (0..100_000).map(|i| (i % 50) as i16 - 10).collect();
//!
//! let mut w = TableWriter::create(&path)?;
//! w.write_values("id", &ids, ColumnOptions::auto())?;
//! w.write_values("qty", &qty, ColumnOptions::auto())?;
//! w.write_strings("note", ["first", "second", "third"], ColumnOptions::auto())?;
//! w.finish()?;
//!
//! let r = TableReader::open(&path)?;
//! let mut engine = Engine::open(Device::Auto)?; // falls back to the CPU without a GPU
//! let back: Vec<i16> = r.read_values(r.column_index("qty")?, &mut engine)?;
//! assert_eq!(back, qty);
//! let notes = r.read_strings(r.column_index("note")?, 0..1, &mut engine)?;
//! assert_eq!(notes.get(1), Some("second"));
//! # Ok(()) }
//! ```
//!
//! The inner crates are re-exported for what this facade does not cover (codec internals,
//! kernel entry points): [`format`](mod@crate::format), [`codecs`], [`gpu`], [`query`].

pub mod arrow;
pub mod datasets;
mod device;
mod gpu_column;
mod read;
pub mod report;
mod value;
mod write;

pub use device::{Device, Engine};
pub use gpu_column::{GpuColumn, GpuData};
pub use read::{StringColumn, TableReader};
pub use tessera_codecs::column::CodecOptions;
pub use tessera_codecs::lll::Parse as LllParse;
pub use tessera_format::container::{ChunkMeta, ColumnMeta, Directory};
pub use tessera_format::{CodecId, Error, LogicalType, Result};
pub use value::Value;
pub use write::{
    default_batch_chunks, ColumnOptions, ColumnSummary, ColumnWriter, TableSummary, TableWriter,
    Utf8ColumnWriter, CHUNK_TEXT_BYTES, DEFAULT_CHUNK_VALUES, UNTERMINATED,
};

/// The CPU codecs (`tessera-codecs`).
pub use tessera_codecs as codecs;
/// The `.tsr` container and the shared ids (`tessera-format`).
pub use tessera_format as format;
/// The GPU runtime and kernels (`tessera-gpu`).
pub use tessera_gpu as gpu;
/// Tile-based query operators and bitmap indexes (`tessera-query`).
pub use tessera_query as query;

/// The README's code blocks, compiled and run as doctests (`cargo test --doc -p tessera`).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
