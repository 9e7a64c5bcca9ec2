#!/usr/bin/env python3
"""nvCOMP 6 decompress-then-query for the Star Schema Benchmark, beside tessera's in-query decoding.

Reads the columns `tessera-bench ssb --dump DIR` wrote (DIR/<table>.<column>.u32: the plain
little-endian u32 values of every column a query reads, once per column) and the bench's JSON of
the same run (--tessera: per query the columns it reads, tessera's GPU times, and per column
tessera's compressed bytes). On the GPU, each column is compressed by every nvCOMP codec that
applies (LZ4, Snappy, Deflate, GDeflate, zstd, Cascaded, Bitcomp, ANS; chunks of 64 KiB), and
each encoding is decoded into a preallocated device buffer: a warm-up, then the median of --runs
decodes timed with CUDA events on one stream, the output checked equal to the column.

Per column two choices are kept: nvCOMP's fastest decode ("best speed") and its smallest
encoding ("best ratio"). Per query, nvCOMP decompress-then-query is

    sum over the query's columns of nvCOMP's decode time  +  tessera's plain query time

both measured on this machine (the plain query time in the bench run that dumped the columns):
a sum of two measured times, not one timed pipeline. It is set against tessera's query on its
compressed columns (decoding inside the query kernels). The footprint compares, per column and
in total, tessera's compressed bytes with nvCOMP's best-ratio bytes and the plain bytes.

Writes nvcomp_ssb.json (every configuration) and nvcomp_ssb.md into --out.

Usage on the GPU machine:
  python3 -m pip install -q --no-index --no-deps --target /tmp/site WHEELS/*.whl
  PYTHONPATH=/tmp/site python3 bench/peers/nvcomp_ssb.py --data DIR --tessera ssb-h200.json \
      --out OUTDIR [--runs 5]
"""

import argparse
import json
import math
import os
import sys
import time

from nvcomp_common import gpu_modules, timed

cp = np = nvcomp = None  # imported in main(): --help and --from-json need no GPU

CHUNK = 65536


def gpu_imports():
    global cp, np, nvcomp
    cp, np, nvcomp = gpu_modules()


def configs():
    """(label, algorithm, kwargs): each codec at its default, plus the typed codecs' u32 modes."""
    out = [
        ("lz4", "LZ4", {"data_type": "<u4", "uncomp_chunk_size": CHUNK}),
        ("snappy", "Snappy", {"uncomp_chunk_size": CHUNK}),
        ("deflate", "Deflate", {"uncomp_chunk_size": CHUNK}),
        ("gdeflate", "GDeflate", {"uncomp_chunk_size": CHUNK}),
        ("zstd", "zstd", {"uncomp_chunk_size": CHUNK}),
        ("cascaded", "Cascaded", {"data_type": "<u4", "uncomp_chunk_size": CHUNK}),
        ("bitcomp-t0", "Bitcomp", {"data_type": "<u4", "algorithm_type": 0}),
        ("bitcomp-t1", "Bitcomp", {"data_type": "<u4", "algorithm_type": 1}),
        ("ans", "ANS", {"uncomp_chunk_size": CHUNK}),
    ]
    M = getattr(nvcomp, "CascadedMode", None)
    if M is not None and hasattr(M, "ASYMMETRIC"):
        out.append(("cascaded-asym-l2", "Cascaded",
                    {"data_type": "<u4", "uncomp_chunk_size": CHUNK, "mode": M.ASYMMETRIC,
                     "compression_level": 2}))
    return out


def time_decode(codec, enc, out, stream, runs):
    return timed(lambda: codec.decode(enc, data_type="|u1", out=out), stream, runs)


