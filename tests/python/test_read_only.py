"""Nothing read-only is ever written (issue 31 item 1), and the one assignment rule (issue 34
item 5): a value of the bound array's dtype and shape is written into it, another rebinds the
name and leaves the caller's array as it was."""
import numpy as np
import pytest

import jitexpr as jx
import jitexpr.numexpr as jne


class DLPackOnly:
    """A producer seen only through __dlpack__ / __dlpack_device__ (DLPack 1.0: NumPy flags a
    read-only array's tensor read-only)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kw):
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class FakeCai:
    """A __cuda_array_interface__ producer that says its memory is read-only (data[1] True). The
    pointer is never dereferenced: the call is refused first."""

    def __init__(self, read_only):
        self.__cuda_array_interface__ = {"shape": (3,), "typestr": "<f8", "data": (4096, read_only), "version": 3}


def read_only_ndarray():
    a = np.arange(3.0)
    a.flags.writeable = False
    return a


def frombuffer():
    return np.frombuffer(b"\x01\x02\x03", np.uint8)


def memoryview_of_bytes():
    return memoryview(b"\x01\x02\x03")


def dlpack_read_only():
    return DLPackOnly(read_only_ndarray())


def arrow_column():
    pa = pytest.importorskip("pyarrow")
    return pa.array([1.0, 2.0, 3.0])


HOST_PRODUCERS = [read_only_ndarray, frombuffer, memoryview_of_bytes, dlpack_read_only, arrow_column]


def snapshot(x):
    if isinstance(x, DLPackOnly):
        return x._a.copy()
    if hasattr(x, "to_numpy"):
        return x.to_numpy().copy()
    return np.array(x, copy=True)


@pytest.mark.parametrize("make", HOST_PRODUCERS, ids=lambda f: f.__name__)
def test_run_refuses_to_write_into_read_only_memory(make):
    x = make()
    before = snapshot(x)
    with pytest.raises(jx.ReadOnlyError, match="'x' is read-only") as e:
        jx.run("x = x + 1", x=x)
    assert isinstance(e.value, ValueError)
    assert e.value.span == (0, 1), "the caret is under the target"
    np.testing.assert_array_equal(snapshot(x), before)


def test_bytes_stay_immutable():
    data = b"a"
    with pytest.raises(jx.ReadOnlyError):
        jx.run("x = x + 1", x=np.frombuffer(data, np.uint8))
    assert bytes([97]) == b"a"


@pytest.mark.parametrize("make", HOST_PRODUCERS, ids=lambda f: f.__name__)
def test_a_kernel_call_refuses_to_write_into_read_only_memory(make):
    x = make()
    before = snapshot(x)
    k = jx.compile("y = y + 1")
    with pytest.raises(jx.ReadOnlyError):
        k(y=x)
    np.testing.assert_array_equal(snapshot(x), before)


@pytest.mark.parametrize("make", HOST_PRODUCERS, ids=lambda f: f.__name__)
def test_evaluate_of_a_program_refuses_to_write_into_read_only_memory(make):
    x = make()
    before = snapshot(x)
    with pytest.raises(jx.ReadOnlyError):
        jx.evaluate("x = x * 2; x", x=x)
    np.testing.assert_array_equal(snapshot(x), before)


@pytest.mark.parametrize("make", [read_only_ndarray, dlpack_read_only], ids=lambda f: f.__name__)
def test_evaluate_out_refuses_read_only_memory(make):
    out = make()
    before = snapshot(out)
    with pytest.raises(jx.ReadOnlyError, match="out= is read-only"):
        jx.evaluate("a * 2", a=np.ones(3), out=out)
    np.testing.assert_array_equal(snapshot(out), before)


def test_evaluate_out_refuses_a_read_only_buffer():
    with pytest.raises(jx.ReadOnlyError):
        jx.evaluate("a * 2", a=np.ones(3, np.uint8), out=memoryview(b"\x00\x00\x00"))


def test_evaluate_out_refuses_a_cuda_array_interface_that_says_read_only():
    with pytest.raises(jx.ReadOnlyError, match="out= is read-only"):
        jx.evaluate("a * 2", a=np.ones(3), out=FakeCai(read_only=True))


def test_evaluate_out_refuses_an_arrow_column():
    with pytest.raises(jx.Error):
        jx.evaluate("a * 2", a=np.ones(3), out=arrow_column())


def test_the_numexpr_drop_in_refuses_a_read_only_out():
    out = read_only_ndarray()
    with pytest.raises(jx.ReadOnlyError):
        jne.evaluate("a * 2", local_dict={"a": np.ones(3)}, out=out)
    with pytest.raises(jx.ReadOnlyError):
        jne.evaluate("a * 2", local_dict={"a": np.ones(3)}, out=out, casting="unsafe")
    with pytest.raises(jx.ReadOnlyError):
        jne.evaluate("a * 2", local_dict={"a": np.ones(3)}, out=FakeCai(read_only=True))
    np.testing.assert_array_equal(out, np.arange(3.0))


@pytest.mark.parametrize("out", [[0.0, 0.0, 0.0], (0.0, 0.0, 0.0), 1.5, np.float64(0.0)], ids=repr)
def test_an_out_that_is_not_an_array_is_a_type_error(out):
    with pytest.raises(jx.TypeError, match="out= must be an array"):
        jx.evaluate("a * 2", a=np.arange(3.0), out=out)
    with pytest.raises(jx.TypeError, match="out= must be an array"):
        jne.evaluate("a * 2", local_dict={"a": np.arange(3.0)}, out=out)


def test_a_writable_buffer_is_a_valid_out():
    buf = bytearray(3)
    jx.evaluate("a * 2", a=np.array([1, 2, 3], np.uint8), out=memoryview(buf))
    assert bytes(buf) == b"\x02\x04\x06"


def test_a_read_only_array_is_read():
    np.testing.assert_array_equal(jx.evaluate("x * 2", x=read_only_ndarray()), [0, 2, 4])
    r = jx.run("y = x + 1", x=frombuffer())
    np.testing.assert_array_equal(r["y"], [2, 3, 4])


def test_a_value_of_another_shape_rebinds_a_read_only_name():
    x = read_only_ndarray()
    r = jx.run("x = sum(x)", x=x)
    assert r["x"] == 3.0 and r["x"].shape == ()
    np.testing.assert_array_equal(x, [0, 1, 2])


def test_strict_in_place_refuses_a_read_only_target_too():
    with pytest.raises(jx.ReadOnlyError):
        jx.run("x = sum(x)", x=read_only_ndarray(), strict_in_place=True)


# ---- the assignment rule


def test_run_writes_a_value_of_the_same_dtype_and_shape_in_place():
    x = np.arange(3.0)
    r = jx.run("x = x * 2", x=x)
    assert r["x"] is x
    np.testing.assert_array_equal(x, [0, 2, 4])


def test_a_reduction_rebinds_the_name_to_a_zero_dimensional_array():
    x = np.arange(7.0)
    r = jx.run("x = sum(x)", x=x)
    assert r["x"].shape == () and r["x"] == 21
    np.testing.assert_array_equal(x, np.arange(7.0))


def test_a_shorter_slice_rebinds_the_name():
    x = np.arange(7.0)
    r = jx.run("x = x[1:]", x=x)
    np.testing.assert_array_equal(r["x"], np.arange(1.0, 7.0))
    np.testing.assert_array_equal(x, np.arange(7.0))


def test_a_float_value_rebinds_an_int_name_to_float64():
    x = np.arange(3, dtype=np.int32)
    r = jx.run("x = x + 1.5", x=x)
    assert r["x"].dtype == np.float64
    np.testing.assert_array_equal(r["x"], [1.5, 2.5, 3.5])
    np.testing.assert_array_equal(x, [0, 1, 2])


def test_strict_in_place_keeps_the_old_writes_and_errors():
    x = np.arange(7.0)
    r = jx.run("x = sum(x)", x=x, strict_in_place=True)
    assert r["x"] is x
    np.testing.assert_array_equal(x, np.full(7, 21.0))
    with pytest.raises(jx.ShapeError):
        jx.run("x = x[1:]", x=x, strict_in_place=True)
    i = np.arange(3, dtype=np.int32)
    with pytest.raises(jx.TypeError):
        jx.run("i = i + 1.5", i=i, strict_in_place=True)
    np.testing.assert_array_equal(i, [0, 1, 2])


def test_a_kernel_call_rebinds_a_value_of_another_dtype():
    y = np.arange(3, dtype=np.int64)
    r = jx.compile("y = y + 0.5")(y=y)
    assert r.dtype == np.float64
    np.testing.assert_array_equal(y, [0, 1, 2])


def test_a_list_assigned_in_place_returns_the_new_array_not_the_list():
    x = [1.0, 2.0]
    r = jx.run("x = x + 1", x=x)
    assert isinstance(r["x"], np.ndarray)
    np.testing.assert_array_equal(r["x"], [2.0, 3.0])
    assert x == [1.0, 2.0]


def test_a_numpy_scalar_assigned_in_place_returns_the_new_value():
    r = jx.run("x = x * 2", x=np.float64(3.0))
    assert r["x"] == 6.0


def test_a_writable_buffer_is_written_in_place_and_returned():
    buf = bytearray(b"\x01\x02")
    view = memoryview(buf)
    r = jx.run("x = x + 1", x=view)
    assert bytes(buf) == b"\x02\x03"
    assert r["x"] is view
