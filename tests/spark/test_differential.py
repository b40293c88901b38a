"""The Spark batch engine against the oracle, on generated data with nulls,
ties, negative times, bad rows and empty groups, for every kind and every
aggregation."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.spark.compare import check_against_oracle
from tests.strategies import windows
from wid.spark import panes
from wid.spec import Aggregation, Window
from wid.spec.catalog import AGGREGATIONS

SCHEMA = "id long, ts long, k1 string, k2 int, v double, w int, gap long"
S = 1_000_000


@st.composite
def datasets(draw: st.DrawFn, max_rows: int = 40) -> list[dict[str, Any]]:
    """Rows with few distinct times (ties), negative times, null keys and
    values, and occasionally a null event time or a bad session gap."""
    n = draw(st.integers(0, max_rows))
    times = draw(st.lists(st.integers(-15, 25), min_size=1, max_size=12))
    out = []
    for i in range(n):
        out.append({
            "id": i,
            "ts": draw(st.one_of(st.sampled_from(times).map(lambda t: t * S // 2),
                                 st.integers(-12 * S, 12 * S), st.just(None) if i % 9 == 8 else st.nothing())),
            "k1": draw(st.sampled_from(["a", "b", "c", None] if i % 7 == 6 else ["a", "b", "c"])),
            "k2": draw(st.sampled_from([1, 2])),
            "v": draw(st.one_of(st.none(), st.sampled_from([-2.5, 0.0, 1.0, 3.25, 7.0]), st.floats(-100, 100).map(lambda x: round(x, 2)))),
            "w": draw(st.one_of(st.none(), st.integers(-3, 9))),
            "gap": draw(st.one_of(st.integers(1, 4).map(lambda g: g * 1000), st.sampled_from([None, 0, -1000]) if i % 11 == 10 else st.nothing())),
        })
    return out


# Each example runs Spark jobs; shrinking would take minutes, so failures are
# reported as generated (Hypothesis prints the falsifying example).
NO_SHRINK = [Phase.explicit, Phase.reuse, Phase.generate]
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), phases=NO_SHRINK)


# Hopping, count, landmark and session windows merge panes either vectorised
# (Arrow) or inside Spark; rolling windows run as sorted prefix sums (Arrow)
# or Spark's range frame; both are checked, and time windows' fused pass too.
KINDS = [("tumbling", "arrow"), ("hopping", "fused"), ("landmark", "fused"),
         *[(k, m) for k in ("hopping", "count", "landmark", "rolling", "session") for m in ("arrow", "spark")]]


@pytest.fixture
def pane_merge(spark: Any, request: pytest.FixtureRequest) -> Any:
    spark.conf.set("spark.wid.paneMerge", request.param)
    yield request.param
    spark.conf.unset("spark.wid.paneMerge")


@pytest.mark.parametrize(("kind", "pane_merge"), KINDS, indirect=["pane_merge"])
@SETTINGS
@given(data=st.data())
def test_spark_equals_oracle(spark: Any, kind: str, pane_merge: str, data: st.DataObject) -> None:
    window = data.draw(windows(kinds=(kind,), n_aggs=4))
    rows = data.draw(datasets())
    check_against_oracle(spark, rows, SCHEMA, window)


def all_aggregations(holistic: bool) -> tuple[Aggregation, ...]:
    out = []
    for name, shape in AGGREGATIONS.items():
        if shape.holistic != holistic and name != "count_distinct":
            continue
        two = 2 in shape.columns
        kw: dict[str, Any] = {"percent": 75.0} if shape.percent else {}
        if name == "count_distinct":
            kw = {"mode": "exact", "max_distinct_values_per_group": 1000} if holistic else {}
        out.append(Aggregation(name, column="v", column2="w" if two else None, as_=f"{name}_v", **kw))
        if name in ("count", "sum", "min", "max", "first", "last", "count_distinct"):
            out.append(Aggregation(name, column="w", as_=f"{name}_w", **kw))
    out.append(Aggregation("count", as_="rows"))
    return tuple(out)


PARAMS = {
    "tumbling": {"duration_ms": 3000, "origin_ms": 500},
    "hopping": {"duration_ms": 6000, "hop_ms": 1500},
    "session": {"gap_column": "gap"},
    "count": {"size_rows": 5, "hop_rows": 2, "partition_by": ("k1",), "group_by": ("k2",)},
    "rolling": {"duration_ms": 4000, "every_rows": 2},
    "landmark": {"hop_ms": 2000, "landmark_ms": -4000, "max_duration_ms": 8000},
}


@pytest.mark.parametrize("holistic", [False, True])
@pytest.mark.parametrize(("kind", "pane_merge"), KINDS, indirect=["pane_merge"])
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), phases=NO_SHRINK)
@given(rows=datasets(max_rows=60))
def test_every_aggregation_on_every_kind(spark: Any, kind: str, pane_merge: str, holistic: bool,
                                         rows: list[dict[str, Any]]) -> None:
    params = dict(PARAMS[kind])
    params.setdefault("group_by", ("k1",))
    window = Window(kind=kind, event_time_column="ts", event_time_unit="us",
                    aggregations=all_aggregations(holistic), **params)
    check_against_oracle(spark, rows, SCHEMA, window)


@pytest.mark.parametrize("holistic", [False, True])
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), phases=NO_SHRINK)
@given(rows=datasets(max_rows=60), size=st.integers(2, 6), partition=st.sampled_from([(), ("k1",), ("k1", "k2")]),
       order_by=st.sampled_from([None, "w"]))
def test_count_windows_hopping_one_row_are_row_frames(spark: Any, holistic: bool, rows: list[dict[str, Any]],
                                                      size: int, partition: tuple[str, ...], order_by: str | None) -> None:
    """Row frames in event-time order (extents from offsets) and in another order."""
    from wid.spark.count_windows import ROW_FRAME

    window = Window(kind="count", size_rows=size, hop_rows=1, partition_by=partition, event_time_column="ts",
                    event_time_unit="us", order_by=order_by, aggregations=all_aggregations(holistic))
    assert check_against_oracle(spark, rows, SCHEMA, window).explain.form == ROW_FRAME


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), phases=NO_SHRINK)
@given(rows=datasets(max_rows=60), size=st.integers(2, 6), column=st.sampled_from(["v", "w", "id"]))
def test_row_frames_with_a_tie_breaker_take_first_and_last_in_frame_order(spark: Any, rows: list[dict[str, Any]],
                                                                       size: int, column: str) -> None:
    """Event-time order with a tie-breaker, every first and last over one
    column (nullable, or the tie-breaker itself): the frame's own order
    gives them. Beside them, aggregations whose value reads a field twice
    (avg, var, corr) over the same frame."""
    from wid.spark.count_windows import ROW_FRAME

    aggs = (Aggregation("first", column, as_="f"), Aggregation("last", column, as_="l"),
            Aggregation("avg", "v", as_="a"), Aggregation("var", "w", as_="s2"), Aggregation("corr", "v", column2="w", as_="r"),
            Aggregation("count", as_="n"))
    window = Window(kind="count", size_rows=size, hop_rows=1, partition_by=("k1",), tie_breaker="id",
                    event_time_column="ts", event_time_unit="us", aggregations=aggs)
    assert check_against_oracle(spark, rows, SCHEMA, window).explain.form == ROW_FRAME


@pytest.mark.parametrize("order_by", [None, "w"])
@pytest.mark.parametrize("size", [2, 5])
def test_row_frame_extents_on_distinct_times(spark: Any, size: int, order_by: str | None) -> None:
    """Every row at its own time, in no order: each extent's bounds differ
    from its neighbours', so an extent cut one row off shows."""
    import random

    times = random.Random(size).sample(range(1, 10_000), 30)
    rows = [{"id": i, "ts": t * S, "k1": "ab"[i % 2], "k2": 1, "v": float(i), "w": (i * 7) % 11, "gap": S}
            for i, t in enumerate(times)]
    window = Window(kind="count", size_rows=size, hop_rows=1, partition_by=("k1",), event_time_column="ts",
                    event_time_unit="us", order_by=order_by, aggregations=(Aggregation("sum", "v", as_="s"),))
    check_against_oracle(spark, rows, SCHEMA, window)


