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

So an accepted row counts in windows ``w0 .. E``. Per batch, with closing
points C before and C' after it:

- window w of a group emits (final) when its end passes into ``(C, C']``
  and some accepted row of the group counts in it: every group that has
  rows in a period emits every hop of that period, with no new row needed;
- ``reopen``: an emitted window that took a row in this batch re-emits,
  corrected (at most A/h windows per row);
- ``emit = "on_update"``: a row touches the open windows from its w0 up to
  the group's *frontier*, the latest w0 of any of its rows (so at most the
  disorder span over h windows, never the unbounded future), within its
  period.

Batch equality: batch emits up to the window holding the latest event
time; a stream whose closing point reaches that window's end has emitted
exactly the batch windows as final.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wid.semantics.geometry import LandmarkGeometry, landmark_geometry
from wid.semantics.kinds.base import KindSemantics, allowed_us
from wid.semantics.kinds.time import bucketed, head
from wid.semantics.rows import TS, Group, window_row
from wid.semantics.stream_types import Accepted, Admission, Emission
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

    def rules(self, w: Window) -> LandmarkRules:
        return LandmarkRules(w, self.geometry(w))


class LandmarkRules:
    """`wid.semantics.stream_types.StreamRules` of landmark windows."""

    def __init__(self, w: Window, geometry: LandmarkGeometry) -> None:
        self.w, self.assigner, self.allowed = w, geometry, allowed_us(w)

    def _end(self, window_id: int) -> int:
        return self.assigner.bounds(window_id)[1]

    def _takes(self, window_id: int, closed: int | None) -> bool:
        return closed is None or closed < self._end(window_id) + self.allowed

    def admit(self, ts: int, closed: int | None) -> Admission | None:
        q = self.assigner.pane(ts)
        last = self.assigner.period_end_wid(q)
        late = not self._takes(q, closed) if self.w.late_mode == "consistent" else (
            last is not None and not self._takes(last, closed))
        if late:
            return None
        if closed is None:
            return Admission(first_window=q)
        return Admission(first_window=max(q, self.assigner.pane(closed - self.allowed)))

    def _closed_range(self, closed: int | None) -> int | None:
        """The last window whose end is at or before `closed` (None: none is)."""
        return None if closed is None else int(self.assigner.closed_upto(closed))

    def _windows(self, members: Sequence[Accepted], index: int, prev: int | None, now: int | None) -> set[int]:
        """The windows of one group to emit after batch `index`."""
        hi_now, hi_prev = self._closed_range(now), self._closed_range(prev)
        frontier = max(a.first_window for a in members)
        out: set[int] = set()
        for a in members:
            last = self.assigner.period_end_wid(a.first_window)
            top = hi_now if last is None or hi_now is None else min(last, hi_now)
            if top is not None:
                low = a.first_window if hi_prev is None else max(a.first_window, hi_prev + 1)
                out.update(range(low, top + 1))  # closing now
                if a.batch == index and self.w.late_data == "reopen":
                    out.update(range(a.first_window, top + 1))  # closed and touched: corrected
            if a.batch == index and self.w.emit == "on_update":
                bound = frontier if last is None else min(last, frontier)
                out.update(range(a.first_window if hi_now is None else max(a.first_window, hi_now + 1), bound + 1))
        return out

    def emit(self, key: Group, members: Sequence[Accepted], index: int, prev: int | None,
             now: int | None) -> list[Emission]:
        w = self.w
        out = []
        for window_id in sorted(self._windows(members, index, prev, now)):
            if not self.assigner.exists(window_id):
                continue
            extent = [a.row for a in members if a.first_window <= window_id <= self._last(a)]
            end = self.assigner.end(window_id)
            out.append(Emission(window_row(w, head(w, self.assigner, window_id, key), extent),
                                final=now is not None and end <= now))
        return out

    def _last(self, a: Accepted) -> int | float:
        last = self.assigner.period_end_wid(self.assigner.pane(a.row[TS]))
        return float("inf") if last is None else last


__all__ = ["LandmarkRules", "LandmarkSemantics"]
