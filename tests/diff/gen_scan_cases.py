"""Differential cases for the scans cumsum, cumprod, nancumsum, nancumprod (imported by gen_cases.py).

Every scan x every dtype x axis forms (none, an int, a negative int, positional, None, out of
range) x special values (NaN, +-inf late in some rows, so that the other rows stay finite),
0-d and empty operands, rows past one block and one CUDA tile, the fused producer and consumer,
and NumPy's rejections; contiguous here and strided on the C++ side (test_differential.cpp
makes a strided view of each input). Expected results come from NumPy 2; integer scans are
exact (ulps 0), float ones within the tolerance of another association (CUDA scans a row
block-wide; the CPU backend in NumPy's order).
"""
import warnings

import numpy as np

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
          "float64", "complex64", "complex128"]
SCANS = {"cumsum": np.cumsum, "cumprod": np.cumprod, "nancumsum": np.nancumsum, "nancumprod": np.nancumprod}


def add(save, lines, values, rng):
    def case(expr, ulps, inputs, fn):
        files = " ".join(f"{k}={save(v)}" for k, v in inputs.items())
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = fn(**inputs)
            expected = save(np.asarray(r))
        except np.exceptions.AxisError:
            expected = "ERROR:ShapeError"
        except TypeError:
            expected = "ERROR:TypeError"
        lines.append(f"{expr}\t{ulps}\t{expected}\t{files}")

    def ulps_of(dt):
        return 0 if np.dtype(dt).kind in "biu" else 256

    def cube(dt, product):
        """(3, 4, 5) of dt: finite values (near 1 for products, so that they neither overflow nor
        vanish), then NaN, inf and -inf in a few rows, late in them."""
        a = values(dt, 60, small=True).reshape(3, 4, 5)
        kind = np.dtype(dt).kind
        if kind in "fc":
            a = np.where(np.isfinite(a), a, 1.5).astype(dt)
            if product:
                a = (1 + a / 8).astype(dt)
            a[0, 1, 3] = np.nan
            a[1, 2, 4] = np.inf
            a[2, 3, 2] = -np.inf
            a[1, 0, 4] = np.nan
        return a

    FORMS = [("", {}), (", axis=0", {"axis": 0}), (", axis=1", {"axis": 1}), (", -1", {"axis": -1}),
             (", axis=None", {"axis": None}), (", axis=-3", {"axis": -3}), (", axis=3", {"axis": 3})]
    for name, fn in SCANS.items():
        for dt in DTYPES:
            a = cube(dt, "prod" in name)
            for text, kw in FORMS:
                case(f"{name}(a{text})", ulps_of(dt), {"a": a}, lambda a, fn=fn, kw=kw: fn(a, **kw))
    # 0-d and empty operands.
    for name, fn in SCANS.items():
        for dt in ["int8", "float32", "complex128"]:
            z = np.array(3, dtype=dt)
            for text, kw in [("", {}), (", axis=0", {"axis": 0}), (", -1", {"axis": -1}), (", axis=1", {"axis": 1})]:
                case(f"{name}(a{text})", 0, {"a": z}, lambda a, fn=fn, kw=kw: fn(a, **kw))
    for shape, forms in [((0,), [("", {})]), ((0, 3), [("", {}), (", axis=0", {"axis": 0}), (", axis=1", {"axis": 1})])]:
        e = np.zeros(shape)
        for text, kw in forms:
            case(f"cumsum(a{text})", 0, {"a": e}, lambda a, kw=kw: np.cumsum(a, **kw))
    # Long rows: past the CPU backend's 512-element blocks, several CUDA tiles, several chunks of
    # the scan over every element.
    long = rng.standard_normal(6000)
    ints = rng.integers(-1000, 1000, 6000)
    for dt in ["float64", "float32"]:
        x = long.astype(dt)
        case("cumsum(a)", 256, {"a": x}, lambda a: np.cumsum(a))
        case("cumsum(a, axis=1)", 256, {"a": x.reshape(2, 3000)}, lambda a: np.cumsum(a, axis=1))
        case("cumsum(a, axis=0)", 256, {"a": x.reshape(3000, 2)}, lambda a: np.cumsum(a, axis=0))
        case("cumsum(a)", 256, {"a": x.reshape(60, 100)}, lambda a: np.cumsum(a))
    case("cumsum(a)", 0, {"a": ints}, lambda a: np.cumsum(a))
    case("cumsum(a, axis=1)", 0, {"a": ints.reshape(3, 2000)}, lambda a: np.cumsum(a, axis=1))
    case("cumprod(a % 3 - 1, axis=0)", 0, {"a": ints.reshape(2000, 3)}, lambda a: np.cumprod(a % 3 - 1, axis=0))
    # Float16 accumulates in float16, as NumPy: 2048 + 1 stays 2048 (in NumPy's order; CUDA's block-wide order
    # rounds elsewhere, so these are the CPU's cases of equal bits and CUDA's of a few float16 steps).
    h = np.array([2048, 1, 1, 1, 0.5, 3], dtype=np.float16)
    case("cumsum(a)", 8, {"a": h}, lambda a: np.cumsum(a))
    # Fused with element-wise work before and after the scan.
    p, q = values("float32", 60, small=True).reshape(3, 4, 5), values("float32", 60, small=True).reshape(3, 4, 5)
    p, q = np.nan_to_num(p, posinf=1, neginf=-1), np.nan_to_num(q, posinf=1, neginf=-1)
    case("cumsum(p * q + 1, axis=1) / 2", 256, {"p": p, "q": q}, lambda p, q: np.cumsum(p * q + 1, axis=1) / 2)
    case("p - cumsum(p, axis=-1)", 256, {"p": p}, lambda p: p - np.cumsum(p, axis=-1))
    case("cumsum(cumprod(1 + p / 8, axis=0), axis=2)", 256, {"p": p},
         lambda p: np.cumsum(np.cumprod(1 + p / 8, axis=0), axis=2))
    case("nancumsum(where(p > 0, p, nan)) - sum(p)", 256, {"p": p},
         lambda p: np.nancumsum(np.where(p > 0, p, np.nan)) - np.sum(p))
    case("cumsum(p > q, axis=2)", 0, {"p": p, "q": q}, lambda p, q: np.cumsum(p > q, axis=2))
    # Rejections with NumPy's error kinds.
    a2 = values("float32", 12).reshape(3, 4)
    case("cumsum(a, axis=2)", 0, {"a": a2}, lambda a: np.cumsum(a, axis=2))
    case("cumprod(a, axis=-3)", 0, {"a": a2}, lambda a: np.cumprod(a, axis=-3))
    case("cumsum(a, axis=(0, 1))", 0, {"a": a2}, lambda a: np.cumsum(a, axis=(0, 1)))
