"""Dates and durations through the Python package: NumPy datetime64/timedelta64 arrays in and out
of evaluate, run, Kernel and out=, NumPy's errors as jitexpr's, Arrow temporal columns (pyarrow,
Polars, DuckDB) with nulls, pandas datetime columns through jitexpr.numexpr, and jitexpr.check.
(Every operation and unit against NumPy: tests/diff/gen_date_cases.py and the fuzzer.)"""
import sys

import numpy as np
import pytest

from support import need

import jitexpr as jx

NAT = np.iinfo(np.int64).min
UNITS = ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"]


def dates(unit="s", n=9, seed=1):
    v = np.random.default_rng(seed).integers(-10**6, 10**6, n)
    v[::4] = NAT
    return v.view(f"M8[{unit}]")


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    if want.dtype.kind in "Mm":
        assert got.view("i8").tolist() == want.view("i8").tolist()
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("unit", UNITS)
def test_every_unit_in_and_out_of_evaluate(unit):
    a = dates(unit)
    same(jx.evaluate("a + 1", a=a), a + 1)
    same(jx.evaluate("a - a[::-1]", a=a), a - a[::-1])
    same(jx.evaluate("a < a[::-1]", a=a), a < a[::-1])


def test_a_filter_over_timestamps_is_numpys():
    ts = np.array(["2024-02-28T23:59", "NaT", "2024-03-01T00:00", "2025-01-01"], "M8[ns]")
    same(jx.evaluate("ts > datetime64('2024-03-01')", ts=ts), ts > np.datetime64("2024-03-01"))
    same(jx.evaluate("ts[ts >= datetime64('2024-03-01')]", ts=ts), ts[ts >= np.datetime64("2024-03-01")])


def test_durations_and_their_reductions():
    t0 = np.array(["2024-03-01T00:00", "2024-03-01T00:10", "NaT"], "M8[s]")
    t1 = np.array(["2024-03-01T00:04", "2024-03-01T00:30", "2024-03-01T00:00"], "M8[s]")
    same(jx.evaluate("(t1 - t0) < timedelta64(5, 'm')", t0=t0, t1=t1), (t1 - t0) < np.timedelta64(5, "m"))
    same(jx.evaluate("mean(t1[:2] - t0[:2])", t0=t0, t1=t1), np.mean(t1[:2] - t0[:2]))
    same(jx.evaluate("max(t1 - t0)", t0=t0, t1=t1), np.max(t1 - t0))  # NaT
    same(jx.evaluate("(t1 - t0) / timedelta64(1, 'm')", t0=t0, t1=t1), (t1 - t0) / np.timedelta64(1, "m"))


def test_a_mean_whose_sum_wraps_onto_nat_is_nat_as_the_sum_is():
    # sum([2**62, 2**62]) wraps onto NaT's bits (NaT, as NumPy's); mean divided those bits (-2**62 s).
    d = np.array([2**62, 2**62], "m8[s]")
    assert np.isnat(jx.evaluate("sum(d)")) and np.isnat(jx.evaluate("mean(d)"))
    rows = np.array([[2**62, 2**62], [3, 5]], "m8[s]")
    same(jx.evaluate("mean(rows, axis=1)"), np.mean(rows, axis=1))


def test_numpy_date_scalars_are_zero_dimensional_arrays():
    cut = np.datetime64("2024-03-01T12:00")
    ts = np.array(["2024-03-01T11:00", "2024-03-01T13:00"], "M8[s]")
    same(jx.evaluate("ts > cut", ts=ts, cut=cut), ts > cut)


def test_numpys_errors_are_jitexprs_type_errors_with_a_caret():
    a = dates("s")
    with pytest.raises(jx.TypeError, match=r"(?s)date plus a date.*\^"):
        jx.evaluate("a + a", a=a)
    with pytest.raises(jx.TypeError):
        jx.evaluate("a * 2", a=a)
    with pytest.raises(jx.TypeError, match="not a unit"):
        jx.evaluate("timedelta64(1, 'q')")
    with pytest.raises(jx.ValueError, match="not a date"):
        jx.evaluate("datetime64('2024-3-1')")


