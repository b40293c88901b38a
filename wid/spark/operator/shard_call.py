"""One call of the WID operator's processor: a shard's packed rows for one
micro-batch in, the operator's output rows out (`wid.spark.operator.output`).

This is the part of the processor that needs numpy, pyarrow and pandas; the
Spark-facing `wid.spark.operator.processor.WidProcessor` carries it pickled
and unpickles it at its first call (see there why). Runs on executors.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator

import pandas as pd
import pyarrow as pa

from wid.semantics.watermark import SourceBatch
from wid.spark.operator.engines import make_engine
from wid.spark.operator.layout import OperatorSpec
from wid.spark.operator.output import frames
from wid.spark.operator.packing import DATA, SUMMARY, received
from wid.spark.operator.shard import ShardOutput, Store, run_batch


class ShardCall:
    """Runs `wid.spark.operator.shard.run_batch` with the window's engine for
    one shard and micro-batch; returns rows in `output` (`emitting`)."""

    def __init__(self, spec: OperatorSpec) -> None:
        self.spec = spec
        self.output = pa.schema([])

    def emitting(self, schema: pa.Schema) -> ShardCall:
        """A copy that returns its rows in `schema` (the plan's output columns)."""
        bound = copy.copy(self)
        bound.output = schema
        return bound

    def handle(self, store: Store, packed: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        """The shard's output frames for its `packed` frames (columns `DATA`
        and `SUMMARY`, `wid.spark.operator.packing`)."""
        blobs: list[bytes] = []
        summaries: list[str] = []
        for frame in packed:
            blobs.extend(frame[DATA])
            summaries.extend(frame[SUMMARY])
        yield from frames(self.run(store, *received(blobs, summaries)), self.output)

    def run(self, store: Store, rows: pa.Table, sources: dict[str, SourceBatch], batch_ms: int) -> ShardOutput:
        """One shard's micro-batch: `run_batch` with the window's engine."""
        return run_batch(self.spec, store, make_engine(self.spec, store), rows, sources, batch_ms)




__all__ = ["ShardCall"]
