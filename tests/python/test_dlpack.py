"""The DLPack protocol both ways on the host (NumPy 2 speaks it): inputs through __dlpack__,
results exported with every keyword of __dlpack__(stream=, max_version=, dl_device=, copy=)."""
import gc

import numpy as np
import pytest

import jitexpr as jx
from jitexpr import _jitexpr as core


class OnlyDLPack:
    """An array that offers nothing but the DLPack protocol (as JAX or a new library would)."""

    def __init__(self, a):
        self._a = a
        self.calls = []

    def __dlpack__(self, **kw):
        self.calls.append(kw)
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def tensor(text="a * 2", **names):
    """A host result as the Tensor that CUDA results always are."""
    names = names or {"a": np.arange(6.0).reshape(2, 3)}
    r = core.evaluate(text, names, None, None, None, None, as_tensor=True)
    assert isinstance(r, jx.Tensor)
    return r


def test_an_input_with_only_dlpack_is_read_in_place():
    a = np.arange(5.0)
    src = OnlyDLPack(a)
    np.testing.assert_array_equal(jx.evaluate("x * 3", x=src), a * 3)
    assert src.calls and src.calls[0].get("max_version") == (1, 0)


def test_dlpack_inputs_are_released_after_the_call():
    a = np.arange(5.0)
    import sys
    before = sys.getrefcount(a)
    for _ in range(20):
        jx.evaluate("x + 1", x=OnlyDLPack(a))
    gc.collect()
    assert sys.getrefcount(a) == before


def test_a_host_tensor_goes_to_numpy_without_a_copy():
    t = tensor()
    n = np.from_dlpack(t)
    assert n.shape == (2, 3)
    assert n.ctypes.data == np.from_dlpack(t).ctypes.data


def test_to_cpu_of_a_host_tensor_is_the_tensor_itself():
    t = tensor()
    assert t.to("cpu") is t
    np.testing.assert_array_equal(t.to("cpu").numpy(), np.arange(6.0).reshape(2, 3) * 2)


@pytest.mark.parametrize("where", ["tpu", "cuda:", "cuda:x", "CPU", ""])
def test_to_an_unknown_device_is_an_argument_error_that_names_it(where):
    with pytest.raises(jx.ArgumentError, match="'cpu', 'cuda' or 'cuda:N'"):
        tensor().to(where)


@pytest.mark.parametrize("max_version", [None, (0, 8), (1, 0), (1, 5)])
def test_dlpack_capsules_of_both_versions(max_version):
    t = tensor()
    cap = t.__dlpack__(max_version=max_version)
    name = "dltensor_versioned" if max_version and max_version[0] >= 1 else "dltensor"
    assert f'"{name}"' in repr(cap)


def test_copy_true_gives_a_copy_and_copy_false_on_another_device_is_a_buffer_error():
    t = tensor()
    a1 = np.from_dlpack(t)
    a2 = np.from_dlpack(t, copy=True)
    assert a1.ctypes.data != a2.ctypes.data
    np.testing.assert_array_equal(a1, a2)
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(2, 0), copy=False)
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(7, 0))


def test_dl_device_of_its_own_device_needs_no_copy():
    t = tensor()
    cap = t.__dlpack__(dl_device=(1, 0), copy=False, max_version=(1, 0))
    assert "dltensor_versioned" in repr(cap)


def test_an_unconsumed_capsule_frees_its_tensor():
    gc.collect()
    before = core.live_results()
    t = tensor()
    for _ in range(10):
        t.__dlpack__()
        t.__dlpack__(max_version=(1, 0))
    del t
    gc.collect()
    assert core.live_results() == before


def test_a_tensor_on_the_host_has_no_cuda_array_interface():
    t = tensor()
    assert t.__dlpack_device__() == (1, 0)
    with pytest.raises(AttributeError):
        t.__cuda_array_interface__  # noqa: B018


class DLPackThroughGetattr:
    """An array whose DLPack methods come from __getattr__ (no class attribute names them)."""

    def __init__(self, a):
        self._a = a

    def __getattr__(self, name):
        if name in ("__dlpack__", "__dlpack_device__"):
            return getattr(self._a, name)
        raise AttributeError(name)


def test_an_input_whose_dlpack_comes_from_getattr_is_read():
    a = np.arange(5.0)
    np.testing.assert_array_equal(jx.evaluate("x * 3", x=DLPackThroughGetattr(a)), a * 3)


def test_an_input_with_dlpack_in_its_instance_dict_is_read():
    class Bare:
        pass

    a = np.arange(4.0)
    o = Bare()
    o.__dlpack__ = a.__dlpack__
    o.__dlpack_device__ = a.__dlpack_device__
    np.testing.assert_array_equal(jx.evaluate("x + 1", x=o), a + 1)


def test_the_cuda_array_interface_is_read_once_per_value():
    class Counted:
        reads = 0

        @property
        def __cuda_array_interface__(self):
            Counted.reads += 1
            # A mask: refused while the value is bound, before any device is touched.
            return {"shape": (4,), "typestr": "<f4", "data": (0, False), "version": 3, "mask": object()}

    with pytest.raises(TypeError, match="mask"):
        jx.evaluate("x + 1", x=Counted())
    assert Counted.reads == 1
