"""Streaming windows on Spark's own operators: the native path (DESIGN.md section 6).

A spec compiles to ``withWatermark(lateness_ms)`` and Spark's streaming
aggregation wherever that gives exactly the declared semantics:

- **tumbling**: ``groupBy(keys, window(ts, d))`` in append mode.
- **hopping** with ``hop_ms`` dividing ``duration_ms`` and
  ``late_mode = "consistent"``: a pane stage (``window(ts, hop)``) chained
  with a window stage (``window(window_time(pane), d, hop)``) in append mode.
  Each row is aggregated once; the window stage merges ``d/hop`` pane
  partials per window, so the cost of a row does not grow with ``d/hop``.
  Spark filters late rows with the watermark of the previous micro-batch, so
  a row is dropped exactly when its pane has already been emitted. With
  ``hop | d`` the pane's end is the end of the row's earliest window: the
  row is dropped exactly when it is late for any of its windows, the paper's
  *consistent* mode.
- **hopping** otherwise (``generous`` mode, or ``hop`` not dividing ``d``),
  and hopping with statistics or order statistics: the copy form
  (``window(ts, d, hop)``), where Spark filters each copy of a row on its own
  window, which is the *generous* mode. Its cost grows with ``d/hop``; `wid
  explain` says so.
- **session**: ``session_window(ts, gap)`` in append mode. Spark drops a row
  when its own one-row session ``[ts, ts + gap)`` ends at or before the
  previous micro-batch's watermark.

Everything else (count, rolling and landmark windows, punctuations,
``late_data`` ``dlq``/``reopen``, ``emit = "on_update"``) needs the WID
operator. Update mode is refused even for tumbling windows, where Spark
supports it: windows it evicts without an update are not observable, so
the late rows of a micro-batch could not be counted exactly, and the
accounting identity is not negotiable. `native_problem` names the feature
and `window_result` raises a ConfigError naming it.

Every stage carries a hidden row count (`ROWS`, the first aggregate, hence
the first field of Spark's state value) so the late rows of each
micro-batch can be counted exactly from the state store (see
`wid.spark.accounting`): Spark's own ``numRowsDroppedByWatermark`` counts
pre-aggregated groups, not rows.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from wid.aggregates.spark import Moments, SparkAgg, value
from wid.spark import panes
from wid.spark.columns import TS, field, floor_div, lit_long
from wid.spark.plan import Ctx, Planned, assemble, where_label
from wid.spec.window import Window

EVENT = "_wid_event"     # event time as a timestamp, carrying the watermark
ROWS = "_wid_rows"       # rows aggregated into the pane or window
SPAN = "_wid_span"       # Spark's window struct (start, end)
CLOSED = "wid_closed"    # observation: rows in panes or windows emitted this micro-batch
GOOD = "wid_good"        # observation: good rows read this micro-batch
REJECTED = "wid_rejected"  # observation: rows rejected this micro-batch
NATIVE_KINDS = ("tumbling", "hopping", "session")


def native_problem(window: Window) -> tuple[str, str] | None:
    """(field, feature) when `window` needs the WID operator in streaming,
    else None."""
    w = window
    if w.kind not in NATIVE_KINDS:
        return "kind", f"kind = '{w.kind}' on a stream (Spark refuses non-time windows on streaming DataFrames)"
    if w.punctuation is not None:
        return "punctuation", "punctuations on a stream"
    if w.source_idleness_ms is not None:
        return "source_idleness_ms", "source_idleness_ms on a stream (Spark's watermark waits for every source)"
    if w.late_data != "drop":
        return "late_data", f"late_data = '{w.late_data}' on a stream (Spark's operators can only drop late rows)"
    if w.emit == "on_update":
        why = {"session": "Spark refuses update mode for session windows",
               "hopping": "a pane stage chained with a window stage runs in append mode only"}.get(
            w.kind, "in update mode evicted windows are not observable, so late rows could not be counted exactly")
        return "emit", f"emit = 'on_update' on a stream ({why})"
    return None


def _ms(value_ms: int) -> str:
    return f"{value_ms} milliseconds"


def with_event(rows: DataFrame, lateness_ms: int) -> DataFrame:
    """`rows` (with `TS`) plus `EVENT`, the event time as a timestamp with
    Spark's watermark ``max(event time) - lateness_ms``. Applied to each
    source before they are unioned, so the watermark of the window stage is
    the minimum over the sources (Spark's default
    ``spark.sql.streaming.multipleWatermarkPolicy = min``)."""
    return rows.withColumn(EVENT, F.timestamp_micros(F.col(TS))).withWatermark(EVENT, _ms(lateness_ms))


def _span_us() -> tuple[Column, Column]:
    return F.unix_micros(F.col(f"{SPAN}.start")), F.unix_micros(F.col(f"{SPAN}.end"))


def _direct(ctx: Ctx, rows: DataFrame, span: Column, keys: list[str],
            counted: Column | None = None) -> tuple[DataFrame, list[SparkAgg]]:
    """``groupBy(keys, span)`` with the hidden row count first, then every
    aggregation evaluated directly. When `span` copies a row into several
    windows, `counted` selects the one copy that counts it (see `hopping`)."""
    start, end = _span_us()
    aggs = ctx.aggs(where_label(start, end, ctx.pipeline))
    partial = [e.alias(field(i, k)) for i, a in enumerate(aggs) for k, e in a.partial().items()]
    rows_count = F.count(F.lit(1))
    if counted is not None:
        rows, span = rows.select("*", span.alias(SPAN)), F.col(SPAN)
        rows_count = F.count(F.when(counted, F.lit(1)))
    grouped = rows.groupBy(*keys, span.alias(SPAN)).agg(rows_count.alias(ROWS), *partial)
    return grouped.observe(CLOSED, F.sum(ROWS).alias("rows")), aggs


def _finish_direct(grouped: DataFrame, aggs: list[SparkAgg], keys: list[str]) -> DataFrame:
    start, end = _span_us()
    values = [value(a, panes.getter(i)).alias(a.agg.as_) for i, a in enumerate(aggs)]
    return grouped.select(*keys, start.alias("_wid_start"), end.alias("_wid_end"), *values)


def _origin(w: Window, hop_ms: int) -> str:
    return _ms(w.origin_ms % hop_ms)


def tumbling(ctx: Ctx) -> Planned:
    w = ctx.window
    d = w.duration_ms or 0
    grouped, aggs = _direct(ctx, ctx.rows, F.window(EVENT, _ms(d), _ms(d), _origin(w, d)), list(w.group_by))
    out = _finish_direct(grouped, aggs, list(w.group_by))
    return Planned(assemble(out, w, F.col("_wid_start"), F.col("_wid_end")),
                   "native: withWatermark + window() aggregation", "a row is in exactly one tumbling window")


def _pane_plan_fits(ctx: Ctx) -> str | None:
    """Why the pane plan cannot run `ctx`'s hopping window, or None."""
    w = ctx.window
    if w.late_mode != "consistent":
        return ("late_mode = 'generous' needs windows to accept a row after its earlier windows emitted, "
                "which chained append-mode stages cannot do")
    if (w.duration_ms or 0) % (w.hop_ms or 1):
        return "hop_ms does not divide duration_ms, so a pane can close before the row's first window"
    slow = [a.agg.as_ for a in ctx.aggs() if isinstance(a, Moments) or a.agg.holistic]
    if slow:
        return f"{', '.join(slow)} cannot merge pane partials inside a streaming aggregation"
    return None


