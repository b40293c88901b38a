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


@dataclass(frozen=True)
class Tumbling:
    """Tumbling windows of `duration_us`, aligned to `origin_us`:
    window w is ``[o + w*d, o + (w+1)*d)``; a row is in exactly one."""

    duration_us: int
    origin_us: int = 0

    def wids(self, ts: int) -> range:
        """The ids of the windows holding `ts`: ``floor((ts - o) / d)``."""
        w = (ts - self.origin_us) // self.duration_us
        return range(w, w + 1)

    def bounds(self, w: int) -> tuple[int, int]:
        """``[start, end)`` of window w."""
        start = self.origin_us + w * self.duration_us
        return start, start + self.duration_us


@dataclass(frozen=True)
class Hopping:
    """Hopping windows: window w is ``[o + w*h, o + w*h + d)``.

    A row at ts is in windows ``floor((ts-o-d)/h) + 1 .. floor((ts-o)/h)``:
    ``ceil(d/h)`` of them when h divides d. Panes are tumbling windows of
    ``gcd(d, h)``; window w is the union of ``d/p`` consecutive panes from
    pane ``w*h/p``.
    """

    duration_us: int
    hop_us: int
    origin_us: int = 0

    def wids(self, ts: int) -> range:
        """The ids of the windows holding `ts`."""
        t = ts - self.origin_us
        return range((t - self.duration_us) // self.hop_us + 1, t // self.hop_us + 1)

    def bounds(self, w: int) -> tuple[int, int]:
        """``[start, end)`` of window w."""
        start = self.origin_us + w * self.hop_us
        return start, start + self.duration_us

    @property
    def pane_us(self) -> int:
        """The pane length, ``gcd(duration, hop)``."""
        return gcd(self.duration_us, self.hop_us)


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

    def pane(self, ts: int) -> int:
        """The hop-sized pane of `ts` (negative before the landmark)."""
        return (ts - self.landmark_us) // self.hop_us

    def period_end_wid(self, w: int) -> int | None:
        """The last window id of w's period, or None if periods never end."""
        if self.max_duration_us is None:
            return None
        per = self.max_duration_us // self.hop_us
        return (w // per + 1) * per - 1

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
        end = self.landmark_us + (w + 1) * self.hop_us
        if self.max_duration_us is None:
            return self.landmark_us, end
        period = (w * self.hop_us) // self.max_duration_us
        return self.landmark_us + period * self.max_duration_us, end
