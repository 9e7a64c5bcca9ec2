#!/usr/bin/env python3
"""nvCOMP 6 on the same values as `tessera-bench gpu`: the peer we measure against.

Reads the data sets that `tessera-bench gpu --dump DIR` wrote (DIR/<set>.u32, raw little-endian
u32), compresses each with nvCOMP's Cascaded (several modes, levels and encodings: its best is
reported, not its worst), Bitcomp and ANS through nvCOMP's Python API, and times decoding with
CUDA events on one stream: a warm-up, then the median of --runs runs, output buffer preallocated,
result checked against the input. Prints a table and writes nvcomp.json (every configuration)
and, given --tessera RESULTS.json, a Markdown comparison with tessera's figures from the same
machine.

Usage on the GPU machine:
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
  PYTHONPATH=/tmp/site python3 bench/peers/nvcomp_bench.py --data DIR --out OUTDIR \
      [--tessera OUTDIR/<date>-<device>-gpu.json] [--runs 7]
"""

import argparse
import glob
import json
import os
import sys
import time

from nvcomp_common import gpu_modules, timed

cp = np = nvcomp = None  # imported in main() unless --from-json: the report needs no GPU


def gpu_imports():
    global cp, np, nvcomp
    cp, np, nvcomp = gpu_modules()


def configs():
    """(label, algorithm, kwargs) to try; ones nvCOMP rejects are skipped and logged."""
    out = []
    M = getattr(nvcomp, "CascadedMode", None)
    E = getattr(nvcomp, "CascadedFineGrainedEncoding", None)
    for chunk in (65536,):  # 256 KiB chunks measured slower for every mode on an H100
        base = {"data_type": "<u4", "uncomp_chunk_size": chunk}
        out.append((f"cascaded-default-{chunk // 1024}k", "Cascaded", dict(base)))
        if M is not None:
            for level in (1, 2, 3):
                out.append((f"cascaded-asym-l{level}-{chunk // 1024}k", "Cascaded",
                            dict(base, mode=M.ASYMMETRIC, compression_level=level)))
            out.append((f"cascaded-sym-{chunk // 1024}k", "Cascaded", dict(base, mode=M.SYMMETRIC)))
            if E is not None:
                names = [n for n in ("DELTA", "RLE", "FOR") if hasattr(E, n)]
                for combo in ([], ["FOR"], ["DELTA", "FOR"], ["RLE", "FOR"], ["DELTA", "RLE", "FOR"]):
                    if not all(c in names for c in combo):
                        continue
                    mask = 0
                    for c in combo:
                        mask |= int(getattr(E, c))
                    try:
                        enc = E(mask)
                    except Exception:
                        enc = mask
                    label = "+".join(c.lower() for c in combo) or "none"
                    out.append((f"cascaded-sym-{label}-{chunk // 1024}k", "Cascaded",
                                dict(base, mode=M.SYMMETRIC, fine_grained_encodings=enc)))
    for t in (0, 1):
        out.append((f"bitcomp-t{t}", "Bitcomp", {"data_type": "<u4", "algorithm_type": t}))
    out.append(("ans", "ANS", {}))
    return out


def time_decode(codec, enc, out, stream, runs):
    return timed(lambda: codec.decode(enc, data_type="<u4", out=out), stream, runs)


def bench_file(path, runs, log):
    name = os.path.basename(path)[:-4]
    host = open(path, "rb").read()
    data = cp.ascontiguousarray(cp.asarray(np.frombuffer(host, dtype="<u4")))
    nbytes = data.nbytes
    out = cp.empty_like(data)
    # The copy above ran on the default stream; the codecs run on their own.
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
                comp = enc.buffer_size
                out.fill(0xA5A5A5A5)
                ms = time_decode(codec, enc, out, stream, runs)
                ok = bool(cp.array_equal(out, data))
            rows.append({"config": label, "algorithm": algo, "options": {k: str(v) for k, v in kw.items()},
                         "compressed_bytes": int(comp), "ratio": nbytes / comp, "bits_per_value": 8 * comp / data.size,
                         "decode_ms": ms, "decode_gbps": nbytes / (ms * 1e-3) / 1e9, "encode_s": enc_s, "verified": ok})
            log(f"  {name:<18} {label:<34} ratio {nbytes / comp:7.2f}  decode {nbytes / (ms * 1e-3) / 1e9:7.1f} GB/s  {'ok' if ok else 'WRONG'}")
            del enc, codec
        except Exception as e:  # an option this nvCOMP build does not take
            log(f"  {name:<18} {label:<34} skipped: {type(e).__name__}: {str(e).splitlines()[0][:100]}")
    return {"set": name, "values": int(data.size), "configs": rows}


