"""jitexpr.explain: what a program becomes over NumPy arrays, without running it."""
import numpy as np
import pytest

import jitexpr as jx


def test_explain_names_every_array_with_its_dtype_and_shape():
    a = np.zeros((20, 30), dtype=np.float32)
    text = jx.explain("c = a * 2 + 1", a=a, backend="cpu", bandwidth=10)
    assert "  input  a            float32    (20, 30)         host\n" in text
    assert "-> c float32 (20, 30), a new array" in text
    assert "total: " in text and "at 10.0 GB/s (given)" in text


def test_explain_binds_from_the_callers_frame_and_runs_nothing():
    a = np.arange(4.0)
    text = jx.explain("a = a * 2", backend="cpu", bandwidth=10)
    assert "in place into the existing array" in text
    np.testing.assert_array_equal(a, np.arange(4.0))


def test_explain_of_an_unbound_name_is_a_name_error():
    with pytest.raises(jx.NameError):
        jx.explain("c = nowhere * 2", {}, backend="cpu")
