"""The WID operator as a Spark stateful processor
(``transformWithStateInPandas``, state in Spark's RocksDB state store,
checkpointed with the query).

The grouping key is the shard; each call receives that shard's packed rows
for one micro-batch (`wid.spark.operator.packing`) and returns packed rows:
the emitted windows, retractions and late rows as Arrow IPC blobs of at most
`CHUNK_ROWS` rows, and the shard's counts as JSON in the first. State is two
map variables: named blobs (``meta``, ``keyed``, ``panes``: see
`wid.spark.operator.shard`) and pane tables by pane id.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

from wid.semantics.watermark import SourceBatch
from wid.spark.operator.engines import make_engine
from wid.spark.operator.layout import OperatorSpec
from wid.spark.operator.packing import DATA, KEY, SUMMARY, read_summaries, unpacked
from wid.spark.operator.shard import ShardOutput, run_batch
from wid.spark.operator.tables import CHUNK_ROWS, to_chunks

WINDOWS, RETRACTIONS, LATE, STATS = "wid_windows", "wid_retractions", "wid_late", "wid_stats"
OUTPUT_DDL = f"{KEY} BIGINT, {WINDOWS} BINARY, {RETRACTIONS} BINARY, {LATE} BINARY, {STATS} STRING"


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


def packed_output(key: int, out: ShardOutput, chunk_rows: int = CHUNK_ROWS) -> pd.DataFrame:
    """A shard's micro-batch as rows: row i holds the i-th blob (at most
    `chunk_rows` rows, `wid.spark.operator.tables.to_chunks`) of each kind
    of output, None past a kind's last; the first row holds the counts."""
    parts = {name: [] if t is None or t.num_rows == 0 else to_chunks(t, chunk_rows)
             for name, t in ((WINDOWS, out.windows), (RETRACTIONS, out.retractions), (LATE, out.late))}
    n = max(1, *(len(blobs) for blobs in parts.values()))
    columns: dict[str, list[Any]] = {KEY: [key] * n}
    columns.update({name: [*blobs, *[None] * (n - len(blobs))] for name, blobs in parts.items()})
    columns[STATS] = [json.dumps(out.stats), *[None] * (n - 1)]
    return pd.DataFrame(columns)


class WidProcessor(StatefulProcessor):
    """Runs `wid.spark.operator.shard.run_batch` for one shard per call."""

    def __init__(self, spec: OperatorSpec) -> None:
        self.spec = spec

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
        sources, batch_ms = read_summaries(summaries)
        yield packed_output(int(key[0]), self.run(unpacked(blobs), sources, batch_ms))

    def run(self, rows: pa.Table, sources: dict[str, SourceBatch], batch_ms: int) -> ShardOutput:
        """One shard's micro-batch: `run_batch` with the window's engine."""
        return run_batch(self.spec, self.store, make_engine(self.spec, self.store), rows, sources, batch_ms)

    def close(self) -> None:
        pass


__all__ = ["OUTPUT_DDL", "STATS", "WidProcessor", "LATE", "RETRACTIONS", "WINDOWS"]
