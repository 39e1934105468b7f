"""jitexpr's own API: names bound by name, out=, run, compile, errors, info."""
import gc
import pickle

import numpy as np
import pytest

import jitexpr as jx


def test_names_come_from_the_callers_frame():
    a = np.arange(4.0)
    b = np.ones(4)
    np.testing.assert_array_equal(jx.evaluate("b * 2 + a"), b * 2 + a)


def test_keywords_bind_by_name_whatever_their_order():
    a = np.arange(4.0)
    b = np.full(4, 10.0)
    np.testing.assert_array_equal(jx.evaluate("b * 2 + a", b=b, a=a), b * 2 + a)
    np.testing.assert_array_equal(jx.evaluate("b * 2 + a", a=a, b=b), b * 2 + a)


def test_a_local_dict_replaces_the_frames_locals():
    a = np.zeros(3)  # noqa: F841 - shadowed by the dict
    r = jx.evaluate("a + 1", {"a": np.ones(3)})
    np.testing.assert_array_equal(r, np.full(3, 2.0))


def test_keywords_come_before_the_local_dict():
    r = jx.evaluate("a + 1", {"a": np.ones(3)}, a=np.zeros(3))
    np.testing.assert_array_equal(r, np.ones(3))


_GLOBAL_G = np.full(2, 7.0)


def test_globals_of_the_caller_are_found():
    np.testing.assert_array_equal(jx.evaluate("_GLOBAL_G * 2"), np.full(2, 14.0))


def test_reserved_keyword_names_are_reachable_through_the_local_dict():
    out_arr = np.arange(3.0)
    r = jx.evaluate("out * 2 + stream", {"out": out_arr, "stream": 1.0})
    np.testing.assert_array_equal(r, out_arr * 2 + 1)


# Bound by name (a dict, keywords, the caller's frame), `pi`, `e`, `inf` and `nan` are variables.
@pytest.mark.parametrize("name", ["pi", "e", "inf", "nan"])
def test_a_variable_bound_by_name_shadows_the_constant(name):
    v = np.arange(3.0)
    r = jx.evaluate(f"{name} * 2", {name: v})
    np.testing.assert_array_equal(r, v * 2)


def test_constants_stay_constants_when_no_variable_has_their_name():
    r = jx.evaluate("2 * pi * r", r=np.ones(2))
    np.testing.assert_allclose(r, np.full(2, 2 * np.pi))


def test_an_unbound_name_is_a_name_error_with_a_caret():
    a = np.ones(2)  # noqa: F841
    with pytest.raises(jx.NameError) as e:
        jx.evaluate("a + zz")
    assert "unknown name 'zz'" in str(e.value)
    assert "^^" in str(e.value)
    assert isinstance(e.value, NameError)
    assert e.value.span == (4, 6)


def test_syntax_errors_are_syntax_errors():
    with pytest.raises(SyntaxError) as e:
        jx.evaluate("a +", a=np.ones(1))
    assert isinstance(e.value, jx.ParseError)


def test_a_dtype_an_operation_refuses_is_a_type_error():
    with pytest.raises(TypeError) as e:
        jx.evaluate("a & a", a=np.ones(2))
    assert isinstance(e.value, jx.TypeError)


def test_shapes_that_do_not_broadcast_are_a_value_error():
    with pytest.raises(ValueError) as e:
        jx.evaluate("a + b", a=np.ones(2), b=np.ones(3))
    assert isinstance(e.value, jx.ShapeError)


def test_out_is_written_in_place_and_returned():
    a = np.arange(5.0)
    out = np.empty(5)
    r = jx.evaluate("a * 2 + 1", a=a, out=out)
    assert r is out
    np.testing.assert_array_equal(out, a * 2 + 1)


def test_out_casts_within_a_kind_and_refuses_across_kinds():
    a = np.arange(4.0)
    out32 = np.empty(4, np.float32)
    jx.evaluate("a / 2", a=a, out=out32)
    np.testing.assert_array_equal(out32, (a / 2).astype(np.float32))
    with pytest.raises(TypeError):
        jx.evaluate("a / 2", a=a, out=np.empty(4, np.int32))


def test_out_of_the_wrong_shape_is_a_value_error():
    with pytest.raises(ValueError):
        jx.evaluate("a * 2", a=np.ones(3), out=np.empty(4))


def test_out_that_is_also_an_input_is_updated_in_place():
    a = np.arange(4.0)
    b = np.ones(4)
    jx.evaluate("a + b", a=a, b=b, out=a)
    np.testing.assert_array_equal(a, [1, 2, 3, 4])


