"""Batch plan for count windows: ranks, then panes of ``gcd(size, hop)`` ranks.

Ranks are counted per `partition_by` partition (the paper's pattr); extents
are cut in rank space, then each extent is split by `group_by` (the paper's
Q3 versus Q4). Window w holds ranks ``[max(0, (w+1)*hop - size), (w+1)*hop)``
and is emitted once rank ``(w+1)*hop - 1`` exists. `window_start` and
`window_end` are the least and greatest event time in the extent (over all
of its groups), and `window_id` is w.

After the ranking window function, everything stays in the partition's
shuffle partition: panes, the block merge and the final ``groupBy``.
"""

from __future__ import annotations

from math import gcd

from pyspark.sql import Window as W
from pyspark.sql import functions as F

from wid.semantics.windowing import Panes
from wid.spark import panes
from wid.spark.columns import PANE, RANK, TS, WINDOW_ID, floor_div, lit_long, long_range
from wid.spark.ranks import with_rank
from wid.spark.stage import Ctx, Planned, assemble
from wid.spec.aggregation import Aggregation

NP = "_wid_np"
LO, HI = "_wid_lo", "_wid_hi"
HIDDEN = (Aggregation("min", TS, as_=LO), Aggregation("max", TS, as_=HI), Aggregation("max", NP, as_=NP))


def count_windows(ctx: Ctx) -> Planned:
    """Tuple-based sliding windows over ranks."""
    w = ctx.window
    size, hop = w.size_rows or 0, w.hop_rows_or_size
    part, keys = list(w.partition_by), list(w.key_columns)
    rows = with_rank(ctx.rows, w, part).withColumn(NP, F.count(F.lit(1)).over(W.partitionBy(*part)))
    label = F.concat(F.lit("count window "), F.col(WINDOW_ID).cast("string"), F.lit(f" for pipeline {ctx.pipeline}"))
    aggs = ctx.aggs(label, HIDDEN)
    r = F.col(RANK)
    if ctx.holistic or hop == size:
        ids = long_range(floor_div(r, hop), floor_div(r + lit_long(size), hop) - 1)
        copied = rows.select("*", F.explode(ids).alias(PANE))
        grouped = panes.partials(copied, keys, F.col(PANE), aggs, name=WINDOW_ID)
        out = panes.finished(grouped, aggs, "p", [*keys, WINDOW_ID])
        form = "ranks + groupBy" if hop == size else "ranks + copy: each row into its windows"
        why = "tumbling count windows" if hop == size else f"{', '.join(ctx.holistic)} cannot merge in constant space"
    else:
        g = gcd(size, hop)
        geo = Panes(size // g, hop // g, hop // g - size // g)
        merged, how = panes.sliding_rows(rows, keys, floor_div(r, g), geo, aggs)
        out = panes.finished(merged, aggs, keep=[*keys, WINDOW_ID])
        form, why = f"ranks + panes of {g} rows + {how}", "count windows overlap"
    out = out.where((F.col(WINDOW_ID) + 1) * hop <= F.col(NP))
    lo, hi = F.col(LO), F.col(HI)
    if w.group_by:
        extent = W.partitionBy(*part, WINDOW_ID)
        lo, hi = F.min(LO).over(extent), F.max(HI).over(extent)
    notes = () if part else ("no partition_by: ranks are counted in one partition",)
    return Planned(assemble(out, w, lo, hi, F.col(WINDOW_ID)), form, why, notes)
