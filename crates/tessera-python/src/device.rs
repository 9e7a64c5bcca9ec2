//! `read_device`: a table's fields decoded on the GPU ([`ArrowTableReader::read_gpu_arrow`]) and
//! left there, reachable from Python through the Arrow PyCapsule device protocol
//! (`__arrow_c_device_array__`, `__arrow_c_schema__`) and, buffer by buffer, through the CUDA
//! Array Interface (`__cuda_array_interface__`, version 3).
//!
//! Each field is exported once by [`export_device`], which owns its device buffers from then
//! on; that export is kept in a reference-counted [`ColumnData`] with the GPU handle and is
//! never handed out itself. Consumers get views of it: every `__arrow_c_device_array__` builds
//! a fresh `ArrowDeviceArray` over the same device addresses whose release drops one reference,
//! so an imported array, a column object, a buffer object or the table each keep the memory
//! alive, and the last of them to go frees it. A capsule nobody imported releases its view when
//! it is destroyed.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arrow_array::{make_array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_buffer::Buffer;
use arrow_data::{ArrayData, ArrayDataBuilder};
use arrow_pyarrow::{PyArrowType, Table};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use pyo3::exceptions::{PyIndexError, PyKeyError, PyNotImplementedError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyTuple};
use tessera::arrow::{
    export_device, ArrowArray, ArrowDeviceArray, ArrowSchema, ArrowTableReader, GpuArrowArray,
    ARROW_DEVICE_CUDA,
};
use tessera::gpu::{arrow_layout, Gpu};
use tessera::TableReader;

use crate::{at, run, Failure, TesseraError};

/// A device buffer of a column: its device address and the bytes allocated there.
#[derive(Debug, Clone, Copy)]
struct Buf {
    addr: u64,
    bytes: usize,
}

/// Where a column's buffers are on the device and what they hold (as [`GpuArrowArray`]).
#[derive(Debug)]
struct Layout {
    data_type: DataType,
    len: usize,
    validity: Option<Buf>,
    offsets: Option<Buf>,
    values: Buf,
    dictionary: Option<Box<Layout>>,
}

/// The array [`export_device`] built, kept here for the column's lifetime.
struct Exported(ArrowDeviceArray);

// SAFETY: the exported array exclusively owns what its pointers lead to (its buffer table, its
// dictionary's struct, the device buffers, which are `Send + Sync` themselves); nothing else
// points there, and it is only read after the export (views copy from it), never written.
unsafe impl Send for Exported {}
// SAFETY: as above: shared access only ever reads the struct.
unsafe impl Sync for Exported {}

/// One field on the device. Field order matters: the exported array (the device buffers) is
/// dropped before the GPU handle.
struct ColumnData {
    exported: Exported,
    layout: Layout,
    name: String,
    _gpu: Arc<Gpu>,
}

/// An `ArrowDeviceArray` handed to a consumer through a capsule: transparent, so the capsule's
/// pointer is the struct's. Only the consumer reads it (through that pointer); Rust drops it,
/// releasing the view, when the capsule is destroyed unless the consumer moved it out.
#[repr(transparent)]
#[allow(dead_code)]
struct DeviceArrayCapsule(ArrowDeviceArray);

// SAFETY: the view owns its private data (buffer table, children) and references to the
// columns it shows, which are `Send + Sync`; moving it moves that ownership.
unsafe impl Send for DeviceArrayCapsule {}

/// A view of `src` (an array of `data`'s export, or its dictionary) that keeps `data` alive.
fn view(src: &ArrowArray, data: &Arc<ColumnData>) -> ArrowArray {
    let n = usize::try_from(src.n_buffers).unwrap_or(0);
    // SAFETY: `src` is an unreleased array of the export `data` owns: `buffers` has
    // `n_buffers` entries and `dictionary` is null or a live array of the same export.
    let buffers: Vec<u64> = unsafe { std::slice::from_raw_parts(src.buffers, n) }
        .iter()
        .map(|&b| b as u64)
        .collect();
    // SAFETY: as above, the dictionary of the same live export, or null.
    let dictionary = unsafe { src.dictionary.as_ref() }.map(|d| view(d, data));
    ArrowArray::from_parts(
        src.length,
        src.null_count,
        &buffers,
        Vec::new(),
        dictionary,
        Box::new(data.clone()),
    )
}