def best(rows, algo, key):
    cands = [r for r in rows if r["algorithm"] == algo and r["verified"]]
    return max(cands, key=lambda r: r[key]) if cands else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help="folder of <set>.u32 files from tessera-bench gpu --dump")
    ap.add_argument("--from-json", help="comma-separated nvcomp.json files of earlier runs: only write the comparison")
    ap.add_argument("--out", required=True, help="folder for nvcomp.json and nvcomp.md")
    ap.add_argument("--tessera", help="tessera-bench gpu JSON from the same machine, for the comparison")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--sets", default="", help="comma-separated substrings of set names to keep")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    def log(s):
        print(s, flush=True)

    results = []
    if args.from_json:
        for path in args.from_json.split(","):
            results.extend(json.load(open(path))["sets"])
        results.sort(key=lambda r: r["set"])
        json.dump({"sets": results}, open(os.path.join(args.out, "nvcomp.json"), "w"), indent=1)
    else:
        gpu_imports()
        log(f"nvcomp {getattr(nvcomp, '__version__', '?')} (CUDA {getattr(nvcomp, '__cuda_version__', '?')}), "
            f"device {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
        files = sorted(glob.glob(os.path.join(args.data, "*.u32")))
        keep = [s for s in args.sets.split(",") if s]
        files = [f for f in files if not keep or any(k in os.path.basename(f) for k in keep)]
        for f in files:
            results.append(bench_file(f, args.runs, log))
            with open(os.path.join(args.out, "nvcomp.json"), "w") as fh:
                json.dump({"nvcomp": getattr(nvcomp, "__version__", "?"), "runs": args.runs, "sets": results}, fh, indent=1)

    tess = {}
    if args.tessera and os.path.exists(args.tessera):
        t = json.load(open(args.tessera))
        tess = {s["name"]: s for s in t["sets"]}
    lines = ["# nvCOMP 6 vs tessera on the same values", "",
             "Decode throughput in GB/s of output (median of runs, CUDA events), compression ratio in brackets. "
             "nvCOMP: best-throughput Cascaded configuration (verified), best-ratio Cascaded, Bitcomp, ANS. "
             "tessera: the fastest of FOR/DFOR/RFOR and the auto column (smallest per chunk).", "",
             "| set | Cascaded best speed | config | Cascaded best ratio | Bitcomp | ANS | tessera auto | tessera best | best / Cascaded best |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        rows = r["configs"]
        cs, cr = best(rows, "Cascaded", "decode_gbps"), best(rows, "Cascaded", "ratio")
        bc, an = best(rows, "Bitcomp", "decode_gbps"), best(rows, "ANS", "decode_gbps")
        fmt = lambda x: f"{x['decode_gbps']:.0f} ({x['ratio']:.2f})" if x else "-"
        ts = tess.get(r["set"])
        auto = tb = "-"
        speedup = "-"
        if ts:
            cols = {c["codec"]: c for c in ts["columns"]}
            a = cols.get("auto")
            auto = f"{a['decode_gbps']:.0f} ({32 / a['bits_per_value']:.2f})" if a else "-"
            fastest = max((c for c in ts["columns"] if c["codec"] != "auto"), key=lambda c: c["decode_gbps"])
            tb = f"{fastest['decode_gbps']:.0f} {fastest['codec']} ({32 / fastest['bits_per_value']:.2f})"
            if cs:
                speedup = f"{fastest['decode_gbps'] / cs['decode_gbps']:.1f}x"
        lines.append(f"| {r['set']} | {fmt(cs)} | {cs['config'] if cs else '-'} | {fmt(cr)} | {fmt(bc)} | {fmt(an)} | {auto} | {tb} | {speedup} |")
    md = "\n".join(lines) + "\n"
    open(os.path.join(args.out, "nvcomp.md"), "w").write(md)
    print()
    print(md)


if __name__ == "__main__":
    sys.exit(main())
