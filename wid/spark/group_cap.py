"""`max_groups_per_window`: a window holding more groups fails loudly, with
docs/semantics.md#completeness's message."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import Window as W
from pyspark.sql import functions as F
from pyspark.sql import types as T

from wid.spec.sql_text import ident
from wid.spec.time_text import utc_text, wall_text
from wid.spec.window import Window

GROUP_CAP = "window state cap hit: max_groups_per_window={cap} reached on window [%s, %s) for pipeline {pipeline}"


def group_cap_message(cap: int, pipeline: str) -> str:
    """docs/semantics.md#completeness's message, with ``%s`` for the window's UTC bounds
    (pipeline names hold no ``%``; see `wid.spec.pipeline`)."""
    return GROUP_CAP.format(cap=cap, pipeline=pipeline)


def bound_text(df: DataFrame, name: str) -> Column:
    """Window bound `name` of `df` as the cap message writes it, whatever
    the session's time zone (`wid.spec.time_text`): an instant as UTC text
    ending in ``Z``, a wall-clock time without a zone, to the second."""
    if isinstance(df.schema[name].dataType, T.TimestampNTZType):
        return F.expr(wall_text(ident(name), micros=False))
    return F.expr(utc_text(ident(name), micros=False))


def enforce_group_cap(out: DataFrame, window: Window, pipeline: str) -> DataFrame:
    """Fail loudly when a window holds more groups than
    `max_groups_per_window` (docs/semantics.md#completeness message format)."""
    cap = window.max_groups_per_window
    if cap is None or window.shape.row_windows:  # a rolling row is its own window
        return out
    start, end = window.window_start_column, window.window_end_column
    per_window = F.count(F.lit(1)).over(W.partitionBy(start, end))
    message = F.format_string(group_cap_message(cap, pipeline), bound_text(out, start), bound_text(out, end))
    checked = out.withColumn("_wid_groups", per_window)
    return checked.where(F.when(F.col("_wid_groups") > cap, F.raise_error(message)).otherwise(F.lit(True))).drop(
        "_wid_groups")


__all__ = ["GROUP_CAP", "bound_text", "enforce_group_cap", "group_cap_message"]
