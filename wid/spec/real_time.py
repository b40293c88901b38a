"""Which Windows Spark's real-time mode can run (``[stream] trigger =
"real-time"``), decided at load time.

Real-time mode (stateless queries from Spark 4.1, aggregations from 4.3:
`wid.spark.real_time.check_spark` refuses an older Spark) runs a Structured Streaming query as
long-running tasks that process each Kafka message as it arrives, instead
of micro-batches, and checkpoints every `REAL_TIME_BATCH` of processing
time. It runs stateless plans and Spark's own ``groupBy(window(...))``
aggregation in update mode, from Kafka to Kafka, with built-in functions
only: no ``foreachBatch``, no Python UDFs, no ``transformWithState``. So the
WID operator cannot run there, and a Window fits when Spark's aggregation
gives it:

- tumbling or hopping windows (Spark's ``window()``: a kind whose shape
  says `in_spark_window`);
- one Kafka source, a Kafka target and a Kafka dead letter;
- ``late_data = "drop"`` (Spark drops rows behind its watermark; it cannot
  send them anywhere or reopen a window), no punctuation, no
  ``source_idleness_ms`` (one watermark per query);
- ``emit = "on_update"``: each window's running value is written as rows
  arrive, which is the point of the mode;
- aggregations Spark's streaming aggregation computes exactly (`AGGS`);
- no calendar (`time_zone`, months: `wid.spec.calendar`).

Where a Window does not fit, `misfit` names the first field that does not,
and the pipeline is refused with it.
"""

from __future__ import annotations

from collections.abc import Sequence

from wid.spec.calendar import calendar_of
from wid.spec.window import Window

TRIGGER = "real-time"
REAL_TIME_BATCH = "5 minutes"  # how often a real-time query checkpoints (Spark's default)
AGGS = ("count", "sum", "min", "max", "avg")
FORM = "Spark real-time mode: withWatermark + groupBy(window()) in update mode, Kafka to Kafka"


def misfit(w: Window, source_formats: Sequence[str], target_kind: str, dead_letter_kind: str) -> tuple[str, str] | None:
    """The first field of a pipeline (its Window `w`, its sources' formats,
    its target's and dead letter's kinds) that real-time mode cannot
    honour, and why; None when it fits (see the module docstring)."""
    checks = [
        ("transform.window.kind", not w.shape.in_spark_window,
         f"kind = {w.kind!r}: real-time mode runs Spark's window() aggregation, which has tumbling and hopping "
         "windows only"),
        ("source", list(source_formats) != ["kafka"], "real-time mode reads one Kafka source"),
        ("target.kind", target_kind != "kafka", "real-time mode writes to Kafka only (no foreachBatch)"),
        ("dead_letter.kind", dead_letter_kind != "kafka",
         "real-time mode writes rejected messages to Kafka only (no foreachBatch)"),
        ("transform.window.late_data", w.late_data != "drop",
         f"late_data = {w.late_data!r}: Spark's aggregation drops late rows; it cannot keep or reopen them"),
        ("transform.window.punctuation", w.punctuation is not None, "Spark's aggregation has no punctuations"),
        ("transform.window.source_idleness_ms", w.source_idleness_ms is not None,
         "Spark keeps one watermark per query, without idleness"),
        ("transform.window.emit", w.emit != "on_update",
         'real-time mode writes each window\'s running value as rows arrive: declare emit = "on_update"'),
        ("transform.window.event_time_column", w.time_mode != "event", "real-time mode windows event time"),
        ("transform.window.time_zone", calendar_of(w) is not None,
         "Spark's window() aligns on the epoch and has no months: calendar windows run on the WID operator"),
    ]
    checks += [(f"transform.window.aggregations[{i}].agg", a.agg not in AGGS,
                f"{a.agg!r} is not one of {', '.join(AGGS)}, which Spark's streaming aggregation computes exactly")
               for i, a in enumerate(w.aggregations)]
    return next(((name, why) for name, bad, why in checks if bad), None)


__all__ = ["AGGS", "FORM", "REAL_TIME_BATCH", "TRIGGER", "misfit"]
