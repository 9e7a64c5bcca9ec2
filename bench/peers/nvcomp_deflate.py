#!/usr/bin/env python3
"""nvCOMP 6's Deflate on the very chunks `tessera-bench codag` decodes, and nvCOMP's own chunks.

Reads what `tessera-bench codag --dump DIR` writes for each Deflate set: DIR/<set>.deflate (the
raw RFC 1951 chunks, back to back), DIR/<set>.sizes (per chunk, little-endian u32 compressed
bytes then output bytes) and DIR/<set>.bin (the data). Then, on the GPU:

- "deflate-same": nvCOMP's batched Deflate decompressor (bitstream kind RAW: standard raw
  Deflate streams, no nvCOMP header) on exactly tessera's chunks, output capacities and sizes
  given, the decompression configured once before timing (as tessera's bench knows each chunk's
  output size);
- "deflate-own-N" / "gdeflate-own-N": the set's data compressed by nvCOMP itself in chunks of the
  same size (its native format, algorithm_type N: 1 its default, 5 its highest ratio), decoded by
  nvCOMP; their ratio beside tessera's.

Decoding is timed with CUDA events on one stream: a warm-up, then the median of --runs runs,
output preallocated, every output checked byte for byte against the data. Prints a table and
writes nvcomp_deflate.json and nvcomp_deflate.md to --out; given --tessera (the JSON of
`tessera-bench codag` from the same run) the Markdown puts tessera's GPU decode of the same
chunks beside nvCOMP's.

Usage on the GPU machine:
  python3 -m pip install -q --no-index --no-deps --target /tmp/site WHEELS/*.whl
  PYTHONPATH=/tmp/site python3 bench/peers/nvcomp_deflate.py --data DIR --out OUTDIR \
      [--tessera OUTDIR/<date>-<device>-codag.json] [--runs 7] [--own 1,5]
"""

import argparse
import json
import os
import sys
import time

from nvcomp_common import device_name, gpu_modules, timed

cp = np = nvcomp = None  # imported in main(): --help needs no GPU


def gpu_imports():
    global cp, np, nvcomp
    cp, np, nvcomp = gpu_modules()


def carve(buf, offsets, sizes, stream):
    """A BatchArray over one device buffer, one entry per (offset, size)."""
    offs, lens = [int(o) for o in offsets], [int(s) for s in sizes]
    try:
        return nvcomp.as_arrays(buf, offs, lens, cuda_stream=stream.ptr)
    except TypeError:  # a build without the (buffer, offsets, sizes) form: one view per entry
        return nvcomp.as_arrays([buf[o:o + n] for o, n in zip(offs, lens)], cuda_stream=stream.ptr)


