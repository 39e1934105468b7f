#!/usr/bin/env python3
"""jitexpr from Python through the C API (libjitexpr_c.so) and the ctypes binding
python/jitexpr_ctypes.py, compared with NumPy (cpu) or PyTorch on CUDA (gpu).

usage: test_python_ctypes.py {cpu|gpu} PATH/TO/libjitexpr_c.so [unittest options]
Exits 77 (CTest: skipped), saying why, when NumPy (cpu), PyTorch or a CUDA device (gpu) is missing.
"""
import ctypes
import gc
import os
import subprocess
import sys
import unittest

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import jitexpr_ctypes as jx  # noqa: E402

LIBRARY = None
os.environ.setdefault("JITEXPR_DISK_CACHE", "0")


def skip(why):
    print(f"skipped: {why}")
    sys.exit(SKIP)


class DeleterSpy:
    """Wraps the deleter of a result's DLManagedTensor to count the calls (then chains to it)."""

    def __init__(self, result):
        managed = jx.DLManagedTensor.from_address(result._address)
        original = jx._Deleter(managed.deleter)
        self.calls = 0

        def spy(p):
            self.calls += 1
            original(p)

        self._callback = jx._Deleter(spy)  # kept alive as long as the spy
        managed.deleter = ctypes.cast(self._callback, ctypes.c_void_p).value


class RecordingProducer:
    """Reports `device` from __dlpack_device__ and records the arguments of __dlpack__ (the data
    is a NumPy array's, in host memory)."""

    def __init__(self, array, device):
        self.array, self.device, self.calls = array, device, []

    def __dlpack__(self, **kwargs):
        self.calls.append(dict(kwargs))
        kwargs.pop("stream", None)
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.device


