#!/usr/bin/env python3
"""Plots of `tessera-bench ssb` results: one SVG per query (every path's time, log scale) from
bench/results/ssb-<device>.json, and one SVG of one GPU against several from
bench/results/ssb-scaling-<device>.json when it exists. A workflow tool run by hand after a
bench (matplotlib); nothing at build, test or run time calls it.

Usage: bench/plot_ssb.py [RESULTS.json [SCALING.json]] [--out DIR]
Defaults: bench/results/ssb-h200.json, bench/results/ssb-h200-x2-scaling.json,
bench/results/ssb-plots/.
"""
import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("results", nargs="?", default=os.path.join(here, "results", "ssb-h200.json"))
ap.add_argument("scaling", nargs="?", default=os.path.join(here, "results", "ssb-h200-x2-scaling.json"))
ap.add_argument("--out", default=os.path.join(here, "results", "ssb-plots"))
# nvCOMP decompress-then-query per query (bench/peers/nvcomp_ssb.py): its fastest codec per
# column's decode times summed, plus tessera's plain query time.
ap.add_argument("--nvcomp", default=os.path.join(here, "results", "ssb-h200-nvcomp.json"))
# Resident times from a `--variants` row of the bench JSON (e.g. inline:8) instead of its main
# table, when the main table ran other kernels (the coprocessor and CPU bars stay the main run's).
ap.add_argument("--variant")
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
# Same bytes for the same figures: no dates or random ids in the SVGs.
plt.rcParams["svg.hashsalt"] = "tessera-ssb"
plt.rcParams["svg.fonttype"] = "none"

r = json.load(open(a.results))
kernels = f"kernels {r.get('options', '?')}"
if a.variant:
    rows = [v for v in r.get("variants", []) if v.get("options") == a.variant and v.get("queries")]
    if not rows:
        ap.error(f"--variant {a.variant}: no such row with query times")
    times = {n: (c, p) for n, c, p in rows[0]["queries"]}
    for q in r["queries"]:
        q["gpu_compressed_ms"], q["gpu_plain_ms"] = times[q["name"]]
    kernels = f"resident {a.variant}, coprocessor {r.get('options', '?')} kernels"
if os.path.exists(a.nvcomp):
    nv = {q["query"]: q for q in json.load(open(a.nvcomp)).get("queries", [])}
    for q in r["queries"]:
        if q["name"] in nv:
            # nvCOMP's decode plus the plain query of the kernels plotted (the variant's).
            q["nvcomp_total_ms"] = nv[q["name"]]["nvcomp_decode_fast_ms"] + q["gpu_plain_ms"]
paths = [
    ("gpu_compressed_ms", "GPU resident,\ncompressed"),
    ("gpu_plain_ms", "GPU resident,\nplain"),
    ("nvcomp_total_ms", "nvCOMP decode\n+ plain query"),
    ("coproc_compressed_ms", "coprocessor,\ncompressed"),
    ("coproc_plain_ms", "coprocessor,\nplain"),
    ("coproc_serial_compressed_ms", "coprocessor\nserial, compr."),
    ("cpu_ms", "CPU\n(all cores)"),
]
colors = ["#1f77b4", "#aec7e8", "#9467bd", "#ff7f0e", "#ffbb78", "#d62728", "#7f7f7f"]
written = []
for q in r["queries"]:
    have = [(k, label, c) for (k, label), c in zip(paths, colors) if q.get(k)]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    xs = range(len(have))
    vals = [q[k] for k, _, _ in have]
    bars = ax.bar(xs, vals, color=[c for _, _, c in have])
    for b, v in zip(bars, vals):
        ax.annotate(f"{v:.3g}", (b.get_x() + b.get_width() / 2, v), ha="center", va="bottom", fontsize=8)
    ax.set_yscale("log")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([label for _, label, _ in have], fontsize=8)
    ax.set_ylabel("ms (log scale)")
    ax.set_title(f"SSB {q['name']}, SF {r['sf']:g}, {r['device']} ({r['date']}), {q['groups']} groups; {kernels}",
                 fontsize=8)
    fig.tight_layout()
    p = os.path.join(a.out, f"{q['name']}.svg")
    fig.savefig(p, metadata={"Date": None})
    plt.close(fig)
    written.append(p)

if os.path.exists(a.scaling):
    s = json.load(open(a.scaling))
    names = [q["name"] for q in s["queries"]]
    fig, ax = plt.subplots(figsize=(9, 3.6))
    w = 0.4
    one = [q["one_gpu_ms"] for q in s["queries"]]
    many = [q["split_ms"] for q in s["queries"]]
    ax.bar([i - w / 2 for i in range(len(names))], one, w, label="one GPU", color="#1f77b4")
    ax.bar([i + w / 2 for i in range(len(names))], many, w, label=f"{s['gpus']} GPUs", color="#2ca02c")
    for i, (o, m) in enumerate(zip(one, many)):
        ax.annotate(f"{o / m:.2f}x", (i, max(o, m)), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, fontsize=8)
    ax.set_ylabel("GPU ms (CUDA events)")
    ax.set_title(f"SSB SF {s['sf']:g}: one GPU against {s['device']} ({s['date']})", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    p = os.path.join(a.out, "scaling.svg")
    fig.savefig(p, metadata={"Date": None})
    plt.close(fig)
    written.append(p)
print("\n".join(written))
