"""Session windows on the driver (`wid.spark.session_windows` plans them in
batch; `wid.kernels.operator.session_engine` on a stream)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wid.spark import session_windows
from wid.spark.execution import Execution, Planned
from wid.spark.kinds.base import US, KindPlan
from wid.spark.plan_context import Ctx
from wid.spec.window import Window


class SessionPlan(KindPlan):
    name = "session"

    def plan(self, ctx: Ctx) -> Planned:
        return session_windows.sessions(ctx)

    def outline(self, w: Window, setting: str) -> Execution:
        return session_windows.outline_sessions(w, setting)

    def operator_fields(self, w: Window, columns: Sequence[str], unordered: Sequence[str]) -> dict[str, Any]:
        return {"gap_us": None if w.gap_ms is None else w.gap_ms * US, "gap_column": w.gap_column}


__all__ = ["SessionPlan"]
