//! The CUDA sources, embedded at build time, and their compilation with NVRTC.
//!
//! The kernels are arranged like the crate: `kernels/include/` (types and helpers every kernel
//! shares), `kernels/primitives/` (scans, merge path), then one folder per codec family
//! (`int/`, `lll/`, `huffman/`, `bitmap/`). Each `.cu` file is one NVRTC program and one CUDA
//! module ([`Module`]); `.cuh` files are headers, or parts of a module's source split by
//! operation (`bitmap/`). NVRTC cannot read our headers from disk (the binary runs anywhere), so
//! [`source`] inlines every `#include "…"` of an embedded header, resolved like the C
//! preprocessor resolves quoted includes (relative to the including file), once per program
//! (the headers also carry include guards), with `#line` markers so compile errors name the
//! right file and line.
//!
//! Compilation targets the device's own architecture (`--gpu-architecture=sm_XY`); NVRTC
//! optimizes by default (it rejects `-O3`). The PTX of each (module, arch) pair is cached for
//! the life of the process. [`compile`] needs only NVRTC, no GPU, so CI compiles every kernel.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use cudarc::nvrtc::{CompileOptions, Ptx};
use tessera_format::{Error, Result};

/// One CUDA module (one `.cu` file), by codec family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Module {
    /// GPU-FOR decode and encode (`kernels/int/for.cu`).
    For,
    /// GPU-DFOR decode and encode (`kernels/int/dfor.cu`).
    Dfor,
    /// GPU-RFOR decode and encode (`kernels/int/rfor.cu`).
    Rfor,
    /// Several integer decodes (any codec, any width) in one launch (`kernels/int/jobs.cu`).
    IntJobs,
    /// Fused decode-and-query kernels (`kernels/int/query.cu`).
    Query,
    /// The device-wide sum scans over arrays and the merge-path test kernel
    /// (`kernels/primitives/primitives.cu`).
    Primitives,
    /// Canonical Huffman histogram, encode and block-parallel decode
    /// (`kernels/huffman/huffman.cu`).
    Huffman,
    /// LLL strip-parallel decode (`kernels/lll/lll.cu`).
    Lll,
    /// WAH / PLWAH compression, decompression, conversion and compressed bitwise operations
    /// (`kernels/bitmap/bitmap.cu` and its parts).
    Bitmap,
    /// CODAG warp-per-chunk decoders: ORC RLE v1 / v2 / byte RLE, Deflate
    /// (`kernels/codag/codag.cu`).
    Codag,
    /// Star-join query operators composed into example kernels (`kernels/ssb/ssb.cu`); the
    /// queries' own kernels are generated from the same operators ([`compile_generated`]).
    Ssb,
    /// Decoded columns into Arrow's layout: utf8 offsets, decimal widening, ALP floats
    /// (`kernels/arrow/layout.cu`).
    ArrowLayout,
    /// ORC's decoded streams into Arrow's layout (`kernels/orc/layout.cu`).
    OrcLayout,
}

impl Module {
    /// Every module.
    pub const ALL: [Module; 13] = [
        Module::For,
        Module::Dfor,
        Module::Rfor,
        Module::IntJobs,
        Module::Query,
        Module::Primitives,
        Module::Huffman,
        Module::Lll,
        Module::Bitmap,
        Module::Codag,
        Module::Ssb,
        Module::ArrowLayout,
        Module::OrcLayout,
    ];

