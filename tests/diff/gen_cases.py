#!/usr/bin/env python3
"""Differential test cases: every operator and function x every dtype, computed by NumPy 2.

Writes into OUTDIR the input and expected arrays as .npy files and a manifest, cases.tsv, one
case per line:  expr <TAB> ulps <TAB> expected <TAB> name=file ...
where expected is a .npy file name, or ERROR:<Kind> when NumPy (and so jitexpr) must reject it.
Inputs hold the values that break implementations: NaN, +-inf, +-0, integer extremes, zero
divisors, plus random values; broadcasting and strided (non-contiguous) cases are included.
The C++ side (test_differential.cpp) evaluates each expression with jitexpr and compares.
"""
import os
import sys

import numpy as np

OUT = sys.argv[1] if len(sys.argv) > 1 else "diff_cases"
os.makedirs(OUT, exist_ok=True)
rng = np.random.default_rng(20261129)

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]
ALL = ["bool"] + INTS + FLOATS + COMPLEX
N = 64

counter = [0]
lines = []


def values(dt, n=N, positive=False, small=False):
    dt = np.dtype(dt)
    if dt == np.bool_:
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo = 0 if positive else max(info.min, -100 if small else info.min)
        hi = min(info.max, 100 if small else info.max)
        v = rng.integers(lo, hi, n, dtype=dt, endpoint=True)
        specials = [0, 1, hi, lo] + ([] if positive or dt.kind == "u" else [-1])
        v[: min(n, len(specials))] = np.array(specials, dtype=dt)[:n]
        return v
    if dt.kind == "f":
        v = (rng.standard_normal(n) * (1.5 if small else 10)).astype(dt)
        if positive:
            v = np.abs(v)
        specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e-3]
        if positive:
            specials = [0.0, np.inf, np.nan, 1.0, 0.5, 2.5, 1e-3]
        v[: min(n, len(specials))] = np.array(specials, dtype=dt)[:n]
        return v
    re = values(np.float32 if dt == np.complex64 else np.float64, n, positive, small)
    im = values(np.float32 if dt == np.complex64 else np.float64, n, positive, small)
    rng.shuffle(im)
    return (re + 1j * im).astype(dt)


def save(arr):
    counter[0] += 1
    name = f"a{counter[0]}.npy"
    np.save(os.path.join(OUT, name), arr)
    return name


def case(expr, ulps, inputs, fn):
    """inputs: dict name -> array; fn computes the NumPy result from them."""
    files = " ".join(f"{k}={save(v)}" for k, v in inputs.items())
    try:
        with np.errstate(all="ignore"):
            r = fn(**inputs)
        expected = save(np.asarray(r))
    except TypeError:
        expected = "ERROR:TypeError"
    except IndexError:
        expected = "ERROR:IndexError"
    except (ValueError, OverflowError) as e:
        expected = "ERROR:ShapeError" if "broadcast" in str(e) else "ERROR:ValueError"
    lines.append(f"{expr}\t{ulps}\t{expected}\t{files}")


# ---- binary arithmetic and comparison, every dtype pair on the diagonal plus mixed pairs
BIN = {
    "a + b": np.add, "a - b": np.subtract, "a * b": np.multiply, "a / b": np.true_divide,
    "a // b": np.floor_divide, "a % b": np.remainder,
    "a & b": np.bitwise_and, "a | b": np.bitwise_or, "a ^ b": np.bitwise_xor,
    "a < b": np.less, "a <= b": np.less_equal, "a == b": np.equal, "a != b": np.not_equal,
    "a >= b": np.greater_equal, "a > b": np.greater,
    "maximum(a, b)": np.maximum, "minimum(a, b)": np.minimum,
}
for dt in ALL:
    for expr, f in BIN.items():
        a, b = values(dt), values(dt)
        if expr in ("a // b", "a % b") and np.dtype(dt).kind == "f":
            pass
        # Comparisons of complex order are rejected by jitexpr; NumPy orders them: skip those.
        if np.dtype(dt).kind == "c" and expr in ("a < b", "a <= b", "a >= b", "a > b", "maximum(a, b)", "minimum(a, b)"):
            continue
        ulps = 0
        if np.dtype(dt).kind == "c" and expr in ("a * b", "a / b"):
            ulps = 4  # NumPy's complex product/quotient formulas round differently
        case(expr, ulps, {"a": a, "b": b}, lambda a, b, f=f: f(a, b))

