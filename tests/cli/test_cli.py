#!/usr/bin/env python3
"""The jitexpr script interface, run as a subprocess: .npy round trips against NumPy, -e,
SCRIPT, stdin, constructors, printing, exit statuses, error messages, --save behaviour.

usage: test_cli.py PATH/TO/jitexpr [unittest options]
Exits 77 (CTest: skipped) when NumPy is not installed.
"""
import errno
import io
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

try:
    import numpy as np
except ImportError:  # pragma: no cover
    print("test_cli.py: NumPy is not installed; skipping")
    sys.exit(77)

JITEXPR = None


def run(args, stdin=None, cwd=None, env=None):
    e = dict(os.environ)
    e["JITEXPR_BACKEND"] = e.get("JITEXPR_TEST_BACKEND", "auto")
    e.setdefault("JITEXPR_DISK_CACHE", "0")
    if env:
        e.update(env)
    return subprocess.run([JITEXPR] + args, input=stdin, capture_output=True, text=True, cwd=cwd,
                          env=e, timeout=120)


# Every dtype NumPy can write that jitexpr has (bfloat16 needs ml_dtypes: tested on its own).
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]


def sample(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    dt = np.dtype(dtype)
    if dt.kind == "b":
        flat = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        flat = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    elif dt.kind == "f":
        flat = (rng.standard_normal(n) * 100).astype(dt)
    else:
        flat = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    return flat.reshape(shape)


class Base(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="jitexpr_cli_test_")
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def round_trip(self, array):
        """--load x=in.npy --save x=out.npy through the runtime; returns what NumPy reads back."""
        np.save(self.path("in.npy"), array)
        r = run(["--load", "x=" + self.path("in.npy"), "-e", "y = x", "--save", "y=" + self.path("out.npy")])
        self.assertEqual(r.returncode, 0, r.stderr)
        return np.load(self.path("out.npy"))

    def assertSameArray(self, got, want):
        want = np.asarray(want)
        self.assertEqual(got.shape, want.shape)
        self.assertEqual(got.dtype, want.dtype.newbyteorder("="))
        self.assertEqual(np.ascontiguousarray(got).tobytes(),
                         np.ascontiguousarray(want.astype(want.dtype.newbyteorder("="))).tobytes())


class NpyRoundTrip(Base):
    def test_every_dtype_in_c_order(self):
        for dt in DTYPES:
            with self.subTest(dtype=dt):
                a = sample(dt, (5, 3), seed=1)
                self.assertSameArray(self.round_trip(a), a)

    def test_every_dtype_in_fortran_order(self):
        for dt in DTYPES:
            with self.subTest(dtype=dt):
                a = np.asfortranarray(sample(dt, (2, 3, 4), seed=2))
                self.assertSameArray(self.round_trip(a), a)

    def test_big_endian(self):
        for dt in [">i2", ">i4", ">u8", ">f2", ">f4", ">f8", ">c8", ">c16"]:
            with self.subTest(dtype=dt):
                a = sample(np.dtype(dt).newbyteorder("="), (7,), seed=3).astype(dt)
                self.assertSameArray(self.round_trip(a), a)

    def test_zero_dimensional(self):
        a = np.array(3.5, dtype=np.float32)
        got = self.round_trip(a)
        self.assertEqual(got.shape, ())
        self.assertSameArray(got, a)

    def test_three_dimensional(self):
        a = sample("float64", (2, 3, 4), seed=4)
        self.assertSameArray(self.round_trip(a), a)

    def test_bfloat16_saved_by_jitexpr_loads_back(self):
        r = run(["-e", "x = full(3, 1.5, dtype=bfloat16)", "--save", "x=" + self.path("b.npy")])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(self.path("b.npy"), "rb") as f:
            self.assertIn(b"'descr': 'bfloat16'", f.read(128))
        r = run(["--load", "x=" + self.path("b.npy"), "-e", "x"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "array([1.5, 1.5, 1.5], dtype=bfloat16)  # shape (3,)")

    def test_load_and_save_statements(self):
        np.save(self.path("a.npy"), np.arange(4, dtype=np.int32))
        r = run(["-e", 'a = load("a.npy"); save(a * 3, "b.npy")'], cwd=self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertSameArray(np.load(self.path("b.npy")), np.arange(4, dtype=np.int32) * 3)


    def test_a_float_arange_has_numpys_bits(self):
        # a + i * step differed from NumPy's fill (a, a + s, a + i * ((a + s) - a)) in the last
        # bits for about half of the ranges an outside tester tried.
        for a, b, s in [(1, 0, -0.3), (-1, 2, 0.3), (10, 0, -1.3), (0.1, 7.3, 0.7), (-3.25, 4.9, 0.35)]:
            with self.subTest(a=a, b=b, s=s):
                r = run(["-e", f"r = arange({a}, {b}, {s})", "--save", "r=" + self.path("r.npy")])
                self.assertEqual(r.returncode, 0, r.stderr)
                got, want = np.load(self.path("r.npy")), np.arange(a, b, s)
                self.assertEqual(got.tobytes(), want.tobytes())


class Statements(Base):
    def test_bare_expression_prints_numpy_style(self):
        r = run(["-e", "arange(3)"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "array([0, 1, 2], dtype=int64)  # shape (3,)\n")

    def test_several_e_run_in_one_environment(self):
        r = run(["-e", "a = arange(4); b = a * 2", "-e", "b\nc = b + 1", "-e", "c"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(),
                         ["array([0, 2, 4, 6], dtype=int64)  # shape (4,)",
                          "array([1, 3, 5, 7], dtype=int64)  # shape (4,)"])

    def test_an_assignment_of_another_shape_or_dtype_rebinds_the_name(self):
        r = run(["-e", "x = arange(7.0)", "-e", "x = sum(x)", "-e", "x", "-e", "y = arange(3)",
                 "-e", "y = y[1:]", "-e", "y", "-e", "y = y + 1.5", "-e", "y"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(),
                         ["array(21., dtype=float64)  # shape ()",
                          "array([1, 2], dtype=int64)  # shape (2,)",
                          "array([2.5, 3.5], dtype=float64)  # shape (2,)"])

    def test_script_file_runs_after_e(self):
        with open(self.path("s.jx"), "w") as f:
            f.write("# a comment\ny = x * 10   # trailing comment\ny + \\\n  1\nz = (y +\n     2)\nz\n")
        r = run(["-e", "x = arange(2)", self.path("s.jx")])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(),
                         ["array([ 1, 11], dtype=int64)  # shape (2,)",
                          "array([ 2, 12], dtype=int64)  # shape (2,)"])

    def test_dash_reads_stdin(self):
        r = run(["-"], stdin="q = ones(2, dtype=int32)\nq * 5\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "array([5, 5], dtype=int32)  # shape (2,)\n")

    def test_assignment_prints_nothing(self):
        r = run(["-e", "a = arange(3); b = a + 1"])
        self.assertEqual((r.returncode, r.stdout), (0, ""))

    def test_reduction_prints_zero_dimensional_value(self):
        r = run(["-e", "sum(arange(5))"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "array(10, dtype=int64)  # shape ()\n")

    def test_scan_prints_its_running_values(self):
        r = run(["-e", "m = ones((2, 3), dtype=int8); cumsum(m * 2, axis=1); cumsum(m)"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(),
                         ["array([[2, 4, 6],", "       [2, 4, 6]], dtype=int64)  # shape (2, 3)",
                          "array([1, 2, 3, 4, 5, 6], dtype=int64)  # shape (6,)"])

    def test_scan_axis_out_of_range_has_a_caret(self):
        r = run(["-e", "cumsum(ones((2, 3)), axis=2)"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("axis 2 is out of bounds for an array of 2 dimensions", r.stderr)
        self.assertIn("^", r.stderr)

    def test_large_array_is_summarised(self):
        r = run(["-e", "arange(2000)"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "array([   0,    1,    2, ..., 1997, 1998, 1999], dtype=int64)  # shape (2000,)\n")

    def test_float_printing_is_shortest_round_trip(self):
        r = run(["-e", "x = full(2, 0.1, dtype=float32); x; full(1, 0.1) + 0.2"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(),
                         ["array([0.1, 0.1], dtype=float32)  # shape (2,)",
                          "array([0.30000000000000004], dtype=float64)  # shape (1,)"])


class Constructors(Base):
    def saved(self, statements, name="x"):
        out = self.path(name + ".npy")
        r = run(["-e", statements, "--save", "%s=%s" % (name, out)])
        self.assertEqual(r.returncode, 0, r.stderr)
        return np.load(out)

    def test_arange_matches_numpy(self):
        self.assertSameArray(self.saved("x = arange(2, 11, 3)"), np.arange(2, 11, 3))
        self.assertSameArray(self.saved("x = arange(0.5, 2, 0.25)"), np.arange(0.5, 2, 0.25))
        self.assertSameArray(self.saved("x = arange(5, dtype=float32)"), np.arange(5, dtype=np.float32))

    def test_linspace_matches_numpy(self):
        self.assertSameArray(self.saved("x = linspace(-1, 2, 7)"), np.linspace(-1, 2, 7))

    def test_zeros_accepts_tuple_and_flat_shapes(self):
        self.assertSameArray(self.saved("x = zeros((2, 3), dtype=float32)"), np.zeros((2, 3), np.float32))
        self.assertSameArray(self.saved("x = zeros(2, 3)"), np.zeros((2, 3)))
        self.assertSameArray(self.saved("x = ones((4,))"), np.ones(4))
        self.assertSameArray(self.saved("x = zeros(())"), np.zeros(()))

    def test_full_takes_its_dtype_from_the_value(self):
        self.assertSameArray(self.saved("x = full((2, 2), 7)"), np.full((2, 2), 7))
        self.assertSameArray(self.saved("x = full(3, 2.5, dtype=float16)"), np.full(3, 2.5, np.float16))

    def test_rand_is_reproducible_for_a_seed(self):
        a = self.saved("x = rand(100, seed=7)")
        b = self.saved("x = rand(100, seed=7)")
        c = self.saved("x = rand(100, seed=8)")
        self.assertSameArray(a, b)
        self.assertFalse(np.array_equal(a, c))
        self.assertTrue(((a >= 0) & (a < 1)).all())

    def test_randn_looks_standard_normal(self):
        a = self.saved("x = randn(20000, seed=1)")
        self.assertLess(abs(a.mean()), 0.05)
        self.assertLess(abs(a.std() - 1), 0.05)

    def test_constructors_inside_expressions(self):
        r = run(["-e", "sum(arange(5) ** 2); zeros((2, 2)) + full((2, 2), 1.5)"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(),
                         ["array(30, dtype=int64)  # shape ()",
                          "array([[1.5, 1.5],", "       [1.5, 1.5]], dtype=float64)  # shape (2, 2)"])

    def test_load_without_quoted_file_is_an_error(self):
        r = run(["-e", "x = load(a)"])
        self.assertEqual(r.returncode, 1)
        self.assertIn('use load("file.npy")', r.stderr)

    def test_constructor_arguments_may_use_variables(self):
        self.assertSameArray(self.saved("n = 3; x = arange(n * 2)"), np.arange(6))


class Errors(Base):
    def test_success_exits_0(self):
        self.assertEqual(run(["-e", "1 + 1"]).returncode, 0)

    def test_unknown_name_exits_1_with_caret(self):
        r = run(["-e", "a = arange(3)\nb = a + nope"])
        self.assertEqual(r.returncode, 1)
        lines = r.stderr.splitlines()
        self.assertTrue(lines[0].startswith("jitexpr: "), r.stderr)
        self.assertIn("name error", lines[0])
        self.assertEqual(lines[1], "line 2: b = a + nope")
        self.assertEqual(lines[2], " " * len("line 2: b = a + ") + "^^^^")

    def test_syntax_error_in_script_names_the_script(self):
        with open(self.path("bad.jx"), "w") as f:
            f.write("x = 1 +* 2\n")
        r = run([self.path("bad.jx")])
        self.assertEqual(r.returncode, 1)
        self.assertTrue(r.stderr.startswith("jitexpr: %s: syntax error" % self.path("bad.jx")), r.stderr)
        self.assertIn("^", r.stderr)

    def test_constructor_error_has_caret(self):
        r = run(["-e", "x = zeros(3, -2)"])
        self.assertEqual(r.returncode, 1)
        self.assertIn("value error", r.stderr)
        self.assertIn("line 1: x = zeros(3, -2)\n" + " " * len("line 1: x = zeros(3, ") + "^^", r.stderr)

    def test_string_where_no_string_op_reads_it_is_a_type_error(self):
        # String literals reach the runtime (contains(s, 'x')); sin() of one is its TypeError.
        r = run(["-e", 'x = sin("a")'])
        self.assertEqual(r.returncode, 1)
        self.assertIn("type error: sin() is not supported for strings", r.stderr)
        self.assertIn('line 1: x = sin("a")\n' + " " * len("line 1: x = ") + "^" * 8, r.stderr)

    def test_missing_load_file_exits_1(self):
        r = run(["--load", "x=" + self.path("missing.npy"), "-e", "x"])
        self.assertEqual(r.returncode, 1)
        self.assertIn("missing.npy", r.stderr)

    def test_malformed_npy_exits_1(self):
        with open(self.path("junk.npy"), "wb") as f:
            f.write(b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'}")
        r = run(["--load", "x=" + self.path("junk.npy"), "-e", "x"])
        self.assertEqual(r.returncode, 1)
        self.assertIn("junk.npy", r.stderr)

    def test_unknown_option_exits_2(self):
        r = run(["--frobnicate"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown option", r.stderr)

    def test_missing_option_value_exits_2(self):
        self.assertEqual(run(["-e"]).returncode, 2)
        self.assertEqual(run(["--backend"]).returncode, 2)

    def test_bad_name_file_exits_2(self):
        for bad in ["x", "=f.npy", "1x=f.npy", "x="]:
            with self.subTest(value=bad):
                self.assertEqual(run(["--save", bad, "-e", "1"]).returncode, 2)

    def test_bad_backend_exits_2(self):
        self.assertEqual(run(["--backend", "tpu", "-e", "1"]).returncode, 2)

    def test_bad_nvrtc_options_exit_2_as_the_variables_do(self):
        # --nvrtc-options took a word JITEXPR_NVRTC_OPTIONS refuses (and ran with it).
        r = run(["--nvrtc-options", "foo", "-e", "1"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("'foo' is not an NVRTC option", r.stderr)
        self.assertEqual(run(["--nvrtc-options", "-DX=1", "-e", "1"]).returncode, 0)

    def test_a_precompile_shape_error_names_the_files_symbols(self):
        # It named the stand-in sizes of N and M: "shapes (1021,) (1023,)".
        f = self.path("nm.txt")
        with open(f, "w") as out:
            out.write("d = x + y ; x: float64[N, 3], y: float64[4, K]\n")
        r = run(["precompile", f, "--arch", "sm_80", "--cache-dir", self.path("c")], env={"JITEXPR_DISK_CACHE": "1"})
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("could not be broadcast together with shapes (N, 3) (4, K)", r.stderr)

    def test_cache_commands_take_a_cache_dir_after_them(self):
        # precompile takes --cache-dir; 'cache clear --cache-dir X' was a usage error.
        d = self.path("cachedir")
        r = run(["cache", "stats", "--cache-dir", d], env={"JITEXPR_DISK_CACHE": "1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("directory: " + d, r.stdout)
        r = run(["cache", "clear", "--cache-dir=" + d], env={"JITEXPR_DISK_CACHE": "1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("from " + d, r.stdout)
        self.assertEqual(run(["cache", "clear", "--cache-dir"]).returncode, 2)

    def test_help_and_version_exit_0(self):
        r = run(["--help"])
        self.assertEqual(r.returncode, 0)
        self.assertIn("usage: jitexpr", r.stdout)
        r = run(["--version"])
        self.assertEqual(r.returncode, 0)
        self.assertTrue(r.stdout.startswith("jitexpr "))

    def test_cache_stats_exits_0(self):
        r = run(["cache", "stats"], env={"JITEXPR_CACHE_DIR": self.path("cache"), "JITEXPR_DISK_CACHE": "1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("entries: 0", r.stdout)

    def test_unknown_cache_command_exits_2(self):
        self.assertEqual(run(["cache", "shrink"]).returncode, 2)


class Strings(Base):
    """NumPy S and U arrays through --load, -e, printing and save(), against NumPy 2 (issue 32)."""

    S = np.array([b"oslo", b"bergen", b"", b"os\x00lo", b"it's"])
    U = np.array(["oslo", "bergen", "troms\u00f8", 'a"b', ""])

    def setUp(self):
        super().setUp()
        np.save(self.path("s.npy"), self.S)
        np.save(self.path("u.npy"), self.U)
        np.save(self.path("x.npy"), np.arange(5.0))
        self.loads = ["--load", "s=" + self.path("s.npy"), "--load", "u=" + self.path("u.npy"),
                      "--load", "x=" + self.path("x.npy")]

    def value_of(self, text):
        out = self.path("r.npy")
        r = run(self.loads + ["-e", "r = " + text, "--save", "r=" + out])
        self.assertEqual(r.returncode, 0, r.stderr)
        return np.load(out)

    def test_loaded_arrays_print_as_numpy_does(self):
        r = run(self.loads + ["-e", "s; u"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(), [repr(self.S) + "  # shape (5,)", repr(self.U) + "  # shape (5,)"])

    def test_predicates_and_their_uses_are_numpys(self):
        S, U, x = self.S, self.U, np.arange(5.0)
        cases = [
            ("s == b'oslo'", S == b"oslo"), ("s < b'c'", S < b"c"), ("u >= 'b'", U >= "b"),
            ("contains(u, '\\u00f8')", np.strings.find(U, "\u00f8") >= 0),
            ("startswith(s, b'os')", np.strings.startswith(S, b"os")), ("endswith(u, 'o')", np.strings.endswith(U, "o")),
            ("find(u, 'e')", np.strings.find(U, "e")), ("str_len(s)", np.strings.str_len(S)),
            ("str_len(u)", np.strings.str_len(U)), ("x[startswith(s, b'os')]", x[np.strings.startswith(S, b"os")]),
            ("sum(where(contains(u, 'o'), x, 0))", np.sum(np.where(np.strings.find(U, "o") >= 0, x, 0))),
        ]
        for text, want in cases:
            with self.subTest(text=text):
                got = self.value_of(text)
                self.assertEqual(got.dtype, np.asarray(want).dtype)
                np.testing.assert_array_equal(got, want)

    def test_big_endian_u_and_save_round_trip(self):
        np.save(self.path("ub.npy"), self.U.astype(">U6"))
        r = run(["--load", "u=" + self.path("ub.npy"), "-e", "save(u, 'back.npy'); u == 'oslo'"], cwd=self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("[ True, False, False, False, False]", r.stdout)
        back = np.load(self.path("back.npy"))
        self.assertEqual(back.dtype, np.dtype("<U6"))
        np.testing.assert_array_equal(back, self.U)

    def test_statements_split_where_python_would(self):
        # An escaped quote, a ';' and a '#' inside literals, a raw string, a triple-quoted one over
        # two lines, adjacent literals joined: each statement's str_len is Python's len.
        script = ("a = str_len('x;y\\'z')  # 'not a string'\n"
                  "b = str_len(r'\\d#')\n"
                  'c = str_len("""one\ntwo""")\n'
                  "d = str_len('ab' \"cd\"); a; b; c; d")
        r = run(["-e", script])
        self.assertEqual(r.returncode, 0, r.stderr)
        want = [len("x;y'z"), len(r"\d#"), len("one\ntwo"), len("abcd")]
        self.assertEqual(r.stdout.splitlines(), ["array(%d, dtype=int64)  # shape ()" % n for n in want])
        r = run(["-e", "x = '''open\n1"])
        self.assertEqual(r.returncode, 1)
        self.assertIn("this triple-quoted string is not closed", r.stderr)

    def test_refusals_name_what_to_do(self):
        for text, words in [("s + s", "operator '+' is not supported for strings"),
                            ("s == 'oslo'", "does not mix bytes and str"),
                            ("r = u", "'r' would hold strings"),
                            ("u == 1", "takes strings on both sides")]:
            with self.subTest(text=text):
                r = run(self.loads + ["-e", text])
                self.assertEqual(r.returncode, 1)
                self.assertIn(words, r.stderr)
                self.assertIn("^", r.stderr)
        with open(self.path("s0.npy"), "wb") as f:
            header = "{'descr': '|S0', 'fortran_order': False, 'shape': (3,), }"
            header += " " * (64 - 10 - len(header) - 1) + "\n"
            f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
        r = run(["--load", "z=" + self.path("s0.npy"), "-e", "z == b''"])
        self.assertEqual(r.returncode, 1)
        self.assertIn("width 0", r.stderr)


class Saving(Base):
    def test_nothing_is_saved_when_a_statement_fails(self):
        out = self.path("x.npy")
        r = run(["-e", "x = arange(3)", "-e", "y = x + nope", "--save", "x=" + out])
        self.assertEqual(r.returncode, 1)
        self.assertFalse(os.path.exists(out))

    def test_nothing_is_saved_when_a_save_name_is_unbound(self):
        a, b = self.path("a.npy"), self.path("b.npy")
        r = run(["-e", "x = arange(3)", "--save", "x=" + a, "--save", "nope=" + b])
        self.assertEqual(r.returncode, 1)
        self.assertIn("nope", r.stderr)
        self.assertFalse(os.path.exists(a) or os.path.exists(b))

    def test_failed_save_leaves_no_partial_file(self):
        out = os.path.join(self.dir, "no_such_dir", "x.npy")
        r = run(["-e", "x = arange(3)", "--save", "x=" + out])
        self.assertEqual(r.returncode, 1)
        self.assertEqual(os.listdir(self.dir), [])

    def test_save_replaces_file_and_leaves_no_temporary(self):
        out = self.path("x.npy")
        np.save(out, np.zeros(1))
        r = run(["-e", "x = arange(3)", "--save", "x=" + out])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(os.listdir(self.dir), ["x.npy"])
        self.assertSameArray(np.load(out), np.arange(3))

    def test_scalar_result_is_saved_as_zero_dimensional(self):
        out = self.path("s.npy")
        r = run(["-e", "s = sum(arange(4))", "--save", "s=" + out])
        self.assertEqual(r.returncode, 0, r.stderr)
        got = np.load(out)
        self.assertEqual(got.shape, ())
        self.assertEqual(got, 6)


# A sine and a cosine of each of 8 * 10^10 broadcast elements of two small arrays: minutes on 2
# cores, half a minute on 16, unless stopped (a plain sum of 10^10 ended within the tests' 1.8 s
# on a 16-core machine; rows of 10^6 elements, one unit each, took 2 s to stop under ASan). Long
# enough that the 10 s allowed for a stop tell a stop from a run to the end on any machine.
ENDLESS = ["-e", "a = zeros(80000, 1)", "-e", "b = zeros(1000000)", "-e", "s = sum(sin(a + b) * cos(a - b))"]
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class LongWork(Base):
    """Ctrl-C, progress, and the options for long work (issue 23)."""

    def start(self, args):
        e = dict(os.environ, JITEXPR_BACKEND="cpu", JITEXPR_DISK_CACHE="0")
        return subprocess.Popen([JITEXPR] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=e, cwd=self.dir)

    def start_past_its_handler(self, args):
        """Starts the CLI with `args` and returns once its Ctrl-C handler is in place. Before that
        a SIGINT ends it as it ends any program (and a loaded machine under a sanitizer can take
        longer to get there than any fixed sleep), so its first step is a --load from a FIFO
        that this test writes: the CLI opens it only after installing the handler, and the
        write end opens only once the CLI has it open."""
        fifo = self.path("go.fifo")
        os.mkfifo(fifo)
        p = self.start(["--load", "go=" + fifo] + args)
        fd = None
        deadline = time.monotonic() + 120  # only for a CLI stuck before its loads
        while fd is None:
            self.assertLess(time.monotonic(), deadline, "the CLI never opened the FIFO")
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO until the CLI reads
            except OSError as e:
                if e.errno != errno.ENXIO:
                    raise
                if p.poll() is not None:
                    self.fail("the CLI ended before it opened the FIFO: " + p.stderr.read())
                time.sleep(0.01)
        data = io.BytesIO()
        np.save(data, np.zeros(1))
        with os.fdopen(fd, "wb") as f:
            f.write(data.getvalue())
        return p

    def interrupt_after(self, p, seconds):
        time.sleep(seconds)  # the time in which a progress line would show
        p.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        out, err = p.communicate(timeout=60)
        return out, err, time.monotonic() - t0

    def test_sigint_exits_130_at_the_next_safe_point_and_saves_nothing(self):
        p = self.start(["--progress", "-e", "k = arange(3)"] + ENDLESS + ["--save", "k=k.npy", "--save", "s=s.npy"])
        # --progress prints whole lines when stderr is a pipe (the constructors' "creating:" lines
        # first, on a slow machine); "running:" says the reduction runs.
        line = ""
        while "running:" not in line:
            line = p.stderr.readline()
            self.assertTrue(line, "no progress line said the statement runs")
        p.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        out, err = p.communicate(timeout=60)
        # The stop comes within milliseconds at the next safe point; 10 s is for a loaded machine
        # under a sanitizer, and still far less than ENDLESS takes unless stopped.
        self.assertLess(time.monotonic() - t0, 10.0)
        self.assertEqual(p.returncode, 130, err)
        self.assertIn("interrupted", err)
        self.assertIn("nothing saved", err)
        self.assertEqual(os.listdir(self.dir), [])

    def test_no_progress_line_in_a_pipe_without_progress(self):
        out, err, _ = self.interrupt_after(self.start_past_its_handler(ENDLESS), 1.8)
        self.assertEqual(err.strip(), "jitexpr: interrupted")

    def test_quiet_silences_progress(self):
        out, err, _ = self.interrupt_after(self.start_past_its_handler(["--quiet", "--progress"] + ENDLESS), 1.8)
        self.assertNotIn("running:", err)

    def test_threads_option_runs_and_bad_counts_are_usage_errors(self):
        r = run(["--threads", "1", "-e", "sum(arange(100000))"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("4999950000", r.stdout)
        for bad in ["abc", "-1", "", "2x"]:
            r = run(["--threads=" + bad, "-e", "1"])
            self.assertEqual(r.returncode, 2, bad)
            self.assertIn("--threads", r.stderr)

    def test_time_reports_each_statement_and_no_module_cache_on_the_cpu(self):
        r = run(["--time", "-e", "x = arange(3)\ny = x * 2"], env={"JITEXPR_BACKEND": "cpu"})
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [l for l in r.stderr.splitlines() if l.startswith("jitexpr: line ")]
        self.assertEqual(len(lines), 2, r.stderr)
        self.assertIn("line 1: made on the host", lines[0])
        self.assertIn("line 2: parse", lines[1])
        self.assertIn("run", lines[1])
        self.assertNotIn("module cache", r.stderr)

    def test_help_lists_every_environment_variable_the_sources_read(self):
        names = set()
        for folder in ("api", "backend", "tools"):
            for root, _, files in os.walk(os.path.join(SOURCE_DIR, folder)):
                for f in files:
                    if f.endswith((".cpp", ".hpp", ".h")):
                        with open(os.path.join(root, f), encoding="utf-8") as fh:
                            names.update(re.findall(r'(?:getenv|env_or|env)\("(JITEXPR_[A-Z_]+)"', fh.read()))
        self.assertGreaterEqual(len(names), 8, names)
        r = run(["--help"])
        for n in sorted(names):
            self.assertIn(n, r.stdout, n)

    def test_version_names_the_cuda_driver_and_toolkit(self):
        r = run(["--version"])
        self.assertEqual(r.returncode, 0)
        self.assertIn("CUDA driver: ", r.stdout)
        self.assertIn("CUDA toolkit (NVRTC): ", r.stdout)
class Indexing(Base):
    """Slicing and simple indexing through --load, -e and --save, against NumPy 2."""

    def value_of(self, args, name="r"):
        out = self.path("r.npy")
        r = run(args + ["--save", "%s=%s" % (name, out)])
        self.assertEqual(r.returncode, 0, r.stderr)
        return np.load(out)

    def test_slices_of_a_loaded_array_are_numpys(self):
        m = sample("float32", (5, 6), seed=4)
        np.save(self.path("m.npy"), m)
        for text, want in [("m[1:] - m[:-1]", m[1:] - m[:-1]), ("m[::2, ::-1]", m[::2, ::-1]), ("m[:, 0]", m[:, 0]),
                           ("m[-1]", m[-1]), ("m[None, 1]", m[None, 1]), ("m[..., 2]", m[..., 2]),
                           ("m[10:]", m[10:]), ("sum(m[1:] * m[:-1])", np.sum(m[1:] * m[:-1]))]:
            with self.subTest(text=text):
                got = self.value_of(["--load", "m=" + self.path("m.npy"), "-e", "r = " + text])
                if text.startswith("sum"):
                    np.testing.assert_allclose(got, want, rtol=1e-5)
                else:
                    self.assertSameArray(got, want)

    def test_a_fortran_order_file_is_indexed_through_its_strides(self):
        m = np.asfortranarray(sample("int32", (4, 5), seed=5))
        np.save(self.path("m.npy"), m)
        self.assertSameArray(self.value_of(["--load", "m=" + self.path("m.npy"), "-e", "r = m[1:, ::-2]"]), m[1:, ::-2])

    def test_a_boolean_mask_selection_is_saved_with_the_datas_length(self):
        a = sample("float64", (50,), seed=6)
        b = sample("int32", (50,), seed=7)
        np.save(self.path("a.npy"), a)
        np.save(self.path("b.npy"), b)
        args = ["--load", "a=" + self.path("a.npy"), "--load", "b=" + self.path("b.npy")]
        self.assertSameArray(self.value_of(args + ["-e", "r = b[(a > 0) & (b < 0)]"]), b[(a > 0) & (b < 0)])
        self.assertSameArray(self.value_of(args + ["-e", "r = a[a > 1000]"]), a[a > 1000])
        got = self.value_of(args + ["-e", "r = mean(a[b > 0])"])
        np.testing.assert_allclose(got, np.mean(a[b > 0]), rtol=1e-12)

    def test_logical_functions_take_an_out_of_range_int_as_numpy_does(self):
        x = np.array([1, -2, 0, 5], np.int8)
        np.save(self.path("x.npy"), x)
        args = ["--load", "x=" + self.path("x.npy")]
        self.assertSameArray(self.value_of(args + ["-e", "r = logical_and(x, 1000)"]), np.logical_and(x, 1000))
        self.assertSameArray(self.value_of(args + ["-e", "r = logical_xor(1000, x)"]), np.logical_xor(1000, x))
        r = run(args + ["-e", "add(x, 1000)"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("value error: integer 1000 is out of bounds for int8", r.stderr)
        self.assertIn("line 1: add(x, 1000)\n               ^^^^", r.stderr)
        r = run(args + ["-e", "logical_or(x, 18446744073709551615)"])  # NumPy: OverflowError (a C long)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("value error: integer 18446744073709551615 is out of bounds for int64", r.stderr)

    def test_a_selection_of_empty_rows_keeps_numpys_row_count(self):
        b = np.zeros((5, 0), np.float32)
        a = sample("float64", (5,), seed=8)
        a[0] = 1.0
        np.save(self.path("a.npy"), a)
        np.save(self.path("b.npy"), b)
        args = ["--load", "a=" + self.path("a.npy"), "--load", "b=" + self.path("b.npy")]
        got = self.value_of(args + ["-e", "r = b[a > 0]"])
        self.assertEqual((got.dtype, got.shape), (b.dtype, b[a > 0].shape))

    def test_argmin_argmax_and_average_of_a_selection_are_numpys(self):
        a = sample("float64", (40,), seed=9)
        w = np.abs(sample("float64", (40,), seed=10)) + 1
        np.save(self.path("a.npy"), a)
        np.save(self.path("w.npy"), w)
        args = ["--load", "a=" + self.path("a.npy"), "--load", "w=" + self.path("w.npy")]
        self.assertSameArray(self.value_of(args + ["-e", "r = argmin(a[a > 0])"]), np.argmin(a[a > 0]))
        self.assertSameArray(self.value_of(args + ["-e", "r = argmax(a[w > 1.5])"]), np.argmax(a[w > 1.5]))
        np.testing.assert_allclose(self.value_of(args + ["-e", "r = average(a[a > 0], weights=w[a > 0])"]),
                                   np.average(a[a > 0], weights=w[a > 0]), rtol=1e-12)

    def test_a_prefix_of_a_scan_is_the_scan_of_the_prefix_and_other_indices_have_a_caret(self):
        a = sample("int32", (9,), seed=11)
        np.save(self.path("a.npy"), a)
        args = ["--load", "a=" + self.path("a.npy")]
        self.assertSameArray(self.value_of(args + ["-e", "r = cumsum(a)[:4] * 2"]), np.cumsum(a)[:4] * 2)
        r = run(args + ["-e", "cumsum(a)[-1]"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("value error: a scan's result can be indexed along its scanned axis only by a prefix slice",
                      r.stderr)
        self.assertIn("line 1: cumsum(a)[-1]\n        ^^^^^^^^^^^^^", r.stderr)

    def test_an_index_past_the_end_is_an_index_error_with_a_caret(self):
        r = run(["-e", "a = arange(4)", "-e", "a[4]"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("index error: index 4 is out of bounds for axis 0 with size 4", r.stderr)
        self.assertIn("line 1: a[4]\n          ^", r.stderr)


class SilentWrongAnswers(Base):
    """Issue 16's wrong answers through the CLI, each against what NumPy 2 gives."""

    def value_of(self, args, name="r"):
        out = self.path("r.npy")
        r = run(args + ["--save", "%s=%s" % (name, out)])
        self.assertEqual(r.returncode, 0, r.stderr)
        return np.load(out)

    def test_a_loaded_variable_named_like_a_constant_shadows_it(self):
        x = np.arange(3.0)
        np.save(self.path("x.npy"), x)
        for name in ["pi", "e", "inf", "nan"]:
            with self.subTest(name=name):
                got = self.value_of(["--load", name + "=" + self.path("x.npy"), "-e", "r = %s * 2" % name])
                self.assertSameArray(got, x * 2)

    def test_an_assigned_variable_named_like_a_constant_shadows_it(self):
        for name in ["pi", "e", "inf", "nan"]:
            with self.subTest(name=name):
                got = self.value_of(["-e", "%s = arange(3.0)" % name, "-e", "r = %s * 2" % name])
                self.assertSameArray(got, np.arange(3.0) * 2)
                r = run(["-e", "%s = arange(3)" % name, "-e", name])
                self.assertEqual(r.stdout, "array([0, 1, 2], dtype=int64)  # shape (3,)\n")

    def test_an_unbound_constant_is_the_constant(self):
        r = run(["-e", "2*pi"])
        self.assertEqual(r.stdout, "array(6.283185307179586, dtype=float64)  # shape ()\n")

    def test_literal_arithmetic_is_exact(self):
        self.assertSameArray(self.value_of(["-e", "r = 7 // -2"]), np.array(7 // -2))
        self.assertSameArray(self.value_of(["-e", "r = 2**-1"]), np.array(2**-1))
        self.assertSameArray(self.value_of(["-e", "r = 2**64 // 2**60"]), np.array(16))
        self.assertSameArray(self.value_of(["-e", "r = arange(2**3)"]), np.arange(8))

    def test_imaginary_literals_fold_as_python_complex(self):
        self.assertSameArray(self.value_of(["-e", "r = 1j * 1j"]), np.array(1j * 1j))
        self.assertSameArray(self.value_of(["-e", "r = (1 + 2.5e-3j) * 3J"]), np.array((1 + 2.5e-3j) * 3j))
        self.assertSameArray(self.value_of(["-e", "r = float32(arange(3)) + 1j"]),
                             np.arange(3, dtype=np.float32) + 1j)

    def test_complex_builds_from_real_and_imaginary_parts(self):
        want = np.array([0 + 2j, 1 + 1j, 2 + 0j], np.complex64)
        self.assertSameArray(self.value_of(["-e", "a = float32(arange(3))\nr = complex(a, 2 - a)"]), want)

    def test_malformed_imaginary_literal_points_at_it(self):
        r = run(["-e", "a = 2jx"])
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, "jitexpr: -e: syntax error: invalid number literal '2jx'\nline 1: a = 2jx\n"
                                   "            ^^^\n")

    def test_literal_past_every_integer_dtype_is_an_error(self):
        r = run(["-e", "2**64"])
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, "jitexpr: -e: value error: integer 18446744073709551616 fits no integer dtype "
                                   "(uint64 holds up to 18446744073709551615)\nline 1: 2**64\n        ^^^^^\n")

    def test_power_out_of_bounds_for_uint8_is_the_same_error_as_the_literal(self):
        np.save(self.path("u.npy"), np.array([1, 2, 3], np.uint8))
        for text, lit in [("u + 2**8", "2**8"), ("u + 256", "256")]:
            with self.subTest(text=text):
                r = run(["--load", "u=" + self.path("u.npy"), "-e", text])
                self.assertEqual(r.returncode, 1)
                self.assertEqual(r.stderr, "jitexpr: -e: value error: integer 256 is out of bounds for uint8\n"
                                           "line 1: %s\n%s%s\n" % (text, " " * len("line 1: u + "), "^" * len(lit)))

    def test_where_of_literals_is_typed_as_numpy(self):
        u = np.array([1, 2, 3], np.uint64)
        i = np.array([0, 1, 2], np.int8)
        f32 = np.array([1, -1], np.float32)
        np.save(self.path("u.npy"), u)
        np.save(self.path("i.npy"), i)
        np.save(self.path("f.npy"), f32)
        self.assertSameArray(self.value_of(["--load", "u=" + self.path("u.npy"), "-e", "r = u * where(u > 1, 2, -1)"]),
                             u * np.where(u > 1, 2, -1))
        self.assertSameArray(self.value_of(["--load", "u=" + self.path("u.npy"), "-e", "r = u * (u > 1 ? 2 : -1)"]),
                             u * np.where(u > 1, 2, -1))
        self.assertSameArray(self.value_of(["--load", "i=" + self.path("i.npy"), "-e", "r = i + where(i > 0, 1000, 1)"]),
                             i + np.where(i > 0, 1000, 1))
        self.assertSameArray(self.value_of(["--load", "f=" + self.path("f.npy"), "-e", "r = f - where(f > 0, 0.0, 10)"]),
                             f32 - np.where(f32 > 0, 0.0, 10))

    def test_uint64_against_int64_compares_exactly(self):
        a = np.array([2**63 + 8, 5, 2**64 - 1], np.uint64)
        b = np.array([2**63 - 1, -5, -1], np.int64)
        np.save(self.path("a.npy"), a)
        np.save(self.path("b.npy"), b)
        load = ["--load", "a=" + self.path("a.npy"), "--load", "b=" + self.path("b.npy")]
        for op in ["==", "!=", "<", "<=", ">", ">="]:
            with self.subTest(op=op):
                self.assertSameArray(self.value_of(load + ["-e", "r = a %s b" % op]), eval("a %s b" % op))
        self.assertSameArray(self.value_of(load + ["-e", "r = maximum(a, b)"]), np.maximum(a, b))

    def test_a_script_starting_with_a_byte_order_mark_runs(self):
        with open(self.path("bom.jx"), "wb") as f:
            f.write(b"\xef\xbb\xbfr = arange(3) * 2\nr\n")
        r = run([self.path("bom.jx")])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "array([0, 2, 4], dtype=int64)  # shape (3,)\n")

    def test_errors_after_a_byte_order_mark_point_at_their_line_and_column(self):
        with open(self.path("bom.jx"), "wb") as f:
            f.write(b"\xef\xbb\xbfa = arange(3)\nb = a + sine(a)\n")
        r = run([self.path("bom.jx")])
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, "jitexpr: %s: name error: unknown function 'sine' (did you mean 'sin'?)\n"
                                   "line 2: b = a + sine(a)\n                ^^^^\n" % self.path("bom.jx"))
        with open(self.path("bom1.jx"), "wb") as f:
            f.write(b"\xef\xbb\xbfa = 1 +* 2\n")
        r = run([self.path("bom1.jx")])
        self.assertEqual(r.stderr, "jitexpr: %s: syntax error: expected an operand after '+'\n"
                                   "line 1: a = 1 +* 2\n               ^\n" % self.path("bom1.jx"))

    def test_a_byte_order_mark_on_stdin_and_in_e_is_skipped(self):
        r = run(["-"], stdin="\ufeffarange(2)\n")
        self.assertEqual(r.stdout, "array([0, 1], dtype=int64)  # shape (2,)\n", r.stderr)
        r = run(["-e", "\ufeffq + 1"])
        self.assertEqual(r.stderr, "jitexpr: -e: name error: unknown name 'q'\nline 1: q + 1\n        ^\n")


class Explain(Base):
    """jitexpr explain: the program, its stages and kernels, without running it."""

    def test_explain_binds_the_loads_and_statements_then_shows_the_program(self):
        np.save(self.path("a.npy"), np.zeros((20, 30), dtype=np.float32))
        r = run(["explain", "--backend", "cpu", "--bandwidth", "10", "--load", "a=" + self.path("a.npy"), "-e", "k = 3",
                 "b = a * k; sum(b, axis=0)"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("  input  a            float32    (20, 30)         host\n", r.stdout)
        self.assertIn("  input  k            int64      ()               host\n", r.stdout)  # the CLI's 0-d array
        self.assertIn("-> b float64 (20, 30), a new array", r.stdout)
        self.assertIn("reduction sum over (20, 30) along axis 0", r.stdout)
        self.assertIn("at 10.0 GB/s (given)", r.stdout)

    def test_explain_runs_nothing_it_explains(self):
        np.save(self.path("a.npy"), np.arange(3.0))
        r = run(["explain", "--backend", "cpu", "--bandwidth", "10", "--load", "a=" + self.path("a.npy"), "a = a * 2"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("in place into the existing array", r.stdout)
        self.assertEqual(np.load(self.path("a.npy")).tolist(), [0.0, 1.0, 2.0])

    def test_a_constructor_in_the_program_is_an_error_with_a_caret(self):
        r = run(["explain", "--backend", "cpu", "a = arange(3) * 2"])
        self.assertEqual(r.returncode, 1)
        self.assertIn("arange(...) is made by the command line, not compiled", r.stderr)
        self.assertIn("a = arange(3) * 2\n", r.stderr)
        self.assertIn("    ^^^^^^", r.stderr)

    def test_an_unbound_name_is_the_checkers_name_error(self):
        r = run(["explain", "--backend", "cpu", "c = a * 2"])
        self.assertEqual(r.returncode, 1)
        self.assertIn("explain: ", r.stderr)
        self.assertIn("'a'", r.stderr)

    def test_explain_needs_a_program_and_takes_no_save(self):
        self.assertEqual(run(["explain", "--backend", "cpu"]).returncode, 2)
        r = run(["explain", "--backend", "cpu", "--save", "c=" + self.path("c.npy"), "-e", "a = arange(3.0)", "c = a"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("--save is not for explain", r.stderr)
        self.assertFalse(os.path.exists(self.path("c.npy")))

    def test_a_bandwidth_that_is_not_a_positive_number_is_usage(self):
        for v in ["0", "-3", "fast", "inf"]:
            with self.subTest(v=v):
                r = run(["explain", "--bandwidth", v, "1 + 2"])
                self.assertEqual(r.returncode, 2)
                self.assertIn("--bandwidth takes a positive number of GB/s", r.stderr)


class TwoResults(Base):
    """Issue 16: a function of two results assigned to two names, through -e, a script and --save."""

    def test_frexp_assigns_both_names_and_save_writes_each(self):
        x = np.array([0.0, 3.0, -0.75, 1024.0, np.inf])
        np.save(self.path("x.npy"), x)
        r = run(["--load", "x=" + self.path("x.npy"), "-e", "m, e = frexp(x)",
                 "--save", "m=" + self.path("m.npy"), "--save", "e=" + self.path("e.npy")])
        self.assertEqual(r.returncode, 0, r.stderr)
        want = np.frexp(x)
        self.assertSameArray(np.load(self.path("m.npy")), want[0])
        self.assertSameArray(np.load(self.path("e.npy")), want[1])

    def test_divmod_results_feed_the_next_statement(self):
        out = self.path("r.npy")
        r = run(["-e", "a = arange(-6, 6)", "-e", "q, r0 = divmod(a, 4)\nr = q * 4 + r0", "--save", "r=" + out])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertSameArray(np.load(out), np.arange(-6, 6))

    def test_a_function_of_two_results_in_an_expression_points_at_the_call(self):
        r = run(["-e", "y = modf(arange(3.0)) * 2"])
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, "jitexpr: -e: type error: modf() gives 2 values; assign them to 2 names, as in "
                                   "'a, b = modf(x)'\nline 1: y = modf(arange(3.0)) * 2\n"
                                   "            ^^^^^^^^^^^^^^^^^\n")

    def test_a_constructor_given_two_names_is_an_error(self):
        r = run(["-e", "a, b = arange(3)"])
        self.assertEqual(r.returncode, 1)
        self.assertIn("type error: 2 names are assigned one value", r.stderr)


UNITS = ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"]


class Dates(Base):
    """datetime64 and timedelta64 .npy files in and out, printed as NumPy prints them."""

    def sample_dates(self, kind, unit, n=7, seed=3):
        v = np.random.default_rng(seed).integers(-10**6, 10**6, n)
        v[1] = np.iinfo(np.int64).min  # NaT
        return v.view(f"{kind}8[{unit}]")

    def test_every_unit_round_trips_through_load_and_save(self):
        for kind in "Mm":
            for unit in UNITS:
                with self.subTest(dtype=f"{kind}8[{unit}]"):
                    a = self.sample_dates(kind, unit)
                    got = self.round_trip(a)
                    self.assertEqual(got.dtype, a.dtype)
                    self.assertEqual(got.view("i8").tolist(), a.view("i8").tolist())

    def test_big_endian_dates_load(self):
        a = np.array(["2024-03-01T12:30", "NaT"], dtype=">M8[m]")
        got = self.round_trip(a)
        self.assertEqual(got.dtype, np.dtype("<M8[m]"))
        self.assertEqual(got.astype("i8").tolist(), a.astype("<M8[m]").view("i8").tolist())

    def test_dates_print_as_numpy_prints_them(self):
        for a in (np.array(["2024-03-01T12:30", "NaT", "1969-12-31T23:59:59"], "M8[s]"),
                  np.array(["-0001-03-01", "10000-01-01"], "M8[D]"), np.array([0, -1], "M8[ns]"),
                  np.array([5, -300, "NaT"], "m8[ms]"), np.array(["2024-07"], "M8[M]")):
            with self.subTest(dtype=a.dtype):
                np.save(self.path("d.npy"), a)
                r = run(["--load", "d=" + self.path("d.npy"), "-e", "d"])
                self.assertEqual(r.returncode, 0, r.stderr)
                body = np.array2string(a, separator=", ", prefix="array(")
                self.assertEqual(r.stdout, f"array({body}, dtype='{a.dtype.name}')  # shape {a.shape}\n")

    def test_a_zero_dimensional_date_prints_quoted(self):
        r = run(["-e", "datetime64('2024-03-01') + timedelta64(36, 'h')"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "array('2024-03-02T12', dtype='datetime64[h]')  # shape ()\n")

    def test_date_arithmetic_saves_what_numpy_computes(self):
        d = np.array(["2024-03-01T12:30", "NaT", "1999-12-31T23:59"], "M8[m]")
        np.save(self.path("d.npy"), d)
        r = run(["--load", "d=" + self.path("d.npy"), "-e", "t = d - datetime64('2000-01-01'); m = max(t)",
                 "--save", "t=" + self.path("t.npy"), "--save", "m=" + self.path("m.npy")])
        self.assertEqual(r.returncode, 0, r.stderr)
        want = d - np.datetime64("2000-01-01")
        got = np.load(self.path("t.npy"))
        self.assertEqual(got.dtype, want.dtype)
        self.assertEqual(got.view("i8").tolist(), want.view("i8").tolist())
        self.assertTrue(np.isnat(np.load(self.path("m.npy"))))  # NaT propagates, as np.max

    def test_a_bad_date_literal_has_a_caret(self):
        r = run(["-e", "datetime64('2024-02-30')"])
        self.assertEqual(r.returncode, 1)
        self.assertIn("day 30 is out of range", r.stderr)
        self.assertIn("line 1: datetime64('2024-02-30')\n" + " " * len("line 1: datetime64(") + "^" * 12, r.stderr)

    def test_a_date_file_of_no_unit_is_refused(self):
        np.save(self.path("g.npy"), np.array(["NaT"], dtype="M8"))
        r = run(["--load", "g=" + self.path("g.npy"), "-e", "g"])
        self.assertEqual(r.returncode, 1)
        self.assertIn("unsupported dtype descr '<M8'", r.stderr)


class DocsTellTheTruth(Base):
    """The command-line samples in README.md and docs/*.md print what the docs show."""

    def samples(self):
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        found = []
        for doc in ["README.md"] + [os.path.join("docs", d) for d in sorted(os.listdir(os.path.join(root, "docs")))]:
            if not doc.endswith(".md"):
                continue
            with open(os.path.join(root, doc)) as f:
                lines = f.read().split("\n")
            k = 0
            while k < len(lines):
                if lines[k].startswith("$ jitexpr "):
                    cmd = lines[k][2:]
                    k += 1
                    while cmd.count("'") % 2:  # a quoted argument over several lines
                        cmd += "\n" + lines[k]
                        k += 1
                    out = []
                    while k < len(lines) and not lines[k].startswith("```"):
                        out.append(lines[k])
                        k += 1
                    found.append((doc, cmd, "\n".join(out) + "\n"))
                k += 1
        return found

    def test_every_sample_prints_what_the_docs_show(self):
        import shlex
        samples = self.samples()
        self.assertGreaterEqual(len(samples), 2)
        np.save(self.path("a.npy"), np.arange(3, dtype=np.float32))
        for doc, cmd, want in samples:
            with self.subTest(doc=doc, cmd=cmd):
                r = run(shlex.split(cmd)[1:], cwd=self.dir)
                self.assertEqual(r.stdout + r.stderr, want)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    JITEXPR = os.path.abspath(sys.argv.pop(1))
    unittest.main()
