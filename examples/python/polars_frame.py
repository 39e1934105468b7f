"""A Polars frame with derived columns and aggregates computed by jitexpr through Arrow (nulls
included), checked against Polars' own expressions.

    python examples/python/polars_frame.py [ROWS]
"""
import sys

import numpy as np
import polars as pl

import jitexpr as jx


def frame(rows=200_000):
    rng = np.random.default_rng(1)
    x = rng.random(rows) * 10
    y = rng.random(rows) * 3 - 1
    return pl.DataFrame({
        "x": pl.Series(x).set(pl.Series(np.arange(rows) % 13 == 0), None),
        "y": pl.Series(y).set(pl.Series(np.arange(rows) % 17 == 0), None),
        "k": pl.Series(np.arange(rows) % 4, dtype=pl.Int64),
    })


def compute(df):
    x, y, k = df["x"], df["y"], df["k"]
    derived = df.with_columns(
        z=jx.evaluate("x * 2 + y", x=x, y=y),
        w=jx.evaluate("where(y > 0, sqrt(x) * y, -y * x)", x=x, y=y),
        flag=jx.evaluate("(x > 5) & (k == 1)", x=x, k=k),
    )
    aggregates = {
        "sum_z": jx.evaluate("sum(x * 2 + y)", x=x, y=y),
        "mean_x": jx.evaluate("mean(x)", x=x),
        "min_y": jx.evaluate("min(y)", y=y),
    }
    expected = df.with_columns(
        z=pl.col("x") * 2 + pl.col("y"),
        w=pl.when(pl.col("y") > 0).then(pl.col("x").sqrt() * pl.col("y")).otherwise(-pl.col("y") * pl.col("x")),
        # Polars' & is Kleene logic (null & false is false); jitexpr's elementwise rule is that a
        # result is null wherever an input is: the same once the rows with a null x are null.
        flag=pl.when(pl.col("x").is_not_null()).then((pl.col("x") > 5) & (pl.col("k") == 1)),
    )
    polars_aggs = {
        "sum_z": expected["z"].sum(),
        "mean_x": df["x"].mean(),
        "min_y": df["y"].min(),
    }
    return derived, aggregates, expected, polars_aggs


def main(rows=200_000):
    derived, aggregates, expected, polars_aggs = compute(frame(rows))
    print(derived.head())
    for k, v in aggregates.items():
        print(f"{k}: jitexpr {v} / Polars {polars_aggs[k]}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)
