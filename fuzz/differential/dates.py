"""The differential fuzzer's date cases: random programs over datetime64 and timedelta64 arrays
of random units (NaT in them), integer and float arrays, date and duration literals, evaluated
by jitexpr and by NumPy 2 (the same text as NumPy code: datetime64('...') is np.datetime64,
datetime64(x, 'u') of an array is x.astype('M8[u]')). The two must agree on the error (a NumPy
TypeError or OverflowError is jitexpr's type error) or on dtype, shape and every count.

Text compared with a value (`ts > '2024-03-01'`) is read as a date by jitexpr (where NumPy's
operator compares a date with a str): its reference is the comparison with np.datetime64 of the
text, what jitexpr documents it to mean; text compared with anything but a date is jitexpr's
TypeError (NumPy's == and != answer False and True there).

jitexpr's documented choices are not judged (fuzz_numpy.py counts them as "not judged"): a date
literal its unit cannot hold is a ValueError where NumPy wraps it, and where() of a date and a
duration is refused where NumPy reads the duration as a date (docs/language.md, "Dates and
durations").
"""
import warnings

import numpy as np

from drivers import DriverError

UNITS = ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"]
COMMON = ["D", "s", "ms", "us", "ns", "h", "m"]  # drawn more often than the rest
NAT = np.iinfo(np.int64).min


def _unit(rng):
    return str(rng.choice(COMMON)) if rng.random() < 0.7 else str(rng.choice(UNITS))


