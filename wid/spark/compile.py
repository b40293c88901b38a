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
``session_window()``) is never chosen, even where it would be faster
(docs/architecture.md#execution-paths): by default it judges the late rows
of micro-batch b on the watermark of micro-batch b-1; with
``spark.sql.streaming.statefulOperator.allowMultiple`` off it judges them on
the evicting watermark, but it still drops them after its partial
aggregation, where no count of rows exists (``numRowsDroppedByWatermark``
counts partial groups), so the accounting identity could not hold; and it
keeps a session row whose end passes the watermark, where the rule drops it.
The path is a speed choice only, and the operator runs every window kind,
late-data policy and emit mode.

The plans never import this module; pipelines (`wid.pipelines`) call
`compile_window` and `compile_join`, which also hand them what a run needs
beyond the public result (`Compiled`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, reduce
from typing import Any

from pyspark.sql import Column, DataFrame

from wid.errors import ConfigError
from wid.semantics.sink_state import join_natural_key, natural_key
from wid.semantics.trigger import check_stream
from wid.spark import arrow_merge, real_time
from wid.spark.batch import compile_batch
from wid.spark.columns import PREFIX, REASON, as_wall_clock, wall_clock
from wid.spark.execution import BATCH, OPERATOR, Execution
from wid.spark.join import FORM as BATCH_JOIN_FORM
from wid.spark.join import WHY as BATCH_JOIN_WHY
from wid.spark.join import batch_join, check_aliases, prepare_side
from wid.spark.operator import join_query
from wid.spark.operator.changelog import changes_of
from wid.spark.operator.query import (
    COMBINE_CONF,
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
)
from wid.spec.join import WindowJoin
from wid.spec.window import Window

WHY_OPERATOR = ("a streaming DataFrame: the WID operator judges each micro-batch against the closing points before "
                "it, as the documented rule says, and counts every late row (Spark's streaming aggregation judges "
                "late rows on an older watermark unless allowMultiple is off, never counts them per row, and closes "
                "sessions by another rule)")


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
    - `explain`: how it runs and why (`wid.spark.execution.Execution`).

    The dead-letter DataFrame is built on first use (`dead_letter_of`):
    building a DataFrame costs the driver a round of Spark's analysis, which
    `aggregate` callers, who never read it, should not pay.
    """

    output: DataFrame
    dead_letter_of: Callable[[], DataFrame] = field(repr=False)
    explain: Execution

    @cached_property
    def dead_letter(self) -> DataFrame:
        """The rejected (and, with ``dlq``, late) rows; see above."""
        return self.dead_letter_of()


@dataclass(frozen=True)
class StreamStage:
    """What the one ``foreachBatch`` writer (`wid.pipelines.write`) needs of
    a stage on the WID operator: the operator's output `rows`, and how each
    micro-batch of them gives the sink's rows, the natural keys to delete
    (session retractions) and the dead letters; for a window emitted more
    than once (`Window.reemits`), how they give its changelog
    (`wid.spark.operator.changelog`). None of these asks Spark to analyse
    the rows, so they serve inside a declarative pipeline's query
    functions too (`wid.pipelines.declarative`)."""

    rows: DataFrame
    output_of: Callable[[DataFrame], DataFrame]
    dead_letters_of: Callable[[DataFrame], DataFrame]
    retractions_of: Callable[[DataFrame], DataFrame] | None = None
    cache_id: str | None = None  # the operator's host-local state cache, to remove when the query ends
    changes_of: Callable[[DataFrame], DataFrame] | None = None
    operator: Any = None  # the operator's `wid.kernels.operator.layout.OperatorSpec` (a window's; ``wid status`` reads its state)


@dataclass(frozen=True)
class Compiled:
    """A stage and what running it needs: the public `result`; in batch,
    the input rows with wid's reject reason (its accounting: ``_wid_reason``
    NULL for a row that went on; None on a stream, whose operator prepares
    each source once and counts its rows itself); the punctuation rows; on a
    stream, the operator's `stream`; the sink's `natural_key` (the output
    columns that identify a row)."""

    result: StageResult
    prepared: DataFrame | None
    natural_key: list[str]
    punctuations: DataFrame | None = None
    stream: StreamStage | None = field(default=None)

    @property
    def operator(self) -> DataFrame | None:
        """The WID operator's output rows, on a stream."""
        return None if self.stream is None else self.stream.rows


SETTINGS = (arrow_merge.CONF, SHARDS_CONF, STATE_CACHE_CONF, COMBINE_CONF)  # the session settings that shape a plan


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
                   source: str = "source", state_cache: bool = False, files: bool = True,
                   configure: bool = True) -> Compiled:
    """`window` over `df` (see `window_result`), on the path the module
    docstring names, with what a pipeline needs to run it. On a stream,
    `state_cache`: whoever runs it removes the operator's host-local state
    cache when the query ends (`wid.spark.operator.query.through_shards`);
    `configure`: the session gets the state store settings the operator
    needs (else whoever starts the query sets them on it:
    `wid.spark.operator.query.operator_layout`).
    On a batch, `files`: the prepared rows (and so the output's plan) name
    the file each rejected row came from, for a pipeline that caches them
    and writes the dead letters from that cache; without, the dead letters
    are prepared anew, with the files, when asked for (`prepare.marked`)."""
    sources = dict(df) if isinstance(df, Mapping) else {source: df}
    if any(frame.isStreaming for frame in sources.values()):
        return _window_on_operator(sources, window, pipeline, state_cache, configure)
    marks = _marks(window)
    punctuations = _punctuations(sources, marks)
    if marks is not None:
        sources = {name: frame.where(~marks) for name, frame in sources.items()}
    prepared_by = {name: prepare(frame, window, files=files) for name, frame in sources.items()}
    prepared = _union(list(prepared_by.values()))
    planned = compile_batch(good_rows(prepared), numeric_window(prepared, window), pipeline)
    output = as_wall_clock(planned.output, window.output_prefix[:2], window.shape.time_zone) \
        if wall_clock(prepared, window) else planned.output
    how = planned.execution
    explained = Execution(BATCH, how.forms, how.why, how.notes + setting_notes(prepared))

    def rejected() -> DataFrame:
        named = prepared_by if files else {name: prepare(frame, window) for name, frame in sources.items()}
        return _union([dead_letters(p, name) for name, p in named.items()])
    return Compiled(StageResult(output, rejected, explained), prepared, natural_key(window, output.columns),
                    punctuations)


