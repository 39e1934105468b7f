"""A DuckDB query whose derived columns and aggregates jitexpr computes, through Arrow, nulls
included, checked against DuckDB's own SQL for the same columns.

    python examples/python/duckdb_query.py [ROWS]
"""
import sys

import duckdb
import numpy as np

import jitexpr as jx

SQL_TABLE = """
create table orders as
select i as id,
       case when i % 7 = 0 then null else (i % 100) * 1.25 end :: double as price,
       case when i % 11 = 0 then null else i % 9 + 1 end :: integer as qty,
       (i % 5) :: double / 10 as discount
from range({rows}) t(i)
"""


def compute(rows=200_000):
    con = duckdb.connect()
    con.execute(SQL_TABLE.format(rows=rows))
    t = con.sql("select price, qty, discount from orders order by id").to_arrow_table()
    price, qty, discount = (t.column(n) for n in ("price", "qty", "discount"))
    # Derived columns: null wherever an input is null, as in SQL.
    revenue = jx.evaluate("price * qty * (1 - discount)", price=price, qty=qty, discount=discount)
    big = jx.evaluate("where(price * qty > 500, 1, 0)", price=price, qty=qty)
    # Aggregates: rows with nulls are skipped, as SQL's SUM/AVG/MAX skip them.
    totals = {
        "total": jx.evaluate("sum(price * qty * (1 - discount))", price=price, qty=qty, discount=discount),
        "mean_price": jx.evaluate("mean(price)", price=price),
        "max_qty": jx.evaluate("max(qty)", qty=qty),
    }
    sql = con.execute("""
        select sum(price * qty * (1 - discount)) as total, avg(price) as mean_price, max(qty) as max_qty
        from orders""").fetchall()[0]
    sql_revenue = con.sql("select price * qty * (1 - discount) from orders order by id").to_arrow_table().column(0)
    # SQL's CASE takes ELSE for a NULL condition; jitexpr's where() is null wherever an input is.
    sql_big = con.sql("select case when price * qty is null then null when price * qty > 500 then 1 else 0 end "
                      "from orders order by id").to_arrow_table().column(0)
    return revenue, big, totals, sql, sql_revenue, sql_big


def main(rows=200_000):
    revenue, big, totals, sql, sql_revenue, sql_big = compute(rows)
    print(f"revenue: {len(revenue)} rows, {revenue.null_count} null (DuckDB: {sql_revenue.null_count})")
    print(f"big orders: {np.nansum(np.asarray(big.to_numpy(zero_copy_only=False), dtype=float)):.0f}")
    for (k, v), s in zip(totals.items(), sql):
        print(f"{k}: jitexpr {v} / DuckDB {s}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)
