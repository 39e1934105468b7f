#!/usr/bin/env python3
"""The host cost of one call of jitexpr's Python API on the CPU, path by path: what a call costs
beyond its work, where the kernel itself is about a microsecond (n = 1024 float32, a*2+b).

    python bench/python_host.py [--sizes 1024] [--calls 3000] [--rounds 9] [--json out.json]
    python bench/python_host.py --compare BEFORE_DIR AFTER_DIR [--alternate 5]
    python bench/python_host.py --compare BEFORE_DIR AFTER_DIR --peers --sizes 1,16,1024 \
        --bench-hit build/bench/bench_hit --json out.json
    python bench/python_host.py --compare BEFORE_DIR AFTER_DIR --instructions [--calls 20000]

BEFORE_DIR and AFTER_DIR are folders holding a built `jitexpr` package (a build tree's python/
folder, or a copy of it): --compare runs this script in a child process for each, alternating
them --alternate times, and prints the median per path of each side and their ratio, so that
both are measured in one run under the same load (this machine is shared). With --instructions
it counts the user-space instructions per call of each path instead (perf stat), which other jobs
on the machine do not change.

Paths: jx.evaluate with keywords (new output, out=), with names from the caller's frame, with a
local_dict; a jx.compile kernel (with and without a signature, out=); jitexpr.numexpr.evaluate
(frame, out=); NumPy arrays behind the DLPack protocol (an object with only __dlpack__ and
__dlpack_device__); an object with __cuda_array_interface__ (on a machine without CUDA the call
binds the array and then raises NoDeviceError: the figure is the binding plus the error); the
extension's own evaluate with a dict (the floor under the Python layer). With --peers, the same
expression by numexpr 2.14 (1 thread, names from the frame, new output and out=) and by NumPy
(a*2+b, and np.multiply/np.add into out), measured in the same processes; with --bench-hit, the
C++ runtime's own cost of the call at each size (bench_hit's BM_RunExprHit / BM_RunIntoHit:
Runtime::run / run_into over an environment of the two arrays; CPU time, median of 5
repetitions), run before and after the Python figures. Each figure is the
median over rounds of the wall time per call (us) and of this thread's CPU time per call (us;
at this size the work runs on the calling thread), and with --compare the least CPU time of any
round (the figure least moved by other jobs on the machine).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def measure(fn, calls, rounds):
    for _ in range(200):
        fn()
    wall, cpu = [], []
    for _ in range(rounds):
        t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        for _ in range(calls):
            fn()
        c1, t1 = time.thread_time_ns(), time.perf_counter_ns()
        wall.append((t1 - t0) / calls / 1e3)
        cpu.append((c1 - c0) / calls / 1e3)
    return statistics.median(wall), statistics.median(cpu), min(cpu)


class DLPackOnly:
    """An array seen only through the DLPack protocol (as a JAX or PyTorch CPU array is)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return self._a.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class FakeCuda:
    """An object with a CUDA array interface v3 (as Numba's and CuPy's arrays have)."""

    def __init__(self, n, ptr=0x7F0000000000):
        self._cai = {"shape": (n,), "typestr": "<f4", "data": (ptr, False), "version": 3, "strides": None,
                     "stream": 1}

    @property
    def __cuda_array_interface__(self):
        return dict(self._cai)  # a fresh dict per access, as CuPy makes one


