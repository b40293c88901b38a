"""Batch plan for session windows.

Sorted by event time within each group, a row starts a new session when its
ts is after the running maximum of ``ts + gap`` of the earlier rows (a row
exactly at that end joins, as in Spark's `session_window`); the session
extent is ``[min ts, max(ts + gap))``. Two forms:

- fused (a fixed `gap_ms` and aggregations that merge in NumPy): the rows
  are shuffled by key and one vectorised pass per partition
  (`wid.spark.arrow_merge.fused`) reduces each key's rows of one event time
  to a pane, finds the sessions among the sorted panes and merges their
  fields by prefix sums and sparse tables (`wid.kernels.pane_merge`). No
  Spark sort, window function or aggregate runs;
- otherwise (a per-row `gap_column`, sketches, holistic aggregations): a
  running sum of the start flags numbers the sessions (both window
  functions share one sort), then ``groupBy``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import Window as W
from pyspark.sql import functions as F

from wid.kernels import pane_merge
from wid.spark import arrow_merge, panes
from wid.spark.columns import PANE, TS, WINDOW_ID, field, lit_long
from wid.spark.execution import Execution, Planned, outline, planned
from wid.spark.output import assemble
from wid.spark.plan_context import PlanContext
from wid.spec.window import Window

END = "_wid_end"
LAST = "_wid_last"
WHY = "sessions depend on the order of each group's rows"


FUSED_FORM = "fused vectorised Arrow sessions (panes of one event time, sessions by prefix sums + sparse tables)"
SORTED_FORM = "sort by event time + running session ids + groupBy"


def outline_sessions(w: Window, setting: str) -> Execution:
    """How session windows run: the fused form where every field merges in
    NumPy (a fixed gap, ``spark.wid.paneMerge`` = `setting` not ``spark``),
    else the sorted form."""
    notes = () if w.group_by else ("no group_by: sessions are found in one partition",)
    fused_first = w.gap_column is None and setting != "spark"
    return outline((FUSED_FORM, SORTED_FORM) if fused_first else (SORTED_FORM,), WHY, notes)


def sessions(ctx: PlanContext) -> Planned:
    """Session windows with a fixed `gap_ms` or a per-row `gap_column` (ms)."""
    w = ctx.window
    notes = outline_sessions(w, "auto").notes
    fast = fused(ctx) if w.gap_column is None else None
    if fast is not None:
        return planned(fast, FUSED_FORM, WHY, notes)
    return planned(sorted_form(ctx), SORTED_FORM, WHY, notes)


def sorted_form(ctx: PlanContext) -> DataFrame:
    """The Spark form (module docstring): running session ids over one sort
    per group, then ``groupBy``."""
    w = ctx.window
    keys = list(w.group_by)
    gap = lit_long((w.gap_ms or 0) * 1000) if w.gap_column is None else F.col(w.gap_column).cast("long") * 1000
    order = W.partitionBy(*keys).orderBy(TS)
    before = order.rowsBetween(W.unboundedPreceding, -1)
    upto = order.rowsBetween(W.unboundedPreceding, W.currentRow)
    rows = ctx.rows.withColumn(END, F.col(TS) + gap)
    prev_end = F.max(END).over(before)
    rows = rows.withColumn(WINDOW_ID, (prev_end.isNull() | (F.col(TS) > prev_end)).cast("long"))
    rows = rows.withColumn(WINDOW_ID, F.sum(WINDOW_ID).over(upto))
    start_us, end_us = F.col("_wid_start"), F.col(END)
    aggs = ctx.aggs_within(start_us, end_us)
    grouped = rows.groupBy(*keys, WINDOW_ID).agg(
        F.min(TS).alias("_wid_start"), F.max(END).alias(END),
        *[e.alias(field(i, k)) for i, a in enumerate(aggs) for k, e in a.partial().items()])
    return assemble(grouped, w, start_us, end_us, values=panes.finished(aggs, "p"))


def fused(ctx: PlanContext) -> DataFrame | None:
    """The fused form (module docstring), or None when a field cannot merge
    in NumPy (`arrow_merge.fused`)."""
    w = ctx.window
    keys, gap = list(w.group_by), (w.gap_ms or 0) * 1000
    start_us, end_us = F.col(WINDOW_ID), F.col(LAST) + lit_long(gap)
    aggs = ctx.aggs_within(start_us, end_us)
    spec = pane_merge.MergeSpec(keys=tuple(keys), pane=PANE, shape="gapped", fields=(), length=gap)
    last = pane_merge.FieldOp("max", (PANE,), (LAST,))
    merged = arrow_merge.fused(panes.by_key(ctx.rows, keys), keys, F.col(TS), spec, aggs, pane_ops=(last,))
    if merged is None:
        return None
    return assemble(merged, w, start_us, end_us, values=panes.finished(aggs))
