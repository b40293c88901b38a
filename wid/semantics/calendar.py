"""Windows on a time zone's calendar and clock (docs/concepts/calendar.md):
the geometry of calendar windows, for Python ints, NumPy arrays and Spark
SQL text (an `Exact`-like value with a ``text``), as `wid.semantics.windowing`
is for fixed windows.

A window id maps to instants through the zone's wall clock. `Units` numbers
the zone's local units: ``day`` (the local date, days since 1970-01-01),
``month`` (``year * 12 + month - 1`` of the local date) or ``clock`` (runs of
`step_us` on the local clock). Unit k starts at the first instant whose
local time reaches it: local midnight, or after a skipped midnight the first
instant that exists; a unit no instant reaches (Pacific/Apia's 2011-12-30)
is empty, starting where the next one starts. Units never go back: where a
clock is set back across a unit's start (St. John's in 1987, two hours back
across midnight) the repeated local times stay in the later unit, so every
unit is an interval ``[start(k), start(k + 1))``.

With the zone's offsets as segments (`wid.spec.zones`: segment i from
``starts[i]`` with offset ``o_i``), a unit of local time x is ``f(x)``
(``floor(x / day)``, its month, or ``floor(x / step)``) and

- ``unit(t) = max(f(t + s_i), P_i)``: ``s_i`` is ``o_i`` (clock: ``o_i mod
  step``, so that a 30-minute shift of the clock moves hour windows) and
  ``P_i`` the largest unit before segment i (units never go back);
- ``start(k) = max(starts[i], g(k) - s_i)`` for the first segment i whose
  units reach k, ``g(k)`` the first local time of unit k.

Spark SQL computes the same from Spark's own ``from_utc_timestamp`` and
``to_utc_timestamp`` (the JVM's tz database; `wid.spec.zones`), which map a
local time in a gap forward by the gap and an ambiguous one to its first
instant, as the first instant of a unit is defined here.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np

DAY_US = 86_400_000_000
EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
EPOCH_MONTH = 1970 * 12
LOWEST = np.iinfo(np.int64).min // 4  # below every unit
HIGHEST = np.iinfo(np.int64).max // 4  # above every unit


def is_sql(x: Any) -> bool:
    """Is `x` Spark SQL text (an `Exact`-like value with ``text``)?"""
    return hasattr(x, "text")


def _lit(n: int) -> str:
    return f"({n}L)" if n < 0 else f"{n}L"


def floor_sql(text: str, step: int) -> str:
    """SQL text: ``floor(text / step)`` on longs with one evaluation of
    `text`: the dividend is made positive first (any instant Spark holds,
    plus a day's offset, stays above ``-10**17``), so ``div`` truncates
    as ``floor`` would."""
    k = -(-10**17 // step)
    return f"(div({text} + {_lit(k * step)}, {_lit(step)}) - {_lit(k)})"


# -- days and months, for ints, NumPy arrays and SQL --------------------------------------------------------
def month_of_day(d: Any) -> Any:
    """The month (``year * 12 + month - 1``) of day d (days since 1970-01-01)."""
    if is_sql(d):
        dt = f"date_from_unix_date(CAST({d.text} AS INT))"
        return type(d)(f"(CAST(year({dt}) AS BIGINT) * 12L + CAST(month({dt}) AS BIGINT) - 1L)")
    if isinstance(d, np.ndarray):
        return d.astype("datetime64[D]").astype("datetime64[M]").astype(np.int64) + EPOCH_MONTH
    day = date.fromordinal(int(d) + EPOCH_ORDINAL)
    return day.year * 12 + day.month - 1


def first_day_of_month(m: Any) -> Any:
    """Day number (since 1970-01-01) of the first day of month m."""
    if is_sql(m):
        return type(m)(f"CAST(unix_date(make_date(CAST(div({m.text}, 12L) AS INT), "
                       f"CAST(pmod({m.text}, 12L) + 1L AS INT), 1)) AS BIGINT)")
    if isinstance(m, np.ndarray):
        return (m - EPOCH_MONTH).astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)
    return date(int(m) // 12, int(m) % 12 + 1, 1).toordinal() - EPOCH_ORDINAL


@dataclass(frozen=True)
class _Table:
    """`Units`' segments as arrays (and lists, for scalars)."""

    starts: np.ndarray
    shifts: np.ndarray
    before: np.ndarray   # P: the largest unit before each segment
    reached: np.ndarray  # E: the largest unit up to each segment's end (the last: HIGHEST)
    regular: bool        # no unit goes back (the envelope `before` never applies)
    gaps: bool           # some unit holds no instant


@dataclass(frozen=True)
class Units:
    """The local units of a zone (module docstring): `kind` ``day``,
    ``month`` or ``clock`` (`step_us` long), over the zone's segments
    (`starts`, `offsets`: `wid.spec.zones.offsets`). Every method takes an
    int, a NumPy int64 array or SQL text (`is_sql`)."""

    zone: str
    kind: str
    starts: tuple[int, ...]
    offsets: tuple[int, ...]
    step_us: int = DAY_US

    def __post_init__(self) -> None:
        if "'" in self.zone or self.kind not in ("day", "month", "clock"):
            raise ValueError(f"bad units {self.zone!r} {self.kind!r}")

    # -- local time to unit and back ----------------------------------------------------------------------
    def _f(self, local: Any) -> Any:
        """The unit of local time `local` (epoch microseconds on the wall clock)."""
        if self.kind == "clock":
            return local // self.step_us
        day = local // DAY_US
        return month_of_day(day) if self.kind == "month" else day

    def _g(self, k: Any) -> Any:
        """The first local time of unit k."""
        if self.kind == "clock":
            return k * self.step_us
        return (first_day_of_month(k) if self.kind == "month" else k) * DAY_US

    @property
    def table(self) -> _Table:
        """The segments as arrays, made once (kept in the instance: not a
        `functools.cached_property`, whose lock Python 3.11 cannot pickle
        when the class ships to executors by value)."""
        made: _Table | None = self.__dict__.get("_table")
        if made is None:
            made = self._make_table()
            self.__dict__["_table"] = made
        return made

    def _make_table(self) -> _Table:
        starts = np.array(self.starts, dtype=np.int64)
        offsets = np.array(self.offsets, dtype=np.int64)
        shifts = offsets % self.step_us if self.kind == "clock" else offsets
        ends = self._f(starts[1:] - 1 + shifts[:-1])  # the unit of each segment's last instant
        firsts = self._f(starts[1:] + shifts[1:])     # and of the next one's first
        running = np.maximum.accumulate(ends) if len(ends) else ends
        before = np.concatenate([[LOWEST], running]).astype(np.int64)
        reached = np.concatenate([running, [HIGHEST]]).astype(np.int64)
        return _Table(starts, shifts, before, reached, bool(np.all(firsts >= ends)), bool(np.any(firsts > ends + 1)))

    @property
    def _lists(self) -> tuple[list[int], list[int], list[int], list[int]]:
        made: tuple[list[int], list[int], list[int], list[int]] | None = self.__dict__.get("_as_lists")
        if made is None:
            t = self.table
            made = t.starts.tolist(), t.shifts.tolist(), t.before.tolist(), t.reached.tolist()
            self.__dict__["_as_lists"] = made
        return made

    @property
    def shortest_us(self) -> int:
        """About the shortest a unit usually is, for estimates (state bounds):
        a clock step, 23 hours, 28 days."""
        return {"clock": self.step_us, "day": 23 * 3_600_000_000, "month": 28 * DAY_US}[self.kind]

    @property
    def regular(self) -> bool:
        """No unit goes back anywhere in the zone's table."""
        return self.table.regular

    @property
    def gaps(self) -> bool:
        """Some unit of the zone holds no instant (Pacific/Apia's 2011-12-30)."""
        return self.table.gaps

    def unit(self, t: Any) -> Any:
        """The unit holding instant `t` (epoch microseconds)."""
        if is_sql(t):
            return type(t)(self._unit_sql(t.text))
        if isinstance(t, np.ndarray):
            tab = self.table
            i = np.searchsorted(tab.starts, t, "right") - 1
            return np.maximum(self._f(t + tab.shifts[i]), tab.before[i])
        starts, shifts, before, _ = self._lists
        seg = bisect.bisect_right(starts, int(t)) - 1
        return max(int(self._f(int(t) + shifts[seg])), before[seg])

    def start(self, k: Any) -> Any:
        """The first instant of unit k (of the next unit when k holds none)."""
        if is_sql(k):
            return type(k)(self._start_sql(k.text))
        if isinstance(k, np.ndarray):
            tab = self.table
            i = np.searchsorted(tab.reached, k, "left")
            return np.maximum(tab.starts[i], self._g(k) - tab.shifts[i])
        starts, shifts, _, reached = self._lists
        seg = bisect.bisect_left(reached, int(k))
        return max(starts[seg], int(self._g(int(k))) - shifts[seg])

    # -- Spark SQL ------------------------------------------------------------------------------------------
    def _local_sql(self, x: str) -> str:
        """SQL text: the local time of instant `x` (epoch microseconds)."""
        if len(self.offsets) == 1:
            return f"({x} + {_lit(self.offsets[0])})"
        return f"unix_micros(from_utc_timestamp(timestamp_micros({x}), '{self.zone}'))"

    def _local_day_start_sql(self, day: str) -> str:
        """SQL text: the first instant of local day `day` (Spark's ``to_utc_timestamp``)."""
        if len(self.offsets) == 1:
            return f"({day} * {_lit(DAY_US)} - {_lit(self.offsets[0])})"
        return f"unix_micros(to_utc_timestamp(timestamp_micros({day} * {_lit(DAY_US)}), '{self.zone}'))"

    def _phase_sql(self, x: str) -> str:
        return f"pmod({self._local_sql(x)} - {x}, {_lit(self.step_us)})"

    def _unit_sql(self, x: str) -> str:
        if self.kind == "clock":
            k = -(-10**17 // self.step_us)
            unit = f"(div({x} + {self._phase_sql(x)} + {_lit(k * self.step_us)}, {_lit(self.step_us)}) - {_lit(k)})"
        else:
            unit = floor_sql(self._local_sql(x), DAY_US)
            if self.kind == "month":
                unit = month_of_day(_Text(unit)).text
        if self.regular:
            return unit
        # units that went back: the repeated local times belong to the later unit (Java's first instant)
        return f"({unit} + CASE WHEN {x} >= {self._start_sql(f'({unit} + 1L)')} THEN 1L ELSE 0L END)"

    def _start_sql(self, k: str) -> str:
        if self.kind == "day":
            return self._local_day_start_sql(k)
        if self.kind == "month":
            return self._local_day_start_sql(first_day_of_month(_Text(k)).text)
        x = f"({k} * {_lit(self.step_us)})"
        if len(self.offsets) == 1:
            return f"({x} - {_lit(self.offsets[0] % self.step_us)})"
        q, p = self._phase_sql(f"({x} - {_lit(self.step_us)})"), self._phase_sql(x)
        # the phase before (q) and after (p) a change of the clock within the step; wid.spec.zones.clock_misfit
        return (f"(CASE WHEN {q} = {p} THEN {x} - {p} WHEN {self._phase_sql(f'({x} - {q})')} = {q} THEN {x} - {q} "
                f"WHEN {self._phase_sql(f'({x} - {p})')} = {p} THEN {x} - {p} ELSE {x} - {q} END)")


@dataclass(frozen=True)
class _Text:
    """SQL text, for the helpers above."""

    text: str


__all__ = ["DAY_US", "Units", "first_day_of_month", "floor_sql", "is_sql", "month_of_day"]
