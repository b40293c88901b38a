"""Which Spark versions the lakehouse sinks run on, and the Maven
coordinates of their jars (docs/lakehouse.md).

Pure data and a check that needs no JVM: only the installed PySpark's
version (read from its package metadata, without importing it).

Delta Lake publishes one ``delta-spark`` artifact per Spark minor version
(``io.delta:delta-spark_<spark minor>_2.13``, from Delta 4.1 on); Iceberg
one runtime per Spark minor (``iceberg-spark-runtime-<spark minor>_2.13``).
A Spark minor version absent from a table has no release of that format:
a sink of that kind is refused at load time (`check_spark`), naming the
versions that have one. As found on Maven Central:

| Spark | Delta artifact (newest) | Iceberg runtime (newest) |
|---|---|---|
| 4.0 | ``io.delta:delta-spark_4.0_2.13:4.4.0`` | ``org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:1.11.0`` |
| 4.1 | ``io.delta:delta-spark_4.1_2.13:4.4.0`` | ``org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0`` |
| 4.2 | ``io.delta:delta-spark_4.2_2.13:4.4.0`` | none |
| 4.3 | none | none |
"""

from __future__ import annotations

from wid.errors import ConfigError
from wid.versions import installed_spark

# Spark minor version -> the jar Spark fetches with ``spark.jars.packages``.
DELTA_PACKAGES = {
    "4.0": "io.delta:delta-spark_4.0_2.13:4.4.0",
    "4.1": "io.delta:delta-spark_4.1_2.13:4.4.0",
    "4.2": "io.delta:delta-spark_4.2_2.13:4.4.0",
}
ICEBERG_PACKAGES = {
    "4.0": "org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:1.11.0",
    "4.1": "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0",
}
PACKAGES = {"delta": DELTA_PACKAGES, "iceberg": ICEBERG_PACKAGES}
LAKEHOUSE_SINKS = tuple(PACKAGES)
def spark_minor(version: str) -> str:
    """``"4.2.0"`` -> ``"4.2"`` (also ``"4.2.0.dev1"``, ``"4.2"``)."""
    return ".".join(version.split(".")[:2])


def installed_spark_version() -> str | None:
    """The installed PySpark's version (``"4.3.0"``), from its package
    metadata (PySpark itself is not imported); None when none is installed."""
    found = installed_spark()
    return None if found is None else found[1]


def package_for(kind: str, spark_version: str) -> str | None:
    """The Maven coordinates of `kind`'s jar for `spark_version`, or None
    when that format has no release for that Spark."""
    return PACKAGES[kind].get(spark_minor(spark_version))


def check_spark(kind: str, spark_version: str | None, field: str = "kind") -> None:
    """Raise ConfigError naming `field` when `kind` (``delta``,
    ``iceberg``) has no release for `spark_version`, listing the Spark
    versions that have one. No PySpark installed (None): nothing to check,
    nothing will run."""
    if spark_version is None or package_for(kind, spark_version) is not None:
        return
    supported = ", ".join(PACKAGES[kind])
    raise ConfigError(field, f"kind = '{kind}' needs a Spark version {kind.capitalize()} supports ({supported}); "
                      f"this is PySpark {spark_version}",
                      f"run wid on PySpark {supported} (pip install 'pyspark=={supported.split(', ')[-1]}.*'), "
                      "or choose another sink kind")


__all__ = ["DELTA_PACKAGES", "ICEBERG_PACKAGES", "LAKEHOUSE_SINKS", "PACKAGES", "check_spark",
           "installed_spark_version", "package_for", "spark_minor"]
