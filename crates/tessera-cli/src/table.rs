//! Tables in and out: Parquet, Arrow IPC (`.arrow`, `.feather`) and CSV files to a `.tsr` table
//! and back, through Arrow record batches (`tessera::arrow`, `docs/format/table.md`).
//!
//! Both directions stream a record batch at a time; the output is written through the same
//! temporary-then-rename path as every other output, so a failure (a corrupt input, a CSV row
//! that does not parse, a type tessera cannot store) leaves no output file.

use std::fs::File;
use std::io::{BufReader, IsTerminal, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Schema, SchemaRef};
use clap::ValueEnum;
use indicatif::{ProgressBar, ProgressStyle};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use tessera::arrow::{ArrowTableReader, ArrowTableWriter, ArrowWriteOptions};
use tessera::{Engine, TableReader};
use tessera_format::container::Container;
use tessera_format::table::{Role, RUNS_MINOR};

use crate::{files, report, CliError, CliResult};

/// Rows a record batch holds when reading CSV and writing outputs.
const BATCH_ROWS: usize = 64 * 1024;
/// Records read to infer a CSV file's schema.
const CSV_INFER_RECORDS: usize = 10_000;
/// Inputs over this size get a progress bar (when stderr is a terminal).
const PROGRESS_MIN_BYTES: u64 = 100 << 20;

/// A table file format (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TableFormat {
    /// Apache Parquet.
    Parquet,
    /// Arrow IPC file (Feather v2) or stream.
    Arrow,
    /// Comma-separated values with a header line.
    Csv,
    /// Apache ORC (input only: `crate::orc`).
    Orc,
}

impl TableFormat {
    /// The format a file name's extension says, if it names one.
    pub fn of_path(p: &Path) -> Option<TableFormat> {
        let ext = p.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "parquet" | "pq" => TableFormat::Parquet,
            "arrow" | "feather" | "ipc" | "arrows" => TableFormat::Arrow,
            "csv" => TableFormat::Csv,
            "orc" => TableFormat::Orc,
            _ => return None,
        })
    }
}

/// `--columns a,b` as names.
pub fn column_list(s: &Option<String>) -> Option<Vec<String>> {
    s.as_ref()
        .map(|s| s.split(',').map(|c| c.trim().to_owned()).collect())
}

fn arrow_cli(shown: &str, e: ArrowError) -> CliError {
    CliError(format!("{shown}: {e}"))
}

fn progress(input_len: u64, verb: &str) -> ProgressBar {
    if input_len < PROGRESS_MIN_BYTES || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new_spinner();
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} {msg} {pos} rows {per_sec} {elapsed}")
    {
        pb.set_style(style);
    }
    pb.set_message(verb.to_owned());
    pb
}

/// Record batches of an input table file.
type Batches = Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>>>;

/// Opens a table file: its schema and its batches.
fn open_table(path: &Path, format: TableFormat, shown: &str) -> CliResult<(SchemaRef, Batches)> {
    let file = File::open(path).map_err(|e| CliError(format!("cannot open {shown}: {e}")))?;
    match format {
        TableFormat::Parquet => {
            let b = ParquetRecordBatchReaderBuilder::try_new(file)
                .map_err(|e| CliError(format!("{shown}: not a readable Parquet file: {e}")))?
                .with_batch_size(BATCH_ROWS);
            let r = b.build().map_err(|e| CliError(format!("{shown}: {e}")))?;
            Ok((r.schema(), Box::new(r)))
        }
        TableFormat::Arrow => {
            let mut f = file;
            let mut magic = [0u8; 6];
            let is_file = f.read_exact(&mut magic).is_ok() && &magic == b"ARROW1";
            f.seek(SeekFrom::Start(0))
                .map_err(|e| CliError(format!("{shown}: {e}")))?;
            if is_file {
                let r = arrow_ipc::reader::FileReader::try_new(BufReader::new(f), None).map_err(
                    |e| CliError(format!("{shown}: not a readable Arrow IPC file: {e}")),
                )?;
                Ok((r.schema(), Box::new(r)))
            } else {
                let r = arrow_ipc::reader::StreamReader::try_new(BufReader::new(f), None).map_err(
                    |e| {
                        CliError(format!(
                            "{shown}: not a readable Arrow IPC file or stream: {e}"
                        ))
                    },
                )?;
                Ok((r.schema(), Box::new(r)))
            }
        }
        TableFormat::Orc => {
            let f = crate::orc::open(path, shown)?;
            let (schema, b) = crate::orc::batches(&f, None, shown)?;
            Ok((schema, Box::new(b.into_iter().map(Ok))))
        }
        TableFormat::Csv => {
            use arrow_csv::reader::Format;
            let fmt = Format::default().with_header(true);
            let mut f = file;
            let (schema, _) = fmt
                .infer_schema(BufReader::new(&mut f), Some(CSV_INFER_RECORDS))
                .map_err(|e| CliError(format!("{shown}: {e}")))?;
            f.seek(SeekFrom::Start(0))
                .map_err(|e| CliError(format!("{shown}: {e}")))?;
            let schema = Arc::new(schema);
            let r = arrow_csv::ReaderBuilder::new(schema.clone())
                .with_format(fmt)
                .with_batch_size(BATCH_ROWS)
                .build(BufReader::new(f))
                .map_err(|e| CliError(format!("{shown}: {e}")))?;
            Ok((schema, Box::new(r)))
        }
    }
}

