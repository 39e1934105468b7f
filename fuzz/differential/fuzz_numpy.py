#!/usr/bin/env python3
"""A differential fuzzer: random jitexpr programs over every dtype, shape and literal kind,
evaluated by jitexpr and by NumPy 2, and the smallest program that tells them apart.

    fuzz_numpy.py --seed 16 --cases 3000                              # as CI (the Python package)
    fuzz_numpy.py --minutes 20                                        # by hand
    fuzz_numpy.py --driver cli --binary build/tools/jitexpr --minutes 5
    fuzz_numpy.py --seed 7 --case 1234 -v                             # one case again

One case in five (unless --no-dates) is a program of dates and durations (dates.py): datetime64 and
timedelta64 arrays of random units with NaT, literals, NumPy's arithmetic, comparisons and errors.
Each other case is a random expression (operators, functions, where/?:, casts, reductions, scans) over 1-3
arrays of random dtypes (all 15: bool, the integers, float16, bfloat16, float32, float64,
complex64, complex128) and shapes (0-d, empty, broadcasting, and for the Python driver strided
and transposed views), host scalars (weakly typed Python bool/int/float/complex) and literals
(weak ints, floats, big integers, the named constants), and now and then string columns (NumPy
S and U arrays, t0 and t1) read by comparisons and the string functions, whose bool and int64
results meet the rest (issue 32). NumPy evaluates it as a NumPy user's
Python code would (literals folded by Python itself), with jitexpr's documented choices where
NumPy is undefined or differs on purpose (see docs/fuzzing.md, "What is compared"). The two must
agree on the error kind or on dtype, shape and every element, within the tolerance of the
functions involved. A disagreement is shrunk to a minimal expression and printed; the exit
status is 1 when there was one.
"""
import argparse
import math
import os
import random
import sys
import time
import warnings
import zlib
from fractions import Fraction

try:
    import numpy as np
except ImportError:  # pragma: no cover
    print("fuzz_numpy.py: NumPy is not installed; skipping")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from drivers import BF16, CliDriver, DriverError, PythonDriver  # noqa: E402
import dates  # noqa: E402

warnings.simplefilter("ignore")
np.seterr(all="ignore")

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
          "bfloat16", "float32", "float64", "complex64", "complex128"]
HALF = ("float16", "bfloat16")
CONSTANTS = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}

# Functions: name -> (arity, family). "exact": NumPy and jitexpr round identically (compared bit
# for bit); "trans": a correctly rounded result is not promised (within ulps of the exact value).
FUNCS = {
    "sqrt": (1, "exact"), "sin": (1, "trans"), "cos": (1, "trans"), "tan": (1, "trans"), "arcsin": (1, "trans"),
    "arccos": (1, "trans"), "arctan": (1, "trans"), "sinh": (1, "trans"), "cosh": (1, "trans"),
    "tanh": (1, "trans"), "arcsinh": (1, "trans"), "arccosh": (1, "trans"), "arctanh": (1, "trans"),
    "log": (1, "trans"), "log1p": (1, "trans"), "log10": (1, "trans"), "log2": (1, "trans"), "exp": (1, "trans"),
    "expm1": (1, "trans"), "exp2": (1, "trans"), "cbrt": (1, "trans"), "abs": (1, "exact"), "ceil": (1, "exact"),
    "floor": (1, "exact"), "round": (1, "exact"), "rint": (1, "exact"), "trunc": (1, "exact"), "sign": (1, "exact"),
    "square": (1, "exact"), "reciprocal": (1, "exact"), "conj": (1, "exact"), "real": (1, "exact"),
    "imag": (1, "exact"), "copy": (1, "exact"), "isnan": (1, "exact"), "isinf": (1, "exact"),
    "isfinite": (1, "exact"), "signbit": (1, "exact"),
    "arctan2": (2, "trans"), "hypot": (2, "trans"), "copysign": (2, "exact"), "nextafter": (2, "exact"),
    "fmod": (2, "exact"), "maximum": (2, "exact"), "minimum": (2, "exact"), "power": (2, "trans"),
    "clip": (3, "exact"),
    # issue 16: the operators by their ufunc names and the rest of NumPy's numeric ufuncs
    "add": (2, "exact"), "subtract": (2, "exact"), "multiply": (2, "exact"), "negative": (1, "exact"),
    "less_equal": (2, "exact"), "not_equal": (2, "exact"), "bitwise_and": (2, "exact"),
    "logical_and": (2, "exact"), "logical_xor": (2, "exact"), "logical_not": (1, "exact"),
    "fmax": (2, "exact"), "fmin": (2, "exact"), "float_power": (2, "trans"), "gcd": (2, "exact"),
    "lcm": (2, "exact"), "spacing": (1, "exact"), "bitwise_count": (1, "exact"), "fabs": (1, "exact"),
    "ldexp": (2, "exact"),
}
NP_NAME = {"abs": "absolute", "conj": "conjugate"}
COMPLEX_INEXACT = ("sqrt", "abs", "sign")
REDUCTIONS = ["sum", "prod", "mean", "min", "max", "any", "all"]
SCANS = ["cumsum", "cumprod", "nancumsum", "nancumprod"]
ORDER_STATS = ["median", "percentile", "quantile", "nanmedian", "nanpercentile", "nanquantile"]
# Constant indices of an element-wise expression: integers, slices (negative, reversed, past the
# end), new axes and an ellipsis.
INDEXES = ["0", "-1", "1:", ":-1", "::-1", "::2", "None", ":, 0", "..., -1", "None, :", "1:3", ":, ::-1", "5",
           "-7:10", "..., None", "2:1", ":, 1:, None"]
TRANS_ULPS = 4  # what jitexpr promises for a function not correctly rounded (and a float power)
BINOPS = ["+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>", "<", "<=", "==", "!=", ">=", ">",
          "and", "or"]
CASTS = DTYPES + ["float", "int", "complex"]
CAST_ALIAS = {"float": "float64", "int": "int64", "complex": "complex128"}
# Strings (issue 32): comparisons and the functions that read S and U columns, each with NumPy's
# equivalent (np.strings); contains(h, n) is find(h, n) >= 0.
STR_COMPARE = ["==", "!=", "<", "<=", ">", ">="]
STR_FUNCS = {"contains": lambda a, b: np.strings.find(a, b) >= 0, "startswith": np.strings.startswith,
             "endswith": np.strings.endswith, "find": np.strings.find}
BYTE_ALPHABET = [b"a", b"b", b"ab", b"\x00", b"\xff", b"\x80", b"z", b" "]
STR_ALPHABET = ["a", "b", "ab", "\x00", "\xe9", "\u20ac", "\U0001f600", "z", " "]


class RefError(Exception):
    """NumPy (or jitexpr's documented rule) rejects the program: jitexpr must raise this kind."""

    def __init__(self, kind, why=""):
        super().__init__(kind)
        self.kind, self.why = kind, why


class RefSkip(Exception):
    """The program's value is undefined (NumPy leaves it so): not judged."""


# --- values -------------------------------------------------------------------------------------
# Lit: a Python number from the program text (exact, as Python computes it).
# Host: a weakly typed host scalar or an expression of such (computed in int64/float64/... by
#       jitexpr, like a kernel parameter), held as a 0-d NumPy array of its default dtype.
# Arr: a strong value: a carrier array and its logical dtype. 16-bit floats are carried as
#      float32 (jitexpr computes them in float32, rounded when stored or explicitly cast); in
#      the high-precision evaluation every float is carried wider.


class Lit:
    def __init__(self, v):
        self.v = v


class Host:
    def __init__(self, a, direct=False, exact=None, wrapped=False, ring=True):
        self.a = a  # 0-d array: bool, int64, float64/longdouble, complex128/clongdouble
        # A host scalar itself (not an expression of them): jitexpr checks its range when it
        # meets a narrower integer dtype; an expression of host scalars is computed in int64,
        # and its exact (Python) value must fit what it meets, as a host scalar must, with no
        # step of it leaving int64 (ir::ScalarFitCheck): `exact` is that value, `wrapped` says
        # a step before the last left int64, `ring` that the last step wraps consistently.
        self.direct = direct
        self.exact = exact
        self.wrapped = wrapped
        self.ring = ring


RING = {np.add, np.subtract, np.multiply, np.negative, np.positive, np.bitwise_and, np.bitwise_or,
        np.bitwise_xor, np.invert, np.left_shift}
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1


BIG_BITS = 4096  # exact host values past this many bits are kept as +-2**BIG_BITS


def exact_host_value(fn, vals):
    """The Python value of fn over host integers (and integer literals), or None."""
    args = []
    for v in vals:
        x = v.exact if isinstance(v, Host) and v.exact is not None else (v.a if isinstance(v, Host) else v.v)
        x = x.item() if isinstance(x, np.ndarray) or isinstance(x, np.generic) else x
        if not isinstance(x, (int, bool, np.integer)):
            return None
        args.append(np.asarray(int(x), dtype=object))
    if fn is np.left_shift and int(args[1]) > 4096 and int(args[0]) != 0:
        return int(args[0]) * 2**4096  # past any dtype, as the Python int is (without building it)
    # Past any dtype too, and not built: a power or product of more than BIG_BITS bits (3 ** 5**9
    # would take the reference minutes of big-integer multiplication).
    if fn is np.power and abs(int(args[0])) > 1 and int(args[1]) > 0 and \
            int(args[1]) * int(args[0]).bit_length() > BIG_BITS:
        return (-1 if int(args[0]) < 0 and int(args[1]) % 2 else 1) * 2**BIG_BITS
    if fn is np.multiply and int(args[0]).bit_length() + int(args[1]).bit_length() > BIG_BITS:
        return (-1 if (int(args[0]) < 0) != (int(args[1]) < 0) else 1) * 2**BIG_BITS
    try:
        with np.errstate(all="ignore"):
            r = fn(*args)
    except (ZeroDivisionError, ValueError, TypeError, OverflowError):
        return None
    r = r.item() if isinstance(r, np.ndarray) else r
    return int(r) if isinstance(r, int) and not isinstance(r, bool) else None


LOGICAL_FNS = {np.logical_and, np.logical_or, np.logical_xor, np.logical_not}
COMPARISONS = {np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal}
# Functions whose result jumps where an operand crosses a 16-bit float's rounding boundary:
# jitexpr reads a float16/bfloat16 chain rounded there (docs/language.md), as NumPy reads its array.
ROUNDED_READS = COMPARISONS | {np.isnan, np.isinf, np.isfinite, np.signbit, np.floor, np.ceil, np.trunc, np.rint,
                               np.round, np.floor_divide, np.remainder, np.fmod, np.divmod, np.sign, np.heaviside,
                               np.nextafter, np.spacing, np.frexp, np.modf, np.ldexp}


def check_host_fit(v, dtype, fn=None):
    """jitexpr's bind-time check of an expression of host scalars meeting `dtype` (a comparison
    takes it as an int64 whatever the other side, as NumPy compares a Python int exactly)."""
    if not isinstance(v, Host) or v.direct or v.exact is None:
        return
    x = v.exact
    if fn in COMPARISONS:
        dtype = "int64"
    kind = np.dtype(dtype if dtype not in HALF else "float16").kind
    if kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= x <= info.max:
            raise RefError("value")
    outside = not INT64_MIN <= x <= INT64_MAX
    if v.wrapped or (outside and not (dtype == "uint64" and v.ring)):
        raise RefError("value")


def past_int64_ring(v):
    """A ring operation's result past int64 and within uint64 (9223372036854775807 << True):
    jitexpr's int64 steps wrap to the same 64 bits, which a uint64 operand takes as this exact
    value (check_host_fit refuses it for any other dtype)."""
    return v.ring and not v.wrapped and v.exact is not None and INT64_MAX < v.exact < 2**64


