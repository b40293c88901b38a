"""The pure aggregators against the definitional values, and the merge laws."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import aggregations
from wid.aggregates import make_aggregator
from wid.semantics.aggregate_values import aggregate_value
from wid.spec import Aggregation

VALUE = st.one_of(st.none(), st.integers(-1000, 1000), st.floats(-1e3, 1e3, allow_nan=False).map(lambda x: round(x, 3)))
ROWS = st.lists(st.fixed_dictionaries({"t": st.integers(0, 20), "v": VALUE, "w": VALUE}), max_size=25)


def tkey(r: dict[str, Any]) -> Any:
    return r["t"]


def close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)
    return bool(a == b)


def fold(agg: Aggregation, rows: list[dict[str, Any]]) -> Any:
    a = make_aggregator(agg, tkey)
    s = a.zero()
    for r in rows:
        s = a.add(s, r)
    return s


@settings(max_examples=400, deadline=None)
@given(aggregations(), ROWS)
def test_add_all_equals_definition(agg: Aggregation, rows: list[dict[str, Any]]) -> None:
    got = make_aggregator(agg, tkey).finish(fold(agg, rows))
    assert close(got, aggregate_value(agg, rows, tkey))


@settings(max_examples=400, deadline=None)
@given(aggregations(), ROWS, st.data())
def test_merge_of_any_split_equals_definition(agg: Aggregation, rows: list[dict[str, Any]], data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(rows)), max_size=4)))
    parts = [rows[a:b] for a, b in zip([0, *cuts], [*cuts, len(rows)], strict=True)]
    a = make_aggregator(agg, tkey)
    state = a.zero()
    for part in parts:
        state = a.merge(state, fold(agg, part))
    assert close(a.finish(state), aggregate_value(agg, rows, tkey))


@settings(max_examples=300, deadline=None)
@given(aggregations(), ROWS, ROWS, ROWS)
def test_merge_is_associative_with_zero_identity(agg: Aggregation, x: list[Any], y: list[Any], z: list[Any]) -> None:
    a = make_aggregator(agg, tkey)
    sx, sy, sz = fold(agg, x), fold(agg, y), fold(agg, z)
    left = a.finish(a.merge(a.merge(sx, sy), sz))
    right = a.finish(a.merge(sx, a.merge(sy, sz)))
    assert close(left, right)
    assert close(a.finish(a.merge(a.zero(), sx)), a.finish(sx))


def test_variance_is_stable_for_large_means() -> None:
    # Welford/Chan: values near 1e9 with spread 1 keep about 9 digits, where
    # naive power sums (sum(x*x) - sum(x)**2/n) lose every digit.
    rows = [{"t": i, "v": 1e9 + (i % 2), "w": None} for i in range(1000)]
    agg = Aggregation("var", "v", as_="var")
    exact = 0.25025025025025025
    assert math.isclose(make_aggregator(agg, tkey).finish(fold(agg, rows)), exact, rel_tol=1e-6)
    xs = [r["v"] for r in rows]
    naive = (sum(x * x for x in xs) - sum(xs) ** 2 / len(xs)) / (len(xs) - 1)
    assert not math.isclose(naive, exact, rel_tol=1e-3)
