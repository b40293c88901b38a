"""TOML load and dump: round trip and clear errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from tests.strategies import windows
from wid.errors import ConfigError
from wid.spec import Aggregation, Punctuation, Window
from wid.spec.pipeline import PipelineSpec, SinkSpec, SourceSpec
from wid.spec.toml_io import (
    dumps_pipeline,
    dumps_window,
    load_pipeline,
    loads_pipeline,
    loads_window,
)
from wid.spec.window import STREAMS_DEFAULT


@settings(max_examples=200, deadline=None)
@given(windows())
def test_window_round_trips_through_toml(w: Window) -> None:
    assert loads_window(dumps_window(w)) == w


@settings(max_examples=50, deadline=None)
@given(windows())
def test_pipeline_round_trips_through_toml(w: Window) -> None:
    spec = PipelineSpec(
        name="p-1", source=SourceSpec("csv", path="in.csv", options={"header": "true"}), window=w,
        target=SinkSpec("sqlite", path="o.db", table="t"), dead_letter=SinkSpec("parquet", path="dlq"),
        transform_sql="SELECT * FROM source", spark={"master": "local[2]"},
    )
    assert loads_pipeline(dumps_pipeline(spec)) == spec


def test_punctuation_round_trips() -> None:
    w = Window(kind="hopping", duration_ms=300_000, hop_ms=60_000, event_time_column="ts", group_by=["seg_id"],
               aggregations=(Aggregation("min", "speed", as_="lo"),),
               punctuation=Punctuation("kind = 'punct'", scope=("seg_id",)))
    assert loads_window(dumps_window(w)) == w


@pytest.mark.parametrize("max_future_ms", [None, 1, 3_600_000, 86_400_000, 30 * 86_400_000])
def test_the_future_guard_round_trips(max_future_ms: int | None) -> None:
    w = Window(kind="tumbling", duration_ms=60_000, event_time_column="ts", max_future_ms=max_future_ms,
               aggregations=(Aggregation("count", as_="n"),))
    assert loads_window(dumps_window(w)).max_future_ms == max_future_ms


@pytest.mark.parametrize(("line", "ms"), [('max_future = "off"', None), ('max_future = "OFF"', None),
                                          ('max_future = "2 hours"', 7_200_000), ("max_future_ms = 5000", 5000),
                                          ("", STREAMS_DEFAULT)])
def test_the_future_guard_is_written_as_a_duration_or_off(line: str, ms: int | str | None) -> None:
    text = f'[transform.window]\nkind = "tumbling"\nduration_ms = 1000\nevent_time_column = "ts"\n{line}\n' \
           '[[transform.window.aggregations]]\nagg = "count"\nas = "n"\n'
    assert loads_window(text).max_future_ms == ms


@pytest.mark.parametrize("line", ["max_future_ms = 0", "max_future_ms = -5", 'max_future = "soon"',
                                  'max_future_ms = "off"'])
def test_a_bad_future_guard_is_refused_naming_it(line: str) -> None:
    text = f'[transform.window]\nkind = "tumbling"\nduration_ms = 1000\nevent_time_column = "ts"\n{line}\n' \
           '[[transform.window.aggregations]]\nagg = "count"\nas = "n"\n'
    with pytest.raises(ConfigError, match="max_future"):
        loads_window(text)


PIPE = """
name = "demo"
[source]
format = "csv"
path = "in.csv"
[transform.window]
kind = "tumbling"
duration_ms = 60000
event_time_column = "ts"
[[transform.window.aggregations]]
agg = "count"
as = "n"
"""


def test_pipeline_defaults_to_sqlite_sinks(tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "p.toml"
    f.write_text(PIPE)
    spec = load_pipeline(f)
    assert spec.target == SinkSpec("sqlite", path="demo.sqlite", table="demo")
    assert spec.dead_letter.table == "dead_letter"
    assert spec.base_dir == str(tmp_path.resolve())


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (("duration_ms = 60000", "duration_ms = 60000\nduratoin_ms = 5"), "transform.window.duratoin_ms"),
        (('agg = "count"', 'agg = "cnt"'), "transform.window.aggregations[0].agg"),
        (('as = "n"', 'as = "n"\nmode = "exact"'), "transform.window.aggregations[0].mode"),
        (('format = "csv"', 'format = "xls"'), "source.format"),
        (('name = "demo"', 'name = "demo"\n[target]\nkind = "sqlite"\npath = "x.db"'), "target.table"),
        (('name = "demo"', ""), "name"),
        (("[source]", "[sorce]"), "sorce"),
        (('kind = "tumbling"', 'kind = "tumbling"\nhop_ms = 5'), "transform.window.hop_ms"),
        (("duration_ms = 60000", 'duration_ms = "1m"'), "transform.window.duration_ms"),
        (("[source]", "[source"), "toml"),
    ],
)
def test_bad_pipeline_toml_names_the_field(edit: tuple[str, str], field: str) -> None:
    with pytest.raises(ConfigError) as err:
        loads_pipeline(PIPE.replace(*edit, 1))
    assert err.value.field == field


LONG = "a" * 64  # a pipeline name, but one byte too long for a database table (IDENTIFIER_BYTES)


@pytest.mark.parametrize("name", ['"my pipeline"', '"1x"', '"a.b"', '""', "5", f'"{LONG}"', '"dead_letter"',
                                  '"dead-letter"'])
def test_a_bad_pipeline_name_is_reported_as_name_not_as_the_table_made_from_it(name: str) -> None:
    """The default target table is made from the name (``-`` as ``_``):
    a name it cannot be made from is the name's error, with a fix that
    says how to keep the name (give a [target])."""
    with pytest.raises(ConfigError) as err:
        loads_pipeline(PIPE.replace('name = "demo"', f"name = {name}", 1))
    assert err.value.field == "name", err.value


@pytest.mark.parametrize(("target", "dead_letter", "same"), [
    ('kind = "sqlite"\npath = "o.db"\ntable = "w"', 'kind = "sqlite"\npath = "./o.db"\ntable = "w"', True),
    ('kind = "sqlite"\npath = "o.db"\ntable = "w"', 'kind = "sqlite"\npath = "p.db"\ntable = "w"', False),
    ('kind = "postgres"\nurl_env = "PG"\ntable = "w"', 'kind = "postgres"\nurl_env = "PG"\ntable = "w"', True),
    ('kind = "postgres"\nurl_env = "PG"\ntable = "w"', 'kind = "postgres"\nurl_env = "PG"\ntable = "d"', False),
])
def test_the_dead_letter_is_not_the_target_s_table(target: str, dead_letter: str, same: bool) -> None:
    text = PIPE + f"\n[target]\n{target}\n[dead_letter]\n{dead_letter}\n"
    if not same:
        assert loads_pipeline(text).dead_letter.table is not None
        return
    with pytest.raises(ConfigError) as err:
        loads_pipeline(text)
    assert err.value.field == "dead_letter.table"


@pytest.mark.parametrize("name", [LONG, "dead_letter"])
def test_a_name_no_default_table_is_made_from_is_fine_with_a_target(name: str) -> None:
    target = '\n[target]\nkind = "sqlite"\npath = "x.db"\ntable = "windows"\n'
    spec = loads_pipeline(PIPE.replace('name = "demo"', f'name = "{name}"', 1) + target)
    assert spec.name == name and spec.target.table == "windows" and spec.dead_letter.table == "dead_letter"
