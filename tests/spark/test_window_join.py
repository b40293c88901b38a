"""The Spark window join against the oracle, on generated data with tied
times, NULL values, NULL keys and times, several keys and different column
names on the two sides, for every metric and for windows a < 0 < b,
0 <= a <= b, a <= b <= 0 and (0, 0)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fixtures import examples_here
from tests.spark.join_compare import check_join, frame
from wid.spec import Aggregation
from wid.spec.catalog import AGGREGATIONS
from wid.spec.join import JOIN_AGGREGATIONS, ColumnMetric, Metric, WindowJoin

LEFT = "lt long, k1 string, k2 int, price double, id long"
RIGHT = "rt long, s1 string, s2 int, v double, w int"
SAME_LEFT = "t long, k1 string, price double"
SAME_RIGHT = "t long, k1 string, v double, w int"
NO_SHRINK = [Phase.explicit, Phase.reuse, Phase.generate]
SETTINGS = settings(max_examples=examples_here(10), deadline=None, suppress_health_check=list(HealthCheck),
                    phases=NO_SHRINK)

# a < 0 < b, 0 <= a <= b, a <= b <= 0, and DolphinDB's special window (0, 0)
WINDOWS = {
    "around": st.tuples(st.sampled_from([-3000, -1000, -500]), st.sampled_from([500, 1000, 3000])),
    "after": st.sampled_from([(0, 0), (0, 500), (0, 2000), (500, 500), (500, 3000)]).filter(lambda w: w != (0, 0)),
    "before": st.sampled_from([(-500, 0), (-2000, 0), (-500, -500), (-3000, -1000)]),
    "special": st.just((0, 0)),
}


@st.composite
def sides(draw: st.DrawFn, same_names: bool, max_rows: int = 25) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Left and right rows over a few distinct millisecond times (ties),
    with NULL values and, now and then, a NULL time or key."""
    times = draw(st.lists(st.integers(-8, 12).map(lambda t: t * 500), min_size=1, max_size=8))

    def time(i: int) -> Any:
        on_grid = st.sampled_from(times)  # mostly: window bounds are on the grid too, so edges are hit
        return draw(st.one_of(on_grid, on_grid, on_grid, st.integers(-6000, 6000),
                              st.just(None) if i % 9 == 8 else st.nothing()))

    def key(i: int) -> Any:
        return draw(st.sampled_from(["a", "b", None] if i % 7 == 6 else ["a", "b", "c"]))

    value = st.one_of(st.none(), st.sampled_from([-2.5, 0.0, 1.0, 3.25]), st.floats(-100, 100).map(lambda x: round(x, 2)))
    left, right = [], []
    for i in range(draw(st.integers(0, max_rows))):
        row = {"t": time(i), "k1": key(i), "price": draw(value)} if same_names else {
            "lt": time(i), "k1": key(i), "k2": draw(st.sampled_from([1, 2])), "price": draw(value), "id": i}
        left.append(row)
    for i in range(draw(st.integers(0, max_rows))):
        v, w = draw(value), draw(st.one_of(st.none(), st.integers(-3, 9)))
        right.append({"t": time(i), "k1": key(i), "v": v, "w": w} if same_names else {
            "rt": time(i), "s1": key(i), "s2": draw(st.sampled_from([1, 2])), "v": v, "w": w})
    return left, right


def metric(name: str, alias: str, draw: st.DrawFn) -> Metric:
    shape = AGGREGATIONS[name]
    if 2 in shape.columns:
        x, y = draw(st.permutations(["v", "w"]))
        return Aggregation(name, x, column2=y, as_=alias)
    column = draw(st.sampled_from([None, "v", "w"] if name == "count" else ["v", "w"]))
    return Aggregation(name, column, as_=alias, percent=draw(st.sampled_from([0.0, 25.0, 90.0, 100.0]))
                       if shape.percent else None)


@st.composite
def joins(draw: st.DrawFn, shape: str, same_names: bool, every_metric: bool = False) -> WindowJoin:
    names = list(JOIN_AGGREGATIONS) if every_metric else draw(
        st.lists(st.sampled_from(JOIN_AGGREGATIONS), min_size=1, max_size=4))
    metrics: list[Metric] = [metric(n, f"m{i}", draw) for i, n in enumerate(names)]
    if every_metric or draw(st.integers(0, 2)) == 0:
        metrics.insert(draw(st.integers(0, len(metrics))), ColumnMetric(draw(st.sampled_from(["v", "w"])), as_="raw"))
    keys: Any = "k1" if same_names else draw(st.sampled_from([(["k1"], ["s1"]), (["k1", "k2"], ["s1", "s2"])]))
    return WindowJoin(window=draw(WINDOWS[shape]), metrics=tuple(metrics), matching_column=keys,
                      time_column="t" if same_names else ("lt", "rt"), time_unit="ms",
                      null_fill={"price": -1.0} if draw(st.booleans()) else {},
                      sort_by_time=draw(st.booleans()))


