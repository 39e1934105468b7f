#!/usr/bin/env python3
"""Expected results of jitexpr's scalar ops, computed by NumPy 2, over special values.

Prints one case per line:  <OpId> <dtype> <tol> <arg bits>... <result dtype> <result bits>
Values are the raw bits of the element in hex (complex: real bits then imaginary bits joined
with ':'), so the comparison in test_semantics.cpp is exact. <tol> is the allowed error in
ULP of the result (0: bitwise equal, NaN equals any NaN).
Cases where NumPy raises or is undefined (integer ** negative, float->int out of range) are
left out: jitexpr documents its own choice for those in dsl/semantics.h.
"""
import itertools
import math
import sys
from fractions import Fraction
import warnings

import numpy as np

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "float32", "float64"]


def int_values(dt):
    info = np.iinfo(dt)
    vals = {0, 1, 2, 3, 7, 100, info.max, info.max - 1, info.min}
    if info.min < 0:
        vals |= {-1, -2, -7, -100, info.min + 1}
    return [np.array(v, dtype=dt) for v in sorted(vals)]


def float_values(dt):
    t = np.dtype(dt).type
    fi = np.finfo(dt)
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 7.0, -7.0, 0.1, 100.25,
            float(fi.max), float(fi.smallest_subnormal), float(fi.tiny), np.inf, -np.inf, np.nan]
    return [np.array(t(v), dtype=dt) for v in vals]


def bits(x):
    a = np.asarray(x)
    if a.dtype == np.bool_:
        return "1" if bool(a) else "0"
    if a.dtype.kind == "c":
        r = np.asarray(a.real)
        i = np.asarray(a.imag)
        return bits(r) + ":" + bits(i)
    u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    return format(int(a.reshape(1).view(u)[0]), "x")


EXACT = 0
TRANS = 4

BINARY = [
    ("Add", np.add, "all", EXACT), ("Sub", np.subtract, "num", EXACT), ("Mul", np.multiply, "all", EXACT),
    ("Div", np.true_divide, "float", EXACT), ("FloorDiv", np.floor_divide, "real", EXACT),
    ("Mod", np.remainder, "real", EXACT), ("Pow", np.power, "real", TRANS),
    ("BitAnd", np.bitwise_and, "intb", EXACT), ("BitOr", np.bitwise_or, "intb", EXACT),
    ("BitXor", np.bitwise_xor, "intb", EXACT), ("Shl", np.left_shift, "int", EXACT),
    ("Shr", np.right_shift, "int", EXACT),
    ("Lt", np.less, "all", EXACT), ("Le", np.less_equal, "all", EXACT), ("Eq", np.equal, "all", EXACT),
    ("Ne", np.not_equal, "all", EXACT), ("Ge", np.greater_equal, "all", EXACT), ("Gt", np.greater, "all", EXACT),
    ("Maximum", np.maximum, "all", EXACT), ("Minimum", np.minimum, "all", EXACT),
    ("Fmod", np.fmod, "real", EXACT), ("Copysign", np.copysign, "float", EXACT),
    ("Nextafter", np.nextafter, "float", EXACT), ("Hypot", np.hypot, "float", 1),
    ("Arctan2", np.arctan2, "float", TRANS), ("Logaddexp", np.logaddexp, "float", TRANS),
    ("Logaddexp2", np.logaddexp2, "float", TRANS), ("Heaviside", np.heaviside, "float", EXACT),
    # issue 16: the rest of NumPy's numeric ufuncs (ties of fmax/fmin give the first operand, as
    # NumPy's loops do for these scalars)
    ("Fmax", np.fmax, "all", EXACT), ("Fmin", np.fmin, "all", EXACT), ("Gcd", np.gcd, "int", EXACT),
    ("Lcm", np.lcm, "int", EXACT), ("FloatPower", np.float_power, "float64", TRANS),
    ("DivmodQuotient", lambda a, b: np.divmod(a, b)[0], "real", EXACT),
    ("DivmodRemainder", lambda a, b: np.divmod(a, b)[1], "real", EXACT),
]
UNARY = [
    ("Neg", np.negative, "num", EXACT), ("Invert", np.invert, "intb", EXACT), ("Abs", np.absolute, "all", EXACT),
    ("Sign", np.sign, "num", EXACT), ("Square", np.square, "num", EXACT), ("Reciprocal", np.reciprocal, "float", EXACT),
    ("Ceil", np.ceil, "float", EXACT), ("Floor", np.floor, "float", EXACT), ("Round", np.rint, "float", EXACT),
    ("Trunc", np.trunc, "float", EXACT), ("Sqrt", np.sqrt, "float", EXACT),
    ("Isnan", np.isnan, "all", EXACT), ("Isinf", np.isinf, "all", EXACT), ("Isfinite", np.isfinite, "all", EXACT),
    ("Signbit", np.signbit, "real", EXACT),
    ("Sin", np.sin, "float", TRANS), ("Cos", np.cos, "float", TRANS), ("Tan", np.tan, "float", TRANS),
    ("Arcsin", np.arcsin, "float", TRANS), ("Arccos", np.arccos, "float", TRANS), ("Arctan", np.arctan, "float", TRANS),
    ("Sinh", np.sinh, "float", TRANS), ("Cosh", np.cosh, "float", TRANS), ("Tanh", np.tanh, "float", TRANS),
    ("Arcsinh", np.arcsinh, "float", TRANS), ("Arccosh", np.arccosh, "float", TRANS),
    ("Arctanh", np.arctanh, "float", TRANS), ("Log", np.log, "float", TRANS), ("Log1p", np.log1p, "float", TRANS),
    ("Log10", np.log10, "float", TRANS), ("Log2", np.log2, "float", TRANS), ("Exp", np.exp, "float", TRANS),
    ("Expm1", np.expm1, "float", TRANS), ("Exp2", np.exp2, "float", TRANS), ("Cbrt", np.cbrt, "float", TRANS),
    ("Deg2rad", np.deg2rad, "float", EXACT), ("Rad2deg", np.rad2deg, "float", EXACT),
    ("Fabs", np.fabs, "float", EXACT), ("Spacing", np.spacing, "float", EXACT),
    ("FrexpMantissa", lambda a: np.frexp(a)[0], "float", EXACT),
    ("ModfFraction", lambda a: np.modf(a)[0], "float", EXACT), ("ModfIntegral", lambda a: np.modf(a)[1], "float", EXACT),
]
# Ops whose result dtype is not their operand's (emitted whatever the result dtype).
OTHER_RESULT = [
    ("FrexpExponent", lambda a: np.frexp(a)[1], "float", EXACT),
    ("BitwiseCount", np.bitwise_count, "int", EXACT),
]