/// A struct array of `rows` rows whose children are views of `columns`: how the Arrow C Data
/// Interface exports a record batch.
fn struct_view(rows: i64, columns: &[Arc<ColumnData>]) -> ArrowArray {
    let children = columns
        .iter()
        .map(|c| view(&c.exported.0.array, c))
        .collect();
    // A struct array's one buffer is its validity bitmap: absent (0), no null rows.
    ArrowArray::from_parts(rows, 0, &[0], children, None, Box::new(columns.to_vec()))
}

fn device_capsule<'py>(
    py: Python<'py>,
    device_id: i64,
    array: ArrowArray,
) -> PyResult<Bound<'py, PyCapsule>> {
    let d = ArrowDeviceArray {
        array,
        device_id,
        device_type: ARROW_DEVICE_CUDA,
        // The export waited for the GPU's work: the buffers are ready on any stream.
        sync_event: std::ptr::null_mut(),
        reserved: [0; 3],
    };
    PyCapsule::new_with_value(py, DeviceArrayCapsule(d), c"arrow_device_array")
}

fn schema_capsule<'py>(py: Python<'py>, s: ArrowSchema) -> PyResult<Bound<'py, PyCapsule>> {
    PyCapsule::new_with_value(py, s, c"arrow_schema")
}

fn field_schema(field: &Field) -> PyResult<ArrowSchema> {
    ArrowSchema::try_from(field).map_err(|e| TesseraError::new_err(e.to_string()))
}

/// The protocol's keywords beyond `requested_schema` are for future use: a value other than
/// `None` asks for something this producer does not know.
fn check_protocol_kwargs(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    if let Some(kw) = kwargs {
        for (k, v) in kw.iter() {
            if !v.is_none() {
                return Err(PyNotImplementedError::new_err(format!(
                    "__arrow_c_device_array__ does not support the keyword {k}"
                )));
            }
        }
    }
    Ok(())
}

/// Bytes a value of a fixed-width type takes (`None`: bits, or not fixed-width).
fn value_width(dt: &DataType) -> Option<usize> {
    dt.primitive_width()
}

/// The CUDA Array Interface type string of a fixed-width value type, and the values a row
/// holds (2 for decimal128: its low then high 64-bit word).
fn typestr(dt: &DataType) -> Option<(&'static str, usize)> {
    Some(match dt {
        DataType::Int8 => ("|i1", 1),
        DataType::UInt8 => ("|u1", 1),
        DataType::Int16 => ("<i2", 1),
        DataType::UInt16 => ("<u2", 1),
        DataType::Int32 | DataType::Date32 | DataType::Time32(_) => ("<i4", 1),
        DataType::UInt32 => ("<u4", 1),
        DataType::Int64
        | DataType::Date64
        | DataType::Time64(_)
        | DataType::Timestamp(..)
        | DataType::Duration(_) => ("<i8", 1),
        DataType::UInt64 => ("<u8", 1),
        DataType::Float16 => ("<f2", 1),
        DataType::Float32 => ("<f4", 1),
        DataType::Float64 => ("<f8", 1),
        DataType::Decimal128(..) => ("<u8", 2),
        _ => return None,
    })
}

fn is_large(dt: &DataType) -> bool {
    matches!(dt, DataType::LargeUtf8 | DataType::LargeBinary)
}

fn is_var_size(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary
    )
}

/// Checks `have` device bytes hold `need`: what the views below rely on.
fn check_size(name: &str, what: &str, need: usize, have: usize) -> Result<(), Failure> {
    if need > have {
        return Err(format!(
            "column '{name}': the GPU read gave {have} bytes of {what}, {need} needed"
        ));
    }
    Ok(())
}

