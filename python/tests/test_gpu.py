"""tessera.read_device: columns decoded on the GPU and left there, checked through CuPy (the CUDA
Array Interface) and ctypes (the Arrow C Device Data Interface's structs) against the CPU read.

Without a GPU (or without CuPy) the GPU tests skip with the reason; TESSERA_REQUIRE_GPU=1 turns
the skip into a failure. The no-GPU error is checked everywhere (in a child process that sees
no device).
"""

import ctypes
import gc
import os
import subprocess
import sys

import pyarrow as pa
import pytest

import tessera
from test_tables import _table

REQUIRE = os.environ.get("TESSERA_REQUIRE_GPU") == "1"
ROWS = 3000


def _unavailable(why):
    if REQUIRE:
        pytest.fail(f"TESSERA_REQUIRE_GPU=1 but {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A file of every type with some nulls, its CPU read, and CuPy; skips without a GPU."""
    table = _table(ROWS, "some")
    path = tmp_path_factory.mktemp("gpu") / "t.tsr"
    tessera.write_table(table, path, chunk_values=1024)
    try:
        tessera.read_device(path, columns=["int8"])
    except tessera.TesseraError as e:
        _unavailable(str(e))
    try:
        import cupy
    except ImportError as e:
        _unavailable(f"CuPy is not installed ({e}): the tests read the device buffers through it")
    cpu = tessera.read_table(path, device="cpu").combine_chunks()
    return path, cpu, cupy


def test_without_a_gpu_the_error_says_why(tmp_path):
    # A child process that sees no CUDA device (or, here without a driver, no driver).
    path = tmp_path / "t.tsr"
    tessera.write_table(pa.table({"a": [1, 2, 3]}), path)
    code = (
        "import sys, tessera\n"
        "try:\n    tessera.read_device(sys.argv[1])\n"
        "except tessera.TesseraError as e:\n    print('TesseraError:', e)\n"
        "else:\n    print('read')\n"
    )
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    out = subprocess.run([sys.executable, "-c", code, str(path)], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("TesseraError:"), out.stdout
    assert "no GPU can be used for read_device" in out.stdout and str(path) in out.stdout, out.stdout


# ---- the CUDA Array Interface views ----


def _get(cp, buf):
    """A device buffer's bytes in host memory, through CuPy's view of it (no copy until .get())."""
    return cp.asarray(buf).get()


def _host_array(cp, col):
    """The pyarrow array that a column's CUDA-array-interface views hold, copied to host memory."""
    validity = None if col.validity is None else pa.py_buffer(_get(cp, col.validity).tobytes())
    values = pa.py_buffer(_get(cp, col.values).tobytes())
    if pa.types.is_dictionary(col.type):
        codes = pa.Array.from_buffers(col.type.index_type, len(col), [validity, values])
        return pa.DictionaryArray.from_arrays(codes, _host_array(cp, col.dictionary))
    if col.offsets is not None:
        offsets = pa.py_buffer(_get(cp, col.offsets).tobytes())
        return pa.Array.from_buffers(col.type, len(col), [validity, offsets, values])
    return pa.Array.from_buffers(col.type, len(col), [validity, values])


def _valid_mask(np, arr):
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _bits(np, raw, n):
    return np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder="little")[:n].astype(bool)


def _check_fixed_width(np, cp, col, ref):
    """The values view equals the CPU read's values bit for bit on the valid rows."""
    n = len(ref)
    valid = _valid_mask(np, ref)
    cai = col.values.__cuda_array_interface__
    assert cai["version"] == 3 and cai["strides"] is None and "stream" in cai
    assert cai["data"][0] == col.values.ptr and cai["typestr"] == col.values.typestr
    got = _get(cp, col.values)
    assert got.shape == tuple(cai["shape"])
    if pa.types.is_boolean(ref.type):
        assert got.shape == ((n + 7) // 8,)
        want = _bits(np, ref.buffers()[1], ref.offset + n)[ref.offset :]
        assert np.array_equal(_bits(np, got.tobytes(), n)[valid], want[valid])
        return
    width = ref.type.bit_width // 8
    assert got.nbytes == n * width, (col.name, got.shape, got.dtype)
    want = np.frombuffer(ref.buffers()[1], dtype=np.uint8)[ref.offset * width : (ref.offset + n) * width]
    got_rows = got.view(np.uint8).reshape(n, width)
    assert np.array_equal(got_rows[valid], want.reshape(n, width)[valid]), col.name


def _check_var_size(np, cp, col, ref):
    """Offsets as the CPU read's, rebased to 0; the bytes they bound equal the CPU read's."""
    large = pa.types.is_large_string(ref.type) or pa.types.is_large_binary(ref.type)
    dtype = np.int64 if large else np.int32
    n = len(ref)
    off = _get(cp, col.offsets)
    assert off.dtype == dtype and off.shape == (n + 1,)
    want = np.frombuffer(ref.buffers()[1], dtype=dtype)[ref.offset : ref.offset + n + 1]
    assert np.array_equal(off, want - want[0]), col.name
    data = _get(cp, col.values)
    assert data.dtype == np.uint8 and data.shape[0] >= off[-1]
    ref_bytes = ref.buffers()[2].to_pybytes()[want[0] : want[-1]]
    assert data[: off[-1]].tobytes() == ref_bytes, col.name


def test_every_column_on_the_device_equals_the_cpu_read(source):
    import numpy as np

    path, cpu, cp = source
    table = tessera.read_device(path)
    assert table.num_rows == ROWS and table.column_names == cpu.column_names
    host = table.to_arrow()
    assert host.schema == table.schema
    checked = {"fixed": 0, "var": 0, "dict": 0}
    for col in table.columns:
        ref = cpu[col.name].chunk(0)
        assert len(col) == ROWS, col.name
        # Validity: the device's bits are the CPU read's nulls (absent: no nulls).
        if col.validity is None:
            assert ref.null_count == 0, col.name
        else:
            assert col.validity.shape == ((ROWS + 7) // 8,)
            got = _bits(np, _get(cp, col.validity).tobytes(), ROWS)
            assert np.array_equal(got, _valid_mask(np, ref)), col.name
        if pa.types.is_dictionary(col.type):
            checked["dict"] += 1
            assert col.dictionary is not None and col.offsets is None
            assert np.dtype(col.values.typestr) == np.dtype(col.type.index_type.to_pandas_dtype())
            assert _get(cp, col.values).shape == (ROWS,)
        elif col.offsets is not None:
            checked["var"] += 1
            _check_var_size(np, cp, col, ref)
        else:
            checked["fixed"] += 1
            assert col.dictionary is None
            _check_fixed_width(np, cp, col, ref)
        # Whatever the layout, the array the views hold is the CPU read's (a dictionary the
        # writer chose decoded back to its values), and the host copy is the same array.
        arr = _host_array(cp, col)
        arr.validate(full=True)
        assert host[col.name].chunk(0).equals(arr), col.name
        plain = arr.dictionary_decode() if pa.types.is_dictionary(arr.type) and not pa.types.is_dictionary(ref.type) else arr
        assert plain.equals(ref), col.name
    assert checked["fixed"] >= 10 and checked["var"] >= 4 and checked["dict"] >= 2, checked


def test_column_selection_and_lookup(source):
    path, cpu, _ = source
    picked = ["utf8", "int64", "dict_utf8"]
    table = tessera.read_device(path, columns=picked)
    assert table.column_names == picked and table.num_columns == 3
    assert table[1].name == "int64" and table["utf8"].name == "utf8" and table[-1].name == "dict_utf8"
    with pytest.raises(KeyError):
        table["nope"]
    with pytest.raises(IndexError):
        table[3]
    with pytest.raises(tessera.TesseraError, match="no column 'nope'"):
        tessera.read_device(path, columns=["nope"])


# ---- the Arrow C Device Data Interface (PyCapsules), read with ctypes ----


class ArrowSchema(ctypes.Structure):
    pass


ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p),
    ("name", ctypes.c_char_p),
    ("metadata", ctypes.c_void_p),
    ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("children", ctypes.POINTER(ctypes.POINTER(ArrowSchema))),
    ("dictionary", ctypes.POINTER(ArrowSchema)),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]


class ArrowArray(ctypes.Structure):
    pass


ArrowArray._fields_ = [
    ("length", ctypes.c_int64),
    ("null_count", ctypes.c_int64),
    ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("buffers", ctypes.POINTER(ctypes.c_void_p)),
    ("children", ctypes.POINTER(ctypes.POINTER(ArrowArray))),
    ("dictionary", ctypes.POINTER(ArrowArray)),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]


class ArrowDeviceArray(ctypes.Structure):
    _fields_ = [
        ("array", ArrowArray),
        ("device_id", ctypes.c_int64),
        ("device_type", ctypes.c_int32),
        ("sync_event", ctypes.c_void_p),
        ("reserved", ctypes.c_int64 * 3),
    ]


RELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowArray))
ARROW_DEVICE_CUDA = 2


