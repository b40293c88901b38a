"""Properties of the oracle: order independence, accounting, bounds."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.spark.test_differential import datasets
from tests.strategies import windows
from wid.semantics import evaluate
from wid.spec import Window


@settings(max_examples=150, deadline=None)
@given(windows(), datasets(), st.randoms(use_true_random=False))
def test_output_does_not_depend_on_row_order(window: Window, rows: list[dict[str, Any]], rnd: Any) -> None:
    shuffled = list(rows)
    rnd.shuffle(shuffled)
    a, b = evaluate(rows, window), evaluate(shuffled, window)
    assert a.rows == b.rows
    assert sorted(d.reason for d in a.dead_letter) == sorted(d.reason for d in b.dead_letter)


@settings(max_examples=150, deadline=None)
@given(windows(kinds=("tumbling", "hopping", "session", "landmark")), datasets())
def test_rows_lie_in_their_windows_and_counts_add_up(window: Window, rows: list[dict[str, Any]]) -> None:
    out = evaluate(rows, window)
    assert out.rows_in == out.rows_rejected + out.rows_aggregated == len(rows)
    for r in out.rows:
        assert r["window_start"] < r["window_end"]
    if window.kind == "tumbling":
        counted = [a.as_ for a in window.aggregations if a.agg == "count" and a.column is None]
        for alias in counted:
            # tumbling windows partition time: every good row is counted exactly once
            assert sum(r[alias] for r in out.rows) == out.rows_aggregated
