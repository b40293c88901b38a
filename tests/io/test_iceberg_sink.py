"""The Iceberg sink on a real Iceberg table (Iceberg's runtime jar in the
test session, a Hadoop catalog on a temporary warehouse): MERGE INTO on the
natural key, NULL-safe; deletes by key; a table of other columns refused;
and pipelines end to end against the oracles: a batch run and its rerun,
a stream whose session windows merge (the retracted ones deleted), and
`wid run` SIGKILLed just after its Iceberg commit and restarted. Run with
``-m iceberg`` in the lakehouse environment, on a PySpark Iceberg has a
runtime for (4.0, 4.1)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("delta", reason="lakehouse tests run in the lakehouse environment (the delta-spark package)")

from tests.crash_harness import KillAt, finish, kill_at, make_stream  # noqa: E402
from tests.fixtures import COLUMNS, HOPPING, POLICIES, land, pipeline_toml  # noqa: E402
from tests.lakehouse_check import AfterTableCommit, with_sinks  # noqa: E402
from tests.pipelines.test_late_data import assert_final_sessions, bridging_sessions  # noqa: E402
from tests.sink_check import (  # noqa: E402
    as_sink_row,
    assert_same_rows,
    dead_letters,
    expected_dead,
    stream_outcome,
)
from wid.errors import ConfigError  # noqa: E402
from wid.io import iceberg  # noqa: E402
from wid.io.sql_sinks import for_export  # noqa: E402
from wid.pipelines.run import run as run_pipeline  # noqa: E402
from wid.semantics import evaluate, reasons  # noqa: E402
from wid.spec.lakehouse import installed_spark_version, package_for  # noqa: E402
from wid.spec.toml_io import load_pipeline, loads_pipeline  # noqa: E402

VERSION = installed_spark_version() or "?"
pytestmark = [pytest.mark.iceberg, pytest.mark.skipif(
    package_for("iceberg", VERSION) is None, reason=f"Iceberg has no Spark runtime for PySpark {VERSION}")]
SCHEMA = "ws STRING, k STRING, n LONG"
ICEBERG_SINKS = ('[target]\nkind = "iceberg"\npath = "warehouse"\ntable = "windows"\n\n'
                 '[dead_letter]\nkind = "iceberg"\npath = "warehouse"\ntable = "wid.dead_letter"')


def frame(spark: Any, rows: list[tuple[Any, ...]]) -> Any:
    return spark.createDataFrame(rows, SCHEMA).selectExpr("to_timestamp(ws) AS ws", "k", "n")


def table_rows(spark: Any, warehouse: Path, table: str) -> list[dict[str, Any]]:
    """The table's rows as the SQLite sink holds them (timestamps as ISO
    text); [] when there is no table."""
    name = iceberg.table_name(spark, str(warehouse), table)
    if not spark.catalog.tableExists(name):
        return []
    return [r.asDict() for r in for_export(spark.table(name)).collect()]


def held(spark: Any, warehouse: Path) -> list[tuple[Any, ...]]:
    return sorted((tuple(r.values()) for r in table_rows(spark, warehouse, "t")), key=repr)


def test_merge_upserts_on_the_key_null_safe_and_deletes(spark: Any, tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    iceberg.merge(frame(spark, [("2024-01-01 00:00:00", "a", 1), ("2024-01-01 00:00:00", None, 2)]), wh, "t",
                  ["ws", "k"])
    again = frame(spark, [("2024-01-01 00:00:00", "a", 10), ("2024-01-01 00:00:00", None, 20),
                          ("2024-01-01 00:01:00", "c", 3)])
    iceberg.merge(again, wh, "t", ["ws", "k"])
    iceberg.merge(again, wh, "t", ["ws", "k"])  # replayed: no duplicates
    assert held(spark, tmp_path / "wh") == [
        ("2024-01-01T00:00:00.000000Z", "a", 10), ("2024-01-01T00:00:00.000000Z", None, 20),
        ("2024-01-01T00:01:00.000000Z", "c", 3)]
    assert (tmp_path / "wh" / "default" / "t" / "metadata").is_dir()  # the Hadoop catalog's layout
    keys = frame(spark, [("2024-01-01 00:00:00", None, 0), ("2024-01-01 00:00:00", None, 0)]).select("ws", "k")
    iceberg.delete(keys, wh, "t", ["ws", "k"])
    assert held(spark, tmp_path / "wh") == [("2024-01-01T00:00:00.000000Z", "a", 10),
                                            ("2024-01-01T00:01:00.000000Z", "c", 3)]
    iceberg.delete(keys, wh, "none", ["ws", "k"])  # no table yet: nothing to delete
    assert not (tmp_path / "wh" / "default" / "none").exists()


def test_a_table_of_other_columns_is_refused(spark: Any, tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    iceberg.merge(spark.createDataFrame([(1,)], "x LONG"), wh, "ns.t", ["x"])
    with pytest.raises(ConfigError) as err:
        iceberg.merge(frame(spark, [("2024-01-01 00:00:00", "a", 1)]), wh, "ns.t", ["ws", "k"])
    assert err.value.field == "target.table" and "has columns ['x']" in str(err.value)


def iceberg_toml(text: str) -> str:
    return with_sinks(text, ICEBERG_SINKS, ("iceberg",))


def test_a_batch_run_equals_the_oracle_and_a_rerun_changes_nothing(spark: Any, tmp_path: Path) -> None:
    rng = random.Random(4)
    t0 = 1_700_000_000_000
    rows = [{"k": f"k{rng.randrange(5)}", "ts": t0 + rng.randrange(600_000), "v": float(rng.randrange(50))}
            for _ in range(300)] + [{"k": None, "ts": t0 + 5, "v": 1.0}]
    broken = '{"k": "a", "ts": "broken", "v": 1.0}'
    land(tmp_path / "land", [[json.dumps(r) for r in rows] + [broken]])
    text = iceberg_toml(pipeline_toml(HOPPING, name="batch-iceberg")).replace("stream = true\n", "").replace(
        'options = { maxFilesPerTrigger = "1" }\n', "")
    spec = loads_pipeline(text, base_dir=str(tmp_path))
    run_pipeline(spec, spark)
    written = table_rows(spark, tmp_path / "warehouse", "windows")
    oracle = evaluate(rows, spec.window)
    assert_same_rows(spec.window, written, [as_sink_row(spec.window, r) for r in oracle.rows])
    dead = dead_letters(table_rows(spark, tmp_path / "warehouse", "wid.dead_letter"))
    assert dead == expected_dead([(reasons.MALFORMED, broken), *[(d.reason, d.row) for d in oracle.dead_letter]],
                                 COLUMNS)
    run_pipeline(spec, spark)
    assert sorted(map(repr, table_rows(spark, tmp_path / "warehouse", "windows"))) == sorted(map(repr, written))
    assert dead_letters(table_rows(spark, tmp_path / "warehouse", "wid.dead_letter")) == dead


def test_session_retractions_leave_the_iceberg_table_as_the_oracle(spark: Any, tmp_path: Path) -> None:
    spec, batches = bridging_sessions(spark, tmp_path, "sessions-ice", iceberg_toml)
    assert_final_sessions(table_rows(spark, tmp_path / "warehouse", "windows"), batches, spec.window)


def test_killed_just_after_an_iceberg_commit_and_restarted_the_tables_equal_the_oracle(
        spark: Any, tmp_path: Path) -> None:
    batches = make_stream(tmp_path, files=6, rows_per_file=40, rng=random.Random(11),
                          extent=HOPPING + POLICIES["dlq"])
    (tmp_path / "pipeline.toml").write_text(iceberg_toml((tmp_path / "pipeline.toml").read_text()))
    commit = AfterTableCommit(2, tmp_path / "warehouse" / "default" / "windows" / "metadata", "v*.metadata.json")
    spots = [kill_at(tmp_path, KillAt("after-commit", 0)), kill_at(tmp_path, commit)]
    assert spots == [("after-commit", True), ("in-batch", True)], spots
    finish(tmp_path)
    window = load_pipeline(tmp_path / "pipeline.toml").window
    written = table_rows(spark, tmp_path / "warehouse", "windows")
    _, want_rows, want_dead = stream_outcome(window, batches, COLUMNS, list(written[0]) if written else [])
    assert_same_rows(window, written, want_rows)
    assert dead_letters(table_rows(spark, tmp_path / "warehouse", "wid.dead_letter")) == want_dead
    assert written and any(reason == reasons.LATE for reason, _ in want_dead)
