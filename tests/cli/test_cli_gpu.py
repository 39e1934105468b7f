#!/usr/bin/env python3
"""The jitexpr CLI on a GPU (issue 33 item 5): a statement over --loaded host arrays under
--backend cuda goes through the runtime's streamed pipeline, --device-memory bounds what it
uses on the device, host data below 1 MiB is copied whole, and `jitexpr explain` shows the
choice before anything runs. Skips (exit 77) where CUDA cannot start.

usage: test_cli_gpu.py PATH/TO/jitexpr [unittest options]
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy as np
except ImportError:  # the CLI tests' rule: NumPy missing is a skip
    sys.exit(77)

JITEXPR = None


def cli(args, timeout=300):
    env = dict(os.environ)
    env.update({"JITEXPR_DISK_CACHE": "0"})
    env.pop("JITEXPR_BACKEND", None)
    env.pop("JITEXPR_DEVICE_MEMORY", None)
    return subprocess.run([JITEXPR] + args, capture_output=True, text=True, env=env, timeout=timeout)


class CliOnTheGpu(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="jitexpr_cli_gpu_")
        # 4 Mi float32 elements: 16 MiB an array, 48 MiB for a, b and the result.
        rng = np.random.default_rng(5)
        cls.a = rng.standard_normal(1 << 22).astype(np.float32)
        cls.b = rng.standard_normal(1 << 22).astype(np.float32)
        cls.a_path = os.path.join(cls.dir, "a.npy")
        cls.b_path = os.path.join(cls.dir, "b.npy")
        np.save(cls.a_path, cls.a)
        np.save(cls.b_path, cls.b)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def placement(self, stderr):
        m = re.search(r"line 1: .*; (cuda, [^\n]*|cpu: [^\n]*)", stderr)
        self.assertIsNotNone(m, stderr)
        return m.group(1)

    def test_loaded_arrays_larger_than_the_device_limit_stream_in_chunks(self):
        out = os.path.join(self.dir, "c.npy")
        r = cli(["--backend", "cuda", "--device-memory", "8MiB", "--time", "--load", f"a={self.a_path}", "--load",
                 f"b={self.b_path}", "-e", "c = a * 2 + b", "--save", f"c={out}"])
        self.assertEqual(r.returncode, 0, r.stderr)
        where = self.placement(r.stderr)
        m = re.match(r"cuda, streamed: (\d+) chunks? of .*, ([0-9.]+) MiB of device memory \(limit 8\.0 MiB\)", where)
        self.assertIsNotNone(m, where)
        self.assertGreater(int(m.group(1)), 1, where)
        self.assertLessEqual(float(m.group(2)), 8.0, where)
        np.testing.assert_array_equal(np.load(out), self.a * np.float32(2) + self.b)

    def test_the_device_limit_changes_the_chunks(self):
        chunks = []
        for limit in ("8MiB", "16MiB"):
            r = cli(["--backend", "cuda", "--device-memory", limit, "--time", "--load", f"a={self.a_path}", "-e",
                     "c = a * 2"])
            self.assertEqual(r.returncode, 0, r.stderr)
            m = re.match(r"cuda, streamed: (\d+) chunks?", self.placement(r.stderr))
            self.assertIsNotNone(m, r.stderr)
            chunks.append(int(m.group(1)))
        self.assertGreater(chunks[0], chunks[1])

    def test_host_data_below_a_mebibyte_is_copied_whole(self):
        r = cli(["--backend", "cuda", "--time", "-e", "c = arange(1000.0) * 2", "-e", "c[999]"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("cuda, copied whole: host data of 16000 bytes (below 1.0 MiB, not worth a pipeline)",
                      r.stderr)
        self.assertIn("1998", r.stdout)

    def test_explain_shows_the_streamed_choice_before_anything_runs(self):
        r = cli(["explain", "--backend", "cuda", "--device-memory", "8MiB", "--load", f"a={self.a_path}", "--load",
                 f"b={self.b_path}", "c = a * 2 + b"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"cuda, streamed: \d+ chunks of ")


if __name__ == "__main__":
    JITEXPR = sys.argv.pop(1)
    probe = subprocess.run([JITEXPR, "--backend", "cuda", "-e", "1 + 1"], capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"skipped: CUDA does not start here ({probe.stderr.strip()})")
        sys.exit(77)
    unittest.main()
