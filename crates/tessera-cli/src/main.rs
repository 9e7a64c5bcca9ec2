//! `tessera`: compress raw columns (integers, bytes, bits, lines of text) into `.tsr` files,
//! decompress them (CPU or GPU), inspect and verify files, run the built-in demo (the benchmarks
//! are the separate `tessera-bench`).
//!
//! Files are taken and given as zstd and gzip do (`files`): `-` is stdin or stdout, an existing
//! output needs `--force`, the output is never the input, and an interrupted run leaves nothing.
//!
//! Exit status: 0 on success; 1 with a single `error: ...` line on stderr for bad input, bad
//! usage or I/O failures (clap's usage errors are folded into one line and exit 1 too; `--help`
//! and `--version` exit 0). A panic (a bug) is reported the same way, as an internal error,
//! without a backtrace, and temporary files are still removed as the stack unwinds. A closed
//! stdout pipe ends the process quietly by SIGPIPE (status 141 in a shell); SIGINT, SIGTERM and
//! SIGHUP end it as they would, after removing any named temporary file.

mod bitmaps;
mod demo;
mod device;
mod files;
mod gzip;
mod orc;
mod report;
mod ssb;
mod table;
mod verify;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use tessera::{ColumnOptions, TableReader, TableWriter};
use tessera_codecs::column::CodecOptions;
use tessera_codecs::lll::{self, SEGMENT_SIZES};
use tessera_format::container::{Container, VARYING_UTF8_CHUNKS_MINOR};
use tessera_format::{CodecId, LogicalType, MAX_CHUNK_VALUES};

use device::DeviceArg;

/// A failure reported to the user as one line: `error: {0}`.
#[derive(Debug)]
pub struct CliError(pub String);

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<tessera_format::Error> for CliError {
    fn from(e: tessera_format::Error) -> Self {
        CliError(e.to_string())
    }
}

/// Result of the CLI layer.
pub type CliResult<T> = Result<T, CliError>;

/// Inputs over this size get a progress bar (when stderr is a terminal).
const PROGRESS_MIN_BYTES: u64 = 100 << 20;

#[derive(Debug, Parser)]
#[command(
    name = "tessera",
    version,
    about = "GPU/CPU compression for analytical columns: integers, bytes, bits and text (.tsr files)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Compress raw little-endian values into a .tsr file.
    Compress(CompressArgs),
    /// Decompress a .tsr column back to raw little-endian values.
    Decompress(DecompressArgs),
    /// Describe the columns of a .tsr file (after checking every chunk).
    Inspect(InspectArgs),
    /// Check .tsr files: every checksum, every chunk decoded; one verdict line per file.
    Verify(verify::VerifyArgs),
    /// Compress and decompress built-in data sets, verify them and print a table.
    Demo(demo::DemoArgs),
    /// AND / OR / XOR / AND-NOT of two compressed bitmaps, without decompressing them.
    Bitmap(bitmaps::BitmapArgs),
    /// Bitmap indexes over integer columns: build, and query with IN and range predicates.
    #[command(subcommand)]
    Index(bitmaps::IndexCommand),
    /// The Star Schema Benchmark: generate its tables, run its 13 queries (CPU or GPU).
    #[command(subcommand)]
    Ssb(ssb::SsbCommand),
}

/// Logical types accepted by `--type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TypeArg {
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    /// Any bytes (codecs plain, huffman, lll).
    Bytes,
    /// A bitmap, packed least significant bit first (codecs plain, wah, plwah; see --bits).
    Bits,
    /// Strings, one per line (codecs plain, huffman, lll for the text; offsets are DFOR).
    Utf8,
}

impl TypeArg {
    fn logical(self) -> LogicalType {
        match self {
            TypeArg::U8 => LogicalType::U8,
            TypeArg::U16 => LogicalType::U16,
            TypeArg::U32 => LogicalType::U32,
            TypeArg::U64 => LogicalType::U64,
            TypeArg::I8 => LogicalType::I8,
            TypeArg::I16 => LogicalType::I16,
            TypeArg::I32 => LogicalType::I32,
            TypeArg::I64 => LogicalType::I64,
            TypeArg::Bytes => LogicalType::Bytes,
            TypeArg::Bits => LogicalType::Bits,
            TypeArg::Utf8 => LogicalType::Utf8,
        }
    }
}

