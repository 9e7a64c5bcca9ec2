//! `tessera bitmap OP A B OUTPUT` and `tessera index build|query`: bitwise operations on
//! compressed bitmap columns, and bitmap indexes over integer columns
//! (`tessera_query::index`, `docs/format/bitmap-index.md`).
//!
//! Bitmap operands are `.tsr` files whose only bits column is the operand. They must have the
//! same length. With the same chunk layout, each pair of chunks is combined on the compressed
//! words (plain chunks are compressed first), without decompressing anything; otherwise the
//! second operand's bits covering each chunk of the first are decoded and compressed in the
//! first's layout. The result is written in the first operand's flavor (WAH unless it is
//! PLWAH) and chunking.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use tessera_codecs::bitmap::ops::Op;
use tessera_codecs::bitmap::{self, Bitmap, Flavor};
use tessera_format::container::Container;
use tessera_format::{Error, LogicalType};
use tessera_query::index::{ColumnIndex, Index, Predicate};

use crate::device::DeviceArg;
use crate::files::{self, Data, Input, Output};
use crate::report::escape;
use crate::{CliError, CliResult};

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
    /// First operand (.tsr with a bits column; `-`: stdin).
    a: PathBuf,
    /// Second operand.
    b: PathBuf,
    /// The result (.tsr, one bits column named after the operation; `-`: stdout).
    output: PathBuf,
    /// Overwrite an existing output file.
    #[arg(short, long)]
    force: bool,
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
    /// A .tsr file holding the integer column to index, as FILE or FILE:COLUMN (`-`: stdin);
    /// repeat for several columns (same row count).
    #[arg(long = "column", value_name = "FILE[:COLUMN]", required = true)]
    columns: Vec<String>,
    /// Most distinct values for one bitmap per value; more get equal-frequency range bins.
    #[arg(long, default_value_t = tessera_query::index::DEFAULT_MAX_DISTINCT)]
    max_distinct: usize,
    /// Range bins when a column has more distinct values than --max-distinct.
    #[arg(long, default_value_t = tessera_query::index::DEFAULT_RANGE_BINS)]
    bins: usize,
    /// The index file to write; `-`: stdout.
    output: PathBuf,
    /// Overwrite an existing output file.
    #[arg(short, long)]
    force: bool,
}

#[derive(Debug, clap::Args)]
pub struct IndexQueryArgs {
    /// The index file; `-`: stdin.
    index: PathBuf,
    /// `x IN (...)`: [COLUMN=]V,V,... (COLUMN may be left out when the index has one column).
    /// Values may be negative (`--in -1`).
    #[arg(
        long = "in",
        value_name = "[COLUMN=]V,V,...",
        allow_hyphen_values = true
    )]
    ins: Vec<String>,
    /// `LO <= x <= HI`: [COLUMN=]LO..HI (inclusive).
    #[arg(
        long = "range",
        value_name = "[COLUMN=]LO..HI",
        allow_hyphen_values = true
    )]
    ranges: Vec<String>,
    /// Print the matching row ids, one a line, after the count.
    #[arg(long)]
    ids: bool,
}

/// The index of the bits column of `c` to operate on.
fn bits_column(c: &Container, shown: &str) -> CliResult<usize> {
    let found: Vec<usize> = (0..c.columns().len())
        .filter(|&i| c.columns()[i].logical_type == LogicalType::Bits)
        .collect();
    match found.as_slice() {
        [i] => Ok(*i),
        [] => Err(CliError(format!("{shown} has no bits column"))),
        _ => Err(CliError(format!(
            "{shown} has several bits columns; keep one per operand file"
        ))),
    }
}

/// Copies `n` bits from `src` (packed least significant bit first) starting at bit `from` into
/// `dst` starting at bit `to`. Whole bytes are copied as bytes when both starts are byte
/// aligned.
fn copy_bits(src: &[u8], from: u64, dst: &mut [u8], to: u64, n: u64) {
    let (mut from, mut to, mut n) = (from as usize, to as usize, n as usize);
    if from % 8 == 0 && to % 8 == 0 {
        let bytes = n / 8;
        dst[to / 8..to / 8 + bytes].copy_from_slice(&src[from / 8..from / 8 + bytes]);
        (from, to, n) = (from + bytes * 8, to + bytes * 8, n - bytes * 8);
    }
    for i in 0..n {
        let bit = (src[(from + i) / 8] >> ((from + i) % 8)) & 1;
        dst[(to + i) / 8] |= bit << ((to + i) % 8);
    }
}

