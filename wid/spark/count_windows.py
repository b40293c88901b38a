"""Batch plan for count windows: ranks, then panes of ``gcd(size, hop)`` ranks.

Ranks are counted per `partition_by` partition (the paper's pattr); extents
are cut in rank space, then each extent is split by `group_by` (the paper's
Q3 versus Q4). Window w holds ranks ``[max(0, (w+1)*hop - size), (w+1)*hop)``
and is emitted once rank ``(w+1)*hop - 1`` exists. `window_start` and
`window_end` are the least and greatest event time in the extent (over all
of its groups), and `window_id` is w.

After the ranking window function, everything stays in the partition's
shuffle partition: panes, the block merge and the final ``groupBy``.

With a hop of one row, no `group_by` and at most `ROW_FRAME_UP_TO` rows a
window, each row ends one window: the window is Spark's row frame
``ROWS BETWEEN size - 1 PRECEDING AND CURRENT ROW`` over the rank order,
evaluated in the same sort as the rank (SQL's frame; DuckDB and the
Nexmark q6 reference compute it so). Spark re-aggregates a sliding row
frame's rows for each row, so past that size the panes' merge is cheaper.
"""

from __future__ import annotations

from math import gcd

from pyspark.sql import Column, DataFrame, WindowSpec
from pyspark.sql import Window as W
from pyspark.sql import functions as F

from wid.aggregates.spark import SparkAgg
from wid.semantics.windowing import Panes
from wid.spark import panes
from wid.spark.columns import PANE, RANK, TS, WINDOW_ID, exact, long_range
from wid.spark.execution import Execution, Planned, outline, planned
from wid.spark.output import assemble, frame_values
from wid.spark.plan_context import PlanContext, holistic
from wid.spark.ranks import rank_order, with_rank
from wid.spec.aggregation import Aggregation
from wid.spec.kinds import CountWindows, shape_as
from wid.spec.window import Window

NP = "_wid_np"
LO, HI = "_wid_lo", "_wid_hi"
HIDDEN = (Aggregation("min", TS, as_=LO), Aggregation("max", TS, as_=HI), Aggregation("max", NP, as_=NP))
ROW_FRAME_UP_TO = 16  # rows a window; the crossover is measured by `python -m benchmarks.count_frames`
ROW_FRAME = "ranks + row frame (one window per row)"


def count_windows(ctx: PlanContext) -> Planned:
    """Tuple-based sliding windows over ranks."""
    w = ctx.window
    size, hop = w.size_rows or 0, shape_as(w, CountWindows).hop_rows_or_size
    part, keys = list(w.partition_by), list(w.key_columns)
    def label() -> Column:
        return F.concat(F.lit("count window "), F.col(WINDOW_ID).cast("string"), F.lit(f" for pipeline {ctx.pipeline}"))
    if row_frame(w):
        order = rank_order(ctx.rows, w, part, in_frame_order(w))
        ranked = with_rank(ctx.rows, w, part, WINDOW_ID, order)
        expected = outline_count(w, "auto")
        return planned(_row_frames(ranked, w, order, ctx.aggs(label)), ROW_FRAME, expected.why, expected.notes)
    rows = with_rank(ctx.rows, w, part).withColumn(NP, F.count(F.lit(1)).over(W.partitionBy(*part)))
    aggs = ctx.aggs(label, HIDDEN)
    r = exact(RANK)
    expected = outline_count(w, "auto")
    if ctx.holistic or hop == size:
        ids = long_range((r // hop).col, ((r + size) // hop - 1).col)
        copied = rows.select("*", F.explode(ids).alias(PANE))
        grouped = panes.partials(copied, keys, exact(PANE), aggs, name=WINDOW_ID)
        out = grouped.select(*keys, WINDOW_ID, *panes.finished(aggs, "p"))
        form = expected.forms[0]
    else:
        g = gcd(size, hop)
        geo = Panes(size // g, hop // g, hop // g - size // g)
        merged, how = panes.sliding_rows(rows, keys, (r // g).col, geo, aggs)
        out = merged.select(*keys, WINDOW_ID, *panes.finished(aggs))
        form = f"ranks + panes of {g} rows + {how}"
    why = expected.why
    out = out.where((F.col(WINDOW_ID) + 1) * hop <= F.col(NP))
    lo, hi = F.col(LO), F.col(HI)
    if w.group_by:
        extent = W.partitionBy(*part, WINDOW_ID)
        lo, hi = F.min(LO).over(extent), F.max(HI).over(extent)
    return planned(assemble(out, w, lo, hi, F.col(WINDOW_ID)), form, why, expected.notes)


def row_frame(w: Window) -> bool:
    """Does each window of `w` take one row frame (module docstring)?"""
    return shape_as(w, CountWindows).hop_rows_or_size == 1 and not w.group_by and 1 < (w.size_rows or 0) <= ROW_FRAME_UP_TO


def in_frame_order(w: Window) -> tuple[str, ...]:
    """The column every first and last of `w` reads, when its row frames
    can take them in the frame's order: event time with a tie-breaker,
    which that column then refines (first and last break ties by the
    value, docs/semantics.md#aggregations); else none."""
    read = {a.column for a in w.aggregations if a.agg in ("first", "last")}
    if w.order_by is not None or not w.tie_breaker or len(read) != 1:
        return ()
    return tuple(c for c in read if c)


def _row_frames(ranked: DataFrame, w: Window, order: WindowSpec, aggs: list[SparkAgg]) -> DataFrame:
    """One window per row of `ranked` (with `WINDOW_ID`, its rank, and the
    rank `order`): the aggregations over the row frame of the window's size
    ending at the row, and the extent's least and greatest event time. In
    event-time order (no `order_by`) those are the time `size - 1` rows
    back (the partition's first time in its first windows) and the row's
    own: an offset and a running frame, which Spark evaluates in O(1) a row,
    where a sliding frame re-reads its rows for each row."""
    size = w.size_rows or 0
    frame = order.rowsBetween(1 - size, 0)
    if w.order_by is None:
        running = order.rowsBetween(W.unboundedPreceding, W.currentRow)
        lo, hi = F.coalesce(F.lag(TS, size - 1).over(order), F.min(TS).over(running)), F.col(TS)
    else:
        lo, hi = F.min(TS).over(frame), F.max(TS).over(frame)
    framed, values = frame_values(ranked, aggs, frame, in_order=bool(in_frame_order(w)))
    return assemble(framed, w, lo, hi, F.col(WINDOW_ID), values=values)


def outline_count(w: Window, setting: str) -> Execution:
    """How count windows run: ranks, then a ``groupBy`` (tumbling: hop =
    size), copies (holistic aggregations) or panes of ``gcd(size, hop)``
    rows merged under ``spark.wid.paneMerge`` = `setting`."""
    size, hop = w.size_rows or 0, shape_as(w, CountWindows).hop_rows_or_size
    notes = () if w.partition_by else ("no partition_by: ranks are counted in one partition",)
    whole = holistic(w)
    if hop == size:
        return outline(("ranks + groupBy",), "tumbling count windows", notes)
    if row_frame(w):
        return outline((ROW_FRAME,), "count windows overlap", notes)
    if whole:
        return outline(("ranks + copy: each row into its windows",), f"{', '.join(whole)} cannot merge in constant "
                       "space", notes)
    g = gcd(size, hop)
    return outline(tuple(f"ranks + panes of {g} rows + {how}" for how in panes.merges("rows", setting)),
                   "count windows overlap", notes)