/// `--codec`: `auto` (the smallest payload, chosen per chunk among the type's codecs) or the
/// name of a registered codec (`tessera_codecs::codec::REGISTRY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CodecArg(Option<CodecId>);

impl CodecArg {
    fn codec(self) -> Option<CodecId> {
        self.0
    }
}

fn parse_codec(s: &str) -> Result<CodecArg, String> {
    if s == "auto" {
        return Ok(CodecArg(None));
    }
    let registry = &tessera::codecs::codec::REGISTRY;
    registry
        .iter()
        .find(|c| c.name() == s)
        .map(|c| CodecArg(Some(c.id())))
        .ok_or_else(|| {
            let names: Vec<&str> = registry.iter().map(|c| c.name()).collect();
            format!("unknown codec '{s}' (auto, {})", names.join(", "))
        })
}

/// `--lll-parse` (`lll::Parse`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ParseArg {
    /// The fewest bytes.
    Smallest,
    /// No 2-byte copies or runs: fewer words to decode.
    FastDecode,
}

impl ParseArg {
    pub(crate) fn parse(self) -> lll::Parse {
        match self {
            ParseArg::Smallest => lll::Parse::Smallest,
            ParseArg::FastDecode => lll::Parse::FastDecode,
        }
    }
}

/// Parses `--chunk-values`: a multiple of 512 in `512..=2^24`.
fn parse_chunk_values(s: &str) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    if n == 0 || n % 512 != 0 || n > MAX_CHUNK_VALUES as usize {
        return Err(format!(
            "{n} is not a multiple of 512 in 512..={MAX_CHUNK_VALUES}"
        ));
    }
    Ok(n)
}

#[derive(Debug, clap::Args)]
struct CompressArgs {
    /// Logical type of the input values (raw input; not for a table: Parquet, Arrow, CSV).
    #[arg(long = "type", value_enum, value_name = "TYPE")]
    ty: Option<TypeArg>,
    /// The input is a table of this format (default: from its extension: .parquet, .arrow,
    /// .feather, .csv); every column goes into the .tsr file.
    #[arg(long, value_enum, value_name = "FORMAT")]
    format: Option<table::TableFormat>,
    /// With a table: only these columns, in this order (comma-separated names).
    #[arg(long, value_name = "A,B")]
    columns: Option<String>,
    /// Codec: auto (the smallest per chunk among the type's codecs: integers for, dfor, rfor,
    /// plain; bytes and utf8 lll, huffman, plain; bits wah, plwah, plain) or one of for, dfor,
    /// rfor, plain, wah, plwah, huffman, lll.
    #[arg(long, default_value = "auto", value_parser = parse_codec, value_name = "CODEC")]
    codec: CodecArg,
    /// Values per chunk (a multiple of 512, at most 2^24).
    #[arg(long, default_value = "1048576", value_parser = parse_chunk_values)]
    chunk_values: usize,
    /// Column name (default: the input file's stem).
    #[arg(long)]
    name: Option<String>,
    /// With --type bits: the bitmap's length in bits (default: 8 × the input's bytes). The input
    /// must be exactly ceil(N / 8) bytes, its padding bits zero.
    #[arg(long, value_name = "N")]
    bits: Option<u64>,
    /// With --type bytes or utf8, codec lll or auto: LLL's segment size, 512 (the default: the
    /// best ratio), 1024, 2048 or 4096 (faster GPU decoding, lower ratio on images and text).
    #[arg(long, value_name = "N")]
    segment_bytes: Option<usize>,
    /// With --type bytes or utf8, codec lll or auto: what LLL's parse minimizes. `smallest` (the
    /// default) writes the fewest bytes; `fast-decode` writes no 2-byte copies or runs, a few
    /// percent more bytes for fewer words to decode (docs/format/lll.md §9).
    #[arg(long, value_enum, value_name = "PARSE")]
    lll_parse: Option<ParseArg>,
    /// Overwrite an existing output file.
    #[arg(short, long)]
    force: bool,
    /// Raw little-endian values (bytes: any file; bits: packed bits; utf8: one string a line);
    /// `-`: stdin.
    input: PathBuf,
    /// The .tsr file to write; `-`: stdout.
    output: PathBuf,
}

