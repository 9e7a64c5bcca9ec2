//! Helpers shared by the ORC tests.
// Each test crate compiles this module whole; only some use every helper.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The ORC test files' folder: `testdata/orc`, or `TESSERA_ORC_TESTDATA` (the GPU machine runs a
/// copied test binary, away from the source tree).
pub fn dir() -> PathBuf {
    std::env::var_os("TESSERA_ORC_TESTDATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/orc"))
}

/// The names of the `.orc` files in [`dir`], sorted.
pub fn orc_file_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .expect("testdata/orc")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".orc"))
        .collect();
    names.sort();
    names
}
