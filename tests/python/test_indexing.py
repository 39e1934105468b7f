"""Slicing and simple indexing with constant bounds, against NumPy 2: every form x dtypes x
contiguous and strided (non-contiguous NumPy views) inputs x edge bounds; the errors."""
import numpy as np
import pytest

import jitexpr as jx

FORMS_1D = ["a[1:] - a[:-1]", "a[::2]", "a[::-1]", "a[-1]", "a[None, :]", "a[..., 0]", "a[3:1]", "a[5:100]",
            "a[-100:2]", "a[::-3]", "a[100:]", "a[::-1][2:]", "a[1:] * 2 + a[:-1]", "sum(a[1:] * a[:-1])"]
FORMS_2D = ["m[:, 0]", "m[1]", "m[1, -1]", "m[::2, ::-1]", "m[None, :, 1:]", "m[..., 1]", "m[1][2:]",
            "m[:, 1:] - m[:, :-1]", "m[1:] + m[0]", "(m * 2)[::-1]", "sum(m, axis=1)[1:]", "m[:, None] * m[None, 1]"]
DTYPES = ["bool", "int8", "int32", "uint64", "float16", "float32", "float64", "complex128"]


def sample(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    dt = np.dtype(dtype)
    if dt.kind == "b":
        v = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        v = rng.integers(0, 50, n).astype(dt)
    else:
        v = (rng.standard_normal(n) * 4).astype(dt)
    return v.reshape(shape)


def strided(x):
    """The same values as a non-contiguous view (every other element of a larger buffer)."""
    big = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
    big[..., ::2] = x
    v = big[..., ::2]
    assert not v.flags.c_contiguous
    return v


def numpy_of(text, names):
    with np.errstate(all="ignore"):
        return np.asarray(eval(text, {"sum": np.sum}, names))


def check(text, names):
    try:
        want = numpy_of(text, names)
    except TypeError:
        with pytest.raises(TypeError):
            jx.evaluate(text, names, backend="cpu")
        return
    got = np.asarray(jx.evaluate(text, names, backend="cpu"))
    assert got.dtype == want.dtype, text
    assert got.shape == want.shape, text
    if want.dtype.kind in "fc" and text.startswith("sum"):
        np.testing.assert_allclose(got, want, rtol=1e-2 if want.dtype == np.float16 else 1e-6)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("text", FORMS_1D)
def test_one_dimensional_forms_are_numpys(text, dtype, layout):
    a = sample(dtype, (9,), 1)
    check(text, {"a": strided(a) if layout == "strided" else a})


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("text", FORMS_2D)
def test_two_dimensional_forms_are_numpys(text, dtype, layout):
    m = sample(dtype, (4, 5), 2)
    check(text, {"m": strided(m) if layout == "strided" else m})


def test_a_numpy_view_with_a_negative_stride_is_indexed_again():
    base = np.arange(20.0)
    r = base[::-2]
    np.testing.assert_array_equal(jx.evaluate("r[1:4] * 10", {"r": r}, backend="cpu"), r[1:4] * 10)


def test_the_frame_binds_the_indexed_names():
    a = np.arange(5.0)
    np.testing.assert_array_equal(jx.evaluate("a[1:] - a[:-1]", backend="cpu"), np.diff(a))


def test_an_index_past_the_end_is_an_index_error_with_a_caret():
    a = np.arange(4.0)
    with pytest.raises(IndexError) as info:
        jx.evaluate("a[0] + a[4]", {"a": a}, backend="cpu")
    e = info.value
    assert isinstance(e, jx.IndexError) and isinstance(e, jx.Error)
    assert e.message == "index 4 is out of bounds for axis 0 with size 4"
    assert e.span == (9, 10)
    assert "a[0] + a[4]\n" in str(e) and str(e).endswith("^")


def test_too_many_indices_is_an_index_error():
    with pytest.raises(jx.IndexError, match="too many indices for array: array is 1-dimensional, but 2 were indexed"):
        jx.evaluate("a[0, 0]", {"a": np.arange(3)}, backend="cpu")


@pytest.mark.parametrize("text,kind", [("a[k:]", jx.ValueError), ("a[a > 1, ...]", jx.ValueError),
                                       ("a[::0]", jx.ValueError), ("a[1.5]", jx.IndexError),
                                       ("a[1:] - a", jx.ShapeError), ("a[0] = 1", jx.ParseError)])
def test_unsupported_and_wrong_indices_are_typed_errors(text, kind):
    with pytest.raises(kind):
        jx.evaluate(text, {"a": np.arange(4), "k": 1}, backend="cpu")