def _window_on_operator(sources: dict[str, DataFrame], window: Window, pipeline: str,
                        state_cache: bool, configure: bool = True) -> Compiled:
    """A stream on the WID operator, over the `sources` as read (it prepares
    them and splits off the punctuation rows in the same scan)."""
    check_streamable(window)
    cache_id = uuid.uuid4().hex if state_cache else None
    plan = compile_operator(sources, window, pipeline, cache_id, configure)
    wall = wall_clock(next(iter(sources.values())), window)
    windows = windows_of(plan.rows, window, wall, plan.columns)
    explained = Execution(OPERATOR, (f"WID operator ({plan.spec.shards} shards, vectorised state per shard)",),
                          WHY_OPERATOR, setting_notes(plan.rows))
    stream = StreamStage(plan.rows, lambda rows: windows_of(rows, window, wall, plan.columns),
                         lambda rows: dead_letters_of(rows, window, plan.columns),
                         (lambda rows: retractions_of(rows, window, wall)) if window.shape.retracts else None,
                         cache_id, (lambda rows: changes_of(rows, window, wall, plan.columns)) if window.reemits else None,
                         plan.spec)
    result = StageResult(windows, lambda: dead_letters_of(plan.rows, window, plan.columns), explained)
    return Compiled(result, None, natural_key(window, windows.columns), _punctuations(sources, _marks(window)), stream)


def compile_real_time(df: DataFrame, window: Window, *, source: str = "source") -> Compiled:
    """A Window that fits Spark's real-time mode (`wid.spec.real_time`) over
    its Kafka source, on Spark's own aggregation (`wid.spark.real_time`)."""
    prepared, output, dead = real_time.real_time_plan(df, window, source=source)
    explained = Execution(real_time.PATH, (real_time.FORM,), real_time.WHY, real_time.NOTES)
    return Compiled(StageResult(output, lambda: dead, explained), prepared, natural_key(window, output.columns))


def check_streamable(window: Window) -> None:
    """Raise ConfigError naming the field when `window` cannot run on a
    stream: what its trigger policy refuses there
    (`wid.semantics.trigger.stream_problems`: an emit mode its kind has not,
    reopen where no row can be late, ranks by order that do not follow the
    event time), and without `max_groups_per_window`, mandatory
    (docs/semantics.md#completeness)."""
    check_stream(window)
    if window.max_groups_per_window is None:
        raise ConfigError("max_groups_per_window", "is mandatory on a stream (state must be bounded)",
                          "set max_groups_per_window to the most groups one window may hold")


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
                             Execution(BATCH, (BATCH_JOIN_FORM,), BATCH_JOIN_WHY, notes + setting_notes(out)))
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
                         Execution(OPERATOR, (join_query.FORM,), join_query.WHY, notes + setting_notes(rows)))
    return Compiled(result, prepared, join_natural_key(join, out.columns), stream=stream)


__all__ = ["Compiled", "SETTINGS", "StageResult", "StreamStage", "check_streamable", "compile_join", "compile_real_time",
           "compile_window", "setting_notes"]
