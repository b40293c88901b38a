"""Compiling a window to the WID operator's Spark plan (driver side)."""

from __future__ import annotations

from wid.aggregates.vector import vector_agg
from wid.spark.operator.layout import OperatorSpec, geometry_of
from wid.spec.window import Window

US = 1000


def operator_spec(window: Window, *, pipeline: str, shards: int,
                  dead_letter_columns: tuple[str, ...] = ()) -> OperatorSpec:
    """What the operator's shards need to know of `window`."""
    w = window
    aggs = tuple(vector_agg(a.agg, a.column, a.column2, w.tie_breaker, a.percent, a.max_distinct_values_per_group,
                            a.as_) for a in w.aggregations)
    time_kind = w.kind in ("tumbling", "hopping")
    return OperatorSpec(
        kind=w.kind, group_by=w.group_by, aggs=aggs, aliases=tuple(a.as_ for a in w.aggregations),
        geometry=geometry_of(w.kind, w.duration_ms, w.hop_ms, w.origin_ms) if time_kind else None,
        gap_us=None if w.gap_ms is None else w.gap_ms * US, gap_column=w.gap_column,
        scope=w.punctuation.scope if w.punctuation is not None else (),
        lateness_us=w.lateness_ms * US,
        allowed_us=(w.allowed_lateness_ms or 0) * US if w.late_data == "reopen" else 0,
        late_mode=w.late_mode, late_data=w.late_data, emit=w.emit, idleness_ms=w.source_idleness_ms,
        max_groups=w.max_groups_per_window, pipeline=pipeline, shards=shards,
        dead_letter_columns=dead_letter_columns)


__all__ = ["operator_spec"]