def _capsule_pointer(capsule, name):
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return get(capsule, name)


def _buffers(arr):
    return [arr.buffers[i] or 0 for i in range(arr.n_buffers)]


def _check_array(arr, col):
    """The C struct of a column: its rows and buffers, the CUDA-array-interface pointers."""
    assert arr.length == len(col) and arr.offset == 0 and arr.release
    validity = col.validity.ptr if col.validity is not None else 0
    if col.offsets is not None:
        assert _buffers(arr) == [validity, col.offsets.ptr, col.values.ptr], col.name
    else:
        assert _buffers(arr) == [validity, col.values.ptr], col.name
    assert arr.null_count == (-1 if col.validity is not None else 0)
    if col.dictionary is None:
        assert not arr.dictionary
    else:
        _check_array(arr.dictionary.contents, col.dictionary)


def test_column_capsules_hold_the_device_buffers(source):
    path, cpu, _ = source
    assert ctypes.sizeof(ArrowDeviceArray) == 128 and ctypes.sizeof(ArrowSchema) == 72
    table = tessera.read_device(path)
    for col in table.columns:
        schema_capsule, array_capsule = col.__arrow_c_device_array__()
        field = pa.Field._import_from_c_capsule(schema_capsule)
        assert field.name == col.name and field.type == col.type
        assert pa.Field._import_from_c_capsule(col.__arrow_c_schema__()) == field
        d = ArrowDeviceArray.from_address(_capsule_pointer(array_capsule, b"arrow_device_array"))
        assert d.device_type == ARROW_DEVICE_CUDA and d.device_id == col.device_id == table.device_id
        assert d.sync_event is None and list(d.reserved) == [0, 0, 0]
        _check_array(d.array, col)
        del array_capsule  # never imported: its destructor releases the view
    with pytest.raises(NotImplementedError):
        table[0].__arrow_c_device_array__(None, future_option=True)


