//! The CUDA sources, embedded at build time, and their compilation with NVRTC.
//!
//! Each `.cu` file under `kernels/` is one NVRTC program and one CUDA module. NVRTC cannot read
//! our headers from disk (the binary runs anywhere), so [`source`] inlines every
//! `#include "…"` of an embedded header, once per program (the headers also carry include
//! guards), with `#line` markers so compile errors name the right file and line.
//!
//! Compilation targets the device's own architecture (`--gpu-architecture=sm_XY`); NVRTC
//! optimizes by default (it rejects `-O3`). The PTX of each (module, arch) pair is cached for
//! the life of the process. [`compile`] needs only NVRTC, no GPU, so CI compiles every kernel.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use cudarc::nvrtc::{CompileOptions, Ptx};
use tessera_format::{Error, Result};

/// One CUDA module (one `.cu` file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Module {
    /// GPU-FOR decode and encode (`kernels/for.cu`).
    For,
    /// GPU-DFOR decode and encode (`kernels/dfor.cu`).
    Dfor,
    /// GPU-RFOR decode and encode (`kernels/rfor.cu`).
    Rfor,
    /// Device-wide exclusive scan for the encoders (`kernels/scan.cu`).
    Scan,
    /// Fused decode-and-query kernels (`kernels/query.cu`).
    Query,
    /// Canonical Huffman histogram, encode and block-parallel decode (`kernels/huffman.cu`).
    Huffman,
    /// LLL strip-parallel decode (`kernels/lll.cu`).
    Lll,
    /// WAH / PLWAH compression, decompression and compressed bitwise operations
    /// (`kernels/bitmap.cu`).
    Bitmap,
}

impl Module {
    /// Every module.
    pub const ALL: [Module; 8] = [
        Module::For,
        Module::Dfor,
        Module::Rfor,
        Module::Scan,
        Module::Query,
        Module::Huffman,
        Module::Lll,
        Module::Bitmap,
    ];

    /// File name under `kernels/`.
    pub const fn file(self) -> &'static str {
        match self {
            Module::For => "for.cu",
            Module::Dfor => "dfor.cu",
            Module::Rfor => "rfor.cu",
            Module::Scan => "scan.cu",
            Module::Query => "query.cu",
            Module::Huffman => "huffman.cu",
            Module::Lll => "lll.cu",
            Module::Bitmap => "bitmap.cu",
        }
    }

    fn text(self) -> &'static str {
        match self {
            Module::For => include_str!("../kernels/for.cu"),
            Module::Dfor => include_str!("../kernels/dfor.cu"),
            Module::Rfor => include_str!("../kernels/rfor.cu"),
            Module::Scan => include_str!("../kernels/scan.cu"),
            Module::Query => include_str!("../kernels/query.cu"),
            Module::Huffman => include_str!("../kernels/huffman.cu"),
            Module::Lll => include_str!("../kernels/lll.cu"),
            Module::Bitmap => include_str!("../kernels/bitmap.cu"),
        }
    }
}

const HEADERS: &[(&str, &str)] = &[
    ("common.cuh", include_str!("../kernels/include/common.cuh")),
    (
        "bitunpack.cuh",
        include_str!("../kernels/include/bitunpack.cuh"),
    ),
    (
        "block_scan.cuh",
        include_str!("../kernels/include/block_scan.cuh"),
    ),
    (
        "load_bitpack.cuh",
        include_str!("../kernels/include/load_bitpack.cuh"),
    ),
    (
        "load_rbitpack.cuh",
        include_str!("../kernels/include/load_rbitpack.cuh"),
    ),
    ("store.cuh", include_str!("../kernels/include/store.cuh")),
    (
        "decode_for_column.cuh",
        include_str!("../kernels/include/decode_for_column.cuh"),
    ),
    (
        "bitpack.cuh",
        include_str!("../kernels/include/bitpack.cuh"),
    ),
    (
        "device_scan.cuh",
        include_str!("../kernels/include/device_scan.cuh"),
    ),
    ("merge.cuh", include_str!("../kernels/include/merge.cuh")),
    ("wah.cuh", include_str!("../kernels/include/wah.cuh")),
    (
        "huffman.cuh",
        include_str!("../kernels/include/huffman.cuh"),
    ),
    ("lll.cuh", include_str!("../kernels/include/lll.cuh")),
];