def bench_column(path, runs, log):
    name = os.path.basename(path)[:-4]
    data = cp.asarray(np.fromfile(path, dtype=np.uint8))
    out = cp.empty_like(data)
    cp.cuda.Device().synchronize()
    stream = cp.cuda.Stream(non_blocking=True)
    rows = []
    for label, algo, kw in configs():
        try:
            with stream:
                codec = nvcomp.Codec(algorithm=algo, cuda_stream=stream.ptr, **kw)
                t0 = time.perf_counter()
                enc = codec.encode(nvcomp.as_array(data))
                stream.synchronize()
                enc_s = time.perf_counter() - t0
                comp = int(enc.buffer_size)
                out.fill(0xA5)
                ms = time_decode(codec, enc, out, stream, runs)
                stream.synchronize()
            ok = bool(cp.array_equal(out, data))
            rows.append({"config": label, "algorithm": algo, "compressed_bytes": comp,
                         "ratio": data.nbytes / comp, "decode_ms": ms,
                         "decode_gbps": data.nbytes / (ms * 1e-3) / 1e9, "encode_s": enc_s, "verified": ok})
            log(f"  {name:<28} {label:<18} ratio {data.nbytes / comp:7.2f}  decode {ms:8.3f} ms  "
                f"{'ok' if ok else 'WRONG'}")
            del enc, codec
        except Exception as e:  # a codec or option this nvCOMP build does not take: say so
            log(f"  {name:<28} {label:<18} skipped: {type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}")
    res = {"column": name, "bytes": int(data.nbytes), "configs": rows}
    del data, out
    cp.get_default_memory_pool().free_all_blocks()
    return res


def choices(col):
    ok = [r for r in col["configs"] if r["verified"]]
    if not ok:
        return None, None
    return min(ok, key=lambda r: r["decode_ms"]), max(ok, key=lambda r: r["ratio"])


def geomean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


