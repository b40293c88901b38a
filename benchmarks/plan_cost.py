"""What a query costs the driver before Spark runs it: building the
DataFrame (wid's plan, or the hand-written Spark query) against running it,
for the small queries where wid's fixed cost shows.

    python -m benchmarks.plan_cost [--rounds 8]

Queries: Nexmark q8 (two tumbling windows joined; `benchmarks.nexmark`,
10M events) and the ematix tumbling window (1M rows, 100 keys), each as
wid's and as Spark's own. In each round every query is built (timed: the
driver's work, Spark's analysis included) and then run to the ``noop`` sink
(timed); the first two rounds warm up. Prints the median build, run and
total per query.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from pyspark.sql import DataFrame

import wid
from benchmarks import data
from benchmarks.harness import machine, run_noop, session
from benchmarks.nexmark import generator, queries_spark, queries_wid
from benchmarks.peers.spark_peers import reader, spark_window, window_of
from benchmarks.query import WindowQuery
from benchmarks.scenarios import nexmark

EMATIX = WindowQuery("tumbling", 60_000)
WARM_UP = 2


def queries(spark: object) -> dict[str, Callable[[], DataFrame]]:
    from pyspark.sql import functions as F

    where = generator.nexmark(10_000_000, nexmark.SEED)
    read = reader(spark, data.events(1_000_000, 100))
    return {
        "q8 wid": lambda: queries_wid.QUERY["q8"](spark, where),
        "q8 spark": lambda: queries_spark.QUERY["q8"](spark, where),
        "ematix wid": lambda: wid.aggregate(read(), window_of(EMATIX)),
        "ematix spark": lambda: read().groupBy("k", spark_window(EMATIX).alias("w")).agg(
            F.count("*").alias("n"), F.sum("v").alias("s"), F.max("v").alias("hi")),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    spark = session()
    built: dict[str, list[tuple[float, float]]] = {}
    for i in range(args.rounds):
        for name, query in queries(spark).items():
            started = time.perf_counter()
            df = query()
            ready = time.perf_counter()
            run_noop(df)
            if i >= WARM_UP:
                built.setdefault(name, []).append((ready - started, time.perf_counter() - ready))
    print(f"machine: {machine()}; local[2], medians of {args.rounds - WARM_UP} rounds")
    for name, times in built.items():
        build, run = statistics.median(b for b, _ in times), statistics.median(r for _, r in times)
        total = statistics.median(b + r for b, r in times)
        print(f"  {name:14s} build {build:.3f} s  run {run:.3f} s  total {total:.3f} s")


if __name__ == "__main__":
    main()
