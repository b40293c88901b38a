"""`window_join`: DolphinDB's window join (`createWindowJoinEngine`) on batch
Spark DataFrames, sort-based and ``O((N + M) log(N + M))`` (DESIGN.md
section 8). Semantics: `wid.semantics.window_join` (the oracle).

The plan, with no nested-loop or range join and no Python per row or key:

1. Each side gets its time in epoch microseconds and a reject reason (NULL or
   unparseable time, NULL matching column); rejected rows go to the dead
   letter with the reason and their side.
2. Each right row becomes every aggregation's partial fields of the row
   alone (`row_partial`, the `wid.aggregates.spark` forms windows use), plus
   the raw values that med/percentile and non-aggregate metrics need.
3. The left rows and the right partials, each shuffled once by key, go
   once per partition through `wid.spark.join_merge` (`mapInArrow`): a
   sort, a binary search for each window's range, and O(1) merges per window
   (prefix sums, sparse tables, shifted moments).
4. Each aggregation's `finish` gives its value; then `null_fill`, and a
   global sort with `sort_by_time`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from wid.aggregates.spark import Inputs, SparkAgg, spark_agg
from wid.errors import ConfigError
from wid.semantics import reasons
from wid.spark import join_merge, pane_merge
from wid.spark.arrow_merge import output_type, partial_fields
from wid.spark.columns import CORRUPT, PREFIX, REASON, TS, field
from wid.spark.panes import by_key, getter
from wid.spark.prepare import dead_letters, event_time_us, good_rows, malformed, marked
from wid.spark.shipping import ship
from wid.spec.aggregation import Aggregation
from wid.spec.join import SYSTEM_TIME, ColumnMetric, Metric, WindowJoin, metric_alias

SIDE = "_wid_side"
RAW = "_wid_c"  # + j: the raw right values med/percentile and non-aggregate metrics read
FORM = "sort-based window join: one shuffle by key, vectorised Arrow range merge"
WHY = ("each left row's window is a contiguous time range of its key's right rows, found by binary search "
       "after one sort; merged in O(1) per window, so the cost is O((N + M) log(N + M))")


@dataclass(frozen=True)
class JoinResult:
    """A compiled window join.

    - `output`: the joined rows (see `window_join` for the columns).
    - `dead_letter`: rejected rows of both sides: ``reason``, ``source``
      (the side's name), ``source_file``, ``row_json``.
    - `prepared`: one row per input row of either side, with wid's
      ``_wid_reason`` (NULL for a joined row), for the accounting identity
      ``rows_in = rows_rejected + rows_joined``.
    - `form`, `why`, `notes`: how it runs, for `wid explain`.
    - `operator`: on streams, every row the WID operator outputs (fired
      rows, late rows, per-shard counts; `wid.spark.operator.join_plan`),
      and `rejected`, the rows rejected as bad input (`dead_letter` holds
      them and the late rows).
    """

    output: DataFrame
    dead_letter: DataFrame
    prepared: DataFrame
    form: str = FORM
    why: str = WHY
    notes: tuple[str, ...] = ()
    operator: DataFrame | None = None
    rejected: DataFrame | None = None


def window_join(left: DataFrame, right: DataFrame, window: tuple[int, int], metrics: Sequence[Metric | str],
                matching_column: object, time_column: object = None, use_system_time: bool = False,
                max_delayed_time: int | None = None, garbage_size: int = 5000,
                null_fill: dict[str, str | int | float | bool] | None = None, sort_by_time: bool = False,
                time_unit: str = "timestamp", late_data: str = "drop") -> DataFrame:
    """For each left row at time t, `metrics` over the right rows with the
    same `matching_column` and a time in ``[t + a, t + b]`` (`window` =
    (a, b) in milliseconds, both ends in; (0, 0) is ``[t_prev, t)``).
    DolphinDB's `createWindowJoinEngine` parameters, in snake_case; see
    `wid.spec.join.WindowJoin` for each and `wid.semantics.window_join`
    for the exact semantics.

    `left` and `right` are DataFrames (both batch, or both streams: then
    the join runs on the WID operator with DolphinDB's trigger rules, see
    `wid.semantics.window_join_stream`, and the output is an append-only
    stream) holding the matching and time
    columns (a timestamp, or epoch ``ms``/``us`` integers by `time_unit`)
    and the right columns the metrics read. Output columns: the left time
    column (or ``system_time``), the matching columns (left names), the
    other left columns in input order, then the metrics by alias. One row
    per left row, or per matching right row with a `ColumnMetric` (or a
    plain column name) and a window other than (0, 0).

    Rows with a NULL time or key are not joined (`join_result` returns them
    with a reason). Raises ConfigError naming the field: bad parameters,
    missing columns, an alias colliding with a left column, a `null_fill`
    value of the wrong type.

    Example: each trade with the quotes of the 2 seconds around it::

        wid.window_join(trades, quotes, window=(-2000, 2000), matching_column="sym",
                        time_column="time", metrics=[Aggregation("avg", "bid", as_="avg_bid")])
    """
    join = WindowJoin(window=window, metrics=tuple(ColumnMetric(m) if isinstance(m, str) else m for m in metrics),
                      matching_column=matching_column,
                      time_column=time_column, time_unit=time_unit, use_system_time=use_system_time,  # type: ignore[arg-type]
                      max_delayed_time=max_delayed_time, garbage_size=garbage_size, null_fill=dict(null_fill or {}),
                      sort_by_time=sort_by_time, late_data=late_data)  # type: ignore[arg-type]
    return join_result(left, right, join).output


def join_result(left: DataFrame, right: DataFrame, join: WindowJoin, *, left_source: str = "left",
                right_source: str = "right") -> JoinResult:
    """Compile `join` over two batch DataFrames; see `window_join`. The dead
    letters name each side by `left_source` / `right_source`."""
    lp, rp = prepare_side(left, join, "left"), prepare_side(right, join, "right")
    columns = [c for c in left.columns if not c.startswith(PREFIX)]
    _check_aliases(join, columns)
    if left.isStreaming or right.isStreaming:
        return _stream_result(lp, rp, join, columns, left_source, right_source)
    good_left, good_right = good_rows(lp), good_rows(rp)
    out, notes = _plan(good_left, good_right, join, columns)
    out = _null_fill(out, join)
    if join.sort_by_time:
        out = out.orderBy(join.output_time, *join.left_keys)
    dead = dead_letters(lp, left_source).unionByName(dead_letters(rp, right_source))
    return JoinResult(out, dead, lp.select(REASON).unionByName(rp.select(REASON)), notes=notes)


def _stream_result(lp: DataFrame, rp: DataFrame, join: WindowJoin, columns: list[str], left_source: str,
                   right_source: str) -> JoinResult:
    """`join` over two prepared streams, on the WID operator
    (`wid.spark.operator.join_plan`; semantics `wid.semantics.window_join_stream`)."""
    from wid.spark.operator import join_plan

    join_plan.check_stream_join(lp, rp, join)
    rows = join_plan.operator_rows(lp, rp, join, left_source=left_source, right_source=right_source)
    out = fired_output(rows, join, columns)
    rejected = dead_letters(lp, left_source).unionByName(dead_letters(rp, right_source))
    dead = rejected.unionByName(join_plan.late_rows_of(rows, left_source)) if join.late_data == "dlq" else rejected
    notes = ("stream: a window fires when a right row of its key past its end arrives (or, with max_delayed_time, "
             "any right row past end + max_delayed_time); at the end of a stream unfired windows stay unfired",
             "stream: a key whose right side stops holds its pending left rows until max_delayed_time fires them; "
             "right rows per key are released above garbage_size")
    return JoinResult(out, dead, lp.select(REASON).unionByName(rp.select(REASON)), form=join_plan.FORM,
                      why=join_plan.WHY, notes=notes, operator=rows, rejected=rejected)


def fired_output(rows: DataFrame, join: WindowJoin, columns: list[str]) -> DataFrame:
    """The joined rows among the WID operator's output `rows` (a stream, or
    one micro-batch of it), in `window_join`'s output columns, `null_fill`
    applied. `columns` are the left columns in input order."""
    from wid.spark.operator.join_plan import fired_rows

    return _null_fill(fired_rows(rows, join, columns), join)


def prepare_side(df: DataFrame, join: WindowJoin, side: str) -> DataFrame:
    """`df` plus `TS` (epoch microseconds) and `REASON`: the first of a
    malformed record, a NULL time, an unparseable time, a NULL matching
    column (in declared order). Raises ConfigError for missing columns."""
    keys, time = (join.left_keys, join.left_time) if side == "left" else (join.right_keys, join.right_time)
    _check_columns(df, join, side)
    checks: list[tuple[Column, Column]] = []
    bad_record = malformed(df)
    if bad_record is not None:
        checks.append((bad_record, F.lit(reasons.MALFORMED)))
    if time is None:
        us = F.unix_micros(F.current_timestamp())
    else:
        us, unparseable = event_time_us(df, time, join.time_unit, field="time_unit")
        checks += [(F.col(time).isNull(), F.lit(reasons.NULL_EVENT_TIME)),
                   (unparseable, F.lit(reasons.UNPARSEABLE_EVENT_TIME))]
    checks += [(F.col(k).isNull(), F.lit(reasons.null_key(k))) for k in keys]
    return marked(df, us, checks)


def _check_columns(df: DataFrame, join: WindowJoin, side: str) -> None:
    reserved = [c for c in df.columns if c.startswith(PREFIX) and c != CORRUPT]
    if reserved:
        raise ConfigError(side, f"column '{reserved[0]}' uses the reserved prefix {PREFIX}", "rename it")
    j = 0 if side == "left" else 1
    wanted = [(f"matching_column[{j}]", k) for k in join.matching_column[j]]
    if join.time_column is not None:
        wanted.append((f"time_column[{j}]", join.time_column[j]))
    if side == "right":
        wanted += [(f"metrics[{i}].column", c) for i, m in enumerate(join.metrics) for c in _columns(m)]
    for role, col in wanted:
        if col not in df.columns:
            raise ConfigError(role, f"column '{col}' is not in the {side} input (columns: {', '.join(df.columns)})",
                              "fix the name (metrics read right columns; left columns pass through)")
    if side == "right":
        _check_numeric(df, join)


ANY_TYPE = ("count", "min", "max", "first", "last")


def _check_numeric(right: DataFrame, join: WindowJoin) -> None:
    """Arithmetic metrics need numeric right columns."""
    types = {f.name: f.dataType for f in right.schema.fields}
    for i, m in enumerate(join.metrics):
        if isinstance(m, Aggregation) and m.agg not in ANY_TYPE:
            for c in m.columns:
                if not isinstance(types[c], T.NumericType):
                    raise ConfigError(f"metrics[{i}].column", f"{m.agg} needs a numeric column; '{c}' is "
                                      f"{types[c].simpleString()}", "cast it in join.right_sql, or pick a number column")


def _columns(metric: Metric) -> tuple[str, ...]:
    return (metric.column,) if isinstance(metric, ColumnMetric) else metric.columns


def _check_aliases(join: WindowJoin, columns: list[str]) -> None:
    if join.use_system_time and SYSTEM_TIME in columns:
        raise ConfigError("use_system_time", f"the output's '{SYSTEM_TIME}' column collides with a left column",
                          "rename the left column")
    for i, alias in enumerate(join.aliases):
        if alias in columns and alias not in (join.output_time, *join.left_keys):
            raise ConfigError(f"metrics[{i}].as", f"alias '{alias}' collides with a left column (left columns "
                              "pass through to the output)", "choose another alias")


@dataclass(frozen=True)
class _Metrics:
    """How each metric is computed: a mergeable aggregation (position in
    `aggs`), a percentile over raw values, or a raw value."""

    aggs: list[SparkAgg]
    agg_of: dict[int, int]
    raw: list[str]
    percentiles: list[join_merge.Percentile]
    values: list[tuple[str, str]]


def _metrics(join: WindowJoin, right: DataFrame) -> _Metrics:
    types = {f.name: f.dataType for f in right.schema.fields}
    inputs = Inputs(types=types, ts_us=F.col(TS))
    values = [m for m in join.metrics if isinstance(m, ColumnMetric)]
    holistic = [m for m in join.metrics if isinstance(m, Aggregation) and m.holistic]
    raw = list(dict.fromkeys([m.column for m in values] + [m.column or "" for m in holistic]))
    out = _Metrics([], {}, raw, [], [])
    for i, m in enumerate(join.metrics):
        if isinstance(m, ColumnMetric):
            out.values.append((f"{RAW}{raw.index(m.column)}", f"_wid_v{i}"))
        elif m.holistic:
            fraction = 0.5 if m.agg == "med" else (m.percent or 0.0) / 100
            out.percentiles.append(join_merge.Percentile(f"{RAW}{raw.index(m.column or '')}", fraction, f"_wid_q{i}"))
        else:
            out.agg_of[i] = len(out.aggs)
            out.aggs.append(spark_agg(m, inputs))
    return out


def _right_rows(right: DataFrame, join: WindowJoin, keys: list[str], ms: _Metrics) -> DataFrame:
    """Right rows shuffled by key: key, time, side, every aggregation's
    partial fields of the row alone, and the raw values (``_wid_c<j>``)."""
    exprs = [e.alias(field(i, k)) for i, a in enumerate(ms.aggs) for k, e in a.row_partial().items()]
    rows = right.select(*[F.col(c).alias(k) for c, k in zip(join.right_keys, keys, strict=True)], TS,
                        F.lit(1).cast("byte").alias(SIDE), *exprs,
                        *[F.col(c).alias(f"{RAW}{j}") for j, c in enumerate(ms.raw)])
    return by_key(rows, keys)


def _fields(partials: DataFrame, join: WindowJoin, ms: _Metrics) -> tuple[list[pane_merge.FieldOp], dict[str, str]]:
    if not ms.aggs:
        return [], {}
    fields = partial_fields(partials, ms.aggs)
    if fields is None:  # the first aggregation whose fields cannot merge (prefixes keep field positions)
        bad = next(pos for pos in range(len(ms.aggs)) if partial_fields(partials, ms.aggs[:pos + 1]) is None)
        i = next(i for i, pos in ms.agg_of.items() if pos == bad)
        raise ConfigError(f"metrics[{i}].column", f"the window join cannot merge {ms.aggs[bad].agg.agg} "
                          "over this column's type", "cast the column to a number or a string")
    return fields


def _plan(left: DataFrame, right: DataFrame, join: WindowJoin, columns: list[str]) -> tuple[DataFrame, tuple[str, ...]]:
    """The joined rows (before null_fill), and notes for `wid explain`."""
    keys = [f"_wid_k{j}" for j in range(len(join.left_keys))]
    ms = _metrics(join, right)
    partials = _right_rows(right, join, keys, ms)
    fields, copies = _fields(partials, join, ms)
    rows = left.select(*columns, *[F.col(c).alias(k) for c, k in zip(join.left_keys, keys, strict=True)], TS,
                       F.lit(0).cast("byte").alias(SIDE))
    union = by_key(by_key(rows, keys).unionByName(partials, allowMissingColumns=True), keys)  # co-partitioned
    types = {f.name: f.dataType for f in union.schema.fields}
    same = _duplicates(join, keys, types)
    payload = [same.get(c, c) for c in columns]  # a left column equal to a key or time column travels once
    schema = [T.StructField(c, types[c]) for c in payload]
    schema += [T.StructField(n, output_type(op, n, types)) for op in fields for n in op.outputs]
    schema += [T.StructField(p.output, T.DoubleType()) for p in ms.percentiles]
    schema += [T.StructField(out, T.ArrayType(types[src]) if join.special else types[src]) for src, out in ms.values]
    a, b = join.window
    spec = join_merge.JoinMergeSpec(
        keys=tuple(keys), ts=TS, side=SIDE, bounds_us=None if join.special else (a * 1000, b * 1000),
        payload=tuple(payload), ties=tuple(c for c in payload if _sortable(types[c])), fields=tuple(fields),
        ordered=tuple(dict.fromkeys(src for src, _ in ms.values if _sortable(types[src]))),
        percentiles=tuple(ms.percentiles), values=tuple(ms.values))
    ship(pane_merge, join_merge)
    raw = [f"{RAW}{j}" for j in range(len(ms.raw))]
    inputs = dict.fromkeys([*payload, *keys, TS, SIDE, *(c for op in fields for c in op.inputs), *raw])
    merged = union.select(*inputs).mapInArrow(functools.partial(join_merge.join, spec=spec), T.StructType(schema))
    merged = merged.select(*[F.col(same.get(c, c)).alias(c) for c in columns], *[c for c in merged.columns if c not in payload],
                           *[F.col(src).alias(dst) for dst, src in copies.items()])
    return _output(merged, join, columns, ms), _notes(join, ms)


def _duplicates(join: WindowJoin, keys: list[str], types: dict[str, T.DataType]) -> dict[str, str]:
    """Left columns whose values the internal key or time columns already
    carry, with the same type: {left column: internal column}."""
    same = {c: k for c, k in zip(join.left_keys, keys, strict=True) if types[c] == types[k]}
    if join.left_time is not None and join.time_unit == "us" and isinstance(types[join.left_time], T.LongType):
        same[join.left_time] = TS
    return same


def _sortable(t: T.DataType) -> bool:
    """Types pyarrow sorts, which order tied rows of the window (0, 0)."""
    return isinstance(t, T.NumericType | T.StringType | T.BinaryType | T.BooleanType | T.DateType
                      | T.TimestampType | T.TimestampNTZType)


def _output(merged: DataFrame, join: WindowJoin, columns: list[str], ms: _Metrics) -> DataFrame:
    head = [F.current_timestamp().alias(SYSTEM_TIME)] if join.use_system_time else [F.col(join.output_time)]
    first = (join.output_time, *join.left_keys)
    head += [F.col(k) for k in join.left_keys] + [F.col(c) for c in columns if c not in first]
    out = []
    for i, m in enumerate(join.metrics):
        if i in ms.agg_of:
            pos = ms.agg_of[i]
            col = ms.aggs[pos].finish(getter(pos, "m"))
        elif isinstance(m, ColumnMetric):
            col = F.col(f"_wid_v{i}")
        else:
            col = F.col(f"_wid_q{i}")
        out.append(col.alias(metric_alias(m)))
    return merged.select(*head, *out)


def _null_fill(df: DataFrame, join: WindowJoin) -> DataFrame:
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


def natural_key(join: WindowJoin, output_columns: list[str]) -> list[str]:
    """The columns identifying an output row, for idempotent upserts: every
    column but the aggregate metrics (the left row, and a non-aggregate
    metric's value). Identical output rows are stored once by a keyed sink."""
    aggregates = {metric_alias(m) for m in join.metrics if isinstance(m, Aggregation)}
    return [c for c in output_columns if c not in aggregates]


def _notes(join: WindowJoin, ms: _Metrics) -> tuple[str, ...]:
    notes = ["batch: the end of input fires every window, so every left row is output "
             "(DolphinDB's engine waits for a later right row of the key)"]
    if ms.percentiles:
        notes.append("med/percentile gather and sort each window's right values: their cost grows with the "
                     "right rows per window (no O(1) merge exists)")
    if ms.values and not join.special:
        notes.append("non-aggregate metrics give one row per matching right row: the output grows with the "
                     "right rows per window")
    if join.use_system_time:
        notes.append("use_system_time in batch: every row of the run arrives at the same instant")
    if join.max_delayed_time is not None or join.garbage_size != 5000:
        notes.append("max_delayed_time and garbage_size only act on a stream; a batch result never depends on them")
    return tuple(notes)


__all__ = ["JoinResult", "fired_output", "join_result", "natural_key", "prepare_side", "window_join"]