#[derive(Debug, clap::Args)]
struct DecompressArgs {
    /// Where to decode: auto uses the GPU when one is available, else the CPU.
    #[arg(long, value_enum, default_value_t = DeviceArg::Auto)]
    device: DeviceArg,
    /// Column to write (needed when the file has several).
    #[arg(long)]
    column: Option<String>,
    /// Write the file's table as this format (default: from the output's extension: .parquet,
    /// .arrow, .feather, .csv).
    #[arg(long, value_enum, value_name = "FORMAT")]
    format: Option<table::TableFormat>,
    /// With a table output: only these columns, in this order (comma-separated names).
    #[arg(long, value_name = "A,B")]
    columns: Option<String>,
    /// Overwrite an existing output file.
    #[arg(short, long)]
    force: bool,
    /// Decompress every .gz file given into this folder, each as its name without .gz (on the
    /// GPU: all in one batch); the positional arguments are then all .gz inputs.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["column", "format", "columns"])]
    output_dir: Option<PathBuf>,
    /// The .tsr file (or a gzip file, by its .gz extension); `-`: stdin.
    input: PathBuf,
    /// Raw little-endian values out (bits: packed bits; utf8: one string a line); `-`: stdout.
    /// With --output-dir: a second .gz input.
    #[arg(required_unless_present = "output_dir")]
    output: Option<PathBuf>,
    /// With --output-dir: more .gz inputs.
    #[arg(requires = "output_dir")]
    more: Vec<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct InspectArgs {
    /// The .tsr file; `-`: stdin.
    file: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Report a damaged file too, followed by the verdict `FILE: ok` or `FILE: damaged: ...`
    /// (exit status 1 when damaged); without it a damaged file is an error.
    #[arg(long)]
    verify: bool,
}

fn main() -> ExitCode {
    install_panic_reporter();
    files::install_signal_handling();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e),
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(cli))) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("error: {}", report::escape(&one_line(&e.0)));
            ExitCode::FAILURE
        }
        // The panic reporter already printed the message.
        Err(_) => ExitCode::FAILURE,
    }
}

/// Help and version go to stdout with status 0; every other clap error becomes one line, status 1.
fn clap_exit(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            eprintln!(
                "error: missing subcommand (compress, decompress, inspect, verify, demo, bitmap or index; see 'tessera --help')"
            );
            ExitCode::FAILURE
        }
        _ => {
            let text = e.to_string();
            let lines: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| {
                    !l.is_empty()
                        && !l.starts_with("Usage:")
                        && !l.starts_with("For more information")
                })
                .collect();
            let msg = lines.join(" ");
            let msg = msg.strip_prefix("error: ").unwrap_or(&msg);
            eprintln!("error: {msg} (see 'tessera --help')");
            ExitCode::FAILURE
        }
    }
}

/// Folds a message onto one line (OS and codec messages should not contain newlines, but a
/// second line would break the one-line contract).
pub(crate) fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Reports a panic as `error: internal error: ...` (once, without a backtrace); `main` turns it
/// into exit status 1 after unwinding has removed temporary files.
fn install_panic_reporter() {
    static REPORTED: AtomicBool = AtomicBool::new(false);
    std::panic::set_hook(Box::new(|info| {
        if REPORTED.swap(true, Ordering::SeqCst) {
            return;
        }
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown cause".into());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!(
            "error: internal error (a bug in tessera): {}{at}",
            one_line(&msg)
        );
    }));
}

fn run(cli: Cli) -> CliResult<()> {
    match cli.command {
        Command::Compress(a) => compress(&a),
        Command::Decompress(a) => decompress(&a),
        Command::Inspect(a) => inspect(&a),
        Command::Verify(a) => verify::run(&a),
        Command::Demo(a) => demo::run(&a),
        Command::Bitmap(a) => bitmaps::bitmap_op(&a),
        Command::Index(c) => bitmaps::index(&c),
        Command::Ssb(c) => ssb::run(&c),
    }
}

/// A progress bar on stderr for `total` bytes, or a hidden one for small inputs and when stderr
/// is not a terminal.
fn progress_bar(total: u64, verb: &str) -> ProgressBar {
    if total < PROGRESS_MIN_BYTES || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template(
        "{msg} {wide_bar} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
    ) {
        pb.set_style(style);
    }
    pb.set_message(verb.to_owned());
    pb
}

