"""The WID operator on Spark Structured Streaming (real state store, real
checkpoints) against the hand-worked transcripts and the streaming oracle."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import wid
from tests.spark.operator.spark_run import ddl, run_on_spark
from tests.transcript import HERE, load, schema_of
from wid.spark.operator.output import KIND, STATS

ON_SPARK = ["hopping_generous_reopen", "hopping_consistent_dlq", "keyed_punctuation", "global_punctuation",
            "tumbling_on_update", "session_on_update", "session_reopen"]


@pytest.mark.parametrize("name", ON_SPARK)
def test_spark_replays_the_transcript(spark: Any, tmp_path: Path, name: str) -> None:
    transcript = load(HERE / f"{name}.toml")
    got = run_on_spark(spark, tmp_path, transcript.batches, transcript.window, schema_of(transcript))
    transcript.check(got)


from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.spark.operator.test_engine import SCHEMA, assert_same_results, specs, streams  # noqa: E402
from wid.semantics.stream_oracle import MicroBatch, run_stream  # noqa: E402


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(window=specs(), batches=streams(), data=st.data())
def test_spark_equals_the_oracle(spark: Any, tmp_path_factory: Any, window: Any, batches: list[MicroBatch],
                                 data: st.DataObject) -> None:
    batches = [MicroBatch([("a", r) for _, r in b.rows], b.batch_ms) for b in batches if b.rows]
    got = run_on_spark(spark, tmp_path_factory.mktemp("op"), batches, window, SCHEMA)
    assert_same_results(window, got, run_stream(batches, window))


def test_an_idle_source_stops_holding_the_watermark_back(spark: Any, tmp_path: Path) -> None:
    """Two landing directories read in one query with a processing-time
    trigger; source b goes quiet for longer than source_idleness_ms, then
    resumes with a row that has become late. Spark's batch timestamps are
    read back from the shards' counts and the oracle replays the same
    batches with them: the emissions must agree, and b's idleness must have
    let a's windows out before b resumed."""

    from tests.transcript import HERE, load
    from wid.semantics.stream_oracle import MicroBatch, run_stream

    window = load(HERE / "idle_source.toml").window  # tumbling 10 ms, idleness 100 ms

    window = dataclasses.replace(window, source_idleness_ms=2_000)
    plan = [("a", {"k": "x", "ts": 5}), ("b", {"k": "y", "ts": 3}), ("a", {"k": "x", "ts": 25}),
            ("a", {"k": "x", "ts": 35}), ("b", {"k": "y", "ts": 12}), ("a", {"k": "x", "ts": 48})]
    pauses = [0.0, 0.0, 1.0, 3.5, 0.5, 0.5]  # b is quiet for 5 s before its row at ts 12
    dirs = {s: tmp_path / s for s in "ab"}
    for d in dirs.values():
        d.mkdir()
    schema = ddl(pa.schema([("k", pa.string()), ("ts", pa.int64())]))
    frames = {s: spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(str(d)) for s, d in dirs.items()}
    result = wid.window_result(frames, window)
    batches: dict[int, list[Any]] = {}

    def handle(frame: Any, batch_id: int) -> None:
        batches[batch_id] = [r.asDict() for r in frame.collect()]
    query = (result.operator.writeStream.foreachBatch(handle).option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(processingTime="200 milliseconds").start())
    try:
        for i, ((source, row), pause) in enumerate(zip(plan, pauses, strict=True)):
            time.sleep(pause)
            (dirs[source] / f"part-{i:04d}.json").write_text(json.dumps(row) + "\n")
            deadline = time.monotonic() + 60
            while sum(1 for rows in list(batches.values()) if any(r[KIND] == "s" for r in rows)) < i + 1:
                assert time.monotonic() < deadline, "the query did not pick up the file"
                time.sleep(0.05)
    finally:
        query.stop()
    # each file was its own micro-batch; replay them through the oracle with Spark's batch timestamps
    ordered = [batches[b] for b in sorted(batches) if any(r[KIND] == "s" for r in batches[b])]
    stamps = [max(json.loads(r[STATS])["batch_ms"] for r in rows if r[KIND] == "s") for rows in ordered]
    micro = [MicroBatch([plan[i]], stamps[i]) for i in range(len(plan))]
    oracle = run_stream(micro, window)
    got = [sorted((r["_wid_start"], r["k"], r["n"]) for r in rows if r[KIND] == "w") for rows in ordered]
    want = [sorted((e.row["window_start"], e.row["k"], e.row["n"]) for e in o.emitted) for o in oracle]
    assert got == want
    assert any(o.emitted for o in oracle[:4]), "b's idleness let a's windows out before b resumed"
    assert oracle[4].rows_late_dropped == 1
