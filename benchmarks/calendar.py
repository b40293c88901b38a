"""Calendar windows in batch: what a time zone costs, and monthly totals
against the query Spark users write by hand.

    python -m benchmarks.calendar [--rows 4000000] [--keys 100] [--zone America/New_York] [--repeats 5]

Data: `rows` events with uniform event times over 2013 (a TIMESTAMP ``ts``),
`keys` integer keys ``k`` and a double ``v``, generated in Spark and cached.
Every query counts and sums ``v`` per key and window and runs to Spark's
``noop`` sink; the queries run in turns (one run of each, `repeats` turns,
after a warm-up) so that a shared machine's load falls on all of them
alike, and each figure is a median. Printed side by side, with the ratios
the targets name (issue 47):

- daily windows in `zone` / daily windows in UTC (target: at most 1.2);
- wid's monthly windows in `zone` / Spark's hand-written
  ``groupBy(k, date_trunc('MONTH', from_utc_timestamp(ts, zone)))``
  (session time zone UTC, which that query needs; target: at most 1.0).

Before anything is timed, the paired outputs agree: the same rows and count
of events (the daily ones in UTC and in the zone on the total count only,
their windows differ).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import wid
from benchmarks.harness import machine, run_noop, session, totals, warm_up
from wid.spec import Aggregation, Window

YEAR_US = 365 * 86_400_000_000
START_US = 1_356_998_400_000_000  # 2013-01-01T00:00:00Z
AGGS = (Aggregation("count", as_="n"), Aggregation("sum", "v", as_="total"))


def rows_of(spark: Any, n: int, keys: int) -> DataFrame:
    """The events, cached and materialised."""
    df = spark.range(n).select(
        F.timestamp_micros((F.rand(7) * YEAR_US).cast("long") + START_US).alias("ts"),
        (F.rand(8) * keys).cast("int").alias("k"), F.rand(9).alias("v")).cache()
    df.count()
    return df


def queries(df: DataFrame, zone: str) -> dict[str, Callable[[], DataFrame]]:
    """The timed queries, by name."""
    def window(**shape: Any) -> Window:
        return Window(kind="tumbling", event_time_column="ts", group_by=("k",), aggregations=AGGS, **shape)

    daily_utc, daily_zone = window(duration_ms=86_400_000), window(duration_ms=86_400_000, time_zone=zone)
    monthly = window(duration_months=1, time_zone=zone)
    return {
        "wid daily, UTC": lambda: wid.aggregate(df, daily_utc),
        f"wid daily, {zone}": lambda: wid.aggregate(df, daily_zone),
        f"wid monthly, {zone}": lambda: wid.aggregate(df, monthly),
        f"Spark date_trunc monthly, {zone}": lambda: df.groupBy(
            "k", F.date_trunc("MONTH", F.from_utc_timestamp("ts", zone)).alias("month")).agg(
            F.count("*").alias("n"), F.sum("v").alias("total")),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--zone", default="America/New_York")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    spark: Any = session()
    spark.conf.set("spark.sql.session.timeZone", "UTC")  # the hand-written query truncates in the session's zone
    warm_up(spark)
    df = rows_of(spark, args.rows, args.keys)
    named = queries(df, args.zone)
    names = list(named)
    made = {name: totals(q()) for name, q in named.items()}
    assert made[names[0]][1] == made[names[1]][1] == args.rows, made
    assert made[names[2]] == made[names[3]], made
    runs: dict[str, list[float]] = {name: [] for name in names}
    for name in names:
        run_noop(named[name]())  # warm-up
    for _ in range(args.repeats):
        for name in names:
            started = time.perf_counter()
            run_noop(named[name]())
            runs[name].append(time.perf_counter() - started)
    median = {name: statistics.median(times) for name, times in runs.items()}
    print(f"machine: {machine()}; {args.rows:,} rows over 2013, {args.keys:,} keys, local[2], "
          f"{args.repeats} runs each in turns")
    for name in names:
        print(f"  {name:45s} median {median[name]:6.2f} s   runs " + ", ".join(f"{t:.2f}" for t in runs[name]))
    print(f"  daily in {args.zone} / daily in UTC: {median[names[1]] / median[names[0]]:.2f} (target <= 1.2)")
    print(f"  wid monthly / Spark date_trunc monthly: {median[names[2]] / median[names[3]]:.2f} (target <= 1.0)")


if __name__ == "__main__":
    main()
