"""pandas through jitexpr.numexpr gives what pandas through real numexpr gives: DataFrame.eval,
DataFrame.query, pd.eval and the numexpr-accelerated arithmetic of frames over 1,000,000
elements — values and dtypes, and, where numexpr raises, the same exception type (pandas reads
the type: a NotImplementedError makes it fall back to NumPy for bool arithmetic) and warnings.

Each case runs twice in this process: once with pandas pointed at the installed numexpr, once
at the drop-in (jitexpr.numexpr.install() re-points a pandas imported before, uninstall() puts
numexpr back)."""
import operator
import subprocess
import sys
import warnings

import numpy as np
import pytest

from support import need

N_BIG = 1_100_000  # over pandas' _MIN_ELEMENTS: its arithmetic goes through numexpr


@pytest.fixture(scope="module")
def pd():
    need("numexpr")
    return need("pandas")


@pytest.fixture(scope="module")
def frames(pd):
    rng = np.random.default_rng(7)
    small = pd.DataFrame({"a": rng.random(64), "b": rng.random(64) * 10, "c": rng.integers(0, 100, 64),
                          "t": rng.random(64) > 0.5})
    big = pd.DataFrame({"a": rng.random(N_BIG), "b": rng.random(N_BIG) * 10, "c": rng.integers(0, 100, N_BIG)})
    bools = pd.DataFrame({"p": rng.random(N_BIG) > 0.5, "q": rng.random(N_BIG) > 0.5})
    ones = pd.DataFrame({"A": np.ones(N_BIG)})
    return {"small": small, "big": big, "bools": bools, "ones": ones}


