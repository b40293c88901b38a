"""Watermarks and punctuations (docs/semantics.md#completeness): the completeness
arithmetic every streaming engine of wid shares with the oracle.

Watermarks are kept per *clock*: a source, or, for a source whose rows say
their Kafka topic and partition, each partition of it (`clock`; Flink keeps
one per split, Spark one per query). Per micro-batch b, each clock i reports
what it delivered (`SourceBatch`): the largest event time of its data rows,
the largest time of its global punctuations, and whether anything arrived.
Then:

- the clock's watermark is ``wm_i = max(max event time - lateness_ms,
  largest punctuation)``, monotone (it never moves back);
- a clock is *idle* at batch b when nothing has arrived on it for
  `source_idleness_ms`, measured on batch timestamps (Spark records a
  micro-batch's timestamp in its offset log, so replay sees the same ones);
- the global watermark is the minimum of ``wm_i`` over the clocks that have
  a watermark and are not idle, never below its previous value; when no
  clock qualifies (all idle) it does not advance. A clock that has not
  delivered anything yet has no watermark and holds nothing back, as in
  Spark's ``min`` policy. A source's watermark is thus the minimum over its
  partitions that are not idle, and the global one the minimum over
  sources: one quiet partition does not stall the windows once idle, and a
  lagging partition's rows are judged against its own progress, not
  against the busiest partition's.

Keyed punctuations (the paper's ``(seg-id, *, 1:10)``) close one scope value's
windows only: `closing_point` is the larger of the global watermark and the
largest punctuation of the group's scope.

Everything is epoch microseconds except batch timestamps (epoch
milliseconds, Spark's unit). These are frozen values: `advance` returns a new
`Watermarks`, so a replayed batch recomputes the same one.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class SourceBatch:
    """What one micro-batch delivered on one source: the largest event time
    of its data rows (None if it had none), the largest global punctuation
    (None if none) and whether any data row or punctuation arrived (rows
    rejected as bad input carry no usable time and do not count)."""

    max_event_us: int | None = None
    punctuation_us: int | None = None

    @property
    def arrived(self) -> bool:
        return self.max_event_us is not None or self.punctuation_us is not None


@dataclass(frozen=True)
class SourceClock:
    """One source's watermark (None before it delivered anything) and the
    timestamp of the last micro-batch in which something arrived on it."""

    watermark_us: int | None = None
    last_arrival_ms: int | None = None

    def idle(self, batch_ms: int, idleness_ms: int | None) -> bool:
        """True when nothing has arrived for `idleness_ms` (never without it)."""
        if idleness_ms is None or self.last_arrival_ms is None:
            return False
        return batch_ms - self.last_arrival_ms >= idleness_ms


def clock(source: str, partition: int | None = None) -> str:
    """The name of a watermark clock: the source's, or that of one of its
    partitions (`partition`, a `partition_id`: ``source[<topic's CRC-32 in
    hex>:<partition>]``)."""
    if partition is None:
        return source
    return f"{source}[{partition >> PARTITION_BITS:08x}:{partition & ((1 << PARTITION_BITS) - 1)}]"


PARTITION_BITS = 20  # Kafka partitions of a topic are numbered far below 2**20


def partition_id(topic: str, partition: int) -> int:
    """A Kafka partition as one non-negative integer: the CRC-32 of the
    topic's UTF-8 bytes, shifted left `PARTITION_BITS`, plus the partition.
    The engines compute it in Spark (``crc32``), so that a row carries a
    number to the operator rather than a string."""
    return (zlib.crc32(topic.encode()) << PARTITION_BITS) | partition


def later(a: int | None, b: int | None) -> int | None:
    """The larger of two optional times; None means "not yet"."""
    if a is None:
        return b
    return a if b is None else max(a, b)


@dataclass(frozen=True)
class Watermarks:
    """Per-source clocks and the global watermark (None until one exists)."""

    sources: Mapping[str, SourceClock] = field(default_factory=dict)
    global_us: int | None = None

    def advance(self, seen: Mapping[str, SourceBatch], batch_ms: int, lateness_us: int,
                idleness_ms: int | None = None) -> Watermarks:
        """The watermarks after a micro-batch at `batch_ms` that delivered
        `seen` (sources absent from `seen` delivered nothing)."""
        clocks = dict(self.sources)
        for name, got in seen.items():
            if not got.arrived:
                continue
            old = clocks.get(name, SourceClock())
            lagged = None if got.max_event_us is None else got.max_event_us - lateness_us
            mark = later(old.watermark_us, later(lagged, got.punctuation_us))
            clocks[name] = SourceClock(mark, batch_ms)
        live = [c.watermark_us for c in clocks.values()
                if c.watermark_us is not None and not c.idle(batch_ms, idleness_ms)]
        merged = self.global_us if not live else later(self.global_us, min(live))
        return replace(self, sources=clocks, global_us=merged)

    def idle_sources(self, batch_ms: int, idleness_ms: int | None) -> list[str]:
        """The names of the sources idle at `batch_ms`, sorted."""
        return sorted(n for n, c in self.sources.items() if c.idle(batch_ms, idleness_ms))


def closing_point(global_us: int | None, keyed_us: int | None) -> int | None:
    """How far a group's windows are closed: the larger of the global
    watermark and its scope's keyed punctuation (None: nothing closed)."""
    return later(global_us, keyed_us)


__all__ = ["SourceBatch", "SourceClock", "Watermarks", "clock", "closing_point", "later"]
