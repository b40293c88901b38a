"""The Delta Lake sink: window rows merged into a Delta table on their
natural key, each micro-batch of a stream at most once (docs/lakehouse.md);
and what the Iceberg sink (`wid.io.iceberg`) shares with it: the session
settings that bring the jars (`with_connector`) and the ``MERGE INTO`` over
a temporary view (`run_merge`).

**The jar.** Spark reads and writes Delta through Delta's ``delta-spark``
jar, which PySpark does not ship: a pipeline whose target or dead letter is
Delta gets it through ``spark.jars.packages`` (Ivy fetches it once, as for
Spark's Kafka connector), with Delta's session extension and catalog
(`with_connector`). Delta publishes one jar per Spark minor version
(`wid.spec.lakehouse.DELTA_PACKAGES`); a Spark it has none for is refused
when the pipeline is loaded.

**The write** (`merge`): the rows are a temporary view, merged with SQL::

    MERGE INTO delta.`<path>` AS t USING <view> AS s
    ON t.k1 <=> s.k1 AND ... AND t.kn <=> s.kn      -- the natural key, NULL-safe
    WHEN MATCHED THEN UPDATE SET *
    WHEN NOT MATCHED THEN INSERT *

SQL over a view rather than Delta's Python ``DeltaTable`` API: it needs no
Python package beside PySpark and runs unchanged on a Spark Connect session
(nothing here reaches for the driver's JVM). The table is
created on the first write with the rows' schema; a table of another shape
is refused (ConfigError), never altered.

**Deletes** (`delete`): session windows the WID operator retracted, by the
same key: ``WHEN MATCHED THEN DELETE``.

**Idempotence.** A merge on the natural key is idempotent by content: a
replayed micro-batch writes the same rows again. With a `Txn` a replay
writes nothing at all: the merge runs with Delta's session settings
``spark.databricks.delta.write.txnAppId`` / ``txnVersion``, which Delta
records in the commit and honours for ``MERGE`` as for appends (checked on
Delta 4.4.0: a second merge with the same app id and version, other rows,
left the table and its version unchanged; tests/io/test_delta_sink.py). The
app id must name the streaming query, not the pipeline: a stream restarted
on a new checkpoint numbers its micro-batches from 0 again, and Delta would
skip them all. `txn` builds it from the query's id in its checkpoint
(`stream_id`) and the write's role (``upsert``, ``delete``: two writes of
one micro-batch to one table need two app ids). A batch run has no `Txn`:
a rerun merges again, so a rerun over changed input updates the table.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from wid.errors import ConfigError, MissingDependencyError
from wid.spec.lakehouse import DELTA_PACKAGES, check_spark, package_for
from wid.spec.pipeline import TABLE_FORMATS, JoinPipelineSpec, PipelineSpec, is_uri
from wid.spec.secrets import mask_url
from wid.spec.sql_text import ident

EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"
# Delta rebuilds a table's state from its log in 50 tasks by default, sized for big tables on clusters;
# for the small tables of a local run (2 cores) 2 tasks made each MERGE about 3x faster. Suggested for
# local runs ([spark] conf, docs/lakehouse.md), set by the tests; wid does not impose it.
LOCAL_SPEED = {"spark.databricks.delta.snapshotPartitions": "2"}
DELTA_REFUSES = " ,;{}()\n\t="  # characters of a column name Delta refuses without column mapping
# Jars delta-spark depends on that PySpark already ships (newer): left out of Ivy's resolution.
SHIPPED = ("org.apache.hadoop:hadoop-client-runtime", "org.apache.hadoop:hadoop-client-api",
           "com.fasterxml.jackson.core:jackson-databind", "com.fasterxml.jackson.core:jackson-core",
           "com.fasterxml.jackson.core:jackson-annotations", "org.apache.parquet:parquet-hadoop",
           "org.apache.parquet:parquet-column", "org.apache.parquet:parquet-common",
           "org.apache.parquet:parquet-encoding", "org.apache.parquet:parquet-format-structures",
           "org.apache.parquet:parquet-jackson", "org.apache.logging.log4j:log4j-api",
           "org.apache.logging.log4j:log4j-core", "org.apache.logging.log4j:log4j-slf4j2-impl",
           "org.slf4j:slf4j-api", "org.xerial.snappy:snappy-java", "com.github.luben:zstd-jni",
           "io.airlift:aircompressor", "com.google.code.findbugs:jsr305", "org.scala-lang:scala-library",
           "org.locationtech.jts:jts-core", "org.roaringbitmap:RoaringBitmap", "commons-pool:commons-pool")


# -- the session ---------------------------------------------------------------

def table_formats(spec: PipelineSpec | JoinPipelineSpec) -> tuple[str, ...]:
    """The table formats (``delta``, ``iceberg``) the target and the dead
    letter write, in that order, without repeats."""
    return tuple(dict.fromkeys(k for k in (spec.target.kind, spec.dead_letter.kind) if k in TABLE_FORMATS))


def _joined(*parts: str) -> str:
    seen: list[str] = []
    for part in parts:
        for item in (p.strip() for p in part.split(",")):
            if item and item not in seen:
                seen.append(item)
    return ",".join(seen)


def with_connector(conf: Mapping[str, Any], spark_version: str, formats: Sequence[str] = ("delta",)) -> dict[str, Any]:
    """`conf` with the jars of `formats` for `spark_version`.

    Delta: its jar in ``spark.jars.packages`` (unless `conf` names a
    delta-spark jar there or in ``spark.jars``), the jars PySpark ships
    added to ``spark.jars.excludes``, Delta's extension added to
    ``spark.sql.extensions``, and ``spark.sql.catalog.spark_catalog`` set
    to Delta's catalog unless `conf` sets it. Iceberg: its runtime jar
    (one shaded jar) unless `conf` names an iceberg-spark-runtime jar; its
    catalog is set when writing (`wid.io.iceberg`), and ``MERGE INTO`` needs
    no extension on Spark 4. Settings already in `conf` are kept; lists are
    joined. Raises ConfigError when a format has no jar for
    `spark_version` (`wid.spec.lakehouse.check_spark` refuses the spec
    first)."""
    out = dict(conf)
    for kind, artifact in (("delta", "delta-spark"), ("iceberg", "iceberg-spark-runtime")):
        if kind not in formats:
            continue
        packages, jars = str(out.get("spark.jars.packages", "")), str(out.get("spark.jars", ""))
        if artifact not in packages and artifact not in jars:
            check_spark(kind, spark_version, "target.kind")
            out["spark.jars.packages"] = _joined(packages, str(package_for(kind, spark_version)))
            if kind == "delta":
                out["spark.jars.excludes"] = _joined(str(out.get("spark.jars.excludes", "")), *SHIPPED)
        if kind == "delta":
            out["spark.sql.extensions"] = _joined(str(out.get("spark.sql.extensions", "")), EXTENSION)
            out.setdefault("spark.sql.catalog.spark_catalog", CATALOG)
    return out


# -- idempotence ---------------------------------------------------------------

@dataclass(frozen=True)
class Txn:
    """Delta's idempotent-write marker: the writer `app_id` and its
    `version` (the micro-batch id). Delta skips a write whose version is not
    above the last one it committed for that app id on that table."""

    app_id: str
    version: int


def txn(stream: str | None, role: str, batch_id: int | None) -> Txn | None:
    """The marker of one write of micro-batch `batch_id` of the streaming
    query `stream` (its id, `stream_id`), `role` telling apart the writes
    of one micro-batch to one table (``upsert``, ``delete``); None without a
    stream or a batch id (a batch run, real-time mode)."""
    if stream is None or batch_id is None:
        return None
    return Txn(f"wid-{stream}-{role}", batch_id)


def stream_id(spark: SparkSession, checkpoint: str) -> str | None:
    """The id of the streaming query checkpointed in `checkpoint` (Spark's
    ``metadata`` file there, ``{"id": "<uuid>"}``): the same across restarts
    on that checkpoint, new with a new one. None before the query first
    started. Read through Spark, so any file system serves, on Connect too."""
    try:
        lines = [r[0] for r in spark.read.text(f"{checkpoint.rstrip('/')}/metadata").collect()]
    except Exception as err:  # noqa: BLE001 - a missing file is the only expected failure
        if "PATH_NOT_FOUND" in str(err) or "does not exist" in str(err):
            return None
        raise
    return str(json.loads(lines[0])["id"]) if lines else None


# -- the writes ----------------------------------------------------------------

def table_ref(path: str) -> str:
    """The SQL name of the Delta table at `path`: ``delta.`<path>```."""
    return f"delta.{ident(path)}"


def _missing_jar(err: Exception) -> MissingDependencyError | None:
    text = str(err)
    if "DATA_SOURCE_NOT_FOUND" in text or "Failed to find the data source: delta" in text \
            or "DeltaCatalog" in text and ("ClassNotFound" in text or "PLUGIN_CLASS_NOT_FOUND" in text):
        return MissingDependencyError(
            "Delta Lake's jar (delta-spark)",
            "let wid start Spark (it adds Delta to spark.jars.packages), or start Spark with --packages "
            f"{', '.join(sorted(set(DELTA_PACKAGES.values())))} (the one for your Spark) and "
            f"spark.sql.extensions={EXTENSION}")
    return None


def table_schema(spark: SparkSession, path: str) -> T.StructType | None:
    """The schema of the Delta table at `path`, or None when there is none.
    Raises MissingDependencyError when Spark has no Delta jar."""
    try:
        return spark.read.format("delta").load(path).schema
    except Exception as err:
        missing = _missing_jar(err)
        if missing is not None:
            raise missing from None
        text = str(err)
        if "DELTA_MISSING_DELTA_TABLE" in text or "is not a Delta table" in text or "PATH_NOT_FOUND" in text \
                or "DELTA_PATH_DOES_NOT_EXIST" in text or "doesn't exist" in text:
            return None
        raise


def check_columns(names: Sequence[str], options: Mapping[str, Any]) -> None:
    """Raise ConfigError naming the first of `names` Delta cannot hold as a
    column name (one of `DELTA_REFUSES` in it) unless `options` turn on
    Delta's column mapping, which can."""
    if "delta.columnMapping.mode" in options:
        return
    bad = [n for n in names if any(c in n for c in DELTA_REFUSES)]
    if bad:
        raise ConfigError("target", f"column {bad[0]!r} has a character Delta refuses in a column name "
                          f"(one of {DELTA_REFUSES!r})",
                          "rename it (an alias, or a [transform] sql pre-stage), or set "
                          "options = { \"delta.columnMapping.mode\" = \"name\" }")


