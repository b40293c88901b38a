"""The dead-letter output: rejected rows with their reason, counted.

Identical rejected rows (same pipeline, reason, source, file and row) are
stored once with an `occurrences` count, so a keyed sink stays idempotent
across reruns and still loses nothing: the sum of `occurrences` is the
number of rejected rows (DESIGN.md section 5).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

KEY = ("pipeline", "reason", "source", "source_file", "row_json")


def grouped(dead: DataFrame, pipeline: str) -> DataFrame:
    """Columns: pipeline, reason, source, source_file ('' when unknown),
    row_json, occurrences (long)."""
    return (dead.withColumn("pipeline", F.lit(pipeline))
            .withColumn("source_file", F.coalesce(F.col("source_file"), F.lit("")))
            .groupBy(*KEY).agg(F.count(F.lit(1)).alias("occurrences")))