/// arrow-csv names a bad value's column by index ("for column 3"): add its name.
fn name_csv_column(msg: &str, schema: &Schema) -> String {
    for (i, f) in schema.fields().iter().enumerate() {
        let at = format!("for column {i} ");
        if msg.contains(&at) {
            return msg.replacen(
                &at,
                &format!("for column {i} ('{}') ", report::escape(f.name())),
                1,
            );
        }
    }
    msg.to_owned()
}

/// The indices of `names` in `schema` (all fields without a list).
fn projection(
    schema: &Schema,
    names: Option<&[String]>,
    shown: &str,
) -> CliResult<Option<Vec<usize>>> {
    let Some(names) = names else { return Ok(None) };
    names
        .iter()
        .map(|n| {
            schema
                .index_of(n)
                .map_err(|_| CliError(format!("{shown} has no column '{}'", report::escape(n))))
        })
        .collect::<CliResult<Vec<usize>>>()
        .map(Some)
}

/// What `tessera compress` needs for a table.
#[derive(Debug)]
pub struct CompressTable<'a> {
    pub input: &'a Path,
    pub output: &'a Path,
    pub format: TableFormat,
    pub columns: Option<Vec<String>>,
    pub chunk_rows: usize,
    pub force: bool,
}

/// `tessera compress TABLE OUT.tsr`.
pub fn compress(a: &CompressTable<'_>) -> CliResult<()> {
    let t = Instant::now();
    let input = files::Input::open(a.input)?;
    let shown = input.shown();
    let path = input
        .path()
        .ok_or_else(|| CliError("a table is read from a file, not stdin".into()))?
        .to_path_buf();
    let input_len = input.regular_len().unwrap_or(0);
    let (schema, batches) = open_table(&path, a.format, &shown)?;
    let batches_schema = schema.clone();
    let proj = projection(&schema, a.columns.as_deref(), &shown)?;
    let schema = match &proj {
        Some(p) => Arc::new(schema.project(p).map_err(|e| arrow_cli(&shown, e))?),
        None => schema,
    };
    // Every field is checked before the output is created: nothing is half-written.
    tessera::arrow::check_schema(&schema).map_err(|e| CliError(format!("{shown}: {e}")))?;
    let output = files::Output::create(a.output, a.force, &[&input], files::Data::Tsr)?;
    let shown_out = output.shown().to_owned();
    let to_stdout = output.is_stdout();
    let opts = ArrowWriteOptions {
        chunk_rows: a.chunk_rows,
        ..ArrowWriteOptions::default()
    };
    let mut w = ArrowTableWriter::with_container(
        // A stream states its minor up front, before the first batch settles whether a float
        // field is stored with ALP (1.4) or a fixed-width field as a dictionary (1.5) or as
        // runs (1.6); a file gets the lowest minor it needs.
        output.container_writer(RUNS_MINOR)?,
        schema.clone(),
        opts,
    )?;
    let pb = progress(input_len, "compressing");
    let full_schema = batches_schema;
    for b in batches {
        let b = b.map_err(|e| {
            CliError(format!(
                "{shown}: {}",
                name_csv_column(&e.to_string(), &full_schema)
            ))
        })?;
        let b = match &proj {
            Some(p) => b.project(p).map_err(|e| arrow_cli(&shown, e))?,
            None => b,
        };
        w.write(&b).map_err(|e| CliError(format!("{shown}: {e}")))?;
        pb.inc(b.num_rows() as u64);
    }
    let rows = w.rows();
    let (dir, file_bytes) = w.finish()?;
    pb.finish_and_clear();
    let summary = format!(
        "{shown_out}: {rows} rows, {} fields in {} columns, {input_len} -> {file_bytes} bytes in {:.2} s",
        schema.fields().len(),
        dir.columns.len(),
        t.elapsed().as_secs_f64()
    );
    if to_stdout {
        eprintln!("{summary}");
    } else {
        println!("{summary}");
    }
    Ok(())
}

