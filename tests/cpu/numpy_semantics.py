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
import sys
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
    ("Arctan2", np.arctan2, "float", TRANS),
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
]


def dtypes_for(kind):
    return {"all": ["bool"] + INTS + FLOATS, "num": INTS + FLOATS, "real": INTS + FLOATS, "float": FLOATS,
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
