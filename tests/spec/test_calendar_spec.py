"""Calendar windows in the spec (`wid.spec.calendar`): a time zone, spans in
months, weeks on a chosen day, a label column; what is refused at load,
naming the fields; and TOML round trips of the text forms."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from wid.errors import ConfigError
from wid.spec import Aggregation, Window
from wid.spec.calendar import calendar_of
from wid.spec.toml_io import dumps_window, loads_window

N = (Aggregation("count", as_="n"),)
DAY = 86_400_000
NY = "America/New_York"


def make(kind: str = "tumbling", **kw: Any) -> Window:
    return Window(kind=kind, event_time_column="ts", aggregations=N, **kw)  # type: ignore[arg-type]


def local_ms(zone: str, *parts: int) -> int:
    return int(datetime(*parts, tzinfo=ZoneInfo(zone)).timestamp() * 1000)  # type: ignore[misc]


@pytest.mark.parametrize(("kw", "field", "words"), [
    ({"duration_ms": DAY, "time_zone": "America/NewYork"}, "time_zone", "did you mean 'America/New_York'"),
    ({"duration_ms": DAY, "time_zone": "Europe/Londn"}, "time_zone", "'Europe/London'"),
    ({"duration_ms": DAY, "time_zone": 5}, "time_zone", "IANA"),
    ({"duration_ms": DAY, "week_start": "sunday"}, "week_start", "needs a time_zone"),
    ({"duration_ms": DAY, "time_zone": NY, "week_start": "sunday"}, "week_start", "hop is whole weeks"),
    ({"duration_ms": 7 * DAY, "time_zone": NY, "week_start": "Sunday"}, "week_start", "must be one of"),
    ({"duration_ms": DAY, "window_label_column": "day"}, "window_label_column", "needs a time_zone"),
    ({"duration_ms": DAY, "time_zone": NY, "origin_ms": 3_600_000}, "origin_ms", "align on the local calendar"),
    ({"duration_months": 0}, "duration_months", "positive"),
    ({"duration_ms": DAY, "duration_months": 1}, "duration_months", "both set"),
    ({}, "duration_ms", r"requires `duration_ms` \(or `duration_months`\)"),
    ({"duration_ms": DAY, "time_zone": NY, "window_label_column": "window_end"}, "window_label_column",
     "names two window columns"),
])
def test_calendar_settings_are_refused_naming_the_field(kw: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words) as err:
        make(**kw)
    assert err.value.field == field


@pytest.mark.parametrize(("kind", "kw", "field", "words"), [
    ("hopping", {"duration_months": 1, "hop_ms": 7 * DAY, "time_zone": NY}, "duration_months",
     "a month is 28 to 31 days"),
    ("hopping", {"duration_months": 1, "hop_ms": DAY}, "duration_months", "not a whole number"),
    ("hopping", {"duration_ms": DAY, "hop_ms": 3_600_000, "time_zone": NY}, "duration_ms", "23 to 25 hours"),
    ("hopping", {"duration_months": 3, "hop_months": 2}, "duration_months", "not a whole number of hop_months"),
    ("hopping", {"duration_ms": 7 * DAY, "hop_ms": 2 * DAY, "time_zone": NY}, "duration_ms", "not a whole number"),
    ("landmark", {"hop_ms": 7 * DAY, "max_duration_months": 1, "time_zone": NY,
                  "landmark_ms": local_ms(NY, 2013, 3, 1)}, "max_duration_months", "not a whole number"),
    ("landmark", {"hop_ms": 2 * DAY, "max_duration_months": 1, "time_zone": NY,
                  "landmark_ms": local_ms(NY, 2013, 3, 1)}, "max_duration_months", "one at a time within months"),
    ("landmark", {"hop_ms": 3_600_000, "max_duration_ms": DAY, "time_zone": NY,
                  "landmark_ms": local_ms(NY, 2013, 3, 1)}, "max_duration_ms", "23 to 25 hours"),
    ("landmark", {"hop_ms": DAY, "max_duration_months": 1, "time_zone": NY,
                  "landmark_ms": local_ms(NY, 2013, 3, 2)}, "landmark_ms", "on the 1st of a month"),
    ("landmark", {"hop_ms": DAY, "time_zone": NY, "landmark_ms": local_ms("UTC", 2013, 3, 1)}, "landmark_ms",
     "a local midnight"),
])
def test_spans_that_do_not_divide_on_the_calendar_are_refused(kind: str, kw: dict[str, Any], field: str,
                                                              words: str) -> None:
    with pytest.raises(ConfigError, match=words) as err:
        make(kind, **kw)
    assert err.value.field == field


def test_the_families_of_spans() -> None:
    daily = calendar_of(make(duration_ms=DAY, time_zone=NY))
    assert daily is not None and (daily.family, daily.hop.count, daily.weekly) == ("day", 1, False)
    weekly = calendar_of(make(duration_ms=7 * DAY, time_zone=NY, week_start="sunday"))
    assert weekly is not None and (weekly.family, weekly.weekly, weekly.week_start) == ("day", True, 6)
    quarters = calendar_of(make("hopping", duration_months=12, hop_months=3))
    assert quarters is not None and (quarters.zone, quarters.family, quarters.pane) == ("UTC", "month", 3)
    hours = calendar_of(make(duration_ms=3_600_000, time_zone="Asia/Kathmandu"))
    assert hours is not None and hours.family == "clock"
    to_date = calendar_of(make("landmark", hop_ms=DAY, max_duration_months=1, time_zone=NY,
                               landmark_ms=local_ms(NY, 2013, 1, 1)))
    assert to_date is not None and (to_date.family, to_date.period and to_date.period.unit) == ("day", "month")
    assert calendar_of(make(duration_ms=DAY)) is None  # fixed: epoch-aligned as before


def test_fixed_durations_keep_their_meaning_without_a_zone() -> None:
    assert make(duration_ms=DAY) == Window.tumbling(DAY, event_time_column="ts", aggregations=N)
    assert make("hopping", duration_ms=7 * DAY, hop_ms=2 * DAY).hop_ms == 2 * DAY  # panes of gcd, as always


def test_python_constructors_take_the_calendar_fields() -> None:
    w = Window.tumbling(duration_months=1, time_zone=NY, window_label_column="month", event_time_column="ts",
                        aggregations=N)
    assert (w.duration_months, w.time_zone, w.output_prefix) == (1, NY, ("window_start", "window_end", "month"))
    with pytest.raises(ConfigError, match="not a field of tumbling"):
        Window.tumbling(DAY, hop_months=1, event_time_column="ts", aggregations=N)


TOML = """
[transform.window]
kind = "{kind}"
{spans}
time_zone = "America/New_York"
event_time_column = "ts"
window_label_column = "period"

