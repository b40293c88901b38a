"""The Python form of a pipeline mirrors the TOML form: the same spec, the
same TOML, the same errors naming the field."""

from __future__ import annotations

import pytest

import wid
from tests.fixtures import pipeline_toml
from wid import Aggregation, ConfigError, Window

WINDOW = Window(kind="hopping", duration_ms=30_000, hop_ms=10_000, late_mode="consistent", event_time_column="ts",
                event_time_unit="ms", group_by=["k"], lateness_ms=5_000, max_groups_per_window=1000,
                aggregations=(Aggregation("count", as_="n"), Aggregation("sum", "v", as_="total")))


def declared() -> object:
    @wid.pipeline(name="crash", window=WINDOW,
                  source={"format": "json", "path": "land", "stream": True, "schema": "k STRING, ts LONG, v DOUBLE",
                          "options": {"maxFilesPerTrigger": "1"}},
                  target={"kind": "sqlite", "path": "out.sqlite", "table": "windows"},
                  dead_letter={"kind": "sqlite", "path": "out.sqlite", "table": "dead_letter"},
                  spark={"master": "local[2]",
                         "conf": {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"}})
    def crash() -> None:
        """Hopping counts per key."""
    return crash


def test_python_declaration_equals_the_toml_and_round_trips() -> None:
    spec = declared()
    assert spec == wid.loads_pipeline(pipeline_toml())
    assert wid.loads_pipeline(wid.dumps_pipeline(spec)) == spec


def test_bad_fields_are_named_as_in_toml() -> None:
    with pytest.raises(ConfigError) as err:
        wid.pipeline(name="x", window=WINDOW, source={"format": "json", "path": "p", "stream": True})
    assert err.value.field == "source.schema"
    with pytest.raises(ConfigError) as err:
        wid.pipeline(name="x", window=WINDOW, source={"format": "csv", "path": "p"}, stream={"trigger": "soon"})
    assert err.value.field == "stream.trigger"


@pytest.mark.parametrize("name", ["my pipeline", "1x", "a.b", "", "a" * 64, "dead_letter"])
def test_a_bad_pipeline_name_is_reported_as_name(name: str) -> None:
    with pytest.raises(ConfigError) as err:
        wid.pipeline(name=name, window=WINDOW, source={"format": "csv", "path": "p"})
    assert err.value.field == "name", err.value
