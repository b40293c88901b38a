"""A password planted in a PostgreSQL sink never appears in anything wid
shows: `wid validate`, `wid explain`, `wid run` (its summary, its errors,
its log lines), a spec's ``repr``, `dumps_pipeline`. It may come from the
environment (`password_env`, `url_env`), and a mistyped URL is refused at
load time with the password masked. The server is the real one the suite
starts (trust authentication: any password connects)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import wid
from wid.cli import app
from wid.errors import ConfigError
from wid.spec.toml_io import load_pipeline, loads_pipeline

SECRET = "S3cr3t-Pl4nted"
PIPELINE = """
name = "secret"

[source]
format = "csv"
path = "data.csv"
schema = "ts TIMESTAMP, k STRING"

[transform.window]
kind = "tumbling"
duration_ms = 60000
event_time_column = "ts"
group_by = ["k"]

[[transform.window.aggregations]]
agg = "count"
as = "n"

[target]
kind = "postgres"
{connection}
table = "secret_windows"
retries = {retries}
retry_backoff_ms = 10

[dead_letter]
kind = "sqlite"
path = "out.sqlite"
table = "dead_letter"
"""


def pipeline(root: Path, connection: str, retries: int = 6) -> Path:
    (root / "data.csv").write_text("ts,k\n2024-01-01 00:00:10,a\n2024-01-01 00:00:20,b\nnot a time,a\n")
    path = root / "pipeline.toml"
    path.write_text(PIPELINE.format(connection=connection, retries=retries))
    return path


def with_secret(url: str) -> str:
    return url.replace("wid@", f"wid:{SECRET}@")


def shown(*args: str) -> tuple[int, str]:
    """`wid` run in-process: its exit code and what it printed (stdout and stderr, as a user sees them)."""
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_an_inline_password_is_masked_everywhere(spark: Any, postgres_url: str, tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    path = pipeline(tmp_path, f'url = "{with_secret(postgres_url)}"')
    caplog.set_level(logging.DEBUG)
    outputs = []
    for command in (("validate", str(path)), ("explain", str(path)), ("run", str(path), "--quiet")):
        code, text = shown(*command)
        assert code == 0, text
        outputs.append(text)
    spec = load_pipeline(path)
    outputs += [repr(spec), str(spec), wid.dumps_pipeline(spec), caplog.text]
    for text in outputs:
        assert SECRET not in text
    assert "***" in wid.dumps_pipeline(spec) and "***" in repr(spec.target)


def test_a_password_from_the_environment_connects_and_is_never_written(spark: Any, postgres_url: str, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WID_TEST_PG_PASSWORD", SECRET)
    monkeypatch.setenv("WID_TEST_PG_URL", with_secret(postgres_url))
    for connection in (f'url = "{postgres_url}"\npassword_env = "WID_TEST_PG_PASSWORD"', 'url_env = "WID_TEST_PG_URL"'):
        path = pipeline(tmp_path, connection)
        code, text = shown("run", str(path), "--quiet")
        assert code == 0, text
        spec = load_pipeline(path)
        assert SECRET not in text + repr(spec) + wid.dumps_pipeline(spec)
        assert loads_pipeline(wid.dumps_pipeline(spec), str(tmp_path)) == spec  # the names travel, not the secret


def test_a_mistyped_url_is_refused_at_load_time_without_the_password(tmp_path: Path) -> None:
    path = pipeline(tmp_path, f'url = "{with_secret("postgresq://wid@127.0.0.1:5432/postgres")}"')
    with pytest.raises(ConfigError) as err:
        load_pipeline(path)
    assert err.value.field == "target.url" and SECRET not in str(err.value) and "***" in str(err.value)
    code, text = shown("validate", str(path))
    assert code == 2 and SECRET not in text and "target.url" in text and len(text.strip().splitlines()) <= 3


def test_an_unreachable_server_ends_in_one_line_without_the_password(spark: Any, tmp_path: Path) -> None:
    path = pipeline(tmp_path, f'url = "{with_secret("postgresql://wid@127.0.0.1:9/postgres")}"', retries=2)
    code, text = shown("run", str(path), "--quiet")
    assert code == 2, text
    assert SECRET not in text and "sink unavailable" in text and "Traceback" not in text
    assert len(text.strip().splitlines()) <= 3, text
