"""The PostgreSQL sink against a real server (started by the `postgres_url`
fixture): upsert on the natural key, replayed batches, a table of another
shape, and a streaming pipeline writing to it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.fixtures import good_rows, land, pipeline_toml
from wid.errors import ConfigError
from wid.io.sinks import write_postgres
from wid.pipelines.run import run as run_stream
from wid.semantics import evaluate
from wid.spec.toml_io import loads_pipeline


def read(url: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as con:
        return sorted(con.execute(sql).fetchall())


def frame(spark: Any, rows: list[tuple[str, str, int]]) -> Any:
    return spark.createDataFrame(rows, "ws string, k string, n long").selectExpr("to_timestamp(ws) AS ws", "k", "n")


def test_upsert_overwrites_by_key_and_replays_are_idempotent(spark: Any, postgres_url: str) -> None:
    assert write_postgres(frame(spark, [("2024-01-01 00:00:00", "a", 1), ("2024-01-01 00:00:00", "b", 2)]),
                          postgres_url, "t1", ["ws", "k"]) == 2
    replay = frame(spark, [("2024-01-01 00:00:00", "a", 10), ("2024-01-01 00:01:00", "c", 3)])
    write_postgres(replay, postgres_url, "t1", ["ws", "k"])
    write_postgres(replay, postgres_url, "t1", ["ws", "k"])
    t0, t1 = datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 1, 1, 0, 1, tzinfo=UTC)
    assert read(postgres_url, "SELECT ws, k, n FROM t1") == [(t0, "a", 10), (t0, "b", 2), (t1, "c", 3)]
    types = read(postgres_url, "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 't1'")
    assert types == [("k", "text"), ("n", "bigint"), ("ws", "timestamp with time zone")]


def test_table_of_another_shape_is_refused(spark: Any, postgres_url: str) -> None:
    with psycopg.connect(postgres_url) as con:
        con.execute("CREATE TABLE t2 (x BIGINT)")
    with pytest.raises(ConfigError) as err:
        write_postgres(spark.createDataFrame([(1, 2)], "a long, b long"), postgres_url, "t2", ["a"])
    assert err.value.field == "target.table"


@pytest.mark.leg
def test_streaming_pipeline_writes_windows_to_postgres(spark: Any, postgres_url: str, tmp_path: Path) -> None:
    rows = good_rows(30)
    land(tmp_path / "land", [[json.dumps(r) for r in rows[i:i + 10]] for i in range(0, 30, 10)])
    text = pipeline_toml('kind = "tumbling"\nduration_ms = 10000', name="pg").replace(
        'kind = "sqlite"\npath = "out.sqlite"\ntable = "windows"', f'kind = "postgres"\nurl = "{postgres_url}"\ntable = "pg_windows"')
    spec = loads_pipeline(text, base_dir=str(tmp_path))
    assert spec.target.kind == "postgres"
    report = run_stream(spec, spark)
    assert report.identity_holds and report.total("rows_in") == 30
    wm_us = (max(r["ts"] for r in rows) - spec.window.lateness_ms) * 1000
    want = sorted((w["k"], w["n"], w["total"]) for w in evaluate(rows, spec.window).rows if w["window_end"] <= wm_us)
    assert read(postgres_url, "SELECT k, n, total FROM pg_windows") == want


def test_a_null_in_the_natural_key_still_identifies_the_row(spark: Any, postgres_url: str) -> None:
    # as in SQL's IS NOT DISTINCT FROM: a rolling window's input row, NULLs and all, is its key
    schema = "k string, v double, n long"
    partial = spark.createDataFrame([("a", None, 1), (None, 2.0, 1)], schema)
    final = spark.createDataFrame([("a", None, 2), (None, 2.0, 3)], schema)
    for df in (partial, final, final):
        write_postgres(df, postgres_url, "t_nulls", ["k", "v"])
    with psycopg.connect(postgres_url) as con:
        rows = con.execute("SELECT k, v, n FROM t_nulls").fetchall()
    assert sorted(rows, key=str) == sorted([("a", None, 2), (None, 2.0, 3)], key=str)