def hopping(ctx: Ctx) -> Planned:
    w = ctx.window
    d, h = w.duration_ms or 0, w.hop_ms or 0
    keys = list(w.group_by)
    rows = ctx.rows
    why_not = _pane_plan_fits(ctx)
    if why_not is not None:
        # a row counts once, in its last window: it is aggregated somewhere unless that copy is late too
        last_start = floor_div(F.col(TS) - lit_long(w.origin_ms * 1000), h * 1000) * (h * 1000) + w.origin_ms * 1000
        span = F.window(EVENT, _ms(d), _ms(h), _origin(w, h))
        grouped, aggs = _direct(ctx, rows, span, keys, counted=_span_us()[0] == last_start)
        out = _finish_direct(grouped, aggs, keys)
        return Planned(assemble(out, w, F.col("_wid_start"), F.col("_wid_end")),
                       "native copy form: window(ts, duration, hop)", why_not,
                       (f"each row is copied into duration/hop = {d / h:g} windows", *_operator_hint(d, h)))
    pane_span = F.window(EVENT, _ms(h), _ms(h), _origin(w, h))
    paned, aggs = _direct(ctx, rows, pane_span, keys)
    merged = [e.alias(field(i, k, "m")) for i, a in enumerate(aggs)
              for k, e in a.running(panes.getter(i)).items()]
    windows = paned.groupBy(*keys, F.window(F.window_time(SPAN), _ms(d), _ms(h), _origin(w, h)).alias(SPAN)).agg(
        F.sum(ROWS).alias(ROWS), *merged)
    start, end = _span_us()
    values = [a.finish(panes.getter(i, "m")).alias(a.agg.as_) for i, a in enumerate(aggs)]
    out = windows.select(*keys, start.alias("_wid_start"), end.alias("_wid_end"), *values)
    return Planned(assemble(out, w, F.col("_wid_start"), F.col("_wid_end")),
                   f"native: pane stage window(ts, {h} ms) chained with window stage",
                   "each row is aggregated once into its pane; windows merge pane partials",
                   ("append mode only; late rows follow late_mode = 'consistent'", *_operator_hint(d, h)))


