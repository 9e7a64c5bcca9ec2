//! ORC files in: `tessera compress data.orc out.tsr` (through the table writer, as Parquet
//! input) and `tessera decompress data.orc out.parquet|out.arrow|out.csv [--device cpu|gpu|auto]`
//! (through the table writers of `table.rs`). An input is ORC by its `.orc` extension or its
//! `ORC` magic. `--device gpu` decodes the file's compression chunks and integer streams on the
//! GPU (`tessera_orc::gpu`); `auto` uses the GPU when one opens, else the CPU.

use std::io::Read;
use std::path::Path;

use tessera::gpu::Gpu;
use tessera_orc::{OrcFile, OrcReader};

use crate::device::DeviceArg;
use crate::table::{TableFormat, TableSink};
use crate::{files, CliError, CliResult};

/// Whether `path` names an ORC file: by extension, else (a regular file only: a FIFO's bytes
/// must not be consumed by a peek) by its first three bytes.
pub fn is_orc(path: &Path) -> bool {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("orc"))
    {
        return true;
    }
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut magic = [0u8; 3];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && tessera_orc::is_orc(&magic)
}

/// Opens an ORC file for reading (its tail checked).
pub fn open(path: &Path, shown: &str) -> CliResult<OrcFile> {
    OrcFile::open(path).map_err(|e| CliError(format!("{shown}: {e}")))
}

/// The selected columns' batches decoded on the CPU.
pub fn batches(
    f: &OrcFile,
    columns: Option<&[String]>,
    shown: &str,
) -> CliResult<(arrow_schema::SchemaRef, Vec<arrow_array::RecordBatch>)> {
    let r = OrcReader::new(f, columns).map_err(|e| CliError(format!("{shown}: {e}")))?;
    let b = r
        .read_all()
        .map_err(|e| CliError(format!("{shown}: {e}")))?;
    Ok((r.schema(), b))
}

/// `tessera decompress IN.orc TABLE`.
pub fn decompress(
    input: &Path,
    output: &Path,
    format: TableFormat,
    columns: Option<Vec<String>>,
    force: bool,
    device: DeviceArg,
) -> CliResult<()> {
    let inp = files::Input::open(input)?;
    let shown = inp.shown();
    let path = inp
        .path()
        .ok_or_else(|| CliError("an ORC file is read from a file, not stdin".into()))?
        .to_path_buf();
    let f = open(&path, &shown)?;
    let fail = |e: tessera_orc::OrcError| CliError(format!("{shown}: {e}"));
    let r = OrcReader::new(&f, columns.as_deref()).map_err(fail)?;
    let gpu = match device {
        DeviceArg::Cpu => None,
        DeviceArg::Gpu => Some(Gpu::new().map_err(|e| CliError(format!("{shown}: {e}")))?),
        DeviceArg::Auto => Gpu::new().ok(),
    };
    // Everything is decoded before the output is created: a bad file leaves nothing behind.
    let (batches, how) = match &gpu {
        Some(g) => {
            let (b, rep) = tessera_orc::gpu::read_batches(g, &r).map_err(fail)?;
            let how = format!(
                "GPU: {} Deflate, {} byte-RLE, {} RLE v1, {} RLE v2 chunks",
                rep.deflate_chunks,
                rep.present_chunks + rep.byte_rle_chunks,
                rep.rle_v1_chunks,
                rep.rle_v2_chunks
            );
            (b, how)
        }
        None => (r.read_all().map_err(fail)?, "CPU".to_string()),
    };
    let out = files::Output::create(output, force, &[&inp], files::Data::Raw)?;
    let mut sink = TableSink::new(format, out, r.schema(), &shown)?;
    let mut rows = 0;
    for b in &batches {
        sink.write(b)?;
        rows += b.num_rows();
    }
    sink.finish()?;
    eprintln!(
        "{shown}: {rows} rows, {} columns, {} stripes decoded ({how})",
        r.schema().fields().len(),
        batches.len()
    );
    Ok(())
}
