"""wid and Spark's own operators on a `WindowQuery` over the events data.

Every engine here reads ``<data_dir>/events.parquet`` on each run (nothing
is cached between runs, as for the other peers) and, timed, writes its
output to Spark's ``noop`` sink, which computes every column. The warm-up
collects the output with window bounds as epoch milliseconds
(`benchmarks.query.OUTPUT`).

- ``wid``: `wid.aggregate` (docs/architecture.md#execution-paths: panes for hopping, sorts
  for sessions).
- ``spark window()``: `F.window` / `F.session_window` and `groupBy`; a
  hopping window copies each row ``size / slide`` times.
- ``buffering``: the paper's buffering baseline: each extent's rows are
  materialised (``collect_list`` per window after `F.window`'s copies) and
  the aggregates are computed from that buffer.
- ``scan floor``: read plus a trivial aggregate (count and sum of ``v``):
  the cost below which no window engine can go; it has no window output.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

import wid
from benchmarks.query import OUTPUT, WindowQuery
from benchmarks.suite import Engine, Output, engine
from wid.spec import Aggregation, Window

AGGS = (Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s"), Aggregation("max", "v", as_="hi"))


def spark_run(query: Callable[[], DataFrame], to_output: Callable[[DataFrame], DataFrame] | None = None
              ) -> Callable[[bool], Output | None]:
    """A `suite.engine` run of a Spark query: collected through
    `to_output` (None: no output to compare) or written to ``noop``."""
    def run(collect: bool) -> Output | None:
        df = query()
        if not collect:
            df.write.format("noop").mode("overwrite").save()
            return None
        if to_output is None:
            df.collect()
            return None
        return to_output(df).toPandas()
    return run


def window_of(q: WindowQuery) -> Window:
    """`q` as a wid `Window` over ``ts_ms`` (epoch ms) grouped by ``k``."""
    return Window(kind=q.kind, duration_ms=None if q.kind == "session" else q.size_ms, hop_ms=q.slide_ms,
                  gap_ms=q.gap_ms, event_time_column="ts_ms", event_time_unit="ms", group_by=("k",),
                  aggregations=AGGS)


def bounds_ms(start: Column, end: Column) -> list[Column]:
    return [F.unix_millis(start).alias("window_start_ms"), F.unix_millis(end).alias("window_end_ms")]


def wid_engine(spark: Any, q: WindowQuery, data_dir: Path, name: str = "wid") -> Engine:
    read = reader(spark, data_dir)
    return engine(name, spark_run(lambda: wid.aggregate(read(), window_of(q)), lambda df: df.select(
        "k", *bounds_ms(F.col("window_start"), F.col("window_end")), "n", "s", "hi")))


def spark_window(q: WindowQuery, ts: Column | None = None) -> Column:
    """`q` as Spark's window column over `ts` (default: ``ts_ms`` as a timestamp)."""
    ts = F.timestamp_millis("ts_ms") if ts is None else ts
    if q.kind == "session":
        return F.session_window(ts, f"{q.gap_ms} milliseconds")
    slide = f"{q.slide_ms} milliseconds" if q.kind == "hopping" else None
    return F.window(ts, f"{q.size_ms} milliseconds", slide)


def spark_window_engine(spark: Any, q: WindowQuery, data_dir: Path) -> Engine:
    read = reader(spark, data_dir)

    def query() -> DataFrame:
        df = read()
        return df.groupBy("k", spark_window(q).alias("w")).agg(
            F.count("*").alias("n"), F.sum("v").alias("s"), F.max("v").alias("hi"))
    return engine("spark window()", spark_run(query, windowed_output))


def buffering_engine(spark: Any, q: WindowQuery, data_dir: Path) -> Engine:
    read = reader(spark, data_dir)

    def query() -> DataFrame:
        df = read()
        buffered = df.groupBy("k", spark_window(q).alias("w")).agg(F.collect_list("v").alias("rows"))
        return buffered.select("k", "w", F.size("rows").cast("long").alias("n"),
                               F.aggregate("rows", F.lit(0.0), lambda acc, x: acc + x).alias("s"),
                               F.array_max("rows").alias("hi"))
    return engine("buffering", spark_run(query, windowed_output))


def windowed_output(df: DataFrame) -> DataFrame:
    return df.select("k", *bounds_ms(F.col("w.start"), F.col("w.end")), "n", "s", "hi").select(*OUTPUT)


def scan_floor_engine(spark: Any, data_dir: Path) -> Engine:
    read = reader(spark, data_dir)
    return engine("scan floor", spark_run(lambda: read().agg(F.count("*"), F.sum("v"))))


def reader(spark: Any, data_dir: Path) -> Callable[[], DataFrame]:
    path = str(data_dir / "events.parquet")
    return lambda: spark.read.parquet(path)
