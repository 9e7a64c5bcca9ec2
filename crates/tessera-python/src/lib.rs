//! `tessera._tessera`, the extension module under the `tessera` Python package (`python/`).
//!
//! Tables cross the boundary through the Arrow C Data and C Stream interfaces (`arrow-pyarrow`):
//! a `pyarrow.Table`, `RecordBatchReader` or any object with `__arrow_c_stream__` is read batch
//! by batch into [`ArrowTableWriter`], and what [`ArrowTableReader`] decodes goes back as a
//! `pyarrow.Table` without copying the buffers.
//!
//! Every call that touches a file runs with the GIL released and inside `catch_unwind`: tessera's
//! errors and any panic become `tessera.TesseraError`, never an abort of the interpreter.

mod device;
mod stream;

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use arrow_array::ffi_stream::RecordBatchStreamReader;
use arrow_array::RecordBatchReader;
use arrow_pyarrow::{PyArrowType, Table};
use arrow_schema::Schema;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use tessera::arrow::{
    arrow_field, ArrowTableReader, ArrowTableWriter, ArrowWriteOptions, DictionaryChoice,
    FloatChoice, RunChoice,
};
use tessera::{Device, Engine, LogicalType, TableReader, DEFAULT_CHUNK_VALUES};

create_exception!(
    tessera,
    TesseraError,
    PyException,
    "An error from tessera: a file that cannot be read (missing, corrupt, not a table), a \
     column that is not in the table, a type tessera cannot store, a device that cannot be used."
);

/// What went wrong inside a call, before it becomes a Python exception.
type Failure = String;

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

/// Runs `work` without the GIL (other Python threads go on while tessera encodes or decodes) and
/// turns its error or panic into `TesseraError`.
fn run<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> Result<T, Failure> + Send,
{
    match py.detach(|| panic::catch_unwind(AssertUnwindSafe(work))) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(message)) => Err(TesseraError::new_err(message)),
        Err(payload) => Err(TesseraError::new_err(format!(
            "internal error in tessera (please report it): {}",
            panic_message(payload.as_ref())
        ))),
    }
}

/// `PATH: message`, as the CLI reports errors.
fn at(path: &Path, e: impl std::fmt::Display) -> Failure {
    format!("{}: {e}", path.display())
}

fn choice<T: Copy>(what: &str, given: &str, choices: &[(&str, T)]) -> PyResult<T> {
    choices
        .iter()
        .find(|(name, _)| *name == given)
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
            PyValueError::new_err(format!(
                "{what} must be one of {}, not '{given}'",
                names.join(", ")
            ))
        })
}

/// Streams `data` (an Arrow C stream) into a table file at `path`.
#[pyfunction]
#[pyo3(signature = (data, path, codec, chunk_values, dictionary, floats, runs))]
#[allow(clippy::too_many_arguments)]
fn write_table(
    py: Python<'_>,
    data: PyArrowType<RecordBatchStreamReader>,
    path: PathBuf,
    codec: &str,
    chunk_values: Option<usize>,
    dictionary: &str,
    floats: &str,
    runs: &str,
) -> PyResult<()> {
    // The table writer picks each chunk's codec itself (the smallest that fits); it takes no
    // codec to force, so `auto` is the one choice there is.
    choice("codec", codec, &[("auto", ())])?;
    let opts = ArrowWriteOptions {
        chunk_rows: chunk_values.unwrap_or(DEFAULT_CHUNK_VALUES),
        dictionary: choice(
            "dictionary",
            dictionary,
            &[
                ("auto", DictionaryChoice::Auto),
                ("never", DictionaryChoice::Never),
            ],
        )?,
        floats: choice(
            "floats",
            floats,
            &[
                ("auto", FloatChoice::Auto),
                ("alp", FloatChoice::Alp),
                ("plain", FloatChoice::Plain),
            ],
        )?,
        runs: choice(
            "runs",
            runs,
            &[("auto", RunChoice::Auto), ("never", RunChoice::Never)],
        )?,
        ..ArrowWriteOptions::default()
    };
    let reader = data.0;
    run(py, move || {
        // The schema is checked before the file is created: nothing is half-written. A failure
        // later drops the writer, whose temporary file never takes the name `path`.
        let mut w =
            ArrowTableWriter::create(&path, reader.schema(), opts).map_err(|e| at(&path, e))?;
        for batch in reader {
            let batch = batch.map_err(|e| at(&path, format!("reading the input table: {e}")))?;
            w.write(&batch).map_err(|e| at(&path, e))?;
        }
        w.finish().map_err(|e| at(&path, e))?;
        Ok(())
    })
}

