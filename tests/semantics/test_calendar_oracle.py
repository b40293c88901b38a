"""Calendar windows in the oracles, by example: a daylight-saving week in
New York, a repeated local hour, Apia's missing day, month to date, a
weekly hop, and wall-clock (naive) event times read in the zone.

    New York, 2013-03-09 to 2013-03-11 (UTC-5, then UTC-4 from Sunday 03:00):

    UTC      03-09 05:00        03-10 05:00       03-11 04:00       03-12 04:00
             |---- Sat 24 h ----|---- Sun 23 h ---|---- Mon 24 h ---|
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from wid.semantics import evaluate
from wid.semantics.stream_oracle import MicroBatch, run_stream
from wid.spec import Aggregation, Window

NY = "America/New_York"
DAY = 86_400_000
N = (Aggregation("count", as_="n"),)


def utc_us(*parts: int) -> int:
    return int(datetime(*parts, tzinfo=UTC).timestamp()) * 1_000_000  # type: ignore[misc]


def ny_ms(*parts: int, fold: int = 0) -> int:
    return int(datetime(*parts, tzinfo=ZoneInfo(NY), fold=fold).timestamp() * 1000)  # type: ignore[misc]


def rows_at(*ms: int) -> list[dict[str, Any]]:
    return [{"ts": t, "k": "a"} for t in ms]


def daily(**kw: Any) -> Window:
    return Window(kind="tumbling", duration_ms=DAY, time_zone=NY, event_time_column="ts", event_time_unit="ms",
                  aggregations=N, window_label_column="day", **kw)


def test_a_dst_week_in_new_york_has_a_23_hour_sunday() -> None:
    rows = rows_at(ny_ms(2013, 3, 9, 23, 59), ny_ms(2013, 3, 10, 0, 0), ny_ms(2013, 3, 10, 1, 59),
                   ny_ms(2013, 3, 10, 3, 0), ny_ms(2013, 3, 10, 23, 59), ny_ms(2013, 3, 11, 0, 0))
    out = evaluate(rows, daily(), now_ms=ny_ms(2020, 1, 1)).rows
    assert [(r["day"], r["window_start"], r["window_end"], r["n"]) for r in out] == [
        ("2013-03-09", utc_us(2013, 3, 9, 5), utc_us(2013, 3, 10, 5), 1),
        ("2013-03-10", utc_us(2013, 3, 10, 5), utc_us(2013, 3, 11, 4), 4),  # 23 hours
        ("2013-03-11", utc_us(2013, 3, 11, 4), utc_us(2013, 3, 12, 4), 1)]


def test_a_local_hour_that_occurs_twice_is_two_windows() -> None:
    hourly = Window(kind="tumbling", duration_ms=3_600_000, time_zone=NY, event_time_column="ts",
                    event_time_unit="ms", aggregations=N, window_label_column="hour")
    rows = rows_at(ny_ms(2013, 11, 3, 1, 30), ny_ms(2013, 11, 3, 1, 30, fold=1), ny_ms(2013, 11, 3, 1, 45, fold=1))
    out = evaluate(rows, hourly, now_ms=ny_ms(2020, 1, 1)).rows
    assert [(r["hour"], r["n"]) for r in out] == [("2013-11-03T01:00:00-04:00", 1), ("2013-11-03T01:00:00-05:00", 2)]


def test_apia_2011_12_30_has_no_window() -> None:
    apia = ZoneInfo("Pacific/Apia")
    at = [int(datetime(2011, 12, d, 12, tzinfo=apia).timestamp() * 1000) for d in (29, 31)]
    week = Window(kind="hopping", duration_ms=7 * DAY, hop_ms=DAY, time_zone="Pacific/Apia", event_time_column="ts",
                  event_time_unit="ms", aggregations=N, window_label_column="first_day")
    out = evaluate(rows_at(*at), week, now_ms=at[1]).rows
    days = [r["first_day"] for r in out]
    assert "2011-12-30" not in days and "2011-12-29" in days and "2011-12-31" in days
    assert len({r["window_start"] for r in out}) == len(out)  # no two windows share a start
    tumbling = evaluate(rows_at(*at), Window(kind="tumbling", duration_ms=DAY, time_zone="Pacific/Apia",
                                             event_time_column="ts", event_time_unit="ms", aggregations=N,
                                             window_label_column="d"), now_ms=at[1]).rows
    assert [r["d"] for r in tumbling] == ["2011-12-29", "2011-12-31"]


def test_month_to_date_every_day_restarts_on_the_first() -> None:
    to_date = Window(kind="landmark", hop_ms=DAY, max_duration_months=1, landmark_ms=ny_ms(2013, 2, 1),
                     time_zone=NY, event_time_column="ts", event_time_unit="ms", aggregations=N,
                     window_label_column="as_of")
    rows = rows_at(ny_ms(2013, 2, 27, 12), ny_ms(2013, 3, 2, 12))
    out = evaluate(rows, to_date, now_ms=ny_ms(2020, 1, 1)).rows
    feb = [r for r in out if r["as_of"].startswith("2013-02")]
    march = [r for r in out if r["as_of"].startswith("2013-03")]
    assert [r["as_of"] for r in feb] == ["2013-02-27", "2013-02-28"]  # to the month's last day, none for the 29th
    assert len(march) == 30 and (march[0]["as_of"], march[-1]["as_of"]) == ("2013-03-02", "2013-03-31")
    assert {r["window_start"] for r in march} == {ny_ms(2013, 3, 1) * 1000}
    assert march[8]["window_end"] - march[7]["window_end"] == 23 * 3_600_000_000  # through Sunday the 10th
    assert {r["n"] for r in march} == {1}


def test_weeks_start_on_week_start() -> None:
    weekly = Window(kind="tumbling", duration_ms=7 * DAY, time_zone=NY, week_start="sunday",
                               event_time_column="ts", event_time_unit="ms", aggregations=N,
                               window_label_column="week")
    out = evaluate(rows_at(ny_ms(2013, 3, 13)), weekly, now_ms=ny_ms(2020, 1, 1)).rows
    assert (out[0]["week"], out[0]["window_start"]) == ("2013-03-10", ny_ms(2013, 3, 10) * 1000)
    iso = Window(kind="tumbling", duration_ms=7 * DAY, time_zone=NY, event_time_column="ts", event_time_unit="ms",
                 aggregations=N, window_label_column="week")
    out = evaluate(rows_at(ny_ms(2013, 3, 13)), iso, now_ms=ny_ms(2020, 1, 1)).rows
    assert (out[0]["week"], out[0]["window_start"]) == ("2013-W11", ny_ms(2013, 3, 11) * 1000)


def test_wall_clock_event_times_are_read_in_the_zone() -> None:
    naive = [{"ts": datetime(2013, 3, 10, 23, 30), "k": "a"}]
    w = Window(kind="tumbling", duration_ms=DAY, time_zone=NY, event_time_column="ts", aggregations=N)
    (row,) = evaluate(naive, w, now_ms=ny_ms(2020, 1, 1)).rows
    assert row["window_start"] == ny_ms(2013, 3, 10) * 1000  # 04:30 UTC on the 11th, in the 10th's local day


def test_a_local_day_closes_when_the_watermark_passes_its_last_instant() -> None:
    w = daily(max_groups_per_window=10)
    now = ny_ms(2013, 3, 11, 1)  # the micro-batches' processing time
    batches = [MicroBatch([("a", r) for r in rows_at(ny_ms(2013, 3, 10, 22))], now),
               MicroBatch([("a", r) for r in rows_at(ny_ms(2013, 3, 10, 23, 59))], now),
               MicroBatch([("a", r) for r in rows_at(ny_ms(2013, 3, 11, 0, 0))], now)]
    results = run_stream(batches, w)
    assert [len(r.emitted) for r in results] == [0, 0, 1]
    assert results[2].emitted[0].row["window_end"] == utc_us(2013, 3, 11, 4)
