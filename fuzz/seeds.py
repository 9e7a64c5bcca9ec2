#!/usr/bin/env python3
"""Builds seed corpora for the decoder fuzz targets from the golden .tsr files.

Each decoder seed is [logical type index][value count u16 LE][chunk payload], the input shape
fuzz/src/lib.rs expects. Container seeds are the golden files themselves.
Usage: python3 fuzz/seeds.py (from anywhere)
"""
import os
import struct
import sys

TYPES = {1: 0, 2: 1, 3: 2, 4: 3, 5: 4, 6: 5, 7: 6, 8: 7}  # logical type id -> LogicalType::ALL index
TARGET = {1: "decode_for", 2: "decode_dfor", 3: "decode_rfor"}

def chunks(data):
    dir_off, dir_len = struct.unpack_from("<QQ", data, len(data) - 32)
    d = data[dir_off:dir_off + dir_len]
    (ncol,), p = struct.unpack_from("<I", d, 0), 4
    for _ in range(ncol):
        (nlen,) = struct.unpack_from("<H", d, p); p += 2 + nlen
        ty, _req, plen = struct.unpack_from("<BBH", d, p); p += 4 + plen
        _count, nchunks = struct.unpack_from("<QI", d, p); p += 12
        for _ in range(nchunks):
            off, size, count, codec = struct.unpack_from("<QIIB", d, p); p += 32
            yield ty, codec, count, data[off:off + size]

def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    src = "testdata/v1"
    for t in list(TARGET.values()) + ["container_open"]:
        os.makedirs(f"fuzz/corpus/{t}", exist_ok=True)
    n = 0
    for name in sorted(os.listdir(src)):
        if not name.endswith(".tsr"):
            continue
        data = open(os.path.join(src, name), "rb").read()
        open(f"fuzz/corpus/container_open/{name}", "wb").write(data)
        for i, (ty, codec, count, payload) in enumerate(chunks(data)):
            if codec in TARGET and count < 65536:
                seed = bytes([TYPES[ty]]) + struct.pack("<H", count) + payload
                open(f"fuzz/corpus/{TARGET[codec]}/{name}-{i}", "wb").write(seed)
                n += 1
    # Huffman seeds: [byte count u16 LE][payload], from the golden payloads and their .raw
    # lengths (testdata/v1/huffman/README.md lists them).
    hsrc = os.path.join(src, "huffman")
    os.makedirs("fuzz/corpus/decode_huffman", exist_ok=True)
    counts = {"text": len(open(os.path.join(hsrc, "text.raw"), "rb").read()),
              "skewed": 9000, "single": 5000, "uniform": 777}
    for name, count in counts.items():
        payload = open(os.path.join(hsrc, f"{name}.huf"), "rb").read()
        open(f"fuzz/corpus/decode_huffman/{name}", "wb").write(struct.pack("<H", count) + payload)
        n += 1
    # Bitmap seeds: the golden WAH / PLWAH payloads as they are (testdata/v1/bitmap/README.md).
    bsrc = os.path.join(src, "bitmap")
    for ext in ("wah", "plwah"):
        os.makedirs(f"fuzz/corpus/decode_{ext}", exist_ok=True)
        for name in sorted(os.listdir(bsrc)):
            if name.endswith("." + ext):
                data = open(os.path.join(bsrc, name), "rb").read()
                open(f"fuzz/corpus/decode_{ext}/{name}", "wb").write(data)
                n += 1
    # ORC file seeds: the small ORC test files as they are (testdata/orc/README.md).
    os.makedirs("fuzz/corpus/orc_file", exist_ok=True)
    for name in sorted(os.listdir("testdata/orc")):
        p = os.path.join("testdata/orc", name)
        if name.endswith(".orc") and os.path.getsize(p) <= 64 << 10:
            open(f"fuzz/corpus/orc_file/{name}", "wb").write(open(p, "rb").read())
            n += 1
    print(f"wrote {n} decoder seeds", file=sys.stderr)

main()
