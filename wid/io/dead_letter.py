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

from wid.io.sql_sinks import Refused

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


__all__ = ["COLUMNS", "KEY", "REFUSED", "grouped", "refused_rows"]
