"""One shard of the WID operator for one micro-batch: the part every window
kind shares (docs/semantics.md#completeness and docs/architecture.md#execution-paths).

A shard holds the partial aggregates of many groups (those whose key, or
punctuation scope, hashes to it), never their rows. Per micro-batch it
receives the batch's rows for its groups and the batch's per-source summary
(`SourceBatch`, the same on every shard), and:

1. judges each row against the closing points before the batch (the
   kind's engine says which rows are late; `late_data` says what happens to
   them: counted, or returned for the dead letter);
2. lets the kind's engine add the accepted rows to its state;
3. advances the watermarks (`wid.semantics.watermark`: every shard computes
   the same global watermark from the same summaries) and the keyed
   punctuations of its scopes;
4. lets the engine emit what the new closing points close (and partial
   values with ``emit = "on_update"``), and evict what no window needs.

State lives in a `Store` (Spark's state store in production, a dict in
tests): ``meta`` (watermarks, keyed punctuations, what the engine keeps
track of), and the engine's own entries.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wid.kernels.operator.layout import OperatorSpec
from wid.kernels.tables import (
    CLOCK,
    FILE,
    ORIGINAL,
    PTIME,
    PUNCT,
    REASON,
    ROW_JSON,
    ROWS,
    SRC,
    concat,
    from_bytes,
    group_ids,
    state_bytes,
    where,
)
from wid.semantics.trigger import NOTHING_CLOSED
from wid.semantics.watermark import SourceBatch, SourceClock, Watermarks

LATE_REASON = "late: its window was already emitted"


class Store(Protocol):
    """Named byte values (``meta``, engine entries) and numbered ones (panes)."""

    def get(self, name: str) -> bytes | None: ...
    def put(self, name: str, blob: bytes) -> None: ...
    def delete(self, name: str) -> None: ...
    def get_pane(self, pane: int) -> bytes | None: ...
    def put_pane(self, pane: int, blob: bytes) -> None: ...
    def delete_pane(self, pane: int) -> None: ...


class MemoryStore:
    """A `Store` in a dict, for tests and for running shards without Spark."""

    def __init__(self) -> None:
        self.values: dict[str, bytes] = {}
        self.panes: dict[int, bytes] = {}

    def get(self, name: str) -> bytes | None:
        return self.values.get(name)

    def put(self, name: str, blob: bytes) -> None:
        self.values[name] = blob

    def delete(self, name: str) -> None:
        self.values.pop(name, None)

    def get_pane(self, pane: int) -> bytes | None:
        return self.panes.get(pane)

    def put_pane(self, pane: int, blob: bytes) -> None:
        self.panes[pane] = blob

    def delete_pane(self, pane: int) -> None:
        self.panes.pop(pane, None)


# The layout of the operator's state: 1 (no number written), whole tables per entry; 2, a base and increments for
# time panes and sessions; 3, every engine's state in the partials store (`wid.kernels.operator.partials`), which
# reads the earlier layouts' entries and tables as bases without increments.
LAYOUT = 3


@dataclass
class Meta:
    """A shard's watermarks, the shard count its state was written with,
    the layout of that state (`LAYOUT`), and how many micro-batches the
    shard has run (`batches`: a checkpoint written before it was kept
    counts from 0; a replayed micro-batch counts to the same number)."""

    marks: Watermarks = field(default_factory=Watermarks)
    shards: int | None = None
    layout: int = LAYOUT
    batches: int = 0

    def dumps(self) -> bytes:
        sources = {k: [c.watermark_us, c.last_arrival_ms] for k, c in self.marks.sources.items()}
        return json.dumps({"global": self.marks.global_us, "sources": sources, "shards": self.shards,
                           "layout": LAYOUT, "batches": self.batches}).encode()

    @staticmethod
    def loads(blob: bytes | None) -> Meta:
        if blob is None:
            return Meta()
        doc = json.loads(blob)
        clocks = {k: SourceClock(v[0], v[1]) for k, v in doc["sources"].items()}
        return Meta(Watermarks(clocks, doc["global"]), doc["shards"], doc.get("layout", 1), doc.get("batches", 0))


@dataclass(frozen=True)
class Closing:
    """Closing points: the global watermark and the keyed punctuations of
    this shard's scopes (`scope` columns plus ``p``)."""

    global_us: int | None
    keyed: pa.Table | None

    def of(self, table: pa.Table, scope: tuple[str, ...]) -> np.ndarray:
        """The closing point of each row's group (`NOTHING_CLOSED` where nothing is closed)."""
        g = NOTHING_CLOSED if self.global_us is None else self.global_us
        out = np.full(table.num_rows, g, dtype=np.int64)
        if self.keyed is None or not scope or self.keyed.num_rows == 0 or table.num_rows == 0:
            return out
        both = concat([self.keyed.select(list(scope)), table.select(list(scope))])
        ids, n, _ = group_ids(both, scope)
        keyed_p = np.full(n, NOTHING_CLOSED, dtype=np.int64)
        k = self.keyed.num_rows
        keyed_p[ids[:k]] = self.keyed.column("p").to_numpy()
        return np.asarray(np.maximum(out, keyed_p[ids[k:]]))

    @property
    def highest(self) -> int | None:
        """The largest closing point of any group (None: nothing closed)."""
        values = [] if self.global_us is None else [self.global_us]
        if self.keyed is not None and self.keyed.num_rows:
            values.append(int(pc.max(self.keyed.column("p")).as_py()))
        return max(values) if values else None


