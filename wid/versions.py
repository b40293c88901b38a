"""The Spark versions wid supports, read without starting Spark.

wid needs Spark 4: the WID operator runs on ``transformWithStateInPandas``
(added in Spark 4.0), and ``mapInArrow`` and the Arrow-based Python data
sources it relies on behave as wid expects from 4.0 on. The range ends
before the first minor release wid has not been tested on. Features of a
later Spark (real-time mode, 4.3) are refused on an earlier one when the
configuration is loaded, naming the versions that have them.

Two packages install the ``pyspark`` module: ``pyspark`` (with Spark's
jars) and ``pyspark-client`` (Spark Connect's thin client, no jars).
Installed together, the second overwrites the first's Python files, and a
stream then fails deep inside Spark (a JVM constructor that does not
exist) because the Python side is another release than the jars.
`install_problem` finds that from the installed distributions' metadata
and the jars' file names, without importing pyspark.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from pathlib import Path

from wid.errors import SetupError

SPARK_MIN = "4.0.5"
SPARK_BELOW = "4.4"
SUPPORTED_SPARK = f">={SPARK_MIN},<{SPARK_BELOW}"
DISTRIBUTIONS = ("pyspark", "pyspark-client", "pyspark-connect")  # the full package, or Spark Connect's thin client
# wid's own distribution on the package index (``import wid`` and the ``wid`` command are its module and
# script): the name ``wid`` there is another project's.
DISTRIBUTION = "spark-wid"


def parse(version: str) -> tuple[int, ...]:
    """The numeric release of a version string (``"4.1.0.dev1"`` gives ``(4, 1, 0)``)."""
    match = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(p) for p in match.group(0).split(".")) if match else ()


def supported(version: str) -> bool:
    """Whether wid supports Spark `version`."""
    return parse(SPARK_MIN) <= parse(version) < parse(SPARK_BELOW)


def pip_install(extra: str) -> str:
    """The command that installs wid with `extra` (``"postgres"``): ``pip
    install 'spark-wid[postgres]'``."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def installed_spark() -> tuple[str, str] | None:
    """The PySpark distribution installed here and its version
    (``("pyspark", "4.3.0")``), or None when there is none."""
    for name in DISTRIBUTIONS:
        try:
            return name, importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


_MODULE_VERSION = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*["']([^"']+)["']""", re.M)
_CORE_JAR = re.compile(r"spark-core_[\d.]+-(\d[\w.-]*)\.jar")


def module_version() -> tuple[str | None, Path | None]:
    """The version the ``pyspark`` module's files say (its ``version.py``)
    and the module's directory, without importing it; (None, None) when
    there is no such module."""
    found = importlib.util.find_spec("pyspark")
    if found is None or not found.submodule_search_locations:
        return None, None
    home = Path(next(iter(found.submodule_search_locations)))
    try:
        match = _MODULE_VERSION.search((home / "version.py").read_text(encoding="utf-8"))
    except OSError:
        match = None
    return (match.group(1) if match else None), home


def jars_version(home: Path) -> str | None:
    """The Spark release of the jars in ``<home>/jars`` (from
    ``spark-core_2.13-<release>.jar``); None when there are none."""
    jars = home / "jars"
    names = [p.name for p in jars.glob("spark-core_*.jar")] if jars.is_dir() else []
    found = [m.group(1) for m in map(_CORE_JAR.fullmatch, names) if m]
    return found[0] if found else None


def _installed(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def install_problem() -> tuple[str, str] | None:
    """What is wrong with the installed PySpark and how to fix it, as
    (problem, fix); None when nothing is. Two cases: ``pyspark`` and
    ``pyspark-client`` installed together (one ``pyspark`` module, whose
    files are the last installed one's), and a ``pyspark`` module whose
    release differs from Spark's jars beside it."""
    full, client = _installed("pyspark"), _installed("pyspark-client")
    version, home = module_version()
    jars = jars_version(home) if home is not None else None
    if full is not None and client is not None:
        owner = "pyspark-client's" if version == client and version != full else "pyspark's"
        return (f"pyspark {full} and pyspark-client {client} are both installed, and both install the "
                f"pyspark module (its Python files are now {owner})",
                f"keep one: pip uninstall -y pyspark-client && pip install --force-reinstall 'pyspark=={full}' "
                "(local mode, clusters), or pip uninstall -y pyspark pyspark-client && pip install "
                f"'pyspark-client=={client}' (Spark Connect only)")
    if version is not None and jars is not None and parse(version) != parse(jars):
        return (f"the pyspark module's Python files are release {version}, but Spark's jars beside them "
                f"({home}) are {jars}", f"pip install --force-reinstall 'pyspark=={jars}'")
    return None


def check_install() -> None:
    """Raise SetupError when the installed PySpark is broken (`install_problem`)."""
    found = install_problem()
    if found is not None:
        raise SetupError(*found)


__all__ = ["DISTRIBUTION", "DISTRIBUTIONS", "check_install", "SPARK_BELOW", "SPARK_MIN", "SUPPORTED_SPARK", "install_problem", "installed_spark", "jars_version",
           "module_version", "parse", "pip_install",
           "supported"]
