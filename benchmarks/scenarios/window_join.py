"""Window join, DolphinDB semantics (the window-join issue), side by side:
wid's `window_join` against Spark SQL's range join plus group-by and
DuckDB's, on the same Parquet files (`benchmarks.window_join` fixes the
query: per left row, sum, avg and last by time of the right rows of its key
within [t - 2 s, t + 2 s], every left row kept).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from benchmarks import data
from benchmarks.peers.duckdb_peer import duckdb_run
from benchmarks.peers.spark_peers import spark_run
from benchmarks.suite import Engine, Scenario, engine, run_scenario
from benchmarks.window_join import range_join, tables, wid_query

TITLE = "window join (DolphinDB window join) against Spark's and DuckDB's range joins"


def landed(rows: int, keys: int, span_s: int) -> Path:
    where = data.ROOT / f"join_{rows}_{keys}_{span_s}"
    if not (where / "right.parquet").exists():
        left, right = tables(rows, keys, span_s)
        data.write(where, "left", pa.Table.from_pandas(left, preserve_index=False))
        data.write(where, "right", pa.Table.from_pandas(right, preserve_index=False))
    return where


def engines(spark: Any, where: Path) -> list[Engine]:
    def read(side: str) -> Any:
        return spark.read.parquet(str(where / f"{side}.parquet"))

    def spark_sql() -> Any:
        read("left").createOrReplaceTempView("lt")
        read("right").createOrReplaceTempView("rt")
        return spark.sql(range_join("spark"))

    return [engine("wid", spark_run(lambda: wid_query(read("left"), read("right")), picked)),
            engine("spark range join", spark_run(spark_sql, picked)),
            engine("duckdb", duckdb_run(duckdb_sql(where)))]


def picked(df: Any) -> Any:
    return df.select("id", "k", "ts_us", "s", "a", "l")


def duckdb_sql(where: Path) -> str:
    return range_join("duckdb").replace("lt l", f"read_parquet('{where / 'left.parquet'}') l") \
        .replace("rt r", f"read_parquet('{where / 'right.parquet'}') r")


def run(ctx: Any) -> list[dict[str, Any]]:
    rows, keys = (100_000, 100) if ctx.quick else (1_000_000, 1000)
    where = landed(rows, keys, 1000)
    s = Scenario(f"window_join_{rows}", f"window (-2 s, +2 s), {rows:,} rows a side, {keys:,} keys",
                 2 * rows, ("id",), engines(ctx.spark, where), {"keys": keys, "span_s": 1000})
    return [run_scenario(s, ctx.repeats)]


def plot(records: list[dict[str, Any]], out: Path) -> list[Path]:
    from benchmarks.plots import throughput_bars

    return [throughput_bars(records, out / "window_join.png", "window join: rows of both sides per second")]
