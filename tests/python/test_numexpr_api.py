"""jitexpr.numexpr.evaluate's call against real numexpr 2.14 on the same calls: its signature,
the checks of its arguments (numexpr's exception types and messages), where names come from
(local_dict, global_dict, the caller's frame, _frame_depth), re_evaluate's per-thread last
expression, and that no reference to the caller's arrays is kept. The values themselves are
test_numexpr_diff.py's business."""
import collections
import gc
import inspect
import threading
import weakref

import numpy as np
import pytest

from support import need

import jitexpr.numexpr as jne


@pytest.fixture(scope="module")
def ne():
    m = need("numexpr")
    assert m.__name__ == "numexpr" and m is not jne
    m.set_num_threads(1)
    return m


both = pytest.mark.parametrize("which", ["numexpr", "jitexpr"])


def module(which, ne):
    return ne if which == "numexpr" else jne


G = np.arange(4.0)  # a module global the frame lookup finds


def outcome(fn):
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - compared with numexpr's
        return "raises", e


def test_evaluate_is_the_extensions_function_with_numexprs_signature(ne):
    assert type(jne.evaluate).__name__ == "builtin_function_or_method"
    assert jne.evaluate.__module__ == "jitexpr.numexpr"
    ours, theirs = inspect.signature(jne.evaluate), inspect.signature(ne.evaluate)
    assert list(ours.parameters) == list(theirs.parameters)
    for name, p in theirs.parameters.items():
        assert ours.parameters[name].kind == p.kind, name
        if p.default is not inspect.Parameter.empty:
            assert ours.parameters[name].default == p.default, name


A = np.arange(6.0).reshape(2, 3)
B = np.ones((2, 3))
ENV = {"a": A, "b": B}

# Calls whose error numexpr and the drop-in raise alike: the same type and the same message.
SAME_ERROR = {
    "an unknown name": lambda m: m.evaluate("a + zz", ENV),
    "an unknown name in global_dict too": lambda m: m.evaluate("a + q", {}, {"a": 1.0}),
    "an unknown keyword": lambda m: m.evaluate("a + b", ENV, foo=1),
    "the last of two unknown keywords": lambda m: m.evaluate("a + b", ENV, foo=1, bar=2),
    "a bad optimization": lambda m: m.evaluate("a + b", ENV, optimization="x"),
    "a bad truediv": lambda m: m.evaluate("a + b", ENV, truediv="x"),
    "an unknown order": lambda m: m.evaluate("a + b", ENV, order="X"),
    "an order that is not a str": lambda m: m.evaluate("a + b", ENV, order=1),
    "an unknown casting": lambda m: m.evaluate("a + b", ENV, casting="bogus"),
    "an unknown casting with out": lambda m: m.evaluate("a + b", ENV, out=np.empty((2, 3)), casting="bogus"),
    "a casting that is not a str": lambda m: m.evaluate("a + b", ENV, casting=None),
    "ten positional arguments": lambda m: m.evaluate("a", ENV, None, None, "K", "same_kind", None, 3, False, 1),
    "local_dict twice": lambda m: m.evaluate("a", ENV, local_dict=ENV),
    "no expression": lambda m: m.evaluate(),
    "an expression that is not a str": lambda m: m.evaluate(3),
    "bytes": lambda m: m.evaluate(b"a + b", ENV),
    "a semicolon": lambda m: m.evaluate("a; b", ENV),
    "a bracket": lambda m: m.evaluate("a[0]", ENV),
    "a local_dict that is a list": lambda m: m.evaluate("a", [1]),
}


@pytest.mark.parametrize("case", sorted(SAME_ERROR))
def test_argument_errors_are_numexprs(ne, case):
    want = outcome(lambda: SAME_ERROR[case](ne))
    got = outcome(lambda: SAME_ERROR[case](jne))
    assert want[0] == "raises", want
    assert got[0] == "raises", f"{case}: numexpr raises {want[1]!r}, jitexpr.numexpr gives {got[1]!r}"
    # The same built-in type (the drop-in's may be a jitexpr.Error that is also that type).
    assert isinstance(got[1], type(want[1])) and type(got[1]).__name__ == type(want[1]).__name__, (want[1], got[1])
    assert str(got[1]) == str(want[1])


