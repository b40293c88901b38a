"""The legs of the suite: the tests marked ``leg`` (every window kind in
batch and on a stream with every late-data policy through pipelines, the
window join in batch and on a stream, SQLite and PostgreSQL sinks, each
against the oracles) run again where Spark users run, each in its own
pytest process pointed at another Spark by ``tests/conftest.py``:

- a Spark Connect server on 127.0.0.1, from a client environment holding
  the thin ``pyspark-client`` and wid (``pip install 'spark-wid[connect]'``),
  no full PySpark; then the ``wid`` command of that environment reaches the
  server through ``--remote`` and through ``SPARK_REMOTE``;
- a standalone cluster of two workers on 127.0.0.1, whose executors run a
  Python that has PySpark and its Arrow libraries but not wid;
- the oldest Spark wid supports (`wid.versions.SPARK_MIN`), with the
  Delta and Iceberg sinks' tests (those formats have jars for it).

Passing in each is the same answer as in local mode, where the same tests
pass against the same oracles. A leg's Hypothesis tests draw fewer
examples (`tests.fixtures.examples_here`): the main run searches. The
servers come from the PySpark package (`tools.spark_servers`); the
environments are built once (`tools.python_envs`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pyspark
import pytest

from tests.fixtures import LEG_ENV, good_rows, land, open_after, pipeline_toml, stamped
from tests.sink_check import assert_same_rows, folded, read_table
from tools import python_envs, spark_servers
from wid.kernels.operator.state_cache import CACHE_DIR
from wid.semantics.stream_oracle import run_stream
from wid.spec.lakehouse import DELTA_PACKAGES
from wid.spec.toml_io import load_pipeline
from wid.versions import SPARK_MIN

REPO = python_envs.REPO
DELTA = DELTA_PACKAGES["4.0"].rsplit(":", 1)[1]  # the delta-spark release of the jar wid fetches
EXECUTOR_PACKAGES = ["numpy>=1.26", "pandas>=2.2,<3", "pyarrow>=25", "protobuf>=5"]  # what docs/how-to/cluster.md says executors need


def run_leg(python: str, env: Mapping[str, str], marks: str = "leg", timeout_s: float = 2400, workers: int = 0) -> None:
    """Run the tests `marks` selects with `python` and `env` added to this
    environment, in `workers` pytest-xdist workers (0: one process, for a
    leg whose server or cluster the workers would share); fail with their
    report's end when any fails."""
    done = subprocess.run([python, "-m", "pytest", "-m", marks, "-n", str(workers), "-q", "-p", "no:cacheprovider", "-W",
                           "ignore::UserWarning", "tests"], cwd=REPO, env={**os.environ, **env, LEG_ENV: "1"},
                          capture_output=True, text=True, timeout=timeout_s)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]


def thin_client() -> Path:
    """An environment with wid and Spark Connect's thin client, and the
    test packages; no full PySpark."""
    return python_envs.ensure("connect-client", ["-e", f"{REPO}[connect,test]"])


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[spark_servers.Server]:
    server = spark_servers.start_connect(tmp_path_factory.mktemp("connect"))
    yield server
    spark_servers.stop(server)


def test_the_leg_on_a_spark_connect_server_from_the_thin_client(connect_server: spark_servers.Server) -> None:
    python = thin_client()
    has = subprocess.run([str(python), "-m", "pip", "show", "pyspark"], capture_output=True, text=True)
    assert has.returncode != 0, "the thin client's environment holds the full PySpark"
    run_leg(str(python), {"WID_TEST_REMOTE": connect_server.url})