def same_chunks(name, comp_host, sizes, data, stream, runs, log):
    """nvCOMP's Deflate on tessera's raw chunks."""
    csz = sizes[:, 0].astype(np.int64)
    usz = sizes[:, 1].astype(np.int64)
    # Each chunk 16-byte aligned on the device, as nvCOMP asks of its inputs.
    coff = np.zeros(len(csz), dtype=np.int64)
    coff[1:] = np.cumsum((csz[:-1] + 15) // 16 * 16)
    host = np.zeros(int(coff[-1] + csz[-1] + 16), dtype=np.uint8)
    src = np.concatenate([[0], np.cumsum(csz)])
    for k in range(len(csz)):
        host[coff[k]:coff[k] + csz[k]] = comp_host[src[k]:src[k + 1]]
    dcomp = cp.asarray(host)
    uoff = np.concatenate([[0], np.cumsum(usz)[:-1]])
    out = cp.empty(int(usz.sum()), dtype=cp.uint8)
    out.fill(0xA5)
    with stream:
        codec = nvcomp.Codec(algorithm="Deflate", bitstream_kind=nvcomp.BitstreamKind.RAW,
                             uncomp_chunk_size=int(usz.max()), cuda_stream=stream.ptr)
        srcs = carve(dcomp, coff, csz, stream)
        outs = carve(out, uoff, usz, stream)
        cfg = codec.decompression_config(srcs)
        ms = timed(lambda: codec.decode(srcs, out=outs, decompression_config=cfg), stream, runs)
        stream.synchronize()
    ok = bool(cp.array_equal(out, data))
    total = int(usz.sum())
    row = {"codec": "deflate-same", "compressed_bytes": int(csz.sum()), "ratio": total / int(csz.sum()),
           "decode_ms": ms, "decode_gbps": total / (ms * 1e-3) / 1e9, "verified": ok}
    log(f"  {name:<24} deflate-same      ratio {row['ratio']:7.2f}  decode {row['decode_gbps']:7.1f} GB/s  "
        f"{'ok' if ok else 'WRONG'}")
    return row


def own_chunks(name, algo, level, chunk, data, stream, runs, log):
    """nvCOMP compressing the data itself (native format), then decoding it."""
    out = cp.empty_like(data)
    label = f"{algo.lower()}-own-{level}"
    with stream:
        codec = nvcomp.Codec(algorithm=algo, algorithm_type=level, uncomp_chunk_size=chunk, cuda_stream=stream.ptr)
        t0 = time.perf_counter()
        enc = codec.encode(nvcomp.as_array(data))
        stream.synchronize()
        enc_s = time.perf_counter() - t0
        comp = int(enc.buffer_size)
        out.fill(0xA5)
        cfg = codec.decompression_config(enc)
        ms = timed(lambda: codec.decode(enc, data_type="|u1", out=out, decompression_config=cfg), stream, runs)
        stream.synchronize()
    ok = bool(cp.array_equal(out, data))
    n = int(data.nbytes)
    row = {"codec": label, "compressed_bytes": comp, "ratio": n / comp, "decode_ms": ms,
           "decode_gbps": n / (ms * 1e-3) / 1e9, "encode_s": enc_s, "verified": ok}
    log(f"  {name:<24} {label:<17} ratio {row['ratio']:7.2f}  decode {row['decode_gbps']:7.1f} GB/s  "
        f"{'ok' if ok else 'WRONG'}")
    return row


def tessera_rows(path):
    """set -> (GPU GB/s, ratio, copy GB/s, CPU GB/s) of the Deflate rows of a tessera-bench codag JSON."""
    if not path or not os.path.exists(path):
        return {}
    t = json.load(open(path))
    return {s["set"]: (s.get("gpu_gbps"), s.get("ratio"), s.get("copy_gbps"), s.get("cpu_gbps"))
            for s in t.get("sets", []) if s.get("decoder") == "deflate"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="the folder `tessera-bench codag --dump` wrote")
    ap.add_argument("--out", required=True, help="folder for nvcomp_deflate.json and nvcomp_deflate.md")
    ap.add_argument("--tessera", help="tessera-bench codag JSON from the same machine")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--own", default="1,5", help="algorithm_type levels for nvCOMP's own chunks (empty: none)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    gpu_imports()

    def log(s):
        print(s, flush=True)

    dev = device_name()
    ver = getattr(nvcomp, "__version__", "?")
    log(f"nvcomp {ver} (CUDA {getattr(nvcomp, '__cuda_version__', '?')}), device {dev}")
    names = sorted(f[:-len(".deflate")] for f in os.listdir(args.data) if f.endswith(".deflate"))
    stream = cp.cuda.Stream(non_blocking=True)
    levels = [int(x) for x in args.own.split(",") if x]
    results = []
    for name in names:
        base = os.path.join(args.data, name)
        comp = np.fromfile(base + ".deflate", dtype=np.uint8)
        sizes = np.fromfile(base + ".sizes", dtype="<u4").reshape(-1, 2)
        data = cp.asarray(np.fromfile(base + ".bin", dtype=np.uint8))
        chunk = int(sizes[:, 1].max())
        rows = []
        try:
            rows.append(same_chunks(name, comp, sizes, data, stream, args.runs, log))
        except Exception as e:  # an API this nvCOMP build lacks: say so, go on
            log(f"  {name:<24} deflate-same      failed: {type(e).__name__}: {str(e)[:200]}")
        for algo in ("Deflate", "GDeflate"):
            for lv in levels:
                try:
                    rows.append(own_chunks(name, algo, lv, chunk, data, stream, args.runs, log))
                except Exception as e:
                    log(f"  {name:<24} {algo.lower()}-own-{lv}  failed: {type(e).__name__}: {str(e)[:200]}")
        results.append({"set": name, "bytes": int(data.nbytes), "chunks": len(sizes), "chunk_bytes": chunk,
                        "codecs": rows})
        del data
        cp.get_default_memory_pool().free_all_blocks()
        with open(os.path.join(args.out, "nvcomp_deflate.json"), "w") as fh:
            json.dump({"nvcomp": ver, "device": dev, "runs": args.runs, "sets": results}, fh, indent=1)

    tess = tessera_rows(args.tessera)
    labels = ["deflate-same"] + [f"{a}-own-{lv}" for a in ("deflate", "gdeflate") for lv in levels]
    lines = [f"# nvCOMP {ver} Deflate beside tessera's, {dev}", "",
             f"Decode GB/s of output (median of {args.runs} runs, CUDA events, device-resident), compression "
             "ratio in brackets. `deflate-same`: nvCOMP's Deflate on tessera's own raw Deflate chunks "
             "(the bytes `tessera-bench codag` decodes); `*-own-N`: nvCOMP's chunks of the same size from "
             "the same data, algorithm_type N. `tessera`: tessera's GPU decode of the same chunks (--tessera).", "",
             "| set | MiB | tessera | " + " | ".join(labels) + " | tessera / nvCOMP same |",
             "| --- | ---: | ---: | " + " | ".join("---:" for _ in labels) + " | ---: |"]
    for r in results:
        by = {c["codec"]: c for c in r["codecs"] if c["verified"]}
        cells = [f"{by[l]['decode_gbps']:.1f} ({by[l]['ratio']:.2f})" if l in by else "-" for l in labels]
        t = tess.get(r["set"])
        tcell = f"{t[0]:.1f} ({t[1]:.2f})" if t and t[0] else "-"
        vs = f"{t[0] / by['deflate-same']['decode_gbps']:.2f}x" if t and t[0] and "deflate-same" in by else "-"
        lines.append(f"| {r['set']} | {r['bytes'] >> 20} | {tcell} | " + " | ".join(cells) + f" | {vs} |")
    md = "\n".join(lines) + "\n"
    open(os.path.join(args.out, "nvcomp_deflate.md"), "w").write(md)
    print()
    print(md)


if __name__ == "__main__":
    sys.exit(main())
