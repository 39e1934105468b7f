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

    python bench/dask_compare.py --gpu --log2n 30 --log2chunk 30 --dtype float64 --json phases.json

How a GPU (and --overhead) compute is timed (``once``): the graph is built and optimised
beforehand (``dask.optimize``; persisted with ``optimize_graph=False``), the inputs are persisted
on the worker, and one compute is ``client.persist(x)`` then ``wait`` — every result, the
reduction's scalar included, stays on the worker. A CuPy task returns once its kernels are queued,
so ``wait`` can return before the GPU is done: a worker plugin of this benchmark (``GpuDone``)
records a CUDA event after each task and notes when it completes, and a compute ends when both
``wait`` has returned and the GPU has finished its work. Between computes the previous result is
released and forgotten by the scheduler, then the cluster is left idle for ``--settle`` seconds
(untimed): distributed batches the messages of each connection (the client's every 10 ms, the
scheduler's to a worker every 5 ms), so a compute sent right after the release of the previous
one would wait out that interval, which no compute in isolation does. The median of ``--reps``.

Each compute is also split into where its time went, from the scheduler's and the worker's own
logs (same host, same clock): pack (the client's persist call: packing the graph), submit
(client -> the scheduler receives the graph), sched (-> it sends the first task to a worker:
deserialising, materialising and ordering the graph, transitions), dispatch (-> the
worker has handled the first task's message), queue (-> the first task is handed to a thread),
run (-> the worker has handled the last task's end; funcs: the task functions' own time, summed),
report (-> the scheduler has the result), notify (-> ``wait`` returns), GPU tail (the worker
has the last task's end -> the GPU is done). An "empty" contender — one task per block that
returns its first input, same dependencies, no work — gives the scheduler's round trip alone, in
the same run.

--overhead runs that breakdown on the CPU (a LocalCluster of --workers, NumPy chunks), for
looking at per-task costs without a GPU:

    python bench/dask_compare.py --overhead --workers 1 --log2n 16 --log2chunk 16
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


# ------------------------------------------------------------------ one compute, and where it went

GPU_DONE = "jitexpr-bench-gpu-done"


def _empty_block(a, *rest):
    """The "empty" task: no work, the block's first input as its result."""
    return a


def empty_graph(a, b):
    """One task per block of ``a`` and ``b`` (the same dependencies as the elementwise contenders)
    that does nothing: what the scheduler's round trip costs alone."""
    import dask.array as da
    return da.blockwise(_empty_block, "i", a, "i", b, "i", dtype=a.dtype)


def _gpu_done_plugin():
    from distributed.diagnostics.plugin import WorkerPlugin

    class GpuDone(WorkerPlugin):
        """Benchmark only: when a task's result reaches memory on the worker, a CUDA event is
        recorded on the legacy default stream (which follows the work every blocking stream has
        queued, CuPy's default included), and a thread of its own notes the time at which it
        completes (to ~0.1 ms): when the GPU has finished what the task started."""
        name = GPU_DONE

        def setup(self, worker=None):
            import queue
            import threading
            self.queue = queue.SimpleQueue()
            self.done = {}
            threading.Thread(target=self._wait, daemon=True, name="gpu-done").start()

        def transition(self, key, start, finish, **kwargs):
            if start == "executing" and finish == "memory":
                import cupy
                ev = cupy.cuda.Event(block=False, disable_timing=True)
                ev.record(cupy.cuda.Stream.null)
                self.queue.put((key, ev))

        def _wait(self):
            while True:
                key, ev = self.queue.get()
                # Polled (cudaEventQuery) with short sleeps, which let go of the GIL, rather than
                # a blocking synchronize that might hold it and stall the worker's event loop.
                while not ev.done:
                    time.sleep(0.0001)
                self.done[key] = time.time()

    return GpuDone()


def _worker_log(keys, t0, gpu, dask_worker=None):
    """What the worker's logs say about ``keys`` since ``t0``, on its own clock: when the first
    compute-task message was handled, when the first task was handed to a thread, when the last
    task's success was handled, the task functions' own seconds (summed), and, with ``gpu``, when
    the GPU finished the last task's work."""
    st = dask_worker.state
    want = set(keys)
    recv, handed, done, fn, ran = [], [], [], 0.0, set()
    for ev in list(st.stimulus_log):
        if getattr(ev, "key", None) not in want or (ev.handled or 0) < t0:
            continue
        kind = type(ev).__name__
        if kind == "ComputeTaskEvent":
            recv.append(ev.handled)
        elif kind == "ExecuteSuccessEvent":
            done.append(ev.handled)
            fn += ev.stop - ev.start  # a difference: free of the worker's scheduler_delay offset
            ran.add(ev.key)
    for entry in list(st.log):
        # transitions: (key, initial, recommended, final, recommendations, stimulus_id, time)
        if len(entry) == 7 and entry[0] in want and entry[3] == "executing" and entry[6] >= t0:
            handed.append(entry[6])
    out = {"recv": min(recv) if recv else None, "start": min(handed) if handed else None,
           "stop": max(done) if done else None, "functions": fn, "tasks": len(done), "gpu_done": None}
    if gpu and ran:
        # The GPU-done time of every task this worker ran in this compute (each noted after t0).
        plugin = dask_worker.plugins.get(GPU_DONE)
        deadline = time.time() + 5
        while plugin is not None and time.time() < deadline:
            noted = [plugin.done.get(k, 0.0) for k in ran]
            if min(noted) >= t0:
                out["gpu_done"] = max(noted)
                break
            time.sleep(0.001)
    return out


def _scheduler_log(keys, results, t0, dask_scheduler=None):
    """From the scheduler's transition log since ``t0``: when it received the graph (its
    update-graph stimulus is named for that time), its first transition of the graph's tasks,
    the first task sent to a worker, the last result in memory."""
    received = first = dispatch = memory = None
    want, res = set(keys), set(results)
    for key, start, finish, _recs, stim, ts in dask_scheduler.story(*want):
        if ts < t0:
            continue
        if isinstance(stim, str) and stim.startswith("update-graph-"):
            try:
                t = float(stim[len("update-graph-"):])
                received = t if received is None else min(received, t)
            except ValueError:
                pass
        first = ts if first is None else min(first, ts)
        if finish == "processing":
            dispatch = ts if dispatch is None else min(dispatch, ts)
        if finish == "memory" and key in res:
            memory = ts if memory is None else max(memory, ts)
    return {"received": received if received is not None else first, "first": first, "dispatch": dispatch,
            "memory": memory}


PHASES = ("pack", "submit", "schedule", "dispatch", "queue", "run", "functions", "report", "notify", "gpu_tail")


def prepare(x, inputs):
    """``x`` optimised now (graph building is not timed), and the keys a compute of it runs."""
    import dask
    (x,) = dask.optimize(x)
    done = {k for i in inputs for k in i.__dask_graph__().keys()}
    return x, [k for k in x.__dask_graph__().keys() if k not in done]


def once(client, prepared, settle, gpu):
    """One compute of a prepared graph, alone: its record (seconds per phase, module docstring)."""
    from distributed import wait
    x, keys = prepared
    time.sleep(settle)
    t0 = time.time()
    f = client.persist(x, optimize_graph=False)
    t_persist = time.time()
    wait(f)
    t_wait = time.time()
    results = list(_flat(f.__dask_keys__()))
    w = list(client.run(_worker_log, keys, t0, gpu).values())
    s = client.run_on_scheduler(_scheduler_log, keys, results, t0)
    release = [str(k) for k in results]
    del f
    _forgotten(client, release)
    return _phases(t0, t_persist, t_wait, s, w)


def summary(records):
    """The median of each phase over the records (NaN where no record has it)."""
    med = {k: statistics.median([r[k] for r in records if r.get(k) is not None] or [float("nan")])
           for k in ("total", "wait") + PHASES}
    med["tasks"] = records[-1]["tasks"] if records else 0
    med["prelaunch"] = statistics.median([r["submit"] + r["schedule"] + r["dispatch"] + r["queue"] for r in records
                                          if None not in (r["submit"], r["schedule"], r["dispatch"], r["queue"])] or [float("nan")])
    return med


def _flat(keys):
    for k in keys:
        if isinstance(k, list):
            yield from _flat(k)
        else:
            yield k


def _phases(t0, t_persist, t_wait, s, ws):
    """Seconds per phase of one compute from the client's, the scheduler's and the workers' times."""
    def pick(fn, field):
        v = [w[field] for w in ws if w[field] is not None]
        return fn(v) if v else None
    recv, start, stop = pick(min, "recv"), pick(min, "start"), pick(max, "stop")
    gpu_done = pick(max, "gpu_done")
    end = max(t_wait, gpu_done or 0)

    def span(a, b):
        return None if a is None or b is None else b - a
    return {
        "total": end - t0, "wait": t_wait - t0,
        "pack": t_persist - t0, "submit": span(t0, s["received"]), "schedule": span(s["received"], s["dispatch"]),
        "dispatch": span(s["dispatch"], recv), "queue": span(recv, start),
        "run": span(start, stop), "functions": sum(w["functions"] for w in ws), "report": span(stop, s["memory"]),
        "notify": span(s["memory"], t_wait), "gpu_tail": span(stop, gpu_done),
        "tasks": sum(w["tasks"] for w in ws), "gpu_done": gpu_done,
    }


def phase_header():
    return (f"{'':12s} {'ms:':>4s} {'total':>7s} {'wait':>7s} {'pack':>6s} {'submit':>7s} {'sched':>7s} {'dispatch':>8s} {'queue':>7s} "
            f"{'run':>7s} {'funcs':>7s} {'report':>7s} {'notify':>7s} {'gpu tail':>8s} tasks")


def phase_line(label, m):
    def f(k, w=7):
        v = m.get(k)
        return f"{v * 1e3:{w}.2f}" if v is not None and v == v else f"{'-':>{w}s}"
    return (f"{label:17s} {f('total')} {f('wait')} {f('pack', 6)} {f('submit')} {f('schedule')} {f('dispatch', 8)} {f('queue')} "
            f"{f('run')} {f('functions')} {f('report')} {f('notify')} {f('gpu_tail', 8)} {m.get('tasks', 0):5d}")


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


def _wait_for_compiles():
    """The full kernels of tiered compiles in place (timing tier-1 kernels would say nothing)."""
    import jitexpr
    rt = jitexpr._jitexpr.default_runtime("cuda")
    rt.wait_for_compiles()
    return jitexpr.stats("cuda")


def single_process(args, xp, gpu):
    """Single-process jitexpr on this process's arrays: {name: seconds}, the median of --reps
    (prepared, and the tiered compile finished, before timing)."""
    import numpy as np
    import jitexpr as jx
    n = 1 << args.log2n
    if gpu:
        a1 = xp.random.default_rng(1).random(n, dtype=np.float64).astype(args.dtype)
        b1 = xp.random.default_rng(2).random(n, dtype=np.float64).astype(args.dtype)
        sync = xp.cuda.get_current_stream().synchronize
    else:
        a1 = np.random.default_rng(1).random(n).astype(args.dtype)
        b1 = np.random.default_rng(2).random(n).astype(args.dtype)

        def sync():
            return None
    single = {}
    for name, text, _nin in EXPRS:
        env = {"a": a1, "b": b1} if "b" in text else {"a": a1}
        jx.evaluate(text, env)
        if gpu:
            _wait_for_compiles()
        sync()
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            r = jx.evaluate(text, env)
            sync()
            times.append(time.perf_counter() - t0)
            del r
        single[name] = statistics.median(times)
    return single


def cluster_rows(client, a, b, single, gpu, args, out):
    """The table of jitexpr.dask against single-process jitexpr and Dask's own arithmetic, the
    phases of each, and an "empty" compute's, all interleaved per repetition. Returns the records."""
    import numpy as np
    n = 1 << args.log2n
    item = np.dtype(args.dtype).itemsize
    empty = prepare(empty_graph(a, b), (a, b))
    probe = once(client, empty, args.settle, gpu)
    if gpu and probe["gpu_done"] is None:
        out("# the GPU-done plugin gave no time: totals below are until wait() returned only")
        gpu = False
    out(f"{'expression':12s} {'jx 1-proc':>10s} {'jx.dask':>10s} {'dask':>10s}   GB/s   jx.dask / jx 1-proc"
        f"   ceiling (1-proc + empty compute's latency)")
    rows, phase_rows, records = [], [], {}
    for name, text, nin in EXPRS:
        scalar = name.startswith("sum")
        moved = (nin + (0 if scalar else 1)) * n * item
        graphs = {"jx.dask": prepare(jitexpr_dask(text, a, b), (a, b)),
                  "dask": prepare(dask_native(name, a, b), (a, b)),
                  "empty": empty}
        for g in graphs.values():  # warm-up: each worker prepares its programs once
            once(client, g, args.settle, gpu)
        if gpu:
            client.run(_wait_for_compiles)
        recs = {k: [] for k in graphs}
        for _ in range(args.reps):  # interleaved: load from outside falls on every contender alike
            for k, g in graphs.items():
                recs[k].append(once(client, g, args.settle, gpu))
        med = {k: summary(v) for k, v in recs.items()}
        t1 = single[name]
        bj, bd = moved / med["jx.dask"]["total"] / 1e9, moved / med["dask"]["total"] / 1e9
        # The best jitexpr.dask could do if it cost nothing but the scheduler's round trip on
        # top of single-process jitexpr's time: the empty compute's latency to its first
        # function, then the work; or the empty compute's whole round trip, if longer.
        ceiling = t1 / max(med["empty"]["prelaunch"] + t1, med["empty"]["total"])
        out(f"{name:12s} {moved / t1 / 1e9:10.1f} {bj:10.1f} {bd:10.1f}          {t1 / med['jx.dask']['total']:5.3f}"
            f"{'':14s}{ceiling:5.3f}")
        for k in graphs:
            phase_rows.append(phase_line(f"{name} {k}" if k != "empty" else f"{name} (empty)", med[k]))
        records[name] = {"single_s": t1, "moved_bytes": moved, "median": med, "records": recs}
    out("# where each compute's time went (medians; ms): total = until wait() returned and the GPU was done")
    out(phase_header())
    for line in phase_rows:
        out(line)
    return records


def run_gpu(args, out):
    import logging

    import cupy
    import dask
    import dask.array as da
    import numpy as np
    from dask_cuda import LocalCUDACluster
    from distributed import Client, wait

    n, chunk = 1 << args.log2n, 1 << args.log2chunk
    # Single-process jitexpr first, on this process's GPU (freed before the cluster starts).
    single = single_process(args, cupy, True)
    cupy.get_default_memory_pool().free_all_blocks()

    cluster = LocalCUDACluster(n_workers=1, threads_per_worker=args.threads, host="127.0.0.1", dashboard_address=None,
                               silence_logs=logging.ERROR, protocol="tcp")
    client = Client(cluster)
    try:
        try:
            client.register_plugin(_gpu_done_plugin())
        except Exception as e:  # noqa: BLE001 - the benchmark still runs, timing wait() only
            out(f"# the GPU-done plugin did not start ({type(e).__name__}: {e})")
        rng = da.random.default_rng(cupy.random.default_rng(20))
        a = rng.random(n, chunks=chunk, dtype=np.float64).astype(args.dtype).persist()
        b = rng.random(n, chunks=chunk, dtype=np.float64).astype(args.dtype).persist()
        wait([a, b])
        out(f"# dask_compare (GPU) {datetime.date.today()} on {platform.node()}; dask {dask.__version__}, "
            f"CuPy {cupy.__version__}, {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
        out(f"# LocalCUDACluster, 1 worker x {args.threads} thread(s); n = 2^{args.log2n} {args.dtype} in 2^{args.log2chunk}-element CuPy chunks; "
            f"median of {args.reps}; inputs persisted; results persisted (persist + wait, until the GPU is done); "
            f"graph building excluded; {args.settle * 1e3:.0f} ms idle before each compute")
        records = cluster_rows(client, a, b, single, True, args, out)
        stats = client.run(lambda: __import__("jitexpr").stats("cuda"))
        out(f"# worker jitexpr stats: {stats}")
        return records
    finally:
        client.close()
        cluster.close()


def run_overhead(args, out):
    """The GPU run's measurement on the CPU: a LocalCluster, NumPy chunks, per-phase times."""
    import logging

    import dask
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    import jitexpr.dask as jxd

    n, chunk = 1 << args.log2n, 1 << args.log2chunk
    _set_threads(1)
    single = single_process(args, None, False)
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                           silence_logs=logging.ERROR, memory_limit=0)
    client = Client(cluster)
    try:
        client.register_plugin(jxd.WarmCache(cpu_threads=1))
        client.run(_set_threads, 1)
        rng = da.random.default_rng(20)
        a = rng.random(n, chunks=chunk).astype(args.dtype).persist()
        b = rng.random(n, chunks=chunk).astype(args.dtype).persist()
        wait([a, b])
        out(f"# dask_compare --overhead (CPU) {datetime.date.today()} on {platform.node()} ({os.cpu_count()} cores), "
            f"dask {dask.__version__}; {args.workers} worker(s) x 1 thread, jitexpr 1 thread; n = 2^{args.log2n} "
            f"{args.dtype} in 2^{args.log2chunk}-element chunks; median of {args.reps}; persist + wait; "
            f"{args.settle * 1e3:.0f} ms idle before each compute")
        return cluster_rows(client, a, b, single, False, args, out)
    finally:
        client.close()
        cluster.close()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gpu", action="store_true")
    p.add_argument("--overhead", action="store_true", help="the GPU run's per-phase measurement, on the CPU")
    p.add_argument("--log2n", type=int, default=None)
    p.add_argument("--log2chunk", type=int, default=None)
    p.add_argument("--dtype", default="float64")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--threads", type=int, default=1, help="GPU: threads of the worker (dask-cuda's default: 1)")
    p.add_argument("--settle", type=float, default=0.05,
                   help="seconds the cluster is left idle before each timed compute (GPU and --overhead)")
    p.add_argument("--out", help="also write the table to this file")
    p.add_argument("--json", help="GPU and --overhead: every compute's phases to this file")
    args = p.parse_args()
    if args.log2n is None:
        args.log2n = 30 if args.gpu else 16 if args.overhead else 28
    if args.log2chunk is None:
        args.log2chunk = args.log2n if (args.gpu or args.overhead) else 24
    lines = []

    def out(s):
        print(s, flush=True)
        lines.append(s)
    run = run_gpu if args.gpu else run_overhead if args.overhead else run_cpu
    records = run(args, out)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    if args.json and records is not None:
        import json
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "rows": records}, f, indent=1, default=str)


if __name__ == "__main__":
    sys.exit(main())
