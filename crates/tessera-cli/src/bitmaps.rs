//! `tessera bitmap OP A B OUTPUT` and `tessera index build|query`: bitwise operations on
//! compressed bitmap columns, and bitmap indexes over integer columns
//! (`tessera_query::index`, `docs/format/bitmap-index.md`).
//!
//! Bitmap operands are `.tsr` files whose (only, or `--column`) column has type bits. They must
//! have the same length and chunk layout; each pair of chunks is combined on the compressed
//! words (plain chunks are compressed first) and the result is written in the first operand's
//! flavor (WAH unless it is PLWAH), chunk for chunk, without decompressing anything.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use tessera_codecs::bitmap::ops::Op;
use tessera_codecs::bitmap::{self, Bitmap, Flavor};
use tessera_format::container::{Container, ContainerWriter};
use tessera_format::{CodecId, Error, LogicalType};
use tessera_query::index::{ColumnIndex, Index, Predicate};

use crate::device::DeviceArg;
use crate::{open_container, CliError, CliResult};

/// Operations of `tessera bitmap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OpArg {
    And,
    Or,
    Xor,
    Andnot,
}

impl OpArg {
    fn op(self) -> Op {
        match self {
            OpArg::And => Op::And,
            OpArg::Or => Op::Or,
            OpArg::Xor => Op::Xor,
            OpArg::Andnot => Op::AndNot,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct BitmapArgs {
    /// and, or, xor or andnot (A AND NOT B).
    #[arg(value_enum)]
    op: OpArg,
    /// First operand (.tsr with a bits column).
    a: PathBuf,
    /// Second operand.
    b: PathBuf,
    /// The result (.tsr, one bits column named after the operation).
    output: PathBuf,
    /// Where to compute: auto uses the GPU when one is available.
    #[arg(long, value_enum, default_value_t = DeviceArg::Auto)]
    device: DeviceArg,
}

#[derive(Debug, clap::Subcommand)]
pub enum IndexCommand {
    /// Build a bitmap index over integer columns.
    Build(IndexBuildArgs),
    /// Count (or list) the rows matching predicates ANDed across the indexed columns.
    Query(IndexQueryArgs),
}

#[derive(Debug, clap::Args)]
pub struct IndexBuildArgs {
    /// A .tsr file holding the integer column to index, as FILE or FILE:COLUMN; repeat for
    /// several columns (same row count).
    #[arg(long = "column", value_name = "FILE[:COLUMN]", required = true)]
    columns: Vec<String>,
    /// Most distinct values for one bitmap per value; more get equal-frequency range bins.
    #[arg(long, default_value_t = tessera_query::index::DEFAULT_MAX_DISTINCT)]
    max_distinct: usize,
    /// Range bins when a column has more distinct values than --max-distinct.
    #[arg(long, default_value_t = tessera_query::index::DEFAULT_RANGE_BINS)]
    bins: usize,
    /// The index file to write.
    output: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct IndexQueryArgs {
    /// The index file.
    index: PathBuf,
    /// `x IN (...)`: [COLUMN=]V,V,... (COLUMN may be left out when the index has one column).
    #[arg(long = "in", value_name = "[COLUMN=]V,V,...")]
    ins: Vec<String>,
    /// `LO <= x <= HI`: [COLUMN=]LO..HI (inclusive).
    #[arg(long = "range", value_name = "[COLUMN=]LO..HI")]
    ranges: Vec<String>,
    /// Print the matching row ids, one a line, after the count.
    #[arg(long)]
    ids: bool,
}

/// The index of the bits column of `c` to operate on.
fn bits_column(c: &Container, path: &Path) -> CliResult<usize> {
    let found: Vec<usize> = (0..c.columns().len())
        .filter(|&i| c.columns()[i].logical_type == LogicalType::Bits)
        .collect();
    match found.as_slice() {
        [i] => Ok(*i),
        [] => Err(CliError(format!("{} has no bits column", path.display()))),
        _ => Err(CliError(format!(
            "{} has several bits columns; keep one per operand file",
            path.display()
        ))),
    }
}

/// Chunk `k` of column `ci` as a compressed bitmap of `flavor`.
fn chunk_bitmap(
    c: &Container,
    ci: usize,
    k: usize,
    flavor: Flavor,
) -> tessera_format::Result<Bitmap> {
    let ch = &c.columns()[ci].chunks[k];
    let payload = c.chunk_payload(ci, k)?;
    let n = ch.value_count as u64;
    let bm = match ch.codec {
        CodecId::Wah | CodecId::Plwah => {
            let f = if ch.codec == CodecId::Wah {
                Flavor::Wah
            } else {
                Flavor::Plwah
            };
            let bm = Bitmap::from_payload(f, payload)?;
            if bm.bit_len() != n {
                return Err(Error::CountMismatch {
                    what: "bitmap bit length",
                    expected: n,
                    found: bm.bit_len(),
                });
            }
            bm
        }
        _ => {
            let mut raw = vec![0u8; n.div_ceil(8) as usize];
            tessera_codecs::column::decode_values(
                LogicalType::Bits,
                ch.codec,
                payload,
                n,
                &mut raw,
            )?;
            Bitmap::compress(flavor, &raw, n)?
        }
    };
    Ok(if bm.flavor() == flavor {
        bm
    } else {
        bitmap::plwah::convert(&bm, flavor)
    })
}

pub fn bitmap_op(a: &BitmapArgs) -> CliResult<()> {
    let ca = open_container(&a.a)?;
    let cb = open_container(&a.b)?;
    let (ia, ib) = (bits_column(&ca, &a.a)?, bits_column(&cb, &a.b)?);
    let (col_a, colb) = (&ca.columns()[ia], &cb.columns()[ib]);
    let shape = |c: &tessera_format::container::ColumnMeta| -> Vec<u32> {
        c.chunks.iter().map(|k| k.value_count).collect()
    };
    if shape(col_a) != shape(colb) {
        return Err(CliError(format!(
            "operands differ in length or chunking: {} bits in {} chunks vs {} bits in {} chunks",
            col_a.value_count,
            col_a.chunks.len(),
            colb.value_count,
            colb.chunks.len()
        )));
    }
    let flavor = if col_a
        .chunks
        .first()
        .is_some_and(|k| k.codec == CodecId::Plwah)
    {
        Flavor::Plwah
    } else {
        Flavor::Wah
    };
    let decoder = a.device.open()?;
    let t = Instant::now();
    let one = |k: usize| {
        let x = chunk_bitmap(&ca, ia, k, flavor)?;
        let y = chunk_bitmap(&cb, ib, k, flavor)?;
        decoder.bitmap_op(a.op.op(), &x, &y)
    };
    // The GPU works chunk after chunk on its one stream; the CPU takes chunks in parallel.
    let results: tessera_format::Result<Vec<Bitmap>> = if decoder.gpu().is_some() {
        (0..col_a.chunks.len()).map(one).collect()
    } else {
        (0..col_a.chunks.len()).into_par_iter().map(one).collect()
    };
    let results = results.map_err(|e| {
        CliError(format!(
            "{} {:?} {}: {e}",
            a.a.display(),
            a.op,
            a.b.display()
        ))
    })?;
    let elapsed = t.elapsed();
    let mut w = ContainerWriter::create(&a.output)?;
    let codec = if flavor == Flavor::Wah {
        CodecId::Wah
    } else {
        CodecId::Plwah
    };
    let name = format!("{:?}", a.op).to_lowercase();
    w.begin_column(&name, LogicalType::Bits, Some(codec))?;
    let mut ones = 0u64;
    let mut bytes = 0u64;
    for bm in &results {
        let mut payload = Vec::new();
        bm.write_payload(&mut payload);
        bytes += payload.len() as u64;
        ones += bitmap::ops::count_ones(bm);
        w.write_chunk(codec, bm.bit_len() as u32, &payload)?;
    }
    w.end_column()?;
    w.finish()?;
    println!(
        "{}: {} bits, {ones} set, {bytes} bytes ({}) in {:.3} s",
        a.output.display(),
        col_a.value_count,
        codec.name(),
        elapsed.as_secs_f64()
    );
    eprintln!("{}", decoder.report());
    Ok(())
}

/// `FILE` or `FILE:COLUMN`.
fn split_column(spec: &str) -> (PathBuf, Option<String>) {
    match spec.rsplit_once(':') {
        Some((f, c)) if !c.is_empty() && !c.contains('/') && Path::new(f).exists() => {
            (PathBuf::from(f), Some(c.to_owned()))
        }
        _ => (PathBuf::from(spec), None),
    }
}

pub fn index(cmd: &IndexCommand) -> CliResult<()> {
    match cmd {
        IndexCommand::Build(a) => index_build(a),
        IndexCommand::Query(a) => index_query(a),
    }
}

fn index_build(a: &IndexBuildArgs) -> CliResult<()> {
    let t = Instant::now();
    let mut index = Index::default();
    for spec in &a.columns {
        let (path, name) = split_column(spec);
        let c = open_container(&path)?;
        let ci = match &name {
            Some(n) => c
                .column_by_name(n)
                .map(|(i, _)| i)
                .ok_or_else(|| CliError(format!("{} has no column '{n}'", path.display())))?,
            None if c.columns().len() == 1 => 0,
            None => {
                return Err(CliError(format!(
                    "{} has {} columns; name one as FILE:COLUMN",
                    path.display(),
                    c.columns().len()
                )))
            }
        };
        let col = &c.columns()[ci];
        if !col.logical_type.is_integer() {
            return Err(CliError(format!(
                "{}: column '{}' is {}, not an integer column",
                path.display(),
                col.name,
                col.logical_type.name()
            )));
        }
        let table = tessera::TableReader::from_container(c);
        let raw = table.read_raw(ci, &mut tessera::Engine::cpu())?;
        let col = &table.columns()[ci];
        let ix = ColumnIndex::build(&col.name, col.logical_type, &raw, a.max_distinct, a.bins)?;
        if index.column(&ix.name).is_some() {
            return Err(CliError(format!("two columns named '{}'", ix.name)));
        }
        if let Some(first) = index.columns.first() {
            if first.rows != ix.rows {
                return Err(CliError(format!(
                    "column '{}' has {} rows, '{}' has {}",
                    ix.name, ix.rows, first.name, first.rows
                )));
            }
        }
        println!(
            "column '{}': {} rows, {} bins ({})",
            ix.name,
            ix.rows,
            ix.bins.len(),
            if ix.is_exact() {
                "one per value"
            } else {
                "value ranges; values kept for candidate checks"
            }
        );
        index.columns.push(ix);
    }
    index.write(&a.output)?;
    let size = std::fs::metadata(&a.output).map(|m| m.len()).unwrap_or(0);
    println!(
        "{}: {size} bytes in {:.2} s",
        a.output.display(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

fn parse_value(s: &str) -> CliResult<i128> {
    s.trim()
        .parse()
        .map_err(|_| CliError(format!("'{s}' is not an integer")))
}

/// Splits `[COLUMN=]REST`, defaulting to the index's only column.
fn predicate_column<'a>(index: &'a Index, spec: &'a str) -> CliResult<(&'a str, &'a str)> {
    if let Some((c, rest)) = spec.split_once('=') {
        return Ok((c, rest));
    }
    match index.columns.as_slice() {
        [only] => Ok((only.name.as_str(), spec)),
        _ => Err(CliError(format!(
            "'{spec}': the index has several columns; write COLUMN={spec}"
        ))),
    }
}

fn index_query(a: &IndexQueryArgs) -> CliResult<()> {
    let c = open_container(&a.index)?;
    let index = Index::read(&c).map_err(|e| CliError(format!("{}: {e}", a.index.display())))?;
    let mut preds: Vec<(String, Predicate)> = Vec::new();
    for spec in &a.ins {
        let (col, list) = predicate_column(&index, spec)?;
        let vals = list
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(parse_value)
            .collect::<CliResult<_>>()?;
        preds.push((col.to_owned(), Predicate::In(vals)));
    }
    for spec in &a.ranges {
        let (col, range) = predicate_column(&index, spec)?;
        let (lo, hi) = range
            .split_once("..")
            .ok_or_else(|| CliError(format!("'{range}' is not LO..HI")))?;
        preds.push((
            col.to_owned(),
            Predicate::Range(parse_value(lo)?, parse_value(hi)?),
        ));
    }
    if preds.is_empty() {
        return Err(CliError("give at least one --in or --range".into()));
    }
    let t = Instant::now();
    let refs: Vec<(&str, Predicate)> = preds.iter().map(|(c, p)| (c.as_str(), p.clone())).collect();
    let sel = index.select(&refs)?;
    let count = sel.count();
    let elapsed = t.elapsed();
    println!("{count} rows match ({:.3} ms)", elapsed.as_secs_f64() * 1e3);
    if a.ids {
        use std::io::Write as _;
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        for r in sel.row_ids() {
            writeln!(out, "{r}").map_err(|e| Error::io("cannot write row ids", e))?;
        }
    }
    Ok(())
}
