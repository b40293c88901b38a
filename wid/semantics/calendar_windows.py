"""Calendar windows over a zone's `Units` (docs/concepts/calendar.md): the
hopping (and tumbling) and landmark geometries, with the interface of their
fixed twins in `wid.semantics.windowing`, so that the oracles, the batch
plans and the WID operator's engines take either. Every method taking a
window, pane or instant takes an int, a NumPy int64 array or SQL text.

Panes are runs of `per` units from unit `anchor`; a window is a run of
panes, so the pane merges (`wid.semantics.windowing.Panes`) work on pane
ids exactly as for fixed windows, whatever each pane's length in instants.

A window whose first hop (a landmark's: its last hop) holds no instant, as
Pacific/Apia's 2011-12-30, would repeat its neighbour's start (its end),
so it is never output (`exists`); it still takes part in the late-row
rules like any window.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np

from wid.semantics.calendar import (
    DAY_US,
    EPOCH_ORDINAL,
    Units,
    first_day_of_month,
    is_sql,
    month_of_day,
)
from wid.semantics.windowing import Panes

LABELS = ("day", "week", "month", "quarter", "year", "clock")


def _compare(a: Any, b: Any) -> Any:
    """``a < b`` for ints, arrays or SQL text."""
    return type(a)(f"({a.text} < {b.text})") if is_sql(a) else a < b


@dataclass(frozen=True)
class CalendarHopping:
    """Hopping windows (tumbling: ``length == hop``) of `length` panes every
    `hop` panes; pane q holds units ``[anchor + q*per, anchor + (q+1)*per)``
    of `units`. `label` names a window by its first hop (`LABELS`)."""

    units: Units
    length: int
    hop: int
    per: int = 1
    anchor: int = 0
    label: str = "day"

    has_gaps = property(lambda self: self.units.gaps)

    @property
    def panes(self) -> Panes:
        """The windows in pane units."""
        return Panes(self.length, self.hop)

    def pane(self, ts: Any) -> Any:
        """The pane holding instant `ts`."""
        return (self.units.unit(ts) - self.anchor) // self.per

    def pane_start(self, q: Any) -> Any:
        """The first instant of pane q."""
        return self.units.start(q * self.per + self.anchor)

    def start(self, w: Any) -> Any:
        """The start of window w."""
        return self.pane_start(w * self.hop)

    def end(self, w: Any) -> Any:
        """The end of window w (excluded)."""
        return self.pane_start(w * self.hop + self.length)

    def first_window(self, q: Any) -> Any:
        """The earliest window holding pane q."""
        return self.panes.first_window(q)

    def last_window(self, q: Any) -> Any:
        """The latest window holding pane q."""
        return self.panes.last_window(q)

    def first_window_ending_after(self, t: Any) -> Any:
        """The earliest window whose end is after instant `t`."""
        return self.first_window(self.pane(t))

    def last_window_starting_by(self, t: Any) -> Any:
        """The latest window whose start is at or before instant `t`."""
        return self.last_window(self.pane(t))

    def wids(self, ts: int) -> range:
        """The ids of the windows holding instant `ts`."""
        return range(self.first_window_ending_after(ts), self.last_window_starting_by(ts) + 1)

    def bounds(self, w: int) -> tuple[int, int]:
        """``[start, end)`` of window w."""
        return self.start(w), self.end(w)

    def exists(self, w: Any) -> Any:
        """Does window w's first hop hold an instant (module docstring)?"""
        return _compare(self.start(w), self.start(w + 1))

    def name(self, w: int) -> str:
        """Window w's local name (`label_of`)."""
        return label_of(self.units, self.label, self.start(w))


