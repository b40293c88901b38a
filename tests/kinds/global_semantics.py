"""The `global` test kind in the oracles (`tests.kinds.global_spec`): in
batch one output row per group over its rows; on a stream a window that
never closes (`NEVER`), touched by every row of its group."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from tests.kinds.global_spec import GlobalWindows
from wid.semantics.kinds.base import KindSemantics
from wid.semantics.rows import Group, key_of, window_head, window_row
from wid.semantics.stream_types import Accepted, Admitted, Emission
from wid.semantics.timeunits import ms_to_us
from wid.semantics.trigger import NEVER, TriggerPolicy
from wid.spec.kinds import shape_as
from wid.spec.window import Window


class GlobalSemantics(KindSemantics):
    shape = GlobalWindows

    def evaluate(self, good: list[dict[str, Any]], w: Window) -> list[dict[str, Any]]:
        start = ms_to_us(shape_as(w, GlobalWindows).landmark_ms or 0)
        groups: dict[Group, list[dict[str, Any]]] = defaultdict(list)
        for r in good:
            groups[key_of(r, w.group_by)].append(r)
        return [window_row(w, window_head(w, start, None, keys), rows) for keys, rows in groups.items()]

    def rules(self, w: Window, policy: TriggerPolicy) -> GlobalRules:
        return GlobalRules(w, policy)


class GlobalRules:
    """`wid.semantics.stream_types.StreamRules` of the `global` kind."""

    def __init__(self, w: Window, policy: TriggerPolicy) -> None:
        self.w, self.policy = w, policy
        self.start = ms_to_us(shape_as(w, GlobalWindows).landmark_ms or 0)

    def admit(self, ts: int, closed: int) -> Admitted | None:
        return None if self.policy.late(NEVER, NEVER, closed) else Admitted()

    def emit(self, key: Group, members: Sequence[Accepted], index: int, prev: int, now: int) -> list[Emission]:
        closes_at = NEVER  # the window never closes
        fires, final = self.policy.fire(closes_at <= prev, closes_at <= now, any(a.batch == index for a in members))
        if not fires:
            return []
        return [Emission(window_row(self.w, window_head(self.w, self.start, None, key),
                                    [a.row for a in members]), final=final)]
