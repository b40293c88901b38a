"""A micro-batch's first rejected row read from its progress, in a classic
session's form (a Row) and in a Spark Connect client's (the Row's JSON
form, nested structs included), the way Spark builds each."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pyspark.sql import Row

from wid.pipelines.observed import NAME, rejected_sample

SCHEMA = {"type": "struct", "fields": [{"name": "stats"}, {"name": "windows"}, {"name": "rejected"}]}
INNER = {"type": "struct", "fields": [{"name": "reason"}, {"name": "row_json"}]}


def progress(row: Any) -> SimpleNamespace:
    return SimpleNamespace(observedMetrics={NAME: row})


def test_a_classic_sessions_row() -> None:
    row = Row(stats=[], windows=0, rejected=Row(reason="bad json", row_json="{x"))
    assert rejected_sample(progress(row)) == ("bad json", "{x")
    assert rejected_sample(progress(Row(stats=[], windows=0, rejected=None))) is None


def test_a_connect_clients_json_form() -> None:
    rejected = {"values": ["bad json", "{x"], "schema": INNER}
    assert rejected_sample(progress(Row(values=[[], 0, rejected], schema=SCHEMA))) == ("bad json", "{x")
    assert rejected_sample(progress(Row(values=[[], 0, None], schema=SCHEMA))) is None
    empty = {"values": [None, None], "schema": INNER}
    assert rejected_sample(progress(Row(values=[[], 0, empty], schema=SCHEMA))) is None
