"""``wid status`` (`wid.pipelines.status`): what a stream's checkpoint
holds, read without running the stream, against the streaming oracle.

The windows a checkpoint holds are the oracle's windows still open after
the micro-batches the checkpoint logged: those a later micro-batch would
emit once a row far ahead (of a group of its own, on every clock) moves the
watermark past them. The oracle never sees wid's state; the engines decode
it (issue 52)."""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.fixtures import open_after
from tests.kafka_check import micro_batches, offset_log, produce_rows
from tools import kept_checkpoints as kept
from wid.cli import app
from wid.kernels.fields import END, START
from wid.kernels.operator.held import GROUPS
from wid.pipelines.run import run
from wid.pipelines.status import status_of
from wid.semantics.stream_oracle import MicroBatch, run_stream
from wid.semantics.timeunits import format_us
from wid.spec.toml_io import load_pipeline


def kept_batches(root: Path) -> list[MicroBatch]:
    """The micro-batches a kept stream (`tools.kept_checkpoints`) ran before its checkpoint was kept, at their logged times."""
    logged = [json.loads((root / "ck" / "offsets" / str(b)).read_text().splitlines()[1])["batchTimestampMs"]
              for b in range(kept.BEFORE)]
    return [MicroBatch([("source", r) for r in kept.rows(i)], logged[i]) for i in range(kept.BEFORE)]


def held(status: Any) -> Counter:
    return Counter({(r[START], r[END]): r[GROUPS] for r in status.windows.to_pylist()})


@pytest.mark.parametrize("kind", ["tumbling", "hopping", "session", "landmark"])
def test_the_windows_held_are_the_oracle_s_open_windows(spark: Any, tmp_path: Path, kind: str) -> None:
    from wid.kernels.operator.shard import LAYOUT

    root = tmp_path / "stream"
    shutil.copytree(Path(__file__).parents[1] / "checkpoints" / f"layout-{LAYOUT}" / kind, root)
    spec = load_pipeline(root / "pipeline.toml")
    status = status_of(spark, str(root / "ck"), spec)

    batches = kept_batches(root)
    expected = open_after(batches, spec.window, [("source", {})])
    assert expected and held(status) == expected
    assert status.committed == kept.BEFORE - 1 and status.logged == kept.BEFORE - 1
    assert status.global_watermark_us == run_stream(batches, spec.window)[-1].watermark_us
    why = status.why_waiting(1)[0]
    assert all(format_us(bound) in why for bound in min(expected)), why  # the oldest window
    assert [c.source for c in status.clocks] == ["source"] and not status.clocks[0].holds_back
    assert set(status.shard_bytes) == {"0", "1"} and all(n > 0 for n in status.shard_bytes.values())


@pytest.mark.parametrize("kind", ["count", "rolling"])
def test_an_extent_in_progress_starts_at_its_group_s_first_row_waiting(spark: Any, tmp_path: Path, kind: str) -> None:
    """Count and rolling windows ranked by event time: a row waits for its
    rank until the watermark passes it, so each group's extent in progress
    starts at its first row past the oracle's watermark, and has no end."""
    from wid.kernels.operator.shard import LAYOUT

    root = tmp_path / "stream"
    shutil.copytree(Path(__file__).parents[1] / "checkpoints" / f"layout-{LAYOUT}" / kind, root)
    spec = load_pipeline(root / "pipeline.toml")
    status = status_of(spark, str(root / "ck"), spec)
    rows = [r for i in range(kept.BEFORE) for r in kept.rows(i)]
    mark = run_stream(kept_batches(root), spec.window)[-1].watermark_us
    assert mark is not None and status.global_watermark_us == mark
    first: dict[str, int] = {}
    for r in rows:
        if r["ts"] * 1000 > mark:
            first[r["k"]] = min(first.get(r["k"], r["ts"] * 1000), r["ts"] * 1000)
    assert first and held(status) == Counter((at, None) for at in first.values())


