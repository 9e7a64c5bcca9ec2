"""tessera.read_batches: a table file streamed as record batches, decoded one at a time."""

import gc
import os
import pathlib

import pyarrow as pa
import pytest

import tessera
from test_tables import _first_difference, _table


def test_batches_equal_read_table(tmp_path):
    table = _table(3000, "some")
    path = tmp_path / "t.tsr"
    tessera.write_table(table, path, chunk_values=1024)
    reader = tessera.read_batches(path)
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema == table.schema
    batches = list(reader)
    # Default batches: the file's chunk rows.
    assert [b.num_rows for b in batches] == [1024, 1024, 952]
    back = pa.Table.from_batches(batches, schema=reader.schema)
    assert back.equals(tessera.read_table(path, device="cpu")), _first_difference(table, back)
    assert back.equals(table)

    picked = ["utf8", "dict_utf8", "int64"]
    reader = tessera.read_batches(path, columns=picked, batch_rows=700)
    batches = list(reader)
    assert [b.num_rows for b in batches] == [700, 700, 700, 700, 200]
    assert pa.Table.from_batches(batches).equals(table.select(picked))


def test_batches_of_an_empty_table(tmp_path):
    table = pa.table({"a": pa.array([], type=pa.int32()), "s": pa.array([], type=pa.string())})
    path = tmp_path / "e.tsr"
    tessera.write_table(table, path)
    reader = tessera.read_batches(path)
    assert reader.schema == table.schema
    assert list(reader) == []


def test_errors_at_open(tmp_path):
    with pytest.raises(tessera.TesseraError, match="nope.tsr"):
        tessera.read_batches(tmp_path / "nope.tsr")
    path = tmp_path / "t.tsr"
    tessera.write_table(pa.table({"a": [1, 2]}), path)
    with pytest.raises(tessera.TesseraError, match="no column 'b'"):
        tessera.read_batches(path, columns=["b"])
    with pytest.raises(ValueError, match="batch_rows"):
        tessera.read_batches(path, batch_rows=0)
    with pytest.raises(TypeError):
        tessera.read_batches(path, columns="a")


def _mapped(path):
    """Whether this process maps the file at `path` (Linux: /proc/self/maps)."""
    with open("/proc/self/maps") as f:
        return str(path) in f.read()


def _threads():
    return len(os.listdir("/proc/self/task"))


@pytest.mark.skipif(not pathlib.Path("/proc/self/maps").exists(), reason="needs Linux's /proc to see mapped files")
def test_reader_keeps_the_file_until_dropped(tmp_path):
    table = pa.table({"x": pa.array(range(8192), type=pa.int64()), "s": [f"v{i % 13}" for i in range(8192)]})
    path = (tmp_path / "t.tsr").resolve()
    tessera.write_table(table, path, chunk_values=1024)
    assert not _mapped(path)

    reader = tessera.read_batches(path)
    first = reader.read_next_batch()
    assert first.num_rows == 1024 and first.equals(table.slice(0, 1024).to_batches()[0])
    # The file stays mapped while the reader lives, even when its name is gone.
    moved = path.parent / "moved.tsr"
    os.rename(path, moved)
    assert _mapped(moved)
    second = reader.read_next_batch()
    assert second.equals(table.slice(1024, 1024).to_batches()[0])

    # Dropped half-way: the file is unmapped and the reader's decoding thread gone once the
    # reader is (counted right before and after, so no other thread comes or goes between).
    alive = _threads()
    del reader
    gc.collect()
    assert not _mapped(moved)
    assert _threads() == alive - 1

    # Read to the end: the same once the last batch has been given, the reader still held.
    reader = tessera.read_batches(moved)
    alive = _threads()
    assert sum(b.num_rows for b in reader) == 8192
    assert not _mapped(moved) and _threads() == alive - 1


def test_corrupt_later_chunk_fails_when_read(tmp_path):
    # Two files that differ only in their last chunk's values: the first byte where they
    # differ is in that chunk's payload. Flipping it in the first file damages its last chunk
    # only, which its checksum catches when that chunk is decoded.
    def write(values, name):
        path = tmp_path / name
        tessera.write_table(pa.table({"a": pa.array(values, type=pa.int64())}), path, chunk_values=1024)
        return path, path.read_bytes()

    good = list(range(4096))
    path, a = write(good, "a.tsr")
    _, b = write(good[:3072] + [i * 3 for i in range(1024)], "b.tsr")
    at = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
    bad = bytearray(a)
    bad[at] ^= 0xFF
    damaged = tmp_path / "damaged.tsr"
    damaged.write_bytes(bytes(bad))
    with pytest.raises(tessera.TesseraError, match="checksum"):
        tessera.read_table(damaged)

    reader = tessera.read_batches(damaged)
    for k in range(3):
        assert reader.read_next_batch().column(0).to_pylist() == good[k * 1024 : (k + 1) * 1024]
    # The error is pyarrow's (the C stream's), carrying tessera's message: path, column, chunk.
    with pytest.raises(pa.ArrowInvalid, match=r"damaged\.tsr: checksum mismatch in column 'a' .*chunk 3"):
        reader.read_next_batch()
    # The stream ends there.
    with pytest.raises(StopIteration):
        reader.read_next_batch()
