"""The streaming window-join oracle: DolphinDB's trigger rules worked by
hand, late rows and memory release, and the property that a stream whose
right rows arrive in time order gives the batch oracle's rows once flushed.
Times are integer milliseconds (``time_unit = "ms"``)."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wid.semantics import reasons
from wid.semantics.ranks import sql_sort_key
from wid.semantics.stream_types import BatchResult, MicroBatch
from wid.semantics.window_join import window_join
from wid.semantics.window_join_stream import run_join_stream
from wid.spec import Aggregation
from wid.spec.join import ColumnMetric, WindowJoin

COUNT, SUM = Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s")


def spec(window: tuple[int, int], *metrics: Any, **kw: Any) -> WindowJoin:
    return WindowJoin(window=window, metrics=metrics or (COUNT, SUM), matching_column="k", time_column="t",
                      time_unit="ms", **kw)


def L(t: int, k: str = "A", **more: Any) -> tuple[str, dict[str, Any]]:
    return "left", {"t": t, "k": k, "id": f"{k}{t}", **more}


def R(t: int, k: str = "A", v: float | None = 1.0) -> tuple[str, dict[str, Any]]:
    return "right", {"t": t, "k": k, "v": v}


def run(join: WindowJoin, *batches: list[tuple[str, dict[str, Any]]]) -> list[BatchResult]:
    out = run_join_stream([MicroBatch(b, i) for i, b in enumerate(batches)], join, left_columns=["t", "k", "id"])
    for r in out:  # the accounting identity, every batch
        assert r.rows_in == r.rows_rejected + r.rows_late_dropped + r.rows_late_dlq + r.rows_aggregated
    return out


def fired(result: BatchResult) -> list[tuple[Any, ...]]:
    return sorted((e.row["id"], e.row["n"], e.row["s"]) for e in result.emitted)


def test_a_window_fires_on_a_right_row_of_its_key_past_its_end() -> None:
    """window (-1000, 1000) of the left row at 10000::

        right A:   9500        11000 (= end: in)   11001 (past: fires, not in)
        window     [9000 ............. 11000]
    """
    out = run(spec((-1000, 1000)), [L(10_000), R(9_500, v=2.0)], [R(11_000, v=3.0)], [R(11_000, "B")],
              [R(11_001, v=100.0)])
    assert [fired(r) for r in out] == [[], [], [], [("A10000", 2, 5.0)]]


def test_another_keys_right_rows_fire_nothing_without_max_delayed_time() -> None:
    out = run(spec((-1000, 1000)), [L(10_000)], [R(50_000, "B")])
    assert fired(out[1]) == []


def test_max_delayed_time_fires_every_key_past_end_plus_the_delay() -> None:
    """end 11000 + max_delayed_time 500: B at 11500 is not past, 11501 is."""
    join = spec((-1000, 1000), max_delayed_time=500)
    out = run(join, [L(10_000), R(10_500, v=4.0)], [R(11_500, "B")], [R(11_501, "B")])
    assert [fired(r) for r in out] == [[], [], [("A10000", 1, 4.0)]]


def test_a_left_row_whose_window_is_already_closed_fires_in_its_batch() -> None:
    out = run(spec((-1000, 0)), [R(9_000, v=1.0), R(9_500, v=2.0), R(20_000, v=7.0)], [L(9_800)])
    assert fired(out[1]) == [("A9800", 2, 3.0)]


def test_end_of_stream_fires_nothing() -> None:
    out = run(spec((-1000, 1000)), [L(10_000), R(10_000)], [L(10_500), R(10_900)])
    assert all(r.emitted == [] for r in out)


def test_special_window_fires_when_a_right_row_at_or_after_t_arrives() -> None:
    """(0, 0): left A at 10 gets (-inf, 10), at 20 gets [10, 20)::

        right A:  5        15       20 (at t = 20: fires [10, 20), not in it)
        left  A:      10       20
    """
    join = spec((0, 0), COUNT, SUM, ColumnMetric("v", as_="vs"))
    out = run(join, [L(10), L(20), R(5, v=1.0)], [R(15, v=2.0)], [R(19, v=3.0)], [R(20, v=9.0)])
    rows = [[(e.row["id"], e.row["n"], e.row["vs"]) for e in r.emitted] for r in out]
    assert rows == [[], [("A10", 1, [1.0])], [], [("A20", 2, [2.0, 3.0])]]


def test_right_rows_behind_every_unfired_window_are_late() -> None:
    """window (0, 1000): R(A) = 10000, so a window not fired ends at or after
    10000 and starts at or after 9000: a right row at 8999 is late."""
    join = spec((0, 1000), late_data="dlq")
    out = run(join, [R(10_000)], [R(8_999), R(9_000), L(9_500)])
    assert [(x.source, x.row["t"], x.reason) for x in out[1].late] == [("right", 8_999, reasons.JOIN_LATE_RIGHT)]
    assert out[1].rows_aggregated == 2


def test_a_right_row_behind_a_fired_window_still_joins_the_unfired_ones() -> None:
    """window (-1000, 1000): left 10000 fires on 11001; the right row at
    10500 arrives after that and joins only the left row at 10800."""
    out = run(spec((-1000, 1000)), [L(10_000), L(10_800)], [R(11_001, v=1.0)], [R(10_500, v=2.0)], [R(20_000)])
    assert fired(out[1]) == [("A10000", 0, None)]
    assert fired(out[3]) == [("A10800", 2, 3.0)]


def test_special_window_refuses_left_rows_out_of_order() -> None:
    out = run(spec((0, 0), late_data="dlq"), [L(10)], [L(5), L(10, id="tie")], [R(30)])
    assert [(x.row["t"], x.reason) for x in out[1].late] == [(5, reasons.JOIN_LATE_LEFT_ORDER)]
    assert sorted((e.row["id"], e.row["n"]) for e in out[2].emitted) == [("A10", 0), ("tie", 0)]


def test_garbage_size_releases_right_rows_no_unfired_window_can_use() -> None:
    """garbage_size 2, window (-100, 0): after R(A) = 1300 a key holding 4
    rows releases those before 1300 - 100 = 1200; a left row at 1150 then
    needs released rows and is late (its window starts at 1050), one at 1300
    is not (it starts at 1200) and fires on R(2000)."""
    join = spec((-100, 0), garbage_size=2)
    out = run(join, [R(1000), R(1100), R(1200), R(1300)], [L(1150), L(1300)], [R(2000)])
    assert out[1].rows_late_dropped == 1
    assert fired(out[2]) == [("A1300", 2, 2.0)]


def test_memory_stays_bounded_on_a_long_stream() -> None:
    from wid.semantics.window_join_stream import JoinStream

    stream = JoinStream(spec((-100, 0), garbage_size=10), ["t", "k", "id"])
    for i in range(300):
        stream.step(MicroBatch([R(i * 10), L(i * 10 + 5)], i))
        assert stream.held() <= 10 + 12 + 2


def test_use_system_time_joins_on_the_micro_batch_timestamp() -> None:
    """Batch i arrives at i ms. Window (-1, 0): the left row of batch 1
    holds the right rows of batches 0 and 1; batch 2's right row fires it,
    and system_time is the firing batch's timestamp (2 ms)."""
    join = WindowJoin(window=(-1, 0), metrics=(COUNT,), matching_column="k", use_system_time=True)
    out = run_join_stream([MicroBatch([R(0)], 0), MicroBatch([("left", {"k": "A", "id": 1}), R(0)], 1),
                           MicroBatch([R(0)], 2)], join)
    assert [e.row for e in out[2].emitted] == [{"system_time": 2000, "k": "A", "id": 1, "n": 2}]