def test_out_overlapping_an_input_differently_gets_the_numpy_answer():
    x = np.arange(6.0)
    expect = x[::-1] * 2
    jx.evaluate("r * 2", r=x[::-1], out=x)
    np.testing.assert_array_equal(x, expect)


def test_out_may_be_strided():
    a = np.arange(8.0)
    base = np.zeros(16)
    out = base[::2]
    jx.evaluate("a * 3", a=a, out=out)
    np.testing.assert_array_equal(base[::2], a * 3)
    np.testing.assert_array_equal(base[1::2], 0)


def test_a_read_only_out_is_refused():
    out = np.empty(2)
    out.flags.writeable = False
    with pytest.raises(ValueError):
        jx.evaluate("a * 2", a=np.ones(2), out=out)


def test_out_takes_an_expression_not_an_assignment():
    with pytest.raises(ValueError):
        jx.evaluate("c = a * 2", a=np.ones(2), out=np.empty(2))


def test_inputs_of_any_strides_are_read_in_place():
    m = np.arange(24.0).reshape(4, 6)
    for view in (m.T, m[::2, ::3], m[:, ::-1], np.broadcast_to(m[0], (4, 6))):
        np.testing.assert_array_equal(jx.evaluate("v * 2 + 1", v=view), view * 2 + 1)


def test_zero_dimensional_arrays_and_scalars():
    z = np.array(3.0)
    r = jx.evaluate("z * 2", z=z)
    assert r.shape == () and r == 6.0
    assert jx.evaluate("x * 2", x=3).shape == ()


def test_python_scalars_are_weak_and_numpy_scalars_strong():
    f32 = np.ones(3, np.float32)
    assert jx.evaluate("f * 2.5", f=f32).dtype == np.float32
    assert jx.evaluate("f * s", f=f32, s=2.5).dtype == np.float32
    assert jx.evaluate("f * s", f=f32, s=np.float64(2.5)).dtype == (f32 * np.float64(2.5)).dtype
    assert jx.evaluate("f * s", f=f32, s=np.array(2.5)).dtype == (f32 * np.array(2.5)).dtype
    i8 = np.ones(3, np.int8)
    assert jx.evaluate("i + 1", i=i8).dtype == np.int8
    with pytest.raises(OverflowError):
        jx.evaluate("i + x", i=np.ones(2, np.int64), x=2**70)


def test_lists_are_converted_as_numpy_would():
    np.testing.assert_array_equal(jx.evaluate("a * 2", a=[1, 2, 3]), [2, 4, 6])


def test_reductions_give_zero_dimensional_arrays():
    a = np.arange(10.0)
    r = jx.evaluate("sum(a * a)", a=a)
    assert isinstance(r, np.ndarray) and r.shape == ()
    assert r == (a * a).sum()


def test_programs_return_the_value_of_their_last_statement():
    a = np.arange(3.0)
    np.testing.assert_array_equal(jx.evaluate("t = a * 2; t + 1", a=a), a * 2 + 1)


def test_run_returns_every_assigned_name():
    a = np.arange(4.0)
    b = np.ones(4)
    r = jx.run("t = a * 2; c = t + b; s = sum(c)", a=a, b=b)
    assert sorted(r) == ["c", "s", "t"]
    np.testing.assert_array_equal(r["c"], a * 2 + b)
    assert r["s"] == (a * 2 + b).sum()


def test_run_writes_an_existing_array_in_place_and_returns_it():
    b = np.ones(4)
    r = jx.run("b = b * 3", b=b)
    assert r["b"] is b
    np.testing.assert_array_equal(b, np.full(4, 3.0))


def test_compile_checks_a_signature_at_once():
    k = jx.compile("x * t + 1", {"x": "float32", "t": float})
    assert k.parameters == ["x", "t"]
    r = k(x=np.ones(3, np.float32), t=2.0)
    assert r.dtype == np.float32
    with pytest.raises(TypeError):
        jx.compile("x & y", {"x": "float64", "y": "float64"})
    with pytest.raises(TypeError):
        k(x=np.ones(3), t=2.0)  # float64 against a float32 signature


def test_compile_without_a_signature_raises_syntax_errors_now():
    with pytest.raises(SyntaxError):
        jx.compile("a +* b")
    k = jx.compile("a * 2")
    np.testing.assert_array_equal(k(a=np.ones(2)), [2, 2])
    np.testing.assert_array_equal(k(a=np.ones(2, np.int32)), [2, 2])


