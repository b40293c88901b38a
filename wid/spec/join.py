"""`WindowJoin`: the declaration of a window join, DolphinDB's
`createWindowJoinEngine` with its parameter names in snake_case
(docs/semantics.md#window-join).

For each left row at time t, `metrics` are computed over the right rows with
the same matching key and a time in ``[t + a, t + b]`` (both ends included;
`window` = (a, b) in milliseconds). The window (0, 0) is DolphinDB's special
window: the right rows in ``[t_prev, t)``, t_prev being the previous left
time of the key. The semantics are spelled out, row by row, in
`wid.semantics.window_join` (the oracle).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from wid.errors import ConfigError
from wid.spec.aggregation import Aggregation
from wid.spec.names import check_identifier, check_name, check_names
from wid.spec.sql_query import check_query

TIME_UNITS = ("timestamp", "ms", "us")
SYSTEM_TIME = "system_time"  # the output's first column with use_system_time
# DolphinDB's optimised window-join metrics (createWindowJoinEngine, `metrics`):
# every aggregation of the catalog except count_distinct.
JOIN_AGGREGATIONS = ("sum", "sum2", "avg", "std", "var", "corr", "covar", "wavg", "wsum", "beta",
                     "max", "min", "first", "last", "med", "percentile", "count")
Scalar = str | int | float | bool


@dataclass(frozen=True)
class ColumnMetric:
    """A non-aggregate metric: the value of right column `column`, output as
    `as_` [TOML `as`; default: the column's name].

    As in DolphinDB's documented example (``metrics=<[price, val, sum(val)]>``),
    a window (a, b) gives one output row per matching right row (a left row
    whose window is empty gives one row, with NULL here); the window (0, 0)
    gives one row per left row and an array of the window's values, in right
    time order (DolphinDB: "the output column must be an array vector").
    """

    column: str
    as_: str | None = None

    def __post_init__(self) -> None:
        check_name("column", self.column)
        if self.as_ is None:
            object.__setattr__(self, "as_", self.column)
        check_identifier("as", self.as_, "name the output column with as = \"...\"")

    @property
    def alias(self) -> str:
        """The output column name."""
        return self.as_ or self.column


Metric = Aggregation | ColumnMetric


def metric_alias(metric: Metric) -> str:
    """The output column of a metric."""
    return metric.alias if isinstance(metric, ColumnMetric) else metric.as_


@dataclass(frozen=True)
class WindowJoin:
    """A window join of a left and a right table (DolphinDB
    `createWindowJoinEngine`).

    - `window`: (a, b) in milliseconds, a <= b: the right rows with time in
      ``[t + a, t + b]`` for a left row at t. (0, 0) is the special window
      ``[t_prev, t)``: see `wid.semantics.window_join` for the first left
      row of a key and for tied left times.
    - `metrics`: `Aggregation` (one of `JOIN_AGGREGATIONS`, over right
      columns; one output row per left row) or `ColumnMetric` (a right
      column's value: one row per matching right row). At least one.
    - `matching_column`: the key. One name or several, the same on both
      sides; or a pair (left names, right names) when they differ, as
      DolphinDB's ``[[`sym], [`sym1]]``. Stored as (left, right).
    - `time_column`: one name, or (left, right) when they differ. Stored
      as (left, right); None with `use_system_time`.
    - `time_unit`: ``timestamp`` (a timestamp, or a string Spark parses),
      ``ms`` or ``us`` (epoch integers), for both time columns.
    - `use_system_time`: join on arrival time instead of `time_column`; the
      output's first column is then `system_time`. In batch every row of a
      run arrives at the same instant.
    - `max_delayed_time` (ms), `garbage_size` (rows): streaming triggers
      and memory release. They never change a batch result.
    - `null_fill`: {output column: value}; every NULL in that column is
      replaced, as DolphinDB's `nullFill` (left columns, right columns and
      aggregate results alike).
    - `sort_by_time`: output ordered by the left time, then the keys
      (batch only: a stream's output has no global order, so a stream
      refuses it).
    - `late_data`: on a stream, what happens to a late row
      (`wid.semantics.window_join_stream` says which rows are late):
      ``drop`` (counted) or ``dlq`` (the dead letter, with a reason).
      ``reopen`` is refused: a fired window is never re-emitted, as in
      DolphinDB, whose engine outputs each left row once.

    Output columns: the left time column (or `system_time`), the matching
    columns (left names), the other left columns in input order, then the
    metrics in declared order.

    Raises `wid.errors.ConfigError` naming the field at construction, with
    DolphinDB's own restrictions: no `max_delayed_time` with the window
    (0, 0), with `sort_by_time`, or with `use_system_time`.
    """

    window: tuple[int, int]
    metrics: tuple[Metric, ...]
    matching_column: Any
    time_column: Any = None
    time_unit: Literal["timestamp", "ms", "us"] = "timestamp"
    use_system_time: bool = False
    max_delayed_time: int | None = None
    garbage_size: int = 5000
    null_fill: dict[str, Scalar] = field(default_factory=dict)
    sort_by_time: bool = False
    late_data: Literal["drop", "dlq"] = "drop"

    def __post_init__(self) -> None:
        object.__setattr__(self, "window", _window(self.window))
        metrics = self.metrics
        if isinstance(metrics, Aggregation | ColumnMetric) or not isinstance(metrics, list | tuple):
            raise ConfigError("metrics", "must be a list of metrics (Aggregation or ColumnMetric)")
        object.__setattr__(self, "metrics", tuple(metrics))
        object.__setattr__(self, "matching_column", _sides("matching_column", self.matching_column))
        if self.time_column is not None:
            object.__setattr__(self, "time_column", _time_sides(self.time_column))
        _validate(self)

    @property
    def special(self) -> bool:
        """True for DolphinDB's special window (0, 0): ``[t_prev, t)``."""
        return self.window == (0, 0)

    @property
    def left_keys(self) -> tuple[str, ...]:
        return tuple(self.matching_column[0])

    @property
    def right_keys(self) -> tuple[str, ...]:
        return tuple(self.matching_column[1])

    @property
    def left_time(self) -> str | None:
        return None if self.time_column is None else str(self.time_column[0])

    @property
    def right_time(self) -> str | None:
        return None if self.time_column is None else str(self.time_column[1])

    @property
    def output_time(self) -> str:
        """The output's first column: the left time column or `system_time`."""
        return self.left_time or SYSTEM_TIME

    @property
    def aliases(self) -> tuple[str, ...]:
        return tuple(metric_alias(m) for m in self.metrics)


def _window(value: object) -> tuple[int, int]:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise ConfigError("window", f"must be a pair (a, b) of milliseconds, got {value!r}",
                          "e.g. window = [-2000, 2000], or [0, 0] for the special window")
    a, b = value
    for v in (a, b):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ConfigError("window", f"bounds must be integers (milliseconds), got {value!r}")
    if a > b:
        raise ConfigError("window", f"a = {a} is after b = {b}; the window [t+a, t+b] would be empty",
                          "give the bounds in order, a <= b")
    return a, b


def _sides(name: str, value: object) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """One list of names for both sides, or a pair (left names, right names)."""
    if isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, list | tuple) for v in value):
        left, right = check_names(f"{name}[0]", value[0]), check_names(f"{name}[1]", value[1])
    else:
        left = right = check_names(name, value)
    if not left:
        raise ConfigError(name, "needs at least one column", 'e.g. matching_column = "sym"')
    if len(left) != len(right):
        raise ConfigError(name, f"the left side has {len(left)} column(s), the right side {len(right)}",
                          "name the same number of columns on both sides")
    return left, right


