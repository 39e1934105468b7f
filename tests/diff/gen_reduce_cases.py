"""Differential cases for the reductions and statistics (imported by gen_cases.py).

Every reduction x the dtypes it accepts x axis forms (none, an int, a negative int, a tuple,
positional, None, keepdims) x special values (NaN, +-inf, all-NaN slices, empty arrays),
contiguous here and strided on the C++ side (test_differential.cpp makes a strided view of each
input). Expected results and rejections come from NumPy 2.
"""
import warnings

import numpy as np

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]


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
        except ValueError:
            expected = "ERROR:ValueError"
        lines.append(f"{expr}\t{ulps}\t{expected}\t{files}")

    def ulps_of(dt, base=64, float_result=False):
        # Integer sums are exact in any order; a float result computed from integers (var, std) is not.
        k = np.dtype(dt).kind
        if k in "biu" and not float_result:
            return 0
        return base

    def cube(dt, nan_column=False, small=True):
        """A (3, 4, 5) array of dt with the special values; nan_column: one (0, :, 2) slice all NaN."""
        a = values(dt, 60, small=small).reshape(3, 4, 5)
        if nan_column and np.dtype(dt).kind in "fc":
            a[:, 1, 2] = np.nan
        return a

    # Axis forms: (text after the operand, NumPy keyword arguments)
    FORMS = [
        ("", {}),
        (", axis=0", {"axis": 0}),
        (", axis=-1", {"axis": -1}),
        (", 1", {"axis": 1}),
        (", axis=(0, 2)", {"axis": (0, 2)}),
        (", axis=(2, 0, 1)", {"axis": (2, 0, 1)}),
        (", axis=None, keepdims=True", {"axis": None, "keepdims": True}),
        (", axis=(0, 2), keepdims=True", {"axis": (0, 2), "keepdims": True}),
        (", axis=1, keepdims=True", {"axis": 1, "keepdims": True}),
        (", axis=(1,)", {"axis": (1,)}),
    ]
    ONE_AXIS = [f for f in FORMS if not isinstance(f[1].get("axis"), tuple)]

    def run(name, npfn, dtypes, forms=FORMS, ulps=64, nan_column=False, small=True, extra="", float_result=False):
        for dt in dtypes:
            a = cube(dt, nan_column, small)
            for text, kw in forms:
                # min(x, y), max(x, y) are element-wise (the language's rule): amin/amax take the axis.
                fname = "a" + name if name in ("min", "max") and text == ", 1" else name
                case(f"{fname}(a{text}{extra})", ulps_of(dt, ulps, float_result), {"a": a}, lambda a, kw=kw: npfn(a, **kw))

    REAL = ["bool"] + INTS + FLOATS
    ALL = REAL + COMPLEX
    # The reductions the language had, with the new argument forms.
    run("sum", np.sum, ["bool", "int8", "int32", "uint16", "uint64", "float16", "float32", "float64", "complex64"])
    run("prod", np.prod, ["int8", "uint32", "int64", "float32", "float64", "complex128"], ulps=64)
    run("min", np.min, ["bool", "int8", "uint64", "float16", "float32", "float64"], ulps=0)
    run("amax", np.max, ["bool", "int16", "uint8", "float32", "float64"], ulps=0)
    run("mean", np.mean, ["bool", "int8", "int64", "uint32", "float16", "float32", "float64", "complex64"])
    run("any", np.any, ["bool", "int32", "float64", "complex64"])
    run("all", np.all, ["bool", "uint8", "float32", "complex128"])
    # Statistics.
    for ddof, extra in [(0, ""), (1, ", ddof=1"), (2.5, ", ddof=2.5")]:
        dts = ["bool", "int8", "int64", "uint16", "float16", "float32", "float64", "complex64", "complex128"] if ddof == 0 \
            else ["int32", "float32", "float64", "complex128"]
        forms = FORMS if ddof == 0 else FORMS[:5]
        run("var", lambda a, ddof=ddof, **k: np.var(a, ddof=ddof, **k), dts, forms, extra=extra, ulps=256, float_result=True)
        run("std", lambda a, ddof=ddof, **k: np.std(a, ddof=ddof, **k), dts, forms, extra=extra, ulps=256, float_result=True)
        run("nanvar", lambda a, ddof=ddof, **k: np.nanvar(a, ddof=ddof, **k), ["float16", "float32", "float64", "int16"],
            forms, extra=extra, ulps=256, float_result=True, nan_column=True)
        run("nanstd", lambda a, ddof=ddof, **k: np.nanstd(a, ddof=ddof, **k), ["float32", "float64"], forms, extra=extra,
            ulps=256, float_result=True, nan_column=True)
    run("argmin", np.argmin, ["bool", "int8", "int64", "uint32", "float16", "float32", "float64"], ONE_AXIS)
    run("argmax", np.argmax, ["bool", "int16", "uint64", "float32", "float64"], ONE_AXIS)
    run("nansum", np.nansum, ["bool", "int8", "uint32", "float16", "float32", "float64", "complex64"], nan_column=True)
    run("nanprod", np.nanprod, ["int16", "float32", "float64"], nan_column=True)
    run("nanmean", np.nanmean, ["int8", "float16", "float32", "float64"], nan_column=True)
    run("nanmin", np.nanmin, ["int8", "uint16", "float16", "float32", "float64"], nan_column=True, ulps=0)
    run("nanmax", np.nanmax, ["int64", "float32", "float64"], nan_column=True, ulps=0)
    run("count_nonzero", lambda a, keepdims=False, **k: np.count_nonzero(a, keepdims=keepdims, **k),
        ALL, FORMS, nan_column=True)
    run("ptp", np.ptp, ["int8", "uint8", "int64", "float32", "float64"], ulps=0)
    run("average", np.average, ["int8", "float32", "float64"], [f for f in FORMS if "keepdims" not in f[0]])

    # Weighted average: weights of the array's shape, and ones that broadcast along the last axis.
    for dt, wt in [("float32", "float32"), ("float64", "int8"), ("int32", "float32")]:
        a, w = cube(dt), np.abs(values(wt, 60, small=True)).reshape(3, 4, 5)
        w = np.where(np.isfinite(w), w, 1).astype(wt)
        w[w == 0] = 1
        for text, kw in [("", {}), (", axis=1", {"axis": 1}), (", axis=(0, 2)", {"axis": (0, 2)})]:
            case(f"average(a{text}, weights=w)", 64, {"a": a, "w": w}, lambda a, w, kw=kw: np.average(a, weights=w, **kw))

    # Special values and shapes.
    f = values("float64", 40).reshape(8, 5)
    f[:, 3] = np.nan                       # an all-NaN column
    f[2, :] = np.inf                       # a row of inf
    for name, fn in [("nanmin", np.nanmin), ("nanmax", np.nanmax), ("nanmean", np.nanmean), ("nanvar", np.nanvar),
                     ("nanstd", np.nanstd), ("nansum", np.nansum), ("nanprod", np.nanprod), ("argmin", np.argmin),
                     ("argmax", np.argmax), ("min", np.min), ("max", np.max), ("var", np.var), ("ptp", np.ptp),
                     ("count_nonzero", np.count_nonzero)]:
        for text, kw in [("", {}), (", axis=0", {"axis": 0}), (", axis=1", {"axis": 1})]:
            case(f"{name}(a{text})", 256, {"a": f}, lambda a, fn=fn, kw=kw: fn(a, **kw))
    allnan = np.full(6, np.nan, dtype=np.float32)
    for name, fn in [("nanmin", np.nanmin), ("nanmax", np.nanmax), ("nanmean", np.nanmean), ("nanvar", np.nanvar),
                     ("nansum", np.nansum), ("nanprod", np.nanprod), ("argmin", np.argmin), ("argmax", np.argmax)]:
        case(f"{name}(a)", 0, {"a": allnan}, lambda a, fn=fn: fn(a))
    # First occurrence of repeated extremes, and -0.0 against 0.0.
    rep = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 9], dtype=np.int32)
    for name, fn in [("argmin", np.argmin), ("argmax", np.argmax)]:
        case(f"{name}(a)", 0, {"a": rep}, lambda a, fn=fn: fn(a))
        case(f"{name}(a, axis=1)", 0, {"a": rep.reshape(3, 4)}, lambda a, fn=fn: fn(a, axis=1))
        case(f"{name}(a, axis=0)", 0, {"a": rep.reshape(3, 4)}, lambda a, fn=fn: fn(a, axis=0))
        z = np.array([0.0, -0.0, 1.0, -0.0, 0.0], dtype=np.float64)
        case(f"{name}(a)", 0, {"a": z}, lambda a, fn=fn: fn(a))
    # Long rows (past the CPU backend's 512-element blocks and a CUDA block): positions across
    # blocks, pairwise sums, two-pass variance of large-offset data.
    long = (rng.standard_normal(5000) * 3 + 1e4).astype(np.float64)
    long[3777] = -50.0
    long[4999] = 1e5
    for name, fn in [("argmin", np.argmin), ("argmax", np.argmax), ("var", np.var), ("std", np.std),
                     ("mean", np.mean), ("sum", np.sum), ("ptp", np.ptp)]:
        case(f"{name}(a)", 256, {"a": long}, lambda a, fn=fn: fn(a))
        case(f"{name}(a, axis=1)", 256, {"a": long.reshape(2, 2500)}, lambda a, fn=fn: fn(a, axis=1))
        case(f"{name}(a, axis=0)", 256, {"a": long.reshape(2500, 2)}, lambda a, fn=fn: fn(a, axis=0))
    long32 = long.astype(np.float32)
    case("var(a)", 256, {"a": long32}, lambda a: np.var(a))
    case("argmax(a)", 0, {"a": long32}, lambda a: np.argmax(a))
    # Empty arrays: NumPy's values where it has one, its errors where not.
    for shape, forms in [((0,), [("", {})]), ((0, 3), [("", {}), (", axis=0", {"axis": 0}), (", axis=1", {"axis": 1})]),
                         ((2, 0), [(", axis=0", {"axis": 0}), (", axis=(0, 1)", {"axis": (0, 1)})])]:
        e = np.zeros(shape, dtype=np.float64)
        for name, fn in [("sum", np.sum), ("prod", np.prod), ("mean", np.mean), ("var", np.var), ("std", np.std),
                         ("min", np.min), ("argmax", np.argmax), ("nansum", np.nansum), ("nanmean", np.nanmean),
                         ("nanmin", np.nanmin), ("nanvar", np.nanvar), ("count_nonzero", np.count_nonzero),
                         ("ptp", np.ptp), ("any", np.any), ("all", np.all)]:
            for text, kw in forms:
                if name in ("argmax",) and isinstance(kw.get("axis"), tuple):
                    continue
                case(f"{name}(a{text})", 0, {"a": e}, lambda a, fn=fn, kw=kw: fn(a, **kw))
    # Fused with element-wise work around them (both backends fuse the operand's expression).
    p, q = values("float32", 60, small=True).reshape(3, 4, 5), values("float32", 60, small=True).reshape(3, 4, 5)
    p, q = np.nan_to_num(p, posinf=1, neginf=-1), np.nan_to_num(q, posinf=1, neginf=-1)
    case("std(p * q + 1, axis=(0, 2)) / 2", 256, {"p": p, "q": q}, lambda p, q: np.std(p * q + 1, axis=(0, 2)) / 2)
    case("p - mean(p, axis=-1, keepdims=True)", 64, {"p": p}, lambda p: p - np.mean(p, axis=-1, keepdims=True))
    case("(p - mean(p, 0)) / std(p, 0)", 256, {"p": p}, lambda p: (p - np.mean(p, 0)) / np.std(p, 0))
    case("argmax(sin(p) * q, axis=2)", 0, {"p": p, "q": q}, lambda p, q: np.argmax(np.sin(p) * q, axis=2))
    case("sum(p > 0, axis=(1, 2), keepdims=True) + count_nonzero(q, axis=(1, 2), keepdims=True)", 0, {"p": p, "q": q},
         lambda p, q: np.sum(p > 0, axis=(1, 2), keepdims=True) + np.count_nonzero(q, axis=(1, 2), keepdims=True))
    case("nanmax(where(p > 0, p, nan), axis=0) - nanmin(q, 0)", 0, {"p": p, "q": q},
         lambda p, q: np.nanmax(np.where(p > 0, p, np.nan), axis=0) - np.nanmin(q, 0))
    # Rejections with NumPy's error kinds.
    a2 = values("float32", 12).reshape(3, 4)
    case("sum(a, axis=2)", 0, {"a": a2}, lambda a: np.sum(a, axis=2))
    case("sum(a, axis=(0, 0))", 0, {"a": a2}, lambda a: np.sum(a, axis=(0, 0)))
    case("var(a, axis=(1, -1))", 0, {"a": a2}, lambda a: np.var(a, axis=(1, -1)))
    case("argmin(a, axis=(0, 1))", 0, {"a": a2}, lambda a: np.argmin(a, axis=(0, 1)))
    case("ptp(a)", 0, {"a": a2 > 0}, lambda a: np.ptp(a))
