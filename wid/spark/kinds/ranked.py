"""Count and rolling windows on the driver: their batch plans
(`wid.spark.count_windows`, `wid.spark.rolling`) and the shapes their
operator engines need (ranks by `wid.spark.operator.extent_plan.ranking`)."""

from __future__ import annotations

from collections.abc import Sequence

from wid.kernels.operator.count_engine import CountShape
from wid.kernels.operator.rolling_engine import RollingShape
from wid.kernels.tables import TS
from wid.spark import count_windows, rolling
from wid.spark.execution import Execution, Planned
from wid.spark.kinds.base import US, KindPlan
from wid.spark.operator.extent_plan import ranking
from wid.spark.plan_context import PlanContext
from wid.spec.kinds import CountWindows, RollingWindows, shape_as
from wid.spec.window import Window


class CountPlan(KindPlan):
    shape = CountWindows

    def plan(self, ctx: PlanContext) -> Planned:
        return count_windows.count_windows(ctx)

    def outline(self, w: Window, setting: str) -> Execution:
        return count_windows.outline_count(w, setting)

    def engine_shape(self, w: Window, columns: Sequence[str], unordered: Sequence[str]) -> CountShape:
        return CountShape(w.size_rows or 0, shape_as(w, CountWindows).hop_rows_or_size, w.partition_by, ranking(w, columns, unordered),
                          w.window_id_column)

    def operator_columns(self, w: Window, columns: Sequence[str]) -> list[str]:
        return [c for c in ranking(w, columns).order if c != TS]  # the rank order

    def active_windows(self, w: Window) -> int | None:
        return -(-(w.size_rows or 0) // shape_as(w, CountWindows).hop_rows_or_size)

    def warnings(self, w: Window, target_kind: str | None) -> list[str]:
        return [f"rows after the last complete hop of each partition (up to {shape_as(w, CountWindows).hop_rows_or_size - 1}) "
                "are in no emitted count window until more rows arrive"]


class RollingPlan(KindPlan):
    shape = RollingWindows

    def plan(self, ctx: PlanContext) -> Planned:
        return rolling.rolling(ctx)

    def outline(self, w: Window, setting: str) -> Execution:
        return rolling.outline_rolling(w, setting)

    def engine_shape(self, w: Window, columns: Sequence[str], unordered: Sequence[str]) -> RollingShape:
        return RollingShape((w.duration_ms or 0) * US, w.every_rows or 1, ranking(w, columns, unordered), tuple(columns))

    def operator_columns(self, w: Window, columns: Sequence[str]) -> list[str]:
        return list(columns)  # each output row is an input row

    def warnings(self, w: Window, target_kind: str | None) -> list[str]:
        if target_kind != "sqlite":
            return []
        return ["rolling rows are keyed by every input column: identical input rows are stored once"]


__all__ = ["CountPlan", "RollingPlan"]
