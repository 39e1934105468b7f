"""Statements of two results (``m, e = frexp(x)``, ``f, i = modf(x)``, ``q, r = divmod(a, b)``)
in jitexpr.dask graphs, against NumPy 2: both results come from one task per block (one kernel
computing both), each picked from it; with reductions around them too; and in eval_frame."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import jitexpr as jx  # noqa: E402
import jitexpr.dask as jxd  # noqa: E402
from jitexpr.dask._tasks import Program  # noqa: E402

RNG = np.random.default_rng(16)
XN = RNG.standard_normal((30, 24)) * 40
YN = RNG.uniform(0.5, 4.0, 24)


def arrays():
    return da.from_array(XN, chunks=(10, 8)), da.from_array(YN, chunks=8)


def programs_in(*xs):
    """The Program tasks of the graph of `xs` together (each key once)."""
    graph = {}
    for x in xs:
        graph.update(dict(x.__dask_graph__()))
    found = []

    def walk(t):
        if isinstance(t, Program):
            found.append(t)
            return
        if isinstance(t, (tuple, list)):
            for e in t:
                walk(e)
            return
        for attr in ("func", "args"):
            v = getattr(t, attr, None)
            if v is not None and v is not t:
                walk(v)
    for v in graph.values():
        walk(v)
    return found


def test_frexp_gives_numpys_mantissa_and_int32_exponent(compute):
    x, _ = arrays()
    r = jxd.run("m, e = frexp(x)", x=x)
    assert r["m"].dtype == np.float64 and r["e"].dtype == np.int32
    assert r["m"].shape == r["e"].shape == XN.shape
    m, e = compute(r["m"], r["e"])
    wm, we = np.frexp(XN)
    np.testing.assert_array_equal(m, wm)
    np.testing.assert_array_equal(e, we)
    assert e.dtype == we.dtype


def test_modf_and_divmod_equal_numpy_with_broadcasting(compute):
    x, y = arrays()
    r = jxd.run("f, i = modf(x); q, s = divmod(x, y)", x=x, y=y)
    f, i, q, s = compute(r["f"], r["i"], r["q"], r["s"])
    wf, wi = np.modf(XN)
    wq, ws = np.divmod(XN, YN)
    for got, want in ((f, wf), (i, wi), (q, wq), (s, ws)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_integer_divmod_equals_numpy(compute):
    a = da.from_array(np.arange(-20, 20, dtype=np.int64), chunks=15)
    r = jxd.run("q, s = divmod(a, 7)", a=a)
    q, s = compute(r["q"], r["s"])
    wq, ws = np.divmod(np.arange(-20, 20, dtype=np.int64), 7)
    assert q.dtype == wq.dtype and s.dtype == ws.dtype
    np.testing.assert_array_equal(q, wq)
    np.testing.assert_array_equal(s, ws)


def test_both_results_come_from_one_task_per_block():
    x, _ = arrays()
    r = jxd.run("m, e = frexp(x)", x=x)
    progs = programs_in(r["m"], r["e"])
    assert len(progs) == x.npartitions  # not one task per result per block
    assert all(p.outputs == ("m", "e") for p in progs)


def test_a_two_result_statement_among_reductions_is_one_task_per_block(compute):
    x, _ = arrays()
    r = jxd.run("m, e = frexp(x - mean(x)); s = sum(m * 2.0 ** e)", x=x)
    m, e, s = compute(r["m"], r["e"], r["s"])
    wm, we = np.frexp(XN - XN.mean())
    np.testing.assert_allclose(m, wm, rtol=1e-12)
    np.testing.assert_array_equal(e, we)
    np.testing.assert_allclose(s, np.sum(XN - XN.mean()), atol=1e-9)
    frexp_tasks = [p for p in programs_in(r["m"], r["e"]) if p.outputs == ("m", "e")]
    assert len(frexp_tasks) == x.npartitions


def test_a_reduction_of_one_result_inside_a_program(compute):
    x, _ = arrays()
    got = compute(jxd.evaluate("m, e = frexp(x); max(e, axis=0)", x=x))
    np.testing.assert_array_equal(got, np.frexp(XN)[1].max(axis=0))


def test_a_program_ending_in_a_two_result_statement_has_its_last_targets_value(compute):
    x, _ = arrays()
    r = jxd.evaluate("f, i = modf(x)", x=x)
    assert r.dtype == np.float64
    np.testing.assert_array_equal(compute(r), np.modf(XN)[1])
    s = jxd.evaluate("t = x * 0.5; f, i = modf(t - sum(t) / 720)", x=x)
    np.testing.assert_allclose(compute(s), np.modf(XN * 0.5 - np.sum(XN * 0.5) / 720)[1])


def test_one_target_for_two_results_fails_at_graph_build_with_the_caret():
    x, _ = arrays()
    with pytest.raises(jx.TypeError, match="frexp\\(\\) gives 2 values") as e:
        jxd.evaluate("frexp(x) + 1", x=x)
    assert "^" in str(e.value)
    with pytest.raises(jx.TypeError, match="gives 2 values"):
        jxd.run("m = sum(x); q, s, t = divmod(x, m)", x=x)


def test_eval_frame_adds_both_results_as_columns(compute):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    pdf = pd.DataFrame({"a": np.linspace(-30, 30, 40), "b": np.arange(40) % 9 - 4})
    df = dd.from_pandas(pdf, npartitions=3)
    out = jxd.eval_frame(df, "m, e = frexp(a); q, r = divmod(b, 3); s = m * q")
    assert out._meta.e.dtype == np.int32 and out._meta.q.dtype == np.int64
    got = compute(out)
    wm, we = np.frexp(pdf.a.to_numpy())
    wq, wr = np.divmod(pdf.b.to_numpy(), 3)
    assert list(got.columns) == ["a", "b", "m", "e", "q", "r", "s"]
    np.testing.assert_array_equal(got.m.to_numpy(), wm)
    np.testing.assert_array_equal(got.e.to_numpy(), we)
    np.testing.assert_array_equal(got.q.to_numpy(), wq)
    np.testing.assert_array_equal(got.r.to_numpy(), wr)
    np.testing.assert_array_equal(got.s.to_numpy(), wm * wq)


def test_eval_frame_propagates_nulls_to_both_results(compute):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    dd = pytest.importorskip("dask.dataframe")
    a = [None if i % 5 == 1 else i * 1.5 - 20 for i in range(40)]
    pdf = pd.DataFrame({"a": pd.array(a, dtype="double[pyarrow]")})
    got = compute(jxd.eval_frame(dd.from_pandas(pdf, npartitions=3), "f, i = modf(a)"))
    assert isinstance(got.f.dtype, pd.ArrowDtype) and isinstance(got.i.dtype, pd.ArrowDtype)
    assert got.f.isna().tolist() == pdf.a.isna().tolist() == got.i.isna().tolist()
    valid = pdf.a.dropna().to_numpy(float)
    wf, wi = np.modf(valid)
    np.testing.assert_array_equal(got.f.dropna().to_numpy(float), wf)
    np.testing.assert_array_equal(got.i.dropna().to_numpy(float), wi)
