#!/usr/bin/env python3
"""jitexpr's Python package on the GPU with CuPy and PyTorch inputs, in one run: what issue 19
asks of it, with the verdicts printed.

- host cost per call at n = 1024 (a*2+b, float32; new output and out=): jitexpr.evaluate and a
  jitexpr.compile kernel with CuPy inputs and with torch inputs, beside the C++ runtime's own
  host cost of the same call (bench_gpu's BM_HostOverheadEvalText/Into, with --bench-gpu), against CuPy's
  ElementwiseKernel (on CuPy arrays, and on torch tensors handed over with cupy.from_dlpack as a
  torch user would), CuPy's own arithmetic and torch eager. Timed the same way for all: the
  median over rounds of the wall time of many calls, the stream synchronised once per round;
  the rounds of the candidates are interleaved so that a drift of the machine hits them alike.
- bandwidth at 2^28 float32 of a*2+b (new output and out=), timed as the C++ benchmark times
  itself (bench_gpu's time_device: batches of 10 calls, the device synchronised after each
  batch, the median batch), and with CUDA events around single calls, against the C++ eval of
  the same run (`--bench-gpu BUILD/bench/bench_gpu`: its BM_Axpb and BM_AxpbInto at 2^28, run
  before and after the Python figures; the better of the two is the reference).

    python bench/python_gpu.py [--bench-gpu build/bench/bench_gpu] [--json out.json]
"""
import argparse
import json
import statistics
import subprocess
import tempfile
import time

import jitexpr as jx


def host_costs(cands, syncs, calls=2000, rounds=9):
    """{name: us per call}: the median over `rounds` of (wall time of `calls` calls) / calls,
    the rounds of the candidates interleaved."""
    for name, fn in cands.items():
        for _ in range(100):
            fn()
        syncs[name]()
    per = {name: [] for name in cands}
    for _ in range(rounds):
        for name, fn in cands.items():
            sync = syncs[name]
            sync()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            t1 = time.perf_counter()
            sync()
            per[name].append((t1 - t0) / calls)
    return {name: statistics.median(v) * 1e6 for name, v in per.items()}


def batch_time(fn, sync, reps=10, batches=20):
    """bench_gpu's time_device: seconds per call, the median over batches of `reps` calls with the
    device synchronised after each batch."""
    fn()
    sync()
    times = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        times.append((time.perf_counter() - t0) / reps)
    return statistics.median(times)


def event_time(cupy, fn, reps=20):
    """Seconds per call from CUDA events on CuPy's current stream around single calls (median)."""
    fn()
    cupy.cuda.get_current_stream().synchronize()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return statistics.median(times)


def cpp_eval(bench_gpu):
    """{"new": GB/s, "into": GB/s} of bench_gpu's BM_Axpb / BM_AxpbInto float32 at 2^28: the
    median of 5 repetitions. (The benchmark reports its bandwidth in the user counter "GB/s", in
    bytes per second; there is no bytes_per_second field.)"""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([bench_gpu, "--benchmark_filter=^BM_Axpb(Into)?/float32/268435456/",
                        f"--benchmark_out={f.name}", "--benchmark_out_format=json", "--benchmark_repetitions=5", "--benchmark_min_time=0.1s"],
                       check=True, stdout=subprocess.DEVNULL)
        with open(f.name) as fh:
            runs = json.load(fh)["benchmarks"]
    got = {}
    for r in runs:
        if r.get("run_type") == "iteration" and "GB/s" in r:
            key = "into" if r["name"].startswith("BM_AxpbInto") else "new"
            got.setdefault(key, []).append(r["GB/s"] / 1e9)
    if not got:
        raise SystemExit(f"{bench_gpu} gave no BM_Axpb/BM_AxpbInto float32/268435456 figure: {[r.get('name') for r in runs]}")
    return {k: statistics.median(v) for k, v in got.items()}


