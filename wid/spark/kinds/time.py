"""Tumbling and hopping windows on the driver (`wid.spark.time_windows`
plans them in batch; on a stream their operator engine merges panes of
``gcd(duration, hop)``, `wid.kernels.operator.time_engine`)."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column

from wid.kernels.operator.time_engine import TimeShape
from wid.semantics.geometry import TimeGeometry, time_geometry
from wid.semantics.windowing import Hopping
from wid.spark import time_windows
from wid.spark.columns import Exact
from wid.spark.execution import Execution, Planned
from wid.spark.kinds.base import US, KindPlan, late_ms
from wid.spark.plan_context import PlanContext
from wid.spec.kinds import HoppingWindows, TumblingWindows
from wid.spec.window import Window


class TimeWindowsPlan(KindPlan):
    """A kind of time windows of a duration and hop, fixed or on a calendar."""

    def geometry(self, w: Window) -> TimeGeometry:
        """`w`'s windows in microseconds (tumbling: hop = duration)."""
        return time_geometry(w)

    def engine_shape(self, w: Window, columns: Sequence[str], unordered: Sequence[str]) -> TimeShape:
        return TimeShape(self.geometry(w))

    def label(self, w: Window, start_us: Exact, end_us: Exact) -> Column | None:
        return time_windows.label(w, self.geometry(w), start_us)

    def active_windows(self, w: Window) -> int | None:
        g = self.geometry(w)
        if isinstance(g, Hopping):
            return -(-(g.duration_us + late_ms(w) * US) // g.hop_us)
        return g.panes.length // g.panes.hop + -(-late_ms(w) * US // (g.units.shortest_us * g.per * g.panes.hop))


class TumblingPlan(TimeWindowsPlan):
    shape = TumblingWindows

    def plan(self, ctx: PlanContext) -> Planned:
        return time_windows.tumbling(ctx)

    def outline(self, w: Window, setting: str) -> Execution:
        return time_windows.outline_tumbling(w)


class HoppingPlan(TimeWindowsPlan):
    shape = HoppingWindows

    def plan(self, ctx: PlanContext) -> Planned:
        return time_windows.hopping(ctx)

    def outline(self, w: Window, setting: str) -> Execution:
        return time_windows.outline_hopping(w, setting)


__all__ = ["HoppingPlan", "TimeWindowsPlan", "TumblingPlan"]
