#!/usr/bin/env python3
"""jitexpr's Python package on the GPU with CuPy and PyTorch inputs, in one run:

- host cost per evaluate at n = 1024 (a*2+b, float32; new output and out=), against CuPy's
  ElementwiseKernel and CuPy's own arithmetic, and torch eager, timed the same way (the median of
  many calls, the stream synchronised once per batch);
- bandwidth at 2^28 float32 of a*2+b (new output and out=), timed with CUDA events on CuPy's
  stream, against the C++ eval of the same run (`--bench-gpu BUILD/bench/bench_gpu` runs its
  BM_Axpb/BM_AxpbInto at 2^28; the ratio is printed).

    python bench/python_gpu.py [--bench-gpu build/bench/bench_gpu] [--json out.json]
"""
import argparse
import json
import statistics
import subprocess
import tempfile
import time

import jitexpr as jx


def host_cost(fn, sync, calls=2000, rounds=7):
    for _ in range(50):
        fn()
    sync()
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        sync()
        per.append((t1 - t0) / calls)
    return statistics.median(per) * 1e6


def device_time(cupy, fn, reps=20):
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
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([bench_gpu, "--benchmark_filter=BM_Axpb(Into)?/float32/268435456",
                        f"--benchmark_out={f.name}", "--benchmark_out_format=json", "--benchmark_repetitions=5"],
                       check=True, stdout=subprocess.DEVNULL)
        runs = json.load(open(f.name))["benchmarks"]
    best = {}
    for r in runs:
        if r.get("run_type") == "iteration" and "bytes_per_second" in r:
            key = "into" if "Into" in r["name"] else "new"
            best[key] = max(best.get(key, 0.0), r["bytes_per_second"] / 1e9)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench-gpu")
    ap.add_argument("--json")
    args = ap.parse_args()
    if not jx.cuda_available():
        raise SystemExit("no CUDA device: " + jx.info()["cuda"]["reason"])
    import cupy
    rows = {}
    sync = cupy.cuda.get_current_stream().synchronize

    n = 1024
    a = cupy.arange(n, dtype=cupy.float32)
    b = cupy.ones(n, dtype=cupy.float32)
    out = cupy.empty_like(a)
    ek = cupy.ElementwiseKernel("float32 a, float32 b", "float32 c", "c = a * 2 + b", "axpb")
    rows["host_us"] = {
        "jx.evaluate new": host_cost(lambda: jx.evaluate("a*2+b", a=a, b=b), sync),
        "jx.evaluate out=": host_cost(lambda: jx.evaluate("a*2+b", a=a, b=b, out=out), sync),
        "jx.compile kernel out=": None,
        "cupy ElementwiseKernel new": host_cost(lambda: ek(a, b), sync),
        "cupy ElementwiseKernel out=": host_cost(lambda: ek(a, b, out), sync),
        "cupy a*2+b": host_cost(lambda: a * 2 + b, sync),
    }
    k = jx.compile("a*2+b", {"a": "float32", "b": "float32"})
    rows["host_us"]["jx.compile kernel out="] = host_cost(lambda: k(a=a, b=b, out=out), sync)
    try:
        import torch
        ta = torch.arange(n, device="cuda", dtype=torch.float32)
        tb = torch.ones(n, device="cuda", dtype=torch.float32)
        tsync = torch.cuda.synchronize
        rows["host_us"]["jx.evaluate torch new"] = host_cost(lambda: jx.evaluate("a*2+b", a=ta, b=tb), tsync)
        rows["host_us"]["torch eager a*2+b"] = host_cost(lambda: ta * 2 + tb, tsync)
    except ImportError:
        pass

    n = 1 << 28
    a = cupy.random.random(n, dtype=cupy.float32)
    b = cupy.random.random(n, dtype=cupy.float32)
    out = cupy.empty_like(a)
    moved = 3 * n * 4
    rows["bandwidth_gbs"] = {
        "jx.evaluate new": moved / device_time(cupy, lambda: jx.evaluate("a*2+b", a=a, b=b)) / 1e9,
        "jx.evaluate out=": moved / device_time(cupy, lambda: jx.evaluate("a*2+b", a=a, b=b, out=out)) / 1e9,
        "cupy ElementwiseKernel out=": moved / device_time(cupy, lambda: ek(a, b, out)) / 1e9,
    }
    if args.bench_gpu:
        cpp = cpp_eval(args.bench_gpu)
        rows["bandwidth_gbs"]["C++ eval new"] = cpp.get("new")
        rows["bandwidth_gbs"]["C++ eval into"] = cpp.get("into")
        if cpp.get("new"):
            rows["python_over_cpp_new"] = rows["bandwidth_gbs"]["jx.evaluate new"] / cpp["new"]
        if cpp.get("into"):
            rows["python_over_cpp_into"] = rows["bandwidth_gbs"]["jx.evaluate out="] / cpp["into"]
    print(json.dumps(rows, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "info": jx.info(), **rows}, f, indent=1)


if __name__ == "__main__":
    main()