/// The layout of `exported` (what [`export_device`] built from an array of type `dt`, `len`
/// rows, with `sizes` the allocated bytes of its validity, offsets and values), each buffer's
/// address read from the export, its size checked against what the rows need.
fn layout_of(name: &str, exported: &ArrowArray, sizes: &Sizes) -> Result<Layout, Failure> {
    let len = sizes.len;
    let dt = &sizes.data_type;
    let n = usize::try_from(exported.n_buffers).unwrap_or(0);
    let expect = if is_var_size(dt) { 3 } else { 2 };
    if n != expect || exported.length as u64 != len as u64 {
        return Err(format!(
            "column '{name}': the export has {n} buffers and {} rows, {expect} and {len} \
             expected",
            exported.length
        ));
    }
    // SAFETY: an unreleased export with `n_buffers` entries, checked above.
    let addrs = unsafe { std::slice::from_raw_parts(exported.buffers, n) };
    let addr = |i: usize| addrs[i] as u64;
    let validity = match sizes.validity {
        Some(bytes) => {
            check_size(name, "validity bitmap", len.div_ceil(8), bytes)?;
            Some(Buf {
                addr: addr(0),
                bytes,
            })
        }
        None => None,
    };
    let (offsets, values) = if is_var_size(dt) {
        let w = if is_large(dt) { 8 } else { 4 };
        let bytes = sizes.offsets.unwrap_or(0);
        check_size(name, "offsets", (len + 1).saturating_mul(w), bytes)?;
        (
            Some(Buf {
                addr: addr(1),
                bytes,
            }),
            Buf {
                addr: addr(2),
                bytes: sizes.values,
            },
        )
    } else {
        let need = match dt {
            DataType::Boolean => len.div_ceil(8),
            DataType::Dictionary(k, _) => len.saturating_mul(value_width(k).unwrap_or(8)),
            other => match value_width(other) {
                Some(w) if typestr(other).is_some() => len.saturating_mul(w),
                _ => {
                    return Err(format!(
                        "column '{name}': type {other} is not expected here"
                    ))
                }
            },
        };
        check_size(name, "values", need, sizes.values)?;
        (
            None,
            Buf {
                addr: addr(1),
                bytes: sizes.values,
            },
        )
    };
    let dictionary = match (&sizes.dictionary, exported.dictionary.is_null()) {
        (Some(d), false) => {
            // SAFETY: a live dictionary array of the same export.
            let dx = unsafe { &*exported.dictionary };
            Some(Box::new(layout_of(name, dx, d)?))
        }
        (None, true) => None,
        _ => {
            return Err(format!(
                "column '{name}': the export's dictionary is not the read's"
            ))
        }
    };
    Ok(Layout {
        data_type: dt.clone(),
        len,
        validity,
        offsets,
        values,
        dictionary,
    })
}

/// The allocated sizes of a [`GpuArrowArray`]'s buffers, taken before the export consumes it.
struct Sizes {
    data_type: DataType,
    len: usize,
    validity: Option<usize>,
    offsets: Option<usize>,
    values: usize,
    dictionary: Option<Box<Sizes>>,
}

fn sizes(a: &GpuArrowArray) -> Result<Sizes, Failure> {
    Ok(Sizes {
        data_type: a.data_type.clone(),
        len: usize::try_from(a.len).map_err(|_| format!("{} rows exceed memory", a.len))?,
        validity: a.validity.as_ref().map(|b| b.len()),
        offsets: a.offsets.as_ref().map(|b| b.len()),
        values: a.values.len(),
        dictionary: a
            .dictionary
            .as_deref()
            .map(sizes)
            .transpose()?
            .map(Box::new),
    })
}

/// The GPU `read_device` decodes on, opened by the first call that succeeds and kept: its
/// kernels are compiled (NVRTC) once per process rather than once per read. The lock also
/// makes reads take turns: they share the GPU's one stream and the staging buffers its codecs
/// keep between calls.
static GPU: Mutex<Option<Arc<Gpu>>> = Mutex::new(None);

