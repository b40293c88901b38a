"""What every batch plan shares: the planning context, the chosen form (for
`wid explain`), and output assembly in the column order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, WindowSpec
from pyspark.sql import Window as W
from pyspark.sql import functions as F
from pyspark.sql import types as T

from wid.aggregates.spark import FirstLast, Inputs, SparkAgg, spark_agg
from wid.aggregates.spark import value as agg_value
from wid.errors import ConfigError
from wid.spark.columns import TS, Exact, field, getter, ident, sql, timestamp_us
from wid.spec.aggregation import Aggregation
from wid.spec.join import WindowJoin
from wid.spec.window import Window


@dataclass(frozen=True)
class Planned:
    """A compiled window stage: the output DataFrame, the execution `form`
    and `why` it was chosen, and `notes` (costs, single-partition steps,
    ways the configuration may lose data)."""

    output: DataFrame
    form: str
    why: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Outline:
    """How a window stage will run, read from its spec and settings alone
    (no Spark session; `wid explain` without ``--plan``): the `forms` it may
    take, in the order they are tried (the input's column types pick the
    first that can run them), `why`, and `notes`."""

    forms: tuple[str, ...]
    why: str
    notes: tuple[str, ...] = ()


def holistic(window: Window) -> list[str]:
    """Aliases of `window`'s aggregations with no constant-size merge."""
    return [a.as_ for a in window.aggregations if a.holistic]


@dataclass
class Ctx:
    """Planning context: the window, the good rows (with `TS`), the pipeline
    name used in error messages."""

    window: Window
    rows: DataFrame
    pipeline: str = "wid"

    def aggs(self, where: Callable[[], Column] | None = None, extra: tuple[Aggregation, ...] = ()) -> list[SparkAgg]:
        """The Spark forms of the window's aggregations, then `extra` hidden
        ones; `where` makes the window's label for cap errors (`Inputs`)."""
        types = {f.name: f.dataType for f in self.rows.schema.fields}
        tb = F.col(self.window.tie_breaker) if self.window.tie_breaker else None
        inputs = Inputs(types=types, ts_us=F.col(TS), tie_breaker=tb, where=where)
        return [spark_agg(a, inputs) for a in (*self.window.aggregations, *extra)]

    @property
    def holistic(self) -> list[str]:
        """Aliases of aggregations with no constant-size merge."""
        return holistic(self.window)


def frame_values(df: DataFrame, aggs: Sequence[SparkAgg], frame: WindowSpec,
                 in_order: bool = False) -> tuple[DataFrame, list[Column]]:
    """`df` with each aggregation's fields over a window function `frame`
    (rolling range frames, count windows' row frames), and the columns of
    their values named by their aliases, to select from it. The fields are
    columns first because a value may read a field more than once (avg,
    var, corr) and Spark evaluates every occurrence of a window function
    anew, its analyser merging none. With `in_order` (the frame's order is
    event time, the tie-breaker, then the value of every first and last),
    first and last are the frame's own (`FirstLast.in_order`)."""
    values, fields = [], []
    for i, a in enumerate(aggs):
        if in_order and isinstance(a, FirstLast):
            fields.append(a.in_order(frame).alias(field(i, "v", "f")))
            values.append(F.col(field(i, "v", "f")).alias(a.agg.as_))
            continue
        fields += [e.over(frame).alias(field(i, k, "f")) for k, e in a.partial().items()]
        values.append(agg_value(a, getter(i, "f")).alias(a.agg.as_))
    return df.select("*", *fields), values


def where_label(start_us: Column, end_us: Column, pipeline: str) -> Column:
    """``[start, end) for pipeline P`` with UTC ISO-8601 bounds, for cap errors."""
    def iso(us: Column) -> Column:
        return F.date_format(timestamp_us(us), "yyyy-MM-dd'T'HH:mm:ss'Z'")
    return F.concat(F.lit("window ["), iso(start_us), F.lit(", "), iso(end_us), F.lit(f") for pipeline {pipeline}"))


def _bound(us: Column | Exact, name: str) -> Column:
    """Epoch microseconds `us` as the timestamp column `name`."""
    if isinstance(us, Exact):
        return sql(f"timestamp_micros({us.text}) AS {ident(name)}")
    return timestamp_us(us).alias(name)


def assemble(df: DataFrame, window: Window, start_us: Column | Exact, end_us: Column | Exact,
             window_id: Column | None = None, extra: tuple[Column, ...] = (),
             values: Sequence[Column] | None = None) -> DataFrame:
    """Window columns (timestamps from epoch microseconds), then the group
    columns, then the aggregations' `values` (named by their aliases;
    default: `df`'s columns of those names), then any `extra` columns. One
    projection."""
    head = [_bound(start_us, window.window_start_column), _bound(end_us, window.window_end_column)]
    if window_id is not None:
        head.append(window_id.cast("long").alias(window.window_id_column))
    named = [F.col(a.as_) for a in window.aggregations] if values is None else list(values)
    return df.select(*head, *window.key_columns, *named, *extra)


GROUP_CAP = "window state cap hit: max_groups_per_window={cap} reached on window [%s, %s) for pipeline {pipeline}"


def group_cap_message(cap: int, pipeline: str) -> str:
    """docs/semantics.md#completeness's message, with ``%s`` for the window's UTC bounds
    (pipeline names hold no ``%``; see `wid.spec.pipeline`)."""
    return GROUP_CAP.format(cap=cap, pipeline=pipeline)


def enforce_group_cap(out: DataFrame, window: Window, pipeline: str) -> DataFrame:
    """Fail loudly when a window holds more groups than
    `max_groups_per_window` (docs/semantics.md#completeness message format)."""
    cap = window.max_groups_per_window
    if cap is None or window.definition.row_windows:  # a rolling row is its own window
        return out
    start, end = window.window_start_column, window.window_end_column
    per_window = F.count(F.lit(1)).over(W.partitionBy(start, end))
    message = F.format_string(group_cap_message(cap, pipeline), F.date_format(F.col(start), "yyyy-MM-dd'T'HH:mm:ss'Z'"),
                              F.date_format(F.col(end), "yyyy-MM-dd'T'HH:mm:ss'Z'"))
    checked = out.withColumn("_wid_groups", per_window)
    return checked.where(F.when(F.col("_wid_groups") > cap, F.raise_error(message)).otherwise(F.lit(True))).drop(
        "_wid_groups")


def null_fill(df: DataFrame, join: WindowJoin) -> DataFrame:
    """DolphinDB's nullFill: every NULL of a named output column replaced."""
    if not join.null_fill:
        return df
    types = {f.name: f.dataType for f in df.schema.fields}
    for column, value in join.null_fill.items():
        if column not in types:
            raise ConfigError(f"null_fill.{column}", f"is not an output column (columns: {', '.join(df.columns)})")
        t = types[column]
        numeric, text, flag = isinstance(t, T.NumericType), isinstance(t, T.StringType), isinstance(t, T.BooleanType)
        fits = (numeric and isinstance(value, int | float) and not isinstance(value, bool)) or (
            text and isinstance(value, str)) or (flag and isinstance(value, bool)) or (
            isinstance(t, T.TimestampType | T.DateType) and isinstance(value, str))
        if not fits:
            raise ConfigError(f"null_fill.{column}", f"{value!r} does not fit the column's type {t.simpleString()}",
                              "give a value of the column's type")
    return df.select(*[F.coalesce(F.col(c), F.lit(join.null_fill[c]).cast(types[c])).alias(c)
                       if c in join.null_fill else F.col(c) for c in df.columns])
