"""Calendar windows (docs/concepts/calendar.md): what a time window's
`time_zone` and month durations declare, and the rules they follow.

A tumbling, hopping or landmark window is on the calendar when it sets a
`time_zone` or a duration in months (`duration_months`, `hop_months`,
`max_duration_months`: a quarter is 3, a year 12; months without a zone are
UTC's). Its spans then fall in one of three families, one per window:

- ``day``: whole days of milliseconds (``"1 day"``, ``"7 days"``, ``"1
  week"``) are local calendar days: local midnight to local midnight, 23 or
  25 hours at a daylight-saving change. A hop of whole weeks aligns its
  windows on `week_start` (default Monday, as ISO 8601), other day spans on
  the local date 1970-01-01.
- ``month``: months are local months from the 1st, 00:00; window spans of 3
  and 12 aligned on January are quarters and years.
- ``clock``: other fixed durations (hours, minutes) are instants, aligned
  where the local clock reads a multiple of the pane (a local hour that
  occurs twice gives two windows; Kathmandu's hours start at :15 UTC).

A landmark window may count days within periods of months ("month to date,
every day"). Anything else mixes units that do not divide each other on the
calendar (a month is 28 to 31 days, a local day 23 to 25 hours) and is
refused at load, naming the fields. Without a zone and without months,
durations are fixed and aligned on the epoch plus `origin_ms`, as always.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from math import gcd
from typing import Any, ClassVar, Literal
from zoneinfo import ZoneInfo

from wid.errors import ConfigError
from wid.spec.field_rules import identifier, text
from wid.spec.zones import check_zone, clock_misfit, first_instant_of, offset_at

DAY_MS = 86_400_000
WEEK_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
WeekDay = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
CALENDAR_FIELDS = ("time_zone", "week_start", "window_label_column")  # the fields every calendar kind takes
MONTH_FIELDS = {"duration_ms": "duration_months", "hop_ms": "hop_months", "max_duration_ms": "max_duration_months"}


@dataclass(frozen=True, kw_only=True)
class OnCalendar:
    """The parameters of a kind whose windows may sit on a calendar
    (tumbling, hopping, landmark): a shape's mixin (`wid.spec.kinds.base.Shape`)."""

    kind: ClassVar[str]
    fields: ClassVar[tuple[str, ...]]

    time_zone: str | None = text(doc="An IANA zone (`America/New_York`): whole days are its local days (23 or 25 "
                                 "hours at a daylight-saving change), months its local months, other durations "
                                 "align on its local clock. Default: none (fixed durations on the epoch; months "
                                 "in UTC).")
    week_start: WeekDay = text("monday", "The first day of a week for hops of whole weeks: `monday` (ISO 8601, "
                                         "the default) to `sunday`.")
    window_label_column: str | None = identifier(doc="Adds a column of that name with each window's local name: "
                                                     "`2013-03-10`, `2013-W10`, `2013-03`, `2013-Q1`, `2013`.")


@dataclass(frozen=True)
class Span:
    """A window's length or step: `count` of `unit` (``ms``, ``day`` or
    ``month``), declared by the Window field `field`."""

    count: int
    unit: str
    field: str

    def text(self) -> str:
        """The span as a user reads it (``3 months``, ``7 days``, ``3600000 ms``)."""
        word = {"ms": "ms", "day": "day", "month": "month"}[self.unit]
        return f"{self.count} {word}{'s' if self.count != 1 and self.unit != 'ms' else ''}"


@dataclass(frozen=True)
class Calendar:
    """A window's calendar: the `zone` (``"UTC"`` when the Window names
    none), the `family` of its spans (``day``, ``month``, ``clock``; a
    landmark counting days in months is ``day``), its `hop` (a tumbling
    window's is its `duration`), `duration` (tumbling and hopping),
    `period` (a landmark's max duration) and the first day of its weeks
    (`week_start`, 0 = Monday) when its hop is whole weeks (`weekly`)."""

    zone: str
    family: str
    hop: Span
    duration: Span | None = None
    period: Span | None = None
    week_start: int = 0
    weekly: bool = False

    @property
    def pane(self) -> int:
        """The pane, in the hop's unit: ``gcd(duration, hop)`` (a landmark's: its hop)."""
        return self.hop.count if self.duration is None else gcd(self.duration.count, self.hop.count)


