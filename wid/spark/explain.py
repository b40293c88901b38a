"""`wid explain`: for each stage, how it runs and why, its state bound, and
any way the configuration may lose or duplicate data (docs/architecture.md#execution-paths)."""

from __future__ import annotations

import contextlib
import io
import os
import re
from dataclasses import dataclass

from pyspark.sql import DataFrame

from wid.semantics.trigger import late_rows
from wid.spark import real_time
from wid.spark.arrow_merge import CONF as PANE_MERGE
from wid.spark.batch import outline_batch
from wid.spark.compile import SETTINGS, WHY_OPERATOR, StageResult
from wid.spark.execution import OPERATOR
from wid.spark.join import FORM as BATCH_JOIN_FORM
from wid.spark.join import WHY as BATCH_JOIN_WHY
from wid.spark.kinds import plan_of
from wid.spark.kinds.time import TimeWindowsPlan
from wid.spark.operator import join_query
from wid.spark.operator.query import COMBINE_CONF, SHARDS_CONF, switched_on
from wid.spark.spark_session import SHUFFLE_PARTITIONS, local_cores
from wid.spec.aggregation import Aggregation
from wid.spec.delivery import consumer_view
from wid.spec.pipeline import JoinPipelineSpec, PipelineSpec, SinkSpec, SourceSpec
from wid.spec.real_time import TRIGGER as REAL_TIME
from wid.spec.secrets import is_secret, scrub, url_password
from wid.spec.window import Window

GB = 1 << 30
HLL_BYTES = 1 << 13  # DataSketches HLL_4 at lgK 14: 2^14 four-bit registers
VALUE_BYTES = 16  # a rough size of one stored value


def state_bytes_per_group(agg: Aggregation) -> int | None:
    """Upper bound of one group's partial state in bytes; None when it grows
    with the rows of the extent (exact order statistics)."""
    if agg.agg == "count_distinct":
        return HLL_BYTES if agg.mode == "approximate" else (agg.max_distinct_values_per_group or 0) * VALUE_BYTES
    if agg.agg in ("med", "percentile"):
        return None
    if agg.agg in ("corr", "covar", "beta"):
        return 48
    if agg.agg in ("first", "last"):
        return 16 + VALUE_BYTES
    return 24


def active_windows(window: Window) -> int | None:
    """Windows a streaming run keeps open at once per group, or None when
    unbounded (sessions and landmark windows without max_duration_ms): the
    kind's (`wid.spark.kinds`)."""
    return plan_of(window).active_windows(window)


def state_bound(window: Window) -> tuple[int | None, str]:
    """docs/semantics.md#completeness: active windows x max groups x state per group."""
    per_group = [state_bytes_per_group(a) for a in window.aggregations]
    if any(b is None for b in per_group):
        return None, "unbounded: med/percentile keep every value of an open extent"
    size = sum(b or 0 for b in per_group)
    windows = active_windows(window)
    groups = window.max_groups_per_window
    if windows is None or groups is None:
        why = "max_groups_per_window is not set" if groups is None else f"{window.kind} windows have no fixed count"
        return None, f"{size} B per group; total not bounded ({why})"
    total = windows * groups * size
    # Measured on the streaming benchmark (benchmarks/HISTORY.md): a micro-batch spanning k windows of event
    # time leaves k + 1 open until the next batch's watermark, and Spark's state store holds ~350 B per row.
    return total, (f"{windows} active windows x {groups} groups x {size} B = {total / (1 << 20):.1f} MiB of "
                   "partials, plus the windows one micro-batch's event-time span keeps open and the state "
                   "store's per-row overhead")


def sink_warnings(spec: PipelineSpec | JoinPipelineSpec) -> list[str]:
    """Sinks that may duplicate rows or not store them."""
    out = []
    for role, sink in (("target", spec.target), ("dead_letter", spec.dead_letter)):
        if sink.kind == "parquet" and sink.mode == "append":
            out.append(f"{role} is Parquet in append mode: a rerun or restart writes its rows again")
        if sink.kind == "console":
            out.append(f"{role} is the console: rows are printed (at most {sink.rows}), not stored")
        if sink.kind == "kafka":  # what a consumer of the topic sees (wid.spec.delivery)
            versions = isinstance(spec, PipelineSpec) and role == "target" and spec.window.reemits
            out.append(consumer_view(role, sink.topic or "", sink.delivery, versions))
    return out


