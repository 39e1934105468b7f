"""The task objects a jitexpr.dask graph carries, called as a worker calls them (no cluster):
the dtype check against the graph's signature, the shape of an output block, and what pickles."""
import pickle

import numpy as np
import pytest

import jitexpr as jx
from jitexpr.dask import _tasks

F64 = {"a": "float64", "b": "float64"}


def test_a_block_of_another_dtype_fails_the_task_naming_the_input():
    p = _tasks.Program("a * 2 + b", ("a", "b"), F64, result=("float64", 1))
    with pytest.raises(jx.TypeError, match="a block of 'b' has dtype float32, but the graph was built for float64"):
        p(np.ones(4), np.ones(4, dtype=np.float32))


def test_a_python_scalar_block_is_bound_as_it_is_without_a_dtype_check():
    p = _tasks.Program("a * s", ("a", "s"), {"a": "float32", "s": "float64"}, result=("float32", 1))
    r = p(np.arange(4, dtype=np.float32), 2.5)
    assert r.dtype == np.float32
    np.testing.assert_array_equal(r, np.arange(4, dtype=np.float32) * 2.5)


def test_an_output_block_is_the_broadcast_of_the_blocks_aligned_by_trailing_dimensions():
    assert _tasks._block_shape((np.ones((3, 1)), np.ones(4)), 2) == (3, 4)
    assert _tasks._block_shape((np.ones(4), 2.0), 3) == (1, 1, 4)
    assert _tasks._block_shape((1.0, np.float64(2)), 2) == (1, 1)
    p = _tasks.Program("a + b", ("a", "b"), F64, result=("float64", 2))
    r = p(np.arange(3.0).reshape(3, 1), np.arange(4.0))
    np.testing.assert_array_equal(r, np.arange(3.0).reshape(3, 1) + np.arange(4.0))


def test_a_program_ending_in_an_assignment_gives_the_assigned_value():
    p = _tasks.Program("t = a * 2; c = t + b", ("a", "b"), F64, result=("float64", 1))
    np.testing.assert_array_equal(p(np.arange(4.0), np.ones(4)), np.arange(4.0) * 2 + 1)


def test_a_program_task_pickles_as_text_names_signature_and_result_only():
    p = _tasks.Program("a * 2 + b", ("a", "b"), F64, result=("float64", 1))
    blob = pickle.dumps(p)
    q = pickle.loads(blob)
    assert (q.text, q.names, q.signature, q.outputs, q.result) == (p.text, p.names, p.signature, None, ("float64", 1))
    assert len(blob) < 400
    np.testing.assert_array_equal(q(np.ones(3), np.ones(3)), np.full(3, 3.0))


def test_a_reduction_chunk_task_checks_dtypes_and_keeps_the_reduced_axis():
    c = _tasks.Chunk("sum", "a * b", ("a", "b"), F64, (0,), 1)
    r = c(np.arange(4.0), np.ones(4))
    assert r["v"].shape == (1,) and r["v"][0] == 6.0
    with pytest.raises(jx.TypeError, match="a block of 'a' has dtype int64"):
        c(np.arange(4), np.ones(4))
