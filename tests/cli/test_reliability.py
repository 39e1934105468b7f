#!/usr/bin/env python3
"""The probes of issue 17 against the jitexpr binary: paths the user names (devices, FIFOs,
pipes, links, modes, long names, `ulimit -f`, signals during a save), the disk cache's commands
over symlinked folders, foreign files, FIFOs and folders, the environment's checks, and error
messages a person can act on.

Anything that could replace a device runs inside a private mount namespace whose /dev is a
fresh tmpfs (`unshare -m`, root only; skipped otherwise): never the real /dev.

usage: test_reliability.py PATH/TO/jitexpr [unittest options]
Exits 77 (CTest: skipped) when NumPy is not installed.
"""
import io
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest

try:
    import numpy as np
except ImportError:  # pragma: no cover
    print("test_reliability.py: NumPy is not installed; skipping")
    sys.exit(77)

JITEXPR = None
TEMP_PREFIX = ".jitexpr-"


def environment(env=None):
    e = dict(os.environ)
    e["JITEXPR_BACKEND"] = e.get("JITEXPR_TEST_BACKEND", "cpu")
    e.setdefault("JITEXPR_DISK_CACHE", "0")
    for k in [k for k in e if k.startswith("JITEXPR_") and k not in ("JITEXPR_BACKEND", "JITEXPR_DISK_CACHE")]:
        del e[k]  # the tests set what they need
    # Under AddressSanitizer (CI's second pass) a huge malloc aborts by default; let it fail as
    # glibc's does, so that the out-of-memory messages are what is tested.
    e["ASAN_OPTIONS"] = ":".join(filter(None, [e.get("ASAN_OPTIONS", ""), "allocator_may_return_null=1"]))
    if env:
        e.update(env)
    return e


def run(args, env=None, timeout=120, text=True, **kw):
    return subprocess.run([JITEXPR] + args, capture_output=True, text=text, env=environment(env),
                          timeout=timeout, **kw)


def holds_open(p, path, timeout=120):
    """Whether process p has `path` open (a link in /proc/PID/fd) within `timeout` seconds."""
    want = os.path.realpath(path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and p.poll() is None:
        for fd in os.listdir(f"/proc/{p.pid}/fd"):
            try:
                if os.readlink(f"/proc/{p.pid}/fd/{fd}") == want:
                    return True
            except OSError:
                pass  # closed meanwhile
        time.sleep(0.01)
    return False


def temporaries(folder):
    return [n for n in os.listdir(folder) if n.startswith(TEMP_PREFIX)]


def can_unshare():
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("mount"):
        return False
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "bash", "-c",
                        "mount -t tmpfs jitexpr-probe /dev && mknod /dev/null c 1 3"], capture_output=True)
    return r.returncode == 0


class Base(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="jitexpr_reliability_")
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, *names):
        return os.path.join(self.dir, *names)


# ---- item 1 and 3: devices and streams, in a private /dev

DEV_SETUP = r"""
set -e
mount -t tmpfs -o mode=0755 jitexpr-test-dev /dev
mknod -m 666 /dev/null c 1 3
mknod -m 666 /dev/zero c 1 5
mknod -m 666 /dev/full c 1 7
mknod -m 666 /dev/urandom c 1 9
mknod -m 666 /dev/random c 1 8
ln -s /proc/self/fd /dev/fd
ln -s /proc/self/fd/0 /dev/stdin
ln -s /proc/self/fd/1 /dev/stdout
ln -s /proc/self/fd/2 /dev/stderr
set +e
"""


