"""The calendar geometry (`wid.semantics.calendar`) against Python's
`zoneinfo` and pandas: every local day and month of 1970-2100 in zones with
daylight saving (New York, London), a 30-minute shift (Lord Howe), a +5:45
offset (Kathmandu) and a skipped day (Apia, 2011-12-30); and the local
hours of a zone, a repeated one giving two windows.

    New York, Sunday 2013-03-10 (a 23-hour day) and Sunday 2013-11-03 (25):

    local  00   01   03   04 ...  (02:00-03:00 does not exist)
    UTC    05   06   07   08
           [------ 2013-03-10: 05:00Z to 04:00Z next day, 23 h ------)

    local  00   01   01   02 ...  (01:00-02:00 occurs twice)
    UTC    04   05   06   07
           [------ 2013-11-03: 04:00Z to 05:00Z next day, 25 h ------)
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pytest

from wid.semantics.calendar import DAY_US, EPOCH_ORDINAL
from wid.semantics.calendar_windows import label_of
from wid.semantics.geometry import units_of

ZONES = ("America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kathmandu", "Pacific/Apia")
FIRST, LAST = date(1970, 1, 1), date(2100, 12, 31)
HOUR_US = 3_600_000_000


def instant_us(zone: str, day: date, hour: int = 0) -> int:
    """zoneinfo's instant of a local time (fold 0: a time in a gap moves
    forward by the gap, an ambiguous one is its first instant)."""
    return int(datetime(day.year, day.month, day.day, hour, tzinfo=ZoneInfo(zone)).timestamp()) * 1_000_000


def days() -> list[date]:
    return [FIRST + timedelta(days=i) for i in range((LAST - FIRST).days + 1)]


@pytest.mark.parametrize("zone", ZONES)
def test_every_local_day_of_1970_to_2100_starts_where_zoneinfo_says(zone: str) -> None:
    units = units_of(zone, "day")
    dates = days()
    k = np.array([d.toordinal() - EPOCH_ORDINAL for d in dates], dtype=np.int64)
    want = np.array([instant_us(zone, d) for d in dates], dtype=np.int64)
    got = units.start(k)
    assert np.array_equal(got, want), [str(d) for d, g, w in zip(dates, got, want, strict=True) if g != w][:5]
    held = want[1:] > want[:-1]  # a day some instant has
    # each day's first and last instants are in it; an empty day (Apia 2011-12-30) is in no instant
    assert np.array_equal(units.unit(want[:-1][held]), k[:-1][held])
    assert np.array_equal(units.unit(want[1:][held] - 1), k[:-1][held])
    assert held.all() == (zone != "Pacific/Apia")
    lengths = set(((want[1:] - want[:-1]) // 60_000_000).tolist())
    assert lengths <= {0, 23 * 60, 23 * 60 + 30, 23 * 60 + 45, 24 * 60, 24 * 60 + 30, 25 * 60}  # Kathmandu 1986: 23:45
    assert units.start(15774) == units.start(15774)  # scalar path
    assert [units.start(int(x)) for x in k[:50]] == want[:50].tolist()


@pytest.mark.parametrize("zone", ZONES)
def test_every_local_month_of_1970_to_2100_starts_where_zoneinfo_says(zone: str) -> None:
    units = units_of(zone, "month")
    months = [(y, m) for y in range(1970, 2101) for m in range(1, 13)]
    k = np.array([y * 12 + m - 1 for y, m in months], dtype=np.int64)
    want = np.array([instant_us(zone, date(y, m, 1)) for y, m in months], dtype=np.int64)
    assert np.array_equal(units.start(k), want)
    assert np.array_equal(units.unit(want), k) and np.array_equal(units.unit(want[1:] - 1), k[:-1])


@pytest.mark.parametrize("zone", ZONES)
def test_the_unit_of_an_instant_is_its_local_date_and_month_as_pandas_says(zone: str) -> None:
    rng = np.random.default_rng(47)
    us = rng.integers(0, 4_133_980_800_000_000, 200_000)  # 1970 to 2100
    local = pd.Series(pd.to_datetime(us, unit="us", utc=True)).dt.tz_convert(ZoneInfo(zone))  # pytz stops at 2037
    want_day = (local.dt.tz_localize(None).dt.normalize() - pd.Timestamp(0)) // pd.Timedelta(days=1)
    want_month = local.dt.year * 12 + local.dt.month - 1
    assert np.array_equal(units_of(zone, "day").unit(us), want_day.to_numpy())
    assert np.array_equal(units_of(zone, "month").unit(us), want_month.to_numpy())


def test_apia_had_no_2011_12_30() -> None:
    units = units_of("Pacific/Apia", "day")
    k = date(2011, 12, 30).toordinal() - EPOCH_ORDINAL
    assert units.start(k) == units.start(k + 1) == instant_us("Pacific/Apia", date(2011, 12, 31))
    around = np.arange(units.start(k - 1), units.start(k + 2), 60_000_000, dtype=np.int64)
    assert k not in set(units.unit(around).tolist()) and units.gaps


@pytest.mark.parametrize(("zone", "phase_minutes"), [("America/New_York", 0), ("Asia/Kathmandu", 15),
                                                     ("Australia/Lord_Howe", None)])
def test_hours_are_instants_between_whole_hours_of_the_local_clock(zone: str, phase_minutes: int | None) -> None:
    """Each hour window of 2013 starts at an instant whose local clock reads
    a whole hour, or at a change of the clock that moves its hours (Lord
    Howe's 30-minute shift), and every instant lies in its window."""
    units = units_of(zone, "clock", HOUR_US)
    grid = np.arange(1_356_998_400_000_000, 1_388_534_400_000_000, 60_000_000, dtype=np.int64)  # 2013 by minute
    k = units.unit(grid)
    assert np.all(np.diff(k) >= 0)
    assert np.all(units.start(k) <= grid) and np.all(grid < units.start(k + 1))
    starts = np.unique(units.start(k))
    tz = ZoneInfo(zone)
    on_hour = [datetime.fromtimestamp(s / 1e6, tz).minute == 0 for s in starts.tolist()]
    if phase_minutes is not None:
        assert all(on_hour)
        assert {datetime.fromtimestamp(s / 1e6, UTC).minute for s in starts.tolist()} == {phase_minutes}
    else:
        # set back half an hour in April (02:00 to 01:30), its repeated half hour is a window of its own, from the
        # change; set forward in October (02:00 to 02:30), 01:00 to 03:00 is one window of 90 minutes
        assert sum(not x for x in on_hour) == 1


def test_a_repeated_local_hour_gives_two_windows() -> None:
    units = units_of("America/New_York", "clock", HOUR_US)
    first, second = 1_383_454_800_000_000, 1_383_458_400_000_000  # 01:30 EDT and 01:30 EST on 2013-11-03
    a, b = units.unit(first + 1_800_000_000 - 1), units.unit(second)
    assert b == a + 1 and units.start(b) - units.start(a) == HOUR_US
    assert label_of(units, "clock", units.start(a)) == "2013-11-03T01:00:00-04:00"
    assert label_of(units, "clock", units.start(b)) == "2013-11-03T01:00:00-05:00"


def test_labels() -> None:
    day, month = units_of("America/New_York", "day"), units_of("America/New_York", "month")
    at = instant_us("America/New_York", date(2013, 3, 10), 12)
    assert label_of(day, "day", at) == "2013-03-10" and label_of(day, "week", at) == "2013-W10"
    assert [label_of(month, m, at) for m in ("month", "quarter", "year")] == ["2013-03", "2013-Q1", "2013"]
    assert DAY_US == 86_400_000_000
