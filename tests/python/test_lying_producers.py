"""Typed errors only (issue 31 item 2): objects whose array protocols lie (wrong types, huge or
negative shapes, bad devices, pointers past any address) and texts no program can be, thrown at
every entry point, give a jitexpr.Error (also the matching built-in) whose message names no C++
type, never a RuntimeError('std::bad_cast'), a MemoryError('std::bad_alloc') or nanobind's
"incompatible function arguments"."""
import ctypes

import numpy as np
import pytest

import jitexpr as jx
import jitexpr.numexpr as jne

CPP_WORDS = ("std::", "bad_cast", "bad_alloc", "incompatible function arguments", "nanobind")


class Attrs:
    """An object with the given attributes (methods as callables)."""

    def __init__(self, **attrs):
        for k, v in attrs.items():
            setattr(self, k, v)


def cai(**over):
    d = {"shape": (3,), "typestr": "<f8", "data": (4096, False), "version": 3}
    d.update(over)
    return Attrs(__cuda_array_interface__=d)


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _Versioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", _Tensor)]


class ForgedDLPack:
    """A host float64 DLPack 1.0 tensor whose shape says what its memory is not. The structures
    live as long as the object; their deleter is null, so a consumer that takes them frees
    nothing."""

    def __init__(self, shape, device_type=1, device_id=0, strides=None):
        self._buf = (ctypes.c_double * 4)()
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._strides = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        t = _Tensor(ctypes.cast(self._buf, ctypes.c_void_p), _Device(device_type, device_id), len(shape),
                    _DType(2, 64, 1), self._shape, self._strides, 0)
        self._v = _Versioned(1, 0, None, None, 0, t)

    def __dlpack__(self, **kw):
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self._v), b"dltensor_versioned", None)

    def __dlpack_device__(self):
        return (self._v.dl_tensor.device.device_type, 0)


LIARS = {
    "dlpack_device_of_strings": Attrs(__dlpack__=lambda **kw: None, __dlpack_device__=lambda: ("x", 0)),
    "dlpack_returning_none": Attrs(__dlpack__=lambda **kw: None, __dlpack_device__=lambda: (1, 0)),
    "dlpack_returning_an_int": Attrs(__dlpack__=lambda **kw: 5, __dlpack_device__=lambda: (1, 0)),
    "dlpack_forged_huge_shape": ForgedDLPack((2**62,)),
    "dlpack_forged_negative_shape": ForgedDLPack((-3,)),
    "dlpack_on_an_unknown_device": ForgedDLPack((2,), device_type=99),
    "dlpack_on_a_gpu_that_is_not_there": ForgedDLPack((2,), device_type=2, device_id=7),
    "dlpack_strides_past_any_address": ForgedDLPack((3,), strides=(2**62,)),
    "dlpack_negative_strides_past_any_address": ForgedDLPack((3,), strides=(-2**62,)),
    "dlpack_strides_of_two_dims_that_overflow": ForgedDLPack((2, 2), strides=(2**62, 2**62)),
    "cai_that_is_an_int": Attrs(__cuda_array_interface__=17),
    "cai_pointer_past_any_address": cai(data=(2**70, False)),
    "cai_negative_pointer": cai(data=(-1, False)),
    "cai_data_not_a_tuple": cai(data=4096),
    "cai_data_of_one_item": cai(data=(4096,)),
    "dlpack_device_of_one_item": Attrs(__dlpack__=lambda **kw: None, __dlpack_device__=lambda: (1,)),
    "arrow_of_one_item": Attrs(__arrow_c_array__=lambda *a, **k: (None,)),
    "cai_typestr_not_a_str": cai(typestr=5),
    "cai_unknown_typestr": cai(typestr="<x8"),
    "cai_shape_not_a_tuple": cai(shape=3),
    "cai_huge_shape": cai(shape=(2**62,)),
    "cai_negative_shape": cai(shape=(-1,)),
    "cai_shape_of_strings": cai(shape=("a",)),
    "cai_odd_strides": cai(strides=(3,)),
    "cai_strides_past_any_address": cai(strides=(2**63 - 8,)),
    "cai_missing_data": Attrs(__cuda_array_interface__={"shape": (3,), "typestr": "<f8", "version": 3}),
    "arrow_returning_none": Attrs(__arrow_c_array__=lambda *a, **k: None),
    "arrow_returning_ints": Attrs(__arrow_c_array__=lambda *a, **k: (1, 2)),
    "arrow_stream_returning_none": Attrs(__arrow_c_stream__=lambda *a, **k: None),
}

