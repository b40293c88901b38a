"""Rolling windows: wid batch, wid streaming (the WID operator) and Spark
SQL's range-frame window function, on the same data (issue 5's benchmark).

    python -m benchmarks.stream_rolling [--rows 5000000] [--keys 1000] [--files 16] [--per-trigger N]
                                        [--also-per-trigger 2] [--partitions N]

Data: `rows` events with uniform event times over one day (about 208 rows
per key per hour at 5M rows and 1,000 keys, nearly all at distinct
microseconds), `keys` integer keys, a double `v`. Query: per key, for
every row, count, sum, min, max and avg of `v` over the hour before it,
``(t - 1 h, t]``:

- wid batch: ``wid.aggregate`` of a ``rolling`` window (sorted prefix
  sums), over the generated rows cached in memory, and again over the
  landing files the streams read;
- Spark: ``... OVER (PARTITION BY k ORDER BY ts_us RANGE BETWEEN
  3599999999 PRECEDING AND CURRENT ROW)``, over the cached rows;
- wid streaming: the same window on a stream of `files` Parquet files in
  event-time order and a last file holding a punctuation that closes the
  last rows, lateness 0, read with the available-now trigger: by default
  as Spark reads a landing directory (no ``maxFilesPerTrigger``: every
  file in one micro-batch), with ``--per-trigger N`` N files a
  micro-batch; outputs to Spark's ``noop`` sink.

The streaming target is judged at Spark's default read, as issue 3's
targets are (`benchmarks.stream_windows`): the issue sets no micro-batch
size, and a stream catching up on a landing directory reads it so unless
the user limits it. Smaller micro-batches (``--also-per-trigger``, by
default 2 files: 8 micro-batches of 625,000 rows, then the punctuation's) are measured beside it,
since a Python stateful operator pays Spark's fixed cost (`tws_floor`
below) once per micro-batch. (Until 2026-11-24, fifteenth stop, the
default was 2 files a micro-batch, kept from the first version of this
benchmark, and the target was judged there.) The state target is judged
on the run with the most micro-batches: a run whose one micro-batch also
reads the closing punctuation ends holding nothing.

The streaming throughput target is judged against wid batch over the same
landing files: the same job on the same input, read and decoded in both.
(Until 2026-11-24 it was judged against the batch over the cached rows,
which charged the streams for reading Parquet files that batch never
read.)

All three must give the same rows (count and checksums of every
aggregate) before timings are reported. Batch timings: median of
`repeats` runs after a warm-up (`benchmarks.harness.timed`), each writing
its rows to Spark's ``noop`` sink. Streaming, per micro-batch size
(`per-trigger`, then each of `also-per-trigger`): one checked run (each
micro-batch's rows cached, checksummed and their state read; untimed, and
the first also warms the JIT and the Python workers), then the median of
`repeats` timed available-now runs that write each micro-batch's rows to
``noop``, as the batch timing does. (Until 2026-11-24 one timed run: its
time at one size moved by 0.7 s between two runs of the benchmark. Until
2026-11-23 the timed run was the checked one: the cache and the checksum
cost 2-3 s of a 14 s stream that the batch timing did not pay. A warm-up
on a small stream left the JIT compiling the operator's plan during the
timed run: 22.7 s against 17.2 s once warm.) Alongside each stream,
Spark's own floor over the same micro-batches, also the median of
`repeats` (`benchmarks.harness.tws_floor`: each read whole, one row in a thousand
through a do-nothing ``transformWithStateInPandas`` keyed by ``pmod(k,
partitions)``): the part of the stream's time that is not work on its
rows, which is why the throughput ratio depends on the micro-batch size. Also reported: the
operator's peak state (bins plus rows awaiting their output) per key,
against the bins one hour can hold. `partitions` sets
``spark.sql.shuffle.partitions`` (and so the operator's shards) for every
query; by default wid's, one per core (2 here; until 2026-11-24 this
benchmark ran at 4, wid's default then). Targets: wid batch >= 1.0x
Spark's window function; streaming throughput >= 0.5x wid batch; state per
key bounded by the bins in the range.
"""

from __future__ import annotations

import math
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import wid
from benchmarks.batch_windows import AGGS
from benchmarks.harness import (
    arrive_in_name_order,
    drain,
    events,
    machine,
    save,
    session,
    stream_parser,
    timed,
    tws_floor,
)
from wid.spark.compile import compile_window
from wid.spark.operator.query import windows_of
from wid.spec import Punctuation, Window

HOUR_MS = 3_600_000
FAR_US = 4_000_000_000_000_000  # a punctuation time after every event (year 2096)


