"""A password planted in a PostgreSQL sink never appears in anything wid
shows: `wid validate`, `wid explain`, `wid run` (its summary, its errors,
its log lines), a spec's ``repr``, `dumps_pipeline`. It may come from the
environment (`password_env`, `url_env`), and a mistyped URL is refused at
load time with the password masked. The server is the real one the suite
starts (trust authentication: any password connects). The same holds for
a mistyped URL in any form, from the file or the environment, and for
secret options written inline (`wid.spec.secrets.is_secret`); a variable
that is not set is named, with the process that lacks it."""

from __future__ import annotations

import json
import logging
import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from typer.testing import CliRunner

import wid
from tests.fixtures import EXTENTS, good_rows, land, pipeline_toml
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
    assert SECRET not in text and "does not answer" in text and "Traceback" not in text  # checked before Spark
    assert len(text.strip().splitlines()) <= 3, text


# A password holding @, : and /, in each form a mistyped URL takes: each is refused when the pipeline
# is loaded (url) or when the writer connects (url_env), and the message shows it as ***.
AWKWARD = "S3cr3t/Pl@nt:ed"
MISTYPED = [
    f"postgresql:/wid:{AWKWARD}@127.0.0.1:5432/postgres",  # one slash
    f"postgresql:wid:{AWKWARD}@127.0.0.1:5432/postgres",  # no slash
    f"wid:{AWKWARD}@127.0.0.1:5432/postgres",  # no scheme
    f"postgresq://wid:{AWKWARD}@127.0.0.1:5432/postgres",  # a scheme that is not PostgreSQL's
    f"postgresql://wid:{AWKWARD}@127.0.0.1:port/postgres",  # no port number
    f"postgresql:/wid:{quote(AWKWARD, safe='')}@127.0.0.1:5432/postgres",  # percent-encoded
    f"postgresql:/wid@127.0.0.1:5432/postgres?password={quote(AWKWARD, safe='')}",  # a parameter
    f"host=127.0.0.1 user=wid password='{AWKWARD} dbname=postgres",  # a quote never closed
]


def hidden(text: str) -> bool:
    """Whether `text` shows no part of `AWKWARD` a reader could take for it."""
    return not any(form in text for form in (AWKWARD, quote(AWKWARD, safe=""), "Pl@nt", "Pl%40nt"))


@pytest.mark.parametrize("url", MISTYPED)
def test_wid_validate_masks_each_form_of_a_mistyped_url(tmp_path: Path, url: str) -> None:
    code, text = shown("validate", str(pipeline(tmp_path, f'url = "{url}"')))
    assert code == 2 and "target.url" in text and "***" in text, text
    assert hidden(text), text


def test_a_mistyped_url_from_the_environment_stops_the_run_masked(spark: Any, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = pipeline(tmp_path, 'url_env = "WID_TEST_PG_URL"')
    for url in MISTYPED:
        monkeypatch.setenv("WID_TEST_PG_URL", url)
        code, text = shown("run", str(path), "--quiet")
        assert code == 2 and "url_env" in text and "***" in text and "Traceback" not in text, text
        assert hidden(text), text


def test_a_missing_variable_names_itself_and_the_process(spark: Any, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WID_TEST_PG_UNSET", raising=False)
    code, text = shown("run", str(pipeline(tmp_path, 'url_env = "WID_TEST_PG_UNSET"')), "--quiet")
    assert code == 2, text
    line = next(t for t in text.splitlines() if "WID_TEST_PG_UNSET" in t)
    assert f"url_env: environment variable WID_TEST_PG_UNSET is not set in this process (pid {os.getpid()}, " \
           f"host {socket.gethostname()})" in line and "Spark Connect" in line, text


JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="wid" password="J4as-Pl4nted";'


def test_inline_secret_options_are_masked_everywhere(spark: Any, postgres_url: str, tmp_path: Path) -> None:
    path = pipeline(tmp_path, f'url = "{postgres_url}"\noptions = {{ "kafka.sasl.jaas.config" = \'{JAAS}\' }}')
    text = path.read_text().replace('schema = "ts', '''options = { "fs.s3a.secret.key" = "S3-Pl4nted" }
schema = "ts''', 1)
    path.write_text(text)
    outputs = []
    for command in (("validate", str(path)), ("explain", str(path)), ("explain", str(path), "--plan")):
        code, out = shown(*command)
        assert code == 0, out
        outputs.append(out)
    spec = load_pipeline(path)
    outputs += [repr(spec), wid.dumps_pipeline(spec)]
    for out in outputs:
        assert "J4as-Pl4nted" not in out and "S3-Pl4nted" not in out, out
    assert wid.dumps_pipeline(spec).count('= "***"') == 2


def test_a_sink_path_is_described_without_the_password_it_holds() -> None:
    from wid.io.sinks import describe
    from wid.spec.pipeline import SinkSpec

    where = describe(SinkSpec("parquet", path="s3a://AKIA:Pl4nted@bucket/windows"), ".")
    assert "Pl4nted" not in where and "s3a://AKIA:***@bucket/windows" in where, where


# The shared stream (`tests.fixtures.pipeline_toml`), writing to PostgreSQL through a variable never set.
STREAM = pipeline_toml(EXTENTS["tumbling"], name="env-stream").replace(
    'kind = "sqlite"\npath = "out.sqlite"\ntable = "windows"',
    'kind = "postgres"\nurl_env = "WID_TEST_STREAM_PG_UNSET"\ntable = "windows"')


@pytest.mark.leg  # on Spark Connect a stream's writer runs on the server, in a process of its own
def test_a_stream_sink_s_missing_variable_names_the_process_running_the_writer(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wid.spark.spark_session import is_connect

    monkeypatch.delenv("WID_TEST_STREAM_PG_UNSET", raising=False)
    land(tmp_path / "land", [[json.dumps(r) for r in good_rows(5)]])
    assert "WID_TEST_STREAM_PG_UNSET" in STREAM
    with pytest.raises(Exception) as err:  # noqa: B017  (how a stream's failure reaches the caller is not this test's)
        wid.run_pipeline(loads_pipeline(STREAM, base_dir=str(tmp_path)), spark)
    where = "the Spark Connect server's stream writer (pid " if is_connect(spark) else \
        f"this process (pid {os.getpid()}, host {socket.gethostname()})"
    assert f"environment variable WID_TEST_STREAM_PG_UNSET is not set in {where}" in str(err.value), str(err.value)
