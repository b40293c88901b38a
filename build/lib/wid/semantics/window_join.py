"""The window-join oracle: DolphinDB's `createWindowJoinEngine` semantics
(docs/semantics.md#window-join), rows in, rows out, straight from the definitions. It
is quadratic and favours clarity; the Spark engine (`wid.spark.join`) is
tested against it.

For each left row l at time t (epoch microseconds), its *extent* is the
right rows r with the same matching key and::

    window (a, b):  t + a <= r.t <= t + b      (a, b in ms; both ends in)
    window (0, 0):  t_prev <= r.t < t          (t_prev: the key's previous left time)

Where DolphinDB's documentation describes a stream, or is silent, wid
decides, and the Spark engine does the same:

- **Batch fires every window.** In DolphinDB a window fires when a later
  right row (or `maxDelayedTime`) closes it; at the end of a batch input
  every window is complete, so every left row is output.
- **(0, 0), first left row of a key:** t_prev is minus infinity: its extent
  is every right row of the key before t. (DolphinDB buffers right rows from
  the start of the stream; its documented outputs agree: with
  ``closed = "right"`` the first left row at 1 ms holds the right row at 1 ms.)
- **(0, 0), tied left times:** a key's left rows are taken in time order,
  ties ordered by every left column in input order (SQL order, NULL first),
  as DolphinDB takes them in arrival order. The first of a tie gets
  ``[t_prev, t)``; the next ones get ``[t, t)``, which is empty. So every
  right row before the key's last left time is in exactly one extent.
- **Aggregate metrics** (`Aggregation`): one output row per left row, the
  value as `wid.semantics.aggregate_values` defines it (NULLs skipped;
  `count` of an empty extent is 0, every other aggregate NULL; `first` and
  `last` by right time).
- **Non-aggregate metrics** (`ColumnMetric`), window (a, b): one output row
  per right row of the extent, as DolphinDB's example with
  ``metrics=<[price, val, sum(val)]>``; a left row with an empty extent
  gives one row with NULL there, so no left row is lost (a left join).
  Window (0, 0): one row per left row, the extent's values as a list (an
  array column; DolphinDB: an array vector), in right time order, ties
  ordered by the non-aggregate metrics' columns.
- **Output columns:** the left time column (or `system_time`), the
  matching columns (left names), every other left column in input order,
  then the metrics. Left columns pass through unchanged.
- **`null_fill`** replaces every NULL of a named output column, left or
  right, aggregate or not (DolphinDB's `nullFill`). Lists are never NULL.
- **Bad input:** a row with a NULL time or a NULL matching column is
  rejected with a reason (`wid.semantics.reasons`), on either side; it
  never joins. Accounting: ``rows_in = rows_rejected + rows joined``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from wid.semantics import reasons
from wid.semantics.aggregate_values import aggregate_value
from wid.semantics.oracle import DeadLetter, OracleResult
from wid.semantics.ranks import sql_sort_key
from wid.semantics.timeunits import event_time_us, in_range, ms_to_us
from wid.spec.aggregation import Aggregation
from wid.spec.join import ColumnMetric, WindowJoin, metric_alias

Row = Mapping[str, Any]
TS = "__wid_ts_us"


def window_join(left: Sequence[Row], right: Sequence[Row], join: WindowJoin, *,
                left_columns: Sequence[str] | None = None, now_us: int | None = None) -> OracleResult:
    """Join `left` and `right` (mappings from column name to value) as `join`
    declares. `left_columns` orders the pass-through columns (default: the
    first left row's keys). Times are datetimes (``time_unit =
    "timestamp"``) or integers (``ms``, ``us``); with `use_system_time`
    every row is stamped `now_us`. Rows come out in time order (left time,
    keys) when `sort_by_time`. Dead letters name their side (``left`` or
    ``right``); `rows_aggregated` counts the rows of either side that joined.
    Raises TypeError on a time value of the wrong type."""
    if join.use_system_time and now_us is None:
        raise ValueError("use_system_time needs now_us, the arrival instant")
    columns = list(left_columns if left_columns is not None else (left[0] if left else []))
    good_left, dead = split_side(left, join, "left", now_us)
    good_right, dead_right = split_side(right, join, "right", now_us)
    by_key: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in sorted(good_right, key=right_order(join)):
        by_key[tuple(r[c] for c in join.right_keys)].append(r)
    extents = _special(good_left, by_key, join, columns) if join.special else _standard(good_left, by_key, join)
    out = [row for lrow, extent in extents for row in joined_rows(lrow, extent, join, columns, now_us)]
    if join.sort_by_time:
        out.sort(key=lambda r: tuple(sql_sort_key(r[c]) for c in (join.output_time, *join.left_keys)))
    return OracleResult(out, dead + dead_right, len(left) + len(right))


def split_side(rows: Sequence[Row], join: WindowJoin, side: str,
           now_us: int | None) -> tuple[list[dict[str, Any]], list[DeadLetter]]:
    """`rows` of one `side` (``left``/``right``) split into good rows, each
    with its time in epoch microseconds under `TS` (`now_us` with
    `use_system_time`), and dead letters (NULL time, a time out of Spark's
    range, or a NULL matching column)."""
    time = join.left_time if side == "left" else join.right_time
    keys = join.left_keys if side == "left" else join.right_keys
    good: list[dict[str, Any]] = []
    dead: list[DeadLetter] = []
    for row in rows:
        ts = now_us if time is None else event_time_us(row[time], join.time_unit)
        missing = [reasons.NULL_EVENT_TIME] if time is not None and row[time] is None else []
        if ts is not None and not in_range(ts):
            missing = [reasons.OUT_OF_RANGE]
        reason = next(iter(missing + [reasons.null_key(k) for k in keys if row[k] is None]), None)
        if reason is not None:
            dead.append(DeadLetter(reason, row, side))
            continue
        good.append({**row, TS: ts})
    return good, dead


def right_order(join: WindowJoin) -> Any:
    """The sort key of right rows: by time, ties by the non-aggregate
    metrics' columns (the order of a (0, 0) window's value lists)."""
    cols = list(dict.fromkeys(m.column for m in join.metrics if isinstance(m, ColumnMetric)))
    return lambda r: (r[TS], *(sql_sort_key(r[c]) for c in cols))


Extent = tuple[dict[str, Any], list[dict[str, Any]]]


def _standard(left: list[dict[str, Any]], by_key: dict[tuple[Any, ...], list[dict[str, Any]]],
              join: WindowJoin) -> list[Extent]:
    a, b = ms_to_us(join.window[0]), ms_to_us(join.window[1])
    out = []
    for lrow in left:
        rights = by_key.get(tuple(lrow[c] for c in join.left_keys), [])
        out.append((lrow, [r for r in rights if lrow[TS] + a <= r[TS] <= lrow[TS] + b]))
    return out


def _special(left: list[dict[str, Any]], by_key: dict[tuple[Any, ...], list[dict[str, Any]]],
             join: WindowJoin, columns: Sequence[str]) -> list[Extent]:
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for lrow in left:
        groups[tuple(lrow[c] for c in join.left_keys)].append(lrow)
    out = []
    for key, rows in groups.items():
        rows.sort(key=lambda r: (r[TS], *(sql_sort_key(r[c]) for c in columns)))
        rights = by_key.get(key, [])
        previous: int | None = None
        for lrow in rows:
            t = lrow[TS]
            if previous == t:
                extent: list[dict[str, Any]] = []  # a tied left row: [t, t) is empty
            else:
                extent = [r for r in rights if (previous is None or previous <= r[TS]) and r[TS] < t]
            out.append((lrow, extent))
            previous = t
    return out


def joined_rows(lrow: dict[str, Any], extent: list[dict[str, Any]], join: WindowJoin, columns: Sequence[str],
            now_us: int | None) -> list[dict[str, Any]]:
    """The output rows of left row `lrow` over its `extent` (right rows with
    `TS`, in `right_order`): one row, or one per right row for a
    non-aggregate metric and a window (a, b); `null_fill` applied.
    `now_us` is the `system_time` with `use_system_time`."""
    head: dict[str, Any] = {}
    if join.use_system_time:
        head[join.output_time] = now_us
    else:
        head[join.output_time] = lrow[join.output_time]
    head.update({k: lrow[k] for k in join.left_keys})
    head.update({c: lrow[c] for c in columns if c not in head})
    aggregates = {metric_alias(m): aggregate_value(m, extent, lambda r: r[TS])
                  for m in join.metrics if isinstance(m, Aggregation)}
    values = [m for m in join.metrics if isinstance(m, ColumnMetric)]
    if join.special:
        lists = {m.alias: [r[m.column] for r in extent] for m in values}
        rows = [{**head, **{a: aggregates[a] if a in aggregates else lists[a] for a in join.aliases}}]
    else:
        per_right: list[Row] = list(extent) if values and extent else [{}]
        rows = [{**head, **{metric_alias(m): aggregates[metric_alias(m)] if isinstance(m, Aggregation)
                            else r.get(m.column) for m in join.metrics}} for r in per_right]
    return [_fill(r, join) for r in rows]


def _fill(row: dict[str, Any], join: WindowJoin) -> dict[str, Any]:
    return {c: join.null_fill.get(c) if v is None and c in join.null_fill else v for c, v in row.items()}


__all__ = ["TS", "joined_rows", "right_order", "split_side", "window_join"]
