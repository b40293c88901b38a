"""The reference engine: rows in, rows out, straight from the definitions of
docs/semantics.md. It is the executable specification and the oracle
every other engine is tested against; it favours clarity over speed (it may
be quadratic) and shares no code path with the Spark engine beyond the pure
window arithmetic.

Batch semantics: the whole input is on time and every window is complete at
the end of input, so each non-empty window emits once.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wid.semantics import reasons
from wid.semantics.aggregate_values import aggregate_value
from wid.semantics.ranks import count_complete, count_extent, rank_order, sql_sort_key
from wid.semantics.rolling import rolling_extent
from wid.semantics.sessions import sessionize
from wid.semantics.timeunits import event_time_us, in_future, in_range, ms_to_us, now_us
from wid.semantics.windowing import Hopping, Landmark, Tumbling
from wid.spec.window import Window

Row = Mapping[str, Any]
TS = "__wid_ts_us"


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


def evaluate(rows: Sequence[Row], window: Window, *, now_ms: int | None = None) -> OracleResult:
    """Evaluate `window` over `rows` (mappings from column name to value).

    The event-time column holds datetimes (unit ``timestamp``) or integers
    (units ``ms``/``us``). `now_ms` is the processing time (epoch ms) the
    `max_future_ms` guard measures from: a batch query's, which Spark reads
    once per query (``current_timestamp()``); default the clock now. Output
    rows follow the column order, window bounds in epoch microseconds,
    sorted canonically. Raises TypeError on event-time values of the wrong
    type.
    """
    good, dead = _split(rows, window, now_us() if now_ms is None else ms_to_us(now_ms))
    kind = window.kind
    if kind == "rolling":
        out = _rolling(good, window)
    elif kind == "session":
        out = _sessions(good, window)
    elif kind == "count":
        out = _count(good, window)
    else:
        out = _time_windows(good, window)
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
        ts = event_time_us(row[w.event_time_column or ""], w.event_time_unit)
        good.append({**row, TS: ts})
    return good, dead


def reject_reason(row: Row, w: Window, now: int) -> str | None:
    """Why `row` cannot be windowed (docs/semantics.md#bad-input), or None,
    first match wins: a null event time, one outside Spark's TIMESTAMP
    range, one more than `max_future_ms` ahead of the processing time `now`
    (epoch microseconds), a null key, a bad session gap, a time before the
    landmark."""
    if row.get(w.event_time_column or "") is None:
        return reasons.NULL_EVENT_TIME
    time_reason = event_time_reason(event_time_us(row[w.event_time_column or ""], w.event_time_unit), w, now)
    if time_reason is not None:
        return time_reason
    for col in w.key_columns:
        if row[col] is None:
            return reasons.null_key(col)
    if w.gap_column is not None:
        gap = row[w.gap_column]
        if gap is None or gap <= 0:
            return reasons.bad_gap(w.gap_column)
    if w.kind == "landmark" and w.landmark_ms is not None:
        ts = event_time_us(row[w.event_time_column or ""], w.event_time_unit)
        if ts is not None and ts < ms_to_us(w.landmark_ms):
            return reasons.BEFORE_LANDMARK
    return None


def event_time_reason(ts: int | None, w: Window, now: int) -> str | None:
    """Why event time `ts` (epoch microseconds) is bad input at processing
    time `now`, or None: out of Spark's range, or too far in the future."""
    if ts is None:
        return None
    if not in_range(ts):
        return reasons.OUT_OF_RANGE
    return reasons.IN_FUTURE if in_future(ts, now, w.max_future_ms) else None


def _key(row: Row, columns: Iterable[str]) -> tuple[Any, ...]:
    return tuple(row[c] for c in columns)


def _time_key(w: Window) -> Any:
    tb = w.tie_breaker
    return lambda r: (r[TS], sql_sort_key(r[tb]) if tb else ())


def window_row(w: Window, head: dict[str, Any], extent: Sequence[Row]) -> dict[str, Any]:
    """`head` (window and group columns) plus every aggregation over `extent`."""
    out = dict(head)
    tkey = _time_key(w)
    for agg in w.aggregations:
        out[agg.as_] = aggregate_value(agg, extent, tkey)
    return out


def _time_windows(good: list[dict[str, Any]], w: Window) -> list[dict[str, Any]]:
    assigner: Tumbling | Hopping | Landmark
    if w.kind == "tumbling":
        assigner = Tumbling(ms_to_us(w.duration_ms or 0), ms_to_us(w.origin_ms))
    elif w.kind == "hopping":
        assigner = Hopping(ms_to_us(w.duration_ms or 0), ms_to_us(w.hop_ms or 0), ms_to_us(w.origin_ms))
    else:
        assigner = Landmark(ms_to_us(w.hop_ms or 0), ms_to_us(w.landmark_ms or 0),
                            None if w.max_duration_ms is None else ms_to_us(w.max_duration_ms))
    last = max((assigner.pane(r[TS]) for r in good), default=0) if isinstance(assigner, Landmark) else 0
    buckets: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for r in good:
        ids = assigner.wids(r[TS], last) if isinstance(assigner, Landmark) else assigner.wids(r[TS])
        for window_id in ids:
            buckets[(window_id, *_key(r, w.group_by))].append(r)
    out = []
    for (window_id, *keys), extent in buckets.items():
        start, end = assigner.bounds(window_id)
        head = {w.window_start_column: start, w.window_end_column: end, **dict(zip(w.group_by, keys, strict=True))}
        out.append(window_row(w, head, extent))
    return out


def _sessions(good: list[dict[str, Any]], w: Window) -> list[dict[str, Any]]:
    groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for r in good:
        groups[_key(r, w.group_by)].append(r)
    out = []
    for keys, members in groups.items():
        gaps = [ms_to_us(r[w.gap_column] if w.gap_column else w.gap_ms or 0) for r in members]
        for start, end, idx in sessionize([(r[TS], g) for r, g in zip(members, gaps, strict=True)]):
            head = {w.window_start_column: start, w.window_end_column: end, **dict(zip(w.group_by, keys, strict=True))}
            out.append(window_row(w, head, [members[i] for i in idx]))
    return out


def order_columns(w: Window, columns: Sequence[str]) -> list[str]:
    """The total order of ranks: order_by (default the event time), then the
    tie-breaker, else every input column in input order."""
    first = [w.order_by or TS]
    rest = [w.tie_breaker] if w.tie_breaker else [c for c in columns if c != TS]
    return first + rest


def _count(good: list[dict[str, Any]], w: Window) -> list[dict[str, Any]]:
    size, hop = w.size_rows or 0, w.hop_rows_or_size
    parts: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in good:
        parts[_key(r, w.partition_by)].append(r)
    out = []
    for pkeys, members in parts.items():
        ranked = [members[i] for i in rank_order(members, order_columns(w, list(members[0])))]
        window_id = 0
        while count_complete(window_id, len(ranked), hop):
            extent = [ranked[r] for r in count_extent(window_id, size, hop)]
            start, end = min(r[TS] for r in extent), max(r[TS] for r in extent)
            groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
            for r in extent:
                groups[_key(r, w.group_by)].append(r)
            for gkeys, rows in groups.items():
                head = {w.window_start_column: start, w.window_end_column: end, w.window_id_column: window_id,
                        **dict(zip(w.partition_by, pkeys, strict=True)), **dict(zip(w.group_by, gkeys, strict=True))}
                out.append(window_row(w, head, rows))
            window_id += 1
    return out


def _rolling(good: list[dict[str, Any]], w: Window) -> list[dict[str, Any]]:
    d = ms_to_us(w.duration_ms or 0)
    n = w.every_rows or 1
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in good:
        groups[_key(r, w.group_by)].append(r)
    out = []
    for members in groups.values():
        order = rank_order(members, order_columns(w, list(members[0])))
        by_time = sorted(members, key=lambda r: r[TS])
        times = [r[TS] for r in by_time]
        for rank, i in enumerate(order, start=1):
            if rank % n:
                continue
            t = members[i]
            extent = [by_time[j] for j in rolling_extent(times, t[TS], d)]
            head = {k: v for k, v in t.items() if k != TS}
            out.append(window_row(w, head, extent))
    return out