Emitted: TypeAlias = pa.Table | Iterable[pa.Table] | None
"""Rows an engine emits: one table, or tables made one after the other as
they are read (`wid.kernels.operator.time_engine` emits in bounded chunks)."""


def tables(part: Emitted) -> Iterator[pa.Table]:
    """The non-empty tables of an output `part`."""
    for table in [part] if isinstance(part, pa.Table) else part or ():
        if table.num_rows:
            yield table


@dataclass
class ShardOutput:
    """What a shard emits for one micro-batch (see `wid.spark.operator.query`
    for the columns) and its counts. `windows` may be lazy (`Emitted`): it
    is read after `run_batch` returns, so an engine that emits lazily keeps
    what its chunks need (the state it evicts included) until then.
    `sequence` numbers the shard's micro-batch (`Meta.batches`): a group's
    rows all come from one shard, so it orders the emissions of a window."""

    windows: Emitted = None
    retractions: pa.Table | None = None
    late: pa.Table | None = None
    rejected: pa.Table | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    sequence: int | None = None


class Engine(Protocol):
    """What a window kind adds to the shared steps."""

    def late(self, rows: pa.Table, before: np.ndarray) -> np.ndarray: ...
    def add(self, rows: pa.Table, before: np.ndarray) -> None: ...
    def emit(self, before: Closing, after: Closing) -> tuple[Emitted, pa.Table | None]: ...
    def evict(self, after: Closing) -> None: ...
    def held(self) -> tuple[int, int]: ...
    def open_windows(self, closing_us: int | None) -> pa.Table: ...  # for `wid status`: `wid.kernels.operator.held`


def load_keyed(store: Store) -> pa.Table | None:
    blob = store.get("keyed")
    return None if blob is None else from_bytes(blob)


def keyed_after(keyed: pa.Table | None, punctuations: pa.Table, scope: tuple[str, ...]) -> pa.Table | None:
    """The keyed punctuations after this batch's (per scope value, the largest)."""
    if not scope or punctuations.num_rows == 0:
        return keyed
    new = punctuations.select(list(scope)).append_column("p", punctuations.column(PTIME))
    both = new if keyed is None else concat([keyed, new])
    return both.group_by(list(scope), use_threads=False).aggregate([("p", "max")]).rename_columns([*scope, "p"])


def load_meta(store: Store, shards: int) -> Meta:
    """The shard's `Meta`. Raises RuntimeError when its state was written
    with another shard count (the layout of every engine's state), or in a
    newer layout than this wid reads (`LAYOUT`)."""
    meta = Meta.loads(store.get("meta"))
    if meta.layout > LAYOUT:
        raise RuntimeError(f"this checkpoint's state was written in layout {meta.layout} of wid's operator, newer "
                           f"than this wid's ({LAYOUT}): run it with the wid that wrote it, or start from a new "
                           "checkpoint")
    if meta.shards is not None and meta.shards != shards:
        raise RuntimeError(f"this checkpoint's state was written with {meta.shards} shards, not {shards}: "
                           "set spark.wid.operator.shards back to it, or start from a new checkpoint")
    return meta


def split_rejected(rows: pa.Table, dead_letter: bool) -> tuple[pa.Table | None, pa.Table]:
    """(the rows rejected as bad input, in the dead letter's columns `REASON`,
    `SRC`, `FILE`, `ROW_JSON`; the other rows, without those columns but
    `FILE` under ``late_data = "dlq"``, whose late rows name their file).
    Rows without a `REASON` column are all good."""
    if REASON not in rows.column_names:
        return None, rows
    bad = pc.is_valid(rows.column(REASON)).to_numpy(zero_copy_only=False)
    rejected = where(rows, bad).select([REASON, SRC, FILE, ROW_JSON]) if bad.any() else None
    dropped = [REASON, ROW_JSON] if dead_letter else [REASON, ROW_JSON, FILE]
    return rejected, (where(rows, ~bad) if bad.any() else rows).drop_columns(dropped)


