"""Boolean-mask selection (a[a > 0], b[(a > 0) & (b < 1)], b[m] over leading axes) against NumPy 2:
every dtype x contiguous and strided (non-contiguous NumPy views) inputs x masks that select some,
nothing and everything; the reductions of selections (fused, never compacted); the errors."""
import numpy as np
import pytest

import jitexpr as jx

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
          "float64", "complex64", "complex128"]
MASKS = {"some": lambda a: a > a.flat[len(a.flat) // 2], "none": lambda a: a != a, "all": lambda a: a == a}
SELECT = ["a[m]", "b[m]", "a[m] * 2", "(a + b)[m]", "a[m] - b[m]", "where(m, a, b)[m]"]
REDUCE = ["sum(a[m])", "prod(a[m])", "mean(a[m])", "min(a[m])", "max(a[m])", "ptp(a[m])", "any(a[m])",
          "all(a[m])", "count_nonzero(a[m])", "var(a[m])", "std(a[m], ddof=1)", "nansum(a[m])", "nanmean(a[m])",
          "argmin(a[m])", "argmax(a[m])", "average(a[m], weights=b[m])"]


def sample(dtype, n, seed):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        return rng.integers(1, 9, n).astype(dt)
    if dt.kind == "c":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    return (rng.standard_normal(n) * 4).astype(dt)


def strided(x):
    """The same values as a non-contiguous view (every other element of a larger buffer)."""
    big = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
    big[..., ::2] = x
    v = big[..., ::2]
    assert not v.flags.c_contiguous
    return v


NUMPY_NAMES = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "min": np.min, "max": np.max, "ptp": np.ptp,
               "any": np.any, "all": np.all, "count_nonzero": np.count_nonzero, "var": np.var, "std": np.std,
               "nansum": np.nansum, "nanmean": np.nanmean, "where": np.where, "argmin": np.argmin,
               "argmax": np.argmax, "average": np.average}


def numpy_of(text, names):
    with np.errstate(all="ignore"), __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore")
        return np.asarray(eval(text, dict(NUMPY_NAMES), names))


def check(text, names):
    try:
        want = numpy_of(text, names)
    except ZeroDivisionError:  # average()'s weights that sum to zero: a ValueError in jitexpr
        with pytest.raises(ValueError, match="weights sum to zero"):
            jx.evaluate(text, names, backend="cpu")
        return
    except (TypeError, ValueError) as e:
        with pytest.raises(type(e)):
            jx.evaluate(text, names, backend="cpu")
        return
    got = np.asarray(jx.evaluate(text, names, backend="cpu"))
    assert got.dtype == want.dtype, text
    assert got.shape == want.shape, text
    if want.dtype.kind in "fc" and got.ndim == 0:
        tol = 2e-2 if want.dtype in (np.float16, np.complex64, np.float32) else 1e-9
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want)


def names_for(dtype, mask, layout, n=37):
    a, b = sample(dtype, n, 1), sample(dtype, n, 2)
    m = MASKS[mask](a) if np.dtype(dtype).kind != "c" else MASKS[mask](a.real)
    if layout == "strided":
        a, b, m = strided(a), strided(b), strided(m)
    return {"a": a, "b": b, "m": m}


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("text", SELECT)
def test_selection_matches_numpy(text, dtype, mask, layout):
    check(text, names_for(dtype, mask, layout))


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("text", REDUCE)
def test_reduction_of_selection_matches_numpy(text, dtype, mask, layout):
    if np.dtype(dtype).kind == "c" and text.split("(")[0] in ("min", "max", "ptp", "argmin", "argmax"):
        pytest.skip("jitexpr's min, max, ptp, argmin and argmax take no complex values (docs/language.md)")
    if dtype == "bool" and text.startswith("ptp") and mask == "none":
        # NumPy finds the empty array before the bool subtract; jitexpr types the program before
        # any data is seen: a TypeError here, as for every bool ptp (tested with the other masks).
        with pytest.raises(TypeError):
            jx.evaluate(text, names_for(dtype, mask, layout), backend="cpu")
        return
    check(text, names_for(dtype, mask, layout))


