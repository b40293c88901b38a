"""The WID streaming operator against Spark's native streaming aggregation,
side by side on the same stream (issue 4's benchmark).

    python -m benchmarks.stream_operator [--rows 5000000] [--keys 1000] [--kinds tumbling,hopping]

Data: `rows` events over one day, `keys` integer keys, written once as
`files` Parquet files in arrival order and read with the available-now
trigger, `per-trigger` files per micro-batch. In the second half of the
stream 1 % of the rows arrive two days late (their event time is two days
before their arrival), so both engines find them late whatever their
watermark rule. Lateness 10 minutes.

- wid: the WID operator with ``late_data = "dlq"``: windows and the late
  rows (as dead-letter JSON) both written to Spark's ``noop`` sink;
- Spark: ``withWatermark`` + ``groupBy(k, window(...))`` in append mode,
  which drops late rows (``late_data = "drop"``).

Both must emit the same windows (row count and sum of counts) before the
timings are reported. Reported: wall clock of the available-now run after
an untimed warm-up of both engines on a small stream, rows/s, the ratio, and the peak state each held
(rows and bytes, from Spark's state-operator progress). Targets: the
operator >= 0.7x native at 1,000 keys and >= 0.5x at 100,000 keys for
tumbling, and faster than native for hopping 60/1.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from benchmarks.batch_windows import AGGS
from benchmarks.harness import DAY_US, available_now, machine, save, session, stream_parser
from benchmarks.stream_windows import LATENESS_MS, hand_written
from wid.spark.compile import compile_window
from wid.spark.operator.query import late_rows_of, windows_of
from wid.spec import Window

LATE_SHIFT_US = 2 * DAY_US


def stream(spark: Any, rows: int, keys: int, files: int, land: Path) -> None:
    """Landing files in arrival order; 1 % of the second half arrives late."""
    df = spark.range(rows).select(
        (F.rand(1) * DAY_US).cast("long").alias("arrival"), (F.rand(2) * keys).cast("int").alias("k"),
        F.rand(3).alias("v"), F.rand(4).alias("u"))
    late = (F.col("arrival") > DAY_US // 2) & (F.col("u") < 0.01)
    ts = F.when(late, F.col("arrival") - LATE_SHIFT_US).otherwise(F.col("arrival"))
    (df.select("k", F.timestamp_micros(ts).alias("ts"), "v", "arrival").repartitionByRange(files, "arrival")
     .sortWithinPartitions("arrival").drop("arrival").write.parquet(str(land)))


def window(kind: str) -> Window:
    common: dict[str, Any] = {"event_time_column": "ts", "group_by": ["k"], "aggregations": AGGS,
                              "lateness_ms": LATENESS_MS, "max_groups_per_window": 1_000_000, "late_data": "dlq"}
    if kind == "tumbling":
        return Window(kind="tumbling", duration_ms=60_000, **common)
    return Window(kind="hopping", duration_ms=3_600_000, hop_ms=60_000, **common)


def run(output: DataFrame, checkpoint: str, operator: bool) -> dict[str, Any]:
    """Run to the end; the windows emitted (rows, sum of n), late rows written,
    seconds, and the peak state (rows, bytes) from the progress."""
    totals = {"windows": 0, "n": 0, "late": 0}

    def handle(df: DataFrame, _: int) -> None:
        df = df.persist()
        windows = windows_of(df, window("tumbling")) if operator else df
        row = windows.agg(F.count("*"), F.sum("n")).first()
        totals["windows"] += int(row[0])
        totals["n"] += int(row[1] or 0)
        windows.write.format("noop").mode("overwrite").save()
        if operator:
            late = late_rows_of(df)
            totals["late"] += late.count()
            late.write.format("noop").mode("overwrite").save()
        df.unpersist()

    seconds, query = available_now(output, handle, checkpoint)
    ops = [op for p in query.recentProgress for op in (p["stateOperators"] or [])]
    return {**totals, "seconds": seconds, "peak_state_rows": max((int(o["numRowsTotal"]) for o in ops), default=0),
            "peak_state_bytes": max((int(o["memoryUsedBytes"]) for o in ops), default=0)}


def main() -> None:
    parser = stream_parser(__doc__, rows=5_000_000, files=8)
    parser.add_argument("--kinds", default="tumbling,hopping")
    args = parser.parse_args()
    spark = session(shuffle_partitions=args.partitions)
    work = Path(tempfile.mkdtemp(prefix="wid-operator-bench-"))
    stream(spark, args.rows, args.keys, args.files, work / "land")
    schema = spark.read.parquet(str(work / "land")).schema

    def source() -> DataFrame:
        return spark.readStream.schema(schema).option("maxFilesPerTrigger", args.per_trigger).parquet(
            str(work / "land"))

    # untimed warm-up of both engines on a small stream: the JVM's JIT, Spark's Python workers and their imports
    stream(spark, 50_000, args.keys, 2, work / "warm")
    small = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(work / "warm"))
    run(hand_written(small, "tumbling"), str(work / "ck-warm-spark"), operator=False)
    run(compile_window(small, window("tumbling")).operator, str(work / "ck-warm-wid"), operator=True)
    results: dict[str, Any] = {}
    for kind in args.kinds.split(","):
        result = compile_window(source(), window(kind))
        assert result.operator is not None, result.result.explain.form
        ours = run(result.operator, str(work / f"ck-wid-{kind}"), operator=True)
        native = run(hand_written(source(), kind), str(work / f"ck-spark-{kind}"), operator=False)
        assert (ours["windows"], ours["n"]) == (native["windows"], native["n"]), (ours, native)
        ratio = native["seconds"] / ours["seconds"]
        results[kind] = {"wid": ours, "spark": native, "ratio": ratio}
        for name, r in (("wid operator (dlq)", ours), ("spark native (drop)", native)):
            print(f"  {kind:8s} {name:20s} {r['seconds']:8.2f} s {args.rows / r['seconds']:11,.0f} rows/s  "
                  f"windows {r['windows']:,}  late to dead letter {r['late']:,}  peak state "
                  f"{r['peak_state_rows']:,} rows, {r['peak_state_bytes'] / 2**20:,.1f} MiB", flush=True)
        print(f"  {kind}: wid operator / Spark native throughput {ratio:.2f}x", flush=True)
    print(f"machine: {machine()}; {args.rows:,} rows, {args.keys:,} keys, local[2], {args.files} files, "
          f"{args.per_trigger} per trigger")
    save(f"stream_operator_{args.keys}", {**vars(args), "results": results})
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