PAIRS = [("int8", "uint8"), ("int64", "float32"), ("int32", "float16"), ("uint64", "int64"),
         ("float32", "float64"), ("bool", "int16"), ("uint16", "float32"), ("int16", "int32"),
         ("float32", "complex128"), ("float16", "complex64")]
for x, y in PAIRS:
    for expr in ("a + b", "a * b", "a / b", "a < b", "a - b"):
        if "complex" in x + y and expr == "a < b":
            continue  # jitexpr does not order complex numbers
        case(expr, 4 if "complex" in x + y and expr in ("a * b", "a / b") else 0, {"a": values(x), "b": values(y)}, lambda a, b, e=expr: eval(e))

# shifts and power on integers (small non-negative exponents: NumPy rejects negative ones)
for dt in INTS:
    a = values(dt)
    b = (rng.integers(0, np.dtype(dt).itemsize * 8 + 3, N)).astype(dt)
    case("a << b", 0, {"a": a, "b": b}, lambda a, b: np.left_shift(a, b))
    case("a >> b", 0, {"a": a, "b": b}, lambda a, b: np.right_shift(a, b))
    e = rng.integers(0, 6, N).astype(dt)
    case("a ** b", 0, {"a": values(dt, small=True), "b": e}, lambda a, b: np.power(a, b))
for dt in FLOATS:
    case("a ** b", 4, {"a": values(dt, positive=True, small=True), "b": values(dt, small=True)}, lambda a, b: np.power(a, b))

# ---- weak literals (NEP 50)
for dt in ["int8", "uint8", "int32", "float16", "float32", "float64", "bool"]:
    a = values(dt)
    case("a + 1", 0, {"a": a}, lambda a: a + 1)
    case("a * 2.5", 0, {"a": a}, lambda a: a * 2.5)
    case("a > 0.5", 0, {"a": a}, lambda a: a > 0.5)
case("a + 300", 0, {"a": values("int8")}, lambda a: a + 300)
case("a < 300", 0, {"a": values("int8")}, lambda a: a < 300)

