"""wid's windows in Spark Declarative Pipelines (``from pyspark import
pipelines as dp``, Spark 4.1 and later; docs/how-to/declarative-pipelines.md).

`window_datasets` declares, in the pipeline whose definitions are loading,
the datasets of one Window over one source (several named sources: one
watermark each, as `wid.window_result`):

On a stream (one stateful operator, its output fanned out):

    source ─► NAME_operator  streaming table: the WID operator's rows, every kind
              (the only stateful flow; windows, dead letters and counts in one micro-batch, one checkpoint)
                 ├─► NAME              streaming table: each window once, final (emit on_close)
                 │   or NAME_changes   streaming table: each emission and retraction (Window.reemits)
                 │      └─► NAME       materialized view: the latest value per natural key
                 ├─► NAME_dead_letter  streaming table: rejected rows (and late rows, late_data = "dlq")
                 ├─► NAME_accounting   streaming table: the counts of each shard and micro-batch
                 └─► NAME_sink         optional: the final windows, appended to a `dp.create_sink`

The flows after the operator's are stateless selections of its table, so
the operator's state exists once, and the windows, dead letters and counts
all come from the same micro-batches under one watermark. On a batch
source each of NAME, NAME_dead_letter and NAME_accounting is a
materialized view over wid's batch plans (`wid.spark.batch`).

What each emit mode and late-data policy becomes is `form_of`'s. Two
rules of Spark's shape the design: a pipeline's query function may not
ask Spark to analyse a DataFrame (``ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION``),
so the window is compiled here, when the definitions load, and the query
functions only return plans; and a definition file may not change the
session's settings (``SESSION_MUTATION_IN_DECLARATIVE_PIPELINE``), so the
state store the operator needs (`wid.spark.operator.query.store_settings`)
is set on its flow (``spark_conf``) instead.

``pyspark.pipelines`` is imported when a dataset is declared, not with this
module: on Spark 4.0, which has none, that says so in one line
(MissingDependencyError).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Literal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from wid.errors import ConfigError, MissingDependencyError
from wid.spark.api import check_spark_frame
from wid.spark.columns import REASON
from wid.spark.compile import Compiled, StreamStage, compile_window
from wid.spark.operator.changelog import latest_of
from wid.spark.operator.query import store_settings
from wid.spark.operator.rows import counts_of
from wid.spec.window import Window
from wid.versions import pip_install

# the accounting dataset's columns; rows_in = rows_rejected + rows_late_dropped + rows_late_dlq + rows_aggregated
ACCOUNTING = ("batch_time", "rows_in", "rows_rejected", "rows_late_dropped", "rows_late_dlq", "rows_aggregated",
              "punctuations", "watermark")
FormKind = Literal["batch", "append", "changelog"]


@dataclass(frozen=True)
class Form:
    """What a Window becomes in a declarative pipeline: `kind` (``batch``:
    materialized views; ``append``: a streaming table of final windows;
    ``changelog``: a streaming table of emissions and a materialized view of
    their latest values), and what the windows and dead-letter datasets
    hold, in words (docs/how-to/declarative-pipelines.md prints them)."""

    kind: FormKind
    windows: str
    dead_letter: str


def form_of(window: Window, streaming: bool) -> Form:
    """The `Form` `window` takes over a batch (``streaming = False``) or a
    streaming source. On a stream, a window emitted once (``emit =
    "on_close"``, ``late_data`` ``drop`` or ``dlq``) is appended when the
    watermark passes its end. One emitted more than once (`Window.reemits`:
    ``on_update``, ``reopen``, and a session's retractions under them) needs
    an upsert on its natural key: a streaming table only appends, and the
    upsert Spark offers in a pipeline (an AUTO CDC flow) runs only into a
    table whose connector supports MERGE (Spark refuses its own file
    tables: ``AUTOCDC_TARGET_DOES_NOT_SUPPORT_MERGE``). So its emissions are
    appended as a changelog (`wid.spark.operator.changelog`) and a
    materialized view holds the latest value of each window."""
    late = {"drop": "late rows are dropped and counted in the accounting",
            "dlq": "late rows are appended beside them, with their reason",
            "reopen": "late rows within allowed_lateness_ms reopen their window; later ones are dropped and counted"}
    if not streaming:
        return Form("batch", "materialized view: wid's batch plans, each window complete at the end of the input",
                    "materialized view: the rows rejected as bad input, with their reason")
    dead = f"streaming table: the rows rejected as bad input, with their reason; {late[window.late_data]}"
    if not window.reemits:
        return Form("append", "streaming table: each window appended once, final, when the watermark passes its end",
                    dead)
    what = "partial values (is_final false) and final ones" if window.emit == "on_update" else "final values"
    corrected = ", corrections" if window.late_data == "reopen" else ""
    retracted = ", retractions of sessions that merge or move their start" if window.shape.retracts else ""
    return Form("changelog", f"streaming table NAME_changes: each emission appended ({what}{corrected}{retracted}), "
                "ordered by _wid_seq; materialized view NAME: the latest value per natural key", dead)


@dataclass(frozen=True)
class Datasets:
    """The names of the datasets `window_datasets` declared: the windows,
    the dead letters, the accounting; on a stream the operator's rows, and
    the changelog of a window emitted more than once; the sink, if any."""

    windows: str
    dead_letter: str
    accounting: str
    operator: str | None = None
    changes: str | None = None
    sink: str | None = None


def _dp() -> ModuleType:
    """``pyspark.pipelines``, or MissingDependencyError naming the release
    that has it."""
    try:
        return importlib.import_module("pyspark.pipelines")
    except ImportError as err:
        import pyspark

        raise MissingDependencyError(f"Spark Declarative Pipelines (pyspark.pipelines, in Spark 4.1 and later; this is "
                                     f"PySpark {pyspark.__version__})", pip_install("pipelines")) from err


def window_datasets(name: str, source: DataFrame | Mapping[str, DataFrame], window: Window, *,
                    sink_format: str | None = None, sink_options: Mapping[str, str] | None = None) -> Datasets:
    """Declare the datasets of `window` over `source` in the declarative
    pipeline whose definitions are loading (the module docstring draws
    them): ``NAME`` (the windows, in the window's output columns),
    ``NAME_dead_letter`` (``reason``, ``source``, ``source_file``,
    ``row_json``, as `wid.window_result`'s), ``NAME_accounting``
    (`ACCOUNTING`: one row per shard and micro-batch on a stream, one row in
    batch), and on a stream ``NAME_operator`` and, for a window emitted more
    than once, ``NAME_changes`` (`form_of`). With `sink_format` (and
    `sink_options`: ``path`` and the format's options), the final windows
    are also appended to a sink of that format (``dp.create_sink``).

    Call it at the top level of a pipeline's Python file, with `source`
    built there (``spark.readStream...``; a stream needs
    `max_groups_per_window`): the window is compiled against the source's
    columns now, because a query function may not ask Spark for them.
    So the source is read from outside the pipeline (files, Kafka, a table
    it does not define).

    Raises MissingDependencyError on a Spark without
    ``pyspark.pipelines`` (4.0); InputError when `source` is not a Spark
    DataFrame; ConfigError as `wid.window_result` does, and naming ``emit``
    or ``late_data`` for a sink of a window emitted more than once (a sink
    appends: each window would be there once per emission, retracted
    sessions included). Datasets are named by `name` (Spark's rules for a
    table name)."""
    dp = _dp()
    sources = dict(source) if isinstance(source, Mapping) else {"source": source}
    for label, frame in sources.items():
        check_spark_frame(frame, label)
    form = form_of(window, any(frame.isStreaming for frame in sources.values()))
    if sink_format is not None:
        check_sink(name, window, form)
    compiled = compile_window(source, window, pipeline=name, files=False, configure=False)
    if compiled.stream is None:
        return _batch(dp, name, compiled)
    return _stream(dp, name, compiled, compiled.stream, form, sink_format, dict(sink_options or {}))


def check_sink(name: str, window: Window, form: Form) -> None:
    """Raise ConfigError unless the windows `name` of `window` (in `form`)
    can go to a sink: a sink flow appends a stream's rows, so a batch's
    windows (a materialized view) cannot feed one, and a window emitted
    more than once would be there once per emission, with the sessions it
    retracted (naming ``emit`` or ``late_data``)."""
    if form.kind == "batch":
        raise ConfigError("sink_format", f"{name}: a sink takes a stream's rows, and this source is a batch "
                          "(its windows are a materialized view)", "read the source as a stream, or drop the sink")
    if form.kind == "changelog":
        field = "emit" if window.emit == "on_update" else "late_data"
        raise ConfigError(field, f"{name}: a sink appends, and this window is emitted more than once ({form.windows})",
                          f"read {name}_changes instead, or emit = 'on_close' with late_data 'drop' or 'dlq'")


def _batch(dp: ModuleType, name: str, compiled: Compiled) -> Datasets:
    """Materialized views over the batch plans, each planned here (the dead
    letters too, which `wid.window_result` plans when first asked for): a
    query function may not ask Spark to analyse the source."""
    declared = Datasets(name, f"{name}_dead_letter", f"{name}_accounting")
    plans = {declared.windows: (compiled.result.output, f"wid: the windows of {name}"),
             declared.dead_letter: (compiled.result.dead_letter, f"wid: {name}'s dead letters"),
             declared.accounting: (_batch_accounting(compiled), f"wid: {name}'s row accounting")}
    for dataset, (plan, comment) in plans.items():
        dp.materialized_view(name=dataset, comment=comment)(lambda plan=plan: plan)
    return declared


def _stream(dp: ModuleType, name: str, compiled: Compiled, stage: StreamStage, form: Form,
            sink_format: str | None, sink_options: dict[str, str]) -> Datasets:
    """The operator's streaming table and the stateless flows that select
    its rows (the module docstring)."""
    spark = stage.rows.sparkSession
    changes = f"{name}_changes" if form.kind == "changelog" else None
    declared = Datasets(name, f"{name}_dead_letter", f"{name}_accounting", f"{name}_operator", changes,
                        f"{name}_sink" if sink_format else None)
    operator = str(declared.operator)

    def selected(select: Callable[[DataFrame], DataFrame]) -> Callable[[], DataFrame]:
        return lambda: select(spark.readStream.table(operator))

    dp.table(name=operator, spark_conf=store_settings(spark),
             comment=f"wid: the WID operator's rows of {name} (every kind, _wid_kind)")(lambda: stage.rows)
    if changes is not None and stage.changes_of is not None:
        dp.table(name=changes, comment=f"wid: each emission of {name}'s windows")(selected(stage.changes_of))
        columns, key = list(compiled.result.output.columns), compiled.natural_key
        dp.materialized_view(name=name, comment=f"wid: the latest value of each of {name}'s windows")(
            lambda: latest_of(spark.read.table(changes), key, columns))
    else:
        dp.table(name=name, comment=f"wid: the windows of {name}, each once, final")(selected(stage.output_of))
    dp.table(name=declared.dead_letter, comment=f"wid: {name}'s dead letters")(selected(stage.dead_letters_of))
    dp.table(name=declared.accounting, comment=f"wid: {name}'s row accounting")(selected(_stream_accounting))
    if declared.sink is not None:
        dp.create_sink(declared.sink, str(sink_format), sink_options)
        dp.append_flow(target=declared.sink, name=f"{name}_to_sink")(lambda: spark.readStream.table(name))
    return declared


def _stream_accounting(rows: DataFrame) -> DataFrame:
    """The operator's counts (`counts_of`, one row per shard and
    micro-batch) in the `ACCOUNTING` columns."""
    return _accounting(counts_of(rows), {
        "batch_time": F.timestamp_millis("batch_ms"), "rows_in": F.col("rows") + F.col("rejected"),
        "rows_rejected": F.col("rejected"), "rows_late_dropped": F.col("late_dropped"),
        "rows_late_dlq": F.col("late_dlq"), "rows_aggregated": F.col("aggregated"),
        "punctuations": F.col("punctuations"), "watermark": F.timestamp_micros("watermark_us")})


def _batch_accounting(compiled: Compiled) -> DataFrame:
    """A batch stage's counts in the `ACCOUNTING` columns (one row): every
    row in is rejected (``_wid_reason`` set) or aggregated; none is late."""
    if compiled.prepared is None:
        raise ValueError("a batch stage has its prepared rows (wid.spark.compile)")
    n, rejected = F.count(F.lit(1)), F.count(REASON)
    counts = compiled.prepared.agg(n.alias("rows_in"), rejected.alias("rejected"))
    marks = compiled.punctuations
    counts = counts.crossJoin(marks.agg(F.count(F.lit(1)).alias("punctuations"))) if marks is not None else \
        counts.withColumn("punctuations", F.lit(0).cast("long"))
    zero = F.lit(0).cast("long")
    return _accounting(counts, {
        "batch_time": F.current_timestamp(), "rows_in": F.col("rows_in"), "rows_rejected": F.col("rejected"),
        "rows_late_dropped": zero, "rows_late_dlq": zero, "rows_aggregated": F.col("rows_in") - F.col("rejected"),
        "punctuations": F.col("punctuations"), "watermark": F.lit(None).cast("timestamp")})


def _accounting(counts: DataFrame, values: dict[str, Column]) -> DataFrame:
    """`counts` projected to the `ACCOUNTING` columns, each from `values`
    (two timestamps, the counts BIGINT), in order."""
    return counts.select(*[values[n].alias(n) for n in ACCOUNTING])


__all__ = ["ACCOUNTING", "Datasets", "Form", "check_sink", "form_of", "window_datasets"]