@dataclass(frozen=True)
class CalendarLandmark:
    """Landmark windows on a calendar from `landmark_us` (the first instant
    of unit `anchor`), growing by hops of `per` units; restarting every
    `period` units (`months` False) or every `period` months of days
    (`months` True: days within months, "month to date every day"), or
    never (`period` None).

    Window w is hop ``w mod S`` of period ``w div S``, S the most hops a
    period holds (a month's days: 31 slots, of which a short month uses
    fewer), so periods are runs of ids as in the fixed `Landmark` and the
    cumulative pane merges work unchanged."""

    units: Units
    landmark_us: int
    per: int = 1
    anchor: int = 0
    period: int | None = None
    months: bool = False
    label: str = "day"

    @property
    def has_gaps(self) -> bool:
        """Are some window ids no window (`exists`): a zone's empty unit, or
        the slots a short month leaves unused?"""
        return self.units.gaps or self.months

    @property
    def slots(self) -> int | None:
        """S: hops per period (the most of them), None without periods."""
        if self.period is None:
            return None
        return 31 * self.period if self.months else self.period // self.per

    def _period_of_unit(self, u: Any) -> Any:
        if self.months:
            return (month_of_day(u) - self._first_month) // self.period
        return (u - self.anchor) // (self.period or 1)

    @property
    def _first_month(self) -> int:
        return int(month_of_day(self.anchor))

    def _first_unit(self, p: Any) -> Any:
        """The first unit of period p."""
        if self.period is None:
            return self.anchor + 0 * p
        if self.months:
            return first_day_of_month(p * self.period + self._first_month)
        return p * self.period + self.anchor

    def pane(self, ts: Any) -> Any:
        """The window whose last hop holds instant `ts` (negative before the landmark)."""
        u = self.units.unit(ts)
        if self.slots is None:
            return (u - self.anchor) // self.per
        p = self._period_of_unit(u)
        return p * self.slots + (u - self._first_unit(p)) // self.per

    def _hop_unit(self, w: Any) -> Any:
        """The first unit of window w's last hop."""
        if self.slots is None:
            return w * self.per + self.anchor
        p = w // self.slots
        return self._first_unit(p) + (w - p * self.slots) * self.per

    def pane_start(self, w: Any) -> Any:
        """The first instant of window w's last hop."""
        return self.units.start(self._hop_unit(w))

    def end(self, w: Any) -> Any:
        """The end of window w (excluded)."""
        return self.units.start(self._hop_unit(w) + self.per)

    def start(self, w: Any) -> Any:
        """The start of window w: the landmark, or its period's start."""
        if self.slots is None:
            return self.landmark_us + 0 * w
        return self.units.start(self._first_unit(w // self.slots))

    def period_of(self, w: Any) -> Any:
        """The period of window w (0 without periods)."""
        return 0 * w if self.slots is None else w // self.slots

    def period_first(self, w: Any) -> Any:
        """The first window of w's period."""
        return 0 * w if self.slots is None else w // self.slots * self.slots

    def period_last(self, w: Any) -> Any:
        """The last window of w's period (None without periods)."""
        if self.slots is None:
            return None
        p = w // self.slots
        return p * self.slots + (self._first_unit(p + 1) - self._first_unit(p)) // self.per - 1

    def period_end_wid(self, w: int) -> int | None:
        """The last window of w's period, or None if periods never end."""
        last = self.period_last(w)
        return None if last is None else int(last)

    def closed_upto(self, t: Any) -> Any:
        """The last window whose end is at or before instant `t`."""
        q = self.pane(t)
        if self.slots is None:
            return q - 1
        last_before = self.period_last(q - 1)
        if isinstance(q, np.ndarray):
            return np.where(q % self.slots == 0, last_before, q - 1)
        return last_before if q % self.slots == 0 else q - 1

    def wids(self, ts: int, last_wid: int) -> range:
        """Windows holding `ts`: up to `last_wid` without periods, else up to
        the end of its period; empty before the landmark."""
        if ts < self.landmark_us:
            return range(0)
        q = self.pane(ts)
        end = self.period_end_wid(q)
        return range(q, (last_wid if end is None else end) + 1)

    def bounds(self, w: int) -> tuple[int, int]:
        """``[start, end)`` of window w."""
        return self.start(w), self.end(w)

    def exists(self, w: Any) -> Any:
        """Is window w output: a slot its period has (a month of 30 days has
        no 31st), whose last hop holds an instant (module docstring)?"""
        held = _compare(self.pane_start(w), self.end(w))
        if not self.months:
            return held
        slot = _compare(w, self.period_last(w) + 1)
        return type(w)(f"({held.text} AND {slot.text})") if is_sql(w) else held & slot

    def name(self, w: int) -> str:
        """Window w's local name: the unit of its last instant's (`label_of`)."""
        return label_of(self.units, self.label, self.end(w) - 1)


def label_of(units: Units, label: str, at_us: int) -> str:
    """The local name of the unit holding instant `at_us`: ``2013-03-10``
    (day), ``2013-W10`` (ISO week), ``2013-03``, ``2013-Q1``, ``2013``, or a
    clock window's local start with its offset (``2013-11-03T01:00:00-04:00``)."""
    if label == "clock":
        local = datetime.fromtimestamp(0, UTC) + timedelta(microseconds=at_us)
        return local.astimezone(ZoneInfo(units.zone)).replace(microsecond=0).isoformat()
    u = units.unit(at_us)
    if units.kind == "month":
        year, month = divmod(u, 12)
        return {"year": f"{year:04d}", "quarter": f"{year:04d}-Q{month // 3 + 1}"}.get(label, f"{year:04d}-{month + 1:02d}")
    day = date.fromordinal(u + EPOCH_ORDINAL)
    if label == "week":
        iso = day.isocalendar()
        return f"{iso.year:04d}-W{iso.week:02d}"
    return day.isoformat()


def label_sql(units: Units, label: str, at: Any) -> str:
    """SQL text: `label_of` the instant `at` (SQL text)."""
    if label == "clock":
        local = units._local_sql(at.text)  # noqa: SLF001 - the same local time the units read
        day = f"date_from_unix_date(CAST(div({local} - pmod({local}, {DAY_US}L), {DAY_US}L) AS INT))"
        sec = f"div(pmod({local}, {DAY_US}L), 1000000L)"
        off = f"div({local} - {at.text}, 60000000L)"
        return (f"format_string('%sT%02d:%02d:%02d%s%02d:%02d', CAST({day} AS STRING), div({sec}, 3600L), "
                f"div(pmod({sec}, 3600L), 60L), pmod({sec}, 60L), CASE WHEN {off} < 0 THEN '-' ELSE '+' END, "
                f"div(abs({off}), 60L), pmod(abs({off}), 60L))")
    u = units.unit(at).text
    if units.kind == "month":
        year, month = f"div({u}, 12L)", f"pmod({u}, 12L)"
        if label == "year":
            return f"format_string('%04d', {year})"
        if label == "quarter":
            return f"format_string('%04d-Q%d', {year}, div({month}, 3L) + 1L)"
        return f"format_string('%04d-%02d', {year}, {month} + 1L)"
    day = f"date_from_unix_date(CAST({u} AS INT))"
    if label == "week":
        return f"format_string('%04d-W%02d', extract(YEAROFWEEK FROM {day}), weekofyear({day}))"
    return f"CAST({day} AS STRING)"


__all__ = ["LABELS", "CalendarHopping", "CalendarLandmark", "label_of", "label_sql"]
