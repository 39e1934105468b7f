"""pandas picks numexpr as its eval/query engine: with jitexpr.numexpr installed in its place,
DataFrame.eval and DataFrame.query give pandas' own answers."""
import os
import subprocess
import sys

import numpy as np
import pytest

from support import need


@pytest.fixture
def installed():
    import jitexpr.numexpr as jne
    saved = sys.modules.get("numexpr")
    jne.install()
    yield jne
    jne.uninstall()
    if saved is not None:
        sys.modules["numexpr"] = saved


def test_install_makes_import_numexpr_give_the_drop_in(installed):
    import numexpr
    assert numexpr is installed
    assert numexpr.__version__.startswith("2.14")


def frame(pd, n=1000):
    rng = np.random.default_rng(0)
    return pd.DataFrame({"a": rng.random(n), "b": rng.random(n) * 10, "c": rng.integers(0, 100, n)})


def test_dataframe_eval_with_the_numexpr_engine(installed):
    pd = need("pandas")
    df = frame(pd)
    got = df.eval("a * 2 + b / (c + 1)", engine="numexpr")
    want = df.eval("a * 2 + b / (c + 1)", engine="python")
    pd.testing.assert_series_equal(got, want)


def test_dataframe_eval_assigns_a_column(installed):
    pd = need("pandas")
    df = frame(pd)
    out = df.eval("d = a * b - c", engine="numexpr")
    np.testing.assert_allclose(out["d"].to_numpy(), df["a"] * df["b"] - df["c"])


def test_dataframe_query_with_the_numexpr_engine(installed):
    pd = need("pandas")
    df = frame(pd)
    got = df.query("a > 0.5 and b < 5 or c == 3", engine="numexpr")
    want = df.query("a > 0.5 and b < 5 or c == 3", engine="python")
    pd.testing.assert_frame_equal(got, want)


def test_dataframe_query_with_a_local_variable(installed):
    pd = need("pandas")
    df = frame(pd)
    limit = 0.25  # noqa: F841 - read by the query through @limit
    got = df.query("a < @limit", engine="numexpr")
    pd.testing.assert_frame_equal(got, df[df["a"] < 0.25])


def test_pandas_arithmetic_through_numexpr_on_large_frames(installed):
    pd = need("pandas")
    from pandas.core.computation import expressions
    df = frame(pd, 200_000)
    expressions.set_use_numexpr(True)
    try:
        got = df["a"] * df["b"] + df["b"]
    finally:
        expressions.set_use_numexpr(expressions.USE_NUMEXPR)
    np.testing.assert_allclose(got.to_numpy(), df["a"].to_numpy() * df["b"].to_numpy() + df["b"].to_numpy())


def test_the_environment_variable_installs_the_drop_in_at_start():
    need("pandas")
    import site

    import jitexpr
    where = os.path.dirname(os.path.dirname(os.path.abspath(jitexpr.__file__)))
    sites = [os.path.abspath(p) for p in site.getsitepackages() + [site.getusersitepackages()]]
    if where not in sites or not os.path.exists(os.path.join(where, "jitexpr-numexpr.pth")):
        pytest.skip("jitexpr runs from a source tree here; the .pth file comes with pip install")
    code = ("import sys, numexpr, pandas as pd; "
            "assert numexpr.__name__ == 'jitexpr.numexpr', numexpr.__name__; "
            "df = pd.DataFrame({'a': [1.0, 2.0, 3.0]}); "
            "print(df.eval('a * 2', engine='numexpr').tolist())")
    env = dict(os.environ, JITEXPR_NUMEXPR="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[2.0, 4.0, 6.0]"
