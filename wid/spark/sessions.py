"""Batch plan for session windows: one sort per group, then ``groupBy``.

Sorted by event time within each group, a row starts a new session when its
ts is after the running maximum of ``ts + gap`` of the earlier rows (a row
exactly at that end joins, as in Spark's `session_window`). A running sum of
the start flags numbers the sessions; the session extent is
``[min ts, max(ts + gap))``. Both window functions share one sort.
"""

from __future__ import annotations

from pyspark.sql import Window as W
from pyspark.sql import functions as F

from wid.spark import panes
from wid.spark.columns import TS, WID, field, lit_long
from wid.spark.plan import Ctx, Planned, assemble, where_label

END = "_wid_end"


def sessions(ctx: Ctx) -> Planned:
    """Session windows with a fixed `gap_ms` or a per-row `gap_column` (ms)."""
    w = ctx.window
    keys = list(w.group_by)
    gap = lit_long((w.gap_ms or 0) * 1000) if w.gap_column is None else F.col(w.gap_column).cast("long") * 1000
    order = W.partitionBy(*keys).orderBy(TS)
    before = order.rowsBetween(W.unboundedPreceding, -1)
    upto = order.rowsBetween(W.unboundedPreceding, W.currentRow)
    rows = ctx.rows.withColumn(END, F.col(TS) + gap)
    prev_end = F.max(END).over(before)
    rows = rows.withColumn(WID, (prev_end.isNull() | (F.col(TS) > prev_end)).cast("long"))
    rows = rows.withColumn(WID, F.sum(WID).over(upto))
    start_us, end_us = F.col("_wid_start"), F.col(END)
    aggs = ctx.aggs(where_label(start_us, end_us, ctx.pipeline))
    grouped = rows.groupBy(*keys, WID).agg(
        F.min(TS).alias("_wid_start"), F.max(END).alias(END),
        *[e.alias(field(i, k)) for i, a in enumerate(aggs) for k, e in a.partial().items()])
    out = panes.finished(grouped, aggs, "p", [*keys, "_wid_start", END])
    notes = () if keys else ("no group_by: sessions are found in one partition",)
    return Planned(assemble(out, w, start_us, end_us), "sort by event time + running session ids + groupBy",
                   "sessions depend on the order of each group's rows", notes)
