"""A window-join pipeline over a stream, end to end from TOML: one landing
directory whose rows name their side, each side prepared by SQL, the join on
the WID operator into SQLite, rejected and late rows in the dead letter;
per-batch accounting and the sink's rows against the streaming oracle."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import land, table
from tests.kernels.operator.test_join_engine import stream
from wid.pipelines.run import run as run_stream
from wid.semantics.stream_types import MicroBatch
from wid.semantics.window_join_stream import run_join_stream
from wid.spec.pipeline import JoinPipelineSpec
from wid.spec.toml_io import dumps_pipeline, loads_pipeline

PIPELINE = """
name = "trades-quotes"

[[source]]
name = "events"
format = "json"
path = "land"
stream = true
schema = "side STRING, t LONG, k STRING, id LONG, note STRING, v DOUBLE, w LONG"
options = { maxFilesPerTrigger = "1" }

[join]
left = "trades"
right = "quotes"
left_sql = "SELECT t, k, id, note FROM events WHERE side = 'left'"
right_sql = "SELECT t, k, v, w FROM events WHERE side = 'right'"
window = [-3, 2]
matching_column = "k"
time_column = "t"
time_unit = "ms"
max_delayed_time = 10
garbage_size = 2
late_data = "dlq"

[[join.metrics]]
agg = "count"
as = "n"

[[join.metrics]]
agg = "sum"
column = "v"
as = "s"

[target]
kind = "sqlite"
path = "out.sqlite"
table = "joined"

[dead_letter]
kind = "sqlite"
path = "out.sqlite"
table = "dead_letter"

[stream]
checkpoint = "ck"

[spark]
master = "local[2]"
conf = { "spark.sql.shuffle.partitions" = "2", "spark.ui.enabled" = "false" }
"""


@pytest.mark.leg
def test_a_stream_join_pipeline_writes_what_the_oracle_fires(spark: Any, tmp_path: Path) -> None:
    spec = loads_pipeline(PIPELINE, base_dir=str(tmp_path))
    assert isinstance(spec, JoinPipelineSpec) and loads_pipeline(dumps_pipeline(spec), str(tmp_path)) == spec
    batches = [b for b in stream(random.Random(38), 20) if b.rows][:5]  # a rejected and a late row
    batches.append(MicroBatch([("right", {"t": 1000, "k": k, "v": None, "w": None}) for k in "ABC"], 99))
    land(tmp_path / "land", [[json.dumps({"side": s, **r}) for s, r in b.rows] for b in batches])
    report = run_stream(spec, spark)
    want = run_join_stream(batches, spec.join.join, left_columns=["t", "k", "id", "note"])

    assert report.identity_holds and len(report.batches) == len(batches)
    assert [b.rows_in for b in report.batches] == [r.rows_in for r in want]
    assert [b.rows_rejected for b in report.batches] == [r.rows_rejected for r in want]
    assert [b.rows_late_dlq for b in report.batches] == [r.rows_late_dlq for r in want]
    fired = sorted((e.row["t"], e.row["k"], e.row["id"], e.row["n"], e.row["s"]) for r in want for e in r.emitted)
    assert fired and report.windows_emitted == len(fired)
    got = sorted((r["t"], r["k"], r["id"], r["n"], r["s"]) for r in table(tmp_path / "out.sqlite", "joined"))
    assert got == fired
    dead = table(tmp_path / "out.sqlite", "dead_letter")
    reasons = sorted(d["reason"] for d in dead)
    assert len(reasons) == 2 and reasons == sorted([x.reason for r in want for x in r.rejected] + [x.reason for r in want for x in r.late])
