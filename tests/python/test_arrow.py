"""Arrow columns in and out through the Arrow PyCapsule interface (pyarrow, Polars, DuckDB):
values shared, nulls propagated by elementwise programs and skipped by whole reductions."""
import numpy as np
import pytest

from support import need

import jitexpr as jx


@pytest.fixture
def pa():
    return need("pyarrow")


def test_a_pyarrow_array_in_gives_a_pyarrow_array_with_the_nulls(pa):
    a = pa.array([1.0, None, 3.0, 4.0])
    b = pa.array([10.0, 20.0, None, 40.0])
    r = jx.evaluate("a * 2 + b", a=a, b=b)
    assert isinstance(r, pa.Array)
    assert r.to_pylist() == [12.0, None, None, 48.0]
    assert r.null_count == 2


def test_values_are_shared_not_copied(pa):
    a = pa.array(np.arange(1000, dtype=np.float64))
    r = jx.evaluate("a", a=a)  # the program `a`: a copy (the result must own its memory)
    assert r.to_pylist()[:3] == [0.0, 1.0, 2.0]
    r2 = jx.evaluate("a * 2", a=a)
    back = pa.array(r2)  # exporting again hands out the same buffer
    assert back.buffers()[1].address == r2.buffers()[1].address


def test_a_reduction_skips_nulls_as_arrow_compute_does(pa):
    pc = need("pyarrow.compute")
    a = pa.array([1.0, None, 3.0, 4.0])
    b = pa.array([2.0, 5.0, None, 1.0])
    assert jx.evaluate("sum(a)", a=a) == pc.sum(a).as_py()
    assert jx.evaluate("mean(a)", a=a) == pytest.approx(pc.mean(a).as_py())
    assert jx.evaluate("max(a)", a=a) == pc.max(a).as_py()
    assert jx.evaluate("sum(a * b)", a=a, b=b) == pc.sum(pc.multiply(a, b)).as_py()


def test_a_reduction_over_only_nulls_is_none(pa):
    assert jx.evaluate("sum(a)", a=pa.array([None, None], type=pa.float64())) is None


def test_a_reduction_inside_a_larger_program_over_nulls_is_refused(pa):
    with pytest.raises(jx.ArgumentError):
        jx.evaluate("a - mean(a)", a=pa.array([1.0, None, 3.0]))


def test_chunked_arrays_are_joined(pa):
    a = pa.chunked_array([[1, 2], [None, 4]], type=pa.int64())
    r = jx.evaluate("a * 10", a=a)
    assert r.to_pylist() == [10, 20, None, 40]


def test_arrow_and_numpy_and_scalars_mix(pa):
    a = pa.array([1.0, None, 3.0])
    w = np.array([1.0, 2.0, 3.0])
    assert jx.evaluate("a * w + x", a=a, w=w, x=0.5).to_pylist() == [1.5, None, 9.5]


def test_integer_and_boolean_columns(pa):
    i = pa.array([1, None, -3], type=pa.int32())
    f = pa.array([True, False, None])
    r = jx.evaluate("where(f, i, -i)", i=i, f=f)
    assert r.type == pa.int32()
    assert r.to_pylist() == [1, None, None]


def test_a_type_jitexpr_does_not_take_is_a_clear_error(pa):
    # (strings are taken since issue 32; binary columns are not)
    with pytest.raises(jx.ArgumentError) as e:
        jx.evaluate("s + 1", s=pa.array([b"x", b"y"], type=pa.binary()))
    assert "format" in str(e.value)
    with pytest.raises(jx.TypeError, match="not supported for strings"):
        jx.evaluate("s + 1", s=pa.array(["x", "y"]))


def test_out_is_refused_for_arrow_inputs(pa):
    with pytest.raises(jx.ArgumentError):
        jx.evaluate("a * 2", a=pa.array([1.0]), out=np.empty(1))


def test_polars_series_round_trip_with_nulls():
    pl = need("polars")
    s = pl.Series("a", [1.0, None, 3.0])
    t = pl.Series("b", [2.0, 2.0, None])
    r = jx.evaluate("a * b + 1", a=s, b=t)
    assert isinstance(r, pl.Series)
    assert r.to_list() == [3.0, None, None]
    assert jx.evaluate("sum(a)", a=s) == s.sum()


def test_duckdb_query_results_round_trip_with_nulls():
    duckdb = need("duckdb")
    pa = need("pyarrow")
    con = duckdb.connect()
    tbl = con.sql("select * from (values (1.0::double, 2.0::double), (null, 3.0), (4.0, null), (5.0, 6.0)) t(x, y)").to_arrow_table()
    assert isinstance(tbl, pa.Table)
    r = jx.evaluate("x * y", x=tbl.column("x"), y=tbl.column("y"))
    want = con.execute("select x * y from (values (1.0::double, 2.0::double), (null, 3.0), (4.0, null), (5.0, 6.0)) t(x, y)").fetchall()
    assert r.to_pylist() == [w[0] for w in want]
    s = con.execute("select sum(x * y) from (values (1.0::double, 2.0::double), (null, 3.0), (4.0, null), (5.0, 6.0)) t(x, y)").fetchone()[0]
    assert jx.evaluate("sum(x * y)", x=tbl.column("x"), y=tbl.column("y")) == pytest.approx(float(s))


def test_tensor_results_export_the_arrow_c_interfaces(pa):
    r = jx._jitexpr.evaluate("a + 1", {"a": pa.array([1, None, 3], type=pa.int64())}, None, None, None, None)
    assert isinstance(r, jx.Tensor)
    arr = pa.array(r)
    assert arr.to_pylist() == [2, None, 4]
    assert pa.chunked_array(r).to_pylist() == [2, None, 4]  # through __arrow_c_stream__
