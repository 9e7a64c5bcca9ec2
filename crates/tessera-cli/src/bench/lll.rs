//! `tessera bench lll`: placeholder, filled in by the lll work.

use tessera_format::{Error, Result};

use super::BenchArgs;

/// Runs the suite.
pub fn run(_args: &BenchArgs) -> Result<()> {
    Err(Error::InvalidArgument("bench lll is not built yet".into()))
}
