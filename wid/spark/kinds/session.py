"""Session windows on the driver (`wid.spark.session_windows` plans them in
batch; `wid.kernels.operator.session_engine` on a stream)."""

from __future__ import annotations

from collections.abc import Sequence

from wid.kernels.operator.session_engine import SessionShape
from wid.semantics import reasons
from wid.spark import session_windows
from wid.spark.columns import ident
from wid.spark.execution import Execution, Planned
from wid.spark.kinds.base import US, KindPlan
from wid.spark.plan_context import PlanContext
from wid.spec.kinds import SessionWindows
from wid.spec.window import Window


class SessionPlan(KindPlan):
    shape = SessionWindows

    def plan(self, ctx: PlanContext) -> Planned:
        return session_windows.sessions(ctx)

    def outline(self, w: Window, setting: str) -> Execution:
        return session_windows.outline_sessions(w, setting)

    def bad_input(self, w: Window) -> list[tuple[str, str]]:
        if w.gap_column is None:
            return []
        gap = ident(w.gap_column)
        return [(f"({gap} IS NULL OR {gap} <= 0)", reasons.bad_gap(w.gap_column))]

    def engine_shape(self, w: Window, columns: Sequence[str], unordered: Sequence[str]) -> SessionShape:
        return SessionShape(None if w.gap_ms is None else w.gap_ms * US, w.gap_column)


__all__ = ["SessionPlan"]
