"""Streaming windows: wid (every stream runs on the WID operator) against
hand-written Spark Structured Streaming queries computing the same windows,
side by side.

    python -m benchmarks.stream_windows [--rows 5000000] [--keys 1000] [--files 8] [--per-trigger N] [--repeats 1]
                                        [--warm-s 60] [--partitions N] [--state-store default|rocksdb]
                                        [--paths spark,wid]

Data: `rows` events, `keys` keys, uniform event times over one day, written
once as `files` Parquet files sorted by time into a landing directory, read
with the available-now trigger: by default as Spark reads a landing
directory (no ``maxFilesPerTrigger``: all files in one micro-batch); with
``--per-trigger N``, N files a micro-batch. A Python stateful operator pays
Spark's fixed cost once per micro-batch (`tws_floor` below), so the smaller
the micro-batches, the more of the WID operator's time is that cost.
Lateness 10 minutes. Queries (count, sum, min, max, avg of v per key and
window), each written by ``foreachBatch`` to Spark's ``noop`` sink:

- wid tumbling 1 min              vs  withWatermark + groupBy(k, window(ts, 1 min))
- wid hopping 60 min / 1 min      vs  withWatermark + groupBy(k, window(ts, 60 min, 1 min))

The hand-written queries judge late rows by Spark's rule (one micro-batch
later than wid's); the data here is in time order, so no row is late and
both emit the same windows, which the checked runs compare.

Every query runs at `partitions` shuffle partitions (and so the WID
operator's shards): by default wid's, one per core. The hand-written query
runs on the state store a Spark user gets by default (HDFS-backed: every
state row on the JVM heap), or with ``--state-store rocksdb`` on RocksDB;
the WID operator always runs on RocksDB.

Each query runs on a fresh checkpoint each time. Every query has one
checked run (untimed; it also warms the JIT and the Python workers): the
rows emitted and the sum of the counts must agree between wid and the
hand-written query. Then untimed rounds until every query of its group has
run for `warm-s` seconds (the JIT warms through the whole process, and
Spark kills idle Python workers after a minute, so the WID operator's runs
follow each other as a running stream's micro-batches do), then `repeats`
timed runs, each writing every micro-batch's rows to ``noop``; the medians
are compared. Throughput is rows / wall-clock seconds from start to the end
of the available-now run. After the WID operator's runs, Spark's own floor
for a Python stateful operator over the same micro-batches
(`benchmarks.harness.tws_floor`): the part of the operator's time that is
not work on the rows. Targets: wid >= 0.9x the hand-written query for
tumbling, >= 10x for hopping 60/1.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import wid
from benchmarks.batch_windows import AGGS, spark_aggs
from benchmarks.harness import (
    available_now,
    events,
    machine,
    save,
    session,
    stream_parser,
    tws_floor,
)
from wid.spark.operator.query import ROCKSDB
from wid.spec import Window

LATENESS_MS = 600_000
WARM_S = 60.0  # seconds of its own runs every query has before its timed runs


def windows() -> dict[str, Window]:
    common: dict[str, Any] = {"event_time_column": "ts", "group_by": ["k"], "aggregations": AGGS,
                              "lateness_ms": LATENESS_MS, "max_groups_per_window": 1_000_000}
    return {"tumbling": Window(kind="tumbling", duration_ms=60_000, **common),
            "hopping": Window(kind="hopping", duration_ms=3_600_000, hop_ms=60_000, late_mode="consistent", **common)}


def hand_written(stream: DataFrame, kind: str) -> DataFrame:
    span = F.window("ts", "1 minute") if kind == "tumbling" else F.window("ts", "60 minutes", "1 minute")
    return stream.withWatermark("ts", f"{LATENESS_MS // 1000} seconds").groupBy("k", span).agg(*spark_aggs())


def checked(output: DataFrame, mode: str, checkpoint: str, provider: str | None = None) -> tuple[int, int]:
    """(rows, sum of n) `output` emits in an available-now run on state
    store `provider` (None: the session's), untimed."""
    totals = [0, 0]

    def handle(df: DataFrame, _: int) -> None:
        row = df.agg(F.count("*"), F.sum("n")).first()
        totals[0] += int(row[0])
        totals[1] += int(row[1] or 0)

    available_now(output, handle, checkpoint, mode, provider)
    return totals[0], totals[1]


def timed(output: DataFrame, mode: str, checkpoint: str, provider: str | None = None) -> float:
    """Seconds of an available-now run writing each micro-batch to
    ``noop``, on state store `provider` (None: the session's)."""
    seconds, _ = available_now(output, lambda df, _: df.write.format("noop").mode("overwrite").save(), checkpoint,
                               mode, provider)
    return seconds


def arguments() -> argparse.Namespace:
    parser = stream_parser(__doc__, rows=5_000_000, files=8, partitions=None, per_trigger=None)
    parser.add_argument("--kinds", default="tumbling,hopping")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--warm-s", type=float, default=WARM_S,
                        help="untimed rounds until every query of a group has run this long (its checked run "
                             "included; at least one round, none with 0)")
    parser.add_argument("--paths", default="spark,wid", help="which queries run: the hand-written query, wid")
    parser.add_argument("--state-store", choices=("default", "rocksdb"), default="default",
                        help="the state store of the hand-written query (the WID operator always runs on RocksDB)")
    return parser.parse_args()


