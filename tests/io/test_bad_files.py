"""Bad input in files: every malformed or wrong-typed record, in CSV, JSON and
Parquet, with or without a schema, reaches the dead letter with its raw text,
its file and its reason, is counted as rejected, and the batch and the
streaming read of the same files give the same dead-letter rows.

Each case writes the files itself and states, from its own bytes, which
records are bad and why; both pipelines (batch, and a stream on the same
files) must give exactly that.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import wid
from wid.errors import ConfigError
from wid.semantics import reasons
from wid.spec import Aggregation, Window
from wid.spec.pipeline import PipelineSpec, SinkSpec, SourceSpec, StreamSpec

WINDOW = Window(kind="tumbling", duration_ms=60_000, event_time_column="ts", group_by=("k",), max_groups_per_window=100,
                aggregations=(Aggregation("count", as_="n"), Aggregation("avg", "v", as_="mean")))
MALFORMED = reasons.MALFORMED


def run(spark: Any, root: Path, fmt: str, schema: str | None, stream: bool,
        sql: str | None = None) -> tuple[Any, list[Any]]:
    """Run the window over the files under ``root/in``; returns (the report,
    the dead-letter rows as (reason, row_json, file name, occurrences))."""
    db = root / ("stream.sqlite" if stream else "batch.sqlite")
    spec = PipelineSpec(name="bad", source=SourceSpec(fmt, path=str(root / "in"), schema=schema, stream=stream),
                        window=WINDOW, target=SinkSpec("sqlite", path=str(db), table="windows"),
                        dead_letter=SinkSpec("sqlite", path=str(db), table="dead_letter"), transform_sql=sql,
                        stream=StreamSpec(checkpoint=str(root / "ck")), base_dir=str(root))
    report = wid.run_pipeline(spec, spark)
    with closing(sqlite3.connect(db)) as con:
        dead = [(r[0], canonical(r[1]), Path(r[2]).name if r[2] else None, r[3]) for r in
                con.execute("SELECT reason, row_json, source_file, occurrences FROM dead_letter")]
    return report, dead


def totals(report: Any) -> tuple[int, int]:
    """(rows in, rows rejected) of a batch or a stream report."""
    if hasattr(report, "batches"):
        assert report.identity_holds
        return report.total("rows_in"), report.total("rows_rejected")
    assert report.identity_holds
    return report.rows_in, report.rows_rejected


def both(spark: Any, tmp_path: Path, fmt: str, schema: str, want: Counter[tuple[str, str, str]], rows_in: int) -> None:
    """Batch and stream over the same files: the dead letter is `want`
    ((reason, row_json, file) -> occurrences) on both, and so are the counts."""
    want = Counter({(r, canonical(j), f): n for (r, j, f), n in want.items()})
    for stream in (False, True):
        report, dead = run(spark, tmp_path, fmt, schema, stream)
        got = Counter({(r, j, f): n for r, j, f, n in dead})
        assert got == want, f"{'stream' if stream else 'batch'}: {dead}"
        assert totals(report) == (rows_in, sum(want.values()))


def canonical(text: str) -> str:
    """A row's JSON with sorted keys; a raw text that is not JSON as it is."""
    try:
        return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)
    except json.JSONDecodeError:
        return text


