"""Issue 16's ufuncs against NumPy 2, by name: every dtype each accepts (and the TypeError where
NumPy has no loop), special values (+-0, +-inf, NaN, integer extremes, the largest and smallest
floats), Python scalars, and the functions of two results assigned to two names
(`m, e = frexp(x)`) at each Python entry point.

Values are compared exactly (NaN equal to NaN, the sign of a zero checked) except float_power,
which is C's pow as NumPy's is (allowed 2 ulps), and fmax/fmin, whose ties between +0 and -0
NumPy itself resolves differently in different loops (the sign of a tied zero is not checked)."""
import warnings

import numpy as np
import pytest

import jitexpr as jx

BOOL = ["bool"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]
ALL = BOOL + INTS + FLOATS + COMPLEX


def values(dtype, seed=0):
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    if dt == np.bool_:
        return np.array([False, True, True, False, True, False, False, True])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        special = [0, 1, 2, 3, 6, 7, 12, info.max, info.max - 1, info.min]
        if info.min < 0:
            special += [-1, -2, -6, -12, info.min + 1]
        rand = rng.integers(max(info.min, -1000), min(info.max, 1000), 9, endpoint=True)
        return np.concatenate([np.array(special, dtype=dt), rand.astype(dt)])
    if dt.kind == "f":
        fi = np.finfo(dt)
        special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.75, -7.0,
                   float(fi.max), -float(fi.max), float(fi.smallest_subnormal), float(fi.tiny), 1e4]
        rand = rng.standard_normal(8) * 100
        return np.concatenate([np.array(special, dtype=dt), rand.astype(dt)])
    t = np.float32 if dt == np.complex64 else np.float64
    re, im = values(t, seed), values(t, seed + 1)
    return (re + 1j * im).astype(dt)


def numpy_outcome(fn, *args):
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return "ok", fn(*args)
    except TypeError as e:
        return "TypeError", e
    except (ValueError, OverflowError) as e:
        return "ValueError", e


def assert_same(got, ref, what, ulps=0, tied_zero_sign=True, scale=None):
    """`ulps` of the larger of |ref| and `scale` (a complex value's parts: of its larger part)."""
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.dtype == ref.dtype, f"{what}: dtype {got.dtype}, NumPy gives {ref.dtype}"
    assert got.shape == ref.shape, f"{what}: shape {got.shape}, NumPy gives {ref.shape}"
    if ref.dtype.kind == "c":
        with np.errstate(all="ignore"):
            big = np.maximum(np.abs(ref.real), np.abs(ref.imag))
            big = np.where(np.isfinite(big), big, 0)
        assert_same(got.real, ref.real, what + " (real part)", ulps, tied_zero_sign, big)
        assert_same(got.imag, ref.imag, what + " (imaginary part)", ulps, tied_zero_sign, big)
        return
    if ref.dtype.kind != "f":
        np.testing.assert_array_equal(got, ref, err_msg=what)
        return
    assert np.array_equal(np.isnan(got), np.isnan(ref)), f"{what}: NaN where NumPy has none (or not where it has)\n{got}\n{ref}"
    ok = ~np.isnan(ref)
    g, r = got[ok], ref[ok]
    if ulps == 0:
        bad = g != r
    else:
        mag = np.abs(r) if scale is None else np.maximum(np.abs(r), np.asarray(scale, dtype=r.dtype)[ok])
        spacing = np.spacing(mag)
        bad = ~((g == r) | (np.abs(g.astype(np.float64) - r.astype(np.float64)) <= ulps * spacing))
    if tied_zero_sign:
        zero = (g == 0) & (r == 0)
        bad |= zero & (np.signbit(g) != np.signbit(r))
    assert not bad.any(), f"{what}: {bad.sum()} elements differ: got {g[bad][:4]}, NumPy {r[bad][:4]}"