# Calls both take: the same value, dtype and memory order.
SAME_VALUE = {
    "global_dict": lambda m: m.evaluate("a + q", {"a": A}, {"q": 2.0}),
    "local_dict before global_dict": lambda m: m.evaluate("a", {"a": A}, {"a": B}),
    "a name local_dict lacks from the frame's globals": lambda m: m.evaluate("a + G", {"a": G}),
    "every argument by position": lambda m: m.evaluate("a + b", ENV, None, None, "K", "same_kind", None, 3, False),
    "ex by keyword": lambda m: m.evaluate(ex="a + b", local_dict=ENV),
    "order F": lambda m: m.evaluate("a + b", ENV, order="F"),
    "order None": lambda m: m.evaluate("a + b", ENV, order=None),
    "order in lower case": lambda m: m.evaluate("a + b", ENV, order="k"),
    "casting safe without out": lambda m: m.evaluate("a + b", ENV, casting="safe"),
    "optimization and truediv": lambda m: m.evaluate("a / b", ENV, optimization="none", truediv="auto"),
    "truediv as 1": lambda m: m.evaluate("a / b", ENV, truediv=1),
    "sanitize False": lambda m: m.evaluate("a + b", ENV, sanitize=False),
    "disable_cache": lambda m: m.evaluate("a + b", ENV, disable_cache=True),
    "a defaultdict's default": lambda m: m.evaluate("a + zz", collections.defaultdict(lambda: 2.0, a=A)),
    "a list": lambda m: m.evaluate("x * 2", {"x": [1, 2]}),
    "unsafe casting into out": lambda m: m.evaluate("a + b", ENV, out=np.empty((2, 3), np.int64), casting="unsafe"),
    # The result's layout under each order (numexpr keeps its inputs' shared axis order for 'K').
    "a Fortran-ordered array": lambda m: m.evaluate("f * 2 + 1", {"f": np.asfortranarray(A)}),
    "two transposed arrays": lambda m: m.evaluate("x - y * 3", {"x": A.T, "y": B.T}),
    "a permuted 3-d array": lambda m: m.evaluate("p * 2 + 1", {"p": np.arange(24.0).reshape(2, 3, 4).transpose(1, 2, 0)}),
    "Fortran beside C": lambda m: m.evaluate("f + a", {"f": np.asfortranarray(A), "a": A}),
    "Fortran times a NumPy scalar": lambda m: m.evaluate("f * s", {"f": np.asfortranarray(A), "s": np.float32(2)}),
    "Fortran with order C": lambda m: m.evaluate("f * 2", {"f": np.asfortranarray(A)}, order="C"),
    "Fortran with order A": lambda m: m.evaluate("f * 2", {"f": np.asfortranarray(A)}, order="A"),
    "C with order F": lambda m: m.evaluate("a * 2", ENV, order="F"),
}


@pytest.mark.parametrize("case", sorted(SAME_VALUE))
def test_calls_numexpr_takes_give_its_value(ne, case):
    want = outcome(lambda: SAME_VALUE[case](ne))
    got = outcome(lambda: SAME_VALUE[case](jne))
    assert want[0] == "ok", want
    assert got[0] == "ok", f"{case}: numexpr gives {want[1]!r}, jitexpr.numexpr raises {got[1]!r}"
    w, g = want[1], got[1]
    assert g.dtype == w.dtype and g.shape == w.shape
    assert g.flags.f_contiguous == w.flags.f_contiguous and g.flags.c_contiguous == w.flags.c_contiguous
    np.testing.assert_array_equal(g, w)


@both
def test_casting_no_into_out_of_another_dtype_is_a_type_error(ne, which):
    out = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match="float64.*float32"):
        module(which, ne).evaluate("a + b", ENV, out=out, casting="no")
    assert not out.any()


@both
def test_an_unknown_name_is_a_key_error_naming_the_first_in_sorted_order(ne, which):
    a = A  # noqa: F841 - read from this frame
    with pytest.raises(KeyError) as e:
        module(which, ne).evaluate("a + zz + yy")
    assert e.value.args == ("yy",)


@both
def test_names_come_from_the_callers_locals_before_its_globals(ne, which):
    G = np.full(4, 7.0)  # noqa: N806 - shadows the module's G
    np.testing.assert_array_equal(module(which, ne).evaluate("G * 2"), G * 2)


@both
def test_a_local_dict_replaces_the_callers_locals_not_its_globals(ne, which):
    x = np.ones(4)  # noqa: F841 - not seen: local_dict replaces the locals
    m = module(which, ne)
    with pytest.raises(KeyError):
        m.evaluate("x + G", {"y": 1.0})
    np.testing.assert_array_equal(m.evaluate("x + G", {"x": 1.0}), G + 1)


