#!/usr/bin/env python3
"""nvCOMP 6 on raw byte files: the GPU peers of tessera's byte codecs (LLL, Huffman).

Reads every file of --data (e.g. the DIR/<set>.bin that `tessera-bench lll --dump DIR` writes, or
bench/data/ from scripts/bench-data.sh), repeats it on the GPU up to --bytes (default 1 GiB,
whole copies), compresses it with nvCOMP's batched codecs in independent chunks of --chunk bytes
(64 KiB) and times decoding with CUDA events on one stream: a warm-up, then the median of --runs
runs, output buffer preallocated, result checked against the input. Codecs: LZ4, Snappy,
Deflate, GDeflate (algorithm_type 1, nvCOMP's default), GDeflate entropy-only
(algorithm_type 0: Huffman coding without LZ77 matches) and ANS (data_type |u1). Prints a table
and writes nvcomp_bytes.json and nvcomp_bytes.md to --out; given --tessera (the JSON of
`tessera-bench lll` or `tessera-bench huffman` from the same machine) the Markdown also compares
tessera's best GPU decode with nvCOMP's on the same set.

Usage on the GPU machine:
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
  PYTHONPATH=/tmp/site python3 bench/peers/nvcomp_bytes.py --data DIR --out OUTDIR \
      [--tessera OUTDIR/<date>-<device>-lll.json] [--runs 7] [--bytes 1073741824] \
      [--codecs lz4,gdeflate-entropy,ans] [--sets camera,text]
"""

import argparse
import json
import os
import re
import sys
import time

from nvcomp_common import device_name, gpu_modules, timed

cp = np = nvcomp = None  # imported in main(): --help needs no GPU


def gpu_imports():
    global cp, np, nvcomp
    cp, np, nvcomp = gpu_modules()


def configs(chunk):
    """(label, algorithm, kwargs) to try; ones this nvCOMP build rejects are skipped and logged."""
    base = {"uncomp_chunk_size": chunk}
    return [
        ("lz4", "LZ4", dict(base, data_type="|u1")),
        ("snappy", "Snappy", dict(base)),
        ("deflate", "Deflate", dict(base)),
        ("gdeflate", "GDeflate", dict(base)),
        ("gdeflate-entropy", "GDeflate", dict(base, algorithm_type=0)),
        ("ans", "ANS", dict(base, data_type="|u1")),
    ]


def slug(s):
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", s.lower())).strip("-")


def time_decode(codec, enc, out, stream, runs):
    return timed(lambda: codec.decode(enc, data_type="|u1", out=out), stream, runs)


