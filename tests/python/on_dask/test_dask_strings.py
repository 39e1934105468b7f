"""Strings through jitexpr.dask (issue 32): Dask arrays of NumPy S and U chunks (each chunk a
NumPy array, predicates and reductions combined across chunks as for numbers) and Dask frames
with pandas' pyarrow-backed string columns (each partition's column read whole with its own
offsets; nulls kept), against NumPy and pandas on the cluster."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import jitexpr as jx  # noqa: E402
import jitexpr.dask as jxd  # noqa: E402

CITIES = ["oslo", "bergen", "troms\u00f8", "", "\u00e5lesund", "os"]


def test_u_and_s_chunks_equal_numpy(compute):
    u = np.array(CITIES * 500)
    s = np.char.encode(u, "utf-8")
    x = np.arange(u.size, dtype=np.float64)
    du, ds, dx = da.from_array(u, chunks=701), da.from_array(s, chunks=1000), da.from_array(x, chunks=701)
    got = compute(jxd.evaluate("startswith(u, 'o') | contains(s, b'\\xc3')", u=du, s=ds))
    np.testing.assert_array_equal(got, np.strings.startswith(u, "o") | (np.strings.find(s, b"\xc3") >= 0))
    total = jxd.evaluate("sum(where(u == 'oslo', x, 0))", u=du, x=dx)
    assert total.dtype == np.float64 and total.shape == ()  # from the checker, nothing computed
    assert compute(total) == np.sum(np.where(u == "oslo", x, 0))
    lengths = jxd.evaluate("str_len(u) + find(s, b'o')", u=du, s=ds)
    assert lengths.dtype == np.int64
    np.testing.assert_array_equal(compute(lengths), np.strings.str_len(u) + np.strings.find(s, b"o"))


def test_string_columns_of_a_frame(compute):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    dd = pytest.importorskip("dask.dataframe")
    city = [None if i % 9 == 4 else CITIES[i % len(CITIES)] for i in range(60)]
    pdf = pd.DataFrame({"city": pd.array(city, dtype="string[pyarrow]"), "n": np.arange(60.0)})
    df = dd.from_pandas(pdf, npartitions=4)
    out = compute(jxd.eval_frame(df, "c = where(startswith(city, 'o'), n, -n)"))
    want = [None if c is None else (n if c.startswith("o") else -n) for c, n in zip(city, pdf.n)]
    assert [None if pd.isna(v) else v for v in out.c.tolist()] == want
    mask = compute(jxd.eval_frame(df, "contains(city, '\u00f8') | (city == 'bergen')"))
    assert [None if pd.isna(v) else bool(v) for v in mask.tolist()] == \
        [None if c is None else ("\u00f8" in c or c == "bergen") for c in city]
