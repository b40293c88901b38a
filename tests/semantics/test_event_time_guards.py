"""Event times no row may bring in (docs/semantics.md#bad-input): one outside
Spark's TIMESTAMP range, and one further ahead of the processing time than
`max_future_ms`. Both are bad input, dead-lettered with a reason, and move
no watermark, so one row can neither stop nor poison a stream."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.semantics.test_stream_oracle import streams
from wid import Aggregation, Punctuation, Window
from wid.semantics import evaluate, reasons
from wid.semantics.stream_oracle import MicroBatch, run_stream
from wid.semantics.timeunits import MAX_US, MIN_US

DAY_MS = 86_400_000
NOW_MS = 1_700_000_000_000  # the processing time of these micro-batches: 2023-11-14
AGGS = (Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s"))


def minute_windows(**extra: Any) -> Window:
    return Window(kind="tumbling", duration_ms=60_000, event_time_column="ts", event_time_unit="ms",
                  group_by=("k",), aggregations=AGGS, **extra)


def test_spark_s_timestamp_range_in_microseconds() -> None:
    assert int((datetime(1, 1, 1, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds()) * 10**6 == MIN_US
    assert int((datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp() + 1) * 10**6) == MAX_US + 1


def test_a_nanosecond_time_in_a_millisecond_column_is_out_of_range() -> None:
    # 1700000000123456789 "ms" is 1.7e21 microseconds, far past year 9999: Spark cannot hold it
    rows = [{"k": "a", "ts": NOW_MS, "v": 1}, {"k": "a", "ts": 1_700_000_000_123_456_789, "v": 2},
            {"k": "a", "ts": MAX_US // 1000 + 1, "v": 4}, {"k": "a", "ts": MIN_US // 1000 - 1, "v": 8}]
    out = evaluate(rows, minute_windows(max_future_ms=None), now_ms=NOW_MS)
    assert [d.reason for d in out.dead_letter] == [reasons.OUT_OF_RANGE] * 3
    assert [(r["n"], r["s"]) for r in out.rows] == [(1, 1)]


def test_the_ends_of_spark_s_range_are_in_range() -> None:
    rows = [{"k": "a", "ts": MAX_US // 1000, "v": 1}, {"k": "a", "ts": -(-MIN_US // 1000), "v": 2}]
    out = evaluate(rows, minute_windows(max_future_ms=None), now_ms=NOW_MS)
    assert out.dead_letter == [] and sorted(r["s"] for r in out.rows) == [1, 2]


def test_a_time_more_than_max_future_ahead_of_processing_time_is_rejected() -> None:
    #  now ─────────── now + 1 day ──── 9999-12-31
    #   a@now (kept)   b@now+1day (kept: not more than a day ahead)   c@now+1day+1ms, d@9999 (in the future)
    ahead = [("a", NOW_MS), ("b", NOW_MS + DAY_MS), ("c", NOW_MS + DAY_MS + 1), ("d", MAX_US // 1000)]
    rows = [{"k": k, "ts": ts, "v": 1} for k, ts in ahead]
    out = evaluate(rows, minute_windows(max_future_ms=DAY_MS), now_ms=NOW_MS)
    assert [(d.reason, d.row["k"]) for d in out.dead_letter] == [(reasons.IN_FUTURE, "c"), (reasons.IN_FUTURE, "d")]
    off = evaluate(rows, minute_windows(max_future_ms=None), now_ms=NOW_MS)
    assert off.dead_letter == [] and len(off.rows) == 4


def test_a_batch_keeps_future_rows_by_default_and_a_stream_guards_a_day() -> None:
    # a table of bookings is normal batch input: Spark's window() keeps a row dated years ahead, and so does a
    # batch unless it sets max_future_ms; a stream's default guard stays one day (a far-future row moves its watermark)
    rows = [{"k": "a", "ts": NOW_MS, "v": 1}, {"k": "a", "ts": NOW_MS + 2 * 365 * DAY_MS, "v": 2}]
    batch = evaluate(rows, minute_windows(), now_ms=NOW_MS)
    assert batch.dead_letter == [] and sorted(r["s"] for r in batch.rows) == [1, 2]
    stream = run_stream([MicroBatch([("s", r) for r in rows], NOW_MS)], minute_windows())
    assert [d.reason for d in stream[0].rejected] == [reasons.IN_FUTURE]
    assert minute_windows().future_guard_ms(streaming=True) == DAY_MS
    assert minute_windows().future_guard_ms(streaming=False) is None


def year_9999_stream() -> list[MicroBatch]:
    """Three micro-batches a minute apart; the second holds one row dated
    9999-12-31 (a clock error) among rows of the present."""
    def at(minute: int, *rows: tuple[str, int]) -> MicroBatch:
        return MicroBatch([("s", {"k": k, "ts": ts, "v": 1}) for k, ts in rows], NOW_MS + minute * 60_000)
    return [at(0, ("a", NOW_MS), ("b", NOW_MS + 1)),
            at(1, ("a", NOW_MS + 60_000), ("x", MAX_US // 1000)),
            at(2, ("a", NOW_MS + 120_000), ("b", NOW_MS + 120_001))]


def test_a_year_9999_row_does_not_poison_the_stream() -> None:
    results = run_stream(year_9999_stream(), minute_windows())
    assert [len(r.rejected) for r in results] == [0, 1, 0]
    assert results[1].rejected[0].reason == reasons.IN_FUTURE
    assert [r.rows_aggregated for r in results] == [2, 1, 2]
    assert results[1].watermark_us == (NOW_MS + 60_000) * 1000  # the 9999 row moved nothing
    # without the guard the same row moves the watermark to year 9999, and every later row is late
    unguarded = run_stream(year_9999_stream(), minute_windows(max_future_ms=None))
    assert [r.rows_late_dropped for r in unguarded] == [0, 0, 2]


@pytest.mark.parametrize("kind", ["tumbling", "hopping", "session"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_future_row_changes_nothing_but_the_dead_letter(kind: str, data: st.DataObject) -> None:
    """Inserted into any micro-batch of any stream, a row too far ahead of
    that micro-batch's processing time is one more rejected row, and every
    emission, late row and watermark stays as it was."""
    shape = {"tumbling": {"duration_ms": 10}, "hopping": {"duration_ms": 30, "hop_ms": 10},
             "session": {"gap_ms": 4}}[kind]
    window = Window(kind=kind, event_time_column="ts", event_time_unit="ms", group_by=("k",), aggregations=AGGS,
                    lateness_ms=3, max_future_ms=1000, **shape)
    batches = data.draw(streams(disorder_ms=40))
    if not batches:
        return
    at = data.draw(st.integers(0, len(batches) - 1))
    ahead = data.draw(st.integers(1001, 10**9)) + batches[at].batch_ms
    poisoned = [replace(b, rows=[*b.rows, ("a", {"k": "a", "ts": ahead, "v": 5})]) if i == at else b
                for i, b in enumerate(batches)]
    clean, dirty = run_stream(batches, window), run_stream(poisoned, window)
    for i, (a, b) in enumerate(zip(clean, dirty, strict=True)):
        assert (a.emitted, a.late, a.rows_late_dropped, a.watermark_us) == \
            (b.emitted, b.late, b.rows_late_dropped, b.watermark_us)
        assert [d.reason for d in b.rejected] == [d.reason for d in a.rejected] + ([reasons.IN_FUTURE] if i == at else [])


def test_a_punctuation_from_the_future_closes_nothing() -> None:
    window = minute_windows(punctuation=Punctuation("punct"))

    def punct(row: Any) -> bool:
        return bool(row.get("punct"))
    batches = [MicroBatch([("s", {"k": "a", "ts": NOW_MS, "v": 1}), ("s", {"ts": MAX_US // 1000, "punct": True})],
                          NOW_MS),
               MicroBatch([("s", {"k": "a", "ts": NOW_MS + 10, "v": 2})], NOW_MS + 1000)]
    results = run_stream(batches, window, punct)
    assert [r.watermark_us for r in results] == [NOW_MS * 1000, (NOW_MS + 10) * 1000]
    assert [r.rows_aggregated for r in results] == [1, 1] and not any(r.emitted for r in results)
