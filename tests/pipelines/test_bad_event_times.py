"""One row can neither stop nor poison a stream (docs/semantics.md#bad-input):
a stream pipeline passes a file holding a nanosecond time in a millisecond
column, and one holding a row dated 9999-12-31, with the row in the dead
letter and every later row aggregated, against the streaming oracle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import good_rows, land, pipeline_toml, stamped, table
from tests.pipelines.test_late_data import final_rows, sqlite_time
from wid.pipelines.run import run as run_pipeline
from wid.semantics import reasons
from wid.semantics.stream_oracle import run_stream
from wid.spec.toml_io import loads_pipeline

NS_IN_MS = 1_700_000_000_123_456_789  # a nanosecond timestamp in a millisecond field: ts * 1000 overflows a long
YEAR_9999_MS = 253_402_300_799_000  # 9999-12-31T23:59:59Z: a clock error, far ahead of any processing time


@pytest.mark.leg
@pytest.mark.parametrize(("bad", "reason"), [(NS_IN_MS, reasons.OUT_OF_RANGE), (YEAR_9999_MS, reasons.IN_FUTURE)])
def test_one_bad_time_neither_stops_nor_poisons_the_stream(spark: Any, tmp_path: Path, bad: int, reason: str) -> None:
    rows = good_rows(36)
    files = [rows[:12], [*rows[12:18], {"k": "a", "ts": bad, "v": 1.0}, *rows[18:24]], rows[24:]]
    land(tmp_path / "land", [[json.dumps(r) for r in f] for f in files])
    spec = loads_pipeline(pipeline_toml('kind = "tumbling"\nduration_ms = 10000', name="bad-time"),
                          base_dir=str(tmp_path))
    report = run_pipeline(spec, spark)  # the run passes the file: no overflow stops it
    batches = stamped(files)
    oracle = run_stream(batches, spec.window)

    assert report.identity_holds and len(report.batches) == len(files)
    assert [(b.rows_in, b.rows_rejected, b.rows_late, b.rows_aggregated) for b in report.batches] == \
        [(o.rows_in, o.rows_rejected, o.rows_late_dropped + o.rows_late_dlq, o.rows_aggregated) for o in oracle]
    assert [b.rows_aggregated for b in report.batches] == [12, 12, 12]  # the rows after the bad one count
    dead = table(tmp_path / "out.sqlite", "dead_letter")
    assert [(d["reason"], json.loads(d["row_json"])["ts"]) for d in dead] == [(reason, bad)]
    got = {(g["window_start"], g["k"]): (g["n"], g["total"]) for g in table(tmp_path / "out.sqlite", "windows")}
    want = final_rows(batches, spec.window)
    assert got == {(sqlite_time(s), k): (r["n"], r["total"]) for (s, k), r in want.items()} and got
