"""Loud rejections (`wid.pipelines.rejections`): the datetime pattern wid
suggests for an event time Spark does not parse reads it, in Spark itself,
as the instant it was written from; and ``wid run`` warns about a batch or
micro-batch that rejects more than its share, and fails with ``--strict``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wid.pipelines.rejections import STRICT_EXIT, timestamp_pattern

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


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_a_run_that_rejects_most_rows_warns_with_the_first_value_and_the_format(tmp_path: Path, stream: bool) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "rows.json").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "loud.toml").write_text(PIPELINE.format(path="in", stream="stream = true\n" if stream else ""))
    done = run(tmp_path, "--strict") if not stream else run(tmp_path)
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning: ")]
    which = "micro-batch 0" if stream else "the batch"
    assert done.returncode == (0 if stream else STRICT_EXIT) and len(warnings) == 1, done.stdout + done.stderr
    assert warnings[0].startswith(f"warning: {which} rejected 2 of its 3 rows (67 %, more than 50 %); the first: "
                                  'ts = "01/05/2024 09:0'), warnings[0]
    assert "unparseable event time. Fix: give its format: to_timestamp(ts, 'MM/dd/yyyy HH:mm')" in warnings[0]
    if stream:
        return
    quiet = run(tmp_path, "--strict", "--rejected-above", "70")
    assert quiet.returncode == 0 and "warning:" not in quiet.stderr, quiet.stderr
