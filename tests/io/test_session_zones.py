"""Instants leave wid as instants whatever Spark's session time zone
(docs/semantics.md#time; `wid.spec.time_text`): every sink writes the same
instants under UTC and under Asia/Kathmandu (+05:45, not a whole hour),
through a pipeline (batch and stream) and through the Python API; wall-clock
times are written without a zone marker; text event times follow one rule
(their own offset, else the window's time zone, else UTC) on every path.
Expected values come from the oracles, as UTC text computed in Python."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pyarrow.parquet as pq
import pytest
from pyspark.sql import types as T
from rich.console import Console

import wid
from tests.fixtures import COUNT_AND_SUM, land, stamped, table
from tests.sink_check import as_sink_row, assert_same_rows, folded, iso, read_table
from wid.errors import StateCapError
from wid.io import kafka as wid_kafka
from wid.io import sinks
from wid.io.batch import Batch
from wid.io.sql_sinks import write_postgres, write_sqlite
from wid.pipelines.run import run as run_pipeline
from wid.pipelines.write import check_cap
from wid.semantics import evaluate
from wid.semantics.stream_oracle import run_stream
from wid.semantics.timeunits import datetime_to_us, text_to_datetime
from wid.spec import Aggregation, Window
from wid.spec.pipeline import SinkSpec
from wid.spec.toml_io import loads_pipeline

ZONE_KEY = "spark.sql.session.timeZone"
ZONES = ["UTC", "Asia/Kathmandu"]  # Kathmandu is UTC+05:45: a shifted text cannot pass for a right one
N = (Aggregation("count", as_="n"), Aggregation("sum", "v", as_="total"))
HOURLY = Window(kind="tumbling", duration_ms=3_600_000, event_time_column="ts", group_by=("k",), aggregations=N,
                max_groups_per_window=100)
# text event times without an offset (read in UTC), the last one with its own (read as it says); `at` is a
# TIMESTAMP column the source reader parses, kept in dead letters
ROWS = [{"k": "a", "ts": "2013-03-10 04:59:59.999999", "at": "2013-03-10 04:00:00", "v": 1.0},
        {"k": "a", "ts": "2013-03-10 05:00:00", "at": "2013-03-10 04:30:00.5", "v": 2.0},
        {"k": "b", "ts": "2013-03-10T05:30:00", "at": "2013-03-10T05:00:00Z", "v": 4.0},
        {"k": None, "ts": "2013-03-10 05:10:00", "at": "2013-03-10 05:10:00.000001", "v": 8.0},
        {"k": "b", "ts": "2013-03-10T11:20:00+05:45", "at": "2013-03-10T11:20:00+05:45", "v": 16.0}]


@pytest.fixture(params=ZONES)
def zone(spark: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    spark.conf.set(ZONE_KEY, request.param)
    try:
        yield request.param
    finally:
        spark.conf.set(ZONE_KEY, "UTC")


def utc(text: str) -> str:
    """A text time as the sinks write it: its instant (UTC when it has no offset) as UTC text."""
    parsed = text_to_datetime(text)
    assert parsed is not None
    return iso(datetime_to_us(parsed))


def dead_row(row: dict[str, Any]) -> dict[str, Any]:
    """A rejected row as its dead letter's row_json holds it: `at` parsed by the reader, as UTC text."""
    return {**row, "at": utc(row["at"])}


PIPELINE = """
name = "zones"

[source]
format = "json"
path = "land"
stream = {stream}
schema = "k STRING, ts STRING, at TIMESTAMP, v DOUBLE"
options = {{ maxFilesPerTrigger = "1" }}

[transform.window]
kind = "tumbling"
duration_ms = 3600000
event_time_column = "ts"
group_by = ["k"]
max_groups_per_window = 100

""" + COUNT_AND_SUM + """
[spark]
conf = {{ "spark.sql.session.timeZone" = "{zone}" }}

[target]
{target}

[dead_letter]
kind = "sqlite"
path = "out.sqlite"
table = "dead_letter"
"""
SQLITE = 'kind = "sqlite"\npath = "out.sqlite"\ntable = "windows"'


def pipeline(tmp_path: Path, zone: str, stream: bool, target: str = SQLITE) -> Any:
    text = PIPELINE.format(stream=str(stream).lower(), zone=zone, target=target)
    return loads_pipeline(text, base_dir=str(tmp_path))


def dead_letters(tmp_path: Path) -> list[dict[str, Any]]:
    return sorted((json.loads(d["row_json"]) for d in table(tmp_path / "out.sqlite", "dead_letter")
                   for _ in range(d["occurrences"])), key=json.dumps)


