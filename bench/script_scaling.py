#!/usr/bin/env python3
"""How a CLI script's time grows with its length when every statement leaves a variable alive:
`x0 = arange(3)`, then `xK = xK-1 + 1` for K up to N, on the CPU backend (issue 17 item 9; the
work per statement is counted in tests/cli/test_script_scaling.cpp). Prints the wall time and
the microseconds per statement for each N; a flat last column is linear scaling.

    python3 bench/script_scaling.py BUILD_DIR/tools/jitexpr [--sizes 10000,40000,100000]
"""
import argparse
import os
import subprocess
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("jitexpr")
ap.add_argument("--sizes", default="10000,40000,100000")
args = ap.parse_args()

env = dict(os.environ, JITEXPR_BACKEND="cpu", JITEXPR_DISK_CACHE="0", JITEXPR_THREADS="1")
print(f"{'statements':>10} {'seconds':>9} {'us/statement':>13}")
for n in (int(s) for s in args.sizes.split(",")):
    with tempfile.NamedTemporaryFile("w", suffix=".jx") as f:
        f.write("x0 = arange(3)\n")
        f.writelines(f"x{k} = x{k - 1} + 1\n" for k in range(1, n))
        f.write(f"x{n - 1}\n")
        f.flush()
        t0 = time.perf_counter()
        out = subprocess.run([args.jitexpr, f.name], env=env, capture_output=True, text=True, check=True).stdout
        dt = time.perf_counter() - t0
    assert f"array([{n - 1},{n},{n + 1}]" in out.replace(" ", "").replace("\n", ""), out[-200:]
    print(f"{n:>10} {dt:>9.2f} {dt / n * 1e6:>13.1f}", flush=True)