def bench_file(path, args, log):
    name = os.path.basename(path)
    host = open(path, "rb").read()
    copies = max(1, args.bytes // len(host))
    data = cp.tile(cp.asarray(np.frombuffer(host, dtype=np.uint8)), copies)
    nbytes = int(data.nbytes)
    out = cp.empty_like(data)
    cp.cuda.Device().synchronize()
    stream = cp.cuda.Stream(non_blocking=True)
    keep = [c for c in args.codecs.split(",") if c]
    rows = []
    for label, algo, kw in configs(args.chunk):
        if keep and label not in keep:
            continue
        try:
            with stream:
                codec = nvcomp.Codec(algorithm=algo, cuda_stream=stream.ptr, **kw)
                t0 = time.perf_counter()
                enc = codec.encode(nvcomp.as_array(data))
                stream.synchronize()
                enc_s = time.perf_counter() - t0
                comp = int(enc.buffer_size)
                out.fill(0xA5)
                ms = time_decode(codec, enc, out, stream, args.runs)
                ok = bool(cp.array_equal(out, data))
            rows.append({"codec": label, "algorithm": algo, "options": {k: str(v) for k, v in kw.items()},
                         "compressed_bytes": comp, "ratio": nbytes / comp, "decode_ms": ms,
                         "decode_gbps": nbytes / (ms * 1e-3) / 1e9, "encode_s": enc_s, "verified": ok})
            log(f"  {name:<28} {label:<18} ratio {nbytes / comp:7.2f}  decode {nbytes / (ms * 1e-3) / 1e9:7.1f} GB/s  "
                f"{'ok' if ok else 'WRONG'}")
            del enc, codec
        except Exception as e:  # an option this nvCOMP build does not take
            log(f"  {name:<28} {label:<18} skipped: {type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}")
    del data, out
    cp.get_default_memory_pool().free_all_blocks()
    return {"set": name, "file_bytes": len(host), "bytes": nbytes, "copies": copies, "codecs": rows}


def tessera_sets(path):
    """slug(set name) -> (best verified GPU GB/s, ratio) from a tessera-bench JSON (lll or huffman)."""
    if not path or not os.path.exists(path):
        return {}
    t = json.load(open(path))
    out = {}
    for s in t.get("sets", []):
        gpu = [g for g in s.get("gpu", []) if g.get("verified", True)]
        ratio = s.get("lll_ratio") or s.get("ratio")
        if gpu:
            best = max(g["decode_gbps"] for g in gpu)
            out[slug(s["name"])] = (best, ratio)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="folder of raw byte files")
    ap.add_argument("--out", required=True, help="folder for nvcomp_bytes.json and nvcomp_bytes.md")
    ap.add_argument("--tessera", help="tessera-bench JSON (lll or huffman) from the same machine")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--bytes", type=int, default=1 << 30, help="bytes per set on the GPU (whole copies of the file)")
    ap.add_argument("--chunk", type=int, default=65536, help="uncompressed chunk size of the batched codecs")
    ap.add_argument("--codecs", default="", help="comma-separated subset of: lz4,snappy,deflate,gdeflate,gdeflate-entropy,ans")
    ap.add_argument("--sets", default="", help="comma-separated substrings of file names to keep")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    gpu_imports()

    def log(s):
        print(s, flush=True)

    dev = device_name()
    log(f"nvcomp {getattr(nvcomp, '__version__', '?')} (CUDA {getattr(nvcomp, '__cuda_version__', '?')}), device {dev}")
    files = sorted(os.path.join(args.data, f) for f in os.listdir(args.data)
                   if os.path.isfile(os.path.join(args.data, f)) and os.path.getsize(os.path.join(args.data, f)) > 0)
    keep = [s for s in args.sets.split(",") if s]
    files = [f for f in files if not keep or any(k in os.path.basename(f) for k in keep)]
    results = []
    for f in files:
        results.append(bench_file(f, args, log))
        with open(os.path.join(args.out, "nvcomp_bytes.json"), "w") as fh:
            json.dump({"nvcomp": getattr(nvcomp, "__version__", "?"), "device": dev, "runs": args.runs,
                       "chunk": args.chunk, "sets": results}, fh, indent=1)

    tess = tessera_sets(args.tessera)
    labels = [c[0] for c in configs(args.chunk)]
    lines = [f"# nvCOMP {getattr(nvcomp, '__version__', '?')} on raw bytes, {dev}", "",
             f"Decode throughput in GB/s of output (median of {args.runs} runs, CUDA events, device-resident), "
             f"compression ratio (input / compressed) in brackets; batched chunks of {args.chunk // 1024} KiB, "
             "each file repeated on the GPU up to the bytes shown. `tessera` = the best verified GPU decode of the "
             "tessera-bench JSON given with --tessera, on the same file.", "",
             "| set | bytes | " + " | ".join(labels) + " | tessera | tessera / LZ4 |",
             "| --- | ---: | " + " | ".join("---:" for _ in labels) + " | ---: | ---: |"]
    for r in results:
        by = {c["codec"]: c for c in r["codecs"] if c["verified"]}
        cells = [f"{by[l]['decode_gbps']:.0f} ({by[l]['ratio']:.2f})" if l in by else "-" for l in labels]
        base = os.path.splitext(r["set"])[0]
        t = tess.get(slug(r["set"])) or tess.get(slug(base))
        tcell = f"{t[0]:.0f} ({t[1]:.2f})" if t and t[1] else (f"{t[0]:.0f}" if t else "-")
        vs = f"{t[0] / by['lz4']['decode_gbps']:.2f}x" if t and "lz4" in by else "-"
        lines.append(f"| {r['set']} | {r['bytes']} | " + " | ".join(cells) + f" | {tcell} | {vs} |")
    md = "\n".join(lines) + "\n"
    open(os.path.join(args.out, "nvcomp_bytes.md"), "w").write(md)
    print()
    print(md)


if __name__ == "__main__":
    sys.exit(main())