    /// Path under `kernels/`.
    pub const fn file(self) -> &'static str {
        match self {
            Module::For => "int/for.cu",
            Module::Dfor => "int/dfor.cu",
            Module::Rfor => "int/rfor.cu",
            Module::IntJobs => "int/jobs.cu",
            Module::Query => "int/query.cu",
            Module::Primitives => "primitives/primitives.cu",
            Module::Huffman => "huffman/huffman.cu",
            Module::Lll => "lll/lll.cu",
            Module::Bitmap => "bitmap/bitmap.cu",
            Module::Codag => "codag/codag.cu",
            Module::Ssb => "ssb/ssb.cu",
            Module::ArrowLayout => "arrow/layout.cu",
            Module::OrcLayout => "orc/layout.cu",
        }
    }

    fn text(self) -> &'static str {
        match self {
            Module::For => include_str!("../kernels/int/for.cu"),
            Module::Dfor => include_str!("../kernels/int/dfor.cu"),
            Module::Rfor => include_str!("../kernels/int/rfor.cu"),
            Module::IntJobs => include_str!("../kernels/int/jobs.cu"),
            Module::Query => include_str!("../kernels/int/query.cu"),
            Module::Primitives => include_str!("../kernels/primitives/primitives.cu"),
            Module::Huffman => include_str!("../kernels/huffman/huffman.cu"),
            Module::Lll => include_str!("../kernels/lll/lll.cu"),
            Module::Bitmap => include_str!("../kernels/bitmap/bitmap.cu"),
            Module::Codag => include_str!("../kernels/codag/codag.cu"),
            Module::Ssb => include_str!("../kernels/ssb/ssb.cu"),
            Module::ArrowLayout => include_str!("../kernels/arrow/layout.cu"),
            Module::OrcLayout => include_str!("../kernels/orc/layout.cu"),
        }
    }
}

/// Every header, by its path under `kernels/`.
const HEADERS: &[(&str, &str)] = &[
    (
        "include/common.cuh",
        include_str!("../kernels/include/common.cuh"),
    ),
    (
        "primitives/block_scan.cuh",
        include_str!("../kernels/primitives/block_scan.cuh"),
    ),
    (
        "primitives/scan.cuh",
        include_str!("../kernels/primitives/scan.cuh"),
    ),
    (
        "primitives/merge.cuh",
        include_str!("../kernels/primitives/merge.cuh"),
    ),
    (
        "int/bitunpack.cuh",
        include_str!("../kernels/int/bitunpack.cuh"),
    ),
    (
        "int/bitpack.cuh",
        include_str!("../kernels/int/bitpack.cuh"),
    ),
    (
        "int/load_bitpack.cuh",
        include_str!("../kernels/int/load_bitpack.cuh"),
    ),
    (
        "int/load_rbitpack.cuh",
        include_str!("../kernels/int/load_rbitpack.cuh"),
    ),
    ("int/store.cuh", include_str!("../kernels/int/store.cuh")),
    (
        "int/decode_for_column.cuh",
        include_str!("../kernels/int/decode_for_column.cuh"),
    ),
    (
        "int/decode_rfor_column.cuh",
        include_str!("../kernels/int/decode_rfor_column.cuh"),
    ),
    (
        "huffman/huffman.cuh",
        include_str!("../kernels/huffman/huffman.cuh"),
    ),
    ("lll/lll.cuh", include_str!("../kernels/lll/lll.cuh")),
    ("bitmap/wah.cuh", include_str!("../kernels/bitmap/wah.cuh")),
    (
        "bitmap/writer.cuh",
        include_str!("../kernels/bitmap/writer.cuh"),
    ),
    (
        "bitmap/slots.cuh",
        include_str!("../kernels/bitmap/slots.cuh"),
    ),
    (
        "bitmap/compress.cuh",
        include_str!("../kernels/bitmap/compress.cuh"),
    ),
    (
        "bitmap/convert.cuh",
        include_str!("../kernels/bitmap/convert.cuh"),
    ),
    (
        "bitmap/decompress.cuh",
        include_str!("../kernels/bitmap/decompress.cuh"),
    ),
    ("bitmap/ops.cuh", include_str!("../kernels/bitmap/ops.cuh")),
    (
        "codag/warp_decoder.cuh",
        include_str!("../kernels/codag/warp_decoder.cuh"),
    ),
    ("codag/orc.cuh", include_str!("../kernels/codag/orc.cuh")),
    (
        "codag/deflate.cuh",
        include_str!("../kernels/codag/deflate.cuh"),
    ),
    ("ssb/ops.cuh", include_str!("../kernels/ssb/ops.cuh")),
];

