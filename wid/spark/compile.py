"""How a window or a window join runs, chosen in one place
(docs/architecture.md#execution-paths), and the public `aggregate`,
`window_result` and `window_join`.

There are two paths, and the choice depends only on the input:

- a **batch** DataFrame runs the batch plans (`wid.spark.batch` for
  windows, `wid.spark.join` for window joins): plain DataFrame operations
  and vectorised Arrow passes; every window is complete at the end of the
  input;
- a **streaming** DataFrame runs on the **WID operator**
  (`wid.spark.operator.query`, `wid.spark.operator.join_query`), whatever
  the window: its shards judge the rows of each micro-batch against the
  closing points before it, as the documented rule says
  (`wid.semantics.stream_oracle`).

Spark's own streaming aggregation (``withWatermark`` with ``window()`` or
``session_window()``) is never chosen, even where it would be faster: Spark
filters the late rows of micro-batch b with the watermark that governed
micro-batch b-1 (its watermark for late events trails its watermark for
eviction by one micro-batch), so a row behind the watermark still counts in
a window the rule has already closed, and late counts, window values and
dead letters would depend on the path. The path is a speed choice only, and
the operator runs every window kind, late-data policy and emit mode.

The plans never import this module; pipelines (`wid.pipelines`) call
`compile_window` and `compile_join`, which also hand them what a run needs
beyond the public result (`Compiled`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, reduce

from pyspark.sql import Column, DataFrame

from wid.errors import ConfigError
from wid.semantics.sink_state import join_natural_key, natural_key
from wid.spark import arrow_merge, real_time
from wid.spark.batch import compile_batch
from wid.spark.columns import PREFIX, REASON, as_wall_clock
from wid.spark.join import FORM as BATCH_JOIN_FORM
from wid.spark.join import WHY as BATCH_JOIN_WHY
from wid.spark.join import batch_join, check_aliases, prepare_side
from wid.spark.operator import join_query
from wid.spark.operator.query import (
    SHARDS_CONF,
    STATE_CACHE_CONF,
    compile_operator,
    dead_letters_of,
    retractions_of,
    windows_of,
)
from wid.spark.prepare import (
    dead_letters,
    good_rows,
    numeric_window,
    prepare,
    punctuation_mark,
    wall_clock,
)
from wid.spec.join import ColumnMetric, Metric, WindowJoin
from wid.spec.window import Window

BATCH = "batch"
OPERATOR = "operator"
WHY_OPERATOR = ("a streaming DataFrame: the WID operator judges each micro-batch against the closing points before "
                "it, as the documented rule says (Spark's streaming aggregation judges late rows one micro-batch "
                "late, and would change results)")


@dataclass(frozen=True)
class Explained:
    """How a stage runs: the `path` (``"batch"`` or ``"operator"``), the
    execution `form`, `why` it was chosen, and `notes` (costs, settings
    that shaped the plan, ways the configuration may lose data)."""

    path: str
    form: str
    why: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class StageResult:
    """A compiled window or window join.

    - `output`: the window rows (the columns) or the
      joined rows (`window_join`'s); a streaming DataFrame in append mode on
      a stream;
    - `dead_letter`: rejected rows and, with ``late_data = "dlq"`` on a
      stream, late rows: ``reason`` (string), ``source`` (string),
      ``source_file`` (string or NULL), ``row_json`` (the original row as
      JSON, or a malformed record's raw text);
    - `explain`: how it runs and why (`Explained`).

    The dead-letter DataFrame is built on first use (`dead_letter_of`):
    building a DataFrame costs the driver a round of Spark's analysis, which
    `aggregate` callers, who never read it, should not pay.
    """

    output: DataFrame
    dead_letter_of: Callable[[], DataFrame] = field(repr=False)
    explain: Explained

    @cached_property
    def dead_letter(self) -> DataFrame:
        """The rejected (and, with ``dlq``, late) rows; see above."""
        return self.dead_letter_of()


WindowResult = StageResult
JoinResult = StageResult


@dataclass(frozen=True)
class StreamStage:
    """What the one ``foreachBatch`` writer (`wid.pipelines.write`) needs of
    a stage on the WID operator: the operator's output `rows`, and how each
    micro-batch of them gives the sink's rows, the natural keys to delete
    (session retractions) and the dead letters."""

    rows: DataFrame
    output_of: Callable[[DataFrame], DataFrame]
    dead_letters_of: Callable[[DataFrame], DataFrame]
    retractions_of: Callable[[DataFrame], DataFrame] | None = None
    cache_id: str | None = None  # the operator's host-local state cache, to remove when the query ends


@dataclass(frozen=True)
class Compiled:
    """A stage and what running it needs: the public `result`; the input
    rows with wid's reject reason (batch accounting: ``_wid_reason`` NULL
    for a row that went on); the punctuation rows; on a stream, the
    operator's `stream`; the sink's `natural_key` (the output columns that
    identify a row)."""

    result: StageResult
    prepared: DataFrame
    natural_key: list[str]
    punctuations: DataFrame | None = None
    stream: StreamStage | None = field(default=None)

    @property
    def operator(self) -> DataFrame | None:
        """The WID operator's output rows, on a stream."""
        return None if self.stream is None else self.stream.rows


SETTINGS = (arrow_merge.CONF, SHARDS_CONF, STATE_CACHE_CONF)  # the session settings that shape a plan


def setting_notes(df: DataFrame) -> tuple[str, ...]:
    """One note per `SETTINGS` entry the session sets, so that `explain`
    shows every setting that changed the plan from its default."""
    conf = df.sparkSession.conf
    return tuple(f"setting {name} = {conf.get(name)}" for name in SETTINGS if conf.get(name, None) is not None)


def _union(frames: Sequence[DataFrame]) -> DataFrame:
    return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)


