#!/usr/bin/env python3
"""String predicates on the CPU against their peers, in one run (issue 32's Speed section).

    python bench/strings_cpu.py [--rows 10000000] [--rounds 7] [--threads N] [--json out.json]

One column of --rows strings (ASCII words of 4 to 24 bytes, about 14 on average, 1 row in 50
holding the needle 'needle', 1 in 100 equal to 'oslo'), held as an Arrow string column
(pyarrow), as a Polars Series of the same strings, as a DuckDB table of it, and as a NumPy S24
array. Each predicate is timed producing its boolean column and its count of true rows:

  contains:  jitexpr contains(s, 'needle') on the Arrow column (and on the S array),
             Polars s.str.contains('needle', literal=True), DuckDB s LIKE '%needle%',
             numexpr contains(a, b'needle') on the S array
  equality:  jitexpr s == 'oslo', Polars s == 'oslo', DuckDB s = 'oslo', numexpr a == b'oslo'

jitexpr is called as a user calls it, jitexpr.evaluate(text, s=<pyarrow array>): each call
imports the column through the Arrow C data interface (its offsets and UTF-8 checked) and
returns a pyarrow BooleanArray (its count: a 0-d sum). Polars and DuckDB compute on their own
columns (made once, outside the timing): their mask is a Polars boolean Series and an Arrow
boolean array fetched from DuckDB; their counts .sum() and SELECT count(*) ... WHERE. numexpr
runs on the S array with its own threads. Every engine's answer is checked against Python's.
Each figure is the median wall time of --rounds calls after one warm-up, the engines taking
turns within each round (a shared machine slows them alike); the ratios are jitexpr's time
over each peer's (below 1: jitexpr faster). Threads: every engine's default
(all cores) unless --threads.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np


def make_words(rows, seed=7):
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789 _-", dtype=np.uint8)
    lengths = rng.integers(4, 25, rows)
    total = int(lengths.sum())
    pool = alphabet[rng.integers(0, alphabet.size, total)].tobytes()
    offsets = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    words = [pool[offsets[i]:offsets[i + 1]] for i in range(rows)]
    for i in rng.choice(rows, rows // 50, replace=False):  # the needle, somewhere in the word
        w = words[i][:18]  # room for the needle within 24 bytes
        at = int(rng.integers(0, len(w) + 1))
        words[i] = w[:at] + b"needle" + w[at:]
    for i in rng.choice(rows, rows // 100, replace=False):
        words[i] = b"oslo"
    return [w.decode("ascii") for w in words]


def timed_together(fns, rounds):
    """The median wall time (ms) of each of `fns` ({name: fn}), the engines taking turns within
    each round, so that a machine shared with other work slows them alike."""
    for fn in fns.values():
        fn()  # warm-up: compiles, caches, allocations
    ts = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            ts[name].append(time.perf_counter() - t0)
    return {name: statistics.median(v) * 1e3 for name, v in ts.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=0, help="threads for every engine (0: each one's default)")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    if args.threads:
        for v in ("POLARS_MAX_THREADS", "NUMEXPR_NUM_THREADS", "NUMEXPR_MAX_THREADS", "JITEXPR_CPU_THREADS"):
            os.environ[v] = str(args.threads)

    import duckdb
    import numexpr as ne
    import polars as pl
    import pyarrow as pa

    import jitexpr as jx

    words = make_words(args.rows)
    arrow = pa.array(words, type=pa.string())
    series = pl.Series("s", words)
    s_array = np.array([w.encode() for w in words], dtype="S24")
    con = duckdb.connect()
    if args.threads:
        con.execute(f"SET threads = {args.threads}")
    table = pa.table({"s": arrow})
    con.register("t", table)
    con.execute("CREATE TABLE d AS SELECT * FROM t")  # DuckDB's own storage, as its users query it
    want_contains = np.array(["needle" in w for w in words])
    want_equal = np.array([w == "oslo" for w in words])
    bytes_in = arrow.buffers()[2].size + arrow.buffers()[1].size

    def check(name, got, want):
        got = np.asarray(got, dtype=bool) if not np.isscalar(got) else got
        ok = (got == want).all() if not np.isscalar(got) else got == want.sum()
        if not ok:
            sys.exit(f"strings_cpu: {name} gives another answer than Python's")

    runs = {
        "contains": {
            "mask": {
                "jitexpr (Arrow)": lambda: jx.evaluate("contains(s, 'needle')", s=arrow),
                "jitexpr (S24)": lambda: jx.evaluate("contains(s, b'needle')", s=s_array),
                "Polars": lambda: series.str.contains("needle", literal=True),
                "DuckDB": lambda: con.execute("SELECT s LIKE '%needle%' FROM d").to_arrow_table(),
                "numexpr (S24)": lambda: ne.evaluate("contains(a, b'needle')", local_dict={"a": s_array}),
            },
            "count": {
                "jitexpr (Arrow)": lambda: jx.evaluate("sum(contains(s, 'needle'))", s=arrow),
                "jitexpr (S24)": lambda: jx.evaluate("sum(contains(s, b'needle'))", s=s_array),
                "Polars": lambda: series.str.contains("needle", literal=True).sum(),
                "DuckDB": lambda: con.execute("SELECT count(*) FROM d WHERE s LIKE '%needle%'").fetchone()[0],
                "numexpr (S24)": lambda: int(np.count_nonzero(ne.evaluate("contains(a, b'needle')",
                                                                         local_dict={"a": s_array}))),
            },
        },
        "equality": {
            "mask": {
                "jitexpr (Arrow)": lambda: jx.evaluate("s == 'oslo'", s=arrow),
                "jitexpr (S24)": lambda: jx.evaluate("s == b'oslo'", s=s_array),
                "Polars": lambda: series == "oslo",
                "DuckDB": lambda: con.execute("SELECT s = 'oslo' FROM d").to_arrow_table(),
                "numexpr (S24)": lambda: ne.evaluate("a == b'oslo'", local_dict={"a": s_array}),
            },
            "count": {
                "jitexpr (Arrow)": lambda: jx.evaluate("sum(s == 'oslo')", s=arrow),
                "jitexpr (S24)": lambda: jx.evaluate("sum(s == b'oslo')", s=s_array),
                "Polars": lambda: (series == "oslo").sum(),
                "DuckDB": lambda: con.execute("SELECT count(*) FROM d WHERE s = 'oslo'").fetchone()[0],
                "numexpr (S24)": lambda: int(np.count_nonzero(ne.evaluate("a == b'oslo'", local_dict={"a": s_array}))),
            },
        },
    }
    # Every answer checked once, before anything is timed.
    for pred, want in (("contains", want_contains), ("equality", want_equal)):
        for name, fn in runs[pred]["mask"].items():
            r = fn()
            if hasattr(r, "column"):
                r = r.column(0).to_numpy(zero_copy_only=False)
            elif hasattr(r, "to_numpy"):
                r = r.to_numpy(zero_copy_only=False) if "pyarrow" in type(r).__module__ else r.to_numpy()
            check(f"{pred} mask of {name}", r, want)
        for name, fn in runs[pred]["count"].items():
            check(f"{pred} count of {name}", int(fn()), want)

    figures = {}
    lines = [f"strings_cpu: {args.rows:,} rows, {bytes_in / 1e6:.0f} MB of Arrow string column (data + offsets); "
             f"median of {args.rounds}",
             f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
             f"jitexpr {jx.__version__}, Polars {pl.__version__}, DuckDB {duckdb.__version__}, "
             f"numexpr {ne.__version__}, pyarrow {pa.__version__}, NumPy {np.__version__}"]
    for pred in runs:
        for form in ("mask", "count"):
            row = timed_together(runs[pred][form], args.rounds)
            figures[f"{pred} {form}"] = row
            ours = row["jitexpr (Arrow)"]
            lines.append(f"{pred} ({form}):")
            for name, ms in row.items():
                ratio = "" if name == "jitexpr (Arrow)" else f"   jitexpr (Arrow) / this = {ours / ms:.2f}"
                lines.append(f"  {name:18s} {ms:9.2f} ms{ratio}")
    print("\n".join(lines))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": args.rows, "rounds": args.rounds, "ms": figures, "text": lines}, f, indent=1)


if __name__ == "__main__":
    main()
