"""Every numeric NumPy ufunc is a function of the language (issue 16).

The list comes from the installed NumPy: the ufuncs in `numpy.__all__` with `signature is None`
(gufuncs such as matmul aside) that have a loop on numbers only. A ufunc the language lacks
fails the test unless it is named below with the reason; a name listed below that the language
has gained fails it too, so the lists only shrink."""
import numpy
import pytest

# The NumPy release whose ufunc list the lists below were written against.
NUMPY_MAJOR = 2

NUMERIC_CODES = set("?bBhHiIlLqQefdgFDG")

# Deliberately not functions of the language, with the reason.
LEFT_OUT = {}

_NOT_YET = "issue 16, not yet implemented"
_OPERATOR_ALIAS = _NOT_YET + " (an operator of the language, not yet callable by its ufunc name)"
_TWO_OUTPUTS = _NOT_YET + " (two outputs: needs statements with two targets, m, e = frexp(x))"

# Not yet in the language.
NOT_YET = {
    "add": _OPERATOR_ALIAS, "subtract": _OPERATOR_ALIAS, "multiply": _OPERATOR_ALIAS,
    "divide": _OPERATOR_ALIAS, "true_divide": _OPERATOR_ALIAS, "floor_divide": _OPERATOR_ALIAS,
    "mod": _OPERATOR_ALIAS, "remainder": _OPERATOR_ALIAS, "negative": _OPERATOR_ALIAS,
    "positive": _OPERATOR_ALIAS, "invert": _OPERATOR_ALIAS, "bitwise_not": _OPERATOR_ALIAS,
    "bitwise_invert": _OPERATOR_ALIAS, "bitwise_and": _OPERATOR_ALIAS, "bitwise_or": _OPERATOR_ALIAS,
    "bitwise_xor": _OPERATOR_ALIAS, "left_shift": _OPERATOR_ALIAS, "right_shift": _OPERATOR_ALIAS,
    "bitwise_left_shift": _OPERATOR_ALIAS, "bitwise_right_shift": _OPERATOR_ALIAS,
    "equal": _OPERATOR_ALIAS, "not_equal": _OPERATOR_ALIAS, "less": _OPERATOR_ALIAS,
    "less_equal": _OPERATOR_ALIAS, "greater": _OPERATOR_ALIAS, "greater_equal": _OPERATOR_ALIAS,
    "logical_and": _NOT_YET, "logical_or": _NOT_YET, "logical_xor": _NOT_YET, "logical_not": _NOT_YET,
    "divmod": _TWO_OUTPUTS, "frexp": _TWO_OUTPUTS, "modf": _TWO_OUTPUTS,
    "bitwise_count": _NOT_YET, "float_power": _NOT_YET, "gcd": _NOT_YET, "lcm": _NOT_YET,
    "ldexp": _NOT_YET, "spacing": _NOT_YET,
    # NumPy's own signed-zero results differ between its loops (fmax(-0.0, 0.0) is 0.0 or -0.0
    # depending on the array's length and dtype), so the differential test needs a rule first.
    "fmax": _NOT_YET, "fmin": _NOT_YET,
}


def numeric_ufuncs():
    names = []
    # NumPy's public names only: numexpr, once imported, adds a ufunc of its own (expm1x) to the
    # numpy module, which is not NumPy's.
    for name in numpy.__all__:
        f = getattr(numpy, name, None)
        if not isinstance(f, numpy.ufunc) or f.signature is not None:
            continue
        if any(set(t.replace("->", "")) <= NUMERIC_CODES for t in f.types):
            names.append(name)
    return sorted(names)


def language_names(jx):
    # What a program can call by name (an operator with a name, such as ** as pow, counts).
    return {n for _, names, _, _ in jx.functions() for n in names}


def test_numpy_is_the_release_the_lists_were_written_for():
    assert int(numpy.__version__.split(".")[0]) == NUMPY_MAJOR, numpy.__version__


def test_the_enumeration_finds_the_numeric_ufuncs():
    found = numeric_ufuncs()
    assert {"sin", "add", "logaddexp", "isnan"} <= set(found)
    assert "isnat" not in found  # datetime only
    assert "matmul" not in found  # a gufunc


def test_every_numeric_ufunc_is_a_function_or_listed(jx):
    have = language_names(jx)
    missing = [n for n in numeric_ufuncs() if n not in have and n not in LEFT_OUT and n not in NOT_YET]
    assert missing == [], f"numeric NumPy ufuncs the language lacks: {missing}"


@pytest.mark.parametrize("listed", [LEFT_OUT, NOT_YET], ids=["left_out", "not_yet"])
def test_listed_ufuncs_are_still_missing_and_still_ufuncs(jx, listed):
    have = language_names(jx)
    numeric = set(numeric_ufuncs())
    assert sorted(n for n in listed if n in have) == [], "now in the language: take them off the list"
    assert sorted(n for n in listed if n not in numeric) == [], "not a numeric ufunc of this NumPy"


def test_every_listed_ufunc_has_a_reason():
    for name, reason in {**LEFT_OUT, **NOT_YET}.items():
        assert reason.strip(), name
