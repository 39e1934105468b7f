"""A Python int beside an array in every binary function of the op table, against NumPy 2
(issue 16): where NumPy's promotion makes the int the array's dtype and it does not fit
(np.add(int8_array, 1000): OverflowError), jitexpr raises its out-of-bounds ValueError with a
caret; where NumPy's loop takes the int otherwise (logical_and/or/xor cast both operands to
bool, arctan2 and hypot compute in a float, comparisons compare exactly), jitexpr answers as
NumPy does, dtype and values; and logical_and/or/xor take the int as a C long, so one past
int64 is NumPy's OverflowError beside any array (jitexpr answered). The functions come from jitexpr.functions(), so a new binary
function of the table is checked as soon as it exists."""
import warnings

import numpy as np
import pytest

import jitexpr as jx

ARRAYS = {"bool": [False, True, True, False], "int8": [0, 1, 5, 127], "uint8": [0, 1, 5, 255],
          "int16": [0, 2, 9, 32767], "uint16": [0, 3, 7, 65535], "uint64": [0, 1, 7, 2**64 - 1],
          "float32": [0.0, 1.5, -2.0, 3.0]}
INTS = [1000, 300, -1, -129, 70000, 2**40, -(2**40), 2**63 - 1, -(2**63), 2**63, 2**64 - 1, -(2**63) - 1]


def binary_functions():
    out = []
    for kind, names, arity, _doc in jx.functions():
        if kind not in ("operator", "function") or arity != 2:
            continue
        for n in names:
            if isinstance(getattr(np, n, None), np.ufunc) and getattr(np, n).nout == 1:
                out.append(n)
    return sorted(set(out))


FUNCTIONS = binary_functions()


def test_the_table_has_the_binary_functions():
    for n in ("add", "logical_and", "logical_or", "logical_xor", "arctan2", "maximum", "gcd", "ldexp", "less"):
        assert n in FUNCTIONS, n


@pytest.mark.parametrize("dtype", list(ARRAYS))
@pytest.mark.parametrize("name", FUNCTIONS)
def test_an_out_of_range_python_int_is_numpys(name, dtype):
    x = np.array(ARRAYS[dtype], dtype=dtype)
    for k in INTS:
        for text, args in ((f"{name}(x, {k})", (x, k)), (f"{name}({k}, x)", (k, x))):
            if name == "ldexp" and abs(k) >= 2**31:
                continue  # jitexpr's documented rule: ldexp's literal exponent must fit int32
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                try:
                    want = np.asarray(getattr(np, name)(*args))
                except OverflowError:
                    want = OverflowError
                except (TypeError, ValueError, ZeroDivisionError):
                    want = None  # no loop, or a value NumPy rejects for another reason: not this test's
            if want is None:
                continue
            if want is OverflowError:
                # (an integer power of a negative literal has a second reason, reported first)
                why = "out of bounds|negative integer powers" if name in ("power", "pow") else "out of bounds"
                with pytest.raises(jx.ValueError, match=why) as e:
                    jx.evaluate(text, {"x": x}, backend="cpu")
                assert "^" in str(e.value), text  # the caret under the literal
                continue
            got = np.asarray(jx.evaluate(text, {"x": x}, backend="cpu"))
            assert got.dtype == want.dtype, text
            if want.dtype.kind in "fc":  # arctan2, hypot, logaddexp...: within jitexpr's few ulps
                np.testing.assert_allclose(got, want, rtol=4 * np.finfo(want.dtype).eps, err_msg=text)
            else:
                np.testing.assert_array_equal(got, want, err_msg=text)


def test_an_integer_division_of_host_scalars_by_zero_is_numpys_zero_and_later_steps_are_still_checked():
    # An expression of host scalars computes as the kernels do (NumPy's 0 for // and % by zero),
    # and the bind-time check goes on past it: a negative shift after it is Python's error
    # (fuzzer seed 71, case 48231; seed 72).
    a = np.arange(3)
    np.testing.assert_array_equal(jx.evaluate("a * (1000 // s)", a=a, s=0), [0, 0, 0])
    np.testing.assert_array_equal(jx.evaluate("a + 1000 % s", a=a, s=0), a)
    with pytest.raises(ValueError, match="negative shift count"):
        jx.evaluate("a + ((1000 // s) << t)", a=a, s=0, t=-3)


def test_zero_to_a_negative_literal_power_is_pythons_zero_division_error():
    with pytest.raises(ZeroDivisionError):
        jx.evaluate("0 ** -1")


@pytest.mark.parametrize("text", ["1e400", "-1e400 * 2", "1e400j", "0b1011", "0B1010_1010", "0o777", "0x_ff",
                                  "1_000_000 + 1", "1_0.2_5e1_0", "0b1" + "0" * 64 + " // 2**60", "0o7_7 * 0.5"])
def test_number_literals_are_pythons(text):
    got = jx.evaluate(text)
    want = eval(text)
    assert got == want
