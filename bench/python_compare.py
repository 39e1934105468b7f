#!/usr/bin/env python3
"""jitexpr's Python package against numexpr 2.14 on the CPU, in one run: NumPy inputs, the same
thread count for both, sizes 2^10 ... 2^24, new output and out=, and the per-call cost at one
element. Writes a table to stdout (and --json FILE).

    python bench/python_compare.py [--threads 2] [--repeat 7] [--json out.json]

Times are the best of --repeat rounds; each round runs enough calls to take about 20 ms, so the
small sizes measure the per-call cost and the large ones bandwidth. GB/s counts the bytes the
work must move: inputs read once, output written once (a reduction writes nothing worth counting).
"""
import argparse
import json
import os
import platform
import sys
import time

import numpy as np

import jitexpr as jx

CASES = [
    ("a*2+b", "a*2+b", 2, False),
    ("polynomial", "((.25*a + .75)*a - 1.5)*a - 2", 1, False),
    ("where-sin-exp", "where(a > 0.5, sin(a)*b + exp(-b), a*a - b)", 2, False),
    ("sum(a*b)", "sum(a*b)", 2, True),
]


def best_time(fn, repeat, target=0.02):
    fn()  # prepare (and compile) outside the timing
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    calls = max(1, int(target / one))
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--dtype", default="float64")
    ap.add_argument("--min-log2", type=int, default=10)
    ap.add_argument("--max-log2", type=int, default=24)
    ap.add_argument("--json")
    args = ap.parse_args()

    import numexpr as ne
    import jitexpr.numexpr as jne

    ne.set_num_threads(args.threads)
    jx.set_num_threads(args.threads)
    dt = np.dtype(args.dtype)
    rows = []
    print(f"# jitexpr {jx.__version__} against numexpr {ne.__version__}, NumPy {np.__version__}, "
          f"{args.threads} threads, {dt.name}, best of {args.repeat}")
    print(f"# {platform.node()}, {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {sys.version.split()[0]}, {time.strftime('%Y-%m-%d')}")

    # Per-call cost at one element: what a call costs beyond its work.
    a1 = np.ones(1, dt)
    b1 = np.ones(1, dt)
    o1 = np.empty(1, dt)
    print("\nper-call cost at 1 element (us)")
    print(f"{'expression':16} {'numexpr':>9} {'jitexpr.numexpr':>16} {'jx.evaluate':>12} {'jx kw':>8} {'jx out=':>8}")
    for name, text, _, red in CASES:
        env = {"a": a1, "b": b1}
        t_ne = best_time(lambda: ne.evaluate(text, local_dict=env), args.repeat)
        t_jne = best_time(lambda: jne.evaluate(text, local_dict=env), args.repeat)
        t_jx = best_time(lambda: jx.evaluate(text, env), args.repeat)
        t_kw = best_time(lambda: jx.evaluate(text, a=a1, b=b1), args.repeat)
        t_out = float("nan") if red else best_time(lambda: jx.evaluate(text, env, out=o1), args.repeat)
        rows.append({"kind": "per-call", "case": name, "numexpr_us": t_ne * 1e6, "jitexpr_numexpr_us": t_jne * 1e6,
                     "jx_evaluate_us": t_jx * 1e6, "jx_keywords_us": t_kw * 1e6, "jx_out_us": t_out * 1e6})
        print(f"{name:16} {t_ne * 1e6:9.2f} {t_jne * 1e6:16.2f} {t_jx * 1e6:12.2f} {t_kw * 1e6:8.2f} {t_out * 1e6:8.2f}")

    print("\nbandwidth (GB/s; ratio = jitexpr / numexpr)")
    print(f"{'expression':16} {'n':>6} {'mode':5} {'numexpr':>9} {'jitexpr':>9} {'ratio':>6}")
    rng = np.random.default_rng(0)
    for name, text, n_in, red in CASES:
        for k in range(args.min_log2, args.max_log2 + 1, 2):
            n = 1 << k
            a = rng.random(n).astype(dt)
            b = rng.random(n).astype(dt)
            env = {"a": a, "b": b}
            out = np.empty(n, dt)
            moved = (n_in + (0 if red else 1)) * n * dt.itemsize
            modes = [("new", None)] + ([] if red else [("out", out)])
            for mode, o in modes:
                if o is None:
                    t_ne = best_time(lambda: ne.evaluate(text, local_dict=env), args.repeat)
                    t_jx = best_time(lambda: jne.evaluate(text, local_dict=env), args.repeat)
                else:
                    t_ne = best_time(lambda: ne.evaluate(text, local_dict=env, out=o), args.repeat)
                    t_jx = best_time(lambda: jne.evaluate(text, local_dict=env, out=o), args.repeat)
                g_ne, g_jx = moved / t_ne / 1e9, moved / t_jx / 1e9
                rows.append({"kind": "bandwidth", "case": name, "n": n, "mode": mode, "numexpr_gbs": g_ne,
                             "jitexpr_gbs": g_jx, "ratio": g_jx / g_ne})
                print(f"{name:16} 2^{k:<4} {mode:5} {g_ne:9.2f} {g_jx:9.2f} {g_jx / g_ne:6.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "machine": platform.node(), "threads": args.threads,
                       "dtype": dt.name, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
