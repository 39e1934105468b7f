#!/usr/bin/env python3
"""numexpr and NumPy on the work of bench_cpu (2^24 elements), same thread count; prints GB/s
(input bytes read + output bytes written per second), and a copy baseline.

    python3 bench/cpu_peers.py [--threads N]      (default: every core; match JITEXPR_THREADS)
"""
import argparse
import os
import time

import numpy as np

N = 1 << 24


def best(fn, repeat=10):
    fn()
    t = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return min(t)


def inputs(dtype, base):
    return (base + 1e-7 * (np.arange(N) % 1000003)).astype(dtype)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    import numexpr as ne
    ne.set_num_threads(args.threads)

    cases = [
        ("a*2+b", "a*2+b", lambda a, b: a * 2 + b, 2),
        ("poly", "((.25*a + .75)*a - 1.5)*a - 2", lambda a, b: ((.25 * a + .75) * a - 1.5) * a - 2, 1),
        ("where", "where(a > 0.5, sin(a)*b + exp(-b), a*a - b)",
         lambda a, b: np.where(a > 0.5, np.sin(a) * b + np.exp(-b), a * a - b), 2),
    ]
    print(f"threads={args.threads} n=2^24")
    for dt in ("float32", "float64"):
        a = inputs(dt, 0.5 if dt else 0)
        b = inputs(dt, 1.5)
        for name, text, np_fn, nin in cases:
            if name == "where":
                a, b = inputs(dt, 0.0), inputs(dt, 0.3)
            elif name == "poly":
                a = inputs(dt, 0.1)
            out = np.empty(N, dt)
            nbytes = (nin + 1) * N * np.dtype(dt).itemsize
            loc = {"a": a, "b": b}
            t_ne = best(lambda: ne.evaluate(text, local_dict=loc, out=out))
            t_np = best(lambda: np_fn(a, b), repeat=3)
            print(f"{name:6s} {dt:8s} numexpr {nbytes / t_ne / 1e9:6.2f} GB/s   numpy {nbytes / t_np / 1e9:6.2f} GB/s")
    src = np.ones(N, np.float32)
    dst = np.empty_like(src)
    t = best(lambda: np.copyto(dst, src))
    print(f"copy   float32  {2 * N * 4 / t / 1e9:6.2f} GB/s")
    shared(ne)


def shared(ne):
    """bench_cpu's BM_SharedSubexpression: x = a*b; y = x + c; z = x * d; s = sum(y) into existing
    x, y, z (bytes: a, b, c, d read, x, y, z written). numexpr evaluates one expression a call,
    so x is stored and read back, as NumPy does."""
    a, b, c, d = (inputs("float64", base) for base in (0.5, 1.5, 0.25, 2.0))
    x, y, z = (np.empty(N) for _ in range(3))
    loc = {"a": a, "b": b, "c": c, "d": d, "x": x, "y": y}

    def by_numexpr():
        ne.evaluate("a*b", local_dict=loc, out=x)
        ne.evaluate("x + c", local_dict=loc, out=y)
        ne.evaluate("x * d", local_dict=loc, out=z)
        return ne.evaluate("sum(y)", local_dict=loc)

    def by_numpy():
        np.multiply(a, b, out=x)
        np.add(x, c, out=y)
        np.multiply(x, d, out=z)
        return y.sum()

    nbytes = 7 * N * 8
    t_ne, t_np = best(by_numexpr), best(by_numpy, repeat=3)
    print(f"shared float64  numexpr {nbytes / t_ne / 1e9:6.2f} GB/s   numpy {nbytes / t_np / 1e9:6.2f} GB/s")


if __name__ == "__main__":
    main()
