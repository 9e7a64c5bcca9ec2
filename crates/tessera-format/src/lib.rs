//! tessera-format: the pieces every tessera crate shares.
//!
//! - [`Error`]: the one error type for hostile input, I/O and device failures. Every variant
//!   says where (byte offset, column, chunk, block) and what (expected and found values).
//! - [`LogicalType`] and [`CodecId`]: the ids stored in `.tsr` files (`docs/format/container.md` §3).
//! - [`container`]: reading and writing `.tsr` files.
//! - [`table`]: the table section (container 1.3; ALP float fields 1.4): the Arrow fields a
//!   file's columns hold.
//!
//! - [`AtomicFile`] ([`atomic`]): write to a temporary file, put it under the final name when
//!   complete.
//!
//! No codec logic lives here: the container moves opaque chunk payloads and their checksums.

pub mod atomic;
pub mod container;
mod error;
pub mod table;
mod types;

pub use atomic::AtomicFile;
pub use error::{Error, Result};
pub use types::{CodecId, Lane, LogicalType, MAX_CHUNK_VALUES};
