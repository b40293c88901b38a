"""Ranks and count windows: the paper's tuple-based sliding windows
(Li et al. 2005, section 3.2; docs/semantics.md#window-kinds).

Ranks are 0-based positions in a total order: `order_by`, then the declared
`tie_breaker`, else every remaining column in input order. Rows equal on all
of those are interchangeable, so results never depend on arrival order. SQL
ordering applies: NULL sorts first, NaN after every number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any


def sql_sort_key(value: Any) -> tuple[Any, ...]:
    """A key that orders values as Spark's ascending sort does."""
    if value is None:
        return (0,)
    if isinstance(value, float) and math.isnan(value):
        return (2,)
    return (1, value)


def rank_order(rows: Sequence[Mapping[str, Any]], order_by: Sequence[str]) -> list[int]:
    """Indices of `rows` sorted by the columns `order_by` (SQL ordering)."""
    return sorted(range(len(rows)), key=lambda i: tuple(sql_sort_key(rows[i][c]) for c in order_by))


def count_wids(rank: int, size: int, hop: int) -> range:
    """Count windows holding 0-based rank r: ``w`` with
    ``(w+1)*hop - size <= r < (w+1)*hop``, that is
    ``floor(r/hop) .. floor((r+size)/hop) - 1``."""
    return range(rank // hop, (rank + size) // hop)


def count_extent(w: int, size: int, hop: int) -> range:
    """The ranks of count window w: ``[max(0, (w+1)*hop - size), (w+1)*hop)``.
    Early windows are partial, as in the paper and Flink's countWindow."""
    end = (w + 1) * hop
    return range(max(0, end - size), end)


def count_complete(w: int, n_rows: int, hop: int) -> bool:
    """Window w is complete (and emits) once rank ``(w+1)*hop - 1`` exists."""
    return (w + 1) * hop <= n_rows
