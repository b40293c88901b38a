"""A window stage's output, assembled in docs/semantics.md's column order:
window bounds (timestamps from epoch microseconds), group columns, the
aggregations' values; and the values of aggregations over a window
function's frame."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, WindowSpec
from pyspark.sql import functions as F

from wid.aggregates.spark import FirstLast, SparkAgg
from wid.aggregates.spark import value as agg_value
from wid.spark.columns import Exact, field, getter, ident, sql, timestamp_us
from wid.spec.time_text import EPOCH_NTZ, ISO_SECONDS
from wid.spec.window import Window


def frame_values(df: DataFrame, aggs: Sequence[SparkAgg], frame: WindowSpec,
                 in_order: bool = False) -> tuple[DataFrame, list[Column]]:
    """`df` with each aggregation's fields over a window function `frame`
    (rolling range frames, count windows' row frames), and the columns of
    their values named by their aliases, to select from it. The fields are
    columns first because a value may read a field more than once (avg,
    var, corr) and Spark evaluates every occurrence of a window function
    anew, its analyser merging none. With `in_order` (the frame's order is
    event time, the tie-breaker, then the value of every first and last),
    first and last are the frame's own (`FirstLast.in_order`)."""
    values, fields = [], []
    for i, a in enumerate(aggs):
        if in_order and isinstance(a, FirstLast):
            fields.append(a.in_order(frame).alias(field(i, "v", "f")))
            values.append(F.col(field(i, "v", "f")).alias(a.agg.as_))
            continue
        fields += [e.over(frame).alias(field(i, k, "f")) for k, e in a.partial().items()]
        values.append(agg_value(a, getter(i, "f")).alias(a.agg.as_))
    return df.select("*", *fields), values


def where_label(start_us: Column, end_us: Column, pipeline: str, wall: bool = False) -> Column:
    """``[start, end) for pipeline P`` for cap errors, the bounds (epoch
    microseconds) as ISO-8601 UTC instants ending in ``Z``, or with `wall`
    (microseconds of a wall clock read as UTC) as wall-clock times without
    a zone: computed through a ``TIMESTAMP_NTZ``, so that no session time
    zone takes part (`wid.spec.time_text`)."""
    def iso(us: Column) -> Column:
        text = F.date_format(F.timestamp_add("MICROSECOND", us, F.expr(EPOCH_NTZ)), ISO_SECONDS)
        return text if wall else F.concat(text, F.lit("Z"))
    return F.concat(F.lit("window ["), iso(start_us), F.lit(", "), iso(end_us), F.lit(f") for pipeline {pipeline}"))


def _bound(us: Column | Exact, name: str) -> Column:
    """Epoch microseconds `us` as the timestamp column `name`."""
    if isinstance(us, Exact):
        return sql(f"timestamp_micros({us.text}) AS {ident(name)}")
    return timestamp_us(us).alias(name)


def assemble(df: DataFrame, window: Window, start_us: Column | Exact, end_us: Column | Exact,
             window_id: Column | None = None, extra: tuple[Column, ...] = (),
             values: Sequence[Column] | None = None, label: Column | None = None) -> DataFrame:
    """Window columns (timestamps from epoch microseconds; a calendar
    window's `label`, named, when it has one), then the group columns, then
    the aggregations' `values` (named by their aliases; default: `df`'s
    columns of those names), then any `extra` columns. One projection."""
    head = [_bound(start_us, window.window_start_column), _bound(end_us, window.window_end_column)]
    if label is not None:
        head.append(label)
    if window_id is not None:
        head.append(window_id.cast("long").alias(window.window_id_column))
    named = [F.col(a.as_) for a in window.aggregations] if values is None else list(values)
    return df.select(*head, *window.key_columns, *named, *extra)


__all__ = ["assemble", "frame_values", "where_label"]
