"""wid's streaming operator run without Spark, for benchmarks that time or
observe the operator's own work: the shards of
`wid.kernels.operator.shard.run_batch` over `MemoryStore`s, fed one
micro-batch at a time, packed as the Spark plan packs them
(`wid.kernels.operator.packing`: a per-source summary shared by all shards,
rows split by shard; only the hash to shards differs: ``k mod shards``).

Input rows: ``k`` int32, ``ts_ms`` int64 (epoch ms), ``v`` float64.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from wid.kernels.operator.engines import make_engine
from wid.kernels.operator.packing import BATCH_MS, SHARD, read_summaries, split, summarize
from wid.kernels.operator.shard import MemoryStore, run_batch, tables
from wid.kernels.tables import PTIME, PUNCT, SRC, TS
from wid.spark.operator.query import operator_spec
from wid.spec.window import Window

INPUT = pa.schema([("k", pa.int32()), ("ts_ms", pa.int64()), ("v", pa.float64())])
PACKED = pa.schema([*INPUT, (TS, pa.int64()), (PTIME, pa.int64()), (SRC, pa.string()), (PUNCT, pa.bool_()),
                    (SHARD, pa.int64()), (BATCH_MS, pa.int64())])


def packed_rows(k: np.ndarray, ts_ms: np.ndarray, v: np.ndarray, source: str, shards: int,
                batch_ms: int) -> pa.Table:
    """Rows (``k`` int32, ``ts_ms`` epoch ms, ``v``) from `source` as the
    operator's packed input (`PACKED` columns), shard ``k mod shards``."""
    n = len(ts_ms)
    return pa.table({"k": k, "ts_ms": ts_ms, "v": v, TS: ts_ms * 1000,
                     PTIME: pa.nulls(n, pa.int64()), SRC: pa.repeat(source, n), PUNCT: np.zeros(n, dtype=bool),
                     SHARD: k.astype(np.int64) % shards, BATCH_MS: np.full(n, batch_ms, dtype=np.int64)},
                    schema=PACKED)


def punctuation_rows(p_ms: np.ndarray, batch_ms: int) -> pa.Table:
    """Punctuation rows ``ts < p`` on source ``p`` (`PACKED` columns, shard 0)."""
    n = len(p_ms)
    nulls = {f.name: pa.nulls(n, f.type) for f in INPUT}
    return pa.table({**nulls, TS: pa.nulls(n, pa.int64()), PTIME: p_ms * 1000, SRC: pa.repeat("p", n),
                     PUNCT: np.ones(n, dtype=bool), SHARD: np.zeros(n, dtype=np.int64),
                     BATCH_MS: np.full(n, batch_ms, dtype=np.int64)}, schema=PACKED)


class ShardedOperator:
    """The operator's shards over in-memory stores for one window."""

    def __init__(self, window: Window, shards: int) -> None:
        self.spec = operator_spec(window, pipeline="bench", shards=shards, input_columns=tuple(INPUT.names))
        self.stores = [MemoryStore() for _ in range(shards)]
        self.late_dropped = 0

    def step(self, table: pa.Table) -> tuple[list[pa.Table], int | None]:
        """One micro-batch (`PACKED` rows): the window tables emitted and
        the global watermark after it (epoch microseconds)."""
        sources, batch_ms = read_summaries([json.dumps(summarize(table, False))])
        found: list[pa.Table] = []
        watermark = None
        for store, part in zip(self.stores, split(table, len(self.stores)), strict=True):
            out = run_batch(self.spec, store, make_engine(self.spec, store), part.drop_columns([BATCH_MS]),
                            sources, batch_ms)
            found.extend(tables(out.windows))
            self.late_dropped += out.stats["late_dropped"]
            watermark = out.stats["watermark_us"]
        return found, watermark