/// The table at `path` (the fields in `columns`, in that order, or all), decoded on `device`.
#[pyfunction]
#[pyo3(signature = (path, columns, device))]
fn read_table(
    py: Python<'_>,
    path: PathBuf,
    columns: Option<Vec<String>>,
    device: &str,
) -> PyResult<PyArrowType<Table>> {
    let device: Device = device
        .parse()
        .map_err(|e: tessera::Error| PyValueError::new_err(e.to_string()))?;
    let (schema, batch) = run(py, move || {
        let table = TableReader::open(&path).map_err(|e| at(&path, e))?;
        let r = ArrowTableReader::new(&table, columns.as_deref()).map_err(|e| at(&path, e))?;
        let mut engine = Engine::open(device).map_err(|e| {
            at(
                &path,
                format!("device '{}' cannot be used: {e}", device.name()),
            )
        })?;
        let batch = r.read_all(&mut engine).map_err(|e| at(&path, e))?;
        Ok((r.schema(), batch))
    })?;
    let table =
        Table::try_new(vec![batch], schema).map_err(|e| TesseraError::new_err(e.to_string()))?;
    Ok(PyArrowType(table))
}

/// The table at `path` as a stream of record batches of `batch_rows` rows (default: the
/// file's chunk rows), decoded on the CPU one batch per request.
#[pyfunction]
#[pyo3(signature = (path, columns, batch_rows))]
fn read_batches(
    py: Python<'_>,
    path: PathBuf,
    columns: Option<Vec<String>>,
    batch_rows: Option<usize>,
) -> PyResult<PyArrowType<Box<dyn RecordBatchReader + Send>>> {
    let s = run(py, move || {
        stream::BatchStream::open(path, columns, batch_rows)
    })?;
    Ok(PyArrowType(Box::new(s)))
}

/// The Arrow schema of the table at `path`.
#[pyfunction]
fn read_schema(py: Python<'_>, path: PathBuf) -> PyResult<PyArrowType<Schema>> {
    let schema = run(py, move || {
        let table = TableReader::open(&path).map_err(|e| at(&path, e))?;
        let r = ArrowTableReader::new(&table, None).map_err(|e| at(&path, e))?;
        Ok(r.schema().as_ref().clone())
    })?;
    Ok(PyArrowType(schema))
}

