#!/usr/bin/env python3
"""Peer for `tessera-bench tables`: pyarrow's Parquet reader, all cores.

Usage: tables_pyarrow.py RUNS FILE.parquet [FILE.parquet ...]

For each file, reads the whole table into host memory with `pyarrow.parquet.read_table`
(`use_threads=True`, so every core) once as a warm-up and then RUNS times, and prints one JSON
object: {"pyarrow": VERSION, "threads": N, "ms": {FILE: median wall ms}}. Exits 2 with a message
on stderr when pyarrow is missing, so the caller can say why the column is empty.
"""
import json
import statistics
import sys
import time

try:
    import pyarrow
    import pyarrow.parquet as pq
except ImportError as e:  # the caller reports the column as not measured
    print(f"pyarrow is not installed: {e}", file=sys.stderr)
    sys.exit(2)


def main() -> None:
    runs = int(sys.argv[1])
    out = {}
    for path in sys.argv[2:]:
        pq.read_table(path, use_threads=True)
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            table = pq.read_table(path, use_threads=True)
            times.append((time.perf_counter() - t) * 1e3)
            assert table.num_rows >= 0
        out[path] = statistics.median(times)
    print(json.dumps({"pyarrow": pyarrow.__version__, "threads": pyarrow.cpu_count(), "ms": out}))


if __name__ == "__main__":
    main()
