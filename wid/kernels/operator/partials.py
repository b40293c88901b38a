"""The partials store: a shard's state entries, each an Arrow table of
partial aggregates (or of rows, where a kind's extents need them: rolling
rows, rows awaiting their rank), kept as a base and increments and merged
on read (docs/architecture.md#the-wid-operator-in-detail). Every engine of
the WID operator keeps its state here.

A micro-batch `add`s the partials of its own rows to an entry. They are
written as an *increment*, under a name of their own, so what a
micro-batch puts into the state store, and what Spark's changelog
checkpoint adds, follows the rows it changed, not the state held. An
entry's table is its base merged with its increments and this
micro-batch's additions (the engine's `merge`: partials merge by key,
`wid.aggregates`' ``merge``), read when an engine needs it (`read`). The
increments are merged into a new base (*compaction*, through the engine's
`tidy`, which may leave out what no window needs any more) once they hold
`RATIO` times the base's rows or `MAX_INCREMENTS` of them stand; so each
base row is written about once per `RATIO` times as many increment rows,
and a read merges at most ``1 + RATIO`` times the rows the entry holds. An
engine that changes an entry otherwise (a keyed punctuation's eviction,
the rows it emitted) `replace`s it: a new base. Each part keeps the least
window end among its rows (`least_end`, where the engine says how to find
it), so an engine can tell that nothing in an entry can close without
reading it.

This is Flink's per-key-and-window `AggregatingState` and Beam's
`CombiningState`: one store every window kind uses, and the one place
where partials merge.

Layout: an entry's base is the state value ``<prefix><key>`` (in a
numbered store, the pane slot `key`), its increments ``<increment
prefix><key>.<seq>``, and the store's index one JSON value, ``<index>``:
key -> ``[rows, increments, next seq, least end]`` with an increment as
``[seq, rows(, least end)]``. Earlier layouts read as bases without
increments: an index of base rows (layout 1 panes), a one-entry index (the
sessions' in layout 2), no index (a named table of layout 1 or 2, whose
rows are unknown until it is rewritten). Runs on executors.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from wid.kernels.operator.shard import Store
from wid.kernels.tables import from_bytes, state_bytes

RATIO = 4  # increments merged into the base once they hold this many times its rows
MAX_INCREMENTS = 1024  # ... or once this many stand (each is one read of the state store when uncached)
Key = int | str


@dataclass
class Entry:
    """One entry as the index has it: the rows of its base in the store (0:
    none written), its increments (``[seq, rows]``, or with the least
    window end among the rows ``[seq, rows, least end]``), the next
    increment's number, and the least window end of the base (None: it has
    no rows, or it was written before ends were kept)."""

    rows: int = 0
    increments: list[list[int]] = field(default_factory=list)
    next_seq: int = 0
    least_end: int | None = None

    @property
    def held(self) -> int:
        """Rows the store holds for the entry, base and increments."""
        return self.rows + sum(i[1] for i in self.increments)

    def compacts(self, adding: int) -> bool:
        """Whether writing `adding` more rows should merge the entry into a
        new base rather than add an increment: there is no base yet, or
        the increments would hold `RATIO` times its rows, or number
        `MAX_INCREMENTS`."""
        return self.rows == 0 or self.held - self.rows + adding >= RATIO * self.rows or \
            len(self.increments) + 1 >= MAX_INCREMENTS

    def add_increment(self, rows: int, least_end: int | None = None) -> int:
        """Record an increment of `rows`; returns its number."""
        seq = self.next_seq
        self.increments.append([seq, rows] if least_end is None else [seq, rows, least_end])
        self.next_seq += 1
        return seq

    def least_ends(self) -> list[int]:
        """The least window ends kept of the base and of every increment."""
        found = [] if self.least_end is None else [self.least_end]
        return found + [i[2] for i in self.increments if len(i) > 2]

    def dumps(self) -> Any:
        return [self.rows, self.increments, self.next_seq, self.least_end]

    @staticmethod
    def loads(doc: Any) -> Entry:
        """An entry from `dumps`, or from the base's rows alone (layout 1)."""
        if isinstance(doc, int):
            return Entry(rows=doc)
        rows, increments, next_seq, least_end = doc
        return Entry(rows, [list(i) for i in increments], next_seq, least_end)


