"""Hopping windows as the data's density changes: wid's hopping plan
against wid's tumbling plan and Spark's own ``window()``.

    python -m benchmarks run --only density [--quick] [--repeats 2]

Data: 1,000 keys (100 with --quick) over one day of event time, at 1, 3
and 10 rows per key and 1-minute pane (1.44M, 4.32M and 14.4M rows),
generated in Spark and cached before anything is timed, each density
twice: rows in no order, then rows in event-time order (sorted, as a log
file or a topic holds them; the pane plan's sample then sees the true
density, where on rows in no order it finds each key and pane about
once). Queries, count, sum and max of ``v`` per key, each written to
Spark's ``noop`` sink:

- ``wid hopping``: hopping 60 min every 1 min, the plan wid chooses by
  itself (`wid.spark.pane_plan`, a sample of the first rows, taken in the
  warm-up and reused by the timed runs, as by any query repeated over the
  same input);
- ``wid hopping, input new to wid``: the same, with the sample taken in
  every run (`pane_plan.forget` first), as a query's first run pays it;
- ``wid hopping (two-phase)`` and ``wid hopping (fused)``: the same with
  ``spark.wid.paneMerge`` forcing each of the two pane plans wid chooses
  between, so the table shows what the choice gains;
- ``wid tumbling``: tumbling 1 min, the cost of one window per row;
- ``spark window()``: ``groupBy(k, window(ts, 60 min, 1 min))``, which
  copies each row into its 60 windows;
- ``floor: rows through Python``: no windows at all, the cost of moving
  the rows through Python as the fused plan does (`python_floor`). Spark
  ``window()`` / floor bounds the ratio any plan that merges in Python can
  reach.

wid's hopping plans and Spark's must emit the same windows (rows and sum
of counts) before any time is reported. Every query warms up once (the
check), then all are timed in turns, `repeats` rounds
(`benchmarks.suite.in_turns`). Reported per density: each query's best
time and the ratios the targets are about: Spark ``window()`` / wid
hopping (target >= 15x) and wid hopping / wid tumbling (target <= 1.5x),
with Spark ``window()`` / floor beside them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import wid
from benchmarks.harness import DAY_US, run_noop, totals
from benchmarks.suite import in_turns
from wid.spark import pane_plan
from wid.spark.arrow_merge import CONF
from wid.spark.panes import by_key
from wid.spec import Aggregation, Window

TITLE = "hopping 60/1 at 1, 3 and 10 rows per key and pane: wid hopping vs wid tumbling vs Spark window()"
DENSITIES = (1, 3, 10)  # rows per key and 1-minute pane
PANES_PER_DAY = 1440
AGGS = (Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s"), Aggregation("max", "v", as_="hi"))
HOPPING = Window(kind="hopping", duration_ms=3_600_000, hop_ms=60_000, event_time_column="ts", group_by=("k",),
                 aggregations=AGGS)
TUMBLING = Window(kind="tumbling", duration_ms=60_000, event_time_column="ts", group_by=("k",), aggregations=AGGS)


ORDERS = ("unordered", "ordered")


def rows_of(spark: Any, rows: int, keys: int, ordered: bool = False) -> DataFrame:
    """`rows` rows, uniform over `keys` keys and one day, in event-time
    order when `ordered` (else in no order), cached."""
    df = spark.range(rows).select((F.rand(11) * keys).cast("int").alias("k"),
                                  F.timestamp_micros((F.rand(12) * DAY_US).cast("long")).alias("ts"),
                                  F.rand(13).alias("v"))
    df = (df.orderBy("ts") if ordered else df).cache()
    df.count()
    return df


def queries(df: DataFrame) -> dict[str, tuple[Callable[[], DataFrame], str | None]]:
    """Each query of the module docstring and the ``spark.wid.paneMerge``
    it runs under (None: unset, wid's own choice)."""
    def spark_window() -> DataFrame:
        return df.groupBy("k", F.window("ts", "60 minutes", "1 minute").alias("w")).agg(
            F.count("*").alias("n"), F.sum("v").alias("s"), F.max("v").alias("hi"))
    def first_query() -> DataFrame:
        pane_plan.forget()
        return wid.aggregate(df, HOPPING)
    return {"wid hopping": (lambda: wid.aggregate(df, HOPPING), None),
            FIRST: (first_query, None),
            "wid hopping (two-phase)": (lambda: wid.aggregate(df, HOPPING), "arrow"),
            "wid hopping (fused)": (lambda: wid.aggregate(df, HOPPING), "fused"),
            FLOOR: (lambda: python_floor(df), None),
            "wid tumbling": (lambda: wid.aggregate(df, TUMBLING), None),
            "spark window()": (spark_window, None)}


FLOOR = "floor: rows through Python"
FIRST = "wid hopping, input new to wid"


def python_floor(df: DataFrame) -> DataFrame:
    """What any plan that hands a key's rows to Python costs before it
    merges anything: `df`'s rows with their 1-minute pane, shuffled by key
    as the fused plan shuffles them (`wid.spark.panes.by_key`), through a
    ``mapInArrow`` that returns each row as a window row of the fused
    plan's shape (key, pane, count, sum, max) without merging, then the
    window bounds as wid assembles them. The fused plan's output has about
    as many rows (one window per key and pane, plus 59 at each key's end)."""
    import pyarrow as pa

    def as_window_rows(batches: Any) -> Any:  # defined here: pickled by value to the executors
        for b in batches:
            ones = pa.array([1] * b.num_rows, pa.int64())
            yield pa.RecordBatch.from_arrays([b.column(0), b.column(1), ones, b.column(2), b.column(2)],
                                             names=["k", "pane", "n", "s", "hi"])

    pane = F.floor(F.unix_micros("ts") / 60_000_000).cast("long")
    rows = by_key(df.select("k", pane.alias("pane"), "v"), ["k"])
    out = rows.mapInArrow(as_window_rows, "k int, pane long, n long, s double, hi double")
    start = F.col("pane") * 60_000_000
    return out.select(F.timestamp_micros(start).alias("window_start"),
                      F.timestamp_micros(start + 3_600_000_000).alias("window_end"), "k", "n", "s", "hi")


def engines(spark: Any, df: DataFrame) -> list[tuple[str, Callable[[bool], None]]]:
    """The queries as `benchmarks.suite.in_turns` engines. The warm-up of
    every hopping plan and of Spark's ``window()`` computes their windows'
    totals (rows and sum of counts), which must all be the same."""
    expected: list[tuple[int, int]] = []

    def engine(name: str, query: Callable[[], DataFrame], setting: str | None) -> Callable[[bool], None]:
        def run(warm_up: bool) -> None:
            if setting is not None:
                spark.conf.set(CONF, setting)
            try:
                if warm_up and (name.startswith("wid hopping") or name == "spark window()"):
                    got = totals(query())
                    assert got == (expected or [got])[0], (name, got, expected)
                    expected.append(got)
                else:
                    run_noop(query())
            finally:
                spark.conf.unset(CONF)
        return run
    return [(name, engine(name, query, setting)) for name, (query, setting) in queries(df).items()]


def measure(spark: Any, density: int, keys: int, repeats: int, order: str = "unordered") -> dict[str, Any]:
    """One density's and order's record: best seconds per query and the ratios."""
    rows = density * keys * PANES_PER_DAY
    df = rows_of(spark, rows, keys, order == "ordered")
    try:
        best = {r.engine: min(r.runs_s) for r in in_turns(engines(spark, df), repeats)}
    finally:
        df.unpersist()
    for name, seconds in best.items():
        print(f"  {density:3d} rows/key/pane, {order:9s}  {name:30s} {seconds:7.2f} s", flush=True)
    ratios = {"spark window() / wid hopping": best["spark window()"] / best["wid hopping"],
              "wid hopping / wid tumbling": best["wid hopping"] / best["wid tumbling"],
              "spark window() / wid hopping on new input": best["spark window()"] / best[FIRST],
              "spark window() / floor": best["spark window()"] / best[FLOOR]}
    print(f"  {density:3d} rows/key/pane, {order:9s}  " + "  ".join(f"{k} {v:.2f}x" for k, v in ratios.items()),
          flush=True)
    suffix = "" if order == "unordered" else f"_{order}"
    return {"scenario": f"density_{density}{suffix}", "title": f"hopping 60/1, {density} rows per key and pane, {order}",
            "rows": rows, "params": {"keys": keys, "rows_per_key_and_pane": density, "order": order}, "best_s": best,
            "ratios": ratios, "targets": {"spark window() / wid hopping": ">= 15", "wid hopping / wid tumbling": "<= 1.5"}}


def run(ctx: Any) -> list[dict[str, Any]]:
    keys = 100 if ctx.quick else 1000
    return [measure(ctx.spark, d, keys, max(1, ctx.repeats), order) for order in ORDERS for d in DENSITIES]
