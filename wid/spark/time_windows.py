"""Batch plans for tumbling, hopping and landmark windows (DESIGN.md section 6).

- tumbling: bucket ``floor((ts - o)/d)``, then one ``groupBy``;
- hopping: tumbling panes of ``gcd(d, h)``, merged into windows by
  `wid.spark.panes.sliding_rows` (cost independent of ``d/h``; rows go to
  one fused NumPy pass per key partition when every field allows it);
- landmark: hop-sized panes merged by running prefixes
  (`wid.spark.panes.cumulative_rows`).

Holistic aggregations (`med`, `percentile`, exact `count_distinct`) have no
constant-size merge; with them, overlapping windows fall back to the *copy*
form: each row is copied into each of its windows, as Spark's `window()`
does, and `wid explain` says so.
"""

from __future__ import annotations

from math import gcd

from pyspark.sql import Column
from pyspark.sql import functions as F

from wid.spark import panes
from wid.spark.columns import PANE, TS, WID, floor_div, lit_long, long_range
from wid.spark.plan import Ctx, Planned, assemble, where_label
from wid.spec.window import Window


def _bounds(w: Window) -> tuple[int, int, int]:
    """(origin, duration, hop) in microseconds."""
    d = (w.duration_ms or 0) * 1000
    h = (w.hop_ms or w.duration_ms or 0) * 1000
    return w.origin_ms * 1000, d, h


def _start(o: int, h: int) -> Column:
    return lit_long(o) + F.col(WID) * lit_long(h)


def tumbling(ctx: Ctx) -> Planned:
    """Bucket then ``groupBy``: the whole plan is one hash aggregation."""
    w = ctx.window
    o, d, _ = _bounds(w)
    start = _start(o, d)
    aggs = ctx.aggs(where_label(start, start + d, ctx.pipeline))
    bucket = floor_div(F.col(TS) - lit_long(o), d)
    grouped = panes.partials(ctx.rows, w.group_by, bucket, aggs, name=WID)
    out = panes.finished(grouped, aggs, stage="p", keep=[*w.group_by, WID])
    return Planned(assemble(out, w, start, start + d), "bucket + groupBy",
                   "a row is in exactly one tumbling window")


def hopping(ctx: Ctx) -> Planned:
    """Panes merged into windows, or the copy form for holistic aggregations."""
    w = ctx.window
    o, d, h = _bounds(w)
    if d == h:
        planned = tumbling(ctx)
        return Planned(planned.output, planned.form, "hop_ms equals duration_ms: the windows are tumbling")
    start = _start(o, h)
    aggs = ctx.aggs(where_label(start, start + d, ctx.pipeline))
    keys = list(w.group_by)
    if ctx.holistic:
        t = F.col(TS) - lit_long(o)
        ids = long_range(floor_div(t - lit_long(d), h) + 1, floor_div(t, h))
        copied = ctx.rows.select("*", F.explode(ids).alias(PANE))
        out = panes.finished(panes.partials(copied, keys, F.col(PANE), aggs, name=WID), aggs, "p", [*keys, WID])
        return Planned(assemble(out, w, start, start + d), "copy: each row into its windows",
                       f"{', '.join(ctx.holistic)} cannot merge panes in constant space",
                       (f"cost grows with duration/hop = {d / h:g}",))
    p = gcd(d, h)
    rows = panes.by_key(ctx.rows, keys)
    pane = floor_div(F.col(TS) - lit_long(o), p)
    merged, how = panes.sliding_rows(rows, keys, pane, panes.Geometry(d // p, h // p), aggs)
    out = panes.finished(merged, aggs, keep=[*keys, WID])
    return Planned(assemble(out, w, start, start + d), f"panes of {p / 1000:g} ms + {how}",
                   "windows overlap: each row is aggregated once into its pane, panes merge in O(n)")


def _last_pane(hop_us: int, landmark_us: int) -> Column:
    """Aggregate: the pane of the latest event time of the input."""
    return floor_div(F.max(F.col(TS)) - lit_long(landmark_us), hop_us)


def landmark(ctx: Ctx) -> Planned:
    """Cumulative windows from `landmark_ms`, up to the window holding the
    latest event time of the input."""
    w = ctx.window
    h, lm = (w.hop_ms or 0) * 1000, (w.landmark_ms or 0) * 1000
    m = None if w.max_duration_ms is None else w.max_duration_ms * 1000
    end = lit_long(lm) + (F.col(WID) + 1) * lit_long(h)
    start = lit_long(lm) if m is None else lit_long(lm) + floor_div(F.col(WID) * lit_long(h), m) * lit_long(m)
    aggs = ctx.aggs(where_label(start, end, ctx.pipeline))
    keys = list(w.group_by)
    last_col = "_wid_last"
    rows = ctx.rows.crossJoin(F.broadcast(ctx.rows.agg(_last_pane(h, lm).alias(last_col))))
    pane = floor_div(F.col(TS) - lit_long(lm), h)
    if ctx.holistic:
        period_end = F.col(last_col) if m is None else F.least(
            F.col(last_col), (floor_div(pane, m // h) + 1) * lit_long(m // h) - 1)
        copied = rows.select("*", F.explode(long_range(pane, period_end)).alias(PANE))
        out = panes.finished(panes.partials(copied, keys, F.col(PANE), aggs, name=WID), aggs, "p", [*keys, WID])
        return Planned(assemble(out, w, start, end), "copy: each row into its windows",
                       f"{', '.join(ctx.holistic)} cannot merge panes in constant space",
                       ("cost grows with the number of windows per period",))
    merged, how = panes.cumulative_rows(panes.by_key(rows, keys), keys, pane, None if m is None else m // h,
                                        last_col, aggs)
    out = panes.finished(merged, aggs, keep=[*keys, WID])
    return Planned(assemble(out, w, start, end), f"hop panes + {how}",
                   "landmark windows are prefixes of their period")