/// One physical column of a file, as `inspect` reports it.
struct ColumnSummary {
    name: String,
    ty: &'static str,
    values: u64,
    chunks: usize,
    codecs: Vec<(&'static str, usize)>,
    compressed_bytes: u64,
    uncompressed_bytes: Option<u64>,
}

/// One Arrow field of a table and the physical columns that hold it.
struct FieldSummary {
    name: String,
    ty: String,
    nullable: bool,
    columns: Vec<(&'static str, String)>,
}

struct Summary {
    version: String,
    file_bytes: u64,
    rows: Option<u64>,
    columns: Vec<ColumnSummary>,
    fields: Option<Vec<FieldSummary>>,
}

fn summarize(path: &Path) -> Result<Summary, Failure> {
    let table = TableReader::open(path).map_err(|e| at(path, e))?;
    let c = table.container();
    let (major, minor) = c.version();
    let columns = c
        .columns()
        .iter()
        .enumerate()
        .map(|(i, col)| {
            let uncompressed_bytes = match col.logical_type {
                // Text has no fixed raw size: its bytes are only known once decoded.
                LogicalType::Utf8 => None,
                _ => table.raw_len(i, 0..col.chunks.len()).ok(),
            };
            ColumnSummary {
                name: col.name.clone(),
                ty: col.logical_type.name(),
                values: col.value_count,
                chunks: col.chunks.len(),
                codecs: col
                    .codec_mix()
                    .iter()
                    .map(|(k, n)| (k.name(), *n))
                    .collect(),
                compressed_bytes: col.compressed_bytes(),
                uncompressed_bytes,
            }
        })
        .collect();
    let meta = c.directory().table.as_ref();
    let fields = meta.map(|m| {
        m.fields
            .iter()
            .map(|f| FieldSummary {
                name: f.name.clone(),
                ty: arrow_field(f).data_type().to_string(),
                nullable: f.nullable,
                columns: f
                    .columns
                    .iter()
                    .map(|(role, ci)| {
                        let name = c
                            .columns()
                            .get(*ci as usize)
                            .map_or_else(String::new, |col| col.name.clone());
                        (role.name(), name)
                    })
                    .collect(),
            })
            .collect()
    });
    Ok(Summary {
        version: format!("{major}.{minor}"),
        file_bytes: c.file_len(),
        rows: meta.map(|m| m.row_count),
        columns,
        fields,
    })
}

/// A summary of the file at `path`: version, size, rows, Arrow fields and physical columns.
#[pyfunction]
fn inspect<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let shown = path.display().to_string();
    let s = run(py, move || summarize(&path))?;
    let d = PyDict::new(py);
    d.set_item("path", shown)?;
    d.set_item("version", s.version)?;
    d.set_item("file_bytes", s.file_bytes)?;
    d.set_item("rows", s.rows)?;
    let columns = PyList::empty(py);
    for c in s.columns {
        let cd = PyDict::new(py);
        cd.set_item("name", c.name)?;
        cd.set_item("type", c.ty)?;
        cd.set_item("values", c.values)?;
        cd.set_item("chunks", c.chunks)?;
        let codecs = PyDict::new(py);
        for (k, n) in c.codecs {
            codecs.set_item(k, n)?;
        }
        cd.set_item("codecs", codecs)?;
        cd.set_item("compressed_bytes", c.compressed_bytes)?;
        cd.set_item("uncompressed_bytes", c.uncompressed_bytes)?;
        columns.append(cd)?;
    }
    d.set_item("columns", columns)?;
    match s.fields {
        None => d.set_item("fields", py.None())?,
        Some(fields) => {
            let list = PyList::empty(py);
            for f in fields {
                let fd = PyDict::new(py);
                fd.set_item("name", f.name)?;
                fd.set_item("type", f.ty)?;
                fd.set_item("nullable", f.nullable)?;
                let cols = PyDict::new(py);
                for (role, name) in f.columns {
                    cols.set_item(role, name)?;
                }
                fd.set_item("columns", cols)?;
                list.append(fd)?;
            }
            d.set_item("fields", list)?;
        }
    }
    Ok(d)
}

/// Panics inside the same wrapper every call uses: the tests check it raises `TesseraError`
/// rather than aborting the interpreter.
#[pyfunction]
fn _panic_for_tests(py: Python<'_>, message: String) -> PyResult<()> {
    run(py, move || -> Result<(), Failure> { panic!("{message}") })
}

#[pymodule]
fn _tessera(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("TesseraError", m.py().get_type::<TesseraError>())?;
    m.add("DEFAULT_CHUNK_VALUES", DEFAULT_CHUNK_VALUES)?;
    m.add_function(wrap_pyfunction!(write_table, m)?)?;
    m.add_function(wrap_pyfunction!(read_table, m)?)?;
    m.add_function(wrap_pyfunction!(read_batches, m)?)?;
    m.add_function(wrap_pyfunction!(device::read_device, m)?)?;
    m.add_class::<device::DeviceTable>()?;
    m.add_class::<device::DeviceColumn>()?;
    m.add_class::<device::DeviceBuffer>()?;
    m.add_function(wrap_pyfunction!(read_schema, m)?)?;
    m.add_function(wrap_pyfunction!(inspect, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    Ok(())
}
