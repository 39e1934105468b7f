"""median, percentile, quantile and their nan* forms through jitexpr.evaluate, against NumPy 2:
every dtype they take x axis forms x q (0, 100, interior, tuples) x contiguous and strided inputs
with NaN, inf and all-NaN rows: the same bits (the selected elements are exact and the
interpolation is NumPy's arithmetic), dtype and shape; NumPy's error kinds."""
import warnings

import numpy as np
import pytest

import jitexpr as jx

DTYPES = ["bool", "int8", "uint16", "int32", "int64", "uint64", "float16", "float32", "float64", "complex64"]
FORMS = [("", {}), (", axis=0", {"axis": 0}), (", axis=-1", {"axis": -1}), (", axis=(0, 2)", {"axis": (0, 2)}),
         (", axis=None, keepdims=True", {"axis": None, "keepdims": True}), (", 1, keepdims=True", {"axis": 1, "keepdims": True})]
QS = {"percentile": [0, 100, 37.5, (0, 25, 50, 100)], "quantile": [0, 1, 0.375, (0.0, 0.25, 0.5, 1.0)]}


def data(dtype, strided):
    rng = np.random.default_rng(16)
    base = np.round(rng.standard_normal((3, 4, 10)) * 8) / 2
    if np.dtype(dtype).kind == "b":
        base = base > 0
    if np.dtype(dtype).kind == "u":
        base = np.abs(base)
    a = base.astype(dtype)
    if np.dtype(dtype).kind in "fc":
        a[0, 0, 0] = np.nan
        a[1, 2, 3] = np.inf
        a[2, 1, :] = np.nan
    return a[..., ::2] if strided else np.ascontiguousarray(a[..., :5])


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)  # NaN equals NaN; bitwise otherwise


def check(text, np_fn, a):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = np_fn(a)
        except (TypeError, ValueError, IndexError) as e:
            with pytest.raises(type(e)):
                jx.evaluate(text, {"a": a})
            return
    same(jx.evaluate(text, {"a": a}), want)


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("form,kw", FORMS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median_matches_numpy(name, dtype, form, kw, strided):
    check(f"{name}(a{form})", lambda a: getattr(np, name)(a, **kw), data(dtype, strided))


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("form,kw", FORMS[:4])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["percentile", "quantile", "nanpercentile", "nanquantile"])
def test_percentile_and_quantile_match_numpy(name, dtype, form, kw, strided):
    for q in QS[name.removeprefix("nan")]:
        check(f"{name}(a, {q!r}{form})", lambda a, q=q: getattr(np, name)(a, q, **kw), data(dtype, strided))


def test_q_out_of_range_is_numpys_value_error_with_a_caret():
    with pytest.raises(jx.ValueError) as e:
        jx.evaluate("percentile(a, (10, 101))", {"a": np.arange(5.0)})
    assert "Percentiles must be in the range [0, 100]" in str(e.value) and "^^^" in str(e.value)


def test_percentile_of_an_empty_array_is_an_index_error_and_the_median_nan():
    e = np.zeros((0, 3), dtype=np.float32)
    with pytest.raises(IndexError):
        jx.evaluate("percentile(a, 50, axis=0)", {"a": e})
    same(jx.evaluate("median(a, axis=0)", {"a": e}), np.full(3, np.nan, dtype=np.float32))


def test_the_operand_is_fused_and_the_result_feeds_more_work():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((50, 40)).astype(np.float32), rng.standard_normal((50, 40)).astype(np.float32)
    same(jx.evaluate("a - median(a * 2 + b, axis=1, keepdims=True)", {"a": a, "b": b}),
         a - np.median(a * 2 + b, axis=1, keepdims=True))


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_complex_fmax_fmin_match_numpy(name):
    x = np.array([1 + 2j, complex(np.nan, 1), 2, complex(np.nan, np.nan), 1 + 1j], dtype=np.complex128)
    y = np.array([1 + 3j, 5, complex(1, np.nan), complex(2, np.nan), 1 - 1j], dtype=np.complex128)
    same(jx.evaluate(f"{name}(x, y)", {"x": x, "y": y}), getattr(np, name)(x, y))


@pytest.mark.parametrize("axis", [0, -1, 1])
@pytest.mark.parametrize("dtype", ["bool", "float64", "complex128", "int8"])
@pytest.mark.parametrize("text", ["quantile(a, 0.5, axis={})", "percentile(a, 50, axis={})", "median(a, axis={})"])
def test_an_axis_of_a_0d_operand_fails_as_numpys_does(text, dtype, axis):
    # NumPy 2.4: quantile/percentile refuse complex first, then any axis of a 0-d operand is an
    # AxisError (jitexpr's ShapeError, a ValueError as AxisError is), before bool fails in the arithmetic.
    a = np.asarray(1, dtype=dtype)
    fn = {"quantile": lambda x: np.quantile(x, 0.5, axis=axis), "percentile": lambda x: np.percentile(x, 50, axis=axis),
          "median": lambda x: np.median(x, axis=axis)}[text.split("(")[0]]
    try:
        fn(a)
    except np.exceptions.AxisError:
        with pytest.raises(jx.ShapeError):
            jx.evaluate(text.format(axis), {"a": a})
        return
    except TypeError:
        with pytest.raises(TypeError):
            jx.evaluate(text.format(axis), {"a": a})
        return
    pytest.fail("NumPy took an axis of a 0-d operand")
