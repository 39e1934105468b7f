#!/usr/bin/env python3
"""When the jitexpr CLI starts the CUDA driver (issue 33 item 4): under backend=auto, only for a
statement placed on the GPU; never for a program whose work stays on the CPU. The driver is
tests/cuda's stand-in libcuda.so.1 (first on LD_LIBRARY_PATH, so it is the one loaded even where
NVIDIA's is installed), which logs each call to $JITEXPR_FAKE_CUDA_LOG ("loaded", "cuInit",
"cuDevicePrimaryCtxRetain", ...) and refuses all work on the device.

usage: test_lazy_cuda.py PATH/TO/jitexpr PATH/TO/fake_driver [unittest options]
"""
import os
import pty
import select
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

JITEXPR = None
FAKE_DIR = None

SMALL = ["-e", "c = arange(4.0) * 2", "-e", "c"]
SMALL_OUT = "array([0., 2., 4., 6.], dtype=float64)  # shape (4,)\n"
WHY_CPU = "cpu: host data of 64 bytes (below 64.0 MiB, the GPU is not worth its copies)"


class LazyCuda(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="jitexpr_lazy_cuda_")
        self.log = os.path.join(self.dir, "driver.log")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def run_cli(self, args, backend="auto"):
        env = dict(os.environ)
        env.update({"LD_LIBRARY_PATH": FAKE_DIR, "JITEXPR_FAKE_CUDA_LOG": self.log, "JITEXPR_BACKEND": backend,
                    "JITEXPR_DISK_CACHE": "0"})
        return subprocess.run([JITEXPR] + args, capture_output=True, text=True, env=env, timeout=120)

    def run_repl(self, lines, backend="auto"):
        """An interactive session on a pseudo-terminal: each line sent at the prompt, then Ctrl-D.
        Returns everything the session wrote."""
        env = dict(os.environ)
        env.update({"LD_LIBRARY_PATH": FAKE_DIR, "JITEXPR_FAKE_CUDA_LOG": self.log, "JITEXPR_BACKEND": backend,
                    "JITEXPR_DISK_CACHE": "0", "XDG_STATE_HOME": self.dir, "TERM": "dumb",
                    "INPUTRC": os.devnull})
        master, slave = pty.openpty()
        p = subprocess.Popen([JITEXPR], stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
        os.close(slave)
        out = b""

        def read_until(prompts):
            nonlocal out
            deadline = time.monotonic() + 60
            while out.count(b">>> ") < prompts:
                self.assertLess(time.monotonic(), deadline, out)
                if select.select([master], [], [], 1)[0]:
                    try:
                        out += os.read(master, 4096)
                    except OSError:  # the session ended
                        return

        try:
            for i, line in enumerate(lines):
                read_until(i + 1)
                os.write(master, line.encode() + b"\r")
            read_until(len(lines) + 1)
            os.write(master, b"\x04")
            p.wait(timeout=60)
            while select.select([master], [], [], 0.2)[0]:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            os.close(master)
        self.assertEqual(p.returncode, 0, out)
        return out.decode(errors="replace").replace("\r\n", "\n")

    def driver_log(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return f.read().splitlines()

    def test_a_one_line_program_on_host_data_loads_no_driver(self):
        r = self.run_cli(SMALL)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, SMALL_OUT)
        self.assertEqual(self.driver_log(), [])

    def test_a_program_of_scalars_alone_loads_no_driver(self):
        r = self.run_cli(["-e", "1 + 2"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "array(3, dtype=int64)  # shape ()\n")
        self.assertEqual(self.driver_log(), [])

    def test_verbose_says_where_each_statement_ran_and_why_without_the_driver(self):
        r = self.run_cli(["-v"] + SMALL)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("jitexpr: line 1: " + WHY_CPU + "\n", r.stderr)
        self.assertEqual(self.driver_log(), [])

    def test_time_says_the_placement_without_the_driver(self):
        r = self.run_cli(["--time"] + SMALL)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("; " + WHY_CPU + "\n", r.stderr)
        self.assertEqual(self.driver_log(), [])

    def test_a_repl_session_of_cpu_statements_loads_no_driver(self):
        out = self.run_repl(["a = arange(4.0)", "a * 2", ":time a + 1", ":threads", ":cache", ":backend",
                             ":vars"])
        self.assertIn("on auto. Type :help", out)
        self.assertIn("CUDA starts with the first statement placed on the GPU", out)
        self.assertIn("array([0., 2., 4., 6.], dtype=float64)", out)
        self.assertIn("auto, not started (CUDA starts with the first statement placed on the GPU)", out)
        self.assertEqual(self.driver_log(), [])

    def test_repl_info_looks_for_the_driver_but_starts_no_backend(self):
        # :info asks the driver what it has (jit::cuda_info); the session's backend stays as it was.
        out = self.run_repl([":info", ":backend"])
        self.assertIn("backend: auto, not started", out)
        self.assertIn("device 0: jitexpr test driver device", out)
        self.assertIn("\nauto, not started (", out)
        self.assertEqual(self.driver_log().count("cuInit"), 1)

    def test_host_data_the_gpu_may_be_worth_starts_the_driver_once(self):
        # 80 MB in, 80 MB out: weighed for the GPU, so CUDA starts (the stand-in then refuses the
        # device's memory figure: an error after the start, not before).
        r = self.run_cli(["-e", "a = zeros(10000000)", "-e", "b = a * 2", "-e", "c = a * 3"])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("CUDA_ERROR_NOT_SUPPORTED", r.stderr)
        log = self.driver_log()
        self.assertEqual(log.count("loaded"), 1, log)
        self.assertEqual(log.count("cuInit"), 1, log)
        self.assertEqual(log.count("cuDevicePrimaryCtxRetain"), 1, log)

    def test_backend_cuda_starts_the_driver_once(self):
        r = self.run_cli(SMALL, backend="cuda")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("CUDA_ERROR_NOT_SUPPORTED", r.stderr)
        log = self.driver_log()
        self.assertEqual(log[0], "loaded", log)
        self.assertEqual(log.count("cuInit"), 1, log)
        self.assertEqual(log.count("cuDevicePrimaryCtxRetain"), 1, log)

    def test_explain_starts_the_driver_and_says_why_the_cpu_was_chosen(self):
        r = self.run_cli(["explain", "-e", "a = arange(4.0)", "a * 2"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("backend: cuda:0 (jitexpr test driver device, sm_90)", r.stdout)
        self.assertIn("placement: cpu: host data of 64 bytes (below 64.0 MiB, the GPU is not worth its copies)\n",
                      r.stdout)
        self.assertEqual(self.driver_log().count("cuInit"), 1)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    JITEXPR = os.path.abspath(sys.argv.pop(1))
    FAKE_DIR = os.path.abspath(sys.argv.pop(1))
    unittest.main()
