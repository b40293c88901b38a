"""Running the WID operator's shards without Spark: micro-batches of rows in
(as the streaming oracle takes them), the shards' outputs as the oracle's
`BatchResult`s out. Rows are packed exactly as the Spark plan packs them
(`wid.kernels.operator.packing`), only the hashing to shards differs."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from wid.kernels.fields import END, FINAL, START
from wid.kernels.operator.engines import make_engine
from wid.kernels.operator.packing import (
    BATCH_MS,
    DATA,
    KEY,
    SHARD,
    SUMMARY,
    pack,
    read_summaries,
    received,
    split,
    summarize,
)
from wid.kernels.operator.shard import Emitted, MemoryStore, ShardOutput, Store, run_batch, tables
from wid.kernels.operator.state_cache import CachedStore
from wid.kernels.tables import CLOCK, ORIGINAL, PTIME, PUNCT, SRC, TS
from wid.semantics.oracle import DeadLetter, event_time_reason, reject_reason
from wid.semantics.stream_oracle import BatchResult, Emission, LateRow, MicroBatch
from wid.semantics.timeunits import event_time_us, ms_to_us
from wid.semantics.watermark import partition_id
from wid.spark.operator.query import operator_spec
from wid.spec.pipeline import KAFKA_PARTITION, KAFKA_TOPIC
from wid.spec.window import Window

Row = dict[str, Any]


def micro_batches(rows: list[Row], rng: random.Random, cuts: int, disorder_ms: int) -> list[MicroBatch]:
    """`rows` (each with an integer ``ts``) shuffled by up to `disorder_ms`,
    cut at up to `cuts` random places into micro-batches 7 ms apart, each
    row from source ``a`` or ``b`` at random."""
    rows = sorted(rows, key=lambda r: r["ts"] + rng.randrange(disorder_ms + 1))
    n = len(rows)
    bounds = [0, *sorted(rng.sample(range(n + 1), min(n + 1, cuts))), n]
    return [MicroBatch([(rng.choice("ab"), r) for r in rows[a:b]], i * 7)
            for i, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False))]


class LocalOperator:
    """The operator's shards over in-memory stores. With `hosts` (cache
    directories), each shard's micro-batch runs on one of them at random,
    through the host-local state cache (`wid.kernels.operator.state_cache`),
    and one in three first runs an attempt on half its rows whose state is
    then rolled back, as when a task fails before its commit."""

    def __init__(self, window: Window, schema: pa.Schema, shards: int = 3,
                 is_punctuation: Callable[[Any], bool] = lambda _: False, hosts: Sequence[Path] = (),
                 seed: int = 0, partitions: int = 0) -> None:
        """`partitions`: when above 0, each micro-batch's rows are cut into
        that many input partitions (in arrival order), each packed by
        `pack` as Spark's plan packs it, combining before the shuffle where
        the window allows it (`wid.kernels.operator.combine`); at 0 the rows
        are split by shard unpacked."""
        self.window, self.schema, self.is_punctuation = window, schema, is_punctuation
        self.hosts, self.rng, self.partitions = list(hosts), random.Random(seed), partitions
        self.spec = operator_spec(window, pipeline="test", shards=shards,
                                  dead_letter_columns=tuple(schema.names) if window.late_data == "dlq" else (),
                                  input_columns=tuple(schema.names))
        self.stores = [MemoryStore() for _ in range(shards)]
        self.held: list[int] = []  # after each batch: state rows held over all shards (`Engine.held`)
        self.window_tables: list[list[pa.Table]] = []  # each shard and batch: the window tables it emitted
        self.stats: list[list[dict[str, Any]]] = []  # each batch: each shard's counts (`run_batch`'s stats)

    def run(self, batches: Sequence[MicroBatch]) -> list[BatchResult]:
        return [self.step(b) for b in batches]

    def _table(self, batch: MicroBatch, out: BatchResult) -> pa.Table:
        w = self.window
        rows: list[Row] = []
        for source, row in batch.rows:
            punct = self.is_punctuation(row)
            if punct:
                out.punctuations += 1
            else:
                out.rows_in += 1
                reason = reject_reason(row, w, ms_to_us(batch.batch_ms), streaming=True)
                if reason is not None:
                    out.rejected.append(DeadLetter(reason, row))
                    continue
            time_col = (w.punctuation.time_column if punct and w.punctuation else None) or w.event_time_column or ""
            ts = event_time_us(row.get(time_col), w.event_time_unit)
            if punct and ts is not None and event_time_reason(ts, w, ms_to_us(batch.batch_ms), streaming=True) is not None:
                ts = None  # as Spark's prepare marks it: a punctuation time a row would be rejected for says nothing
            scope = w.punctuation.scope if w.punctuation and w.punctuation.scope else w.closing_columns
            full = {c: row.get(c) for c in self.schema.names}
            rows.append({**full, **{ORIGINAL + c: v for c, v in full.items() if c in self.spec.dead_letter_columns},
                         TS: None if punct else ts, PTIME: ts if punct else None, SRC: source, PUNCT: punct,
                         SHARD: hash(tuple(row.get(c) for c in scope)) % len(self.stores), BATCH_MS: batch.batch_ms,
                         CLOCK: _partition(row)})
        extra = [pa.field(ORIGINAL + f.name, f.type) for f in self.schema if f.name in self.spec.dead_letter_columns]
        partitioned = {KAFKA_TOPIC, KAFKA_PARTITION} <= set(self.schema.names)  # one watermark per partition
        schema = pa.schema([*self.schema, *extra, (TS, pa.int64()), (PTIME, pa.int64()), (SRC, pa.string()),
                            (PUNCT, pa.bool_()), (SHARD, pa.int64()), (BATCH_MS, pa.int64()),
                            *([(CLOCK, pa.int64())] if partitioned else [])])
        return pa.Table.from_pylist(rows, schema=schema)

    def step(self, batch: MicroBatch) -> BatchResult:
        out = BatchResult()
        held = 0
        table = self._table(batch, out)
        scoped = bool(self.window.punctuation and self.window.punctuation.scope)
        summary = read_summaries([json.dumps(summarize(table, scoped))]) if table.num_rows else ({}, batch.batch_ms)
        self.stats.append([])
        for store, (part, sources, batch_ms) in zip(self.stores, self._parts(table, scoped, *summary), strict=True):
            if self.hosts and self.rng.random() < 1 / 3:
                kept = copy.deepcopy(store.__dict__)
                self._shard(store, part.slice(0, part.num_rows // 2), sources, batch_ms)  # other state than the retry's
                store.__dict__.update(kept)  # the failed attempt's state never commits
            shard = self._shard(store, part, sources, batch_ms)
            out.emitted += self._emissions(shard.windows, shard.retractions)
            out.late += [LateRow(r[SRC], {c[len(ORIGINAL):]: v for c, v in r.items() if c.startswith(ORIGINAL)},
                                 r["_wid_reason"]) for r in (shard.late.to_pylist() if shard.late is not None else [])]
            self.stats[-1].append({**shard.stats, "received": part.num_rows})  # as `ShardCall.handle` counts
            out.rows_late_dropped += shard.stats["late_dropped"]
            out.watermark_us = shard.stats["watermark_us"]
            held += shard.stats["state_groups"]
        self.held.append(held)
        return out

    def _parts(self, table: pa.Table, scoped: bool, sources: Any, batch_ms: int) -> list[tuple[pa.Table, Any, int]]:
        """Each shard's rows, per-source summaries and batch timestamp: split
        by shard, or (`partitions`) packed per input partition and received
        as the operator receives them."""
        shards = len(self.stores)
        if not self.partitions or table.num_rows == 0:
            return [(part.drop_columns([BATCH_MS]), sources, batch_ms) for part in split(table, shards)]
        step = -(-table.num_rows // self.partitions)
        packed = [b for lo in range(0, table.num_rows, step)
                  for b in pack(iter(table.slice(lo, step).to_batches()), list(range(shards)), scoped,
                                combine=self.spec)]
        blobs: dict[int, tuple[list[bytes], list[str]]] = {s: ([], []) for s in range(shards)}
        for b in packed:
            for key, blob, summary in zip(*(b.column(c).to_pylist() for c in (KEY, DATA, SUMMARY)), strict=True):
                blobs[key][0].append(blob)
                blobs[key][1].append(summary)
        return [received(*blobs[s]) for s in range(shards)]

    def _shard(self, store: MemoryStore, part: pa.Table, sources: Any, batch_ms: int) -> ShardOutput:
        cached = CachedStore(store, self.rng.choice(self.hosts)) if self.hosts else None
        used: Store = cached or store
        out = run_batch(self.spec, used, make_engine(self.spec, used), part, sources, batch_ms)
        if cached is not None:
            cached.finish()
        return out

    def _emissions(self, windows: Emitted, retractions: pa.Table | None) -> list[Emission]:
        w = self.window
        self.window_tables.append(list(tables(windows)))
        found = [Emission(emission_row(w, r, self.schema.names), final=r[FINAL])
                 for table in self.window_tables[-1] for r in table.to_pylist()]
        for r in retractions.to_pylist() if retractions is not None else []:
            row = {w.window_start_column: r[START], w.window_end_column: None, **{k: r[k] for k in w.group_by}}
            found.append(Emission(row, final=False, retract=True))
        return found


def emission_row(w: Window, r: dict[str, Any], columns: Sequence[str]) -> dict[str, Any]:
    """An operator window row as the oracle's emission row: bounds (and a
    count window's id), keys, aggregates; a rolling row is its input
    `columns` and the aggregates."""
    aggs = {a.as_: r[a.as_] for a in w.aggregations}
    if w.shape.row_windows:
        return {**{c: r[c] for c in columns}, **aggs}
    ids = {w.window_id_column: r[w.window_id_column]} if w.shape.numbered else {}
    return {w.window_start_column: r[START], w.window_end_column: r[END], **ids,
            **{k: r[k] for k in w.key_columns}, **aggs}


def _partition(row: Row) -> int | None:
    """A row's Kafka partition as the operator's `CLOCK` gets it, as the oracle's `clock_of` reads it."""
    if KAFKA_TOPIC in row and KAFKA_PARTITION in row:
        return partition_id(row[KAFKA_TOPIC], row[KAFKA_PARTITION])
    return None