# ---- issue 16: literal arithmetic is Python's, where/ternary of literals are typed, integer
# comparisons are exact (uint64 against signed included)
a8, u8, i64, u64 = values("int8"), values("uint8"), values("int64"), values("uint64")
case("a + 2**7 // 3", 0, {"a": a8}, lambda a: a + 2**7 // 3)
case("a + 2**8", 0, {"a": u8}, lambda a: a + 2**8)                       # ValueError, as u8 + 256
case("a * (7 // -2) + 2**-1", 0, {"a": values("float32")}, lambda a: a * (7 // -2) + 2**-1)
case("a * 2**64", 0, {"a": values("float32")}, lambda a: a * 2**64)
case("a < 2**64", 0, {"a": i64}, lambda a: a < 2**64)
case("a * where(a > 1, 2, -1)", 0, {"a": u64}, lambda a: a * np.where(a > 1, 2, -1))
case("a + (a > 0 ? 1000 : 1)", 0, {"a": a8}, lambda a: a + np.where(a > 0, 1000, 1))
case("a - where(a > 0, 0.0, 10)", 0, {"a": values("float32")}, lambda a: a - np.where(a > 0, 0.0, 10))
case("a + maximum(2, 3)", 0, {"a": a8}, lambda a: a + np.maximum(2, 3))

# ---- imaginary literals (weak Python complex) and complex(re, im), numexpr's constructor
for dt in ["bool", "int8", "int32", "uint64", "float16", "float32", "float64", "complex64"]:
    case("a + 1j", 0, {"a": values(dt)}, lambda a: a + 1j)
    case("a * 2.5e-3j - 3J", 0, {"a": values(dt)}, lambda a: a * 2.5e-3j - 3j)
case("a + 1j * 1j", 0, {"a": values("int16")}, lambda a: a + 1j * 1j)
case("a * (1 + 2j) ** 2", 0, {"a": values("float32")}, lambda a: a * (1 + 2j) ** 2)
case("a // 1j", 0, {"a": values("float32")}, lambda a: a // 1j)  # TypeError, as NumPy's


def np_complex(a, b):
    """complex(re, im): the dtype re + im*1j has when re and im share a dtype (float16 and
    float32 give complex64, others complex128); the parts exactly re and im (no inf * 0 NaN)."""
    re, im = np.asarray(a), np.asarray(b)
    if re.dtype.kind == "c" or im.dtype.kind == "c":
        raise TypeError("complex() takes real operands")
    p = np.result_type(re, im)
    out = np.empty(np.broadcast_shapes(re.shape, im.shape),
                   np.complex64 if p.kind == "f" and p.itemsize <= 4 else np.complex128)
    out.real = re
    out.imag = im
    return out


for x, y in [("float32", "float32"), ("float64", "float64"), ("float16", "float16"), ("int32", "int32"),
             ("bool", "bool"), ("uint8", "float32"), ("int64", "float32"), ("float64", "complex128")]:
    case("complex(a, b)", 0, {"a": values(x), "b": values(y)}, np_complex)
case("complex(a, 2.5)", 0, {"a": values("float32")}, lambda a: np_complex(a, np.float32(2.5)))
case("complex(a, 1)", 0, {"a": values("int8")}, lambda a: np_complex(a, np.int8(1)))
case("complex(a, b) * 1j", 0, {"a": values("float64"), "b": values("float64")}, lambda a, b: np_complex(a, b) * 1j)
case("complex(a, b)", 0, {"a": values("float32", 3).reshape(3, 1), "b": values("float32", 4)}, np_complex)
for dt in ["int8", "int32", "int64"]:
    s_ = values(dt)
    for op in ("<", "<=", "==", "!=", ">=", ">"):
        case(f"a {op} b", 0, {"a": u64, "b": s_}, lambda a, b, op=op: eval(f"a {op} b"))
        case(f"b {op} a", 0, {"a": u64, "b": s_}, lambda a, b, op=op: eval(f"b {op} a"))
for op in ("==", "<", ">="):
    case(f"a {op} -1", 0, {"a": u64}, lambda a, op=op: eval(f"a {op} -1"))
    case(f"a {op} 1000", 0, {"a": a8}, lambda a, op=op: eval(f"a {op} 1000"))

# ---- unary operators
for dt in ALL:
    a = values(dt)
    case("-a", 0, {"a": a}, lambda a: np.negative(a))
    case("~a", 0, {"a": a}, lambda a: np.invert(a))

# ---- functions: (name, numpy function, ulp bound for float results, domain)
FUNCS = [
    ("sqrt", np.sqrt, 2, "pos"), ("sin", np.sin, 4, "small"), ("cos", np.cos, 4, "small"),
    ("tan", np.tan, 6, "small"), ("arcsin", np.arcsin, 4, "unit"), ("arccos", np.arccos, 4, "unit"),
    ("arctan", np.arctan, 4, "any"), ("sinh", np.sinh, 4, "small"), ("cosh", np.cosh, 4, "small"),
    ("tanh", np.tanh, 4, "small"), ("arcsinh", np.arcsinh, 4, "any"), ("arccosh", np.arccosh, 4, "pos"),
    ("arctanh", np.arctanh, 4, "unit"), ("log", np.log, 3, "pos"), ("log1p", np.log1p, 3, "pos"),
    ("log10", np.log10, 3, "pos"), ("log2", np.log2, 3, "pos"), ("exp", np.exp, 3, "small"),
    ("expm1", np.expm1, 3, "small"), ("exp2", np.exp2, 3, "small"), ("cbrt", np.cbrt, 3, "any"),
    ("abs", np.abs, 0, "any"), ("ceil", np.ceil, 0, "any"), ("floor", np.floor, 0, "any"),
    ("round", np.round, 0, "any"), ("rint", np.rint, 0, "any"), ("trunc", np.trunc, 0, "any"), ("sign", np.sign, 0, "any"),
    ("square", np.square, 0, "any"), ("isnan", np.isnan, 0, "any"), ("isinf", np.isinf, 0, "any"),
    ("isfinite", np.isfinite, 0, "any"), ("signbit", np.signbit, 0, "any"),
    ("conj", np.conjugate, 0, "any"), ("real", np.real, 0, "any"), ("imag", np.imag, 0, "any"),
    ("copy", np.copy, 0, "any"), ("ones_like", np.ones_like, 0, "any"),
    ("deg2rad", np.deg2rad, 0, "any"), ("rad2deg", np.rad2deg, 0, "any"), ("radians", np.radians, 0, "any"),
    ("degrees", np.degrees, 0, "any"),
]
for name, f, ulps, dom in FUNCS:
    for dt in ALL:
        kind = np.dtype(dt).kind
        if kind == "c" and name in ("round", "rint", "exp2"):
            continue  # NumPy takes these on complex; jitexpr rejects them (documented)
        if kind == "c" and ulps > 0:
            # Complex transcendental functions: C99 Annex G's special values as NumPy gives them
            # (the full grid of +-0, finite, +-inf and NaN parts) and finite values of all kinds.
            t = np.float32 if dt == "complex64" else np.float64
            parts = [t(p) for p in (0.0, -0.0, 0.5, -2.0, 1.0, np.inf, -np.inf, np.nan)]
            grid = np.array([complex(0, 0)] * len(parts) ** 2, dtype=dt)
            grid.real = np.repeat(parts, len(parts))
            grid.imag = np.tile(parts, len(parts))
            a = np.concatenate([values(dt, small=True), grid])
            if name == "log1p":  # NumPy's formula loses the real part near 0; jitexpr's does not
                a = a[~((np.abs(a.real) < 0.5) & (np.abs(a.imag) < 0.5) & (a != 0))]
            case(f"{name}(a)", 16, {"a": a}, lambda a, f=f: f(a))
            continue
        if dom == "unit" and kind == "f":
            a = (rng.uniform(-1, 1, N)).astype(dt)
            a[:4] = np.array([0.0, -0.0, 1.0, np.nan], dtype=dt)
        else:
            a = values(dt, positive=(dom == "pos"), small=(dom == "small"))
        # complex results: rounding differs from NumPy's formulas by a few ulps of |z|
        u = ulps if kind != "c" else max(ulps, 8 if ulps else 2)
        case(f"{name}(a)", u, {"a": a}, lambda a, f=f: f(a))

# reciprocal: integer 1/x truncates; 1/0 is undefined in NumPy (jitexpr gives 0): no zeros
for dt in ALL:
    a = values(dt)
    if np.dtype(dt).kind in "biu":
        a = a[a != 0]
    case("reciprocal(a)", 0 if np.dtype(dt).kind != "c" else 4, {"a": a}, lambda a: np.reciprocal(a))

BIN_FUNCS = [("arctan2", np.arctan2, 4), ("hypot", np.hypot, 2), ("copysign", np.copysign, 0),
             ("nextafter", np.nextafter, 0), ("fmod", np.fmod, 0), ("logaddexp", np.logaddexp, 4),
             ("logaddexp2", np.logaddexp2, 4), ("heaviside", np.heaviside, 0)]
for name, f, ulps in BIN_FUNCS:
    for dt in ALL:
        case(f"{name}(a, b)", ulps, {"a": values(dt), "b": values(dt)}, lambda a, b, f=f: f(a, b))

# erf, erfc, gamma, lgamma have no NumPy ufunc: use math on float64 as the reference
import math
for name, fn, ulps in [("erf", math.erf, 4), ("erfc", math.erfc, 6), ("tgamma", math.gamma, 8), ("lgamma", math.lgamma, 8)]:
    for dt in ["float32", "float64"]:
        a = values(dt, small=True)
        a = a[np.isfinite(a) & (a > 0.1)] if name in ("tgamma", "lgamma") else a
        def ref(a, fn=fn, dt=dt):
            out = []
            for x in a.astype(np.float64):
                try:
                    out.append(fn(x))
                except (ValueError, OverflowError):
                    out.append(np.nan)
            return np.array(out).astype(dt)
        case(f"{name}(a)", ulps, {"a": a}, ref)

# where / ternary / clip / logical / chained comparison
for dt in ["int32", "float32", "float64", "uint8", "float16"]:
    a, b = values(dt), values(dt)
    case("where(a > b, a, b)", 0, {"a": a, "b": b}, lambda a, b: np.where(a > b, a, b))
    case("a > b ? a - b : b", 0, {"a": a, "b": b}, lambda a, b: np.where(a > b, a - b, b))
    lo, hi = (np.array(-5, dtype=dt) if np.dtype(dt).kind != "u" else np.array(1, dtype=dt)), np.array(50, dtype=dt)
    case("clip(a, lo, hi)", 0, {"a": a, "lo": lo, "hi": hi}, lambda a, lo, hi: np.clip(a, lo, hi))
a, b = values("bool"), values("bool")
case("a and b", 0, {"a": a, "b": b}, lambda a, b: np.logical_and(a, b))
case("a or not b", 0, {"a": a, "b": b}, lambda a, b: np.logical_or(a, np.logical_not(b)))
x, y, z = values("float32"), values("float32"), values("float32")
case("x < y <= z", 0, {"x": x, "y": y, "z": z}, lambda x, y, z: (x < y) & (y <= z))

# casts
for src in ["int64", "float64", "float32", "bool", "uint8", "int8"]:
    for dst in ["int8", "uint16", "int32", "int64", "float16", "float32", "float64", "bool", "complex64"]:
        a = values(src, small=True)
        if np.dtype(src).kind == "f" and np.dtype(dst).kind in "iu":
            a = a[np.isfinite(a)]  # NaN/inf to int is undefined in NumPy
            if np.dtype(dst).kind == "u":
                a = np.abs(a)
        case(f"{dst}(a)", 0, {"a": a}, lambda a, dst=dst: a.astype(dst))

# broadcasting and strided views
A = values("float32", 12).reshape(3, 4)
case("a + b", 0, {"a": values("float32", 3).reshape(3, 1), "b": values("float32", 4).reshape(1, 4)}, lambda a, b: a + b)
case("a * b + 1", 0, {"a": A, "b": values("float32", 4)}, lambda a, b: a * b + 1)
case("a - b", 0, {"a": np.asfortranarray(values("float64", 20).reshape(4, 5)), "b": values("float64", 20).reshape(4, 5)}, lambda a, b: a - b)
big = values("int32", 64).reshape(8, 8)
case("a * 3", 0, {"a": big[::2, 1::3]}, lambda a: a * 3)      # saved as a copy; C++ side makes strided views too
case("a + b", 0, {"a": values("float32", 24).reshape(2, 3, 4), "b": np.array(2.0, dtype=np.float32)}, lambda a, b: a + b)
case("a + b", 0, {"a": values("float32", 3), "b": values("float32", 4)}, lambda a, b: a + b)  # ShapeError

# reductions
for dt in ["bool", "int8", "int32", "uint16", "float32", "float64"]:
    a = values(dt, 60, small=True)
    a = a[np.isfinite(a)] if np.dtype(dt).kind == "f" else a
    ulps = 0 if np.dtype(dt).kind in "biu" else 64
    case("sum(a)", ulps, {"a": a}, lambda a: np.sum(a))
    small = values(dt, 12, small=True)
    small = small[np.isfinite(small)] if np.dtype(dt).kind == "f" else small
    case("prod(a)", 0 if np.dtype(dt).kind in "biu" else 16, {"a": small}, lambda a: np.prod(a))
    case("prod(a, axis=1)", 0 if np.dtype(dt).kind in "biu" else 16, {"a": small[:12].reshape(3, -1) if small.size >= 12 else small.reshape(1, -1)}, lambda a: np.prod(a, axis=1))
    case("min(a)", 0, {"a": a}, lambda a: np.min(a))
    case("max(a)", 0, {"a": a}, lambda a: np.max(a))
    case("any(a)", 0, {"a": a}, lambda a: np.any(a))
    case("all(a)", 0, {"a": a}, lambda a: np.all(a))
    case("mean(a)", 64, {"a": a}, lambda a: np.mean(a))
    m = values(dt, 48, small=True).reshape(6, 8)
    m = np.where(np.isfinite(m), m, 0).astype(dt) if np.dtype(dt).kind == "f" else m
    case("sum(a, axis=0)", ulps, {"a": m}, lambda a: np.sum(a, axis=0))
    case("max(a, axis=1)", 0, {"a": m}, lambda a: np.max(a, axis=1))
p, q = values("float32", 100, small=True), values("float32", 100, small=True)
p, q = np.nan_to_num(p, posinf=1, neginf=-1), np.nan_to_num(q, posinf=1, neginf=-1)
case("sum(p * q)", 64, {"p": p, "q": q}, lambda p, q: np.sum(p * q, dtype=np.float32))
case("p - mean(p)", 64, {"p": p}, lambda p: p - np.mean(p))

# ---- issue 16: the rest of NumPy's numeric ufuncs. The operators by their ufunc names; fmax/fmin,
# float_power, gcd, lcm, ldexp, spacing, bitwise_count, fabs; divmod, frexp and modf (two results,
# `q, r = divmod(a, b)`: each result is checked as the program's last value). Every dtype, with
# NumPy's TypeError where it has no loop. (The comparison here takes -0.0 == 0.0, which is what
# fmax/fmin's ties need: NumPy resolves them differently in different loops.)
ALIAS_BIN = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "true_divide": np.true_divide,
             "floor_divide": np.floor_divide, "remainder": np.remainder, "bitwise_and": np.bitwise_and,
             "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor, "equal": np.equal, "not_equal": np.not_equal,
             "less": np.less, "greater_equal": np.greater_equal, "logical_and": np.logical_and,
             "logical_or": np.logical_or, "logical_xor": np.logical_xor}
ALIAS_UN = {"negative": np.negative, "positive": np.positive, "invert": np.invert, "logical_not": np.logical_not}
NEW_BIN = {"fmax": (np.fmax, 0), "fmin": (np.fmin, 0), "float_power": (np.float_power, 2), "gcd": (np.gcd, 0),
           "lcm": (np.lcm, 0)}
NEW_UN = {"spacing": np.spacing, "bitwise_count": np.bitwise_count, "fabs": np.fabs}
ORDERED = {"less", "greater_equal", "fmax", "fmin"}  # jitexpr does not order complex numbers
for dt in ALL:
    cplx = np.dtype(dt).kind == "c"
    for name, f in ALIAS_BIN.items():
        if cplx and name in ORDERED:
            continue
        u = 4 if cplx and name in ("multiply", "true_divide") else 0
        case(f"{name}(a, b)", u, {"a": values(dt), "b": values(dt)}, lambda a, b, f=f: f(a, b))
    for name, f in ALIAS_UN.items():
        case(f"{name}(a)", 0, {"a": values(dt)}, lambda a, f=f: f(a))
    for name, (f, u) in NEW_BIN.items():
        if cplx and name in ORDERED:
            continue
        # complex float_power over the whole range: exp(b*log(a)) on CUDA rounds up to ~35 ulps of
        # |z| away from NumPy's formula (measured on the H200)
        u = 64 if cplx and name == "float_power" else u
        case(f"{name}(a, b)", u, {"a": values(dt), "b": values(dt)}, lambda a, b, f=f: f(a, b))
    for name, f in NEW_UN.items():
        case(f"{name}(a)", 0, {"a": values(dt)}, lambda a, f=f: f(a))
    a, b = values(dt), values(dt)
    for k in (0, 1):
        case(f"m, e = frexp(a); {'me'[k]}", 0, {"a": a}, lambda a, k=k: np.frexp(a)[k])
        case(f"f, i = modf(a); {'fi'[k]}", 0, {"a": a}, lambda a, k=k: np.modf(a)[k])
        case(f"q, r = divmod(a, b); {'qr'[k]}", 0, {"a": a, "b": b}, lambda a, b, k=k: np.divmod(a, b)[k])
for x, y in [("int8", "uint8"), ("int16", "uint32"), ("uint64", "int64"), ("bool", "int8"), ("float16", "int8"),
             ("float32", "int64"), ("float32", "float64")]:
    for name, (f, u) in NEW_BIN.items():
        case(f"{name}(a, b)", u, {"a": values(x), "b": values(y)}, lambda a, b, f=f: f(a, b))
for dt in ["int8", "int64", "float16", "float32", "float64"]:
    case("gcd(a, 6)", 0, {"a": values(dt)}, lambda a: np.gcd(a, 6))
    case("fmax(a, nan)", 0, {"a": values(dt)}, lambda a: np.fmax(a, np.nan))
    case("float_power(a, 2)", 2, {"a": values(dt)}, lambda a: np.float_power(a, 2))
# ldexp: each mantissa dtype against each exponent dtype (NumPy's loops take int32/int64 exponents
# only: uint64 and floats are a TypeError), exponents past the range saturate, a literal exponent
# must fit int32
for dx in ALL:
    for de in ["bool"] + INTS + ["float32"]:
        n = values(de)
        if np.dtype(de).kind in "iu":
            n = np.clip(n.astype(np.int64) % 400 - 200, -200, 200).astype(de) if de != "uint64" else n
        case("ldexp(x, n)", 0, {"x": values(dx), "n": n}, lambda x, n: np.ldexp(x, n))
for dt in FLOATS:
    case("ldexp(x, n)", 0, {"x": values(dt), "n": np.array([-(2**40), -1100, -150, 150, 1100, 2**40] * 11)[:N]},
         lambda x, n: np.ldexp(x, n))
    case("ldexp(x, 3)", 0, {"x": values(dt)}, lambda x: np.ldexp(x, 3))
case("ldexp(2.5, n)", 0, {"n": values("int8", small=True)}, lambda n: np.ldexp(2.5, n))
case("ldexp(3, n)", 0, {"n": values("int8", small=True)}, lambda n: np.ldexp(3, n))
case("ldexp(3, n)", 0, {"n": values("int64", small=True)}, lambda n: np.ldexp(3, n))  # float16, as NumPy
case("ldexp(x, 2**40)", 0, {"x": values("float64")}, lambda x: np.ldexp(x, 2**40))  # ValueError (NumPy's OverflowError)

# slicing and simple indexing with constant bounds (views): every form x dtypes; the C++ side
# also runs each case on strided inputs. Edge bounds: empty slices, step -1, bounds past the end.
VIEW_1D = [
    "a[1:] - a[:-1]", "a[::2]", "a[::-1]", "a[-1]", "a[0]", "a[None, :]", "a[:, None]", "a[..., 3]", "a[5:2]",
    "a[60:100]", "a[-100:3]", "a[::-3]", "a[5:-5:2]", "a[100:]", "a[::-1][1:]", "a[1:][::-1]", "a[64]",
    "a[-65]", "a[1,]", "a[...]", "a[None]", "a[2:-2] * a[4:] [:-2]",
]
VIEW_2D = [
    "m[:, 0]", "m[1]", "m[..., 0]", "m[1, -1]", "m[::2, ::-3]", "m[None, 1:, :, None]", "m[1][2:]",
    "m[:, 1:] + m[:, :-1]", "m[1:] * m[0]", "m[:, None] + m[None, :]", "m[-1, ::-1]", "m[:, 8]", "m[0, 0, 0]",
    "m[6:, :]", "(m * 2)[1:, ::-1]", "m[::-1, None, 2]",
]
VIEW_DTYPES = ["bool", "int8", "uint16", "int32", "int64", "uint64", "float16", "float32", "float64", "complex64"]
for dt in VIEW_DTYPES:
    a = values(dt)
    m = values(dt, 48).reshape(6, 8)
    for text in VIEW_1D:
        case(text, 0, {"a": a}, lambda a, text=text: eval(text, {}, {"a": a}))
    for text in VIEW_2D:
        case(text, 0, {"m": m}, lambda m, text=text: eval(text, {}, {"m": m}))
# through reductions, and operands of other shapes
for dt in ["int32", "int64", "uint8", "float64"]:
    a, b = values(dt, small=True), values(dt, small=True)
    m = values(dt, 48, small=True).reshape(6, 8)
    ulps = 0 if np.dtype(dt).kind in "biu" else 64
    if np.dtype(dt).kind == "f":
        a, b, m = (np.where(np.isfinite(x), x, 1).astype(dt) for x in (a, b, m))
    case("sum(a[1:] * b[:-1])", ulps, {"a": a, "b": b}, lambda a, b: np.sum(a[1:] * b[:-1]))
    case("sum(m[:, ::2], axis=0)", ulps, {"m": m}, lambda m: np.sum(m[:, ::2], axis=0))
    case("sum(m, axis=1)[1:]", ulps, {"m": m}, lambda m: np.sum(m, axis=1)[1:])
    case("max(m, axis=0)[::-1] - m[0]", 0, {"m": m}, lambda m: np.max(m, axis=0)[::-1] - m[0])
    case("m[1:] - a[:8]", 0, {"m": m, "a": a}, lambda m, a: m[1:] - a[:8])
    case("where(m[:, 0] > m[:, 1], m[:, 2], m[:, 3])", 0, {"m": m},
         lambda m: np.where(m[:, 0] > m[:, 1], m[:, 2], m[:, 3]))
# reductions and statistics: axis forms, keepdims, var/std, argmin/argmax, nan*, count_nonzero, ptp, average
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_reduce_cases  # noqa: E402

gen_reduce_cases.add(save, lines, values, rng)
# scans: cumsum, cumprod, nancumsum, nancumprod over every dtype and axis form
import gen_scan_cases  # noqa: E402

gen_scan_cases.add(save, lines, values, rng)

# order statistics (median, percentile, quantile, nan*) and complex fmax/fmin
import gen_quantile_cases  # noqa: E402

gen_quantile_cases.add(save, lines, values, rng)

# dates and durations: every unit, NaT, unit promotion, literals, reductions, conversions
import gen_date_cases  # noqa: E402

gen_date_cases.add(save, lines, rng)

with open(os.path.join(OUT, "cases.tsv"), "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"{len(lines)} cases in {OUT}")