fn compress(a: &CompressArgs) -> CliResult<()> {
    let table_format = a.format.or_else(|| {
        a.ty.is_none()
            .then(|| table::TableFormat::of_path(&a.input))
            .flatten()
            .or_else(|| {
                (a.ty.is_none() && orc::is_orc(&a.input)).then_some(table::TableFormat::Orc)
            })
    });
    if let Some(format) = table_format {
        if a.ty.is_some() {
            return Err(CliError(
                "--type applies to raw input, not to a table".into(),
            ));
        }
        return table::compress(&table::CompressTable {
            input: &a.input,
            output: &a.output,
            format,
            columns: table::column_list(&a.columns),
            chunk_rows: a.chunk_values,
            force: a.force,
        });
    }
    if a.columns.is_some() {
        return Err(CliError(
            "--columns applies to a table input (Parquet, Arrow, CSV)".into(),
        ));
    }
    let ty = a
        .ty
        .ok_or_else(|| CliError("--type is needed for raw input (or give a .parquet, .arrow, .feather or .csv table)".into()))?
        .logical();
    let input = files::Input::open(&a.input)?;
    let input_len = input.regular_len();
    if a.bits.is_some() && ty != LogicalType::Bits {
        return Err(CliError("--bits applies to --type bits only".into()));
    }
    if let Some(c) = a.codec.codec().filter(|c| !c.supports(ty)) {
        return Err(CliError(format!(
            "codec {} does not apply to --type {}",
            c.name(),
            ty.name()
        )));
    }
    // LLL's encoder options apply where LLL may write the chunks: bytes and utf8 columns, with
    // codec lll or auto.
    for (flag, given) in [
        ("--segment-bytes", a.segment_bytes.is_some()),
        ("--lll-parse", a.lll_parse.is_some()),
    ] {
        if !given {
            continue;
        }
        if !matches!(ty, LogicalType::Bytes | LogicalType::Utf8) {
            return Err(CliError(format!(
                "{flag} applies to --type bytes and utf8 only"
            )));
        }
        if a.codec.codec().is_some_and(|c| c != CodecId::Lll) {
            return Err(CliError(format!(
                "{flag} applies to --codec lll or auto only"
            )));
        }
    }
    if let Some(n) = a.segment_bytes.filter(|n| !SEGMENT_SIZES.contains(n)) {
        return Err(CliError(format!(
            "--segment-bytes must be 512, 1024, 2048 or 4096, not {n}"
        )));
    }
    let bit_len = match (ty, a.bits, input_len) {
        (LogicalType::Bits, Some(n), _) => Some(n),
        (LogicalType::Bits, None, Some(len)) => Some(len * 8),
        (LogicalType::Bits, None, None) => {
            return Err(CliError(
                "--type bits from a pipe needs --bits N (the bitmap's length)".into(),
            ))
        }
        _ => None,
    };
    if let (Some(n), Some(len)) = (bit_len, input_len) {
        if len != n.div_ceil(8) {
            return Err(CliError(format!(
                "{} is {len} bytes, but a bitmap of {n} bits takes {}",
                input.shown(),
                n.div_ceil(8)
            )));
        }
    }
    // Check the length up front for regular files (the stream check covers pipes).
    if let Some(len) = input_len.filter(|len| len % ty.width() as u64 != 0) {
        return Err(CliError(format!(
            "{} is {len} bytes, not a whole number of {}-byte {} values",
            input.shown(),
            ty.width(),
            ty.name()
        )));
    }
    let name = match (&a.name, input.path()) {
        (Some(n), _) => n.clone(),
        (None, Some(path)) => path
            .file_stem()
            .map_or("values".into(), |s| s.to_string_lossy().into_owned()),
        (None, None) => "values".into(),
    };
    let opts = ColumnOptions {
        codec: a.codec.codec(),
        chunk_values: a.chunk_values,
        batch_chunks: tessera::default_batch_chunks(),
        codec_options: CodecOptions {
            lll_segment_bytes: a.segment_bytes.unwrap_or(lll::DEFAULT_SEGMENT_BYTES),
            lll_parse: a.lll_parse.map_or(lll::Parse::Smallest, ParseArg::parse),
        },
    };
    let t = Instant::now();
    let output = files::Output::create(&a.output, a.force, &[&input], files::Data::Tsr)?;
    let (shown_in, shown_out, to_stdout) =
        (input.shown(), output.shown().to_owned(), output.is_stdout());
    // A stream's header is written first: it says the version this column needs (utf8 chunks
    // are cut by bytes too, so they may hold different counts: format 1.2).
    let minor = ty
        .min_minor()
        .max(a.codec.codec().map_or(0, |c| c.min_minor()))
        .max(if ty == LogicalType::Utf8 {
            VARYING_UTF8_CHUNKS_MINOR
        } else {
            0
        });
    let mut table = TableWriter::from_container_writer(output.container_writer(minor)?);
    let pb = progress_bar(input_len.unwrap_or(0), "compressing");
    let reader = input.reader();
    let tick = |n: u64| pb.inc(n);
    let stats = match ty {
        LogicalType::Utf8 => table.utf8_column(&name, opts).and_then(|mut c| {
            c.push_lines(reader, tick)?;
            c.finish()
        }),
        LogicalType::Bits => table
            .bits_column(&name, bit_len.unwrap_or(0), opts)
            .and_then(|mut c| {
                c.push_reader(reader, tick)?;
                c.finish()
            }),
        _ => table.column(&name, ty, opts).and_then(|mut c| {
            c.push_reader(reader, tick)?;
            c.finish()
        }),
    }
    .map_err(|e| CliError(format!("{shown_in}: {e}")))?;
    let written = table.finish()?;
    let (dir, file_bytes) = (written.directory, written.file_bytes);
    pb.finish_and_clear();
    let col = dir
        .columns
        .first()
        .ok_or_else(|| CliError("no column was written".into()))?;
    let summary = format!(
        "{shown_out}: {}, {} -> {file_bytes} bytes ({:.3} bits/value, {}) in {:.2} s",
        report::count_of(ty, stats.values),
        stats.raw_bytes,
        report::bits_per_value(stats.compressed_bytes, stats.values),
        report::codec_summary(col),
        t.elapsed().as_secs_f64()
    );
    // Stdout carries the data when it is the output.
    if to_stdout {
        eprintln!("{summary}");
    } else {
        println!("{summary}");
    }
    Ok(())
}

