"""jitexpr.numexpr to the letter of numexpr 2.14: the expression objects (E, the nodes), NumExpr
and disassemble compared with real numexpr's on the same expressions, numexpr.utils and the
threading environment, the sanitizer, and the exception types numexpr raises. (numexpr's own
suite is run by run_numexpr_suite.py; this file holds what it shows, one behaviour a test.)"""
import os
import subprocess
import sys

import numpy as np
import pytest

from support import need

import jitexpr
import jitexpr.numexpr as jne


@pytest.fixture(scope="module")
def ne():
    m = need("numexpr")
    assert m is not jne
    return m


DISASSEMBLED = [
    ("x * x + 2", [("x", np.double)]),
    ("sum(x**2+2, axis=None)", [("x", np.double)]),
    ("prod(x**2+2, axis=2)", [("x", np.double)]),
    ("where(m, a, -1)", [("m", bool), ("a", float)]),

    ("a > b", [("a", np.int32), ("b", np.double)]),
    ("a", [("a", np.int64)]),
    ("(a - 10).real", [("a", complex)]),
]
# Where two temporaries of a kind are freed at the same instruction, numexpr's choice between
# them follows Python's set order of the objects (their addresses): the drop-in takes the first
# operand's. Computed alike, not disassembled alike.
COMPUTED = DISASSEMBLED + [("(a + 1)*(a - 1)", [("a", np.int32)]),
                           ("2*a + 3*b*c", [("a", np.double), ("b", np.double), ("c", np.double)]),
                           ("sin(a) + b / 2.0", [("a", np.double), ("b", np.double)]),
                           ("~(a < 3) & (b != 0)", [("a", np.int64), ("b", np.int64)])]


@pytest.mark.parametrize("text,signature", DISASSEMBLED)
def test_disassemble_is_numexprs(ne, text, signature):
    ours, theirs = jne.NumExpr(text, signature), ne.NumExpr(text, signature)
    assert jne.disassemble(ours) == [list(r) for r in ne.disassemble(theirs)]
    assert ours.constants == theirs.constants
    assert ours.signature == theirs.signature and ours.input_names == theirs.input_names


@pytest.mark.parametrize("text,signature", COMPUTED)
def test_a_compiled_expression_computes_what_numexprs_does(ne, text, signature):
    rng = np.random.default_rng(3)
    args = []
    for _, t in signature:
        dtype = {bool: np.bool_, float: np.float32, complex: np.complex128}.get(t, t)
        args.append((rng.random((2, 3, 4)) * 10).astype(dtype))
    want = ne.NumExpr(text, signature)(*args)
    got = jne.NumExpr(text, signature)(*args)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_expression_objects_build_a_tree_and_compile():
    E = jne.E
    sig = [("a", np.double), ("b", np.double), ("c", np.double)]
    f = jne.NumExpr(2.0 * E.a + 3.0 * E.b * E.c, signature=sig)
    np.testing.assert_array_equal(f(np.array([1.0, 2, 3]), np.array([4.0, 5, 6]), np.array([7.0, 8, 9])),
                                  [86.0, 124.0, 168.0])


def test_constants_fold_when_the_tree_is_built():
    c = jne.expressions.ConstantNode(2) * 3 + 1
    assert isinstance(c, jne.expressions.ConstantNode) and c.value == 7 and c.astKind == "int"


def test_python_boolean_operators_on_expression_objects_are_a_type_error():
    with pytest.raises(TypeError, match="bitwise counterparts"):
        bool(jne.E.a > 1)


def test_numexpr_of_a_text_never_evaluates_python():
    with pytest.raises(SyntaxError):
        jne.NumExpr("(lambda: 1)()", sanitize=False)


def test_a_call_casts_its_arguments_to_the_signature_safely():
    f = jne.NumExpr("a * 2", [("a", np.int32)])
    with pytest.raises(TypeError, match="Cannot cast"):
        f(np.ones(3))


