"""What each window kind is on the driver (docs/architecture.md#window-kinds):
its batch plan and that plan's outline, the shape its WID operator engine
needs, the input columns its operator rows carry, and what `wid explain`
says of its state and of the ways it may hold data back. Looked up by the
kind's name in `wid.spark.kinds.PLANS`; its fields and rules are its spec
(`wid.spec.kinds`), its geometry and oracle its semantics
(`wid.semantics.kinds`), its operator engine in
`wid.kernels.operator.engines`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pyspark.sql import Column

from wid.spark.columns import Exact
from wid.spark.execution import Execution, Planned
from wid.spark.plan_context import PlanContext
from wid.spec.kinds import Shape
from wid.spec.window import Window

US = 1000


class KindPlan:
    """A window kind on the driver, registered under its `shape`; each
    method reads the window."""

    shape: ClassVar[type[Shape]]

    def plan(self, ctx: PlanContext) -> Planned:
        """The batch plan over `ctx`'s good rows."""
        raise NotImplementedError

    def outline(self, w: Window, setting: str) -> Execution:
        """How `plan` will run, from the spec alone, under ``spark.wid.paneMerge`` = `setting`."""
        raise NotImplementedError

    def engine_shape(self, w: Window, columns: Sequence[str], unordered: Sequence[str]) -> Any:
        """The shape of the kind's WID operator engine
        (`wid.kernels.operator.layout.OperatorSpec.shape`, declared by its
        engine's module); `columns` are the input columns in order,
        `unordered` those Spark cannot sort."""
        raise NotImplementedError

    def operator_columns(self, w: Window, columns: Sequence[str]) -> list[str]:
        """The input columns the operator's rows carry for the kind beyond
        its keys and aggregation inputs."""
        return []

    def bad_input(self, w: Window) -> list[tuple[str, str]]:
        """The kind's own checks of a row, after those every kind makes
        (`wid.spark.prepare.prepare`): (SQL condition, reason) pairs."""
        return []

    def label(self, w: Window, start_us: Exact, end_us: Exact) -> Column | None:
        """The window's label column from its bounds (`Window.window_label_column`), or None."""
        return None

    def active_windows(self, w: Window) -> int | None:
        """Windows a stream keeps open at once per group (None: unbounded)."""
        return None

    def warnings(self, w: Window, target_kind: str | None) -> list[str]:
        """Ways this kind may hold data back or store fewer rows (`wid explain`)."""
        return []


def late_ms(w: Window) -> int:
    """How far behind a window's end its rows may still come: the lateness,
    and the reopen budget."""
    return w.lateness_ms + (w.allowed_lateness_ms or 0)


__all__ = ["KindPlan", "US", "late_ms"]
