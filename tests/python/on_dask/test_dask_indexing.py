"""Indexing in jitexpr.dask programs: never a wrong answer, never an InternalError (issue 34).
Graphs are built only (nothing is computed): a refusal happens when the graph is made."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import jitexpr as jx  # noqa: E402
import jitexpr.dask as jxd  # noqa: E402


def a10():
    return da.arange(10.0, chunks=5)


def refused(call, text, under):
    """`call` raises jitexpr.ValueError with the caret under `under` (the index) of `text`."""
    with pytest.raises(jx.ValueError) as e:
        call()
    assert e.value.source == text
    b = text.index(under)
    assert e.value.span == (b, b + len(under))
    assert "^" * len(under) in str(e.value)
    return e.value


@pytest.mark.parametrize("text, under", [
    ("a[::-1]", "[::-1]"), ("a[2:]", "[2:]"), ("a[::2]", "[::2]"), ("a[a > 5]", "[a > 5]"), ("a[0]", "[0]"),
    ("a[None, :] * 2", "[None, :]"), ("(a * 2)[1:]", "[1:]"), ("a + sum(a)[None]", "[None]"),
])
def test_an_index_in_evaluate_is_refused_with_the_caret_under_it(text, under):
    refused(lambda: jxd.evaluate(text, a=a10()), text, under)


def test_an_index_inside_a_reduction_is_refused():
    refused(lambda: jxd.evaluate("sum(a[::-1] * a)", a=a10()), "sum(a[::-1] * a)", "[::-1]")
    refused(lambda: jxd.sum("a[::-1] * a", a=a10()), "a[::-1] * a", "[::-1]")
    refused(lambda: jxd.std("a - mean(a[1:])", a=a10()), "a - mean(a[1:])", "[1:]")


def test_a_column_slice_of_a_matrix_is_refused():
    m = da.ones((4, 6), chunks=(4, 3))
    refused(lambda: jxd.evaluate("m[:, ::-1]", m=m), "m[:, ::-1]", "[:, ::-1]")


def test_an_index_in_a_two_result_statement_is_refused():
    text = "m, e2 = frexp(a[a > 1])"
    refused(lambda: jxd.run(text, a=a10()), text, "[a > 1]")


def test_an_index_in_a_later_statement_of_run_is_refused():
    text = "t = a * 2; u = t[1:] - t[:-1]"
    refused(lambda: jxd.run(text, a=a10()), text, "[1:]")


def test_the_checkers_own_index_errors_come_first():
    with pytest.raises(jx.IndexError):
        jxd.evaluate("a[10]", a=a10())


def test_an_index_in_eval_frame_is_refused():
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    df = dd.from_pandas(pd.DataFrame({"a": np.arange(6.0)}), npartitions=2)
    refused(lambda: jxd.eval_frame(df, "c = a[::-1]"), "c = a[::-1]", "[::-1]")


def test_a_program_without_index_still_builds():
    assert jxd.evaluate("a * 2", a=a10()).shape == (10,)