/// Bits `start..start + n` of bits column `ci`, packed, decoded from the chunks that hold them
/// (the bounds come from the directory's checked counts).
fn bit_range(c: &Container, ci: usize, start: u64, n: u64) -> tessera_format::Result<Vec<u8>> {
    let col = &c.columns()[ci];
    let mut out = vec![0u8; n.div_ceil(8) as usize];
    let size = u64::from(col.chunk_size().unwrap_or(1).max(1));
    if n == 0 {
        return Ok(out);
    }
    for k in (start / size)..=((start + n - 1) / size) {
        let k = k as usize;
        let ch = col.chunks.get(k).ok_or_else(|| Error::CountMismatch {
            what: "bitmap chunks",
            expected: k as u64 + 1,
            found: col.chunks.len() as u64,
        })?;
        let len = u64::from(ch.value_count);
        let mut raw = vec![0u8; len.div_ceil(8) as usize];
        tessera_codecs::column::decode_values(
            LogicalType::Bits,
            ch.codec,
            c.chunk_payload(ci, k)?,
            len,
            &mut raw,
        )?;
        let first = k as u64 * size;
        let lo = start.max(first);
        let hi = (start + n).min(first + len);
        if lo < hi {
            copy_bits(&raw, lo - first, &mut out, lo - start, hi - lo);
        }
    }
    Ok(out)
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
    let bm = match Flavor::of_codec(ch.codec) {
        Some(f) => {
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
        None => {
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
    if files::is_stdio(&a.a) && files::is_stdio(&a.b) {
        return Err(CliError("only one operand can be - (stdin)".into()));
    }
    let (in_a, in_b) = (Input::open(&a.a)?, Input::open(&a.b)?);
    let (name_a, name_b) = (in_a.shown(), in_b.shown());
    let out = Output::create(&a.output, a.force, &[&in_a, &in_b], Data::Tsr)?;
    let shown_out = out.shown().to_owned();
    let to_stdout = out.is_stdout();
    let ca = in_a.container()?;
    let cb = in_b.container()?;
    let (ia, ib) = (bits_column(&ca, &name_a)?, bits_column(&cb, &name_b)?);
    let (col_a, col_b) = (&ca.columns()[ia], &cb.columns()[ib]);
    if col_a.value_count != col_b.value_count {
        return Err(CliError(format!(
            "operands differ in length: {name_a} has {} bits, {name_b} {}",
            col_a.value_count, col_b.value_count
        )));
    }
    let shape = |c: &tessera_format::container::ColumnMeta| -> Vec<u32> {
        c.chunks.iter().map(|k| k.value_count).collect()
    };
    let same_chunking = shape(col_a) == shape(col_b);
    let flavor = col_a
        .chunks
        .first()
        .and_then(|k| Flavor::of_codec(k.codec))
        .unwrap_or(Flavor::Wah);
    let size_a = u64::from(col_a.chunk_size().unwrap_or(0));
    let decoder = a.device.open()?;
    let t = Instant::now();
    let one = |k: usize| {
        let x = chunk_bitmap(&ca, ia, k, flavor)?;
        let y = if same_chunking {
            chunk_bitmap(&cb, ib, k, flavor)?
        } else {
            // B's bits under A's chunk k, compressed in A's layout.
            let n = u64::from(col_a.chunks[k].value_count);
            Bitmap::compress(flavor, &bit_range(&cb, ib, k as u64 * size_a, n)?, n)?
        };
        decoder.bitmap_op(a.op.op(), &x, &y)
    };
    // The GPU works chunk after chunk on its one stream; the CPU takes chunks in parallel.
    let results: tessera_format::Result<Vec<Bitmap>> = if decoder.gpu().is_some() {
        (0..col_a.chunks.len()).map(one).collect()
    } else {
        (0..col_a.chunks.len()).into_par_iter().map(one).collect()
    };
    let results = results.map_err(|e| CliError(format!("{name_a} {:?} {name_b}: {e}", a.op)))?;
    let elapsed = t.elapsed();
    let mut w = out.container_writer(1)?;
    let codec = flavor.codec();
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
    let (_, file_bytes) = w.finish_sized()?;
    let summary = format!(
        "{shown_out}: {} bits, {ones} set, {bytes} bytes of {} in a {file_bytes}-byte file in {:.3} s",
        col_a.value_count,
        codec.name(),
        elapsed.as_secs_f64()
    );
    if to_stdout {
        eprintln!("{summary}");
    } else {
        println!("{summary}");
    }
    eprintln!("{}", decoder.report());
    Ok(())
}

/// `FILE` or `FILE:COLUMN` (`-` or `-:COLUMN` for stdin).
fn split_column(spec: &str) -> (PathBuf, Option<String>) {
    match spec.rsplit_once(':') {
        Some((f, c))
            if !c.is_empty()
                && !c.contains('/')
                && (f == files::STDIO || Path::new(f).exists()) =>
        {
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
    let specs: Vec<(PathBuf, Option<String>)> = a.columns.iter().map(|s| split_column(s)).collect();
    if specs.iter().filter(|(p, _)| files::is_stdio(p)).count() > 1 {
        return Err(CliError(
            "only one --column can be read from - (stdin)".into(),
        ));
    }
    let inputs: Vec<Input> = specs
        .iter()
        .map(|(p, _)| Input::open(p))
        .collect::<CliResult<_>>()?;
    let out = Output::create(
        &a.output,
        a.force,
        &inputs.iter().collect::<Vec<_>>(),
        Data::Tsr,
    )?;
    // Stdout carries the index when it is the output: the report goes to stderr then.
    let to_stdout = out.is_stdout();
    let say = |line: String| {
        if to_stdout {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    };
    let mut index = Index::default();
    for (input, (_, name)) in inputs.into_iter().zip(&specs) {
        let shown = input.shown();
        let c = input.container()?;
        let ci = match name {
            Some(n) => c
                .column_by_name(n)
                .map(|(i, _)| i)
                .ok_or_else(|| CliError(format!("{shown} has no column '{}'", escape(n))))?,
            None if c.columns().len() == 1 => 0,
            None => {
                return Err(CliError(format!(
                    "{shown} has {} columns; name one as FILE:COLUMN",
                    c.columns().len()
                )))
            }
        };
        let col = &c.columns()[ci];
        if !col.logical_type.is_integer() {
            return Err(CliError(format!(
                "{shown}: column '{}' is {}, not an integer column",
                escape(&col.name),
                col.logical_type.name()
            )));
        }
        let table = tessera::TableReader::from_container(c);
        let raw = table.read_raw(ci, &mut tessera::Engine::cpu())?;
        let col = &table.columns()[ci];
        let ix = ColumnIndex::build(&col.name, col.logical_type, &raw, a.max_distinct, a.bins)?;
        if index.column(&ix.name).is_some() {
            return Err(CliError(format!(
                "two columns named '{}'",
                escape(&ix.name)
            )));
        }
        if let Some(first) = index.columns.first() {
            if first.rows != ix.rows {
                return Err(CliError(format!(
                    "column '{}' has {} rows, '{}' has {}",
                    escape(&ix.name),
                    ix.rows,
                    escape(&first.name),
                    first.rows
                )));
            }
        }
        say(format!(
            "column '{}': {} rows, {} bins ({})",
            escape(&ix.name),
            ix.rows,
            ix.bins.len(),
            if ix.is_exact() {
                "one per value"
            } else {
                "value ranges; values kept for candidate checks"
            }
        ));
        index.columns.push(ix);
    }
    let shown_out = out.shown().to_owned();
    // The bins are bits columns: format 1.1.
    let size = index.write_to(out.container_writer(1)?)?;
    say(format!(
        "{shown_out}: {size} bytes in {:.2} s",
        t.elapsed().as_secs_f64()
    ));
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
    let input = Input::open(&a.index)?;
    let shown = input.shown();
    let c = input.container()?;
    let index = Index::read(&c).map_err(|e| CliError(format!("{shown}: {e}")))?;
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
