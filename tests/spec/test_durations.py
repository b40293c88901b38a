"""Durations and instants as text (`wid.spec.durations`): each ``*_ms`` key
also takes Spark's interval strings under the key without its suffix;
checked against Python's own `timedelta` arithmetic and against Spark's
reading of the same strings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wid.errors import ConfigError
from wid.spec import Aggregation, Window
from wid.spec.durations import parse_duration_ms, parse_instant_ms
from wid.spec.toml_io import dumps_pipeline, loads_pipeline

UNITS = {"millisecond": timedelta(milliseconds=1), "second": timedelta(seconds=1), "minute": timedelta(minutes=1),
         "hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(weeks=1)}


@given(st.lists(st.tuples(st.integers(-500, 500), st.sampled_from(sorted(UNITS)), st.booleans()), min_size=1,
                max_size=4))
def test_a_duration_is_the_sum_of_its_terms(terms: list[tuple[int, str, bool]]) -> None:
    text = " ".join(f"{n} {unit}{'s' if plural else ''}" for n, unit, plural in terms)
    want = sum((n * UNITS[unit] for n, unit, _ in terms), timedelta())
    assert parse_duration_ms(text, "duration") == want // timedelta(milliseconds=1)


@pytest.mark.parametrize(("text", "ms"), [("10 minutes", 600_000), ("1 hour", 3_600_000), ("INTERVAL 2 Days", 172_800_000),
                                          ("1.5 seconds", 1_500), ("500 ms", 500), ("2h 30min", 9_000_000),
                                          ("2000 microseconds", 2)])
def test_the_forms_users_write(text: str, ms: int) -> None:
    assert parse_duration_ms(text, "duration") == ms


@pytest.mark.parametrize(("text", "says"), [("1 month", "cannot read"), ("3 fortnights", "cannot read"),
                                            ("", "is empty"), ("1.0005 seconds", "whole number of milliseconds"),
                                            ("ten minutes", "cannot read")])
def test_what_is_not_a_fixed_duration_is_refused(text: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says) as err:
        parse_duration_ms(text, "transform.window.duration")
    assert err.value.field == "transform.window.duration"


def test_instants_are_utc_unless_they_say_otherwise() -> None:
    at = datetime(2013, 1, 1, tzinfo=UTC)
    assert parse_instant_ms("2013-01-01 00:00:00", "landmark") == int(at.timestamp() * 1000)
    assert parse_instant_ms("2013-01-01T01:00:00+01:00", "landmark") == int(at.timestamp() * 1000)
    assert parse_instant_ms(datetime(2013, 1, 1), "landmark") == int(at.timestamp() * 1000)
    with pytest.raises(ConfigError, match="timestamp"):
        parse_instant_ms("soon", "landmark")


def test_python_takes_timedelta_and_datetime() -> None:
    n = {"aggregations": (Aggregation("count", as_="n"),), "event_time_column": "ts"}
    assert Window(kind="hopping", duration_ms=timedelta(hours=1), hop_ms=timedelta(minutes=5), **n) == \
        Window(kind="hopping", duration_ms=3_600_000, hop_ms=300_000, **n)
    assert Window(kind="landmark", hop_ms=timedelta(days=1), landmark_ms=datetime(2013, 1, 1, tzinfo=UTC),
                  **n).landmark_ms == 1_356_998_400_000


PIPELINE = """
name = "texts"
[source]
format = "json"
path = "land"
[transform.window]
kind = "landmark"
hop = "1 hour"
landmark = "2013-01-01 00:00:00"
max_duration = "1 day"
lateness = "90 seconds"
event_time_column = "ts"
[[transform.window.aggregations]]
agg = "count"
as = "n"
[target]
kind = "sqlite"
path = "out.sqlite"
table = "w"
retry_backoff = "2 seconds"
"""


def test_toml_takes_text_and_a_dump_keeps_what_was_written() -> None:
    spec: Any = loads_pipeline(PIPELINE)
    w = spec.window
    assert (w.hop_ms, w.landmark_ms, w.max_duration_ms, w.lateness_ms) == (3_600_000, 1_356_998_400_000, 86_400_000,
                                                                           90_000)
    assert spec.target.retry_backoff_ms == 2_000
    text = dumps_pipeline(spec)
    assert 'hop = "1 hour"' in text and 'lateness = "90 seconds"' in text and "hop_ms" not in text
    assert 'retry_backoff = "2 seconds"' in text
    assert loads_pipeline(text) == spec


def test_both_keys_are_refused_naming_the_field() -> None:
    with pytest.raises(ConfigError) as err:
        loads_pipeline(PIPELINE.replace('hop = "1 hour"', 'hop = "1 hour"\nhop_ms = 3600000'))
    assert err.value.field == "transform.window.hop" and "twice" in str(err.value)
    with pytest.raises(ConfigError) as err:
        loads_pipeline(PIPELINE.replace('hop = "1 hour"', "hop = 3600000"))
    assert err.value.field == "transform.window.hop"


@pytest.mark.parametrize("text", ["10 minutes", "1 hour 30 minutes", "2 days", "1.5 seconds", "250 milliseconds"])
def test_spark_reads_the_same_strings_the_same(spark: Any, text: str) -> None:
    got = spark.sql(f"SELECT INTERVAL '{text}' AS i").first()["i"]
    assert got // timedelta(milliseconds=1) == parse_duration_ms(text, "duration")
