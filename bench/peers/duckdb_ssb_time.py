#!/usr/bin/env python3
"""DuckDB on the 13 SSB queries: the SQL engine tessera's CPU path is measured against.

Loads the Parquet export of a data set (`tessera ssb generate --sf N --parquet DIR`:
DIR/parquet/<table>.parquet) into DuckDB's in-memory tables, or the CSV export (`--csv`:
DIR/csv/<table>.csv; the files the folder holds decide, Parquet first, unless --format says),
then runs each query --runs times after one warm-up and prints JSON: {"threads": N, "load_s": S,
"format": "parquet", "queries": {"q1.1": {"ms": median, "rows": n}, ...}}. The loading and the
SQL are the DuckDB check test's (crates/tessera-ssb/tests/duckdb_ssb.py), so the answers are the
ones that test compares with tessera's.

With --tessera FILE (the output of `tessera ssb run DIR --device cpu --repeat 3 --json`), the
JSON also holds per query tessera's time and tessera / DuckDB, their geometric mean, and whether
both returned the same rows (every group's keys and aggregate, compared as sorted lists, as the
DuckDB check test compares them); --markdown FILE also writes that comparison as a Markdown
table to FILE. The exit status is 1 when any query's results differ.

Usage: python3 bench/peers/duckdb_ssb_time.py EXPORT_DIR [--format parquet|csv] [--runs 3]
           [--threads N] [--tessera FILE [--markdown FILE]]
"""

import argparse
import importlib.util
import json
import math
import os
import statistics
import sys
import time


def load_check_module():
    """crates/tessera-ssb/tests/duckdb_ssb.py: the queries and the loading of the tables."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "crates", "tessera-ssb", "tests", "duckdb_ssb.py")
    spec = importlib.util.spec_from_file_location("duckdb_ssb", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("export_dir", help="DATA/parquet or DATA/csv of `tessera ssb generate`")
    ap.add_argument("--format", choices=["parquet", "csv"], help="default: what the folder holds")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--tessera", help="tessera ssb run --json output to compare with")
    ap.add_argument("--markdown", help="write the comparison as a Markdown table to this file")
    a = ap.parse_args()
    import duckdb

    check = load_check_module()
    con = duckdb.connect()
    con.execute(f"set threads = {a.threads}")
    t = time.perf_counter()
    fmt = check.load_tables(con, a.export_dir, a.format)
    load_s = time.perf_counter() - t
    out = {
        "threads": a.threads,
        "load_s": load_s,
        "format": fmt,
        "duckdb": duckdb.__version__,
        "queries": {},
    }
    results = {}  # per query DuckDB's rows: keys as text, the aggregate as an integer
    for name, sql in check.QUERIES.items():
        rows = con.execute(sql).fetchall()  # warm-up
        times = []
        for _ in range(max(1, a.runs)):
            t = time.perf_counter()
            con.execute(sql).fetchall()
            times.append((time.perf_counter() - t) * 1e3)
        out["queries"][name] = {"ms": statistics.median(times), "rows": len(rows)}
        # As the check test's script: an aggregate over no rows is no group.
        results[name] = sorted([str(x) for x in r[:-1]] + [int(r[-1])] for r in rows if r[-1] is not None)
    if a.tessera:
        compare(out, a.tessera, results)
        if a.markdown:
            with open(a.markdown, "w") as f:
                markdown(out, f)
    json.dump(out, sys.stdout, indent=1)
    print()
    if any(q.get("same") is False for q in out["queries"].values()):
        sys.exit(1)


def compare(out, path, results):
    """Adds tessera's times (ms), the ratio tessera / DuckDB, the geometric mean, and whether
    tessera's rows equal DuckDB's (`results`)."""
    with open(path) as f:
        t = {q["name"]: q for q in json.load(f)["queries"]}
    logs = []
    for name, q in out["queries"].items():
        if name not in t:
            continue
        q["tessera_ms"] = t[name]["ms"]
        q["tessera_rows"] = len(t[name]["rows"])
        ours = sorted([str(x) for x in r[:-1]] + [int(r[-1])] for r in t[name]["rows"])
        q["same"] = ours == results[name]
        q["ratio"] = q["tessera_ms"] / q["ms"]
        logs.append(math.log(q["ratio"]))
    if logs:
        out["geomean_ratio"] = math.exp(sum(logs) / len(logs))


def markdown(out, f):
    print("| query | tessera CPU ms | DuckDB ms | tessera / DuckDB | rows (both) | same results |", file=f)
    print("| --- | ---: | ---: | ---: | ---: | --- |", file=f)
    for name, q in out["queries"].items():
        if "ratio" not in q:
            continue
        rows = q["rows"] if q["rows"] == q["tessera_rows"] else f"{q['tessera_rows']} vs {q['rows']}"
        same = "yes" if q["same"] else "**no**"
        print(f"| {name} | {q['tessera_ms']:.1f} | {q['ms']:.1f} | {q['ratio']:.2f} | {rows} | {same} |", file=f)
    if "geomean_ratio" in out:
        print(f"\nGeometric mean of tessera / DuckDB: **{out['geomean_ratio']:.2f}x**", file=f)


if __name__ == "__main__":
    main()