def check(text, fn, ulps=0, tied_zero_sign=True, **arrays):
    kind, ref = numpy_outcome(fn, *arrays.values())
    if kind != "ok":
        err = jx.TypeError if kind == "TypeError" else jx.ValueError
        with pytest.raises(err):
            jx.evaluate(text, **arrays)
        return
    assert_same(jx.evaluate(text, **arrays), ref, f"{text} on {[a.dtype.name for a in arrays.values()]}", ulps,
                tied_zero_sign)


# ---- the operators by their ufunc names -------------------------------------------------------
BINARY_ALIASES = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "true_divide": np.true_divide, "floor_divide": np.floor_divide, "remainder": np.remainder,
    "mod": np.mod, "power": np.power, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor, "left_shift": np.left_shift, "right_shift": np.right_shift,
    "bitwise_left_shift": np.bitwise_left_shift, "bitwise_right_shift": np.bitwise_right_shift,
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}
UNARY_ALIASES = {
    "negative": np.negative, "positive": np.positive, "invert": np.invert, "bitwise_not": np.bitwise_not,
    "bitwise_invert": np.bitwise_invert, "logical_not": np.logical_not,
}
# NumPy orders complex numbers; jitexpr rejects an order of them (docs/language.md).
COMPLEX_ORDER = {"less", "less_equal", "greater", "greater_equal", "fmax", "fmin"}


def operands_for(name, dt):
    a, b = values(dt, 1), values(dt, 2)
    if name in ("left_shift", "right_shift", "bitwise_left_shift", "bitwise_right_shift") and dt in INTS:
        b = (np.arange(a.size) % (np.dtype(dt).itemsize * 8 + 2)).astype(dt)  # NumPy's shifts past the width differ by CPU
    if name == "power" and dt in INTS:
        a, b = (a % 5).astype(dt), (np.arange(a.size) % 7).astype(dt)  # non-negative exponents, no overflow noise
    return a, b


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("name", sorted(BINARY_ALIASES))
def test_binary_operator_by_its_ufunc_name_matches_numpy(name, dt):
    if dt in COMPLEX and name in COMPLEX_ORDER:
        pytest.skip("jitexpr does not order complex numbers (documented)")
    a, b = operands_for(name, dt)
    # power: C's pow (real), exp(b log a) for complex (the semantics test allows it 32 ulps)
    ulps = {"float": 4, "complex": 32}.get("complex" if dt in COMPLEX else "float", 0) if name == "power" else 0
    if name == "power" and dt in INTS + BOOL:
        ulps = 0
    if dt in COMPLEX and name in ("multiply", "divide", "true_divide"):
        ulps = 4
    check(f"{name}(a, b)", BINARY_ALIASES[name], ulps=ulps, a=a, b=b)


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("name", sorted(UNARY_ALIASES))
def test_unary_operator_by_its_ufunc_name_matches_numpy(name, dt):
    check(f"{name}(a)", UNARY_ALIASES[name], a=values(dt))


def test_operator_names_and_operators_give_the_same_program():
    a, b = values("float32", 3), values("float32", 4)
    for text, ref in [("add(a, b) - multiply(a, b)", "a + b - a * b"), ("less(a, b) | equal(a, b)", "(a < b) | (a == b)"),
                      ("negative(floor_divide(a, b))", "-(a // b)")]:
        assert_same(jx.evaluate(text, a=a, b=b), jx.evaluate(ref, a=a, b=b), text)


# ---- new functions of one result --------------------------------------------------------------
BINARY_FUNCS = {"fmax": (np.fmax, 0), "fmin": (np.fmin, 0), "float_power": (np.float_power, 2), "gcd": (np.gcd, 0),
                "lcm": (np.lcm, 0)}
