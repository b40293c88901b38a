"""Pure-Python aggregators: ``zero / add / merge / finish`` with immutable
states, for every aggregation of the catalog.

`merge` is associative and `zero` is its identity, so any split of a stream
into panes, sessions or shards, merged in any grouping, finishes to the same
value as adding every row (up to floating-point rounding). Variance-type
states use Welford's update and Chan et al.'s pairwise merge, which stay
accurate when the mean is large relative to the spread. Exact order
statistics and exact distinct counts keep their values (holistic states);
the approximate `count_distinct` keeps an exact set here as well, the Spark
form uses an HLL sketch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from wid.semantics.aggregate_values import aggregate_value
from wid.semantics.ranks import sql_sort_key
from wid.spec.aggregation import Aggregation

Row = Mapping[str, Any]
State = Any


@dataclass(frozen=True)
class Aggregator:
    """One aggregation's incremental form.

    - ``zero()``: the empty state;
    - ``add(state, row)``: the state with one more row (a mapping holding the
      aggregation's columns, read through the spec's column names);
    - ``merge(a, b)``: the state of the union of two disjoint row sets;
    - ``finish(state)``: the output value (SQL NULL semantics: None).
    """

    zero: Callable[[], State]
    add: Callable[[State, Row], State]
    merge: Callable[[State, State], State]
    finish: Callable[[State], Any]


def _opt(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """Lift a binary op over optional values: None is the identity."""
    return lambda a, b: b if a is None else a if b is None else op(a, b)


def _welford_merge(a: tuple[int, float, float], b: tuple[int, float, float]) -> tuple[int, float, float]:
    (na, ma, qa), (nb, mb, qb) = a, b
    if na == 0:
        return b
    if nb == 0:
        return a
    n = na + nb
    delta = mb - ma
    return n, ma + delta * nb / n, qa + qb + delta * delta * na * nb / n


def _comoment_merge(a: tuple[float, ...], b: tuple[float, ...]) -> tuple[float, ...]:
    na, mxa, mya, qxa, qya, ca = a
    nb, mxb, myb, qxb, qyb, cb = b
    if na == 0:
        return b
    if nb == 0:
        return a
    n = na + nb
    dx, dy = mxb - mxa, myb - mya
    f = na * nb / n
    return (n, mxa + dx * nb / n, mya + dy * nb / n, qxa + qxb + dx * dx * f, qya + qyb + dy * dy * f,
            ca + cb + dx * dy * f)


def _comoment_finish(name: str) -> Callable[[tuple[float, ...]], Any]:
    def finish(s: tuple[float, ...]) -> Any:
        n, _, _, qx, qy, c = s
        if n < 2:
            return None
        if name == "covar":
            return c / (n - 1)
        if name == "corr":
            return None if qx == 0 or qy == 0 else c / math.sqrt(qx * qy)
        return None if qx == 0 else c / qx  # beta: X is kept in the first slot
    return finish


def make_aggregator(agg: Aggregation, time_key: Callable[[Row], Any]) -> Aggregator:
    """The incremental form of `agg`. `time_key(row)` orders rows for
    `first`/`last` (event time, then tie-breaker). Raises KeyError for a
    name missing from the catalog."""
    col, col2 = agg.column, agg.column2
    name = agg.agg
    if name == "count":
        return Aggregator(lambda: 0, lambda s, r: s + (col is None or r[col] is not None),
                          lambda a, b: a + b, lambda s: s)
    if col2 is not None:
        return _paired(agg, col or "", col2)
    if name in ("first", "last"):
        pick = min if name == "first" else max

        def add_fl(s: Any, r: Row) -> Any:
            v = r[col or ""]
            return s if v is None else _opt(lambda a, b: pick(a, b))(s, (time_key(r), sql_sort_key(v), v))
        return Aggregator(lambda: None, add_fl, _opt(lambda a, b: pick(a, b)), lambda s: None if s is None else s[2])
    return _single(agg, col or "")


def _single(agg: Aggregation, col: str) -> Aggregator:
    name = agg.agg

    def lift(step: Callable[[Any, Any], Any], merge: Callable[[Any, Any], Any], zero: Any,
             finish: Callable[[Any], Any]) -> Aggregator:
        return Aggregator(lambda: zero, lambda s, r: s if r[col] is None else step(s, r[col]), merge, finish)

    if name in ("sum", "sum2"):
        sq = name == "sum2"
        plus = _opt(lambda a, b: a + b)
        return lift(lambda s, v: plus(s, float(v) * float(v) if sq else v), plus, None, lambda s: s)
    if name in ("min", "max"):
        pick = min if name == "min" else max
        both = _opt(lambda a, b: pick(a, b, key=sql_sort_key))
        return lift(both, both, None, lambda s: s)
    if name == "avg":
        return lift(lambda s, v: (s[0] + 1, s[1] + v), lambda a, b: (a[0] + b[0], a[1] + b[1]), (0, 0),
                    lambda s: None if s[0] == 0 else s[1] / s[0])
    if name in ("var", "std"):
        def fin(s: tuple[int, float, float]) -> Any:
            if s[0] < 2:
                return None
            var = s[2] / (s[0] - 1)
            return var if name == "var" else math.sqrt(var)
        return lift(lambda s, v: _welford_merge(s, (1, float(v), 0.0)), _welford_merge, (0, 0.0, 0.0), fin)
    # Holistic: count_distinct keeps a set, med/percentile a sorted tuple.
    if name == "count_distinct":
        return lift(lambda s, v: s | {v}, lambda a, b: a | b, frozenset(), len)
    return lift(lambda s, v: (*s, v), lambda a, b: a + b, (),
                lambda s: aggregate_value(agg, [{col: v} for v in s], lambda r: 0))


def _paired(agg: Aggregation, col: str, col2: str) -> Aggregator:
    name = agg.agg

    def add(step: Callable[[Any, float, float], Any]) -> Callable[[Any, Row], Any]:
        def go(s: Any, r: Row) -> Any:
            x, y = r[col], r[col2]
            return s if x is None or y is None else step(s, float(x), float(y))
        return go

    if name == "wsum":
        plus = _opt(lambda a, b: a + b)
        return Aggregator(lambda: None, add(lambda s, x, w: plus(s, x * w)), plus, lambda s: s)
    if name == "wavg":
        return Aggregator(lambda: (0, 0.0, 0.0), add(lambda s, x, w: (s[0] + 1, s[1] + x * w, s[2] + w)),
                          lambda a, b: (a[0] + b[0], a[1] + b[1], a[2] + b[2]),
                          lambda s: None if s[0] == 0 or s[2] == 0 else s[1] / s[2])
    zero = (0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if name == "beta":  # beta(Y=col, X=col2): keep X in the first slot
        step = add(lambda s, y, x: _comoment_merge(s, (1, x, y, 0.0, 0.0, 0.0)))
    else:
        step = add(lambda s, x, y: _comoment_merge(s, (1, x, y, 0.0, 0.0, 0.0)))
    return Aggregator(lambda: zero, step, _comoment_merge, _comoment_finish(name))
