"""Pipelines into Delta tables end to end (windows and dead letters both
Delta), against the oracles: a batch run equals `wid.semantics.evaluate`
and a rerun leaves both tables as they were; a stream whose session
windows merge (the writer deletes the retracted ones) leaves the table the
streaming oracle's; and `wid run` SIGKILLed after a commit and just after
its Delta commit, before Spark's, and restarted ends with the tables
the streaming oracle gives for the landed files. Run with ``-m delta`` on a
PySpark Delta supports."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("delta", reason="Delta Lake tests need the delta-spark package (the Delta CI leg)")

from tests.crash_harness import KillAt, checkpoint, finish, kill_at, make_stream  # noqa: E402
from tests.fixtures import COLUMNS, HOPPING, POLICIES, land, pipeline_toml  # noqa: E402
from tests.lakehouse_check import AfterTableCommit, with_sinks  # noqa: E402
from tests.pipelines.test_late_data import assert_final_sessions, bridging_sessions  # noqa: E402
from tests.sink_check import (  # noqa: E402
    Row,
    as_sink_row,
    assert_same_rows,
    dead_letters,
    expected_dead,
    stream_outcome,
)
from wid.io import lakehouse  # noqa: E402
from wid.io.sql_sinks import for_export  # noqa: E402
from wid.pipelines.run import run as run_pipeline  # noqa: E402
from wid.semantics import evaluate, reasons  # noqa: E402
from wid.spec.toml_io import load_pipeline, loads_pipeline  # noqa: E402

pytestmark = pytest.mark.delta
DELTA_SINKS = '[target]\nkind = "delta"\npath = "windows.delta"\n\n[dead_letter]\nkind = "delta"\npath = "dead.delta"'


def delta_toml(text: str) -> str:
    """A pipeline of `tests.fixtures` writing windows and dead letters to
    Delta tables (`tests.lakehouse_check.with_sinks`)."""
    return with_sinks(text, DELTA_SINKS, ("delta",))


def delta_rows(spark: Any, path: Path) -> list[Row]:
    """The Delta table's rows as the SQLite sink holds them (timestamps as
    ISO-8601 UTC text), [] when there is no table."""
    if lakehouse.table_schema(spark, str(path)) is None:
        return []
    return [r.asDict() for r in for_export(spark.read.format("delta").load(str(path))).collect()]


def test_a_batch_run_equals_the_oracle_and_a_rerun_changes_nothing(spark: Any, tmp_path: Path) -> None:
    rng = random.Random(3)
    t0 = 1_700_000_000_000
    rows = [{"k": f"k{rng.randrange(5)}", "ts": t0 + rng.randrange(600_000), "v": float(rng.randrange(50))}
            for _ in range(400)] + [{"k": None, "ts": t0 + 5, "v": 1.0}]  # a NULL group: a key Delta matches NULL-safe
    broken = '{"k": "a", "ts": "broken", "v": 1.0}'
    land(tmp_path / "land", [[json.dumps(r) for r in rows] + [broken]])
    text = delta_toml(pipeline_toml(HOPPING, name="batch-delta")).replace("stream = true\n", "").replace(
        'options = { maxFilesPerTrigger = "1" }\n', "")
    spec = loads_pipeline(text, base_dir=str(tmp_path))
    run_pipeline(spec, spark)
    written = delta_rows(spark, tmp_path / "windows.delta")
    oracle = evaluate(rows, spec.window)
    assert_same_rows(spec.window, written, [as_sink_row(spec.window, r) for r in oracle.rows])
    dead = dead_letters(delta_rows(spark, tmp_path / "dead.delta"))
    assert dead == expected_dead([(reasons.MALFORMED, broken), *[(d.reason, d.row) for d in oracle.dead_letter]],
                                 COLUMNS)
    history = spark.sql(f"DESCRIBE HISTORY {lakehouse.table_ref(str(tmp_path / 'windows.delta'))}").count()

    run_pipeline(spec, spark)  # the rerun merges the same windows onto themselves
    assert sorted(map(repr, delta_rows(spark, tmp_path / "windows.delta"))) == sorted(map(repr, written))
    assert dead_letters(delta_rows(spark, tmp_path / "dead.delta")) == dead
    again = spark.sql(f"DESCRIBE HISTORY {lakehouse.table_ref(str(tmp_path / 'windows.delta'))}").count()
    assert again == history + 1  # one more merge, which changed no row


def test_session_retractions_leave_the_delta_table_as_the_oracle(spark: Any, tmp_path: Path) -> None:
    spec, batches = bridging_sessions(spark, tmp_path, "sessions-delta", delta_toml)
    assert_final_sessions(delta_rows(spark, tmp_path / "windows.delta"), batches, spec.window)
    history = spark.sql(f"DESCRIBE HISTORY {lakehouse.table_ref(str(tmp_path / 'windows.delta'))}")
    assert history.where("operation = 'MERGE'").count() > len(batches)  # deletes and upserts, each a merge


def compare(spark: Any, root: Path, batches: list[list[Row | str]]) -> tuple[int, Counter[tuple[str, str]]]:
    """Assert both Delta tables hold what the streaming oracle gives for the
    landed files; return the windows' count and the dead letters."""
    window = load_pipeline(root / "pipeline.toml").window
    written = delta_rows(spark, root / "windows.delta")
    _, want_rows, want_dead = stream_outcome(window, batches, COLUMNS, list(written[0]) if written else [])
    assert_same_rows(window, written, want_rows)
    dead = dead_letters(delta_rows(spark, root / "dead.delta"))
    assert dead == want_dead
    return len(written), dead


def test_killed_inside_micro_batches_and_restarted_the_tables_equal_the_oracle(spark: Any, tmp_path: Path) -> None:
    batches = make_stream(tmp_path, files=8, rows_per_file=40, rng=random.Random(7),
                          extent=HOPPING + POLICIES["dlq"])
    (tmp_path / "pipeline.toml").write_text(delta_toml((tmp_path / "pipeline.toml").read_text()))
    ck = checkpoint(tmp_path)
    delta_commit = AfterTableCommit(2, tmp_path / "windows.delta" / "_delta_log")
    # the kill Delta adds to the SQLite crash tests' (tests/test_crash_recovery.py): just after its commit,
    # before Spark's, so the restart replays a micro-batch Delta already holds
    spots = [kill_at(tmp_path, KillAt("after-commit", 1)), kill_at(tmp_path, delta_commit)]
    assert spots == [("after-commit", True), ("in-batch", True)], spots
    assert not (ck / "commits" / "2").exists()
    finish(tmp_path)
    windows, dead = compare(spark, tmp_path, batches)
    assert windows > 0 and any(reason == reasons.LATE for reason, _ in dead)
