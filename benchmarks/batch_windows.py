"""Batch windows: wid against Spark's window() and a plain groupBy, side by side.

    python -m benchmarks.batch_windows [--rows 5000000] [--keys 1000]

Data: `rows` events, `keys` keys, uniform event times over one day, on
local[2]. Queries (count, sum, min, max, avg of v per key and window):

- wid tumbling 1 min            vs  Spark window() tumbling 1 min
- wid hopping 60 min / 1 min    vs  Spark window() hopping (copies each row 60x)
- wid hopping                   vs  wid tumbling
- wid tumbling                  vs  plain groupBy(k, ts_us div 60 s)

Every pair is checked to compute the same result (row count and a checksum)
so no engine wins by computing less. Targets (issue 2): hopping >= 15x
faster than window(); wid hopping <= 1.5x wid tumbling; wid tumbling <=
1.3x the plain groupBy. Writes benchmarks/results/batch_windows.json.
"""

from __future__ import annotations

import argparse
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import wid
from benchmarks.harness import events, machine, save, session, timed
from wid.spec import Aggregation, Window

AGGS = (Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s"), Aggregation("min", "v", as_="lo"),
        Aggregation("max", "v", as_="hi"), Aggregation("avg", "v", as_="mean"))


def spark_aggs() -> list[Any]:
    return [F.count("*").alias("n"), F.sum("v").alias("s"), F.min("v").alias("lo"), F.max("v").alias("hi"),
            F.avg("v").alias("mean")]


def queries(df: DataFrame) -> dict[str, Any]:
    tumbling = Window(kind="tumbling", duration_ms=60_000, event_time_column="ts", group_by=["k"], aggregations=AGGS)
    hopping = Window(kind="hopping", duration_ms=3_600_000, hop_ms=60_000, event_time_column="ts", group_by=["k"],
                     aggregations=AGGS)
    return {
        "plain_groupby": lambda: df.groupBy("k", F.expr("ts_us div 60000000").alias("b")).agg(*spark_aggs()),
        "wid_tumbling": lambda: wid.aggregate(df, tumbling),
        "spark_window_tumbling": lambda: df.groupBy("k", F.window("ts", "1 minute")).agg(*spark_aggs()),
        "wid_hopping": lambda: wid.aggregate(df, hopping),
        "spark_window_hopping": lambda: df.groupBy("k", F.window("ts", "60 minutes", "1 minute")).agg(*spark_aggs()),
    }


def checksum(df: DataFrame) -> tuple[int, int, float]:
    r = df.agg(F.count("*"), F.sum("n"), F.sum("s")).first()
    return int(r[0]), int(r[1]), round(float(r[2]), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    spark = session()
    df = events(spark, args.rows, args.keys)
    qs = queries(df)
    sums = {name: checksum(q()) for name, q in qs.items() if name != "plain_groupby"}
    assert sums["wid_tumbling"] == sums["spark_window_tumbling"], sums
    assert sums["wid_hopping"] == sums["spark_window_hopping"], sums
    times = {name: timed(q, args.repeats) for name, q in qs.items()}
    med = {name: t["median_s"] for name, t in times.items()}
    ratios = {
        "spark_window_hopping / wid_hopping (target >= 15)": med["spark_window_hopping"] / med["wid_hopping"],
        "spark_window_tumbling / wid_tumbling": med["spark_window_tumbling"] / med["wid_tumbling"],
        "wid_hopping / wid_tumbling (target <= 1.5)": med["wid_hopping"] / med["wid_tumbling"],
        "wid_tumbling / plain_groupby (target <= 1.3)": med["wid_tumbling"] / med["plain_groupby"],
    }
    print(f"machine: {machine()}; {args.rows:,} rows, {args.keys:,} keys, local[2]")
    for name, t in times.items():
        print(f"  {name:24s} median {t['median_s']:7.2f} s   runs {[round(x, 2) for x in t['runs_s']]}")
    for name, r in ratios.items():
        print(f"  {name:55s} {r:6.2f}x")
    save("batch_windows", {"rows": args.rows, "keys": args.keys, "times": times, "ratios": ratios,
                           "checksums": {k: list(v) for k, v in sums.items()}})


if __name__ == "__main__":
    main()
