"""The write stage of a pipeline: a batch run's outputs, and the one
``foreachBatch`` writer every stream (window or window join) runs.

Each micro-batch of the WID operator's rows holds the stage's output rows,
its retractions (sessions), its rejected and late rows and its counts, all
from one scan of the sources, so everything a micro-batch produced is
written by the same ``foreachBatch`` call under one batch id and one
checkpoint. Every sink write is keyed by the natural key, so a micro-batch
replayed after a crash overwrites what it wrote before: Spark's checkpoint
plus idempotent sinks give exactly-once results.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from wid.errors import StateCapError
from wid.io import dead_letter, kafka, kafka_eos, lakehouse, sinks
from wid.io.batch import Batch
from wid.io.sql_sinks import Refused
from wid.pipelines import rejections
from wid.pipelines.read import checkpoint_of
from wid.pipelines.rejections import Rejections, over
from wid.pipelines.report import tally
from wid.spark.compile import Compiled
from wid.spark.group_cap import bound_text, group_cap_message
from wid.spark.operator.rows import (
    LATE_ROW,
    REJECTED_ROW,
    RETRACTION_ROW,
    WINDOW_ROW,
    first_rejected,
    held,
)
from wid.spark.stream_query import Handler, logged_batch
from wid.spec.delivery import EXACTLY_ONCE
from wid.spec.pipeline import JoinPipelineSpec, PipelineSpec, SinkSpec, StreamSpec
from wid.spec.real_time import TRIGGER as REAL_TIME
from wid.spec.window import Window

Spec = PipelineSpec | JoinPipelineSpec


def write_batch(spec: Spec, compiled: Compiled, step: Callable[[str], Any]) -> tuple[int | None, int]:
    """Write a batch run's output to the target (upserting on the natural
    key) and its dead letters, with the rows the target database could not
    hold; returns (rows written, rows the target refused)."""
    output = compiled.result.output
    step(f"writing results to {sinks.describe(spec.target, spec.base_dir)}")
    refused: Refused = []
    batch = Batch(spec.name)
    kafka_eos.check_sinks(sink_roles(spec), batch)
    written = sinks.write(output, spec.target, spec.base_dir, compiled.natural_key, title=spec.name, refused=refused,
                          batch=batch)
    if written is None or spec.target.kind == "console":
        written = output.count()
    step("writing dead letters")
    write_dead(compiled.result.dead_letter, spec, batch, refused)
    return written, len(refused)


def cap_of(window: Window) -> int | None:
    """The `max_groups_per_window` a stream checks per micro-batch (None: no
    check; a rolling row is its own window, as in batch)."""
    return None if window.shape.row_windows else window.max_groups_per_window


def check_cap(windows: DataFrame, window: Window, pipeline: str) -> None:
    """Raise StateCapError (docs/semantics.md#completeness message) when a window of
    this micro-batch holds more groups than `max_groups_per_window`, naming
    the earliest such window (so the message does not depend on
    partitioning). In update mode only the groups updated in this
    micro-batch are seen."""
    cap = cap_of(window)
    if cap is None:
        return
    start, end = window.window_start_column, window.window_end_column
    over = windows.groupBy(start, end).count().where(F.col("count") > cap).orderBy(start, end)
    first = over.select(bound_text(over, start), bound_text(over, end)).first()
    if first is not None:
        raise StateCapError(group_cap_message(cap, pipeline) % (first[0], first[1]))


def write_dead(dead: DataFrame, spec: Spec, batch: Batch, refused: Refused, per_batch: bool = False) -> None:
    """Write a run's or a micro-batch's dead letters, with the rows the
    target refused: to Kafka one message each (`wid.io.kafka`), elsewhere
    grouped and upserted (`wid.io.dead_letter`), keyed with the batch id
    when `per_batch` (a stream)."""
    if refused:
        dead = dead.unionByName(dead_letter.refused_rows(dead.sparkSession, refused))
    if spec.dead_letter.kind == "kafka":
        kafka.send(kafka.dead_letter_messages(dead, batch), spec.dead_letter, batch, "dead_letter")
        return
    grouped, key = dead_letter.grouped(dead, spec.name), list(dead_letter.KEY)
    if per_batch:
        grouped, key = grouped.withColumn("batch_id", F.lit(batch.batch_id).cast("long")), [*key, "batch_id"]
    if spec.dead_letter.kind != "console" or not grouped.isEmpty():
        sinks.write(grouped, spec.dead_letter, spec.base_dir, key, title="dead letters", batch=batch)


def sink_roles(spec: Spec) -> dict[str, SinkSpec]:
    """The pipeline's sinks by role: ``target``, ``dead_letter``."""
    return {"target": spec.target, "dead_letter": spec.dead_letter}


def first_batch(spec: Spec, spark: SparkSession, checkpoint: str, batch_id: int, run_started_ms: int) -> Batch:
    """The `Batch` of a run's first micro-batch, which may replay one a
    crash interrupted: with a Kafka sink, when its offset log entry was
    written before this run started (`replay_since_ms`, for
    `wid.io.kafka.unwritten`); with a Delta or an exactly-once Kafka sink,
    the query's id their writes carry; with an exactly-once Kafka sink, its
    writers: the shuffle partitions the checkpoint logged (Spark fixes them
    for the query; the session's setting may differ on a restart)."""
    kafka_sinks = "kafka" in (spec.target.kind, spec.dead_letter.kind)
    transactions = EXACTLY_ONCE in (spec.target.delivery, spec.dead_letter.delivery)
    logged = logged_batch(spark, checkpoint, batch_id) if kafka_sinks else None
    started = None if logged is None else int(logged["batchTimestampMs"])
    since = started if started is not None and started < run_started_ms else None
    query = lakehouse.stream_id(spark, checkpoint) if transactions or "delta" in lakehouse.table_formats(spec) \
        else None
    partitions = (logged or {}).get("conf", {}).get("spark.sql.shuffle.partitions")
    return Batch(spec.name, batch_id, since, query, checkpoint, int(partitions) if transactions and partitions else None)


def time_column(spec: Spec) -> str | None:
    """The event-time column of a window pipeline (None for a join): what a
    rejection's first value is read from (`wid.pipelines.rejections`)."""
    return spec.window.event_time_column if isinstance(spec, PipelineSpec) else None


def check_rejections(rows: DataFrame, stats: Iterable[str], spec: Spec, batch_id: int, share: float) -> None:
    """Raise RejectedError when the micro-batch of the WID operator's `rows`
    (cached) rejected more than `share` of its rows: its shards' counts
    (`stats`, the `STATS` texts of its counts rows, `wid.spark.operator.rows.held`)
    and first rejected row, read from the rows themselves (the writer runs
    where Spark runs it; wid.pipelines.observed)."""
    counted = tally(batch_id, list(stats))
    if not over(counted.rows_in, counted.rows_rejected, share):
        return
    first = rows.select(first_rejected().alias("first")).first()
    sample = (first["first"]["reason"], first["first"]["row_json"]) if first and first["first"] else ("", "")
    rejections.check(Rejections(batch_id, counted.rows_in, counted.rows_rejected, *sample), share, time_column(spec))


def stream_writer(spec: Spec, compiled: Compiled, strict_share: float | None = None) -> Handler:
    """The ``foreachBatch`` function over the WID operator's rows: with
    `strict_share`, fail a micro-batch that rejected more than that share of
    its rows before it writes anything (`check_rejections`: the query
    stops, the micro-batch is not committed), then delete
    retracted windows, check the cap, upsert the output rows, and upsert
    the grouped dead letters (rejected rows, late rows under ``dlq``, and
    rows the target refused, with the batch id). It counts nothing: the
    micro-batch's counts reach the driver as Spark's observed metrics
    (`wid.pipelines.observed`), and the refused rows are read back from the
    dead letter (`wid.io.dead_letter.refused_counts`), because under Spark
    Connect this function runs on the server.

    The rows are cached, and the first action on them collects the shards'
    counts rows (`wid.spark.operator.rows.held`: one job, no shuffle): it
    reads every shard's rows whole, so it computes the whole observation,
    and the counts say what the micro-batch holds (window rows,
    retractions, dead letters, a bound of the groups of its fullest
    window). The writes then read the cache, and a write or a check with nothing to do does not run, except
    the run's first micro-batch's writes (a database sink's tables then
    exist from the start, for whoever reads them): a micro-batch of window
    rows only, the common one, runs that job and the target's write (a
    Kafka target's without counting first). The cap's
    own query runs only when the bound of the fullest window is over the
    cap: it finds whether a window is, and names the earliest such window.

    Under Spark Connect a first read that stops early (``isEmpty``,
    ``take``, a limit) would cache a retracting shard's rows but lose its
    counts row from the observation, so its rows would go uncounted with
    the accounting identity still holding (``tests/pipelines/test_late_data.py``,
    run in the Connect leg): Spark's scheduler drops a result task's
    accumulator updates once the task's job has finished, which a read that
    stops early allows. A shuffle's map stage never stops early."""
    stage = compiled.stream
    if stage is None:
        raise ValueError("a stream runs on the WID operator (wid.spark.compile)")
    key = compiled.natural_key
    checkpoint = checkpoint_of(spec)
    run_started_ms = time.time_ns() // 1_000_000
    known: list[Batch | None] = [None]  # the run's first micro-batch's: later ones keep its query id and writers
    cap = cap_of(spec.window) if isinstance(spec, PipelineSpec) else None

    def handle(rows: DataFrame, batch_id: int) -> None:
        previous = known[0]
        first = previous is None  # writes even with nothing to write: a database sink's tables exist from here on
        if previous is None:
            batch = first_batch(spec, rows.sparkSession, checkpoint, batch_id, run_started_ms)
            kafka_eos.check_sinks(sink_roles(spec), batch)  # Kafka transactions, before anything is written
        else:
            batch = replace(previous, batch_id=batch_id, replay_since_ms=None)
        known[0] = batch
        rows = rows.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            found = held(rows)  # every shard's rows whole, and so the observation
            if strict_share is not None:
                check_rejections(rows, found.stats, spec, batch_id, strict_share)
            if stage.retractions_of is not None and found.of(RETRACTION_ROW):
                sinks.delete(stage.retractions_of(rows), spec.target, spec.base_dir, key, batch)
            out = stage.output_of(rows)
            if isinstance(spec, PipelineSpec) and cap is not None and found.fullest_at_most > cap:
                check_cap(out, spec.window, spec.name)
            refused: Refused = []
            windows = found.of(WINDOW_ROW)
            if windows or first or spec.target.kind == "console":
                sinks.write(out, spec.target, spec.base_dir, key, title=spec.name, refused=refused, batch=batch,
                            rows=windows)
            if found.of(REJECTED_ROW, LATE_ROW) or refused or first:
                write_dead(stage.dead_letters_of(rows), spec, batch, refused, per_batch=True)
        finally:
            rows.unpersist()
    return handle


def start_real_time(spec: PipelineSpec, compiled: Compiled, checkpoint: str) -> list[StreamingQuery]:
    """Start a real-time-mode stage (`wid.spark.real_time`) as two queries on
    its one Kafka source, each checkpointed in its own directory under
    `checkpoint`: the windows (each row's update of its window, keyed by the
    natural key) to the target topic, and the dead letters (rejected
    messages as they arrived) to the dead-letter topic."""
    batch = Batch(spec.name, None)  # no micro-batches, no batch ids
    windows = kafka.window_messages(compiled.result.output, compiled.natural_key, batch)
    dead = kafka.dead_letter_messages(compiled.result.dead_letter, batch)
    root = checkpoint.rstrip("/")
    return [_real_time_query(windows, spec.target, f"{root}/windows", f"wid-{spec.name}"),
            _real_time_query(dead, spec.dead_letter, f"{root}/dead_letter", f"wid-{spec.name}-dead-letter")]


def _real_time_query(messages: DataFrame, sink: SinkSpec, checkpoint: str, name: str) -> StreamingQuery:
    trigger: dict[str, Any] = StreamSpec(REAL_TIME).spark_trigger()
    writer = messages.writeStream.format("kafka").options(**kafka.writer_options(sink)).outputMode("update")
    query: StreamingQuery = writer.option("checkpointLocation", checkpoint).trigger(**trigger).queryName(name).start()
    return query


__all__ = ["cap_of", "check_cap", "check_rejections", "start_real_time", "stream_writer", "time_column", "write_batch",
           "write_dead"]
