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

# Not yet in the language (issue 16 added the last of them: the operators by their ufunc names,
# logical_*, fmax/fmin, float_power, gcd, lcm, ldexp, spacing, bitwise_count and the functions
# of two results divmod, frexp and modf, assigned as `m, e = frexp(x)`).
NOT_YET = {}


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
