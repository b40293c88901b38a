"""How a Window runs, chosen in one place (DESIGN.md section 6), and the
public `window_result` / `aggregate`.

There are two paths, and the choice depends only on the input:

- a **batch** DataFrame runs the batch plans (`wid.spark.batch`): plain
  DataFrame operations and vectorised Arrow passes; every window is complete
  at the end of the input;
- a **streaming** DataFrame runs on the **WID operator**
  (`wid.spark.operator`), whatever the Window: its shards judge the rows of
  each micro-batch against the closing points before it, as the documented
  rule says (`wid.semantics.stream_oracle`).

Spark's own streaming aggregation (``withWatermark`` with ``window()`` or
``session_window()``) is never chosen, even where it would be faster: Spark
filters the late rows of micro-batch b with the watermark that governed
micro-batch b-1 (its watermark for late events trails its watermark for
eviction by one micro-batch), so a row behind the watermark still counts in
a window the rule has already closed, and late counts, window values and
dead letters would depend on the path. The path is a speed choice only, and
the operator runs every window kind, late-data policy and emit mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wid.errors import ConfigError
from wid.spark.batch import compile_batch
from wid.spark.columns import as_wall_clock
from wid.spark.operator.plan import compile_operator, dead_letters_of, windows_of
from wid.spark.plan import Planned
from wid.spark.prepare import dead_letters, good_rows, numeric_window, prepare, wall_clock
from wid.spec.window import Window

BATCH = "batch"
OPERATOR = "operator"
WHY = {
    BATCH: "a batch DataFrame: every window is complete at the end of the input",
    OPERATOR: ("a streaming DataFrame: the WID operator judges each micro-batch against the closing points before "
               "it, as the documented rule says (Spark's streaming aggregation judges late rows one micro-batch "
               "late, and would change results)"),
}


@dataclass(frozen=True)
class WindowResult:
    """A compiled window stage.

    - `output`: the window rows (DESIGN.md section 3 columns).
    - `dead_letter`: rejected rows and, with ``late_data = "dlq"`` on a
      stream, late rows: ``reason`` (string), ``source`` (string),
      ``source_file`` (string or NULL), ``row_json`` (the original row as
      JSON, or a malformed record's raw text).
    - `prepared`: the data rows with wid's ``_wid_reason`` column, for
      counting (accounting identity, DESIGN.md section 5).
    - `planned`: the execution form, why, and notes, for `wid explain`.
    - `path`: ``"batch"`` or ``"operator"`` (see the module docstring).
    - `punctuations`: the rows the window's punctuation predicate marks.
      They are never aggregated and are not data rows: in batch every
      window is complete at the end of input, so they close nothing.
    - `operator`: on a stream, the WID operator's output rows of every kind
      (windows, retractions, late and rejected rows, counts; see
      `wid.spark.operator.output`), which a pipeline writes in one query.
    """

    output: DataFrame
    dead_letter: DataFrame
    prepared: DataFrame
    planned: Planned
    path: str = BATCH
    punctuations: DataFrame | None = None
    operator: DataFrame | None = None


def window_result(df: DataFrame | Mapping[str, DataFrame], window: Window, *, pipeline: str = "wid",
                  source: str = "source") -> WindowResult:
    """Compile `window` over `df`, on the path the module docstring names.

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
    are in `dead_letter` with a reason.

    Raises ConfigError (missing column, bad event-time type, alias colliding
    with an input column of a rolling window; on a stream, a missing
    `max_groups_per_window` or a feature streams cannot have). Cap
    violations (`max_groups_per_window`, `max_distinct_values_per_group`)
    fail when the output is computed; see `wid.spark.errors.translate`.
    """
    sources = dict(df) if isinstance(df, Mapping) else {source: df}
    if any(frame.isStreaming for frame in sources.values()):
        return _on_operator(sources, window, pipeline)
    punctuation_rows, prepared_by = [], {}
    for name, frame in sources.items():
        if window.punctuation is not None:
            marked = F.coalesce(F.expr(window.punctuation.predicate), F.lit(False))
            punctuation_rows.append(frame.where(marked))
            frame = frame.where(~marked)
        prepared_by[name] = prepare(frame, window)
    prepared = _union(list(prepared_by.values()))
    dead = _union([dead_letters(p, name) for name, p in prepared_by.items()])
    planned = compile_batch(good_rows(prepared), numeric_window(prepared, window), pipeline)
    if wall_clock(prepared, window):
        planned = Planned(as_wall_clock(planned.output, window.output_prefix[:2]), planned.form, planned.why,
                          planned.notes)
    punctuations = _union(punctuation_rows) if punctuation_rows else None
    return WindowResult(planned.output, dead, prepared, planned, BATCH, punctuations)


def _on_operator(sources: dict[str, DataFrame], window: Window, pipeline: str) -> WindowResult:
    """A stream on the WID operator, over the `sources` as read (it prepares
    them and splits off the punctuation rows in the same scan)."""
    check_streamable(window)
    plan = compile_operator(sources, window, pipeline)
    first = next(iter(sources.values()))
    windows = windows_of(plan.rows, window, wall_clock(first, window))
    planned = Planned(windows, f"WID operator ({plan.spec.shards} shards, vectorised state per shard)",
                      WHY[OPERATOR])
    prepared = _union([prepare(frame, window) for frame in sources.values()])
    punctuations = None
    if window.punctuation is not None:
        marked = F.coalesce(F.expr(window.punctuation.predicate), F.lit(False))
        punctuations = _union([frame.where(marked) for frame in sources.values()])
    return WindowResult(windows, dead_letters_of(plan.rows, window), prepared, planned, OPERATOR, punctuations,
                        operator=plan.rows)


def _union(frames: list[DataFrame]) -> DataFrame:
    return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)


def check_streamable(window: Window) -> None:
    """Raise ConfigError naming the field when `window` cannot run on a
    stream: `max_groups_per_window` is mandatory (DESIGN.md section 5)."""
    if window.max_groups_per_window is None:
        raise ConfigError("max_groups_per_window", "is mandatory on a stream (state must be bounded)",
                          "set max_groups_per_window to the most groups one window may hold")


def aggregate(df: DataFrame | Mapping[str, DataFrame], window: Window, *, pipeline: str = "wid") -> DataFrame:
    """The windowed aggregation of `df` (see `window_result`).

    Rows rejected as bad input are not in the result; call `window_result`
    to receive them, with reasons, as a dead-letter DataFrame.
    """
    return window_result(df, window, pipeline=pipeline).output


__all__ = ["BATCH", "OPERATOR", "WHY", "WindowResult", "aggregate", "check_streamable", "window_result"]