@both
def test_a_global_dict_replaces_the_callers_globals(ne, which):
    with pytest.raises(KeyError):
        module(which, ne).evaluate("G", None, {})


@both
def test_frame_depth_reaches_the_frame_above_the_caller(ne, which):
    m = module(which, ne)

    def helper():
        return m.evaluate("v * 2", _frame_depth=4)

    v = np.arange(3.0)
    np.testing.assert_array_equal(helper(), v * 2)


@both
def test_re_evaluate_takes_the_variables_of_now(ne, which):
    m = module(which, ne)
    a = np.arange(3.0)
    m.evaluate("a * 2")
    a = np.arange(3.0) + 10  # noqa: F841 - read by re_evaluate from this frame
    np.testing.assert_array_equal(m.re_evaluate(), (np.arange(3.0) + 10) * 2)


@both
def test_re_evaluate_after_validate_writes_into_validates_out(ne, which):
    m = module(which, ne)
    a = np.arange(3.0)  # noqa: F841
    out = np.zeros(3)
    assert m.validate("a + 1", out=out) is None
    assert m.re_evaluate() is out
    np.testing.assert_array_equal(out, np.arange(3.0) + 1)


@both
def test_validate_returns_the_key_error_and_keeps_the_previous_expression(ne, which):
    m = module(which, ne)
    a = np.arange(3.0)  # noqa: F841
    m.evaluate("a - 1")
    assert isinstance(m.validate("a + zz"), KeyError)
    np.testing.assert_array_equal(m.re_evaluate(), np.arange(3.0) - 1)


@both
def test_disable_cache_keeps_no_last_expression(ne, which):
    m = module(which, ne)
    a = np.arange(3.0)  # noqa: F841
    m.evaluate("a * 3")
    m.evaluate("a * 5", disable_cache=True)
    np.testing.assert_array_equal(m.re_evaluate(), np.arange(3.0) * 3)


def test_each_thread_has_its_own_last_expression():
    # (numexpr 2.14 means the same, but in a fresh thread its re_evaluate fails with a TypeError
    # of its own bookkeeping: 'NoneType' object is not iterable.)
    m = jne
    a = np.arange(3.0)  # noqa: F841
    m.evaluate("a + 100")
    seen = []

    def other():
        try:
            m.re_evaluate(local_dict={"a": 1.0})
            seen.append("ran")
        except RuntimeError:
            seen.append("none")

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == ["none"]


def test_a_call_keeps_no_reference_to_the_callers_arrays():
    a = np.arange(8.0)
    b = np.ones(8)
    out = np.empty(8)
    r = jne.evaluate("a * 2 + b")
    jne.evaluate("a * 2 + b", out=out)  # the last expression keeps out by a weak reference
    refs = [weakref.ref(x) for x in (a, b, r, out)]
    del a, b, r, out
    gc.collect()
    assert [w() for w in refs] == [None, None, None, None]


def test_re_evaluate_once_out_is_gone_makes_a_new_array():
    a = np.arange(3.0)  # noqa: F841
    out = np.zeros(3)
    jne.evaluate("a + 1", out=out)
    del out
    gc.collect()
    r = jne.re_evaluate()
    np.testing.assert_array_equal(r, np.arange(3.0) + 1)


def test_a_variable_named_like_a_constant_shadows_it_from_every_source():
    pi = np.ones(2)
    np.testing.assert_array_equal(jne.evaluate("pi * 2"), pi * 2)
    np.testing.assert_array_equal(jne.evaluate("e * 2", {"e": pi}), pi * 2)
    np.testing.assert_array_equal(jne.evaluate("e * 2", {}, {"e": pi}), pi * 2)


def test_a_module_or_function_named_like_a_constant_is_not_a_variable():
    import math as e  # noqa: F401 - a module named e: not a variable
    assert float(jne.evaluate("e * 1")) == pytest.approx(np.e)


@both
def test_a_module_level_call_with_a_global_dict_leaves_the_modules_variables(ne, which):
    # At module level the frame's locals are its globals: they are not cleared, whatever
    # global_dict is given.
    g = {"m": module(which, ne), "np": np}
    exec("a = np.ones(3)\nr = m.evaluate('a + q', None, {'q': 1.0})", g)
    assert "a" in g and "m" in g
    np.testing.assert_array_equal(g["r"], np.full(3, 2.0))
