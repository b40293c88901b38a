"""The rows the oracles take and give (docs/semantics.md): input rows as
mappings, a rejected row and its reason, a batch result, and the one way a
window's output row is made from the rows of its extent."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wid.semantics.aggregate_values import aggregate_value
from wid.semantics.ranks import sql_sort_key
from wid.spec.window import Window

Row = Mapping[str, Any]
Group = tuple[Any, ...]
TS = "__wid_ts_us"  # a good row's event time, epoch microseconds


@dataclass(frozen=True)
class DeadLetter:
    """A rejected input row and why (`source`: the input it came from, such
    as a window join's ``left`` or ``right``; None for a single input)."""

    reason: str
    row: Row
    source: str | None = None


@dataclass(frozen=True)
class OracleResult:
    """Output rows (window bounds as epoch microseconds) and dead letters.

    Accounting (docs/semantics.md#completeness): ``rows_in == rows_rejected + rows_aggregated``
    in batch, where nothing is late.
    """

    rows: list[dict[str, Any]]
    dead_letter: list[DeadLetter] = field(default_factory=list)
    rows_in: int = 0

    @property
    def rows_rejected(self) -> int:
        """Rows sent to the dead letter."""
        return len(self.dead_letter)

    @property
    def rows_aggregated(self) -> int:
        """Rows that went into windows."""
        return self.rows_in - self.rows_rejected


def key_of(row: Row, columns: Iterable[str]) -> Group:
    """The values of `columns` in `row`."""
    return tuple(row[c] for c in columns)


def _time_key(w: Window) -> Any:
    tb = w.shape.tie_breaker
    return lambda r: (r[TS], sql_sort_key(r[tb]) if tb else ())


def window_row(w: Window, head: dict[str, Any], extent: Sequence[Row]) -> dict[str, Any]:
    """`head` (window and group columns) plus every aggregation over `extent`."""
    out = dict(head)
    tkey = _time_key(w)
    for agg in w.aggregations:
        out[agg.as_] = aggregate_value(agg, extent, tkey)
    return out


def window_head(w: Window, start: int, end: int | None, group: Group, label: str | None = None) -> dict[str, Any]:
    """The window columns (bounds in epoch microseconds, `end` None for a
    window that never ends; the `label` when the window names a label
    column) and the group columns of an output row."""
    column = w.shape.window_label_column
    named = {column: label} if column is not None else {}
    return {w.window_start_column: start, w.window_end_column: end, **named,
            **dict(zip(w.group_by, group, strict=True))}


def order_columns(w: Window, columns: Sequence[str]) -> list[str]:
    """The total order of ranks: order_by (default the event time), then the
    tie-breaker, else every input column in input order."""
    first = [w.order_by or TS]
    rest = [w.tie_breaker] if w.tie_breaker else [c for c in columns if c != TS]
    return first + rest


__all__ = ["TS", "DeadLetter", "Group", "OracleResult", "Row", "key_of", "order_columns", "window_head",
           "window_row"]