# ---- text compared with a date: read as datetime64(text)

OPS = ["==", "!=", "<", "<=", ">", ">="]


@pytest.mark.parametrize("unit", ["D", "s", "ms", "ns"])
@pytest.mark.parametrize("text", ["2024-03-01", "2024-03-01T12", "2024-03", "1970-01-01T00:00:00.5", "NaT", ""])
def test_text_compared_with_a_date_is_datetime64_of_it(unit, text):
    # NumPy 2's own operator has no loop for a str (its == is False everywhere, its < raises);
    # jitexpr reads the text as np.datetime64(text), as pandas' query does.
    ts = np.concatenate([np.array(["2024-03-01", "2024-03-01T12:00", "2024-02-29T23:59:59", "NaT",
                                   "1970-01-01T00:00:00.5", "1970-01-01"], "M8[ms]").astype(f"M8[{unit}]"),
                         dates(unit)])
    for op in OPS:
        want = eval(f"ts {op} np.datetime64(text)", {"ts": ts, "np": np, "text": text})
        same(jx.evaluate(f"ts {op} '{text}'", ts=ts), want)
        same(jx.evaluate(f"'{text}' {op} ts", ts=ts), eval(f"np.datetime64(text) {op} ts",
                                                           {"ts": ts, "np": np, "text": text}))


@pytest.mark.parametrize("text,unit", [("2024-03-01T12:30:15.1234567890123", "ns"),
                                       ("1677-09-21T00:12:43.145224191", "us"),
                                       ("2024-01-01T00:00:00.000000000001", "s"),
                                       ("1969-12-31T23:59:59.9999999", "us"),
                                       ("1969-12-31T23:59:59.9999999", "D"),
                                       ("2024-03-01T12:30:15.12", "ns")])
def test_a_fraction_finer_than_the_unit_asked_for_is_floored_as_numpys(text, unit):
    # The text's own unit (fs for 13 digits) was range-checked before the conversion, so these
    # were ValueErrors; NumPy drops the finer digits (a floor, before 1970 too).
    got = jx.evaluate(f"datetime64('{text}', '{unit}')")
    want = np.datetime64(text, unit)
    assert got.dtype == np.asarray(want).dtype and got == want


def test_text_compared_with_a_date_through_the_numexpr_drop_in():
    # numexpr's dialect makes '...' bytes; against a date it is read as a date all the same.
    # (numexpr itself takes no datetime64 array: "unknown type datetime64[D]".)
    import jitexpr.numexpr as jne
    ts = np.array(["2024-03-01", "2024-03-02", "NaT"], "M8[D]")
    same(jne.evaluate("ts == '2024-03-01'", local_dict={"ts": ts}), ts == np.datetime64("2024-03-01"))
    same(jne.evaluate("(ts >= '2024-03-02') | (ts < '2024-03-01T12')", local_dict={"ts": ts}),
         (ts >= np.datetime64("2024-03-02")) | (ts < np.datetime64("2024-03-01T12")))
    same(jx.evaluate("ts == b'2024-03-01'", ts=ts), ts == np.datetime64(b"2024-03-01"))


def test_text_compared_with_a_date_in_a_filter():
    ts = np.array(["2024-02-28T23:59", "NaT", "2024-03-01T00:00", "2025-01-01"], "M8[ns]")
    x = np.arange(4.0)
    same(jx.evaluate("x[ts >= '2024-03-01']", ts=ts, x=x), x[ts >= np.datetime64("2024-03-01")])
    same(jx.evaluate("sum(where(ts < '2024-03-01', x, 0))", ts=ts, x=x),
         np.sum(np.where(ts < np.datetime64("2024-03-01"), x, 0)))