/// Decodes the table at `path` on the GPU and exports each field.
fn read(path: PathBuf, columns: Option<Vec<String>>) -> Result<DeviceTable, Failure> {
    let table = TableReader::open(&path).map_err(|e| at(&path, e))?;
    let r = ArrowTableReader::new(&table, columns.as_deref()).map_err(|e| at(&path, e))?;
    // A read that panicked poisons the lock; the handle itself stays usable.
    let mut held = GPU.lock().unwrap_or_else(|p| p.into_inner());
    let gpu = match held.as_ref() {
        Some(g) => g.clone(),
        None => {
            let g = Arc::new(
                Gpu::new()
                    .map_err(|e| at(&path, format!("no GPU can be used for read_device: {e}")))?,
            );
            *held = Some(g.clone());
            g
        }
    };
    let arrays = r.read_gpu_arrow(&gpu).map_err(|e| at(&path, e))?;
    let rows = usize::try_from(r.rows()).map_err(|_| at(&path, "table larger than memory"))?;
    let mut out = Vec::with_capacity(arrays.len());
    let mut fields = Vec::with_capacity(arrays.len());
    for (a, meta) in arrays.into_iter().zip(r.selected_fields()) {
        let name = meta.name.clone();
        let s = sizes(&a).map_err(|e| at(&path, e))?;
        // As export_device names its schema: the GPU read's type (dictionaries where the
        // writer chose them), nullable.
        fields.push(Field::new(&name, a.data_type.clone(), true));
        let (exported, _schema) = export_device(&gpu, a, &name).map_err(|e| at(&path, e))?;
        let layout = layout_of(&name, &exported.array, &s).map_err(|e| at(&path, e))?;
        out.push(Arc::new(ColumnData {
            exported: Exported(exported),
            layout,
            name,
            _gpu: gpu.clone(),
        }));
    }
    let md = r.schema().metadata().clone();
    Ok(DeviceTable {
        columns: out,
        schema: Arc::new(Schema::new_with_metadata(fields, md)),
        rows,
        device_id: arrow_layout::device_ordinal(&gpu) as i64,
        gpu,
    })
}

/// The table at `path` (the fields in `columns`, or all) decoded into GPU memory.
#[pyfunction]
#[pyo3(signature = (path, columns))]
pub(crate) fn read_device(
    py: Python<'_>,
    path: PathBuf,
    columns: Option<Vec<String>>,
) -> PyResult<DeviceTable> {
    run(py, move || read(path, columns))
}

