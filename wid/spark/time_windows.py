"""Batch plans for tumbling, hopping and landmark windows (docs/architecture.md#execution-paths).

- tumbling: bucket ``floor((ts - o)/d)``, then one ``groupBy``;
- hopping: tumbling panes of ``gcd(d, h)`` aggregated by Spark, merged into
  windows by `wid.spark.panes.sliding_panes` (cost independent of ``d/h``;
  one vectorised NumPy pass per key partition when every field allows it);
- landmark: hop-sized panes merged by running prefixes
  (`wid.spark.panes.cumulative_panes`).

Holistic aggregations (`med`, `percentile`, exact `count_distinct`) have no
constant-size merge; with them, overlapping windows fall back to the *copy*
form: each row is copied into each of its windows, as Spark's `window()`
does, and `wid explain` says so. The copy form is also chosen when a row
falls in at most `COPY_MAX_WINDOWS` windows: copying a row a few times inside
Spark's code-generated aggregation costs less than the pane plan's trip
through Arrow and Python (threshold measured, see `benchmarks/HISTORY.md`,
"Batch hopping: the pane aggregate first").
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from wid.semantics.calendar_windows import CalendarHopping, CalendarLandmark, label_sql
from wid.semantics.geometry import LandmarkGeometry, TimeGeometry, landmark_geometry, time_geometry
from wid.semantics.windowing import Hopping, Landmark
from wid.spark import pane_plan, panes
from wid.spark.columns import PANE, TS, WINDOW_ID, Exact, exact, ident, long_range, sql
from wid.spark.execution import Execution, Planned, outline, planned
from wid.spark.output import assemble
from wid.spark.plan_context import PlanContext, holistic
from wid.spec.window import Window

# A row in at most this many windows is copied into them. Measured on 1M and
# 10M rows (2 cores): at 2 windows the copy form takes 0.55x and 1.04x the
# pane plan's time, at 3 0.55x and 1.39x. On 1M rows copies win up to about
# 5 windows, but their cost grows with the data and the pane plan's does not.
COPY_MAX_WINDOWS = 2


def _extent(geo: TimeGeometry) -> tuple[Exact, Exact]:
    """``[start, end)`` of the window in WINDOW_ID."""
    window_id = exact(WINDOW_ID)
    return geo.start(window_id), geo.end(window_id)


def pane_text(geo: TimeGeometry | LandmarkGeometry) -> str:
    """A pane's length as `wid explain` says it: ``60000 ms``, or a calendar
    unit (``1 day in America/New_York``)."""
    if isinstance(geo, Hopping):
        return f"{geo.pane_us / 1000:g} ms"
    if isinstance(geo, Landmark):
        return f"{geo.hop_us / 1000:g} ms"
    units, per = geo.units, geo.per
    what = f"{units.step_us / 1000:g} ms on the local clock" if units.kind == "clock" else \
        f"{per} {units.kind}{'s' if per != 1 else ''}"
    return f"{what} in {units.zone}"


def existing(df: DataFrame, geo: TimeGeometry | LandmarkGeometry) -> DataFrame:
    """`df`'s windows (WINDOW_ID) that are output: all but, on a calendar
    with a unit no instant holds, those starting there
    (`wid.semantics.calendar_windows`)."""
    return df.where(geo.exists(exact(WINDOW_ID)).col) if geo.has_gaps else df


def tumbling(ctx: PlanContext) -> Planned:
    """Bucket then ``groupBy``: the whole plan is one hash aggregation,
    grouped by the window id (one long), then the bounds computed from it.
    Grouping by the bounds instead (two timestamps, as Spark's ``window()``
    groups by its struct) saves the driver that projection's analysis but
    costs more at run time with many groups (benchmarks/RESULTS.md,
    "overhead")."""
    w = ctx.window
    geo = time_geometry(w)
    start, end = _extent(geo)
    aggs = ctx.aggs_within(start.col, end.col)
    bucket = geo.last_window_starting_by(exact(TS))
    grouped = panes.partials(ctx.rows, w.group_by, bucket, aggs, name=WINDOW_ID)
    return planned(assemble(grouped, w, start, end, values=panes.finished(aggs, "p"), label=label(w, geo, start)),
                   outline_tumbling(w).forms[0], TUMBLING.why)


TUMBLING = outline(("bucket + groupBy",), "a row is in exactly one tumbling window")


def outline_tumbling(w: Window) -> Execution:
    """How a tumbling window's plan runs (see `tumbling`): one bucket per
    row, then ``groupBy``; on a calendar, `wid explain` names the buckets
    (``buckets of 1 month in America/New_York + groupBy``)."""
    geo = time_geometry(w)
    if isinstance(geo, Hopping):
        return TUMBLING
    return outline((f"buckets of {pane_text(geo)} + groupBy",), TUMBLING.why)
COPY = "copy: each row into its windows"


PANES_WHY = "windows overlap: each row is aggregated once into its pane, panes merge in O(n)"


def hopping_shape(w: Window) -> tuple[str, str, tuple[str, ...]]:
    """Which plan a hopping window takes, from its spec: ``bucket`` (hop =
    duration: the tumbling plan), ``copy`` (holistic aggregations, or a row in at most
    `COPY_MAX_WINDOWS` windows) or ``panes``; and why, and notes."""
    geo = time_geometry(w).panes  # windows in panes: the ratios are the same
    d, h = geo.length, geo.hop
    if d == h:
        return "bucket", "the hop equals the duration: the windows are tumbling", ()
    copies, whole = -(-d // h), holistic(w)
    if whole or copies <= COPY_MAX_WINDOWS:
        why = (f"{', '.join(whole)} cannot merge panes in constant space" if whole else
               f"a row is in at most {copies} windows: copying it costs less than merging panes "
               f"(copy form up to {COPY_MAX_WINDOWS}, measured)")
        return "copy", why, (f"cost grows with duration/hop = {d / h:g}",)
    return "panes", PANES_WHY, ()


def outline_hopping(w: Window, setting: str) -> Execution:
    """How a hopping window's plan runs (see `hopping`) under
    ``spark.wid.paneMerge`` = `setting`."""
    shape, why, notes = hopping_shape(w)
    if shape != "panes":
        return outline(outline_tumbling(w).forms if shape == "bucket" else (COPY,), why, notes)
    pane = pane_text(time_geometry(w))
    return outline(tuple(f"panes of {pane} + {how}" for how in panes.merges("sliding", setting)), why,
                   pane_plan.outline_notes(setting))


def outline_landmark(w: Window, setting: str) -> Execution:
    """How a landmark window's plan runs (see `landmark`)."""
    whole = holistic(w)
    if whole:
        return outline((COPY,), f"{', '.join(whole)} cannot merge panes in constant space",
                       ("cost grows with the number of windows per period",))
    return outline(tuple(f"hop panes + {how}" for how in panes.merges("cumulative", setting)),
                   "landmark windows are prefixes of their period", pane_plan.outline_notes(setting))


