"""Calendar windows in the WID operator's time and landmark engines (run
without Spark, over in-memory stores, 1 to 4 shards) against the streaming
oracle: local days, weeks and months in New York across its March and
November changes, 7 days every day, month to date every day, local hours
(New York's repeated hour, Lord Howe's 30-minute shift) and Apia's missing
day, on random streams with disorder beyond the lateness, for every
late-data policy and emit mode."""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.kernels.operator.harness import LocalOperator, micro_batches
from tests.kernels.operator.test_extent_engines import SCHEMA, assert_same_results
from tests.strategies import aggregations
from tests.transcript import is_punctuation
from wid import Punctuation, Window
from wid.semantics.stream_oracle import MicroBatch, run_stream

HOUR, DAY = 3_600_000, 86_400_000


def local_ms(zone: str, *parts: int) -> int:
    return int(datetime(*parts, tzinfo=ZoneInfo(zone)).timestamp() * 1000)  # type: ignore[misc]


# (zone, where the rows start, how far apart they are, the window's shape)
SHAPES: list[tuple[str, tuple[int, ...], int, dict[str, Any]]] = [
    ("America/New_York", (2013, 3, 8), 3 * HOUR, {"kind": "tumbling", "duration_ms": DAY}),
    ("America/New_York", (2013, 10, 30), 3 * HOUR, {"kind": "tumbling", "duration_ms": 7 * DAY,
                                                     "week_start": "sunday"}),
    ("America/New_York", (2013, 2, 20), DAY, {"kind": "tumbling", "duration_months": 1}),
    ("America/New_York", (2013, 3, 1), 8 * HOUR, {"kind": "hopping", "duration_ms": 7 * DAY, "hop_ms": DAY}),
    ("America/New_York", (2013, 10, 25), 8 * HOUR, {"kind": "landmark", "hop_ms": DAY, "max_duration_months": 1,
                                                     "landmark_ms": "2013-10-01"}),
    ("America/New_York", (2013, 11, 2, 20), 20 * 60_000, {"kind": "tumbling", "duration_ms": HOUR}),
    ("Australia/Lord_Howe", (2013, 4, 6, 20), 20 * 60_000, {"kind": "hopping", "duration_ms": 2 * HOUR,
                                                             "hop_ms": HOUR}),
    ("Pacific/Apia", (2011, 12, 26), 6 * HOUR, {"kind": "hopping", "duration_ms": 3 * DAY, "hop_ms": DAY}),
    ("Pacific/Apia", (2011, 12, 20), 6 * HOUR, {"kind": "landmark", "hop_ms": DAY, "max_duration_months": 1,
                                                 "landmark_ms": "2011-12-01"}),
]


@st.composite
def cases(draw: st.DrawFn) -> tuple[Window, list[MicroBatch]]:
    zone, at, step, shape = draw(st.sampled_from(SHAPES))
    shape = dict(shape)
    if "landmark_ms" in shape:
        y, m, d = map(int, shape["landmark_ms"].split("-"))
        shape["landmark_ms"] = local_ms(zone, y, m, d)
    policy = draw(st.sampled_from(["drop", "dlq", "reopen"]))
    aggs = [draw(aggregations(("v", "w"), alias=f"a{i}")) for i in range(draw(st.integers(1, 2)))]
    window = Window(event_time_column="ts", event_time_unit="ms", time_zone=zone, aggregations=tuple(aggs),
                    group_by=draw(st.sampled_from([(), ("k",)])), max_future_ms=None,
                    lateness_ms=draw(st.sampled_from([0, step, 5 * step])), late_data=policy,
                    allowed_lateness_ms=draw(st.sampled_from([step, 10 * step])) if policy == "reopen" else None,
                    late_mode=draw(st.sampled_from(["generous", "consistent"])),
                    emit=draw(st.sampled_from(["on_close", "on_update"])), max_groups_per_window=1000,
                    punctuation=Punctuation("punct"), **shape)
    rng = random.Random(draw(st.integers(0, 2**32)))
    start = local_ms(zone, *at)
    rows = [{"k": rng.choice("abc"), "g": "x", "ts": start + i * step + rng.randrange(step),
             "v": rng.choice([None, float(rng.randrange(-9, 9))]), "w": rng.choice([None, rng.randrange(0, 5)]),
             "id": i, "punct": None} for i in range(draw(st.integers(0, 60)))]
    batches = micro_batches(rows, rng, draw(st.integers(0, 6)), draw(st.sampled_from([0, 3 * step, 20 * step])))
    return window, batches


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=cases(), shards=st.integers(1, 4))
def test_calendar_windows_in_the_shards_equal_the_streaming_oracle(case: tuple[Window, list[MicroBatch]],
                                                                   shards: int) -> None:
    window, batches = case
    got = LocalOperator(window, SCHEMA, shards, is_punctuation).run(batches)
    assert_same_results(window, got, run_stream(batches, window, is_punctuation))