def _marks(window: Window) -> Column | None:
    """True for `window`'s punctuation rows (`punctuation_mark`); None without a punctuation."""
    return None if window.punctuation is None else punctuation_mark(window.punctuation.predicate)


def _punctuations(sources: Mapping[str, DataFrame], marks: Column | None) -> DataFrame | None:
    """The punctuation rows of the `sources` (`marks`: `_marks`)."""
    return None if marks is None else _union([frame.where(marks) for frame in sources.values()])


def compile_window(df: DataFrame | Mapping[str, DataFrame], window: Window, *, pipeline: str = "wid",
                   source: str = "source", state_cache: bool = False, files: bool = True) -> Compiled:
    """`window` over `df` (see `window_result`), on the path the module
    docstring names, with what a pipeline needs to run it. On a stream,
    `state_cache`: whoever runs it removes the operator's host-local state
    cache when the query ends (`wid.spark.operator.query.through_shards`).
    On a batch, `files`: the prepared rows (and so the output's plan) name
    the file each rejected row came from, for a pipeline that caches them
    and writes the dead letters from that cache; without, the dead letters
    are prepared anew, with the files, when asked for (`prepare.marked`)."""
    sources = dict(df) if isinstance(df, Mapping) else {source: df}
    if any(frame.isStreaming for frame in sources.values()):
        return _window_on_operator(sources, window, pipeline, state_cache)
    marks = _marks(window)
    punctuations = _punctuations(sources, marks)
    if marks is not None:
        sources = {name: frame.where(~marks) for name, frame in sources.items()}
    prepared_by = {name: prepare(frame, window, files=files) for name, frame in sources.items()}
    prepared = _union(list(prepared_by.values()))
    planned = compile_batch(good_rows(prepared), numeric_window(prepared, window), pipeline)
    output = as_wall_clock(planned.output, window.output_prefix[:2]) if wall_clock(prepared, window) else planned.output
    explained = Explained(BATCH, planned.form, planned.why, planned.notes + setting_notes(prepared))

    def rejected() -> DataFrame:
        named = prepared_by if files else {name: prepare(frame, window) for name, frame in sources.items()}
        return _union([dead_letters(p, name) for name, p in named.items()])
    return Compiled(StageResult(output, rejected, explained), prepared, natural_key(window, output.columns),
                    punctuations)


def _window_on_operator(sources: dict[str, DataFrame], window: Window, pipeline: str,
                        state_cache: bool) -> Compiled:
    """A stream on the WID operator, over the `sources` as read (it prepares
    them and splits off the punctuation rows in the same scan)."""
    check_streamable(window)
    cache_id = uuid.uuid4().hex if state_cache else None
    plan = compile_operator(sources, window, pipeline, cache_id)
    wall = wall_clock(next(iter(sources.values())), window)
    windows = windows_of(plan.rows, window, wall)
    explained = Explained(OPERATOR, f"WID operator ({plan.spec.shards} shards, vectorised state per shard)",
                          WHY_OPERATOR, setting_notes(plan.rows))
    stream = StreamStage(plan.rows, lambda rows: windows_of(rows, window, wall),
                         lambda rows: dead_letters_of(rows, window),
                         (lambda rows: retractions_of(rows, window, wall)) if window.definition.retracts else None,
                         cache_id)
    prepared = _union([prepare(frame, window) for frame in sources.values()])
    result = StageResult(windows, lambda: dead_letters_of(plan.rows, window), explained)
    return Compiled(result, prepared, natural_key(window, windows.columns),
                    _punctuations(sources, _marks(window)), stream)