def window(punctuation: bool = False) -> Window:
    return Window(kind="rolling", duration_ms=HOUR_MS, event_time_column="ts", group_by=["k"], aggregations=AGGS,
                  max_groups_per_window=1_000_000, punctuation=Punctuation("punct") if punctuation else None)


def spark_sql(df: DataFrame) -> DataFrame:
    """Spark's own window function over the same frame."""
    df.createOrReplaceTempView("bench_rolling")
    frame = f"(PARTITION BY k ORDER BY ts_us RANGE BETWEEN {HOUR_MS * 1000 - 1} PRECEDING AND CURRENT ROW)"
    return df.sparkSession.sql(f"""SELECT k, ts, v, count(*) OVER w AS n, sum(v) OVER w AS s, min(v) OVER w AS lo,
        max(v) OVER w AS hi, avg(v) OVER w AS mean FROM bench_rolling WINDOW w AS {frame}""")


def checksum(df: DataFrame) -> tuple[int, float, float, float, float, float]:
    row = df.agg(F.count("*"), F.sum("n"), F.sum("s"), F.sum("lo"), F.sum("hi"), F.sum("mean")).first()
    assert row is not None
    return int(row[0]), float(row[1] or 0), float(row[2] or 0), float(row[3] or 0), float(row[4] or 0), float(row[5] or 0)


def same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return a[0] == b[0] and all(math.isclose(x, y, rel_tol=1e-9) for x, y in zip(a[1:], b[1:], strict=True))


def land(spark: Any, df: DataFrame, files: int, path: Path) -> None:
    """`df` as Parquet files in event-time order, then one file holding a
    punctuation row that closes every extent."""
    rows = df.select("k", "ts", "v", F.lit(None).cast("boolean").alias("punct"))
    rows.repartitionByRange(files, "ts").sortWithinPartitions("ts").write.parquet(str(path))
    last = spark.range(1).select(F.lit(None).cast("int").alias("k"), F.timestamp_micros(F.lit(FAR_US)).alias("ts"),
                                 F.lit(None).cast("double").alias("v"), F.lit(True).alias("punct"))
    last.write.mode("append").parquet(str(path / "zz-punctuation"))
    arrive_in_name_order(path)


def source(spark: Any, path: Path, per_trigger: int | None) -> DataFrame:
    """The landing files as a stream, `per_trigger` files a micro-batch
    (None: Spark's default, every file in one)."""
    schema = spark.read.parquet(str(path)).schema
    reader = spark.readStream.schema(schema).option("recursiveFileLookup", "true")
    if per_trigger is not None:
        reader = reader.option("maxFilesPerTrigger", per_trigger)
    return reader.parquet(str(path))


def run_stream(spark: Any, path: Path, per_trigger: int | None, checkpoint: str, check: bool) -> dict[str, Any]:
    """The WID operator over the landing files: seconds and, if `check`,
    the checksum of the emitted rows and the peak state rows (all shards)
    after any micro-batch (`benchmarks.harness.drain`)."""
    result = compile_window(source(spark, path, per_trigger), window(punctuation=True))
    assert result.operator is not None, result.result.explain.form
    sums = [0, 0.0, 0.0, 0.0, 0.0, 0.0]

    def tally(rows: DataFrame) -> None:
        for i, x in enumerate(checksum(rows)):
            sums[i] += x

    ran = drain(result.operator, checkpoint, lambda df: windows_of(df, window(punctuation=True)),
                tally if check else None)
    return {**ran, "checksum": tuple(sums)}