/// Copies `layout`'s buffers (those the rows need) back to host memory as an Arrow array,
/// checked (offsets in bounds, utf8 valid) as any array from outside is.
fn to_host(gpu: &Gpu, name: &str, l: &Layout) -> Result<ArrayData, Failure> {
    let copy = |parts: &[(u64, usize)]| {
        gpu.read_back_parts(parts)
            .map_err(|e| format!("column '{name}': copying to host memory: {e}"))
    };
    let validity_bytes = l.len.div_ceil(8);
    let mut parts = Vec::new();
    if let Some(v) = l.validity {
        parts.push((v.addr, validity_bytes));
    }
    let values_need = if let Some(o) = l.offsets {
        let w = if is_large(&l.data_type) { 8 } else { 4 };
        parts.push((o.addr, (l.len + 1).saturating_mul(w)));
        None
    } else {
        let need = match &l.data_type {
            DataType::Boolean => validity_bytes,
            DataType::Dictionary(k, _) => l.len.saturating_mul(value_width(k).unwrap_or(8)),
            other => l.len.saturating_mul(value_width(other).unwrap_or(0)),
        };
        parts.push((l.values.addr, need));
        Some(need)
    };
    let mut host = copy(&parts)?.into_iter();
    let validity = l.validity.and_then(|_| host.next()).map(Buffer::from_vec);
    let mut buffers = Vec::new();
    if values_need.is_some() {
        buffers.push(Buffer::from_vec(host.next().unwrap_or_default()));
    } else {
        let offsets = host.next().unwrap_or_default();
        let end = if is_large(&l.data_type) {
            offsets
                .rchunks_exact(8)
                .next()
                .map_or(0, |b| i64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
        } else {
            offsets.rchunks_exact(4).next().map_or(0, |b| {
                i32::from_le_bytes(b.try_into().unwrap_or([0; 4])) as i64
            })
        };
        let end = usize::try_from(end)
            .ok()
            .filter(|&e| e <= l.values.bytes)
            .ok_or_else(|| {
                format!(
                    "column '{name}': the last offset {end} is outside the {} bytes of values",
                    l.values.bytes
                )
            })?;
        let bytes = copy(&[(l.values.addr, end)])?.pop().unwrap_or_default();
        buffers.push(Buffer::from_vec(offsets));
        buffers.push(Buffer::from_vec(bytes));
    }
    // Host vectors of bytes need not be aligned as the type's values are (16 for
    // decimal128): misaligned ones are copied rather than refused.
    let mut b = ArrayDataBuilder::new(l.data_type.clone())
        .len(l.len)
        .buffers(buffers)
        .null_bit_buffer(validity)
        .align_buffers(true);
    if let Some(d) = &l.dictionary {
        b = b.child_data(vec![to_host(gpu, name, d)?]);
    }
    b.build()
        .map_err(|e| format!("column '{name}': the GPU read is not a valid Arrow array: {e}"))
}

/// A table whose columns live in GPU memory, as `tessera.read_device` returns it (its
/// docstring describes each type's layout on the device). The Arrow PyCapsule device protocol
/// exports it as a struct array whose children are the columns; `to_arrow()` copies it to
/// host memory.
#[pyclass(module = "tessera", name = "DeviceTable", frozen)]
pub(crate) struct DeviceTable {
    columns: Vec<Arc<ColumnData>>,
    schema: SchemaRef,
    rows: usize,
    device_id: i64,
    gpu: Arc<Gpu>,
}

impl DeviceTable {
    fn index(&self, key: &Bound<'_, PyAny>) -> PyResult<usize> {
        if let Ok(i) = key.extract::<isize>() {
            let n = self.columns.len() as isize;
            let j = if i < 0 { i + n } else { i };
            if (0..n).contains(&j) {
                return Ok(j as usize);
            }
            return Err(PyIndexError::new_err(format!(
                "column index {i} out of range for {n} columns"
            )));
        }
        if let Ok(name) = key.extract::<String>() {
            return self
                .columns
                .iter()
                .position(|c| c.name == name)
                .ok_or_else(|| PyKeyError::new_err(format!("no column '{name}' in the table")));
        }
        Err(PyTypeError::new_err(
            "a column is chosen by its index or its name",
        ))
    }
}

#[pymethods]
impl DeviceTable {
    /// Rows.
    #[getter]
    fn num_rows(&self) -> usize {
        self.rows
    }

    /// Columns.
    #[getter]
    fn num_columns(&self) -> usize {
        self.columns.len()
    }

    /// The columns' names, in order.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.columns.iter().map(|c| c.name.clone()).collect()
    }

    /// The Arrow schema of the columns as they are on the device.
    #[getter]
    fn schema(&self) -> PyArrowType<Schema> {
        PyArrowType(self.schema.as_ref().clone())
    }

    /// The CUDA device ordinal the columns are on.
    #[getter]
    fn device_id(&self) -> i64 {
        self.device_id
    }

    /// The columns, in order.
    #[getter]
    fn columns(&self) -> Vec<DeviceColumn> {
        (0..self.columns.len()).map(|i| self.column_at(i)).collect()
    }

    /// The column at index `key` or named `key`.
    fn column(&self, key: &Bound<'_, PyAny>) -> PyResult<DeviceColumn> {
        Ok(self.column_at(self.index(key)?))
    }

    fn __getitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<DeviceColumn> {
        self.column(key)
    }

    fn __len__(&self) -> usize {
        self.rows
    }

    fn __repr__(&self) -> String {
        let cols: Vec<String> = self
            .schema
            .fields()
            .iter()
            .map(|f| format!("{}: {}", f.name(), f.data_type()))
            .collect();
        format!(
            "tessera.DeviceTable({} rows on CUDA device {}; {})",
            self.rows,
            self.device_id(),
            cols.join(", ")
        )
    }

    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let s = ArrowSchema::try_from(self.schema.as_ref())
            .map_err(|e| TesseraError::new_err(e.to_string()))?;
        schema_capsule(py, s)
    }

    #[pyo3(signature = (requested_schema=None, **kwargs))]
    fn __arrow_c_device_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        // The protocol lets a producer ignore a requested schema it cannot cast to: the
        // columns are exported as they are on the device.
        let _ = requested_schema;
        check_protocol_kwargs(kwargs)?;
        let schema = self.__arrow_c_schema__(py)?;
        let rows = i64::try_from(self.rows)
            .map_err(|_| TesseraError::new_err("more rows than Arrow's i64"))?;
        let array = struct_view(rows, &self.columns);
        let arr = device_capsule(py, self.device_id, array)?;
        PyTuple::new(py, [schema.into_any(), arr.into_any()])
    }

    /// A copy of the table in host memory (the device's types: fields the writer
    /// dictionary-encoded are dictionary arrays here).
    fn to_arrow(&self, py: Python<'_>) -> PyResult<PyArrowType<Table>> {
        let columns = self.columns.clone();
        let gpu = self.gpu.clone();
        let schema = self.schema.clone();
        let rows = self.rows;
        let batch = run(py, move || {
            let arrays: Vec<ArrayRef> = columns
                .iter()
                .map(|c| to_host(&gpu, &c.name, &c.layout).map(make_array))
                .collect::<Result<_, _>>()?;
            RecordBatch::try_new_with_options(
                schema,
                arrays,
                &RecordBatchOptions::new().with_row_count(Some(rows)),
            )
            .map_err(|e| format!("cannot assemble the host table: {e}"))
        })?;
        let schema = batch.schema();
        let t = Table::try_new(vec![batch], schema)
            .map_err(|e| TesseraError::new_err(e.to_string()))?;
        Ok(PyArrowType(t))
    }
}

