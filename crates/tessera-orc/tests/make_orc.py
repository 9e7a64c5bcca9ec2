#!/usr/bin/env python3
"""Writes the ORC test files of testdata/orc/ with pyarrow, and beside each one the Arrow IPC
file of what pyarrow's ORC reader reads from it (`NAME.expected.arrow`): the tests compare
tessera-orc's batches with those, so they need no pyarrow.

Usage: python3 crates/tessera-orc/tests/make_orc.py testdata/orc [--apache DIR]

--apache DIR: also copy Apache ORC's example files (DIR = apache/orc's `examples/`) named in
APACHE and store pyarrow's reading of their supported columns.
"""
import datetime
import decimal
import os
import random
import shutil
import sys

import pyarrow as pa
import pyarrow.orc as orc

ROWS = 500


def column(rng, kind, nulls):
    def pick(gen):
        out = []
        for i in range(ROWS):
            if nulls == "all" or (nulls == "some" and rng.random() < 0.2):
                out.append(None)
            else:
                out.append(gen(i))
        return out

    words = ["alpha", "beta", "gamma", "δέλτα", "", "epsilon-long-word-" * 3, "z"]
    if kind == "bool":
        return pa.array(pick(lambda i: rng.random() < 0.3), pa.bool_())
    if kind == "i8":
        return pa.array(pick(lambda i: rng.randint(-128, 127)), pa.int8())
    if kind == "i16":
        return pa.array(pick(lambda i: (i // 7) * 3 - 4000), pa.int16())
    if kind == "i32":
        return pa.array(pick(lambda i: rng.choice([rng.randint(-2**31, 2**31 - 1), 17, i])), pa.int32())
    if kind == "i64":
        return pa.array(pick(lambda i: rng.choice([rng.randint(-2**63, 2**63 - 1), 5, i * 1000, 1 << rng.randint(0, 62)])), pa.int64())
    if kind == "f32":
        return pa.array(pick(lambda i: rng.uniform(-1e6, 1e6)), pa.float32())
    if kind == "f64":
        return pa.array(pick(lambda i: rng.choice([rng.gauss(0, 1e9), float("inf"), -0.0, 1.5])), pa.float64())
    if kind == "str":
        return pa.array(pick(lambda i: rng.choice(words) + str(rng.randint(0, 20))), pa.string())
    if kind == "str_unique":
        return pa.array(pick(lambda i: "row %d %s" % (i, "x" * rng.randint(0, 30))), pa.string())
    if kind == "bin":
        return pa.array(pick(lambda i: bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 12)))), pa.binary())
    if kind == "date":
        return pa.array(pick(lambda i: datetime.date(1900, 1, 1) + datetime.timedelta(days=rng.randint(0, 80000))), pa.date32())
    if kind == "ts":
        def ts(i):
            s = rng.randint(-3 * 10**9, 4 * 10**9)
            ns = rng.choice([0, 1000, 123456789, 999999999, 5 * 10**8, 1])
            return s * 10**9 + ns
        return pa.array(pick(ts), pa.timestamp("ns"))
    if kind == "dec":
        return pa.array(pick(lambda i: decimal.Decimal(rng.randint(-10**9, 10**9)) / 100), pa.decimal128(12, 2))
    if kind == "dec38":
        return pa.array(pick(lambda i: decimal.Decimal(rng.randint(-10**36, 10**36)) / 10**6), pa.decimal128(38, 6))
    raise ValueError(kind)


KINDS = ["bool", "i8", "i16", "i32", "i64", "f32", "f64", "str", "str_unique", "bin", "date", "ts", "dec", "dec38"]


def table(seed):
    rng = random.Random(seed)
    cols, names = [], []
    for k in KINDS:
        cols.append(column(rng, k, "some"))
        names.append(k)
    for k in ["i64", "str", "bool", "f64", "ts"]:
        cols.append(column(rng, k, "none"))
        names.append(k + "_nonull")
        cols.append(column(rng, k, "all"))
        names.append(k + "_allnull")
    return pa.table(cols, names=names)


# Expected outputs of larger files keep their first rows only (the file's row count is in the
# schema metadata): the test checks that prefix and the count.
MAX_EXPECTED_ROWS = 4000


def store_expected(path, t):
    t = t.combine_chunks()
    meta = {"total_rows": str(t.num_rows)}
    t = t.slice(0, MAX_EXPECTED_ROWS).replace_schema_metadata(meta)
    opts = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.ipc.new_file(path + ".expected.arrow", t.schema, options=opts) as w:
        for b in t.to_batches():
            w.write_batch(b)


# Apache ORC example files (Apache-2.0) and the columns tessera-orc reads from them.
APACHE = {
    "TestOrcFile.test1.orc": ["boolean1", "byte1", "short1", "int1", "long1", "float1", "double1", "bytes1", "string1"],
    "demo-12-zlib.orc": None,
    "TestOrcFile.testDate1900.orc": ["date"],
    "decimal.orc": None,
    "over1k_bloom.orc": None,
    "TestOrcFile.emptyFile.orc": ["boolean1", "byte1", "short1", "int1", "long1", "float1", "double1", "bytes1", "string1"],
    "TestOrcFile.testTimestamp.orc": None,
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seed = 1
    for version in ["0.11", "0.12"]:
        for comp in ["uncompressed", "zlib", "snappy", "zstd", "lz4"]:
            if version == "0.11" and comp in ("snappy", "lz4"):
                continue
            name = "pyarrow-%s-%s.orc" % (version, comp)
            t = table(seed)
            seed += 1
            p = os.path.join(out, name)
            # Small stripes (several per file), dictionary encoding whenever it pays.
            orc.write_table(t, p, file_version=version, compression=comp, stripe_size=4 * 1024,
                            batch_size=250, dictionary_key_size_threshold=0.8)
            store_expected(p, orc.read_table(p))
    if "--apache" in sys.argv:
        src = sys.argv[sys.argv.index("--apache") + 1]
        for name, cols in APACHE.items():
            p = os.path.join(out, name)
            shutil.copyfile(os.path.join(src, name), p)
            try:
                store_expected(p, orc.read_table(p, columns=cols))
            except Exception as e:  # pyarrow cannot read it either: no expected file
                print("%s: pyarrow: %s" % (name, e))


if __name__ == "__main__":
    main()
