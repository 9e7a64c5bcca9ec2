//! tessera-format: the pieces every tessera crate shares.
//!
//! - [`Error`]: the one error type for hostile input, I/O and device failures. Every variant
//!   says where (byte offset, column, chunk, block) and what (expected and found values).
//! - [`LogicalType`] and [`CodecId`]: the ids stored in `.tsr` files (`docs/format/container.md` §3).
//! - [`container`]: reading and writing `.tsr` files.
//!
//! No codec logic lives here: the container moves opaque chunk payloads and their checksums.

pub mod container;
mod error;
mod types;

pub use error::{Error, Result};
pub use types::{CodecId, Lane, LogicalType, MAX_CHUNK_VALUES};
