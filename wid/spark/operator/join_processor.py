"""The window join as a Spark stateful processor: `WidProcessor`'s state
store and packing, with the join's engine
(`wid.spark.operator.join_engine.run_join_batch`) for each shard's
micro-batch."""

from __future__ import annotations

import pyarrow as pa

from wid.semantics.watermark import SourceBatch
from wid.spark.operator.join_engine import JoinShape, run_join_batch
from wid.spark.operator.processor import WidProcessor
from wid.spark.operator.shard import ShardOutput


class JoinProcessor(WidProcessor):
    """Runs the window join for one shard per call."""

    def __init__(self, shape: JoinShape) -> None:  # noqa: D107
        self.shape = shape

    def run(self, rows: pa.Table, sources: dict[str, SourceBatch], batch_ms: int) -> ShardOutput:
        return run_join_batch(self.shape, self.store, rows, sources, batch_ms)


__all__ = ["JoinProcessor"]