def test_table_capsule_is_a_struct_of_the_columns(source):
    path, cpu, _ = source
    table = tessera.read_device(path)
    schema_capsule, array_capsule = table.__arrow_c_device_array__()
    assert pa.Schema._import_from_c_capsule(schema_capsule) == table.schema
    kept = table.__arrow_c_schema__()  # alive while its struct is read
    s = ArrowSchema.from_address(_capsule_pointer(kept, b"arrow_schema"))
    assert s.format == b"+s" and s.n_children == table.num_columns
    d = ArrowDeviceArray.from_address(_capsule_pointer(array_capsule, b"arrow_device_array"))
    assert d.device_type == ARROW_DEVICE_CUDA and d.device_id == table.device_id
    a = d.array
    assert a.length == ROWS and a.n_buffers == 1 and not a.buffers[0] and a.null_count == 0
    assert a.n_children == table.num_columns
    for i, col in enumerate(table.columns):
        _check_array(a.children[i].contents, col)


def _import(capsule):
    """What a consumer does: move the struct out of the capsule (the capsule's copy is marked
    released), owning the array from then on."""
    src = ArrowDeviceArray.from_address(_capsule_pointer(capsule, b"arrow_device_array"))
    moved = ArrowDeviceArray()
    ctypes.memmove(ctypes.addressof(moved), ctypes.addressof(src), ctypes.sizeof(moved))
    src.array.release = None
    return moved