@pytest.mark.parametrize("target", ["sqlite", "postgres"])
def test_a_batch_pipeline_writes_utc_instants_under_any_session_zone(spark: Any, zone: str, tmp_path: Path,
                                                                    target: str, request: pytest.FixtureRequest) -> None:
    land(tmp_path / "land", [[json.dumps(r) for r in ROWS]])
    url = request.getfixturevalue("postgres_url") if target == "postgres" else ""
    table_name = f"zones_{zone.replace('/', '_').lower()}"
    sink = SQLITE if target == "sqlite" else f'kind = "postgres"\nurl = "{url}"\ntable = "{table_name}"'
    report = run_pipeline(pipeline(tmp_path, zone, stream=False, target=sink), spark)

    want = evaluate(ROWS, HOURLY)
    assert report.identity_holds and report.rows_rejected == 1
    if target == "sqlite":
        got = read_table(str(tmp_path / "out.sqlite"), "windows")
        assert_same_rows(HOURLY, got, [as_sink_row(HOURLY, r) for r in want.rows])
    else:
        with psycopg.connect(url) as con:
            got_pg = sorted(con.execute(f"SELECT window_start, window_end, k, n FROM {table_name}").fetchall())
        epoch = datetime(1970, 1, 1, tzinfo=UTC)
        assert got_pg == sorted((epoch + timedelta(microseconds=r["window_start"]),
                                 epoch + timedelta(microseconds=r["window_end"]), r["k"], r["n"]) for r in want.rows)
    assert dead_letters(tmp_path) == [dead_row(d.row) for d in want.dead_letter]


def test_a_stream_writes_utc_instants_under_any_session_zone(spark: Any, zone: str, tmp_path: Path) -> None:
    land(tmp_path / "land", [[json.dumps(r) for r in ROWS[:3]], [json.dumps(r) for r in ROWS[3:]]])
    report = run_pipeline(pipeline(tmp_path, zone, stream=True), spark)

    results = run_stream(stamped([ROWS[:3], ROWS[3:]]), HOURLY)
    assert report.identity_holds
    got = read_table(str(tmp_path / "out.sqlite"), "windows")
    assert got
    assert_same_rows(HOURLY, got, folded(HOURLY, results, list(got[0])))
    assert dead_letters(tmp_path) == [dead_row(d.row) for r in results for d in r.rejected]


def python_rows(spark: Any) -> Any:
    return spark.createDataFrame([(r["k"], r["ts"], r["v"]) for r in ROWS if r["k"]], "k STRING, ts STRING, v DOUBLE")


def test_the_python_api_s_windows_reach_every_sink_as_the_same_instants(spark: Any, zone: str, tmp_path: Path,
                                                                       postgres_url: str) -> None:
    out = wid.aggregate(python_rows(spark), HOURLY)
    want = [as_sink_row(HOURLY, r) for r in evaluate([r for r in ROWS if r["k"]], HOURLY).rows]
    bounds = sorted((r["window_start"], r["window_end"]) for r in want)

    write_sqlite(out, str(tmp_path / "o.sqlite"), "w", ["window_start", "k"])
    assert sorted((r["window_start"], r["window_end"]) for r in read_table(str(tmp_path / "o.sqlite"), "w")) == bounds

    name = f"api_{zone.replace('/', '_').lower()}"
    write_postgres(out, postgres_url, name, ["window_start", "k"])
    with psycopg.connect(postgres_url) as con:
        held = con.execute(f"SELECT window_start, window_end FROM {name}").fetchall()
    assert sorted((iso(datetime_to_us(s)), iso(datetime_to_us(e))) for s, e in held) == bounds

    messages = wid_kafka.window_messages(out, ["window_start", "k"], Batch("zones", 0)).collect()
    values = [json.loads(m["value"]) for m in messages]
    assert sorted((v["window_start"], v["window_end"]) for v in values) == bounds
    assert sorted(json.loads(m["key"])["window_start"] for m in messages) == sorted(s for s, _ in bounds)

    printed = io.StringIO()
    sinks.write_console(out, 10, "windows", Console(file=printed, width=200))
    assert all(s in printed.getvalue() and e in printed.getvalue() for s, e in bounds)

    sinks.write(out, SinkSpec("parquet", path=str(tmp_path / "pq"), mode="overwrite"), ".", ["window_start", "k"])
    held_pq = pq.read_table(tmp_path / "pq").to_pylist()
    assert sorted((iso(datetime_to_us(r["window_start"])), iso(datetime_to_us(r["window_end"]))) for r in held_pq) \
        == bounds