impl DeviceTable {
    fn column_at(&self, i: usize) -> DeviceColumn {
        DeviceColumn {
            data: self.columns[i].clone(),
            gpu: self.gpu.clone(),
            dictionary: false,
        }
    }
}

/// One column of a `DeviceTable` (or a dictionary column's values) in GPU memory, in Arrow's
/// layout: `values`, `validity` (None without nulls), `offsets` (utf8 and binary) are
/// `DeviceBuffer`s; `dictionary` is a dictionary column's values. Exports itself through the
/// Arrow PyCapsule device protocol; `to_arrow()` copies it to host memory.
#[pyclass(module = "tessera", name = "DeviceColumn", frozen)]
pub(crate) struct DeviceColumn {
    data: Arc<ColumnData>,
    gpu: Arc<Gpu>,
    /// This is the column's dictionary rather than the column.
    dictionary: bool,
}

impl DeviceColumn {
    fn layout(&self) -> &Layout {
        let l = &self.data.layout;
        match (&l.dictionary, self.dictionary) {
            (Some(d), true) => d,
            _ => l,
        }
    }

    fn array(&self) -> &ArrowArray {
        let a = &self.data.exported.0.array;
        if self.dictionary && !a.dictionary.is_null() {
            // SAFETY: the export's live dictionary array, owned as long as `data`.
            unsafe { &*a.dictionary }
        } else {
            a
        }
    }

    fn field(&self) -> Field {
        Field::new(&self.data.name, self.layout().data_type.clone(), true)
    }

    fn buffer(&self, b: Buf, shape: Vec<usize>, typestr: &'static str) -> DeviceBuffer {
        DeviceBuffer {
            _data: self.data.clone(),
            addr: b.addr,
            shape,
            typestr,
        }
    }
}

#[pymethods]
impl DeviceColumn {
    /// The field's name.
    #[getter]
    fn name(&self) -> String {
        self.data.name.clone()
    }