COMPLEX = ["complex64", "complex128"]
# Complex functions over the full grid of special values of both parts (C99 Annex G, as NumPy).
COMPLEX_UNARY = [
    ("Sqrt", np.sqrt), ("Sin", np.sin), ("Cos", np.cos), ("Tan", np.tan), ("Arcsin", np.arcsin),
    ("Arccos", np.arccos), ("Arctan", np.arctan), ("Sinh", np.sinh), ("Cosh", np.cosh), ("Tanh", np.tanh),
    ("Arcsinh", np.arcsinh), ("Arccosh", np.arccosh), ("Arctanh", np.arctanh), ("Log", np.log),
    ("Log1p", lambda a: accurate_log1p(a)), ("Log10", np.log10), ("Log2", np.log2), ("Exp", np.exp), ("Expm1", np.expm1),
    ("Square", np.square), ("Reciprocal", np.reciprocal), ("Sign", np.sign), ("Abs", np.absolute),
    ("Neg", np.negative), ("Isnan", np.isnan), ("Isinf", np.isinf), ("Isfinite", np.isfinite),
]
COMPLEX_BINARY = [
    ("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply), ("Div", np.true_divide), ("Pow", np.power),
    ("Eq", np.equal), ("Ne", np.not_equal), ("Maximum", np.maximum), ("Minimum", np.minimum),
    ("Fmax", np.fmax), ("Fmin", np.fmin),
    # complex(re, im): its operands arrive as complex; the parts are re's and im's real parts.
    ("MakeComplex", lambda a, b: make_complex(a.real, b.real, a.dtype)),
]
# ULPs allowed per part. Arithmetic is exact (Mul and Square: NumPy's FMA loops, as jitexpr's);
# Abs within 2 (NumPy's SIMD hypot against the C library's); the transcendental functions
# within TRANS; Pow within 32 (exp(b log a) magnifies log's last-place error by |b log a|).
COMPLEX_TOL = {"Square": EXACT, "Sign": EXACT, "Neg": EXACT, "Isnan": EXACT, "Isinf": EXACT, "Isfinite": EXACT,
               "Add": EXACT, "Sub": EXACT, "Mul": EXACT, "Div": EXACT, "Eq": EXACT, "Ne": EXACT, "Maximum": EXACT,
               "Minimum": EXACT, "Fmax": EXACT, "Fmin": EXACT, "MakeComplex": EXACT, "Reciprocal": EXACT, "Abs": 2, "Pow": 32}


def complex_parts(dt, full):
    t = np.float32 if dt == "complex64" else np.float64
    big = 3e38 if dt == "complex64" else 1e308
    parts = [0.0, -0.0, 0.5, -0.5, 2.0, -2.0, np.inf, -np.inf, np.nan]
    if full:
        parts += [1.0, -1.0, big, -big, 1e-30 if dt == "complex64" else 1e-300, 30.0, -30.0]
    return [t(p) for p in parts]


def accurate_log1p(a):
    """log1p of a finite complex value with the real part log|1 + z| computed exactly (jitexpr's
    is accurate there; NumPy's log(hypot(1 + x, y)) rounds 1 + x first and loses the real part's
    digits near z = 0 and where |1 + z| is near 1). The imaginary part is NumPy's."""
    x, y = float(a.real), float(a.imag)
    r = np.log1p(a)
    if not (math.isfinite(x) and math.isfinite(y)) or (x == -1 and y == 0):
        return r
    fx, fy = Fraction(x), Fraction(y)
    m = (1 + fx) ** 2 + fy * fy  # |1 + z|^2, exactly
    if Fraction(1, 2) < m < 2:
        re = 0.5 * math.log1p(float(m - 1))
    else:  # m = mant * 2**k with mant in [1/2, 2): log m = log(mant) + k log 2
        k = m.numerator.bit_length() - m.denominator.bit_length()
        re = 0.5 * (math.log(float(m / Fraction(2) ** k)) + k * math.log(2))
    out = np.zeros((), dtype=a.dtype)
    out.real = re
    out.imag = r.imag
    return out


def complex_values(dt, full=True):
    parts = complex_parts(dt, full)
    return [make_complex(a, b, dt) for a in parts for b in parts]


def make_complex(re, im, dt):
    z = np.zeros((), dtype=dt)
    z.real = re
    z.imag = im
    return z


def dtypes_for(kind):
    return {"all": ["bool"] + INTS + FLOATS, "num": INTS + FLOATS, "float64": ["float64"], "real": INTS + FLOATS, "float": FLOATS,
            "int": INTS, "intb": ["bool"] + INTS}[kind]


def values(dt):
    if dt == "bool":
        return [np.array(False), np.array(True)]
    return int_values(dt) if dt in INTS else float_values(dt)


def emit(op, dt, tol, args, res):
    print(op, dt, tol, *[bits(a) for a in args], np.asarray(res).dtype.name, bits(res))


def main():
    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    for op, fn, kind, tol in BINARY:
        for dt in dtypes_for(kind):
            for a, b in itertools.product(values(dt), repeat=2):
                if op == "Pow" and dt in INTS and int(b) < 0:
                    continue  # NumPy raises; jitexpr documents its own result
                if op == "Pow" and dt in FLOATS and np.isneginf(a) and float(b) != np.trunc(float(b)):
                    continue  # (-inf) ** 0.5: C99 says +inf, NumPy's SIMD pow gives nan on some CPUs
                if op == "Pow" and dt in INTS:
                    t = EXACT
                else:
                    t = tol
                try:
                    r = fn(a, b)
                except (ValueError, TypeError, ArithmeticError):
                    continue
                if np.asarray(r).dtype != a.dtype and np.asarray(r).dtype != np.bool_:
                    continue  # NumPy promoted (e.g. bool + bool stays bool; skip any other promotion)
                emit(op, dt, t, [a, b], r)
    for op, fn, kind, tol in UNARY:
        for dt in dtypes_for(kind):
            for a in values(dt):
                if op == "Sign" and dt == "bool":
                    continue
                try:
                    r = fn(a)
                except (ValueError, TypeError, ArithmeticError):
                    continue
                if np.asarray(r).dtype != a.dtype and np.asarray(r).dtype != np.bool_:
                    continue
                emit(op, dt, tol, [a], r)
    for op, fn, kind, tol in OTHER_RESULT:
        for dt in dtypes_for(kind):
            for a in values(dt):
                emit(op, dt, tol, [a], fn(a))
    for dt in COMPLEX:
        for op, fn in COMPLEX_UNARY:
            for a in complex_values(dt):
                if op == "Log1p" and max(abs(a.real), abs(a.imag)) > 1e30:
                    continue  # NumPy's log1p overflows in hypot(1 + x, y); jitexpr gives the finite value
                r = fn(a)
                emit(op, dt, COMPLEX_TOL.get(op, TRANS), [a], r)
        # Finite values of every scale (seeded): accuracy away from the special values.
        rng = np.random.default_rng(7)
        lim = 30 if dt == "complex64" else 250
        mags = 10.0 ** rng.uniform(-lim / 3, lim / 3, size=(400, 2)) * rng.choice([-1, 1], size=(400, 2))
        mags[:100] = rng.uniform(-3, 3, size=(100, 2))
        randoms = [make_complex(re, im, dt) for re, im in mags]
        for op, fn in COMPLEX_UNARY:
            for a in randoms:
                r = fn(a)
                emit(op, dt, COMPLEX_TOL.get(op, TRANS), [a], r)
        for op, fn in COMPLEX_BINARY:
            vals = complex_values(dt, full=False)
            for a, b in itertools.product(vals, repeat=2):
                r = fn(a, b)
                emit(op, dt, COMPLEX_TOL.get(op, TRANS), [a, b], r)
    # Casts within range (NumPy leaves out-of-range float -> int undefined).
    for src in ["bool"] + INTS + FLOATS:
        for dst in ["bool"] + INTS + FLOATS:
            for a in values(src):
                if src in FLOATS and dst in INTS:
                    f = float(a)
                    info = np.iinfo(dst)
                    if not np.isfinite(f) or not (info.min - 1 < f < info.max + 1) or abs(f) >= 2.0**52:
                        continue
                    if f == float(info.max) and np.dtype(src).itemsize < 8:
                        continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = a.astype(dst)
                print("Cast", src, 0, bits(a), dst, bits(r))


if __name__ == "__main__":
    sys.stdout.write("")
    main()
