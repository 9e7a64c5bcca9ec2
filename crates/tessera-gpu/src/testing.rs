//! The GPU tests' one policy, shared by every crate's tests: without a usable GPU a test is
//! skipped with the reason printed, unless `TESSERA_REQUIRE_GPU=1` (the GPU machine's runs set
//! it), which turns the skip into a failure.

use std::sync::OnceLock;

use crate::Gpu;

/// Reports a test skipped for `reason`; panics instead when `TESSERA_REQUIRE_GPU=1`.
pub fn skipped(reason: &dyn std::fmt::Display) {
    if std::env::var("TESSERA_REQUIRE_GPU").as_deref() == Ok("1") {
        panic!("TESSERA_REQUIRE_GPU=1 but no GPU: {reason}");
    }
    // Written past libtest's output capture (which only sees the print macros) so the reason
    // shows in every run, CI's included.
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "skipped: {reason}");
}

/// The process's GPU (opened once), or `None` after [`skipped`].
pub fn gpu() -> Option<&'static Gpu> {
    static GPU: OnceLock<Result<Gpu, String>> = OnceLock::new();
    match GPU.get_or_init(|| Gpu::new().map_err(|e| e.to_string())) {
        Ok(g) => Some(g),
        Err(e) => {
            skipped(e);
            None
        }
    }
}
