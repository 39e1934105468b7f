"""Differential cases of dates and durations (datetime64, timedelta64) against NumPy 2, added to
gen_cases.py's manifest: every unit, NaT in every operand, the arithmetic and comparisons NumPy
defines, unit promotion over every pair of units (and NumPy's errors where it raises), date
literals, min/max/sum/mean, where, isnat, and unit conversions with datetime64(x, unit).

NumPy's errors are both TypeErrors in jitexpr: a unit pair NumPy refuses with OverflowError
("Integer overflow getting a common metadata divisor") is a type error of the program's text.
"""
import warnings

import numpy as np

UNITS = ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"]
NAT = np.iinfo(np.int64).min
N = 24

# Each unit's count of the unit in an attosecond-free range: dates from about 1700 to 2250 fit
# every unit down to ns; ps, fs and as hold only days, hours and seconds around 1970.
_LIMIT = {"ps": 9 * 10**18, "fs": 9 * 10**18, "as": 9 * 10**18}


def _span(unit):
    """The largest count of `unit` used: 270 years, or what int64 holds of the finest units."""
    if unit in _LIMIT:
        return _LIMIT[unit] // 2
    years = 270
    per_year = {"Y": 1, "M": 12, "W": 52, "D": 365}
    if unit in per_year:
        return years * per_year[unit]
    sec = years * 365 * 86400
    return {"h": sec // 3600, "m": sec // 60, "s": sec, "ms": sec * 10**3, "us": sec * 10**6,
            "ns": sec * 10**9}[unit]


def counts(rng, unit, n=N, nat=True):
    span = _span(unit)
    v = rng.integers(-span, span, n, dtype=np.int64, endpoint=True)
    specials = [0, 1, -1] + ([NAT] if nat else [])
    v[: len(specials)] = specials
    rng.shuffle(v)
    return v


def dates(rng, unit, n=N, nat=True):
    return counts(rng, unit, n, nat).view(f"M8[{unit}]")


def deltas(rng, unit, n=N, nat=True):
    return counts(rng, unit, n, nat).view(f"m8[{unit}]")


def _finer(u1, u2):
    return u1 if UNITS.index(u1) > UNITS.index(u2) else u2


def pair(rng, kind1, u1, kind2, u2, n=N):
    """Two operands of units u1 and u2 whose values all fit the finer unit: drawn in the finer
    unit, each then floored to its own (as NumPy's astype), NaT included."""
    f = _finer(u1, u2)
    base = counts(rng, f, n, nat=False)
    out = []
    for kind, u in ((kind1, u1), (kind2, u2)):
        try:
            if kind == "m" and (u in "YM") != (f in "YM"):
                raise TypeError  # durations of months have no length in days
            x = base.view(f"{kind}8[{f}]").astype(f"{kind}8[{u}]")
        except (TypeError, OverflowError):  # units NumPy does not relate: counts of their own
            x = counts(rng, u, n, nat=False).view(f"{kind}8[{u}]")
        x = x.copy()
        x[rng.integers(0, n)] = np.array("NaT", x.dtype)
        rng.shuffle(x)
        out.append(x)
    return out