@pytest.mark.parametrize("how", ["--remote", "SPARK_REMOTE"])
def test_wid_run_reaches_a_connect_server(connect_server: spark_servers.Server, tmp_path: Path, how: str) -> None:
    rows = good_rows(30)
    files = [rows[i:i + 10] for i in range(0, 30, 10)]
    land(tmp_path / "land", [[json.dumps(r) for r in f] for f in files])
    (tmp_path / "pipeline.toml").write_text(pipeline_toml('kind = "tumbling"\nduration_ms = 10000', name="remote"))
    wid = thin_client().parent / "wid"
    args, env = ([str(wid), "run", "--quiet", "--remote", connect_server.url, "pipeline.toml"], {}) \
        if how == "--remote" else ([str(wid), "run", "--quiet", "pipeline.toml"], {"SPARK_REMOTE": connect_server.url})
    done = subprocess.run(args, cwd=tmp_path, env={**os.environ, **env, "COLUMNS": "200"}, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # the counts reached the client from the server's micro-batches (3 files, one per micro-batch)
    assert "30 = 0 + 0 + 30  holds in every micro-batch" in done.stdout, done.stdout
    assert re.search(r"│ micro-batches\s*│ 3\s", done.stdout), done.stdout

    spec = load_pipeline(tmp_path / "pipeline.toml")
    written = read_table(str(tmp_path / "out.sqlite"), "windows")
    results = run_stream(stamped(files), spec.window)
    assert_same_rows(spec.window, written, folded(spec.window, results, list(written[0])))
    if how == "--remote":  # wid status reads the stream's state through the server, as the stream ran
        shown = subprocess.run([str(wid), "status", "--json", "--remote", connect_server.url, "pipeline.toml"],
                               cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert shown.returncode == 0, shown.stdout[-3000:] + shown.stderr[-3000:]
        status = json.loads(shown.stdout)
        held = {(w["start_us"], w["end_us"]): w["groups"] for w in status["windows"]["held"]}
        assert status["committed"] == 2 and held == open_after(stamped(files), spec.window, [("source", {})])


def bare_python() -> Path:
    """An environment with PySpark and its Arrow libraries (what executors
    need), without wid and without Spark Connect's client modules."""
    return python_envs.ensure(f"executor-pyspark-{pyspark.__version__}",
                              [f"pyspark=={pyspark.__version__}", *EXECUTOR_PACKAGES])


def test_a_connect_server_whose_python_lacks_wid_is_named_with_the_fix(tmp_path: Path) -> None:
    # the server runs each stream's foreachBatch writer in its own Python; Spark says only that it never connected back
    server = spark_servers.start_connect(tmp_path / "server", python=str(bare_python()))
    try:
        land(tmp_path / "land", [[json.dumps(r) for r in good_rows(10)]])
        (tmp_path / "pipeline.toml").write_text(pipeline_toml('kind = "tumbling"\nduration_ms = 10000', name="bare"))
        done = subprocess.run([str(thin_client().parent / "wid"), "run", "--quiet", "--remote", server.url,
                               "pipeline.toml"], cwd=tmp_path, env={**os.environ, "COLUMNS": "200"},
                              capture_output=True, text=True, timeout=600)
    finally:
        spark_servers.stop(server)
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-3000:]
    assert "pip install 'spark-wid[server]'" in done.stderr, done.stderr
    assert read_table(str(tmp_path / "out.sqlite"), "windows") == []  # nothing written


def test_the_leg_on_a_standalone_cluster_whose_executors_lack_wid(tmp_path: Path) -> None:
    executors = bare_python()
    lacks = subprocess.run([str(executors), "-c", "import wid"], cwd=tmp_path, capture_output=True, text=True)
    assert "No module named 'wid'" in lacks.stderr
    cluster = spark_servers.start_cluster(tmp_path / "cluster", workers=2)
    try:
        run_leg(sys.executable, {"WID_TEST_MASTER": cluster.url, "PYSPARK_PYTHON": str(executors),
                                 "PYSPARK_DRIVER_PYTHON": sys.executable})
        executor_dirs = [p for p in (tmp_path / "cluster").glob("worker-*/app-*/*") if p.is_dir()]
        assert len({p.parent.parent.name for p in executor_dirs}) == 2  # both workers ran executors
        left = [str(f) for d in executor_dirs for f in d.glob(f"{CACHE_DIR}/**/*") if f.is_file()]
        assert left == []  # each stream's state cache went with its query
    finally:
        spark_servers.stop(cluster)


def test_the_leg_and_the_lakehouse_sinks_on_the_oldest_supported_spark() -> None:
    # Delta and Iceberg have jars for Spark 4.0 (not for 4.3): their tests, a SIGKILL mid-stream included, run here
    python = python_envs.ensure(f"pyspark-{SPARK_MIN}", [f"pyspark[connect]=={SPARK_MIN}", f"delta-spark=={DELTA}",
                                                         "-e", f"{REPO}[test]"])
    version = subprocess.run([str(python), "-c", "import pyspark; print(pyspark.__version__)"], capture_output=True,
                             text=True, check=True).stdout.strip()
    assert version == SPARK_MIN
    run_leg(str(python), {}, "leg or delta or iceberg", workers=2)  # local mode: each worker its own Spark
