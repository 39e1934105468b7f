"""What jitexpr reads of a cupy.ndarray on each call: everything the first time, then, while the
array lives and keeps its shape, its shape alone (a C-contiguous array: CuPy's strides cannot
be set, and a shape set to the same shape keeps C-contiguous strides) or its shape and strides; a shape set since, or another array, is read whole again. Run in a fresh
interpreter against a stand-in `cupy` module whose ndarray records each attribute read, with a
program that is a TypeError when planned (`x & 1` of float64): the arrays are bound as CUDA
views and nothing runs, so nothing touches their made-up memory, with or without a GPU.
The same calls on real CuPy arrays, with their values, are in test_gpu.py."""
import json
import os
import subprocess
import sys

SCRIPT = r"""
import gc, json, sys, types
import numpy as np

reads = []

class MemoryPointer:
    def __init__(self, ptr):
        self._ptr = ptr
    @property
    def ptr(self):
        reads.append("ptr")
        return self._ptr
    @property
    def device_id(self):
        reads.append("device_id")
        return 0

def c_strides(shape):
    return tuple(int(np.prod(shape[i + 1:])) * 8 for i in range(len(shape)))

class ndarray:
    def __init__(self, shape, strides=None, ptr=0x10000):
        self._shape, self._data = tuple(shape), MemoryPointer(ptr)
        self._strides = tuple(strides) if strides is not None else c_strides(shape)
    @property
    def dtype(self):
        reads.append("dtype")
        return np.dtype(np.float64)
    @property
    def shape(self):
        reads.append("shape")
        return self._shape
    @shape.setter
    def shape(self, s):
        self._shape, self._strides = tuple(s), c_strides(s)
    @property
    def strides(self):
        reads.append("strides")
        return self._strides
    @property
    def data(self):
        reads.append("data")
        return self._data
    @property
    def _c_contiguous(self):
        reads.append("_c_contiguous")
        return self._strides == c_strides(self._shape)

cupy = types.ModuleType("cupy")
cupy.ndarray = ndarray
sys.modules["cupy"] = cupy
import jitexpr as jx

def call(x):
    reads.clear()
    try:
        jx.evaluate("x & 1", x=x)
        error = ""
    except jx.Error as e:
        error = type(e).__name__ + ": " + str(e)
    return {"reads": list(reads), "error": error}

out = {}
a = ndarray((3, 4))
out["first"] = call(a)
out["again"] = call(a)
a.shape = (4, 3)
out["reshaped"] = call(a)
out["reshaped again"] = call(a)
t = ndarray((4, 3), (8, 32), ptr=0x20000)
out["transposed"] = call(t)
out["transposed again"] = call(t)
del a
gc.collect()
out["another"] = call(ndarray((3, 4), ptr=0x30000))
print(json.dumps(out))
"""

FULL = ["dtype", "shape", "strides", "data", "ptr", "device_id"]


def run_script():
    env = dict(os.environ, JITEXPR_DISK_CACHE="0")
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


OUT = None


def out():
    global OUT
    if OUT is None:
        OUT = run_script()
    return OUT


def test_the_first_call_reads_the_whole_array_and_nothing_runs():
    first = out()["first"]
    assert first["reads"] == FULL
    # A TypeError from the plan where there is a GPU; without one, no CUDA to bind a view on.
    assert first["error"].split(":")[0] in ("TypeError", "NoDeviceError"), first


def test_a_second_call_reads_only_the_shape():
    assert out()["again"]["reads"] == ["shape"]
    assert out()["again"]["error"] == out()["first"]["error"]


def test_a_shape_set_since_is_read_whole_again():
    assert out()["reshaped"]["reads"] == ["shape"] + FULL
    assert out()["reshaped again"]["reads"] == ["shape"]


def test_an_array_not_c_contiguous_has_its_strides_checked_each_call():
    assert out()["transposed"]["reads"] == FULL
    assert out()["transposed again"]["reads"] == ["shape", "strides"]


def test_another_array_is_read_whole():
    assert out()["another"]["reads"] == FULL
