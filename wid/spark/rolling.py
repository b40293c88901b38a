"""Batch plan for rolling windows: one output row per input row t, over the
group's rows u with ``t.ts - d < u.ts <= t.ts``.

Event times are integer microseconds, so the extent is the range frame
``[t - (d - 1us), t]`` ordered by ts: rows tied with t are in it, as in the
paper and DuckDB's RANGE frame. With `every_rows = n`, only rows whose
1-based rank (see `wid.spark.ranks`) is a multiple of n are emitted.
"""

from __future__ import annotations

from pyspark.sql import Window as W
from pyspark.sql import functions as F

from wid.aggregates.spark import value
from wid.errors import ConfigError
from wid.spark.columns import PREFIX, RANK, TS
from wid.spark.plan import Ctx, Planned
from wid.spark.ranks import with_rank


def rolling(ctx: Ctx) -> Planned:
    """Range frames over each group's rows ordered by event time."""
    w = ctx.window
    inputs = [c for c in ctx.rows.columns if not c.startswith(PREFIX)]
    for i, agg in enumerate(w.aggregations):
        if agg.as_ in inputs:
            raise ConfigError(f"aggregations[{i}].as", f"alias '{agg.as_}' collides with an input column",
                              "rolling output keeps every input column; choose another alias")
    d = (w.duration_ms or 0) * 1000
    frame = W.partitionBy(*w.group_by).orderBy(TS).rangeBetween(-(d - 1), 0)
    where = F.concat(F.lit("rolling extent ending "), F.col(TS).cast("string"), F.lit(f" us for pipeline {ctx.pipeline}"))
    aggs = ctx.aggs(where)
    rows = ctx.rows
    if w.every_rows and w.every_rows > 1:
        rows = with_rank(rows, w, w.group_by)
    values = []
    for a in aggs:
        fields = {k: e.over(frame) for k, e in a.partial().items()}
        values.append(value(a, fields.__getitem__).alias(a.agg.as_))
    out = rows.select("*", *values)
    if w.every_rows and w.every_rows > 1:
        out = out.where((F.col(RANK) + 1) % w.every_rows == 0)
    notes = ["range frames recompute each extent: cost grows with rows per duration"]
    if not w.group_by:
        notes.append("no group_by: the frame runs in one partition")
    return Planned(out.select(*inputs, *[a.as_ for a in w.aggregations]), "range frame per group",
                   "one extent per input row", tuple(notes))
