"""Window join: bad rows go to the dead letter with a reason and their side,
every row is accounted for, and bad settings are refused naming the field."""

from __future__ import annotations

import json
from typing import Any

import pytest

import wid
from wid.errors import ConfigError
from wid.semantics import reasons
from wid.spark.api import join_result
from wid.spark.compile import compile_join
from wid.spec import Aggregation
from wid.spec.join import ColumnMetric, WindowJoin

SUM = (Aggregation("sum", "v", as_="s"),)


def test_bad_rows_of_both_sides_go_to_the_dead_letter(spark: Any) -> None:
    left = spark.createDataFrame([("2024-05-01T10:00:00Z", "a", 1), ("not a time", "a", 2), (None, "a", 3),
                                  ("2024-05-01T10:00:01Z", None, 4)], "t string, k string, id int")
    right = spark.createDataFrame([("2024-05-01T09:59:59Z", "a", 1.5), (None, "a", 9.0), ("2024-05-01T10:00:00Z", None, 9.0)],
                                  "rt string, rk string, v double")
    join = WindowJoin(window=(-1000, 0), metrics=SUM, matching_column=(["k"], ["rk"]), time_column=("t", "rt"))
    compiled = compile_join(left, right, join, left_source="trades", right_source="quotes")
    result = compiled.result
    dead = {(r.source, r.reason, json.dumps(json.loads(r.row_json), sort_keys=True)) for r in result.dead_letter.collect()}
    assert {(s, reason) for s, reason, _ in dead} == {
        ("trades", reasons.UNPARSEABLE_EVENT_TIME), ("trades", reasons.NULL_EVENT_TIME), ("trades", reasons.null_key("k")),
        ("quotes", reasons.NULL_EVENT_TIME), ("quotes", reasons.null_key("rk"))}
    assert ("trades", reasons.UNPARSEABLE_EVENT_TIME, '{"id": 2, "k": "a", "t": "not a time"}') in dead
    assert [(r.id, r.s) for r in result.output.collect()] == [(1, 1.5)]
    counts = {r[0]: r[1] for r in compiled.prepared.groupBy("_wid_reason").count().collect()}
    assert sum(counts.values()) == 7 == len(dead) + counts[None]  # rows_in = rejected + joined


def test_a_time_out_of_range_is_a_dead_letter_not_a_failure(spark: Any) -> None:
    from wid.semantics.window_join import window_join

    left_rows = [{"t": 1_000, "k": "a", "id": 1}, {"t": 1_700_000_000_123_456_789, "k": "a", "id": 2}]
    right_rows = [{"rt": 900, "rk": "a", "v": 1.5}, {"rt": -10**17, "rk": "a", "v": 9.0}]
    left = spark.createDataFrame([tuple(r.values()) for r in left_rows], "t long, k string, id int")
    right = spark.createDataFrame([tuple(r.values()) for r in right_rows], "rt long, rk string, v double")
    join = WindowJoin(window=(-1000, 0), metrics=SUM, matching_column=(["k"], ["rk"]), time_column=("t", "rt"),
                      time_unit="ms")
    result = compile_join(left, right, join, left_source="left", right_source="right").result
    oracle = window_join(left_rows, right_rows, join)
    assert sorted((r.source, r.reason) for r in result.dead_letter.collect()) == \
        sorted((d.source, d.reason) for d in oracle.dead_letter) == \
        [("left", reasons.OUT_OF_RANGE), ("right", reasons.OUT_OF_RANGE)]
    assert [(r.id, r.s) for r in result.output.collect()] == [(r["id"], r["s"]) for r in oracle.rows]


def frames(spark: Any) -> tuple[Any, Any]:
    left = spark.createDataFrame([(1, "a", 2.0)], "t long, k string, price double")
    right = spark.createDataFrame([(1, "a", 3.0, "x", [1])], "t long, k string, v double, label string, arr array<int>")
    return left, right


@pytest.mark.parametrize(("kw", "field"), [
    ({"matching_column": (["k"], ["nope"])}, "matching_column[1]"),
    ({"time_column": ("nope", "t")}, "time_column[0]"),
    ({"metrics": (Aggregation("sum", "price", as_="s"),)}, "metrics[0].column"),  # a left column
    ({"metrics": (Aggregation("sum", "v", as_="price"),)}, "metrics[0].as"),  # collides with a left column
    ({"null_fill": {"s": "zero"}}, "null_fill.s"),
    ({"null_fill": {"nope": 1}}, "null_fill.nope"),
    ({"time_unit": "timestamp"}, "time_unit"),
    ({"metrics": (Aggregation("min", "label", as_="m"), Aggregation("avg", "label", as_="a"))}, "metrics[1].column"),
    ({"metrics": (Aggregation("sum", "v", as_="s"), Aggregation("max", "arr", as_="m"))}, "metrics[1].column"),
])
def test_bad_settings_name_the_field(spark: Any, kw: dict[str, Any], field: str) -> None:
    base: dict[str, Any] = {"window": (-1, 1), "metrics": SUM, "matching_column": "k", "time_column": "t",
                            "time_unit": "ms"}
    base.update(kw)
    with pytest.raises(ConfigError) as err:
        join_result(*frames(spark), WindowJoin(**base)).output.collect()
    assert err.value.field == field


def test_null_fill_fills_left_columns_and_metrics(spark: Any) -> None:
    left = spark.createDataFrame([(10, "a", None), (20, "b", 1.0)], "t long, k string, price double")
    right = spark.createDataFrame([(10, "a", None, "x")], "t long, k string, v double, label string")
    out = wid.window_join(left, right, window=(0, 0), matching_column="k", time_column="t", time_unit="ms",
                          metrics=["label", Aggregation("sum", "v", as_="s"), Aggregation("count", as_="n")],
                          null_fill={"price": -1.0, "s": 0.0})
    assert sorted(tuple(r) for r in out.collect()) == [(10, "a", -1.0, [], 0.0, 0), (20, "b", 1.0, [], 0.0, 0)]


def test_system_time_in_batch_stamps_every_row_at_once(spark: Any) -> None:
    """In batch every row arrives at the same instant: a window holding 0
    holds every right row of the key, one not holding 0 holds none."""
    left = spark.createDataFrame([(1, "a"), (2, "b")], "id int, k string")
    right = spark.createDataFrame([("a", 1.0), ("a", 2.0), ("c", 5.0)], "k string, v double")
    metrics = (Aggregation("sum", "v", as_="s"), ColumnMetric("v", as_="each"))
    around = join_result(left, right, WindowJoin(window=(-5, 5), metrics=metrics, matching_column="k",
                                                 use_system_time=True)).output
    assert around.columns == ["system_time", "k", "id", "s", "each"]
    assert sorted((r.id, r.s, r.each) for r in around.collect()) == [(1, 3.0, 1.0), (1, 3.0, 2.0), (2, None, None)]
    assert all(r.system_time is not None for r in around.collect())
    after = join_result(left, right, WindowJoin(window=(1, 5), metrics=metrics[:1], matching_column="k",
                                                use_system_time=True)).output
    assert sorted((r.id, r.s) for r in after.collect()) == [(1, None), (2, None)]
