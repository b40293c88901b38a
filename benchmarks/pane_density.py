"""Batch hopping plans as the rows per pane and range / slide change: the
measurements behind wid's choice of plan (`wid.spark.panes`,
`wid.spark.time_windows.COPY_MAX_WINDOWS`).

    python -m benchmarks.pane_density [--rows 5000000] [--keys 1000] [--per-pane 3.5,20,60]
                                      [--ratios 2,3,5,60] [--repeats 3]

Data: `benchmarks.data.events` with `keys` keys and a rate chosen so that a
key's 1-minute pane holds `per-pane` rows on average. Query: hopping windows
of `ratio` minutes every minute, count, sum and max of ``v`` per key. Plans,
each run to Spark's ``noop`` sink after one warm-up, `repeats` times:

- ``panes``: wid's default above `COPY_MAX_WINDOWS` windows a row (Spark's
  pane aggregate, partial aggregation before the shuffle, then the
  vectorised merge), here at every ratio;
- ``fused``: ``spark.wid.paneMerge = fused`` (rows shuffled by key, one
  NumPy pass makes the panes and merges them), at every ratio;
- ``copy``: wid's copy form (each row into its windows), whatever the ratio;
- ``window()``: Spark's own ``window(ts, ratio min, 1 min)``.

Every plan's output must match the ``panes`` plan's (rows, sum of counts)
before its time is printed, as a median and as a ratio to ``panes``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import wid
from benchmarks import data
from benchmarks.harness import machine, session, timed, totals, warm_up
from benchmarks.peers.spark_peers import reader, spark_window, window_of
from benchmarks.query import WindowQuery
from wid.spark import time_windows
from wid.spark.arrow_merge import CONF

SLIDE_MS = 60_000


@contextmanager
def plan(spark: Any, name: str) -> Any:
    """Run the body under plan `name` (see the module docstring)."""
    copy_max = time_windows.COPY_MAX_WINDOWS
    if name == "fused":
        spark.conf.set(CONF, "fused")
    time_windows.COPY_MAX_WINDOWS = 10**9 if name == "copy" else 0  # the pane plans at every ratio
    try:
        yield
    finally:
        spark.conf.unset(CONF)
        time_windows.COPY_MAX_WINDOWS = copy_max


def queries(read: Callable[[], DataFrame], q: WindowQuery) -> dict[str, Callable[[], DataFrame]]:
    def spark_query() -> DataFrame:
        return read().groupBy("k", spark_window(q).alias("w")).agg(
            F.count("*").alias("n"), F.sum("v").alias("s"), F.max("v").alias("hi"))
    def wid_query() -> DataFrame:
        return wid.aggregate(read(), window_of(q))
    return {"panes": wid_query, "fused": wid_query, "copy": wid_query, "window()": spark_query}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--per-pane", default="3.5,20,60")
    parser.add_argument("--ratios", default="2,3,5,60")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    spark = session()
    warm_up(spark)
    print(f"machine: {machine()}; {args.rows:,} rows, {args.keys:,} keys, local[2], {args.repeats} runs each")
    for per_pane in (float(x) for x in args.per_pane.split(",")):
        rate = max(1, round(per_pane * args.keys * 1000 / SLIDE_MS))
        read = reader(spark, data.events(args.rows, args.keys, rate_per_s=rate))
        for ratio in (int(x) for x in args.ratios.split(",")):
            q = WindowQuery("hopping", ratio * SLIDE_MS, SLIDE_MS)
            medians, expected = {}, None
            for name, query in queries(read, q).items():
                with plan(spark, name):
                    got = totals(query())
                    expected = expected or got
                    assert got == expected, (name, got, expected)
                    medians[name] = timed(query, args.repeats)["median_s"]
            base = medians["panes"]
            cells = "  ".join(f"{n} {s:6.2f} s ({s / base:4.2f})" for n, s in medians.items())
            print(f"  {rate * SLIDE_MS / 1000 / args.keys:5.1f} rows/pane, ratio {ratio:3d}:  {cells}", flush=True)


if __name__ == "__main__":
    main()
