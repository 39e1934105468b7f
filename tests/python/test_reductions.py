"""The reductions and statistics through jitexpr.evaluate and the numexpr drop-in, against
NumPy 2: every function x dtypes x axis forms x contiguous and strided inputs, with NaN, inf,
all-NaN slices and empty arrays; the same values, dtype and shape, and NumPy's error kinds."""
import warnings

import numpy as np
import pytest

import jitexpr as jx
import jitexpr.numexpr as jne

FORMS = ["", ", axis=0", ", axis=-1", ", 1", ", axis=(0, 2)", ", axis=None, keepdims=True",
         ", axis=(0, 2), keepdims=True", ", axis=1, keepdims=True"]
ONE_AXIS = [f for f in FORMS if "(" not in f]


def numpy_of(text):
    """The same call in NumPy: f(a, ...) -> np.f(a, ...)."""
    return eval("np." + text, {"np": np, "nan": np.nan}, {"a": _current["a"]})


_current = {}


def cube(dtype, strided, nan_slice=True):
    rng = np.random.default_rng(5)
    base = rng.standard_normal((3, 4, 10)) * 4
    if np.dtype(dtype).kind == "b":
        base = base > 0
    a = base.astype(dtype)
    if np.dtype(dtype).kind == "f":
        a[0, 0, 0] = np.nan
        a[1, 2, 3] = np.inf
        if nan_slice:
            a[:, 1, 4] = np.nan
    a = a[..., ::2] if strided else np.ascontiguousarray(a[..., :5])
    return a


def close(got, want, dtype):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    kind = np.dtype(want.dtype).kind
    if kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        rtol = {2: 4e-3, 4: 2e-5, 8: 1e-12}[np.dtype(want.dtype).itemsize if kind == "f" else np.dtype(want.dtype).itemsize // 2]
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True)


def check(text, a, dtype):
    _current["a"] = a
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = np.asarray(numpy_of(text))
        except (TypeError, ValueError) as e:
            with pytest.raises(type(e) if not isinstance(e, np.exceptions.AxisError) else jx.ShapeError):
                jx.evaluate(text, {"a": a})
            return
    got = jx.evaluate(text, {"a": a})
    close(np.asarray(got), want, dtype)


CASES = {
    "sum": ["bool", "int8", "uint16", "float32", "float64", "complex64"],
    "prod": ["int16", "float64"],
    "mean": ["int32", "float16", "float32", "complex128"],
    "var": ["int8", "float16", "float32", "float64", "complex64"],
    "std": ["uint8", "float32", "float64"],
    "nansum": ["float32", "float64", "int64"],
    "nanprod": ["float64"],
    "nanmean": ["float16", "float32", "float64"],
    "nanvar": ["float32", "float64"],
    "nanstd": ["float64"],
    "nanmin": ["float32", "int8"],
    "nanmax": ["float64", "uint32"],
    "min": ["int8", "float32"],
    "amax": ["uint64", "float64"],
    "ptp": ["int16", "float32"],
    "count_nonzero": ["bool", "float64", "complex64"],
    "any": ["float32"],
    "all": ["int8"],
}


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name,dtype", [(n, d) for n, ds in CASES.items() for d in ds])
def test_reduction_matches_numpy(name, dtype, form, strided):
    # min(x, 1) and max(x, 1) are the element-wise minimum and maximum: amin/amax take the axis.
    fname = "a" + name if name in ("min", "max") and form == ", 1" else name
    check(f"{fname}(a{form})", cube(dtype, strided), dtype)


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("form", ONE_AXIS)
@pytest.mark.parametrize("name,dtype", [(n, d) for n in ("argmin", "argmax") for d in ("bool", "int8", "float32", "float64")])
def test_argmin_argmax_match_numpy(name, dtype, form, strided):
    check(f"{name}(a{form})", cube(dtype, strided), dtype)


@pytest.mark.parametrize("ddof", [0, 1, 2.5, 5])
@pytest.mark.parametrize("name", ["var", "std", "nanvar", "nanstd"])
def test_ddof_matches_numpy(name, ddof):
    check(f"{name}(a, axis=1, ddof={ddof})", cube("float64", False), "float64")


@pytest.mark.parametrize("name", ["sum", "mean", "var", "nansum", "nanmean", "count_nonzero", "min", "argmin", "ptp",
                                  "nanmin"])
@pytest.mark.parametrize("shape,form", [((0,), ""), ((0, 3), ", axis=0"), ((0, 3), ", axis=1"), ((2, 0), ", axis=0")])
def test_empty_arrays_give_numpys_value_or_error(name, shape, form):
    check(f"{name}(a{form})", np.zeros(shape), "float64")


@pytest.mark.parametrize("name", ["nanmin", "nanmax", "nanmean", "nanvar", "nansum", "argmin", "argmax"])
def test_all_nan_input_as_numpy(name):
    check(f"{name}(a)", np.full(7, np.nan, dtype=np.float32), "float32")


def test_reductions_fuse_with_elementwise_work():
    a = cube("float32", False, nan_slice=False)
    a = np.nan_to_num(a, posinf=1.0)
    b = a[::-1].copy()
    got = jx.evaluate("(a - mean(a, axis=(0, 2), keepdims=True)) / std(a * b + 1, axis=(0, 2), keepdims=True)",
                      {"a": a, "b": b})
    want = (a - np.mean(a, axis=(0, 2), keepdims=True)) / np.std(a * b + 1, axis=(0, 2), keepdims=True)
    close(got, want, "float32")


def test_weighted_average_matches_numpy():
    a, w = cube("float64", False, nan_slice=False), np.abs(cube("float32", False, nan_slice=False)) + 1
    a = np.nan_to_num(a, posinf=2.0)
    w = np.nan_to_num(w, posinf=2.0)
    close(jx.evaluate("average(a, axis=(0, 2), weights=w)", {"a": a, "w": w}), np.average(a, axis=(0, 2), weights=w),
          "float64")


def test_repeated_axis_is_a_value_error_with_a_caret():
    with pytest.raises(jx.ValueError) as e:
        jx.evaluate("sum(a, axis=(0, -3))", {"a": np.zeros((2, 3, 4))})
    assert "duplicate value in 'axis'" in str(e.value) and "^" in str(e.value)


def test_axis_out_of_range_is_a_shape_error_with_a_caret():
    with pytest.raises(jx.ShapeError) as e:
        jx.evaluate("var(a, (1, 3))", {"a": np.zeros((2, 3, 4))})
    assert "axis 3 is out of bounds" in str(e.value) and "^" in str(e.value)


def test_numexpr_drop_in_reduces_along_an_axis_and_takes_the_statistics():
    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(jne.evaluate("sum(a * 2, axis=1)"), np.sum(a * 2, axis=1))
    np.testing.assert_array_equal(jne.evaluate("prod(a + 1, 0)"), np.prod(a + 1, 0))
    np.testing.assert_allclose(jne.evaluate("std(a, axis=0, ddof=1)"), np.std(a, axis=0, ddof=1), rtol=1e-14)
    np.testing.assert_array_equal(jne.evaluate("argmax(a % 5, axis=None)"), np.argmax(a % 5))


def test_axis_none_is_not_a_variable():
    a = np.arange(6.0).reshape(2, 3)
    assert jx.evaluate("sum(a, axis=None)", {"a": a}) == 15.0
    assert jne.evaluate("max(a, axis=None)") == 5.0
