"""The geometry of a Window's time windows (docs/semantics.md#window-kinds):
fixed (`wid.semantics.windowing`) or on a calendar
(`wid.semantics.calendar_windows`, from `wid.spec.calendar`), built once on
the driver or in the oracles; executors receive the built geometry, plain
values, and never import the spec."""

from __future__ import annotations

from functools import lru_cache

from wid.semantics.calendar import DAY_US, Units
from wid.semantics.calendar_windows import CalendarHopping, CalendarLandmark
from wid.semantics.timeunits import ms_to_us
from wid.semantics.windowing import Hopping, Landmark
from wid.spec.calendar import calendar_of
from wid.spec.window import Window
from wid.spec.zones import offsets

THURSDAY = 3  # 1970-01-01's weekday, Monday = 0
TimeGeometry = Hopping | CalendarHopping
LandmarkGeometry = Landmark | CalendarLandmark


@lru_cache(maxsize=128)
def units_of(zone: str, kind: str, step_us: int = DAY_US) -> Units:
    """The `kind` units of `zone` (`wid.semantics.calendar.Units`), with its offsets (`wid.spec.zones`)."""
    starts, offs = offsets(zone)
    return Units(zone, kind, starts, offs, step_us)


def time_geometry(w: Window) -> TimeGeometry:
    """Tumbling (hop = duration) and hopping windows of `w`, in microseconds."""
    cal = calendar_of(w)
    if cal is None:
        d = ms_to_us(w.duration_ms or 0)
        hop = getattr(w.shape, "hop_ms", None) or w.duration_ms  # a tumbling window hops by its duration
        return Hopping(d, ms_to_us(hop or 0), ms_to_us(w.origin_ms))
    duration = cal.duration or cal.hop
    length, hop = duration.count // cal.pane, cal.hop.count // cal.pane
    if cal.family == "clock":
        return CalendarHopping(units_of(cal.zone, "clock", ms_to_us(cal.pane)), length, hop, label="clock")
    if cal.family == "month":
        label = {12: "year", 3: "quarter"}.get(cal.hop.count, "month")
        return CalendarHopping(units_of(cal.zone, "month"), length, hop, per=cal.pane, label=label)
    anchor = -((THURSDAY - cal.week_start) % 7) if cal.weekly else 0
    label = "week" if cal.weekly and cal.week_start == 0 else "day"
    return CalendarHopping(units_of(cal.zone, "day"), length, hop, per=cal.pane, anchor=anchor, label=label)


def landmark_geometry(w: Window) -> LandmarkGeometry:
    """Landmark windows of `w`, in microseconds."""
    cal = calendar_of(w)
    landmark = ms_to_us(w.landmark_ms or 0)
    if cal is None:
        return Landmark(ms_to_us(w.hop_ms or 0), landmark,
                        None if w.max_duration_ms is None else ms_to_us(w.max_duration_ms))
    if cal.family == "clock":
        units = units_of(cal.zone, "clock", ms_to_us(cal.hop.count))
        period = None if cal.period is None else cal.period.count // cal.hop.count
        return CalendarLandmark(units, landmark, 1, units.unit(landmark), period, label="clock")
    if cal.family == "month":
        units = units_of(cal.zone, "month")
        anchor = units.unit(landmark)
        label = {12: "year", 3: "quarter"}.get(cal.hop.count, "month")
        return CalendarLandmark(units, landmark, cal.hop.count, anchor, None if cal.period is None else cal.period.count,
                                label=label if anchor % cal.hop.count == 0 else "month")
    units = units_of(cal.zone, "day")
    months = cal.period is not None and cal.period.unit == "month"
    return CalendarLandmark(units, landmark, cal.hop.count, units.unit(landmark),
                            None if cal.period is None else cal.period.count, months=months)


__all__ = ["LandmarkGeometry", "TimeGeometry", "landmark_geometry", "time_geometry", "units_of"]