def _time_sides(value: object) -> tuple[str, str]:
    if isinstance(value, str):
        return check_name("time_column", value), value
    if isinstance(value, list | tuple) and len(value) == 2:
        return check_name("time_column[0]", value[0]), check_name("time_column[1]", value[1])
    raise ConfigError("time_column", f"must be a column name or a pair (left, right), got {value!r}")


def _validate(j: WindowJoin) -> None:
    if j.time_unit not in TIME_UNITS:
        raise ConfigError("time_unit", f"must be one of {', '.join(TIME_UNITS)}; got {j.time_unit!r}")
    for name in ("use_system_time", "sort_by_time"):
        if not isinstance(getattr(j, name), bool):
            raise ConfigError(name, f"must be true or false, got {getattr(j, name)!r}")
    late_data: object = j.late_data
    if late_data not in ("drop", "dlq"):
        hint = ("a window join outputs each left row once, when its window fires, and never corrects it"
                if late_data == "reopen" else f"got {late_data!r}")
        raise ConfigError("late_data", f"must be drop or dlq: {hint}", 'use late_data = "drop" or "dlq"')
    _validate_time(j)
    _validate_numbers(j)
    _validate_metrics(j)
    _validate_null_fill(j)


def _validate_time(j: WindowJoin) -> None:
    if j.use_system_time and j.time_column is not None:
        raise ConfigError("time_column", "use_system_time joins on arrival time, not on a column",
                          "remove time_column, or set use_system_time = false")
    if not j.use_system_time and j.time_column is None:
        raise ConfigError("time_column", "is required (or use_system_time = true)",
                          'e.g. time_column = "time", or ["left_time", "right_time"]')
    if j.max_delayed_time is None:
        return
    for bad, why in ((j.special, "the special window (0, 0) does not support it"),
                     (j.sort_by_time, "sort_by_time needs globally ordered input and refuses it"),
                     (j.use_system_time, "it counts in time_column units, which use_system_time has not")):
        if bad:
            raise ConfigError("max_delayed_time", f"{why} (DolphinDB createWindowJoinEngine)",
                              "remove max_delayed_time")