@pytest.mark.leg
@pytest.mark.parametrize("shape", list(WINDOWS))
@SETTINGS
@given(data=st.data())
def test_spark_equals_oracle(spark: Any, shape: str, data: st.DataObject) -> None:
    same = data.draw(st.booleans())
    join = data.draw(joins(shape, same))
    left, right = data.draw(sides(same))
    check_join(spark, left, right, (SAME_LEFT, SAME_RIGHT) if same else (LEFT, RIGHT), join)


@pytest.mark.parametrize("shape", list(WINDOWS))
@settings(max_examples=examples_here(3), deadline=None, suppress_health_check=list(HealthCheck),
          phases=NO_SHRINK)
@given(data=st.data())
def test_every_metric_at_once(spark: Any, shape: str, data: st.DataObject) -> None:
    join = data.draw(joins(shape, same_names=False, every_metric=True))
    left, right = data.draw(sides(same_names=False, max_rows=40))
    result, oracle = check_join(spark, left, right, (LEFT, RIGHT), join)
    assert len(join.metrics) == len(JOIN_AGGREGATIONS) + 1


def test_sort_by_time_orders_the_output(spark: Any) -> None:
    left = [{"t": t, "k1": k, "price": 1.0} for t, k in ((5, "b"), (1, "a"), (3, "b"), (1, "b"), (4, "a"))]
    right = [{"t": t, "k1": "b", "v": 2.0, "w": 1} for t in (1, 2, 3)]
    join = WindowJoin(window=(-1, 1), metrics=(Aggregation("count", as_="n"),), matching_column="k1",
                      time_column="t", time_unit="ms", sort_by_time=True)
    from wid.spark.api import join_result

    out = join_result(frame(spark, left, SAME_LEFT), frame(spark, right, SAME_RIGHT), join).output
    assert [(r.t, r.k1, r.n) for r in out.collect()] == [(1, "a", 0), (1, "b", 2), (3, "b", 2), (4, "a", 0), (5, "b", 0)]


def test_documented_examples_and_edges_through_spark(spark: Any) -> None:
    """The oracle's hand-checked examples, run by Spark: inclusive window
    ends, the special window's first and tied left rows, DolphinDB's
    example one (timestamps, null_fill, one row per right row)."""
    from tests.semantics import test_window_join_examples as ex

    left, right = ex.example_one()
    result, _ = check_join(spark, left, right, ("time timestamp, sym string, price double",
                                                 "time timestamp, sym string, val double"), ex.EXAMPLE_ONE)
    assert result.output.count() == 86
    left = [{"t": 10, "k1": "s", "price": 1.0}]
    right = [{"t": t, "k1": "s", "v": 1.0, "w": t} for t in (9, 10, 11, 13, 14)]
    edges = WindowJoin(window=(1, 3), metrics=(Aggregation("count", as_="n"), ColumnMetric("w")),
                       matching_column="k1", time_column="t", time_unit="ms")
    result, _ = check_join(spark, left, right, (SAME_LEFT, SAME_RIGHT), edges)
    assert sorted((r.n, r.w) for r in result.output.collect()) == [(2, 11), (2, 13)]
    ties = [{"t": t, "k1": "x", "price": p} for t, p in ((5, 2.0), (2, 0.0), (5, 1.0), (9, 3.0))]
    right = [{"t": t, "k1": "x", "v": float(t), "w": 1} for t in (3, 4, 5, 8)]
    special = WindowJoin(window=(0, 0), metrics=(Aggregation("count", as_="n"), ColumnMetric("v", as_="vs")),
                         matching_column="k1", time_column="t", time_unit="ms")
    result, _ = check_join(spark, ties, right, (SAME_LEFT, SAME_RIGHT), special)
    assert sorted((r.price, r.n, r.vs) for r in result.output.collect()) == [
        (0.0, 0, []), (1.0, 2, [3.0, 4.0]), (2.0, 0, []), (3.0, 2, [5.0, 8.0])]