NUMPY_KEYS = {"hopping": {"group_by": ("k1", "k2")}, "count": {}, "landmark": {"group_by": ("k2",)}}
NUMPY_MERGE = {("hopping", "arrow"): panes.VECTOR, ("hopping", "fused"): panes.FUSED,
               ("count", "arrow"): panes.FUSED, ("landmark", "arrow"): panes.VECTOR,
               ("landmark", "fused"): panes.FUSED}


@pytest.mark.parametrize(("kind", "pane_merge"), list(NUMPY_MERGE), indirect=["pane_merge"])
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), phases=NO_SHRINK)
@given(rows=datasets(max_rows=60))
def test_numpy_merge_on_every_mergeable_aggregation(spark: Any, kind: str, pane_merge: str,
                                                    rows: list[dict[str, Any]]) -> None:
    # every aggregation with a NumPy merge (all but HLL sketches and the holistic ones) in one
    # window, with string, int and two-column keys: time windows merge Spark's pane partials in
    # NumPy (or, with paneMerge = fused, send rows -> panes -> windows through one fused NumPy
    # pass, as count windows always do)
    aggs = tuple(a for a in all_aggregations(holistic=False) if a.agg != "count_distinct")
    params = {**PARAMS[kind], **NUMPY_KEYS[kind]}
    params.setdefault("group_by", ("k1",))
    window = Window(kind=kind, event_time_column="ts", event_time_unit="us", aggregations=aggs, **params)
    result = check_against_oracle(spark, rows, SCHEMA, window)
    assert result.explain.form.endswith(NUMPY_MERGE[kind, pane_merge])