/// The index of the column to decode: the one named, or the only one.
fn choose_column(c: &Container, shown: &str, column: Option<&str>) -> CliResult<usize> {
    match column {
        Some(name) => c
            .column_by_name(name)
            .map(|(i, _)| i)
            .ok_or_else(|| CliError(format!("{shown} has no column '{}'", report::escape(name)))),
        None => match c.columns().len() {
            1 => Ok(0),
            0 => Err(CliError(format!("{shown} has no columns"))),
            n => {
                let names: Vec<String> = c
                    .columns()
                    .iter()
                    .map(|c| report::escape(&c.name))
                    .collect();
                Err(CliError(format!(
                    "{shown} has {n} columns ({}); choose one with --column",
                    names.join(", ")
                )))
            }
        },
    }
}

fn decompress(a: &DecompressArgs) -> CliResult<()> {
    let output = match (&a.output_dir, &a.output) {
        (Some(dir), _) => {
            let inputs: Vec<PathBuf> = std::iter::once(&a.input)
                .chain(&a.output)
                .chain(&a.more)
                .cloned()
                .collect();
            return gzip::decompress_many(&inputs, dir, a.force, a.device);
        }
        (None, Some(output)) => output,
        (None, None) => {
            return Err(CliError(
                "decompress needs an OUTPUT (or --output-dir DIR with .gz inputs)".into(),
            ))
        }
    };
    if gzip::is_gzip(&a.input) {
        return gzip::decompress(&a.input, output, a.force, a.device);
    }
    if orc::is_orc(&a.input) {
        let format = a
            .format
            .or_else(|| table::TableFormat::of_path(output))
            .ok_or_else(|| {
                CliError("an ORC file decompresses to a table: .parquet, .arrow or .csv".into())
            })?;
        return orc::decompress(
            &a.input,
            output,
            format,
            table::column_list(&a.columns),
            a.force,
            a.device,
        );
    }
    if let Some(format) = a.format.or_else(|| table::TableFormat::of_path(output)) {
        if a.column.is_some() {
            return Err(CliError(
                "--column writes one raw column; a table output takes --columns".into(),
            ));
        }
        let engine = a.device.open()?;
        return table::decompress(
            &a.input,
            output,
            format,
            table::column_list(&a.columns),
            a.force,
            engine,
        );
    }
    if a.columns.is_some() {
        return Err(CliError(
            "--columns applies to a table output (.parquet, .arrow, .csv)".into(),
        ));
    }
    let input = files::Input::open(&a.input)?;
    let shown_in = input.shown();
    let mut out = files::Output::create(output, a.force, &[&input], files::Data::Raw)?;
    let c = input.container()?;
    let ci = choose_column(&c, &shown_in, a.column.as_deref())?;
    let mut engine = a.device.open()?;
    let pb = progress_bar(report::raw_bytes(&c, ci), "decompressing");
    let table = TableReader::from_container(c);
    table
        .write_column(ci, &mut out, &mut engine, |n| pb.inc(n))
        .map_err(|e| CliError(format!("{shown_in}: {e}")))?;
    out.finish()?;
    pb.finish_and_clear();
    eprintln!("{}", engine.report());
    Ok(())
}

