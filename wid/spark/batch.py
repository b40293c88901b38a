"""The batch plans: a Window over the good rows of a prepared batch
DataFrame, compiled to plain DataFrame operations (docs/architecture.md#execution-paths). No
Python runs per row or per key; Spark's own operators, and vectorised
NumPy passes over Arrow batches (`mapInArrow`), do all the work. Each kind's
plan is its driver definition's (`wid.spark.kinds`)."""

from __future__ import annotations

from pyspark.sql import DataFrame

from wid.spark.execution import Execution, Planned
from wid.spark.group_cap import enforce_group_cap
from wid.spark.kinds import plan_of
from wid.spark.plan_context import PlanContext
from wid.spec.window import Window


def compile_batch(rows: DataFrame, window: Window, pipeline: str) -> Planned:
    """The plan of `window` over `rows` (good rows of a prepared batch
    DataFrame: the input columns and `wid.spark.columns.TS`), with
    `max_groups_per_window` enforced when the output is computed. The window
    bounds are TIMESTAMP (UTC instants); see `wid.spark.compile` for the
    wall-clock case."""
    plan = plan_of(window).plan(PlanContext(window, rows, pipeline))
    return Planned(enforce_group_cap(plan.output, window, pipeline), plan.execution)


def outline_batch(window: Window, setting: str = "auto") -> Execution:
    """How `compile_batch` will plan `window`, from the spec alone, under
    ``spark.wid.paneMerge`` = `setting`: the forms it may take, in the
    order they are tried (the input's column types pick one), why, notes."""
    return plan_of(window).outline(window, setting)


__all__ = ["compile_batch", "outline_batch"]
