"""Definitional aggregate values: what each aggregation of docs/semantics.md#aggregations
means, computed directly from the rows of one extent and group.

This is deliberately *not* the `zero/add/merge/finish` machinery of
`wid.aggregates`: the oracle states the definition so the incremental forms
can be tested against it. Statistics use the standard library's exact
arithmetic (`statistics`, `math.fsum`).

SQL NULL semantics: NULL inputs are skipped (`count(*)` counts every row);
an aggregate over no non-null input is NULL (`count` gives 0). Undefined
statistics (a variance of one value, a correlation with a constant) are NULL,
never NaN. Two-column aggregations use the rows where both are non-null.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from wid.semantics.ranks import sql_sort_key
from wid.spec.aggregation import Aggregation

Row = Mapping[str, Any]


def aggregate_value(agg: Aggregation, rows: Sequence[Row], time_key: Callable[[Row], Any]) -> Any:
    """The value of `agg` over `rows`.

    `time_key(row)` orders rows for `first`/`last`: the event time, then the
    tie-breaker. For `count_distinct` the exact count is returned in both
    modes (the approximate mode is compared within its error bound).
    """
    if agg.agg == "count":
        return len(rows) if agg.column is None else sum(r[agg.column] is not None for r in rows)
    if agg.agg in ("first", "last"):
        return _first_last(agg, rows, time_key)
    if agg.column2 is not None:
        pairs = [(r[agg.column], r[agg.column2]) for r in rows  # type: ignore[index]
                 if r[agg.column] is not None and r[agg.column2] is not None]  # type: ignore[index]
        return _PAIRED[agg.agg](pairs)
    values = [r[agg.column] for r in rows if r[agg.column] is not None]  # type: ignore[index]
    if agg.agg == "percentile":
        return _percentile(values, agg.percent or 0.0)
    return _SINGLE[agg.agg](values)


def _first_last(agg: Aggregation, rows: Sequence[Row], time_key: Callable[[Row], Any]) -> Any:
    col = agg.column or ""
    keyed = [(time_key(r), sql_sort_key(r[col]), r[col]) for r in rows if r[col] is not None]
    if not keyed:
        return None
    pick = min if agg.agg == "first" else max
    return pick(keyed, key=lambda k: (k[0], k[1]))[2]


def _sum(values: list[Any]) -> Any:
    if not values:
        return None
    if all(isinstance(v, int) for v in values):
        return sum(values)
    return math.fsum(values)


def _avg(values: list[Any]) -> Any:
    return None if not values else float(Fraction(sum(Fraction(v) for v in values), len(values)))


def _var(values: list[Any]) -> Any:
    return None if len(values) < 2 else float(statistics.variance(Fraction(v) for v in values))


def _std(values: list[Any]) -> Any:
    var = _var(values)
    return None if var is None else math.sqrt(var)


def _moments(pairs: list[tuple[Any, Any]]) -> tuple[Fraction, Fraction, Fraction] | None:
    """Exact sample variance of x, of y, and covariance; None for n < 2."""
    n = len(pairs)
    if n < 2:
        return None
    xs = [Fraction(x) for x, _ in pairs]
    ys = [Fraction(y) for _, y in pairs]
    mx, my = sum(xs) / n, sum(ys) / n
    vx = Fraction(sum((x - mx) ** 2 for x in xs)) / (n - 1)
    vy = Fraction(sum((y - my) ** 2 for y in ys)) / (n - 1)
    cxy = Fraction(sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))) / (n - 1)
    return vx, vy, cxy


def _covar(pairs: list[tuple[Any, Any]]) -> Any:
    m = _moments(pairs)
    return None if m is None else float(m[2])


def _corr(pairs: list[tuple[Any, Any]]) -> Any:
    m = _moments(pairs)
    if m is None or m[0] == 0 or m[1] == 0:
        return None
    return float(m[2]) / math.sqrt(float(m[0]) * float(m[1]))


def _beta(pairs: list[tuple[Any, Any]]) -> Any:
    # beta(Y=column, X=column2): slope of Y on X = cov(X, Y) / var(X).
    m = _moments([(x, y) for y, x in pairs])
    if m is None or m[0] == 0:
        return None
    return float(m[2] / m[0])


def _wsum(pairs: list[tuple[Any, Any]]) -> Any:
    return None if not pairs else math.fsum(float(x) * float(w) for x, w in pairs)


def _wavg(pairs: list[tuple[Any, Any]]) -> Any:
    if not pairs:
        return None
    total = sum(Fraction(w) for _, w in pairs)
    if total == 0:
        return None
    return float(sum(Fraction(x) * Fraction(w) for x, w in pairs) / total)


def _percentile(values: list[Any], percent: float) -> Any:
    """DolphinDB `percentile(X, percent)` with linear interpolation, as
    Spark's `percentile`: position ``(n-1) * percent/100`` in sorted order."""
    if not values:
        return None
    ordered = sorted(values)
    pos = Fraction(len(ordered) - 1) * Fraction(percent) / 100
    lo = math.floor(pos)
    hi = math.ceil(pos)
    low, high = Fraction(ordered[lo]), Fraction(ordered[hi])
    return float(low + (pos - lo) * (high - low))


_SINGLE: dict[str, Callable[[list[Any]], Any]] = {
    "sum": _sum,
    "min": lambda v: min(v, key=sql_sort_key) if v else None,
    "max": lambda v: max(v, key=sql_sort_key) if v else None,
    "avg": _avg,
    "count_distinct": lambda v: len(set(v)),
    "sum2": lambda v: math.fsum(float(x) * float(x) for x in v) if v else None,
    "var": _var,
    "std": _std,
    "med": lambda v: _percentile(v, 50.0),
}
_PAIRED: dict[str, Callable[[list[tuple[Any, Any]]], Any]] = {
    "corr": _corr,
    "covar": _covar,
    "beta": _beta,
    "wsum": _wsum,
    "wavg": _wavg,
}
