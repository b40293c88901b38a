"""The batch plans: a Window over the good rows of a prepared batch
DataFrame, compiled to plain DataFrame operations (docs/architecture.md#execution-paths). No
Python runs per row or per key; Spark's own operators, and vectorised
NumPy passes over Arrow batches (`mapInArrow`), do all the work."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame

from wid.spark.count_windows import count_windows, outline_count
from wid.spark.rolling import outline_rolling, rolling
from wid.spark.session_windows import outline_sessions, sessions
from wid.spark.stage import Ctx, Outline, Planned, enforce_group_cap
from wid.spark.time_windows import (
    TUMBLING,
    hopping,
    landmark,
    outline_hopping,
    outline_landmark,
    tumbling,
)
from wid.spec.window import Window

PLANS: dict[str, Callable[[Ctx], Planned]] = {
    "tumbling": tumbling, "hopping": hopping, "landmark": landmark,
    "session": sessions, "count": count_windows, "rolling": rolling,
}


def compile_batch(rows: DataFrame, window: Window, pipeline: str) -> Planned:
    """The plan of `window` over `rows` (good rows of a prepared batch
    DataFrame: the input columns and `wid.spark.columns.TS`), with
    `max_groups_per_window` enforced when the output is computed. The window
    bounds are TIMESTAMP (UTC instants); see `wid.spark.compile` for the
    wall-clock case."""
    planned = PLANS[window.kind](Ctx(window, rows, pipeline))
    output = enforce_group_cap(planned.output, window, pipeline)
    return Planned(output, planned.form, planned.why, planned.notes)


OUTLINES: dict[str, Callable[[Window, str], Outline]] = {
    "tumbling": lambda w, setting: TUMBLING, "hopping": outline_hopping, "landmark": outline_landmark,
    "session": outline_sessions, "count": outline_count, "rolling": outline_rolling,
}


def outline_batch(window: Window, setting: str = "auto") -> Outline:
    """How `compile_batch` will plan `window`, from the spec alone, under
    ``spark.wid.paneMerge`` = `setting`: the forms it may take, in the
    order they are tried (the input's column types pick one), why, notes."""
    return OUTLINES[window.kind](window, setting)


__all__ = ["OUTLINES", "PLANS", "compile_batch", "outline_batch"]