def make_paths(n, peers=False):
    import numpy as np
    import jitexpr as jx
    import jitexpr.numexpr as jne
    core = jx._jitexpr
    jx.set_num_threads(1)
    a = np.arange(n, dtype=np.float32)
    b = np.ones(n, dtype=np.float32)
    out = np.empty_like(a)
    env = {"a": a, "b": b}
    k = jx.compile("a*2+b")
    ks = jx.compile("a*2+b", {"a": "float32", "b": "float32"})
    da, db = DLPackOnly(a), DLPackOnly(b)
    ca, cb = FakeCuda(n), FakeCuda(n)

    def fake_cuda():
        try:
            jx.evaluate("a*2+b", a=ca, b=cb)
        except jx.Error:
            pass

    def frame_new(a=a, b=b):  # a and b are locals of the calling frame
        return jx.evaluate("a*2+b")

    def frame_ne(a=a, b=b):
        return jne.evaluate("a*2+b")

    def frame_ne_out(a=a, b=b, out=out):
        return jne.evaluate("a*2+b", out=out)

    paths = {
        "core.evaluate(dict) new": lambda: core.evaluate("a*2+b", env, None, None, None, None),
        "jx.evaluate kw new": lambda: jx.evaluate("a*2+b", a=a, b=b),
        "jx.evaluate kw out=": lambda: jx.evaluate("a*2+b", a=a, b=b, out=out),
        "jx.evaluate frame new": frame_new,
        "jx.evaluate local_dict new": lambda: jx.evaluate("a*2+b", env),
        "Kernel kw out=": lambda: k(a=a, b=b, out=out),
        "Kernel(signature) kw out=": lambda: ks(a=a, b=b, out=out),
        "Kernel kw new": lambda: k(a=a, b=b),
        "jx.numexpr.evaluate frame new": frame_ne,
        "jx.numexpr.evaluate frame out=": frame_ne_out,
        "jx.evaluate DLPack-only new": lambda: jx.evaluate("a*2+b", a=da, b=db),
        "jx.evaluate fake CAI (NoDeviceError)": fake_cuda,
    }
    if jx.cuda_available():
        del paths["jx.evaluate fake CAI (NoDeviceError)"]
    if peers:
        import numexpr as ne
        ne.set_num_threads(1)

        def real_ne(a=a, b=b):
            return ne.evaluate("a*2+b")

        def real_ne_out(a=a, b=b, out=out):
            return ne.evaluate("a*2+b", out=out)

        def numpy_out():
            np.multiply(a, 2, out=out)
            return np.add(out, b, out=out)

        paths["peer: numexpr.evaluate frame new"] = real_ne
        paths["peer: numexpr.evaluate frame out="] = real_ne_out
        paths["peer: NumPy a*2+b new"] = lambda: a * 2 + b
        paths["peer: NumPy multiply+add out="] = numpy_out
    return paths


def run_paths(n, calls, rounds, peers=False):
    return {name: measure(fn, calls, rounds) for name, fn in make_paths(n, peers).items()}


def run_sizes(sizes, calls, rounds, peers=False):
    return {str(n): run_paths(n, calls, rounds, peers) for n in sizes}