/// `tessera decompress IN.tsr TABLE`.
pub fn decompress(
    input: &Path,
    output: &Path,
    format: TableFormat,
    columns: Option<Vec<String>>,
    force: bool,
    mut engine: Engine,
) -> CliResult<()> {
    let input = files::Input::open(input)?;
    let shown = input.shown();
    let out = files::Output::create(output, force, &[&input], files::Data::Raw)?;
    let c = input.container()?;
    let table = TableReader::from_container(c);
    let r = ArrowTableReader::new(&table, columns.as_deref())
        .map_err(|e| CliError(format!("{shown}: {e}")))?;
    let schema = r.schema();
    let pb = progress(table.container().file_len(), "decompressing");
    let mut sink = TableSink::new(format, out, schema.clone(), &shown)?;
    let mut it = r.batches(BATCH_ROWS, &mut engine)?;
    while let Some(b) = it
        .next_batch()
        .map_err(|e| CliError(format!("{shown}: {e}")))?
    {
        sink.write(&b)?;
        pb.inc(b.num_rows() as u64);
    }
    drop(it);
    sink.finish()?;
    pb.finish_and_clear();
    eprintln!("{}", engine.report());
    Ok(())
}

/// An output table file being written.
pub(crate) enum TableSink {
    Parquet(ArrowWriter<files::Output>),
    Arrow(arrow_ipc::writer::FileWriter<files::Output>),
    Csv(arrow_csv::Writer<files::Output>, String),
}

impl TableSink {
    pub(crate) fn new(
        format: TableFormat,
        out: files::Output,
        schema: SchemaRef,
        shown: &str,
    ) -> CliResult<TableSink> {
        let name = out.shown().to_owned();
        Ok(match format {
            TableFormat::Parquet => {
                let props = WriterProperties::builder()
                    .set_compression(Compression::ZSTD(ZstdLevel::default()))
                    .build();
                TableSink::Parquet(
                    ArrowWriter::try_new(out, schema, Some(props))
                        .map_err(|e| CliError(format!("{name}: {e}")))?,
                )
            }
            TableFormat::Arrow => TableSink::Arrow(
                arrow_ipc::writer::FileWriter::try_new(out, &schema)
                    .map_err(|e| arrow_cli(&name, e))?,
            ),
            TableFormat::Orc => {
                return Err(CliError(format!(
                    "{name}: ORC is read, not written: write .parquet, .arrow or .csv"
                )))
            }
            TableFormat::Csv => {
                let _ = shown;
                TableSink::Csv(
                    arrow_csv::WriterBuilder::new().with_header(true).build(out),
                    name,
                )
            }
        })
    }

    pub(crate) fn write(&mut self, b: &RecordBatch) -> CliResult<()> {
        match self {
            TableSink::Parquet(w) => w.write(b).map_err(|e| CliError(e.to_string())),
            TableSink::Arrow(w) => w.write(b).map_err(|e| CliError(e.to_string())),
            TableSink::Csv(w, name) => w.write(b).map_err(|e| arrow_cli(name, e)),
        }
    }

    pub(crate) fn finish(self) -> CliResult<()> {
        let out = match self {
            TableSink::Parquet(w) => w.into_inner().map_err(|e| CliError(e.to_string()))?,
            TableSink::Arrow(mut w) => {
                w.finish().map_err(|e| CliError(e.to_string()))?;
                w.into_inner().map_err(|e| CliError(e.to_string()))?
            }
            TableSink::Csv(w, _) => w.into_inner(),
        };
        let mut out = out;
        out.flush()
            .map_err(|e| CliError(format!("cannot write the output: {e}")))?;
        out.finish()
    }
}

/// The lines `tessera inspect` prints for a file's table section (none without one).
pub fn schema_lines(c: &Container) -> Vec<String> {
    let Some(t) = &c.directory().table else {
        return Vec::new();
    };
    let mut lines = vec![format!(
        "table: {} rows, {} fields",
        t.row_count,
        t.fields.len()
    )];
    for f in &t.fields {
        let field = tessera::arrow::arrow_field(f);
        let cols: Vec<String> = f
            .columns
            .iter()
            .map(|(role, col)| {
                let name = c
                    .columns()
                    .get(*col as usize)
                    .map_or("?", |m| m.name.as_str());
                format!("{}={}", role.name(), report::escape(name))
            })
            .collect();
        lines.push(format!(
            "  {}: {}{}{} [{}]",
            report::escape(&f.name),
            field.data_type(),
            if f.nullable { "" } else { " not null" },
            if f.column(Role::DictValues).is_some() && f.arrow_dictionary.is_none() {
                " (dictionary-encoded)"
            } else {
                ""
            },
            cols.join(", ")
        ));
    }
    lines
}

/// The table section as JSON for `tessera inspect --json`.
pub fn schema_json(c: &Container) -> Option<serde_json::Value> {
    let t = c.directory().table.as_ref()?;
    let fields: Vec<serde_json::Value> = t
        .fields
        .iter()
        .map(|f| {
            let cols: serde_json::Map<String, serde_json::Value> = f
                .columns
                .iter()
                .map(|(role, col)| (role.name().to_owned(), (*col).into()))
                .collect();
            serde_json::json!({
                "name": f.name,
                "type": tessera::arrow::arrow_field(f).data_type().to_string(),
                "nullable": f.nullable,
                "columns": cols,
            })
        })
        .collect();
    Some(serde_json::json!({ "rows": t.row_count, "fields": fields }))
}
