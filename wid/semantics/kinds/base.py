"""What each window kind is in the oracles (docs/semantics.md#window-kinds):
its batch evaluation (every window complete at the end of the input) and
its streaming rules (`wid.semantics.stream_types.StreamRules`: which
windows a row falls in, their closing times, which a micro-batch touched;
what fires is the trigger policy's, `wid.semantics.trigger`), looked up by
the kind's shape in `wid.semantics.kinds.SEMANTICS`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from wid.semantics.stream_types import StreamRules
from wid.semantics.trigger import TriggerPolicy
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

    def rules(self, w: Window, policy: TriggerPolicy) -> StreamRules:
        """The kind's rules for steps 2 and 4 of the streaming oracle, which
        `policy` (`w`'s, `wid.semantics.trigger.policy_of`) completes."""
        raise NotImplementedError


__all__ = ["KindSemantics"]
