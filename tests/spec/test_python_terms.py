"""A `Window` in Python takes what TOML takes, in Python's words: text
durations under the keys without ``_ms`` (``Window(duration="5
minutes")``), with the per-kind constructors too, dumping back to the
text written; and its errors advise Python, while the same error from a
pipeline file advises TOML."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from wid import Aggregation, ConfigError, Window
from wid.spec.toml_io import dumps_window, loads_window

N = [Aggregation("count", as_="n")]


def test_text_durations_are_the_milliseconds_they_say() -> None:
    w = Window(kind="hopping", duration="1 hour", hop="5 minutes", lateness="1 minute 30 seconds",
               event_time_column="ts", aggregations=N)
    assert (w.duration_ms, w.hop_ms, w.lateness_ms) == (3_600_000, 300_000, 90_000)
    assert w == Window(kind="hopping", duration_ms=timedelta(hours=1), hop_ms=timedelta(minutes=5),
                       lateness_ms=timedelta(seconds=90), event_time_column="ts", aggregations=N)
    landmark = Window.landmark(hop="1 day", landmark="2013-01-01 00:00:00", max_future="off",
                               event_time_column="ts", aggregations=N)
    assert landmark.landmark_ms == int(datetime(2013, 1, 1, tzinfo=UTC).timestamp() * 1000)
    assert landmark.max_future_ms is None


@pytest.mark.parametrize("make", [
    lambda: Window(kind="tumbling", duration="5 minutes", origin="1 minute", event_time_column="ts", aggregations=N),
    lambda: Window.tumbling(duration="5 minutes", origin="1 minute", event_time_column="ts", aggregations=N),
])
def test_a_window_written_with_text_dumps_the_text_and_loads_back_equal(make: object) -> None:
    w = make()  # type: ignore[operator]
    text = dumps_window(w)
    assert 'duration = "5 minutes"' in text and 'origin = "1 minute"' in text and "_ms" not in text
    assert loads_window(text) == w and dumps_window(loads_window(text)) == text


def test_text_under_both_names_or_in_a_ms_field_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"^duration: is given twice, as duration and duration_ms"):
        Window(kind="tumbling", duration="5 minutes", duration_ms=300_000, event_time_column="ts", aggregations=N)
    with pytest.raises(ConfigError, match=r'^duration_ms: must be an integer, got \'5 minutes\'; give text as '
                                          r'duration="5 minutes"'):
        Window.tumbling("5 minutes", event_time_column="ts", aggregations=N)
    with pytest.raises(ConfigError, match=r"^duration: cannot read '5 fortnights' as a duration"):
        Window(kind="tumbling", duration="5 fortnights", event_time_column="ts", aggregations=N)


def test_an_error_advises_python_from_python_and_toml_from_a_file() -> None:
    with pytest.raises(ConfigError) as python:
        Window.tumbling(duration="1 minute", event_time_column="ts")
    assert "aggregations=[Aggregation(" in str(python.value) and "[[" not in str(python.value)
    with pytest.raises(ConfigError) as toml:
        loads_window('[transform.window]\nkind = "tumbling"\nduration = "1 minute"\nevent_time_column = "ts"\n')
    assert str(toml.value).startswith("transform.window.aggregations: a window needs at least one aggregation")
    assert "add [[transform.window.aggregations]]" in str(toml.value) and "Aggregation(" not in str(toml.value)
    assert str(python.value.in_toml()) == str(toml.value).removeprefix("transform.window.")
