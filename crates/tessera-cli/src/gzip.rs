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
//!
//! `tessera decompress --output-dir DIR [--device gpu|cpu|auto] [-f] A.gz B.gz ...`: many files,
//! each into `DIR/<its name without .gz>` ([`decompress_many`]). On `--device gpu` the files
//! are decoded together (`tessera::gpu::codag::gunzip_many`: the members of all files in one
//! launch, a warp a member; a file the GPU cannot finish decoded on the CPU), on `cpu` a file
//! per core; `auto` takes the CPU here too: on 200 files of 1-4 MiB of text the GPU command took
//! 2.5-2.7 times the CPU command (decision 0044). The files are taken in groups (at most
//! [`GROUP_FILES`] files and about [`GROUP_BYTES`] compressed bytes) so memory and open files
//! stay bounded. Every output follows the rules of one output (`files`): checked before its
//! file is decoded (an existing one needs `--force`, the input itself is refused), written
//! under a temporary name and renamed when complete. A file that fails is named on stderr
//! (`tessera: NAME: error`) and leaves no output, the others are still written, and the
//! command then fails (exit 1, `error: K of N file(s) failed`). Inputs must be named `*.gz`
//! (the output's name comes from theirs), two inputs may not share an output, and stdin is not
//! taken.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;

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

/// Files of one `--output-dir` group: decoded together (one [`codag::gunzip_many`] call),
/// their bytes and outputs held at once, so a group is bounded in files (open outputs) and in
/// compressed bytes.
const GROUP_FILES: usize = 256;
/// Compressed bytes of one group.
const GROUP_BYTES: u64 = 256 << 20;

/// The output of the gzip file `input` in `dir`: its name without `.gz`.
pub fn output_in(dir: &Path, input: &Path) -> CliResult<PathBuf> {
    match (input.file_stem(), is_gzip(input)) {
        (Some(stem), true) if !files::is_stdio(input) => Ok(dir.join(stem)),
        _ => Err(CliError(format!(
            "--output-dir takes .gz files, named so the output's name is theirs without .gz; \
             {} is not one",
            files::shown(input)
        ))),
    }
}

/// One input of `--output-dir` on its way: read, its output opened.
struct Job {
    shown: String,
    bytes: Vec<u8>,
    out: files::Output,
}

/// What became of the files of a `--output-dir` run.
#[derive(Default)]
struct Tally {
    written: usize,
    failed: usize,
    out_bytes: usize,
    gpu: codag::GunzipManyReport,
}

/// `tessera decompress --output-dir DIR A.gz B.gz ...`: every input decompressed into
/// `DIR/<its name without .gz>`. Each output is checked before its file is decoded, as a single
/// output is (an existing one needs `--force`) and written under a temporary name, renamed when
/// complete; a file that fails (cannot be read, its output refused, bad gzip data) is reported
/// with its name, leaves no output, and the others are still written. Fails (exit 1) when any
/// file failed.
pub fn decompress_many(
    inputs: &[PathBuf],
    dir: &Path,
    force: bool,
    device: DeviceArg,
) -> CliResult<()> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(CliError(format!(
                "--output-dir {} is not a folder",
                files::shown(dir)
            )))
        }
        Err(e) => return Err(CliError(format!("--output-dir {}: {e}", files::shown(dir)))),
    }
    let mut outs = Vec::with_capacity(inputs.len());
    let mut seen = std::collections::HashMap::new();
    for input in inputs {
        let out = output_in(dir, input)?;
        if let Some(first) = seen.insert(out.clone(), input) {
            return Err(CliError(format!(
                "{} and {} would both be written to {}",
                files::shown(first),
                files::shown(input),
                files::shown(&out)
            )));
        }
        outs.push(out);
    }
    let gpu = match device {
        DeviceArg::Gpu => Some(Gpu::new().map_err(|e| CliError(format!("GPU: {e}")))?),
        // As for one file: the CPU (the module docs say why).
        DeviceArg::Cpu | DeviceArg::Auto => None,
    };
    let t = Instant::now();
    let mut tally = Tally::default();
    let mut at = 0;
    while at < inputs.len() {
        let mut end = at;
        let mut bytes = 0u64;
        while end < inputs.len() && end - at < GROUP_FILES && (end == at || bytes < GROUP_BYTES) {
            bytes += std::fs::metadata(&inputs[end]).map_or(0, |m| m.len());
            end += 1;
        }
        decompress_group(
            &inputs[at..end],
            &outs[at..end],
            force,
            gpu.as_ref(),
            &mut tally,
        )?;
        at = end;
    }
    let how = match &gpu {
        Some(_) => {
            let r = tally.gpu;
            format!(
                "GPU: {} file(s) in {} batch launch(es) ({} members, {} candidate starts), {} \
                 alone in spans, {} on the CPU",
                r.batched, r.launches, r.members, r.candidates, r.alone, r.cpu
            )
        }
        None => "CPU".to_string(),
    };
    eprintln!(
        "tessera: {} of {} file(s) decompressed, {} bytes in {:.1} ms ({how})",
        tally.written,
        inputs.len(),
        tally.out_bytes,
        t.elapsed().as_secs_f64() * 1e3
    );
    if tally.failed > 0 {
        return Err(CliError(format!(
            "{} of {} file(s) failed (named above)",
            tally.failed,
            inputs.len()
        )));
    }
    Ok(())
}

/// Reports a file that failed; its output (if opened) is dropped unfinished, so nothing is left
/// under its name.
fn failed(tally: &mut Tally, e: CliError) {
    eprintln!("tessera: {}", crate::report::escape(&e.0));
    tally.failed += 1;
}

fn decompress_group(
    inputs: &[PathBuf],
    outs: &[PathBuf],
    force: bool,
    gpu: Option<&Gpu>,
    tally: &mut Tally,
) -> CliResult<()> {
    let mut jobs = Vec::with_capacity(inputs.len());
    for (input, output) in inputs.iter().zip(outs) {
        let opened = files::Input::open(input).and_then(|inp| {
            let shown = inp.shown();
            let out = files::Output::create(output, force, &[&inp], files::Data::Raw)?;
            let mut bytes = Vec::new();
            inp.reader()
                .read_to_end(&mut bytes)
                .map_err(|e| CliError(format!("cannot read {shown}: {e}")))?;
            Ok(Job { shown, bytes, out })
        });
        match opened {
            Ok(job) => jobs.push(job),
            Err(e) => failed(tally, e),
        }
    }
    let refs: Vec<&[u8]> = jobs.iter().map(|j| j.bytes.as_slice()).collect();
    let decoded = match gpu {
        Some(g) => {
            let (d, r) = codag::gunzip_many_with_report(g, &refs)
                .map_err(|e| CliError(format!("GPU: {e}")))?;
            tally.gpu += r;
            d
        }
        None => refs
            .par_iter()
            .map(|f| deflate::gzip_decompress(f, usize::MAX))
            .collect(),
    };
    drop(refs);
    for (job, data) in jobs.into_iter().zip(decoded) {
        let Job { shown, out, .. } = job;
        let written = data
            .map_err(|e| CliError(format!("{shown}: {e}")))
            .and_then(|data| {
                let mut out = out;
                out.write_all(&data)
                    .map_err(|e| CliError(format!("cannot write {}: {e}", out.shown())))?;
                out.finish()?;
                Ok(data.len())
            });
        match written {
            Ok(n) => {
                tally.written += 1;
                tally.out_bytes += n;
            }
            Err(e) => failed(tally, e),
        }
    }
    Ok(())
}
