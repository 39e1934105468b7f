#!/usr/bin/env python3
"""jitexpr's CPU backend against numexpr and NumPy in one call: same machine, same thread count,
same data and expressions (2^24 elements). Runs bench_cpu (Google Benchmark, JSON), then the peers
(cpu_peers.py's measurements), and prints GB/s and the ratios.

    python3 bench/cpu_compare.py BUILD_DIR/bench/bench_cpu [--threads N]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import cpu_peers  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("bench_cpu")
ap.add_argument("--threads", type=int, default=os.cpu_count())
args = ap.parse_args()

with tempfile.NamedTemporaryFile(suffix=".json") as f:
    env = dict(os.environ, JITEXPR_THREADS=str(args.threads))
    subprocess.run([args.bench_cpu, f"--benchmark_out={f.name}", "--benchmark_out_format=json",
                    "--benchmark_filter=AxpyLike|Polynomial|WhereTranscendental|Memcpy",
                    "--benchmark_repetitions=10"],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    runs = json.load(open(f.name))["benchmarks"]
# The best of 10 repetitions, as cpu_peers.best() takes the best of 10 for numexpr and NumPy.
ours = {}
for r in runs:
    if r.get("run_type") == "iteration" and "bytes_per_second" in r:
        ours[r["run_name"]] = max(ours.get(r["run_name"], 0.0), r["bytes_per_second"] / 1e9)

import numexpr as ne  # noqa: E402
ne.set_num_threads(args.threads)
N = cpu_peers.N
cases = [("BM_AxpyLike", "a*2+b", lambda a, b: a * 2 + b, 2, (0.5, 1.5)),
         ("BM_Polynomial", "((.25*a + .75)*a - 1.5)*a - 2", lambda a, b: ((.25 * a + .75) * a - 1.5) * a - 2, 1, (0.1, 0.0)),
         ("BM_WhereTranscendental", "where(a > 0.5, sin(a)*b + exp(-b), a*a - b)",
          lambda a, b: np.where(a > 0.5, np.sin(a) * b + np.exp(-b), a * a - b), 2, (0.0, 0.3))]
print(f"threads={args.threads}, n=2^24, GB/s = (inputs + output bytes) / time; best of 10 for every tool")
print(f"{'expression':48s} {'dtype':8s} {'jitexpr':>8s} {'numexpr':>8s} {'numpy':>8s} {'vs numexpr':>10s}")
for dt, tag in (("float32", "f32"), ("float64", "f64")):
    for bench, text, fn, nin, (ba, bb) in cases:
        a, b = cpu_peers.inputs(dt, ba), cpu_peers.inputs(dt, bb)
        out = np.empty(N, dt)
        nbytes = (nin + 1) * N * np.dtype(dt).itemsize
        loc = {"a": a, "b": b}
        t_ne = cpu_peers.best(lambda: ne.evaluate(text, local_dict=loc, out=out))
        t_np = cpu_peers.best(lambda: fn(a, b), repeat=3)
        j = ours.get(f"{bench}/{tag}/real_time", float("nan"))
        g_ne, g_np = nbytes / t_ne / 1e9, nbytes / t_np / 1e9
        print(f"{text:48s} {dt:8s} {j:8.2f} {g_ne:8.2f} {g_np:8.2f} {j / g_ne:9.2f}x")
src = np.ones(N, np.float32)
dst = np.empty_like(src)
t = cpu_peers.best(lambda: np.copyto(dst, src))
print(f"{'copy (numpy copyto)':48s} {'float32':8s} {2 * N * 4 / t / 1e9:8.2f}")
print(f"{'memcpy (bench_cpu)':48s} {'float32':8s} {ours.get('BM_Memcpy/real_time', float('nan')):8.2f}")
