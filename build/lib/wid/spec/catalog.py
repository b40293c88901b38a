"""The catalog of aggregation functions a window may declare (docs/semantics.md#aggregations).

Only names and argument shapes live here; the spec layer validates against
them. Implementations live in `wid.aggregates` (pure and Spark forms) and the
definitional values in `wid.semantics.aggregate_values` (the oracle).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AggShape:
    """How an aggregation is called.

    `columns` is the number of column arguments (`count` takes 0 or 1:
    `count(*)` counts every row, `count(col)` skips nulls). `percent` is True
    when the aggregation takes DolphinDB's `percent` argument (0 to 100).
    `holistic` marks aggregations whose partial state grows with the data
    (exact order statistics, exact distinct counts): they cannot be merged in
    constant space, which decides the execution form for overlapping windows.
    `numeric` marks aggregations that read their columns as numbers: a
    string value there is cast (Spark's ``try_cast`` to DOUBLE), and a row
    whose value does not parse goes to the dead letter (`wid.semantics.reasons`).
    `origin` names where the semantics come from.
    """

    columns: tuple[int, ...]
    origin: str
    percent: bool = False
    holistic: bool = False
    numeric: bool = True


AGGREGATIONS: dict[str, AggShape] = {
    "count": AggShape((0, 1), "ematix-flow; SQL COUNT(*) / COUNT(col)", numeric=False),
    "sum": AggShape((1,), "ematix-flow; SQL SUM"),
    "min": AggShape((1,), "ematix-flow; SQL MIN", numeric=False),
    "max": AggShape((1,), "ematix-flow; SQL MAX", numeric=False),
    "avg": AggShape((1,), "ematix-flow; SQL AVG"),
    "first": AggShape((1,), "ematix-flow: earliest non-null value by event time", numeric=False),
    "last": AggShape((1,), "ematix-flow: latest non-null value by event time", numeric=False),
    "count_distinct": AggShape((1,), "ematix-flow; HLL sketch or exact set", numeric=False),
    "sum2": AggShape((1,), "DolphinDB sum2: sum of squares"),
    "std": AggShape((1,), "DolphinDB std: sample standard deviation"),
    "var": AggShape((1,), "DolphinDB var: sample variance"),
    "corr": AggShape((2,), "DolphinDB corr(X, Y): Pearson correlation"),
    "covar": AggShape((2,), "DolphinDB covar(X, Y): sample covariance"),
    "wavg": AggShape((2,), "DolphinDB wavg(X, Y): sum(X*Y)/sum(Y)"),
    "wsum": AggShape((2,), "DolphinDB wsum(X, Y): sum(X*Y)"),
    "beta": AggShape((2,), "DolphinDB beta(Y, X): OLS slope of Y on X"),
    "med": AggShape((1,), "DolphinDB med: exact median", holistic=True),
    "percentile": AggShape(
        (1,), "DolphinDB percentile(X, percent): linear interpolation", percent=True, holistic=True
    ),
}