KAFKA = """
name = "status"

[source]
format = "kafka"
topic = "{topic}"
bootstrap_servers = "{bootstrap}"
schema = "origin STRING, v DOUBLE"

[transform.window]
kind = "tumbling"
duration_ms = 3600000
group_by = ["origin"]
source_idleness_ms = 5000
max_groups_per_window = 10

[[transform.window.aggregations]]
agg = "count"
as = "departures"

[stream]
trigger = "available-now"
checkpoint = "ck"

[target]
kind = "sqlite"
path = "out.sqlite"
table = "hourly"
"""
T0_MS = 1_700_002_800_000  # an hour's start
MIN_MS = 60_000
JFK, LGA, EWR = 0, 1, 2  # one partition per origin, as in examples/flights_kafka.py


def departures(partition: int, origin: str, minutes: range) -> list[tuple[int, int, bytes, bytes]]:
    return [(partition, T0_MS + m * MIN_MS, origin.encode(), json.dumps({"origin": origin, "v": 1.0}).encode())
            for m in minutes]


def payload(value: bytes | None) -> dict[str, Any] | None:
    return None if value is None else json.loads(value)


def test_status_names_the_partition_and_the_window_that_waits(spark: Any, kafka: Any, tmp_path: Path) -> None:
    """Three partitions: EWR falls silent (idle after 5 s of micro-batch
    time), LGA is behind and holds the global watermark back, so the hour
    every origin began waits for LGA's partition."""
    topic = kafka.topic("departures", partitions=3)
    (tmp_path / "pipeline.toml").write_text(KAFKA.format(topic=topic, bootstrap=kafka.bootstrap))
    spec = load_pipeline(tmp_path / "pipeline.toml")
    produced = produce_rows(kafka, topic, departures(JFK, "JFK", range(0, 120, 10)) +
                            departures(LGA, "LGA", range(0, 30, 5)) + departures(EWR, "EWR", range(0, 20, 5)), payload)
    run(spec, spark)
    time.sleep(spec.window.source_idleness_ms / 1000 + 1)  # EWR's partition receives nothing meanwhile
    produced = produce_rows(kafka, topic, departures(JFK, "JFK", range(120, 180, 10)) +
                            departures(LGA, "LGA", range(40, 55, 5)), payload, produced)
    run(spec, spark)

    status = status_of(spark, str(tmp_path / "ck"), spec)
    batches = micro_batches(offset_log(tmp_path / "ck"), produced)
    clocks = [("source", {"_topic": topic, "_partition": p}) for p in (JFK, LGA, EWR)]
    expected = open_after(batches, spec.window, clocks)
    assert held(status) == expected and expected[(T0_MS * 1000, (T0_MS + 60 * MIN_MS) * 1000)] == 3
    assert status.global_watermark_us == run_stream(batches, spec.window)[-1].watermark_us
    back = status.holding_back
    assert back is not None and (back.topic, back.partition) == (topic, LGA)
    assert [c.partition for c in status.clocks if c.idle] == [EWR]
    assert [(e.batch_id, e.rows_in) for e in status.history] == [(b, len(m.rows)) for b, m in enumerate(batches)]
    why = status.why_waiting(1)[0]
    assert "2023-11-14T23:00:00Z, 2023-11-15T00:00:00Z" in why and f"partition {LGA} of topic {topic}" in why, why

    shown = CliRunner().invoke(app, ["status", str(tmp_path / "pipeline.toml"), "--json"])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.output)
    assert data["windows"]["count"] == len(expected) and data["why"][0] == why
    assert {(c["partition"], c["idle"], c["holds_back"]) for c in data["clocks"]} == {
        (JFK, False, False), (LGA, False, True), (EWR, True, False)}


def test_a_stream_that_has_not_run_says_so(spark: Any, tmp_path: Path) -> None:
    from wid.kernels.operator.shard import LAYOUT

    shutil.copy(Path(__file__).parents[1] / "checkpoints" / f"layout-{LAYOUT}" / "tumbling" / "pipeline.toml", tmp_path)
    shown = CliRunner().invoke(app, ["status", str(tmp_path / "pipeline.toml"), "--json"])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.output)
    assert data["committed"] is None and data["windows"]["count"] == 0
    assert any("the stream has not run" in n for n in data["notes"]), data["notes"]
