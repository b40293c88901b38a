"""Landmark windows in the oracles (docs/semantics.md#window-kinds; with
`max_duration_ms`, Flink's CUMULATE). In batch every window of a period up to
the one holding the latest event time emits; on a stream these are the
streaming oracle's rules for them.

Window w of a group is ``[period start, L + (w+1)*h)``; a row of pane
``q = floor((ts - L)/h)`` lies in windows ``q .. E(q)`` where E is the last
window of its period (none without `max_duration_ms`: landmark windows grow
for ever). Window w *takes rows* while the group's closing point C is below
``end(w) + A`` (A = `allowed_lateness_ms` under ``reopen``, else 0), as for
hopping windows, and the paper's two modes apply (Li et al., section 5):

- ``consistent``: a row is late when its first window q no longer takes
  rows (then none before E does);
- ``generous``: a row is late when its last window E no longer takes rows
  (never, without `max_duration_ms`); it counts in the windows from
  ``w0 = max(q, floor((C - A - L)/h))``, the first that still takes rows.

So an accepted row counts in windows ``w0 .. E``. A window closes at its
end; per batch, with closing points C before and C' after it, the
candidates are the windows of a group whose end passes into ``(C, C']``
and in which some accepted row of the group counts (every group that has
rows in a period closes every hop of that period, with no new row needed),
and the windows a row of this batch touches: from its w0 up to the larger
of the last window closed and the group's *frontier*, the latest w0 of any
of its rows (so at most the disorder span over h windows, never the
unbounded future), within its period. The trigger policy
(`wid.semantics.trigger`) fires them: on closing (final), a touched closed
window under ``reopen`` (corrected, at most A/h windows per row), a touched
open window on update.

Batch equality: batch emits up to the window holding the latest event
time; a stream whose closing point reaches that window's end has emitted
exactly the batch windows as final.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wid.semantics.geometry import LandmarkGeometry, landmark_geometry
from wid.semantics.kinds.base import KindSemantics
from wid.semantics.kinds.time import bucketed, head
from wid.semantics.rows import TS, Group, window_row
from wid.semantics.stream_types import Accepted, Admitted, Emission
from wid.semantics.trigger import NEVER, NOTHING_CLOSED, TriggerPolicy
from wid.spec.kinds import LandmarkWindows
from wid.spec.window import Window


class LandmarkSemantics(KindSemantics):
    shape = LandmarkWindows

    def geometry(self, w: Window) -> LandmarkGeometry:
        """The windows of `w`, in microseconds (`wid.semantics.geometry`)."""
        return landmark_geometry(w)

    def evaluate(self, good: list[dict[str, Any]], w: Window) -> list[dict[str, Any]]:
        g = self.geometry(w)
        last = max((g.pane(r[TS]) for r in good), default=0)
        return bucketed(good, w, lambda ts: g.wids(ts, last), g)

    def rules(self, w: Window, policy: TriggerPolicy) -> LandmarkRules:
        return LandmarkRules(w, self.geometry(w), policy)


class LandmarkRules:
    """`wid.semantics.stream_types.StreamRules` of landmark windows: a row
    counts from its first window still taking rows (its place) to its
    period's last."""

    def __init__(self, w: Window, geometry: LandmarkGeometry, policy: TriggerPolicy) -> None:
        self.w, self.assigner, self.policy = w, geometry, policy

    def _end(self, window_id: int | None) -> int:
        return NEVER if window_id is None else int(self.assigner.bounds(window_id)[1])

    def admit(self, ts: int, closed: int) -> Admitted | None:
        q = self.assigner.pane(ts)
        if self.policy.late(self._end(q), self._end(self.assigner.period_end_wid(q)), closed):
            return None
        if closed == NOTHING_CLOSED:
            return Admitted(q)
        return Admitted(max(q, self.assigner.pane(self.policy.takes_after(closed))))  # the first window taking rows

    def _closed_upto(self, closed: int) -> int | None:
        """The last window whose end is at or before `closed` (None: none is)."""
        return None if closed == NOTHING_CLOSED else int(self.assigner.closed_upto(closed))

    def _candidates(self, members: Sequence[Accepted], index: int, prev: int, now: int) -> dict[int, bool]:
        """The windows of one group that may fire after batch `index`, each
        with whether a row of the batch touched it (module docstring)."""
        hi_now, hi_prev = self._closed_upto(now), self._closed_upto(prev)
        frontier = max(a.place for a in members)
        out: dict[int, bool] = {}
        for a in members:
            last = self.assigner.period_end_wid(a.place)
            top = hi_now if last is None or hi_now is None else min(last, hi_now)
            if top is not None:
                low = a.place if hi_prev is None else max(a.place, hi_prev + 1)
                out.update({w: out.get(w, False) for w in range(low, top + 1)})  # closing now
            if a.batch == index:
                reach = frontier if hi_now is None else max(frontier, hi_now)
                out.update({w: True for w in range(a.place, (reach if last is None else min(last, reach)) + 1)})
        return out

    def emit(self, key: Group, members: Sequence[Accepted], index: int, prev: int, now: int) -> list[Emission]:
        w = self.w
        out = []
        for window_id, touched in sorted(self._candidates(members, index, prev, now).items()):
            end = self._end(window_id)
            fires, final = self.policy.fire(end <= prev, end <= now, touched)
            if not fires or not self.assigner.exists(window_id):
                continue
            extent = [a.row for a in members if a.place <= window_id <= self._last(a)]
            out.append(Emission(window_row(w, head(w, self.assigner, window_id, key), extent), final=final))
        return out

    def _last(self, a: Accepted) -> int | float:
        """The last window row `a` counts in (its period's; unbounded without one)."""
        last = self.assigner.period_end_wid(self.assigner.pane(a.row[TS]))
        return float("inf") if last is None else last


__all__ = ["LandmarkRules", "LandmarkSemantics"]
