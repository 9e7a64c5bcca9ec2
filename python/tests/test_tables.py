"""The tessera Python package: pyarrow tables through .tsr files and back, and what must fail."""

import datetime
import decimal
import os
import pathlib
import shutil
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tessera

REPO = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = REPO / "testdata" / "v1" / "tables"

# Every Arrow type tessera stores (docs/format/table.md §3) but float16 (pyarrow builds half
# floats only from numpy), with values from the type's whole range.
INT_RANGES = {
    pa.int8(): (-(2**7), 2**7 - 1),
    pa.int16(): (-(2**15), 2**15 - 1),
    pa.int32(): (-(2**31), 2**31 - 1),
    pa.int64(): (-(2**63), 2**63 - 1),
    pa.uint8(): (0, 2**8 - 1),
    pa.uint16(): (0, 2**16 - 1),
    pa.uint32(): (0, 2**32 - 1),
    pa.uint64(): (0, 2**64 - 1),
}


def _values(kind, n):
    """`n` Python values of a column kind: varied, extremes included, repeats included."""
    if isinstance(kind, pa.DataType) and kind in INT_RANGES:
        lo, hi = INT_RANGES[kind]
        span = hi - lo
        return [lo + (i * 2654435761 % (span + 1)) if i % 7 else (lo if i % 2 else hi) for i in range(n)]
    if kind == "bool":
        return [(i * 7) % 3 == 0 for i in range(n)]
    if kind == "f32":
        return [float(i % 100) / 4 - 3.5 if i % 11 else float("inf") for i in range(n)]
    if kind == "f64":
        return [(i % 1000) / 100 - 2.5 if i % 13 else (-0.0 if i % 2 else 1e300) for i in range(n)]
    if kind == "utf8":
        return [f"row {i} {'é' * (i % 4)}" for i in range(n)]
    if kind == "binary":
        return [bytes([i % 256, (i * 3) % 256]) * (i % 5) for i in range(n)]
    if kind == "date":
        return [datetime.date(1970, 1, 1) + datetime.timedelta(days=i * 37 - 5000) for i in range(n)]
    if kind == "decimal":
        return [decimal.Decimal(i * 12345 - 999999) / 100 for i in range(n)]
    if kind == "decimal18":
        return [decimal.Decimal(10**18 - 1 - i) for i in range(n)]
    if kind in ("ts", "time", "duration"):
        return [i * 1_000_003 - 50_000 for i in range(n)] if kind != "time" else [i * 997 for i in range(n)]
    raise AssertionError(kind)


# (name, Arrow type, value kind)
FIELDS = [(str(t), t, t) for t in INT_RANGES] + [
    ("bool", pa.bool_(), "bool"),
    ("f32", pa.float32(), "f32"),
    ("f64", pa.float64(), "f64"),
    ("utf8", pa.string(), "utf8"),
    ("large_utf8", pa.large_string(), "utf8"),
    ("binary", pa.binary(), "binary"),
    ("large_binary", pa.large_binary(), "binary"),
    ("date32", pa.date32(), "date"),
    ("date64", pa.date64(), "date"),
    ("ts_s_tz", pa.timestamp("s", tz="Europe/Paris"), "ts"),
    ("ts_ms_utc", pa.timestamp("ms", tz="UTC"), "ts"),
    ("ts_us", pa.timestamp("us"), "ts"),
    ("ts_ns_tz", pa.timestamp("ns", tz="America/New_York"), "ts"),
    ("time32", pa.time32("ms"), "time"),
    ("time64", pa.time64("us"), "time"),
    ("duration", pa.duration("ms"), "duration"),
    ("decimal_10_2", pa.decimal128(10, 2), "decimal"),
    ("decimal_18_0", pa.decimal128(18, 0), "decimal18"),
]


def _column(t, kind, n, nulls):
    vals = _values(kind, n)
    if nulls == "some":
        vals = [None if i % 5 == 2 else v for i, v in enumerate(vals)]
    elif nulls == "all":
        vals = [None] * n
    return pa.array(vals, type=t)