def test_sort_by_time_is_refused_on_a_stream() -> None:
    with pytest.raises(ValueError, match="sort_by_time"):
        run_join_stream([], spec((0, 10), sort_by_time=True))


# -- stream equals batch ----------------------------------------------------------------------
METRICS = (COUNT, SUM, Aggregation("avg", "v", as_="avg"), Aggregation("std", "v", as_="std"),
           Aggregation("first", "v", as_="first"), Aggregation("last", "v", as_="last"),
           Aggregation("max", "v", as_="max"), Aggregation("med", "v", as_="med"),
           Aggregation("percentile", "v", as_="p25", percent=25.0), Aggregation("corr", "v", as_="corr", column2="w"),
           Aggregation("wavg", "v", as_="wavg", column2="w"))
WINDOWS = st.sampled_from([(-3, 2), (0, 4), (1, 3), (-4, -1), (-2, 0), (0, 0)])


def canonical(rows: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple((c, sql_sort_key(tuple(v) if isinstance(v, list) else v)) for c, v in sorted(r.items()))
                   for r in rows)


def stream_of(rng: random.Random, n_left: int, n_right: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Right rows in time order (ties allowed); left rows in time order per
    key, distinct times (so (0, 0) ties never cross batches)."""
    right = sorted(({"t": rng.randrange(40), "k": rng.choice("AB"), "v": rng.choice([None, *range(-3, 6)]),
                     "w": rng.choice([None, 1, 2, 3])} for _ in range(n_right)), key=lambda r: r["t"])
    by_key = {k: [{"t": t, "k": k, "id": f"{k}{t}"} for t in sorted(rng.sample(range(40), n_left), reverse=True)]
              for k in "AB"}
    left = []  # the keys interleaved at random, each key's rows in time order
    while by_key["A"] or by_key["B"]:
        left.append(by_key[rng.choice([k for k in "AB" if by_key[k]])].pop())
    return left, right


def batches_of(rng: random.Random, left: list[dict[str, Any]], right: list[dict[str, Any]]) -> list[MicroBatch]:
    """Both sides interleaved at random (each in its order), cut at random."""
    pending = [("left", r) for r in reversed(left)], [("right", r) for r in reversed(right)]
    rows = []
    while pending[0] or pending[1]:
        side = pending[0] if pending[0] and (not pending[1] or rng.random() < 0.5) else pending[1]
        rows.append(side.pop())
    cuts = sorted(rng.sample(range(len(rows) + 1), min(len(rows) + 1, rng.randrange(1, 8))))
    bounds = [0, *cuts, len(rows)]
    flush = [("right", {"t": 100, "k": k, "v": None, "w": None}) for k in "AB"]
    return [MicroBatch(rows[a:b], i) for i, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False))] + \
        [MicroBatch(flush, len(bounds))]


@settings(max_examples=150, deadline=None)
@given(st.randoms(use_true_random=False), WINDOWS, st.booleans(), st.sampled_from([2, 5000]))
def test_stream_in_order_equals_batch_once_flushed(rng: random.Random, window: tuple[int, int], values: bool,
                                                  garbage: int) -> None:
    metrics = (*METRICS, ColumnMetric("v", as_="vs")) if values else METRICS
    delay = None if window == (0, 0) or rng.random() < 0.5 else rng.randrange(1, 10)
    garbage = 5000 if window == (0, 0) else garbage  # (0, 0): a release before a key's first left row differs
    join = spec(window, *metrics, max_delayed_time=delay, garbage_size=garbage, late_data="dlq")
    left, right = stream_of(rng, rng.randrange(0, 6), rng.randrange(0, 25))
    batches = batches_of(rng, left, right)
    results = run(join, *[list(b.rows) for b in batches])
    late = [r for b in results for r in b.late]
    # right rows come in time order: none is late. A left row arriving after its key's right side
    # moved past its window may find the rows it needs released (garbage_size, DolphinDB's memory
    # release): it is late, and only then; every other left row fires exactly the batch result.
    assert all(r.source == "left" for r in late)
    assert not late or garbage < len(right) + len(batches[-1].rows)
    on_time = [r for r in left if r["id"] not in {x.row["id"] for x in late}]
    streamed = [e.row for r in results for e in r.emitted]
    flush = [r for _, r in batches[-1].rows]
    want = window_join(on_time, right + flush, join, left_columns=["t", "k", "id"]).rows
    assert canonical(streamed) == canonical(want)


@settings(max_examples=100, deadline=None)
@given(st.randoms(use_true_random=False), WINDOWS)
def test_fired_rows_do_not_depend_on_the_order_inside_a_micro_batch(rng: random.Random,
                                                                    window: tuple[int, int]) -> None:
    join = spec(window, *METRICS, garbage_size=3)
    left, right = stream_of(rng, 4, 20)
    batches = batches_of(rng, left, right)
    shuffled = [MicroBatch(rng.sample(list(b.rows), len(b.rows)), b.batch_ms) for b in batches]
    first = run_join_stream(batches, join, left_columns=["t", "k", "id"])
    second = run_join_stream(shuffled, join, left_columns=["t", "k", "id"])
    assert [canonical([e.row for e in r.emitted]) for r in first] == \
        [canonical([e.row for e in r.emitted]) for r in second]