def test_json_bad_lines_keep_their_raw_text_in_batch_and_stream(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    good = '{"k": "a", "ts": "2024-01-01T00:00:10Z", "v": 1.5}'
    lines = [good, "{bad json", "{bad json", "{also bad", '{"k": "b", "ts": "2024-01-01T00:00:20Z", "v": "abc"}']
    body = "\n".join(lines).encode() + b'\n{"k": "caf\xe9", "ts": "2024-01-01T00:00:30Z", "v": 2}\n'
    (tmp_path / "in" / "a.json").write_bytes(body)
    want = Counter({(MALFORMED, "{bad json", "a.json"): 2, (MALFORMED, "{also bad", "a.json"): 1,
                    (MALFORMED, lines[4], "a.json"): 1,
                    (MALFORMED, '{"k": "caf\ufffd", "ts": "2024-01-01T00:00:30Z", "v": 2}', "a.json"): 1})
    both(spark, tmp_path, "json", "k STRING, ts TIMESTAMP, v DOUBLE", want, rows_in=6)


def test_csv_wrong_types_short_and_long_rows_and_bad_bytes(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_bytes(
        b"k,ts,v\na,2024-01-01 00:00:10,1.5\nb,2024-01-01 00:00:20,abc\nc,2024-01-01 00:00:30\n"
        b"d,2024-01-01 00:00:40,3,extra\ncaf\xe9,2024-01-01 00:00:50,2\n")
    bad_bytes = json.dumps({"k": "caf\ufffd", "ts": "2024-01-01T00:00:50.000000Z", "v": 2.0})
    want = Counter({(MALFORMED, "b,2024-01-01 00:00:20,abc", "a.csv"): 1, (MALFORMED, "c,2024-01-01 00:00:30", "a.csv"): 1,
                    (MALFORMED, "d,2024-01-01 00:00:40,3,extra", "a.csv"): 1, (MALFORMED, bad_bytes, "a.csv"): 1})
    both(spark, tmp_path, "csv", "k STRING, ts TIMESTAMP, v DOUBLE", want, rows_in=5)


def test_csv_text_is_judged_on_its_bytes(spark: Any, tmp_path: Path) -> None:
    """U+FFFD written as its valid UTF-8 bytes (EF BF BD) is data, as is any
    other valid character; only bytes that are not UTF-8 make a row
    malformed, in batch and on a stream."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_bytes(
        "k,ts,v\ncafé\ufffd,2024-01-01 00:00:10,1.5\n\"naïve, ok\",2024-01-01 00:00:20,2\n".encode()
        + b"bad\xff\xfe,2024-01-01 00:00:30,3\n")
    bad = json.dumps({"k": "bad\ufffd\ufffd", "ts": "2024-01-01T00:00:30.000000Z", "v": 3.0})
    both(spark, tmp_path, "csv", "k STRING, ts TIMESTAMP, v DOUBLE", Counter({(MALFORMED, bad, "a.csv"): 1}), rows_in=3)
    with closing(sqlite3.connect(tmp_path / "batch.sqlite")) as con:  # the stream's one window is still open
        assert sorted(con.execute("SELECT k, n FROM windows")) == [("café\ufffd", 1), ("naïve, ok", 1)]


def test_json_text_is_judged_on_its_bytes(spark: Any, tmp_path: Path) -> None:
    """As for CSV: U+FFFD in valid UTF-8 is data, bytes that are not UTF-8
    make the line malformed (Spark's JSON reader parses a file's bytes, so
    it refuses them itself), in batch and on a stream."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_bytes(
        '{"k": "café\ufffd", "ts": "2024-01-01T00:00:10Z", "v": 1.5}\n'.encode()
        + b'{"k": "bad\xff", "ts": "2024-01-01T00:00:30Z", "v": 3}\n')
    bad = '{"k": "bad\ufffd", "ts": "2024-01-01T00:00:30Z", "v": 3}'
    both(spark, tmp_path, "json", "k STRING, ts TIMESTAMP, v DOUBLE", Counter({(MALFORMED, bad, "a.json"): 1}), rows_in=2)
    with closing(sqlite3.connect(tmp_path / "batch.sqlite")) as con:
        assert sorted(con.execute("SELECT k, n FROM windows")) == [("café\ufffd", 1)]


def test_csv_header_names_in_utf8_are_read_as_written(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_bytes("k,ts,v,größe\nä,2024-01-01 00:00:10,1.5,7\n".encode())
    report, dead = run(spark, tmp_path, "csv", None, stream=False)
    assert dead == [] and report.rows_aggregated == 1
    frame = wid.io.sources.read_source(spark, SourceSpec("csv", path=str(tmp_path / "in")))
    assert [r.asDict() for r in frame.drop("_wid_corrupt").collect()] == \
        [{"k": "ä", "ts": __import__("datetime").datetime(2024, 1, 1, 0, 0, 10), "v": 1.5, "größe": 7}]


def test_parquet_strings_read_as_numbers(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    table = pa.table({"k": ["a", "b", "c"], "ts": pa.array([10_000_000, 20_000_000, 30_000_000], pa.timestamp("us", "UTC")),
                      "v": ["1.5", "abc", None]})
    pq.write_table(table, tmp_path / "in" / "a.parquet")
    row = {"k": "b", "ts": "1970-01-01T00:00:20.000000Z", "v": "abc"}
    want = Counter({(reasons.not_a_number("v"), json.dumps(row), "a.parquet"): 1})
    both(spark, tmp_path, "parquet", "k STRING, ts TIMESTAMP, v STRING", want, rows_in=3)


def test_parquet_strings_are_judged_on_their_bytes(spark: Any, tmp_path: Path) -> None:
    # Parquet strings are bytes another writer may not have checked (Spark reads them unchecked): a row
    # whose strings are not UTF-8 is malformed, U+FFFD in valid UTF-8 is data
    (tmp_path / "in").mkdir()
    raw = pa.array([b"ok\xef\xbf\xbd", b"bad\xff"], pa.binary())
    keys = pa.Array.from_buffers(pa.string(), len(raw), raw.buffers())  # no check, as a foreign writer
    ts = pa.array([10_000_000, 20_000_000], pa.timestamp("us", "UTC"))
    pq.write_table(pa.table({"k": keys, "ts": ts, "v": [1.0, 2.0]}), tmp_path / "in" / "a.parquet")
    row = {"k": "bad\ufffd", "ts": "1970-01-01T00:00:20.000000Z", "v": 2.0}
    want = Counter({(MALFORMED, json.dumps(row), "a.parquet"): 1})
    both(spark, tmp_path, "parquet", "k STRING, ts TIMESTAMP, v DOUBLE", want, rows_in=2)
    with closing(sqlite3.connect(tmp_path / "batch.sqlite")) as con:
        assert sorted(con.execute("SELECT k, n FROM windows")) == [("ok\ufffd", 1)]


def test_csv_without_a_schema_rejects_values_that_are_not_numbers(spark: Any, tmp_path: Path) -> None:
    # Spark infers v as a string (one value is not a number): the row that is not goes to the dead letter
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("k,ts,v\na,2024-01-01 00:00:10,1.5\nb,2024-01-01 00:00:20,abc\n"
                                           "a,2024-01-01 00:00:30,2.5\nc,2024-01-01 00:00:40\n")
    report, dead = run(spark, tmp_path, "csv", None, stream=False)
    assert sorted((r, f, n) for r, _, f, n in dead) == sorted([(reasons.not_a_number("v"), "a.csv", 1),
                                                               (MALFORMED, "a.csv", 1)])
    assert "c,2024-01-01 00:00:40" in {j for _, j, _, _ in dead}
    assert (report.rows_in, report.rows_rejected, report.rows_aggregated) == (4, 2, 2)
    with closing(sqlite3.connect(tmp_path / "batch.sqlite")) as con:
        assert con.execute("SELECT n, mean FROM windows").fetchall() == [(2, 2.0)]


def test_identical_bad_lines_of_two_files_stay_apart(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    for name in ("a.json", "b.json"):
        (tmp_path / "in" / name).write_text('{"k": "a", "ts": "2024-01-01T00:00:10Z", "v": 1}\n{oops\n')
    want = Counter({(MALFORMED, "{oops", "a.json"): 1, (MALFORMED, "{oops", "b.json"): 1})
    both(spark, tmp_path, "json", "k STRING, ts TIMESTAMP, v DOUBLE", want, rows_in=4)


def test_a_failing_cast_in_the_sql_pre_stage_is_one_line_naming_the_fix(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("k,t,v\na,2024-01-01 00:00:10,1\nb,garbage,2\n")
    sql = "SELECT k, to_timestamp(t) AS ts, v FROM source"
    with pytest.raises(ConfigError) as err:
        run(spark, tmp_path, "csv", "k STRING, t STRING, v DOUBLE", stream=False, sql=sql)
    assert err.value.field == "transform.sql"
    assert "garbage" in str(err.value) and "try_to_timestamp" in str(err.value) and "\n" not in str(err.value)
    safe = sql.replace("to_timestamp", "try_to_timestamp")
    report, dead = run(spark, tmp_path, "csv", "k STRING, t STRING, v DOUBLE", stream=False, sql=safe)
    assert [(r, json.loads(j)["k"]) for r, j, _, _ in dead] == [(reasons.NULL_EVENT_TIME, "b")]
    assert (report.rows_in, report.rows_rejected) == (2, 1)
