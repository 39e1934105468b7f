#!/usr/bin/env python3
"""Plots achieved bandwidth against size from a bench_gpu JSON file (Google Benchmark output):
jitexpr's a*2+b (new output per eval, and into an existing array) next to the hand-written
float4 reference and the device copy ceiling.
    python3 bench/plot_bandwidth.py bench/results/2026-12-06e-h100-bench_gpu.json out.png"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

src, dst = sys.argv[1], sys.argv[2]
runs = json.load(open(src))["benchmarks"]
series = {
    "BM_DeviceCopy": "device copy (ceiling)",
    "BM_ReferenceAxpbFloat4": "hand-written float4 a*2+b",
    "BM_Axpb/float32": "jitexpr eval a*2+b (new output)",
    "BM_AxpbInto/float32": "jitexpr run c = a*2+b (existing c)",
}
fig, ax = plt.subplots(figsize=(8, 5))
for prefix, label in series.items():
    pts = []
    for r in runs:
        name = r["name"]
        if not name.startswith(prefix + "/") or r.get("run_type") == "aggregate":
            continue
        n = int(name[len(prefix) + 1:].split("/")[0])
        pts.append((n, r["GB/s"] / 1e9))
    pts.sort()
    if pts:
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
ax.set_xscale("log", base=2)
ax.set_xlabel("elements (float32)")
ax.set_ylabel("effective bandwidth, GB/s")
ax.set_title("a*2+b, float32, NVIDIA H200 (" + json.load(open(src))["context"]["date"][:10] + ")")
ax.grid(True, which="both", alpha=0.3)
ax.legend()
fig.tight_layout()
fig.savefig(dst, dpi=100)
print("wrote", dst)
