"""Hot keys: how the WID operator's shards share a skewed stream, beside
Spark's own query (issue 54).

    python -m benchmarks.skew_scale --engine wid --keys zipf --shards 32 [--rows 50000] [--files 8] [--combine off]
    python -m benchmarks run --only skew          (the grid: zipf and hot; 8, 32, 128 shards; Spark)

Data: `files` Parquet files of `rows` rows each, keys drawn over 1,000,000
keys either from Zipf(1.1) (``zipf``: the most frequent key holds about
12 % of the rows) or with one key holding 30 % of the rows and the others
uniform (``hot``); event time moving one minute a file. Count and sum of v
per key and 1-day tumbling window, as `benchmarks.state_scale`. One file a
micro-batch, available-now, Spark's RocksDB state store, 2 shuffle
partitions on ``local[2]``.

- ``wid``: the WID operator's rows through ``foreachBatch``, as ``wid run``
  writes them: the shards' counts collected (each shard's rows, and the
  time its call took: ``took_ms``, `wid.kernels.operator.shard_call`), the
  windows written to Spark's ``noop`` sink. ``--shards`` sets
  ``spark.wid.operator.shards``; ``--combine off`` sets
  ``spark.wid.operator.combine`` to false (rows ship to their shard
  uncombined, `wid.kernels.operator.combine`).
- ``spark``: ``withWatermark`` + ``groupBy(k, window(ts, "1 day"))`` in
  update mode to the ``noop`` sink, as a Spark user writes it (Spark
  combines each key's rows inside an input partition before its shuffle).

Prints one JSON line: the median steady micro-batch (every micro-batch
after the `warm` first ones), and for wid each shard's rows (those its
input stands for), the rows it received (partials and rows), its call
time from its first frame and the time it waited for that frame (a task's
first shard waits for the task's shuffle read and sort), summed over the
steady micro-batches, with the largest over the mean of each (the skew a
task carries: a shard's input all goes to one task). The call time is
given again without the first call of each worker in each micro-batch
(``shard_ms_after_first``): on ``local[2]`` a task runs many shards, and
its first call pays the task's own start (its state store's first reads)
for all of them, where on a cluster with a task per shard every call pays
it; ``first_call_ms`` and ``other_call_ms`` are the mean of those first
calls and of the others.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.state_scale import MINUTE_US, T0_US

KEYS = 1_000_000
ZIPF_S = 1.1
HOT_SHARE = 0.3
DISTRIBUTIONS = ("zipf", "hot")


def drawn_keys(rng: np.random.Generator, how: str, rows: int, keys: int = KEYS) -> np.ndarray:
    """`rows` keys over `keys`: Zipf(`ZIPF_S`) ranks (key i drawn with
    weight 1 / (i + 1) ** s), or key 0 for `HOT_SHARE` of the rows and the
    others uniform."""
    if how == "zipf":
        weights = 1.0 / np.arange(1, keys + 1, dtype=np.float64) ** ZIPF_S
        return rng.choice(keys, rows, p=weights / weights.sum()).astype(np.int64)
    hot = rng.random(rows) < HOT_SHARE
    return np.where(hot, 0, rng.integers(1, keys, rows, dtype=np.int64))


def land(root: Path, how: str, rows: int, files: int, seed: int = 11) -> Path:
    """The landing directory: `files` files of `rows` keys drawn by `how`, minute i of event time in file i."""
    rng = np.random.default_rng(seed)
    out = root / "land"
    out.mkdir(parents=True)
    for i in range(files):
        ts = T0_US + i * MINUTE_US + rng.integers(0, MINUTE_US, rows, dtype=np.int64)
        table = pa.table({"k": drawn_keys(rng, how, rows), "ts": pa.array(ts, pa.timestamp("us", "UTC")),
                          "v": rng.random(rows)})
        path = out / f"part-{i:05d}.parquet"
        pq.write_table(table, path)
        os.utime(path, (1_000_000 + i, 1_000_000 + i))  # Spark's file source reads in modification-time order
    return out


def spread(per_shard: dict[int, float]) -> dict[str, float]:
    """The largest of `per_shard`'s values over their mean (1.0: even)."""
    values = list(per_shard.values())
    mean = sum(values) / len(values) if values else 0.0
    return {"largest": max(values, default=0.0), "mean": mean, "largest_over_mean": max(values) / mean if mean else 0.0}


