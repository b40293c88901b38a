"""Landmark windows on the driver (`wid.spark.time_windows.landmark` plans
them in batch; `wid.kernels.operator.landmark_engine` on a stream)."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column

from wid.kernels.operator.landmark_engine import LandmarkShape
from wid.semantics.geometry import landmark_geometry
from wid.semantics.windowing import Landmark
from wid.spark import time_windows
from wid.spark.columns import Exact
from wid.spark.execution import Execution, Planned
from wid.spark.kinds.base import US, KindPlan, late_ms
from wid.spark.plan_context import PlanContext
from wid.spec.kinds import LandmarkWindows
from wid.spec.window import Window


class LandmarkPlan(KindPlan):
    shape = LandmarkWindows

    def plan(self, ctx: PlanContext) -> Planned:
        return time_windows.landmark(ctx)

    def outline(self, w: Window, setting: str) -> Execution:
        return time_windows.outline_landmark(w, setting)

    def engine_shape(self, w: Window, columns: Sequence[str], unordered: Sequence[str]) -> LandmarkShape:
        return LandmarkShape(landmark_geometry(w))

    def label(self, w: Window, start_us: Exact, end_us: Exact) -> Column | None:
        return time_windows.label(w, landmark_geometry(w), end_us - 1)

    def active_windows(self, w: Window) -> int | None:
        geo = landmark_geometry(w)
        if geo.slots is None:
            return None
        shortest_hop = geo.hop_us if isinstance(geo, Landmark) else geo.units.shortest_us * geo.per
        return geo.slots + -(-late_ms(w) * US // shortest_hop)

    def warnings(self, w: Window, target_kind: str | None) -> list[str]:
        return ["rows before landmark_ms go to the dead letter" + (
            "" if landmark_geometry(w).slots is not None else "; in batch, windows run up to the latest event time")]


__all__ = ["LandmarkPlan"]