def warnings(spec: PipelineSpec | None, window: Window) -> list[str]:
    """Ways the configuration may lose, hold back or duplicate data."""
    out = sink_warnings(spec) if spec is not None else []
    out += plan_of(window).warnings(window, spec.target.kind if spec is not None else None)
    streaming = spec is not None and spec.source.is_stream
    late = streaming and late_rows(window)  # the window's trigger policy: can its rows be late at all?
    for a in window.aggregations:
        if a.agg == "count_distinct" and a.mode == "approximate":
            out.append(f"'{a.as_}' is approximate (HLL, about 0.81 % standard error); on the WID operator it is "
                       "counted exactly, keeping each group's distinct values")
    if late and window.late_data == "reopen":
        out.append(f"late rows reopen windows for allowed_lateness_ms = {window.allowed_lateness_ms}: a window "
                   "is written again, corrected (keyed sinks overwrite it; Parquet appends a second row)")
    if streaming and window.shape.retracts and window.reemits:
        out.append("sessions that merge or move their start are retracted from keyed sinks (deleted by natural "
                   "key); a Parquet sink keeps the stale rows")
    if late and window.late_data == "drop":
        out.append(f"rows arriving after their window was emitted (lateness_ms = {window.lateness_ms}) are dropped; "
                   "they are counted (wid_late_rows_total), not stored")
    total, _ = state_bound(window)
    if total is not None and total > GB:
        out.append(f"the streaming state bound is {total / GB:.1f} GB, above 1 GB")
    return out


@dataclass(frozen=True)
class Explanation:
    """The text `wid explain` prints, as data."""

    kind: str
    form: str
    why: str
    notes: tuple[str, ...]
    state: str
    warnings: tuple[str, ...]
    operators: dict[str, int]
    physical_plan: str


def physical_plan(df: DataFrame, spec: PipelineSpec | JoinPipelineSpec | None = None) -> str:
    """Spark's physical plan of `df`, as text, without `spec`'s secrets
    (`secret_values`: Spark redacts only the options its own
    ``spark.redaction.regex`` matches)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        df.explain()
    return scrub(buf.getvalue(), secret_values(spec) if spec is not None else ())


def secret_values(spec: PipelineSpec | JoinPipelineSpec) -> list[str]:
    """The secrets `spec` leads to: its sources' and sinks' secret options
    (`wid.spec.secrets.is_secret`), written inline or read from a variable
    set in this process, and the passwords in its sinks' URLs."""
    found: list[str | None] = []
    parts: list[SourceSpec | SinkSpec] = [*spec.sources, spec.target, spec.dead_letter]
    for part in parts:
        found += [str(v) for k, v in part.options.items() if is_secret(k)]
        found += [os.environ.get(v) for k, v in part.options_env.items() if is_secret(k)]
    for sink in (spec.target, spec.dead_letter):
        url = sink.url or os.environ.get(sink.url_env or "")
        found += [url_password(url) if url else None, os.environ.get(sink.password_env or "")]
    return [s for s in found if s]


def operators(plan: str) -> dict[str, int]:
    """How many of each notable Spark operator a physical plan holds, by
    the name Spark prints (the WID operator's is TransformWithStateInPandas
    in Spark 4.0, TransformWithStateInPySpark from 4.1)."""
    ops: dict[str, int] = {}
    for op in re.findall(r"\b(Exchange|Sort|Window|HashAggregate|ObjectHashAggregate|SortAggregate|Generate|"
                         r"BroadcastExchange|BroadcastNestedLoopJoin|SortMergeJoin|Expand|MapInArrow|StateStoreSave|"
                         r"SessionWindowStateStoreSave|TransformWithStateIn(?:PySpark|Pandas))\b", plan):
        ops[op] = ops.get(op, 0) + 1
    return ops


def explain_join(result: StageResult, spec: JoinPipelineSpec) -> Explanation:
    """Explain a compiled window join (docs/semantics.md#window-join)."""
    plan = physical_plan(result.output, spec)
    how = result.explain
    return _join_explanation(spec, result.explain.path == OPERATOR, how.form, how.why, how.notes, operators(plan), plan)


def _join_explanation(spec: JoinPipelineSpec, streaming: bool, form: str, why: str, notes: tuple[str, ...],
                      ops: dict[str, int], plan: str) -> Explanation:
    held = ("per key, the pending left rows and the right rows an unfired window can use, in Spark's state store, "
            "checkpointed with the query; a key holding more than garbage_size right rows releases the others")
    state = f"streaming, WID operator: {held}" if streaming else \
        f"batch: nothing is kept between runs (on streams, the WID operator keeps {held})"
    warned = sink_warnings(spec)
    if streaming:
        warned.append("left rows whose window has not fired when the stream stops are not output: a right row of "
                      "their key past the window's end (or max_delayed_time) fires them")
        if spec.join.join.late_data == "drop":
            warned.append("late rows are counted (wid_late_rows_total), not stored: set late_data = \"dlq\" to "
                          "keep them in the dead letter")
    if spec.target.kind in ("sqlite", "postgres"):
        warned.append("rows are keyed by every column but the aggregate metrics: identical rows are stored once")
    return Explanation("window join", form, why, notes, state, tuple(warned), ops, plan)