def shard_spreads(batches: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """The `spread` of each shard's counts (rows, received, call time, wait),
    summed over the micro-batches' `batches` of shard counts, and of its
    call time without the first call of each worker in each micro-batch
    (the module docstring), with the mean time of those first calls and
    of the other calls."""
    summed: dict[str, dict[int, float]] = {"rows": {}, "received": {}, "took_ms": {}, "waited_ms": {}}
    after_first: dict[int, float] = {}
    firsts, others = [], []
    for batch in batches:
        first = {}
        for s in sorted(batch, key=lambda s: s["started_ms"]):
            first.setdefault(s["worker"], s["shard"])
        for s in batch:
            for name, per_shard in summed.items():
                per_shard[s["shard"]] = per_shard.get(s["shard"], 0.0) + s[name]
            is_first = first[s["worker"]] == s["shard"]
            (firsts if is_first else others).append(s["took_ms"])
            after_first[s["shard"]] = after_first.get(s["shard"], 0.0) + (0.0 if is_first else s["took_ms"])
    return {"shard_rows": spread(summed["rows"]), "shard_received": spread(summed["received"]),
            "shard_ms": spread(summed["took_ms"]), "shard_waited_ms": spread(summed["waited_ms"]),
            "shard_ms_after_first": spread(after_first), "shards_seen": len(summed["rows"]),
            "first_call_ms": statistics.fmean(firsts) if firsts else 0.0,
            "other_call_ms": statistics.fmean(others) if others else 0.0}


def wid_writer(stream: Any, shards_seen: list[list[dict[str, Any]]]) -> Any:
    """The WID operator's rows of `stream`, and a ``foreachBatch`` function
    that keeps each micro-batch's shard counts in `shards_seen` and writes
    its windows to the noop sink."""
    from wid.spark.compile import compile_window
    from wid.spark.operator.rows import held
    from wid.spec import Aggregation, Window

    window = Window.tumbling(86_400_000, event_time_column="ts", group_by=["k"], max_groups_per_window=KEYS + 1,
                             aggregations=[Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s")])
    stage = compile_window(stream, window, pipeline="skew", files=False).stream
    assert stage is not None

    def write(rows: Any, batch_id: int) -> None:
        rows = rows.persist()
        shards_seen.append([json.loads(text) for text in held(rows).stats])  # the writer's own first job
        stage.output_of(rows).write.format("noop").mode("append").save()
        rows.unpersist()
    return stage.rows, write


def measure(engine: str, how: str, shards: int, rows: int, files: int, warm: int,
            combine: bool = True) -> dict[str, Any]:
    """One run (see the module docstring); returns its figures."""
    from benchmarks.harness import session
    from wid.spark.operator.query import CHANGELOG, COMBINE_CONF, PROVIDER, ROCKSDB, SHARDS_CONF

    spark = session(shuffle_partitions=2, more={PROVIDER: ROCKSDB, CHANGELOG: "true", SHARDS_CONF: str(shards),
                                                COMBINE_CONF: str(combine).lower()})
    shards_seen: list[list[dict[str, Any]]] = []
    with tempfile.TemporaryDirectory(prefix="wid-skew-", ignore_cleanup_errors=True) as tmp:
        root = Path(tmp)
        stream = spark.readStream.schema("k BIGINT, ts TIMESTAMP, v DOUBLE").option("maxFilesPerTrigger", 1) \
            .parquet(str(land(root, how, rows, files)))
        checkpoint = str(root / "checkpoint")
        if engine == "wid":
            out, write = wid_writer(stream, shards_seen)
            writer = out.writeStream.foreachBatch(write)
        else:
            from pyspark.sql import functions as F

            out = stream.withWatermark("ts", "0 seconds").groupBy("k", F.window("ts", "1 day")).agg(
                F.count("*").alias("n"), F.sum("v").alias("s"))
            writer = out.writeStream.format("noop").outputMode("update")
        started = time.perf_counter()
        query = writer.option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
        query.awaitTermination()
        wall_s = time.perf_counter() - started
        progress = [p for p in query.recentProgress if int(p.numInputRows) > 0]
    steady = [p for p in progress if int(p.batchId) >= warm]
    durations = [int(p.durationMs["triggerExecution"]) / 1000 for p in steady]
    out_doc: dict[str, Any] = {"engine": engine, "keys": how, "shards": shards if engine == "wid" else None,
                               "combine": combine if engine == "wid" else None,
                               "rows_per_file": rows, "steady_batches": len(steady), "wall_s": wall_s,
                               "steady_batch_s": statistics.median(durations) if durations else None,
                               "steady_batches_s": durations}
    if engine == "wid":
        out_doc.update(shard_spreads(shards_seen[warm:]))
    return out_doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=("wid", "spark"), required=True)
    parser.add_argument("--keys", choices=DISTRIBUTIONS, required=True, help="how keys are drawn")
    parser.add_argument("--shards", type=int, default=8, help="spark.wid.operator.shards (wid)")
    parser.add_argument("--rows", type=int, default=50_000, help="rows of each file")
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--warm", type=int, default=2, help="first micro-batches not counted as steady")
    parser.add_argument("--combine", choices=("on", "off"), default="on", help="spark.wid.operator.combine (wid)")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.engine, args.keys, args.shards, args.rows, args.files, args.warm,
                             args.combine == "on")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