def _release(d):
    RELEASE(d.array.release)(ctypes.byref(d.array))
    assert not d.array.release and not d.array.private_data


def test_device_memory_outlives_the_table(source):
    import numpy as np

    path, cpu, cp = source
    ref = cpu["int64"].chunk(0)
    valid = _valid_mask(np, ref)
    want = ref.fill_null(0).to_numpy()
    table = tessera.read_device(path, columns=["int64", "utf8"])
    values = table["int64"].values  # a view: the column object itself is dropped
    imported = _import(table["int64"].__arrow_c_device_array__()[1])
    text = table["utf8"]
    text_ptr, text_len = text.values.ptr, int(text.values.shape[0])
    text_want = _get(cp, text.values).tobytes()
    imported_text = _import(table.__arrow_c_device_array__()[1])
    del table, text
    gc.collect()
    # Another read allocates from the same device pool: had the first table's buffers been
    # freed, it would overwrite them.
    other = pa.table({"int64": pa.array(range(ROWS), type=pa.int64()), "utf8": ["x" * 7] * ROWS})
    opath = path.parent / "other.tsr"
    tessera.write_table(other, opath)
    again = tessera.read_device(opath)
    got = _get(cp, values)
    assert np.array_equal(got[valid], want[valid])
    # The imported arrays (the consumer owns them now) still address live memory.
    addr = imported.array.buffers[1]
    assert addr == values.ptr
    mem = cp.cuda.UnownedMemory(addr, ROWS * 8, None)
    view = cp.ndarray((ROWS,), dtype=cp.int64, memptr=cp.cuda.MemoryPointer(mem, 0))
    assert np.array_equal(view.get()[valid], want[valid])
    del values
    gc.collect()
    assert np.array_equal(view.get()[valid], want[valid])
    _release(imported)
    # The struct's children are the columns, in order: utf8 is the second.
    child = imported_text.array.children[1].contents
    assert child.buffers[2] == text_ptr
    mem = cp.cuda.UnownedMemory(text_ptr, text_len, None)
    text_view = cp.ndarray((text_len,), dtype=cp.uint8, memptr=cp.cuda.MemoryPointer(mem, 0))
    assert text_view.get().tobytes() == text_want
    _release(imported_text)
    assert again.num_rows == ROWS


def test_an_empty_table_and_no_columns(source, tmp_path):
    """Zero rows and a selection of no columns: the same shapes as the CPU read, and capsules a
    consumer can import (pyarrow rejects device arrays, so the schema side is what it imports)."""
    path, cpu, _ = source
    empty = pa.table({"a": pa.array([], pa.int32()), "s": pa.array([], pa.string())})
    epath = tmp_path / "empty.tsr"
    tessera.write_table(empty, epath)
    table = tessera.read_device(epath)
    assert table.num_rows == 0 and table.column_names == ["a", "s"]
    assert table.to_arrow().equals(tessera.read_table(epath, device="cpu"))
    for col in table.columns:
        assert len(col) == 0
        _, array_capsule = col.__arrow_c_device_array__()
        d = ArrowDeviceArray.from_address(_capsule_pointer(array_capsule, b"arrow_device_array"))
        assert d.array.length == 0 and d.device_type == ARROW_DEVICE_CUDA
    schema_capsule, array_capsule = table.__arrow_c_device_array__()
    assert pa.Schema._import_from_c_capsule(schema_capsule) == empty.schema
    d = ArrowDeviceArray.from_address(_capsule_pointer(array_capsule, b"arrow_device_array"))
    assert d.array.length == 0 and d.array.n_children == 2

    none = tessera.read_device(path, columns=[])
    assert none.num_columns == 0 and none.column_names == []
    want = tessera.read_table(path, columns=[], device="cpu")
    got = none.to_arrow()
    assert got.num_columns == 0 and got.num_rows == want.num_rows
    schema_capsule, array_capsule = none.__arrow_c_device_array__()
    assert pa.Schema._import_from_c_capsule(schema_capsule) == pa.schema([])
    d = ArrowDeviceArray.from_address(_capsule_pointer(array_capsule, b"arrow_device_array"))
    assert d.array.n_children == 0 and d.array.length == none.num_rows