def hopping(ctx: PlanContext) -> Planned:
    """Panes merged into windows, or the copy form (`hopping_shape`)."""
    w = ctx.window
    geo = time_geometry(w)
    shape, why, notes = hopping_shape(w)
    if shape == "bucket":
        return planned(tumbling(ctx).output, outline_tumbling(w).forms[0], why)
    start, end = _extent(geo)
    aggs = ctx.aggs_within(start.col, end.col)
    keys = list(w.group_by)
    named = label(w, geo, start)
    if shape == "copy":
        ts = exact(TS)
        ids = long_range(geo.first_window_ending_after(ts).col, geo.last_window_starting_by(ts).col)
        copied = ctx.rows.select("*", F.explode(ids).alias(PANE))
        grouped = existing(panes.partials(copied, keys, exact(PANE), aggs, name=WINDOW_ID), geo)
        return planned(assemble(grouped, w, start, end, values=panes.finished(aggs, "p"), label=named), COPY, why,
                       notes)
    pane = geo.pane(exact(TS)).col
    choice = pane_plan.choose(ctx.rows, keys, pane, aggs)
    merged, how = panes.sliding_panes(ctx.rows, keys, pane, geo.panes, aggs, choice)
    return planned(assemble(existing(merged, geo), w, start, end, values=panes.finished(aggs), label=named),
                   f"panes of {pane_text(geo)} + {how}", why, (f"pane plan: {choice.why}",))


def landmark(ctx: PlanContext) -> Planned:
    """Cumulative windows from `landmark_ms`: without `max_duration_ms`, up
    to the window holding the latest event time of the input (the windows
    are unbounded); with it (Flink's CUMULATE), up to the end of each row's
    period, which is finite. On a calendar a period holds the hops of its
    unit (a month's days), up to its last (`period_last`)."""
    w = ctx.window
    geo = landmark_geometry(w)
    window_id = exact(WINDOW_ID)
    end, start = geo.end(window_id), geo.start(window_id)
    aggs = ctx.aggs_within(start.col, end.col)
    keys = list(w.group_by)
    last_col = "_wid_last"  # the last window a row's pane reaches
    pane_of = geo.pane(exact(TS))
    period_last = None if geo.slots is None else geo.period_last(pane_of)  # the last window of a row's period
    pane = pane_of.col
    if period_last is None:
        latest = geo.pane(Exact(f"max({ident(TS)})"))  # the window holding the input's latest event time
        rows = ctx.rows.crossJoin(F.broadcast(ctx.rows.agg(latest.col.alias(last_col))))
    else:
        rows = ctx.rows.withColumn(last_col, period_last.col)
    expected = outline_landmark(w, "auto")
    named = label(w, geo, end - 1)
    if ctx.holistic:
        period_end = F.col(last_col) if period_last is None else sql(f"least({ident(last_col)}, {period_last.text})")
        copied = rows.select("*", F.explode(long_range(pane, period_end)).alias(PANE))
        grouped = existing(panes.partials(copied, keys, exact(PANE), aggs, name=WINDOW_ID), geo)
        return planned(assemble(grouped, w, start, end, values=panes.finished(aggs, "p"), label=named), COPY,
                       expected.why, expected.notes)
    choice = pane_plan.choose(ctx.rows, keys, pane, aggs)
    merged, how = panes.cumulative_panes(rows, keys, pane, geo.slots, last_col, aggs, choice)
    return planned(assemble(existing(merged, geo), w, start, end, values=panes.finished(aggs), label=named),
                   f"hop panes + {how}", expected.why, (f"pane plan: {choice.why}",))


def label(w: Window, geo: TimeGeometry | LandmarkGeometry, at: Exact) -> Column | None:
    """The window's label column (`Window.window_label_column`), or None:
    the local name of the unit holding instant `at` (a tumbling or hopping
    window's start, a landmark window's last instant;
    `wid.semantics.calendar_windows.label_sql`)."""
    if w.window_label_column is None or not isinstance(geo, CalendarHopping | CalendarLandmark):
        return None
    return sql(f"{label_sql(geo.units, geo.label, at)} AS {ident(w.window_label_column)}")
