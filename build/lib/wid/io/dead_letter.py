"""The dead-letter output: rejected rows with their reason, counted.

Identical rejected rows (same pipeline, reason, source, file and row) are
stored once with an `occurrences` count, so a keyed sink stays idempotent
across reruns and still loses nothing: the sum of `occurrences` is the
number of rejected rows (docs/semantics.md#completeness). The natural key holds the
row's SHA-256 (`row_sha256`), not the row itself, so a row of any length
fits a database index.

Rows a target database cannot hold (`wid.io.sql_sinks.Refused`) reach the
dead letter too (`refused_rows`), with source ``target``: they are windows
wid computed, not input rows, and are reported apart from the accounting
identity.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from wid.io import kafka
from wid.io.paths import resolve
from wid.io.sql_sinks import Refused, in_transaction
from wid.spec.pipeline import SQL_SINKS, SinkSpec

KEY = ("pipeline", "reason", "source", "source_file", "row_sha256")
COLUMNS = "reason STRING, source STRING, source_file STRING, row_json STRING"
REFUSED = "the target cannot hold this row: "


def grouped(dead: DataFrame, pipeline: str) -> DataFrame:
    """Columns: pipeline, reason, source, source_file ('' when unknown),
    row_sha256, row_json, occurrences (long)."""
    return (dead.withColumn("pipeline", F.lit(pipeline))
            .withColumn("source_file", F.coalesce(F.col("source_file"), F.lit("")))
            .withColumn("row_sha256", F.sha2(F.col("row_json"), 256))
            .groupBy(*KEY).agg(F.first("row_json").alias("row_json"), F.count(F.lit(1)).alias("occurrences")))


def refused_rows(spark: SparkSession, refused: Refused) -> DataFrame:
    """Rows a target database refused, in the dead-letter shape: the reason
    names the database's error; `row_json` is the row as it was to be
    written."""
    rows: Sequence[tuple[Any, ...]] = [(REFUSED + why, "target", None, json.dumps(row, default=str))
                                       for row, why in refused]
    return spark.createDataFrame(list(rows), COLUMNS)


def refused_counts(spark: SparkSession, sink: SinkSpec, base_dir: str, pipeline: str,
                   since_ms: int) -> dict[int, int] | None:
    """Rows a target refused, per micro-batch id, as the dead-letter sink
    `sink` holds them for `pipeline` (a stream's dead letters carry the
    batch id; Kafka's messages produced since `since_ms`, epoch ms, are
    read). The count comes from the sink because the writer that refused
    them may run where nothing it counts reaches the caller (Spark Connect
    runs ``foreachBatch`` on the server). None for the console, which
    cannot be read back."""
    if sink.kind == "kafka":
        return kafka.refused_counts(spark, sink, pipeline, since_ms)
    if sink.kind == "parquet":
        path = resolve(sink.path or "", base_dir)
        try:
            rows = spark.read.parquet(path).where((F.col("pipeline") == pipeline) & (F.col("source") == "target"))
            found = rows.groupBy("batch_id").agg(F.sum("occurrences")).collect()
        except Exception as err:  # noqa: BLE001 - nothing written yet is the only expected failure
            if "PATH_NOT_FOUND" in str(err) or "UNABLE_TO_INFER_SCHEMA" in str(err):
                return {}
            raise
        return {int(b): int(n) for b, n in found}
    if sink.kind not in SQL_SINKS:
        return None
    return in_transaction(sink, base_dir, lambda con, dialect: _sql_refused(con, dialect, sink.table or "", pipeline))


def _sql_refused(con: Any, dialect: Any, table: str, pipeline: str) -> dict[int, int]:
    """`refused_counts` from a database's dead-letter table (none yet: {})."""
    if not con.execute(dialect.columns_sql, (table,)).fetchall():
        return {}
    t, p = dialect.quote(table), dialect.placeholder
    found = con.execute(f"SELECT batch_id, SUM(occurrences) FROM {t} WHERE pipeline = {p} AND source = 'target' "
                        "GROUP BY batch_id", (pipeline,)).fetchall()
    return {int(b): int(n) for b, n in found}


__all__ = ["COLUMNS", "KEY", "REFUSED", "grouped", "refused_counts", "refused_rows"]
