"""jitexpr.dask over datetime64/timedelta64 dask arrays: elementwise work block by block, the
reductions' chunk and combine steps (NaT propagating, a duration's mean towards zero), and the
dtypes the graph states before anything runs, against NumPy 2."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import jitexpr.dask as jxd  # noqa: E402

RNG = np.random.default_rng(32)
TS = (np.datetime64("2024-01-01", "s").astype(np.int64) + RNG.integers(0, 86400 * 60, (40, 12))).view("M8[s]")
TS[3, 4] = np.datetime64("NaT")
DT = RNG.integers(-600, 600, (40, 12)).view("m8[s]")


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.view("i8").tolist() == want.view("i8").tolist() if want.dtype.kind in "Mm" else np.array_equal(got, want)


def test_elementwise_date_work_is_blockwise_with_its_dtype_known(compute):
    ts = da.from_array(TS, chunks=(16, 5))
    r = jxd.evaluate("ts + timedelta64(90, 'm')", ts=ts)
    assert r.dtype == np.dtype("M8[s]")  # from the checker: nothing ran
    same(compute(r), TS + np.timedelta64(90, "m"))
    f = jxd.evaluate("ts > datetime64('2024-02-01')", ts=ts)
    same(compute(f), TS > np.datetime64("2024-02-01"))


def test_reductions_combine_across_blocks_with_numpys_nat_rule(compute):
    ts = da.from_array(TS, chunks=(16, 5))
    dt = da.from_array(DT, chunks=(16, 5))
    mx, mn, s, m = compute(jxd.evaluate("max(ts)", ts=ts), jxd.evaluate("min(ts, axis=0)", ts=ts),
                           jxd.evaluate("sum(dt)", dt=dt), jxd.evaluate("mean(dt, axis=1)", dt=dt))
    same(mx, np.max(TS))  # NaT
    same(mn, np.min(TS, axis=0))
    same(s, np.sum(DT))
    same(m, np.mean(DT, axis=1))
