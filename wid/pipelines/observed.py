"""A stream's accounting as it reaches the driver: Spark's observed metrics
(``DataFrame.observe``) over the WID operator's rows, reported with each
micro-batch's progress.

The ``foreachBatch`` writer runs where Spark runs it: on the driver of a
classic session, on the server under Spark Connect. Whatever it counted
there would never reach a Connect client, so wid counts nothing inside it.
The operator's rows carry each shard's counts (`wid.spark.operator.rows`,
``COUNTS_ROW``); an observation over those rows collects the counts and the
window rows of the micro-batch as the writer's first action computes them,
and Spark puts the result into the micro-batch's progress on every kind of
session. Observation is Spark's documented way to get metrics out of a
streaming query (``StreamingQueryProgress.observedMetrics``).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wid.spark.operator.rows import COUNTS_ROW, STATS, WINDOW_ROW, first_rejected, of_kind

NAME = "wid"  # the observation's name in a progress's observedMetrics


def observed(rows: DataFrame) -> DataFrame:
    """`rows` (the WID operator's output, every kind) observed under `NAME`:
    ``stats``, the shards' JSON counts (array of string), ``windows``, the
    window rows (long; a join's fired rows), and ``rejected``, the first
    row rejected as bad input (reason and row JSON; NULL if none was)."""
    stats = F.collect_list(F.when(of_kind(COUNTS_ROW), F.col(STATS))).alias("stats")
    windows = F.count_if(of_kind(WINDOW_ROW)).alias("windows")
    return rows.observe(NAME, stats, windows, first_rejected().alias("rejected"))


def _fields(progress: Any) -> dict[str, Any] | None:
    row = (progress.observedMetrics or {}).get(NAME)
    if row is None:
        return None
    fields: dict[str, Any] = row.asDict(recursive=True)
    if "values" in fields and "schema" in fields:
        names = [f["name"] for f in fields["schema"]["fields"]]
        fields = dict(zip(names, fields["values"], strict=True))
    return fields


def rejected_sample(progress: Any) -> tuple[str, str] | None:
    """The first row a micro-batch rejected as bad input, (reason, row
    JSON), from its `progress`; None when it rejected none."""
    found = (_fields(progress) or {}).get("rejected")
    if isinstance(found, dict):  # a Row's fields, or a Connect client's JSON form: {"values": ..., "schema": ...}
        found = found["values"] if "values" in found else [found.get("reason"), found.get("row_json")]
    if not found or found[0] is None:
        return None
    return str(found[0]), str(found[1])


def observation(progress: Any) -> tuple[list[str], int]:
    """The shards' counts and the window rows a micro-batch's `progress`
    reports (no rows: ``([], 0)``, for a progress of a trigger that found no
    data). A classic session's progress holds a Row of the observed
    columns; a Spark Connect client's may hold the Row's JSON form (its
    ``values`` and ``schema``): both are read."""
    fields = _fields(progress)
    if fields is None:
        return [], 0
    return list(fields["stats"] or []), int(fields["windows"] or 0)


__all__ = ["NAME", "observation", "observed", "rejected_sample"]
