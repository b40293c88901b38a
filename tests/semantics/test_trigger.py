"""The one trigger policy (`wid.semantics.trigger`): its firing table and
late rule as docs/semantics.md#completeness states them, the same on ints
(the stream oracle) and NumPy arrays (the shards), and the checks a stream
needs that `wid validate`, a stream's compilation and `wid explain` share."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from wid import Aggregation, Window
from wid.semantics.trigger import (
    NEVER,
    NOTHING_CLOSED,
    TriggerPolicy,
    late_rows,
    policy_of,
    stream_problems,
)

N = (Aggregation("count", as_="n"),)


@pytest.mark.parametrize(("emit", "allowed"), list(itertools.product(["on_close", "on_update"], [0, 50])))
def test_a_window_fires_as_the_rules_say(emit: str, allowed: int) -> None:
    # docs/semantics.md: a window emits (final) once the closing point passes it; again, corrected, when a
    # reopened window takes a row; on update, a window that took a row while open emits its partial value
    policy = TriggerPolicy(emit, allowed)
    for closed_before, closed_after, touched in itertools.product([False, True], repeat=3):
        if closed_before and not closed_after:
            continue  # closing points never move back
        closes_now = closed_after and not closed_before
        late_firing = closed_after and touched
        partial = touched and not closed_after and emit == "on_update"
        fires, final = policy.fire(closed_before, closed_after, touched)
        assert (fires, final) == (closes_now or late_firing or partial, closed_after), (
            closed_before, closed_after, touched)


@pytest.mark.parametrize(("mode", "first", "last", "closing", "late"), [
    # a hopping row in windows ending at 10 and 30, lateness budget 5 (reopen): windows take rows while C < end + 5
    ("generous", 10, 30, 14, False), ("generous", 10, 30, 15, False), ("generous", 10, 30, 35, True),
    ("consistent", 10, 30, 14, False), ("consistent", 10, 30, 15, True),
    ("generous", 10, NEVER, 10**15, False),  # an unbounded landmark's last window never closes
    ("consistent", 10, 30, NOTHING_CLOSED, False),  # nothing closed: nothing late
])
def test_the_late_rule_judges_the_last_or_the_first_window(mode: str, first: int, last: int, closing: int,
                                                           late: bool) -> None:
    assert TriggerPolicy("on_close", 5, mode).late(first, last, closing) == late


@given(st.lists(st.tuples(st.integers(-10**12, 10**12), st.integers(-10**12, 10**12), st.booleans(), st.booleans()),
                min_size=1, max_size=20),
       st.sampled_from(["on_close", "on_update"]), st.sampled_from([0, 7]), st.sampled_from(["generous", "consistent"]))
def test_ints_and_arrays_decide_alike(cases: list[tuple[int, int, bool, bool]], emit: str, allowed: int,
                                      mode: str) -> None:
    policy = TriggerPolicy(emit, allowed, mode)
    closes = np.array([c for c, *_ in cases], dtype=np.int64)
    closing = np.array([c for _, c, *_ in cases], dtype=np.int64)
    before = np.array([b for *_, b, _ in cases])
    touched = np.array([t for *_, t in cases])
    fires, final = policy.fire(before & (closes <= closing), closes <= closing, touched)
    late = policy.late(closes, closes + 3, closing)
    for i, (c, k, b, t) in enumerate(cases):
        assert (bool(fires[i]), bool(final[i])) == policy.fire(b and c <= k, c <= k, t)
        assert bool(late[i]) == policy.late(c, c + 3, k)
        assert bool(policy.takes(closes, closing)[i]) == policy.takes(c, k)


def test_a_window_s_policy_is_its_emit_reopen_budget_and_late_mode() -> None:
    w = Window(kind="hopping", duration_ms=20, hop_ms=10, event_time_column="ts", aggregations=N, late_data="reopen",
               allowed_lateness_ms=5, emit="on_update", late_mode="consistent")
    assert policy_of(w) == TriggerPolicy("on_update", 5_000, "consistent")
    assert policy_of(Window(kind="tumbling", duration_ms=20, event_time_column="ts", aggregations=N)) == TriggerPolicy()


def test_stream_checks_name_the_field() -> None:
    ranked = Window(kind="count", size_rows=3, order_by="v", event_time_column="ts", aggregations=N)
    assert [f for f, _ in stream_problems(ranked)] == ["order_by"]
    assert stream_problems(Window(kind="count", size_rows=3, order_by="v", rank_by="arrival", event_time_column="ts",
                                  aggregations=N)) == []


def test_only_kinds_whose_rows_can_be_late_say_so() -> None:
    def count(rank_by: str) -> Window:
        return Window(kind="count", size_rows=3, rank_by=rank_by, event_time_column="ts", aggregations=N)
    assert late_rows(count("order")) and not late_rows(count("arrival"))
    assert late_rows(Window(kind="session", gap_ms=5, event_time_column="ts", aggregations=N))