# ---- the language: .real and .imag ----------------------------------------------------------

def test_real_and_imag_attributes_in_both_apis():
    z = np.array([1 + 2j, 3 - 4j])
    np.testing.assert_array_equal(jitexpr.evaluate("(z - 1).real + z.imag", z=z), (z - 1).real + z.imag)
    np.testing.assert_array_equal(jne.evaluate("z.imag * 2"), z.imag * 2)


def test_an_unknown_attribute_is_a_syntax_error_with_a_caret():
    with pytest.raises(jitexpr.ParseError) as e:
        jitexpr.evaluate("a.size + 1", a=np.ones(2))
    assert "unknown attribute '.size'" in str(e.value)
    assert e.value.span == (2, 6)


# ---- exception types ------------------------------------------------------------------------

SAME_TYPE = {
    "~ on floats": ("~a", {"a": np.ones(3)}),
    "unary - on bool": ("-t", {"t": np.ones(3, bool)}),
    "& on floats": ("a & a", {"a": np.ones(3)}),
    "a wrong number of arguments": ("where(a > 1, a)", {"a": np.ones(3)}),
    "an object array": ("o + 1", {"o": np.array([1, None], dtype=object)}),
    "Python's and": ("(a > 1) and (a < 3)", {"a": np.ones(3)}),
    "a negative axis": ("sum(a, axis=-1)", {"a": np.ones(3)}),
    "shapes that do not broadcast": ("a + b", {"a": np.ones(3), "b": np.ones(4)}),
    "literal division by zero": ("1/0", {}),
    "a dunder name": ("__class__", {}),
    "an attribute": ("a.sum()", {"a": np.ones(3)}),
    "a str constant added to bytes": ("s + 'a'", {"s": np.array([b"ab", b"c"])}),
    "bytes added to a number": ("s + 1", {"s": np.array([b"ab", b"c"])}),
    "a program that is one str constant": ("'abc'", {}),
    "a program that is one bytes constant": ("b'abc'", {}),
}


def test_a_str_constant_that_is_not_ascii_is_a_value_error_as_numexprs_encoding(ne):
    # numexpr encodes a str constant as ASCII: its UnicodeEncodeError (a ValueError); the
    # drop-in raised TypeError.
    s = np.array([b"ab", b"c"])
    with pytest.raises(UnicodeEncodeError):
        ne.evaluate("s == '\u00e9'", local_dict={"s": s})
    with pytest.raises(ValueError, match="'ascii' codec can't encode") as e:
        jne.evaluate("s == '\u00e9'", local_dict={"s": s})
    assert isinstance(e.value, jitexpr.ValueError)


@pytest.mark.parametrize("case", SAME_TYPE)
def test_the_exception_type_is_numexprs(ne, case):
    text, names = SAME_TYPE[case]
    with pytest.raises(Exception) as theirs:
        ne.evaluate(text, local_dict=names)
    with pytest.raises(Exception) as ours:
        jne.evaluate(text, local_dict=names)
    assert isinstance(ours.value, type(theirs.value)), (theirs.value, ours.value)
    assert isinstance(ours.value, jitexpr.Error) or type(ours.value) in (KeyError, SyntaxError), ours.value


def test_the_drop_ins_not_implemented_is_no_type_error():
    # pandas catches TypeError first and NotImplementedError apart: the two must not overlap.
    with pytest.raises(NotImplementedError) as e:
        jne.evaluate("~a", local_dict={"a": np.ones(3)})
    assert not isinstance(e.value, TypeError) and "^" in str(e.value)


def test_jitexpr_evaluate_keeps_numpys_type_error():
    with pytest.raises(jitexpr.TypeError):
        jitexpr.evaluate("~a", a=np.ones(3))


def test_broadcast_errors_are_in_numpys_words(ne):
    with pytest.raises(ValueError, match=r"operands could not be broadcast together with shapes \(3,\) \(4,\)"):
        jne.evaluate("a + b", local_dict={"a": np.ones(3), "b": np.ones(4)})


