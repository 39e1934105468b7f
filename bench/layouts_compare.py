#!/usr/bin/env python3
"""The three layouts of issue 33 against torch.compile on the same GPU, in one process: a column
plus a row broadcast to 16384 x 16384 (output bytes), a transposed 16384^2 float32 input (read and
written bytes), sum(a*b) over 2^28 float32 (input bytes), and a*2+b at 2^28 as the row already
won. jitexpr's figures come from bench_gpu (its GB/s counters), torch.compile's from CUDA events
around 20 calls, as ../shared/anchors/peers_h200.py times them. The rounds alternate which side
runs first; the table has the median of each over the rounds and their ratio.

    python3 bench/layouts_compare.py BUILD/bench/bench_gpu OUT.json [--rounds 5]

Run with TORCH_LOGS=output_code to see the kernels Inductor generates for the same shapes."""
import argparse
import json
import statistics
import subprocess
import sys

import torch

CASES = {  # bench_gpu's benchmark name -> the case
    "BM_BroadcastColumnRow/16384/manual_time": "broadcast",
    "BM_StridedTranspose/16384/manual_time": "transposed",
    "BM_SumOfProduct/268435456/manual_time": "sum",
    "BM_Axpb/float32/268435456/manual_time": "axpb",
    "BM_ReferenceAxpbFloat4/268435456/manual_time": "float4-reference",
}
FILTER = "BM_BroadcastColumnRow|BM_StridedTranspose|BM_SumOfProduct|^BM_Axpb/float32/268435456|ReferenceAxpbFloat4/268435456"


def torch_cases():
    r = c = 1 << 14
    n = 1 << 28
    col = torch.rand(r, 1, device="cuda")
    row = torch.rand(1, c, device="cuda")
    m = torch.rand(r, c, device="cuda").t()
    a = torch.rand(n, device="cuda")
    b = torch.rand(n, device="cuda")
    gb = torch.compile(lambda x, y: x + y * 2)
    gs = torch.compile(lambda x: x * 2 + 1)
    gr = torch.compile(lambda x, y: torch.sum(x * y))
    ga = torch.compile(lambda x, y: x * 2 + y)
    return {
        "broadcast": (lambda: gb(col, row), 4.0 * r * c),
        "transposed": (lambda: gs(m), 8.0 * r * c),
        "sum": (lambda: gr(a, b), 8.0 * n),
        "axpb": (lambda: ga(a, b), 12.0 * n),
    }


def event_ms(fn, reps=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps):
        fn()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / reps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench_gpu")
    ap.add_argument("json_out")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    cases = torch_cases()
    for fn, _ in cases.values():
        fn()  # compile before the first round
    res = {"jitexpr": {}, "torch.compile": {}}

    def run_torch():
        for k, (fn, nbytes) in cases.items():
            res["torch.compile"].setdefault(k, []).append(nbytes / event_ms(fn) / 1e6)

    def run_jitexpr():
        p = subprocess.run([args.bench_gpu, "--benchmark_min_time=0.2s", "--benchmark_format=json",
                            f"--benchmark_filter={FILTER}"], capture_output=True, text=True, timeout=120, check=True)
        for bm in json.loads(p.stdout)["benchmarks"]:
            if bm["name"] in CASES:
                res["jitexpr"].setdefault(CASES[bm["name"]], []).append(bm["GB/s"] / 1e9)

    for r in range(args.rounds):
        first, second = (run_torch, run_jitexpr) if r % 2 == 0 else (run_jitexpr, run_torch)
        first()
        second()
    print(f"{'case':17s} {'jitexpr GB/s':>13s} {'torch.compile':>14s} {'ratio':>7s}   "
          f"(medians of {args.rounds} interleaved rounds)")
    for k in ["broadcast", "transposed", "sum", "axpb", "float4-reference"]:
        j = statistics.median(res["jitexpr"].get(k, [0.0]))
        t = statistics.median(res["torch.compile"][k]) if k in res["torch.compile"] else 0.0
        print(f"{k:17s} {j:13.0f} {t:14.0f} {j / t if t else 0:7.3f}")
    with open(args.json_out, "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
