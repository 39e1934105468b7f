"""jitexpr.numexpr against the real numexpr on the same calls: results, dtypes and exceptions.
Where they differ on purpose (jitexpr follows NumPy 2 where numexpr departs from it, or has no
such function), the difference is listed in numexpr_differences.py with its reason, and the
test checks that jitexpr agrees with NumPy there instead."""
import warnings

import numpy as np
import pytest

from support import need
from numexpr_differences import DIFFERENCES, NUMEXPR_NOT_NUMPY, difference_for
from test_numpy_diff import make, numpy_value, tolerance

import jitexpr
import jitexpr.numexpr as jne

ne = None

EXPRESSIONS = [
    "a * 2 + b", "2*a + 3*b", "a*b - a/(b + 3)", "a**2 + 2*a*b + b**2", "where(a > b, a, b)",
    "where(a > 1, 2, -1)", "where(a > 0.5, sin(a)*b + exp(-b), a*a - b)", "sqrt(abs(a)) + log1p(abs(b))",
    "arctan2(a, b)", "sin(a)**2 + cos(a)**2", "tanh(a) * sinh(b)", "exp(-a*a)", "log10(abs(a) + 1)",
    "a % 4", "a // 3", "(a > b) & (b > 0)", "~(a > b)", "(a < 1) | (b > 2)", "sum(a * b)", "prod(a + 1)",
    "sum(a, axis=0)", "a + 1", "a * 2.5", "b ** 2", "a ** -1", "abs(b)", "-a", "a > 2", "a == b",
    "maximum(a, b)", "isnan(a / b)", "real(a)", "ceil(a) + floor(b)", "a & b",
    "a << 1", "fmod(a, 3)", "copysign(a, b)", "a / b", "pi * a", "e", "a +", "sine(a)", "a + zz",
    "a[0]", "a; b", "1/0",
]
DTYPES = [("float64", "float64"), ("float32", "float32"), ("int64", "int64"), ("int32", "int32"),
          ("bool", "bool"), ("float32", "float64"), ("int32", "float64"), ("int8", "int8"), ("int64", "float32")]


# Byte strings (issue 32), on S4 arrays of the bytes below (0xff orders differently in numexpr:
# numexpr_differences.py), against each other and against literals.
STRING_EXPRESSIONS = ["a == b", "a != b", "a < b", "a >= b'b'", "b'ab' > a", "contains(a, b)", "contains(a, b'a')",
                      "a == 'ab'", "(a == b'') | contains(b'xaby', a)", "a", "a + b", "a * 2"]
STRING_DTYPES = [("bytes", "bytes")]


def make_bytes(shape, seed):
    rng = np.random.default_rng(seed)
    pieces = [b"a", b"b", b"ab", b"\xff", b"\x00", b""]
    flat = [b"".join(pieces[int(i)] for i in rng.integers(0, len(pieces), 2)) for _ in range(int(np.prod(shape)))]
    return np.array(flat, dtype="S4").reshape(shape)


def inputs(da, db):
    if da == "bytes":
        return make_bytes((3, 4), 11), make_bytes((3, 4), 12)
    return make(da, (3, 4), 11), make(db, (3, 4), 12)


def run_ne(module, text, a, b):
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return "ok", module.evaluate(text, local_dict={"a": a, "b": b})
    except Exception as e:  # noqa: BLE001 - the exception's type is compared
        return "raises", e


# The narrower built-ins first: jitexpr's ZeroDivisionError and OverflowError are ValueErrors too.
KINDS = (SyntaxError, KeyError, ZeroDivisionError, OverflowError, NotImplementedError, TypeError, ValueError,
         NameError)


def kind(e):
    for k in KINDS:
        if isinstance(e, k):
            return k
    return type(e)


def same(want, got, a, b):
    if want[0] != got[0]:
        return False
    if want[0] == "raises":
        return kind(want[1]) is kind(got[1])
    w, g = np.asarray(want[1]), np.asarray(got[1])
    if g.dtype != w.dtype or g.shape != w.shape:
        return False
    if w.dtype.kind in "fc":
        return np.allclose(g, w, rtol=tolerance(w.dtype, a, b), atol=1e-12, equal_nan=True)
    return np.array_equal(g, w)


def check_expectation(diff, text, a, b, got):
    if diff.expect == "numpy":
        with np.errstate(all="ignore"):
            ref = np.asarray(numpy_value(text, {"a": a, "b": b}))
        assert got[0] == "ok", (diff.reason, got)
        g = np.asarray(got[1])
        assert g.dtype == ref.dtype, f"{diff.name}: jitexpr gives {g.dtype}, NumPy {ref.dtype}"
        if ref.dtype.kind in "fc":
            np.testing.assert_allclose(g, ref, rtol=tolerance(ref.dtype, a, b), equal_nan=True)
        else:
            np.testing.assert_array_equal(g, ref)
    elif isinstance(diff.expect, type):
        assert got[0] == "raises" and isinstance(got[1], diff.expect), (diff.reason, got)
    else:
        assert got[0] == "ok" and diff.expect(got[1]), (diff.reason, got)


CASES = [(t, da, db) for t in EXPRESSIONS for da, db in DTYPES] + \
    [(t, da, db) for t in STRING_EXPRESSIONS for da, db in STRING_DTYPES]


@pytest.mark.parametrize("text,da,db", CASES)
def test_same_as_numexpr(text, da, db):
    global ne
    ne = ne or need("numexpr")
    a, b = inputs(da, db)
    want = run_ne(ne, text, a, b)
    got = run_ne(jne, text, a, b)
    if same(want, got, a, b):
        return
    diff = difference_for(text, da, db)
    assert diff is not None, f"{text!r} on {da}, {db}: numexpr {want}, jitexpr.numexpr {got} (not a known difference)"
    check_expectation(diff, text, a, b, got)


def test_every_listed_difference_still_occurs():
    """The list must not go stale: each entry describes at least one call where they differ."""
    global ne
    ne = ne or need("numexpr")
    for d in DIFFERENCES:
        hits = 0
        for text, da, db in CASES:
            if not d.applies(text, da, db) or difference_for(text, da, db) is not d:
                continue
            a, b = inputs(da, db)
            hits += 0 if same(run_ne(ne, text, a, b), run_ne(jne, text, a, b), a, b) else 1
        assert hits > 0, f"listed difference no longer occurs: {d.name} ({d.reason})"


@pytest.mark.parametrize("name,text,names", NUMEXPR_NOT_NUMPY, ids=[n for n, _, _ in NUMEXPR_NOT_NUMPY])
def test_where_the_drop_in_follows_numexpr_not_numpy(name, text, names):
    global ne
    ne = ne or need("numexpr")

    def run(f):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return "ok", f(text, dict(names))
        except Exception as e:  # noqa: BLE001 - the exception's type is compared
            return "raises", e

    theirs = run(lambda t, d: ne.evaluate(t, local_dict=d))
    ours = run(lambda t, d: jne.evaluate(t, local_dict=d))
    numpys = run(lambda t, d: jitexpr.evaluate(t, d))
    assert same(theirs, ours, None, None), (name, theirs, ours)
    assert not same(theirs, numpys, None, None), (name, "jitexpr.evaluate gives numexpr's answer too", numpys)

