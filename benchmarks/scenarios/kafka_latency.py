"""The small micro-batch taken apart: the queries the latency benchmark
(`benchmarks.stream_latency`) runs beside `wid run`'s pipeline, each from
the same 1-partition Kafka topic to another, at the same trigger:

- ``spark``: Spark's own query, ``withWatermark`` + ``groupBy(k,
  window(...))`` in update mode;
- ``floor``: a do-nothing ``transformWithStateInPandas`` per key, on the
  RocksDB state store the WID operator uses, returning each key's count and
  highest sequence number of the micro-batch (state declared, never read):
  what any Python stateful operator pays per micro-batch, the floor under
  wid's operator;
- ``operator``: the WID operator alone (`wid.spark.compile.compile_window`
  on the decoded rows, its window rows to Kafka), without the pipeline's
  ``foreachBatch`` writer, dead letters and observed counts.

Each decodes ``{"k": STRING, "seq": BIGINT}`` values and windows on the
message timestamp: tumbling 1 minute, count and max of ``seq`` per key,
lateness 0. `micro_batches` reads a query's Spark jobs and time per
micro-batch from its progress and Spark's status tracker.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def latency_rows(spark: Any, bootstrap: str, topic: str) -> DataFrame:
    """The topic's messages from the latest offsets as (k, seq, ts): the
    value's JSON fields and the message timestamp."""
    raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
           .option("startingOffsets", "latest").load())
    return raw.select(F.from_json(F.col("value").cast("string"), "k STRING, seq BIGINT").alias("j"),
                      F.col("timestamp").alias("ts")).select("j.*", "ts")


def to_kafka(frame: DataFrame, bootstrap: str, out: str, trigger: str, checkpoint: Path, mode: str) -> Any:
    """Start `frame` (k, n, max_seq) as JSON messages into topic `out`."""
    return (frame.select(F.to_json(F.struct("k", "n", "max_seq")).alias("value")).writeStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap).option("topic", out).outputMode(mode)
            .option("checkpointLocation", str(checkpoint)).trigger(processingTime=trigger).start())


def spark_query(spark: Any, bootstrap: str, topic: str, out: str, trigger: str, checkpoint: Path) -> Any:
    """Spark's own query of the latency window, in update mode."""
    windows = latency_rows(spark, bootstrap, topic).withWatermark("ts", "0 seconds").groupBy(
        "k", F.window("ts", "1 minute")).agg(F.count("*").alias("n"), F.max("seq").alias("max_seq"))
    return to_kafka(windows, bootstrap, out, trigger, checkpoint, "update")


def floor_query(spark: Any, bootstrap: str, topic: str, out: str, trigger: str, checkpoint: Path) -> Any:
    """The do-nothing ``transformWithStateInPandas`` per key (module docstring)."""
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    from wid.spark.operator.query import operator_layout

    class Idle(StatefulProcessor):  # defined here: pickled by value to the Python workers
        def init(self, handle: Any) -> None:
            self.state = handle.getValueState("seen", "n LONG")

        def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
            frames = list(rows)
            seqs = [int(f["seq"].max()) for f in frames if len(f)]
            yield pd.DataFrame({"k": [key[0]], "n": [sum(len(f) for f in frames)], "max_seq": [max(seqs, default=-1)]})

        def close(self) -> None:
            pass

    operator_layout(spark)
    idle = latency_rows(spark, bootstrap, topic).groupBy("k").transformWithStateInPandas(
        Idle(), "k string, n long, max_seq long", "Append", "None")
    return to_kafka(idle, bootstrap, out, trigger, checkpoint, "append")


def operator_query(spark: Any, bootstrap: str, topic: str, out: str, trigger: str, checkpoint: Path) -> Any:
    """The WID operator alone over the latency window, ``emit = "on_update"``
    as the pipeline's, its window rows to Kafka."""
    from wid.spark.compile import compile_window
    from wid.spark.operator.query import windows_of
    from wid.spec import Aggregation, Window

    window = Window(kind="tumbling", duration_ms=60_000, event_time_column="ts", group_by=["k"], emit="on_update",
                    max_groups_per_window=100, aggregations=[Aggregation("count", as_="n"),
                                                             Aggregation("max", column="seq", as_="max_seq")])
    compiled = compile_window(latency_rows(spark, bootstrap, topic), window)
    assert compiled.operator is not None, "the latency window runs on the WID operator"
    return to_kafka(windows_of(compiled.operator, window), bootstrap, out, trigger, checkpoint, "append")


QUERIES: dict[str, Callable[[Any, str, str, str, str, Path], Any]] = {
    "spark": spark_query, "floor": floor_query, "operator": operator_query}


def ungrouped_jobs(spark: Any) -> set[int]:
    """The ids of the jobs Spark's status tracker holds outside a job group
    (a ``foreachBatch`` writer's jobs run outside their query's)."""
    return set(spark.sparkContext.statusTracker().getJobIdsForGroup(None))


def micro_batches(spark: Any, queries: list[Any], before: set[int]) -> dict[str, float]:
    """`queries`' micro-batches (still active; the session keeps every
    progress and job, `SESSION`): how many read rows, the Spark jobs per
    micro-batch (their job groups' and those outside a group since `before`,
    `ungrouped_jobs`), and the median milliseconds of a micro-batch that
    read rows and of its ``addBatch`` (the query's jobs and its sink's write)."""
    every = [p for q in queries for p in q.recentProgress]
    read = [p for p in every if p["numInputRows"]]
    tracker = spark.sparkContext.statusTracker()
    jobs = sum(len(tracker.getJobIdsForGroup(str(q.runId))) for q in queries) + len(ungrouped_jobs(spark) - before)
    batches = len({(p["runId"], p["batchId"]) for p in every})
    median = lambda part: statistics.median(p["durationMs"].get(part, 0) for p in read) if read else 0.0  # noqa: E731
    return {"micro_batches": len(read), "jobs_per_micro_batch": round(jobs / max(1, batches), 1),
            "micro_batch_ms_p50": median("triggerExecution"), "add_batch_ms_p50": median("addBatch")}


# What the session of the latency runs keeps, so that `micro_batches` sees a whole run: every progress, every job.
SESSION = {"spark.sql.streaming.numRecentProgressUpdates": "100000", "spark.ui.retainedJobs": "100000"}
