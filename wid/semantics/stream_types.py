"""The values the streaming oracle takes and gives (`wid.semantics.stream_oracle`):
micro-batches in, per-batch results out, and the accepted rows the rules of
each window kind work on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from wid.semantics.rows import TS, DeadLetter, Group, Row


@dataclass(frozen=True)
class MicroBatch:
    """One micro-batch: ``(source name, row)`` pairs and the batch
    timestamp in epoch milliseconds, Spark's processing time of the
    micro-batch (what idleness and the `max_future_ms` guard are measured
    on)."""

    rows: Sequence[tuple[str, Row]]
    batch_ms: int = 0


@dataclass(frozen=True)
class Emission:
    """An output row (window bounds in epoch microseconds, then the group
    columns and aggregates, as in batch; a rolling row is its input row and
    the aggregates). `final` is False for a partial ``on_update`` value;
    `retract` means: delete this row's natural key."""

    row: dict[str, Any]
    final: bool = True
    retract: bool = False


@dataclass(frozen=True)
class LateRow:
    """A row sent to the dead letter because it was late."""

    source: str
    row: Row
    reason: str


@dataclass
class BatchResult:
    """What one micro-batch produced, and its counts."""

    emitted: list[Emission] = field(default_factory=list)
    late: list[LateRow] = field(default_factory=list)
    rejected: list[DeadLetter] = field(default_factory=list)
    rows_in: int = 0
    rows_late_dropped: int = 0
    punctuations: int = 0
    watermark_us: int | None = None

    @property
    def rows_rejected(self) -> int:
        return len(self.rejected)

    @property
    def rows_late_dlq(self) -> int:
        return len(self.late)

    @property
    def rows_aggregated(self) -> int:
        return self.rows_in - self.rows_rejected - self.rows_late_dropped - self.rows_late_dlq


@dataclass(frozen=True)
class Admitted:
    """Where an on-time row counts, as its kind's rules say it (`place`:
    the time windows' ids it counts in, the first landmark window it counts
    in, or nothing for kinds that need no more than the row)."""

    place: Any = None


@dataclass
class Accepted:
    """A row some window took: the row (with `TS`), the index of the
    micro-batch it arrived in, and where it counts (`Admitted.place`)."""

    row: dict[str, Any]
    batch: int
    place: Any = None


class StreamRules(Protocol):
    """What a window kind adds to the streaming oracle's shared steps
    (`wid.semantics.stream_oracle`), per closing key (the columns of
    `Window.closing_columns`) with closing points before and after the batch
    (`wid.semantics.trigger.NOTHING_CLOSED` when nothing is closed). The
    kind says which windows a row falls in and which windows a batch
    touched; its trigger policy (`wid.semantics.trigger`) decides the rest."""

    def admit(self, ts: int, closed: int) -> Admitted | None:
        """Where a row at `ts` counts, judged against what was closed before
        its batch; None when it is late."""
        ...

    def emit(self, key: Group, members: Sequence[Accepted], index: int, prev: int, now: int) -> list[Emission]:
        """The emissions of one closing key's accepted rows after batch `index`."""
        ...


__all__ = ["Accepted", "Admitted", "BatchResult", "Emission", "Group", "LateRow", "MicroBatch", "Row", "StreamRules",
           "TS"]
