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

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wid.errors import StateCapError
from wid.io import dead_letter, sinks
from wid.io.sql_sinks import Refused
from wid.kernels.operator.output import COUNTS_ROW, KIND, STATS
from wid.pipelines.report import BatchTally, tally
from wid.spark.compile import Compiled
from wid.spark.stage import group_cap_message
from wid.spark.stream_query import Handler
from wid.spec.pipeline import JoinPipelineSpec, PipelineSpec
from wid.spec.window import Window

Spec = PipelineSpec | JoinPipelineSpec


def write_batch(spec: Spec, compiled: Compiled, step: Callable[[str], Any]) -> tuple[int | None, int]:
    """Write a batch run's output to the target (upserting on the natural
    key) and its dead letters, with the rows the target database could not
    hold; returns (rows written, rows the target refused)."""
    output = compiled.result.output
    step(f"writing results to {sinks.describe(spec.target, spec.base_dir)}")
    refused: Refused = []
    written = sinks.write(output, spec.target, spec.base_dir, compiled.natural_key, title=spec.name, refused=refused)
    if written is None or spec.target.kind == "console":
        written = output.count()
    step("writing dead letters")
    dead = compiled.result.dead_letter
    if refused:
        dead = dead.unionByName(dead_letter.refused_rows(output.sparkSession, refused))
    sinks.write(dead_letter.grouped(dead, spec.name), spec.dead_letter, spec.base_dir, list(dead_letter.KEY),
                title="dead letters")
    return written, len(refused)


def check_cap(windows: DataFrame, window: Window, pipeline: str) -> None:
    """Raise StateCapError (docs/semantics.md#completeness message) when a window of
    this micro-batch holds more groups than `max_groups_per_window`, naming
    the earliest such window (so the message does not depend on
    partitioning). In update mode only the groups updated in this
    micro-batch are seen."""
    cap = window.max_groups_per_window
    if cap is None or window.kind == "rolling":  # a rolling row is its own window (as in batch)
        return
    start, end = window.window_start_column, window.window_end_column
    over = windows.groupBy(start, end).count().where(F.col("count") > cap).orderBy(start, end).first()
    if over is not None:
        def iso(t: Any) -> str:
            return str(t.strftime("%Y-%m-%dT%H:%M:%SZ"))
        raise StateCapError(group_cap_message(cap, pipeline) % (iso(over[0]), iso(over[1])))


def write_dead(dead: DataFrame, spec: Spec, batch_id: int, refused: Refused) -> None:
    """Upsert one micro-batch's dead letters, with the rows the target
    refused, keyed with the batch id."""
    if refused:
        dead = dead.unionByName(dead_letter.refused_rows(dead.sparkSession, refused))
    grouped = dead_letter.grouped(dead, spec.name).withColumn("batch_id", F.lit(batch_id).cast("long"))
    if spec.dead_letter.kind != "console" or not grouped.isEmpty():
        sinks.write(grouped, spec.dead_letter, spec.base_dir, [*dead_letter.KEY, "batch_id"], title="dead letters")


def stream_writer(spec: Spec, compiled: Compiled, on_rows: Callable[[int], None],
                  tallies: dict[int, BatchTally]) -> Handler:
    """The ``foreachBatch`` function over the WID operator's rows: delete
    retracted windows, check the cap, upsert the output rows, upsert the
    grouped dead letters (rejected rows, late rows under ``dlq``, and rows
    the target refused, with the batch id), and record the micro-batch's
    tally in `tallies`; `on_rows` counts the rows written."""
    stage = compiled.stream
    assert stage is not None  # a stream runs on the WID operator (wid.spark.compile)
    key = compiled.natural_key

    def handle(rows: DataFrame, batch_id: int) -> None:
        rows = rows.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            if stage.retractions_of is not None:
                retracted = stage.retractions_of(rows)
                if not retracted.isEmpty():
                    sinks.delete(retracted, spec.target, spec.base_dir, key)
            out = stage.output_of(rows)
            if isinstance(spec, PipelineSpec):
                check_cap(out, spec.window, spec.name)
            refused: Refused = []
            written = sinks.write(out, spec.target, spec.base_dir, key, title=spec.name, refused=refused)
            on_rows(written if written is not None else out.count())
            stats = [r[0] for r in rows.where(F.col(KIND) == COUNTS_ROW).select(STATS).collect()]
            tallies[batch_id] = replace(tally(batch_id, stats), rows_refused=len(refused))
            write_dead(stage.dead_letters_of(rows), spec, batch_id, refused)
        finally:
            rows.unpersist()
    return handle


__all__ = ["check_cap", "stream_writer", "write_batch", "write_dead"]