class Arr:
    def __init__(self, a, dtype):
        self.a, self.dtype = a, dtype


def round_bf16(x):
    """float64/float32 values rounded once to bfloat16 (returned as float32)."""
    x = np.asarray(x)
    if x.dtype != np.float32:
        d = x.astype(np.float64)
        f = d.astype(np.float32)
        # round to odd into float32, so that rounding that to bfloat16 rounds d correctly
        toward0 = np.where(np.abs(f.astype(np.float64)) > np.abs(d), np.nextafter(f, np.float32(0)), f).astype(np.float32)
        inexact = (toward0.astype(np.float64) != d) & ~np.isnan(d)
        bits = toward0.view(np.uint32) | np.where(inexact, np.uint32(1), np.uint32(0))
        f = np.where(np.isnan(d), f, bits.view(np.float32))
    else:
        f = x
    b = np.ascontiguousarray(f).view(np.uint32).astype(np.uint64)
    nan = np.isnan(f)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    r = np.where(nan, (b.astype(np.uint32) | np.uint32(0x00400000)) & np.uint32(0xFFFF0000), r)
    return r.view(np.float32).reshape(np.shape(x))


def bf16_bits(f32):
    return (np.array(round_bf16(f32), order="C").view(np.uint32) >> 16).astype(np.uint16)


