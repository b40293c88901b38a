"""`aggregate` and `window_result`: a Window over a batch Spark DataFrame,
compiled to plain DataFrame operations (DESIGN.md section 6). No Python runs
per row or per key; Spark's own operators do all the work."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import reduce

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from wid.errors import ConfigError
from wid.spark import streaming
from wid.spark.columns import CORRUPT, PREFIX, REASON
from wid.spark.count_windows import count_windows
from wid.spark.operator.engines import KINDS as OPERATOR_KINDS
from wid.spark.operator.plan import compile_operator, late_rows_of, windows_of
from wid.spark.plan import Ctx, Planned, enforce_group_cap
from wid.spark.prepare import prepare
from wid.spark.rolling import rolling
from wid.spark.sessions import sessions
from wid.spark.time_windows import hopping, landmark, tumbling
from wid.spec.window import Window

PLANS: dict[str, Callable[[Ctx], Planned]] = {
    "tumbling": tumbling, "hopping": hopping, "landmark": landmark,
    "session": sessions, "count": count_windows, "rolling": rolling,
}
DEAD_LETTER_COLUMNS = ("reason", "source", "source_file", "row_json")
PATH_CONF = "spark.wid.streaming.path"  # "auto" (default) or "operator": run every stream on the WID operator


@dataclass(frozen=True)
class WindowResult:
    """A compiled window stage.

    - `output`: the window rows (DESIGN.md section 3 columns).
    - `dead_letter`: rejected rows: ``reason`` (string), ``source``
      (string), ``source_file`` (string or NULL), ``row_json`` (the
      original row as JSON).
    - `prepared`: the data rows with wid's ``_wid_reason`` column, for
      counting (accounting identity, DESIGN.md section 5).
    - `planned`: the execution form, why, and notes, for `wid explain`.
    - `punctuations`: the rows the window's punctuation predicate marks.
      They are never aggregated and are not data rows: in batch every
      window is complete at the end of input, so they close nothing.
    - `operator`: on a stream run by the WID operator, its output rows of
      every kind (windows, retractions, late rows, counts; see
      `wid.spark.operator.output`), which a pipeline writes in one query,
      and `rejected`, the rows rejected as bad input (`dead_letter` holds
      them and the late rows the operator sent to the dead letter).
    """

    output: DataFrame
    dead_letter: DataFrame
    prepared: DataFrame
    planned: Planned
    punctuations: DataFrame | None = None
    operator: DataFrame | None = None
    rejected: DataFrame | None = None


def window_result(df: DataFrame | Mapping[str, DataFrame], window: Window, *, pipeline: str = "wid",
                  source: str = "source") -> WindowResult:
    """Compile `window` over the batch DataFrame `df`.

    `df` is a batch or a streaming DataFrame, or several named ones
    (``{"name": DataFrame}``) whose rows are unioned by column name (each
    source's name goes into its dead letters); on a stream each source gets
    its own watermark and the window stage runs on their minimum. On a stream the window runs on
    Spark's own streaming operators (`wid.spark.streaming`), the output is a
    streaming DataFrame to write in `wid.spark.streaming.output_mode(window)`,
    and `max_groups_per_window` is enforced by the pipeline's sink writer.
    `df` must hold every column the window names; the event-time column is a
    timestamp (or a string Spark can parse), or epoch milliseconds or
    microseconds when `event_time_unit` says so. Rows with a null or
    unparseable event time, a null key, a bad session gap or a time before
    the landmark are not aggregated: they are in `dead_letter` with a reason.

    Raises ConfigError (missing column, bad event-time type, alias colliding
    with an input column of a rolling window; on a stream, a feature that
    needs the WID operator or a missing `max_groups_per_window`). Cap violations (`max_groups_per_window`,
    `max_distinct_values_per_group`) fail when the output is computed; see
    `wid.spark.errors.translate`.
    """
    sources = dict(df) if isinstance(df, Mapping) else {source: df}
    punctuation_rows, prepared_by = [], {}
    for name, frame in sources.items():
        if window.punctuation is not None:
            marked = F.coalesce(F.expr(window.punctuation.predicate), F.lit(False))
            punctuation_rows.append(frame.where(marked))
            frame = frame.where(~marked)
        prepared_by[name] = prepare(frame, window)
    punctuations = _union(punctuation_rows) if punctuation_rows else None
    prepared = _union(list(prepared_by.values()))
    dead = _union([dead_letters(p, name) for name, p in prepared_by.items()])
    if any(frame.isStreaming for frame in sources.values()):
        by_source = dict(zip(sources, punctuation_rows, strict=True)) if punctuation_rows else {}
        return _stream_result(sources, prepared_by, by_source, dead, window, pipeline)
    planned = PLANS[window.kind](Ctx(window, _good(prepared), pipeline))
    output = enforce_group_cap(planned.output, window, pipeline)
    planned = Planned(output, planned.form, planned.why, planned.notes)
    return WindowResult(output, dead, prepared, planned, punctuations)


def _stream_result(sources: dict[str, DataFrame], prepared_by: dict[str, DataFrame],
                   punctuations_by: dict[str, DataFrame], dead: DataFrame, window: Window,
                   pipeline: str) -> WindowResult:
    """A stream: Spark's own operators where they give the declared
    semantics, else the WID operator (`wid.spark.operator`) over the
    `sources` as read (it prepares them and splits off the punctuation rows
    in the same scan)."""
    check_streamable(window)
    prepared = _union(list(prepared_by.values()))
    punctuations = _union(list(punctuations_by.values())) if punctuations_by else None
    dead = dead.observe(streaming.REJECTED, F.count(F.lit(1)).alias("rows"))
    problem = streaming.native_problem(window)
    first = next(iter(prepared_by.values()))
    if problem is None and first.sparkSession.conf.get(PATH_CONF, "auto") == "operator":
        problem = (PATH_CONF, f"{PATH_CONF} = operator")
    if problem is not None:
        plan = compile_operator(sources, window, pipeline)
        windows = windows_of(plan.rows, window)
        planned = Planned(windows, f"WID operator ({plan.spec.shards} shards, vectorised pane state)",
                          f"{problem[1]} needs it")
        dead_letter = dead.unionByName(late_rows_of(plan.rows)) if window.late_data == "dlq" else dead
        return WindowResult(windows, dead_letter, prepared, planned, punctuations, operator=plan.rows, rejected=dead)
    good = _union([streaming.with_event(_good(p), window.lateness_ms) for p in prepared_by.values()])
    good = good.observe(streaming.GOOD, F.count(F.lit(1)).alias("rows"))
    planned = streaming.PLANS[window.kind](Ctx(window, good, pipeline))
    return WindowResult(planned.output, dead, prepared, planned, punctuations)


def _good(prepared: DataFrame) -> DataFrame:
    return prepared.where(F.col(REASON).isNull()).drop(REASON)


def _union(frames: list[DataFrame]) -> DataFrame:
    return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)


def check_streamable(window: Window) -> None:
    """Raise ConfigError naming the field when `window` cannot run on a
    stream: `max_groups_per_window` is mandatory (DESIGN.md section 5), and
    a feature neither Spark's operators nor the WID operator runs is named."""
    problem = streaming.native_problem(window)
    if problem is not None and window.kind not in OPERATOR_KINDS:
        field, feature = problem
        raise ConfigError(field, f"{feature} is not supported on a stream in this release",
                          "run it in batch, or change the field")
    if window.max_groups_per_window is None:
        raise ConfigError("max_groups_per_window", "is mandatory on a stream (state must be bounded)",
                          "set max_groups_per_window to the most groups one window may hold")


def aggregate(df: DataFrame | Mapping[str, DataFrame], window: Window, *, pipeline: str = "wid") -> DataFrame:
    """The windowed aggregation of `df` (see `window_result`).

    Rows rejected as bad input are not in the result; call `window_result`
    to receive them, with reasons, as a dead-letter DataFrame.
    """
    return window_result(df, window, pipeline=pipeline).output


def dead_letters(prepared: DataFrame, source: str) -> DataFrame:
    """The rejected rows of a prepared DataFrame, in the dead-letter shape.
    ``source_file`` is the file a row was read from; NULL where there is
    none, and on a plan that reads several file sources (a join), over
    which Spark refuses ``input_file_name()`` (MULTI_SOURCES_UNSUPPORTED_FOR_EXPRESSION)."""
    originals = [c for c in prepared.columns if not c.startswith(PREFIX)]
    rejected = prepared.where(F.col(REASON).isNotNull())

    def shaped(file: Column) -> DataFrame:
        return rejected.select(F.col(REASON).alias("reason"), F.lit(source).alias("source"),
                               file.alias("source_file"), row_json(prepared, originals).alias("row_json"))
    # PySpark logs every AnalysisException of a DataFrame call at ERROR, with
    # the JVM's stack trace, before raising it: this one is expected and
    # handled, so its logger is quiet for the attempt.
    quiet = logging.getLogger("DataFrameQueryContextLogger")
    was, quiet.disabled = quiet.disabled, True
    try:
        return shaped(F.nullif(F.input_file_name(), F.lit("")))
    except AnalysisException:
        return shaped(F.lit(None).cast("string"))
    finally:
        quiet.disabled = was


def row_json(prepared: DataFrame, originals: list[str]) -> Column:
    """The original row as JSON, or the raw text of a malformed record."""
    parsed = F.to_json(F.struct(*originals), {"ignoreNullFields": "false"})
    return F.coalesce(F.col(CORRUPT), parsed) if CORRUPT in prepared.columns else parsed
