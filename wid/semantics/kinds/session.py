"""Session windows in the oracles (docs/semantics.md#window-kinds): maximal
runs of a group's rows, each next row no later than the running
``max(ts + gap)`` (`wid.semantics.sessions`).

On a stream a session closes at ``end + 1`` µs (``end < C``: a row exactly
at the end would still join it), and a row is late when ``ts + A < C`` (A:
`allowed_lateness_ms` under ``reopen``, else 0; C the closing point before
its batch: its own closing time is ``ts + 1``). Closed sessions end before
C, so an accepted row can never join a session that was emitted and
dropped: the emitted sessions are exactly the batch sessions of the
accepted rows. A session fires as the trigger policy says
(`wid.semantics.trigger`); a session emitted under a start it no longer has
(it merged with another, or took an earlier row) is retracted: its old
natural key must be deleted from the sink.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from wid.semantics import reasons
from wid.semantics.kinds.base import KindSemantics
from wid.semantics.rows import TS, Group, key_of, window_head, window_row
from wid.semantics.sessions import sessionize
from wid.semantics.stream_types import Accepted, Admitted, Emission
from wid.semantics.timeunits import ms_to_us
from wid.semantics.trigger import TriggerPolicy
from wid.spec.kinds import SessionWindows
from wid.spec.window import Window


def gaps_us(w: Window, rows: Sequence[dict[str, Any]]) -> list[tuple[int, int]]:
    """Each row's (event time, gap), in microseconds."""
    return [(r[TS], ms_to_us(r[w.gap_column] if w.gap_column else w.gap_ms or 0)) for r in rows]


class SessionSemantics(KindSemantics):
    shape = SessionWindows

    def reject_reason(self, row: Mapping[str, Any], w: Window) -> str | None:
        """A per-row gap that is NULL or not positive."""
        column = w.gap_column
        if column is not None and (row[column] is None or row[column] <= 0):
            return reasons.bad_gap(column)
        return None

    def evaluate(self, good: list[dict[str, Any]], w: Window) -> list[dict[str, Any]]:
        groups: dict[Group, list[dict[str, Any]]] = defaultdict(list)
        for r in good:
            groups[key_of(r, w.group_by)].append(r)
        out = []
        for keys, members in groups.items():
            for start, end, idx in sessionize(gaps_us(w, members)):
                out.append(window_row(w, window_head(w, start, end, keys), [members[i] for i in idx]))
        return out

    def rules(self, w: Window, policy: TriggerPolicy) -> SessionRules:
        return SessionRules(w, policy)


class SessionRules:
    """`wid.semantics.stream_types.StreamRules` of session windows; it keeps
    the sessions it emitted (group, start), to retract those that moved."""

    def __init__(self, w: Window, policy: TriggerPolicy) -> None:
        self.w, self.policy = w, policy
        self.shown: set[tuple[Group, int]] = set()

    def admit(self, ts: int, closed: int) -> Admitted | None:
        return None if self.policy.late(ts + 1, ts + 1, closed) else Admitted()

    def emit(self, key: Group, members: Sequence[Accepted], index: int, prev: int, now: int) -> list[Emission]:
        out, starts = [], set()
        for start, end, idx in sessionize(gaps_us(self.w, [a.row for a in members])):
            starts.add(start)
            fires, final = self.policy.fire(end + 1 <= prev, end + 1 <= now, any(members[i].batch == index for i in idx))
            if fires:
                row = window_row(self.w, window_head(self.w, start, end, key), [members[i].row for i in idx])
                out.append(Emission(row, final=final))
                self.shown.add((key, start))
        for gone in sorted(k for k in self.shown if k[0] == key and k[1] not in starts):
            self.shown.discard(gone)
            out.append(Emission({**window_head(self.w, gone[1], 0, key), self.w.window_end_column: None},
                                final=False, retract=True))
        return out


__all__ = ["SessionRules", "SessionSemantics"]