def outcome(fn):
    """('ok', value, warnings) or ('raises', exception, warnings)."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            kind, value = "ok", fn()
        except Exception as e:  # noqa: BLE001 - compared with numexpr's
            kind, value = "raises", e
    return kind, value, sorted({type(x.message).__name__ for x in w if "numexpr" in str(x.message)})


def through_both(pd, fn):
    import jitexpr.numexpr as jne
    from pandas.core.computation import expressions

    assert sys.modules["numexpr"] is not jne
    theirs = outcome(fn)
    jne.install()
    try:
        assert expressions.ne is jne
        ours = outcome(fn)
    finally:
        jne.uninstall()
    assert expressions.ne is sys.modules["numexpr"] and expressions.ne is not jne
    return theirs, ours


def same(pd, fn):
    theirs, ours = through_both(pd, fn)
    assert ours[0] == theirs[0], (theirs, ours)
    if theirs[0] == "raises":
        assert isinstance(ours[1], type(theirs[1])), (type(theirs[1]), type(ours[1]), ours[1])
    else:
        want, got = theirs[1], ours[1]
        if isinstance(want, pd.DataFrame):
            pd.testing.assert_frame_equal(got, want)
        elif isinstance(want, pd.Series):
            pd.testing.assert_series_equal(got, want)
        else:
            assert np.asarray(got).dtype == np.asarray(want).dtype, (want, got)
            np.testing.assert_array_equal(got, want)
    assert ours[2] == theirs[2], (theirs[2], ours[2])
    return ours


EVALS = ["a * 2 + b / (c + 1)", "a > 0.5", "(a > 0.5) & (c < 50)", "c % 7 - c // 3", "a ** 2 + sqrt(b)",
         "t | (a < 0.1)", "+t", "~t", "-c", "~c", "abs(a - 0.5)", "sin(a) * cos(b)", "where(a > 0.5, a, b)"]


@pytest.mark.parametrize("text", EVALS)
def test_dataframe_eval(pd, frames, text):
    same(pd, lambda: frames["small"].eval(text, engine="numexpr"))


@pytest.mark.parametrize("text", ["~a", "-t"])
def test_eval_of_an_operator_the_dtype_lacks_is_not_implemented(pd, frames, text):
    kind, e, _ = same(pd, lambda: frames["small"].eval(text, engine="numexpr"))
    assert kind == "raises" and isinstance(e, NotImplementedError)


def test_eval_of_a_literal_inverted(pd):
    kind, value, _ = same(pd, lambda: pd.eval("~True", engine="numexpr"))
    assert kind == "ok" and value == -2


@pytest.mark.parametrize("text", ["a > 0.5 and b < 5 or c == 3", "a < b / 10", "not (c > 10)", "c in [1, 2, 3]",
                                  "t & (a > 0.25)"])
def test_dataframe_query(pd, frames, text):
    same(pd, lambda: frames["small"].query(text, engine="numexpr"))


OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, ">": operator.gt,
       "<=": operator.le, "==": operator.eq, "**": operator.pow, "&": operator.and_, "|": operator.or_,
       "^": operator.xor}


@pytest.mark.parametrize("op", ["+", "-", "*", "/", ">", "<=", "==", "**"])
def test_arithmetic_of_big_frames(pd, frames, op):
    big = frames["big"]
    same(pd, lambda: OPS[op](big[["a", "b"]], big[["b", "a"]].values))


@pytest.mark.parametrize("op", ["+", "*", "-", "&", "|", "^"])
def test_bool_arithmetic_of_big_frames_falls_back_as_with_numexpr(pd, frames, op):
    p, q = frames["bools"]["p"], frames["bools"]["q"]
    same(pd, lambda: OPS[op](p, q))


def test_a_python_int_past_int64_with_a_big_float_frame_is_float64(pd, frames):
    kind, value, _ = same(pd, lambda: frames["ones"] + 2 ** 63)
    assert kind == "ok" and value["A"].dtype == np.float64


def test_where_of_big_frames(pd, frames):
    big = frames["big"]
    same(pd, lambda: big[["a", "b"]].where(big[["a", "b"]] > 0.5, -1.0))


def test_shapes_that_do_not_broadcast_in_numpys_words(pd):
    names = {"x": np.ones(N_BIG), "y": np.ones(3)}
    kind, e, _ = same(pd, lambda: pd.eval("x + y", engine="numexpr", local_dict=names))
    assert kind == "raises" and "operands could not be broadcast together" in str(e)


def test_object_arrays_are_a_value_error(pd):
    import jitexpr.numexpr as jne
    o = np.array([1, None], dtype=object)
    with pytest.raises(ValueError, match="unknown type object"):
        jne.evaluate("o + 1")
    real = need("numexpr")
    with pytest.raises(ValueError, match="unknown type object"):
        real.evaluate("o + 1")


def test_install_after_importing_pandas_points_pandas_at_the_drop_in():
    need("pandas")
    code = "\n".join([
        "import numpy as np, pandas as pd",
        "from pandas.core.computation import expressions, check",
        "import jitexpr.numexpr as jne",
        "jne.install()",
        "assert expressions.ne is jne and check.ne is jne and expressions.USE_NUMEXPR",
        "import numexpr, numexpr.utils, numexpr.expressions, numexpr.necompiler",
        "assert numexpr is jne and numexpr.utils is jne.utils",
        "expressions.set_test_mode(True)",
        "df = pd.DataFrame({'a': np.arange(1_100_000.0)})",
        "r = df + df",
        "assert expressions.get_test_result() == [True], 'pandas did not use numexpr'",
        "print(float(r['a'].iloc[-1]), df.eval('a * 2', engine='numexpr').iloc[-1])",
    ])
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["2199998.0", "2199998.0"]


def test_install_after_importing_pandas_without_numexpr_gives_pandas_numexpr():
    need("pandas")
    code = "\n".join([
        "import sys",
        "sys.modules['numexpr'] = None  # as if numexpr were not installed",
        "import numpy as np, pandas as pd",
        "from pandas.core.computation import expressions, check",
        "assert not check.NUMEXPR_INSTALLED and not expressions.USE_NUMEXPR",
        "del sys.modules['numexpr']",
        "import jitexpr.numexpr as jne",
        "jne.install()",
        "assert check.NUMEXPR_INSTALLED and expressions.USE_NUMEXPR and expressions.ne is jne",
        "expressions.set_test_mode(True)",
        "df = pd.DataFrame({'a': np.arange(1_100_000.0)})",
        "r = df * 2",
        "assert expressions.get_test_result() == [True], 'pandas did not use numexpr'",
        "print(df.query('a < 3', engine='numexpr')['a'].tolist())",
    ])
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[0.0, 1.0, 2.0]"


def test_use_numexpr_option_is_kept_by_install(pd):
    import jitexpr.numexpr as jne
    from pandas.core.computation import expressions
    with pd.option_context("compute.use_numexpr", False):
        jne.install()
        try:
            assert expressions.USE_NUMEXPR is False
        finally:
            jne.uninstall()
