//! `tessera decompress FILE.gz OUT [--device gpu|cpu|auto]`: a gzip file (RFC 1952, every
//! member, CRC-32 and ISIZE checked) decompressed on the GPU (`tessera::gpu::codag::gunzip`: a
//! single member of 1 MiB or more in spans, a warp per span; otherwise all members in one
//! launch) or on the CPU (`tessera::codecs::deflate`, a large single member in parallel on all
//! cores). `auto` takes the CPU: on 200 MB of text the whole GPU command (CUDA context, kernel
//! compile, output copied back) was slower than one CPU thread's, and the CPU's parallel
//! decoder is faster still (`bench/results/codag-h200.md`); `--device gpu` asks for the GPU. Where the GPU declines a
//! file (its speculative decode failed, or a member it cannot chain) the CPU decodes it, so the
//! outcome is the CPU's. The output is written under a temporary name and renamed at the end,
//! so a bad file leaves nothing under the output's name.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Instant;

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
    let gpu_result = match &gpu {
        Some(g) => {
            let t = Instant::now();
            let r = codag::gunzip(g, &bytes).map_err(fail)?;
            r.map(|(data, r)| (data, r, t.elapsed()))
        }
        None => None,
    };
    let (data, how) = match gpu_result {
        Some((data, r, took)) if r.spans > 0 => {
            let how = format!(
                "GPU: one member in {} spans ({} block candidates), {:.1} ms on the GPU path (kernel compile included)",
                r.spans,
                r.candidates,
                took.as_secs_f64() * 1e3
            );
            (data, how)
        }
        Some((data, r, _)) => (
            data,
            format!(
                "GPU: {} member(s), {} candidate start(s) decoded",
                r.members, r.candidates
            ),
        ),
        None => (
            // The output grows with what is decoded, never from a header field. Where the GPU
            // declined (a member of 4 GiB or more, one hidden by a header-like pattern, or a
            // stream its span decoder does not accept) the CPU's decode is the reference.
            deflate::gzip_decompress(&bytes, usize::MAX).map_err(fail)?,
            if gpu.is_some() {
                "CPU: the GPU declined the file".to_string()
            } else {
                "CPU".to_string()
            },
        ),
    };
    out.write_all(&data)
        .map_err(|e| CliError(format!("cannot write {}: {e}", out.shown())))?;
    out.finish()?;
    eprintln!("{shown}: {} bytes decompressed ({how})", data.len());
    Ok(())
}
