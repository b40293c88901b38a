"""WindowJoin: validation names the field; the [join] TOML block round-trips."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wid.errors import ConfigError
from wid.spec import Aggregation
from wid.spec.facade import pipeline
from wid.spec.join import JOIN_AGGREGATIONS, ColumnMetric, JoinStage, WindowJoin
from wid.spec.pipeline import JoinPipelineSpec, SinkSpec, SourceSpec
from wid.spec.toml_io import dumps_pipeline, loads_pipeline

SUM = Aggregation("sum", "v", as_="s")


def join(**kw: Any) -> WindowJoin:
    base: dict[str, Any] = {"window": (-2000, 2000), "metrics": (SUM,), "matching_column": "sym",
                            "time_column": "time"}
    base.update(kw)
    return WindowJoin(**base)


def test_names_and_sides_are_normalised() -> None:
    j = join(matching_column=(["sym", "venue"], ["s", "v"]), time_column=("lt", "rt"))
    assert (j.left_keys, j.right_keys, j.left_time, j.right_time) == (("sym", "venue"), ("s", "v"), "lt", "rt")
    same = join(matching_column=["sym", "venue"], time_column="t")
    assert same.matching_column == (("sym", "venue"), ("sym", "venue")) and same.time_column == ("t", "t")
    assert join(window=[0, 0]).special and join().window == (-2000, 2000)


@pytest.mark.parametrize(("kw", "field"), [
    ({"window": (5, 1)}, "window"),
    ({"window": (0.5, 1)}, "window"),
    ({"window": 3}, "window"),
    ({"metrics": ()}, "metrics"),
    ({"metrics": SUM}, "metrics"),
    ({"metrics": (Aggregation("count_distinct", "v", as_="d"),)}, "metrics[0].agg"),
    ({"metrics": (SUM, ColumnMetric("v", as_="s"))}, "metrics[1].as"),
    ({"metrics": (ColumnMetric("sym"),)}, "metrics[0].as"),
    ({"matching_column": ()}, "matching_column"),
    ({"matching_column": (["a", "b"], ["c"])}, "matching_column"),
    ({"matching_column": ["a", "a"]}, "matching_column"),
    ({"time_column": None}, "time_column"),
    ({"use_system_time": True}, "time_column"),
    ({"time_unit": "s"}, "time_unit"),
    ({"garbage_size": 0}, "garbage_size"),
    ({"max_delayed_time": -1}, "max_delayed_time"),
    ({"max_delayed_time": 100, "window": (0, 0)}, "max_delayed_time"),
    ({"max_delayed_time": 100, "sort_by_time": True}, "max_delayed_time"),
    ({"null_fill": {"s": [1]}}, "null_fill.s"),
    ({"null_fill": {"v": 0.0}, "window": (0, 0), "metrics": (ColumnMetric("v"),)}, "null_fill.v"),
    ({"sort_by_time": "yes"}, "sort_by_time"),
])
def test_bad_settings_name_the_field(kw: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as err:
        join(**kw)
    assert err.value.field == field


def test_system_time_needs_no_time_column_and_refuses_max_delay() -> None:
    assert join(time_column=None, use_system_time=True).output_time == "system_time"
    with pytest.raises(ConfigError) as err:
        join(time_column=None, use_system_time=True, max_delayed_time=10)
    assert err.value.field == "max_delayed_time"


NAMES = st.sampled_from(["sym", "venue", "k", "time", "t2", "val", "x_y"])


@st.composite
def metrics(draw: st.DrawFn) -> tuple[Any, ...]:
    out: list[Any] = []
    for i in range(draw(st.integers(1, 4))):
        name = draw(st.sampled_from([*JOIN_AGGREGATIONS, "column"]))
        if name == "column":
            out.append(ColumnMetric(draw(st.sampled_from(["v", "w"])), as_=f"m{i}"))
        elif name in ("corr", "covar", "wavg", "wsum", "beta"):
            out.append(Aggregation(name, "v", column2="w", as_=f"m{i}"))
        elif name == "percentile":
            out.append(Aggregation(name, "v", as_=f"m{i}", percent=draw(st.sampled_from([0.0, 33.3, 100.0]))))
        else:
            out.append(Aggregation(name, None if name == "count" and draw(st.booleans()) else "v", as_=f"m{i}"))
    return tuple(out)


@st.composite
def joins(draw: st.DrawFn) -> WindowJoin:
    a = draw(st.integers(-10_000, 10_000))
    window = draw(st.sampled_from([(0, 0), (a, a + draw(st.integers(0, 5000)))]))
    keys = draw(st.lists(st.sampled_from(["sym", "venue", "k"]), min_size=1, max_size=2, unique=True))
    other = draw(st.sampled_from([None, [k + "_r" for k in keys]]))
    system = draw(st.booleans())
    time: Any = None if system else draw(st.sampled_from(["time", ("lt", "rt")]))
    delay = None if system or window == (0, 0) or draw(st.booleans()) else draw(st.integers(1, 10_000))
    return WindowJoin(window=window, metrics=draw(metrics()), matching_column=keys if other is None else (keys, other),
                      time_column=time, use_system_time=system, time_unit=draw(st.sampled_from(["timestamp", "ms", "us"])),
                      max_delayed_time=delay, garbage_size=draw(st.sampled_from([5000, 1, 100_000])),
                      null_fill=draw(st.sampled_from([{}, {"price": -1.5, "flag": True, "s": "none"}]
                                                     + ([] if window == (0, 0) else [{"m0": 0}]))),  # (0, 0): m0 may be a list
                      sort_by_time=delay is None and draw(st.booleans()))


@settings(max_examples=200, deadline=None)
@given(joins(), st.sampled_from([None, "SELECT * FROM flights WHERE dep_delay > 0"]))
def test_join_pipeline_round_trips_through_toml(j: WindowJoin, left_sql: str | None) -> None:
    spec = JoinPipelineSpec(
        name="fw", source=SourceSpec("csv", path="f.csv", name="flights"),
        more_sources=(SourceSpec("parquet", path="w", name="weather"),),
        join=JoinStage(j, left="flights", right="weather", left_sql=left_sql), target=SinkSpec("console"),
        dead_letter=SinkSpec("sqlite", path="d.db", table="dl"), spark={"master": "local[2]"})
    text = dumps_pipeline(spec)
    assert loads_pipeline(text) == spec


JOIN_TOML = """
name = "fw"
[[source]]
name = "flights"
format = "csv"
path = "f.csv"
[[source]]
name = "weather"
format = "csv"
path = "w.csv"
[join]
left = "flights"
right = "weather"
window = [-10800000, 0]
matching_column = [["origin"], ["station"]]
time_column = ["dep_ts", "obs_ts"]
[[join.metrics]]
agg = "avg"
column = "wind_speed"
as = "avg_wind"
[[join.metrics]]
column = "temp"
"""


def test_join_toml_reads_metrics_of_both_kinds() -> None:
    spec = loads_pipeline(JOIN_TOML)
    assert isinstance(spec, JoinPipelineSpec)
    assert spec.join.join.metrics == (Aggregation("avg", "wind_speed", as_="avg_wind"), ColumnMetric("temp", as_="temp"))
    assert spec.join.join.matching_column == (("origin",), ("station",))


@pytest.mark.parametrize(("text", "field"), [
    (JOIN_TOML.replace('right = "weather"', 'right = "wether"'), "join.right"),
    (JOIN_TOML.replace("window = [-10800000, 0]", "window = [0, -1]"), "join.window"),
    (JOIN_TOML.replace('as = "avg_wind"', 'as = "avg_wind"\npercent = 5.0'), "join.metrics[0].percent"),
    (JOIN_TOML.replace("matching_column", "matching_columns"), "join.matching_columns"),
    (JOIN_TOML + "[transform]\nsql = 'SELECT 1'\n", "transform"),
    (JOIN_TOML.replace('path = "w.csv"', 'path = "w"\nstream = true\nschema = "a INT"'), "source.stream"),
])
def test_join_toml_errors_name_the_field(text: str, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        loads_pipeline(text)
    assert err.value.field == field


def test_facade_declares_a_join_pipeline_equal_to_its_toml() -> None:
    stage = loads_pipeline(JOIN_TOML)
    assert isinstance(stage, JoinPipelineSpec)

    @pipeline(name="fw", source=[{"name": "flights", "format": "csv", "path": "f.csv"},
                                 {"name": "weather", "format": "csv", "path": "w.csv"}], join=stage.join)
    def fw() -> None:
        """Departures with their weather."""

    assert fw == stage
    with pytest.raises(ConfigError) as err:
        pipeline(name="x", source={"format": "csv", "path": "f.csv"})
    assert err.value.field == "window"


def test_late_data_reopen_is_refused_naming_the_field() -> None:
    with pytest.raises(ConfigError, match="late_data"):
        WindowJoin(window=(0, 1), metrics=(Aggregation("count", as_="n"),), matching_column="k", time_column="t",
                   late_data="reopen")  # type: ignore[arg-type]


TRIGGER = "10 seconds"  # a Spark processing-time trigger


def test_a_join_pipeline_over_streams_takes_a_stream_table() -> None:
    streams = JOIN_TOML.replace('path = "f.csv"', 'path = "f"\nstream = true\nschema = "a INT"').replace(
        'path = "w.csv"', 'path = "w"\nstream = true\nschema = "a INT"') + f'[stream]\ntrigger = "{TRIGGER}"\n'
    spec = loads_pipeline(streams)
    assert isinstance(spec, JoinPipelineSpec) and spec.stream.trigger == TRIGGER
    assert loads_pipeline(dumps_pipeline(spec)) == spec

    @pipeline(name="fw", source=list(spec.sources), join=spec.join, stream={"trigger": TRIGGER})
    def fw() -> None:
        """Departures with their weather, on streams."""

    assert fw == spec