@unittest.skipUnless(can_unshare(), "needs root and unshare -m (a private /dev)")
class PrivateDev(Base):
    def in_private_dev(self, script, stdout=None):
        """Runs `script` (bash, $JX is the binary) in a new mount namespace with its own /dev."""
        return subprocess.run(["unshare", "-m", "--propagation", "private", "bash", "-c", DEV_SETUP + script],
                              stdout=stdout or subprocess.PIPE, stderr=subprocess.PIPE, text=stdout is None,
                              env=dict(environment(), JX=JITEXPR, DIR=self.dir), timeout=120)

    def test_save_to_dev_null_keeps_the_device(self):
        r = self.in_private_dev('"$JX" -e "x = arange(3)" --save x=/dev/null; echo rc=$?; stat -c %F /dev/null; '
                                'ls -a /dev | grep -c "^\\.jitexpr-" || true')
        self.assertIn("rc=0", r.stdout, r.stderr)
        self.assertIn("character special file", r.stdout)
        self.assertTrue(r.stdout.strip().endswith("0"), r.stdout)

    def test_save_to_dev_full_is_a_clear_error_and_keeps_the_device(self):
        r = self.in_private_dev('"$JX" -e "x = arange(3)" --save x=/dev/full; echo rc=$?; stat -c %F /dev/full')
        self.assertIn("rc=1", r.stdout)
        self.assertIn("character special file", r.stdout)
        self.assertIn("/dev/full: cannot write: No space left on device", r.stderr)

    def test_save_to_dev_stdout_writes_the_array_to_the_pipe(self):
        r = self.in_private_dev('"$JX" -e "x = arange(5)" --save x=/dev/stdout; '
                                'stat -c %F /dev/stdout >&2', stdout=subprocess.PIPE)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(np.load(io.BytesIO(r.stdout)).tolist(), [0, 1, 2, 3, 4])
        self.assertIn(b"symbolic link", r.stderr)

    def test_save_to_dev_stdout_redirected_to_a_file_writes_that_file(self):
        out = self.path("out.npy")
        r = self.in_private_dev('"$JX" -e "x = arange(4)" --save x=/dev/stdout > "$DIR/out.npy"; echo rc=$?; '
                                'stat -c %F /dev/stdout')
        self.assertIn("rc=0", r.stdout, r.stderr)
        self.assertIn("symbolic link", r.stdout)
        self.assertEqual(np.load(out).tolist(), [0, 1, 2, 3])

    def test_load_from_dev_null_is_a_clear_error(self):
        r = self.in_private_dev('"$JX" --load x=/dev/null -e x; echo rc=$?; stat -c %F /dev/null')
        self.assertIn("rc=1", r.stdout)
        self.assertIn("/dev/null: not a .npy file", r.stderr)