def cpp_host(bench_gpu):
    """{"eval new": us, "eval into": us} of bench_gpu's BM_HostOverheadEvalText / BM_HostOverheadInto
    (the C++ runtime's host cost of the same call at n = 1024, batches of 200 calls timed on the
    host, the median batch): the median of 3 repetitions of 0.1 s (a few seconds in all)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([bench_gpu, "--benchmark_filter=^BM_HostOverhead(EvalText|Into)(/|$)",
                        f"--benchmark_out={f.name}", "--benchmark_out_format=json", "--benchmark_repetitions=3",
                        "--benchmark_min_time=0.1s"], check=True, stdout=subprocess.DEVNULL)
        with open(f.name) as fh:
            runs = json.load(fh)["benchmarks"]
    got = {}
    for r in runs:
        if r.get("run_type") != "iteration":
            continue
        key = "eval into" if r["name"].startswith("BM_HostOverheadInto") else "eval new"
        unit = {"ns": 1e-3, "us": 1.0, "ms": 1e3}[r["time_unit"]]
        # The median batch (p50_us), as the Python calls are timed; the mean (real_time) of a
        # bench_gpu without that counter.
        got.setdefault(key, []).append(r["p50_us"] if "p50_us" in r else r["real_time"] * unit)
    return {k: statistics.median(v) for k, v in got.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench-gpu")
    ap.add_argument("--json")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    if not jx.cuda_available():
        raise SystemExit("no CUDA device: " + jx.info()["cuda"]["reason"])
    import cupy
    try:
        import torch
        if not torch.cuda.is_available():
            torch = None
    except ImportError:
        torch = None
    rows = {"host_us": {}, "bandwidth_gbs": {}, "verdicts": {}}

    cpp = [cpp_eval(args.bench_gpu)] if args.bench_gpu else []

    n = 1024
    a = cupy.arange(n, dtype=cupy.float32)
    b = cupy.ones(n, dtype=cupy.float32)
    out = cupy.empty_like(a)
    ek = cupy.ElementwiseKernel("float32 a, float32 b", "float32 c", "c = a * 2 + b", "axpb")
    k = jx.compile("a*2+b")
    ks = jx.compile("a*2+b", {"a": "float32", "b": "float32"})
    csync = cupy.cuda.get_current_stream().synchronize
    cands = {
        "jx.evaluate cupy new": lambda: jx.evaluate("a*2+b", a=a, b=b),
        "jx.evaluate cupy out=": lambda: jx.evaluate("a*2+b", a=a, b=b, out=out),
        "jx.compile kernel cupy new": lambda: k(a=a, b=b),
        "jx.compile kernel cupy out=": lambda: k(a=a, b=b, out=out),
        "jx.compile kernel(signature) cupy out=": lambda: ks(a=a, b=b, out=out),
        "cupy ElementwiseKernel new": lambda: ek(a, b),
        "cupy ElementwiseKernel out=": lambda: ek(a, b, out),
        "cupy a*2+b": lambda: a * 2 + b,
    }
    syncs = {name: csync for name in cands}
    if torch is not None:
        ta = torch.arange(n, device="cuda", dtype=torch.float32)
        tb = torch.ones(n, device="cuda", dtype=torch.float32)
        tout = torch.empty_like(ta)
        tsync = torch.cuda.synchronize
        tc = {
            "jx.evaluate torch new": lambda: jx.evaluate("a*2+b", a=ta, b=tb),
            "jx.evaluate torch out=": lambda: jx.evaluate("a*2+b", a=ta, b=tb, out=tout),
            "jx.compile kernel torch out=": lambda: k(a=ta, b=tb, out=tout),
            # What a torch user pays to use CuPy's kernel: the tensors handed over per call.
            "cupy ElementwiseKernel torch new": lambda: ek(cupy.from_dlpack(ta), cupy.from_dlpack(tb)),
            "cupy ElementwiseKernel torch out=": lambda: ek(cupy.from_dlpack(ta), cupy.from_dlpack(tb),
                                                            cupy.from_dlpack(tout)),
            "torch eager a*2+b": lambda: ta * 2 + tb,
            "torch eager out=": lambda: torch.add(tb, ta, alpha=2, out=tout),
        }
        cands.update(tc)
        syncs.update({name: tsync for name in tc})
    h = host_costs(cands, syncs, args.calls, args.rounds)
    rows["host_us"] = {name: round(v, 2) for name, v in h.items()}
    if args.bench_gpu:
        # The C++ runtime's own host cost of the same call: what the extension and Python add is
        # the difference.
        try:
            for key, us in cpp_host(args.bench_gpu).items():
                rows["host_us"][f"C++ {key} (bench_gpu BM_HostOverhead*)"] = round(us, 2)
        except (OSError, subprocess.CalledProcessError, KeyError, ValueError) as e:
            rows["host_us"]["C++ host cost"] = f"not measured: {e}"
    v = rows["verdicts"]

    def verdict(key, mine, theirs):
        if mine in h and theirs in h:
            v[key] = {"jitexpr_us": round(h[mine], 2), "reference_us": round(h[theirs], 2),
                      "ratio": round(h[mine] / h[theirs], 3), "met": h[mine] <= h[theirs]}

    verdict("host: jx.evaluate cupy new <= ElementwiseKernel new", "jx.evaluate cupy new", "cupy ElementwiseKernel new")
    verdict("host: jx.evaluate cupy out= <= ElementwiseKernel out=", "jx.evaluate cupy out=", "cupy ElementwiseKernel out=")
    verdict("host: kernel cupy out= <= ElementwiseKernel out=", "jx.compile kernel cupy out=", "cupy ElementwiseKernel out=")
    verdict("host: jx.evaluate torch new <= ElementwiseKernel new (cupy inputs)", "jx.evaluate torch new",
            "cupy ElementwiseKernel new")
    verdict("host: jx.evaluate torch out= <= ElementwiseKernel out= (cupy inputs)", "jx.evaluate torch out=",
            "cupy ElementwiseKernel out=")
    verdict("host: jx.evaluate torch new <= ElementwiseKernel on torch inputs new", "jx.evaluate torch new",
            "cupy ElementwiseKernel torch new")
    verdict("host: jx.evaluate torch out= <= ElementwiseKernel on torch inputs out=", "jx.evaluate torch out=",
            "cupy ElementwiseKernel torch out=")
    del a, b, out
    if torch is not None:
        del ta, tb, tout

    n = 1 << 28
    a = cupy.random.random(n, dtype=cupy.float32)
    b = cupy.random.random(n, dtype=cupy.float32)
    out = cupy.empty_like(a)
    moved = 3 * n * 4
    bw = rows["bandwidth_gbs"]
    bw["jx.evaluate new (batches, as bench_gpu)"] = moved / batch_time(lambda: jx.evaluate("a*2+b", a=a, b=b), csync) / 1e9
    bw["jx.evaluate out= (batches, as bench_gpu)"] = moved / batch_time(lambda: jx.evaluate("a*2+b", a=a, b=b, out=out),
                                                                       csync) / 1e9
    bw["jx.compile kernel out= (batches)"] = moved / batch_time(lambda: k(a=a, b=b, out=out), csync) / 1e9
    bw["jx.evaluate new (CUDA events)"] = moved / event_time(cupy, lambda: jx.evaluate("a*2+b", a=a, b=b)) / 1e9
    bw["jx.evaluate out= (CUDA events)"] = moved / event_time(cupy, lambda: jx.evaluate("a*2+b", a=a, b=b, out=out)) / 1e9
    bw["cupy ElementwiseKernel out= (batches)"] = moved / batch_time(lambda: ek(a, b, out), csync) / 1e9
    if torch is not None:
        ta = torch.from_dlpack(a)
        tb = torch.from_dlpack(b)
        tout = torch.from_dlpack(out)
        bw["jx.evaluate torch out= (batches)"] = moved / batch_time(
            lambda: jx.evaluate("a*2+b", a=ta, b=tb, out=tout), torch.cuda.synchronize) / 1e9
    if args.bench_gpu:
        cpp.append(cpp_eval(args.bench_gpu))
        ref = {key: max(c.get(key, 0.0) for c in cpp) for key in ("new", "into")}
        bw["C++ eval new (bench_gpu BM_Axpb, before / after)"] = [round(c.get("new", 0.0), 1) for c in cpp]
        bw["C++ eval into (bench_gpu BM_AxpbInto, before / after)"] = [round(c.get("into", 0.0), 1) for c in cpp]
        for key, mine in (("new", "jx.evaluate new (batches, as bench_gpu)"),
                          ("into", "jx.evaluate out= (batches, as bench_gpu)")):
            if ref[key]:
                r = bw[mine] / ref[key]
                v[f"bandwidth 2^28: {mine} within 2% of C++ {key}"] = {
                    "jitexpr_gbs": round(bw[mine], 1), "cpp_gbs": round(ref[key], 1), "ratio": round(r, 4),
                    "met": r >= 0.98}
    rows["bandwidth_gbs"] = {name: (round(x, 1) if isinstance(x, float) else x) for name, x in bw.items()}
    print(json.dumps(rows, indent=1))
    met = [x["met"] for x in v.values()]
    print(f"verdicts: {sum(met)} of {len(met)} met")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d %H:%M"), "info": jx.info(), **rows}, f, indent=1)


if __name__ == "__main__":
    main()