def ensure_table(df: DataFrame, path: str, options: Mapping[str, Any] | None = None) -> None:
    """Create the Delta table at `path` with `df`'s schema (and `options`,
    Delta's writer options: ``delta.*`` table properties) when there is
    none. Raises ConfigError when the table has other columns or types,
    when a column name is one Delta refuses (`check_columns`), or when a
    local `path` holds files but no Delta table."""
    have = table_schema(df.sparkSession, path)
    if have is None:
        check_columns(df.columns, options or {})
        if not is_uri(path) and Path(path).is_dir() and any(Path(path).iterdir()) \
                and not (Path(path) / "_delta_log").exists():
            raise ConfigError("target.path", f"{path} holds files but no Delta table",
                              "give a new directory, or the directory of a Delta table")
        (df.limit(0).write.format("delta").options(**{k: str(v) for k, v in (options or {}).items()})
         .mode("append").save(path))
        return
    got = [(f.name, f.dataType.simpleString()) for f in have.fields]
    want = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
    if got != want:
        raise ConfigError("target.path", f"the Delta table at {mask_url(path)} has columns {got}, the pipeline writes {want}",
                          "give a new path, or drop the table")


UPSERT = "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
DELETE = "WHEN MATCHED THEN DELETE"


def run_merge(df: DataFrame, table: str, key: Sequence[str], actions: str, marker: Txn | None = None) -> None:
    """``MERGE INTO`` `table` (a SQL table name, quoted) using `df` on
    `key` (NULL-safe), with `actions` (the WHEN clauses, `UPSERT` or
    `DELETE`), under Delta's `marker` when given; `df` is a temporary view
    for the statement's time."""
    spark = df.sparkSession
    view = f"_wid_delta_{uuid.uuid4().hex}"
    on = " AND ".join(f"t.{ident(k)} <=> s.{ident(k)}" for k in key)
    df.createOrReplaceTempView(view)
    if marker is not None:
        spark.conf.set(TXN_APP_ID, marker.app_id)
        spark.conf.set(TXN_VERSION, str(marker.version))
    try:
        spark.sql(f"MERGE INTO {table} AS t USING {ident(view)} AS s ON {on} {actions}")
    except Exception as err:
        missing = _missing_jar(err)
        if missing is not None:
            raise missing from None
        raise
    finally:
        if marker is not None:
            spark.conf.unset(TXN_APP_ID)
            spark.conf.unset(TXN_VERSION)
        spark.catalog.dropTempView(view)


