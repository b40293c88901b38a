"""Moving rows in and out of the WID operator as Arrow blobs.

PySpark's ``transformWithStateInPandas`` regroups its input row by row in
Python before calling the processor, which would put Python on every row.
So rows reach the operator packed: a stateless ``mapInArrow`` step (`pack`)
splits each input partition by shard and writes each shard's rows as Arrow
IPC blobs of at most `CHUNK_ROWS` rows, each with the per-source summary
(largest event time, largest global punctuation, batch timestamp) of the
slice of the partition it came from (`SLICE_ROWS` rows at a time, so that a
worker's memory follows the slice, not the partition); *every* shard gets
every summary, so that all shards advance the same watermark in the same
micro-batch. The operator then sees a few rows per
shard and micro-batch. (Its output needs no such trick: PySpark converts
returned frames column by column, see `wid.kernels.operator.output`.) (The
packed columns' names do not start with an underscore: PySpark hands them
to the processor through namedtuples, which rename such fields.) Runs on
executors: numpy, pyarrow and the standard library only.

Columns whose value is the same on every row (`CONSTANT_TYPES`: the source
name when there is one source, the punctuation columns when there is no
punctuation) are not sent: the plan leaves them out of the scan, `pack`
gets their values, which travel in the summary, and `received` puts them
back on the operator's side. Sent, they were three more columns through
Spark's JVM-to-Arrow conversion and about 19 bytes a row through the blobs
and the shuffle (5M rows through ``mapInArrow``: 0.8-1.1 s with five
columns, 1.1-1.2 s with these three more). The
engines see the same columns either way (the put-back ones last; held
tables are concatenated by name), so a checkpoint written while they were
sent restarts unchanged.

Before the shuffle, the rows of a tumbling or hopping window combine
(`wid.kernels.operator.combine`; ``spark.wid.operator.combine``, on unless
set to ``false``): the data rows of one (group, pane) inside one slice of an
input partition ship as one partial aggregate with the number of rows it
stands for, after the slice's summary is taken from its rows, so a hot key
costs its shard a partial per slice and pane, not its rows. Rows
rejected as bad input and punctuation rows ship as rows. Under the ``dlq``
late policy nothing combines: a late row goes to the dead letter with its
source columns, which a partial no longer holds, and carrying them beside it
would ship the rows anyway; shipping rows is the simplest choice that is
correct.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wid.kernels.memory import release
from wid.kernels.operator.combine import combined, combines
from wid.kernels.operator.layout import OperatorSpec
from wid.kernels.tables import (
    CHUNK_ROWS,
    CLOCK,
    PTIME,
    PUNCT,
    REASON,
    SRC,
    TS,
    concat,
    from_bytes,
    gathered,
    to_chunks,
)
from wid.semantics.watermark import SourceBatch, clock

SHARD = "_wid_shard"      # shard index of a row, in [0, shards)
BATCH_MS = "_wid_batch_ms"  # the micro-batch timestamp, epoch ms
KEY = "wid_key"           # the operator's grouping key: one value per shard
DATA = "wid_data"         # a shard's rows, as an Arrow IPC blob
SUMMARY = "wid_summary"   # the per-source summary of a slice of a partition, JSON
PACKED = pa.schema([(KEY, pa.int64()), (DATA, pa.binary()), (SUMMARY, pa.string())])
CONSTANT_TYPES = {SRC: pa.string(), PUNCT: pa.bool_(), PTIME: pa.int64()}  # columns that may be left unsent
SLICE_ROWS = 1 << 17  # rows of an input partition `pack` holds at a time (a few MB of rows)


def with_constants(rows: pa.Table, constants: Mapping[str, Any]) -> pa.Table:
    """`rows` plus a column for each name in `constants` that it lacks,
    holding that value on every row (names and types: `CONSTANT_TYPES`)."""
    for name, value in constants.items():
        if name not in rows.column_names:
            kind = CONSTANT_TYPES[name]
            rows = rows.append_column(pa.field(name, kind), pa.repeat(pa.scalar(value, kind), rows.num_rows))
    return rows


def _clocks(rows: pa.Table, constants: Mapping[str, Any]) -> Iterator[tuple[str, np.ndarray]]:
    """Each watermark clock of `rows` and the mask of its rows: per source
    (`SRC`), per Kafka partition where a row carries one (`CLOCK`, a
    `wid.semantics.watermark.partition_id`; NULL: the source's own clock)."""
    have, n = set(rows.column_names), rows.num_rows
    srcs = rows.column(SRC) if SRC in have else None
    ids = rows.column(CLOCK).fill_null(-1).to_numpy(zero_copy_only=False) if CLOCK in have else None
    for src in pc.unique(srcs).to_pylist() if srcs is not None else [constants[SRC]]:
        in_src = pc.equal(srcs, src).to_numpy(zero_copy_only=False) if srcs is not None else np.ones(n, bool)
        if ids is None:
            yield src, in_src
            continue
        for part in np.unique(ids[in_src]).tolist():
            yield (src if part < 0 else clock(src, part)), in_src & (ids == part)


def summarize(rows: pa.Table, scoped: bool, constants: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Per watermark clock (a row's `CLOCK`, else its source, `SRC`): [largest data event time, largest global punctuation]
    (None where there was none), and the batch timestamp. Rows rejected
    as bad input (`REASON` set) have no say. Keyed
    punctuations (`scoped`) do not move a clock's watermark. A
    `CONSTANT_TYPES` column missing from `rows` has its value in
    `constants` (read from there, not built row by row)."""
    constants, have, n = constants or {}, set(rows.column_names), rows.num_rows
    punct = (rows.column(PUNCT).to_numpy(zero_copy_only=False).astype(bool) if PUNCT in have
             else np.full(n, bool(constants[PUNCT])))
    # rows rejected as bad input carry no time the watermark may trust
    timed = ~punct & ~pc.is_valid(rows.column(REASON)).to_numpy(zero_copy_only=False) if REASON in have else ~punct
    sources: dict[str, list[int | None]] = {}
    for name, mine in _clocks(rows, constants):
        data = rows.column(TS).filter(pa.array(mine & timed))
        marks = rows.column(PTIME).filter(pa.array(mine & punct)) if not scoped and punct.any() else \
            pa.array([], pa.int64())
        sources[name] = [pc.max(data).as_py() if len(data) else None, pc.max(marks).as_py() if len(marks) else None]
    batch = pc.max(rows.column(BATCH_MS)).as_py() if BATCH_MS in rows.column_names else 0
    return {"batch_ms": batch, "sources": sources}


def read_summaries(texts: Sequence[str]) -> tuple[dict[str, SourceBatch], int]:
    """Merged per-source summaries and the batch timestamp of one shard's input."""
    merged: dict[str, list[int | None]] = {}
    batch_ms = 0
    for text in texts:
        doc = json.loads(text)
        batch_ms = max(batch_ms, doc["batch_ms"] or 0)
        for name, (event, mark) in doc["sources"].items():
            old = merged.setdefault(name, [None, None])
            old[0] = event if old[0] is None else (old[0] if event is None else max(old[0], event))
            old[1] = mark if old[1] is None else (old[1] if mark is None else max(old[1], mark))
    return {k: SourceBatch(v[0], v[1]) for k, v in merged.items()}, batch_ms


def split(rows: pa.Table, shards: int) -> list[pa.Table]:
    """The rows of each shard (by the `SHARD` column), without it. (Shard
    numbers go to the sort in the smallest unsigned type that holds them,
    for which NumPy's stable sort is a radix sort: 40 ms instead of 115 ms
    for 2.5M rows.)"""
    shard = rows.column(SHARD).to_numpy(zero_copy_only=False).astype(np.min_scalar_type(shards))
    order = np.argsort(shard, kind="stable")
    bounds = np.searchsorted(shard[order], np.arange(shards + 1))
    body = rows.drop_columns([SHARD]).take(pa.array(order))
    return [body.slice(int(bounds[s]), int(bounds[s + 1] - bounds[s])) for s in range(shards)]


def pack(batches: Iterator[pa.RecordBatch], keys: Sequence[int], scoped: bool,
         chunk_rows: int = CHUNK_ROWS, constants: Mapping[str, Any] | None = None,
         combine: OperatorSpec | None = None, slice_rows: int = SLICE_ROWS) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function before the operator: per shard, rows
    whose `KEY` is ``keys[shard]``, each with at most `chunk_rows` of that
    shard's rows as a blob (one empty blob for a shard without rows) and the
    summary of the slice of the partition they came from, which carries
    `constants` (the values of the `CONSTANT_TYPES` columns the batches
    leave out); nothing for an empty partition. The partition is packed a
    slice of about `slice_rows` rows at a time, so a worker holds one slice,
    not the partition (a micro-batch that opens millions of keys arrives as
    partitions of millions of rows); every shard gets every slice's
    summary, and `read_summaries` takes the largest of each, so a shard
    advances the same watermark as from the whole partition's. Given the
    window's `combine` spec, where it combines
    (`wid.kernels.operator.combine.combines`), a slice's data rows of one
    (group, pane) ship as one partial, combined after the summary is taken
    from the rows (module docstring)."""
    release()  # what the worker's previous task left once PySpark let go of its batches
    constants = dict(constants or {})
    for rows in gathered(batches, slice_rows):
        doc = {**summarize(rows, scoped, constants), "constants": constants}
        summary = pa.scalar(json.dumps(doc), pa.string())
        if combine is not None and combines(combine):
            rows = combined(combine, rows, carried=(SHARD,))
        for key, part in zip(keys, split(rows, len(keys)), strict=True):
            blobs = to_chunks(part.drop_columns([BATCH_MS]) if BATCH_MS in part.column_names else part, chunk_rows)
            yield pa.RecordBatch.from_arrays([pa.repeat(pa.scalar(key, pa.int64()), len(blobs)),
                                              pa.array(blobs, pa.binary()), pa.repeat(summary, len(blobs))],
                                             schema=PACKED)
    release()  # the worker stays for the next task (`wid.kernels.memory`)


def unpacked(blobs: Sequence[bytes]) -> pa.Table:
    """A shard's rows from its packed blobs (empty blobs hold zero rows)."""
    return concat([from_bytes(b) for b in blobs])


def received(blobs: Sequence[bytes], summaries: Sequence[str]) -> tuple[pa.Table, dict[str, SourceBatch], int]:
    """A shard's micro-batch from its packed columns: its rows with the
    constant columns put back, the per-source summaries and the batch
    timestamp (epoch ms)."""
    sources, batch_ms = read_summaries(summaries)
    constants = json.loads(summaries[0]).get("constants", {}) if summaries else {}
    return with_constants(unpacked(blobs), constants), sources, batch_ms


__all__ = ["BATCH_MS", "CONSTANT_TYPES", "DATA", "KEY", "PACKED", "SHARD", "SUMMARY", "pack", "read_summaries",
           "received", "split", "summarize", "unpacked", "with_constants"]