    /// The Arrow type on the device.
    #[getter]
    fn r#type(&self) -> PyArrowType<DataType> {
        PyArrowType(self.layout().data_type.clone())
    }

    /// The CUDA device ordinal the column is on.
    #[getter]
    fn device_id(&self) -> i64 {
        self.data.exported.0.device_id
    }

    fn __len__(&self) -> usize {
        self.layout().len
    }

    fn __repr__(&self) -> String {
        format!(
            "tessera.DeviceColumn({}{}: {}, {} rows on CUDA device {})",
            self.data.name,
            if self.dictionary { " (dictionary)" } else { "" },
            self.layout().data_type,
            self.layout().len,
            self.device_id()
        )
    }

    /// The validity bitmap (bits, least significant first; a set bit is a valid row), or
    /// `None` when the column has no nulls.
    #[getter]
    fn validity(&self) -> Option<DeviceBuffer> {
        let l = self.layout();
        l.validity
            .map(|v| self.buffer(v, vec![l.len.div_ceil(8)], "|u1"))
    }

    /// The values: one a row at the type's width (see the type stub for each type).
    #[getter]
    fn values(&self) -> DeviceBuffer {
        let l = self.layout();
        let (shape, ts) = match &l.data_type {
            DataType::Boolean => (vec![l.len.div_ceil(8)], "|u1"),
            DataType::Dictionary(k, _) => (vec![l.len], typestr(k).map_or("|u1", |t| t.0)),
            dt if is_var_size(dt) => (vec![l.values.bytes], "|u1"),
            dt => match typestr(dt) {
                Some((ts, 2)) => (vec![l.len, 2], ts),
                Some((ts, _)) => (vec![l.len], ts),
                None => (vec![l.values.bytes], "|u1"),
            },
        };
        self.buffer(l.values, shape, ts)
    }

    /// The `len + 1` offsets of a utf8 or binary column (int32, int64 for the large types),
    /// `None` for other types.
    #[getter]
    fn offsets(&self) -> Option<DeviceBuffer> {
        let l = self.layout();
        let ts = if is_large(&l.data_type) { "<i8" } else { "<i4" };
        l.offsets.map(|o| self.buffer(o, vec![l.len + 1], ts))
    }

    /// The dictionary's values as a column of their own, for a dictionary column.
    #[getter]
    fn dictionary(&self) -> Option<DeviceColumn> {
        (!self.dictionary && self.data.layout.dictionary.is_some()).then(|| DeviceColumn {
            data: self.data.clone(),
            gpu: self.gpu.clone(),
            dictionary: true,
        })
    }

    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, field_schema(&self.field())?)
    }

    #[pyo3(signature = (requested_schema=None, **kwargs))]
    fn __arrow_c_device_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        // The protocol lets a producer ignore a requested schema: exported as on the device.
        let _ = requested_schema;
        check_protocol_kwargs(kwargs)?;
        let schema = self.__arrow_c_schema__(py)?;
        let arr = device_capsule(
            py,
            self.data.exported.0.device_id,
            view(self.array(), &self.data),
        )?;
        PyTuple::new(py, [schema.into_any(), arr.into_any()])
    }

    /// A copy of the column in host memory, as a `pyarrow.Array` of the device's type.
    fn to_arrow(&self, py: Python<'_>) -> PyResult<PyArrowType<ArrayData>> {
        let data = self.data.clone();
        let gpu = self.gpu.clone();
        let dictionary = self.dictionary;
        let a = run(py, move || {
            let l = match (&data.layout.dictionary, dictionary) {
                (Some(d), true) => d,
                _ => &data.layout,
            };
            to_host(&gpu, &data.name, l)
        })?;
        Ok(PyArrowType(a))
    }
}

/// One device buffer of a column, for consumers of the CUDA Array Interface (CuPy, Numba,
/// PyTorch); it keeps the column's device memory alive.
#[pyclass(module = "tessera", name = "DeviceBuffer", frozen)]
pub(crate) struct DeviceBuffer {
    _data: Arc<ColumnData>,
    addr: u64,
    shape: Vec<usize>,
    typestr: &'static str,
}

#[pymethods]
impl DeviceBuffer {
    /// The device address.
    #[getter]
    fn ptr(&self) -> u64 {
        self.addr
    }

    /// The shape, as in the interface.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape)
    }

    /// The interface's type string (`<i8`, `|u1`, ...).
    #[getter]
    fn typestr(&self) -> &'static str {
        self.typestr
    }

    /// Version 3 of the CUDA Array Interface: C-contiguous (`strides` None), read-write
    /// memory; `stream` None because the read waited for the GPU before returning, so no
    /// synchronization is needed.
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("shape", PyTuple::new(py, &self.shape)?)?;
        d.set_item("typestr", self.typestr)?;
        d.set_item("data", (self.addr, false))?;
        d.set_item("version", 3)?;
        d.set_item("strides", py.None())?;
        d.set_item("stream", py.None())?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "tessera.DeviceBuffer(0x{:x}, shape={:?}, typestr='{}')",
            self.addr, self.shape, self.typestr
        )
    }
}
