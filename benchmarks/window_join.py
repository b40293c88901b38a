"""Window join: wid.window_join against Spark SQL's range join + group-by and
DuckDB's range join, in one run.

    python -m benchmarks.window_join [--rows 1000000] [--keys 1000] [--span-s 1000] [--repeats 3]

Data: `rows` left rows (id, k, ts_us) and `rows` right rows (k, ts_us, v),
`keys` integer keys, times uniform over `span_s` seconds (so a 4-second window
holds about ``4 * rows / keys / span_s`` right rows of its key). Query: for each
left row, sum, avg and last (by time) of v over the right rows of its key in
[t - 2 s, t + 2 s]; every left row is output (a left join).

- wid: `wid.window_join` (sort-based, one shuffle per side, Arrow range merge);
- Spark: ``LEFT JOIN ... ON l.k = r.k AND r.ts_us BETWEEN ...`` then
  ``GROUP BY`` the left row, on the same cached DataFrames, local[2];
- DuckDB: the same SQL on the same data, 2 threads, materialised into a
  temporary table.

All three are checked to agree (row count and checksums) before timing.
Targets (issue 6): wid >= 20x faster than Spark's range join, within 2x of
DuckDB, and doubling both inputs costs <= 2.2x. Writes
benchmarks/results/window_join.json.

    python -m benchmarks.window_join --stream [--rows 1000000] [--files 16] [--per-trigger 2]

Streaming (issue 6, part 4): the same two tables land as `files` Parquet
files in time order (both sides in each file, tagged by a ``side`` column,
each file's modification time in order, so the stream reads them in time
order), then one file with a right row per key past every window (the
flush: a stream fires a window only on a later right row of its key). The
join runs on two streams over that landing directory, `per-trigger` files
per micro-batch, available-now, into Spark's ``noop`` sink. Its output must
equal the batch join's (checksums) before throughput (rows of both sides per
second) and the operator's peak state rows are reported, beside the batch
join's time on the same data. Writes benchmarks/results/window_join_stream.json.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import wid
from benchmarks.harness import drain, machine, save, session, stream_parser, timed
from wid.spark.compile import compile_join
from wid.spark.operator.join_query import fired_output
from wid.spec import Aggregation
from wid.spec.join import WindowJoin

HALF_WINDOW_US = 2_000_000
METRICS = (Aggregation("sum", "v", as_="s"), Aggregation("avg", "v", as_="a"), Aggregation("last", "v", as_="l"))
# `last` as wid defines it: the value of the latest right row, ties broken by the largest value
# (the data has a few right rows of one key at the same microsecond)
LAST = {"spark": "max_by(r.v, struct(r.ts_us, r.v))", "duckdb": "arg_max(r.v, row(r.ts_us, r.v))"}
RANGE_JOIN = """
SELECT l.id, l.k, l.ts_us, sum(r.v) AS s, avg(r.v) AS a, {last} AS l
FROM lt l LEFT JOIN rt r ON l.k = r.k AND r.ts_us BETWEEN l.ts_us - {half} AND l.ts_us + {half}
GROUP BY l.id, l.k, l.ts_us
"""


def range_join(engine: str) -> str:
    return RANGE_JOIN.format(last=LAST[engine], half=HALF_WINDOW_US)


def tables(rows: int, keys: int, span_s: int, seed: int = 7) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    span = span_s * 1_000_000
    left = pd.DataFrame({"id": np.arange(rows, dtype=np.int64), "k": rng.integers(0, keys, rows, dtype=np.int32),
                         "ts_us": rng.integers(0, span, rows)})
    right = pd.DataFrame({"k": rng.integers(0, keys, rows, dtype=np.int32), "ts_us": rng.integers(0, span, rows),
                          "v": rng.random(rows)})
    return left, right


def cached(spark: Any, frame: pd.DataFrame) -> DataFrame:
    df = spark.createDataFrame(frame).cache()
    df.count()
    return df


def checksum(rows: list[Any]) -> tuple[int, float, float, float]:
    r = rows[0]
    return int(r[0]), float(r[1]), float(r[2]), float(r[3])


CHECK = "SELECT count(*), sum(s), sum(a), sum(l) FROM ({q})"


def agree(a: tuple[int, float, float, float], b: tuple[int, float, float, float]) -> bool:
    return a[0] == b[0] and all(math.isclose(x, y, rel_tol=1e-9) for x, y in zip(a[1:], b[1:], strict=True))


def duck_timed(con: Any, repeats: int) -> dict[str, Any]:
    sql = f"CREATE OR REPLACE TEMP TABLE out AS {range_join('duckdb')}"
    con.execute(sql)
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        con.execute(sql)
        runs.append(time.perf_counter() - started)
    return {"median_s": statistics.median(runs), "runs_s": runs}


def wid_query(left: DataFrame, right: DataFrame) -> DataFrame:
    return wid.window_join(left, right, window=(-2000, 2000), metrics=METRICS, matching_column="k",
                           time_column="ts_us", time_unit="us")


def land(left: pd.DataFrame, right: pd.DataFrame, files: int, path: Path, flush_us: int) -> None:
    """Both tables as `files` Parquet files in time order, then the flush
    file: a right row per key at `flush_us` (v = 0)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    both = pd.concat([left.assign(side="left", v=np.nan), right.assign(side="right", id=-1)], ignore_index=True)
    both = both.sort_values("ts_us", kind="stable")[["side", "id", "k", "ts_us", "v"]]
    keys = np.unique(right["k"].to_numpy())
    flush = pd.DataFrame({"side": "right", "id": -1, "k": keys.astype(np.int32), "ts_us": flush_us, "v": 0.0})
    path.mkdir(parents=True)
    for i, part in enumerate([*np.array_split(both, files), flush]):
        name = path / f"part-{i:05d}.parquet"
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False), name)
        os.utime(name, (1_000_000 + i, 1_000_000 + i))