def test_an_int_past_int32_for_an_int32_array_is_an_overflow_error():
    for f in (lambda: jitexpr.evaluate("a + b", a=np.arange(3, dtype=np.int32), b=2 ** 40),
              lambda: jitexpr.evaluate("a + 2**40", a=np.arange(3, dtype=np.int32))):
        with pytest.raises(OverflowError) as e:
            f()
        assert isinstance(e.value, jitexpr.ValueError)
    with pytest.raises(OverflowError):
        np.arange(3, dtype=np.int32) + 2 ** 40


def test_wrong_arity_is_a_type_error_in_both_apis():
    for f in (lambda: jitexpr.evaluate("log(a, 2)", a=np.ones(2)),
              lambda: jne.evaluate("where(a > 1, a)", local_dict={"a": np.ones(2)})):
        with pytest.raises(jitexpr.TypeError, match="takes"):
            f()


def test_a_float_result_for_an_int_out_names_out_and_the_casting():
    with pytest.raises(TypeError, match=r"in out= \(int64 \(3,\)\).*casting='unsafe'"):
        jne.evaluate("a * 1.5", local_dict={"a": np.ones(3)}, out=np.zeros(3, dtype=np.int64))
    out = np.zeros(3, dtype=np.int64)
    jne.evaluate("a * 1.5", local_dict={"a": np.ones(3)}, out=out, casting="unsafe")
    np.testing.assert_array_equal(out, [1, 1, 1])


def test_literal_division_by_zero_is_pythons_and_arrays_give_inf():
    with pytest.raises(ZeroDivisionError) as e:
        jitexpr.evaluate("1/0")
    assert isinstance(e.value, jitexpr.ValueError) and "^^^" in str(e.value)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(jitexpr.evaluate("a / 0", a=np.ones(2)), [np.inf, np.inf])


# ---- results numexpr's suite asserts ------------------------------------------------------

def test_a_constant_integer_is_int32_as_numexprs(ne):
    for text in ("2", "2**40", "~True", "1 + 2.5"):
        want, got = ne.evaluate(text), jne.evaluate(text)
        assert got.dtype == want.dtype and got == want, text


def test_uint32_computes_as_int64(ne):
    a = np.uint32(42)  # noqa: F841 - read by evaluate
    assert jne.evaluate("a").dtype == ne.evaluate("a").dtype == np.int64


def test_unary_plus_of_a_bool_is_the_bool():
    t = np.array([True, False])
    np.testing.assert_array_equal(jne.evaluate("+t + (+t)", local_dict={"t": t}), t)


def test_fields_of_a_record_array_are_read():
    r = np.rec.fromarrays([np.arange(5, dtype=np.int32), np.arange(5.0)])
    f1 = r["f1"]  # noqa: F841 - read by evaluate
    np.testing.assert_array_equal(jne.evaluate("f1 < 2"), [True, True, False, False, False])


# ---- the sanitizer ----------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["a*2.e-5", "a*2E+5", "1.5j + a", "3.j", "c.real", "c. imag", "1.2e3+4.5e6j"])
def test_the_sanitizer_takes_numbers_and_real_and_imag(text):
    jne.evaluate(text, local_dict={"a": 3.0, "c": 2.5 + 1.5j})


def test_sanitize_false_lets_the_parser_judge():
    with pytest.raises(SyntaxError):
        jne.evaluate("import os;", sanitize=False)
    with pytest.raises(ValueError, match="forbidden"):
        jne.evaluate("import os;")


# ---- utils and threads ---------------------------------------------------------------------

def test_utils_is_a_module_of_the_drop_in():
    import jitexpr.numexpr.utils as u
    assert u.set_vml_num_threads(3) is None and u.get_vml_num_threads() is None
    assert u.detect_number_of_cores() == jne.detect_number_of_cores() >= 1


