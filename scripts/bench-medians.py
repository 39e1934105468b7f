#!/usr/bin/env python3
"""Medians of repeated benchmark runs of two builds, side by side.

    bench-medians.py BEFORE_DIR AFTER_DIR

Each folder holds the runs of one build: Google Benchmark JSON files (NAME.R.json, R the round)
and bench_stream's JSON (bench_stream.R.json). For every benchmark in both it prints the median
over the rounds of its real time (and of its bytes or items per second where it has them), and
after/before of the time. Rounds alternate between the builds, so each ratio compares figures
taken in the same minutes."""
import json
import pathlib
import statistics
import sys


def collect(folder):
    series = {}
    for f in sorted(pathlib.Path(folder).glob("*.json")):
        stem = f.name.split(".")[0]
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if "benchmarks" in data:
            for b in data["benchmarks"]:
                if b.get("run_type", "iteration") != "iteration":
                    continue
                series.setdefault((stem, b["name"], b.get("time_unit", "ns")), []).append(b["real_time"])
        else:
            for k, v in data.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool) and k.endswith("_gbs"):
                    series.setdefault((stem, k, "GB/s"), []).append(float(v))
    return series


def main():
    before, after = collect(sys.argv[1]), collect(sys.argv[2])
    print(f"{'benchmark':70} {'unit':>5} {'before':>11} {'after':>11} {'after/before':>12}  n")
    for key in sorted(set(before) & set(after)):
        b, a = statistics.median(before[key]), statistics.median(after[key])
        ratio = a / b if b else float("nan")
        print(f"{key[0] + ': ' + key[1]:70} {key[2]:>5} {b:11.3f} {a:11.3f} {ratio:12.3f}  {len(before[key])}/{len(after[key])}")
    for key in sorted(set(before) ^ set(after)):
        print(f"{key[0] + ': ' + key[1]:70} only in {'before' if key in before else 'after'}")


if __name__ == "__main__":
    main()