def test_text_that_is_no_date_is_a_value_error_under_the_literal():
    ts = dates("s")
    with pytest.raises(jx.ValueError, match=r"(?s)'2024-3-1' is not a date.*ts == '2024-3-1'\n {14}\^{10}"):
        jx.evaluate("ts == '2024-3-1'", ts=ts)
    with pytest.raises(jx.ValueError, match="does not fit datetime64"):
        jx.evaluate("ns < '3000-01-01'", ns=ts.astype("M8[ns]"))
    with pytest.raises(jx.TypeError, match="read as a date only against a datetime64"):
        jx.evaluate("t < '5'", t=np.array([1, 2], "m8[s]"))


def test_an_array_of_no_unit_is_refused():
    with pytest.raises(jx.TypeError, match="no unit"):
        jx.evaluate("g + timedelta64(1, 's')", g=np.array(["NaT"], "M8"))


def test_run_writes_in_place_and_out_takes_a_date_array():
    ts = np.array(["2024-03-01T00:00:00", "NaT"], "M8[s]")
    env = {"ts": ts}
    jx.run("ts = ts + timedelta64(90, 's')", env)
    assert env["ts"] is ts
    same(ts, np.array(["2024-03-01T00:01:30", "NaT"], "M8[s]"))
    out = np.empty(2, "M8[ms]")
    r = jx.evaluate("ts + timedelta64(1, 'ms')", ts=ts, out=out)
    assert r is out
    same(out, ts + np.timedelta64(1, "ms"))


def test_a_kernel_with_a_date_signature():
    k = jx.compile("ts - datetime64('2000-01-01')", {"ts": "datetime64[us]"})
    ts = np.array(["2000-01-02", "NaT"], "M8[us]")
    same(k(ts=ts), ts - np.datetime64("2000-01-01"))
    with pytest.raises(jx.TypeError):
        k(ts=ts.astype("M8[s]"))


def test_check_reports_date_dtypes():
    c = jx.check("d = ts - ts; m = max(ts)", ts=(np.dtype("M8[ns]"), (5,)))
    assert [v.dtype for v in c.assigned.values()] == [np.dtype("m8[ns]"), np.dtype("M8[ns]")]
    assert c.result.dtype == np.dtype("M8[ns]")


# ---- Arrow: date32, date64, timestamp (zones: UTC values), duration; nulls and NaT


def test_pyarrow_temporal_columns_in_and_out_with_nulls():
    pa = need("pyarrow")
    ts = pa.array([0, None, 86_400_000_000 * 3], type=pa.timestamp("us"))
    r = jx.evaluate("ts + timedelta64(1, 'h')", ts=ts)
    assert isinstance(r, pa.Array)
    assert r.type == pa.timestamp("us")
    assert r.to_pylist()[1] is None
    assert r.cast(pa.int64()).to_pylist() == [3_600_000_000, None, 86_400_000_000 * 3 + 3_600_000_000]
    d = pa.array([19783, None, 0], type=pa.date32())
    r = jx.evaluate("d > datetime64('2000-01-01')", d=d)
    assert r.to_pylist() == [True, None, False]
    r = jx.evaluate("d + timedelta64(1, 'D')", d=d)
    assert r.type == pa.date32()
    assert r.cast(pa.int32()).to_pylist() == [19784, None, 1]
    dur = pa.array([5, None, -2], type=pa.duration("ms"))
    r = jx.evaluate("dur * 2", dur=dur)
    assert r.type == pa.duration("ms") and r.cast(pa.int64()).to_pylist() == [10, None, -4]
    d64 = pa.array([86_400_000, None], type=pa.date64())
    assert jx.evaluate("d64 == datetime64('1970-01-02')", d64=d64).to_pylist() == [True, None]


