"""Streaming pipelines end to end: a landing directory of JSON files, the
window stage on the WID operator, SQLite upserts, dead letters with reasons, files and
batch ids, and the accounting identity per micro-batch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import good_rows, land, pipeline_toml, table, write_pipeline
from wid.pipelines.run import run as run_stream
from wid.semantics import evaluate
from wid.semantics.reasons import MALFORMED
from wid.spec.toml_io import load_pipeline


@pytest.mark.leg
def test_landing_directory_to_sqlite_with_dead_letters(spark: Any, tmp_path: Path) -> None:
    rows = good_rows(30)
    files = [[json.dumps(r) for r in rows[i:i + 10]] for i in range(0, 30, 10)]
    files[1] += ['{"k": "a", "ts": "not a number", "v": 1.0}', "{not json at all", '{"k": "a", "v": 2.0}',
                 '{"ts": 1700000005000, "v": 2.0}']
    land(tmp_path / "land", files)
    spec = load_pipeline(write_pipeline(tmp_path))
    report = run_stream(spec, spark)

    assert report.identity_holds
    assert report.total("rows_in") == 34 and report.total("rows_rejected") == 4
    assert report.total("rows_late") == 0
    wm_us = (max(r["ts"] for r in rows) - spec.window.lateness_ms) * 1000
    want = [r for r in evaluate(rows, spec.window).rows if r["window_end"] <= wm_us]
    got = table(tmp_path / "out.sqlite", "windows")
    assert sorted((g["k"], g["n"], g["total"]) for g in got) == sorted((w["k"], w["n"], w["total"]) for w in want)
    dead = table(tmp_path / "out.sqlite", "dead_letter")
    assert sorted(d["reason"] for d in dead) == sorted([MALFORMED, MALFORMED, "null event time", "null group key: k"])
    assert {d["batch_id"] for d in dead} == {1}
    assert all(d["source_file"].endswith("part-0001.json") for d in dead)
    assert "{not json at all" in {d["row_json"] for d in dead}
    assert cache_files(spark) == []  # the operator's host-local state cache went with the query


def cache_files(spark: Any) -> list[str]:
    """The files under the state cache of every executor directory one job's
    tasks see (in local mode, the one directory all tasks share)."""
    import pyarrow as pa

    from wid.kernels.operator.state_cache import CACHE_DIR

    def listed(batches: Any) -> Any:  # runs on executors, which may lack wid: it uses the name only
        from pyspark import SparkFiles

        for _ in batches:
            pass
        root = Path(SparkFiles.getRootDirectory()) / CACHE_DIR
        yield pa.record_batch([pa.array([str(p) for p in root.rglob("*") if p.is_file()], pa.string())], ["file"])
    return sorted({r[0] for r in spark.range(0, 8, 1, 8).mapInArrow(listed, "file string").collect()})


@pytest.mark.leg
def test_restart_resumes_from_the_checkpoint_without_duplicates(spark: Any, tmp_path: Path) -> None:
    rows = good_rows(40)
    land(tmp_path / "land", [[json.dumps(r) for r in rows[:20]]])
    spec = load_pipeline(write_pipeline(tmp_path, "hopping"))
    first = run_stream(spec, spark)
    land(tmp_path / "land2", [[json.dumps(r) for r in rows[20:]]])
    (tmp_path / "land2" / "part-0000.json").rename(tmp_path / "land" / "part-0001.json")
    second = run_stream(spec, spark)

    assert first.identity_holds and second.identity_holds
    assert first.total("rows_in") + second.total("rows_in") == 40
    wm_us = (max(r["ts"] for r in rows) - spec.window.lateness_ms) * 1000
    want = [r for r in evaluate(rows, spec.window).rows if r["window_end"] <= wm_us]
    got = table(tmp_path / "out.sqlite", "windows")
    assert len(got) == len(want)
    assert sorted((g["k"], g["window_start"], g["n"]) for g in got) == sorted(
        (w["k"], w["window_start"], w["n"]) for w in [{**w, "window_start": _iso(w["window_start"])} for w in want])


def _iso(us: int) -> str:
    from datetime import UTC, datetime, timedelta

    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_explain_names_the_wid_operator_and_why(spark: Any, tmp_path: Path) -> None:
    from wid.pipelines.read import compile_pipeline
    from wid.spark.explain import explain

    land(tmp_path / "land", [[json.dumps(r) for r in good_rows(3)]])
    spec = load_pipeline(write_pipeline(tmp_path, "hopping"))
    ex = explain(compile_pipeline(spark, spec).result, spec.window, spec)
    assert ex.form.startswith("WID operator") and "counts every late row" in ex.why
    # Spark 4.0 names the operator TransformWithStateInPandas, later releases TransformWithStateInPySpark
    assert [n for op, n in ex.operators.items() if op.startswith("TransformWithStateIn")] == [1]
    assert "StateStoreSave" not in ex.operators
    assert any("dropped" in w for w in ex.warnings) and ex.state.startswith("streaming, WID operator")


def test_missing_kafka_connector_is_named_with_its_fix(tmp_path: Path) -> None:
    """In a Spark session without the connector (this suite's session has it)."""
    import subprocess
    import sys

    script = """
from wid.errors import MissingDependencyError
from wid.io.sources import read_source
from wid.spark.spark_session import spark_session
from wid.spec.pipeline import SourceSpec

spark = spark_session("local[1]")
try:
    read_source(spark, SourceSpec("kafka", topic="events", bootstrap_servers="127.0.0.1:9"))
except MissingDependencyError as err:
    print("MISSING", err, "FIX", err.fix)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert "MISSING" in out.stdout and "spark-sql-kafka-0-10" in out.stdout, out.stderr[-2000:]
    assert "spark.jars.packages" in out.stdout.split("FIX", 1)[1]


def test_rate_micro_batch_source_runs_once_and_accounts_for_its_rows(spark: Any, tmp_path: Path) -> None:
    from wid.spec.toml_io import loads_pipeline

    text = pipeline_toml('kind = "tumbling"\nduration_ms = 1000', name="rate").replace(
        'format = "json"\npath = "land"\nstream = true\nschema = "k STRING, ts LONG, v DOUBLE"\n'
        'options = { maxFilesPerTrigger = "1" }', 'format = "rate-micro-batch"\noptions = { rowsPerBatch = "100", advanceMillisPerBatch = "5000" }')
    text = text.replace('event_time_unit = "ms"\n', "").replace('"ts"', '"timestamp"').replace(
        'group_by = ["k"]', 'group_by = ["parity"]').replace('column = "v"', 'column = "value"')
    text = text.replace("[transform.window]", '[transform]\nsql = "SELECT *, value % 2 AS parity FROM source"\n\n'
                        "[transform.window]") + '\n[stream]\ntrigger = "once"\n'
    spec = loads_pipeline(text, base_dir=str(tmp_path))
    assert spec.source.is_stream and spec.stream.trigger == "once"
    report = run_stream(spec, spark)
    assert report.identity_holds and len(report.batches) == 1
    assert report.total("rows_in") == report.total("rows_aggregated") == 100  # one batch: nothing late


def test_two_sources_in_toml_run_on_the_minimum_watermark(spark: Any, tmp_path: Path) -> None:
    import wid

    ahead, behind = good_rows(30), good_rows(10)
    land(tmp_path / "land", [[json.dumps(r) for r in ahead]])
    land(tmp_path / "land2", [[json.dumps(r) for r in behind] + ['{"k": null, "ts": 1700000000000, "v": 1.0}']])
    text = pipeline_toml('kind = "tumbling"\nduration_ms = 10000', name="two").replace("[source]", "[[source]]")
    second = text[text.index("[[source]]"):text.index("[transform.window]")].replace(
        'path = "land"', 'path = "land2"') + 'name = "second"\n\n'
    text = text.replace("[transform.window]", second + "[transform.window]", 1)
    spec = wid.loads_pipeline(text, base_dir=str(tmp_path))
    assert [s.name for s in spec.sources] == ["source", "second"]
    assert wid.loads_pipeline(wid.dumps_pipeline(spec), base_dir=str(tmp_path)) == spec
    report = run_stream(spec, spark)
    wm = max(r["ts"] for r in behind) - spec.window.lateness_ms
    assert report.batches[-1].watermark_ms == wm and report.identity_holds
    assert report.total("rows_in") == 41 and report.total("rows_rejected") == 1
    want = [w for w in evaluate(ahead + behind, spec.window).rows if w["window_end"] <= wm * 1000]
    got = table(tmp_path / "out.sqlite", "windows")
    assert sorted((g["k"], g["n"], g["total"]) for g in got) == sorted((w["k"], w["n"], w["total"]) for w in want)
    assert [d["source"] for d in table(tmp_path / "out.sqlite", "dead_letter")] == ["second"]


