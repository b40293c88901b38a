"""The WID operator on Spark Structured Streaming (real state store, real
checkpoints) against the hand-worked transcripts and the streaming oracle."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import wid
from tests.spark.operator.spark_run import ddl, run_on_spark
from tests.transcript import HERE, load, schema_of
from wid.kernels.operator.output import KIND, STATS
from wid.spark.compile import compile_window
from wid.spark.operator.query import STATE_CACHE_CONF

ON_SPARK = ["hopping_generous_reopen", "hopping_consistent_dlq", "keyed_punctuation", "global_punctuation",
            "tumbling_on_update", "session_on_update", "session_reopen", "count_partitioned_dlq",
            "count_arrival_on_update", "rolling_reopen_on_update", "rolling_every_2_by_order",
            "landmark_generous_drop", "landmark_reopen_on_update"]  # (rejected rows never reach the operator)


@pytest.mark.parametrize("name", ON_SPARK)
def test_spark_replays_the_transcript(spark: Any, tmp_path: Path, name: str) -> None:
    transcript = load(HERE / f"{name}.toml")
    got = run_on_spark(spark, tmp_path, transcript.batches, transcript.window, schema_of(transcript))
    transcript.check(got)


@pytest.mark.parametrize("name", ["hopping_generous_reopen", "rolling_reopen_on_update"])
def test_spark_replays_the_transcript_without_the_host_local_state(spark: Any, tmp_path: Path, name: str) -> None:
    transcript = load(HERE / f"{name}.toml")
    spark.conf.set(STATE_CACHE_CONF, "false")
    try:
        got = run_on_spark(spark, tmp_path, transcript.batches, transcript.window, schema_of(transcript))
    finally:
        spark.conf.unset(STATE_CACHE_CONF)
    transcript.check(got)


@pytest.mark.parametrize("setting", [None, "false"])
def test_state_commits_write_changelogs_unless_the_session_says_otherwise(spark: Any, tmp_path: Path,
                                                                          setting: str | None) -> None:
    # wid turns RocksDB's changelog checkpointing on when the session leaves it unset: every shard's commit
    # writes a changelog file (N.changelog) instead of a snapshot; a session's own "false" is kept (N.zip)
    from wid.spark.operator.query import CHANGELOG

    transcript = load(HERE / "rolling_reopen_on_update.toml")
    spark.conf.unset(CHANGELOG) if setting is None else spark.conf.set(CHANGELOG, setting)
    try:
        got = run_on_spark(spark, tmp_path, transcript.batches, transcript.window, schema_of(transcript))
        transcript.check(got)
    finally:
        spark.conf.unset(CHANGELOG)
    state = list((tmp_path / "ck" / "state").rglob("*"))
    changelogs = [f for f in state if f.name.endswith(".changelog")]
    snapshots = [f for f in state if f.name.endswith(".zip")]
    if setting is None:
        assert len(changelogs) >= len(transcript.batches), sorted(f.name for f in state)
    else:
        assert not changelogs and snapshots, sorted(f.name for f in state)


from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.kernels.operator.cases import SCHEMA, assert_same_results, specs, streams  # noqa: E402
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
    result = compile_window(frames, window)
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


def test_timestamp_event_times_and_late_rows_as_json(spark: Any, tmp_path: Path) -> None:
    """An event-time column of Spark's TIMESTAMP type on the operator with
    late_data = dlq: windows equal the oracle's, and the late row reaches the
    dead letter as the JSON Spark writes for it."""
    from datetime import UTC, datetime, timedelta

    from tests.fixtures import stamped
    from wid import Aggregation, Window
    from wid.semantics.stream_oracle import run_stream

    t0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
    files = [[("a", t0 + timedelta(seconds=s)) for s in (1, 4, 12)], [("a", t0 + timedelta(seconds=2))],
             [("b", t0 + timedelta(seconds=31))]]
    land = tmp_path / "land"
    land.mkdir()
    for i, rows in enumerate(files):
        path = land / f"part-{i}.json"
        path.write_text("".join(json.dumps({"k": k, "ts": t.isoformat()}) + "\n" for k, t in rows))
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    window = Window(kind="tumbling", duration_ms=10_000, event_time_column="ts", group_by=("k",), late_data="dlq",
                    max_groups_per_window=10, aggregations=(Aggregation("count", as_="n"),
                                                            Aggregation("last", "ts", as_="last_ts")))
    df = spark.readStream.schema("k STRING, ts TIMESTAMP").option("maxFilesPerTrigger", 1).json(str(land))
    result = wid.window_result(df, window)
    got: list[Any] = []
    dead: list[Any] = []

    def handle(frame: Any, _: int) -> None:
        got.extend(r.asDict() for r in frame.select(*window.output_prefix[:2], "k", "n", "last_ts").collect())
    query = result.output.writeStream.foreachBatch(handle).option("checkpointLocation", str(tmp_path / "c1")).trigger(
        availableNow=True).start()
    query.awaitTermination()
    query = result.dead_letter.writeStream.foreachBatch(lambda f, _: dead.extend(f.collect())).option(
        "checkpointLocation", str(tmp_path / "c2")).trigger(availableNow=True).start()
    query.awaitTermination()
    naive = [[{"k": k, "ts": t.replace(tzinfo=None)} for k, t in rows] for rows in files]
    oracle = run_stream(stamped(naive), window)
    want = sorted((e.row["k"], e.row["n"], e.row["last_ts"]) for o in oracle for e in o.emitted)
    assert sorted((g["k"], g["n"], g["last_ts"].replace(tzinfo=None)) for g in got) == want
    assert [json.loads(d["row_json"]) for d in dead] == [{"k": "a", "ts": "2024-03-01T12:00:02.000000Z"}]
    assert [d["reason"] for d in dead] == ["late: its window was already emitted"]


from tests.kernels.operator import test_extent_engines as extents  # noqa: E402
from tests.transcript import is_punctuation  # noqa: E402


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(window=extents.specs(), batches=extents.streams())
def test_spark_runs_count_rolling_and_landmark_as_the_oracle(spark: Any, tmp_path_factory: Any, window: Any,
                                                             batches: list[MicroBatch]) -> None:
    batches = [MicroBatch([("a", r) for _, r in b.rows], b.batch_ms) for b in extents.full(batches) if b.rows]
    got = run_on_spark(spark, tmp_path_factory.mktemp("op"), batches, window, extents.SCHEMA)
    extents.assert_same_results(window, got, run_stream(batches, window, is_punctuation))


def test_the_operator_reads_each_source_once(spark: Any, tmp_path: Path) -> None:
    # data rows, punctuation rows and (under dlq) the rows kept for late dead letters come from one scan of
    # each source: a second scan per source would read every micro-batch's files twice
    transcript = load(HERE / "keyed_punctuation.toml")
    window = dataclasses.replace(transcript.window, late_data="dlq")
    sources = {}
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        sources[name] = spark.readStream.schema(ddl(schema_of(transcript))).json(str(tmp_path / name))
    result = compile_window(sources, window)
    assert result.operator is not None
    plan = result.operator._jdf.queryExecution().analyzed().toString()
    assert plan.count("StreamingRelation") == len(sources), plan