/// The text of an embedded header, by file name.
pub fn header(name: &str) -> Option<&'static str> {
    HEADERS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The complete source of `module`, its headers inlined.
pub fn source(module: Module) -> Result<String> {
    let mut out = String::new();
    let mut seen = Vec::new();
    inline(module.file(), module.text(), &mut seen, &mut out)?;
    Ok(out)
}

fn inline(file: &str, text: &str, seen: &mut Vec<String>, out: &mut String) -> Result<()> {
    out.push_str(&format!("#line 1 \"{file}\"\n"));
    for (i, line) in text.lines().enumerate() {
        let included = line
            .trim_start()
            .strip_prefix("#include")
            .map(|rest| rest.trim().trim_matches('"'))
            .filter(|_| line.contains('"'));
        match included {
            Some(path) => {
                let name = path.rsplit('/').next().unwrap_or(path);
                let text = header(name).ok_or_else(|| {
                    Error::Gpu(format!(
                        "{file}:{}: unknown kernel header \"{path}\"",
                        i + 1
                    ))
                })?;
                if !seen.iter().any(|s| s == name) {
                    seen.push(name.to_string());
                    inline(name, text, seen, out)?;
                }
                out.push_str(&format!("#line {} \"{file}\"\n", i + 2));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    Ok(())
}

/// Whether NVRTC can be loaded; the error says why not.
pub fn nvrtc_available() -> Result<()> {
    // SAFETY: only probes whether the shared library can be opened; no NVRTC call is made.
    if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(Error::Gpu(
            "NVRTC (libnvrtc.so.13) not found: install the CUDA 13 runtime compiler or put it on \
             LD_LIBRARY_PATH"
                .into(),
        ))
    }
}

type PtxCache = Mutex<HashMap<(Module, String), Ptx>>;

fn cache() -> &'static PtxCache {
    static CACHE: OnceLock<PtxCache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Compiles `module` for `arch` (e.g. `sm_90`) with NVRTC, or returns the cached PTX.
pub fn compile(module: Module, arch: &str) -> Result<Ptx> {
    let key = (module, arch.to_string());
    if let Some(ptx) = cache().lock().map_err(|_| poisoned())?.get(&key) {
        return Ok(ptx.clone());
    }
    nvrtc_available()?;
    let src = source(module)?;
    let opts = CompileOptions {
        options: vec![
            format!("--gpu-architecture={arch}"),
            "--std=c++17".into(),
            "-lineinfo".into(),
        ],
        name: Some(module.file().to_string()),
        ..Default::default()
    };
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(&src, opts).map_err(|e| match e {
        cudarc::nvrtc::CompileError::CompileError { log, .. } => Error::Gpu(format!(
            "NVRTC failed to compile {} for {arch}:\n{}",
            module.file(),
            log.to_string_lossy()
        )),
        other => Error::Gpu(format!("NVRTC failed on {}: {other}", module.file())),
    })?;
    cache()
        .lock()
        .map_err(|_| poisoned())?
        .insert(key, ptx.clone());
    Ok(ptx)
}

fn poisoned() -> Error {
    Error::Gpu("PTX cache lock poisoned".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_include_resolves_and_is_inlined_once() {
        for m in Module::ALL {
            let src = source(m).expect("all headers embedded");
            assert!(!src.contains("#include"), "{}", m.file());
            assert_eq!(
                src.matches("#define TESSERA_COMMON_CUH").count(),
                1,
                "{}",
                m.file()
            );
        }
    }
}
