"""A window's emissions as a changelog, for a window emitted more than once
on a stream (`Window.reemits`: ``emit = "on_update"``, ``late_data =
"reopen"``, and the retractions of sessions that merge or move their
start), where no sink upserts on the natural key: an append-only table
(a declarative pipeline's streaming table, `wid.pipelines.declarative`)
holds the changelog, and `latest_of` folds it into what a keyed sink holds.

    window_start  origin  departures  _wid_seq  _wid_change
    09:00         JFK     3           1         upsert      <- partial (on_update)
    09:00         JFK     5           2         upsert      <- the same window, later: this one stands
    09:10         LGA     NULL        2         delete      <- a retracted session's natural key

`_wid_seq` is the micro-batch number of the operator's shard that emitted
the row (`wid.kernels.operator.shard.Meta.batches`): every emission of a
window comes from the shard its group hashes to, so it orders them; within
one micro-batch a delete comes before an upsert of the same key, as the
keyed sinks apply them (`wid.pipelines.write.stream_writer`). The fold is
`wid.semantics.sink_state.sink_rows`'s, which the tests compare it with.
A MERGE-capable table can take the same changelog incrementally (Spark
Declarative Pipelines' AUTO CDC flow, SCD type 1: keys the natural key,
``sequence_by`` `SEQUENCE`, deletes where `CHANGE` is `DELETE`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import Window as SparkWindow
from pyspark.sql import functions as F

from wid.kernels.operator.output import SEQUENCE
from wid.spark.operator.query import retractions_of, windows_of
from wid.spec.window import Window

CHANGE = "_wid_change"
UPSERT = "upsert"
DELETE = "delete"
_RANK = "_wid_latest"


def changes_of(rows: DataFrame, window: Window, wall_clock: bool = False,
               columns: Sequence[str] | None = None) -> DataFrame:
    """The operator's output `rows` as the window's changelog: each window
    row in the window's output columns (`windows_of`, with ``is_final`` under
    ``emit = "on_update"``), then `SEQUENCE` (long) and `CHANGE` =
    `UPSERT`; and for a kind that retracts (sessions), each retracted
    natural key (window start, group columns; the other columns NULL) with
    `CHANGE` = `DELETE`. `rows` must come from a window that `reemits`
    (only its rows carry `SEQUENCE`); `columns`: as for `windows_of`."""
    upserts = windows_of(rows, window, wall_clock, columns, then=(F.col(SEQUENCE), F.lit(UPSERT).alias(CHANGE)))
    if not window.shape.retracts:
        return upserts
    deletes = retractions_of(rows, window, wall_clock, then=(F.col(SEQUENCE), F.lit(DELETE).alias(CHANGE)))
    return upserts.unionByName(deletes, allowMissingColumns=True)


def latest_of(changes: DataFrame, key: Sequence[str], columns: Sequence[str]) -> DataFrame:
    """What a sink keyed on `key` holds after the changelog `changes`
    (`changes_of`'s rows, in any order): per natural key, the row of the
    largest `SEQUENCE` (an upsert before a delete of the same micro-batch,
    so the upsert stands), kept when it is an upsert; in `columns` (the
    window's output columns). A batch plan: one sort of the changelog per
    key, recomputed whole at each read."""
    last_first = SparkWindow.partitionBy(*[F.col(c) for c in key]).orderBy(
        F.col(SEQUENCE).desc(), (F.col(CHANGE) == UPSERT).desc())
    ranked = changes.withColumn(_RANK, F.row_number().over(last_first))
    return ranked.where((F.col(_RANK) == 1) & (F.col(CHANGE) == UPSERT)).select(*columns)


__all__ = ["CHANGE", "DELETE", "SEQUENCE", "UPSERT", "changes_of", "latest_of"]
