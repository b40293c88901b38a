"""Count windows hopping one row: Spark's row frame against the panes'
merge, as the rows a window grow: the measurement behind
`wid.spark.count_windows.ROW_FRAME_UP_TO`.

    python -m benchmarks.count_frames [--rows 2000000] [--keys 1000] [--sizes 4,10,16,32,100] [--repeats 3]

Data: `rows` rows over `keys` partitions (``k``), event times spread over
one day, generated in Spark and cached. Query: a count window of `size`
rows every row per ``k``, avg, max and count. Plans, each run to Spark's
``noop`` sink after one warm-up, `repeats` times:

- ``row frame``: ``ROWS BETWEEN size - 1 PRECEDING AND CURRENT ROW`` in
  the rank's sort (wid's plan up to `ROW_FRAME_UP_TO` rows);
- ``panes``: ranks, panes of one row and the fused NumPy merge (wid's plan
  above it).

Both plans' outputs must agree (rows, sum of counts) before the times are
printed, with the ratio row frame / panes.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pyspark.sql import functions as F

import wid
from benchmarks.harness import machine, session, timed, totals, warm_up
from wid.spark import count_windows
from wid.spec import Aggregation, Window

AGGS = (Aggregation("avg", "v", as_="a"), Aggregation("max", "v", as_="hi"), Aggregation("count", as_="n"))


@contextmanager
def form(row_frame: bool) -> Iterator[None]:
    """Plan every count window hopping one row as a row frame, or never."""
    was = count_windows.ROW_FRAME_UP_TO
    count_windows.ROW_FRAME_UP_TO = 10**9 if row_frame else 0
    try:
        yield
    finally:
        count_windows.ROW_FRAME_UP_TO = was


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--sizes", default="4,10,16,32,100")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    spark: Any = session()
    warm_up(spark)
    rows = spark.range(args.rows).select((F.col("id") * 7919 % 86_400_000).alias("ts"),
                                         (F.col("id") % args.keys).alias("k"), F.rand(1).alias("v")).cache()
    rows.count()
    print(f"machine: {machine()}; {args.rows:,} rows, {args.keys:,} keys, local[2], {args.repeats} runs each")
    for size in (int(x) for x in args.sizes.split(",")):
        w = Window(kind="count", size_rows=size, hop_rows=1, partition_by=("k",), event_time_column="ts",
                   event_time_unit="ms", aggregations=AGGS)
        medians, expected = {}, None
        for name, row_frame in (("row frame", True), ("panes", False)):
            with form(row_frame):
                got = totals(wid.aggregate(rows, w))
                expected = expected or got
                assert got == expected, (name, got, expected)
                medians[name] = timed(functools.partial(wid.aggregate, rows, w), args.repeats)["median_s"]
        print(f"  size {size:4d}: row frame {medians['row frame']:5.2f} s, panes {medians['panes']:5.2f} s, "
              f"row frame / panes {medians['row frame'] / medians['panes']:4.2f}", flush=True)


if __name__ == "__main__":
    main()
