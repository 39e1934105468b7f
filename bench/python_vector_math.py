#!/usr/bin/env python3
"""Transcendental-heavy expressions through installed jitexpr packages (two wheels, say) and
numexpr, in one run: each side's package in a child process of its own venv, the sides
alternated round by round under the same load (this machine is shared).

    python bench/python_vector_math.py --side before=VENV1 --side after=VENV2 \
        [--n 10000000] [--rounds 5] [--reps 5] [--threads 2] [--json out.json]

Each VENV has jitexpr and numexpr installed (their bin/python runs the child). A child evaluates
`sin(a)*exp(b)` and `log1p(a)+tanh(b)` on n float32 and n float64 elements (a in [0, 1), b in
[-1, 1)) into an existing output (out=), with jitexpr and with numexpr, `reps` times each after
one warm-up call, and reports the least wall time of each; it also says whether libmvec.so.1 is
mapped into the process after jitexpr ran (the wheels of JITEXPR_LIBMVEC=DYNAMIC open it). The
parent prints per case the least time over all rounds of each side and of numexpr (numexpr runs
in every child), and the ratios.
"""
import argparse
import json
import os
import subprocess
import sys

CASES = [("sin(a)*exp(b)", "float32"), ("sin(a)*exp(b)", "float64"),
         ("log1p(a)+tanh(b)", "float32"), ("log1p(a)+tanh(b)", "float64")]


def child(n, reps, threads):
    import time

    import numpy as np
    import numexpr
    import jitexpr

    jitexpr.set_num_threads(threads)
    numexpr.set_num_threads(threads)
    rng = np.random.default_rng(1)
    a64 = rng.random(n)
    b64 = rng.random(n) * 2 - 1
    out = {"jitexpr": jitexpr.__version__, "numexpr": numexpr.__version__, "numpy": np.__version__,
           "threads": threads, "cases": {}}
    for text, dt in CASES:
        a, b = a64.astype(dt), b64.astype(dt)
        o = np.empty(n, dt)
        times = {}
        for name, run in (("jitexpr", lambda: jitexpr.evaluate(text, out=o, a=a, b=b)),
                          ("numexpr", lambda: numexpr.evaluate(text, local_dict={"a": a, "b": b}, out=o))):
            run()
            best = float("inf")
            for _ in range(reps):
                t0 = time.perf_counter()
                run()
                best = min(best, time.perf_counter() - t0)
            times[name] = best * 1e3
        out["cases"][f"{text} {dt}"] = times
    with open("/proc/self/maps") as f:
        out["libmvec_mapped"] = any("libmvec.so" in line for line in f)
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--side", action="append", default=[], help="NAME=VENV (twice: before and after)")
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--json")
    ap.add_argument("--child", action="store_true")
    args = ap.parse_args()
    if args.child:
        child(args.n, args.reps, args.threads)
        return
    sides = [s.split("=", 1) for s in args.side]
    if len(sides) != 2:
        sys.exit("python_vector_math.py: give two --side NAME=VENV")
    runs = {name: [] for name, _ in sides}
    for r in range(args.rounds):
        for name, venv in (sides if r % 2 == 0 else sides[::-1]):
            res = subprocess.run([os.path.join(venv, "bin", "python"), os.path.abspath(__file__), "--child",
                                  "--n", str(args.n), "--reps", str(args.reps), "--threads", str(args.threads)],
                                 check=True, capture_output=True, text=True, cwd="/")
            runs[name].append(json.loads(res.stdout.strip().splitlines()[-1]))
            print(f"round {r + 1} {name}: " + ", ".join(f"{k} {v['jitexpr']:.1f}/{v['numexpr']:.1f} ms"
                                                        for k, v in runs[name][-1]["cases"].items()), flush=True)
    (b_name, _), (a_name, _) = sides
    first = runs[b_name][0]
    print(f"\nn = {args.n}, {args.threads} threads, out= an existing array; least wall time of {args.rounds} "
          f"rounds x {args.reps} calls (ms); numexpr {first['numexpr']}, NumPy {first['numpy']}")
    for name, _ in sides:
        print(f"  {name}: jitexpr {runs[name][0]['jitexpr']}, libmvec.so.1 mapped after the calls: "
              f"{sorted({x['libmvec_mapped'] for x in runs[name]})}")
    print(f"{'case':<26} {b_name:>9} {a_name:>9} {'numexpr':>9} {b_name + '/' + a_name:>13} "
          f"{'numexpr/' + a_name:>14} {'numexpr/' + b_name:>15}")
    summary = {}
    for text, dt in CASES:
        key = f"{text} {dt}"
        bt = min(x["cases"][key]["jitexpr"] for x in runs[b_name])
        at = min(x["cases"][key]["jitexpr"] for x in runs[a_name])
        nt = min(x["cases"][key]["numexpr"] for x in runs[b_name] + runs[a_name])
        summary[key] = {b_name: bt, a_name: at, "numexpr": nt}
        print(f"{key:<26} {bt:>9.1f} {at:>9.1f} {nt:>9.1f} {bt / at:>13.2f} {nt / at:>14.2f} {nt / bt:>15.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "summary": summary, "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
