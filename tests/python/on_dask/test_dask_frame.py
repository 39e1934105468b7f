"""jitexpr.dask.eval_frame over dask.dataframe: derived columns and masks, nulls through Arrow,
meta from the checker."""
import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
dd = pytest.importorskip("dask.dataframe")
import jitexpr as jx  # noqa: E402
import jitexpr.dask as jxd  # noqa: E402

N = 40


def numpy_frame():
    pdf = pd.DataFrame({"a": np.linspace(-3, 3, N), "b": np.arange(N) % 7, "name": ["r"] * N})
    return pdf, dd.from_pandas(pdf, npartitions=3)


def arrow_frame():
    a = [None if i % 5 == 1 else i * 0.5 for i in range(N)]
    b = [None if i % 7 == 3 else i for i in range(N)]
    pdf = pd.DataFrame({"a": pd.array(a, dtype="double[pyarrow]"), "b": pd.array(b, dtype="int64[pyarrow]")})
    return pdf, dd.from_pandas(pdf, npartitions=3)


def test_derived_columns_equal_pandas(compute):
    pdf, df = numpy_frame()
    out = compute(jxd.eval_frame(df, "c = a * 2 + b; d = where(c > 1, sqrt(c), 0)"))
    c = pdf.a * 2 + pdf.b
    np.testing.assert_allclose(out.c.to_numpy(), c.to_numpy())
    np.testing.assert_allclose(out.d.to_numpy(), np.where(c > 1, np.sqrt(np.abs(c)), 0))
    assert list(out.columns) == ["a", "b", "name", "c", "d"]
    assert (out.index == pdf.index).all()


def test_mask_selects_rows(compute):
    pdf, df = numpy_frame()
    mask = jxd.eval_frame(df, "a > 2 * b - 5")
    assert mask._meta.dtype == np.bool_
    got = compute(df[mask])
    pd.testing.assert_frame_equal(got[["a", "b"]], pdf[pdf.a > 2 * pdf.b - 5][["a", "b"]])


def test_scalars_come_from_outside_the_frame(compute):
    pdf, df = numpy_frame()
    k = 0.25
    out = compute(jxd.eval_frame(df, "c = a * k"))
    np.testing.assert_allclose(out.c.to_numpy(), pdf.a.to_numpy() * k)


def test_nulls_propagate_through_arrow(compute):
    pdf, df = arrow_frame()
    out = compute(jxd.eval_frame(df, "c = a * 2 + b; m = c > 10"))
    assert isinstance(out.c.dtype, pd.ArrowDtype) and out.c.dtype.pyarrow_dtype == pa.float64()
    assert out.m.dtype.pyarrow_dtype == pa.bool_()
    ref = pdf.a * 2 + pdf.b
    assert out.c.isna().tolist() == ref.isna().tolist()
    np.testing.assert_allclose(out.c.dropna().to_numpy(float), ref.dropna().to_numpy(float))
    assert out.m.isna().tolist() == ref.isna().tolist()


def test_pandas_nullable_columns_stay_nullable(compute):
    pdf = pd.DataFrame({"a": pd.array([1.5, None, 3.0, 4.0] * 5, dtype="Float64"),
                        "b": pd.array([1, 2, None, 4] * 5, dtype="Int64")})
    out = compute(jxd.eval_frame(dd.from_pandas(pdf, npartitions=2), "c = a * 2 + b"))
    assert out.c.dtype == pd.Float64Dtype()
    pd.testing.assert_series_equal(out.c, pdf.a * 2 + pdf.b, check_names=False)


def test_meta_comes_from_the_checker_without_running(client):
    pdf, df = arrow_frame()
    before = jx.stats("cpu")
    r = jxd.eval_frame(df, "c = a * 2 + b; d = c > 1; e = int32(b) // 3")
    assert dict(r._meta.dtypes)["c"] == pd.ArrowDtype(pa.float64())
    assert dict(r._meta.dtypes)["e"] == pd.ArrowDtype(pa.int32())
    assert jx.stats("cpu")["misses"] == before["misses"]  # nothing evaluated here


def test_bad_programs_fail_at_graph_build():
    pdf, df = numpy_frame()
    with pytest.raises(jx.NameError, match="did you mean 'a'"):
        jxd.eval_frame(df, "c = aa * 2")
    with pytest.raises(jx.TypeError):
        jxd.eval_frame(df, "c = name * 2")
    with pytest.raises(jx.ArgumentError, match="reduces over rows"):
        jxd.eval_frame(df, "c = a - mean(a)")
