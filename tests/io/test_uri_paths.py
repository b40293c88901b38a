"""Paths in a pipeline: a URI (``file://`` here; ``s3a://``, ``hdfs://``,
``abfss://`` alike) passes through to Spark untouched, for the landing
directory, the checkpoint and a Parquet sink; only a bare relative path
resolves against the TOML's folder. The run over URIs must give the
streaming oracle's windows, as the same run over plain paths does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import good_rows, land, pipeline_toml, stamped
from wid.errors import ConfigError
from wid.io.paths import resolve
from wid.pipelines.run import run as run_pipeline
from wid.semantics.stream_oracle import run_stream
from wid.spec.pipeline import SinkSpec
from wid.spec.toml_io import loads_pipeline


@pytest.mark.parametrize("uri", ["s3a://bucket/clicks", "hdfs://nn:8020/a/b", "abfss://c@acct.dfs.core.windows.net/x",
                                 "file:///tmp/landing", "gs://b/p"])
def test_a_uri_is_left_to_spark(uri: str) -> None:
    assert resolve(uri, "/some/pipeline/dir") == uri


def test_a_relative_path_resolves_against_the_toml_folder(tmp_path: Path) -> None:
    assert resolve("land", str(tmp_path)) == str((tmp_path / "land").resolve())


def test_sqlite_refuses_a_uri() -> None:
    with pytest.raises(ConfigError, match="local file"):
        SinkSpec("sqlite", path="s3a://bucket/out.sqlite", table="w")


def test_a_stream_over_file_uris_gives_the_oracles_windows(spark: Any, tmp_path: Path) -> None:
    rows = good_rows(40)
    files = [rows[i:i + 10] for i in range(0, 40, 10)]
    land(tmp_path / "land", [[json.dumps(r) for r in f] for f in files])
    text = pipeline_toml('kind = "tumbling"\nduration_ms = 10000', name="uris").replace(
        'path = "land"', f'path = "{(tmp_path / "land").as_uri()}"').replace(
        '[target]\nkind = "sqlite"\npath = "out.sqlite"\ntable = "windows"',
        f'[target]\nkind = "parquet"\npath = "{(tmp_path / "windows").as_uri()}"')
    text += f'\n[stream]\ncheckpoint = "{(tmp_path / "ck").as_uri()}"\n'
    spec = loads_pipeline(text, base_dir=str(tmp_path / "elsewhere"))
    report = run_pipeline(spec, spark)

    assert report.identity_holds and report.checkpoint == (tmp_path / "ck").as_uri()
    assert (tmp_path / "ck" / "offsets").is_dir()
    assert [p.name for p in (tmp_path / "elsewhere").iterdir()] == ["out.sqlite"]  # the relative dead-letter path
    results = run_stream(stamped(files), spec.window)
    want = sorted((e.row["k"], e.row["n"], e.row["total"]) for r in results for e in r.emitted)
    got = sorted(tuple(r) for r in spark.read.parquet(str(tmp_path / "windows")).select("k", "n", "total").collect())
    assert got == want and want
