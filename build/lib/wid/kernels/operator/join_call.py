"""The window join's call of the operator's processor: `ShardCall`'s
unpacking and output, with the join's engine
(`wid.kernels.operator.join_engine.run_join_batch`) for each shard's
micro-batch."""

from __future__ import annotations

import pyarrow as pa

from wid.kernels.operator.join_engine import JoinShape, run_join_batch
from wid.kernels.operator.shard import ShardOutput, Store
from wid.kernels.operator.shard_call import ShardCall
from wid.semantics.watermark import SourceBatch


class JoinCall(ShardCall):
    """Runs the window join for one shard per call."""

    def __init__(self, shape: JoinShape) -> None:  # noqa: D107
        self.shape = shape
        self.output = pa.schema([])
        self.cache_id = None

    def run(self, store: Store, rows: pa.Table, sources: dict[str, SourceBatch], batch_ms: int) -> ShardOutput:
        return run_join_batch(self.shape, store, rows, sources, batch_ms)


__all__ = ["JoinCall"]
