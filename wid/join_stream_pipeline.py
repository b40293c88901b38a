"""Running a window-join pipeline on streams (DESIGN.md sections 7 and 8):
stream sources -> each side's optional SQL pre-stage -> the window join on
the WID operator -> the target, with rejected rows (and, with ``late_data =
"dlq"``, late rows) in the dead-letter sink.

As for window pipelines (`wid.stream_pipeline`), the operator's rows and the
rejected rows travel in one streaming query, written by one ``foreachBatch``
call per micro-batch under one checkpoint; every sink write is keyed by the
join's natural key (`wid.spark.join.natural_key`), so a micro-batch replayed
after a crash overwrites what it wrote. Each left row is written once, when
its window fires (`wid.semantics.window_join_stream`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from wid.io import sinks
from wid.io.sql_sinks import Refused
from wid.join_pipeline import compile_join
from wid.metrics import Metrics
from wid.spark import stream_query
from wid.spark.join import JoinResult, fired_output, natural_key
from wid.spark.operator.join_plan import late_rows_of
from wid.spark.operator.output import KIND, STATS
from wid.spark.operator.tally import tally
from wid.spec.pipeline import JoinPipelineSpec
from wid.stream_pipeline import (
    StreamReport,
    batch_tally,
    follow,
    report_for,
    tagged,
    untag,
    write_dead,
)

LOG = logging.getLogger("wid")


def join_writer(spec: JoinPipelineSpec, result: JoinResult, on_rows: Callable[[int], None],
                tallies: dict[int, stream_query.BatchTally]) -> stream_query.Handler:
    """The ``foreachBatch`` function: upsert the fired rows, record the
    shards' counts in `tallies`, upsert the grouped dead letters (rejected
    rows, and late rows with ``dlq``) with the batch id."""
    join = spec.join.join
    assert result.operator is not None
    operator_columns = result.operator.columns
    columns = [c for c in result.output.columns if c not in join.aliases]
    key = natural_key(join, result.output.columns)

    def handle(df: DataFrame, batch_id: int) -> None:
        df = df.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            dead, rows = untag(df, operator_columns)
            out = fired_output(rows, join, columns)
            refused: Refused = []
            written = sinks.write(out, spec.target, spec.base_dir, key, title=spec.name, refused=refused)
            on_rows(written if written is not None else out.count())
            stats = [r[0] for r in rows.where(F.col(KIND) == "s").select(STATS).collect()]
            tallies[batch_id] = replace(tally(batch_id, stats, rejected=dead.count()), rows_refused=len(refused))
            if join.late_data == "dlq":
                dead = dead.unionByName(late_rows_of(rows, spec.join.left))
            write_dead(dead, spec, batch_id, refused)
        finally:
            df.unpersist()
    return handle


def run_join_stream(spec: JoinPipelineSpec, spark: SparkSession,
                    on_progress: Callable[[stream_query.BatchTally], None] = lambda _: None,
                    metrics: Metrics | None = None, on_notice: Callable[[str], None] = LOG.info) -> StreamReport:
    """Run a window-join pipeline over streams until its trigger stops it
    (available-now, once) or it is interrupted; see
    `wid.stream_pipeline.run_stream` for the callbacks. The report's
    ``windows_emitted`` counts the joined rows written; per micro-batch
    ``rows_in`` (both sides) ``= rows_rejected + rows_late + rows_aggregated``.
    Raises ConfigError or MissingDependencyError on errors a user can fix."""
    started = time.monotonic()
    result = compile_join(spark, spec)
    if result.operator is None:
        raise ValueError(f"pipeline {spec.name} reads no stream")  # callers route batch joins to run_join
    for line in (f"join stage: {result.form} ({result.why})", *result.notes):
        on_notice(line)
    report, count = report_for(spec, metrics)
    checkpoint = report.checkpoint
    tallies: dict[int, stream_query.BatchTally] = {}
    trigger: dict[str, Any] = spec.stream.spark_trigger()
    stream_query.discard_interrupted_first_offset(spark, checkpoint)
    writer = (tagged(result).writeStream.outputMode("append").foreachBatch(join_writer(spec, result, count, tallies))
              .option("checkpointLocation", checkpoint).trigger(**trigger))
    query = writer.queryName(f"wid-{spec.name}").start()
    follow(query, report, lambda p: batch_tally(p, tallies, report), metrics, on_progress)
    report.elapsed_s = time.monotonic() - started
    return report


__all__ = ["join_writer", "run_join_stream"]