def run_group(group: list[str], queries: dict[str, Callable[[], DataFrame]], results: dict[str, Any],
              args: argparse.Namespace, work: Path) -> None:
    """Checked runs, untimed rounds, then `args.repeats` timed rounds of
    the queries in `group`, into `results`."""
    provider = ROCKSDB if args.state_store == "rocksdb" else None
    warmed = {}
    for name in group:
        started = time.perf_counter()
        emitted = checked(queries[name](), "append", str(work / f"ck-{name}-checked"), provider)
        results[name] = {"emitted": emitted, "runs": []}
        warmed[name] = time.perf_counter() - started
        print(f"  {name:22s} checked: emitted {emitted}", flush=True)
        assert emitted == results[next(q for q in queries if q in results)]["emitted"], results
    rounds = 0
    while (rounds == 0 and args.warm_s > 0) or min(warmed.values()) < args.warm_s:  # the JIT still warming
        for name in group:
            warmed[name] += timed(queries[name](), "append", str(work / f"ck-{name}-warm-{rounds}"), provider)
        rounds += 1
    for name in group:
        results[name]["warm_up"] = {"rounds": rounds, "seconds": warmed[name]}
        print(f"  {name:22s} warmed up: {rounds} untimed rounds, {warmed[name]:.1f} s with its checked run", flush=True)
    for i in range(args.repeats):
        for name in group:
            seconds = timed(queries[name](), "append", str(work / f"ck-{name}-{i}"), provider)
            runs = [*results[name]["runs"], seconds]
            median = statistics.median(runs)
            results[name].update(seconds=median, runs=runs, rows_per_s=args.rows / median)
            print(f"  {name:22s} {seconds:8.2f} s  {args.rows / seconds:12,.0f} rows/s", flush=True)


def report(kind: str, results: dict[str, Any], floor: Callable[[int], float], repeats: int) -> None:
    """Spark's floor (when the WID operator ran) and the ratios to the
    hand-written query, into `results`."""
    if f"wid_{kind}" in results:
        results[f"tws_floor_{kind}_s"] = median = statistics.median(floor(i) for i in range(repeats))
        print(f"  Spark's floor for a Python stateful operator over the same micro-batches {median:6.2f} s  (read "
              "whole, 1 row in 1,000 through a do-nothing transformWithStateInPandas)", flush=True)
    target = ">= 0.9" if kind == "tumbling" else ">= 10"
    if f"wid_{kind}" in results and f"spark_{kind}" in results:
        results[f"ratio_{kind}"] = ratio = results[f"wid_{kind}"]["rows_per_s"] / results[f"spark_{kind}"]["rows_per_s"]
        print(f"  wid / hand-written throughput, {kind}: {ratio:.2f}x (target {target})", flush=True)


def main() -> None:
    args = arguments()
    spark = session(shuffle_partitions=args.partitions)
    args.partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
    work = Path(tempfile.mkdtemp(prefix="wid-stream-bench-"))
    land = work / "land"
    # each file holds one time range, in order: the stream arrives in event-time order
    events(spark, args.rows, args.keys).select("k", "ts", "v").repartitionByRange(args.files, "ts").sortWithinPartitions(
        "ts").write.parquet(str(land))
    schema = spark.read.parquet(str(land)).schema

    def source() -> DataFrame:
        reader = spark.readStream.schema(schema)
        if args.per_trigger is not None:
            reader = reader.option("maxFilesPerTrigger", args.per_trigger)
        return reader.parquet(str(land))

    results: dict[str, Any] = {}
    for kind in args.kinds.split(","):
        window = windows()[kind]
        queries: dict[str, Callable[[], DataFrame]] = {
            f"spark_{kind}": lambda k=kind: hand_written(source(), k),
            f"wid_{kind}": lambda w=window: wid.window_result(source(), w).output,
        }
        chosen = {f"{p}_{kind}" for p in args.paths.split(",")}
        for group in ([f"spark_{kind}"], [f"wid_{kind}"]):  # JVM alone, then Python
            mine = [name for name in group if name in chosen]
            if mine:
                run_group(mine, queries, results, args, work)
        report(kind, results, lambda i, k=kind: tws_floor(source(), "k", args.partitions, str(work / f"floor-{k}-{i}")),
               args.repeats)
    print(f"machine: {machine()}; {args.rows:,} rows, {args.keys:,} keys, local[2], {args.partitions} shuffle "
          f"partitions, {args.files} files, {args.per_trigger or 'all'} per trigger, state store {args.state_store}")
    save(f"stream_windows_{args.keys}", {**vars(args), "results": results})
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
