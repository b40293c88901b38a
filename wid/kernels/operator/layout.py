"""`OperatorSpec`: what a shard of the WID operator needs to know about a
window, as plain values that ship to executors (no wid.spec import there;
`wid.spark.operator.query` builds it on the driver). What is the window
kind's own is its engine's shape (`OperatorSpec.shape`), a frozen dataclass
its engine's module declares and the kind's driver part builds
(`wid.spark.kinds`); the engines' registry is keyed by its type
(`wid.kernels.operator.engines`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wid.kernels.vector_aggregates import VectorAgg
from wid.semantics.trigger import TriggerPolicy

US = 1000


@dataclass(frozen=True)
class Ranking:
    """How rows are ranked (count windows, `every_rows`): ``by`` is
    ``"order"`` (final once the closing point passes a row) or ``"arrival"``
    (earlier micro-batches first, final on arrival); `order` names the
    columns of the rank order within that, in SQL order (`TS` first for
    ``"order"``)."""

    by: str
    order: tuple[str, ...]


@dataclass(frozen=True)
class OperatorSpec:
    """A window, as the operator's shards see it: its kind's name (for
    messages) and engine `shape`, its trigger `policy` (what fires, what is
    late: `wid.semantics.trigger`, the stream oracle's), and what every kind
    shares. Times in microseconds, batch timestamps and idleness in
    milliseconds."""

    kind: str
    shape: Any
    group_by: tuple[str, ...]
    aggs: tuple[VectorAgg, ...]
    aliases: tuple[str, ...]
    policy: TriggerPolicy = TriggerPolicy()
    scope: tuple[str, ...] = ()
    lateness_us: int = 0
    late_data: str = "drop"
    idleness_ms: int | None = None
    max_groups: int | None = None
    pipeline: str = "wid"
    shards: int = 1
    dead_letter_columns: tuple[str, ...] = ()


__all__ = ["OperatorSpec", "Ranking"]