fn inspect(a: &InspectArgs) -> CliResult<()> {
    let input = files::Input::open(&a.file)?;
    let shown = input.shown();
    let c = input.container()?;
    // What inspect reports comes from the directory; it is only reported as the file's content
    // once every chunk agrees with it.
    let verdict = verify::check(&c);
    if let (Err(reason), false) = (&verdict, a.verify) {
        return Err(CliError(format!(
            "{shown}: damaged: {reason} ('tessera inspect --verify' shows what its directory says)"
        )));
    }
    let verdict_line = match &verdict {
        Ok(()) => format!("{shown}: ok"),
        Err(reason) => format!("{shown}: damaged: {}", report::escape(&one_line(reason))),
    };
    let (major, minor) = c.version();
    if a.json {
        let columns: Vec<serde_json::Value> = c
            .columns()
            .iter()
            .enumerate()
            .map(|(ci, col)| {
                let mix: serde_json::Map<String, serde_json::Value> =
                    col.codec_mix().iter().map(|(k, v)| (k.name().to_owned(), (*v).into())).collect();
                serde_json::json!({
                    "name": col.name,
                    "type": col.logical_type.name(),
                    "codec": col.requested_codec_name(),
                    "chunk_codecs": mix,
                    "values": col.value_count,
                    "uncompressed_bytes": report::raw_bytes(&c, ci),
                    "compressed_bytes": col.compressed_bytes(),
                    "bits_per_value": report::bits_per_value(col.compressed_bytes(), col.value_count),
                    "chunks": col.chunks.len(),
                    "chunk_values": col.chunk_size().unwrap_or(0),
                })
            })
            .collect();
        let mut doc = serde_json::json!({
            "file": shown,
            "version": format!("{major}.{minor}"),
            "file_bytes": c.file_len(),
            "columns": columns,
        });
        if let Some(t) = table::schema_json(&c) {
            doc["table"] = t;
        }
        if a.verify {
            doc["verdict"] = match &verdict {
                Ok(()) => "ok".into(),
                Err(reason) => format!("damaged: {reason}").into(),
            };
        }
        let text = serde_json::to_string_pretty(&doc)
            .map_err(|e| CliError(format!("cannot format JSON: {e}")))?;
        println!("{text}");
    } else {
        print_inspect_table(&c, &shown);
        for line in table::schema_lines(&c) {
            println!("{line}");
        }
        if a.verify {
            println!("{verdict_line}");
        }
    }
    verdict.map_err(|_| CliError(format!("{shown} is damaged")))
}

fn print_inspect_table(c: &Container, shown: &str) {
    let (major, minor) = c.version();
    println!(
        "{shown}: format {major}.{minor}, {} bytes, {} column{}",
        c.file_len(),
        c.columns().len(),
        if c.columns().len() == 1 { "" } else { "s" }
    );
    let rows: Vec<Vec<String>> = c
        .columns()
        .iter()
        .enumerate()
        .map(|(ci, col)| {
            vec![
                report::escape(&col.name),
                col.logical_type.name().to_owned(),
                report::codec_summary(col),
                col.value_count.to_string(),
                report::raw_bytes(c, ci).to_string(),
                col.compressed_bytes().to_string(),
                format!(
                    "{:.3}",
                    report::bits_per_value(col.compressed_bytes(), col.value_count)
                ),
                col.chunks.len().to_string(),
            ]
        })
        .collect();
    let headers = [
        "column",
        "type",
        "codec",
        "values",
        "uncompressed",
        "compressed",
        "bits/value",
        "chunks",
    ];
    print!(
        "{}",
        report::table(
            &headers,
            &[
                "values",
                "uncompressed",
                "compressed",
                "bits/value",
                "chunks"
            ],
            &rows
        )
    );
}