def test_an_arrow_reduction_finer_than_us_keeps_its_unit():
    # A ns result's item() is a bare int (Python's datetime stops at us): NumPy's scalar instead.
    pa = need("pyarrow")
    assert repr(jx.evaluate("sum(d)", d=pa.array([5, None, -7], pa.duration("ns")))) == "np.timedelta64(-2,'ns')"
    t = jx.evaluate("max(t)", t=pa.array([5, None, -7], pa.timestamp("ns")))
    assert t == np.datetime64(5, "ns") and t.dtype == np.dtype("M8[ns]")
    assert jx.evaluate("max(t)", t=pa.array([5, None], pa.timestamp("us"))).microsecond == 5  # a datetime
    assert jx.evaluate("max(t)", t=pa.array([None], pa.timestamp("ns"))) is None


def test_a_timestamp_with_a_zone_compares_in_utc():
    pa = need("pyarrow")
    # 2024-03-01T00:30 in Oslo (UTC+1) is 2024-02-29T23:30 UTC
    utc = int(np.datetime64("2024-02-29T23:30", "s").astype(np.int64))
    oslo = pa.array([utc], type=pa.timestamp("s", tz="Europe/Oslo"))
    assert jx.evaluate("t < datetime64('2024-03-01')", t=oslo).to_pylist() == [True]


def test_nat_goes_out_to_arrow_as_null():
    pa = need("pyarrow")
    t = pa.array([1, 2], type=pa.duration("s"))
    r = jx.evaluate("where(t > timedelta64(1, 's'), t, timedelta64('NaT'))", t=t)
    assert r.to_pylist()[0] is None and r.null_count == 1


def test_polars_and_duckdb_temporal_columns():
    pl = need("polars")
    s = pl.Series("ts", [0, 60_000_000, None], dtype=pl.Datetime("us"))
    r = jx.evaluate("ts >= datetime64('1970-01-01T00:01')", ts=s)
    assert r.to_list() == [False, True, None]
    duckdb = need("duckdb")
    rel = duckdb.sql("select * from (values (timestamp '2024-03-01 12:00'), (null), (timestamp '1999-12-31 00:00')) t(ts)")
    table = rel.arrow()  # a RecordBatchReader from DuckDB 1.4 on, a Table before
    col = (table.read_all() if hasattr(table, "read_all") else table)["ts"]
    r = jx.evaluate("ts - datetime64('2000-01-01')", ts=col)
    pa = need("pyarrow")
    assert r.type == pa.duration("us")
    assert r.to_pylist()[1] is None


# ---- pandas through the numexpr drop-in


def test_pandas_query_on_a_datetime_column_through_the_drop_in(monkeypatch):
    pd = need("pandas")
    from pandas.core.computation import check
    if not check.NUMEXPR_INSTALLED:
        pytest.skip("pandas found no numexpr when it was imported, so it offers no numexpr engine")
    import jitexpr.numexpr as jne
    calls = []
    evaluate = jne.evaluate
    monkeypatch.setattr(jne, "evaluate", lambda *a, **k: calls.append(a[0]) or evaluate(*a, **k))
    monkeypatch.setitem(sys.modules, "numexpr", jne)  # pandas imports numexpr when it evaluates
    df = pd.DataFrame({"ts": pd.to_datetime(["2024-02-28", "2024-03-02", None, "2024-03-05"]), "x": [1, 2, 3, 4]})
    want = df[df.ts > pd.Timestamp("2024-03-01")]
    got = df.query("ts > '2024-03-01'", engine="numexpr")
    pd.testing.assert_frame_equal(got, want)
    # Text against a datetime column is pandas' own work before numexpr sees anything: < and > read
    # it as a Timestamp; == and != are membership tests (isin(['2024-03-02']), False everywhere in
    # pandas 3). Whatever pandas gives, the drop-in gives what its python engine gives.
    for q in ["ts == '2024-03-02' or ts < '2024-03-01'", "ts > '2024-03-01' and ts < '2024-03-05'",
              "ts != '2024-03-02'"]:
        pd.testing.assert_frame_equal(df.query(q, engine="numexpr"), df.query(q, engine="python"))
    assert calls, "pandas did not evaluate through the drop-in"
