"""The scans (cumsum, cumprod, nancumsum, nancumprod) through jitexpr.evaluate against NumPy 2:
every dtype x axis forms x contiguous and strided inputs, with NaN, inf and -inf among the
values; NumPy's dtypes and shapes (a 1-d result without an axis, one element for a 0-d
operand), float16 accumulated in float16, NumPy's errors, the fused producer and consumer, and
the refusals where a scan would be computed piecewise (jitexpr.dask)."""
import warnings

import numpy as np
import pytest

import jitexpr as jx

from support import need

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
          "float64", "complex64", "complex128"]
FUNCTIONS = ["cumsum", "cumprod", "nancumsum", "nancumprod"]
FORMS = ["", ", axis=0", ", axis=1", ", -1", ", axis=-3", ", axis=None", ", 2"]


def cube(dtype, strided):
    """(3, 4, 5) values: small integers (so that products stay readable), NaN, inf and -inf in the
    floats and complex; a strided view (every other element of the last axis) or a contiguous one."""
    rng = np.random.default_rng(3)
    base = rng.integers(-3, 4, size=(3, 4, 10)).astype(np.float64)
    base[base == 0] = 1.5
    kind = np.dtype(dtype).kind
    if kind == "b":
        a = base > 0
    else:
        a = base.astype(dtype)
    if kind in "fc":
        a[0, 0, 0] = np.nan
        a[1, 2, 2] = np.inf
        a[2, 1, 4] = -np.inf
        a[2, 3, 6] = np.nan
    if kind == "c":
        a = a + (1j * np.flip(base, axis=2)).astype(dtype) * 0.5
    return a[..., ::2] if strided else np.ascontiguousarray(a[..., :5])


def numpy_of(text, a):
    return eval("np." + text, {"np": np}, {"a": a})


def close(got, want):
    got = np.asarray(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    kind = want.dtype.kind
    if kind in "biu":
        np.testing.assert_array_equal(got, want)
        return
    size = want.dtype.itemsize if kind == "f" else want.dtype.itemsize // 2
    rtol = {2: 2e-3, 4: 1e-5, 8: 1e-12}[size]
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True)


def check(text, a):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = np.asarray(numpy_of(text, a))
        except np.exceptions.AxisError:
            with pytest.raises(jx.ShapeError) as e:
                jx.evaluate(text, {"a": a})
            assert "^" in str(e.value)
            return
        got = jx.evaluate(text, {"a": a})
    close(got, want)


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", FUNCTIONS)
def test_scan_matches_numpy(name, dtype, form, strided):
    check(f"{name}(a{form})", cube(dtype, strided))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "float16", "float64", "complex64", "bool"])
@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("form", ["", ", axis=0", ", -1"])
def test_scan_of_a_0d_value_is_one_element(name, dtype, form):
    check(f"{name}(a{form})", np.asarray(np.array(3).astype(dtype)))


@pytest.mark.parametrize("shape,form", [((0,), ""), ((0, 3), ", axis=0"), ((0, 3), ", axis=1"), ((2, 0), "")])
def test_scan_of_an_empty_array_is_empty(shape, form):
    check(f"cumsum(a{form})", np.zeros(shape))


def test_float16_accumulates_in_float16():
    a = np.array([2048, 1, 1, 1], dtype=np.float16)
    check("cumsum(a)", a)
    assert list(jx.evaluate("cumsum(a)", {"a": a})) == [2048, 2048, 2048, 2048]


def test_long_rows_are_scanned_in_order():
    a = np.random.default_rng(1).standard_normal((3, 5000)).astype(np.float32)
    check("cumsum(a, axis=1)", a)
    check("cumsum(a)", a)
    check("cumprod(1 + a * 1e-3, axis=0)", a)


def test_integers_wrap_as_numpy():
    a = np.array([2**62, 2**62, 2**62, -5], dtype=np.int64)
    check("cumsum(a)", a)
    check("cumprod(a)", np.array([2**40, 2**40, 3], dtype=np.uint64))


def test_producer_and_consumer_fuse_with_the_scan():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((6, 70)), rng.standard_normal(70)
    got = jx.evaluate("cumsum(a * 2 + b, axis=1) / 70", {"a": a, "b": b})
    np.testing.assert_allclose(got, np.cumsum(a * 2 + b, axis=1) / 70, rtol=1e-13)
    got = jx.evaluate("x = cumsum(a); y = x - sum(a)", {"a": a})
    np.testing.assert_allclose(got, np.cumsum(a) - np.sum(a), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("text", ["(cumprod(s) * a[None, :])[m]", "(cumsum(a[:1]) * b)[1:, ::2]",
                                  "(nancumsum(s) + b)[:, 1]", "(cumprod(s) * a[None, :])[m[:0]]"])
def test_scan_of_one_element_read_through_a_broadcast_is_that_element_spread(text):
    a = np.array([2.0, np.nan, -1.5, 4.0])
    b = np.arange(12.0).reshape(3, 4)
    names = {"s": 3.0, "a": a, "b": b, "m": np.array([True])}
    expected = eval(text, {n: getattr(np, n) for n in FUNCTIONS}, dict(names))
    got = jx.evaluate(text, names)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_scan_of_a_transposed_view_runs_in_its_c_order():
    a = np.arange(12.0).reshape(3, 4).T
    check("cumsum(a)", a)
    check("cumsum(a, axis=0)", a)


def test_axis_out_of_range_is_a_shape_error_with_a_caret():
    with pytest.raises(jx.ShapeError) as e:
        jx.evaluate("cumsum(a, axis=2)", {"a": np.zeros((2, 3))})
    assert "axis 2 is out of bounds for an array of 2 dimensions" in str(e.value) and "^" in str(e.value)


def test_axis_tuple_is_a_type_error():
    with pytest.raises(TypeError):
        np.cumsum(np.zeros((2, 3)), axis=(0, 1))
    with pytest.raises(jx.TypeError) as e:
        jx.evaluate("cumsum(a, axis=(0, 1))", {"a": np.zeros((2, 3))})
    assert "^" in str(e.value)


def test_keepdims_is_no_argument_of_a_scan():
    with pytest.raises(jx.TypeError) as e:
        jx.evaluate("cumsum(a, keepdims=True)", {"a": np.zeros(3)})
    assert "unexpected keyword argument 'keepdims'" in str(e.value)


def test_check_reports_scans():
    info = jx.check("cumsum(a, axis=1) * 2", a=np.zeros((2, 3)))
    assert info.scans and not info.reduces
    assert info.result.shape == (2, 3)
    assert not jx.check("a * 2", a=np.zeros(3)).scans


def test_functions_list_the_scans():
    kinds = {names[0]: kind for kind, names, arity, doc in jx.functions() if names}
    assert all(kinds[f] == "scan" for f in FUNCTIONS)


def test_dask_refuses_a_scan_it_would_compute_block_by_block():
    da = need("dask.array")
    import jitexpr.dask as jxd
    a = da.ones(10, chunks=5)
    with pytest.raises(jx.ArgumentError, match="scan"):
        jxd.evaluate("cumsum(a)", a=a)