def run_stream(spark: Any, path: Path, per_trigger: int, checkpoint: str) -> dict[str, Any]:
    """The window join on two streams over the landing files: seconds,
    checksum of the joined rows, peak state rows (all shards) after any
    micro-batch."""
    schema = spark.read.parquet(str(path)).schema
    rows = spark.readStream.schema(schema).option("maxFilesPerTrigger", per_trigger).parquet(str(path))
    left = rows.where("side = 'left'").select("id", "k", "ts_us")
    right = rows.where("side = 'right'").select("k", "ts_us", "v")
    result = compile_join(left, right, wid_join())
    assert result.operator is not None
    sums: list[Any] = [0, 0.0, 0.0, 0.0]

    def tally(out: DataFrame) -> None:
        got = out.agg(F.count("*"), F.sum("s"), F.sum("a"), F.sum("l")).first()  # NULL sums: nothing fired
        assert got is not None
        sums[:] = [x + (y or 0) for x, y in zip(sums, got, strict=True)]

    ran = drain(result.operator, checkpoint, lambda df: fired_output(df, wid_join(), ["id", "k", "ts_us"]), tally)
    return {**ran, "checksum": tuple(sums)}


def wid_join() -> WindowJoin:
    """`wid_query`'s join as a spec (for the streaming run)."""
    return WindowJoin(window=(-2000, 2000), metrics=METRICS, matching_column="k", time_column="ts_us",
                      time_unit="us")


