"""jitexpr.evaluate as the extension's own function (py_evaluate in python/src/evaluate.cpp): the
call's shape is checked as Python checks a function's, keywords from any source bind, and the
per-thread state a call reuses keeps nothing alive and is never shared by two calls at once."""
import gc
import inspect
import threading
import weakref

import numpy as np
import pytest

import jitexpr as jx


def test_its_signature_is_the_documented_one():
    sig = inspect.signature(jx.evaluate)
    assert list(sig.parameters) == ["ex", "local_dict", "out", "backend", "stream", "device", "names"]
    assert sig.parameters["ex"].kind is inspect.Parameter.POSITIONAL_ONLY
    assert sig.parameters["names"].kind is inspect.Parameter.VAR_KEYWORD
    assert "Evaluates the expression" in jx.evaluate.__doc__
    assert jx.evaluate.__module__ == "jitexpr"


def test_no_expression_is_a_type_error():
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'ex'"):
        jx.evaluate()


def test_three_positional_arguments_are_a_type_error():
    with pytest.raises(TypeError, match="from 1 to 2 positional arguments but 3 were given"):
        jx.evaluate("a", {"a": 1.0}, np.empty(1))


def test_local_dict_given_twice_is_a_type_error():
    with pytest.raises(TypeError, match="multiple values for argument 'local_dict'"):
        jx.evaluate("a", {"a": 1.0}, local_dict={"a": 2.0})


def test_local_dict_by_keyword_binds():
    a = np.arange(3.0)
    np.testing.assert_array_equal(jx.evaluate("x + 1", local_dict={"x": a}), a + 1)


def test_keywords_from_a_mapping_of_fresh_strings_bind():
    # Keyword names that are not interned (built at run time) are found by value.
    a = np.arange(4.0)
    names = {"".join(["al", "pha"]): a, "".join(["be", "ta"]): 2.0}
    np.testing.assert_array_equal(jx.evaluate("alpha * beta", **names), a * 2.0)


def test_reserved_keywords_built_at_run_time_are_still_reserved():
    a = np.arange(3.0)
    out = np.empty(3)
    r = jx.evaluate("a * 2", a=a, **{"".join(["o", "ut"]): out})
    assert r is out
    np.testing.assert_array_equal(out, a * 2)


def test_a_keyword_the_expression_does_not_read_is_ignored():
    np.testing.assert_array_equal(jx.evaluate("a + 1", a=np.ones(2), unused=3), np.full(2, 2.0))


def test_frame_depth_reaches_the_frame_above_the_caller():
    def helper():
        return jx.evaluate("v * 2", _frame_depth=2)

    v = np.arange(3.0)
    np.testing.assert_array_equal(helper(), v * 2)


def test_a_call_keeps_no_reference_to_its_inputs_or_result():
    a = np.arange(8.0)
    b = np.ones(8)
    r = jx.evaluate("t = a * 2; t + b", a=a, b=b)
    refs = [weakref.ref(x) for x in (a, b, r)]
    del a, b, r
    gc.collect()
    assert [w() for w in refs] == [None, None, None]


def test_a_call_made_while_another_binds_on_the_same_thread_gets_its_own_state():
    # A value whose __array__ evaluates: the inner call runs while the outer one is binding.
    class Evaluating:
        def __array__(self, dtype=None, copy=None):
            return jx.evaluate("p + 10", p=np.arange(3.0))

    x = np.arange(3.0)
    r = jx.evaluate("x + y", x=x, y=Evaluating())
    np.testing.assert_array_equal(r, x + np.arange(3.0) + 10)
    np.testing.assert_array_equal(jx.evaluate("x * 3", x=x), x * 3)


def test_calls_from_many_threads_bind_their_own_names():
    errors = []

    def work(k):
        try:
            v = np.full(64, float(k))
            for _ in range(200):
                np.testing.assert_array_equal(jx.evaluate("v * 2 + k", v=v, k=k), v * 2 + k)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_program_of_another_text_does_not_see_the_previous_calls_names():
    # The environment is reused between calls: a name bound by the last call must not leak.
    jx.evaluate("q = a * 2; q + 1", a=np.ones(3))
    with pytest.raises(NameError):
        jx.evaluate("q + 1")


def test_a_kernel_call_has_the_documented_signature_and_call_shape():
    sig = inspect.signature(jx.Kernel.__call__)
    assert list(sig.parameters) == ["self", "local_dict", "out", "backend", "stream", "names"]
    k = jx.compile("a + 1")
    with pytest.raises(TypeError, match="from 0 to 1 positional arguments but 2 were given"):
        k({"a": 1.0}, {"a": 2.0})


def test_a_kernel_and_its_call_method_give_the_same_value():
    # A kernel is called by vectorcall (its base's call); Kernel.__call__ is the same function.
    k = jx.compile("a * 2 + b")
    a, b = np.arange(3.0), np.ones(3)
    np.testing.assert_array_equal(k(a=a, b=b), jx.Kernel.__call__(k, a=a, b=b))
    np.testing.assert_array_equal(k({"a": a, "b": b}), a * 2 + b)


def test_a_subclass_of_kernel_keeps_its_own_call():
    class Logged(jx.Kernel):
        __slots__ = ("calls",)

        def __call__(self, *args, **kwargs):
            self.calls = getattr(self, "calls", 0) + 1
            return super().__call__(*args, **kwargs)

    class Plain(jx.Kernel):
        pass

    k = Logged("a + 1")
    np.testing.assert_array_equal(k(a=np.ones(2)), np.full(2, 2.0))
    assert k.calls == 1
    np.testing.assert_array_equal(Plain("a + 1")(a=np.ones(2)), np.full(2, 2.0))


def test_a_kernel_takes_device_and_local_dict_as_variable_names():
    # Only out, backend and stream are a kernel call's own keywords (local_dict is positional).
    k = jx.compile("device + local_dict")
    np.testing.assert_array_equal(k(device=np.ones(2), local_dict=np.full(2, 2.0)), np.full(2, 3.0))


def test_arrays_of_one_layout_are_each_read_from_their_own_memory():
    # NumPy arrays of a layout seen before are viewed by re-pointing that layout: each call must
    # still read its own arrays (plain, strided, reversed, 2-d) and write its own out=.
    rng = np.random.default_rng(7)
    for _ in range(3):
        for make in (lambda: rng.random(12).astype(np.float32),
                     lambda: rng.random(24).astype(np.float32)[::2],
                     lambda: rng.random(12).astype(np.float32)[::-1],
                     lambda: rng.random((3, 4)).astype(np.float32).T):
            a, b = make(), make()
            out = np.empty_like(a)
            np.testing.assert_array_equal(jx.evaluate("a * 2 + b", a=a, b=b), a * 2 + b)
            jx.evaluate("a - b", a=a, b=b, out=out)
            np.testing.assert_array_equal(out, a - b)


def test_a_read_only_array_of_a_cached_layout_is_still_refused_as_a_target():
    a = np.arange(4.0)
    jx.run("a = a + 1", a=a)  # its layout is kept
    frozen = np.arange(4.0)
    frozen.flags.writeable = False
    with pytest.raises(jx.ReadOnlyError):
        jx.run("a = a + 1", a=frozen)
    np.testing.assert_array_equal(frozen, np.arange(4.0))
