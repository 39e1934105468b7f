#!/usr/bin/env python3
"""A new output against out= for `a*2+b` on float64, jitexpr's CPU backend (bench_cpu's
BM_AxpyLikeNewOutput and BM_AxpyLike), numexpr and NumPy in one call, same thread count, best of 7.
The new-output loops keep the previous result until the next one exists (`r = f(a, b)` in a
caller's loop), so a freed block of two calls ago is what can be reused.

    python3 bench/new_output_compare.py BUILD_DIR/bench/bench_cpu [--threads N]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import cpu_peers  # noqa: E402  (N = 2^24, best(), inputs())

ap = argparse.ArgumentParser()
ap.add_argument("bench_cpu")
ap.add_argument("--threads", type=int, default=os.cpu_count())
args = ap.parse_args()

with tempfile.NamedTemporaryFile(suffix=".json") as f:
    env = dict(os.environ, JITEXPR_THREADS=str(args.threads))
    subprocess.run([args.bench_cpu, f"--benchmark_out={f.name}", "--benchmark_out_format=json",
                    "--benchmark_filter=AxpyLike(NewOutput)?/f64", "--benchmark_repetitions=7"],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    runs = json.load(open(f.name))["benchmarks"]
ours = {}
for r in runs:
    if r.get("run_type") == "iteration":
        ms = r["real_time"] if r["time_unit"] == "ms" else r["real_time"] / 1e6
        ours[r["run_name"]] = min(ours.get(r["run_name"], float("inf")), ms)

import numexpr as ne  # noqa: E402
ne.set_num_threads(args.threads)
N = cpu_peers.N
a, b = cpu_peers.inputs("float64", 0.5), cpu_peers.inputs("float64", 1.5)
out = np.empty(N)
held = [None]


def ne_new():
    held[0] = ne.evaluate("a*2+b", local_dict={"a": a, "b": b})


def np_new():
    held[0] = a * 2 + b


def np_out():
    np.multiply(a, 2, out=out)
    np.add(out, b, out=out)


t = {
    "jitexpr": (ours["BM_AxpyLikeNewOutput/f64/real_time"], ours["BM_AxpyLike/f64/real_time"]),
    "numexpr": (cpu_peers.best(ne_new, 7) * 1e3, cpu_peers.best(lambda: ne.evaluate("a*2+b", local_dict={"a": a, "b": b}, out=out), 7) * 1e3),
    "numpy": (cpu_peers.best(np_new, 7) * 1e3, cpu_peers.best(np_out, 7) * 1e3),
}
print(f"a*2+b, float64, n=2^24, threads={args.threads}, best of 7 (ms)")
print(f"{'':10s} {'new output':>11s} {'out=':>8s} {'new/out=':>9s}")
for k, (new, into) in t.items():
    print(f"{k:10s} {new:11.2f} {into:8.2f} {new / into:8.2f}x")
print(f"jitexpr new output vs numexpr new output: {t['jitexpr'][0] / t['numexpr'][0]:.2f}x, "
      f"vs NumPy: {t['jitexpr'][0] / t['numpy'][0]:.2f}x")
