"""The reference engine: rows in, rows out, straight from the definitions of
docs/semantics.md. It is the executable specification and the oracle
every other engine is tested against; it favours clarity over speed (it may
be quadratic) and shares no code path with the Spark engine beyond the pure
window arithmetic.

Batch semantics: the whole input is on time and every window is complete at
the end of input, so each non-empty window emits once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wid.semantics import reasons
from wid.semantics.kinds import semantics_of
from wid.semantics.ranks import sql_sort_key
from wid.semantics.rows import TS, DeadLetter, OracleResult, Row, order_columns, window_row
from wid.semantics.timeunits import event_time_us, in_future, in_range, ms_to_us, now_us
from wid.spec.window import Window


def evaluate(rows: Sequence[Row], window: Window, *, now_ms: int | None = None) -> OracleResult:
    """Evaluate `window` over `rows` (mappings from column name to value).

    The event-time column holds datetimes (unit ``timestamp``) or integers
    (units ``ms``/``us``). `now_ms` is the processing time (epoch ms) an explicit
    `max_future_ms` guard measures from (unset, batch has none): a batch query's, which Spark reads
    once per query (``current_timestamp()``); default the clock now. Output
    rows follow the column order, window bounds in epoch microseconds,
    sorted canonically; each kind's windows are its module's in
    `wid.semantics.kinds`. Raises TypeError on event-time values of the
    wrong type.
    """
    good, dead = _split(rows, window, now_us() if now_ms is None else ms_to_us(now_ms))
    out = semantics_of(window).evaluate(good, window)
    out.sort(key=lambda r: tuple(sql_sort_key(v) for v in r.values()))
    return OracleResult(out, dead, len(rows))


def _split(rows: Sequence[Row], w: Window, now: int) -> tuple[list[dict[str, Any]], list[DeadLetter]]:
    good: list[dict[str, Any]] = []
    dead: list[DeadLetter] = []
    for row in rows:
        reason = reject_reason(row, w, now)
        if reason is not None:
            dead.append(DeadLetter(reason, row))
            continue
        ts = event_time_us(row[w.event_time_column or ""], w.event_time_unit, w.shape.time_zone)
        good.append({**row, TS: ts})
    return good, dead


def reject_reason(row: Row, w: Window, now: int, *, streaming: bool = False) -> str | None:
    """Why `row` cannot be windowed (docs/semantics.md#bad-input), or None,
    first match wins: a null event time, one that does not parse, one
    outside Spark's TIMESTAMP range, one more than the future guard
    (`Window.future_guard_ms`: unset, one day on a stream and none in batch)
    ahead of the processing time `now` (epoch microseconds), a null key, the
    kind's own reason (a session's bad gap), a time before the kind's
    earliest (the landmark)."""
    if row.get(w.event_time_column or "") is None:
        return reasons.NULL_EVENT_TIME
    ts = event_time_us(row[w.event_time_column or ""], w.event_time_unit, w.shape.time_zone)
    if ts is None:
        return reasons.UNPARSEABLE_EVENT_TIME
    time_reason = event_time_reason(ts, w, now, streaming=streaming)
    if time_reason is not None:
        return time_reason
    for col in w.key_columns:
        if row[col] is None:
            return reasons.null_key(col)
    kind_reason = semantics_of(w).reject_reason(row, w)
    if kind_reason is not None:
        return kind_reason
    earliest = w.shape.earliest_ms()
    if earliest is not None and ts is not None and ts < ms_to_us(earliest):
        return reasons.BEFORE_LANDMARK
    return None


def event_time_reason(ts: int | None, w: Window, now: int, *, streaming: bool = False) -> str | None:
    """Why event time `ts` (epoch microseconds) is bad input at processing
    time `now`, or None: out of Spark's range, or too far in the future
    (the guard of a stream when `streaming`, else of a batch)."""
    if ts is None:
        return None
    if not in_range(ts):
        return reasons.OUT_OF_RANGE
    return reasons.IN_FUTURE if in_future(ts, now, w.future_guard_ms(streaming)) else None


__all__ = ["DeadLetter", "OracleResult", "evaluate", "event_time_reason", "order_columns", "reject_reason",
           "window_row"]
