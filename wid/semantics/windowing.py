"""Window assignment for time windows: the paper's `wids` and `extent`
functions (Li et al., SIGMOD 2005, section 3) for tumbling, hopping and
landmark windows, plus panes.

A window is an integer id w; its bounds are a pure function of w. All
arguments and results are epoch microseconds; every extent is half-open,
``[start, end)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd
from typing import Any


@dataclass(frozen=True)
class Tumbling:
    """Tumbling windows of `duration_us`, aligned to `origin_us`:
    window w is ``[o + w*d, o + (w+1)*d)``; a row is in exactly one."""

    duration_us: int
    origin_us: int = 0
    has_gaps = False  # every window holds instants (calendar windows may not: wid.semantics.calendar_windows)

    def wids(self, ts: int) -> range:
        """The ids of the windows holding `ts`: ``floor((ts - o) / d)``."""
        w = (ts - self.origin_us) // self.duration_us
        return range(w, w + 1)

    def bounds(self, w: int) -> tuple[int, int]:
        """``[start, end)`` of window w."""
        start = self.origin_us + w * self.duration_us
        return start, start + self.duration_us


@dataclass(frozen=True)
class Panes:
    """Sliding windows over integer panes (or ranks): window w covers panes
    ``[w*hop + offset, w*hop + offset + length)``. Hopping windows are this
    over panes of ``gcd(duration, hop)`` (`Hopping.panes`); count windows over
    rank panes, with a negative offset for their partial first windows.

    Every method takes an int, a NumPy integer array or a long Spark SQL
    expression wrapped in `wid.spark.columns.Exact`: floor division is
    elementwise, so the Spark plans, the vectorised merges and the WID
    operator's shards all use this one arithmetic."""

    length: int
    hop: int
    offset: int = 0

    def first_pane(self, w: Any) -> Any:
        """The first pane of window w."""
        return w * self.hop + self.offset

    def last_pane(self, w: Any) -> Any:
        """The last pane of window w."""
        return w * self.hop + self.offset + self.length - 1

    def first_window(self, q: Any) -> Any:
        """The earliest window holding pane q: ``ceil((q - offset - length + 1) / hop)``."""
        return -((self.offset + self.length - 1 - q) // self.hop)

    def last_window(self, q: Any) -> Any:
        """The latest window holding pane q: ``floor((q - offset) / hop)``."""
        return (q - self.offset) // self.hop


@dataclass(frozen=True)
class Hopping:
    """Hopping windows: window w is ``[o + w*h, o + w*h + d)``.

    A row at ts is in windows ``floor((ts-o-d)/h) + 1 .. floor((ts-o)/h)``:
    ``ceil(d/h)`` of them when h divides d. Panes are tumbling windows of
    ``gcd(d, h)``; window w is the union of ``d/p`` consecutive panes from
    pane ``w*h/p`` (`panes`). Tumbling windows are the case ``h = d``.
    Methods taking a window, a time or a pane (`start`, `end`, `pane`, ...)
    work on ints, NumPy integer arrays and `wid.spark.columns.Exact`
    SQL expressions alike.
    """

    duration_us: int
    hop_us: int
    origin_us: int = 0
    has_gaps = False  # every window holds instants

    def wids(self, ts: int) -> range:
        """The ids of the windows holding `ts`."""
        return range(self.first_window_ending_after(ts), self.last_window_starting_by(ts) + 1)

    def bounds(self, w: int) -> tuple[int, int]:
        """``[start, end)`` of window w."""
        return self.start(w), self.end(w)

    def exists(self, w: Any) -> Any:
        """Every fixed window holds instants."""
        return True

    def start(self, w: Any) -> Any:
        """The start of window w."""
        return self.origin_us + w * self.hop_us

    def end(self, w: Any) -> Any:
        """The end of window w (excluded)."""
        return self.origin_us + w * self.hop_us + self.duration_us

    def first_window_ending_after(self, t: Any) -> Any:
        """The earliest window whose end is after `t`: the first one a
        closing point `t` leaves open."""
        return (t - self.origin_us - self.duration_us) // self.hop_us + 1

    def last_window_starting_by(self, t: Any) -> Any:
        """The latest window whose start is at or before `t`:
        ``floor((t - o) / h)``."""
        return (t - self.origin_us) // self.hop_us

    @property
    def pane_us(self) -> int:
        """The pane length, ``gcd(duration, hop)``."""
        return gcd(self.duration_us, self.hop_us)

    @property
    def panes(self) -> Panes:
        """The windows in pane units (offset 0: window w starts at pane ``w*h/p``)."""
        p = self.pane_us
        return Panes(self.duration_us // p, self.hop_us // p)

    def pane(self, ts: Any) -> Any:
        """The pane holding `ts`: ``floor((ts - o) / p)``."""
        return (ts - self.origin_us) // self.pane_us

    def pane_start(self, q: Any) -> Any:
        """The start of pane q."""
        return self.origin_us + q * self.pane_us

    def first_window(self, q: Any) -> Any:
        """The earliest window holding pane q."""
        return self.panes.first_window(q)

    def last_window(self, q: Any) -> Any:
        """The latest window holding pane q."""
        return self.panes.last_window(q)


@dataclass(frozen=True)
class Landmark:
    """Landmark (cumulative) windows starting at `landmark_us` L, growing by
    `hop_us` h: window w is ``[period_start(w), L + (w+1)*h)``.

    Without `max_duration_us` every window starts at L. With it (Flink's
    CUMULATE), windows restart every M: ``period_start(w) = L + floor(w*h/M)*M``.
    Rows before L belong to no window. Since landmark windows are unbounded
    without M, a batch run emits windows up to `last_wid` (the window
    holding the latest event time of the input); a CUMULATE period is
    finite, so a row is in every window of its period up to the period's
    end, as Flink emits them at the end of input.
    """

    hop_us: int
    landmark_us: int
    max_duration_us: int | None = None
    has_gaps = False  # every window holds instants

    def pane(self, ts: Any) -> Any:
        """The hop-sized pane of `ts` (negative before the landmark): the
        window whose last hop holds it."""
        return (ts - self.landmark_us) // self.hop_us

    @property
    def slots(self) -> int | None:
        """Windows per period, None without periods."""
        return None if self.max_duration_us is None else self.max_duration_us // self.hop_us

    def pane_start(self, w: Any) -> Any:
        """The first instant of window w's last hop."""
        return self.landmark_us + w * self.hop_us

    def end(self, w: Any) -> Any:
        """The end of window w (excluded)."""
        return self.landmark_us + (w + 1) * self.hop_us

    def start(self, w: Any) -> Any:
        """The start of window w: the landmark, or its period's start."""
        if self.max_duration_us is None:
            return self.landmark_us + 0 * w
        return self.landmark_us + (w * self.hop_us) // self.max_duration_us * self.max_duration_us

    def period_of(self, w: Any) -> Any:
        """The period of window w (0 without periods)."""
        return 0 * w if self.slots is None else w // self.slots

    def period_first(self, w: Any) -> Any:
        """The first window of w's period."""
        return 0 * w if self.slots is None else w // self.slots * self.slots

    def period_last(self, w: Any) -> Any:
        """The last window of w's period (None without periods)."""
        return None if self.slots is None else (w // self.slots + 1) * self.slots - 1

    def closed_upto(self, t: Any) -> Any:
        """The last window whose end is at or before instant `t`."""
        return self.pane(t) - 1

    def exists(self, w: Any) -> Any:
        """Every fixed window holds instants."""
        return True

    def period_end_wid(self, w: int) -> int | None:
        """The last window id of w's period, or None if periods never end."""
        last = self.period_last(w)
        return None if last is None else int(last)

    def wids(self, ts: int, last_wid: int) -> range:
        """Windows holding `ts`: up to `last_wid` without `max_duration_us`,
        else up to the end of its period; empty before the landmark."""
        q = self.pane(ts)
        if q < 0:
            return range(0)
        end = self.period_end_wid(q)
        return range(q, (last_wid if end is None else end) + 1)

    def bounds(self, w: int) -> tuple[int, int]:
        """``[start, end)`` of window w."""
        return self.start(w), self.end(w)