def _span(w: Any, field: str, zoned: bool) -> Span | None:
    """The span of `field` (an ``*_ms`` field, or its months twin)."""
    months = getattr(w, MONTH_FIELDS[field])
    ms = getattr(w, field)
    if months is not None and ms is not None:
        raise ConfigError(MONTH_FIELDS[field], f"{field} and {MONTH_FIELDS[field]} are both set",
                          "keep one of them")
    if months is not None:
        return Span(months, "month", MONTH_FIELDS[field])
    if ms is None:
        return None
    return Span(ms // DAY_MS, "day", field) if zoned and ms % DAY_MS == 0 else Span(ms, "ms", field)


def calendar_of(w: Any) -> Calendar | None:
    """The calendar of `w` (a Window, or its kind's shape: `wid.spec.kinds.base.Shape`),
    or None for fixed windows (no `time_zone`, no months). Raises
    ConfigError, naming the fields, for spans the calendar cannot hold
    together (see the module docstring)."""
    w = getattr(w, "shape", w)  # a Window: its shape's calendar
    if not isinstance(w, OnCalendar) or (
            w.time_zone is None and all(getattr(w, m, None) is None for m in MONTH_FIELDS.values())):
        return None
    zone = w.time_zone or "UTC"
    spans = {f: _span(w, f, True) for f in MONTH_FIELDS if f in w.fields}
    hop = spans.get("hop_ms") or spans.get("duration_ms")  # a tumbling window hops by its duration
    if hop is None:
        raise ConfigError("hop_ms" if "hop_ms" in spans else "duration_ms", f"kind = '{w.kind}' requires a duration")
    duration = spans.get("duration_ms")  # None: a landmark window, which grows by hops within periods
    period = spans.get("max_duration_ms")
    family = _family(hop, duration, period)
    weekly = family == "day" and duration is not None and hop.count % 7 == 0
    return Calendar(zone, family, hop, duration, period, WEEK_DAYS.index(w.week_start), weekly)


def _family(hop: Span, duration: Span | None, period: Span | None) -> str:
    """The family of the spans, or ConfigError naming the one that does not fit."""
    longer = duration if duration is not None and duration is not hop else period
    if longer is None:
        return "clock" if hop.unit == "ms" else hop.unit
    days_in_months = period is longer and (hop.unit, longer.unit) == ("day", "month")
    if longer.unit != hop.unit and not (days_in_months and hop.count == 1):
        fix = ('count days one at a time within months (hop = "1 day")' if days_in_months else
               "give both in the same unit, or both as fixed durations without a time_zone")
        raise ConfigError(longer.field, f"{longer.field} = {longer.text()} is not a whole number of "
                          f"{hop.field} = {hop.text()} on the calendar: {_why(hop, longer)}", fix)
    if longer.unit == hop.unit != "ms" and longer.count % hop.count:
        raise ConfigError(longer.field, f"{longer.field} = {longer.text()} is not a whole number of "
                          f"{hop.field} = {hop.text()}", f"make {longer.field} a multiple of {hop.field}")
    return "clock" if hop.unit == "ms" else hop.unit


def _why(short: Span, long: Span) -> str:
    units = {short.unit, long.unit}
    if "month" in units:
        return "a month is 28 to 31 days" if "day" in units else "a month has no fixed number of hours"
    return "a local day is 23 to 25 hours long at a daylight-saving change"


def require_span(w: Any, field: str) -> None:
    """`w` sets the ``*_ms`` `field` or its months twin (not both); ConfigError naming it."""
    months = MONTH_FIELDS[field]
    if getattr(w, field) is None and getattr(w, months) is None:
        raise ConfigError(field, f"kind = '{w.kind}' requires `{field}` (or `{months}`)")
    if getattr(w, field) is not None and getattr(w, months) is not None:
        raise ConfigError(months, f"{field} and {months} are both set", "keep one of them")


def check_calendar(w: OnCalendar) -> None:
    """The rules of calendar windows (module docstring) for shape `w`;
    ConfigError naming the field."""
    if w.time_zone is not None:
        check_zone(w.time_zone)
    cal = calendar_of(w)
    if cal is None:
        for name, why in (("week_start", "weeks align on the epoch without a time_zone"),
                          ("window_label_column", "a label names a window on the calendar")):
            if getattr(w, name) != ("monday" if name == "week_start" else None):
                raise ConfigError(name, f"needs a time_zone ({why})", 'set time_zone, e.g. time_zone = "UTC"')
        return
    if getattr(w, "origin_ms", 0):
        raise ConfigError("origin_ms", "calendar windows align on the local calendar, not on an origin",
                          "remove origin_ms")
    if w.week_start != "monday" and not cal.weekly:
        raise ConfigError("week_start", "is only used by windows whose hop is whole weeks", "remove week_start")
    if cal.family == "clock" and w.time_zone is not None:
        _check_clock(w.time_zone, cal)
    landmark: int | None = getattr(w, "landmark_ms", None)  # a landmark window's
    if landmark is not None:
        _check_landmark(landmark, cal)


def _check_clock(zone: str, cal: Calendar) -> None:
    at = clock_misfit(zone, cal.pane * 1000)
    if at is not None:
        when = at // 1_000_000
        raise ConfigError("time_zone", f"{zone} changes its clock at epoch second {when} by an amount and at a time "
                          f"that do not fall on {cal.pane} ms boundaries, so windows of {cal.pane} ms on its clock "
                          "would not be intervals", "use a duration that divides its changes (e.g. 30 minutes), "
                          "whole days, or no time_zone (UTC)")


def _check_landmark(landmark_ms: int, cal: Calendar) -> None:
    """The landmark is the first instant of a unit of the period (or of the
    hop, without one; a clock landmark: of the hop) in the zone."""
    us = landmark_ms * 1000
    unit = "ms" if cal.family == "clock" else (cal.period or cal.hop).unit
    if unit == "ms":
        aligned = (us + offset_at(cal.zone, us)) % (cal.hop.count * 1000) == 0
    else:
        local = datetime.fromtimestamp(us / 1_000_000, ZoneInfo(cal.zone))
        aligned = first_instant_of(cal.zone, us) == us and (unit == "day" or local.day == 1)
    if not aligned:
        what = {"ms": "a boundary of the hop on the local clock", "day": "a local midnight",
                "month": "a local midnight on the 1st of a month"}[unit]
        raise ConfigError("landmark_ms", f"must be {what} in {cal.zone} (landmark windows on the calendar start "
                          "their periods there)", 'write it with its offset, e.g. landmark = "2013-03-01T00:00:00-05:00"')


__all__ = ["CALENDAR_FIELDS", "Calendar", "DAY_MS", "MONTH_FIELDS", "OnCalendar", "Span", "WEEK_DAYS", "WeekDay",
           "calendar_of", "check_calendar", "require_span"]
