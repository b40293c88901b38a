"""Benchmark helpers: one Spark session, synthetic data, timed runs.

Timings are wall-clock seconds of a query written to Spark's ``noop`` sink,
which forces every output column to be computed (a ``count()`` would let
Spark prune unused aggregates). Each query runs once to warm up, then
`repeats` times; the median is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wid.spark.operator.query import CHANGELOG, PROVIDER
from wid.spark.spark_session import spark_session

DAY_US = 86_400_000_000
# Spark's state store maintenance runs every MAINTENANCE_S seconds in the
# benchmark session (Spark's default: 60). Each maintenance run unloads the
# state of the queries that have stopped; until then the default
# (HDFS-backed) store keeps a stopped query's last two versions of state on
# the JVM heap. A benchmark runs one short query after another in one JVM,
# and with 60 s the state of several finished queries piled up: at 100,000
# keys, one 5M-row micro-batch of tumbling windows leaves 4.9M state rows
# (1.15 GB), the old generation filled, and runs of the same query took
# 16-25 s or 31-49 s by chance (2026-11-24, twelfth stop). With 5 s alone,
# alternating runs of wid's native path and the hand-written query took 15.8
# and 16.7 s, then 15.6 and 16.6 s, with no full collection (2026-11-24,
# thirteenth stop); the pause of SETTLE_S after each query makes sure a
# maintenance run falls between two queries. A user's long-running query
# holds only its own state, so neither setting favours a query.
MAINTENANCE_S = 5
SETTLE_S = MAINTENANCE_S + 1


def session(master: str = "local[2]", shuffle_partitions: int | None = 4, more: dict[str, Any] | None = None) -> Any:
    """The benchmark session (driver memory is set before the JVM starts,
    the state store maintenance interval before the first stateful query);
    `shuffle_partitions` None leaves wid's default (one per local core);
    `more` adds settings (Spark's Kafka connector, say)."""
    conf: dict[str, Any] = {"spark.driver.memory": "8g",
                            "spark.sql.streaming.stateStore.maintenanceInterval": f"{MAINTENANCE_S}s", **(more or {})}
    if shuffle_partitions is not None:
        conf["spark.sql.shuffle.partitions"] = shuffle_partitions
    return spark_session(master=master, app_name="wid-bench", conf=conf)


def events(spark: Any, rows: int, keys: int, seed: int = 1) -> DataFrame:
    """`rows` events with uniform event times over one day (epoch microseconds
    `ts_us` and timestamp `ts`), `keys` integer keys `k` and a double `v`;
    cached and materialised so generation is not timed."""
    df = spark.range(rows).select(
        (F.rand(seed) * DAY_US).cast("long").alias("ts_us"),
        (F.rand(seed + 1) * keys).cast("int").alias("k"),
        F.rand(seed + 2).alias("v"),
    ).withColumn("ts", F.timestamp_micros("ts_us")).cache()
    df.count()
    return df


def warm_up(spark: Any, rows: int = 2_000_000, rounds: int = 3) -> None:
    """Run wid's and Spark's window plans (hash aggregate, shuffle, Arrow
    to Python and back) a few times on generated rows, so the JIT has
    compiled them before the first timed engine: a cold JVM made the first
    engine of a process up to 2x slower than the same engine measured later."""
    import wid
    from wid.spec import Aggregation, Window

    df = events(spark, rows, 100)
    aggs = (Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s"))
    for _ in range(rounds):
        for kind, hop in (("tumbling", None), ("hopping", 60_000)):
            w = Window(kind=kind, duration_ms=600_000, hop_ms=hop, event_time_column="ts", group_by=("k",),
                       aggregations=aggs)
            run_noop(wid.aggregate(df, w))
        run_noop(df.groupBy("k", F.window("ts", "10 minutes", "1 minute")).agg(F.count("*"), F.sum("v")))
    df.unpersist()


def run_noop(df: DataFrame) -> None:
    df.write.format("noop").mode("overwrite").save()


def timed(query: Callable[[], DataFrame], repeats: int = 3) -> dict[str, Any]:
    """Warm up once, then time `repeats` runs; returns median and all runs."""
    run_noop(query())
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        run_noop(query())
        runs.append(time.perf_counter() - started)
    return {"median_s": statistics.median(runs), "runs_s": runs}


def totals(df: DataFrame) -> tuple[int, int]:
    """(rows, sum of ``n``) of a window output: two plans of one query agree
    on them before either is timed."""
    row = df.agg(F.count("*"), F.sum("n")).first()
    return int(row[0]), int(row[1] or 0)


def run_module(module: str, args: list[str], timeout_s: float) -> dict[str, Any] | None:
    """Run ``python -m module *args`` in its own process (so that its peak
    memory is its own) and return the JSON of its last line; None when it
    runs past `timeout_s`. Raises RuntimeError with its stderr's end when
    it fails."""
    import sys

    try:
        done = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, check=False,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        raise RuntimeError(f"{module} {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def machine() -> str:
    """A one-line description of this machine."""
    try:
        cpu = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
        mem = subprocess.run(["free", "-g"], capture_output=True, text=True).stdout.split("\n")[1].split()[1]
    except (OSError, IndexError):
        cpu, mem = "?", "?"
    return f"{platform.machine()}, {cpu} cores, {mem} GiB, {platform.python_version()}, {platform.system()}"


def save(name: str, record: dict[str, Any]) -> Path:
    """Write `record`, with this machine's description, to
    ``benchmarks/results/<name>.json``; returns the path."""
    out = Path(__file__).parent / "results" / f"{name}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"machine": machine(), **record}, indent=2, default=str))
    return out


def drain(operator: DataFrame, checkpoint: str, output: Callable[[DataFrame], DataFrame],
          tally: Callable[[DataFrame], None] | None) -> dict[str, Any]:
    """Run the WID operator's rows `operator` (a stream) available-now: per
    micro-batch, `output(rows)` (the result rows) goes to `tally` and to the
    ``noop`` sink. Returns the wall seconds and the peak state rows (all
    shards) after any micro-batch.

    Without `tally` a micro-batch only writes `output(rows)` to ``noop``, as
    `timed` does with a batch query: checking (which caches each
    micro-batch's rows and reads them three times) is left to another run,
    and the peak state is not read (it reports 0)."""
    from wid.spark.operator.rows import COUNTS_ROW, STATS, of_kind

    peak = [0]

    def handle(df: DataFrame, _: int) -> None:
        if tally is None:
            output(df).write.format("noop").mode("overwrite").save()
            return
        df = df.persist()
        out = output(df)
        tally(out)
        out.write.format("noop").mode("overwrite").save()
        stats = [json.loads(r[0]) for r in df.where(of_kind(COUNTS_ROW)).select(STATS).collect()]
        peak[0] = max(peak[0], sum(s["state_groups"] for s in stats))
        df.unpersist()

    seconds, _ = available_now(operator, handle, checkpoint)
    return {"seconds": seconds, "peak_state_rows": peak[0]}


def arrive_in_name_order(path: Path) -> None:
    """Give the Parquet files under `path` increasing modification times in
    the order of their relative paths. Spark's file source reads files in
    modification-time order, and the tasks of one write finish in any order:
    without this, a later part can arrive first and make earlier rows late."""
    start = time.time() - 3600
    for i, file in enumerate(sorted(path.rglob("*.parquet"))):
        os.utime(file, (start + i, start + i))


def available_now(stream: DataFrame, handle: Callable[[DataFrame, int], None], checkpoint: str,
                  mode: str = "append", provider: str | None = None) -> tuple[float, Any]:
    """Run `stream` to its end with the available-now trigger, each
    micro-batch through `handle` (``foreachBatch``), on the state store
    `provider` (a class name; None: the session's). Returns the wall seconds
    and the finished query (for its progress).

    Afterwards it waits `SETTLE_S` (untimed), so that state store
    maintenance unloads the stopped query's state before the next query
    starts; and the session's state store settings go back to Spark's
    defaults: building a WID operator plan sets the RocksDB store (with
    changelog checkpointing) on the session (`operator_layout`), and
    without the reset every query built after it, Spark's own included,
    ran on RocksDB instead of the store a user of Spark gets by default."""
    if provider is not None:
        stream.sparkSession.conf.set(PROVIDER, provider)
    started = time.perf_counter()
    try:
        query = (stream.writeStream.outputMode(mode).foreachBatch(handle).option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        seconds = time.perf_counter() - started
        time.sleep(SETTLE_S)
        return seconds, query
    finally:
        for key in (PROVIDER, CHANGELOG):
            stream.sparkSession.conf.unset(key)


def tws_floor(stream: DataFrame, key: str, groups: int, checkpoint: str) -> float:
    """Seconds of Spark's own floor for a Python stateful operator over
    `stream`'s micro-batches: an available-now run that reads every
    micro-batch whole but hands one row in a thousand (by a hash of `key`)
    to ``transformWithStateInPandas``, keyed by ``pmod(key, groups)`` (the
    WID operator's shape: a few shard keys), with a processor that only
    reads its rows and returns one row per group, on the RocksDB state
    store the WID operator uses. (All rows would measure PySpark's
    row-by-row regrouping, 18 s for 5M rows, which the WID operator's
    packing avoids.) What a stream costs beyond this is the work on its rows."""
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    from wid.spark.operator.query import operator_layout

    class Idle(StatefulProcessor):  # defined here: pickled by value to the executors
        def init(self, handle: Any) -> None:
            self.state = handle.getMapState("values", "name STRING", "blob BINARY")

        def handleInputRows(self, group: Any, rows: Any, timerValues: Any) -> Any:
            for _ in rows:
                pass
            yield pd.DataFrame({"g": [group[0]]})

        def close(self) -> None:
            pass

    operator_layout(stream.sparkSession)
    few = stream.where(F.pmod(F.xxhash64(key), F.lit(1000)) == 0)
    grouped = few.withColumn("g", F.pmod(F.col(key), F.lit(groups)).cast("long")).groupBy("g")
    idle = grouped.transformWithStateInPandas(Idle(), "g long", "Append", "None")
    seconds, _ = available_now(idle, lambda df, _: run_noop(df), checkpoint)
    return seconds


def stream_parser(doc: str | None, rows: int, files: int, partitions: int | None = 4,
                  per_trigger: int | None = 2) -> argparse.ArgumentParser:
    """The arguments every streaming benchmark takes: --rows, --keys,
    --files (landed Parquet files), --per-trigger (files per micro-batch;
    default `per_trigger`, None for Spark's default read limit: every file
    there at the start in one micro-batch) and --partitions
    (``spark.sql.shuffle.partitions``, and so the WID operator's shards;
    default `partitions`, None for wid's default: one per local core)."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=rows)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--files", type=int, default=files)
    parser.add_argument("--per-trigger", type=int, default=per_trigger,
                        help="files a micro-batch (maxFilesPerTrigger); default "
                             f"{per_trigger or 'Spark’s: every landed file in one micro-batch'}")
    parser.add_argument("--partitions", type=int, default=partitions,
                        help="spark.sql.shuffle.partitions (and the WID operator's shards); "
                             f"default {partitions or 'wid’s: one per local core'}")
    return parser