def batches_of(files: int, per: int | None) -> int:
    """Micro-batches of a stream of `files` data files and the
    punctuation's, `per` files a micro-batch (None: all in one)."""
    return 1 if per is None else -(-(files + 1) // per)


def label(per: int | None) -> str:
    """A micro-batch size's name in the report and the results file."""
    return "all" if per is None else str(per)


def main() -> None:
    parser = stream_parser(__doc__, rows=5_000_000, files=16, partitions=None, per_trigger=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--also-per-trigger", default="2",
                        help="further micro-batch sizes (files per trigger, comma-separated) to stream at")
    args = parser.parse_args()
    spark = session(shuffle_partitions=args.partitions)
    args.partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
    work = Path(tempfile.mkdtemp(prefix="wid-rolling-bench-"))
    df = events(spark, args.rows, args.keys)

    ours = timed(lambda: wid.aggregate(df, window()), args.repeats)
    theirs = timed(lambda: spark_sql(df), args.repeats)
    want = checksum(spark_sql(df))
    got = checksum(wid.aggregate(df, window()))
    assert same(got, want), (got, want)

    land(spark, df, args.files, work / "land")
    landed = spark.read.option("recursiveFileLookup", "true").parquet(str(work / "land")).where(
        F.col("punct").isNull()).drop("punct")
    assert same(checksum(wid.aggregate(landed, window())), want)
    from_files = timed(lambda: wid.aggregate(landed, window()), args.repeats)
    sizes = [args.per_trigger, *[int(x) for x in args.also_per_trigger.split(",") if x]]
    streams, checked, floors = {}, {}, {}
    for per in sizes:  # a checked run (untimed; the first warms the JIT and the workers), then timed ones
        name = label(per)
        checked[name] = run_stream(spark, work / "land", per, str(work / f"ck-{name}-checked"), check=True)
        assert same(checked[name]["checksum"], want), (per, checked[name]["checksum"], want)
        runs = [run_stream(spark, work / "land", per, str(work / f"ck-{name}-{i}"), check=False)["seconds"]
                for i in range(args.repeats)]
        streams[name] = {"seconds": statistics.median(runs), "runs_s": runs, "micro_batches": batches_of(args.files, per)}
        floors[name] = statistics.median(tws_floor(source(spark, work / "land", per), "k", args.partitions,
                                                   str(work / f"floor-{name}-{i}")) for i in range(args.repeats))
    streamed = streams[label(args.per_trigger)]
    most = max(streams, key=lambda n: streams[n]["micro_batches"])

    per_key_hour = args.rows / args.keys / 24
    results = {
        "wid_batch_s": ours["median_s"], "spark_window_s": theirs["median_s"], "wid_stream_s": streamed["seconds"],
        "wid_batch_from_files_s": from_files["median_s"],
        "batch_ratio": theirs["median_s"] / ours["median_s"],
        "stream_vs_batch": from_files["median_s"] / streamed["seconds"],
        "streams_by_files_per_trigger": streams, "tws_floor_s_by_files_per_trigger": floors,
        "peak_state_rows_per_key_by_files_per_trigger": {n: c["peak_state_rows"] / args.keys for n, c in checked.items()},
        "peak_state_rows_per_key": checked[most]["peak_state_rows"] / args.keys, "rows_per_key_per_hour": per_key_hour,
        "runs": {"wid_batch": ours["runs_s"], "spark_window": theirs["runs_s"],
                 "wid_batch_from_files": from_files["runs_s"]}}
    report(args, results, ours, theirs, from_files, most)
    print(f"machine: {machine()}; {args.rows:,} rows, {args.keys:,} keys, local[2], {args.partitions} shuffle partitions, {args.files} files; "
          f"checksums equal: {want}")
    save(f"stream_rolling_{args.keys}", {**vars(args), "results": results})
    shutil.rmtree(work, ignore_errors=True)


def report(args: Any, results: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any],
           from_files: dict[str, Any], most: str) -> None:
    """The benchmark's table, ratios and targets."""
    batch_s = from_files["median_s"]
    print(f"  wid batch (prefix sums)     {ours['median_s']:8.2f} s  {args.rows / ours['median_s']:12,.0f} rows/s")
    print(f"  Spark window function       {theirs['median_s']:8.2f} s  {args.rows / theirs['median_s']:12,.0f} rows/s")
    print(f"  wid batch over the landing files {batch_s:8.2f} s  {args.rows / batch_s:12,.0f} rows/s  (the streams' input)")
    for name, r in results["streams_by_files_per_trigger"].items():
        n = r["micro_batches"]
        print(f"  wid streaming, {name} files a micro-batch ({n} micro-batches) {r['seconds']:8.2f} s  "
              f"{args.rows / r['seconds']:12,.0f} rows/s  ({batch_s / r['seconds']:.2f}x wid batch over the same files)")
        print(f"      Spark's floor over the same {n} micro-batches (read whole, 1 row in 1,000 through a "
              f"do-nothing transformWithStateInPandas) {results['tws_floor_s_by_files_per_trigger'][name]:6.2f} s; "
              f"peak state {results['peak_state_rows_per_key_by_files_per_trigger'][name]:.0f} rows per key")
    print(f"  wid batch / Spark window function: {results['batch_ratio']:.2f}x faster (target >= 1.0)")
    print(f"  wid streaming / wid batch over the same files, at {label(args.per_trigger)} files a micro-batch: "
          f"{results['stream_vs_batch']:.2f}x (target >= 0.5)")
    print(f"  peak operator state per key at {most} files a micro-batch: {results['peak_state_rows_per_key']:.0f} rows "
          f"(bins + rows awaiting output); one hour holds about {results['rows_per_key_per_hour']:.0f} rows per key, "
          "each at its own microsecond")


if __name__ == "__main__":
    main()