class LegacyProducer:
    """A producer from before DLPack 1.0: __dlpack__ takes no max_version, gives "dltensor"."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


# --- CPU: NumPy arrays -----------------------------------------------------------------------


class CpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rt = jx.Runtime("cpu", library=LIBRARY)
        cls.rng = np.random.default_rng(7)

    @classmethod
    def tearDownClass(cls):
        cls.rt.close()

    def eval(self, text, *args):
        return np.from_dlpack(self.rt.eval(text, *args))

    def test_float32_matches_numpy(self):
        a = self.rng.standard_normal((3, 5)).astype(np.float32)
        b = self.rng.standard_normal(5).astype(np.float32)
        r = self.eval("a * 2 + b", a, b)
        self.assertEqual(r.dtype, np.float32)
        np.testing.assert_allclose(r, a * 2 + b, rtol=1e-6)

    def test_float64_matches_numpy(self):
        a = self.rng.standard_normal(257)
        b = self.rng.standard_normal(257)
        r = self.eval("sin(a) * b - sqrt(abs(a))", a, b)
        self.assertEqual(r.dtype, np.float64)
        np.testing.assert_allclose(r, np.sin(a) * b - np.sqrt(np.abs(a)), rtol=1e-12, atol=1e-15)

    def test_int32_matches_numpy(self):
        a = self.rng.integers(-1000, 1000, 100, dtype=np.int32)
        b = self.rng.integers(1, 50, 100, dtype=np.int32)
        r = self.eval("a * 3 - a // b + a % b", a, b)
        self.assertEqual(r.dtype, np.int32)
        np.testing.assert_array_equal(r, a * 3 - a // b + a % b)

    def test_bool_matches_numpy(self):
        a = self.rng.integers(0, 2, 64).astype(bool)
        b = self.rng.integers(0, 2, 64).astype(bool)
        x = self.rng.standard_normal(64)
        r = self.eval("(a & ~b) | (x > 0)", a, b, x)
        self.assertEqual(r.dtype, np.bool_)
        np.testing.assert_array_equal(r, (a & ~b) | (x > 0))

    def test_float16_matches_numpy(self):
        a = self.rng.standard_normal(100).astype(np.float16)
        b = self.rng.standard_normal(100).astype(np.float16)
        r = self.eval("a * b + a", a, b)
        self.assertEqual(r.dtype, np.float16)
        # One float16 rounding step apart at most (NumPy rounds after each operation).
        np.testing.assert_allclose(r.astype(np.float64), (a * b + a).astype(np.float64), rtol=2e-3, atol=1e-2)

    def test_python_scalars_are_weakly_typed(self):
        a = np.arange(4, dtype=np.float32)
        r = self.eval("a * x + k", a, 2.5, 1)
        self.assertEqual(r.dtype, np.float32)
        np.testing.assert_array_equal(r, a * np.float32(2.5) + 1)

    def test_numpy_scalars_are_typed_as_in_numpy(self):
        a = np.arange(4, dtype=np.float32)
        r = self.eval("a * x", a, np.float64(2.5))
        self.assertEqual(r.dtype, (a * np.float64(2.5)).dtype)

    def test_non_contiguous_views(self):
        a = self.rng.standard_normal((4, 6))
        r = self.eval("a * 2 + b", a.T, a[::2, ::-1].T[:, :1])
        np.testing.assert_allclose(r, a.T * 2 + a[::2, ::-1].T[:, :1], rtol=1e-12)

    def test_results_are_not_copied(self):
        t = self.rt.eval("a + 1", np.zeros(8))
        address = t.data_ptr
        self.assertEqual(np.from_dlpack(t).ctypes.data, address)

    def test_legacy_producer_capsule(self):
        a = np.arange(5, dtype=np.int32)
        np.testing.assert_array_equal(self.eval("a * a", LegacyProducer(a)), a * a)

    def test_cuda_producer_is_asked_for_the_legacy_default_stream(self):
        p = RecordingProducer(np.ones(3), (jx.kDLCUDA, 0))
        self.rt.eval("a + 1", p)
        self.assertEqual(p.calls, [{"stream": 1, "max_version": (1, 0)}])

    def test_host_producer_is_asked_for_no_stream(self):
        p = RecordingProducer(np.ones(3), (jx.kDLCPU, 0))
        self.rt.eval("a + 1", p)
        self.assertEqual(p.calls, [{"max_version": (1, 0)}])

    def test_syntax_error_raises_with_caret(self):
        with self.assertRaises(jx.JitexprError) as cm:
            self.rt.eval("c = a +* 2", np.zeros(3))
        e = cm.exception
        self.assertEqual((e.kind, e.status), ("parse", 1))
        lines = e.message.splitlines()
        self.assertIn("c = a +* 2", lines[-2])
        self.assertEqual(lines[-1].strip(), "^")
        self.assertEqual(lines[-1].index("^") - lines[-2].index("c = a"), len("c = a +"))

    def test_unknown_function_raises_name_error(self):
        with self.assertRaises(jx.JitexprError) as cm:
            self.rt.eval("a + sine(a)", np.ones(2))
        self.assertEqual(cm.exception.kind, "name")
        self.assertIn("sine", cm.exception.message)

    def test_compile_raises_syntax_errors(self):
        with self.assertRaises(jx.JitexprError) as cm:
            self.rt.compile("x +")
        self.assertEqual(cm.exception.kind, "parse")

    def test_wrong_argument_count_raises_argument_error(self):
        with self.assertRaises(jx.JitexprError) as cm:
            self.rt.eval("a + b", np.ones(2))
        self.assertEqual(cm.exception.kind, "argument")

    def test_shape_error_raises(self):
        with self.assertRaises(jx.JitexprError) as cm:
            self.rt.eval("a + b", np.zeros(3), np.zeros(4))
        self.assertEqual(cm.exception.kind, "shape")

    def test_unsupported_argument_raises_type_error(self):
        with self.assertRaises(TypeError):
            self.rt.eval("a + 1", "text")

    # ---- issue 16's wrong answers through the binding (NumPy 2 is the reference)

    def test_names_bind_by_name_not_by_order_of_appearance(self):
        a, b = np.array([1.0, 2.0]), np.array([10.0, 20.0])
        np.testing.assert_array_equal(np.from_dlpack(self.rt.eval("b*2 + a", a=a, b=b)), b * 2 + a)
        k = self.rt.compile("b*2 + a")
        np.testing.assert_array_equal(np.from_dlpack(k(a=a, b=b)), b * 2 + a)
        with self.assertRaises(TypeError):
            self.rt.eval("b*2 + a", a, b=b)

    def test_a_name_bound_by_name_shadows_the_constant(self):
        x = np.arange(3.0)
        for name in ["pi", "e", "inf", "nan"]:
            with self.subTest(name=name):
                r = np.from_dlpack(self.rt.eval(name + " * 2", **{name: x}))
                np.testing.assert_array_equal(r, x * 2)
                r = np.from_dlpack(self.rt.compile(name + " * 2 + y")(**{name: x, "y": 1.0}))
                np.testing.assert_array_equal(r, x * 2 + 1)

    def test_positional_binding_keeps_the_constant(self):
        r = np.from_dlpack(self.rt.eval("2*pi*r", np.array([1.0])))
        np.testing.assert_array_equal(r, 2 * np.pi * np.array([1.0]))
        self.assertEqual(self.rt.compile("e * x").params, ("x",))

    def test_literal_arithmetic_is_exact(self):
        u = np.array([1, 2, 3], np.uint8)
        with self.assertRaises(jx.JitexprError) as cm:
            self.rt.eval("u + 2**8", u)
        self.assertEqual(cm.exception.kind, "value")
        self.assertIn("integer 256 is out of bounds for uint8", cm.exception.message)
        self.assertEqual(int(np.from_dlpack(self.rt.eval("7 // -2"))), 7 // -2)
        self.assertEqual(float(np.from_dlpack(self.rt.eval("2**-1"))), 2**-1)
        with self.assertRaises(jx.JitexprError):
            self.rt.eval("2**64")

    def test_where_of_literals_is_typed_as_numpy(self):
        u = np.array([1, 2, 3], np.uint64)
        i = np.array([0, 1, 2], np.int8)
        for text, args, want in [("u * where(u > 1, 2, -1)", (u,), u * np.where(u > 1, 2, -1)),
                                 ("i + where(i > 0, 1000, 1)", (i,), i + np.where(i > 0, 1000, 1))]:
            with self.subTest(text=text):
                r = np.from_dlpack(self.rt.eval(text, *args))
                self.assertEqual(r.dtype, want.dtype)
                np.testing.assert_array_equal(r, want)

    def test_uint64_against_int64_compares_exactly(self):
        a = np.array([2**63 + 8, 5, 2**64 - 1], np.uint64)
        b = np.array([2**63 - 1, -5, -1], np.int64)
        for op in ["==", "!=", "<", "<=", ">", ">="]:
            with self.subTest(op=op):
                np.testing.assert_array_equal(np.from_dlpack(self.rt.eval("a %s b" % op, a, b)), eval("a %s b" % op))

    def test_a_byte_order_mark_is_skipped(self):
        self.assertEqual(int(np.from_dlpack(self.rt.eval("\ufeff2 + 1"))), 3)
        with self.assertRaises(jx.JitexprError) as cm:
            self.rt.eval("\ufeff1 +* 2")
        self.assertTrue(cm.exception.message.endswith("line 1: 1 +* 2\n           ^"), cm.exception.message)

    def test_complex_special_values_follow_numpy(self):
        z = np.array([complex(-np.inf, 1), complex(np.inf, 1), complex(-np.inf, np.nan)])
        with np.errstate(all="ignore"):
            for f in ["arccos", "arcsin", "exp", "sqrt", "log", "arctanh"]:
                with self.subTest(f=f):
                    np.testing.assert_array_equal(np.from_dlpack(self.rt.eval(f + "(z)", z)), getattr(np, f)(z))

    def test_kernel_parameters_and_calls(self):
        k = self.rt.compile("sqrt(x * x + y * y)")
        self.assertEqual(k.params, ("x", "y"))
        for n in (3, 10):
            x, y = self.rng.standard_normal(n), self.rng.standard_normal(n)
            np.testing.assert_allclose(k(x, y).numpy(), np.hypot(x, y), rtol=1e-12)

    def test_result_outlives_its_runtime(self):
        rt = jx.Runtime("cpu", library=LIBRARY)
        t = rt.eval("a * 3", np.arange(1000, dtype=np.float64))
        del rt
        gc.collect()
        np.testing.assert_array_equal(np.from_dlpack(t), np.arange(1000) * 3.0)

    def test_kernel_keeps_its_runtime_alive(self):
        k = jx.Runtime("cpu", library=LIBRARY).compile("x + 1")
        gc.collect()
        np.testing.assert_array_equal(k(np.ones(2)).numpy(), [2.0, 2.0])

    def test_inputs_are_released_after_each_call(self):
        # NumPy's DLPack export holds a reference to the array until the deleter runs.
        a = np.arange(10, dtype=np.float32)
        before = sys.getrefcount(a)
        for _ in range(20):
            self.rt.eval("a + 1", a)
            with self.assertRaises(jx.JitexprError):
                self.rt.eval("a +", a)
        self.assertEqual(sys.getrefcount(a), before)

    def test_consumed_result_is_deleted_once_by_its_consumer(self):
        t = self.rt.eval("a * 2", np.ones(4))
        spy = DeleterSpy(t)
        r = np.from_dlpack(t)
        del t
        gc.collect()
        self.assertEqual(spy.calls, 0)  # the NumPy array owns it now
        del r
        gc.collect()
        self.assertEqual(spy.calls, 1)

    def test_unconsumed_capsule_deletes_the_result(self):
        t = self.rt.eval("a * 2", np.ones(4))
        spy = DeleterSpy(t)
        capsule = t.__dlpack__()
        del t
        self.assertEqual(spy.calls, 0)
        del capsule
        gc.collect()
        self.assertEqual(spy.calls, 1)

    def test_unexported_result_is_deleted_with_its_object(self):
        t = self.rt.eval("a * 2", np.ones(4))
        spy = DeleterSpy(t)
        del t
        gc.collect()
        self.assertEqual(spy.calls, 1)

    def test_result_exports_once(self):
        t = self.rt.eval("a * 2", np.ones(4))
        np.from_dlpack(t)
        with self.assertRaises(BufferError):
            t.__dlpack__()

    def test_interpreter_exits_cleanly_with_live_results(self):
        # Results, an unconsumed capsule, a consumed array and a runtime still alive at exit:
        # their destructors run during shutdown, after the module's globals are gone.
        script = (
            "import sys, numpy as np\n"
            f"sys.path.insert(0, {os.path.join(HERE, '..', '..', 'python')!r})\n"
            "import jitexpr_ctypes as jx\n"
            f"rt = jx.Runtime('cpu', library={LIBRARY!r})\n"
            "t = rt.eval('a + 1', np.ones(3))\n"
            "cap = rt.eval('a + 2', np.ones(3)).__dlpack__()\n"
            "arr = np.from_dlpack(rt.eval('a + 3', np.ones(3)))\n"
            "k = rt.compile('x * 2')\n"
            "print('done')\n")
        p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout.strip()), (0, "done"), p.stderr)
        self.assertNotIn("Exception ignored", p.stderr)

    def test_library_from_environment(self):
        saved = os.environ.get("JITEXPR_C_LIBRARY")
        os.environ["JITEXPR_C_LIBRARY"] = LIBRARY
        try:
            self.assertEqual(jx.Runtime("cpu").backend, "cpu")
        finally:
            if saved is None:
                del os.environ["JITEXPR_C_LIBRARY"]
            else:
                os.environ["JITEXPR_C_LIBRARY"] = saved

    def test_missing_library_names_the_variable(self):
        with self.assertRaises(OSError) as cm:
            jx.load_library(os.path.join(HERE, "no-such-libjitexpr_c.so"))
        self.assertIn("JITEXPR_C_LIBRARY", str(cm.exception))


# --- GPU: PyTorch CUDA tensors ---------------------------------------------------------------


class GpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rt = jx.Runtime("cuda", library=LIBRARY)
        cls.gen = torch.Generator(device="cuda").manual_seed(11)

    @classmethod
    def tearDownClass(cls):
        cls.rt.close()

    def randn(self, *shape, dtype=None):
        return torch.randn(*shape, device="cuda", generator=self.gen).to(dtype or torch.float32)

    def eval(self, text, *args):
        t = self.rt.eval(text, *args)
        self.assertEqual(t.__dlpack_device__(), (jx.kDLCUDA, 0))
        r = torch.from_dlpack(t)
        self.assertEqual(r.device, torch.device("cuda", 0))
        self.assertEqual(r.data_ptr(), t.data_ptr)  # the same memory: no copy
        return r

    def test_float32_matches_torch(self):
        a, b = self.randn(1000, 33), self.randn(33)
        r = self.eval("a * 2 + b", a, b)
        self.assertEqual(r.dtype, torch.float32)
        torch.testing.assert_close(r, a * 2 + b)

    def test_float64_matches_torch(self):
        a, b = self.randn(4097, dtype=torch.float64), self.randn(4097, dtype=torch.float64)
        r = self.eval("sin(a) * b + exp(-abs(a))", a, b)
        self.assertEqual(r.dtype, torch.float64)
        torch.testing.assert_close(r, torch.sin(a) * b + torch.exp(-torch.abs(a)), rtol=1e-12, atol=1e-14)

    def test_float16_matches_torch(self):
        a, b = self.randn(2048, dtype=torch.float16), self.randn(2048, dtype=torch.float16)
        r = self.eval("a * b + a", a, b)
        self.assertEqual(r.dtype, torch.float16)
        torch.testing.assert_close(r, a * b + a, rtol=2e-3, atol=1e-2)

    def test_int32_matches_torch(self):
        a = torch.randint(-1000, 1000, (5000,), device="cuda", dtype=torch.int32, generator=self.gen)
        b = torch.randint(1, 50, (5000,), device="cuda", dtype=torch.int32, generator=self.gen)
        r = self.eval("a * 3 - a // b", a, b)
        self.assertEqual(r.dtype, torch.int32)
        torch.testing.assert_close(r, a * 3 - torch.div(a, b, rounding_mode="floor"))

    def test_non_contiguous_view(self):
        base = self.randn(64, 96)
        view = base.t()[:, ::2]  # transposed and strided
        self.assertFalse(view.is_contiguous())
        r = self.eval("v * v - 1", view)
        torch.testing.assert_close(r, view * view - 1)

    def test_input_written_on_a_side_stream_is_read_after_it(self):
        n = 1 << 24
        self.rt.eval("a + 1", torch.zeros(n, device="cuda"))  # prepared now: the next call is quick
        torch.cuda.synchronize()
        side = torch.cuda.Stream()  # PyTorch's streams do not synchronise with the legacy stream
        with torch.cuda.stream(side):
            a = torch.full((n,), 1.0, device="cuda")
            if hasattr(torch.cuda, "_sleep"):
                torch.cuda._sleep(100_000_000)  # keep the side stream busy for tens of ms
            for _ in range(20):
                a.mul_(2.0)
            # Still queued on the side stream; __dlpack__(stream=1) orders it before our read.
            r = self.eval("a + 1", a)
        torch.cuda.synchronize()
        self.assertEqual(float(r.min()), float((1 << 20) + 1))

    def test_result_outlives_its_runtime(self):
        rt = jx.Runtime("cuda", library=LIBRARY)
        a = self.randn(10000)
        t = rt.eval("a * 3", a)
        rt.close()
        del rt
        gc.collect()
        torch.testing.assert_close(torch.from_dlpack(t), a * 3)

    def test_inputs_are_released_after_each_call(self):
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        a = torch.ones(1 << 20, device="cuda")
        for _ in range(10):
            self.rt.eval("a + 1", a)
        del a
        torch.cuda.synchronize()
        # The exported tensors' deleters ran: torch's allocator has the input's memory back.
        self.assertEqual(torch.cuda.memory_allocated(), before)

    def test_cpu_tensor_on_cuda_runtime_raises_argument_error(self):
        with self.assertRaises(jx.JitexprError) as cm:
            self.rt.eval("a + 1", torch.ones(3))
        self.assertEqual(cm.exception.kind, "argument")


def main():
    global LIBRARY, np, torch
    if len(sys.argv) < 3 or sys.argv[1] not in ("cpu", "gpu"):
        print(__doc__)
        sys.exit(2)
    mode, LIBRARY = sys.argv[1], sys.argv[2]
    del sys.argv[1:3]
    try:
        import numpy as np
    except ImportError:
        skip("no NumPy")
    if mode == "cpu":
        if not hasattr(np.ndarray, "__dlpack__") or int(np.__version__.split(".")[0]) < 2:
            skip(f"NumPy {np.__version__} (DLPack export with max_version needs NumPy 2)")
        case = CpuTest
    else:
        try:
            import torch
        except ImportError:
            skip("no torch")
        if not torch.cuda.is_available():
            skip("no CUDA device (torch.cuda.is_available() is False)")
        try:
            jx.Runtime("cuda", library=LIBRARY).close()
        except jx.JitexprError as e:
            if e.kind == "no device":
                skip(f"no CUDA device for jitexpr: {e.message}")
            raise
        case = GpuTest
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(case)
    argv_names = [a for a in sys.argv[1:] if not a.startswith("-")]
    if argv_names:  # run selected tests: test_python_ctypes.py cpu LIB test_name ...
        suite = unittest.TestSuite(case(name) for name in argv_names)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
