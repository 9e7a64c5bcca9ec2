//! tessera: analytical columns in lightweight compressed formats that an NVIDIA GPU decodes at
//! close to memory bandwidth and any CPU decodes too.
//!
//! This crate is the one way in: it re-exports what a user needs from the inner crates.

pub mod datasets;

pub use tessera_format::{CodecId, Error, LogicalType, Result};
