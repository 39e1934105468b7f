"""The known, documented differences between jitexpr.numexpr and numexpr 2.14 (docs/python.md,
"Coming from numexpr"), as test_numexpr_diff.py checks them.

Each entry says where it applies (a predicate on the expression and the two input dtypes), what
jitexpr gives instead — ``"numpy"``: NumPy 2's value and dtype (where numexpr departs from
NumPy, jitexpr follows NumPy); an exception class: that error; a callable: a check of the
value — and why. The test verifies the expectation wherever numexpr and jitexpr differ under an
entry, and that every entry still describes at least one real difference."""
from dataclasses import dataclass
from typing import Callable

import numpy as np

import jitexpr

NARROW = {"bool", "int8"}
INT = {"int8", "int32", "int64", "bool"}


@dataclass(frozen=True)
class Difference:
    name: str
    where: Callable  # (text, da, db) -> bool
    expect: object
    reason: str

    def applies(self, text, da, db):
        return self.where(text, da, db)


DIFFERENCES = [
    Difference("integer literals", lambda t, a, b: t == "where(a > 1, 2, -1)", "numpy",
               "numexpr's integer literals are int32 (where(a > 1, 2, -1) is int32); NumPy 2's are weak: int64"),
    Difference("integer reductions", lambda t, a, b: t.startswith(("sum(", "prod(")) and a == "int32", "numpy",
               "numexpr sums and multiplies int32 in int32; NumPy in int64"),
    Difference("float literals with float32", lambda t, a, b: t == "a * 2.5" and a == "float32", "numpy",
               "numexpr computes float32 * 2.5 in float64; NumPy 2's float literals are weak: float32"),
    Difference("functions without integer loops",
               lambda t, a, b: t in ("abs(b)", "ceil(a) + floor(b)", "real(a)", "fmod(a, 3)", "maximum(a, b)")
               and (a in INT or b in INT), "numpy",
               "numexpr computes abs, ceil, floor, real, fmod and maximum of integers in float64; NumPy keeps the "
               "integer dtype"),
    Difference("float64 helpers for float32",
               lambda t, a, b: t in ("maximum(a, b)", "copysign(a, b)", "real(a)") and "float32" in (a, b), "numpy",
               "numexpr computes maximum, copysign and real of float32 in float64; NumPy in float32"),
    Difference("named constants", lambda t, a, b: t in ("pi * a", "e"), "numpy",
               "numexpr knows no pi or e (KeyError unless a variable has the name); jitexpr has the constants "
               "pi, e, inf, nan, which a variable of the same name shadows"),
    Difference("unknown functions", lambda t, a, b: t == "sine(a)", jitexpr.NameError,
               "numexpr raises TypeError ('VariableNode' object is not callable); jitexpr raises NameError "
               "naming the function, with a suggestion"),
    Difference("bool to a negative power", lambda t, a, b: t == "a ** -1" and a == "bool", jitexpr.ValueError,
               "numexpr computes bool ** -1 in float64; jitexpr raises ValueError (integers to negative integer "
               "powers), as NumPy does"),
    Difference("bool squared", lambda t, a, b: t == "b ** 2" and b == "bool", "numpy",
               "numexpr gives bool for bool ** 2; NumPy int8 (its ** 2 is np.square, whose bool loop is int8), "
               "as jitexpr does"),
    Difference("narrow integers", lambda t, a, b: a in NARROW or b in NARROW, "numpy",
               "numexpr computes bool, int8 and int16 in int32 (and their float functions in float32 or "
               "float64); NumPy 2 keeps them: int8 + 1 is int8, sin(int8) is float16, bool * 2 is int64"),
    Difference("int64 with float32", lambda t, a, b: (a, b) == ("int64", "float32"), "numpy",
               "numexpr gives float32 for int64 with float32; NumPy promotes to float64"),
    Difference("NUL inside bytes in contains", lambda t, a, b: a == "bytes" and "contains(" in t, "numpy",
               "numexpr's contains() stops at a NUL byte inside a string (a C string's end): contains(b'x\\0ab', "
               "b'ab') is False; jitexpr searches every byte but the trailing NULs, as np.strings.find does"),
    Difference("order of bytes above 0x7f", lambda t, a, b: a == "bytes" and ("<" in t or ">" in t), "numpy",
               "numexpr orders byte strings by C char, signed where the platform's char is (x86: b'\\xff' < b'a'); "
               "jitexpr orders them as NumPy does, by unsigned byte, on every platform"),
]


def difference_for(text, da, db):
    """The first entry that applies (the specific ones come before the broad dtype rules)."""
    for d in DIFFERENCES:
        if d.applies(text, da, db):
            return d
    return None


# The other way round: where the drop-in gives numexpr's answer and not NumPy's (jitexpr.evaluate
# gives NumPy's), because numexpr's own test suite asserts it. test_numexpr_diff.py checks each:
# the drop-in agrees with numexpr, jitexpr.evaluate does not.
NUMEXPR_NOT_NUMPY = [
    ("an integer of constants alone is int32", "2", {}),
    ("uint32 computes as int64", "a", {"a": np.uint32(42)}),
    ("~ of a literal bool is Python's (-2)", "~True", {}),
    ("unary + of a bool is the bool", "+a", {"a": np.array([True, False])}),
    ("an operation the dtype lacks is a NotImplementedError", "~a", {"a": np.ones(2)}),
    ("Python's and/or/not are a TypeError", "(a > 0) and (a < 2)", {"a": np.ones(2)}),
    ("a negative axis is a ValueError", "sum(a, axis=-1)", {"a": np.ones(2)}),
]