def run_with(env, code):
    full = {k: v for k, v in os.environ.items() if not k.startswith(("NUMEXPR_", "OMP_NUM"))}
    full.update(env)
    r = subprocess.run([sys.executable, "-c", "import jitexpr.numexpr as ne\n" + code], env=full,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_numexpr_max_threads_is_read_at_import():
    assert run_with({"NUMEXPR_MAX_THREADS": "4"}, "print(ne.MAX_THREADS, ne.nthreads)") == ["4", "4"]


@pytest.mark.parametrize("env,want", [({"NUMEXPR_NUM_THREADS": "3", "OMP_NUM_THREADS": "5"}, "3"),
                                      ({"OMP_NUM_THREADS": "5"}, "5"),
                                      ({"OMP_NUM_THREADS": ""}, None),
                                      ({"NUMEXPR_MAX_THREADS": ""}, None)])
def test_thread_variables_as_numexpr_reads_them(env, want):
    got = run_with(env, "print(ne.nthreads, ne.get_num_threads(), min(ne.detect_number_of_cores(), 16))")
    assert got[0] == got[1] == (want or got[2])


def test_more_threads_than_max_threads_is_a_value_error():
    with pytest.raises(ValueError, match="MAX_THREADS"):
        jne.set_num_threads(jne.MAX_THREADS + 1)


@pytest.mark.parametrize("text", ["max(a, 1)", "min(a, 0)", "max(a,1)", "min(a , 1)", "max(2 * a - 1, 1)"])
def test_a_second_positional_argument_of_min_and_max_is_the_axis(ne, text):
    # numexpr's min(var, axis=None): min(a, 1) reduces along axis 1, it is not minimum(a, 1).
    a = np.arange(12.0).reshape(3, 4)
    want = ne.evaluate(text, local_dict={"a": a})
    got = jne.evaluate(text, local_dict={"a": a})
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("text", ["a\n+ a", "a;a", "", "   ", "\n", "#x"])
def test_two_statements_or_none_are_a_syntax_error(ne, text):
    a = np.arange(3.0)
    with pytest.raises(SyntaxError):
        ne.evaluate(text, local_dict={"a": a}, sanitize=False)
    with pytest.raises(SyntaxError):
        jne.evaluate(text, local_dict={"a": a}, sanitize=False)


def test_out_of_more_than_one_element_for_a_full_reduction_is_numexprs_value_error(ne):
    a = np.arange(6.0)
    for m in (ne, jne):
        out = np.zeros(6)
        with pytest.raises(ValueError, match="size 1 for a full reduction"):
            m.evaluate("sum(a)", local_dict={"a": a}, out=out)
        assert not out.any()
        one = np.zeros(1)
        m.evaluate("sum(a)", local_dict={"a": a}, out=one)
        assert one[0] == 15.0


@pytest.mark.parametrize("value", [None, {"a": 1}, len], ids=["none", "dict", "function"])
def test_a_variable_numpy_makes_an_object_array_of_is_numexprs_value_error(ne, value):
    for m in (ne, jne):
        with pytest.raises(ValueError, match="unknown type object"):
            m.evaluate("a * 2", local_dict={"a": value})


def test_long_double_computes_in_float64_as_numexprs(ne):
    for v in (np.longdouble(1.5), np.array([1.5, 2.5], np.longdouble), np.array([1 + 2j], np.clongdouble)):
        want = ne.evaluate("a * 2", local_dict={"a": v})
        got = jne.evaluate("a * 2", local_dict={"a": v})
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("value", [2.0, "2", None])
def test_set_num_threads_takes_an_int_as_numexprs(ne, value):
    for m in (ne, jne):
        before = m.get_num_threads() if hasattr(m, "get_num_threads") else m.utils.get_num_threads()
        with pytest.raises(TypeError):
            m.set_num_threads(value)
        m.set_num_threads(before)
