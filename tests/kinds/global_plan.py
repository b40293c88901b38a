"""The `global` test kind on the driver (`tests.kinds.global_spec`): its
batch plan (one ``groupBy`` of the group columns), the outline `wid
explain` prints, and its operator engine's shape."""

from __future__ import annotations

from collections.abc import Sequence

from tests.kinds.global_engine import GlobalShape
from tests.kinds.global_spec import GlobalWindows
from wid.spark import panes
from wid.spark.columns import WINDOW_ID, Exact
from wid.spark.execution import Execution, Planned, outline, planned
from wid.spark.kinds.base import US, KindPlan
from wid.spark.output import assemble, where_label
from wid.spark.plan_context import PlanContext
from wid.spec.kinds import shape_as
from wid.spec.window import Window

WHOLE = outline(("groupBy",), "one window per group: every row of the group from the landmark on")


class GlobalPlan(KindPlan):
    shape = GlobalWindows

    def plan(self, ctx: PlanContext) -> Planned:
        w = ctx.window
        start, end = Exact(f"{(shape_as(w, GlobalWindows).landmark_ms or 0) * US}L"), Exact("CAST(NULL AS BIGINT)")
        aggs = ctx.aggs(lambda: where_label(start.col, end.col, ctx.pipeline))
        grouped = panes.partials(ctx.rows, w.group_by, Exact("0L"), aggs, name=WINDOW_ID)
        return planned(assemble(grouped, w, start, end, values=panes.finished(aggs, "p")), WHOLE.forms[0], WHOLE.why)

    def outline(self, w: Window, setting: str) -> Execution:
        return WHOLE

    def engine_shape(self, w: Window, columns: Sequence[str], unordered: Sequence[str]) -> GlobalShape:
        return GlobalShape((shape_as(w, GlobalWindows).landmark_ms or 0) * US)