def run_batch(spec: OperatorSpec, store: Store, engine: Engine, rows: pa.Table,
              sources: Mapping[str, SourceBatch], batch_ms: int) -> ShardOutput:
    """Steps 1-4 of the module docstring for one shard and micro-batch.
    `rows` holds data and punctuation rows (`PUNCT`), and rows rejected as
    bad input (`REASON` set), which go straight to the output. Data rows may
    be partials combined before the shuffle (`wid.kernels.operator.combine`):
    the counts (``rows``, ``aggregated``, late) count the rows they stand
    for (`represented`), so the accounting identity holds row for row."""
    out = ShardOutput()
    out.rejected, rows = split_rejected(rows, spec.late_data == "dlq")
    if CLOCK in rows.column_names:  # summarised before the shards (`packing.summarize`)
        rows = rows.drop_columns([CLOCK])
    meta = load_meta(store, spec.shards)
    keyed = load_keyed(store)
    is_punct = rows.column(PUNCT).to_numpy(zero_copy_only=False).astype(bool)
    data, puncts = where(rows, ~is_punct), where(rows, is_punct)
    before = Closing(meta.marks.global_us, keyed)
    cp = before.of(data, spec.scope)
    late = engine.late(data, cp)
    if late.any():
        out.late = late_rows(spec.late_data, where(data, late))
    accepted = ~late
    engine.add(where(data, accepted), cp if not late.any() else cp[accepted])
    meta.marks = meta.marks.advance(sources, batch_ms, spec.lateness_us, spec.idleness_ms)
    keyed = keyed_after(keyed, puncts.filter(pc.invert(pc.is_null(puncts.column(PTIME)))), spec.scope)
    after = Closing(meta.marks.global_us, keyed)
    out.windows, out.retractions = engine.emit(before, after)
    engine.evict(after)
    if keyed is not None:
        store.put("keyed", state_bytes(keyed))
    meta.shards = spec.shards
    meta.batches += 1
    out.sequence = meta.batches
    windows, groups = engine.held()
    stands_for = represented(data)
    n_rows, n_late = int(stands_for.sum()), int(stands_for[late].sum())
    out.stats = {"rows": n_rows, "aggregated": n_rows - n_late, "punctuations": puncts.num_rows,
                 "rejected": 0 if out.rejected is None else out.rejected.num_rows,
                 "late_dlq": n_late if spec.late_data == "dlq" else 0,
                 "late_dropped": 0 if spec.late_data == "dlq" else n_late,
                 "windows_active": windows, "state_groups": groups, "watermark_us": meta.marks.global_us,
                 "batch_ms": batch_ms,
                 "sources": {k: c.watermark_us for k, c in meta.marks.sources.items()}}
    store.put("meta", meta.dumps())
    return out


def represented(rows: pa.Table) -> np.ndarray:
    """The data rows each of `rows` stands for: its `ROWS` where it is a
    partial combined before the shuffle (`wid.kernels.operator.combine`),
    else 1."""
    if ROWS not in rows.column_names:
        return np.ones(rows.num_rows, dtype=np.int64)
    return np.asarray(rows.column(ROWS).fill_null(1).to_numpy(), dtype=np.int64)


def late_rows(late_data: str, late: pa.Table, reason: str | pa.Array = LATE_REASON) -> pa.Table | None:
    """Late rows for the dead letter (``dlq``): their original columns
    (``_wid_o_`` prefix), source and `reason` (one, or one per row); None
    for the other policies (they are only counted)."""
    if late_data != "dlq":
        return None
    cols = [c for c in late.column_names if c.startswith(ORIGINAL) or c in (SRC, FILE)]
    why = reason if isinstance(reason, pa.Array) else pa.repeat(pa.scalar(reason, pa.string()), late.num_rows)
    return late.select(cols).append_column(REASON, why)


__all__ = ["LAYOUT", "Closing", "Emitted", "Engine", "LATE_REASON", "MemoryStore", "Meta", "ShardOutput", "Store", "keyed_after",
           "late_rows", "load_keyed", "load_meta", "represented", "run_batch", "split_rejected", "tables"]
