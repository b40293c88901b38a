"""State at scale: what a steady micro-batch costs, and what it adds to the
checkpoint, as the state held grows (issue: streams at Spark's own cost).

    python -m benchmarks.state_scale --kind tumbling --keys 1000000 --engine wid [--rows 50000] [--files 8]
    python -m benchmarks run --only state          (the grid: 10k, 1M, 10M keys; tumbling, hopping 60/1, session;
                                                    10k and 1M keys: count, rolling, landmark)

Data: file 0 opens `keys` keys (one row each); each later file holds
`rows` rows of random keys, event time moving one minute a file, so every
window of the 1-day tumbling and session windows stays open and the state
holds every key. Count and sum of v per key and window. One Parquet file a
micro-batch (``maxFilesPerTrigger = 1``), available-now, both engines on
Spark's RocksDB state store with changelog checkpointing, 2 shuffle
partitions.

- ``wid``: `wid.window_result` on the stream (the WID operator);
- ``spark``: ``withWatermark`` + ``groupBy(k, window(ts, ...))`` in update
  mode (tumbling, hopping), ``groupBy(k, session_window(ts, "1 day"))`` in
  append mode (session), as a Spark user writes them.

Count, rolling and landmark windows have no streaming form in Spark, so
only wid runs them, and what is measured is that the checkpoint added per
steady micro-batch stays flat as the keys held grow: count windows of
1,000,000 rows per key (none completes: each key's partials stay held),
rolling windows of 1 day per key (every row's bin stays held for the
day), landmark windows growing from the first minute by 1 day (none
closes).

Each run is one process (the grid starts one per engine, kind and key
count), so that its peak memory is its own. It prints one JSON line: the
median duration of the steady micro-batches (every micro-batch after file
0 and the `warm` next ones), the checkpoint bytes those micro-batches added
(the checkpoint directory's size when each micro-batch's progress appears;
the state store's maintenance uploads snapshots in the background, and
what it uploads is counted when it lands), the checkpoint's size after file
0 (the state of `keys` keys, each with one row), and the peak RSS of the
driver's Python process, the JVM and the Python workers, sampled every
0.2 s, over the whole run and over the steady micro-batches alone.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

T0_US = 1_700_000_000_000_000  # 2023-11-14T22:13:20Z
MINUTE_US = 60_000_000
KINDS = ("tumbling", "hopping", "session", "count", "rolling", "landmark")
SPARK_KINDS = ("tumbling", "hopping", "session")  # those Spark's streaming aggregation has


def land(root: Path, keys: int, rows: int, files: int, seed: int = 7, touched: int | None = None) -> Path:
    """The landing directory: file 0 with one row per key, then `files`
    files of `rows` random keys (with `touched`, of that many distinct keys
    drawn anew for each file, whatever the keys held), minute i of event
    time in file i."""
    rng = np.random.default_rng(seed)
    out = root / "land"
    out.mkdir(parents=True)
    for i in range(files + 1):
        drawn = rng.choice(keys, touched, replace=False) if touched else None
        k = np.arange(keys, dtype=np.int64) if i == 0 else (
            rng.integers(0, keys, rows, dtype=np.int64) if drawn is None else drawn[rng.integers(0, touched, rows)])
        ts = T0_US + i * MINUTE_US + rng.integers(0, MINUTE_US, len(k), dtype=np.int64)
        table = pa.table({"k": k, "ts": pa.array(ts, pa.timestamp("us", "UTC")), "v": rng.random(len(k))})
        path = out / f"part-{i:05d}.parquet"
        pq.write_table(table, path)
        os.utime(path, (1_000_000 + i, 1_000_000 + i))  # Spark's file source reads in modification-time order
    return out


def size_of(directory: Path) -> int:
    """Bytes of every file under `directory`."""
    total = 0
    for dirpath, _, names in os.walk(directory):
        for name in names:
            with contextlib.suppress(OSError):  # removed while walking (a temporary file)
                total += os.path.getsize(os.path.join(dirpath, name))
    return total


def higher(peak: dict[str, int], now: dict[str, int]) -> dict[str, int]:
    """Each process's larger RSS of `peak` and `now`."""
    return {k: max(v, now[k]) for k, v in peak.items()}