def compile_real_time(df: DataFrame, window: Window, *, source: str = "source") -> Compiled:
    """A Window that fits Spark's real-time mode (`wid.spec.real_time`) over
    its Kafka source, on Spark's own aggregation (`wid.spark.real_time`)."""
    prepared, output, dead = real_time.real_time_plan(df, window, source=source)
    explained = Explained(real_time.PATH, real_time.FORM, real_time.WHY, real_time.NOTES)
    return Compiled(StageResult(output, lambda: dead, explained), prepared, natural_key(window, output.columns))


def check_streamable(window: Window) -> None:
    """Raise ConfigError naming the field when `window` cannot run on a
    stream: `max_groups_per_window` is mandatory (docs/semantics.md#completeness)."""
    if window.max_groups_per_window is None:
        raise ConfigError("max_groups_per_window", "is mandatory on a stream (state must be bounded)",
                          "set max_groups_per_window to the most groups one window may hold")


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

    Raises ConfigError (missing column, bad event-time type, alias colliding
    with an input column of a rolling window; on a stream, a missing
    `max_groups_per_window` or a feature streams cannot have). Cap
    violations (`max_groups_per_window`, `max_distinct_values_per_group`)
    fail when the output is computed; see `wid.spark.errors.translate`.
    """
    return compile_window(df, window, pipeline=pipeline, source=source, files=False).result


def aggregate(df: DataFrame | Mapping[str, DataFrame], window: Window, *, pipeline: str = "wid") -> DataFrame:
    """The windowed aggregation of `df` (see `window_result`).

    Rows rejected as bad input are not in the result; call `window_result`
    to receive them, with reasons, as a dead-letter DataFrame.
    """
    return window_result(df, window, pipeline=pipeline).output


def compile_join(left: DataFrame, right: DataFrame, join: WindowJoin, *, left_source: str = "left",
                 right_source: str = "right", state_cache: bool = False) -> Compiled:
    """`join` over two DataFrames (see `window_join`), on the path the
    module docstring names, with what a pipeline needs to run it; the dead
    letters name each side by `left_source` / `right_source`. On a stream,
    `state_cache`: whoever runs it removes the operator's host-local state
    cache when the query ends (`wid.spark.operator.query.through_shards`)."""
    lp, rp = prepare_side(left, join, "left"), prepare_side(right, join, "right")
    columns = [c for c in left.columns if not c.startswith(PREFIX)]
    check_aliases(join, columns)
    prepared = lp.select(REASON).unionByName(rp.select(REASON))
    if not (left.isStreaming or right.isStreaming):
        out, notes = batch_join(lp, rp, join, columns)
        result = StageResult(out, lambda: dead_letters(lp, left_source).unionByName(dead_letters(rp, right_source)),
                             Explained(BATCH, BATCH_JOIN_FORM, BATCH_JOIN_WHY, notes + setting_notes(out)))
        return Compiled(result, prepared, join_natural_key(join, out.columns))
    join_query.check_stream_join(lp, rp, join)
    cache_id = uuid.uuid4().hex if state_cache else None
    rows = join_query.operator_rows(lp, rp, join, left_source=left_source, right_source=right_source,
                                    cache_id=cache_id)
    out = join_query.fired_output(rows, join, columns)
    notes = ("stream: a window fires when a right row of its key past its end arrives (or, with max_delayed_time, "
             "any right row past end + max_delayed_time); at the end of a stream unfired windows stay unfired",
             "stream: a key whose right side stops holds its pending left rows until max_delayed_time fires them; "
             "right rows per key are released above garbage_size")
    stream = StreamStage(rows, lambda batch: join_query.fired_output(batch, join, columns),
                         lambda batch: join_query.dead_letters_of(batch, join, left_source), cache_id=cache_id)
    result = StageResult(out, lambda: join_query.dead_letters_of(rows, join, left_source),
                         Explained(OPERATOR, join_query.FORM, join_query.WHY, notes + setting_notes(rows)))
    return Compiled(result, prepared, join_natural_key(join, out.columns), stream=stream)


def join_result(left: DataFrame, right: DataFrame, join: WindowJoin, *, left_source: str = "left",
                right_source: str = "right") -> StageResult:
    """Compile `join` over two DataFrames; see `window_join`."""
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


__all__ = ["BATCH", "Compiled", "SETTINGS", "Explained", "JoinResult", "OPERATOR", "StageResult", "StreamStage", "WindowResult",
           "aggregate", "check_streamable", "compile_join", "compile_real_time", "compile_window", "join_result", "setting_notes",
           "window_join", "window_result"]
