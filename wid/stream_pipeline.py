"""Running a streaming pipeline (DESIGN.md section 7): a stream source ->
optional SQL pre-stage -> the window stage on the WID operator -> the
target, with rejected and late rows going to the dead-letter sink in the
same micro-batches.

The operator's output holds windows, retractions, rejected and late rows
and its counts, in one streaming query, so all are written by the same
``foreachBatch`` call under one batch id and one checkpoint. Every sink
write is keyed, so a micro-batch replayed after a crash overwrites what it
wrote before: Spark's checkpoint plus idempotent sinks give exactly-once
results.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming.query import StreamingQuery

from wid.batch_pipeline import compile_pipeline
from wid.errors import StateCapError, WidError
from wid.io import dead_letter, sinks
from wid.io.sources import resolve
from wid.io.sql_sinks import Refused
from wid.metrics import Metrics
from wid.semantics.sink_state import natural_key
from wid.spark import stream_query
from wid.spark.compile import WindowResult
from wid.spark.errors import translate
from wid.spark.explain import GB, state_bound
from wid.spark.join import JoinResult
from wid.spark.operator.output import KIND, STATS
from wid.spark.operator.plan import dead_letters_of, retractions_of, windows_of
from wid.spark.operator.tally import tally
from wid.spark.plan import group_cap_message
from wid.spec.pipeline import JoinPipelineSpec, PipelineSpec
from wid.spec.window import Window

LOG = logging.getLogger("wid")
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
    interrupted: bool = False  # stopped by SIGINT after a micro-batch (see `follow`)

    def total(self, name: str) -> int:
        return sum(getattr(b, name) for b in self.batches)

    @property
    def identity_holds(self) -> bool:
        return all(b.rows_in == b.rows_rejected + b.rows_late + b.rows_aggregated for b in self.batches)


def checkpoint_of(spec: PipelineSpec | JoinPipelineSpec) -> str:
    """The pipeline's checkpoint directory (``<name>.checkpoint`` beside the TOML by default)."""
    return resolve(spec.stream.checkpoint or f"{spec.name}.checkpoint", spec.base_dir)


def startup_notes(spec: PipelineSpec, result: WindowResult) -> list[str]:
    """What a streaming run says before it starts: how the window runs and
    DESIGN.md section 5's state bound, with a warning above 1 GB."""
    total, text = state_bound(spec.window)
    notes = [f"window stage: {result.planned.form} ({result.planned.why})", f"state bound: {text}"]
    if total is not None and total > GB:
        notes.append(f"warning: the state bound is {total / GB:.1f} GB, above 1 GB: lower max_groups_per_window "
                     "or the lateness, or give executors the memory")
    return notes


def tagged(result: JoinResult) -> DataFrame:
    """A window join's operator rows and rejected rows in one stream: `TAG`
    says which; the dead-letter columns are prefixed with `DEAD`."""
    out = result.operator if result.operator is not None else result.output
    dead = result.rejected if result.rejected is not None else result.dead_letter
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
    if cap is None or window.kind == "rolling":  # a rolling row is its own window (as in batch)
        return
    start, end = window.window_start_column, window.window_end_column
    over = windows.groupBy(start, end).count().where(F.col("count") > cap).orderBy(start, end).first()
    if over is not None:
        def iso(t: Any) -> str:
            return str(t.strftime("%Y-%m-%dT%H:%M:%SZ"))
        raise StateCapError(group_cap_message(cap, pipeline) % (iso(over[0]), iso(over[1])))


def _write_windows(windows: DataFrame, spec: PipelineSpec, key: list[str], on_rows: Callable[[int], None],
                   refused: Refused) -> None:
    check_cap(windows, spec.window, spec.name)
    written = sinks.write(windows, spec.target, spec.base_dir, key, title=spec.name, refused=refused)
    on_rows(written if written is not None else windows.count())


def untag(df: DataFrame, columns: list[str]) -> tuple[DataFrame, DataFrame]:
    """(rejected rows in the dead-letter shape, the other rows' `columns`)
    of one micro-batch of `tagged`."""
    dead = df.where(F.col(TAG) == "d").select(*[F.col(c).alias(c[len(DEAD):]) for c in df.columns
                                                if c.startswith(DEAD)])
    return dead, df.where(F.col(TAG) == "w").select(*columns)


def write_dead(dead: DataFrame, spec: PipelineSpec | JoinPipelineSpec, batch_id: int, refused: Refused) -> None:
    """Upsert one micro-batch's dead letters, with the rows the target
    refused, keyed with the batch id."""
    if refused:
        dead = dead.unionByName(dead_letter.refused_rows(dead.sparkSession, refused))
    grouped = dead_letter.grouped(dead, spec.name).withColumn("batch_id", F.lit(batch_id).cast("long"))
    if spec.dead_letter.kind != "console" or not grouped.isEmpty():
        sinks.write(grouped, spec.dead_letter, spec.base_dir, [*dead_letter.KEY, "batch_id"], title="dead letters")


def _wall_clock(result: WindowResult, window: Window) -> bool:
    """True when the windows' bounds are wall-clock ``TIMESTAMP_NTZ`` times."""
    start = window.window_start_column
    return start in result.output.columns and isinstance(result.output.schema[start].dataType, T.TimestampNTZType)