class Streams(Base):
    def test_save_to_dev_fd_of_a_pipe(self):
        # /dev/fd/N reaches the pipe through /proc: written in order, nothing replaced.
        r = subprocess.run(["bash", "-c", '"$JX" -e "x = arange(3.0)" --save x=/dev/fd/3 3>&1 1>/dev/null'],
                           capture_output=True, env=dict(environment(), JX=JITEXPR), timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(np.load(io.BytesIO(r.stdout)).tolist(), [0.0, 1.0, 2.0])

    def test_load_from_process_substitution(self):
        np.save(self.path("in.npy"), np.arange(6, dtype=np.int32).reshape(2, 3))
        r = subprocess.run(["bash", "-c", '"$JX" --load x=<(cat "$DIR/in.npy") -e "x * 2"'], capture_output=True,
                           text=True, env=dict(environment(), JX=JITEXPR, DIR=self.dir), timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("[ 6,  8, 10]", r.stdout)

    def test_load_and_save_through_fifos(self):
        fin, fout = self.path("in.fifo"), self.path("out.fifo")
        os.mkfifo(fin)
        os.mkfifo(fout)
        buf = io.BytesIO()
        np.save(buf, np.arange(4, dtype=np.float32))
        got = {}

        def writer():
            with open(fin, "wb") as f:
                f.write(buf.getvalue())

        def reader():
            with open(fout, "rb") as f:
                got["bytes"] = f.read()

        threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
        for t in threads:
            t.start()
        r = run(["--load", "x=" + fin, "-e", "y = x + 1", "--save", "y=" + fout], timeout=60)
        for t in threads:
            t.join(10)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(np.load(io.BytesIO(got["bytes"])).tolist(), [1, 2, 3, 4])
        self.assertTrue(stat.S_ISFIFO(os.lstat(fout).st_mode))
        self.assertEqual(temporaries(self.dir), [])

    def test_fifo_without_a_writer_is_ended_by_ctrl_c(self):
        fifo = self.path("wait.fifo")
        os.mkfifo(fifo)
        p = subprocess.Popen([JITEXPR, "--load", "x=" + fifo, "-e", "x"], env=environment(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # Ctrl-C before the CLI has installed its handler ends it by the signal, as any program
        # (and a slow, sanitized start can take longer than any fixed sleep). SIGINT is caught from
        # the start of main, but by a handler that ends the process; the one that stops the work
        # comes before the loads, so the CLI holding the FIFO open says it is in place.
        self.assertTrue(holds_open(p, fifo), "the CLI never opened the FIFO")
        time.sleep(0.3)
        self.assertIsNone(p.poll(), "it waits for a writer, as any reader does")
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=60)
        self.assertEqual(p.returncode, 130, "Ctrl-C stops the CLI with status 130 (docs/cli.md)")

    def test_save_to_a_directory_or_socket_is_refused(self):
        os.mkdir(self.path("d"))
        r = run(["-e", "x = arange(3)", "--save", "x=" + self.path("d")])
        self.assertEqual(r.returncode, 1)
        self.assertIn("is a directory; only regular files, pipes, FIFOs and character devices are written", r.stderr)
        self.assertTrue(os.path.isdir(self.path("d")))


class ScriptInput(Base):
    """A script or precompile file that is a directory, or larger than any program: a clear
    error naming it, found before it is all read (an endless input grew to gigabytes)."""

    def test_a_directory_as_the_script_or_the_precompile_file_is_named(self):
        os.mkdir(self.path("d"))
        r = run([self.path("d")])
        self.assertEqual(r.returncode, 1)
        self.assertIn(self.path("d") + ": is a directory", r.stderr)
        self.assertNotIn("internal error", r.stderr)
        r = run(["precompile", self.path("d"), "--arch", "sm_80", "--cache-dir", self.path("c")])
        self.assertEqual(r.returncode, 1)
        self.assertIn(self.path("d") + ": is a directory", r.stderr)

    def test_an_endless_script_is_refused_at_the_limit(self):
        # /dev/zero never ends: refused once 64 MiB are read, not after memory runs out.
        r = run(["/dev/zero"], timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn("/dev/zero: more than 64 MiB", r.stderr)
        with open("/dev/zero", "rb") as zero:
            r = run(["-"], stdin=zero, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn("standard input: more than 64 MiB", r.stderr)


# ---- item 1: regular files, modes, links, names

class RegularFiles(Base):
    def save(self, target, expr="arange(3)"):
        r = run(["-e", "x = " + expr, "--save", "x=" + target])
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_save_keeps_the_mode_of_the_file_it_replaces(self):
        f = self.path("x.npy")
        self.save(f)
        os.chmod(f, 0o600)
        self.save(f, "arange(4)")
        self.assertEqual(stat.S_IMODE(os.stat(f).st_mode), 0o600)
        self.assertEqual(np.load(f).tolist(), [0, 1, 2, 3])

    def test_save_writes_through_a_symbolic_link(self):
        os.mkdir(self.path("real"))
        target = self.path("real", "x.npy")
        self.save(target)
        os.symlink(target, self.path("link.npy"))
        self.save(self.path("link.npy"), "arange(5)")
        self.assertTrue(os.path.islink(self.path("link.npy")))
        self.assertEqual(np.load(target).tolist(), [0, 1, 2, 3, 4])
        self.assertEqual(temporaries(self.dir) + temporaries(self.path("real")), [])

    def test_save_to_a_name_of_255_bytes(self):
        f = self.path("n" * 251 + ".npy")
        self.save(f)
        self.save(f, "arange(2)")
        self.assertEqual(np.load(f).tolist(), [0, 1])

    def test_save_makes_a_new_inode(self):
        f, g = self.path("f.npy"), self.path("g.npy")
        self.save(f)
        os.link(f, g)
        self.save(f, "arange(7)")
        self.assertEqual(np.load(g).tolist(), [0, 1, 2])  # documented: the other link keeps the old data
        self.assertEqual(len(np.load(f)), 7)

    def test_file_size_limit_is_an_error_not_a_signal(self):
        f = self.path("big.npy")
        self.save(f)
        r = subprocess.run(["bash", "-c", 'ulimit -f 4; "$JX" -e "x = zeros(100000)" --save x="$F"'],
                           capture_output=True, text=True, env=dict(environment(), JX=JITEXPR, F=f), timeout=60)
        self.assertEqual(r.returncode, 1, "153 would be SIGXFSZ: " + r.stderr)
        self.assertIn("the file would exceed the file size limit (ulimit -f)", r.stderr)
        self.assertEqual(np.load(f).tolist(), [0, 1, 2], "the old file is kept")
        self.assertEqual(temporaries(self.dir), [])

    def test_precompile_under_a_file_size_limit_is_an_error_not_a_signal(self):
        prog = self.path("p.txt")
        with open(prog, "w") as fh:
            fh.write("c = a * 2 + b ; a: float32[1000], b: float32[1000]\n")
        r = subprocess.run(["bash", "-c", 'ulimit -f 1; "$JX" precompile "$P" --arch sm_90 --cache-dir "$C"'],
                           capture_output=True, text=True, timeout=120,
                           env=dict(environment({"JITEXPR_DISK_CACHE": "1"}), JX=JITEXPR, P=prog, C=self.path("c")))
        self.assertNotEqual(r.returncode, 128 + signal.SIGXFSZ, r.stderr)
        self.assertNotEqual(r.returncode, -signal.SIGXFSZ, r.stderr)
        if r.returncode != 0:
            self.assertIn("file size limit", r.stderr)


# ---- items 5 and 6: signals during a save

class SignalsDuringSave(Base):
    def stopped_in_the_middle_of_a_save(self, target):
        """Starts a large save and stops the process (SIGSTOP) while its temporary file exists."""
        for n in (15_000_000, 40_000_000, 80_000_000):
            p = subprocess.Popen([JITEXPR, "-e", f"x = zeros({n})", "--save", "x=" + target], env=environment(),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            deadline = time.time() + 60
            while p.poll() is None and time.time() < deadline:
                if temporaries(self.dir):
                    p.send_signal(signal.SIGSTOP)
                    if temporaries(self.dir):
                        return p
                    p.send_signal(signal.SIGCONT)
                time.sleep(0.0005)
            p.wait(60)
            if os.path.exists(target):
                os.unlink(target)
        self.skipTest("the save was always too quick to catch in the middle")

    def check_signal_leaves_nothing(self, sig):
        target = self.path("big.npy")
        p = self.stopped_in_the_middle_of_a_save(target)
        p.send_signal(sig)
        p.send_signal(signal.SIGCONT)
        p.communicate(timeout=60)
        # SIGINT is Ctrl-C: the CLI stops at the next safe point with status 130 (docs/cli.md);
        # other signals end it by the signal, after the temporary files are removed.
        self.assertEqual(p.returncode, 130 if sig == signal.SIGINT else -sig)
        self.assertEqual(temporaries(self.dir), [], "the temporary file of the save must go")
        self.assertFalse(os.path.exists(target))

    def test_sigterm_during_save_leaves_no_temporary_file(self):
        self.check_signal_leaves_nothing(signal.SIGTERM)

    def test_sigint_during_save_leaves_no_temporary_file(self):
        self.check_signal_leaves_nothing(signal.SIGINT)

    def test_a_later_save_removes_what_a_killed_one_left(self):
        p = self.stopped_in_the_middle_of_a_save(self.path("big.npy"))
        p.kill()  # SIGKILL: no chance to clean up
        p.communicate(timeout=60)
        self.assertEqual(len(temporaries(self.dir)), 1)
        r = run(["-e", "y = arange(2)", "--save", "y=" + self.path("small.npy")])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(temporaries(self.dir), [])


# ---- items 2, 3, 6: the disk cache's commands

class CacheCommands(Base):
    def cache(self, *args, timeout=60):
        return run(["cache"] + list(args), env={"JITEXPR_DISK_CACHE": "1", "JITEXPR_CACHE_DIR": self.path("c")},
                   timeout=timeout)

    def precompile(self, timeout=120):
        prog = self.path("p.txt")
        with open(prog, "w") as fh:
            fh.write("c = a * 2 + b ; a: float32[1000], b: float32[1000]\n")
        return run(["precompile", prog, "--arch", "sm_90", "--cache-dir", self.path("c")],
                   env={"JITEXPR_DISK_CACHE": "1"}, timeout=timeout)

    def entries(self):
        base = self.path("c", "v3")
        return [os.path.join(base, s, n) for s in sorted(os.listdir(base)) if len(s) == 2
                for n in os.listdir(os.path.join(base, s)) if n.endswith(".bin")]

    def make_outside(self):
        os.mkdir(self.path("outside"))
        names = ["a" * 64 + ".bin", "notes.txt", ".tmp-x", TEMP_PREFIX + "1-0123456789abcdef.tmp"]
        for n in names:
            with open(self.path("outside", n), "w") as fh:
                fh.write("precious")
        return names

    def test_symlinked_key_folder_is_never_followed(self):
        self.assertEqual(self.cache("stats").returncode, 0)
        names = self.make_outside()
        os.makedirs(self.path("c", "v3"), exist_ok=True)
        os.symlink(self.path("outside"), self.path("c", "v3", "aa"))
        v = self.cache("verify")
        self.assertEqual(v.returncode, 0, v.stderr)
        self.assertIn("not followed", v.stdout)
        c = self.cache("clear")
        self.assertEqual(c.returncode, 0, c.stderr)
        for n in names:
            with open(self.path("outside", n)) as fh:
                self.assertEqual(fh.read(), "precious", n)

    def test_foreign_file_with_a_key_name_survives_clear(self):
        r = self.precompile()
        self.assertEqual(r.returncode, 0, r.stderr)
        entries = self.entries()
        self.assertTrue(entries)
        foreign = os.path.join(os.path.dirname(entries[0]), "f" * 64 + ".bin")
        with open(foreign, "w") as fh:
            fh.write("mine")
        c = self.cache("clear")
        self.assertIn(f"removed {len(entries)} entries", c.stdout)
        self.assertIn("left " + foreign, c.stdout)
        with open(foreign) as fh:
            self.assertEqual(fh.read(), "mine")

    def test_fifo_in_place_of_an_entry_blocks_nothing(self):
        r = self.precompile()
        self.assertEqual(r.returncode, 0, r.stderr)
        entries = self.entries()
        for e in entries:
            os.unlink(e)
            os.mkfifo(e)
        v = self.cache("verify", timeout=60)  # a FIFO opened as an entry would block for ever
        self.assertEqual(v.returncode, 0, v.stderr)
        self.assertIn("a FIFO", v.stdout)
        p = self.precompile(timeout=60)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("is not a jitexpr cache entry (a FIFO)", p.stderr)
        self.assertIn("remove it", p.stderr)
        self.cache("clear", timeout=60)
        self.assertTrue(all(stat.S_ISFIFO(os.lstat(e).st_mode) for e in entries))

    def test_empty_folder_in_place_of_an_entry_is_removed_and_precompile_works_again(self):
        r = self.precompile()
        self.assertEqual(r.returncode, 0, r.stderr)
        entries = self.entries()
        for e in entries:
            os.unlink(e)
            os.mkdir(e)
        v = self.cache("verify")
        self.assertIn(f"{len(entries)} removed", v.stdout)
        self.assertFalse(any(os.path.exists(e) for e in entries), "what verify says it removed is gone")
        for e in entries:
            os.mkdir(e)
        p = self.precompile()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(all(os.path.isfile(e) for e in entries))


# ---- item 10: the environment

class Environment(Base):
    def test_bad_thread_counts_are_usage_errors(self):
        for bad in ("abc", "-1", "2.5"):
            r = run(["-e", "1 + 1"], env={"JITEXPR_THREADS": bad})
            self.assertEqual(r.returncode, 2, bad)
            self.assertIn(f"JITEXPR_THREADS: '{bad}' is not a valid value", r.stderr)

    def test_a_huge_thread_count_is_clamped_and_starts_at_once(self):
        t0 = time.time()
        r = run(["-e", "sum(arange(1000))"], env={"JITEXPR_THREADS": "100000"}, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("499500", r.stdout)
        self.assertLess(time.time() - t0, 20)

    def test_every_variable_is_checked(self):
        for name, bad in (("JITEXPR_BACKEND", "gpu"), ("JITEXPR_DISK_CACHE", "maybe"), ("JITEXPR_FAST_MATH", "2"),
                          ("JITEXPR_TIERED", "yes please"), ("JITEXPR_NVRTC_OPTIONS", "O3"),
                          ("JITEXPR_SHOW_KERNELS", "all"), ("JITEXPR_STAGING", "fast"),
                          ("JITEXPR_CPU_KERNELS", "avx512")):
            r = run(["-e", "1"], env={name: bad})
            self.assertEqual(r.returncode, 2, name)
            self.assertIn(name, r.stderr)


# ---- items 8, 11, 12, 14: errors a person can act on

class Messages(Base):
    def test_huge_constructor_says_which_statement_and_how_much(self):
        r = run(["-e", "x = 1\ny = zeros(1<<40)"])
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr, r"out of memory: a float64 array of shape \(1099511627776,\) needs 8\.0 TiB "
                                   r"\(8796093022208 bytes\); .* available\nline 2: y = zeros\(1<<40\)\n"
                                   r" {12}\^{12}\n")
        r = run(["-e", "a = arange(1e12)"])
        self.assertIn("needs 7.3 TiB (8000000000000 bytes)", r.stderr)

    def test_truncated_npy_claiming_32_gib_names_the_file(self):
        f = self.path("claims.npy")
        header = "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296,), }"
        header += " " * (64 - 10 - len(header) - 1) + "\n"
        with open(f, "wb") as fh:
            fh.write(b"\x93NUMPY\x01\x00" + bytes([len(header), 0]) + header.encode() + b"\0" * 16)
        r = run(["--load", "x=" + f, "-e", "x"])
        self.assertEqual(r.returncode, 1)
        self.assertIn(f + ": the file is shorter than its data: float64 (4294967296,) needs 34359738368 bytes "
                      "after the header, 16 present", r.stderr)

    def test_npy_dimension_past_2_to_the_64_does_not_wrap(self):
        f = self.path("wrap.npy")
        header = "{'descr': '|u1', 'fortran_order': False, 'shape': (18446744073709551619,), }"
        header += " " * (128 - 10 - len(header) - 1) + "\n"
        with open(f, "wb") as fh:
            fh.write(b"\x93NUMPY\x01\x00" + bytes([len(header), 0]) + header.encode() + b"abc")
        r = run(["--load", "x=" + f, "-e", "x"])
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("a dimension of the shape is too large", r.stderr)

    def test_save_of_a_constructor(self):
        f = self.path("f.npy")
        r = run(["-e", f'save(arange(3), "{f}")'])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(np.load(f).tolist(), [0, 1, 2])
        r = run(["-e", f'save(zeros((2, 2)) + 1, "{f}")'])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(np.load(f).tolist(), [[1, 1], [1, 1]])

    def test_long_bad_line_is_cut_around_the_caret(self):
        script = self.path("long.jx")
        with open(script, "w") as fh:
            fh.write("x = " + "a + " * 250000 + "* b\n")  # a 1 MB line
        r = run([script], timeout=120)
        self.assertEqual(r.returncode, 1)
        self.assertLess(len(r.stderr), 600, r.stderr[:600])
        self.assertIn("a + * b", r.stderr)

    def test_c1_and_bidi_controls_are_escaped(self):
        text = "x = a +* b  # \u009b31m \u202e evil \u2066 x \u2069"
        r = subprocess.run([JITEXPR, "-e", text], capture_output=True, env=environment(), timeout=60)
        self.assertEqual(r.returncode, 1)
        for bad in ("\u009b", "\u202e", "\u2066", "\u2069"):
            self.assertNotIn(bad.encode(), r.stderr)
        self.assertIn(b"# ?31m ? evil ? x ?", r.stderr)
        raw = subprocess.run([JITEXPR, b"-e", b"x = a +* b  # \x9b31m"], capture_output=True, env=environment(),
                             timeout=60)
        self.assertNotIn(b"\x9b", raw.stderr)

    def test_names_no_statement_can_read_are_refused(self):
        np.save(self.path("f.npy"), np.arange(2))
        for name in ("True", "and", "not"):
            r = run(["--load", f"{name}={self.path('f.npy')}", "-e", "1"])
            self.assertEqual(r.returncode, 2, name)
            self.assertIn(f"'{name}' is a keyword, not a variable name", r.stderr)

    def test_unary_plus_on_bool_is_a_type_error(self):
        r = run(["-e", "b = arange(3) > 1", "-e", "+b"])
        self.assertEqual(r.returncode, 1)
        self.assertIn("type error: unary '+' is not supported for bool", r.stderr)



# ---- issue 34, item 3: a file this user may not write is never replaced

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def why_no_other_user():
    """Why the tests of another user's permissions cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root, to run jitexpr as another user through setpriv"
    if not shutil.which("setpriv"):
        return "needs setpriv (util-linux), to run jitexpr as another user"
    r = subprocess.run(NOBODY + [JITEXPR, "--version"], capture_output=True, timeout=60)
    if r.returncode != 0:
        return "the jitexpr binary cannot be run by uid 65534 here: " + r.stderr.decode(errors="replace")[-200:]
    return None


class Permissions(Base):
    def setUp(self):
        super().setUp()
        why = why_no_other_user()
        if why:
            self.skipTest(why)
        os.chmod(self.dir, 0o777)  # the other user's folder too

    def as_nobody(self, args):
        return subprocess.run(NOBODY + [JITEXPR] + args, capture_output=True, text=True, env=environment(),
                              timeout=120)

    def nobodys_file(self, name, mode):
        f = self.path(name)
        np.save(f, np.arange(5.0))
        os.chown(f, 65534, 65534)
        os.chmod(f, mode)
        return f

    def assert_kept(self, f, mode):
        self.assertEqual(np.load(f).tolist(), [0.0, 1.0, 2.0, 3.0, 4.0])
        self.assertEqual(stat.S_IMODE(os.stat(f).st_mode), mode)
        self.assertEqual(temporaries(os.path.dirname(f)), [])

    def test_save_over_a_read_only_file_is_refused_and_keeps_it(self):
        f = self.nobodys_file("prot.npy", 0o444)
        r = self.as_nobody(["-q", "-e", "x = zeros(2)", "--save", "x=" + f])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(f + ": cannot save: permission denied; the file was kept", r.stderr)
        self.assert_kept(f, 0o444)

    def test_save_statement_over_another_users_file_is_refused(self):
        f = self.path("roots.npy")
        np.save(f, np.arange(5.0))
        os.chmod(f, 0o644)  # root's, readable by all, writable by root only
        r = self.as_nobody(["-q", "-e", f'save(zeros(2), "{f}")'])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("permission denied", r.stderr)
        self.assertIn("save(zeros(2)", r.stderr)  # the statement, with its caret
        self.assert_kept(f, 0o644)

    def test_a_link_to_a_read_only_file_is_refused(self):
        f = self.nobodys_file("target.npy", 0o444)
        link = self.path("link.npy")
        os.symlink(f, link)
        r = self.as_nobody(["-q", "-e", "x = zeros(2)", "--save", "x=" + link])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("permission denied (to '" + f + "')", r.stderr)
        self.assert_kept(f, 0o444)

    def test_save_into_a_folder_this_user_cannot_write_is_refused(self):
        folder = self.path("locked")
        os.mkdir(folder, 0o755)  # root's
        f = os.path.join(folder, "mine.npy")
        np.save(f, np.arange(5.0))
        os.chown(f, 65534, 65534)
        os.chmod(f, 0o644)  # the file is the user's and writable; its folder is not
        for target in (f, os.path.join(folder, "new.npy")):
            r = self.as_nobody(["-q", "-e", "x = zeros(2)", "--save", "x=" + target])
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn(target + ": cannot save: permission denied in the folder '" + folder + "'", r.stderr)
        self.assert_kept(f, 0o644)
        self.assertFalse(os.path.exists(os.path.join(folder, "new.npy")))

    def test_a_writable_file_of_this_user_is_still_replaced(self):
        f = self.nobodys_file("mine.npy", 0o640)
        r = self.as_nobody(["-q", "-e", "x = zeros(2)", "--save", "x=" + f])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(np.load(f).tolist(), [0.0, 0.0])
        self.assertEqual(stat.S_IMODE(os.stat(f).st_mode), 0o640)

    def test_root_keeps_roots_answer(self):
        f = self.path("ro.npy")
        np.save(f, np.arange(5.0))
        os.chmod(f, 0o444)
        r = run(["-q", "-e", "x = zeros(2)", "--save", "x=" + f])  # as root, like `>` and numpy.save
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(np.load(f).tolist(), [0.0, 0.0])
        self.assertEqual(stat.S_IMODE(os.stat(f).st_mode), 0o444)

    def test_cache_clear_and_verify_say_what_they_could_not_remove(self):
        # A shard folder this user may not write: clear said "removed 0 entries" with exit 0, and
        # verify called the damaged entry of jitexpr's "not jitexpr's".
        cache = self.path("c")
        prog = self.path("p.txt")
        with open(prog, "w") as f:
            f.write("c = a*2 + b ; a: float32[N], b: float32[N]\n")
        env = dict(environment(), JITEXPR_CACHE_DIR=cache, JITEXPR_DISK_CACHE="1")
        r = subprocess.run(NOBODY + [JITEXPR, "precompile", prog, "--arch", "sm_80"], capture_output=True,
                           text=True, env=env, timeout=120)
        if r.returncode != 0:
            self.skipTest("precompile needs NVRTC: " + r.stderr[-200:])
        entries = [os.path.join(d, n) for d, _, names in os.walk(cache) for n in names if n.endswith(".bin")]
        self.assertTrue(entries)
        shards = sorted({os.path.dirname(e) for e in entries})
        for d in shards:
            os.chmod(d, 0o500)
        try:
            r = subprocess.run(NOBODY + [JITEXPR, "cache", "clear"], capture_output=True, text=True, env=env,
                               timeout=120)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("cannot remove: Permission denied", r.stdout)
            self.assertIn("could not be removed", r.stdout)
            self.assertTrue(all(os.path.exists(e) for e in entries))
            with open(entries[0], "r+b") as f:  # damaged now
                f.seek(-1, os.SEEK_END)
                last = f.read(1)
                f.seek(-1, os.SEEK_END)
                f.write(bytes([last[0] ^ 0xFF]))
            r = subprocess.run(NOBODY + [JITEXPR, "cache", "verify"], capture_output=True, text=True, env=env,
                               timeout=120)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("damaged and not removable", r.stdout)
            self.assertNotIn("not jitexpr's", r.stdout)
        finally:
            for d in shards:
                os.chmod(d, 0o755)



# ---- issue 34, item 2: the deepest text on a small main-thread stack

def stack_limit(kib):
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_STACK, (kib << 10, kib << 10))
    return limit


class SmallStack(Base):
    DEPTH = 199  # with the statement's own call, the deepest nesting the language accepts

    def run_script(self, text, **kw):
        # AddressSanitizer's frames are several times larger: its build gets 256 KiB.
        kib = 256 if sanitized_binary() else 64
        script = self.path("s.jx")
        with open(script, "w") as f:
            f.write(text)
        return run(["-q", script], preexec_fn=stack_limit(kib), **kw)

    def test_deep_calls_run_under_a_64_kib_stack(self):
        n = self.DEPTH
        for f, close in (("sin(", ")"), ("abs(", ")"), ("sum(", ")"), ("cumsum(", ")"), ("float32(", ")"),
                         ("where(x > 0, ", ", x)")):
            r = self.run_script("x = arange(3.0); y = " + f * n + "x" + close * n + "\nsum(y * 0) + 1\n")
            self.assertEqual(r.returncode, 0, f"{f}: {r.returncode} {r.stderr[-400:]}")
            self.assertRegex(r.stdout.strip(), r"^array\(1\., dtype=float(64|32)\)  # shape \(\)$", f)

    def test_deep_constructors_run_under_a_64_kib_stack(self):
        n = self.DEPTH + 1
        r = self.run_script("y = " + "full(1, " * n + "1" + ")" * n + "\nsum(y)\n")
        self.assertEqual(r.returncode, 0, r.stderr[-400:])
        self.assertEqual(r.stdout.strip(), "array(1, dtype=int64)  # shape ()")
        r = self.run_script("y = " + "sum(arange(" * (n // 2) + "3" + "))" * (n // 2) + "\ny\n")
        self.assertEqual(r.returncode, 0, r.stderr[-400:])
        self.assertEqual(r.stdout.strip(), "array(3, dtype=int64)  # shape ()")

    def test_too_deep_is_a_syntax_error_under_a_64_kib_stack(self):
        n = self.DEPTH + 2
        r = self.run_script("x = arange(3.0); y = " + "sin(" * n + "x" + ")" * n + "\n")
        self.assertEqual(r.returncode, 1, r.stderr[-400:])
        self.assertIn("nested too deeply", r.stderr)


# ---- item 13: a CPU run under an address-space limit

def sanitized_binary():
    """AddressSanitizer reserves terabytes of shadow memory, so no address-space limit applies."""
    with open(JITEXPR, "rb") as f:
        return b"__asan_init" in f.read()


class AddressSpace(Base):
    def test_cpu_run_starts_under_a_64_mib_address_space_limit(self):
        # NVRTC and nvJitLink (hundreds of MiB of mappings) are opened only when CUDA compiles.
        if sanitized_binary():
            self.skipTest("an AddressSanitizer build cannot run under an address-space limit")
        import resource

        def limit():
            resource.setrlimit(resource.RLIMIT_AS, (64 << 20, 64 << 20))

        r = run(["--backend", "cpu", "-e", "x = arange(1000)", "-e", "sum(x * 2)"], preexec_fn=limit)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("999000", r.stdout)


# ---- issue 34, item 4: out of memory in a kernel's own work, and threads that cannot start

def address_space_limit(mib):
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (mib << 20, mib << 20))
    return limit


class KernelMemory(Base):
    def setUp(self):
        super().setUp()
        if sanitized_binary():
            self.skipTest("an AddressSanitizer build cannot run under an address-space limit")

    def run_limited(self, exprs, mib=200, env=None):
        args = ["-q"]
        for e in exprs:
            args += ["-e", e]
        return run(args, env=dict({"JITEXPR_THREADS": "1"}, **(env or {})), preexec_fn=address_space_limit(mib))

    def test_median_out_of_memory_says_how_much_and_where(self):
        r = self.run_limited(["x = rand(20000000)", "y = median(x)"])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertRegex(r.stderr, r"jitexpr: -e: out of memory: the copy of 20000000 float64 elements an order statistic "
                                   r"sorts needs 152\.6 MiB \(160000000 bytes\); .* available\n"
                                   r"line 1: y = median\(x\)\n {12}\^{9}\n")

    def test_quantile_out_of_memory_points_at_the_call_in_a_longer_statement(self):
        r = self.run_limited(["x = rand(20000000)", "y = 1 + quantile(x, 0.9)"])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("needs 152.6 MiB (160000000 bytes); ", r.stderr)
        self.assertIn("line 1: y = 1 + quantile(x, 0.9)\n" + " " * 16 + "^" * 16 + "\n", r.stderr)

    def test_a_scans_result_out_of_memory_names_it(self):
        r = self.run_limited(["x = rand(20000000)", "y = cumsum(x)"])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertRegex(r.stderr, r"out of memory: 'y', a float64 array of shape \(20000000,\) needs 152\.6 MiB "
                                   r"\(160000000 bytes\); .* available\nline 1: y = cumsum\(x\)\n {12}\^{9}\n")

    def test_a_selections_result_out_of_memory_names_it(self):
        r = self.run_limited(["x = rand(20000000)", "y = x[x >= 0]"])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertRegex(r.stderr, r"out of memory: a selection's result, a float64 array of shape \(20000000,\) "
                                   r"needs 152\.6 MiB \(160000000 bytes\); .* available\nline 1: y = x\[x >= 0\]\n"
                                   r" {8}\^{13}\n")  # the statement

    def test_a_script_statement_is_pointed_at_by_its_line(self):
        script = self.path("s.jx")
        with open(script, "w") as f:
            f.write("x = rand(20000000)\nm = 2\ny = median(x) * m\n")
        r = run(["-q", script], env={"JITEXPR_THREADS": "1"}, preexec_fn=address_space_limit(200))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("line 3: y = median(x) * m\n" + " " * 12 + "^" * 9 + "\n", r.stderr)

    def test_threads_that_cannot_start_fall_back_to_fewer(self):
        r = run(["-q", "-e", "1+1"], env={"JITEXPR_THREADS": "2"}, preexec_fn=address_space_limit(16))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "array(2, dtype=int64)  # shape ()")
        self.assertEqual(r.stderr, "")  # said only under -v
        r = run(["-q", "-v", "-e", "x = arange(100000.0)", "-e", "sum(x)"], env={"JITEXPR_THREADS": "2"},
                preexec_fn=address_space_limit(16))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "array(4.99995e+09, dtype=float64)  # shape ()")
        self.assertIn("jitexpr: the CPU backend runs on 1 of the 2 threads asked for: thread 2 could not start (", r.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    JITEXPR = os.path.abspath(sys.argv.pop(1))
    unittest.main()