UNARY_FUNCS = {"spacing": np.spacing, "bitwise_count": np.bitwise_count, "fabs": np.fabs}


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("name", sorted(BINARY_FUNCS))
def test_binary_function_matches_numpy_for_each_dtype(name, dt):
    if dt in COMPLEX and name in COMPLEX_ORDER:
        pytest.skip("jitexpr does not order complex numbers (documented)")
    fn, ulps = BINARY_FUNCS[name]
    a, b = values(dt, 1), values(dt, 2)[::-1].copy()
    if name == "float_power" and dt in COMPLEX:
        # power's complex loop, exp(b log a), magnifies log's last-place error by |b log a|: the
        # exponents are kept small (inf and NaN parts stay), and 32 ulps allowed as for power
        ulps = 32
        b = (b.real / 64 + 1j * (b.imag / 64)).astype(dt)
        # (Not a base of subnormal parts: the complex log under power loses |z|'s low digits
        # there, log(5e-324+5e-324j) is -744.44 where NumPy's is -744.09, a difference of its own.)
        keep = ~((np.abs(a) < np.finfo(a.real.dtype).tiny) & (a != 0))
        a, b = a[keep], b[keep]
    check(f"{name}(a, b)", fn, ulps=ulps, tied_zero_sign=name not in ("fmax", "fmin"), a=a, b=b)


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("name", sorted(UNARY_FUNCS))
def test_unary_function_matches_numpy_for_each_dtype(name, dt):
    check(f"{name}(a)", UNARY_FUNCS[name], a=values(dt))


MIXED = [("int8", "uint8"), ("int16", "uint32"), ("int64", "int32"), ("uint64", "int64"), ("bool", "int8"),
         ("float16", "int8"), ("float32", "int64"), ("float32", "float64"), ("int32", "float16")]


@pytest.mark.parametrize("da,db", MIXED)
@pytest.mark.parametrize("name", sorted(BINARY_FUNCS))
def test_binary_function_promotes_mixed_dtypes_as_numpy(name, da, db):
    fn, ulps = BINARY_FUNCS[name]
    a, b = values(da, 1), values(db, 2)
    n = min(a.size, b.size)
    check(f"{name}(a, b)", fn, ulps=ulps, tied_zero_sign=name not in ("fmax", "fmin"), a=a[:n], b=b[::-1][:n].copy())


@pytest.mark.parametrize("text,ref", [
    ("gcd(a, 6)", lambda a: np.gcd(a, 6)), ("lcm(a, 4)", lambda a: np.lcm(a, 4)),
    ("fmax(a, nan)", lambda a: np.fmax(a, np.nan)), ("fmin(nan, a)", lambda a: np.fmin(np.nan, a)),
    ("float_power(a, 2)", lambda a: np.float_power(a, 2)), ("float_power(a, -1)", lambda a: np.float_power(a, -1)),
])
@pytest.mark.parametrize("dt", ["int8", "uint16", "int64", "float16", "float32", "float64"])
def test_functions_with_a_python_scalar_match_numpy(text, ref, dt):
    check(text, ref, ulps=2 if "float_power" in text else 0, tied_zero_sign="fm" not in text, a=values(dt, 5))


@pytest.mark.parametrize("dt", ["int8", "float16", "float32", "float64"])
def test_float_power_with_an_imaginary_literal_is_complex128(dt):
    a = values(dt, 5)
    a = a[np.isfinite(a) & (np.abs(a) < 1e4)]
    got = jx.evaluate("float_power(a, 0.5j)", a=a)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, np.float_power(a, 0.5j), rtol=1e-12, atol=1e-300)


def test_gcd_and_lcm_of_integer_extremes_wrap_as_numpy():
    for dt in ["int8", "int64"]:
        info = np.iinfo(dt)
        a = np.array([info.min, info.min, info.min, 0, info.max, -1], dtype=dt)
        b = np.array([0, info.min, 6, 0, info.max - 1, info.min], dtype=dt)
        assert_same(jx.evaluate("gcd(a, b)", a=a, b=b), np.gcd(a, b), f"gcd {dt}")
        assert_same(jx.evaluate("lcm(a, b)", a=a, b=b), np.lcm(a, b), f"lcm {dt}")