def stream_main(args: argparse.Namespace) -> None:
    """The streaming benchmark (see the module docstring)."""
    spark = session(shuffle_partitions=args.partitions)
    work = Path(tempfile.mkdtemp(prefix="wid-join-bench-"))
    left_pd, right_pd = tables(args.rows, args.keys, args.span_s)
    left, right = cached(spark, left_pd), cached(spark, right_pd)
    batch = timed(lambda: wid_query(left, right), args.repeats)
    want = checksum(wid_query(left, right).select(F.count("*"), F.sum("s"), F.sum("a"), F.sum("l")).collect())
    flush_us = (args.span_s + 10) * 1_000_000
    warm_left, warm_right = tables(20_000, args.keys, args.span_s, seed=9)
    land(warm_left, warm_right, 2, work / "warm", flush_us)
    run_stream(spark, work / "warm", 1, str(work / "ck-warm"))  # untimed: Python workers, imports
    land(left_pd, right_pd, args.files, work / "land", flush_us)
    streamed = run_stream(spark, work / "land", args.per_trigger, str(work / "ck"))
    assert agree(streamed["checksum"], want), (streamed["checksum"], want)
    rate = 2 * args.rows / streamed["seconds"]
    print(f"machine: {machine()}; {args.rows:,} + {args.rows:,} rows, {args.keys:,} keys, {args.files} files, "
          f"{args.per_trigger} per micro-batch, local[2]")
    print(f"  batch wid_window_join  median {batch['median_s']:7.2f} s")
    print(f"  streaming              {streamed['seconds']:7.2f} s   {rate:,.0f} rows/s   "
          f"batch / streaming {batch['median_s'] / streamed['seconds']:.2f}x   "
          f"peak state {streamed['peak_state_rows']:,} rows ({streamed['peak_state_rows'] / args.keys:,.1f} per key)")
    save("window_join_stream", {"rows": args.rows, "keys": args.keys, "span_s": args.span_s, "files": args.files,
                                "per_trigger": args.per_trigger, "batch": batch, "stream": streamed,
                                "rows_per_s": rate})


def main() -> None:
    parser = stream_parser(__doc__, rows=1_000_000, files=16)
    parser.add_argument("--span-s", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--stream", action="store_true", help="the streaming benchmark")
    args = parser.parse_args()
    if args.stream:
        stream_main(args)
        return
    spark = session(shuffle_partitions=args.partitions)
    left_pd, right_pd = tables(args.rows, args.keys, args.span_s)
    left, right = cached(spark, left_pd), cached(spark, right_pd)
    left.createOrReplaceTempView("lt")
    right.createOrReplaceTempView("rt")
    con = duckdb.connect()
    con.execute("SET threads TO 2")
    con.register("lt", left_pd)
    con.register("rt", right_pd)
    queries = {"wid_window_join": lambda: wid_query(left, right), "spark_range_join": lambda: spark.sql(range_join("spark"))}
    sums = {name: checksum(q().select(F.count("*"), F.sum("s"), F.sum("a"), F.sum("l")).collect())
            for name, q in queries.items()}
    sums["duckdb_range_join"] = checksum(con.execute(CHECK.format(q=range_join("duckdb"))).fetchall())
    assert agree(sums["wid_window_join"], sums["spark_range_join"]), sums
    assert agree(sums["wid_window_join"], sums["duckdb_range_join"]), sums
    times = {name: timed(q, args.repeats) for name, q in queries.items()}
    times["duckdb_range_join"] = duck_timed(con, args.repeats)
    left2_pd, right2_pd = tables(2 * args.rows, args.keys, args.span_s, seed=8)
    left2, right2 = cached(spark, left2_pd), cached(spark, right2_pd)
    times["wid_window_join_2x"] = timed(lambda: wid_query(left2, right2), args.repeats)
    med = {name: t["median_s"] for name, t in times.items()}
    ratios = {
        "spark_range_join / wid (target >= 20)": med["spark_range_join"] / med["wid_window_join"],
        "wid / duckdb_range_join (target <= 2)": med["wid_window_join"] / med["duckdb_range_join"],
        "wid 2x inputs / wid (target <= 2.2)": med["wid_window_join_2x"] / med["wid_window_join"],
    }
    per_window = 4 * args.rows / args.keys / args.span_s
    print(f"machine: {machine()}; {args.rows:,} + {args.rows:,} rows, {args.keys:,} keys, span {args.span_s} s "
          f"(~{per_window:.1f} right rows per window), local[2]")
    for name, t in times.items():
        print(f"  {name:22s} median {t['median_s']:7.2f} s   runs {[round(x, 2) for x in t['runs_s']]}")
    for name, r in ratios.items():
        print(f"  {name:40s} {r:6.2f}x")
    save("window_join", {"rows": args.rows, "keys": args.keys, "span_s": args.span_s, "times": times,
                         "ratios": ratios, "checksums": sums})


if __name__ == "__main__":
    main()