/// The text of an embedded header, by its path under `kernels/` (e.g. `include/common.cuh`).
pub fn header(path: &str) -> Option<&'static str> {
    HEADERS.iter().find(|(n, _)| *n == path).map(|(_, t)| *t)
}

/// `include` (the text between the quotes of an `#include`) seen from the file at `from`, both
/// relative to `kernels/`: the C preprocessor's rule for quoted includes, the including file's
/// folder first. `None` when it climbs out of `kernels/`.
fn resolve(from: &str, include: &str) -> Option<String> {
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for p in include.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
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
            Some(include) => {
                let unknown = || {
                    Error::Gpu(format!(
                        "{file}:{}: unknown kernel header \"{include}\"",
                        i + 1
                    ))
                };
                let path = resolve(file, include).ok_or_else(unknown)?;
                let text = header(&path).ok_or_else(unknown)?;
                if !seen.contains(&path) {
                    seen.push(path.clone());
                    inline(&path, text, seen, out)?;
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

type GeneratedCache = Mutex<HashMap<(String, String), Ptx>>;

/// Compiles a generated program (`text`, as if it were the file `file` under `kernels/`, so its
/// `#include`s resolve from there) for `arch`, or returns the PTX cached for the same text.
/// For kernels emitted at run time from operator headers (the SSB queries).
pub fn compile_generated(file: &str, text: &str, arch: &str) -> Result<Ptx> {
    static CACHE: OnceLock<GeneratedCache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (text.to_string(), arch.to_string());
    if let Some(ptx) = cache.lock().map_err(|_| poisoned())?.get(&key) {
        return Ok(ptx.clone());
    }
    nvrtc_available()?;
    let mut src = String::new();
    inline(file, text, &mut Vec::new(), &mut src)?;
    let opts = CompileOptions {
        options: vec![
            format!("--gpu-architecture={arch}"),
            "--std=c++17".into(),
            "-lineinfo".into(),
        ],
        name: Some(file.to_string()),
        ..Default::default()
    };
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(&src, opts).map_err(|e| match e {
        cudarc::nvrtc::CompileError::CompileError { log, .. } => Error::Gpu(format!(
            "NVRTC failed to compile {file} for {arch}:\n{}",
            log.to_string_lossy()
        )),
        other => Error::Gpu(format!("NVRTC failed on {file}: {other}")),
    })?;
    cache
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

    /// Every `.cu` file under `kernels/` is a [`Module`] and every `.cuh` file an embedded
    /// header, so NVRTC (and `tests/nvrtc_compile.rs`, which compiles `Module::ALL`) sees every
    /// kernel source there is.
    #[test]
    fn every_kernel_file_is_embedded() {
        fn walk(dir: &std::path::Path, root: &std::path::Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).expect("kernels/ readable") {
                let p = e.expect("directory entry").path();
                if p.is_dir() {
                    walk(&p, root, out);
                } else {
                    let rel = p.strip_prefix(root).expect("under kernels/");
                    out.push(rel.to_string_lossy().replace('\\', "/"));
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
        let mut files = Vec::new();
        walk(&root, &root, &mut files);
        files.sort();
        let mut embedded: Vec<String> = Module::ALL
            .iter()
            .map(|m| m.file().to_string())
            .chain(HEADERS.iter().map(|(p, _)| p.to_string()))
            .collect();
        embedded.sort();
        assert_eq!(files, embedded);
        for (path, text) in HEADERS {
            let on_disk = std::fs::read_to_string(root.join(path)).expect("header readable");
            assert_eq!(on_disk, *text, "{path}");
        }
    }

    #[test]
    fn quoted_includes_resolve_from_the_including_file() {
        assert_eq!(
            resolve("int/for.cu", "../include/common.cuh").as_deref(),
            Some("include/common.cuh")
        );
        assert_eq!(
            resolve("bitmap/ops.cuh", "wah.cuh").as_deref(),
            Some("bitmap/wah.cuh")
        );
        assert_eq!(resolve("int/for.cu", "../../x.cuh"), None);
    }
}
