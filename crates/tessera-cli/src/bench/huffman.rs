//! `tessera bench huffman`: placeholder, filled in by the huffman work.

use tessera_format::{Error, Result};

use super::BenchArgs;

/// Runs the suite.
pub fn run(_args: &BenchArgs) -> Result<()> {
    Err(Error::InvalidArgument("bench huffman is not built yet".into()))
}