Merge = Callable[[Key, pa.Table], pa.Table]
Tidy = Callable[[Key, pa.Table], pa.Table]


def _as_is(key: Key, table: pa.Table) -> pa.Table:
    return table


def _joined(parts: list[pa.Table]) -> pa.Table:
    """An entry's parts in one table, their column types unified (a base
    merged by an engine may hold wider types than its row partials)."""
    return parts[0] if len(parts) == 1 else pa.concat_tables(parts, promote_options="permissive")


class Partials:
    """The entries of one engine of one shard, over its `store`: `index` is
    the name of their index, `prefix` and `increment_prefix` name their
    bases and increments (module docstring); `numbered` puts bases in the
    store's pane slots. `merge(key, table)` merges an entry's parts (a
    table of base and increment rows) into its table; `least_end(table)`,
    if given, is the least window end among a part's rows; `keys` are the
    entries an engine without an index (an earlier layout) may hold."""

    def __init__(self, store: Store, index: str, prefix: str, merge: Merge = _as_is, *, increment_prefix: str | None = None,
                 numbered: bool = False, keys: Sequence[str] = (),
                 least_end: Callable[[pa.Table], int | None] | None = None) -> None:
        self.store, self.index, self.prefix, self.numbered = store, index, prefix, numbered
        self.increment_prefix = prefix if increment_prefix is None else increment_prefix
        self.merge, self.least_end_of = merge, least_end
        self.entries = self._load(keys)
        self.cache: dict[Key, pa.Table] = {}  # entries read (merged) in this micro-batch
        self.fresh: dict[Key, list[pa.Table]] = {}  # this micro-batch's additions, not yet written
        self.replaced: set[Key] = set()  # entries whose cached table replaces base and increments
        self.stored = {k for k, e in self.entries.items() if e.rows}  # entries whose base the store holds

    def _load(self, keys: Sequence[str]) -> dict[Key, Entry]:
        raw = self.store.get(self.index)
        if raw is None:  # an earlier layout's named tables: each a base of unknown rows
            return {k: Entry(rows=1) for k in keys if self._get_base(k) is not None}
        doc = json.loads(raw)
        if isinstance(doc, list):  # one entry's index (layout 2's sessions)
            return {"": Entry.loads(doc)}
        return {(int(k) if self.numbered else k): Entry.loads(v) for k, v in doc.items()}

    # -- where parts live ------------------------------------------------------------------------------
    def _increment(self, key: Key, seq: int) -> str:
        return f"{self.increment_prefix}{key}.{seq}"

    def _get_base(self, key: Key) -> bytes | None:
        return self.store.get_pane(int(key)) if self.numbered else self.store.get(f"{self.prefix}{key}")

    def _put_base(self, key: Key, table: pa.Table) -> None:
        if self.numbered:
            self.store.put_pane(int(key), state_bytes(table))
        else:
            self.store.put(f"{self.prefix}{key}", state_bytes(table))

    def _delete_base(self, key: Key) -> None:
        if self.numbered:
            self.store.delete_pane(int(key))
        else:
            self.store.delete(f"{self.prefix}{key}")

    # -- what an engine asks -------------------------------------------------------------------------
    def held_keys(self) -> list[Key]:
        """The entries held (stored or added in this micro-batch)."""
        return list(dict.fromkeys([*self.entries, *self.fresh]))

    def __contains__(self, key: Key) -> bool:
        return key in self.entries or key in self.fresh

    def held(self, key: Key) -> int:
        """Rows entry `key` holds: in the store, and added in this micro-batch."""
        stored = self.entries[key].held if key in self.entries else 0
        return stored + sum(int(t.num_rows) for t in self.fresh.get(key, ()))

    def least_ends(self, key: Key) -> list[int] | None:
        """The least window ends of entry `key`'s parts; None when a part
        with rows does not say its own (written before ends were kept)."""
        entry = self.entries.get(key, Entry())
        if entry.rows and entry.least_end is None:
            return None
        ends = entry.least_ends()
        for table in self.fresh.get(key, ()):
            end = self.least_end_of(table) if self.least_end_of is not None and table.num_rows else None
            ends += [] if end is None else [end]
        return ends

    def compacts(self, key: Key, adding: int) -> bool:
        """Whether adding `adding` rows to entry `key` would make a new base."""
        return self.entries.get(key, Entry()).compacts(adding + self.held(key) - self.entries.get(key, Entry()).held)

    def read(self, key: Key) -> pa.Table | None:
        """Entry `key`'s table: its base, increments and this micro-batch's
        additions, merged; None when it holds nothing."""
        if key not in self.cache:
            entry = self.entries.get(key)
            blobs = [] if entry is None else [self._get_base(key)] * bool(entry.rows) + [
                self.store.get(self._increment(key, i[0])) for i in entry.increments]
            parts = [from_bytes(b) for b in blobs if b is not None] + self.fresh.get(key, [])
            if not parts:
                return None
            self.cache[key] = self.merge(key, _joined(parts)) if len(parts) > 1 else parts[0]
        return self.cache[key]

    # -- what an engine writes -------------------------------------------------------------------------
    def add(self, key: Key, table: pa.Table) -> None:
        """This micro-batch's partials (or rows) for entry `key`, written at
        `flush` as an increment, or as part of a new base."""
        if table.num_rows == 0:
            return
        self.fresh.setdefault(key, []).append(table)
        if key in self.cache:  # keep what was read current
            self.cache[key] = self.merge(key, _joined([self.cache[key], table]))

    def replace(self, key: Key, table: pa.Table) -> None:
        """`table` (what the entry now holds, merged) replaces entry `key`'s
        base and increments at `flush`."""
        self.cache[key] = table
        self.replaced.add(key)
        self.fresh.pop(key, None)

    def drop(self, key: Key) -> None:
        """Entry `key` goes, base and increments, at `flush`."""
        entry = self.entries.pop(key, None)
        self.cache.pop(key, None)
        self.fresh.pop(key, None)
        self.replaced.discard(key)
        if key in self.stored:
            self._delete_base(key)
            self.stored.discard(key)
        for i in entry.increments if entry is not None else ():
            self.store.delete(self._increment(key, i[0]))

    def flush(self, tidy: Tidy | None = None) -> None:
        """Write what this micro-batch changed: each replaced entry as a new
        base; each entry's additions as an increment, or, when compaction is
        due, the entry merged (and, given `tidy(key, table)`, tidied: what no
        window needs left out) as a new base; then the index."""
        for key in sorted(self.fresh, key=str):
            entry = self.entries.get(key, Entry())
            adding = sum(t.num_rows for t in self.fresh[key])
            if key not in self.replaced and not entry.compacts(adding):
                part = _joined(self.fresh[key])
                part = self.merge(key, part) if len(self.fresh[key]) > 1 else part
                seq = entry.add_increment(part.num_rows, self._least_end(part))
                self.store.put(self._increment(key, seq), state_bytes(part))
                self.entries[key] = entry
                continue
            merged = self.read(key)
            assert merged is not None  # it has this micro-batch's rows
            self.cache[key] = tidy(key, merged) if tidy is not None and key not in self.replaced else merged
            self.replaced.add(key)
        for key in sorted(self.replaced, key=str):
            self._rebase(key, self.cache[key])
        self.fresh.clear()
        self.replaced.clear()
        self.store.put(self.index, json.dumps({str(k): e.dumps() for k, e in self.entries.items()}).encode())

    def _rebase(self, key: Key, table: pa.Table) -> None:
        """`table` becomes entry `key`'s base; its increments are deleted."""
        old = self.entries.get(key, Entry())
        for i in old.increments:
            self.store.delete(self._increment(key, i[0]))
        self.entries[key] = Entry(rows=table.num_rows, next_seq=old.next_seq, least_end=self._least_end(table))
        if table.num_rows:
            self._put_base(key, table)
            self.stored.add(key)
        elif key in self.stored:
            self._delete_base(key)
            self.stored.discard(key)

    def _least_end(self, table: pa.Table) -> int | None:
        return self.least_end_of(table) if self.least_end_of is not None and table.num_rows else None


__all__ = ["MAX_INCREMENTS", "RATIO", "Entry", "Key", "Partials"]
