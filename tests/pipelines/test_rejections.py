"""Loud rejections (`wid.pipelines.rejections`): the datetime pattern wid
suggests for an event time Spark does not parse reads it, in Spark itself,
as the instant it was written from; and ``wid run`` warns about a batch or
micro-batch that rejects more than its share, and fails with ``--strict``."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wid.pipelines.rejections import STRICT_EXIT, fix, timestamp_pattern
from wid.semantics import reasons

# how an instant is written: month first with '/', day first with '.' and '-', year first
LAYOUTS = ["{m:02d}/{d:02d}/{Y} {H:02d}:{M:02d}", "{d:02d}.{m:02d}.{Y} {H:02d}:{M:02d}:{S:02d}",
           "{m}/{d}/{Y} {H}:{M:02d}", "{Y}/{m:02d}/{d:02d} {H:02d}:{M:02d}:{S:02d}.{ms:03d}",
           "{d:02d}-{m:02d}-{Y}", "{Y}-{m:02d}-{d:02d}T{H:02d}:{M:02d}:{S:02d}"]


@settings(max_examples=25, deadline=None)
@given(moment=st.datetimes(datetime(1971, 1, 1), datetime(2099, 12, 31)).map(lambda t: t.replace(microsecond=0)),
       layout=st.sampled_from(LAYOUTS), ms=st.integers(0, 999))
def test_the_suggested_pattern_reads_the_value_in_spark(spark: Any, moment: datetime, layout: str, ms: int) -> None:
    if "{S" not in layout:
        moment = moment.replace(second=0)
    if "{H" not in layout:
        moment = moment.replace(hour=0, minute=0)
    text = layout.format(Y=moment.year, m=moment.month, d=moment.day, H=moment.hour, M=moment.minute,
                         S=moment.second, ms=ms)
    want = moment.replace(microsecond=ms * 1000) if "{ms" in layout else moment
    pattern = timestamp_pattern(text)
    assert pattern is not None, text
    got = spark.sql("SELECT to_timestamp(:t, :p) AS ts", args={"t": text, "p": pattern}).first()["ts"]
    assert got == want, (text, pattern)


def test_text_that_is_no_date_gets_no_pattern() -> None:
    assert [timestamp_pattern(t) for t in ("yesterday", "13/13/2024", "2024-05-01 09:01 and more", "1.5")] == [None] * 4


ROWS = [{"k": "a", "ts": "01/05/2024 09:01", "v": 1.0}, {"k": "b", "ts": "01/05/2024 09:02", "v": 2.0},
        {"k": "a", "ts": "2024-05-01 09:03:00", "v": 3.0}]
PIPELINE = """
name = "loud"

[source]
format = "json"
path = "{path}"
schema = "k STRING, ts STRING, v DOUBLE"
{stream}
[transform.window]
kind = "tumbling"
duration = "5 minutes"
event_time_column = "ts"
group_by = ["k"]
max_groups_per_window = 10

[[transform.window.aggregations]]
agg = "sum"
column = "v"
as = "total"

[spark]
master = "local[1]"
conf = {{ "spark.sql.shuffle.partitions" = "1" }}
"""


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    return subprocess.run([sys.executable, "-m", "wid.cli", "run", "--quiet", *args, "loud.toml"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)  # a bound on a hang


def loud_pipeline(root: Path, stream: bool) -> Path:
    """The loud pipeline's directory: two of its three rows' times do not parse."""
    (root / "in").mkdir(parents=True)
    (root / "in" / "rows.json").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (root / "loud.toml").write_text(PIPELINE.format(path="in", stream="stream = true\n" if stream else ""))
    return root


def written(root: Path, table: str = "loud") -> list[Any]:
    """The rows the loud pipeline wrote to `table` of its default target,
    loud.sqlite beside the file: ``loud`` (the windows), ``dead_letter``."""
    if not (root / "loud.sqlite").exists():
        return []
    with closing(sqlite3.connect(root / "loud.sqlite")) as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return db.execute(f"SELECT * FROM {table}").fetchall() if table in tables else []


def test_a_run_that_rejects_most_rows_warns_with_the_first_value_and_the_format(tmp_path: Path) -> None:
    root = loud_pipeline(tmp_path, stream=True)
    done = run(root)
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning: ")]
    assert done.returncode == 0 and len(warnings) == 1, done.stdout + done.stderr
    assert warnings[0].startswith("warning: micro-batch 0 rejected 2 of its 3 rows (67 %, more than 50 %); the first: "
                                  'ts = "01/05/2024 09:0'), warnings[0]
    assert "unparseable event time. Fix: give its format: to_timestamp(ts, 'MM/dd/yyyy HH:mm')" in warnings[0]
    assert len(written(root, "dead_letter")) == 2  # without --strict the micro-batch is written


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_strict_writes_nothing_and_fails_in_one_error_line(tmp_path: Path, stream: bool) -> None:
    # point 5 of issue 55: --strict exited 3 with a `warning:` and the good windows already in the target
    root = loud_pipeline(tmp_path, stream)
    done = run(root, "--strict")
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    which = "micro-batch 0" if stream else "the batch"
    assert done.returncode == STRICT_EXIT and len(errors) == 1, done.stdout + done.stderr
    assert "warning:" not in done.stderr, done.stderr
    assert errors[0].startswith(f"error: {which} rejected 2 of its 3 rows"), errors[0]
    assert f"nothing of {which} was written (--strict)" in errors[0], errors[0]
    assert "Fix: give its format: to_timestamp(ts, 'MM/dd/yyyy HH:mm')" in errors[0], errors[0]
    assert written(root) == [] and written(root, "dead_letter") == []
    if stream:  # the micro-batch was not committed: the next run does it again
        assert not (root / "loud.checkpoint" / "commits" / "0").exists()
        return
    quiet = run(root, "--strict", "--rejected-above", "70")  # 67 % is not above 70 %
    assert quiet.returncode == 0 and "warning:" not in quiet.stderr, quiet.stderr
    assert len(written(root)) == 1


def test_a_time_a_timestamp_schema_did_not_read_gets_its_to_timestamp_pattern() -> None:
    # a CSV whose schema declares ts TIMESTAMP: Spark's reader rejects the whole record as malformed, and the fix
    # names the pattern that reads the record's time, as for a text event time
    got = fix(reasons.MALFORMED, "north,01/05/2024 09:01,12.0", "ts")
    assert got.startswith("read ts as text (ts STRING in the source's schema), then give its format: "
                          "to_timestamp(ts, 'MM/dd/yyyy HH:mm')"), got
    assert fix(reasons.MALFORMED, '{"ts": "31.12.2024 23:59", "v": "x"}', "ts").endswith(
        "to_timestamp(ts, 'dd.MM.yyyy HH:mm') in a [transform] sql pre-stage (Spark's datetime patterns)")
    assert fix(reasons.MALFORMED, "north,noon,12.0", "ts").startswith("check the source's schema and options")