def batch_writer(spec: PipelineSpec, result: WindowResult, on_rows: Callable[[int], None],
                 tallies: dict[int, stream_query.BatchTally]) -> stream_query.Handler:
    """The ``foreachBatch`` function over the WID operator's rows: delete
    retracted windows, check the cap, upsert windows, upsert grouped dead
    letters (rejected rows, and late rows under ``dlq``, with the batch
    id), and record the micro-batch's tally in `tallies`."""
    key = natural_key(spec.window, result.output.columns)
    wall_clock = _wall_clock(result, spec.window)

    def handle(rows: DataFrame, batch_id: int) -> None:
        rows = rows.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            retracted = retractions_of(rows, spec.window, wall_clock)
            if not retracted.isEmpty():
                sinks.delete(retracted, spec.target, spec.base_dir, key)
            refused: Refused = []
            _write_windows(windows_of(rows, spec.window, wall_clock), spec, key, on_rows, refused)
            stats = [r[0] for r in rows.where(F.col(KIND) == "s").select(STATS).collect()]
            tallies[batch_id] = replace(tally(batch_id, stats), rows_refused=len(refused))
            write_dead(dead_letters_of(rows, spec.window), spec, batch_id, refused)
        finally:
            rows.unpersist()
    return handle


def run_stream(spec: PipelineSpec | JoinPipelineSpec, spark: SparkSession,
               on_progress: Callable[[stream_query.BatchTally], None] = lambda _: None,
               metrics: Metrics | None = None, on_notice: Callable[[str], None] = LOG.info) -> StreamReport:
    """Run a streaming pipeline until its trigger stops it (available-now,
    once) or it is interrupted, and return the report; `on_progress` sees
    each micro-batch's tally and `metrics` (if given) is kept current.
    Raises ConfigError, MissingDependencyError or StateCapError on errors a
    user can fix. A window-join pipeline runs by
    `wid.join_stream_pipeline.run_join_stream`."""
    if isinstance(spec, JoinPipelineSpec):
        from wid.join_stream_pipeline import run_join_stream

        return run_join_stream(spec, spark, on_progress, metrics, on_notice)
    started = time.monotonic()
    result = compile_pipeline(spark, spec)
    for line in startup_notes(spec, result):
        on_notice(line)
    report, count = report_for(spec, metrics)
    checkpoint = report.checkpoint
    tallies: dict[int, stream_query.BatchTally] = {}
    handle = batch_writer(spec, result, count, tallies)
    assert result.operator is not None  # a stream runs on the WID operator (wid.spark.compile)
    query = stream_query.start(result.operator, checkpoint, handle, spec.stream.spark_trigger(),
                               name=f"wid-{spec.name}")
    follow(query, report, lambda p: batch_tally(p, tallies, report), metrics, on_progress)
    report.elapsed_s = time.monotonic() - started
    return report


def report_for(spec: PipelineSpec | JoinPipelineSpec, metrics: Metrics | None
               ) -> tuple[StreamReport, Callable[[int], None]]:
    """An empty report of `spec`'s run, and the callback that counts rows
    written to the target into it (and into `metrics`)."""
    report = StreamReport(spec.name, sinks.describe(spec.target, spec.base_dir),
                          sinks.describe(spec.dead_letter, spec.base_dir), checkpoint_of(spec))

    def count(rows: int) -> None:
        report.windows_emitted += rows
        if metrics is not None:
            metrics.windows_written(rows)
    return report, count


def follow(query: StreamingQuery, report: StreamReport, tally_of: Callable[[Any], stream_query.BatchTally],
           metrics: Metrics | None, on_progress: Callable[[stream_query.BatchTally], None]) -> None:
    """Wait for `query` to stop, adding each micro-batch's tally (from
    its progress, by `tally_of`) to `report`, `metrics` and `on_progress`;
    Spark errors a user can fix become wid's errors. SIGINT (Ctrl-C) lets
    the running micro-batch finish, then stops the query (`report.interrupted`):
    PySpark's own handler would cancel the micro-batch's jobs instead. Stops
    the query on the way out."""
    seen = -1
    with _interrupt_flag() as interrupted:
        try:
            while True:
                done = query.awaitTermination(1)
                for progress in query.recentProgress:
                    if int(progress["batchId"]) > seen:
                        seen = int(progress["batchId"])
                        got = tally_of(progress)
                        report.batches.append(got)
                        if metrics is not None:
                            metrics.batch(got, progress)
                        on_progress(got)
                if done:
                    break
                if interrupted.is_set() and not query.status["isTriggerActive"]:
                    report.interrupted = True
                    query.stop()
        except WidError:
            raise
        except Exception as err:
            raise (translate(err) or err) from None
        finally:
            if query.isActive:
                query.stop()


@contextmanager
def _interrupt_flag() -> Iterator[threading.Event]:
    """An event set by SIGINT while inside (on the main thread; elsewhere
    signals cannot be handled, and the event is never set)."""
    event = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield event
        return
    previous = signal.signal(signal.SIGINT, lambda *_: event.set())
    try:
        yield event
    finally:
        signal.signal(signal.SIGINT, previous)


def batch_tally(progress: Any, tallies: dict[int, stream_query.BatchTally],
                report: StreamReport) -> stream_query.BatchTally:
    """A micro-batch's counts, from the WID operator's own counts (recorded
    by the writer), with its duration from Spark's `progress`."""
    batch = int(progress["batchId"])
    got = tallies.pop(batch, stream_query.BatchTally(batch, 0, 0, 0, 0, 0))
    duration = int((progress["durationMs"] or {}).get("triggerExecution", 0))
    if got.windows_active is None and report.batches:  # nothing reached the shards: nothing changed
        got = replace(got, watermark_ms=report.batches[-1].watermark_ms)
    return replace(got, duration_ms=duration)


__all__ = ["StreamReport", "batch_tally", "checkpoint_of", "follow", "report_for", "run_stream", "tagged", "untag", "write_dead"]