def test_kernels_pickle_as_text_and_signature():
    k = jx.compile("x * t", {"x": "float64", "t": float})
    data = pickle.dumps(k)
    assert b"x * t" in data
    k2 = pickle.loads(data)
    assert k2.text == k.text and k2.signature == k.signature
    np.testing.assert_array_equal(k2(x=np.ones(2), t=3.0), [3, 3])


def test_results_own_their_memory_and_are_freed_once():
    gc.collect()
    before = jx._jitexpr.live_results()
    rs = [jx.evaluate("a * 2", a=np.ones(1000)) for _ in range(10)]
    assert jx._jitexpr.live_results() == before + 10
    views = [r[::2] for r in rs]
    del rs
    gc.collect()
    assert jx._jitexpr.live_results() == before + 10  # the views keep their results
    del views
    gc.collect()
    assert jx._jitexpr.live_results() == before


def test_results_outlive_the_runtime_that_made_them():
    rt = jx.Runtime("cpu", threads=2)
    r = jx._jitexpr.evaluate("a * 2", {"a": np.ones(5)}, None, None, None, rt)
    rt.close()
    del rt
    gc.collect()
    np.testing.assert_array_equal(r, np.full(5, 2.0))


def test_a_closed_runtime_refuses_work_cleanly():
    rt = jx.Runtime("cpu")
    rt.close()
    assert rt.closed
    with pytest.raises(jx.ArgumentError):
        jx._jitexpr.evaluate("a * 2", {"a": np.ones(5)}, None, None, None, rt)


def test_a_result_that_is_an_input_is_a_copy_not_a_borrowed_view():
    a = np.arange(3.0)
    r = jx.evaluate("a", a=a)
    a[0] = 100
    assert r[0] == 0


def test_info_says_what_was_found():
    i = jx.info()
    assert set(i["cuda"]) >= {"available", "reason", "nvrtc", "nvjitlink", "devices"}
    if not i["cuda"]["available"]:
        assert i["cuda"]["reason"]
        assert not jx.cuda_available()
    for lib in ("nvrtc", "nvjitlink"):
        entry = i["cuda"][lib]
        assert entry["found"] == bool(entry["path"])
        if not entry["found"]:
            assert entry["error"]


def test_set_num_threads_returns_the_previous_count():
    old = jx.set_num_threads(1)
    try:
        assert jx.get_num_threads() == 1
        np.testing.assert_array_equal(jx.evaluate("a + 1", a=np.zeros(100000)), np.ones(100000))
    finally:
        assert jx.set_num_threads(old) == 1
    with pytest.raises(ValueError):
        jx.set_num_threads(0)


def test_host_and_device_mixed_without_backend_is_an_error():
    class FakeDevice:
        # A CUDA array by the interface (never read: the placement check comes first).
        __cuda_array_interface__ = {"shape": (2,), "typestr": "<f8", "data": (8, False), "version": 3, "strides": None}

    with pytest.raises(jx.ArgumentError) as e:
        jx.evaluate("a + d", a=np.ones(2), d=FakeDevice())
    assert "backend='cuda'" in str(e.value)


def test_a_kernel_signature_names_the_value_and_both_dtypes():
    k = jx.compile("x + y", {"x": "float32", "y": "float32"})
    with pytest.raises(jx.TypeError, match="'y' has dtype float64 but the kernel's signature says float32"):
        k(x=np.ones(2, np.float32), y=np.ones(2))


def test_a_kernel_binds_names_from_its_callers_frame():
    k = jx.compile("u * 2")
    u = np.arange(3.0)
    np.testing.assert_array_equal(k(), u * 2)


def test_an_expression_that_is_not_a_str_is_a_type_error():
    with pytest.raises(TypeError, match="must be a str"):
        jx.evaluate(3)


def test_check_says_how_a_program_splits_into_row_blocks():
    info = jx.check("c = a * r; s = mean(a)", a=np.zeros((100, 3), np.float32), r=np.zeros(3, np.float32))
    assert info.rows["splits"] and info.rows["why_not"] == ""
    assert sorted(info.rows["inputs"]) == [("a", "rows", 12), ("r", "whole", 0)]
    assert info.rows["outputs"] == [("c", "rows", ""), ("s", "combine", "mean")]
    refused = jx.check("cumsum(a)", a=np.zeros(10)).rows
    assert not refused["splits"] and "scan" in refused["why_not"]