def process_part(process: Any, driver_pid: int) -> str | None:
    """Which part a process under the driver is: ``jvm`` (Spark's JVM, the
    driver's own child), ``python_workers`` (a Python process: PySpark's
    daemons and workers, the state processor's init), or None. The JVM's
    short-lived children (Hadoop's ``readlink`` and ``chmod``, each a fork
    that shows the JVM's whole resident set until it execs) are none: once
    counted, a sample that caught one counted the JVM twice."""
    name = process.name()
    if "java" in name:
        return "jvm" if process.ppid() == driver_pid else None
    return "python_workers" if name.startswith("python") else None


class Peaks(threading.Thread):
    """The peak RSS (bytes) of this process, its JVM child and the Python
    workers under it, sampled every `every_s`: over the whole run
    (`peak`), and from when `steady` is set (`steady_peak`: the steady
    micro-batches, after the first one opened every key; a process keeps
    what it grew to then, which counts as held)."""

    def __init__(self, every_s: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.every_s, self.stop, self.steady = every_s, threading.Event(), threading.Event()
        self.peak = {"driver": 0, "jvm": 0, "python_workers": 0}
        self.steady_peak = dict(self.peak)

    def run(self) -> None:
        import psutil

        me = psutil.Process()
        while not self.stop.is_set():
            parts = {"driver": me.memory_info().rss, "jvm": 0, "python_workers": 0}
            for child in me.children(recursive=True):
                try:
                    part = process_part(child, me.pid)
                    if part is not None:
                        parts[part] += child.memory_info().rss
                except psutil.Error:
                    continue
            self.peak = higher(self.peak, parts)
            if self.steady.is_set():
                self.steady_peak = higher(self.steady_peak, parts)
            time.sleep(self.every_s)


def wid_query(stream: Any, kind: str, keys: int) -> Any:
    import wid
    from wid.spec import Aggregation, Window

    aggs = [Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s")]
    common: dict[str, Any] = {"event_time_column": "ts", "group_by": ["k"], "aggregations": aggs,
                              "max_groups_per_window": keys + 1}
    window = {"tumbling": lambda: Window.tumbling(86_400_000, **common),
              "hopping": lambda: Window.hopping(3_600_000, 60_000, **common),
              "session": lambda: Window.session(86_400_000, **common),
              "count": lambda: Window.count(1_000_000, **{**common, "group_by": [], "partition_by": ["k"]}),
              "rolling": lambda: Window.rolling(duration="1 day", **common),
              "landmark": lambda: Window.landmark(hop="1 day", landmark_ms=T0_US // 1000, **common)}[kind]()
    return wid.window_result(stream, window).output, "append"


def spark_query(stream: Any, kind: str) -> Any:
    from pyspark.sql import functions as F

    if kind not in SPARK_KINDS:
        raise ValueError(f"Spark's streaming aggregation has no {kind} windows (it has {', '.join(SPARK_KINDS)})")
    timed = stream.withWatermark("ts", "0 seconds")
    if kind == "session":
        return timed.groupBy("k", F.session_window("ts", "1 day")).agg(F.count("*").alias("n"),
                                                                          F.sum("v").alias("s")), "append"
    window = F.window("ts", "1 day") if kind == "tumbling" else F.window("ts", "60 minutes", "1 minute")
    return timed.groupBy("k", window).agg(F.count("*").alias("n"), F.sum("v").alias("s")), "update"


def measure(engine: str, kind: str, keys: int, rows: int, files: int, warm: int,
            keep: str | None = None, touched: int | None = None, shards: int | None = None) -> dict[str, Any]:
    """One run (see the module docstring); returns its figures. With
    `keep`, the checkpoint is copied there at the end; `shards` sets
    wid's operator shards (default: the 2 shuffle partitions)."""
    from benchmarks.harness import session
    from wid.spark.operator.query import CHANGELOG, PROVIDER, ROCKSDB, SHARDS_CONF

    sharded = {SHARDS_CONF: str(shards)} if shards else {}
    spark = session(shuffle_partitions=2, more={PROVIDER: ROCKSDB, CHANGELOG: "true", **sharded})
    # the state store's maintenance thread may still write a snapshot into the checkpoint as it is removed
    with tempfile.TemporaryDirectory(prefix="wid-state-", ignore_cleanup_errors=True) as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        landing = land(root, keys, rows, files, touched=touched)
        made_s = time.perf_counter() - started
        stream = spark.readStream.schema("k BIGINT, ts TIMESTAMP, v DOUBLE").option("maxFilesPerTrigger", 1) \
            .parquet(str(landing))
        out, mode = wid_query(stream, kind, keys) if engine == "wid" else spark_query(stream, kind)
        checkpoint = root / "checkpoint"
        peaks = Peaks()
        peaks.start()
        query = out.writeStream.format("noop").outputMode(mode).option("checkpointLocation", str(checkpoint)) \
            .trigger(availableNow=True).start()
        sizes: dict[int, int] = {}
        while query.isActive:
            for p in query.recentProgress:
                sizes.setdefault(int(p.batchId), size_of(checkpoint))
                if int(p.numInputRows) > 0:
                    peaks.steady.set()  # the first micro-batch, which opened every key, is over
            time.sleep(0.05)
        query.awaitTermination()
        for p in query.recentProgress:
            sizes.setdefault(int(p.batchId), size_of(checkpoint))
        peaks.stop.set()
        progress = [p for p in query.recentProgress if int(p.numInputRows) > 0]
        if keep:
            import shutil

            shutil.copytree(checkpoint, keep, dirs_exist_ok=True)
    steady = [p for p in progress if int(p.batchId) > warm]
    ids = sorted(int(p.batchId) for p in steady)
    added = (sizes[ids[-1]] - sizes[ids[0]]) / (len(ids) - 1) if len(ids) > 1 else float("nan")
    durations = [int(p.durationMs["triggerExecution"]) / 1000 for p in steady]
    return {"engine": engine, "kind": kind, "keys": keys, "rows_per_file": rows, "touched": touched, "shards": shards,
            "steady_batches": len(steady),
            "first_batch_s": int(progress[0].durationMs["triggerExecution"]) / 1000 if progress else None,
            "steady_batch_s": statistics.median(durations) if durations else None, "steady_batches_s": durations,
            "checkpoint_bytes_per_batch": added, "checkpoint_bytes": sizes[max(sizes)] if sizes else 0,
            "opened_bytes": sizes[int(progress[0].batchId)] if progress else None,  # the state of `keys` keys
            "peak_rss": peaks.peak, "steady_peak_rss": peaks.steady_peak, "data_s": made_s}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=("wid", "spark"), required=True)
    parser.add_argument("--kind", choices=KINDS, required=True)
    parser.add_argument("--keys", type=int, required=True)
    parser.add_argument("--rows", type=int, default=50_000, help="rows of each file after the first")
    parser.add_argument("--files", type=int, default=8, help="files after the first")
    parser.add_argument("--warm", type=int, default=2, help="micro-batches after the first not counted as steady")
    parser.add_argument("--keep", help="copy the checkpoint to this directory at the end")
    parser.add_argument("--touched", type=int, help="distinct keys each file after the first holds (default: random)")
    parser.add_argument("--shards", type=int, help="wid's operator shards (spark.wid.operator.shards; default: 2)")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.engine, args.kind, args.keys, args.rows, args.files, args.warm, args.keep,
                             args.touched, args.shards)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