def test_predicate_in_the_index_selects_in_c_order():
    a = np.arange(-6.0, 6.0).reshape(3, 4)
    b = np.linspace(0, 2, 12).reshape(3, 4)
    for text in ["a[a > 0]", "b[(a > 0) & (b < 1.5)]", "a[(a < -2) | (a > 3)]"]:
        check(text, {"a": a, "b": b})


def test_a_mask_of_leading_axes_selects_rows():
    b = np.arange(12.0).reshape(4, 3)
    m = np.array([True, False, True, True])
    for text in ["b[m]", "b[m] * b[0]", "sum(b[m], axis=0)", "mean(b[m])", "max(b[m], axis=0)"]:
        check(text, {"b": b, "m": m})


def test_a_large_selection_keeps_its_order():
    rng = np.random.default_rng(5)
    a = rng.standard_normal(1_000_003)
    got = jx.evaluate("a[a > 0.5]", {"a": a}, backend="cpu")
    np.testing.assert_array_equal(got, a[a > 0.5])


def test_min_of_an_empty_selection_is_numpys_value_error():
    a = np.arange(5.0)
    with pytest.raises(ValueError, match=r"min\(\) of an empty array has no value"):
        jx.evaluate("min(a[a > 10])", {"a": a}, backend="cpu")


def test_a_mismatched_mask_is_an_index_error():
    with pytest.raises(IndexError, match="boolean index did not match"):
        jx.evaluate("a[m]", {"a": np.arange(5.0), "m": np.ones(4, bool)}, backend="cpu")


@pytest.mark.parametrize("shape,mshape", [((3,), (0,)), ((1,), (0,)), ((2, 3), (0,)), ((2, 3), (0, 3)),
                                          ((2, 3), (2, 0)), ((2, 3, 4), (0, 3)), ((2, 3), (0, 5)), ((0,), (1,))])
@pytest.mark.parametrize("text", ["b[m]", "sum(b[m])", "b[m] + 1"])
def test_a_mask_axis_of_no_element_is_numpys_empty_selection(text, shape, mshape):
    names = {"b": np.ones(shape), "m": np.zeros(mshape, bool)}
    try:
        want = np.asarray(eval(text, {"sum": np.sum}, dict(names)))
    except IndexError:
        with pytest.raises(IndexError, match="boolean index did not match"):
            jx.evaluate(text, names, backend="cpu")
        return
    got = np.asarray(jx.evaluate(text, names, backend="cpu"))
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    np.testing.assert_array_equal(got, want)


def test_an_integer_index_array_is_not_a_mask():
    with pytest.raises(ValueError, match="integer-array indexing is not supported"):
        jx.evaluate("a[i]", {"a": np.arange(5.0), "i": np.arange(5)}, backend="cpu")


ZERO_SIZE = [("b[m]", (4, 0), (4,)), ("b[m] * 2", (4, 0), (4,)), ("b[m]", (4, 2, 0), (4,)), ("b[m]", (4, 0, 2), (4,)),
             ("b[m]", (2, 2, 0), (2, 2)), ("b[m]", (0, 3), (0,)), ("b[m]", (0,), (0,)), ("sum(b[m], axis=1)", (4, 0), (4,)),
             ("sum(b[m], axis=0)", (4, 0), (4,)), ("b[m][:, 1:]", (4, 1), (4,)), ("cumsum(b, axis=1)", (4, 0), None),
             ("cumsum(b, axis=0)", (0, 3), None), ("cumsum(b)", (4, 0), None), ("cumsum(b)[:0]", (5,), None)]


@pytest.mark.parametrize("dtype", ["float64", "int8", "bool", "complex64"])
@pytest.mark.parametrize("text,shape,mshape", ZERO_SIZE)
def test_zero_size_selections_and_scans_have_numpys_shape(text, shape, mshape, dtype):
    rng = np.random.default_rng(3)
    b = rng.integers(0, 3, shape).astype(dtype)
    names = {"b": b}
    if mshape is not None:
        names["m"] = rng.integers(0, 2, mshape).astype(bool)
        names["m"].flat[:1] = True
    want = np.asarray(eval(text, {"sum": np.sum, "cumsum": np.cumsum}, dict(names)))
    got = np.asarray(jx.evaluate(text, names, backend="cpu"))
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    np.testing.assert_array_equal(got, want)


