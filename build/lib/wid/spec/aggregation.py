"""`Aggregation`: one aggregate column of a window's output (docs/semantics.md#aggregations)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

from wid.errors import ConfigError
from wid.spec.catalog import AGGREGATIONS
from wid.spec.names import check_identifier, check_name

DistinctMode = Literal["approximate", "exact"]


@dataclass(frozen=True)
class Aggregation:
    """One aggregate over the rows of each window extent and group.

    Arguments (TOML keys in brackets where they differ):

    - `agg`: a name from `wid.spec.catalog.AGGREGATIONS` (`count`, `sum`,
      `min`, `max`, `avg`, `first`, `last`, `count_distinct`, `sum2`, `std`,
      `var`, `corr`, `covar`, `wavg`, `wsum`, `beta`, `med`, `percentile`).
    - `column`: the input column. `count` without a column (or with ``"*"``)
      counts every row; every other aggregation skips SQL NULLs.
    - `as_` [`as`]: the output column name. Required.
    - `column2`: the second argument of two-argument DolphinDB functions, in
      DolphinDB's order: `corr(X=column, Y=column2)`, `covar(X, Y)`,
      `wavg(X=column, weights=column2)`, `wsum(X, weights)`, and
      `beta(Y=column, X=column2)` (the slope of `column` regressed on
      `column2`). Rows where either argument is NULL are skipped.
    - `percent`: for `percentile`, in [0, 100] as in DolphinDB.
    - `mode`: for `count_distinct`, ``"approximate"`` (default: an HLL sketch
      at lgK 14, about 0.81 % standard error) or ``"exact"``.
    - `max_distinct_values_per_group`: required with ``mode="exact"``; the run
      fails with `wid.errors.StateCapError` when a group exceeds it.

    `first`/`last` pick the non-null value of the earliest/latest row by event
    time (not arrival); ties are broken by the window's `tie_breaker`, then by
    the value itself (smallest for `first`, largest for `last`), so results
    are deterministic.

    Raises `wid.errors.ConfigError` naming the field on any invalid argument.
    """

    agg: str
    column: str | None = None
    as_: str = ""
    column2: str | None = None
    percent: float | None = None
    mode: DistinctMode | None = None
    max_distinct_values_per_group: int | None = None

    def __post_init__(self) -> None:
        if self.column == "*":
            object.__setattr__(self, "column", None)
        if self.agg == "count_distinct" and self.mode is None:
            object.__setattr__(self, "mode", "approximate")
        if isinstance(self.percent, int) and not isinstance(self.percent, bool):
            object.__setattr__(self, "percent", float(self.percent))
        self._validate()

    @property
    def columns(self) -> tuple[str, ...]:
        """The input columns, in argument order."""
        return tuple(c for c in (self.column, self.column2) if c is not None)

    @property
    def numeric(self) -> bool:
        """True when the columns are read as numbers (see AggShape)."""
        return AGGREGATIONS[self.agg].numeric

    @property
    def holistic(self) -> bool:
        """True when the partial state grows with the data (see AggShape)."""
        return AGGREGATIONS[self.agg].holistic or self.mode == "exact"

    def _validate(self) -> None:
        if self.agg not in AGGREGATIONS:
            close = difflib.get_close_matches(str(self.agg), AGGREGATIONS, n=1)
            hint = f"did you mean '{close[0]}'?" if close else "use one of " + ", ".join(AGGREGATIONS)
            raise ConfigError("agg", f"unknown aggregation '{self.agg}'", hint)
        shape = AGGREGATIONS[self.agg]
        check_identifier("as", self.as_, f"give the output column a name, e.g. as = \"{self.agg}_1\"")
        for field, value in (("column", self.column), ("column2", self.column2)):
            if value is not None:
                check_name(field, value)
        n = len(self.columns)
        if self.column is None and self.column2 is not None:
            raise ConfigError("column", f"'{self.agg}' needs `column` before `column2`")
        if n not in shape.columns:
            want = " or ".join(str(c) for c in shape.columns)
            fix = "set `column` and `column2`" if 2 in shape.columns else "set `column`"
            if n > max(shape.columns):
                fix = "remove `column2`"
            raise ConfigError("column", f"'{self.agg}' takes {want} column(s), got {n}", fix)
        self._validate_options(shape.percent)

    def _validate_options(self, takes_percent: bool) -> None:
        if takes_percent:
            p = self.percent
            if p is None or isinstance(p, bool) or not isinstance(p, float) or not 0 <= p <= 100:
                raise ConfigError("percent", f"'{self.agg}' needs percent in [0, 100], got {p!r}")
        elif self.percent is not None:
            raise ConfigError("percent", f"'{self.agg}' takes no percent", "remove `percent`")
        if self.agg != "count_distinct":
            for field in ("mode", "max_distinct_values_per_group"):
                if getattr(self, field) is not None:
                    raise ConfigError(field, f"only count_distinct takes `{field}`", f"remove `{field}`")
            return
        if self.mode not in ("approximate", "exact"):
            raise ConfigError("mode", f"must be 'approximate' or 'exact', got {self.mode!r}")
        cap = self.max_distinct_values_per_group
        if self.mode == "exact":
            if cap is None or isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
                raise ConfigError(
                    "max_distinct_values_per_group",
                    "mode = 'exact' needs a positive cap on distinct values per group",
                    "set max_distinct_values_per_group, e.g. 100000, or use mode = 'approximate'",
                )
        elif cap is not None:
            raise ConfigError(
                "max_distinct_values_per_group",
                "the cap only applies to mode = 'exact'",
                "remove it or set mode = 'exact'",
            )