def _validate_numbers(j: WindowJoin) -> None:
    for name in ("max_delayed_time", "garbage_size"):
        value = getattr(j, name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ConfigError(name, f"must be a positive integer, got {value!r}")


def _validate_metrics(j: WindowJoin) -> None:
    if not j.metrics:
        raise ConfigError("metrics", "a window join needs at least one metric",
                          'give metrics=[Aggregation("avg", "bid", as_="avg_bid")] (or a column name)',
                          'add [[join.metrics]] with agg, column and as (or only column)')
    taken = {j.output_time: "the time column", **{k: "a matching column" for k in j.left_keys}}
    for i, m in enumerate(j.metrics):
        if not isinstance(m, Aggregation | ColumnMetric):
            raise ConfigError(f"metrics[{i}]", "must be an Aggregation or a ColumnMetric")
        if isinstance(m, Aggregation) and m.agg not in JOIN_AGGREGATIONS:
            raise ConfigError(f"metrics[{i}].agg", f"'{m.agg}' is not a window-join metric",
                              "use one of " + ", ".join(JOIN_AGGREGATIONS))
        alias = metric_alias(m)
        if alias in taken:
            raise ConfigError(f"metrics[{i}].as", f"alias '{alias}' collides with {taken[alias]}",
                              "choose a distinct alias")
        taken[alias] = f"the alias of metrics[{i}]"


def _validate_null_fill(j: WindowJoin) -> None:
    if not isinstance(j.null_fill, dict):
        raise ConfigError("null_fill", f"must be a table of column = value, got {j.null_fill!r}")
    arrays = {metric_alias(m) for m in j.metrics if isinstance(m, ColumnMetric) and j.special}
    for column, value in j.null_fill.items():
        check_name(f"null_fill.{column}", column)
        if not isinstance(value, str | int | float | bool):
            raise ConfigError(f"null_fill.{column}", f"must be a string, number or boolean, got {value!r}")
        if column in arrays:
            raise ConfigError(f"null_fill.{column}", "is an array of the window's values, never NULL "
                              "(an empty window gives an empty array)", f"remove null_fill.{column}")


@dataclass(frozen=True)
class JoinStage:
    """A pipeline's window-join stage (TOML: the ``[join]`` table, holding
    these keys beside the `WindowJoin` fields).

    - `join`: the `WindowJoin`.
    - `left`, `right`: the names of the pipeline sources (``[[source]]``
      tables' `name`) that are the left and right tables; dead letters name
      each side by them.
    - `left_sql`, `right_sql`: optional Spark SQL pre-stages, each one
      query reading the sources by name (``FROM flights``); the query's
      result is that side's input (`left`/`right` then only name the side).
      A statement that is not one query is refused
      (`wid.spec.sql_query.check_query`, docs/trust.md).
    """

    join: WindowJoin
    left: str = "left"
    right: str = "right"
    left_sql: str | None = None
    right_sql: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.join, WindowJoin):
            raise ConfigError("join", "must be a WindowJoin")
        check_name("left", self.left)
        check_name("right", self.right)
        for name in ("left_sql", "right_sql"):
            sql = getattr(self, name)
            if sql is not None and (not isinstance(sql, str) or not sql.strip()):
                raise ConfigError(name, "is empty", f"remove {name} or write a query")
            check_query(name, sql)  # a query stage only queries (docs/trust.md)


__all__ = ["JOIN_AGGREGATIONS", "SYSTEM_TIME", "ColumnMetric", "JoinStage", "Metric", "WindowJoin", "metric_alias"]
