"""Hopping windows as the data's density changes: wid's hopping plan
against wid's tumbling plan and Spark's own ``window()``.

    python -m benchmarks run --only density [--quick] [--repeats 2]

Data: 1,000 keys (100 with --quick) over one day of event time, at 1, 3
and 10 rows per key and 1-minute pane (1.44M, 4.32M and 14.4M rows),
generated in Spark and cached before anything is timed. Queries, count,
sum and max of ``v`` per key, each written to Spark's ``noop`` sink:

- ``wid hopping``: hopping 60 min every 1 min, the plan wid chooses by
  itself (`wid.spark.pane_plan`, a sample of the first rows);
- ``wid hopping (two-phase)`` and ``wid hopping (fused)``: the same with
  ``spark.wid.paneMerge`` forcing each of the two pane plans wid chooses
  between, so the table shows what the choice gains;
- ``wid tumbling``: tumbling 1 min, the cost of one window per row;
- ``spark window()``: ``groupBy(k, window(ts, 60 min, 1 min))``, which
  copies each row into its 60 windows.

wid's hopping plans and Spark's must emit the same windows (rows and sum
of counts) before any time is reported. Reported per density: each
query's best time of `repeats` (after one untimed run) and the ratios the
targets are about: Spark ``window()`` / wid hopping (target >= 15x) and
wid hopping / wid tumbling (target <= 1.5x).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import wid
from benchmarks.harness import DAY_US, timed
from wid.spark.arrow_merge import CONF
from wid.spec import Aggregation, Window

TITLE = "hopping 60/1 at 1, 3 and 10 rows per key and pane: wid hopping vs wid tumbling vs Spark window()"
DENSITIES = (1, 3, 10)  # rows per key and 1-minute pane
PANES_PER_DAY = 1440
AGGS = (Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s"), Aggregation("max", "v", as_="hi"))
HOPPING = Window(kind="hopping", duration_ms=3_600_000, hop_ms=60_000, event_time_column="ts", group_by=("k",),
                 aggregations=AGGS)
TUMBLING = Window(kind="tumbling", duration_ms=60_000, event_time_column="ts", group_by=("k",), aggregations=AGGS)


def rows_of(spark: Any, rows: int, keys: int) -> DataFrame:
    """`rows` rows, uniform over `keys` keys and one day, cached."""
    df = spark.range(rows).select((F.rand(11) * keys).cast("int").alias("k"),
                                  F.timestamp_micros((F.rand(12) * DAY_US).cast("long")).alias("ts"),
                                  F.rand(13).alias("v")).cache()
    df.count()
    return df


def queries(df: DataFrame) -> dict[str, tuple[Callable[[], DataFrame], str | None]]:
    """Each query of the module docstring and the ``spark.wid.paneMerge``
    it runs under (None: unset, wid's own choice)."""
    def spark_window() -> DataFrame:
        return df.groupBy("k", F.window("ts", "60 minutes", "1 minute").alias("w")).agg(
            F.count("*").alias("n"), F.sum("v").alias("s"), F.max("v").alias("hi"))
    return {"wid hopping": (lambda: wid.aggregate(df, HOPPING), None),
            "wid hopping (two-phase)": (lambda: wid.aggregate(df, HOPPING), "arrow"),
            "wid hopping (fused)": (lambda: wid.aggregate(df, HOPPING), "fused"),
            "wid tumbling": (lambda: wid.aggregate(df, TUMBLING), None),
            "spark window()": (spark_window, None)}


def totals(df: DataFrame) -> tuple[int, int]:
    row = df.agg(F.count("*"), F.sum("n")).first()
    return int(row[0]), int(row[1] or 0)


def measure(spark: Any, density: int, keys: int, repeats: int) -> dict[str, Any]:
    """One density's record: best seconds per query and the two ratios."""
    rows = density * keys * PANES_PER_DAY
    df = rows_of(spark, rows, keys)
    best: dict[str, float] = {}
    hopping_totals = None
    try:
        for name, (query, setting) in queries(df).items():
            if setting is not None:
                spark.conf.set(CONF, setting)
            try:
                if name != "wid tumbling":
                    got = totals(query())
                    hopping_totals = hopping_totals or got
                    assert got == hopping_totals, (name, got, hopping_totals)
                best[name] = min(timed(query, repeats)["runs_s"])
            finally:
                spark.conf.unset(CONF)
            print(f"  {density:3d} rows/key/pane  {name:26s} {best[name]:7.2f} s", flush=True)
    finally:
        df.unpersist()
    ratios = {"spark window() / wid hopping": best["spark window()"] / best["wid hopping"],
              "wid hopping / wid tumbling": best["wid hopping"] / best["wid tumbling"]}
    print(f"  {density:3d} rows/key/pane  " + "  ".join(f"{k} {v:.2f}x" for k, v in ratios.items()), flush=True)
    return {"scenario": f"density_{density}", "title": f"hopping 60/1, {density} rows per key and pane",
            "rows": rows, "params": {"keys": keys, "rows_per_key_and_pane": density}, "best_s": best,
            "ratios": ratios, "targets": {"spark window() / wid hopping": ">= 15", "wid hopping / wid tumbling": "<= 1.5"}}


def run(ctx: Any) -> list[dict[str, Any]]:
    keys = 100 if ctx.quick else 1000
    return [measure(ctx.spark, d, keys, max(1, ctx.repeats)) for d in DENSITIES]
