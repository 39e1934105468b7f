#!/usr/bin/env python3
"""Dates and durations at numeric speed: each date expression against the same int64 work (the
counts the dates are, with the literal's count written as an integer), in jitexpr's CPU backend
and in NumPy, on the same arrays in one run. Not a timed test: a measurement to read and keep
(bench/results/).

    python3 bench/dates_compare.py [--n N] [--threads T] [--repeat R]

A jitexpr date expression is lowered to int64 work when it is checked (docs/language.md, "Dates
and durations"): a comparison with a date literal is one integer compare, so "date / int64"
near 1.0 is the claim. The int64 twin of an expression with NaT rules (d1 - d0) does less (no
NaT test); the ratio shows what NumPy's NaT semantics cost.
"""
import argparse
import os
import time

import numpy as np

import jitexpr as jx

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=1 << 24)
ap.add_argument("--threads", type=int, default=os.cpu_count())
ap.add_argument("--repeat", type=int, default=30)
args = ap.parse_args()
jx.set_num_threads(args.threads)

rng = np.random.default_rng(7)
N = args.n
NS = 10**9
start = np.datetime64("2020-01-01", "ns").astype(np.int64)
ts_i = start + rng.integers(0, 6 * 365 * 86400, N, dtype=np.int64) * NS
ts_i[rng.integers(0, N, N // 100)] = np.iinfo(np.int64).min  # 1% NaT
t0_i = ts_i.copy()
t1_i = np.where(ts_i == np.iinfo(np.int64).min, ts_i, ts_i + rng.integers(0, 600, N, dtype=np.int64) * NS)
ts, t0, t1 = ts_i.view("M8[ns]"), t0_i.view("M8[ns]"), t1_i.view("M8[ns]")
cut = np.datetime64("2024-03-01", "ns")
cut_i = int(cut.astype(np.int64))
five_min = 300 * NS

# name, jitexpr text, NumPy of the dates, its int64 twin (jitexpr text, NumPy)
CASES = [
    ("compare with a literal", "ts > datetime64('2024-03-01')", lambda: ts > cut,
     f"i > {cut_i}", lambda: ts_i > cut_i),
    ("difference < duration", "(t1 - t0) < timedelta64(5, 'm')", lambda: (t1 - t0) < np.timedelta64(5, "m"),
     f"(b - a) < {five_min}", lambda: (t1_i - t0_i) < five_min),
    ("date + duration", "ts + timedelta64(1, 'h')", lambda: ts + np.timedelta64(1, "h"),
     f"i + {3600 * NS}", lambda: ts_i + 3600 * NS),
    ("date - date", "t1 - t0", lambda: t1 - t0, "b - a", lambda: t1_i - t0_i),
    ("floor to the day", "datetime64(ts, 'D')", lambda: ts.astype("M8[D]"),
     f"i // {86400 * NS}", lambda: ts_i // (86400 * NS)),
    ("max of dates", "max(ts)", lambda: np.max(ts), "max(i)", lambda: np.max(ts_i)),
]


def best(*fns):
    """The best time of each function in ms, the functions run in turn each round, so that a
    machine's load (this one is shared) falls on all of them alike."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(args.repeat):
        for k, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t)
    return [min(t) * 1e3 for t in times]


def check_same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert np.array_equal(got.view("i8") if got.dtype.kind in "Mm" else got,
                          want.view("i8") if want.dtype.kind in "Mm" else want)


env_dates = {"ts": ts, "t0": t0, "t1": t1}
env_ints = {"i": ts_i, "a": t0_i, "b": t1_i}
print(f"n = {N} (datetime64[ns], 1% NaT), jitexpr CPU backend with {jx.get_num_threads()} threads, NumPy "
      f"{np.__version__} (one thread); best of {args.repeat} rounds (the four run in turn each round), ms")
print(f"{'':26s} {'jitexpr':>9s} {'jx int64':>9s} {'date/int':>8s} {'numpy':>9s} {'np int64':>9s} "
      f"{'numpy/jx':>8s}")
for name, text, np_fn, itext, np_ifn in CASES:
    k, ki = jx.compile(text), jx.compile(itext)
    check_same(k(**{n: env_dates[n] for n in k.parameters}), np_fn())
    jx_ms, jxi_ms, np_ms, npi_ms = best(lambda: k(**{n: env_dates[n] for n in k.parameters}),
                                        lambda: ki(**{n: env_ints[n] for n in ki.parameters}), np_fn, np_ifn)
    print(f"{name:26s} {jx_ms:9.2f} {jxi_ms:9.2f} {jx_ms / jxi_ms:8.2f} {np_ms:9.2f} {npi_ms:9.2f} "
          f"{np_ms / jx_ms:8.2f}")