[[transform.window.aggregations]]
agg = "count"
as = "n"
"""


@pytest.mark.parametrize(("kind", "spans", "want"), [
    ("tumbling", 'duration = "1 month"', {"duration_months": 1}),
    ("tumbling", 'duration = "1 quarter"', {"duration_months": 3}),
    ("tumbling", 'duration = "1 year"', {"duration_months": 12}),
    ("tumbling", 'duration = "1 day"', {"duration_ms": DAY}),
    ("tumbling", 'duration = "1 week"\nweek_start = "sunday"', {"duration_ms": 7 * DAY, "week_start": "sunday"}),
    ("hopping", 'duration = "7 days"\nhop = "1 day"', {"duration_ms": 7 * DAY, "hop_ms": DAY}),
    ("hopping", 'duration = "1 year"\nhop = "1 quarter"', {"duration_months": 12, "hop_months": 3}),
    ("landmark", 'hop = "1 day"\nmax_duration = "1 month"\nlandmark = "2013-01-01T00:00:00-05:00"',
     {"hop_ms": DAY, "max_duration_months": 1, "landmark_ms": local_ms(NY, 2013, 1, 1)}),
    ("tumbling", "duration_months = 3", {"duration_months": 3}),
])
def test_toml_text_forms_load_and_round_trip_exactly(kind: str, spans: str, want: dict[str, Any]) -> None:
    text = TOML.format(kind=kind, spans=spans)
    w = loads_window(text)
    assert {k: getattr(w, k) for k in want} == want
    assert w.time_zone == NY and w.window_label_column == "period"
    again = dumps_window(w)
    assert loads_window(again) == w
    for line in spans.splitlines():
        assert line.split(" = ")[0] in again  # written back as written


def test_toml_refuses_months_where_they_have_no_meaning_and_twice() -> None:
    with pytest.raises(ConfigError, match="months have no fixed length") as err:
        loads_window(TOML.format(kind="tumbling", spans='duration = "1 day"\nlateness = "1 month"'))
    assert err.value.field == "transform.window.lateness"
    with pytest.raises(ConfigError, match="twice") as err:
        loads_window(TOML.format(kind="tumbling", spans='duration = "1 month"\nduration_months = 1'))
    assert err.value.field == "transform.window.duration"