def merge(df: DataFrame, path: str, key: Sequence[str], marker: Txn | None = None,
          options: Mapping[str, Any] | None = None) -> None:
    """Upsert `df` into the Delta table at `path` (a directory or URI) on
    the natural key `key` (columns of `df`, unique among its rows): a row
    whose key is in the table replaces it, others are inserted. Creates the
    table first when there is none (`ensure_table`). With `marker`, a write
    Delta already committed for that app id and version is skipped. Raises
    ConfigError for a table of another shape, MissingDependencyError
    without Delta's jar."""
    ensure_table(df, path, options)
    if df.isEmpty():  # no commit for an empty micro-batch
        return
    run_merge(df, table_ref(path), key, UPSERT, marker)


def delete(keys: DataFrame, path: str, key: Sequence[str], marker: Txn | None = None) -> None:
    """Delete the rows of the Delta table at `path` whose natural key `key`
    is a row of `keys` (NULL-safe); nothing when there is no table yet."""
    if table_schema(keys.sparkSession, path) is None or keys.isEmpty():
        return
    run_merge(keys.select(*key).distinct(), table_ref(path), key, DELETE, marker)


__all__ = ["CATALOG", "DELETE", "DELTA_REFUSES", "EXTENSION", "LOCAL_SPEED", "SHIPPED", "TXN_APP_ID", "TXN_VERSION",
           "Txn", "UPSERT", "run_merge", "check_columns", "delete", "ensure_table",
           "merge", "stream_id", "table_formats", "table_ref", "table_schema", "txn", "with_connector"]
