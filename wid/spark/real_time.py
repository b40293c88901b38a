"""Spark's real-time mode for the Windows that fit it (`wid.spec.real_time`):
Spark's own ``withWatermark`` + ``groupBy(window(...))`` aggregation in
update mode, read from Kafka and written to Kafka by long-running tasks that
process each message as it arrives (docs/semantics.md#real-time-mode).

`wid.pipelines.write.start_real_time` runs the plan as two queries on the
one source: the windows and the dead letters.

Where this differs from the documented rules, which the WID operator
follows: Spark's watermark moves only when the query checkpoints (every
`REAL_TIME_BATCH` of processing time), so a row the rules call late may
still be counted until then (never the reverse); a window's value carries
no ``is_final``; and ``max_groups_per_window`` is not enforced (Spark's
state is bounded by the watermark alone). `NOTES` says so in `wid explain`.
"""

from __future__ import annotations

import inspect
import re

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.readwriter import DataStreamWriter

from wid.errors import ConfigError
from wid.semantics.geometry import time_geometry
from wid.semantics.windowing import Hopping
from wid.spark.columns import REASON, TS
from wid.spark.prepare import dead_letters, numeric_window, prepare
from wid.spec.aggregation import Aggregation
from wid.spec.real_time import FORM, REAL_TIME_BATCH
from wid.spec.window import Window

PATH = "real-time"
WHY = ('[stream] trigger = "real-time": each message is processed as it arrives, without micro-batches, on '
       "Spark's own aggregation (the WID operator needs foreachBatch, which real-time mode does not run)")
NOTES = (f"lateness is judged on Spark's watermark, which moves when the query checkpoints (every {REAL_TIME_BATCH}):"
         " a row the documented rule calls late may still be counted until then, never the reverse",
         "window rows carry no is_final: update mode does not say when a value is final; the latest message of a "
         "key is its window's value",
         "max_groups_per_window is not enforced: Spark's state is bounded by the watermark alone")
# The first Spark release whose real-time mode runs a stateful query such as
# ``groupBy(window(...))`` (SPARK-58635): 4.1 and 4.2 run stateless queries
# only, and refuse an aggregation only once the query starts. The JVM holds
# this, so the Spark release the session runs on is what tells.
STATEFUL_SINCE = (4, 3)
EVENT = "_wid_event"
SPARK_WINDOW = "_wid_window"


def _aggregate(a: Aggregation) -> Column:
    """Spark's streaming aggregate for `a` (one of `wid.spec.real_time.AGGS`)."""
    column = F.col(a.column) if a.column is not None else F.lit(1)
    return {"count": F.count, "sum": F.sum, "min": F.min, "max": F.max, "avg": F.avg}[a.agg](column).alias(a.as_)


def refusal(spark_version: str, has_trigger: bool) -> str | None:
    """Why Spark `spark_version` cannot run a Window in real-time mode, with
    `has_trigger` saying whether PySpark's ``DataStreamWriter.trigger`` takes
    ``realTime``; None when it can."""
    release = tuple(int(n) for n in re.findall(r"\d+", spark_version)[:2])
    if release < STATEFUL_SINCE:
        return (f"real-time mode runs Spark's window aggregation from Spark {'.'.join(map(str, STATEFUL_SINCE))} on "
                f"(Spark 4.1 and 4.2 run stateless queries only in it); this session runs Spark {spark_version}")
    if not has_trigger:
        return "this PySpark's DataStreamWriter.trigger takes no realTime trigger"
    return None


def check_spark(df: DataFrame) -> None:
    """Raise ConfigError naming ``stream.trigger`` when the Spark `df` runs
    on cannot run a Window in real-time mode (`refusal`)."""
    has_trigger = "realTime" in inspect.signature(DataStreamWriter.trigger).parameters
    why = refusal(df.sparkSession.version, has_trigger)
    if why is not None:
        raise ConfigError("stream.trigger", why, "install pyspark 4.3 or later (pip install 'pyspark>=4.3,<4.4'), "
                          'or use a micro-batch trigger such as trigger = "1 second"')


def real_time_plan(df: DataFrame, window: Window, *, source: str = "source") -> tuple[DataFrame, DataFrame, DataFrame]:
    """The Window over the Kafka source `df` (`wid.io.kafka.read_kafka`'s
    columns) as Spark's aggregation: (prepared rows, output, dead letters).
    The output is ``window_start``, ``window_end`` (TIMESTAMP), the group
    columns and the aggregates, in update mode; the dead letters are
    `wid.spark.prepare.dead_letters`'. Raises ConfigError for missing
    columns (`prepare`), and naming ``stream.trigger`` when this Spark has
    no real-time mode for it (`check_spark`)."""
    check_spark(df)
    prepared = prepare(df, window)
    counted = numeric_window(prepared, window)
    geo = time_geometry(window)  # a kind Spark's window() computes: fixed, epoch-aligned (wid.spec.real_time)
    if not isinstance(geo, Hopping):
        raise TypeError("real-time mode runs fixed windows only")  # refused at load (wid.spec.real_time.misfit)
    ms = (geo.duration_us // 1000, geo.hop_us // 1000, (geo.origin_us // 1000) % (geo.hop_us // 1000))
    spans = tuple(f"{v} milliseconds" for v in ms)
    good = (prepared.where(F.col(REASON).isNull()).withColumn(EVENT, F.timestamp_micros(F.col(TS)))
            .withWatermark(EVENT, f"{window.lateness_ms} milliseconds"))
    grouped = good.groupBy(F.window(EVENT, *spans).alias(SPARK_WINDOW), *window.group_by).agg(
        *[_aggregate(a) for a in counted.aggregations])
    start, end = window.output_prefix
    output = grouped.select(F.col(f"{SPARK_WINDOW}.start").alias(start), F.col(f"{SPARK_WINDOW}.end").alias(end),
                            *window.group_by, *[a.as_ for a in window.aggregations])
    return prepared, output, dead_letters(prepared, source)


__all__ = ["FORM", "NOTES", "PATH", "STATEFUL_SINCE", "WHY", "check_spark", "real_time_plan", "refusal"]
