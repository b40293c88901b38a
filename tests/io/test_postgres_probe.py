"""A pipeline's PostgreSQL sinks are checked before Spark starts
(`wid.io.postgres_probe`), by ``wid run`` and ``wid validate`` alike, against
the suite's real server: each problem is one line naming the field and the
fix, exit status 2, within a deadline (a bound on a hang, not a speed).

Point 4 of issue 55: psycopg missing, `url_env` unset and a server that is
down surfaced 46, 58 and 72 s into a run, after Spark had computed the rows,
the last after 6 retry warnings and a word about a checkpoint a batch run
does not have; ``wid validate`` said ok to all three.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.docs.snippets import ROOT

DEADLINE_S = 120  # a check waits PROBE_S at most; the rest is Python and PySpark importing, on a loaded machine
PIPELINE = """
name = "probe"

[source]
format = "csv"
path = "payments.csv"
schema = "shop STRING, ts TIMESTAMP, amount DOUBLE"

[transform.window]
kind = "tumbling"
duration = "5 minutes"
event_time_column = "ts"
group_by = ["shop"]

[[transform.window.aggregations]]
agg = "count"
as = "payments"

[target]
kind = "postgres"
url_env = "WID_PROBE_URL"
table = "{table}"
"""


def wid(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``wid`` run as a user runs it, from `cwd`; `env` replaces the
    variables it names (None: removed)."""
    full = {**os.environ, "COLUMNS": "200", "PYSPARK_PYTHON": sys.executable}
    full.pop("WID_PROBE_URL", None)
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "wid.cli", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=DEADLINE_S)


def pipeline(tmp_path: Path, table: str = "probe_windows") -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "payments.csv").write_text((ROOT / "examples" / "payments.csv").read_text())
    (tmp_path / "probe.toml").write_text(PIPELINE.format(table=table))
    return tmp_path


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    """The run's one error line (and no more than that on stderr)."""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), done.stdout + done.stderr
    assert "checkpoint" not in done.stdout + done.stderr  # a batch run has none
    return lines[0]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("command", ["run", "validate"])
def test_an_unset_url_env_is_named_before_spark_starts(tmp_path: Path, command: str) -> None:
    line = one_error(wid(pipeline(tmp_path), command, "probe.toml"))
    assert line.startswith("error: target.url_env: environment variable WID_PROBE_URL is not set"), line


@pytest.mark.parametrize("command", ["run", "validate"])
def test_a_server_that_is_down_is_named_in_one_line(tmp_path: Path, command: str) -> None:
    url = f"postgresql://wid@127.0.0.1:{closed_port()}/postgres"
    line = one_error(wid(pipeline(tmp_path), command, "probe.toml", env={"WID_PROBE_URL": url}))
    assert line.startswith("error: target.url_env: PostgreSQL at $WID_PROBE_URL does not answer"), line
    assert "start the server" in line


def test_validate_offline_skips_the_server_but_not_the_variable(tmp_path: Path) -> None:
    root = pipeline(tmp_path)
    url = f"postgresql://wid@127.0.0.1:{closed_port()}/postgres"
    offline = wid(root, "validate", "--offline", "probe.toml", env={"WID_PROBE_URL": url})
    assert offline.returncode == 0 and offline.stdout.startswith("ok: pipeline probe"), offline.stdout + offline.stderr
    assert "WID_PROBE_URL" in one_error(wid(root, "validate", "--offline", "probe.toml"))


def test_a_missing_driver_is_named_with_the_extra(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "psycopg"  # a psycopg that does not import: as when it is not installed
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no psycopg here')\n")
    env = {"PYTHONPATH": f"{shadow.parent}{os.pathsep}{ROOT}", "WID_PROBE_URL": "postgresql://wid@127.0.0.1/x"}
    line = one_error(wid(pipeline(tmp_path / "p"), "run", "probe.toml", env=env))
    assert line == ("error: the PostgreSQL driver psycopg (for a postgres sink) is missing. "
                    "Fix: pip install 'spark-wid[postgres]'"), line


def test_a_table_the_role_may_not_write_is_named(tmp_path: Path, postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as con:
        con.execute("DROP ROLE IF EXISTS probe_reader")
        con.execute("CREATE ROLE probe_reader LOGIN")
        con.execute("CREATE TABLE IF NOT EXISTS probe_kept (x BIGINT)")
        con.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    reader = postgres_url.replace("wid@", "probe_reader@")
    written = wid(pipeline(tmp_path), "validate", "probe.toml", env={"WID_PROBE_URL": reader})
    assert "error: target.table: table 'probe_windows' does not exist, and role probe_reader may not create it in " \
           "schema public" in one_error(written)
    (tmp_path / "probe.toml").write_text(PIPELINE.format(table="probe_kept"))
    kept = one_error(wid(tmp_path, "validate", "probe.toml", env={"WID_PROBE_URL": reader}))
    assert kept.startswith("error: target.table: role probe_reader may not INSERT and UPDATE table 'probe_kept'"), kept
    # the suite's own role owns the schema: the same file validates
    ok = wid(tmp_path, "validate", "probe.toml", env={"WID_PROBE_URL": postgres_url})
    assert ok.returncode == 0, ok.stdout + ok.stderr
