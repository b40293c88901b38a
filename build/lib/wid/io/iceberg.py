"""The Iceberg sink: window rows merged into an Iceberg table on their
natural key (docs/lakehouse.md#iceberg).

**The table** is `table` (``name``, or ``namespace.name``; namespace
``default`` when none) in an Iceberg *Hadoop catalog* whose warehouse is
`path` (a directory or URI): the table's files are under
``<path>/<namespace>/<name>``, readable by any engine with a Hadoop
catalog on that warehouse. wid registers the catalog in the session as
``wid_iceberg_<first 12 hex digits of sha256(path)>`` (session settings
``spark.sql.catalog.<name>``, ``.type = hadoop``, ``.warehouse``) before each
write, so nothing is needed at start-up beyond Iceberg's runtime jar
(`wid.io.lakehouse.with_connector`), and it works on Spark Connect.

**The write** is `wid.io.lakehouse.run_merge`'s ``MERGE INTO`` over a
temporary view of the rows, computed once first (`settled`), NULL-safe on
the key; deletes (retracted session windows)
are ``WHEN MATCHED THEN DELETE``. Spark 4 runs ``MERGE INTO`` on Iceberg's
own row-level operations: Iceberg's SQL extension is not needed.

**Idempotence** is by content only: a replayed micro-batch merges the same
rows again (a new snapshot, the same rows). Iceberg has no counterpart of
Delta's ``txnAppId`` that SQL can set.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from wid.errors import ConfigError, MissingDependencyError
from wid.io.lakehouse import DELETE, UPSERT, run_merge
from wid.spec.lakehouse import ICEBERG_PACKAGES
from wid.spec.sql_text import ident

CATALOG_CLASS = "org.apache.iceberg.spark.SparkCatalog"
DEFAULT_NAMESPACE = "default"


def catalog_name(warehouse: str) -> str:
    """The session catalog name wid gives the Hadoop catalog at `warehouse`."""
    return "wid_iceberg_" + hashlib.sha256(warehouse.encode()).hexdigest()[:12]


def table_name(spark: SparkSession, warehouse: str, table: str) -> str:
    """Register the Hadoop catalog at `warehouse` in `spark` and return
    `table`'s quoted SQL name in it (``catalog.namespace.name``)."""
    catalog = catalog_name(warehouse)
    spark.conf.set(f"spark.sql.catalog.{catalog}", CATALOG_CLASS)
    spark.conf.set(f"spark.sql.catalog.{catalog}.type", "hadoop")
    spark.conf.set(f"spark.sql.catalog.{catalog}.warehouse", warehouse)
    parts = table.split(".")
    namespace, name = (parts[0], parts[1]) if len(parts) == 2 else (DEFAULT_NAMESPACE, parts[0])
    return ".".join(ident(p) for p in (catalog, namespace, name))


def _missing_jar(err: Exception) -> MissingDependencyError | None:
    text = str(err)
    if "org.apache.iceberg" in text and ("ClassNotFound" in text or "PLUGIN_CLASS_NOT_FOUND" in text):
        return MissingDependencyError(
            "Iceberg's runtime jar (iceberg-spark-runtime)",
            "let wid start Spark (it adds Iceberg to spark.jars.packages), or start Spark with --packages "
            f"{', '.join(ICEBERG_PACKAGES.values())} (the one for your Spark)")
    return None


def _exists(spark: SparkSession, name: str) -> bool:
    try:
        return bool(spark.catalog.tableExists(name))
    except Exception as err:
        missing = _missing_jar(err)
        if missing is not None:
            raise missing from None
        raise


def ensure_table(df: DataFrame, name: str, options: Mapping[str, Any] | None = None) -> bool:
    """Create Iceberg table `name` (its namespace too) with `df`'s schema
    and `options` (Iceberg table properties) when there is none; returns
    whether it existed. Raises ConfigError when it has other columns
    (Iceberg may widen a type, so types are not compared)."""
    spark = df.sparkSession
    if _exists(spark, name):
        have = spark.table(name).columns
        if have != df.columns:
            raise ConfigError("target.table", f"the Iceberg table {name} has columns {have}, the pipeline writes "
                              f"{df.columns}", "give another table name, or drop the table")
        return True
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {name.rsplit('.', 1)[0]}")
    writer = df.limit(0).writeTo(name).using("iceberg")
    for key, value in (options or {}).items():
        writer = writer.tableProperty(key, str(value))
    writer.create()
    return False


def settled(df: DataFrame) -> DataFrame:
    """`df` computed once and held by Spark (``localCheckpoint``): Spark
    plans an Iceberg ``MERGE INTO`` as a row-level rewrite that refuses a
    source whose plan is not deterministic (``INVALID_NON_DETERMINISTIC_EXPRESSIONS``),
    and wid's plans hold Python UDFs and the cap's ``raise_error``."""
    return df.localCheckpoint(eager=True)


def merge(df: DataFrame, warehouse: str, table: str, key: Sequence[str],
          options: Mapping[str, Any] | None = None) -> None:
    """Upsert `df` into Iceberg `table` of the Hadoop catalog at
    `warehouse` on the natural key `key` (unique among `df`'s rows),
    creating it first when there is none. Raises ConfigError for a table of
    other columns, MissingDependencyError without Iceberg's jar."""
    name = table_name(df.sparkSession, warehouse, table)
    ensure_table(df, name, options)
    rows = settled(df)
    if not rows.isEmpty():
        run_merge(rows, name, key, UPSERT)


def delete(keys: DataFrame, warehouse: str, table: str, key: Sequence[str]) -> None:
    """Delete the rows of Iceberg `table` whose natural key is a row of
    `keys`; nothing when there is no table yet."""
    name = table_name(keys.sparkSession, warehouse, table)
    if _exists(keys.sparkSession, name):
        rows = settled(keys.select(*key).distinct())
        if not rows.isEmpty():
            run_merge(rows, name, key, DELETE)


__all__ = ["CATALOG_CLASS", "DEFAULT_NAMESPACE", "catalog_name", "delete", "ensure_table", "merge", "settled",
           "table_name"]
