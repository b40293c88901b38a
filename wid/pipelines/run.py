"""Running a pipeline, batch or streaming, window or window join: the one
dispatcher that `wid.run_pipeline` and `wid run` both call."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from wid.errors import SinkUnavailableError, WidError
from wid.io import dead_letter, sinks
from wid.pipelines import definition, history, rejections
from wid.pipelines.checkpoint import remove_stale_temp_files
from wid.pipelines.follow import STALL_NOTICE_S, StallWatch, follow, interrupts, kafka_brokers
from wid.pipelines.metrics import Metrics
from wid.pipelines.observed import observation, observed, rejected_sample
from wid.pipelines.read import check_before_spark, checkpoint_of, compile_pipeline, session_for
from wid.pipelines.rejections import DEFAULT_SHARE, Rejections, over
from wid.pipelines.report import BatchTally, Report, tally
from wid.pipelines.write import start_real_time, stream_writer, time_column, write_batch
from wid.spark import stream_query
from wid.spark.columns import REASON
from wid.spark.compile import Compiled
from wid.spark.environment import warn_once
from wid.spark.errors import translate
from wid.spark.explain import GB, state_bound
from wid.spark.operator.cache_files import cache_dirs, drop_cache_dirs
from wid.spark.spark_session import is_connect
from wid.spec.pipeline import JoinPipelineSpec, PipelineSpec
from wid.spec.real_time import TRIGGER as REAL_TIME

LOG = logging.getLogger("wid")
Spec = PipelineSpec | JoinPipelineSpec


def run(spec: Spec, spark: SparkSession | None = None, *, step: Callable[[str], Any] = lambda _: None,
        on_progress: Callable[[BatchTally], None] = lambda _: None, metrics: Metrics | None = None,
        on_notice: Callable[[str], None] = LOG.info, stall_notice_s: float = STALL_NOTICE_S,
        rejected_share: float = DEFAULT_SHARE, strict: bool = False) -> Report:
    """Run `spec` end to end and return its report: a batch pipeline once;
    a streaming one (its sources are streams) until its trigger stops it
    (available-now, once) or SIGINT does. Starts a Spark session from the
    spec's ``[spark]`` settings unless `spark` is given. `step(label)` is
    called as each batch step starts, `on_progress` with each micro-batch's
    tally, `on_notice` with the start-up notes of a stream and a notice
    when a micro-batch has run longer than `stall_notice_s` seconds
    (`wid.pipelines.follow.StallWatch`); `metrics` (if given) is kept
    current. A batch run that rejects more than `rejected_share` of its
    rows keeps its first rejected row for `Report.rejections` (a stream's
    micro-batches always do); with `strict` such a batch, or micro-batch,
    raises RejectedError before anything of it is written (the target's
    write; a stream's micro-batch writes and commits nothing). A stream's
    definition is checked against its checkpoint's first
    (`wid.pipelines.definition`), before Spark starts. Raises ConfigError
    (DefinitionChanged among them), MissingDependencyError, StateCapError or
    SinkError on errors a user can fix."""
    started = time.monotonic()
    notices = definition.check(spec, checkpoint_of(spec)) if spec.source.is_stream else []
    if spark is None:
        spark = session_for(spec)  # which checks what Spark will connect to first
    else:
        warn_once(spark)  # a session of the caller's: the environment checks warn (wid run's refuse)
        if not is_connect(spark):  # a Connect server talks to Kafka itself
            check_before_spark(spec)
    if spec.source.is_stream and definition.remote(checkpoint_of(spec)):  # only Spark reads it
        notices = definition.check(spec, checkpoint_of(spec), spark)
    step("compiling")
    compiled = compile_pipeline(spark, spec)
    explained = compiled.result.explain
    report = Report(spec.name, sinks.describe(spec.target, spec.base_dir), sinks.describe(spec.dead_letter,
                    spec.base_dir), explained.form, "join" if isinstance(spec, JoinPipelineSpec) else "window",
                    compiled.stream is not None, explained.notes)
    for line in notices:
        on_notice(line)
    if isinstance(spec, PipelineSpec) and spec.stream.trigger == REAL_TIME:
        for line in startup_notes(spec, compiled):
            on_notice(line)
        _run_real_time(spec, compiled, report)
    elif compiled.stream is None:
        _run_batch(spec, compiled, report, step, rejected_share, strict)
    else:
        for line in startup_notes(spec, compiled):
            on_notice(line)
        _run_stream(spec, compiled, report, on_progress, metrics, on_notice,
                    StallWatch(on_notice, stall_notice_s, kafka_brokers(spec)), rejected_share if strict else None)
    report.elapsed_s = time.monotonic() - started
    return report


def _run_batch(spec: Spec, compiled: Compiled, report: Report, step: Callable[[str], Any],
               rejected_share: float = DEFAULT_SHARE, strict: bool = False) -> None:
    """Count the input rows by reject reason, write the outputs, and fill
    `report` (one tally, with its first rejected row when more than
    `rejected_share` of the rows were rejected; with `strict`, RejectedError
    instead, before the first write); user errors from Spark are
    translated."""
    if compiled.prepared is None:
        raise ValueError("a batch stage has its prepared rows (wid.spark.compile)")
    prepared = compiled.prepared.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        step("reading and checking rows")
        counts = reason_counts(prepared)
        total, good = sum(counts.values()), counts.get(None, 0)
        sample = _rejected_sample(compiled) if over(total, total - good, rejected_share) else None
        if strict and sample is not None:
            rejections.check(Rejections(None, total, total - good, *sample), rejected_share, time_column(spec))
        report.punctuations = compiled.punctuations.count() if compiled.punctuations is not None else 0
        report.windows_emitted, refused = write_batch(spec, compiled, step)
    except WidError:
        raise
    except Exception as err:
        raise (translate(err) or err) from None
    finally:
        prepared.unpersist()
    report.rejected_by_reason = {k: v for k, v in counts.items() if k is not None}
    report.batches = [BatchTally(0, total, good, 0, good, 0, rows_refused=refused, rejected_sample=sample)]


def _rejected_sample(compiled: Compiled) -> tuple[str, str] | None:
    """The first rejected row of a batch stage (reason, row JSON), one
    small Spark job over its dead letters."""
    first = compiled.result.dead_letter.where(~F.col("reason").startswith("late")).select("reason", "row_json").first()
    return None if first is None else (str(first["reason"]), str(first["row_json"]))


def reason_counts(prepared: DataFrame) -> dict[str | None, int]:
    """Rows per reject reason (None: the rows that were not rejected)."""
    return {r[0]: r[1] for r in prepared.groupBy(REASON).count().collect()}


def startup_notes(spec: Spec, compiled: Compiled) -> list[str]:
    """What a streaming run says before it starts: how its stage runs, in
    one short line (why, and the plan, are `wid explain`'s) and, for a
    window, docs/semantics.md#completeness's state bound, with a warning above 1 GB."""
    explained = compiled.result.explain
    notes = [f"{'window' if isinstance(spec, PipelineSpec) else 'join'} stage: {explained.form}"]
    if isinstance(spec, PipelineSpec):
        total, text = state_bound(spec.window)
        notes.append(f"state bound: {text}")
        if total is not None and total > GB:
            notes.append(f"warning: the state bound is {total / GB:.1f} GB, above 1 GB: lower "
                         "max_groups_per_window or the lateness, or give executors the memory")
    return [*notes, *explained.notes] if isinstance(spec, JoinPipelineSpec) else notes


def _run_stream(spec: Spec, compiled: Compiled, report: Report, on_progress: Callable[[BatchTally], None],
                metrics: Metrics | None, on_notice: Callable[[str], None] = LOG.info,
                stall: StallWatch | None = None, strict_share: float | None = None) -> None:
    """Start the stream with the one writer (failing a micro-batch that
    rejects more than `strict_share` of its rows before it writes, when
    given), follow it to its end, and
    count what it wrote: window rows and the shards' counts from Spark's
    observed metrics (`wid.pipelines.observed`), the rows the target
    refused from the dead letter. The operator's host-local state cache
    goes with the query (`wid.spark.operator.cache_files`)."""
    if compiled.stream is None:
        raise ValueError("a stream runs on the WID operator (wid.spark.compile)")
    checkpoint = report.checkpoint = checkpoint_of(spec)
    remove_stale_temp_files(checkpoint)  # a killed run's (`wid.pipelines.checkpoint`)
    started_ms = time.time_ns() // 1_000_000
    spark = compiled.stream.rows.sparkSession
    caches: set[str] = set()

    def tally_of(progress: Any) -> BatchTally:
        caches.update(cache_dirs(observation(progress)[0]))
        found = batch_tally(progress, report)
        history.append(checkpoint, found)
        return found
    query = stream_query.start(observed(compiled.stream.rows), report.checkpoint, stream_writer(spec, compiled, strict_share),
                               spec.stream.spark_trigger(), name=f"wid-{spec.name}")
    try:
        follow(query, report, tally_of, metrics, on_progress, on_notice=on_notice, stall=stall)
    except SinkUnavailableError as err:  # the micro-batch was not committed
        raise SinkUnavailableError(f"{err}; the checkpoint is intact: run again to resume") from None
    finally:
        if compiled.stream.cache_id is not None:
            drop_cache_dirs(spark, compiled.stream.cache_id, caches)
    _count_refused(spec, spark, report, started_ms)


def _count_refused(spec: Spec, spark: SparkSession, report: Report, started_ms: int) -> None:
    """Fill each micro-batch's rows the target refused (read back from the
    dead letter; only a database that checks rows refuses any) and the
    windows the run wrote."""
    if sinks.can_refuse(spec.target) and report.batches:
        found = dead_letter.refused_counts(spark, spec.dead_letter, spec.base_dir, spec.name, started_ms)
        if found is None:
            report.notes = (*report.notes, "rows the target refused are in the console's dead letter, not counted")
        report.batches = [replace(b, rows_refused=(found or {}).get(b.batch_id, 0)) for b in report.batches]
    report.windows_emitted = report.total("windows_written") - report.rows_refused


def _run_real_time(spec: PipelineSpec, compiled: Compiled, report: Report) -> None:
    """Run a real-time-mode stage until one of its queries stops or SIGINT
    (Ctrl-C) stops both. Spark's real-time mode reports no per-row
    accounting, so `report` holds no tallies (docs/semantics.md#real-time-mode)."""
    report.checkpoint = checkpoint_of(spec)
    queries = start_real_time(spec, compiled, report.checkpoint)
    with interrupts() as interrupted:
        try:
            while not interrupted.is_set() and all(q.awaitTermination(1) is not True for q in queries):
                pass
            report.interrupted = interrupted.is_set()
        except Exception as err:
            raise (translate(err) or err) from None
        finally:
            for q in queries:
                if q.isActive:
                    q.stop()


def batch_tally(progress: Any, report: Report) -> BatchTally:
    """A micro-batch's counts, from the WID operator's own counts and the
    window rows as Spark observed them (`wid.pipelines.observed`), with its
    duration from Spark's `progress`. A trigger that found no data reached
    no shard: nothing changed, and the watermark stays."""
    batch = int(progress.batchId)
    stats, windows = observation(progress)
    got = tally(batch, stats, windows=windows) if stats else BatchTally(batch, 0, 0, 0, 0, 0)
    duration = int((progress.durationMs or {}).get("triggerExecution", 0))
    if not stats and report.batches:
        got = replace(got, watermark_ms=report.batches[-1].watermark_ms)
    return replace(got, duration_ms=duration, rejected_sample=rejected_sample(progress))


__all__ = ["batch_tally", "follow", "reason_counts", "run", "startup_notes"]