def _table(n, nulls):
    cols = {name: _column(t, kind, n, nulls) for name, t, kind in FIELDS}
    keys = [None if nulls == "all" or (nulls == "some" and i % 4 == 0) else i % 3 for i in range(n)]
    # All-null keys here still index a non-empty dictionary; an empty one has its own test.
    cols["dict_utf8"] = pa.DictionaryArray.from_arrays(
        pa.array(keys, type=pa.int8()), pa.array(["red", "green", "blue"])
    )
    cols["dict_i32_keys"] = pa.DictionaryArray.from_arrays(
        pa.array([(i * 3) % 4 for i in range(n)], type=pa.int32()), pa.array(["a", "bb", "ccc", "dddd"])
    )
    return pa.table(cols)


@pytest.mark.parametrize("nulls", ["none", "some", "all"])
def test_every_type_round_trips(tmp_path, nulls):
    table = _table(3000, nulls)
    path = tmp_path / "t.tsr"
    tessera.write_table(table, path, chunk_values=1024)
    back = tessera.read_table(path, device="cpu")
    assert back.schema == table.schema
    assert back.equals(table), _first_difference(table, back)
    assert tessera.read_schema(path) == table.schema


def _first_difference(a, b):
    for name in a.column_names:
        if not a[name].equals(b[name]):
            x, y = a[name].to_pylist(), b[name].to_pylist()
            i = next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), None)
            return f"column {name} differs at row {i}: {x[i] if i is not None else x[:3]} vs {y[i] if i is not None else y[:3]}"
    return "schemas or metadata differ"


def test_float_bit_patterns_survive(tmp_path):
    # NaN payloads, -0.0 and infinities are kept bit for bit (compared as bytes: NaN != NaN).
    vals = [1.5, float("nan"), -0.0, float("inf"), float("-inf"), 0.1, 2.25] * 300
    for floats in ("auto", "alp", "plain"):
        table = pa.table({"x": pa.array(vals, type=pa.float64()), "y": pa.array(vals, type=pa.float32())})
        path = tmp_path / f"{floats}.tsr"
        tessera.write_table(table, path, floats=floats, chunk_values=512)
        back = tessera.read_table(path).combine_chunks()
        for name in ("x", "y"):
            src, got = table[name].chunk(0), back[name].chunk(0)
            width = 8 if name == "x" else 4
            assert got.buffers()[1].to_pybytes()[: len(vals) * width] == src.buffers()[1].to_pybytes()[: len(vals) * width]


def test_streams_batch_by_batch(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])

    def batches():
        for b in range(5):
            ids = list(range(b * 1000, (b + 1) * 1000))
            yield pa.record_batch([pa.array(ids), pa.array([f"n{i % 37}" for i in ids])], schema=schema)

    reader = pa.RecordBatchReader.from_batches(schema, batches())
    path = tmp_path / "s.tsr"
    tessera.write_table(reader, path, chunk_values=512)
    expected = pa.Table.from_batches(list(batches()), schema=schema)
    assert tessera.read_table(path).equals(expected)
    info = tessera.inspect(path)
    assert info["rows"] == 5000
    ids = next(c for c in info["columns"] if c["name"] == "id")
    assert ids["chunks"] == 10 and ids["values"] == 5000
    assert sum(ids["codecs"].values()) == 10


def test_takes_any_arrow_stream_and_a_record_batch(tmp_path):
    table = pa.table({"a": [1, 2, 3], "b": ["x", None, "z"]})

    class OnlyCapsule:
        """A producer that is not pyarrow: only the PyCapsule stream interface."""

        def __arrow_c_stream__(self, requested_schema=None):
            return table.__arrow_c_stream__(requested_schema)

    for i, data in enumerate([OnlyCapsule(), table.to_batches()[0], table.to_reader()]):
        path = tmp_path / f"{i}.tsr"
        tessera.write_table(data, str(path))
        assert tessera.read_table(path).equals(table)
    with pytest.raises(TypeError, match="write_table takes"):
        tessera.write_table([1, 2, 3], tmp_path / "x.tsr")


