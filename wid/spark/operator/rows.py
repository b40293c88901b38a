"""The WID operator's output rows, as the driver reads them.

The processor writes them on the executors (`wid.kernels.operator.output`):
one schema for every kind of row, `KIND` saying which (`WINDOW_ROW`,
`RETRACTION_ROW`, `LATE_ROW`, `REJECTED_ROW`, `COUNTS_ROW`: one shard's
counts for the micro-batch, JSON in `STATS`). The operator's own plans
(`wid.spark.operator`) build and split them; anything else on the driver
(a pipeline observing the counts, `wid.pipelines.observed`) reads them
through this module only, so that executor code is named from one place
on the driver side (tests/test_layering.py holds it).
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from wid.kernels.operator.output import (
    COUNTS_ROW,
    KIND,
    LATE_ROW,
    REJECTED_ROW,
    RETRACTION_ROW,
    STATS,
    WINDOW_ROW,
)


def of_kind(kind: str) -> Column:
    """Whether an output row is of `kind` (`WINDOW_ROW`, `COUNTS_ROW`, ...):
    ``KIND = kind``, a boolean Column to filter, count or pick by."""
    return F.col(KIND) == kind


__all__ = ["COUNTS_ROW", "KIND", "LATE_ROW", "REJECTED_ROW", "RETRACTION_ROW", "STATS", "WINDOW_ROW", "of_kind"]
