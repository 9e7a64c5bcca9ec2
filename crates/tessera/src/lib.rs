//! tessera: analytical columns in lightweight compressed formats that an NVIDIA GPU decodes at
//! close to memory bandwidth and any CPU decodes too.
//!
//! This crate is the one way in: it re-exports what a user needs from the inner crates.

pub mod datasets;
pub mod report;

pub use tessera_format::{CodecId, Error, LogicalType, Result};

/// The `.tsr` container and the shared ids (`tessera-format`).
pub use tessera_format as format;
/// The CPU codecs (`tessera-codecs`).
pub use tessera_codecs as codecs;
/// The GPU runtime and kernels (`tessera-gpu`).
pub use tessera_gpu as gpu;
/// Tile-based query operators and bitmap indexes (`tessera-query`).
pub use tessera_query as query;
