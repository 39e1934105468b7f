"""The differential fuzzer against NumPy 2 (fuzz/differential/, docs/fuzzing.md) through the
installed package: a fixed seed and 3,000 cases, seconds. Any finding fails with its shrunk
program and inputs in the output."""
import os
import subprocess
import sys

from support import need

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def test_three_thousand_random_programs_agree_with_numpy():
    need("ml_dtypes")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "fuzz", "differential", "fuzz_numpy.py"),
                        "--driver", "python", "--seed", "16", "--cases", "3000"],
                       capture_output=True, text=True, timeout=600, env=dict(os.environ, JITEXPR_DISK_CACHE="0"))
    assert p.returncode == 0, p.stdout[-6000:] + p.stderr[-3000:]
