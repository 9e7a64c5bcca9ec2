//! `tessera decompress FILE.gz OUT [--device gpu|cpu|auto]`: a gzip file (RFC 1952, every
//! member, CRC-32 and ISIZE checked) decompressed on the GPU (`tessera::gpu::codag::gunzip`:
//! all members in one launch) or on the CPU (`tessera::codecs::deflate`). `auto` takes the CPU:
//! a file of one member decodes on one GPU warp, and even a file of many members costs more on
//! the GPU than on one CPU thread once the process's CUDA setup is counted
//! (`bench/results/codag-h200.md`); `--device gpu` asks for the GPU. The output
//! is written under a temporary name and renamed at the end, so a bad file leaves nothing under
//! the output's name.

use std::io::{Read, Write};
use std::path::Path;

use tessera::codecs::deflate;
use tessera::gpu::{codag, Gpu};

use crate::device::DeviceArg;
use crate::files;
use crate::{CliError, CliResult};

/// Whether `path` names a gzip file (by its extension: the input kind is picked by name, like
/// gzip's own `-d`).
pub fn is_gzip(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"))
}

/// Decompresses the gzip file `input` into `output`.
pub fn decompress(input: &Path, output: &Path, force: bool, device: DeviceArg) -> CliResult<()> {
    let inp = files::Input::open(input)?;
    let shown = inp.shown();
    let mut out = files::Output::create(output, force, &[&inp], files::Data::Raw)?;
    let mut bytes = Vec::new();
    inp.reader()
        .read_to_end(&mut bytes)
        .map_err(|e| CliError(format!("cannot read {shown}: {e}")))?;
    let fail = |e: tessera::format::Error| CliError(format!("{shown}: {e}"));
    let gpu = match device {
        DeviceArg::Cpu => None,
        DeviceArg::Gpu => Some(Gpu::new().map_err(fail)?),
        DeviceArg::Auto => None,
    };
    let (data, how) = match gpu.as_ref().map(|g| codag::gunzip(g, &bytes)) {
        Some(Ok(Some((data, r)))) => (
            data,
            format!(
                "GPU: {} member(s), {} candidate start(s) decoded",
                r.members, r.candidates
            ),
        ),
        Some(Err(e)) => return Err(fail(e)),
        Some(Ok(None)) if device == DeviceArg::Gpu => {
            return Err(CliError(format!(
                "{shown}: the GPU could not decode every member (a member of 4 GiB or more, or \
                 one hidden by a header-like pattern); use --device cpu or auto"
            )))
        }
        _ => (
            // The output grows with what is decoded, never from a header field.
            deflate::gzip_decompress(&bytes, usize::MAX).map_err(fail)?,
            "CPU".to_string(),
        ),
    };
    out.write_all(&data)
        .map_err(|e| CliError(format!("cannot write {}: {e}", out.shown())))?;
    out.finish()?;
    eprintln!("{shown}: {} bytes decompressed ({how})", data.len());
    Ok(())
}