@pytest.mark.parametrize("name", ["gcd", "lcm"])
@pytest.mark.parametrize("dt", BOOL + FLOATS + COMPLEX)
def test_gcd_and_lcm_take_integers_only(name, dt):
    with pytest.raises(jx.TypeError, match=f"{name}\\(\\) is not supported for {dt}"):
        jx.evaluate(f"{name}(a, a)", a=values(dt))


@pytest.mark.parametrize("dt", FLOATS + COMPLEX)
def test_bitwise_count_rejects_inexact_dtypes(dt):
    with pytest.raises(jx.TypeError, match="bitwise_count"):
        jx.evaluate("bitwise_count(a)", a=values(dt))


# ---- ldexp: a float mantissa and an integer exponent, not promoted together -----------------
LDEXP_EXPONENTS = BOOL + INTS + FLOATS


@pytest.mark.parametrize("de", LDEXP_EXPONENTS)
@pytest.mark.parametrize("dx", BOOL + INTS + FLOATS + COMPLEX)
def test_ldexp_matches_numpy_for_each_pair_of_dtypes(dx, de):
    x = values(dx, 1)
    n = np.resize(values(de, 2), x.size)
    if np.dtype(de).kind in "iu":
        n = np.clip(n.astype(np.int64), -300 if np.dtype(de).kind == "i" else 0, 300).astype(de)
        n[:4] = np.array([0, 1, 5, 3], dtype=de)
    check("ldexp(x, n)", np.ldexp, x=x, n=n)


@pytest.mark.parametrize("dt", FLOATS)
def test_ldexp_saturates_past_the_exponent_range_as_numpy(dt):
    x = values(dt)
    for e in [-(2**40), -1100, -150, -30, 30, 150, 1100, 2**40, 2**62]:
        n = np.full(x.shape, e, dtype=np.int64)
        assert_same(jx.evaluate("ldexp(x, n)", x=x, n=n), np.ldexp(x, n), f"ldexp({dt}, {e})")


@pytest.mark.parametrize("text,ref", [
    ("ldexp(x, 3)", lambda x: np.ldexp(x, 3)), ("ldexp(x, -3)", lambda x: np.ldexp(x, -3)),
    ("ldexp(2.5, x)", lambda x: np.ldexp(2.5, x)), ("ldexp(3, x)", lambda x: np.ldexp(3, x)),
    ("ldexp(True, x)", lambda x: np.ldexp(True, x)), ("ldexp(100000, x)", lambda x: np.ldexp(100000, x)),
])
@pytest.mark.parametrize("dt", ["int8", "uint8", "int32", "int64", "uint32", "float16", "float32", "float64", "bool"])
def test_ldexp_with_a_python_scalar_matches_numpy(text, ref, dt):
    x = values(dt, 3)
    if not text.startswith("ldexp(x"):
        if dt in FLOATS:
            with pytest.raises(jx.TypeError):  # a float exponent: NumPy has no loop either
                jx.evaluate(text, x=x)
            return
        x = np.clip(x.astype(np.int64), 0 if dt.startswith("u") else -20, 20).astype(dt) if dt != "bool" else x
    check(text, ref, x=x)


def test_ldexp_rejects_a_float_or_uint64_exponent_and_a_literal_past_int32():
    x = values("float64")
    with pytest.raises(jx.TypeError, match="integer exponent"):
        jx.evaluate("ldexp(x, 2.0)", x=x)
    with pytest.raises(jx.TypeError, match="uint64"):
        jx.evaluate("ldexp(x, n)", x=x, n=np.arange(x.size, dtype=np.uint64))
    with pytest.raises(jx.ValueError, match="out of bounds for int32"):
        jx.evaluate("ldexp(x, 2**40)", x=x)