def cpp_costs(bench_hit, sizes):
    """{size: {"C++ run new": us, "C++ run_into out=": us}} from bench_hit (the median of 5
    repetitions of its CPU time per call)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([bench_hit, "--benchmark_filter=^BM_Run(Expr|Into)Hit/",
                        f"--benchmark_out={f.name}", "--benchmark_out_format=json", "--benchmark_repetitions=5",
                        "--benchmark_min_time=0.2"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)  # its context lines: in the error when it fails
        with open(f.name) as fh:
            runs = json.load(fh)["benchmarks"]
    got = {}
    for r in runs:
        if r.get("run_type") != "iteration":
            continue
        kind, size = r["name"].split("/")[:2]
        name = "C++ run new" if kind == "BM_RunExprHit" else "C++ run_into out="
        unit = {"ns": 1e-3, "us": 1.0, "ms": 1e3}[r["time_unit"]]
        # CPU time: the figure comparable with the Python rows' thread CPU time (the benchmark
        # runs one thread; on a loaded machine its real time also counts the time it waited).
        got.setdefault(size, {}).setdefault(name, []).append(r["cpu_time"] * unit)
    return {size: {name: statistics.median(v) for name, v in d.items()} for size, d in got.items()
            if int(size) in sizes}


def run_one(n, name, calls):
    """`calls` calls of one path after its warm-up (for perf stat: instructions do not depend on
    what else the machine runs)."""
    fn = make_paths(n, peers=name.startswith("peer: "))[name]
    for _ in range(200):
        fn()
    for _ in range(calls):
        fn()


def instructions(folder, n, name, calls):
    """User-space instructions per call of path `name` with the package of `folder`: perf stat
    of a process making `calls` calls less one making none."""
    def count(c):
        env = dict(os.environ, PYTHONPATH=os.path.abspath(folder))
        r = subprocess.run(["perf", "stat", "-x,", "-e", "instructions:u", sys.executable, __file__, "--one", name,
                            "--n", str(n), "--calls", str(c)], env=env, capture_output=True, text=True, check=True)
        for line in r.stderr.splitlines():
            f = line.split(",")
            if len(f) > 2 and f[2].startswith("instructions"):
                return int(f[0])
        raise RuntimeError(r.stderr)
    return (count(calls) - count(0)) / calls


def parse_sizes(text):
    return [int(x) for x in text.split(",") if x]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1024", help="comma-separated element counts (default 1024)")
    ap.add_argument("--n", type=int, help="one size (the same as --sizes N)")
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE_DIR", "AFTER_DIR"))
    ap.add_argument("--alternate", type=int, default=5)
    ap.add_argument("--peers", action="store_true", help="also numexpr 2.14 and NumPy on the same data")
    ap.add_argument("--bench-hit", help="bench_hit of a Release build: the C++ runtime's cost of the same calls")
    ap.add_argument("--json")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--instructions", action="store_true",
                    help="with --compare: user-space instructions per call (perf stat) instead of times")
    args = ap.parse_args()
    sizes = [args.n] if args.n else parse_sizes(args.sizes)
    if args.one:
        run_one(sizes[0], args.one, args.calls)
        return
    if args.compare and args.instructions:
        n = sizes[0]
        print(f"# user-space instructions per call (perf stat; {args.calls} calls less none), CPU, n = {n} "
              f"float32, a*2+b: before = {args.compare[0]}, after = {args.compare[1]}")
        print(f"{'path':40} {'before':>10} {'after':>10} {'ratio':>7}")
        table = {}
        sys.path.insert(0, os.path.abspath(args.compare[1]))  # for the list of paths
        for name in make_paths(n, args.peers):
            b, a = (instructions(folder, n, name, args.calls) for folder in args.compare)
            table[name] = {"before_instructions": b, "after_instructions": a}
            print(f"{name:40} {b:10.0f} {a:10.0f} {a / b:7.2f}", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(table, f, indent=1)
        return
    if args.child:
        print(json.dumps(run_sizes(sizes, args.calls, args.rounds, args.peers)))
        return
    cpp = [cpp_costs(args.bench_hit, sizes)] if args.bench_hit else []
    if not args.compare:
        res = run_sizes(sizes, args.calls, args.rounds, args.peers)
        if args.bench_hit:
            cpp.append(cpp_costs(args.bench_hit, sizes))
        table = {}
        for n in sizes:
            rows = res[str(n)]
            print(f"# host cost per call, CPU, n = {n} float32, a*2+b (us; median of {args.rounds} rounds; "
                  f"min: the least thread CPU time of any round)")
            print(f"{'path':44} {'wall':>8} {'thread CPU':>11} {'min CPU':>8}")
            for name, (w, c, m) in rows.items():
                print(f"{name:44} {w:8.2f} {c:11.2f} {m:8.2f}")
            for name in ("C++ run new", "C++ run_into out="):
                got = [c[str(n)][name] for c in cpp if str(n) in c and name in c[str(n)]]
                if got:
                    print(f"{name + ' (bench_hit, CPU time)':44} {min(got):8.2f}")
                    rows[name] = (min(got), min(got), min(got))
            table[str(n)] = rows
        if args.json:
            with open(args.json, "w") as f:
                json.dump(table, f, indent=1)
        return
    sides = {"before": [], "after": []}
    for _ in range(args.alternate):
        for side, folder in zip(("before", "after"), args.compare):
            env = dict(os.environ, PYTHONPATH=os.path.abspath(folder))
            cmd = [sys.executable, __file__, "--child", "--sizes", ",".join(map(str, sizes)), "--calls",
                   str(args.calls), "--rounds", str(args.rounds)] + (["--peers"] if args.peers else [])
            r = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
            sides[side].append(json.loads(r.stdout))
    if args.bench_hit:
        cpp.append(cpp_costs(args.bench_hit, sizes))
    print(f"# host cost per call, CPU, a*2+b float32 (us): before = {args.compare[0]}, "
          f"after = {args.compare[1]}, {args.alternate} alternating processes of {args.rounds} rounds of "
          f"{args.calls} calls each; wall and CPU: medians; min: the least thread CPU time of any round (the "
          f"figure other jobs move least); load average {os.getloadavg()[0]:.1f}")
    table = {}
    for n in sizes:
        key = str(n)
        print(f"\n## n = {n}")
        print(f"{'path':44} {'before wall':>12} {'after wall':>11} {'before CPU':>11} {'after CPU':>10} "
              f"{'CPU ratio':>10} {'before min':>11} {'after min':>10} {'min ratio':>10}")
        rows = {}
        for name in sides["before"][0][key]:
            if name not in sides["after"][0][key]:
                continue
            bw = statistics.median(r[key][name][0] for r in sides["before"])
            aw = statistics.median(r[key][name][0] for r in sides["after"])
            bc = statistics.median(r[key][name][1] for r in sides["before"])
            ac = statistics.median(r[key][name][1] for r in sides["after"])
            bm = min(r[key][name][2] for r in sides["before"])
            am = min(r[key][name][2] for r in sides["after"])
            rows[name] = {"before_wall_us": bw, "after_wall_us": aw, "before_cpu_us": bc, "after_cpu_us": ac,
                          "before_min_cpu_us": bm, "after_min_cpu_us": am}
            print(f"{name:44} {bw:12.2f} {aw:11.2f} {bc:11.2f} {ac:10.2f} {ac / bc:10.2f} {bm:11.2f} {am:10.2f} "
                  f"{am / bm:10.2f}")
        for name in ("C++ run new", "C++ run_into out="):
            got = [c[key][name] for c in cpp if key in c and name in c[key]]
            if got:
                rows[name] = {"cpu_us_runs": got}
                print(f"{name + ' (bench_hit CPU time, runs)':44} " + " ".join(f"{g:.2f}" for g in got))
        if args.peers:
            # Ratios in one run: the least CPU time of each side, against numexpr's and C++'s.
            def least(name, side):
                v = rows.get(name, {})
                return v.get(f"{side}_min_cpu_us")
            ne_new = min(filter(None, (least("peer: numexpr.evaluate frame new", s) for s in ("before", "after"))))
            ne_out = min(filter(None, (least("peer: numexpr.evaluate frame out=", s) for s in ("before", "after"))))
            cpp_new = min(rows.get("C++ run new", {}).get("cpu_us_runs", [float("nan")]))
            cpp_out = min(rows.get("C++ run_into out=", {}).get("cpu_us_runs", [float("nan")]))
            print(f"{'ratios (least CPU time)':44} {'before/numexpr':>15} {'after/numexpr':>14} "
                  f"{'before/C++':>11} {'after/C++':>10}")
            ratios = {}
            for name, ne_ref, cpp_ref in (("jx.evaluate kw new", ne_new, cpp_new), ("jx.evaluate kw out=", ne_out, cpp_out),
                                          ("jx.evaluate frame new", ne_new, cpp_new),
                                          ("jx.numexpr.evaluate frame new", ne_new, cpp_new),
                                          ("jx.numexpr.evaluate frame out=", ne_out, cpp_out),
                                          ("Kernel(signature) kw out=", ne_out, cpp_out),
                                          ("Kernel kw new", ne_new, cpp_new)):
                b, a = least(name, "before"), least(name, "after")
                if b is None or a is None:
                    continue
                ratios[name] = {"before_vs_numexpr": b / ne_ref, "after_vs_numexpr": a / ne_ref,
                                "before_vs_cpp": b / cpp_ref, "after_vs_cpp": a / cpp_ref}
                print(f"{name:44} {b / ne_ref:15.2f} {a / ne_ref:14.2f} {b / cpp_ref:11.2f} {a / cpp_ref:10.2f}")
            rows["ratios"] = ratios
        table[key] = rows
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_average": os.getloadavg()[0],
                       "sizes": table}, f, indent=1)


if __name__ == "__main__":
    main()