def bf16_from_bits(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


class Evaluator:
    """Evaluates an expression tree as NumPy would; hi=True carries every float wider (the
    exact-ish value that judges rounding: float16/bfloat16/float32 as float64, float64 as
    longdouble)."""

    def __init__(self, inputs, hi=False, perturb=None, angles=None):
        self.inputs, self.hi = inputs, hi
        # The arguments of sin/cos/tan in the unperturbed high-precision evaluation, by call
        # (shared with the perturbed ones: angle_guard), and the count of such calls.
        self.angles, self.angle_count = angles, 0
        # perturb(k) -> -1, 0 or 1: the k-th inexact result is moved by that many times its
        # allowed error (the high-precision evaluations that bound how errors propagate); 2 or
        # -2: every element up (down) in value by its allowed error, so that elements of one
        # result that a later step subtracts (a median of -1 and 0.99998, a sum of opposite
        # signs) move apart, as independent errors of each element can
        # (seed 41, case 24823: median(tanh(a1)) with tanh(6) 0.87 ulp off)
        self.perturb, self.count = perturb, 0
        self.inexact_seen = False  # an inexact result was computed (before the current operation)

    def periodic_guard(self, a, b):
        """A remainder or floor quotient a % b whose quotient a / b is past what b's last bits
        decide: after an inexact operation, a few ulps of b move a % b anywhere in [0, b) (1e300 %
        expm1(x)), which no perturbation pattern bounds. Not judged then."""
        if not self.hi or not self.inexact_seen:
            return
        with np.errstate(all="ignore"):
            q = np.abs(np.asarray(self.operand(a), dtype=np.float64) / np.asarray(self.operand(b), dtype=np.float64))
        q = q[np.isfinite(q)] if np.ndim(q) else (q if np.isfinite(q) else np.zeros(0))
        narrow = any(isinstance(v, Arr) and v.dtype in HALF + ("float32", "complex64") for v in (a, b))
        eps = 2.0**-10 if any(isinstance(v, Arr) and v.dtype in HALF for v in (a, b)) else \
            2.0**-23 if narrow else 2.0**-52
        if np.size(q) and float(np.max(q)) * eps * TRANS_ULPS * 16 > 1e-3:
            raise RefSkip()

    def angle_guard(self, a, part=None):
        """sin, cos or tan of an argument that the allowed errors before it move by more than a
        thousandth of a radian (cos(float_power(a, arctan2(a, -1))): a float32 arctan2 within an
        ulp makes float_power's 1.1e7 move by 14, seed 53, case 98197): the result can be
        anything in [-1, 1], which the few perturbed evaluations do not bound. Not judged then.
        part="imag": the imaginary part of a complex argument is the angle (exp, sinh, cosh and
        tanh of x + yj turn by y: sinh(arccos(complex64 z) ** 128), seed 63, case 113022, where a
        y of 1e7 moves by hundreds, so the signs of the infinite parts are anyone's)."""
        if not self.hi or self.angles is None:
            return
        k, self.angle_count = self.angle_count, self.angle_count + 1
        with np.errstate(all="ignore"):
            x = np.asarray(self.operand(a), dtype=np.complex128)
            if part == "imag":
                x = x.imag.astype(np.complex128)
        if self.perturb is None:
            self.angles[k] = x
            return
        base = self.angles.get(k)
        if base is None or np.shape(base) != np.shape(x):
            return
        with np.errstate(all="ignore"):
            d = np.abs(x - base)
        d = d[np.isfinite(d)] if np.ndim(d) else (d if np.isfinite(d) else np.zeros(0))
        if np.size(d) and float(np.max(d)) > 1e-3:
            raise RefSkip()

    def inexact(self, r, allowed_ulps):
        """r, the result of an operation not promised to be correctly rounded, moved by the
        perturbation of this evaluation."""
        self.inexact_seen = True
        if isinstance(r, Host):
            return self.inexact_host(r, allowed_ulps)
        if self.perturb is None or not isinstance(r, Arr) or np.dtype(self.carrier(r.dtype)).kind not in "fc":
            return r
        k, self.count = self.count, self.count + 1
        sign = self.perturb(k)
        if not sign:
            return r
        real = {"complex64": "float32", "complex128": "float64"}.get(r.dtype, r.dtype)
        eps = 2.0**-8 if real == "bfloat16" else float(np.finfo(real).eps)
        if abs(sign) == 2:
            if np.asarray(r.a).dtype.kind == "c":
                # Each part of each element up (down) by the element's allowed error: the
                # elements' errors apart, as for floats (nancumsum(tan(complex128 z)), seed 66,
                # case 160778: imaginary parts -1.0006, 1, 1, -0.9935 summed to 0.0059, where
                # scaling the whole result by one factor moved the sum by almost nothing).
                return Arr(r.a + (sign // 2) * allowed_ulps * eps * np.abs(r.a) * (1 + 1j), r.dtype)
            return Arr(r.a + (sign // 2) * allowed_ulps * eps * np.abs(r.a), r.dtype)
        if np.asarray(r.a).dtype.kind == "c":
            # A complex result's error may point anywhere, not only along it: moved on a diagonal,
            # one in the patterns that move it up and the other in those that move it down (by
            # result), so that each part moves by about the magnitude's error in some pattern
            # (log(arccosh(complex64 z)), seed 55 case 228691: 0.4 ulp of |z| in the imaginary
            # part; sum(where(b, arccos(complex64 z), ...)), seed 58 case 323298, the real part).
            turn = (1 + 1j) if (sign > 0) == (k % 2 == 0) else (1 - 1j)
            return Arr(r.a * (1 + sign * allowed_ulps * eps * turn), r.dtype)
        return Arr(r.a * (1 + sign * allowed_ulps * eps), r.dtype)

    def inexact_host(self, r, allowed_ulps):
        """The same for an expression of host scalars computed in float64 (or complex128) when the
        program runs: `5 ** s` is a pow of its own, whose last bit a later power multiplies by
        the exponent's size (power(127, 5 ** 2.5) was 140 ulps off NumPy, seed 52, case 233331)."""
        a = np.asarray(r.a)
        if self.perturb is None or a.dtype.kind not in "fc":
            return r
        k, self.count = self.count, self.count + 1
        sign = self.perturb(k)
        if not sign:
            return r
        eps = float(np.finfo(np.float64).eps)
        with np.errstate(all="ignore"):
            moved = a * (1 + (1 if sign > 0 else -1) * allowed_ulps * eps)
        return Host(np.asarray(moved, dtype=a.dtype), direct=False, exact=r.exact, wrapped=r.wrapped, ring=r.ring)

    # ---- carriers
    def carrier(self, dtype):
        if dtype in HALF or dtype == "float32":
            return np.float64 if self.hi else np.float32
        if dtype == "float64":
            return np.longdouble if self.hi else np.float64
        if dtype == "complex64":
            return np.complex128 if self.hi else np.complex64
        if dtype == "complex128":
            return np.clongdouble if self.hi else np.complex128
        return np.dtype(dtype).type

    def arr(self, a, dtype):
        return Arr(np.asarray(a).astype(self.carrier(dtype)), dtype)

    def round_to(self, a, dtype):
        """Carrier values rounded to `dtype` (an explicit cast's rounding, or a store)."""
        if dtype == "bfloat16":
            r = round_bf16(np.asarray(a).real if np.iscomplexobj(a) else a)
        elif dtype == "float16":
            r = np.asarray(a).real.astype(np.float16) if np.iscomplexobj(a) else np.asarray(a).astype(np.float16)
        else:
            r = np.asarray(a).astype(dtype)
        return np.asarray(r).astype(self.carrier(dtype))

    def leaf(self, node):
        kind = node[0]
        if kind == "lit":
            return Lit(node[1])
        if kind == "const":
            return Lit(CONSTANTS[node[1]])
        v = self.inputs[node[1]]
        if isinstance(v, BF16):
            return self.arr(bf16_from_bits(np.array(v.bits, order="C")), "bfloat16")
        if isinstance(v, np.ndarray):
            return self.arr(np.array(v, order="C"), v.dtype.name)
        return Host(self.host_array(v), direct=True)

    def host_array(self, v):
        if isinstance(v, bool):
            return np.asarray(v)
        if isinstance(v, int):
            return np.asarray(v, dtype=np.int64)
        if isinstance(v, float):
            return np.asarray(v, dtype=np.longdouble if self.hi else np.float64)
        return np.asarray(v, dtype=np.clongdouble if self.hi else np.complex128)

    # ---- the logical dtype of an op's result, through NumPy on proxies (bfloat16 as float16)
    def logical(self, fn, vals):
        proxies = []
        kinds = []
        for v in vals:
            if isinstance(v, Arr):
                proxies.append(np.zeros((), dtype="float16" if v.dtype == "bfloat16" else v.dtype))
                kinds.append(v.dtype)
            elif isinstance(v, Host) and past_int64_ring(v):
                proxies.append(v.exact)
            elif isinstance(v, Host):
                # (the exact evaluation's wide carriers are Python's float and complex here: a
                # clongdouble host value would type the result complex256)
                proxies.append(float(v.a) if v.a.dtype == np.longdouble else
                               complex(v.a) if v.a.dtype == np.clongdouble else v.a.item())
            else:
                proxies.append(v.v)
        r = np.asarray(fn(*proxies))
        name = r.dtype.name
        if name == "float16" and "bfloat16" in kinds:
            name = "float32" if "float16" in kinds else "bfloat16"
        if name == "complex64" and "bfloat16" in kinds and "float16" in kinds:
            name = "complex64"
        if name == "float32" and "bfloat16" in kinds and "float16" not in kinds:
            # bfloat16 holds 8-bit integers like float16 (same as the proxy): float32 stays
            pass
        return name

    def common(self, vals):
        """The dtype NumPy promotes the values to (NEP 50), bfloat16 as jitexpr promotes it."""
        proxies, kinds = [], []
        for v in vals:
            if isinstance(v, Arr):
                proxies.append(np.zeros((), dtype="float16" if v.dtype == "bfloat16" else v.dtype))
                kinds.append(v.dtype)
            elif isinstance(v, Host):
                proxies.append(v.a.item() if v.a.dtype not in (np.longdouble, np.clongdouble) else complex(v.a))
            else:
                proxies.append(v.v if not (isinstance(v.v, int) and not is_bool(v.v) and abs(v.v) >= 2**63) else 1.0)
        try:
            name = np.result_type(*proxies).name
        except (TypeError, OverflowError, ValueError):
            return None
        if name == "float16" and "bfloat16" in kinds:
            name = "float32" if "float16" in kinds else "bfloat16"
        return name

    def operand(self, v):
        if isinstance(v, Arr):
            return v.a
        if isinstance(v, Host):
            if past_int64_ring(v):
                return v.exact
            return v.a.item() if v.a.dtype not in (np.longdouble, np.clongdouble) else v.a[()]
        return v.v

    def apply(self, fn, vals, weak_result=False, condition=False):
        """fn over the values with NumPy's promotion (NEP 50 for Python scalars), the result
        typed as NumPy types it, 16-bit floats kept in their carriers. condition: vals[0] is
        where's condition, which takes no part in the promotion."""
        if all(isinstance(v, (Lit, Host)) for v in vals) and any(isinstance(v, Host) for v in vals):
            # host scalars among themselves: computed in their default dtypes (int64 wraps)
            for v in vals:  # every use of an expression of host scalars is checked (as int64 here)
                check_host_fit(v, "int64")
            args = [v.a if isinstance(v, Host) else v.v for v in vals]
            if fn in (np.left_shift, np.right_shift):
                count = vals[1].exact if isinstance(vals[1], Host) and vals[1].exact is not None else \
                    int(np.asarray(self.operand(vals[1])))
                if count < 0:
                    raise RefError("value")  # Python's ValueError: negative shift count
            r = np.asarray(fn(*args))
            weak_host = (weak_result and r.dtype.kind != "b") or weak_result == "keep"
            exact = exact_host_value(fn, vals) if weak_host and r.dtype.kind in "iu" else None
            if exact is not None:
                wrapped = any(isinstance(v, Host) and (v.wrapped or (v.exact is not None and not
                              INT64_MIN <= v.exact <= INT64_MAX)) for v in vals)
                return Host(r.astype(np.int64), exact=exact, wrapped=wrapped, ring=fn in RING)
            if weak_result or weak_result == "keep":
                # a weak value has its kind's default dtype (True ** True is an int64 1)
                default = {"b": np.bool_, "i": np.int64, "u": np.int64, "f": r.dtype if self.hi else np.float64,
                           "c": r.dtype if self.hi else np.complex128}[r.dtype.kind]
                if r.dtype.kind == "f" and self.hi:
                    default = np.longdouble
                if r.dtype.kind == "c" and self.hi:
                    default = np.clongdouble
                return Host(r.astype(default))
            return self.arr(r, self.dtype_name(r))
        logical = self.logical(fn, vals)
        halves = {v.dtype for v in vals if isinstance(v, Arr) and v.dtype in HALF}
        others = [v for i, v in enumerate(vals) if isinstance(v, Arr) and v.dtype not in HALF and
                  not (condition and i == 0)]
        ops = [self.operand(v) for v in vals]
        # A 16-bit float converted to another dtype (by promotion) is rounded to its type first.
        operand_dtype = self.common(vals)
        # float_power has float64 and complex128 loops only: every operand, a Python number too,
        # is converted to the loop's dtype (a Python 0.1 beside a float16 array stays 0.1).
        wide_loop = fn is np.float_power
        if wide_loop:
            operand_dtype = "complex128" if np.dtype(logical).kind == "c" else "float64"
        # Where the operation computes in a 16-bit float type, jitexpr computes in float32 (its
        # carrier) from the operands converted (exactly: bool and 8-bit integers), where NumPy's
        # float16 loop would round the result.
        if operand_dtype in HALF or logical in HALF:
            for i, v in enumerate(vals):
                if isinstance(v, Arr) and v.dtype not in HALF and np.dtype(v.dtype).kind in "biu" and v.a.dtype.itemsize == 1:
                    ops[i] = np.asarray(v.a).astype(self.carrier("float16"))
        # An expression of host scalars is an int64 at run time, converted as an array would be.
        # It must fit where it meets an integer operation (the result's dtype: NumPy converts the
        # Python int to the loop's dtype, so copysign(-1, uint8) and uint32 / -120 take it as a
        # float), wrapping as an array would past the check; a comparison takes it exactly.
        int_result = np.dtype(logical if logical not in HALF else "float16").kind in "iu"
        for i, v in enumerate(vals):
            if isinstance(v, Host) and not v.direct and v.a.dtype == np.int64:
                if fn in COMPARISONS or not int_result:
                    check_host_fit(v, "int64")
                    continue
                check_host_fit(v, logical)
                if operand_dtype and np.dtype(operand_dtype if operand_dtype not in HALF else "float16").kind in "iu":
                    ops[i] = int(v.a.astype(operand_dtype))
        for i, v in enumerate(vals):  # (a logical function reads the value as a bool: it leaves its type)
            if isinstance(v, Arr) and v.dtype in HALF and (operand_dtype != v.dtype or fn in LOGICAL_FNS or
                                                           fn in ROUNDED_READS):
                ops[i] = self.round_to(v.a, v.dtype)
        # The exact evaluation carries float32 in float64: a Python float meeting a float32
        # operation is still NumPy's float32 first (NEP 50), so a1 / 1e300 divides by inf there.
        if self.hi and operand_dtype in ("float32", "complex64") and not wide_loop and fn not in LOGICAL_FNS and \
                fn not in COMPARISONS:
            for i, v in enumerate(vals):
                if isinstance(v, Lit) and isinstance(v.v, float):
                    with np.errstate(all="ignore"):
                        ops[i] = float(np.float32(v.v))
        # (The logical functions read a Python number as a bool, not in the array's type:
        # logical_xor(1e-40, float16 array) takes 1e-40 as True, as it does beside float32.)
        # A function whose loop is a 16-bit float's over bool and 8-bit integer arrays alone (uint8
        # arctan2 is float16's) converts a Python number to that type too (seed 73, case 65047:
        # arctan2(uint8, 2147483648) is arctan2(150, inf)).
        small_ints = not halves and others and logical in HALF and all(
            np.dtype(v.dtype).kind in "biu" and v.a.dtype.itemsize == 1 for v in others)
        if (len(halves) == 1 and (not others or operand_dtype in HALF) or small_ints) and not wide_loop and \
                fn not in LOGICAL_FNS:
            # A Python int or float meeting a 16-bit float array becomes that type (NEP 50):
            # f16 + 1e10 is f16 + inf. (Carried as float32 otherwise, it would not round.) So it
            # does beside arrays that promote into it: clip(bool, float16, 65536) clips at inf
            # (seed 55, case 286291).
            h = halves.pop() if halves else logical
            for i, v in enumerate(vals):
                if isinstance(v, (Lit, Host)) and not isinstance(self.operand(v), (complex, np.complexfloating)):
                    x = self.operand(v)
                    if isinstance(x, int) and not is_bool(x) and abs(x) >= 2**128:
                        continue
                    ops[i] = self.round_to(np.asarray(float(x)), h)[()] if not is_bool(x) else x
        r = np.asarray(fn(*ops))
        return Arr(r.astype(self.carrier(logical)), logical)

    def dtype_name(self, r):
        n = r.dtype.name
        if n == "longdouble" or n == "float128":
            return "float64"
        if n in ("clongdouble", "complex256"):
            return "complex128"
        return n


# --- the reference -----------------------------------------------------------------------------


def is_bool(v):
    return isinstance(v, bool)


def py_binary(op, a, b):
    """Python's arithmetic on two literals, with jitexpr's documented rules for two bools."""
    if op == "and":
        return bool(a) and bool(b)
    if op == "or":
        return bool(a) or bool(b)
    if is_bool(a) and is_bool(b):
        if op in ("+", "|"):
            return a or b
        if op in ("*", "&"):
            return a and b
        if op == "^":
            return a != b
        if op == "-":
            raise RefError("type")
    try:
        r = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b, "//": lambda: a // b,
             "%": lambda: a % b, "**": lambda: pyow(a, b), "&": lambda: a & b, "|": lambda: a | b,
             "^": lambda: a ^ b, "<<": lambda: a << b if b < 8200 else (_ for _ in ()).throw(RefSkip()),
             ">>": lambda: a >> b, "<": lambda: a < b, "<=": lambda: a <= b, "==": lambda: a == b,
             "!=": lambda: a != b, ">=": lambda: a >= b, ">": lambda: a > b}[op]()
    except (ZeroDivisionError, OverflowError, ValueError):
        raise RefError("value")
    except TypeError:
        raise RefError("type")
    if isinstance(r, int) and not isinstance(r, bool) and r.bit_length() > 8192:
        raise RefSkip()  # jitexpr's bound (an error there, an exact number in Python)
    return r


def pyow(a, b):
    if isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1 and (abs(a).bit_length() - 1) * b > 8192:
        raise RefSkip()
    return a ** b


def py_unary(op, a):
    if op == "not":
        return not a
    if is_bool(a):
        if op == "~":
            return not a
        if op == "-":
            raise RefError("type")
        return a
    try:
        return {"-": lambda: -a, "+": lambda: +a, "~": lambda: ~a}[op]()
    except TypeError:
        raise RefError("type")


NP_BIN = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide, "//": np.floor_divide,
          "%": np.remainder, "**": np.power, "&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor,
          "<<": np.left_shift, ">>": np.right_shift, "<": np.less, "<=": np.less_equal, "==": np.equal,
          "!=": np.not_equal, ">=": np.greater_equal, ">": np.greater, "and": np.logical_and, "or": np.logical_or}


def kind_of(ev, v):
    if isinstance(v, Arr):
        return v.dtype
    if isinstance(v, Host):
        return ev.dtype_name(v.a)
    x = v.v
    return "bool" if is_bool(x) else "int64" if isinstance(x, int) else "float64" if isinstance(x, float) else "complex128"


def is_complex_kind(k):
    return k.startswith("complex")


def int_value(v):
    if isinstance(v, Lit) and isinstance(v.v, int) and not is_bool(v.v):
        return v.v
    if isinstance(v, Host) and v.a.dtype == np.int64 and v.direct:
        return int(v.a)
    return None


def check_literal_fits(ev, vals):
    """A Python int (literal or host scalar) must fit the integer dtype the values promote to
    (a strong integer array's; int64 for bools and ints alone): NumPy 2 for operators, jitexpr
    also in where and clip, where NumPy wraps silently. No check when a float is among them."""
    kinds = [np.dtype(v.dtype if v.dtype not in HALF else "float16").kind for v in vals if isinstance(v, Arr)]
    weak_inexact = any(isinstance(v, (Lit, Host)) and int_value(v) is None and not
                       (isinstance(v, Lit) and is_bool(v.v)) and not (isinstance(v, Host) and v.a.dtype.kind in "biu")
                       for v in vals)
    if weak_inexact or any(k in "fc" for k in kinds):
        return
    strong = [v.dtype for v in vals if isinstance(v, Arr) and np.dtype(v.dtype).kind in "iu"]
    target = np.result_type(*strong).name if strong else "int64"
    if np.dtype(target).kind not in "iu":
        return  # uint64 with a signed integer: float64
    info = np.iinfo(target)
    for v in vals:
        x = int_value(v)
        if x is not None and not info.min <= x <= info.max:
            raise RefError("value")


def evaluate(node, ev):
    k = node[0]
    if k in ("lit", "const", "var"):
        return ev.leaf(node)
    if k == "str":
        return string_op(node, ev)
    if k == "un":
        return unary(node[1], evaluate(node[2], ev), ev)
    if k == "bin":
        x, y = evaluate(node[2], ev), evaluate(node[3], ev)
        # A division by a zero whose sign NumPy leaves to its loops (zero_sign_free: 0.4 //
        # fmax(0.0, -0.0) is inf or -inf by the loop; seed 70, case 1620437): not judged.
        if node[1] in ("/", "//", "%") and divides_by_free_zero(node[3], y):
            raise RefSkip()
        if node[1] == "**" and divides_by_free_zero(node[2], x):
            raise RefSkip()
        return binary(node[1], x, y, ev)
    if k == "call":
        args = [evaluate(a, ev) for a in node[2]]
        if node[1] in ("fmod", "arctan2") and len(args) == 2 and divides_by_free_zero(node[2][1], args[1]):
            raise RefSkip()
        # 1/x of such a zero, and a power of it (negative exponents): inf of either sign (seed 74,
        # case 719936: reciprocal(fmin(-0.0, int16(-0.0))) is inf for NumPy's SIMD fmin).
        if node[1] in ("reciprocal", "power", "float_power") and args and divides_by_free_zero(node[2][0], args[0]):
            raise RefSkip()
        # The sign read from a zero whose sign NumPy leaves to its loops (zero_sign_free:
        # signbit(fmin(a0, 0)) with a0 = -0.0 is True for NumPy's scalar fmin and False for its
        # array loop; seed 64, case 118310): not judged.
        sign_arg = {"signbit": 0, "copysign": 1}.get(node[1])
        if sign_arg is not None and sign_arg < len(args) and zero_sign_free(node[2][sign_arg]) and \
                isinstance(args[sign_arg], Arr) and np.asarray(args[sign_arg].a).dtype.kind in "fc" and \
                (np.asarray(args[sign_arg].a) == 0).any():
            raise RefSkip()
        return call(node[1], args, ev)
    if k in ("where", "tern"):
        c, x, y = (evaluate(a, ev) for a in node[1:])
        return where(c, x, y, ev)
    if k == "cast":
        return cast(node[1], evaluate(node[2], ev), ev)
    if k == "reduce":
        return reduce_(node[1], evaluate(node[2], ev), node[3], ev)
    if k == "scan":
        return scan_(node[1], evaluate(node[2], ev), node[3], ev)
    if k in ("index", "mask") and weak_expr(node[1], ev):
        # A Python number (or jitexpr's weak expression of them) cannot be indexed; Python
        # evaluates a mask's expression before it subscripts, so that expression's error comes
        # first (seed 70, case 452282: a host float indexed by find() of unbroadcastable columns).
        if k == "mask":
            evaluate(node[2], ev)
        raise RefError("type")
    if k == "index":
        return index_(evaluate(node[1], ev), node[2], ev)
    if k == "mask":
        return mask_(evaluate(node[1], ev), evaluate(node[2], ev), ev)
    if k == "ostat":
        v = evaluate(node[2], ev)
        if node[2][0] == "mask" and isinstance(v, Arr):
            raise RefError("value")  # jitexpr: an order statistic of a selection is refused (docs/language.md)
        return ostat_(node[1], v, node[3], node[4], ev)
    raise AssertionError(node)


def string_operand(x, ev):
    return ev.inputs[x[1]] if x[0] == "var" else np.asarray(x[1])


def string_op(node, ev):
    """("str", op, column, other, swapped): a comparison (other on the left when swapped) or a
    string function of a column and another column or a literal ("slit"); str_len of one. The
    result is NumPy's bool or int64 array. A bytes column meets bytes, a str column str: NumPy
    compares S with str as unequal where jitexpr (numexpr's rule) refuses the mixture."""
    op, a = node[1], ev.inputs[node[2]]
    if op == "str_len":
        return Arr(np.asarray(np.strings.str_len(a)).astype(np.int64), "int64")
    b = string_operand(node[3], ev)
    if (a.dtype.kind == "S") != (b.dtype.kind == "S"):
        raise RefError("type")
    if node[4]:
        a, b = b, a
    if op in STR_FUNCS:
        r = np.asarray(STR_FUNCS[op](a, b))
    else:
        r = np.asarray(eval(f"_a {op} _b", {"_a": a, "_b": b}))
    return Arr(r.astype(np.int64) if op == "find" else r, "int64" if op == "find" else "bool")


def weak_expr(n, ev):
    """Whether jitexpr keeps n weak: literals, host scalars, and operators (not comparisons,
    and/or) of such."""
    k = n[0]
    if k in ("lit", "const"):
        return True
    if k == "var":
        return not isinstance(ev.inputs.get(n[1]), (np.ndarray, BF16))
    if k == "un":
        return n[1] in ("-", "~", "+") and weak_expr(n[2], ev)
    if k == "bin":
        return n[1] not in ("<", "<=", "==", "!=", ">=", ">", "and", "or") and all(weak_expr(c, ev) for c in n[2:4])
    return False


def index_(v, idx, ev):
    """x[idx] with constant indices and slices: NumPy's view (an IndexError past an axis)."""
    if not isinstance(v, Arr):
        raise RefError("type")  # a Python number cannot be indexed
    try:
        r = eval(f"_x[{idx}]", {"_x": v.a})
    except IndexError:
        raise RefError("index")
    return Arr(np.asarray(r), v.dtype)


def mask_(v, m, ev):
    """x[m] for a bool array m over x's leading axes."""
    if not isinstance(v, Arr):
        raise RefError("type")
    if not isinstance(m, Arr) or m.dtype != "bool" or m.a.ndim == 0:
        raise RefError("value")  # jitexpr: a mask is a bool array (no 0-d flag, no integer index)
    try:
        r = v.a[m.a]
    except IndexError:
        raise RefError("index")
    out = Arr(np.asarray(r), v.dtype)
    out.mask_axes = m.a.ndim
    return out


def ostat_(name, v, q, axis, ev):
    """median, percentile(x, q), quantile(x, q) and their nan-forms, NumPy's default method."""
    v = strongify(v, ev)
    kind = v.dtype
    a = v.a
    # NumPy 2.4's order: quantile and percentile refuse complex first ("a must be an array of
    # real numbers"), then the axis is checked (a 0-d operand has none), then bools fail in the
    # interpolation (NumPy's percentile subtracts them).
    if is_complex_kind(kind) and "median" not in name:
        raise RefError("type")
    if axis is not None and not -a.ndim <= axis < a.ndim:
        raise RefError("shape")
    if kind == "bool" and "median" not in name:
        raise RefError("type")
    fn = getattr(np, name)
    logical = ev.logical(lambda p: fn(np.zeros((2,) * max(1, a.ndim), dtype=np.asarray(p).dtype),
                                      *([] if q is None else [q]),
                                      axis=None if axis is None else axis % max(1, a.ndim)), [v])
    if kind in HALF:
        a = ev.round_to(a, kind)
        if "median" not in name:
            if kind == "bfloat16":
                raise RefSkip()  # the interpolation in bfloat16 itself (docs/language.md): no NumPy loop to compare
            a = np.asarray(a).astype(np.float16)  # NumPy interpolates float16 in float16
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = np.asarray(fn(a, *([] if q is None else [q]), axis=axis))
    if logical in HALF:
        r = ev.round_to(r, logical)
    return ev.inexact(Arr(r.astype(ev.carrier(logical)), logical), TRANS_ULPS)


def as_bool(v, ev):
    if isinstance(v, Lit):
        return Lit(bool(v.v))
    if isinstance(v, Host):
        check_host_fit(v, "int64")
        return Host(np.asarray(v.a != 0))
    a = ev.round_to(v.a, v.dtype) if v.dtype in HALF else v.a  # a 16-bit float leaving its type rounds
    return Arr(np.asarray(a != 0), "bool")


def unary(op, a, ev):
    if isinstance(a, Lit):
        return Lit(py_unary(op, a.v))
    kind = kind_of(ev, a)
    if op == "not":
        return ev.apply(np.logical_not, [as_bool(a, ev)])
    if op == "-":
        if kind == "bool":
            raise RefError("type")
        return ev.apply(np.negative, [a], weak_result="keep")
    if op == "+":
        if kind == "bool":
            raise RefError("type")  # NumPy 2 has no positive() loop for bool
        return a
    if op == "~":
        if np.dtype(kind if kind not in HALF else "float16").kind in "fc":
            raise RefError("type")
        return ev.apply(np.invert, [a], weak_result="keep")
    raise AssertionError(op)


POW_SHORTCUTS = {0.5: "sqrt", 2.0: "square", -1.0: "reciprocal"}


def pow_elementwise(x, y):
    """np.power without its float32/float64 loops' shortcut for a scalar exponent (0.5 as
    sqrt): the scalar spread into an array of the base's shape, so that pow runs per element."""
    xa, ya = np.asarray(x), np.asarray(y)
    if ya.ndim == 0 and isinstance(x, np.ndarray):
        shape = xa.shape
        ys = np.full(max(1, xa.size), ya, dtype=np.result_type(xa, y))
        return np.power(xa.reshape(-1) if xa.size else xa.reshape(1), ys).reshape(shape) if xa.size else \
            np.power(xa, y)
    return np.power(x, y)


def binary(op, a, b, ev, function=False):
    """function: np.power (the function power()), not the operator **."""
    if isinstance(a, Lit) and isinstance(b, Lit):
        return Lit(py_binary(op, a.v, b.v))
    if op == "**" and not function and isinstance(a, Arr) and isinstance(b, (Lit, Host)) and \
            np.dtype(a.dtype if a.dtype not in HALF else "float16").kind in "fc":
        # ndarray.__pow__ with a Python number: 0.5 is sqrt, 2 square, -1 reciprocal
        # (a Python float 0.5 is sqrt; a Python int 2 is square and -1 reciprocal)
        bv = ev.operand(b)
        integer = isinstance(bv, (int, np.integer)) and not is_bool(bv)
        short = None
        if integer and int(bv) in (2, -1):
            short = POW_SHORTCUTS[float(bv)]
        elif isinstance(bv, (float, np.floating)) and float(bv) == 0.5:
            short = "sqrt"
        if short:
            if isinstance(b, Host):
                check_host_fit(b, "float64")
            return call(short, [a], ev)
    if op == "**" and not function and isinstance(a, Arr) and a.dtype == "bool" and np.ndim(a.a) >= 1 and \
            isinstance(b, (Lit, Host)) and int_value(b) == 2:
        # ndarray.__pow__'s ** 2 is np.square: int8 for bools. jitexpr takes it for the literal
        # (a host scalar's value cannot choose the dtype): a host 2 is not judged.
        if isinstance(b, Host):
            raise RefSkip()
        return call("square", [a], ev)
    ka, kb = kind_of(ev, a), kind_of(ev, b)
    if op in ("<", "<=", ">", ">=") and (is_complex_kind(ka) or is_complex_kind(kb)):
        raise RefError("type")  # jitexpr does not order complex numbers (NumPy does)
    if op == "**":
        # integer ** negative integer: NumPy raises for a negative literal or scalar; an array
        # exponent with a negative element is jitexpr's documented 0/1/-1 where NumPy raises.
        ints = all(np.dtype(k if k not in HALF else "float16").kind in "biu" for k in (ka, kb))
        if ints:
            bv = ev.operand(b)
            if np.any(np.asarray(bv) < 0):
                # an array exponent, or an expression of host scalars (computed when the program
                # runs): jitexpr's documented 0/1/-1 where NumPy raises; a literal or a host
                # scalar: an error in both
                if isinstance(b, Arr) or (isinstance(b, Host) and not b.direct):
                    raise RefSkip()
                raise RefError("value")
    if op in ("//", "%") and (is_complex_kind(ka) or is_complex_kind(kb)):
        raise RefError("type")
    if op in ("//", "%"):
        ev.periodic_guard(a, b)
    fn = NP_BIN[op]
    if op == "**" and function and any(isinstance(v, Arr) and v.dtype in HALF for v in (a, b)):
        fn = pow_elementwise  # NumPy's float16 loop has no scalar shortcut; the carrier's would
    if op in ("and", "or"):  # the language's logical operators: each operand as bool
        return ev.apply(fn, [as_bool(a, ev), as_bool(b, ev)])
    weak = op not in ("<", "<=", "==", "!=", ">=", ">")
    try:
        r = ev.apply(fn, [a, b], weak_result=weak)
        if op == "**" and isinstance(r, Arr) and np.asarray(r.a).dtype.kind == "c":
            return ev.inexact(r, complex_power_ulps(a, b, ev))
        return ev.inexact(r, TRANS_ULPS) if op == "**" else r
    except OverflowError:
        raise RefError("value")
    except TypeError:
        raise RefError("type")
    except ValueError as e:
        raise RefError("shape" if "broadcast" in str(e) else "value")


def complex_power_ulps(a, b, ev):
    """The allowed error of a complex power a ** b (the operator, power() or float_power()).

    A complex power is exp(b log a): log a's last-bit error is multiplied by b (by 126 in
    (0.76-1.32j) ** -126, where NumPy's own answer is 10 ulp off and cpow's order of rounding
    decides who is nearer; by 418 in float_power((1.15-1.73j), -418.3j), seed 60, case 274905),
    so the promise scales with |b| |log a| (the largest finite product of the elements: an inf
    elsewhere in a must not leave the other elements the base promise)."""
    with np.errstate(all="ignore"):
        la = np.abs(np.log(np.asarray(ev.operand(a), dtype=np.complex128)))
        mb = np.abs(np.asarray(ev.operand(b), dtype=np.complex128))
        prod = np.asarray(mb * la, dtype=np.float64)
        cond = float(np.max(prod[np.isfinite(prod)], initial=0.0))
    return TRANS_ULPS * max(1.0, cond)


def np_func(name):
    if name == "power":
        return np.power
    return getattr(np, NP_NAME.get(name, name))


def complex_log1p(z, hi):
    """log1p of complex values with the real part from |1+z|^2 computed exactly (jitexpr's is
    accurate there; NumPy's rounds 1 + z first)."""
    z = np.asarray(z)
    out = np.log1p(z)
    flat_out = out.reshape(-1)
    for i, w in enumerate(z.reshape(-1)):
        x, y = float(w.real), float(w.imag)
        if not (math.isfinite(x) and math.isfinite(y)) or (x == -1 and y == 0):
            continue
        m = (1 + Fraction(x)) ** 2 + Fraction(y) ** 2
        if Fraction(1, 2) < m < 2:
            re = 0.5 * math.log1p(float(m - 1))
        else:
            k2 = m.numerator.bit_length() - m.denominator.bit_length()
            re = 0.5 * (math.log(float(m / Fraction(2) ** k2)) + k2 * math.log(2))
        flat_out[i] = complex(re, float(flat_out[i].imag))
    return out


def call(name, args, ev):
    arity, family = FUNCS[name]
    kinds = [kind_of(ev, a) for a in args]
    cplx = any(is_complex_kind(k) for k in kinds)
    if cplx and name in COMPLEX_INEXACT:
        family = "trans"  # csqrt and |z| (hypot) are not correctly rounded
    boolish = all(k == "bool" for k in kinds)
    # jitexpr's documented refusals where NumPy accepts
    if cplx and name in ("rint", "ceil", "floor", "trunc", "exp2", "cbrt", "signbit", "maximum", "minimum",
                         "clip", "arctan2", "hypot", "copysign", "nextafter", "fmod", "less_equal"):
        raise RefError("type")
    if name in ("fmod", "remainder", "floor_divide") and len(args) == 2 and not cplx:
        ev.periodic_guard(args[0], args[1])
    if name in ("sin", "cos", "tan"):
        ev.angle_guard(args[0])
    if cplx and name in ("exp", "expm1", "sinh", "cosh", "tanh"):
        ev.angle_guard(args[0], part="imag")
    if name == "ldexp" and not isinstance(args[0], Arr):
        raise RefSkip()  # NumPy's loop for a Python-number mantissa: not what apply() models (tests/python covers it)
    if name == "signbit" and isinstance(args[0], Arr) and np.isnan(np.asarray(args[0].a, dtype=np.complex128)).any():
        raise RefSkip()  # the sign of a NaN an invalid operation made is the libm's (IEEE leaves it open)
    if name == "copysign" and isinstance(args[1], Arr) and np.isnan(np.asarray(args[1].a, dtype=np.complex128)).any():
        raise RefSkip()  # the same sign, copied (NumPy's log2(-8.0) is +NaN in float64, -NaN in float32)
    if name in ("spacing", "ldexp", "gcd", "lcm", "bitwise_count", "fabs", "float_power") and \
            any(k == "bfloat16" for k in kinds):
        raise RefSkip()  # not NumPy's dtype: ml_dtypes' loops for these are its own
    if name in ("ldexp", "spacing") and (any(k == "float16" for k in kinds) or kinds[0] in ("bool", "int8", "uint8")):
        raise RefSkip()  # float16 results: the reference's carrier (float32) steps and rounds as float32
    if name == "sign" and boolish:
        raise RefError("type")
    if name == "reciprocal":
        v = ev.operand(args[0])
        if np.dtype(kinds[0] if kinds[0] not in HALF else "float16").kind in "biu" and np.any(np.asarray(v) == 0):
            raise RefSkip()  # integer 1/0: NumPy undefined, jitexpr 0
    if name == "power":  # a ufunc: Python scalars alone are NumPy scalars (np.power(3, 1e10) is inf)
        if not any(isinstance(a, Arr) for a in args):
            if any((x := int_value(a)) is not None and not -2**63 <= x < 2**63 for a in args):
                raise RefSkip()
            args = [strongify(a, ev) for a in args]
        return binary("**", args[0], args[1], ev, function=True)
    if name == "clip":  # the ufunc; of Python numbers alone (literals or host scalars: seed 71, case
        # 1192230), after np.clip's asarray of the first (2**63: uint64)
        if all(isinstance(a, (Lit, Host)) for a in args) and (x := int_value(args[0])) is not None and \
                2**63 <= x < 2**64:
            args = [strongify(args[0], ev)] + list(args[1:])
        check_literal_fits(ev, args)
        fn_clip = np._core.umath.clip if hasattr(np, "_core") else np.core.umath.clip
    if name == "nextafter":  # steps in the 16-bit type (nextafter_f16 / _bf16); two bools are float16's
        scalars = all(isinstance(a, (Lit, Host)) for a in args)
        nv = [strongify(a, ev) for a in args] if scalars and all(kind_of(ev, a) == "bool" for a in args) else args
        if ev.logical(np.nextafter, nv) in HALF:
            for a in nv:  # an expression of host scalars is checked as apply() checks it (seed 74,
                check_host_fit(a, "int64")  # case 782236: nextafter(s0 << s0, fabs(True)))
            return nextafter_half(nv, ev)
    if arity > 1 and not any(isinstance(a, Arr) for a in args) and any(
            (x := int_value(a)) is not None and not -2**63 <= x < 2**63 for a in args):
        raise RefSkip()  # NumPy makes object arrays or float64 of such ints, by function
    fn = np_func(name) if name != "clip" else fn_clip
    if name in ("spacing", "nextafter") and ev.hi and any(isinstance(a, Arr) for a in args) and \
            ev.logical(fn, args) == "float32":
        # Exact in their own type: in the float64 carrier of the exact evaluation, spacing(x)
        # would be a float64's step (4e-16 where a float32's is 2.4e-7, seed 44 case 94806).
        ops = [np.asarray(ev.operand(a)).astype(np.float32) if isinstance(a, Arr) else ev.operand(a) for a in args]
        return Arr(np.asarray(fn(*ops)).astype(ev.carrier("float32")), "float32")
    if name == "spacing" and ev.hi and len(args) == 1 and (
            (isinstance(args[0], Arr) and args[0].dtype == "float64") or
            (not isinstance(args[0], Arr) and isinstance(ev.operand(args[0]), (float, np.floating)))):
        # The same for float64: spacing(2.5) carried as a long double would be a long double's
        # step (2e-19 where a float64's is 4.4e-16, seed 66, case 52815).
        x = np.asarray(ev.operand(args[0])).astype(np.float64)
        return Arr(np.asarray(np.spacing(x)).astype(ev.carrier("float64")), "float64")
    if name == "log1p" and cplx:
        fn = lambda z, hi=ev.hi: complex_log1p(z, hi)  # noqa: E731
    # a ufunc of Python scalars alone gives a NumPy scalar: typed (np.maximum(2, 3) is int64);
    # with an array among the arguments the scalars stay weak
    weak_only = all(not isinstance(a, Arr) for a in args)
    vals = [strongify(a, ev) for a in args] if weak_only else args
    try:
        r = ev.apply(fn, vals)
        if name == "float_power" and isinstance(r, Arr) and np.asarray(r.a).dtype.kind == "c":
            return ev.inexact(r, complex_power_ulps(args[0], args[1], ev))
        return ev.inexact(r, TRANS_ULPS) if family == "trans" else r
    except OverflowError:
        raise RefError("value")
    except TypeError:
        raise RefError("type")
    except ValueError as e:
        raise RefError("shape" if "broadcast" in str(e) else "value")


def nextafter_half(args, ev):
    vals = args
    logical = ev.logical(np.nextafter, vals)
    if logical not in HALF:
        return ev.apply(np.nextafter, vals)
    # Each operand in the 16-bit type first: a chain's end is read rounded, and a Python number
    # beside the array becomes its type (NEP 50: nextafter(1e10, bfloat16 array) steps from
    # bfloat16(1e10), seed 54 case 126003).
    x, y = (np.broadcast_arrays(*[np.asarray(ev.round_to(np.asarray(ev.operand(v), dtype=np.float64), logical),
                                             dtype=np.float64) for v in vals]))
    if logical == "float16":
        r = np.nextafter(x.astype(np.float16), y.astype(np.float16)).astype(np.float32)
    else:
        bx = bf16_bits(x.astype(np.float32)).astype(np.int32)
        mag = bx & 0x7FFF
        up = (x < y) == (bx & 0x8000 == 0)
        nb = np.where(mag == 0, np.where(y > 0, 1, 0x8001), np.where(up, bx + 1, bx - 1)).astype(np.uint16)
        r = bf16_from_bits(nb)
        r = np.where(np.isnan(x) | np.isnan(y), np.float32(np.nan), np.where(x == y, y.astype(np.float32), r))
    return Arr(np.asarray(r).astype(ev.carrier(logical)), logical)


def strongify(v, ev):
    """A literal or host value made an array of its default dtype (an error if it fits none)."""
    if isinstance(v, Arr):
        return v
    if isinstance(v, Host):
        check_host_fit(v, "int64")  # an array of its default dtype: the Python value must fit
        return ev.arr(v.a, ev.dtype_name(v.a))
    x = v.v
    if isinstance(x, int) and not is_bool(x) and not (-2**63 <= x < 2**64):
        raise RefError("value")
    a = np.asarray(x)
    return ev.arr(a, a.dtype.name)


def where(c, x, y, ev):
    check_literal_fits(ev, [x, y])
    cb = strongify(as_bool(c, ev), ev)  # the condition as bool (any literal has a truth value)
    xs = x if isinstance(x, Arr) else x
    try:
        return ev.apply(lambda cc, a, b: np.where(cc, a, b), [cb, xs, y], condition=True)
    except ValueError as e:
        raise RefError("shape" if "broadcast" in str(e) or "shape" in str(e) else "value")


def cast(dtype, v, ev):
    dtype = CAST_ALIAS.get(dtype, dtype)
    if isinstance(v, Lit):
        x = v.v
        if isinstance(x, complex) and dtype not in ("complex64", "complex128", "bool"):
            raise RefSkip()
        if isinstance(x, int) and not is_bool(x) and np.dtype(dtype if dtype not in HALF else "float16").kind in "iu":
            info = np.iinfo(dtype)
            if not info.min <= x <= info.max:
                raise RefError("value")
        if isinstance(x, float) and np.dtype(dtype if dtype not in HALF else "float16").kind in "iu":
            info = np.iinfo(dtype)
            if not (math.isfinite(x) and info.min - 1 < x < info.max + 1):
                raise RefSkip()
        if isinstance(x, int) and not is_bool(x) and not (-2**63 <= x < 2**64) and dtype in ("bool",):
            return ev.arr(np.asarray(True), "bool")
        try:
            if isinstance(x, int) and not is_bool(x) and 2**63 <= x < 2**64:
                src = np.asarray(x, dtype=np.uint64)  # exact: through a float, 2**64 - 1 became 2**64
            else:
                src = np.asarray(float(x) if isinstance(x, int) and not is_bool(x) and abs(x) >= 2**63 else x)
        except OverflowError:
            raise RefError("value")
        if src.dtype.kind == "i" and src.dtype != np.int64:
            src = src.astype(np.int64)
        return Arr(ev.round_to(src, dtype), dtype)
    if isinstance(v, Host):
        # an expression of host scalars is an int64 where a cast meets it: its exact value must
        # fit (int16(3 << 108) is Python's OverflowError, not a wrapped int64)
        check_host_fit(v, "int64")
        v = ev.arr(v.a, ev.dtype_name(v.a))
    src = v.a
    if v.dtype in HALF:  # an explicit cast leaving a 16-bit float rounds it first
        src = ev.round_to(src, v.dtype)
    kind = np.dtype(dtype if dtype not in HALF else "float16").kind
    if kind in "iu" and np.asarray(src).dtype.kind in "fc":
        s = np.asarray(src).real.astype(np.float64) if np.iscomplexobj(src) else np.asarray(src, dtype=np.float64)
        info = np.iinfo(dtype)
        if np.any(~np.isfinite(s) | (s <= info.min - 1) | (s >= info.max + 1)):
            raise RefSkip()  # NumPy leaves NaN and out-of-range float -> int undefined
    if np.iscomplexobj(src) and kind != "c":
        src = np.asarray(src).real if kind != "b" else (np.asarray(src) != 0)
    return Arr(ev.round_to(src, dtype), dtype)


def reduce_(name, v, axis, ev):
    v = strongify(v, ev)
    kind = v.dtype
    if name in ("min", "max", "argmin", "argmax") and is_complex_kind(kind):
        raise RefError("type")
    a = v.a
    if axis is not None:
        nd = a.ndim
        if not -nd <= axis < nd:
            raise RefError("shape")
    fn = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "min": np.min, "max": np.max, "any": np.any,
          "all": np.all, "argmin": np.argmin, "argmax": np.argmax}[name]
    if name in ("min", "max", "argmin", "argmax") and (a.size == 0 if axis is None else a.shape[axis] == 0):
        raise RefError("value")
    k = getattr(v, "mask_axes", 0)
    if name in ("argmin", "argmax") and axis is not None and k > 1 and a.ndim > 1 and axis % a.ndim == 0:
        raise RefError("value")  # jitexpr: along the selected axis of a mask of several axes, refused
    if name in ("argmin", "argmax") and kind in HALF:
        raise RefSkip()  # which of two values equal once rounded to 16 bits comes first: the carrier's order
    logical = ev.logical(lambda p: fn(np.zeros((2,) * max(1, a.ndim), dtype=np.asarray(p).dtype),
                                      axis=None if axis is None else axis % max(1, a.ndim)), [v])
    if name == "mean" and a.size == 0 and axis is None:
        raise RefSkip()  # mean of nothing: NaN with a warning in NumPy; 0/0 in jitexpr
    if kind in HALF:  # the operand is NumPy's float16 array: each element rounded (prod of a
        a = ev.round_to(a, kind)  # chain that overflows float16 meets inf, as jitexpr's does)
    r = np.asarray(fn(a, axis=axis))
    if name in ("sum", "prod") and kind in HALF:
        r = np.asarray(fn(a, axis=axis, dtype=a.dtype))
    if logical in HALF:
        # jitexpr stores a reduction's result, rounded to its 16-bit dtype (a float16 product past
        # 65504 is inf), and reads it back from there.
        r = ev.round_to(r, logical)
    out = Arr(r.astype(ev.carrier(logical)), logical)
    if name in ("sum", "prod", "mean"):
        n = a.size if axis is None else a.shape[axis]
        out = ev.inexact(out, 2 * max(1, n))
    return out


def scan_(name, v, axis, ev):
    """NumPy's cumsum/cumprod/nancumsum/nancumprod: a 0-d operand is taken as 1-d, no axis
    flattens in C order; each step rounded to the result dtype (a 16-bit float accumulates in
    its own format, done here step by step since NumPy has no bfloat16)."""
    v = strongify(v, ev)
    kind = v.dtype
    a = np.atleast_1d(v.a)
    nd = a.ndim
    if axis is not None and not -nd <= axis < nd:
        raise RefError("shape")
    prod = name.endswith("prod")
    logical = ev.logical(lambda p: getattr(np, name)(np.zeros((2,) * nd, dtype=np.asarray(p).dtype)), [v])
    if name.startswith("nan") and np.asarray(a).dtype.kind in "fc":
        a = np.where(np.isnan(a), 1 if prod else 0, a)
    x = a.reshape(-1) if axis is None else np.moveaxis(a, axis, -1)
    if kind in HALF:
        x = ev.round_to(x, kind)
        out = np.empty_like(x)
        # NumPy's accumulate starts from the first element, not from 0 + it: a cumsum of -0.0
        # begins -0.0 (seed 58, case 244552: reciprocal(cumsum(...)) is -inf there).
        acc = None
        for j in range(x.shape[-1]):
            acc = x[..., j] if acc is None else ev.round_to(acc * x[..., j] if prod else acc + x[..., j], kind)
            out[..., j] = acc
        r = out
    else:
        r = (np.cumprod if prod else np.cumsum)(x, axis=-1)
    if axis is not None:
        r = np.moveaxis(r, -1, axis)
    out = Arr(np.asarray(r).astype(ev.carrier(logical)), logical)
    n = x.shape[-1] if x.ndim else 1
    return ev.inexact(out, 2 * max(1, n))


# --- the generator -------------------------------------------------------------------------------

SHAPES = [(), (5,), (3, 4), (2, 3, 4), (0,), (1,), (4, 1), (0, 3), (2, 1, 3)]


def sample_values(rng, dtype, shape):
    n = int(np.prod(shape)) if shape else 1
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dtype in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        info = np.iinfo(dtype)
        v = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        small = rng.integers(max(info.min, -9), min(info.max, 9), n, dtype=dtype, endpoint=True)
        pick = rng.random(n)
        v = np.where(pick < 0.6, small, v)
        specials = np.array([0, 1, info.max, info.min] + ([-1] if info.min < 0 else []), dtype=object)
        for i in range(n):
            if rng.random() < 0.15:
                v[i] = specials[rng.integers(len(specials))]
        return v.reshape(shape)
    real = "float32" if dtype in HALF else dtype
    if dtype.startswith("complex"):
        real = "float32" if dtype == "complex64" else "float64"
    def reals():
        v = rng.standard_normal(n) * np.where(rng.random(n) < 0.2, 1e3, 2.0)
        specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 1e-30, 3e4]
        for i in range(n):
            if rng.random() < 0.2:
                v[i] = specials[rng.integers(len(specials))]
        return v
    if dtype.startswith("complex"):
        return (reals() + 1j * reals()).astype(dtype).reshape(shape)
    v = reals()
    if dtype == "float16":
        return v.astype(np.float16).reshape(shape)
    if dtype == "bfloat16":
        return BF16(bf16_bits(v.astype(np.float32)).reshape(shape))
    return v.astype(real).reshape(shape)


def fortran_order(rng, names, driver):
    """In one case in five (when the driver passes views), every array of two or more axes in
    Fortran order, same values: the arrays of a call sharing one axis order other than C's, which
    the runtime runs over as contiguous views (NumPy's order K for the results). Decided by a
    generator of its own, seeded from `rng`'s state without drawing from it, so that the cases'
    values stay what they were."""
    if not driver.strided:
        return
    own = np.random.default_rng(rng.bit_generator.state["state"]["state"] % (1 << 63))
    if own.random() >= 0.2:
        return
    for k, v in names.items():
        bits = v.bits if isinstance(v, BF16) else v
        if np.ndim(bits) >= 2:
            f = np.asfortranarray(bits)
            names[k] = BF16(f) if isinstance(v, BF16) else f


def layout(rng, value, driver):
    """The array as a strided or transposed view (when the driver passes views), same values."""
    if not driver.strided or rng.random() < 0.6:
        return value
    bits = value.bits if isinstance(value, BF16) else value
    if bits.ndim >= 2 and rng.random() < 0.5:
        t = np.ascontiguousarray(bits.T).T  # same values, transposed strides
    elif bits.ndim >= 1 and bits.shape[-1] > 0:
        big = np.zeros(bits.shape[:-1] + (bits.shape[-1] * 2,), dtype=bits.dtype)
        big[..., ::2] = bits
        t = big[..., ::2]
        if rng.random() < 0.3:
            rev = np.ascontiguousarray(bits[..., ::-1])
            t = rev[..., ::-1]
    else:
        t = bits
    return BF16(t) if isinstance(value, BF16) else t


def sample_strings(rng, kind, shape):
    """An S or U array of short random strings: empty ones, NULs inside and at the end (NumPy
    drops a trailing one), bytes above 0x7f, code points past the BMP."""
    n = int(np.prod(shape)) if shape else 1
    alphabet = BYTE_ALPHABET if kind == "S" else STR_ALPHABET
    join = b"".join if kind == "S" else "".join
    vals = [join(alphabet[int(rng.integers(len(alphabet)))] for _ in range(int(rng.integers(0, 5))))
            for _ in range(n)]
    width = max([len(v) for v in vals] + [1]) + int(rng.integers(0, 3))
    return np.array(vals, dtype=f"{kind}{width}").reshape(shape)


class Generator:
    """The random programs. `srng` draws what concerns strings only (whether a case has string
    columns, where a string operation replaces a leaf), so that the numeric programs of a seed are
    the ones it drew before strings were added."""

    def __init__(self, rng, driver, srng=None):
        self.rng, self.driver = rng, driver
        self.srng = srng if srng is not None else np.random.default_rng(0)
        self.strings = []

    def string_inputs(self, names):
        """t0 (and t1) of a shape that broadcasts with the numeric inputs, in a third of cases."""
        srng = self.srng
        if srng.random() >= 0.3:
            return
        arrays = [v.bits if isinstance(v, BF16) else v for v in names.values() if not np.isscalar(v)]
        kind = "S" if srng.random() < 0.5 else "U"
        for i in range(int(srng.integers(1, 3))):
            shape = arrays[int(srng.integers(len(arrays)))].shape if arrays else ()
            if srng.random() < 0.1:
                kind = "U" if kind == "S" else "S"  # a mixture, refused
            names[f"t{i}"] = layout(srng, sample_strings(srng, kind, shape), self.driver)
            self.strings.append(f"t{i}")

    def string_op(self, names):
        srng = self.srng
        t = str(srng.choice(self.strings))
        r = srng.random()
        if r < 0.1:
            return ("str", "str_len", t, None, False)
        op = str(srng.choice(STR_COMPARE)) if r < 0.55 else str(srng.choice(sorted(STR_FUNCS)))
        if srng.random() < 0.35:
            other = ("var", str(srng.choice(self.strings)))
        else:
            kind = names[t].dtype.kind if srng.random() < 0.95 else ("U" if names[t].dtype.kind == "S" else "S")
            other = ("slit", sample_strings(srng, kind, ()).item())
        return ("str", op, t, other, op in STR_COMPARE and srng.random() < 0.3)

    def numeric(self, names):
        return sorted(k for k in names if k not in self.strings)

    def inputs(self):
        rng = self.rng
        base = SHAPES[rng.integers(len(SHAPES))]
        names = {}
        for i in range(int(rng.integers(1, 4))):
            dt = DTYPES[rng.integers(len(DTYPES))]
            shape = list(base)
            if shape and rng.random() < 0.3:
                shape = shape[int(rng.integers(0, len(shape))):]  # fewer leading axes
            shape = [1 if (s > 1 and rng.random() < 0.2) else s for s in shape]
            if rng.random() < 0.04 and shape:
                shape[-1] += 1  # shapes that do not broadcast
            names[f"a{i}"] = layout(rng, sample_values(rng, dt, tuple(shape)), self.driver)
        fortran_order(rng, names, self.driver)
        if self.driver.host_scalars:
            for i in range(int(rng.integers(0, 3))):
                r = rng.random()
                names[f"s{i}"] = (bool(rng.integers(2)) if r < 0.15 else int(rng.integers(-300, 300)) if r < 0.5
                                  else float(rng.choice([2.5, -0.5, 1e10, 3.0, 0.1, -7.25])) if r < 0.9
                                  else complex(float(rng.normal()), float(rng.normal())))
        self.string_inputs(names)
        return names

    def literal(self):
        rng = self.rng
        r = rng.random()
        if r < 0.35:
            return ("lit", int(rng.integers(-3, 10)))
        if r < 0.5:
            return ("lit", int(rng.choice([127, 128, 255, 256, 1000, 32768, 65536, 2**31, 2**32, 2**53 + 1, 2**63 - 1,
                                           2**63, 2**64 - 1, 2**64, 10**20])))
        if r < 0.85:
            return ("lit", float(rng.choice([0.5, 2.5, 1.0, 0.1, 1e-3, 1e10, 3.0, 1e300, 65504.0, 1e-40])))
        if r < 0.92:
            return ("lit", bool(rng.integers(2)))
        return ("const", str(rng.choice(list(CONSTANTS))))

    def program(self, names, depth):
        """An expression, now and then a boolean-mask selection of one (x[x > 0]) or a reduction
        or an order statistic of a selection (the root only: a selection's length is the data's,
        so jitexpr lets it meet nothing it would have to broadcast with)."""
        rng = self.rng
        r = rng.random()
        if r < 0.76 or not self.numeric(names):
            return self.expr(names, depth)
        x = self.expr(names, depth - 1, plain=r < 0.88)
        var = ("var", str(rng.choice(self.numeric(names))))
        left = x if used_names(x) and rng.random() < 0.6 else var
        sel = ("mask", x, ("bin", str(rng.choice(["<", ">", "!=", "=="])), left, self.literal()))
        if self.strings and self.srng.random() < 0.4:
            sel = ("mask", x, self.string_op(names))  # a[t0 == b'ab']
        r = rng.random()
        axis = None if rng.random() < 0.6 else int(rng.integers(-1, 3))
        if r < 0.4:
            return sel
        if r < 0.95:
            return ("reduce", str(rng.choice(REDUCTIONS + ["argmin", "argmax"])), sel, axis)
        return self.order_stat(sel, axis)

    def order_stat(self, x, axis):
        rng = self.rng
        name = str(rng.choice(ORDER_STATS))
        q = None
        if "percentile" in name:
            q = float(rng.choice([0, 25, 50, 90, 100, 33.3]))
        elif "quantile" in name:
            q = float(rng.choice([0, 0.25, 0.5, 0.9, 1]))
        return ("ostat", name, x, q, axis)

    def expr(self, names, depth, plain=False):
        """plain: element-wise only below (no reduction, scan or order statistic), so that it
        can be indexed (jitexpr indexes a scan or a statistic only where the view reaches its
        operand)."""
        rng = self.rng
        if depth <= 0 or rng.random() < 0.25:
            if self.numeric(names) and rng.random() < 0.65:
                leaf = ("var", str(rng.choice(self.numeric(names))))
            else:
                leaf = self.literal()
            if self.strings and self.srng.random() < 0.3:
                return self.string_op(names)
            return leaf
        r = rng.random()
        sub = lambda: self.expr(names, depth - 1, plain)  # noqa: E731
        if r < 0.38:
            return ("bin", str(rng.choice(BINOPS)), sub(), sub())
        if r < 0.44:
            return ("un", str(rng.choice(["-", "~", "not", "+"])), sub())
        if r < 0.72:
            name = str(rng.choice(sorted(FUNCS)))
            return ("call", name, [sub() for _ in range(FUNCS[name][0])])
        if r < 0.80:
            return ("where" if rng.random() < 0.5 else "tern", sub(), sub(), sub())
        if r < 0.88:
            return ("cast", str(rng.choice(CASTS)), sub())
        if r < 0.93 or plain:
            return ("index", self.expr(names, depth - 1, True), str(rng.choice(INDEXES)))
        axis = None if rng.random() < 0.5 else int(rng.integers(-2, 3))
        r = rng.random()
        if r < 0.22:
            return ("scan", str(rng.choice(SCANS)), sub(), axis)
        if r < 0.34:
            return self.order_stat(sub(), axis)
        return ("reduce", str(rng.choice(REDUCTIONS)), sub(), axis)


# --- text, families, comparison ----------------------------------------------------------------


def lit_text(v):
    if is_bool(v):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(v) if v >= 0 else f"({v})"
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "(-inf)"
    s = repr(v)
    return s if v >= 0 and not s.startswith("-") else f"({s})"


def text(n):
    k = n[0]
    if k == "lit":
        return lit_text(n[1])
    if k in ("const", "var"):
        return n[1]
    if k == "slit":
        return repr(n[1])
    if k == "str":
        if n[1] == "str_len":
            return f"str_len({n[2]})"
        a, b = n[2], text(n[3])
        if n[4]:
            a, b = b, a
        return f"({a} {n[1]} {b})" if n[1] in STR_COMPARE else f"{n[1]}({a}, {b})"
    if k == "un":
        return f"({n[1]} {text(n[2])})" if n[1] == "not" else f"({n[1]}{text(n[2])})"
    if k == "bin":
        return f"({text(n[2])} {n[1]} {text(n[3])})"
    if k == "call":
        return f"{n[1]}({', '.join(text(a) for a in n[2])})"
    if k == "where":
        return f"where({text(n[1])}, {text(n[2])}, {text(n[3])})"
    if k == "tern":
        return f"({text(n[1])} ? {text(n[2])} : {text(n[3])})"
    if k == "cast":
        return f"{n[1]}({text(n[2])})"
    if k in ("reduce", "scan"):
        return f"{n[1]}({text(n[2])})" if n[3] is None else f"{n[1]}({text(n[2])}, axis={n[3]})"
    if k == "index":
        return f"({text(n[1])})[{n[2]}]"
    if k == "mask":
        return f"({text(n[1])})[{text(n[2])}]"
    if k == "ostat":
        q = "" if n[3] is None else f", {n[3]!r}"
        return f"{n[1]}({text(n[2])}{q})" if n[4] is None else f"{n[1]}({text(n[2])}{q}, axis={n[4]})"
    raise AssertionError(n)


def children(n):
    k = n[0]
    if k == "un":
        return [n[2]]
    if k == "bin":
        return [n[2], n[3]]
    if k == "call":
        return list(n[2])
    if k in ("where", "tern"):
        return list(n[1:])
    if k in ("cast", "reduce", "scan", "ostat"):
        return [n[2]]
    if k == "index":
        return [n[1]]
    if k == "mask":
        return [n[1], n[2]]
    return []


def inexact_ops(n):
    """How many operations whose results are not promised to round as NumPy's do."""
    k = n[0]
    own = 0
    if k == "call" and (FUNCS[n[1]][1] == "trans" or n[1] in COMPLEX_INEXACT):
        own = 1
    if k == "bin" and n[1] == "**":
        own = 1
    if (k == "reduce" and n[1] in ("sum", "prod", "mean")) or k == "scan":
        own = 4
    if k == "ostat":
        own = 1
    return own + sum(inexact_ops(c) for c in children(n))


def used_names(n, out=None):
    out = set() if out is None else out
    if n[0] == "var":
        out.add(n[1])
    if n[0] == "str":
        out.add(n[2])
        if n[3] is not None and n[3][0] == "var":
            out.add(n[3][1])
    for c in children(n):
        used_names(c, out)
    return out


def final(v, ev):
    """The program's value as jitexpr returns it: a dtype and an array (stored, so 16-bit floats
    rounded); a weak value becomes its default dtype."""
    v = strongify(v, ev)
    if v.dtype in HALF:
        return v.dtype, ev.round_to(v.a, v.dtype)
    return v.dtype, v.a


def ulp(x, dtype):
    real = {"complex64": "float32", "complex128": "float64", "bfloat16": "float32"}.get(dtype, dtype)
    x = np.abs(np.asarray(x, dtype=np.float64))
    info = np.finfo(real if dtype != "bfloat16" else "float32")
    eps = 2.0**-7 if dtype == "bfloat16" else float(info.eps)
    tiny = float(info.tiny) if dtype != "bfloat16" else 2.0**-126
    return np.maximum(x, tiny) * eps


def as_float_view(dtype, data):
    if dtype == "bfloat16":
        return bf16_from_bits(data).astype(np.float64)
    return data


def zero_sign_free(n):
    """Whether the expression holds a maximum or minimum, whose sign of an equal pair of zeros
    NumPy leaves to its SIMD loops (-0.0 or 0.0 by array length): zeros then compare equal."""
    if (n[0] == "call" and n[1] in ("maximum", "minimum", "clip", "fmax", "fmin")) or (n[0] == "reduce" and n[1] in ("min", "max")):
        return True
    return any(zero_sign_free(c) for c in children(n))


def divides_by_free_zero(n, v):
    """Whether v, the value of expression n, is a float or complex array or scalar holding a
    zero whose sign NumPy leaves to its loops (zero_sign_free)."""
    if not zero_sign_free(n):
        return False
    try:
        a = np.asarray(v.a if isinstance(v, (Arr, Host)) else v.v if isinstance(v, Lit) else v, dtype=None)
        return a.dtype.kind in "fc" and bool((a == 0).any())
    except (TypeError, ValueError):
        return False


def compare(got, lo, hi, n_inexact, signed_zeros=True):
    """'' when jitexpr's result agrees, else what differs. `hi` is None (the expression is
    rounded alike by NumPy and jitexpr: compared bit for bit) or the exact value followed by the
    exact values with every inexact result moved by its allowed error."""
    gdt, gdata = got
    ldt, ldata = lo
    if gdt != ldt:
        return f"dtype {gdt}, NumPy gives {ldt}"
    if tuple(gdata.shape) != tuple(np.shape(ldata)):
        return f"shape {tuple(gdata.shape)}, NumPy gives {tuple(np.shape(ldata))}"
    g = as_float_view(gdt, gdata)
    want = np.asarray(ldata)
    if gdt == "bfloat16":
        want = np.asarray(want, dtype=np.float64)
    exact_value = None if hi is None else np.asarray(hi[0][1])
    moved = [] if hi is None else [np.asarray(h[1]) for h in hi[1:]]
    kind = np.dtype(gdt if gdt != "bfloat16" else "float32").kind
    if kind in "biu":
        bad = g != want
        for h in ([exact_value] if exact_value is not None else []) + moved:
            if h.shape == want.shape:
                bad &= h.astype(want.dtype) == want  # decided by rounding: not judged
        idx = np.argwhere(bad)
        if idx.size:
            i = tuple(idx[0])
            return f"element {i}: {g[i]!r}, NumPy gives {want[i]!r}"
        return ""
    if kind == "c" and g.shape == want.shape:
        # An infinite part beside a NaN part: C99 leaves its sign unspecified (cacos(inf + NaN j)
        # is NaN +- inf j), and it follows the sign bit of a NaN, which no operation promises.
        gw = np.asarray(g, dtype=np.clongdouble)
        ww = np.asarray(want, dtype=np.clongdouble)
        for inf_part, nan_part in ((np.imag, np.real), (np.real, np.imag)):
            free = np.isnan(nan_part(gw)) & np.isnan(nan_part(ww)) & np.isinf(inf_part(gw)) & np.isinf(inf_part(ww))
            if np.any(free):
                g = np.where(free, want, g)
    split = [np.real] + ([np.imag] if kind == "c" else [])
    for part in split:
        pg, pw = np.asarray(part(g)), np.asarray(part(want))
        same = ((pg == pw) & ((np.signbit(pg) == np.signbit(pw)) | (not signed_zeros))) | (np.isnan(pg) & np.isnan(pw))
        if exact_value is None:
            bad = ~same
        else:
            ex = np.asarray(part(exact_value), dtype=np.longdouble)
            pwl, pgl = pw.astype(np.longdouble), pg.astype(np.longdouble)
            spread = np.zeros(ex.shape, dtype=np.longdouble)
            finite_moves = np.ones(ex.shape, dtype=bool)
            for m in moved:
                mp = np.asarray(part(m), dtype=np.longdouble)
                finite_moves &= np.isfinite(mp)
                spread = np.maximum(spread, np.where(np.isfinite(mp), np.abs(mp - ex), 0))
            # A complex result's error is promised relative to its magnitude, not to each part:
            # a part far smaller than the other (cancellation in pow, exp of a near-imaginary
            # argument) carries the larger part's rounding.
            # Beside a NaN or infinite part the magnitude says nothing: the part's own then
            # (cumprod(a) + nan, seed 53, case 203572: the imaginary part was judged with a NaN ulp).
            if kind == "c":
                mag = np.abs(np.asarray(exact_value, dtype=np.clongdouble))
                scale = np.where(np.isfinite(mag), mag, np.abs(ex))
            else:
                scale = ex
            u = ulp(np.asarray(scale, dtype=np.float64), gdt).astype(np.longdouble)
            finite = np.isfinite(ex) & np.isfinite(pwl) & finite_moves
            # jitexpr may be off by what NumPy is off (the operations both round alike), plus
            # how far the allowed errors of the inexact ones carry through the rest, plus 2 ulps
            allowed = np.abs(pwl - ex) + spread + 2 * u
            close = np.isfinite(pgl) & (np.abs(pgl - ex) <= allowed)
            special = (np.isnan(pw) & np.isnan(ex)) | (np.isinf(pwl) & (pwl == ex))
            bad = ~same & ((finite & ~close) | special)
        idx = np.argwhere(bad)
        if idx.size:
            i = tuple(idx[0])
            return f"element {i}: {g[i]!r}, NumPy gives {want[i]!r}" + (
                "" if exact_value is None else f" (exact {exact_value[i]!r})")
    return ""


# --- one case, the shrinker ---------------------------------------------------------------------


def reference(tree, names):
    """(kind, lo, hi): kind 'value' with NumPy's result and the high-precision one, an error
    kind, or 'skip'."""
    try:
        ev = Evaluator(names)
        lo = final(evaluate(tree, ev), ev)
    except RefError as e:
        return e.kind, None, None
    except RefSkip:
        return "skip", None, None
    except (OverflowError, ZeroDivisionError):
        return "value", None, None
    except IndexError:
        return "index", None, None
    except TypeError:
        return "type", None, None
    except ValueError as e:
        return ("shape" if "broadcast" in str(e) or "shape" in str(e) else "value"), None, None
    hi = None
    if inexact_ops(tree):
        try:
            angles = {}
            evh = Evaluator(names, hi=True, angles=angles)
            hi = [final(evaluate(tree, evh), evh)]
            for pattern in PATTERNS:
                evp = Evaluator(names, hi=True, perturb=pattern, angles=angles)
                hi.append(final(evaluate(tree, evp), evp))
        except (RefError, RefSkip, OverflowError, ZeroDivisionError, TypeError, ValueError, IndexError):
            return "skip", None, None
        if any(np.shape(h[1]) != np.shape(lo[1]) for h in hi):
            return "skip", None, None  # a mask the rounding decides: the selections differ in length
    return "ok", lo, hi


ERROR_KINDS = {"parse", "name", "type", "shape", "value", "index"}
PATTERNS = [lambda k: 1, lambda k: -1, lambda k: 1 if k % 2 else -1, lambda k: -1 if k % 2 else 1, lambda k: 2, lambda k: -2]


def judge(driver, tree, names):
    """'' (agree), 'skip', or a description of the disagreement."""
    used = used_names(tree)
    bound = {k: v for k, v in names.items() if k in used}
    kind, lo, hi = reference(tree, bound)
    if kind == "skip":
        return "skip"
    src = text(tree)
    try:
        got = driver.run(src, bound)
    except DriverError as e:
        if kind == "ok":
            return f"jitexpr raises {e.kind} error where NumPy gives {lo[0]}: {e.message.splitlines()[0]}"
        # Both reject it. A value error depends on data, found by NumPy in evaluation order and by
        # jitexpr after its static checks, so either may come first; other kinds must agree.
        if e.kind != kind and "value" not in (e.kind, kind):
            return f"jitexpr raises {e.kind} error, NumPy's rule is a {kind} error: {e.message.splitlines()[0]}"
        return ""
    if kind != "ok":
        return f"jitexpr gives {got[0]} where NumPy raises a {kind} error"
    return compare(got, lo, hi, inexact_ops(tree), signed_zeros=not zero_sign_free(tree))


def shrink(driver, tree, names, why):
    """The smallest subtree replacement that still disagrees in the same way."""
    category = why.split(":")[0].split(" element")[0]

    def still(t):
        try:
            r = judge(driver, t, names)
        except Exception:  # the reference cannot evaluate it: not a smaller witness
            return False
        return r not in ("", "skip") and r.split(":")[0].split(" element")[0] == category

    def replacements(t):
        for c in children(t):
            yield c
        for leaf in (("lit", 1), ("lit", 2.5), ("lit", True)):
            yield leaf
        k = t[0]
        if k == "un":
            for c in replacements(t[2]):
                yield ("un", t[1], c)
        elif k == "bin":
            for c in replacements(t[2]):
                yield ("bin", t[1], c, t[3])
            for c in replacements(t[3]):
                yield ("bin", t[1], t[2], c)
        elif k == "call":
            for i, a in enumerate(t[2]):
                for c in replacements(a):
                    yield ("call", t[1], t[2][:i] + [c] + t[2][i + 1:])
        elif k in ("where", "tern"):
            for i in range(1, 4):
                for c in replacements(t[i]):
                    yield t[:i] + (c,) + t[i + 1:]
        elif k in ("cast", "reduce", "scan", "ostat"):
            for c in replacements(t[2]):
                yield t[:2] + (c,) + t[3:]
        elif k == "index":
            for c in replacements(t[1]):
                yield ("index", c, t[2])
        elif k == "mask":
            for c in replacements(t[1]):
                yield ("mask", c, t[2])
            for c in replacements(t[2]):
                yield ("mask", t[1], c)

    def size(t):
        return 1 + sum(size(c) for c in children(t))

    best = tree
    changed = True
    while changed:
        changed = False
        for cand in replacements(best):
            if size(cand) < size(best) and still(cand):
                best, changed = cand, True
                break
    return best


def describe_inputs(tree, names):
    out = []
    for k in sorted(used_names(tree)):
        v = names[k]
        if isinstance(v, BF16):
            out.append(f"{k}: bfloat16 {v.bits.shape} strides {v.bits.strides} = {bf16_from_bits(np.ascontiguousarray(v.bits)).tolist()!r}")
        elif isinstance(v, np.ndarray):
            out.append(f"{k}: {v.dtype.str[1:] if v.dtype.kind in 'SU' else v.dtype} {v.shape} strides {v.strides} = {v.tolist()!r}")
        else:
            out.append(f"{k}: host {type(v).__name__} = {v!r}")
    return out


def case_rng(seed, i):
    return np.random.default_rng([seed, i])


def run_case(driver, seed, i, with_dates=True):
    rng = case_rng(seed, i)
    if with_dates and i % 5 == 4:  # one case in five: dates and durations (dates.py)
        g = dates.DateGenerator(rng)
        names = g.inputs()
        tree = ("dates", g.program(names))
        return tree, names, dates.judge(driver, tree[1], names)
    g = Generator(rng, driver, np.random.default_rng([seed, i, 32]))
    names = g.inputs()
    tree = g.program(names, int(rng.integers(1, 5)))
    return tree, names, judge(driver, tree, names)


def case_text(tree):
    return dates.text(tree[1]) if tree[0] == "dates" else text(tree)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--driver", choices=["python", "cli"], default="python")
    ap.add_argument("--binary", help="the jitexpr CLI (cli driver)")
    ap.add_argument("--backend", choices=["cpu", "cuda"], default="cpu",
                    help="where jitexpr runs the cases (cuda needs a device)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=0, help="stop after this many cases")
    ap.add_argument("--minutes", type=float, default=0, help="stop after this much time")
    ap.add_argument("--case", type=int, help="run only this case (with its seed)")
    ap.add_argument("--max-findings", type=int, default=20)
    ap.add_argument("--no-dates", action="store_true", help="no date cases (one case in five otherwise)")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    driver = PythonDriver(a.backend) if a.driver == "python" else CliDriver(a.binary, a.backend)
    start = time.time()
    stats = {"agree": 0, "errors agreed": 0, "skip": 0}
    findings = {}
    i = a.case if a.case is not None else 0
    try:
        while True:
            if a.case is None:
                if a.cases and i >= a.cases:
                    break
                if a.minutes and time.time() - start > 60 * a.minutes:
                    break
                if not a.cases and not a.minutes:
                    break
            tree, names, why = run_case(driver, a.seed, i, not a.no_dates)
            if a.verbose:
                print(f"case {i}: {case_text(tree)} -> {why or 'agree'}")
            if why == "skip":
                stats["skip"] += 1
            elif why:
                if tree[0] == "dates":
                    small = dates.shrink(driver, tree[1], names, why)
                    key, again, inputs = dates.text(small), dates.judge(driver, small, names), dates.describe_inputs(
                        small, names)
                else:
                    small = shrink(driver, tree, names, why)
                    key, again, inputs = text(small), judge(driver, small, names), describe_inputs(small, names)
                if key not in findings:
                    findings[key] = why
                    print(f"FINDING (seed {a.seed}, case {i}): {key}\n  {again}")
                    for line in inputs:
                        print("    " + line)
                    print(f"  original: {case_text(tree)}", flush=True)
                if len(findings) >= a.max_findings:
                    break
            else:
                stats["agree"] += 1
            if a.case is not None:
                break
            i += 1
    finally:
        driver.close()
    elapsed = time.time() - start
    total = i - (a.case or 0) + (1 if a.case is not None else 0)
    print(f"{total} cases in {elapsed:.1f} s (seed {a.seed}, {a.driver}, {a.backend}): {stats['agree']} agree, "
          f"{stats['skip']} not judged (undefined in NumPy), {len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