# ---- functions of two results -----------------------------------------------------------------
TWO = {"frexp": (np.frexp, 1, BOOL + INTS + FLOATS + COMPLEX), "modf": (np.modf, 1, BOOL + INTS + FLOATS + COMPLEX),
       "divmod": (np.divmod, 2, BOOL + INTS + FLOATS + COMPLEX)}


def two_args(name, dt):
    return [values(dt, 1)] if TWO[name][1] == 1 else [values(dt, 1), values(dt, 2)[::-1].copy()]


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("name", sorted(TWO))
def test_two_results_match_numpy_through_run(name, dt):
    fn, arity, _ = TWO[name]
    args = two_args(name, dt)
    names = dict(zip("ab", args))
    text = f"p, q = {name}({', '.join(names)})"
    kind, ref = numpy_outcome(fn, *args)
    if kind != "ok":
        with pytest.raises(jx.TypeError):
            jx.run(text, **names)
        return
    got = jx.run(text, **names)
    assert sorted(got) == ["p", "q"]
    assert_same(got["p"], ref[0], f"{text} [0] on {dt}")
    assert_same(got["q"], ref[1], f"{text} [1] on {dt}")


@pytest.mark.parametrize("dt", FLOATS)
def test_frexp_results_rebuild_the_value(dt):
    x = values(dt)
    x = x[np.isfinite(x)]
    assert_same(jx.evaluate("m, e = frexp(x); ldexp(m, e)", x=x), x, f"ldexp(*frexp(x)) on {dt}")


def test_two_results_feed_later_statements_and_evaluate_returns_the_last_value():
    a, b = values("int32", 1), values("int32", 2)
    b[b == 0] = 3
    got = jx.evaluate("q, r = divmod(a, b); q * b + r", a=a, b=b)
    with np.errstate(all="ignore"):
        assert_same(got, (a // b) * b + a % b, "q * b + r")
    assert_same(jx.evaluate("q, r = divmod(a, b)", a=a, b=b), a % b, "the value of the statement is its last target")


def test_two_results_in_a_compiled_kernel_give_its_last_value():
    k = jx.compile("m, e = frexp(x); e")
    x = values("float32")
    assert_same(k(x=x), np.frexp(x)[1], "e")


@pytest.mark.parametrize("text,where", [
    ("frexp(x) + 1", "frexp(x)"), ("y = modf(x)", "modf(x)"), ("divmod(x, x)", "divmod(x, x)"),
    ("sum(frexp(x))", "frexp(x)"),
])
def test_a_function_of_two_results_where_one_value_is_expected_is_a_type_error(text, where):
    with pytest.raises(jx.TypeError, match="gives 2 values; assign them to 2 names") as e:
        jx.evaluate(text, x=values("float64"))
    assert where in str(e.value)


@pytest.mark.parametrize("text,message", [
    ("a, b = sin(x)", "2 names are assigned one value"),
    ("a, b = x + 1", "2 names are assigned one value"),
    ("a, b = 3", "2 names are assigned one value"),
    ("a, b = float32(x)", "2 names are assigned one value"),
    ("a, b, c = divmod(x, x)", "divmod() gives 2 values, but 3 names are assigned"),
])
def test_a_count_of_targets_that_differs_from_the_values_is_a_type_error(text, message):
    with pytest.raises(jx.TypeError) as e:
        jx.evaluate(text, x=values("float64"))
    assert message in str(e.value)


@pytest.mark.parametrize("text", ["a, = frexp(x)", "a, 1 = frexp(x)", "a, b", "a, b == frexp(x)", "a, and = frexp(x)"])
def test_malformed_targets_are_a_parse_error(text):
    with pytest.raises(jx.ParseError):
        jx.evaluate(text, x=values("float64"))


def test_targets_and_parameters_know_every_name_of_a_statement():
    assert jx.parameters("m, e = frexp(x); m * e") == ["x"]
