"""The Spark versions wid supports, read without starting Spark.

wid needs Spark 4: the WID operator runs on ``transformWithStateInPandas``
(added in Spark 4.0), and ``mapInArrow`` and the Arrow-based Python data
sources it relies on behave as wid expects from 4.0 on. The range ends
before the first minor release wid has not been tested on. Features of a
later Spark (real-time mode, 4.3) are refused on an earlier one when the
configuration is loaded, naming the versions that have them.
"""

from __future__ import annotations

import importlib.metadata
import re

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


__all__ = ["DISTRIBUTION", "DISTRIBUTIONS", "SPARK_BELOW", "SPARK_MIN", "SUPPORTED_SPARK", "installed_spark", "parse", "pip_install",
           "supported"]
