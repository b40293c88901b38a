"""What a keyed sink holds after a stream's emissions (docs/semantics.md#pipelines):
every sink upserts by an output row's natural key, so a window re-emitted
(``reopen``, ``on_update``) or a micro-batch replayed after a crash
overwrites itself, and a retraction deletes its key. `sink_rows` is that
end state, from the streaming oracle's emissions: what an uninterrupted or
a crashed and restarted run must leave in the sink."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from wid.semantics.stream_types import BatchResult
from wid.spec.aggregation import Aggregation
from wid.spec.join import WindowJoin
from wid.spec.window import FINAL_COLUMN, Window


def natural_key(window: Window, output_columns: Sequence[str]) -> list[str]:
    """The columns identifying an output row, for idempotent upserts.

    ``(window_start, keys)`` for tumbling, hopping and session windows
    (docs/semantics.md#pipelines); ``(window_end, keys)`` for landmark windows, whose
    windows in one period share their start; ``(window_id, keys)`` for count
    windows; every input column for rolling windows (identical input rows
    have identical outputs, and a keyed sink keeps one of them), but not
    ``is_final``: a final value overwrites the partial ones of its row.
    """
    values = [a.as_ for a in window.aggregations] + [FINAL_COLUMN]
    return window.shape.natural_key(window, output_columns, values)


def join_natural_key(join: WindowJoin, output_columns: Sequence[str]) -> list[str]:
    """The columns identifying a window join's output row, for idempotent
    upserts: every column but the aggregate metrics (the left row, and a
    non-aggregate metric's value). Identical output rows are stored once by
    a keyed sink."""
    aggregates = {m.as_ for m in join.metrics if isinstance(m, Aggregation)}
    return [c for c in output_columns if c not in aggregates]


def sink_rows(window: Window, results: Iterable[BatchResult], columns: Sequence[str]) -> list[dict[str, Any]]:
    """The rows a keyed sink holds after `results`' emissions, in order: an
    upsert by natural key (over the output `columns`), a delete for a
    retraction; with ``emit = "on_update"`` each row carries ``is_final``.
    Rows are as the oracle emits them (window bounds in epoch microseconds)."""
    key = natural_key(window, columns)
    table: dict[tuple[Any, ...], dict[str, Any]] = {}
    for result in results:
        for e in result.emitted:
            k = tuple(e.row.get(c) for c in key)
            if e.retract:
                table.pop(k, None)
            else:
                table[k] = {**e.row, FINAL_COLUMN: e.final} if window.emit == "on_update" else dict(e.row)
    return list(table.values())


__all__ = ["join_natural_key", "natural_key", "sink_rows"]