def _span(unit):
    years = 200
    per_year = {"Y": 1, "M": 12, "W": 52, "D": 365}
    if unit in per_year:
        return years * per_year[unit]
    if unit in ("ps", "fs", "as"):
        return 2 * 10**18
    sec = years * 365 * 86400
    return {"h": sec // 3600, "m": sec // 60, "s": sec, "ms": sec * 10**3, "us": sec * 10**6, "ns": sec * 10**9}[unit]


def _shape(rng):
    return [(), (6,), (3, 4), (1, 4), (4,), (0,)][int(rng.integers(0, 6))]


def _array(rng, kind, unit, shape):
    n = int(np.prod(shape)) if shape else 1
    span = _span(unit)
    v = rng.integers(-span, span, n, dtype=np.int64, endpoint=True)
    if rng.random() < 0.5:
        v[:] = rng.integers(-5, 6, n)  # small counts: equal values, zeros, signs
    v[rng.random(n) < 0.2] = NAT
    return v.reshape(shape).view(f"{kind}8[{unit}]")


def _date_text(rng):
    y = int(rng.integers(1900, 2100))
    forms = [f"{y}", f"{y}-{rng.integers(1, 13):02}", f"{y}-{rng.integers(1, 13):02}-{rng.integers(1, 29):02}",
             f"{y}-03-01T{rng.integers(0, 24):02}", f"{y}-03-01 {rng.integers(0, 24):02}:{rng.integers(0, 60):02}",
             f"{y}-12-31T23:59:{rng.integers(0, 60):02}.{rng.integers(0, 1000):03}", "NaT"]
    return forms[int(rng.integers(0, len(forms)))]


class DateGenerator:
    def __init__(self, rng):
        self.rng = rng

    def inputs(self):
        rng, names = self.rng, {}
        for name in ("a", "b", "c")[: int(rng.integers(1, 4))]:
            r = rng.random()
            shape = _shape(rng)
            if r < 0.75:
                names[name] = _array(rng, "M" if rng.random() < 0.5 else "m", _unit(rng), shape)
            elif r < 0.9:
                names[name] = np.asarray(rng.integers(-4, 5, shape)).astype(str(rng.choice(["int64", "int32", "bool"])))
            else:
                names[name] = np.asarray(rng.standard_normal(shape) * 3)
        return names

    def leaf(self, names):
        rng = self.rng
        r = rng.random()
        if r < 0.6:
            return ("name", str(rng.choice(sorted(names))))
        if r < 0.75:
            unit = "" if rng.random() < 0.6 else f", '{_unit(rng)}'"
            return ("lit", f"datetime64('{_date_text(rng)}'{unit})")
        if r < 0.88:
            return ("lit", f"timedelta64({int(rng.integers(-100, 100))}, '{_unit(rng)}')")
        if r < 0.95:
            return ("lit", str(int(rng.integers(-3, 4))))
        return ("lit", repr(float(rng.choice([1.5, -0.5, 0.0]))))

    def expr(self, names, depth):
        rng = self.rng
        if depth <= 0 or rng.random() < 0.3:
            return self.leaf(names)
        r = rng.random()
        if r < 0.06:  # text read as a date where it meets one
            op = str(rng.choice(["<", "<=", "==", "!=", ">=", ">"]))
            return ("tcmp", op, self.expr(names, depth - 1), _date_text(rng))
        if r < 0.5:
            op = str(rng.choice(["+", "-", "-", "*", "/", "//", "%", "<", "<=", "==", "!=", ">=", ">"]))
            return ("bin", op, self.expr(names, depth - 1), self.expr(names, depth - 1))
        if r < 0.62:
            fn = str(rng.choice(["maximum", "minimum", "fmax", "fmin"]))
            return ("call", fn, [self.expr(names, depth - 1), self.expr(names, depth - 1)])
        if r < 0.72:
            return ("call", "where", [("bin", ">", self.expr(names, depth - 1), self.expr(names, depth - 1)),
                                      self.expr(names, depth - 1), self.expr(names, depth - 1)])
        if r < 0.82:
            fn = str(rng.choice(["isnat", "abs", "negative", "isfinite"]))
            return ("call", fn, [self.expr(names, depth - 1)])
        if r < 0.9:
            kind = "datetime64" if rng.random() < 0.5 else "timedelta64"
            return ("conv", kind, self.expr(names, depth - 1), _unit(rng))
        fn = str(rng.choice(["min", "max", "sum", "mean"]))
        return ("call", fn, [self.expr(names, depth - 1)])

    def program(self, names):
        return self.expr(names, int(self.rng.integers(1, 4)))


def text(t):
    k = t[0]
    if k in ("name", "lit"):
        return t[1]
    if k == "bin":
        return f"({text(t[2])} {t[1]} {text(t[3])})"
    if k == "call":
        return f"{t[1]}({', '.join(text(a) for a in t[2])})"
    if k == "tcmp":
        return f"({text(t[2])} {t[1]} '{t[3]}')"
    return f"{t[1]}({text(t[2])}, '{t[3]}')"


def numpy_text(t):
    """The same program as NumPy code."""
    k = t[0]
    if k == "name":
        return t[1]
    if k == "lit":
        return t[1].replace("datetime64(", "np.datetime64(").replace("timedelta64(", "np.timedelta64(")
    if k == "bin" and numbers_only(t):  # Python's arithmetic, with jitexpr's rules for two bools
        return f"_py('{t[1]}', {numpy_text(t[2])}, {numpy_text(t[3])})"
    if k == "bin":
        return f"({numpy_text(t[2])} {t[1]} {numpy_text(t[3])})"
    if k == "call":
        return f"np.{t[1]}({', '.join(numpy_text(a) for a in t[2])})"
    if k == "tcmp":
        return f"_text_compared({numpy_text(t[2])}, '{t[1]}', '{t[3]}')"
    if numbers_only(t[2]):  # a number, or Python arithmetic of numbers: NumPy's constructor
        return f"np.{t[1]}({numpy_text(t[2])}, '{t[3]}')"
    code = "M8" if t[1] == "datetime64" else "m8"
    return f"_astype({numpy_text(t[2])}, '{code}[{t[3]}]')"


def numbers_only(t):
    """Whether `t` is number literals alone (which jitexpr folds as Python does)."""
    if t[0] == "lit":
        return not t[1].startswith(("datetime64", "timedelta64"))
    return t[0] == "bin" and numbers_only(t[2]) and numbers_only(t[3])


def _py(op, a, b):
    """Python's `a op b` on two numbers as jitexpr folds literals (docs/language.md): two bools
    stay a bool under + * | & ^ (True + True is True), and - of two bools is a TypeError."""
    if isinstance(a, bool) and isinstance(b, bool):
        if op in ("+", "|"):
            return a or b
        if op in ("*", "&"):
            return a and b
        if op == "^":
            return a != b
        if op == "-":
            raise TypeError("- of two bools")
    return eval(f"a {op} b", {}, {"a": a, "b": b})


def _text_compared(x, op, text):
    """`x op 'text'` as jitexpr documents it: the text read as np.datetime64 where x is a date."""
    if np.asarray(x).dtype.kind != "M":
        raise TypeError("text is read as a date only against a datetime64")
    return eval(f"x {op} np.datetime64(text)", {"np": np, "x": x, "text": text})


def _astype(x, dtype):
    x = np.asarray(x)
    if x.dtype.kind in "Mm" and x.dtype.kind != np.dtype(dtype).kind:
        raise TypeError("a date is not a duration")
    if x.dtype.kind == "m" and (np.datetime_data(x.dtype)[0] in "YM") != (np.datetime_data(dtype)[0] in "YM"):
        raise TypeError("jitexpr converts no duration between months and days")
    if x.dtype.kind not in "Mmiub":
        raise TypeError("not a count")
    return (x.astype("i8") if x.dtype.kind == "b" else x).astype(dtype)  # a bool: a count of 0 or 1


def children(t):
    if t[0] == "bin":
        return [t[2], t[3]]
    if t[0] == "call":
        return list(t[2])
    if t[0] in ("conv", "tcmp"):
        return [t[2]]
    return []


def replacements(t):
    for c in children(t):
        yield c
    k = t[0]
    if k == "bin":
        for c in replacements(t[2]):
            yield ("bin", t[1], c, t[3])
        for c in replacements(t[3]):
            yield ("bin", t[1], t[2], c)
    elif k == "call":
        for i, a in enumerate(t[2]):
            for c in replacements(a):
                yield ("call", t[1], t[2][:i] + [c] + t[2][i + 1:])
    elif k in ("conv", "tcmp"):
        for c in replacements(t[2]):
            yield (k, t[1], c, t[3])


def size(t):
    return 1 + sum(size(c) for c in children(t))


def reference(t, names):
    """NumPy's (dtype name, array) or ("error", kind)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            r = np.asarray(eval(numpy_text(t), {"np": np, "_astype": _astype, "_text_compared": _text_compared,
                                                "_py": _py}, dict(names)))
        except (TypeError, OverflowError):
            return ("error", "type")
        except ZeroDivisionError:  # Python's arithmetic of two literals, as jitexpr folds them
            return ("error", "value")
        except ValueError as e:
            return ("error", "shape" if "broadcast" in str(e) else "value")
    if r.dtype.kind in "Mm" and np.datetime_data(r.dtype)[0] == "generic":
        return ("error", "type")  # a result of no unit: jitexpr asks for one
    return (r.dtype.name, r)


def judge(driver, t, names):
    want = reference(t, names)
    try:
        dtype, got = driver.run(text(t), names)
    except DriverError as e:
        if want[0] == "error" and want[1] == e.kind:
            return None
        if e.kind == "value" and "does not fit" in e.message:
            return "skip"  # a literal its unit cannot hold: jitexpr's ValueError, NumPy wraps it
        if e.kind == "type" and "a date and a duration have no common dtype" in e.message:
            return "skip"  # where() of a date and a duration: refused on purpose
        return f"jitexpr raised {e.kind} ({e.message.splitlines()[0]}), NumPy gave {want[0]} {want[1] if want[0] == 'error' else ''}"
    if want[0] == "error":
        return f"NumPy raised {want[1]}, jitexpr gave {dtype} {got!r}"
    w = want[1]
    if dtype != w.dtype.name:
        return f"dtype {dtype}, NumPy gives {w.dtype.name}"
    if got.shape != w.shape:
        return f"shape {got.shape}, NumPy gives {w.shape}"
    if w.dtype.kind in "Mm":
        same = np.array_equal(got.view("i8"), w.view("i8"))
    elif w.dtype.kind == "f":
        same = np.array_equal(got, w, equal_nan=True)
    else:
        same = np.array_equal(got, w)
    return None if same else f"values differ: got {got!r}, NumPy {w!r}"


def shrink(driver, t, names, why):
    best, changed = t, True
    while changed:
        changed = False
        for cand in replacements(best):
            r = judge(driver, cand, names)
            if size(cand) < size(best) and r and r != "skip":
                best, changed = cand, True
                break
    return best


def describe_inputs(t, names):
    used = set()

    def walk(n):
        if n[0] == "name":
            used.add(n[1])
        for c in children(n):
            walk(c)

    walk(t)
    return [f"{k}: {names[k].dtype} {names[k].shape} = {names[k].tolist()!r}" for k in sorted(used)]
