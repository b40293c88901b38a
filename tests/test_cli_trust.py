"""What each command may do with a pipeline file (docs/trust.md): `wid
validate`, `wid explain` and `wid explain --plan` refuse a SQL pre-stage that
is not one query before Spark starts, and so does `wid run`; `wid explain
--plan` runs no Spark job over the rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from wid.cli import app

PIPELINE = """
name = "trusted"

[source]
format = "csv"
path = "data.csv"
schema = "ts TIMESTAMP, k STRING, v DOUBLE"

[transform]
sql = \"\"\"{sql}\"\"\"

[transform.window]
kind = "hopping"
duration_ms = 60000
hop_ms = 20000
event_time_column = "ts"
group_by = ["k"]

[[transform.window.aggregations]]
agg = "sum"
column = "v"
as = "total"

[target]
kind = "sqlite"
path = "out.sqlite"
table = "windows"

[spark]
master = "local[1]"
"""
QUERY = "SELECT ts, k, v FROM source"
NOT_A_QUERY = {
    "insert overwrite directory": "INSERT OVERWRITE DIRECTORY '{elsewhere}' USING text SELECT 'w'",
    "set": "SET spark.sql.shuffle.partitions = 7",
    "two statements": "SELECT 1; SELECT 2",
    "insert after with": "WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a",
    "create table": "CREATE TABLE t USING parquet LOCATION '{elsewhere}' AS SELECT 1 AS x",
    "reflect": "SELECT ts, k, v, reflect('java.lang.Thread', 'sleep', 1L) AS slept FROM source",
}


def write(root: Path, sql: str) -> Path:
    (root / "data.csv").write_text("ts,k,v\n" + "".join(
        f"2024-01-01 00:{i // 60:02d}:{i % 60:02d},{'ab'[i % 2]},{i}\n" for i in range(0, 3600, 7)))
    path = root / "trusted.toml"
    path.write_text(PIPELINE.format(sql=sql.format(elsewhere=root / "elsewhere")))
    return path


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


@pytest.mark.parametrize("name", list(NOT_A_QUERY))
def test_validate_refuses_a_statement_that_is_not_one_query(tmp_path: Path, name: str) -> None:
    result = invoke("validate", str(write(tmp_path, NOT_A_QUERY[name])))
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: transform.sql: "), result.output


def test_validate_accepts_a_query(tmp_path: Path) -> None:
    result = invoke("validate", str(write(tmp_path, QUERY)))
    assert result.exit_code == 0 and result.output.startswith("ok: pipeline trusted"), result.output


@pytest.mark.parametrize("command", [("explain",), ("explain", "--plan"), ("run", "--quiet")])
def test_a_writing_statement_is_refused_before_spark_starts(tmp_path: Path, command: tuple[str, ...],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from wid.pipelines import read, run

    started: list[object] = []
    # how every command starts Spark; patched where it is bound too (`run` imports it by name), so that a module
    # first imported during this test never keeps the stand-in after it (a later run_pipeline got no session)
    for module in (read, run):
        monkeypatch.setattr(module, "session_for", lambda spec: started.append(spec))
    path = write(tmp_path, NOT_A_QUERY["insert overwrite directory"])
    result = invoke(command[0], str(path), *command[1:])
    assert result.exit_code == 2 and "error: transform.sql: must be a single query" in result.output, result.output
    assert not (tmp_path / "elsewhere").exists() and started == []


def _jobs(spark: Any) -> set[int]:
    """The ids of the Spark jobs the session has run (the classic session's
    status tracker; the test leg runs on it)."""
    return set(spark.sparkContext.statusTracker().getJobIdsForGroup(None))


def test_explain_plan_runs_no_spark_job_over_the_rows(spark: Any, tmp_path: Path) -> None:
    path = write(tmp_path, QUERY)
    before = _jobs(spark)
    result = invoke("explain", "--plan", str(path))
    assert result.exit_code == 0, result.output
    assert _jobs(spark) == before, "explain --plan ran a Spark job"
    out = " ".join(result.output.split())
    assert "panes of 20000 ms" in out and "Spark operators:" in out  # the plan is shown, compiled on Spark
    assert "no sample taken" in out and "chosen when it runs" in out
    # the reference that the check observes jobs: the stage itself samples the rows to choose its plan
    assert invoke("run", "--quiet", str(path)).exit_code == 0
    assert _jobs(spark) != before