def add(save, lines, rng):
    def case(expr, inputs, fn):
        files = " ".join(f"{k}={save(v)}" for k, v in inputs.items())
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a mean of nothing
                r = fn(**inputs)
            expected = save(np.asarray(r))
        except (TypeError, OverflowError):
            expected = "ERROR:TypeError"
        except ValueError as e:
            expected = "ERROR:ShapeError" if "broadcast" in str(e) else "ERROR:ValueError"
        lines.append(f"{expr}\t0\t{expected}\t{files}")

    ints = rng.integers(-5, 6, N).astype(np.int64)
    ints[:2] = [0, -1]
    floats = rng.standard_normal(N) * 3
    floats[:6] = [0.0, -0.0, np.nan, np.inf, -np.inf, 0.5]
    mask = rng.integers(0, 2, N).astype(bool)

    # ---- every unit: the operations NumPy defines, NaT in every operand
    SAME = {
        "a - b": lambda a, b: a - b,
        "a < b": lambda a, b: a < b, "a <= b": lambda a, b: a <= b, "a == b": lambda a, b: a == b,
        "a != b": lambda a, b: a != b, "a >= b": lambda a, b: a >= b, "a > b": lambda a, b: a > b,
        "maximum(a, b)": lambda a, b: np.maximum(a, b), "minimum(a, b)": lambda a, b: np.minimum(a, b),
        "fmax(a, b)": lambda a, b: np.fmax(a, b), "fmin(a, b)": lambda a, b: np.fmin(a, b),
        "where(m, a, b)": None,
        "a + b": lambda a, b: a + b,  # dates: NumPy's TypeError
    }
    DELTA = {
        "t + s": lambda t, s: t + s, "t - s": lambda t, s: t - s, "t / s": lambda t, s: t / s,
        "t // s": lambda t, s: t // s, "t % s": lambda t, s: t % s, "t < s": lambda t, s: t < s,
        "t == s": lambda t, s: t == s, "t != s": lambda t, s: t != s, "t >= s": lambda t, s: t >= s,
        "maximum(t, s)": lambda t, s: np.maximum(t, s), "fmin(t, s)": lambda t, s: np.fmin(t, s),
        "t * s": lambda t, s: t * s,
    }
    for u in UNITS:
        a, b = dates(rng, u), dates(rng, u)
        t, s = deltas(rng, u), deltas(rng, u)
        for expr, f in SAME.items():
            if f is None:
                case(expr, {"m": mask, "a": a, "b": b}, lambda m, a, b: np.where(m, a, b))
            else:
                case(expr, {"a": a, "b": b}, f)
        for expr, f in DELTA.items():
            case(expr, {"t": t, "s": s}, f)
        # a date and a duration; integers as durations
        case("a + t", {"a": a, "t": t}, lambda a, t: a + t)
        case("t + a", {"t": t, "a": a}, lambda t, a: t + a)
        case("a - t", {"a": a, "t": t}, lambda a, t: a - t)
        case("t - a", {"t": t, "a": a}, lambda t, a: t - a)  # TypeError
        case("a + 1", {"a": a}, lambda a: a + 1)
        case("a - k", {"a": a, "k": ints}, lambda a, k: a - k)
        case("a < 5", {"a": a}, lambda a: a < 5)  # TypeError
        case("a == 5", {"a": a}, lambda a: a == 5)  # NumPy's ==: False everywhere
        case("a != t", {"a": a, "t": t}, lambda a, t: a != t)  # True everywhere
        case("equal(a, 5)", {"a": a}, lambda a: np.equal(a, 5))  # TypeError
        case("a * 2", {"a": a}, lambda a: a * 2)  # TypeError
        case("-a", {"a": a}, lambda a: -a)  # TypeError
        # durations and numbers
        case("t + 1", {"t": t}, lambda t: t + 1)
        case("5 - t", {"t": t}, lambda t: 5 - t)
        case("t < 3", {"t": t}, lambda t: t < 3)
        case("t >= k", {"t": t, "k": ints}, lambda t, k: t >= k)
        case("t == 0", {"t": t}, lambda t: t == 0)
        case("equal(t, 0)", {"t": t}, lambda t: np.equal(t, 0))
        case("t == k", {"t": t, "k": ints}, lambda t, k: t == k)
        case("t * 3", {"t": t}, lambda t: t * 3)
        case("k * t", {"k": ints, "t": t}, lambda k, t: k * t)
        case("t // k", {"t": t, "k": ints}, lambda t, k: t // k)
        case("t / k", {"t": t, "k": ints}, lambda t, k: t / k)
        case("t // -2", {"t": t}, lambda t: t // -2)
        case("t / 0", {"t": t}, lambda t: t / 0)
        case("t * 1.5", {"t": t}, lambda t: t * 1.5)
        case("t * f", {"t": t, "f": floats}, lambda t, f: t * f)
        case("t / f", {"t": t, "f": floats}, lambda t, f: t / f)
        case("t // 2.5", {"t": t}, lambda t: t // 2.5)
        case("t % 3", {"t": t}, lambda t: t % 3)  # TypeError
        case("t // True", {"t": t}, lambda t: t // True)  # TypeError
        case("t * 1j", {"t": t}, lambda t: t * 1j)  # TypeError
        case("-t", {"t": t}, lambda t: -t)
        case("abs(t)", {"t": t}, lambda t: np.abs(t))
        case("+t", {"t": t}, lambda t: +t)
        case("t ** 2", {"t": t}, lambda t: t**2)  # TypeError
        case("sqrt(t)", {"t": t}, lambda t: np.sqrt(t))  # TypeError
        # predicates
        case("isnat(a)", {"a": a}, lambda a: np.isnat(a))
        case("isnat(t)", {"t": t}, lambda t: np.isnat(t))
        case("isnan(a)", {"a": a}, lambda a: np.isnan(a))
        case("isfinite(t)", {"t": t}, lambda t: np.isfinite(t))
        case("isinf(a)", {"a": a}, lambda a: np.isinf(a))
        case("isnat(k)", {"k": ints}, lambda k: np.isnat(k))  # TypeError
        case("where(m, t, 0)", {"m": mask, "t": t}, lambda m, t: np.where(m, t, 0))
        case("where(m, a, 0)", {"m": mask, "a": a}, lambda m, a: np.where(m, a, 0))  # TypeError
        case("clip(t, s, 5)", {"t": t, "s": s}, lambda t, s: np.clip(t, s, 5))
        # reductions: NaT propagates; a mean rounds towards zero
        a_nonat, t_nonat = dates(rng, u, nat=False), deltas(rng, u, nat=False)
        for x in (a, a_nonat):
            case("min(a)", {"a": x}, lambda a: np.min(a))
            case("max(a)", {"a": x}, lambda a: np.max(a))
            case("sum(a)", {"a": x}, lambda a: np.sum(a))  # TypeError
            case("max(a[m])", {"a": x, "m": mask}, lambda a, m: np.max(a[m]))
            case("min(a[m])", {"a": x, "m": mask}, lambda a, m: np.min(a[m]))
        for x in (t, t_nonat):
            case("sum(t)", {"t": x}, lambda t: np.sum(t))
            case("mean(t)", {"t": x}, lambda t: np.mean(t))
            case("min(t)", {"t": x}, lambda t: np.min(t))
            case("max(t)", {"t": x}, lambda t: np.max(t))
            case("sum(t[m])", {"t": x, "m": mask}, lambda t, m: np.sum(t[m]))
            case("mean(t[m])", {"t": x, "m": mask}, lambda t, m: np.mean(t[m]))
            case("any(t)", {"t": x}, lambda t: np.any(t))
            case("count_nonzero(t)", {"t": x}, lambda t: np.count_nonzero(t))
        grid = deltas(rng, u, 24).reshape(4, 6)
        for ax in (0, 1):
            case(f"sum(g, axis={ax})", {"g": grid}, lambda g, ax=ax: np.sum(g, axis=ax))
            case(f"mean(g, axis={ax}, keepdims=True)", {"g": grid},
                 lambda g, ax=ax: np.mean(g, axis=ax, keepdims=True))
            case(f"max(g, axis={ax})", {"g": grid}, lambda g, ax=ax: np.max(g, axis=ax))
        case("mean(t[m])", {"t": t_nonat, "m": np.zeros(N, bool)}, lambda t, m: np.mean(t[m]))  # NaT

    # ---- every pair of units: NumPy's promotion (the finer unit; Y and M with day units only
    # for dates) and its errors
    for u1 in UNITS:
        for u2 in UNITS:
            if u1 == u2:
                continue
            a, b = pair(rng, "M", u1, "M", u2)
            case("a - b", {"a": a, "b": b}, lambda a, b: a - b)
            case("a < b", {"a": a, "b": b}, lambda a, b: a < b)
            case("where(m, a, b)", {"m": mask, "a": a, "b": b}, lambda m, a, b: np.where(m, a, b))
            a, t = pair(rng, "M", u1, "m", u2)
            case("a + t", {"a": a, "t": t}, lambda a, t: a + t)
            case("a - t", {"a": a, "t": t}, lambda a, t: a - t)
            t, s = pair(rng, "m", u1, "m", u2)
            case("t + s", {"t": t, "s": s}, lambda t, s: t + s)
            case("t >= s", {"t": t, "s": s}, lambda t, s: t >= s)
            case("t // s", {"t": t, "s": s}, lambda t, s: t // s)

    # ---- literals, their units inferred from the text as NumPy infers them
    for u in ["D", "s", "ms", "ns"]:
        a = dates(rng, u)
        t = deltas(rng, u)
        for text in ["2024-03-01", "1969-12-31T23:59", "2000", "1999-12", "2024-02-29T12", "1970-01-01T00:00:00.5",
                     "1990-06-15T08:30:15.123456789"]:
            case(f"a > datetime64('{text}')", {"a": a}, lambda a, text=text: a > np.datetime64(text))
            case(f"a - datetime64('{text}')", {"a": a}, lambda a, text=text: a - np.datetime64(text))
        case("a == datetime64('NaT')", {"a": a}, lambda a: a == np.datetime64("NaT"))
        case("a != datetime64('NaT')", {"a": a}, lambda a: a != np.datetime64("NaT"))
        case("where(isnat(a), datetime64('2000-01-01T00:00', 's'), a)", {"a": a},
             lambda a: np.where(np.isnat(a), np.datetime64("2000-01-01T00:00", "s"), a))
        case("a + timedelta64(5, 'm')", {"a": a}, lambda a: a + np.timedelta64(5, "m"))
        case("t < timedelta64(-3, 'h')", {"t": t}, lambda t: t < np.timedelta64(-3, "h"))
        case("t + timedelta64(7)", {"t": t}, lambda t: t + np.timedelta64(7))
        case("t * 2 - timedelta64('NaT')", {"t": t}, lambda t: t * 2 - np.timedelta64("NaT"))
        case("datetime64('2024-01-01', 'M') + t", {"t": t},
             lambda t: np.datetime64("2024-01-01", "M") + t)
        case("a - datetime64(0, 'Y')", {"a": a}, lambda a: a - np.datetime64(0, "Y"))

    # ---- unit conversions: datetime64(x, unit) and timedelta64(x, unit), NumPy's astype
    for u1 in UNITS:
        for u2 in UNITS:
            if u1 == u2:
                continue
            a, _ = pair(rng, "M", u1, "M", u2)
            case(f"datetime64(a, '{u2}')", {"a": a}, lambda a, u2=u2: a.astype(f"M8[{u2}]"))
            if (u1 in "YM") == (u2 in "YM"):
                t, _ = pair(rng, "m", u1, "m", u2)
                case(f"timedelta64(t, '{u2}')", {"t": t}, lambda t, u2=u2: t.astype(f"m8[{u2}]"))
    case("datetime64(k, 'D')", {"k": ints}, lambda k: k.astype("M8[D]"))
    case("timedelta64(k, 'us') + timedelta64(1, 's')", {"k": ints},
         lambda k: k.astype("m8[us]") + np.timedelta64(1, "s"))
