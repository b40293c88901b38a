"""A PostgreSQL sink's timeouts (`SinkSpec.lock_timeout_ms`,
`SinkSpec.statement_timeout_ms`): defaults, durations as text in TOML,
0 for none, and a negative value refused naming the field."""

from __future__ import annotations

import pytest

from wid.errors import ConfigError
from wid.spec.pipeline import SinkSpec
from wid.spec.toml_io import loads_pipeline

PIPELINE = """
name = "timeouts"
[source]
format = "json"
path = "land"
[transform.window]
kind = "tumbling"
duration_ms = 60000
event_time_column = "ts"
[[transform.window.aggregations]]
agg = "count"
as = "n"
[target]
kind = "postgres"
url = "postgresql://wid@db/analytics"
table = "w"
{timeouts}
"""


def test_defaults_bound_every_wait() -> None:
    sink = SinkSpec("postgres", url="postgresql://wid@db/analytics", table="w")
    assert sink.lock_timeout_ms > 0 and sink.statement_timeout_ms > 0


def test_toml_takes_durations_as_text_and_zero_for_none() -> None:
    spec = loads_pipeline(PIPELINE.format(timeouts='lock_timeout = "20 s"\nstatement_timeout_ms = 0'))
    assert (spec.target.lock_timeout_ms, spec.target.statement_timeout_ms) == (20_000, 0)


@pytest.mark.parametrize("field", ["lock_timeout_ms", "statement_timeout_ms"])
def test_a_negative_timeout_is_refused_naming_the_field(field: str) -> None:
    with pytest.raises(ConfigError) as err:
        loads_pipeline(PIPELINE.format(timeouts=f"{field} = -1"))
    assert err.value.field == f"target.{field}"
