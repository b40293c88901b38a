"""Tumbling and hopping windows on the driver (`wid.spark.time_windows`
plans them in batch; on a stream their operator engine merges panes of
``gcd(duration, hop)``, `wid.kernels.operator.time_engine`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wid.semantics.windowing import Hopping
from wid.spark import time_windows
from wid.spark.execution import Execution, Planned
from wid.spark.kinds.base import US, KindPlan, late_ms
from wid.spark.plan_context import Ctx
from wid.spec.window import Window


class TimeWindowsPlan(KindPlan):
    """A kind of time windows of a fixed duration and hop."""

    def geometry(self, w: Window) -> Hopping:
        """`w`'s windows in microseconds (tumbling: hop = duration)."""
        d = (w.duration_ms or 0) * US
        return Hopping(d, (w.hop_ms or w.duration_ms or 0) * US, w.origin_ms * US)

    def operator_fields(self, w: Window, columns: Sequence[str], unordered: Sequence[str]) -> dict[str, Any]:
        return {"geometry": self.geometry(w)}

    def active_windows(self, w: Window) -> int | None:
        g = self.geometry(w)
        return -(-(g.duration_us + late_ms(w) * US) // g.hop_us)


class TumblingPlan(TimeWindowsPlan):
    name = "tumbling"

    def plan(self, ctx: Ctx) -> Planned:
        return time_windows.tumbling(ctx)

    def outline(self, w: Window, setting: str) -> Execution:
        return time_windows.TUMBLING


class HoppingPlan(TimeWindowsPlan):
    name = "hopping"

    def plan(self, ctx: Ctx) -> Planned:
        return time_windows.hopping(ctx)

    def outline(self, w: Window, setting: str) -> Execution:
        return time_windows.outline_hopping(w, setting)


__all__ = ["HoppingPlan", "TimeWindowsPlan", "TumblingPlan"]
