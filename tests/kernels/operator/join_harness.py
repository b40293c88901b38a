"""Running the window join's operator shards without Spark: the streaming
oracle's micro-batches in, its `BatchResult`s out. Rows are stamped and
rejected as Spark's prepare step does (the oracle's `split_side`), laid out
as `wid.spark.operator.join_layout` says and packed as the Spark plan packs
them; only the hashing to shards differs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from wid.kernels.operator.join_engine import FIRED, run_join_batch
from wid.kernels.operator.packing import SHARD, read_summaries, split, summarize
from wid.kernels.operator.shard import MemoryStore, tables
from wid.kernels.tables import PTIME, PUNCT, SRC, TS
from wid.semantics.stream_types import BatchResult, Emission, LateRow, MicroBatch
from wid.semantics.timeunits import ms_to_us
from wid.semantics.window_join import TS as ORACLE_TS
from wid.semantics.window_join import split_side
from wid.spark.operator.join_layout import (
    LEFT_ORIGINAL,
    RIGHT_ORIGINAL,
    join_shape,
    key_names,
    raw_columns,
)
from wid.spec.join import WindowJoin

Row = dict[str, Any]


class LocalJoin:
    """The join's shards over in-memory stores. `left` and `right` are the
    two sides' Arrow schemas."""

    def __init__(self, join: WindowJoin, left: pa.Schema, right: pa.Schema, shards: int = 3) -> None:
        self.join, self.left, self.right = join, left, right
        self.shape = join_shape(join, left.names, shards=shards)
        self.stores = [MemoryStore() for _ in range(shards)]
        self.held: list[int] = []  # after each batch: rows held over all shards

    def run(self, batches: Sequence[MicroBatch]) -> list[BatchResult]:
        return [self.step(b) for b in batches]

    def _schema(self) -> pa.Schema:
        j, dlq = self.join, self.join.late_data == "dlq"
        keys = [pa.field(k, self.left.field(c).type) for k, c in zip(key_names(j), j.left_keys, strict=True)]
        raw = [pa.field(r, self.right.field(c).type) for c, r in raw_columns(j).items()]
        originals = [pa.field(p + f.name, f.type) for p, s in ((LEFT_ORIGINAL, self.left), (RIGHT_ORIGINAL, self.right))
                     for f in s] if dlq else []
        return pa.schema([*self.left, *keys, *raw, *originals, (TS, pa.int64()), (SRC, pa.string()),
                          (PUNCT, pa.bool_()), (PTIME, pa.int64()), (SHARD, pa.int64())])

    def _row(self, side: str, row: Row) -> Row:
        j = self.join
        names = j.left_keys if side == "left" else j.right_keys
        out: Row = {k: row[c] for k, c in zip(key_names(j), names, strict=True)}
        if side == "left":
            out.update({c: row.get(c) for c in self.left.names})
        else:
            out.update({r: row.get(c) for c, r in raw_columns(j).items()})
        if j.late_data == "dlq":
            prefix, schema = (LEFT_ORIGINAL, self.left) if side == "left" else (RIGHT_ORIGINAL, self.right)
            out.update({prefix + c: row.get(c) for c in schema.names})
        shard = hash(tuple(row[c] for c in names)) % len(self.stores)
        return {**out, TS: row[ORACLE_TS], SRC: side, PUNCT: False, PTIME: None, SHARD: shard}

    def step(self, batch: MicroBatch) -> BatchResult:
        out = BatchResult(rows_in=len(batch.rows))
        rows: list[Row] = []
        for side in ("left", "right"):
            good, dead = split_side([r for s, r in batch.rows if s == side], self.join, side, ms_to_us(batch.batch_ms))
            out.rejected += dead
            rows += [self._row(side, r) for r in good]
        table = pa.Table.from_pylist(rows, schema=self._schema())
        sources, _ = read_summaries([json.dumps(summarize(table, False))]) if rows else ({}, 0)
        held = 0
        for store, part in zip(self.stores, split(table, len(self.stores)), strict=True):
            shard = run_join_batch(self.shape, store, part, sources, batch.batch_ms)
            out.emitted += [Emission(self._output(r)) for t in tables(shard.windows) for r in t.to_pylist()]
            out.late += [self._late(r) for r in (shard.late.to_pylist() if shard.late is not None else [])]
            out.rows_late_dropped += shard.stats["late_dropped"]
            held += shard.stats["state_groups"]
        self.held.append(held)
        return out

    def _output(self, r: Row) -> Row:
        j = self.join
        head = {j.output_time: r[FIRED] if j.use_system_time else r[j.output_time]}
        head.update({k: r[k] for k in j.left_keys})
        head.update({c: r[c] for c in self.left.names if c not in head})
        row = {**head, **{a: r[a] for a in j.aliases}}
        return {c: j.null_fill.get(c) if v is None and c in j.null_fill else v for c, v in row.items()}

    def _late(self, r: Row) -> LateRow:
        prefix = LEFT_ORIGINAL if r[SRC] == "left" else RIGHT_ORIGINAL
        return LateRow(r[SRC], {c[len(prefix):]: v for c, v in r.items() if c.startswith(prefix)}, r["_wid_reason"])
