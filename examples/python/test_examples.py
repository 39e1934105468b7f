"""The Python examples run as tests: jitexpr's derived columns and aggregates equal DuckDB's
and Polars' own, nulls included."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def test_duckdb_example_matches_duckdb():
    pytest.importorskip("duckdb")
    pytest.importorskip("pyarrow")
    import duckdb_query
    revenue, big, totals, sql, sql_revenue, sql_big = duckdb_query.compute(50_000)
    assert revenue.null_count == sql_revenue.null_count > 0
    np.testing.assert_allclose(revenue.to_numpy(zero_copy_only=False), sql_revenue.to_numpy(zero_copy_only=False),
                               rtol=1e-12, equal_nan=True)
    assert big.to_pylist() == sql_big.to_pylist()
    assert totals["total"] == pytest.approx(sql[0], rel=1e-12)
    assert totals["mean_price"] == pytest.approx(sql[1], rel=1e-12)
    assert totals["max_qty"] == sql[2]


def test_polars_example_matches_polars():
    pytest.importorskip("polars")
    import polars as pl
    import polars_frame
    derived, aggregates, expected, polars_aggs = polars_frame.compute(polars_frame.frame(50_000))
    for col in ("z", "w", "flag"):
        assert derived[col].null_count() == expected[col].null_count() > 0
        got, want = derived[col], expected[col]
        if got.dtype == pl.Boolean:
            assert got.to_list() == want.to_list()
        else:
            np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-12, equal_nan=True)
    assert aggregates["sum_z"] == pytest.approx(polars_aggs["sum_z"], rel=1e-9)
    assert aggregates["mean_x"] == pytest.approx(polars_aggs["mean_x"], rel=1e-12)
    assert aggregates["min_y"] == polars_aggs["min_y"]
