"""Streaming pipelines end to end: a landing directory of JSON files, the
window stage on the WID operator, SQLite upserts, dead letters with reasons, files and
batch ids, and the accounting identity per micro-batch."""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.crash_harness import HOPPING, pipeline_toml
from wid.semantics import evaluate
from wid.semantics.reasons import MALFORMED
from wid.spec.toml_io import load_pipeline
from wid.stream_pipeline import run_stream

EXTENTS = {"tumbling": 'kind = "tumbling"\nduration_ms = 10000', "hopping": HOPPING}


def good_rows(n: int, start_ms: int = 1_700_000_000_000) -> list[dict[str, Any]]:
    return [{"k": "ab"[i % 2], "ts": start_ms + i * 1_300, "v": float(i % 7)} for i in range(n)]


def land(directory: Path, lines_per_file: list[list[str]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for i, lines in enumerate(lines_per_file):
        path = directory / f"part-{i:04d}.json"
        path.write_text("".join(line + "\n" for line in lines))
        os.utime(path, (1_000_000 + i, 1_000_000 + i))


def write_pipeline(root: Path, kind: str = "tumbling") -> Path:
    toml = root / "pipeline.toml"
    toml.write_text(pipeline_toml(EXTENTS[kind], name="sensors"))
    return toml


def table(db: Path, name: str) -> list[dict[str, Any]]:
    with closing(sqlite3.connect(db)) as con:
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute(f'SELECT * FROM "{name}"')]


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
    from wid.batch_pipeline import compile_pipeline
    from wid.spark.explain import explain

    land(tmp_path / "land", [[json.dumps(r) for r in good_rows(3)]])
    spec = load_pipeline(write_pipeline(tmp_path, "hopping"))
    ex = explain(compile_pipeline(spark, spec), spec.window, spec)
    assert ex.form.startswith("WID operator") and "one micro-batch late" in ex.why
    assert ex.operators.get("TransformWithStateInPySpark") == 1 and "StateStoreSave" not in ex.operators
    assert any("dropped" in w for w in ex.warnings) and ex.state.startswith("streaming, WID operator")


def test_missing_kafka_connector_is_named_with_its_fix(spark: Any) -> None:
    import pytest

    from wid.errors import MissingDependencyError
    from wid.io.sources import read_source
    from wid.spec.pipeline import SourceSpec

    source = SourceSpec("kafka", options={"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "events"})
    with pytest.raises(MissingDependencyError) as err:
        read_source(spark, source)
    assert "spark-sql-kafka-0-10" in str(err.value) and "spark.jars.packages" in err.value.fix


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


def test_group_cap_on_a_stream_fails_with_the_design_message(spark: Any, tmp_path: Path) -> None:
    import pytest

    from wid.errors import StateCapError
    from wid.spec.toml_io import loads_pipeline

    land(tmp_path / "land", [[json.dumps(r) for r in good_rows(30)]])
    text = pipeline_toml('kind = "tumbling"\nduration_ms = 10000', name="capped").replace(
        "max_groups_per_window = 1000", "max_groups_per_window = 1")
    with pytest.raises(StateCapError) as err:
        run_stream(loads_pipeline(text, base_dir=str(tmp_path)), spark)
    assert "window state cap hit: max_groups_per_window=1 reached on window [2023-11-14T22:13:20Z, " in str(err.value)
    assert str(err.value).endswith(") for pipeline capped")


@pytest.mark.parametrize("extent", ['kind = "tumbling"\nduration_ms = 10000', HOPPING, 'kind = "count"\nsize_rows = 10',
                                    'kind = "landmark"\nhop_ms = 10000\nlandmark_ms = 0'],
                         ids=["tumbling", "hopping", "count", "landmark"])
def test_the_group_cap_fails_the_micro_batch_that_exceeds_it(spark: Any, tmp_path: Path, extent: str) -> None:
    # micro-batch 0 holds 10 groups in its first window against a cap of 3: that micro-batch fails, so
    # nothing is written and nothing is committed in the checkpoint
    from wid.errors import StateCapError
    from wid.spec.toml_io import loads_pipeline

    t0 = 1_700_000_000_000
    rows = [{"k": f"k{i}", "ts": t0 + i * 100, "v": 1.0} for i in range(10)] + [{"k": "k0", "ts": t0 + 60_000, "v": 1.0}]
    land(tmp_path / "land", [[json.dumps(r) for r in rows], [json.dumps({"k": "k0", "ts": t0 + 120_000, "v": 1.0})]])
    text = pipeline_toml(extent, name="capped").replace("max_groups_per_window = 1000", "max_groups_per_window = 3")
    with pytest.raises(StateCapError, match=r"max_groups_per_window=3 reached on window \["):
        run_stream(loads_pipeline(text, base_dir=str(tmp_path)), spark)
    assert not (tmp_path / "out.sqlite").exists() or not table(tmp_path / "out.sqlite", "windows")
    assert not list((tmp_path / "capped.checkpoint" / "commits").glob("[0-9]*"))
