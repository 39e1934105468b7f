"""One NumPy array bound under two names: an in-place assignment whose target another name reaches
in another way gets NumPy's answer (computed apart, copied in), through run, evaluate and a
Kernel; a later statement that would read the other name after the write is an ArgumentError
before anything is written."""
import numpy as np
import pytest

import jitexpr as jx


def shifted(n=6):
    buf = np.arange(float(n))
    return buf, buf[1:], buf[:-1]


@pytest.mark.parametrize("n", [8, 4096, 100_003])
def test_a_target_read_reversed_under_another_name_gets_numpys_answer(n):
    x = np.arange(float(n))
    want = x + x[::-1]
    jx.run("a = a + b", a=x, b=x[::-1])
    np.testing.assert_array_equal(x, want)


def test_shifted_views_are_not_a_running_sum():
    buf, a, b = shifted()
    want = buf.copy()
    np.add(want[1:], want[:-1], out=want[1:])
    jx.run("a = a + b", a=a, b=b)
    np.testing.assert_array_equal(buf, want)


def test_rows_of_one_buffer_written_from_the_row_above():
    mm = np.arange(70_000 * 4.0).reshape(70_000, 4)
    want = mm[:-1] * 2 + mm[1:]
    jx.run("b = a*2 + b", a=mm[:-1], b=mm[1:])
    np.testing.assert_array_equal(mm[1:], want)


def test_a_square_array_and_its_transpose():
    m = np.arange(64 * 64.0).reshape(64, 64)
    want = m + m.T
    jx.run("a = a + b", a=m, b=m.T)
    np.testing.assert_array_equal(m, want)


def test_evaluate_and_a_kernel_take_the_same_rule():
    buf, a, b = shifted()
    np.testing.assert_array_equal(jx.evaluate("a = a + b; a", a=a, b=b), [1, 3, 5, 7, 9])
    np.testing.assert_array_equal(buf, [0, 1, 3, 5, 7, 9])
    buf, a, b = shifted()
    jx.compile("a = a + b")(a=a, b=b)
    np.testing.assert_array_equal(buf, [0, 1, 3, 5, 7, 9])


def test_a_later_statement_reading_the_other_name_is_refused_before_any_write():
    buf, a, b = shifted()
    with pytest.raises(jx.ArgumentError, match="share memory"):
        jx.run("a = a + 1; c = b * 2", a=a, b=b)
    np.testing.assert_array_equal(buf, np.arange(6.0))


def test_a_value_computed_before_the_write_may_be_used_after_it():
    buf, a, b = shifted()
    r = jx.run("t = b * 2; a = a + t; c = t", a=a, b=b)
    np.testing.assert_array_equal(buf, [0, 1, 4, 7, 10, 13])
    np.testing.assert_array_equal(r["c"], [0, 2, 4, 6, 8])


def test_a_name_only_assigned_and_bound_by_keyword_or_dict_is_written_in_place():
    # The one assignment rule: a bound array of the value's dtype and shape is written into,
    # whether or not the program reads it first (run, evaluate's programs, local_dict too).
    b = np.arange(4.0)
    a = np.zeros(4)
    r = jx.run("a = b * 2", a=a, b=b)
    assert r["a"] is a
    np.testing.assert_array_equal(a, b * 2)
    a = np.zeros(4)
    jx.run("a = b * 2", {"a": a, "b": b})
    np.testing.assert_array_equal(a, b * 2)
    t = np.zeros(4)
    np.testing.assert_array_equal(jx.evaluate("t = b * 2; t + 1", b=b, t=t), b * 2 + 1)
    np.testing.assert_array_equal(t, b * 2)
    i = np.zeros(4, np.int64)  # another dtype: a new array, the caller's untouched
    r = jx.run("i = b * 2", i=i, b=b)
    assert r["i"] is not i and not i.any()


def test_a_name_only_assigned_is_not_taken_from_the_callers_frame():
    b = np.arange(4.0)
    c = np.zeros(4)
    r = jx.run("c = b * 2", b=b)
    assert not c.any() and r["c"] is not c
