"""Bad rows go to the dead letter with a reason; bad configs are refused
naming the field; caps fail loudly with the exact message."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

import pytest
from pyspark.sql import functions as F

import wid
from wid.errors import ConfigError, StateCapError
from wid.semantics import reasons
from wid.spark.compile import compile_window
from wid.spark.errors import translate
from wid.spec import Aggregation, Window

N = (Aggregation("count", as_="n"),)


def test_unparseable_and_null_event_times_and_null_keys(spark: Any) -> None:
    df = spark.createDataFrame([("2024-05-01T10:00:00Z", "a"), ("not a time", "a"), (None, "b"),
                                ("2024-05-01T10:00:30Z", None)], "t string, k string")
    w = Window(kind="tumbling", duration_ms=60_000, event_time_column="t", group_by=["k"], aggregations=N)
    compiled = compile_window(df, w)
    result = compiled.result
    dead = {(r.reason, json.loads(r.row_json)["t"]) for r in result.dead_letter.collect()}
    assert dead == {(reasons.UNPARSEABLE_EVENT_TIME, "not a time"), (reasons.NULL_EVENT_TIME, None),
                    (reasons.null_key("k"), "2024-05-01T10:00:30Z")}
    assert [(r.k, r.n) for r in result.output.collect()] == [("a", 1)]
    counts = {r[0]: r[1] for r in compiled.prepared.groupBy("_wid_reason").count().collect()}
    assert sum(counts.values()) == 4 and counts[None] == 1  # rows_in = rejected + aggregated


def test_epoch_millis_and_string_millis(spark: Any) -> None:
    df = spark.createDataFrame([(60_000, "1"), (119_999, "x")], "ms long, s string")
    w = Window(kind="tumbling", duration_ms=60_000, event_time_column="ms", event_time_unit="ms", aggregations=N)
    assert [r.n for r in wid.aggregate(df, w).collect()] == [2]
    ws = Window(kind="tumbling", duration_ms=60_000, event_time_column="s", event_time_unit="ms", aggregations=N)
    assert [r.reason for r in wid.window_result(df, ws).dead_letter.collect()] == [reasons.UNPARSEABLE_EVENT_TIME]


NS_IN_MS = 1_700_000_000_123_456_789  # a nanosecond timestamp in a millisecond column: ts * 1000 overflows a long


@pytest.mark.parametrize("kind", ["tumbling", "session", "rolling"])
def test_event_times_out_of_range_or_in_the_future_are_dead_letters(spark: Any, kind: str) -> None:
    from tests.spark.compare import check_against_oracle
    from wid.semantics.timeunits import MAX_US, MIN_US

    now_ms = time.time_ns() // 1_000_000
    times = [now_ms, now_ms - 5_000, NS_IN_MS, MAX_US // 1000 + 1, MIN_US // 1000 - 1,  # out of range
             MAX_US // 1000, now_ms + 2 * 86_400_000,  # in range, more than a day ahead: in the future
             now_ms + 3_600_000, None]
    rows = [{"ts": t, "k": "ab"[i % 2], "v": float(i)} for i, t in enumerate(times)]
    shape = {"tumbling": {"duration_ms": 60_000}, "session": {"gap_ms": 60_000}, "rolling": {"duration_ms": 60_000}}
    w = Window(kind=kind, event_time_column="ts", event_time_unit="ms", group_by=["k"], **shape[kind],
               aggregations=(Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s")), max_future_ms=86_400_000)
    result = check_against_oracle(spark, rows, "ts long, k string, v double", w)  # runs: no overflow error
    dead = sorted(r.reason for r in result.dead_letter.collect())
    assert dead == sorted([reasons.OUT_OF_RANGE] * 3 + [reasons.IN_FUTURE] * 2 + [reasons.NULL_EVENT_TIME])
    unguarded = replace(w, max_future_ms=None)
    check_against_oracle(spark, rows, "ts long, k string, v double", unguarded)


def test_out_of_range_text_decimal_and_timestamp_event_times(spark: Any) -> None:
    from datetime import datetime

    df = spark.createDataFrame([("1700000000123456789", 1.7e21, datetime(2024, 5, 1)),
                                ("60000", 60_000.0, datetime(9999, 12, 31, 23, 59))],
                               "s string, d double, t timestamp").selectExpr("s", "CAST(d AS DECIMAL(38, 0)) AS d", "t")
    for col, unit, want in (("s", "ms", [reasons.OUT_OF_RANGE]), ("d", "ms", [reasons.OUT_OF_RANGE]),
                            ("t", "timestamp", [reasons.IN_FUTURE])):
        w = Window(kind="tumbling", duration_ms=60_000, event_time_column=col, event_time_unit=unit, aggregations=N,
                   max_future_ms=86_400_000)
        result = wid.window_result(df, w)
        assert [r.reason for r in result.dead_letter.collect()] == want
        assert [r.n for r in result.output.collect()] == [1]


@pytest.mark.parametrize(("kw", "field"), [
    ({"group_by": ["nope"]}, "group_by"),
    ({"event_time_column": "missing"}, "event_time_column"),
    ({"aggregations": (Aggregation("sum", "zz", as_="s"),)}, "aggregations[0].column"),
    ({"event_time_column": "k"}, "event_time_unit"),
])
def test_missing_or_mistyped_columns_name_the_field(spark: Any, kw: dict[str, Any], field: str) -> None:
    df = spark.createDataFrame([(1, 2)], "t long, k long")
    base: dict[str, Any] = {"kind": "tumbling", "duration_ms": 1000, "event_time_column": "t",
                            "event_time_unit": "us", "aggregations": N}
    base.update(kw)
    if field == "event_time_unit":
        base["event_time_unit"] = "timestamp"
    with pytest.raises(ConfigError) as err:
        wid.aggregate(df, Window(**base))
    assert err.value.field == field


def test_rolling_alias_colliding_with_input_is_refused(spark: Any) -> None:
    df = spark.createDataFrame([(1, 2)], "t long, n long")
    w = Window(kind="rolling", duration_ms=1000, event_time_column="t", event_time_unit="us", aggregations=N)
    with pytest.raises(ConfigError) as err:
        wid.aggregate(df, w)
    assert err.value.field == "aggregations[0].as"


def test_group_cap_fails_with_the_design_message(spark: Any) -> None:
    df = spark.createDataFrame([(0, "a"), (1, "b"), (2, "c")], "t long, k string")
    w = Window(kind="tumbling", duration_ms=60_000, event_time_column="t", event_time_unit="ms", group_by=["k"],
               aggregations=N, max_groups_per_window=2)
    with pytest.raises(Exception) as err:
        wid.aggregate(df, w, pipeline="events-clean").collect()
    cap = translate(err.value)
    assert isinstance(cap, StateCapError)
    assert str(cap) == ("window state cap hit: max_groups_per_window=2 reached on window "
                        "[1970-01-01T00:00:00Z, 1970-01-01T00:01:00Z) for pipeline events-clean")


def test_exact_distinct_cap_fails_loudly(spark: Any) -> None:
    df = spark.range(5).select(F.lit(0).alias("t"), F.col("id").alias("v"))
    agg = Aggregation("count_distinct", "v", as_="d", mode="exact", max_distinct_values_per_group=4)
    w = Window(kind="tumbling", duration_ms=60_000, event_time_column="t", event_time_unit="ms", aggregations=(agg,))
    with pytest.raises(Exception) as err:
        wid.aggregate(df, w, pipeline="p").collect()
    cap = translate(err.value)
    assert isinstance(cap, StateCapError)
    assert "max_distinct_values_per_group=4 reached by aggregation 'd'" in str(cap)
    assert "[1970-01-01T00:00:00Z, 1970-01-01T00:01:00Z) for pipeline p" in str(cap)
    ok = Window(kind="tumbling", duration_ms=60_000, event_time_column="t", event_time_unit="ms",
                aggregations=(Aggregation("count_distinct", "v", as_="d", mode="exact", max_distinct_values_per_group=5),))
    assert [r.d for r in wid.aggregate(df, ok).collect()] == [5]


def test_punctuations_are_never_aggregated(spark: Any) -> None:
    from tests.spark.compare import assert_same, collect
    from wid.semantics import evaluate
    from wid.spec import Punctuation

    rows = [{"t": 1_000, "seg": "s1", "speed": 50.0, "kind": "data"},
            {"t": 2_000, "seg": "s1", "speed": 70.0, "kind": "data"},
            {"t": 59_000, "seg": "s1", "speed": None, "kind": "punct"},
            {"t": 61_000, "seg": "s2", "speed": 30.0, "kind": "data"}]
    df = spark.createDataFrame([tuple(r.values()) for r in rows], "t long, seg string, speed double, kind string")
    aggs = (Aggregation("count", as_="n"), Aggregation("min", "speed", as_="lo"))
    w = Window(kind="hopping", duration_ms=120_000, hop_ms=60_000, event_time_column="t", event_time_unit="ms",
               group_by=["seg"], aggregations=aggs, punctuation=Punctuation("kind = 'punct'", scope=("seg",)))
    result = compile_window(df, w)
    data = [r for r in rows if r["kind"] != "punct"]
    assert_same(collect(result.result.output, w), evaluate(data, w).rows, w)
    assert result.punctuations is not None and result.punctuations.count() == 1
    assert result.prepared.count() == 3  # rows_in counts data rows only


def test_input_joined_from_two_files(spark: Any, tmp_path: Any, capfd: Any) -> None:
    """A join of two file sources has no single input file per row: wid still
    runs (Spark refuses ``input_file_name()`` over such a plan), its dead
    letter says no file, and nothing is logged of the refusal wid handles,
    while rows from one file name it."""
    spark.createDataFrame([(1, 60_000), (2, None)], "id int, ms long").write.parquet(str(tmp_path / "l"))
    spark.createDataFrame([(1, "a"), (2, "b")], "id int, k string").write.parquet(str(tmp_path / "r"))
    joined = spark.read.parquet(str(tmp_path / "l")).join(spark.read.parquet(str(tmp_path / "r")), "id")
    w = Window(kind="tumbling", duration_ms=60_000, event_time_column="ms", event_time_unit="ms",
               group_by=["k"], aggregations=N)
    result = wid.window_result(joined, w)
    assert [(r.k, r.n) for r in result.output.collect()] == [("a", 1)]
    assert [(r.reason, r.source_file) for r in result.dead_letter.collect()] == [(reasons.NULL_EVENT_TIME, None)]
    assert "MULTI_SOURCES_UNSUPPORTED" not in capfd.readouterr().err
    single = wid.window_result(spark.read.parquet(str(tmp_path / "l")), replace(w, group_by=()))
    assert [r.source_file.endswith(".parquet") for r in single.dead_letter.collect()] == [True]


def test_a_spark_error_after_a_dead_letter_build_reaches_the_user_as_itself(spark: Any, tmp_path: Any) -> None:
    """Building dead letters over two joined file sources takes wid's quiet
    path for Spark's refusal of ``input_file_name()``; PySpark's own logger
    must still be the one it logs errors with, so a later Spark error with a
    DataFrame context is raised as itself, not as a TypeError."""
    from pyspark.errors import ArithmeticException

    spark.createDataFrame([(1, 60_000)], "id int, ms long").write.parquet(str(tmp_path / "l"))
    spark.createDataFrame([(1, "a")], "id int, k string").write.parquet(str(tmp_path / "r"))
    joined = spark.read.parquet(str(tmp_path / "l")).join(spark.read.parquet(str(tmp_path / "r")), "id")
    w = Window(kind="tumbling", duration_ms=60_000, event_time_column="ms", event_time_unit="ms", group_by=["k"],
               aggregations=N)
    wid.window_result(joined, w).dead_letter.collect()
    with pytest.raises(ArithmeticException, match="DIVIDE_BY_ZERO"):
        spark.range(1).select((F.lit(1) / F.col("id")).alias("x")).collect()


def test_a_plan_printed_in_another_error_is_no_cap_violation() -> None:
    # a batch plan carries the cap message's template (its bounds are %s) for raise_error: an error
    # that prints the plan must not read as the cap being hit
    from wid.spark.group_cap import group_cap_message

    template = group_cap_message(3, "p")
    plan = f"[INVALID_NON_DETERMINISTIC_EXPRESSIONS] ... raise_error(format_string({template}, ...))\n+- Project"
    assert translate(Exception(plan)) is None
    hit = translate(Exception("Query terminated: " + template % ("2024-01-01T00:00:00Z", "2024-01-01T00:01:00Z")))
    assert isinstance(hit, StateCapError) and str(hit).endswith("for pipeline p")


def test_the_output_s_plan_names_no_input_files(spark: Any, tmp_path: Any, capsys: Any) -> None:
    """`window_result`'s output reads no file names (Spark refuses them over
    a join, which costs the driver the refusal); its dead letters, planned
    when asked for, name them."""
    spark.createDataFrame([(1, 60_000), (2, None)], "id int, ms long").write.parquet(str(tmp_path / "l"))
    w = Window(kind="tumbling", duration_ms=60_000, event_time_column="ms", event_time_unit="ms", aggregations=N)
    result = wid.window_result(spark.read.parquet(str(tmp_path / "l")), w)
    capsys.readouterr()
    result.output.explain(extended=True)
    assert "input_file_name" not in capsys.readouterr().out
    result.dead_letter.explain(extended=True)
    assert "input_file_name" in capsys.readouterr().out


def test_a_batch_keeps_future_rows_as_spark_s_window_does(spark: Any) -> None:
    # point 7 of issue 55: a row dated 2030 went to the dead letter as "event time in the future" in batch, where
    # a table of bookings is normal input and Spark's window() keeps it; the one-day guard is a stream's default
    from datetime import datetime

    df = spark.createDataFrame([("a", datetime(2024, 5, 1, 9, 1)), ("a", datetime(2030, 1, 1, 12, 0)),
                                ("b", datetime(2031, 6, 1, 8, 30))], "k string, ts timestamp")
    w = Window(kind="tumbling", duration="1 hour", event_time_column="ts", group_by=["k"], aggregations=N)
    result = wid.window_result(df, w)
    assert result.dead_letter.count() == 0
    spark_s = df.groupBy(F.window("ts", "1 hour"), "k").count().select("window.start", "window.end", "k", "count")
    assert sorted(result.output.collect()) == sorted(spark_s.collect())
    guarded = wid.window_result(df, replace(w, max_future_ms=86_400_000))  # set, a batch judges it
    assert [r.reason for r in guarded.dead_letter.collect()] == [reasons.IN_FUTURE] * 2
