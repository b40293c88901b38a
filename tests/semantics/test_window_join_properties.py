"""Properties of the window-join oracle that follow from DolphinDB's rules."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from wid.semantics.ranks import sql_sort_key
from wid.semantics.window_join import window_join
from wid.spec import Aggregation
from wid.spec.join import ColumnMetric, WindowJoin

COUNT = Aggregation("count", as_="n")


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    times = st.integers(-10, 10)
    keys = st.sampled_from(["a", "b"])
    left = [{"t": draw(times), "k": draw(keys), "id": i} for i in range(draw(st.integers(0, 12)))]
    right = [{"t": draw(times), "k": draw(keys), "v": draw(st.integers(-5, 5))} for _ in range(draw(st.integers(0, 15)))]
    return left, right


def spec(window: tuple[int, int], *metrics: Any) -> WindowJoin:
    return WindowJoin(window=window, metrics=metrics or (COUNT,), matching_column="k", time_column="t", time_unit="ms")


STANDARD = st.tuples(st.integers(-4, 4), st.integers(0, 4)).map(lambda w: (w[0], w[0] + w[1])).filter(
    lambda w: w != (0, 0))  # (0, 0) is the special window
WINDOWS = st.one_of(st.just((0, 0)), STANDARD)


def canonical(rows: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(sql_sort_key(tuple(v) if isinstance(v, list) else v) for v in r.values()) for r in rows)


@settings(max_examples=300, deadline=None)
@given(tables(), WINDOWS, st.randoms())
def test_result_does_not_depend_on_arrival_order(data: Any, window: tuple[int, int], rnd: random.Random) -> None:
    left, right = data
    join = spec(window, COUNT, Aggregation("sum", "v", as_="s"), Aggregation("last", "v", as_="last"))
    before = window_join(left, right, join).rows
    rnd.shuffle(left)
    rnd.shuffle(right)
    assert canonical(window_join(left, right, join, left_columns=["t", "k", "id"]).rows) == canonical(before)


@settings(max_examples=300, deadline=None)
@given(tables())
def test_special_window_gives_each_earlier_right_row_to_exactly_one_left_row(data: Any) -> None:
    """Extents [t_prev, t) tile the time before a key's last left time."""
    left, right = data
    out = window_join(left, right, spec((0, 0), ColumnMetric("v", as_="vs"), COUNT)).rows
    for key in ("a", "b"):
        last = max((r["t"] for r in left if r["k"] == key), default=None)
        want = sorted(r["v"] for r in right if r["k"] == key and last is not None and r["t"] < last)
        assert sorted(v for r in out if r["k"] == key for v in r["vs"]) == want
        assert sum(r["n"] for r in out if r["k"] == key) == len(want)


@settings(max_examples=300, deadline=None)
@given(tables(), STANDARD, st.integers(1, 3))
def test_a_wider_window_holds_at_least_as_many_rows(data: Any, window: tuple[int, int], grow: int) -> None:
    left, right = data
    narrow = window_join(left, right, spec(window)).rows
    wide = window_join(left, right, spec((window[0] - grow, window[1] + grow))).rows
    assert len(narrow) == len(wide) == len(left)
    assert all(n["n"] <= w["n"] for n, w in zip(narrow, wide, strict=True))


@settings(max_examples=300, deadline=None)
@given(tables(), STANDARD)
def test_a_column_metric_gives_one_row_per_matching_right_row(data: Any, window: tuple[int, int]) -> None:
    left, right = data
    counts = window_join(left, right, spec(window)).rows
    rows = window_join(left, right, spec(window, ColumnMetric("v"), COUNT)).rows
    assert len(rows) == sum(max(r["n"], 1) for r in counts)
    assert all(r["v"] is None for r in rows if r["n"] == 0)
