"""The batch plans: a Window over the good rows of a prepared batch
DataFrame, compiled to plain DataFrame operations (docs/architecture.md#execution-paths). No
Python runs per row or per key; Spark's own operators, and vectorised
NumPy passes over Arrow batches (`mapInArrow`), do all the work."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame

from wid.spark.count_windows import count_windows
from wid.spark.rolling import rolling
from wid.spark.session_windows import sessions
from wid.spark.stage import Ctx, Planned, enforce_group_cap
from wid.spark.time_windows import hopping, landmark, tumbling
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


__all__ = ["PLANS", "compile_batch"]