ENTRY_POINTS = {
    "evaluate": lambda v: jx.evaluate("x + 1", x=v),
    "run": lambda v: jx.run("y = x + 1", x=v),
    "run_assigning_it": lambda v: jx.run("x = x + 1", x=v),
    "kernel_call": lambda v: jx.compile("x + 1")(x=v),
    "evaluate_out": lambda v: jx.evaluate("a + 1", a=np.ones(3), out=v),
    "explain": lambda v: jx.explain("x + 1", x=v),
    "check": lambda v: jx.check("x + 1", x=v),
    "evaluate_on_the_cpu": lambda v: jx.evaluate("x + 1", x=v, backend="cpu"),
}


def assert_typed(excinfo):
    e = excinfo.value
    assert isinstance(e, jx.Error), f"{type(e).__module__}.{type(e).__name__}: {e}"
    for w in CPP_WORDS:
        assert w not in str(e), str(e)


@pytest.mark.parametrize("entry", list(ENTRY_POINTS), ids=str)
@pytest.mark.parametrize("liar", list(LIARS), ids=str)
def test_a_lying_producer_is_a_typed_error(liar, entry):
    with pytest.raises(Exception) as excinfo:
        ENTRY_POINTS[entry](LIARS[liar])
    assert_typed(excinfo)


@pytest.mark.parametrize("liar", list(LIARS), ids=str)
def test_the_numexpr_drop_in_names_no_cpp_type_for_a_lying_producer(liar):
    # The drop-in raises numexpr's exception types (built-ins); never a C++ name.
    with pytest.raises((TypeError, ValueError, MemoryError, KeyError, jx.Error)) as excinfo:
        jne.evaluate("x + 1", local_dict={"x": LIARS[liar]})
    for w in CPP_WORDS:
        assert w not in str(excinfo.value), str(excinfo.value)


def test_the_errors_say_which_protocol_lied():
    with pytest.raises(jx.TypeError, match="__dlpack_device__"):
        jx.evaluate("x + 1", x=LIARS["dlpack_device_of_strings"])
    with pytest.raises(jx.TypeError, match="__cuda_array_interface__"):
        jx.evaluate("x + 1", x=LIARS["cai_that_is_an_int"])
    with pytest.raises(jx.TypeError, match="__cuda_array_interface__"):
        jx.evaluate("x + 1", x=LIARS["cai_pointer_past_any_address"])
    with pytest.raises(jx.TypeError, match="__arrow_c_array__"):
        jx.evaluate("x + 1", x=LIARS["arrow_returning_none"])
    with pytest.raises(jx.ArgumentError, match="too large"):
        jx.evaluate("x + 1", x=LIARS["dlpack_forged_huge_shape"])


TEXT_ENTRY_POINTS = {
    "evaluate": lambda t: jx.evaluate(t),
    "run": lambda t: jx.run(t),
    "compile": lambda t: jx.compile(t),
    "check": lambda t: jx.check(t),
    "explain": lambda t: jx.explain(t),
    "parameters": lambda t: jx.parameters(t),
}


@pytest.mark.parametrize("entry", list(TEXT_ENTRY_POINTS), ids=str)
def test_a_lone_surrogate_in_the_text_is_a_parse_error(entry):
    with pytest.raises(jx.ParseError, match="lone surrogate") as excinfo:
        TEXT_ENTRY_POINTS[entry]("1 + 1 # \ud800")
    assert isinstance(excinfo.value, SyntaxError)
    assert_typed(excinfo)


def test_a_python_int_past_int64_is_jitexpr_overflow_error():
    with pytest.raises(jx.OverflowError, match="out of bounds for int64") as excinfo:
        jx.evaluate("x + 1", x=2**70)
    assert isinstance(excinfo.value, OverflowError)


def test_every_exception_class_is_a_jitexpr_error():
    for name in jx._errors.__all__:
        assert issubclass(getattr(jx, name), jx.Error), name
