"""Running a streaming pipeline (DESIGN.md section 7): a stream source ->
optional SQL pre-stage -> the native window stage -> the target, with
rejected rows going to the dead-letter sink in the same micro-batches.

Windows and rejected rows travel in one streaming query (a union tagged by
`TAG`), so both are written by the same ``foreachBatch`` call under one
batch id and one checkpoint. Every sink write is keyed, so a micro-batch
replayed after a crash overwrites what it wrote before: Spark's checkpoint
plus idempotent sinks give exactly-once results.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from wid.batch_pipeline import compile_pipeline
from wid.errors import StateCapError, WidError
from wid.io import dead_letter, sinks
from wid.io.sources import resolve
from wid.metrics import Metrics
from wid.spark import stream_query
from wid.spark.batch import WindowResult
from wid.spark.errors import translate
from wid.spark.plan import group_cap_message, natural_key
from wid.spec.pipeline import PipelineSpec
from wid.spec.window import Window

TAG = "_wid_out"
DEAD = "_wid_dl_"


@dataclass
class StreamReport:
    """Totals over the micro-batches this run processed; the accounting
    identity ``rows_in == rows_rejected + rows_late_dropped + rows_aggregated``
    holds per batch (`batches`) and in total."""

    pipeline: str
    target: str
    dead_letter: str
    checkpoint: str
    batches: list[stream_query.BatchTally] = field(default_factory=list)
    windows_emitted: int = 0
    elapsed_s: float = 0.0

    def total(self, name: str) -> int:
        return sum(getattr(b, name) for b in self.batches)

    @property
    def identity_holds(self) -> bool:
        return all(b.rows_in == b.rows_rejected + b.rows_late + b.rows_aggregated for b in self.batches)


def checkpoint_of(spec: PipelineSpec) -> str:
    """The pipeline's checkpoint directory (``<name>.checkpoint`` beside the TOML by default)."""
    return resolve(spec.stream.checkpoint or f"{spec.name}.checkpoint", spec.base_dir)


def tagged(result: WindowResult) -> DataFrame:
    """Window rows and rejected rows in one stream: `TAG` says which; the
    dead-letter columns are prefixed with `DEAD`."""
    out, dead = result.output, result.dead_letter
    dead = dead.select(*[F.col(c).alias(DEAD + c) for c in dead.columns])

    def nulls(df: DataFrame) -> list[Any]:
        return [F.lit(None).cast(f.dataType).alias(f.name) for f in df.schema.fields]
    windows = out.select(F.lit("w").alias(TAG), *out.columns, *nulls(dead))
    rejected = dead.select(F.lit("d").alias(TAG), *nulls(out), *dead.columns)
    return windows.unionByName(rejected)


def check_cap(windows: DataFrame, window: Window, pipeline: str) -> None:
    """Raise StateCapError (DESIGN.md section 5 message) when an emitted
    window holds more groups than `max_groups_per_window`, naming the
    earliest such window (so the message does not depend on partitioning).
    In update mode only the groups updated in this micro-batch are seen."""
    cap = window.max_groups_per_window
    if cap is None:
        return
    start, end = window.window_start_column, window.window_end_column
    over = windows.groupBy(start, end).count().where(F.col("count") > cap).orderBy(start, end).first()
    if over is not None:
        def iso(t: Any) -> str:
            return str(t.strftime("%Y-%m-%dT%H:%M:%SZ"))
        raise StateCapError(group_cap_message(cap, pipeline) % (iso(over[0]), iso(over[1])))


def batch_writer(spec: PipelineSpec, columns: list[str], on_rows: Callable[[int], None]) -> stream_query.Handler:
    """The ``foreachBatch`` function: split, check the cap, upsert windows,
    upsert grouped dead letters (with the batch id)."""
    key = natural_key(spec.window, columns)

    def handle(df: DataFrame, batch_id: int) -> None:
        df = df.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            windows = df.where(F.col(TAG) == "w").select(*columns)
            check_cap(windows, spec.window, spec.name)
            written = sinks.write(windows, spec.target, spec.base_dir, key, title=spec.name)
            on_rows(written if written is not None else windows.count())
            dead = df.where(F.col(TAG) == "d").select(
                *[F.col(c).alias(c[len(DEAD):]) for c in df.columns if c.startswith(DEAD)])
            grouped = dead_letter.grouped(dead, spec.name).withColumn("batch_id", F.lit(batch_id).cast("long"))
            if spec.dead_letter.kind != "console" or not grouped.isEmpty():
                sinks.write(grouped, spec.dead_letter, spec.base_dir, [*dead_letter.KEY, "batch_id"],
                            title="dead letters")
        finally:
            df.unpersist()
    return handle


def run_stream(spec: PipelineSpec, spark: SparkSession,
               on_progress: Callable[[stream_query.BatchTally], None] = lambda _: None,
               metrics: Metrics | None = None) -> StreamReport:
    """Run a streaming pipeline until its trigger stops it (available-now,
    once) or it is interrupted, and return the report; `on_progress` sees
    each micro-batch's tally and `metrics` (if given) is kept current.
    Raises ConfigError, MissingDependencyError or StateCapError on errors a
    user can fix."""
    started = time.monotonic()
    result = compile_pipeline(spark, spec)
    checkpoint = checkpoint_of(spec)
    report = StreamReport(spec.name, sinks.describe(spec.target, spec.base_dir),
                          sinks.describe(spec.dead_letter, spec.base_dir), checkpoint)

    def count(rows: int) -> None:
        report.windows_emitted += rows
        if metrics is not None:
            metrics.windows_written(rows)
    handle = batch_writer(spec, result.output.columns, count)
    query = stream_query.start(tagged(result), spec.window, checkpoint, handle, spec.stream.spark_trigger(),
                               name=f"wid-{spec.name}")
    seen = -1
    tallier = stream_query.Tallier(spark, checkpoint)
    try:
        while True:
            done = query.awaitTermination(1)
            for progress in query.recentProgress:
                if int(progress["batchId"]) > seen:
                    seen = int(progress["batchId"])
                    tally = tallier.batch(progress)
                    report.batches.append(tally)
                    if metrics is not None:
                        metrics.batch(tally, progress)
                    on_progress(tally)
            if done:
                break
    except WidError:
        raise
    except Exception as err:
        raise (translate(err) or err) from None
    finally:
        if query.isActive:
            query.stop()
    report.elapsed_s = time.monotonic() - started
    return report


__all__ = ["StreamReport", "checkpoint_of", "run_stream", "tagged"]
