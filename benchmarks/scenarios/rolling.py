"""Rolling windows (one window per row, the WID paper's slide-by-tuple): for
each row t, count, sum and max of ``v`` over its key's rows in
``(t.ts - d, t.ts]``, ties included (every row at t.ts is in t's window),
d = `DURATION_MS`. Engines:

- ``wid``: `wid.aggregate` with ``kind = "rolling"`` (batch);
- ``spark window function``: Spark SQL's window function with the frame
  ``RANGE BETWEEN d - 1 PRECEDING AND CURRENT ROW`` over ``ts_ms``
  (integer ms, so ``(t - d, t]``; a RANGE frame takes every peer row);
- ``duckdb``: the same frame in DuckDB;
- ``pandas``: ``groupby(k).rolling("60000ms", on=t, closed="right")``, the
  interval ``(t - d, t]``. pandas ends a row's window at the row itself,
  so of rows tied on ``(k, ts)`` only the last sees them all; the engine
  gives every tied row that last value (``transform("last")``), the paper's
  tie rule.

Data: `benchmarks.data.events`, 100 keys, 1,000 rows per second of event
time, millisecond times, so a key has ties (10 rows per second each).
Output rows, compared across engines: ``k``, ``ts_ms``, ``n``, ``s``,
``hi``, one per input row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks import data
from benchmarks.peers.all_peers import guarded
from benchmarks.peers.duckdb_peer import duckdb_run
from benchmarks.peers.spark_peers import AGGS, reader, spark_run
from benchmarks.suite import Engine, Output, Scenario, engine, library_engine, run_scenario
from wid.spec import Window

TITLE = "rolling windows (one per row, 1 minute, 100 keys): wid, Spark's window function, DuckDB, pandas"
DURATION_MS = 60_000
KEYS = ("k", "ts_ms")
OUTPUT = (*KEYS, "n", "s", "hi")
FRAME = f"(PARTITION BY k ORDER BY ts_ms RANGE BETWEEN {DURATION_MS - 1} PRECEDING AND CURRENT ROW)"


def window_sql(source: str) -> str:
    """The rolling query over the table expression `source`, in SQL that
    Spark and DuckDB both run."""
    return (f"SELECT k, ts_ms, count(*) OVER w AS n, sum(v) OVER w AS s, max(v) OVER w AS hi "
            f"FROM {source} WINDOW w AS {FRAME}")


def wid_engine(spark: Any, where: Path) -> Engine:
    read = reader(spark, where)
    w = Window(kind="rolling", duration_ms=DURATION_MS, event_time_column="ts_ms", event_time_unit="ms",
               group_by=("k",), aggregations=AGGS)

    def query() -> Any:
        import wid

        return wid.aggregate(read(), w).select(*OUTPUT)

    return engine("wid", spark_run(query, lambda df: df))


def spark_sql_engine(spark: Any, where: Path) -> Engine:
    read = reader(spark, where)

    def query() -> Any:
        read().createOrReplaceTempView("bench_rolling_events")
        return spark.sql(window_sql("bench_rolling_events"))

    return engine("spark window function", spark_run(query, lambda df: df))


def pandas_rolling(where: Path) -> Output:
    """The rolling query in pandas, ties as in the paper (module docstring)."""
    import pandas as pd

    df = pd.read_parquet(where / "events.parquet").sort_values(["k", "ts_ms"], kind="stable", ignore_index=True)
    df["t"] = pd.to_datetime(df["ts_ms"], unit="ms")
    rolled = df.groupby("k", sort=True).rolling(f"{DURATION_MS}ms", on="t", closed="right")["v"]
    out = df[["k", "ts_ms"]].assign(n=rolled.count().to_numpy().astype("int64"), s=rolled.sum().to_numpy(),
                                    hi=rolled.max().to_numpy())
    out[["n", "s", "hi"]] = out.groupby(["k", "ts_ms"])[["n", "s", "hi"]].transform("last")
    return out


def run(ctx: Any) -> list[dict[str, Any]]:
    rows = 100_000 if ctx.quick else 1_000_000
    where = data.events(rows, 100)
    engines = [wid_engine(ctx.spark, where), spark_sql_engine(ctx.spark, where),
               guarded("duckdb", lambda: engine("duckdb", duckdb_run(
                   window_sql(f"read_parquet('{where / 'events.parquet'}')")))),
               library_engine("pandas", "pandas", lambda collect: pandas_rolling(where))]
    s = Scenario(f"rolling_{rows}", f"rolling {DURATION_MS} ms, 100 keys, {rows:,} rows", rows, KEYS, engines,
                 {"keys": 100, "duration_ms": DURATION_MS})
    return [run_scenario(s, ctx.repeats)]


def plot(records: list[dict[str, Any]], out: Path) -> list[Path]:
    from benchmarks.plots import throughput_bars

    return [throughput_bars(records, out / "rolling.png", "rolling windows: rows per second")]