def test_empty_table(tmp_path):
    table = pa.table({"a": pa.array([], type=pa.int32()), "s": pa.array([], type=pa.string())})
    path = tmp_path / "e.tsr"
    tessera.write_table(table, path)
    back = tessera.read_table(path)
    assert back.num_rows == 0 and back.schema == table.schema


def test_column_selection(tmp_path):
    table = _table(2000, "some")
    path = tmp_path / "t.tsr"
    tessera.write_table(table, path)
    picked = ["utf8", "int8", "dict_utf8", "ts_ns_tz"]
    back = tessera.read_table(path, columns=picked)
    assert back.column_names == picked
    assert back.equals(table.select(picked))
    with pytest.raises(TypeError):
        tessera.read_table(path, columns="utf8")


def test_options_are_honoured(tmp_path):
    # Sorted, low-cardinality values: the automatic rules store them as runs or a dictionary;
    # with both turned off the field is one plain values column.
    table = pa.table({"month": pa.array([i // 500 % 12 for i in range(6000)], type=pa.int32())})
    auto, plain = tmp_path / "auto.tsr", tmp_path / "plain.tsr"
    tessera.write_table(table, auto)
    tessera.write_table(table, plain, dictionary="never", runs="never")
    roles = lambda p: set(tessera.inspect(p)["fields"][0]["columns"])  # noqa: E731
    assert roles(plain) == {"values"}
    assert roles(auto) != {"values"}
    for p in (auto, plain):
        assert tessera.read_table(p).equals(table)
    for bad in [dict(codec="zstd"), dict(dictionary="always"), dict(floats="x"), dict(runs="yes")]:
        with pytest.raises(ValueError):
            tessera.write_table(table, tmp_path / "bad.tsr", **bad)
    with pytest.raises(tessera.TesseraError, match="multiple of 512"):
        tessera.write_table(table, tmp_path / "bad.tsr", chunk_values=1000)
    assert not (tmp_path / "bad.tsr").exists()


def test_empty_dictionary_round_trips(tmp_path):
    table = pa.table({"d": pa.array([None] * 10, type=pa.string()).dictionary_encode()})
    path = tmp_path / "e.tsr"
    tessera.write_table(table, path)
    assert tessera.read_table(path)["d"].to_pylist() == [None] * 10


def test_golden_dictionary_table():
    # testdata/v1/tables/dictionary.tsr, built by crates/tessera/tests/arrow.rs: 1500 rows of an
    # Int8-keyed dictionary, null every 17th row, else red, green, blue in turn.
    expected = pa.array(
        [None if i % 17 == 0 else ["red", "green", "blue"][i % 3] for i in range(1500)]
    )
    back = tessera.read_table(GOLDEN / "dictionary.tsr")
    assert back.schema.field("colour").type == pa.dictionary(pa.int8(), pa.string())
    assert back["colour"].to_pylist() == expected.to_pylist()


def test_golden_runs_table():
    # testdata/v1/tables/runs.tsr (runs_batch(3000, 0, 9) in crates/tessera/tests/arrow.rs).
    back = tessera.read_table(GOLDEN / "runs.tsr", columns=["year", "month", "day", "rate"])
    n = 3000
    assert back["year"].to_pylist() == [None if i % 11 == 3 else 2013 for i in range(n)]
    assert back["month"].to_pylist() == [(i // 900) % 12 + 1 for i in range(n)]
    assert back["day"].to_pylist() == [(i // 70) % 31 + 1 for i in range(n)]
    assert back["rate"].to_pylist() == [0.25] * n
    assert back.schema.field("month").type == pa.uint8()


# ---- what must fail ----


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.tsr"
    for call in (tessera.read_table, tessera.read_schema, tessera.inspect):
        with pytest.raises(tessera.TesseraError, match="nope.tsr"):
            call(missing)


def test_corrupt_file(tmp_path):
    table = _table(3000, "some")
    path = tmp_path / "t.tsr"
    tessera.write_table(table, path)
    good = path.read_bytes()
    # Flip bytes in the payloads (the middle of the file) and in the directory (near the end):
    # each is caught by a checksum.
    for at in (len(good) // 2, len(good) - 40):
        bad = bytearray(good)
        bad[at] ^= 0x5A
        bad[at + 1] ^= 0xFF
        damaged = tmp_path / f"bad-{at}.tsr"
        damaged.write_bytes(bytes(bad))
        with pytest.raises(tessera.TesseraError, match="checksum|invalid|bad|truncated"):
            tessera.read_table(damaged)
    cut = tmp_path / "cut.tsr"
    cut.write_bytes(good[: len(good) // 3])
    with pytest.raises(tessera.TesseraError):
        tessera.read_table(cut)
    noise = tmp_path / "noise.tsr"
    noise.write_bytes(b"not a tessera file at all" * 10)
    with pytest.raises(tessera.TesseraError, match="magic"):
        tessera.read_schema(noise)


def test_file_of_plain_columns_is_not_a_table():
    path = REPO / "testdata" / "v1" / "auto-u32.tsr"
    with pytest.raises(tessera.TesseraError, match="not an Arrow table"):
        tessera.read_table(path)
    info = tessera.inspect(path)  # the summary still works
    assert info["fields"] is None and info["columns"][0]["type"] == "u32"


def test_missing_column(tmp_path):
    path = tmp_path / "t.tsr"
    tessera.write_table(pa.table({"a": [1]}), path)
    with pytest.raises(tessera.TesseraError, match="no column 'b'"):
        tessera.read_table(path, columns=["a", "b"])


def test_unsupported_type_names_its_column(tmp_path):
    table = pa.table({"ok": [1, 2], "tags": pa.array([[1, 2], [3]], type=pa.list_(pa.int64()))})
    path = tmp_path / "t.tsr"
    with pytest.raises(tessera.TesseraError, match="column 'tags'.*List"):
        tessera.write_table(table, path)
    assert not path.exists()
    wide = pa.table({"d": pa.array([decimal.Decimal("1.5")], type=pa.decimal128(30, 2))})
    with pytest.raises(tessera.TesseraError, match="column 'd'.*precision at most 18"):
        tessera.write_table(wide, path)
    assert not path.exists()


def test_failed_write_leaves_no_file(tmp_path):
    schema = pa.schema([("x", pa.int64())])

    def batches():
        yield pa.record_batch([pa.array(range(5000))], schema=schema)
        raise RuntimeError("the producer broke")

    path = tmp_path / "t.tsr"
    with pytest.raises(tessera.TesseraError, match="the producer broke"):
        tessera.write_table(pa.RecordBatchReader.from_batches(schema, batches()), path, chunk_values=512)
    assert list(tmp_path.iterdir()) == []
    # An existing file stays as it was.
    good = pa.table({"x": [7, 8, 9]})
    tessera.write_table(good, path)
    before = path.read_bytes()
    with pytest.raises(tessera.TesseraError):
        tessera.write_table(pa.RecordBatchReader.from_batches(schema, batches()), path, chunk_values=512)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.tsr"]
    assert tessera.read_table(path).equals(good)


def test_bad_device_name(tmp_path):
    path = tmp_path / "t.tsr"
    tessera.write_table(pa.table({"a": [1]}), path)
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        tessera.read_table(path, device="tpu")


def test_panic_becomes_an_exception():
    with pytest.raises(tessera.TesseraError, match="internal error.*boom"):
        tessera._tessera._panic_for_tests("boom")
    # The interpreter and the module still work afterwards.
    assert tessera.TesseraError.__module__ == "tessera"


# ---- devices ----


def _gpu_opens(path):
    try:
        tessera.read_table(path, device="gpu")
        return True, ""
    except tessera.TesseraError as e:
        return False, str(e)


def test_auto_device_reads_like_cpu(tmp_path):
    table = _table(2000, "some")
    path = tmp_path / "t.tsr"
    tessera.write_table(table, path)
    assert tessera.read_table(path, device="auto").equals(tessera.read_table(path, device="cpu"))


def test_gpu_device(tmp_path):
    table = _table(2000, "some")
    path = tmp_path / "t.tsr"
    tessera.write_table(table, path)
    ok, why = _gpu_opens(path)
    if not ok:
        assert "device 'gpu' cannot be used" in why and "GPU" in why, why
        if os.environ.get("TESSERA_REQUIRE_GPU") == "1":
            pytest.fail(f"TESSERA_REQUIRE_GPU=1 but the GPU read failed: {why}")
        pytest.skip(f"no GPU ({why}); the error is clear, checked above")
    assert tessera.read_table(path, device="gpu").equals(table)


# ---- the CLI's files ----


def _cli():
    exe = os.environ.get("TESSERA_CLI") or shutil.which("tessera")
    for candidate in (exe, REPO / "target" / "debug" / "tessera", REPO / "target" / "release" / "tessera"):
        if candidate and pathlib.Path(candidate).is_file():
            return str(candidate)
    if os.environ.get("TESSERA_REQUIRE_PYTHON") == "1":
        pytest.fail("the tessera CLI is not built (cargo build -p tessera-cli) and TESSERA_REQUIRE_PYTHON=1")
    pytest.skip("the tessera CLI is not built: cargo build -p tessera-cli, or set TESSERA_CLI")


def test_cli_output_reads_equal_to_the_source(tmp_path):
    cli = _cli()
    # Second timestamps are not a Parquet type: pyarrow writes them as milliseconds, which
    # arrow-rs does not turn back into seconds with their zone; every other type goes through.
    table = _table(2500, "some").drop_columns(["ts_s_tz"])
    src = tmp_path / "src.parquet"
    pq.write_table(table, src)
    out = tmp_path / "cli.tsr"
    subprocess.run([cli, "compress", str(src), str(out)], check=True, capture_output=True)
    # Compared with the table the Parquet file was written from: arrow-rs, which the CLI reads
    # Parquet with, restores the Arrow schema stored in the file (pyarrow reads date64 as date32).
    got = tessera.read_table(out)
    assert got.equals(table), _first_difference(table, got)
    # And the other way: a file written here, decompressed by the CLI to Arrow IPC (lossless).
    mine = tmp_path / "py.tsr"
    tessera.write_table(table, mine)
    back = tmp_path / "back.arrow"
    subprocess.run([cli, "decompress", "--device", "cpu", str(mine), str(back)], check=True, capture_output=True)
    with pa.ipc.open_file(back) as f:
        assert f.read_all().equals(table)


# ---- the GIL ----


def test_decoding_releases_the_gil(tmp_path):
    # While one thread reads a table, another runs Python code. Were the GIL held through the
    # call, the other thread's clock ticks would stop for the whole read; released, the longest
    # pause is a scheduling slice (both cores are busy decoding), far below the read's time.
    import threading
    import time

    n = 2_000_000
    table = pa.table({"x": pa.array(range(n), type=pa.int64()), "s": pa.array([f"v{i % 1000}" for i in range(n)])})
    path = tmp_path / "big.tsr"
    tessera.write_table(table, path)
    del table
    span = {}

    def read():
        span["start"] = time.perf_counter()
        tessera.read_table(path, device="cpu")
        span["end"] = time.perf_counter()

    ticks = []
    t = threading.Thread(target=read)
    t.start()
    while t.is_alive():
        ticks.append(time.perf_counter())
    t.join()
    start, end = span["start"], span["end"]
    took = end - start
    if took < 0.05:
        pytest.skip(f"the read took {took * 1000:.1f} ms, too short to tell")
    inside = [start] + [x for x in ticks if start < x < end] + [end]
    longest = max(b - a for a, b in zip(inside, inside[1:]))
    assert longest < 0.5 * took, f"Python stalled {longest * 1000:.0f} ms of a {took * 1000:.0f} ms read"
