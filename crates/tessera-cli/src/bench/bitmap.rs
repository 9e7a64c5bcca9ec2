//! `tessera bench bitmap`: placeholder, filled in by the bitmap work.

use tessera_format::{Error, Result};

use super::BenchArgs;

/// Runs the suite.
pub fn run(_args: &BenchArgs) -> Result<()> {
    Err(Error::InvalidArgument("bench bitmap is not built yet".into()))
}
