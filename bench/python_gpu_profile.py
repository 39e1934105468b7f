#!/usr/bin/env python3
"""Where a jitexpr call from Python spends its host time on the GPU (issue 31, item 5).

Two modes:

    python bench/python_gpu_profile.py parts [--json out.json]
        the host cost per call (n = 1024 float32, the median of interleaved rounds, as
        bench/python_gpu.py times it) of the whole call and of each step it takes on the way, each
        step timed on its own from Python: reading the CUDA array interface, asking CuPy or torch
        for the current stream, the device attribute, the call with a jitexpr Tensor result (no
        conversion), the conversion of a Tensor into CuPy / torch, the same call on NumPy arrays
        on the CPU; CuPy's ElementwiseKernel beside them.

    python bench/python_gpu_profile.py loop CASE SECONDS
        calls CASE (cupy-new, cupy-out, torch-new, torch-out, kernel-cupy-new) in a loop for
        SECONDS, for a profiler (perf, where the machine has it).
"""
import argparse
import json
import statistics
import sys
import time

import jitexpr as jx
from jitexpr import _jitexpr as _core


def timed(cands, calls=2000, rounds=9, sync=None):
    for fn in cands.values():
        for _ in range(200):
            fn()
    if sync:
        sync()
    per = {k: [] for k in cands}
    for _ in range(rounds):
        for k, fn in cands.items():
            if sync:
                sync()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            per[k].append((time.perf_counter() - t0) / calls)
            if sync:
                sync()
    return {k: round(statistics.median(v) * 1e6, 3) for k, v in per.items()}


def setup():
    import cupy
    n = 1024
    a = cupy.arange(n, dtype=cupy.float32)
    b = cupy.ones(n, dtype=cupy.float32)
    out = cupy.empty_like(a)
    try:
        import torch
        t = (torch.arange(n, device="cuda", dtype=torch.float32), torch.ones(n, device="cuda", dtype=torch.float32))
        t = t + (torch.empty_like(t[0]),)
    except Exception:  # noqa: BLE001 - torch is optional here
        torch, t = None, None
    return cupy, torch, a, b, out, t


def parts(args):
    import numpy as np
    cupy, torch, a, b, out, t = setup()
    ek = cupy.ElementwiseKernel("float32 a, float32 b", "float32 c", "c = a * 2 + b", "axpb")
    k = jx.compile("a*2+b")
    tensor = _core.evaluate("a*2+b", {"a": a, "b": b}, as_tensor=True)
    na, nb = np.arange(1024, dtype=np.float32), np.ones(1024, dtype=np.float32)
    nout = np.empty_like(na)
    cands = {
        "jx.evaluate cupy new": lambda: jx.evaluate("a*2+b", a=a, b=b),
        "jx.evaluate cupy out=": lambda: jx.evaluate("a*2+b", a=a, b=b, out=out),
        "kernel cupy new": lambda: k(a=a, b=b),
        "_core.evaluate(dict) cupy -> Tensor": lambda: _core.evaluate("a*2+b", {"a": a, "b": b}, as_tensor=True),
        "_core.evaluate(dict) cupy out=": lambda: _core.evaluate("a*2+b", {"a": a, "b": b}, out),
        "cupy.from_dlpack(Tensor)": lambda: cupy.from_dlpack(tensor),
        "Tensor.__dlpack__(stream=1)": lambda: tensor.__dlpack__(stream=1),
        "a.__cuda_array_interface__": lambda: a.__cuda_array_interface__,
        "cupy.cuda.get_current_stream().ptr": lambda: cupy.cuda.get_current_stream().ptr,
        "a.device.id": lambda: a.device.id,
        "type(a).__module__": lambda: type(a).__module__,
        "hasattr(a, '__arrow_c_array__')": lambda: hasattr(a, "__arrow_c_array__"),
        "jx.evaluate numpy new (cpu)": lambda: jx.evaluate("a*2+b", a=na, b=nb),
        "jx.evaluate numpy out= (cpu)": lambda: jx.evaluate("a*2+b", a=na, b=nb, out=nout),
        "cupy ElementwiseKernel new": lambda: ek(a, b),
        "cupy ElementwiseKernel out=": lambda: ek(a, b, out),
        "cupy.empty(1024, float32)": lambda: cupy.empty(1024, cupy.float32),
    }
    if torch is not None:
        ta, tb, tout = t
        cands.update({
            "jx.evaluate torch new": lambda: jx.evaluate("a*2+b", a=ta, b=tb),
            "jx.evaluate torch out=": lambda: jx.evaluate("a*2+b", a=ta, b=tb, out=tout),
            "torch from Tensor (_to_library)": lambda: jx._api._to_library(_core.evaluate(
                "a*2+b", {"a": ta, "b": tb}, as_tensor=True)),
            "_core.evaluate(dict) torch -> Tensor": lambda: _core.evaluate("a*2+b", {"a": ta, "b": tb}, as_tensor=True),
            "torch.empty(1024, cuda)": lambda: torch.empty(1024, device="cuda"),
        })
    got = timed(cands, args.calls, args.rounds, cupy.cuda.get_current_stream().synchronize)
    width = max(map(len, got))
    for name, us in got.items():
        print(f"{name:<{width}}  {us:8.3f} us")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d %H:%M"), "host_us": got}, f, indent=1)


def loop(args):
    cupy, torch, a, b, out, t = setup()
    k = jx.compile("a*2+b")
    cases = {
        "cupy-new": lambda: jx.evaluate("a*2+b", a=a, b=b),
        "cupy-out": lambda: jx.evaluate("a*2+b", a=a, b=b, out=out),
        "kernel-cupy-new": lambda: k(a=a, b=b),
    }
    if torch is not None:
        ta, tb, tout = t
        cases["torch-new"] = lambda: jx.evaluate("a*2+b", a=ta, b=tb)
        cases["torch-out"] = lambda: jx.evaluate("a*2+b", a=ta, b=tb, out=tout)
    fn = cases[args.case]
    sync = cupy.cuda.get_current_stream().synchronize
    end = time.perf_counter() + args.seconds
    calls = 0
    while time.perf_counter() < end:
        for _ in range(1000):
            fn()
        sync()
        calls += 1000
    print(f"{args.case}: {calls} calls, {args.seconds * 1e6 / calls:.2f} us a call (under the profiler)",
          file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("parts")
    p.add_argument("--json")
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=7)
    q = sub.add_parser("loop")
    q.add_argument("case")
    q.add_argument("seconds", type=float)
    args = ap.parse_args()
    if not jx.cuda_available():
        raise SystemExit("no CUDA device: " + jx.info()["cuda"]["reason"])
    (parts if args.mode == "parts" else loop)(args)


if __name__ == "__main__":
    main()
