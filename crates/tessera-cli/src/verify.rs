//! `tessera verify FILE...` and the validation behind `inspect`: every check a reader makes
//! before trusting a file (opening a [`Container`] checks the header, footer, directory and its
//! checksum), then every chunk's payload checksum and every chunk decoded on the CPU with the
//! same decoders `decompress` uses, which check each payload header against the directory's
//! value count and the payload's own structure. Nothing is written out.
//!
//! Chunks are decoded in parallel, a batch at a time, each into its own buffer sized from the
//! directory's checked value count (at most 2^24 values a chunk), so memory stays at a few
//! chunks' raw bytes per thread whatever the file's size.

use std::path::PathBuf;

use rayon::prelude::*;
use tessera_codecs::{column, text};
use tessera_format::container::{ColumnMeta, Container};
use tessera_format::{Error, LogicalType};

use crate::files::Input;
use crate::report::escape;
use crate::{CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The .tsr files to check (`-`: stdin).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

/// Checks every chunk of every column of `c`. The error is the first damage found, naming the
/// column and chunk.
pub fn check(c: &Container) -> Result<(), String> {
    let batch = rayon::current_num_threads().max(1) * 2;
    for (ci, col) in c.columns().iter().enumerate() {
        let mut start = 0;
        while start < col.chunks.len() {
            let end = (start + batch).min(col.chunks.len());
            (start..end)
                .into_par_iter()
                .try_for_each(|k| check_chunk(c, ci, col, k))?;
            start = end;
        }
    }
    Ok(())
}

fn check_chunk(c: &Container, ci: usize, col: &ColumnMeta, k: usize) -> Result<(), String> {
    let ch = &col.chunks[k];
    let at = |e: Error| match e {
        // Says which column and chunk already.
        Error::ChecksumMismatch { .. } => e.to_string(),
        other => format!(
            "column '{}' chunk {k} ({}): {other}",
            escape(&col.name),
            ch.codec.name()
        ),
    };
    let payload = c.chunk_payload(ci, k).map_err(at)?;
    match col.logical_type.raw_len(ch.value_count as u64) {
        Some(len) => {
            let mut out = vec![0u8; len as usize];
            column::decode_values(
                col.logical_type,
                ch.codec,
                payload,
                ch.value_count as u64,
                &mut out,
            )
            .map_err(at)
        }
        None => {
            debug_assert_eq!(col.logical_type, LogicalType::Utf8);
            text::decode_utf8_chunk(ch.codec, payload, ch.value_count)
                .map(drop)
                .map_err(at)
        }
    }
}

/// The verdict on one file: `Ok` or the damage (an unreadable file counts as damaged too).
pub fn verdict(input: Input) -> Result<(), String> {
    let c = input.container().map_err(|e| e.0)?;
    check(&c)
}

/// `tessera verify`: one line per file on stdout, `FILE: ok` or `FILE: damaged: reason`; fails
/// when any file is damaged.
pub fn run(a: &VerifyArgs) -> CliResult<()> {
    let mut damaged = 0;
    let mut stdin_used = false;
    for path in &a.files {
        let (name, result) = match Input::open(path) {
            Ok(input) => {
                if input.path().is_none() {
                    if stdin_used {
                        return Err(CliError("stdin (-) can be given once".into()));
                    }
                    stdin_used = true;
                }
                (input.shown(), verdict(input))
            }
            Err(e) => (crate::files::shown(path), Err(e.0)),
        };
        match result {
            Ok(()) => println!("{name}: ok"),
            Err(reason) => {
                damaged += 1;
                // The reason often starts with the file's name already.
                let reason = reason
                    .strip_prefix(&format!("{name}: "))
                    .unwrap_or(&reason)
                    .to_owned();
                println!("{name}: damaged: {}", escape(&crate::one_line(&reason)));
            }
        }
    }
    if damaged > 0 {
        return Err(CliError(format!(
            "{damaged} of {} file{} damaged or unreadable",
            a.files.len(),
            if a.files.len() == 1 { "" } else { "s" }
        )));
    }
    Ok(())
}