def explain(result: StageResult, window: Window, spec: PipelineSpec | None = None) -> Explanation:
    """Explain a compiled window stage (`wid.window_result`'s result)."""
    plan = physical_plan(result.output, spec)
    how = result.explain
    return Explanation(window.kind, how.form, how.why, how.notes, _state(how.path, window),
                       tuple(warnings(spec, window)), operators(plan), plan)


def _state(path: str, window: Window) -> str:
    """What a stage on `path` keeps, and for how long."""
    if path == real_time.PATH:
        return ("real-time mode: Spark's state store holds one partial per (window, group) until the watermark "
                "passes the window's end, checkpointed with the query")
    if path == OPERATOR:
        return ("streaming, WID operator: partial aggregates of many groups per shard (never rows) in Spark's "
                f"RocksDB state store, checkpointed with the query: {state_bound(window)[1]}")
    return "batch: one partial per (group, pane), at most one per input row; nothing is kept between runs"


def outline(spec: PipelineSpec | JoinPipelineSpec) -> Explanation:
    """`spec`'s explanation from the spec and its ``[spark]`` settings
    alone, without a Spark session (`wid explain` without ``--plan``): the
    path the stage takes, the forms its plan may take in the order they are
    tried (where the input's column types pick one, both are named), why,
    its state and how data may be lost. No Spark operators or physical plan:
    those need ``--plan``."""
    conf = {k: str(v) for k, v in spec.spark.get("conf", {}).items()}
    notes = tuple(f"setting {name} = {conf[name]}" for name in SETTINGS if name in conf)
    if isinstance(spec, JoinPipelineSpec):
        streaming = spec.source.is_stream
        form, why = (join_query.FORM, join_query.WHY) if streaming else (BATCH_JOIN_FORM, BATCH_JOIN_WHY)
        return _join_explanation(spec, streaming, form, why, notes, {}, "")
    w = spec.window
    if spec.stream.trigger == REAL_TIME:
        return Explanation(w.kind, real_time.FORM, real_time.WHY, real_time.NOTES, _state(real_time.PATH, w),
                           tuple(warnings(spec, w)), {}, "")
    if spec.source.is_stream:
        form = f"WID operator ({_shards(spec, conf)}, vectorised state per shard)"
        return Explanation(w.kind, form, WHY_OPERATOR, (*notes, _combining(w, conf)), _state(OPERATOR, w),
                           tuple(warnings(spec, w)), {}, "")
    planned = outline_batch(w, conf.get(PANE_MERGE, "auto"))
    form = planned.forms[0] if len(planned.forms) == 1 else (
        f"{planned.forms[0]}; where the column types do not allow it, " + ", else ".join(planned.forms[1:]))
    return Explanation(w.kind, form, planned.why, planned.notes + notes, _state("batch", w),
                       tuple(warnings(spec, w)), {}, "")


def _combining(w: Window, conf: dict[str, str]) -> str:
    """Whether the operator's rows combine per (group, pane) before the
    shuffle (`wid.kernels.operator.combine`: tumbling and hopping windows
    outside the ``dlq`` late policy, unless the setting turns it off)."""
    if not switched_on(conf.get(COMBINE_CONF)):
        return f"rows ship to their shard uncombined ({COMBINE_CONF} = false)"
    if not isinstance(plan_of(w), TimeWindowsPlan):
        return f"rows ship to their shard uncombined (only tumbling and hopping windows combine; {w.kind} does not)"
    if w.late_data == "dlq":
        return "rows ship to their shard uncombined (late_data = \"dlq\" keeps each late row's source columns)"
    return "rows combine per group and pane inside each input partition before the shuffle"


def _shards(spec: PipelineSpec, conf: dict[str, str]) -> str:
    """The operator's shard count as the session will have it, if the spec says."""
    cores = local_cores(str(spec.spark.get("master", "local[*]")))
    shards = conf.get(SHARDS_CONF) or conf.get(SHUFFLE_PARTITIONS) or (str(cores) if cores else None)
    return f"{shards} shards" if shards else "a shard per shuffle partition"