OPERATOR_HINT_WINDOWS = 10  # windows a row from which explain points at the WID operator


def _operator_hint(duration_ms: int, hop_ms: int) -> tuple[str, ...]:
    """A note pointing at the WID operator when a row falls in many windows:
    it merges a window's panes without copying them (hopping 60 / 1 over 5M
    rows in one micro-batch: 3.8 s against 22 s for the pane chain and 40 s
    for ``window()``, 2026-11-24, benchmarks/RESULTS.md; 13.7 s against 34.4
    s and 57.5 s on 2026-11-23). The default path is not switched:
    a running query cannot change path without a new checkpoint."""
    if duration_ms < OPERATOR_HINT_WINDOWS * hop_ms:
        return ()
    return (f"{duration_ms / hop_ms:g} windows a row: the WID operator merges panes without copying them "
            "(about 5x faster than the pane chain at 60 windows a row); set spark.wid.streaming.path = operator "
            "when the query starts (a running query keeps its path)",)


def sessions(ctx: Ctx) -> Planned:
    w = ctx.window
    gap = _ms(w.gap_ms or 0) if w.gap_column is None else F.make_dt_interval(
        secs=F.col(w.gap_column).cast("decimal(20,3)") / 1000)
    grouped, aggs = _direct(ctx, ctx.rows, F.session_window(EVENT, gap), list(w.group_by))
    out = _finish_direct(grouped, aggs, list(w.group_by))
    return Planned(assemble(out, w, F.col("_wid_start"), F.col("_wid_end")),
                   "native: withWatermark + session_window() aggregation", "sessions merge inside Spark's state",
                   ("append mode only",))


PLANS = {"tumbling": tumbling, "hopping": hopping, "session": sessions}


def output_mode(window: Window) -> str:
    """Spark's output mode for the window's `emit`."""
    return "update" if window.emit == "on_update" else "append"


__all__ = ["CLOSED", "GOOD", "REJECTED", "with_event", "NATIVE_KINDS", "PLANS", "ROWS", "native_problem", "output_mode"]
