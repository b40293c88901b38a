"""Landmark windows on the driver (`wid.spark.time_windows.landmark` plans
them in batch; `wid.kernels.operator.landmark_engine` on a stream)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wid.kernels.operator.layout import LandmarkShape
from wid.spark import time_windows
from wid.spark.execution import Execution, Planned
from wid.spark.kinds.base import US, KindPlan, late_ms
from wid.spark.plan_context import Ctx
from wid.spec.window import Window


class LandmarkPlan(KindPlan):
    name = "landmark"

    def plan(self, ctx: Ctx) -> Planned:
        return time_windows.landmark(ctx)

    def outline(self, w: Window, setting: str) -> Execution:
        return time_windows.outline_landmark(w, setting)

    def operator_fields(self, w: Window, columns: Sequence[str], unordered: Sequence[str]) -> dict[str, Any]:
        return {"landmark": LandmarkShape((w.landmark_ms or 0) * US, (w.hop_ms or 0) * US,
                                          None if w.max_duration_ms is None else w.max_duration_ms * US)}

    def active_windows(self, w: Window) -> int | None:
        if not w.max_duration_ms:
            return None
        hop = w.hop_ms or 1
        return w.max_duration_ms // hop + -(-late_ms(w) // hop)

    def warnings(self, w: Window, target_kind: str | None) -> list[str]:
        return ["rows before landmark_ms go to the dead letter" + (
            "" if w.max_duration_ms else "; in batch, windows run up to the latest event time")]


__all__ = ["LandmarkPlan"]