def test_argmin_argmax_and_average_of_a_selection_are_numpys():
    c = np.array([[0, 9, 2], [3, 4, 5], [6, 1, 8], [9, 10, 11]], np.int32)
    x = np.array([5.0, 1.0, np.nan, 1.0, -np.inf, 7.0])
    w = np.array([1.0, 2.0, 3.0, 4.0])
    m = np.array([True, False, True, True])
    names = {"c": c, "x": x, "w": w, "m": m}
    for text in ["argmin(x[x > 0])", "argmax(x[x != 7])", "argmin(x[~isnan(x)])", "argmax(c[m], axis=0)",
                 "argmin(c[m], axis=1)", "argmin(c[m], axis=-1, keepdims=True)", "argmax(c[m])",
                 "argmin(c[c > 2])", "average(c[m], axis=0, weights=c[m])", "average(x[x > 0], weights=x[x > 0])",
                 "average(c[m], axis=1, weights=w[:3])", "average(c[m], weights=c[m] * 2)"]:
        want = np.asarray(eval(text, {**NUMPY_NAMES, "isnan": np.isnan}, dict(names)))
        got = np.asarray(jx.evaluate(text, names, backend="cpu"))
        assert (got.dtype, got.shape) == (want.dtype, want.shape), text
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=text)
    with pytest.raises(ValueError, match="empty"):
        jx.evaluate("argmax(x[x > 100])", names, backend="cpu")
    with pytest.raises(ValueError, match="selected by the same mask"):
        jx.evaluate("average(c[m], weights=c)", names, backend="cpu")


def test_a_selection_is_indexed_and_reduced_along_its_other_axes():
    c = np.arange(24.0).reshape(4, 3, 2)
    m = np.array([True, False, True, True])
    names = {"c": c, "m": m}
    for text in ["c[m][:, 0]", "c[m][..., ::-1]", "c[m][:, None, 1:, 1]", "sum(c[m], axis=2)",
                 "max(c[m], axis=(1, 2))", "var(c[m], axis=1, ddof=1)", "c[m][:, 1] * 2 + c[m][:, 0]"]:
        want = np.asarray(eval(text, dict(NUMPY_NAMES), dict(names)))
        got = np.asarray(jx.evaluate(text, names, backend="cpu"))
        assert (got.dtype, got.shape) == (want.dtype, want.shape), text
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=text)
    for text in ["c[m][0]", "c[m][1:]", "c[m][None]"]:
        with pytest.raises(ValueError, match="along its other axes only"):
            jx.evaluate(text, names, backend="cpu")


@pytest.mark.parametrize("shape,mask,text", [
    ((1, 0), [True], "max(x[m], axis=0)"),
    ((1, 0), [True], "max(x[m])"),
    ((1, 0), [False], "min(x[m], axis=0)"),
    ((1, 3), [False], "max(x[m], axis=0)"),
    ((2, 0), [True, False], "argmin(x[m], axis=0)"),
])
def test_min_and_max_of_a_selection_fail_only_where_numpys_have_nothing_to_reduce(shape, mask, text):
    # fuzzer seed 71, case 1160153: max(x[m], axis=0) of a (1, 0) selection is an empty array in
    # NumPy; only a reduction over no element (nothing selected, or a reduced axis of extent 0)
    # is its ValueError.
    x, m = np.zeros(shape), np.array(mask)
    try:
        want = getattr(np, text.split("(")[0])(x[m], **({"axis": 0} if "axis" in text else {}))
    except ValueError:
        with pytest.raises(ValueError):
            jx.evaluate(text, x=x, m=m)
        return
    got = jx.evaluate(text, x=x, m=m)
    assert got.shape == np.shape(want) and got.dtype == np.asarray(want).dtype
