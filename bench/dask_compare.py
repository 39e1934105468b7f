"""jitexpr.dask against Dask's own array arithmetic and da.map_blocks(numexpr.evaluate), in one run.

CPU (default): a LocalCluster of 2 worker processes, 1 thread each, on 127.0.0.1; jitexpr and
numexpr use 1 thread per worker, so every contender has the same 2 cores. Inputs are made on the
workers and persisted; each measurement is the median of --reps computes of a graph built
beforehand (graph building excluded): elementwise results are persisted on the workers (not
gathered), sum(a*b) is gathered (a scalar). Bandwidth = bytes the work must move (inputs read
once, output written once) / time.

    python bench/dask_compare.py                      # 2^28 float64 in 2^24-element chunks
    python bench/dask_compare.py --log2n 26 --out bench/results/DATE-cpu-dask.txt

GPU (--gpu): dask-cuda's LocalCUDACluster with one worker, CuPy chunks, against single-process
jitexpr on the same CuPy arrays and CuPy-backed Dask arithmetic, in the same call:

    python bench/dask_compare.py --gpu --log2n 30 --log2chunk 30 --dtype float64
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time

EXPRS = [
    ("a*2+b", "a*2+b", 2),
    ("polynomial", "((.25*a + .75)*a - 1.5)*a - 2", 1),
    ("where", "where(a > 0.5, sin(a)*b + exp(-b), a*a - b)", 2),
    ("sum(a*b)", "sum(a*b)", 2),
]


def dask_native(name, a, b):
    import dask.array as da
    if name == "a*2+b":
        return a * 2 + b
    if name == "polynomial":
        return ((.25 * a + .75) * a - 1.5) * a - 2
    if name == "where":
        return da.where(a > 0.5, da.sin(a) * b + da.exp(-b), a * a - b)
    return (a * b).sum()


def _ne_block(text):
    import numexpr as ne

    def f(a, b=None):
        return ne.evaluate(text, local_dict={"a": a, "b": b} if b is not None else {"a": a})
    return f


def _ne_sum_block(a, b):
    import numexpr as ne
    return ne.evaluate("sum(a*b)", local_dict={"a": a, "b": b}).reshape(1)


def dask_numexpr(name, text, a, b):
    import dask.array as da
    if name == "sum(a*b)":
        return da.map_blocks(_ne_sum_block, a, b, chunks=((1,) * a.numblocks[0],), dtype=a.dtype).sum()
    if "b" in text:
        return da.map_blocks(_ne_block(text), a, b, dtype=a.dtype)
    return da.map_blocks(_ne_block(text), a, dtype=a.dtype)


def jitexpr_dask(text, a, b):
    import jitexpr.dask as jxd
    return jxd.evaluate(text, a=a, b=b) if "b" in text else jxd.evaluate(text, a=a)


def time_graph(client, x, reps, scalar):
    from distributed import wait
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        if scalar:
            client.compute(x).result()
        else:
            f = client.persist(x)
            wait(f)
        times.append(time.perf_counter() - t0)
        if not scalar:
            keys = [str(k) for k in f.__dask_keys__()]
            del f
            _forgotten(client, keys)
    return statistics.median(times), times


def _forgotten(client, keys, timeout=60):
    """Waits until the scheduler has let go of a persisted result (else the next persist of the
    same graph would find it in memory and compute nothing)."""
    import gc
    gc.collect()
    probe = keys[:8]

    def held(dask_scheduler, probe=probe):
        return sum(1 for ts in dask_scheduler.tasks.values() if str(ts.key) in probe)
    deadline = time.monotonic() + timeout
    while client.run_on_scheduler(held) and time.monotonic() < deadline:
        time.sleep(0.01)


def _set_threads(n):
    import numexpr
    import jitexpr
    numexpr.set_num_threads(n)
    jitexpr.set_num_threads(n)
    return n


def run_cpu(args, out):
    import logging

    import dask
    import dask.array as da
    import numpy as np
    from distributed import Client, LocalCluster

    import jitexpr.dask as jxd

    n, chunk = 1 << args.log2n, 1 << args.log2chunk
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}, silence_logs=logging.ERROR, memory_limit=0)
    client = Client(cluster)
    try:
        client.register_plugin(jxd.WarmCache(cpu_threads=1))
        client.run(_set_threads, 1)
        rng = da.random.default_rng(20)
        a = rng.random(n, chunks=chunk).astype(args.dtype).persist()
        b = rng.random(n, chunks=chunk).astype(args.dtype).persist()
        from distributed import wait
        wait([a, b])
        item = np.dtype(args.dtype).itemsize
        out(f"# dask_compare (CPU) {datetime.date.today()} on {platform.node()} ({os.cpu_count()} cores), "
            f"Python {platform.python_version()}, dask {dask.__version__}")
        out(f"# {args.workers} worker processes x 1 thread; jitexpr and numexpr 1 thread each; n = 2^{args.log2n} "
            f"{args.dtype} in 2^{args.log2chunk}-element chunks; median of {args.reps}; inputs persisted; "
            f"graph building excluded")
        out(f"{'expression':12s} {'dask':>10s} {'numexpr':>10s} {'jitexpr':>10s}   GB/s (dask / map_blocks(numexpr) / jitexpr.dask)   vs best other")
        for name, text, nin in EXPRS:
            scalar = name.startswith("sum")
            moved = (nin + (0 if scalar else 1)) * n * item
            graphs = {
                "dask": dask_native(name, a, b),
                "numexpr": dask_numexpr(name, text, a, b),
                "jitexpr": jitexpr_dask(text, a, b),
            }
            # Warm-up (each worker prepares its programs once), then the same results from each.
            ref = None
            for k, g in graphs.items():
                r = client.compute(g.sum() if not scalar else g).result()
                ref = r if ref is None else ref
                if not np.isclose(r, ref, rtol=1e-9):
                    raise SystemExit(f"{name}: {k} gives {r}, dask gives {ref}")
            # Interleaved: repetition r of every contender before repetition r + 1 of any, so
            # that load from outside the benchmark falls on all of them alike.
            times = {k: [] for k in graphs}
            for _ in range(args.reps):
                for k in ("dask", "numexpr", "jitexpr"):
                    times[k] += time_graph(client, graphs[k], 1, scalar)[1]
            res = {k: moved / statistics.median(t) / 1e9 for k, t in times.items()}
            best_other = max(res["dask"], res["numexpr"])
            out(f"{name:12s} {res['dask']:10.2f} {res['numexpr']:10.2f} {res['jitexpr']:10.2f}   "
                f"{'':44s} {res['jitexpr'] / best_other:5.2f}x")
            out("#   seconds: " + "; ".join(f"{k} " + " ".join(f"{t:.2f}" for t in v) for k, v in times.items()))
    finally:
        client.close()
        cluster.close()


def run_gpu(args, out):
    import logging

    import cupy
    import dask
    import dask.array as da
    import numpy as np
    from dask_cuda import LocalCUDACluster
    from distributed import Client, wait

    import jitexpr as jx
    import jitexpr.dask as jxd

    n, chunk = 1 << args.log2n, 1 << args.log2chunk
    item = np.dtype(args.dtype).itemsize
    # Single-process jitexpr first, on this process's GPU (freed before the cluster starts).
    single = {}
    a1 = cupy.random.default_rng(1).random(n, dtype=np.float64).astype(args.dtype)
    b1 = cupy.random.default_rng(2).random(n, dtype=np.float64).astype(args.dtype)
    for name, text, nin in EXPRS:
        scalar = name.startswith("sum")
        moved = (nin + (0 if scalar else 1)) * n * item
        env = {"a": a1, "b": b1} if "b" in text else {"a": a1}
        jx.evaluate(text, env)  # prepared (compiled) once before timing
        cupy.cuda.get_current_stream().synchronize()
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            r = jx.evaluate(text, env)
            cupy.cuda.get_current_stream().synchronize()
            times.append(time.perf_counter() - t0)
            del r
        single[name] = moved / statistics.median(times) / 1e9
    del a1, b1
    cupy.get_default_memory_pool().free_all_blocks()

    cluster = LocalCUDACluster(n_workers=1, host="127.0.0.1", dashboard_address=None, silence_logs=logging.ERROR,
                               protocol="tcp")
    client = Client(cluster)
    try:
        rng = da.random.default_rng(cupy.random.default_rng(20))
        a = rng.random(n, chunks=chunk, dtype=np.float64).astype(args.dtype).persist()
        b = rng.random(n, chunks=chunk, dtype=np.float64).astype(args.dtype).persist()
        wait([a, b])
        out(f"# dask_compare (GPU) {datetime.date.today()} on {platform.node()}; dask {dask.__version__}, "
            f"CuPy {cupy.__version__}, {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
        out(f"# LocalCUDACluster, 1 worker; n = 2^{args.log2n} {args.dtype} in 2^{args.log2chunk}-element CuPy chunks; "
            f"median of {args.reps}; inputs persisted; graph building excluded")
        out(f"{'expression':12s} {'jx 1-proc':>10s} {'jx.dask':>10s} {'dask+cupy':>10s}   GB/s   jx.dask / jx 1-proc")
        for name, text, nin in EXPRS:
            scalar = name.startswith("sum")
            moved = (nin + (0 if scalar else 1)) * n * item
            gj = jitexpr_dask(text, a, b)
            gd = dask_native(name, a, b)
            for g in (gj, gd):
                client.compute(g.sum() if not scalar else g).result()
            tj, td = [], []
            for _ in range(args.reps):  # interleaved, as on the CPU
                tj += time_graph(client, gj, 1, scalar)[1]
                td += time_graph(client, gd, 1, scalar)[1]
            mj, md = statistics.median(tj), statistics.median(td)
            bj, bd = moved / mj / 1e9, moved / md / 1e9
            out(f"{name:12s} {single[name]:10.1f} {bj:10.1f} {bd:10.1f}          {bj / single[name]:5.3f}")
        stats = client.run(lambda: __import__("jitexpr").stats("cuda"))
        out(f"# worker jitexpr stats: {stats}")
    finally:
        client.close()
        cluster.close()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gpu", action="store_true")
    p.add_argument("--log2n", type=int, default=None)
    p.add_argument("--log2chunk", type=int, default=None)
    p.add_argument("--dtype", default="float64")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--out", help="also write the table to this file")
    args = p.parse_args()
    if args.log2n is None:
        args.log2n = 30 if args.gpu else 28
    if args.log2chunk is None:
        args.log2chunk = args.log2n if args.gpu else 24
    lines = []

    def out(s):
        print(s, flush=True)
        lines.append(s)
    (run_gpu if args.gpu else run_cpu)(args, out)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
