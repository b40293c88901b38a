"""The SQLite sink: upsert on the natural key, idempotent reruns, clear
errors on a table of another shape."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from wid.errors import ConfigError
from wid.io.sinks import write_sqlite


def read(path: str, table: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as con:
        return sorted(con.execute(f"SELECT * FROM {table}").fetchall())


def test_upsert_overwrites_by_key_and_keeps_others(spark: Any, tmp_path: Any) -> None:
    db = str(tmp_path / "o.sqlite")
    first = spark.createDataFrame([("2024-01-01 00:00:00", "a", 1), ("2024-01-01 00:00:00", "b", 2)],
                                  "ws string, k string, n long").selectExpr("to_timestamp(ws) AS ws", "k", "n")
    assert write_sqlite(first, db, "t", ["ws", "k"]) == 2
    # a replayed batch with a corrected value for 'a' and a new key 'c'
    second = spark.createDataFrame([("2024-01-01 00:00:00", "a", 10), ("2024-01-01 00:00:00", "c", 3)],
                                   "ws string, k string, n long").selectExpr("to_timestamp(ws) AS ws", "k", "n")
    write_sqlite(second, db, "t", ["ws", "k"])
    write_sqlite(second, db, "t", ["ws", "k"])  # replayed again: no duplicates
    assert read(db, "t") == [("2024-01-01T00:00:00.000000Z", "a", 10), ("2024-01-01T00:00:00.000000Z", "b", 2),
                             ("2024-01-01T00:00:00.000000Z", "c", 3)]


def test_table_of_another_shape_is_refused(spark: Any, tmp_path: Any) -> None:
    db = str(tmp_path / "o.sqlite")
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE t (x INTEGER)")
    df = spark.createDataFrame([(1, 2)], "a long, b long")
    with pytest.raises(ConfigError) as err:
        write_sqlite(df, db, "t", ["a"])
    assert err.value.field == "target.table"
    assert read(db, "t") == []


def test_a_null_in_the_natural_key_still_identifies_the_row(spark: Any, tmp_path: Any) -> None:
    # a rolling window's natural key is its input row, whose columns may be NULL: a partial value
    # and then the final one for the same row must leave one row, as SQL's IS NOT DISTINCT FROM says
    db = str(tmp_path / "o.sqlite")
    partial = spark.createDataFrame([("a", None, 1, False), (None, 2.0, 1, False)], "k string, v double, n long, f boolean")
    final = spark.createDataFrame([("a", None, 2, True), (None, 2.0, 3, True)], "k string, v double, n long, f boolean")
    for df in (partial, final, final):
        write_sqlite(df, db, "t", ["k", "v"])
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT k, v, n, f FROM t").fetchall()
    assert sorted(rows, key=str) == sorted([("a", None, 2, 1), (None, 2.0, 3, 1)], key=str)
