"""Differential cases for the order statistics (imported by gen_cases.py): median, percentile,
quantile, nanmedian, nanpercentile, nanquantile, and complex fmax/fmin.

Every function x every dtype NumPy gives it (and the ones it rejects, with its error kind) x
axis forms x q (0, 100, interior values, tuples) x special values (NaN, +-inf, all-NaN rows,
empty arrays, 0-d values, long rows), contiguous here and strided on the C++ side
(test_differential.cpp also runs each case on a strided view of its inputs). The selected
elements are exact and the interpolation is NumPy's own arithmetic, so every case is bitwise
(0 ULP; NaN equals NaN).
"""
import warnings

import numpy as np

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]
ALL = ["bool"] + INTS + FLOATS + COMPLEX


def add(save, lines, values, rng):
    def case(expr, inputs, fn, ulps=0):
        files = " ".join(f"{k}={save(v)}" for k, v in inputs.items())
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = fn(**inputs)
            expected = save(np.asarray(r))
        except np.exceptions.AxisError:
            expected = "ERROR:ShapeError"
        except IndexError:
            expected = "ERROR:IndexError"
        except TypeError:
            expected = "ERROR:TypeError"
        except ValueError:
            expected = "ERROR:ValueError"
        lines.append(f"{expr}\t{ulps}\t{expected}\t{files}")

    def cube(dt, nan_row=False):
        """A (3, 4, 5) array of dt with the special values; nan_row: the (:, 1, 2) row all NaN."""
        a = values(dt, 60, small=True).reshape(3, 4, 5)
        if nan_row and np.dtype(dt).kind in "fc":
            a[:, 1, 2] = np.nan
            a[1, 3, :] = np.nan
        return a

    FORMS = [
        ("", {}),
        (", axis=0", {"axis": 0}),
        (", axis=-1", {"axis": -1}),
        (", axis=(0, 2)", {"axis": (0, 2)}),
        (", axis=(2, 0, 1)", {"axis": (2, 0, 1)}),
        (", axis=None, keepdims=True", {"axis": None, "keepdims": True}),
        (", axis=(0, 2), keepdims=True", {"axis": (0, 2), "keepdims": True}),
        (", axis=1, keepdims=True", {"axis": 1, "keepdims": True}),
    ]

    def q_text(q):
        return "(" + ", ".join(repr(x) for x in q) + (",)" if len(q) == 1 else ")") if isinstance(q, tuple) else repr(q)

    # median and nanmedian: every dtype (complex sorts lexicographically; bool and integers give float64).
    for name, fn in [("median", np.median), ("nanmedian", np.nanmedian)]:
        for dt in ALL:
            a = cube(dt, nan_row=name.startswith("nan"))
            if name == "nanmedian" and dt in COMPLEX:
                # NumPy's nanmedian along an axis of < 600 elements goes through numpy.ma, whose
                # mean of a complex infinity and a finite value is nan+nanj (its median and 1-d
                # nanmedian give inf+xj, as jitexpr does): a documented difference, so no
                # infinities here.
                a.real[np.isinf(a.real)] = 3.0
                a.imag[np.isinf(a.imag)] = -3.0
            for text, kw in FORMS:
                case(f"{name}(a{text})", {"a": a}, lambda a, fn=fn, kw=kw: fn(a, **kw))
        # positional axis
        case(f"{name}(a, 1)", {"a": cube("float32", True)}, lambda a, fn=fn: fn(a, 1))

    # percentile and quantile (and nan*): q as a number and as a tuple (a leading axis; float64).
    QS = {"percentile": [0, 100, 50, 37.5, 99.9, (0, 25, 50, 100), (12.5,)],
          "quantile": [0, 1, 0.5, 0.375, 0.999, (0.0, 0.25, 0.5, 1.0), (0.125,)]}
    for base in ["percentile", "quantile"]:
        for name in [base, "nan" + base]:
            fn = getattr(np, name)
            for dt in ALL:
                a = cube(dt, nan_row=name.startswith("nan"))
                qs = QS[base] if dt in ("float16", "float32", "float64", "int8", "uint64") else QS[base][2:6]
                for q in qs:
                    forms = FORMS if dt in ("float32", "float64") else FORMS[:4]
                    for text, kw in forms:
                        case(f"{name}(a, {q_text(q)}{text})", {"a": a}, lambda a, fn=fn, q=q, kw=kw: fn(a, q, **kw))
            # q by keyword, axis positionally
            case(f"{name}(a, q=30, axis=1)", {"a": cube("float64", True)}, lambda a, fn=fn: fn(a, q=30, axis=1))
            case(f"{name}(a, 30, 1)", {"a": cube("float64", True)}, lambda a, fn=fn: fn(a, 30, 1))

    # q outside its range: NumPy's ValueError.
    a2 = values("float64", 12).reshape(3, 4)
    for expr, fn in [("percentile(a, 101)", lambda a: np.percentile(a, 101)),
                     ("percentile(a, -1)", lambda a: np.percentile(a, -1)),
                     ("quantile(a, 1.5)", lambda a: np.quantile(a, 1.5)),
                     ("nanquantile(a, (0.5, -0.25))", lambda a: np.nanquantile(a, (0.5, -0.25))),
                     ("median(a, axis=2)", lambda a: np.median(a, axis=2)),
                     ("quantile(a, 0.5, axis=(0, 0))", lambda a: np.quantile(a, 0.5, axis=(0, 0)))]:
        case(expr, {"a": a2}, fn)

    # Special values: rows of inf (inf - inf is NaN in the interpolation), -inf, all NaN, one NaN.
    f = values("float64", 40).reshape(8, 5)
    f[:, 3] = np.nan
    f[2, :] = np.inf
    f[5, :] = -np.inf
    f[6, :2] = np.inf
    for name, fn in [("median", np.median), ("nanmedian", np.nanmedian)]:
        for text, kw in [("", {}), (", axis=0", {"axis": 0}), (", axis=1", {"axis": 1})]:
            case(f"{name}(a{text})", {"a": f}, lambda a, fn=fn, kw=kw: fn(a, **kw))
    for name, fn in [("percentile", np.percentile), ("nanpercentile", np.nanpercentile)]:
        for q in [0, 30, 50, 100, (0, 50, 100)]:
            for text, kw in [("", {}), (", axis=0", {"axis": 0}), (", axis=1", {"axis": 1})]:
                case(f"{name}(a, {q_text(q)}{text})", {"a": f}, lambda a, fn=fn, q=q, kw=kw: fn(a, q, **kw))
    for dt in ["float32", "float64"]:
        allnan = np.full(6, np.nan, dtype=dt)
        for name, fn in [("nanmedian", np.nanmedian), ("median", np.median)]:
            case(f"{name}(a)", {"a": allnan}, lambda a, fn=fn: fn(a))
        case("nanquantile(a, 0.3)", {"a": allnan}, lambda a: np.nanquantile(a, 0.3))
    # Integer rows where b - a wraps in the element type (NumPy's _lerp subtracts in it).
    wrap = np.array([[-128, 127, 0], [127, -128, 5]], dtype=np.int8)
    for q in [0.3, 0.5, 0.7, (0.3, 0.9)]:
        case(f"quantile(a, {q_text(q)}, axis=1)", {"a": wrap}, lambda a, q=q: np.quantile(a, q, axis=1))
    big = np.array([0, 2**64 - 1, 2**63, 12345], dtype=np.uint64)
    case("percentile(a, 40)", {"a": big}, lambda a: np.percentile(a, 40))
    case("median(a)", {"a": big}, lambda a: np.median(a))
    # float16 and float32 near their largest value (the median's mean overflows; the lerp does not).
    for dt in ["float16", "float32"]:
        top = np.array([np.finfo(dt).max, np.finfo(dt).max, 1], dtype=dt)
        case("median(a[:2])", {"a": top}, lambda a: np.median(a[:2]))
        case("quantile(a, 0.75)", {"a": top}, lambda a: np.quantile(a, 0.75))
    # -0.0 and 0.0, repeated values.
    z = np.array([0.0, -0.0, 1.0, -0.0, 0.0, 2.0], dtype=np.float64)
    case("median(a)", {"a": z}, lambda a: np.median(a))
    case("quantile(a, (0, 0.2, 0.4))", {"a": z}, lambda a: np.quantile(a, (0, 0.2, 0.4)))
    # Empty arrays: a mean of nothing (NaN) for the median and the nan* forms, NumPy's IndexError
    # for percentile and quantile.
    for shape, forms in [((0,), [("", {})]), ((0, 3), [("", {}), (", axis=0", {"axis": 0}), (", axis=1", {"axis": 1})]),
                         ((2, 0), [(", axis=0", {"axis": 0}), (", axis=1", {"axis": 1})])]:
        e = np.zeros(shape, dtype=np.float32)
        for name in ["median", "nanmedian", "percentile", "nanpercentile", "quantile", "nanquantile"]:
            fn = getattr(np, name)
            arg = "" if "median" in name else (", 50" if "percentile" in name else ", 0.5")
            qv = () if "median" in name else ((50,) if "percentile" in name else (0.5,))
            for text, kw in forms:
                case(f"{name}(a{arg}{text})", {"a": e}, lambda a, fn=fn, qv=qv, kw=kw: fn(a, *qv, **kw))
    # 0-d values.
    for dt, v in [("float64", np.inf), ("float32", 2.5), ("int16", -7)]:
        s0 = np.array(v, dtype=dt)
        case("median(a)", {"a": s0}, lambda a: np.median(a))
        case("quantile(a, 0.5)", {"a": s0}, lambda a: np.quantile(a, 0.5))
        case("percentile(a, (10, 90), keepdims=True)", {"a": s0},
             lambda a: np.percentile(a, (10, 90), keepdims=True))
    # Long rows: past the CPU backend's blocks and a CUDA block's threads, many equal keys.
    long = (rng.standard_normal(5000) * 3 + 1e4).astype(np.float64)
    long[3777] = -50.0
    long[1000:1400] = 7.0
    for name, fn, arg, qv in [("median", np.median, "", ()), ("percentile", np.percentile, ", (1, 7.5, 50, 99)",
                                                               ((1, 7.5, 50, 99),)),
                              ("nanquantile", np.nanquantile, ", 0.25", (0.25,))]:
        for dt in ["float64", "float32", "int32"]:
            x = long.astype(dt)
            case(f"{name}(a{arg})", {"a": x}, lambda a, fn=fn, qv=qv: fn(a, *qv))
            case(f"{name}(a{arg}, axis=1)", {"a": x.reshape(2, 2500)}, lambda a, fn=fn, qv=qv: fn(a, *qv, axis=1))
            case(f"{name}(a{arg}, axis=0)", {"a": x.reshape(2500, 2)}, lambda a, fn=fn, qv=qv: fn(a, *qv, axis=0))
    # Fused with the element-wise work around them.
    p = np.nan_to_num(values("float32", 60, small=True).reshape(3, 4, 5), posinf=1, neginf=-1)
    r = np.nan_to_num(values("float32", 60, small=True).reshape(3, 4, 5), posinf=1, neginf=-1)
    case("median(p * 2 + r, axis=1) + 1", {"p": p, "r": r}, lambda p, r: np.median(p * 2 + r, axis=1) + 1)
    case("p - median(p, axis=-1, keepdims=True)", {"p": p}, lambda p: p - np.median(p, axis=-1, keepdims=True))
    case("percentile(abs(p - r), (10, 90), axis=(0, 2)) * 2", {"p": p, "r": r},
         lambda p, r: np.percentile(np.abs(p - r), (10, 90), axis=(0, 2)) * 2)
    case("nanquantile(where(p > 0, p, nan), 0.5, axis=0) - quantile(r, 0.5, axis=0)", {"p": p, "r": r},
         lambda p, r: np.nanquantile(np.where(p > 0, p, np.nan), 0.5, axis=0) - np.quantile(r, 0.5, axis=0))
    # mean(p) folds 60 floats: NumPy's pairwise order and a GPU's grouped one may differ by an ulp.
    case("median(p) + mean(p) + sum(r, axis=0)", {"p": p, "r": r},
         lambda p, r: np.median(p) + np.mean(p) + np.sum(r, axis=0), ulps=4)

    # Complex fmax/fmin: the lexicographic order, NaN (in either part) ignored where the other is not.
    for dt in COMPLEX:
        x, y = values(dt, 60), values(dt, 60)
        x[:6] = np.array([1 + 2j, complex(np.nan, 1), 2, complex(np.nan, np.nan), 1 + 1j, -0.0], dtype=dt)
        y[:6] = np.array([1 + 3j, 5, complex(1, np.nan), complex(2, np.nan), 1 + 1j, 0.0], dtype=dt)
        for name, fn in [("fmax", np.fmax), ("fmin", np.fmin)]:
            case(f"{name}(x, y)", {"x": x, "y": y}, lambda x, y, fn=fn: fn(x, y))
        case("fmax(x, 1.5)", {"x": x}, lambda x: np.fmax(x, 1.5))
