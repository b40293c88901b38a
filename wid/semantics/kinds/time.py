"""Tumbling and hopping windows in the oracles (docs/semantics.md): a row
lies in the windows `wids` gives; on a stream, the paper's two modes for a
row late for some of its windows (Li et al., section 5).

On a stream a window closes at its end e (`wid.semantics.trigger`: it takes
rows while the closing point ``C < e + A``). In ``generous`` mode a row
counts in those of its windows that still take rows and is late when none
does; in ``consistent`` mode it is late when any of its windows no longer
takes rows, and counts in all otherwise. A window holding rows fires as the
trigger policy says: when it closes, when a reopened window takes a row
(corrected), and on update when an open window took a row.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from wid.semantics.calendar_windows import CalendarHopping, CalendarLandmark
from wid.semantics.geometry import TimeGeometry, time_geometry
from wid.semantics.kinds.base import KindSemantics
from wid.semantics.rows import TS, Group, Row, key_of, window_head, window_row
from wid.semantics.stream_types import Accepted, Admitted, Emission
from wid.semantics.trigger import TriggerPolicy
from wid.semantics.windowing import Hopping, Landmark
from wid.spec.kinds import HoppingWindows, TumblingWindows
from wid.spec.window import Window

Geometry = Hopping | CalendarHopping | Landmark | CalendarLandmark


def bucketed(good: list[dict[str, Any]], w: Window, wids: Callable[[int], Iterable[int]],
             g: Geometry) -> list[dict[str, Any]]:
    """One output row per (window, group) holding rows: each row goes to the
    windows `wids` gives for its time; a window's bounds, whether it is
    output (`exists`) and its label are the geometry `g`'s."""
    buckets: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for r in good:
        for window_id in wids(r[TS]):
            buckets[(window_id, *key_of(r, w.group_by))].append(r)
    out = []
    for (window_id, *keys), extent in buckets.items():
        if g.exists(window_id):
            out.append(window_row(w, head(w, g, window_id, tuple(keys)), extent))
    return out


def head(w: Window, g: Geometry, window_id: int, keys: Group) -> dict[str, Any]:
    """The window and group columns of window `window_id` of geometry `g`."""
    start, end = g.bounds(window_id)
    label = None
    if w.window_label_column is not None and isinstance(g, CalendarHopping | CalendarLandmark):
        label = g.name(window_id)
    return window_head(w, start, end, keys, label)


class TimeWindows(KindSemantics):
    """A time window kind whose windows come from a `geometry`."""

    def geometry(self, w: Window) -> TimeGeometry:
        """The windows of `w`, in microseconds (`wid.semantics.geometry`)."""
        return time_geometry(w)

    def evaluate(self, good: list[dict[str, Any]], w: Window) -> list[dict[str, Any]]:
        g = self.geometry(w)
        return bucketed(good, w, g.wids, g)

    def rules(self, w: Window, policy: TriggerPolicy) -> TimeRules:
        return TimeRules(w, self.geometry(w), policy)


class TumblingSemantics(TimeWindows):
    shape = TumblingWindows


class HoppingSemantics(TimeWindows):
    shape = HoppingWindows


class TimeRules:
    """`wid.semantics.stream_types.StreamRules` of tumbling and hopping
    windows: a row's windows are `wids`, each closing at its end."""

    def __init__(self, w: Window, geometry: TimeGeometry, policy: TriggerPolicy) -> None:
        self.w, self.geometry, self.policy = w, geometry, policy

    def admit(self, ts: int, closed: int) -> Admitted | None:
        ids = list(self.geometry.wids(ts))
        ends = [self.geometry.bounds(i)[1] for i in ids]
        if self.policy.late(ends[0], ends[-1], closed):
            return None
        return Admitted(frozenset(i for i, end in zip(ids, ends, strict=True) if self.policy.takes(end, closed)))

    def emit(self, key: Group, members: Sequence[Accepted], index: int, prev: int, now: int) -> list[Emission]:
        extents: dict[int, list[Accepted]] = defaultdict(list)
        for a in members:
            for window_id in a.place:
                extents[window_id].append(a)
        out = []
        for window_id in sorted(extents):
            if not self.geometry.exists(window_id):
                continue
            end = self.geometry.bounds(window_id)[1]
            fires, final = self.policy.fire(end <= prev, end <= now, any(a.batch == index for a in extents[window_id]))
            if fires:
                row = window_row(self.w, head(self.w, self.geometry, window_id, key), [a.row for a in extents[window_id]])
                out.append(Emission(row, final=final))
        return out


__all__ = ["Geometry", "HoppingSemantics", "TimeRules", "TimeWindows", "TumblingSemantics", "bucketed", "head"]
