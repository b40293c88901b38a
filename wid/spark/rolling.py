"""Batch plan for rolling windows: one output row per input row t, over the
group's rows u with ``t.ts - d < u.ts <= t.ts``.

Event times are integer microseconds, so the extent is the range frame
``[t - (d - 1us), t]`` ordered by ts: rows tied with t are in it, as in the
paper and DuckDB's RANGE frame. With `every_rows = n`, only rows whose
1-based rank (see `wid.spark.ranks`) is a multiple of n are emitted.

Two forms (docs/architecture.md#execution-paths: "range frames or sorted prefix sums"):

- **sorted prefix sums** (default): rows hash-partitioned by group, then
  one vectorised `mapInArrow` step per partition merges each row's extent
  in O(1) (`wid.kernels.rolling_merge`). It needs every aggregation to merge
  in constant space over numbers (or, for min/max/first/last, any atomic
  type);
- **range frame**: Spark's window function, used otherwise (order
  statistics, HLL sketches, decimals) or when the session sets
  ``spark.wid.paneMerge = spark``. Spark re-aggregates a moving frame's rows
  as its lower bound moves, so its cost grows with the rows per extent.
"""

from __future__ import annotations

import functools

from pyspark.sql import DataFrame
from pyspark.sql import Window as W
from pyspark.sql import functions as F
from pyspark.sql import types as T

from wid.errors import ConfigError
from wid.kernels import rolling_merge
from wid.kernels.vector_aggregates import vector_agg
from wid.spark.arrow_merge import ORDERABLE, SUMMABLE, enabled
from wid.spark.columns import PREFIX, RANK, TS
from wid.spark.compat import arrow_schema
from wid.spark.execution import Execution, Planned, outline, planned
from wid.spark.output import frame_values
from wid.spark.panes import by_key
from wid.spark.plan_context import PlanContext
from wid.spark.ranks import with_rank
from wid.spark.shipping import ship
from wid.spec.window import Window


def rolling(ctx: PlanContext) -> Planned:
    """Range frames over each group's rows ordered by event time."""
    w = ctx.window
    inputs = [c for c in ctx.rows.columns if not c.startswith(PREFIX)]
    for i, agg in enumerate(w.aggregations):
        if agg.as_ in inputs:
            raise ConfigError(f"aggregations[{i}].as", f"alias '{agg.as_}' collides with an input column",
                              "rolling output keeps every input column; choose another alias")
    d = (w.duration_ms or 0) * 1000
    frame = W.partitionBy(*w.group_by).orderBy(TS).rangeBetween(-(d - 1), 0)
    aggs = ctx.aggs(lambda: F.concat(F.lit("rolling extent ending "), F.col(TS).cast("string"),
                                     F.lit(f" us for pipeline {ctx.pipeline}")))
    rows = ctx.rows
    if w.every_rows and w.every_rows > 1:
        rows = with_rank(rows, w, w.group_by)
    framed, values = frame_values(rows, aggs, frame)
    if w.every_rows and w.every_rows > 1:
        framed = framed.where((F.col(RANK) + 1) % w.every_rows == 0)
    out = framed.select(*inputs, *values)
    where_one = ("no group_by: every row is in one partition",) if not w.group_by else ()
    fast = _prefix_sums(ctx, rows, out.schema)
    if fast is not None:
        if w.every_rows and w.every_rows > 1:
            fast = fast.where((F.col(RANK) + 1) % w.every_rows == 0)
        return planned(fast.select(*inputs, *[a.as_ for a in w.aggregations]), PREFIX_FORM, PREFIX_WHY, where_one)
    return planned(out, RANGE_FORM, RANGE_WHY, (RANGE_NOTE, *where_one))


PREFIX_FORM, PREFIX_WHY = "sorted prefix sums per group (vectorised mapInArrow)", "one extent per input row, each merged in O(1)"
RANGE_FORM, RANGE_WHY = "range frame per group", "one extent per input row"
RANGE_NOTE = "range frames recompute each extent: cost grows with rows per duration"


def outline_rolling(w: Window, setting: str) -> Execution:
    """How rolling windows run: sorted prefix sums where every aggregation
    can (no holistic or distinct counts; the column types decide the rest;
    ``spark.wid.paneMerge`` = `setting` not ``spark``), else range frames."""
    where_one = ("no group_by: every row is in one partition",) if not w.group_by else ()
    vector = setting != "spark" and not any(a.holistic or a.agg == "count_distinct" for a in w.aggregations)
    if not vector:
        return outline((RANGE_FORM,), RANGE_WHY, (RANGE_NOTE, *where_one))
    return outline((PREFIX_FORM, RANGE_FORM), PREFIX_WHY, where_one)


def _vector_ready(ctx: PlanContext) -> bool:
    """Can every aggregation run in `wid.kernels.rolling_merge`?"""
    types = {f.name: f.dataType for f in ctx.rows.schema.fields}
    for agg in ctx.window.aggregations:
        if agg.holistic or agg.agg == "count_distinct":
            return False
        allowed = ORDERABLE if agg.agg in ("min", "max", "first", "last") else SUMMABLE
        if any(not isinstance(types[c], allowed) for c in agg.columns):
            return False
    return enabled(ctx.rows)


def _prefix_sums(ctx: PlanContext, rows: DataFrame, schema: T.StructType) -> DataFrame | None:
    """`rows` with their rolling aggregates by `wid.kernels.rolling_merge`, in
    `schema` (the range frame's output, plus `TS` and, with every_rows, the
    rank), or None when an aggregation cannot run there."""
    if not _vector_ready(ctx):
        return None
    w = ctx.window
    aggs = tuple(vector_agg(a.agg, a.column, a.column2, w.tie_breaker, a.percent, None, a.as_)
                 for a in w.aggregations)
    extra = [f for f in rows.schema.fields if f.name in (TS, RANK)]
    out = T.StructType([*extra, *schema.fields])
    ship()
    arrow = arrow_schema(out, ctx.rows.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC")
    step = functools.partial(rolling_merge.rolling_rows, aggs=aggs, aliases=tuple(a.as_ for a in w.aggregations),
                             keys=w.group_by, duration_us=(w.duration_ms or 0) * 1000, schema=arrow)
    return by_key(rows, w.group_by).mapInArrow(step, out)
