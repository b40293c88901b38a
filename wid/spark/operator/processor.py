"""The WID operator as a Spark stateful processor
(``transformWithStateInPandas``, state in Spark's RocksDB state store,
checkpointed with the query).

The grouping key is the shard; each call receives that shard's packed rows
for one micro-batch (`wid.spark.operator.packing`) and returns the
operator's output rows (`wid.spark.operator.output`): the emitted windows,
retractions and late rows, and one row of the shard's counts. State is two
map variables: named blobs (``meta``, ``keyed``, ``panes``: see
`wid.spark.operator.shard`) and pane tables by pane id.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

from wid.semantics.watermark import SourceBatch
from wid.spark.operator.engines import make_engine
from wid.spark.operator.layout import OperatorSpec
from wid.spark.operator.output import frames
from wid.spark.operator.packing import DATA, SUMMARY, received
from wid.spark.operator.shard import ShardOutput, run_batch


class TwsStore:
    """A `wid.spark.operator.shard.Store` over two map state variables."""

    def __init__(self, values: Any, panes: Any) -> None:
        self.values, self.panes = values, panes

    def get(self, name: str) -> bytes | None:
        got = self.values.getValue((name,))
        return None if got is None else bytes(got[0])

    def put(self, name: str, blob: bytes) -> None:
        self.values.updateValue((name,), (blob,))

    def delete(self, name: str) -> None:
        self.values.removeKey((name,))

    def get_pane(self, pane: int) -> bytes | None:
        got = self.panes.getValue((pane,))
        return None if got is None else bytes(got[0])

    def put_pane(self, pane: int, blob: bytes) -> None:
        self.panes.updateValue((pane,), (blob,))

    def delete_pane(self, pane: int) -> None:
        self.panes.removeKey((pane,))


class WidProcessor(StatefulProcessor):
    """Runs `wid.spark.operator.shard.run_batch` for one shard per call."""

    def __init__(self, spec: OperatorSpec) -> None:
        self.spec = spec
        self.output = pa.schema([])

    def emitting(self, schema: pa.Schema) -> WidProcessor:
        """A copy of this processor that returns its rows in `schema` (the
        plan's output columns, `wid.spark.operator.output`)."""
        bound = copy.copy(self)
        bound.output = schema
        return bound

    def init(self, handle: StatefulProcessorHandle) -> None:
        values = handle.getMapState("values", "name STRING", "blob BINARY")
        panes = handle.getMapState("panes", "pane BIGINT", "blob BINARY")
        self.store = TwsStore(values, panes)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        blobs: list[bytes] = []
        summaries: list[str] = []
        for frame in rows:
            blobs.extend(frame[DATA])
            summaries.extend(frame[SUMMARY])
        yield from frames(self.run(*received(blobs, summaries)), self.output)

    def run(self, rows: pa.Table, sources: dict[str, SourceBatch], batch_ms: int) -> ShardOutput:
        """One shard's micro-batch: `run_batch` with the window's engine."""
        return run_batch(self.spec, self.store, make_engine(self.spec, self.store), rows, sources, batch_ms)

    def close(self) -> None:
        pass


__all__ = ["WidProcessor"]
