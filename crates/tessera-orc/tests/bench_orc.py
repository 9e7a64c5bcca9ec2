#!/usr/bin/env python3
"""The ORC file of `tessera-bench orc` (bench/results/orc-h200.md): ROWS rows written by pyarrow
(ORC's default ZLIB compression, pyarrow's other defaults), then pyarrow's ORC reader timed on
it (median of RUNS reads, all host cores allowed). Prints one JSON line.

Usage: python3 bench_orc.py OUT.orc ROWS [RUNS] [STRIPE_BYTES]
(STRIPE_BYTES: pyarrow's stripe_size, its default 64 MiB when left out.)
"""
import json
import os
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.orc as orc


def table(n):
    rng = np.random.default_rng(1)
    nulls = rng.random(n) < 0.1
    cities = pa.array(["city-%03d" % i for i in range(100)])
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "qty": pa.array(rng.integers(1, 51, n).astype(np.int32)),
        "price": pa.array(rng.integers(0, 10**7, n).astype(np.int64), mask=nulls),
        "discount": pa.array(rng.random(n)),
        "flag": pa.array(rng.random(n) < 0.5),
        "day": pa.array(rng.integers(8000, 11000, n).astype(np.int32)).cast(pa.date32()),
        "city": cities.take(pa.array(rng.integers(0, 100, n))),
        "ts": pa.array(1_600_000_000 * 10**9 + np.sort(rng.integers(0, 10**15, n)), pa.timestamp("ns")),
    })


def main():
    path, n = sys.argv[1], int(sys.argv[2])
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    stripe = {"stripe_size": int(sys.argv[4])} if len(sys.argv) > 4 else {}
    t0 = time.time()
    t = table(n)
    orc.write_table(t, path, compression="zlib", **stripe)
    write_s = time.time() - t0
    arrow_bytes = t.nbytes
    del t
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = orc.read_table(path)
        times.append(time.perf_counter() - t0)
        rows = r.num_rows
        del r
    times.sort()
    f = orc.ORCFile(path)
    print(json.dumps({
        "rows": rows, "file_bytes": os.path.getsize(path), "stripes": f.nstripes,
        "arrow_bytes": arrow_bytes, "pyarrow": pa.__version__, "cpu_count": pa.cpu_count(),
        "write_s": round(write_s, 2), "pyarrow_read_ms": round(times[len(times) // 2] * 1e3, 1),
        "pyarrow_read_ms_all": [round(x * 1e3, 1) for x in times],
    }))


if __name__ == "__main__":
    main()
