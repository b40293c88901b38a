"""What each window kind is in the oracles (docs/semantics.md#window-kinds):
its batch evaluation (every window complete at the end of the input) and
its streaming rules (`wid.semantics.stream_types.StreamRules`), looked up by
the kind's name in `wid.semantics.kinds.SEMANTICS`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from wid.semantics.stream_types import StreamRules
from wid.semantics.timeunits import ms_to_us
from wid.spec.kinds import Shape
from wid.spec.window import Window


class KindSemantics:
    """A window kind in the oracles: `evaluate` gives the output rows of the
    good rows (each with its event time under `wid.semantics.rows.TS`),
    `rules` its streaming rules; registered under its `shape`."""

    shape: ClassVar[type[Shape]]

    def reject_reason(self, row: Mapping[str, Any], w: Window) -> str | None:
        """Why `row` is bad input for this kind (a session's gap), after the
        checks every kind makes (`wid.semantics.oracle.reject_reason`), or None."""
        return None

    def evaluate(self, good: list[dict[str, Any]], w: Window) -> list[dict[str, Any]]:
        """The output rows of `good` in batch (every window complete)."""
        raise NotImplementedError

    def rules(self, w: Window) -> StreamRules:
        """The kind's rules for steps 2 and 4 of the streaming oracle."""
        raise NotImplementedError


def allowed_us(w: Window) -> int:
    """How long a window takes late rows after it closed: `allowed_lateness_ms`
    under ``reopen``, else 0 (microseconds)."""
    return ms_to_us(w.allowed_lateness_ms or 0) if w.late_data == "reopen" else 0


__all__ = ["KindSemantics", "allowed_us"]
