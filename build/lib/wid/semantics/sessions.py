"""Session windows (docs/semantics.md#window-kinds), with Spark's `session_window`
boundary rule.

Each row opens an interval ``[ts, ts + gap)``. Sorted by ts, a row joins the
current session when ``ts <= end`` where end is the running maximum of
``ts + gap``; otherwise it starts a new one. A row exactly at the end joins,
as Spark does (checked by tests against `session_window`). The session's
extent is ``[first ts, max(ts + gap))``.
"""

from __future__ import annotations

from collections.abc import Sequence


def sessionize(times: Sequence[tuple[int, int]]) -> list[tuple[int, int, list[int]]]:
    """Merge rows into sessions.

    `times` holds ``(ts_us, gap_us)`` per row, gap > 0, in any order. Returns
    ``(start_us, end_us, row indices)`` per session, in time order.
    Raises ValueError on a non-positive gap.
    """
    order = sorted(range(len(times)), key=lambda i: times[i][0])
    sessions: list[tuple[int, int, list[int]]] = []
    for i in order:
        ts, gap = times[i]
        if gap <= 0:
            raise ValueError(f"session gap must be positive, got {gap} us")
        if sessions and ts <= sessions[-1][1]:
            start, end, rows = sessions[-1]
            rows.append(i)
            sessions[-1] = (start, max(end, ts + gap), rows)
        else:
            sessions.append((ts, ts + gap, [i]))
    return sessions
