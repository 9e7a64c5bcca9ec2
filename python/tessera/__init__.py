"""tessera: analytical tables in lightweight compressed formats that an NVIDIA GPU decodes.

A table is a ``.tsr`` file of named, checksummed columns. This package writes pyarrow tables
into ``.tsr`` files and reads them back as pyarrow tables, on the CPU or the GPU::

    import pyarrow as pa
    import tessera

    tessera.write_table(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}), "t.tsr")
    table = tessera.read_table("t.tsr", columns=["name"])
    for batch in tessera.read_batches("t.tsr"):  # one chunk at a time, on the CPU
        ...
    on_gpu = tessera.read_device("t.tsr")  # columns left in GPU memory
    ids = cupy.asarray(on_gpu["id"].values)  # no copy: __cuda_array_interface__

Tables cross into tessera through the Arrow C Stream interface (no copy of the input) and come
back through the Arrow C Data interface (:func:`read_table`), the C Stream interface
(:func:`read_batches`) or, in GPU memory, the C Device Data interface (:func:`read_device`).
Every error tessera reports is a :class:`TesseraError` (a later batch's error in
:func:`read_batches` is pyarrow's ``ArrowInvalid`` carrying tessera's message).
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, Optional, Union

import pyarrow as pa

from . import _tessera
from ._tessera import DEFAULT_CHUNK_VALUES, DeviceBuffer, DeviceColumn, DeviceTable, TesseraError

__all__ = [
    "DEFAULT_CHUNK_VALUES",
    "DeviceBuffer",
    "DeviceColumn",
    "DeviceTable",
    "TesseraError",
    "inspect",
    "read_batches",
    "read_device",
    "read_schema",
    "read_table",
    "write_table",
]

PathLike = Union[str, "os.PathLike[str]"]


def _as_stream(data: Any) -> Any:
    """An object the extension can read as an Arrow C stream."""
    if hasattr(data, "__arrow_c_stream__") or isinstance(data, pa.RecordBatchReader):
        return data
    if isinstance(data, pa.RecordBatch):
        # Older pyarrow gives record batches no __arrow_c_stream__: a one-batch table has it.
        return pa.Table.from_batches([data])
    raise TypeError(
        "write_table takes a pyarrow.Table, RecordBatch or RecordBatchReader, or an object "
        f"with __arrow_c_stream__, not {type(data).__name__}"
    )


def write_table(
    table: Any,
    path: PathLike,
    *,
    codec: str = "auto",
    chunk_values: Optional[int] = None,
    dictionary: str = "auto",
    floats: str = "auto",
    runs: str = "auto",
) -> None:
    """Write a table to a ``.tsr`` file at ``path``, batch by batch.

    ``table`` is a ``pyarrow.Table``, ``RecordBatch`` or ``RecordBatchReader``, or any object
    with ``__arrow_c_stream__`` (Polars, DuckDB, ... results): it is streamed, so a reader's
    batches are encoded as they come and memory follows the chunk size, not the table.

    The file appears under ``path`` only once complete (written under a temporary name, then
    renamed over any file there): an error leaves no file, and an existing file untouched.

    Args:
        codec: ``"auto"``: each chunk gets the smallest of the codecs that fit its column
            (GPU-FOR, DFOR, RFOR for integers, Huffman or LLL for text, ...). The table writer
            takes no other choice.
        chunk_values: rows per chunk, a multiple of 512 up to 2**24
            (default :data:`DEFAULT_CHUNK_VALUES`).
        dictionary: ``"auto"`` (dictionary-encode fields where it pays) or ``"never"``;
            Arrow dictionary fields stay dictionaries either way.
        floats: ``"auto"``, ``"alp"`` or ``"plain"``: how float fields are stored.
        runs: ``"auto"`` (store constant or sorted fields as runs where it pays) or ``"never"``.

    Raises:
        TesseraError: a field's type cannot be stored (the message names the column), the
            input stream fails, or the file cannot be written.
        ValueError: an option is not one of its choices.
        TypeError: ``table`` is not Arrow data.
    """
    if chunk_values is not None and not isinstance(chunk_values, int):
        raise TypeError(f"chunk_values must be an int, not {type(chunk_values).__name__}")
    _tessera.write_table(
        _as_stream(table),
        os.fspath(path),
        codec,
        chunk_values,
        dictionary,
        floats,
        runs,
    )


def read_table(
    path: PathLike,
    *,
    columns: Optional[Iterable[str]] = None,
    device: str = "auto",
) -> pa.Table:
    """Read the table in the ``.tsr`` file at ``path`` into host memory.

    Args:
        columns: the names of the fields to read, in the order wanted (default: all).
        device: where decoding runs: ``"cpu"`` (all cores), ``"gpu"`` (decoded on the GPU and
            copied back to host memory; an error when no GPU can be opened) or ``"auto"``
            (the GPU when one can be opened, else the CPU, as the ``tessera`` CLI does).

    Raises:
        TesseraError: the file is missing, damaged or not a table, a column is not in it, or
            ``device="gpu"`` and no GPU can be used.
        ValueError: ``device`` is not one of its choices.
    """
    if isinstance(columns, str):
        raise TypeError("columns is a list of names, not one string")
    names = None if columns is None else [str(c) for c in columns]
    return _tessera.read_table(os.fspath(path), names, device)


def read_batches(
    path: PathLike,
    *,
    columns: Optional[Iterable[str]] = None,
    batch_rows: Optional[int] = None,
) -> pa.RecordBatchReader:
    """Stream the table in the ``.tsr`` file at ``path`` as record batches, decoded on the CPU.

    Each batch is decoded when it is read (``read_next_batch``, iteration, or a consumer of the
    reader's Arrow C stream such as DuckDB or Polars), not ahead: peak memory follows the
    batch, about one chunk of each column, not the file. The file stays open (mapped) as long
    as the reader lives and is closed once the reader is exhausted or dropped.

    Args:
        columns: the names of the fields to read, in the order wanted (default: all).
        batch_rows: rows per batch, the last one may hold fewer (default: the file's chunk
            rows, ``chunk_values`` when it was written).

    Returns:
        A ``pyarrow.RecordBatchReader`` (through the Arrow C Stream interface), its schema
        that of :func:`read_table`.

    Raises:
        TesseraError: at the call, when the file is missing, damaged in its directory or a
            dictionary, or not a table, or a column is not in it.
        pyarrow.ArrowInvalid: when a later batch is read and a chunk it needs is damaged: the
            message is tessera's (``PATH: column 'x' chunk 3: ...``); the stream ends there.
    """
    if isinstance(columns, str):
        raise TypeError("columns is a list of names, not one string")
    if batch_rows is not None:
        if not isinstance(batch_rows, int):
            raise TypeError(f"batch_rows must be an int, not {type(batch_rows).__name__}")
        if batch_rows < 1:
            raise ValueError(f"batch_rows must be at least 1, not {batch_rows}")
    names = None if columns is None else [str(c) for c in columns]
    return _tessera.read_batches(os.fspath(path), names, batch_rows)


def read_device(path: PathLike, *, columns: Optional[Iterable[str]] = None) -> DeviceTable:
    """Decode the table in the ``.tsr`` file at ``path`` on the GPU and leave it there.

    Returns a :class:`DeviceTable` whose columns stay in GPU memory (CUDA device 0), for GPU
    libraries to use without a copy:

    * the table and each :class:`DeviceColumn` implement the Arrow PyCapsule device protocol
      (``__arrow_c_device_array__``, ``__arrow_c_schema__``): the table as a struct array
      whose children are the columns, as Arrow exports a record batch; ``device_type`` 2
      (CUDA), ``sync_event`` null (the read waited for the GPU before returning);
    * each column's buffers (:attr:`DeviceColumn.values`, ``.validity``, ``.offsets``) are
      :class:`DeviceBuffer` objects with ``__cuda_array_interface__`` (version 3), e.g.
      ``cupy.asarray(table["x"].values)``.

    The device memory lives as long as any of these objects, or an array a consumer imported
    from a capsule, does. The layout is Arrow's, as decoded by the GPU read:

    * integers, floats, dates, times, timestamps, durations: one value a row at the type's
      width (``<i8`` for 64-bit times, timestamps and durations);
    * decimal128: 16 bytes a row, seen as ``(rows, 2)`` ``<u8`` words, low then high, of the
      two's-complement value (the stored ``i64`` widened on the device);
    * booleans and validity bitmaps: bits, least significant first, ``ceil(rows / 8)``
      ``|u1`` bytes; a set validity bit is a valid row; no validity when a column has no
      nulls;
    * utf8 and binary: ``rows + 1`` offsets (``<i4``, ``<i8`` for the large types) into the
      bytes, rebased to start at 0; the bytes buffer may be longer than the last offset;
    * dictionaries (Arrow dictionary fields, and fields the writer dictionary-encoded on its
      own, which :func:`read_table` gives as plain values): the codes at the key type's
      width, the values in :attr:`DeviceColumn.dictionary`.

    :meth:`DeviceTable.to_arrow` copies the table to host memory as a ``pyarrow.Table`` (of
    these device types, checked as any Arrow data from outside).

    Args:
        columns: the names of the fields to read, in the order wanted (default: all).

    Raises:
        TesseraError: no GPU can be used (the message says why: no driver, no device, no
            NVRTC), the file is missing, damaged or not a table, or a column is not in it.
    """
    if isinstance(columns, str):
        raise TypeError("columns is a list of names, not one string")
    names = None if columns is None else [str(c) for c in columns]
    return _tessera.read_device(os.fspath(path), names)


def read_schema(path: PathLike) -> pa.Schema:
    """The Arrow schema of the table in the ``.tsr`` file at ``path``, without decoding it."""
    return _tessera.read_schema(os.fspath(path))


def inspect(path: PathLike) -> Dict[str, Any]:
    """A summary of the ``.tsr`` file at ``path``, as ``tessera inspect --json`` reports it.

    Returns a dict with ``version``, ``file_bytes``, ``rows`` (``None`` for a file of plain
    columns), ``fields`` (each Arrow field's ``name``, ``type``, ``nullable`` and the physical
    ``columns`` that hold it, by role) and ``columns`` (each physical column's ``name``,
    ``type``, ``values``, ``chunks``, ``codecs`` chosen with their chunk counts,
    ``compressed_bytes`` and ``uncompressed_bytes``, ``None`` for text).
    """
    return _tessera.inspect(os.fspath(path))
