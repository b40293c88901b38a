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

    session = spark_session(master="local[2]", conf={"spark.sql.shuffle.partitions": "2",
                                                     "spark.default.parallelism": "2"})
    yield session
    session.stop()