def test_wall_clock_bounds_are_written_without_a_zone(spark: Any, zone: str, tmp_path: Path,
                                                     postgres_url: str) -> None:
    # TIMESTAMP_NTZ event times give wall-clock windows of that type: text without a Z, PostgreSQL's
    # TIMESTAMP (without time zone)
    walls = [datetime(2013, 3, 10, 2, 30), datetime(2013, 3, 10, 3, 10), datetime(2013, 11, 3, 1, 30)]
    df = spark.createDataFrame([("a", t) for t in walls], T.StructType(
        [T.StructField("k", T.StringType()), T.StructField("ts", T.TimestampNTZType())]))
    out = wid.aggregate(df, replace(HOURLY, aggregations=(Aggregation("count", as_="n"),)))
    hours = sorted({t.replace(minute=0) for t in walls})
    text = [(h.strftime("%Y-%m-%dT%H:%M:%S.%f"), (h + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.%f")) for h in hours]

    write_sqlite(out, str(tmp_path / "o.sqlite"), "w", ["window_start", "k"])
    assert sorted((r["window_start"], r["window_end"]) for r in read_table(str(tmp_path / "o.sqlite"), "w")) == text

    name = f"wall_{zone.replace('/', '_').lower()}"
    write_postgres(out, postgres_url, name, ["window_start", "k"])
    with psycopg.connect(postgres_url) as con:
        held = sorted(con.execute(f"SELECT window_start, window_end FROM {name}").fetchall())
        kinds = {r[0] for r in con.execute("SELECT data_type FROM information_schema.columns "
                                           "WHERE table_name = %s AND column_name LIKE 'window_%%'", (name,))}
    assert held == [(h, h + timedelta(hours=1)) for h in hours]
    assert kinds == {"timestamp without time zone"}


def test_cap_errors_name_utc_bounds_under_any_session_zone(spark: Any, zone: str) -> None:
    capped = replace(HOURLY, max_groups_per_window=1)
    message = "window [2013-03-10T05:00:00Z, 2013-03-10T06:00:00Z) for pipeline"
    with pytest.raises(Exception, match=message.replace("[", r"\[").replace(")", r"\)")):
        wid.aggregate(python_rows(spark), capped, pipeline="zones").collect()  # the batch plan's check
    out = wid.aggregate(python_rows(spark), HOURLY)
    with pytest.raises(StateCapError, match=message.replace("[", r"\[").replace(")", r"\)")):
        check_cap(out, capped, "zones")  # a micro-batch's check, on the driver


@pytest.mark.parametrize("time_zone", [None, "America/New_York"])
def test_text_event_times_follow_one_rule_whatever_the_session_zone(spark: Any, zone: str,
                                                                    time_zone: str | None) -> None:
    # without an offset a text is read in the window's time zone, else in UTC; with one, as it says;
    # 02:30 on 10 March 2013 does not exist in New York (it moves forward by the gap)
    texts = ["2013-03-10 02:30:00", "2013-03-10T01:59:59", "2013-03-10", "2013-03-10T07:30:00Z",
             "2013-03-10T12:00:00.25+05:45", "not a time"]
    df = spark.createDataFrame([("a", t, 1.0) for t in texts], "k STRING, ts STRING, v DOUBLE")
    window = HOURLY if time_zone is None else Window(
        kind="tumbling", duration_ms=3_600_000, time_zone=time_zone, event_time_column="ts", group_by=("k",),
        aggregations=N)
    result = wid.window_result(df, window)
    want = evaluate([{"k": "a", "ts": t, "v": 1.0} for t in texts], window)
    got = sorted((r["window_start"], r["n"]) for r in result.output.collect())
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    assert [(s.astimezone(UTC), n) for s, n in got] == [(epoch + timedelta(microseconds=r["window_start"]), r["n"])
                                                        for r in want.rows]
    assert [r["reason"] for r in result.dead_letter.collect()] == [d.reason for d in want.dead_letter]


@pytest.mark.parametrize("session_zone", ["UTC", "Asia/Tokyo"])
def test_a_new_york_day_is_written_as_its_instants_under_any_session_zone(spark: Any, tmp_path: Path,
                                                                          session_zone: str) -> None:
    # the 23-hour day of 10 March 2013 in New York is [05:00Z, 04:00Z next day), under Tokyo's session too
    from zoneinfo import ZoneInfo

    spark.conf.set(ZONE_KEY, session_zone)
    try:
        day = Window(kind="tumbling", duration="1 day", time_zone="America/New_York", event_time_column="ts",
                     group_by=("k",), aggregations=N)
        df = spark.createDataFrame([("a", "2013-03-10T12:00:00Z", 1.0), ("a", "2013-03-11T03:59:59Z", 2.0)],
                                   "k STRING, ts STRING, v DOUBLE")
        write_sqlite(wid.aggregate(df, day), str(tmp_path / "o.sqlite"), "d", ["window_start", "k"])
    finally:
        spark.conf.set(ZONE_KEY, "UTC")
    new_york = ZoneInfo("America/New_York")
    start, end = datetime(2013, 3, 10, tzinfo=new_york), datetime(2013, 3, 11, tzinfo=new_york)
    held = read_table(str(tmp_path / "o.sqlite"), "d")
    assert [(r["window_start"], r["window_end"], r["n"]) for r in held] == [
        (iso(datetime_to_us(start)), iso(datetime_to_us(end)), 2)]
