"""State that grows with the rows that change (docs/architecture.md#the-wid-operator-in-detail).

A shard's state entry (a pane's partials, a shard's sessions) is an Arrow
table. A micro-batch that touches a few of its groups does not rewrite it:
it writes an *increment*, the partials of its own rows alone, under a name
of its own, and the entry's table is its *base* merged with its
increments, in order, whenever an engine reads it (partials merge:
`wid.aggregates`' ``merge``). So what a micro-batch puts into the state
store, and what Spark's changelog checkpoint adds, follows the rows it
changed, not the state held.

The increments are merged into a new base (*compaction*) when they hold
`RATIO` times the base's rows, or `MAX_INCREMENTS` of them stand, or when
an engine reads the merged table anyway and rewrites it (a keyed
punctuation's eviction, a group cap to check exactly): each base row is
then written about once per `RATIO` times as many increment rows, and a
read merges at most ``1 + RATIO`` times the rows the entry holds.

`Entry` is what an engine's index says of one entry; its JSON form reads
the layout before increments (a number: the base's rows) as an entry
without increments, so that a checkpoint written before restarts.
Runs on executors: the standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

RATIO = 4  # increments merged into the base once they hold this many times its rows
MAX_INCREMENTS = 1024  # ... or once this many stand (each is one read of the state store when uncached)


@dataclass
class Entry:
    """One state entry: the rows of its base table in the store (0: none
    written), its increments (`seq`, rows, and a per-increment figure an
    engine keeps, such as the least session end), the next increment's
    number, and the same figure of the base."""

    rows: int = 0
    increments: list[list[int]] = field(default_factory=list)
    next_seq: int = 0
    figure: int | None = None

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

    def add_increment(self, rows: int, figure: int | None = None) -> int:
        """Record an increment of `rows`; returns its number."""
        seq = self.next_seq
        self.increments.append([seq, rows] if figure is None else [seq, rows, figure])
        self.next_seq += 1
        return seq

    def figures(self) -> list[int]:
        """The kept figures of the base and of every increment."""
        found = [] if self.figure is None else [self.figure]
        return found + [i[2] for i in self.increments if len(i) > 2]

    def dumps(self) -> Any:
        return [self.rows, self.increments, self.next_seq, self.figure]

    @staticmethod
    def loads(doc: Any) -> Entry:
        """An entry from `dumps`, or from the base's rows alone (the layout
        before increments)."""
        if isinstance(doc, int):
            return Entry(rows=doc)
        rows, increments, next_seq, figure = doc
        return Entry(rows, [list(i) for i in increments], next_seq, figure)


def increment_name(prefix: str, key: int | str, seq: int) -> str:
    """The state store name of increment `seq` of entry `key`."""
    return f"{prefix}{key}.{seq}"


__all__ = ["MAX_INCREMENTS", "RATIO", "Entry", "increment_name"]
