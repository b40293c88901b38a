"""wid's public Python API on Spark: a window's aggregates (`aggregate`,
`window_result`) and a window join (`window_join`, `join_result`) over
DataFrames, batch or streaming; the path each runs on is chosen by
`wid.spark.compile` (docs/architecture.md#execution-paths). The first time
a session reaches them, the environment checks of ``wid run`` warn about
what they find, one line each (`wid.spark.environment`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame

from wid.errors import ConfigError, InputError
from wid.spark.compile import StageResult, compile_join, compile_window
from wid.spark.environment import warn_once
from wid.spec.join import ColumnMetric, Metric, WindowJoin
from wid.spec.window import Window


def check_spark_frame(df: object, name: str = "df") -> None:
    """Raise InputError naming `name` unless `df` is a Spark DataFrame
    (classic or Spark Connect): wid computes on Spark, so a pandas
    DataFrame (or anything else) would fail deep inside, in other words."""
    if isinstance(df, DataFrame):
        return
    kind = type(df)
    what = "a pandas DataFrame" if kind.__module__.startswith("pandas") else f"a {kind.__module__}.{kind.__qualname__}"
    raise InputError(f"{name} is {what}, not a Spark DataFrame. Fix: make one with spark.createDataFrame({name}) "
                     "(a pandas DataFrame keeps its columns and types)")


WindowResult = StageResult
JoinResult = StageResult


def window_result(df: DataFrame | Mapping[str, DataFrame], window: Window, *, pipeline: str = "wid",
                  source: str = "source") -> StageResult:
    """Compile `window` over `df`.

    `df` is a batch or a streaming DataFrame, or several named ones
    (``{"name": DataFrame}``) whose rows are unioned by column name (each
    source's name goes into its dead letters); on a stream each source gets
    its own watermark and windows close on their minimum. The output of a
    stream is a streaming DataFrame in append mode.
    `df` must hold every column the window names; the event-time column is a
    timestamp (``TIMESTAMP_NTZ`` windows are wall-clock windows of that
    type), a string Spark can parse, or epoch milliseconds or microseconds
    when `event_time_unit` says so. Rows with a null or unparseable event
    time, a null key, a bad session gap, a time before the landmark or a
    value an aggregation cannot read as a number are not aggregated: they
    are in `dead_letter` with a reason, and the file each was read from
    (a batch's dead letters are planned when asked for, so that the
    output's plan needs no file names).

    Raises InputError when `df` is not a Spark DataFrame (a pandas one:
    ``spark.createDataFrame(df)`` makes one), ConfigError (missing column,
    bad event-time type, alias colliding with an input column of a rolling
    window; on a stream, a missing `max_groups_per_window` or a feature
    streams cannot have). Cap
    violations (`max_groups_per_window`, `max_distinct_values_per_group`)
    fail when the output is computed; see `wid.spark.errors.translate`.
    """
    for name, frame in (df.items() if isinstance(df, Mapping) else [("df", df)]):
        check_spark_frame(frame, name)
        warn_once(frame.sparkSession)
    return compile_window(df, window, pipeline=pipeline, source=source, files=False).result


def aggregate(df: DataFrame | Mapping[str, DataFrame], window: Window, *, pipeline: str = "wid") -> DataFrame:
    """The windowed aggregation of `df` (see `window_result`).

    Rows rejected as bad input are not in the result; call `window_result`
    to receive them, with reasons, as a dead-letter DataFrame.
    """
    return window_result(df, window, pipeline=pipeline).output


def join_result(left: DataFrame, right: DataFrame, join: WindowJoin, *, left_source: str = "left",
                right_source: str = "right") -> StageResult:
    """Compile `join` over two DataFrames; see `window_join`."""
    check_spark_frame(left, "left")
    check_spark_frame(right, "right")
    warn_once(left.sparkSession)
    return compile_join(left, right, join, left_source=left_source, right_source=right_source).result


def window_join(left: DataFrame, right: DataFrame, join: WindowJoin | None = None, *,
                window: tuple[int, int] | None = None, metrics: Sequence[Metric | str] = (),
                matching_column: object = None, time_column: object = None, use_system_time: bool = False,
                max_delayed_time: int | None = None, garbage_size: int = 5000,
                null_fill: dict[str, str | int | float | bool] | None = None, sort_by_time: bool = False,
                time_unit: str = "timestamp", late_data: str = "drop") -> DataFrame:
    """For each left row at time t, `metrics` over the right rows with the
    same `matching_column` and a time in ``[t + a, t + b]`` (`window` =
    (a, b) in milliseconds, both ends in; (0, 0) is ``[t_prev, t)``).
    DolphinDB's `createWindowJoinEngine` parameters, in snake_case, as
    keywords, or a `WindowJoin` spec as `join` (as `aggregate` takes a
    `Window`); see `wid.spec.join.WindowJoin` for each and
    `wid.semantics.window_join` for the exact semantics.

    `left` and `right` are DataFrames (both batch, or both streams: then
    the join runs on the WID operator with DolphinDB's trigger rules, see
    `wid.semantics.window_join_stream`, and the output is an append-only
    stream) holding the matching and time columns (a timestamp, or epoch
    ``ms``/``us`` integers by `time_unit`) and the right columns the
    metrics read. Output columns: the left time column (or
    ``system_time``), the matching columns (left names), the other left
    columns in input order, then the metrics by alias. One row per left
    row, or per matching right row with a `ColumnMetric` (or a plain column
    name) and a window other than (0, 0).

    Rows with a NULL time or key are not joined (`join_result` returns them
    with a reason). Raises ConfigError naming the field: bad parameters,
    both a spec and keywords, missing columns, an alias colliding with a
    left column, a `null_fill` value of the wrong type.

    Example: each trade with the quotes of the 2 seconds around it::

        wid.window_join(trades, quotes, window=(-2000, 2000), matching_column="sym",
                        time_column="time", metrics=[Aggregation("avg", "bid", as_="avg_bid")])
    """
    if join is None:
        join = WindowJoin(window=window, metrics=tuple(ColumnMetric(m) if isinstance(m, str) else m for m in metrics),  # type: ignore[arg-type]
                          matching_column=matching_column, time_column=time_column, time_unit=time_unit,  # type: ignore[arg-type]
                          use_system_time=use_system_time, max_delayed_time=max_delayed_time,
                          garbage_size=garbage_size, null_fill=dict(null_fill or {}), sort_by_time=sort_by_time,
                          late_data=late_data)  # type: ignore[arg-type]
    elif window is not None or metrics or matching_column is not None:
        raise ConfigError("join", "give a WindowJoin spec or its parameters as keywords, not both",
                          "drop the keywords, or the spec")
    return join_result(left, right, join).output


__all__ = ["JoinResult", "WindowResult", "aggregate", "check_spark_frame", "join_result", "window_join", "window_result"]