def report(cols, tess, runs, ver, dev):
    by = {c["column"]: c for c in cols}
    lines = [f"## nvCOMP {ver} decompress-then-query, {dev}", "",
             "nvCOMP's time for a query is the **sum of two measured times**: nvCOMP's decode of every "
             "column the query reads (each column decoded into a preallocated device buffer, CUDA events, "
             f"median of {runs} after a warm-up, output checked), plus tessera's query on plain resident "
             "columns (GPU plain ms, same run as tessera's figures). Per column nvCOMP's fastest-decoding "
             "codec (best speed) and its smallest (best ratio) are kept from LZ4, Snappy, Deflate, "
             f"GDeflate, zstd, Cascaded, Bitcomp and ANS (chunks of {CHUNK // 1024} KiB where the codec "
             "takes one). tessera: its query on the compressed columns, decoded inside the query kernels.", "",
             "| query | tessera compressed ms | tessera plain ms | nvCOMP decode ms, best speed | nvCOMP + plain ms | "
             "nvCOMP / tessera | nvCOMP decode ms, best ratio | nvCOMP + plain ms | nvCOMP / tessera |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    fast_x, small_x, rows = [], [], []
    for q in tess.get("queries", []):
        need = q.get("columns", [])
        fs = [choices(by[c]) if c in by else (None, None) for c in need]
        if not need or any(f is None or s is None for f, s in fs):
            lines.append(f"| {q['name']} | - | - | missing columns | - | - | - | - | - |")
            continue
        dec_f = sum(f["decode_ms"] for f, _ in fs)
        dec_s = sum(s["decode_ms"] for _, s in fs)
        tc, tp = q["gpu_compressed_ms"], q["gpu_plain_ms"]
        xf, xs = (dec_f + tp) / tc, (dec_s + tp) / tc
        fast_x.append(xf)
        small_x.append(xs)
        rows.append({"query": q["name"], "columns": need, "tessera_compressed_ms": tc, "tessera_plain_ms": tp,
                     "nvcomp_decode_fast_ms": dec_f, "nvcomp_decode_small_ms": dec_s,
                     "nvcomp_then_plain_fast_ms": dec_f + tp, "nvcomp_then_plain_small_ms": dec_s + tp})
        lines.append(f"| {q['name']} | {tc:.3f} | {tp:.3f} | {dec_f:.3f} | {dec_f + tp:.3f} | {xf:.2f} | "
                     f"{dec_s:.3f} | {dec_s + tp:.3f} | {xs:.2f} |")
    lines += ["", f"Geometric mean of nvCOMP-then-query time / tessera compressed time: **{geomean(fast_x):.2f}x** "
              f"with nvCOMP's fastest codec per column, {geomean(small_x):.2f}x with its smallest.", ""]
    tbytes = {f"{c['table']}.{c['column']}": c for c in tess.get("columns", [])}
    lines += ["### Footprint against nvCOMP", "",
              "Per column the query set reads: tessera's compressed bytes (auto's codec per chunk), nvCOMP's "
              "best-ratio encoding (its codec) and its best-speed encoding, and the plain bytes.", "",
              "| column | plain bytes | tessera bytes | ratio | nvCOMP best ratio bytes | codec | ratio | "
              "nvCOMP best speed bytes | codec | ratio | decode ms |",
              "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- | ---: | ---: |"]
    tot = {"plain": 0, "tessera": 0, "small": 0, "fast": 0}
    for c in sorted(cols, key=lambda c: c["column"]):
        f, s = choices(c)
        t = tbytes.get(c["column"])
        if f is None or t is None:
            continue
        tb = t["compressed_bytes"]
        tot["plain"] += c["bytes"]
        tot["tessera"] += tb
        tot["small"] += s["compressed_bytes"]
        tot["fast"] += f["compressed_bytes"]
        lines.append(f"| {c['column']} | {c['bytes']} | {tb} | {c['bytes'] / tb:.2f} | {s['compressed_bytes']} | "
                     f"{s['config']} | {s['ratio']:.2f} | {f['compressed_bytes']} | {f['config']} | {f['ratio']:.2f} | "
                     f"{f['decode_ms']:.3f} |")
    if tot["tessera"]:
        lines += ["", f"In total (the {len(cols)} columns the queries read): plain {tot['plain']} bytes; tessera "
                  f"{tot['tessera']} ({tot['plain'] / tot['tessera']:.2f}x smaller); nvCOMP best ratio {tot['small']} "
                  f"({tot['plain'] / tot['small']:.2f}x); nvCOMP best speed {tot['fast']} "
                  f"({tot['plain'] / tot['fast']:.2f}x)."]
    return "\n".join(lines) + "\n", rows, tot


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help="the folder `tessera-bench ssb --dump` wrote")
    ap.add_argument("--tessera", required=True, help="the JSON of that tessera-bench ssb run")
    ap.add_argument("--out", required=True, help="folder for nvcomp_ssb.json and nvcomp_ssb.md")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--from-json", help="an earlier nvcomp_ssb.json: only write the report")
    ap.add_argument("--variant", help="take tessera's GPU compressed and plain times from this "
                    "`--variants` row of the bench JSON (e.g. pf:8) instead of its main table")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    tess = json.load(open(args.tessera))
    if args.variant:
        rows = [v for v in tess.get("variants", []) if v.get("options") == args.variant and v.get("queries")]
        if not rows:
            ap.error(f"--variant {args.variant}: no such row with query times in {args.tessera}")
        times = {n: (c, p) for n, c, p in rows[0]["queries"]}
        for q in tess.get("queries", []):
            if q["name"] not in times:
                ap.error(f"--variant {args.variant}: no time for {q['name']}")
            q["gpu_compressed_ms"], q["gpu_plain_ms"] = times[q["name"]]

    def log(s):
        print(s, flush=True)

    if args.from_json:
        prev = json.load(open(args.from_json))
        cols, ver, dev, runs = prev["columns"], prev["nvcomp"], prev["device"], prev["runs"]
    else:
        if not args.data:
            ap.error("--data is needed unless --from-json")
        gpu_imports()
        dev = cp.cuda.runtime.getDeviceProperties(0)["name"]
        dev = dev.decode() if isinstance(dev, bytes) else dev
        ver = getattr(nvcomp, "__version__", "?")
        runs = args.runs
        log(f"nvcomp {ver} (CUDA {getattr(nvcomp, '__cuda_version__', '?')}), device {dev}")
        files = sorted(f for f in os.listdir(args.data) if f.endswith(".u32"))
        cols = []
        for f in files:
            cols.append(bench_column(os.path.join(args.data, f), runs, log))
            with open(os.path.join(args.out, "nvcomp_ssb.json"), "w") as fh:
                json.dump({"nvcomp": ver, "device": dev, "runs": runs, "chunk": CHUNK, "columns": cols}, fh, indent=1)
    md, rows, tot = report(cols, tess, runs, ver, dev)
    if args.variant:
        md = md.replace("\n\n", f"\n\ntessera's times: kernels generated as `{args.variant}` (the bench's "
                        "`--variants` row of the same run).\n\n", 1)
    with open(os.path.join(args.out, "nvcomp_ssb.json"), "w") as fh:
        json.dump({"nvcomp": ver, "device": dev, "runs": runs, "chunk": CHUNK, "columns": cols,
                   "queries": rows, "footprint": tot}, fh, indent=1)
    open(os.path.join(args.out, "nvcomp_ssb.md"), "w").write(md)
    print()
    print(md)


if __name__ == "__main__":
    sys.exit(main())
