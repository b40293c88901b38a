"""Exact late-row counts for the native streaming path (DESIGN.md section 5).

Spark's ``numRowsDroppedByWatermark`` counts the rows *its stateful operator*
dropped, and streaming aggregation pre-aggregates before that operator, so
the metric counts late (key, window) groups, not rows. wid counts rows: each
native stage's first aggregate is a hidden row count (`streaming.ROWS`), so
the first field of every state value is the number of input rows in it.

For one micro-batch ``b`` of an append-mode query, with ``S_b`` the rows held
in the first stage's state after ``b`` and ``C_b`` the rows in the panes or
windows it emitted during ``b`` (an observed metric)::

    accepted_b = S_b - S_(b-1) + C_b
    late_b     = good_b - accepted_b

State is read back with Spark's state data source (``format("statestore")``)
at the batch's committed version, so the count is exact and deterministic on
replay.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T


def first_stage(spark: SparkSession, checkpoint: str) -> int | None:
    """The operator id of the first stateful stage (Spark numbers stages from
    the sink down, so the first stage has the highest id), or None before
    the first batch commits."""
    try:
        meta = spark.read.format("state-metadata").load(checkpoint)
        ids = [r[0] for r in meta.select("operatorId").distinct().collect()]
    except Exception:  # no committed state yet
        return None
    return max(ids) if ids else None


def state_rows(spark: SparkSession, checkpoint: str, operator_id: int, batch_id: int) -> int:
    """Input rows held in `operator_id`'s state after micro-batch `batch_id`
    (0 before the first batch)."""
    if batch_id < 0:
        return 0
    state = (spark.read.format("statestore").option("operatorId", operator_id).option("batchId", batch_id)
             .load(checkpoint))
    value_type = state.schema["value"].dataType
    assert isinstance(value_type, T.StructType)
    # buffer fields may share names (count, sum); rename them by position
    renamed = T.StructType([T.StructField(f"f{i}", f.dataType) for i, f in enumerate(value_type.fields)])
    total = state.agg(F.sum(F.col("value").cast(renamed).getField(f"f{_count_field(value_type)}"))).first()
    return int(total[0] or 0) if total is not None else 0


def _count_field(value_type: T.StructType) -> int:
    """Position of the hidden row count in a state value: the first field,
    or for session windows (whose value repeats the key and the session
    window before the aggregation buffers) the field after the window."""
    for i, f in enumerate(value_type.fields):
        if isinstance(f.dataType, T.StructType) and f.dataType.fieldNames()[:2] == ["start", "end"]:
            return i + 1
    return 0


def accepted(held_after: int, held_before: int, closed: int) -> int:
    """Rows a micro-batch added to the windows (see the module docstring)."""
    return held_after - held_before + closed


__all__ = ["accepted", "first_stage", "state_rows"]
