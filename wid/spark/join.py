"""DolphinDB's window join (`createWindowJoinEngine`) on batch Spark
DataFrames, sort-based and ``O((N + M) log(N + M))`` (docs/semantics.md#window-join);
the public entry point is `wid.spark.compile.window_join`. Semantics:
`wid.semantics.window_join` (the oracle).

The plan, with no nested-loop or range join and no Python per row or key:

1. Each side gets its time in epoch microseconds and a reject reason (NULL or
   unparseable time, NULL matching column); rejected rows go to the dead
   letter with the reason and their side.
2. Each right row becomes every aggregation's partial fields of the row
   alone (`row_partial`, the `wid.aggregates.spark` forms windows use), plus
   the raw values that med/percentile and non-aggregate metrics need.
3. The left rows and the right partials, each shuffled once by key, go
   once per partition through `wid.kernels.join_merge` (`mapInArrow`): a
   sort, a binary search for each window's range, and O(1) merges per window
   (prefix sums, sparse tables, shifted moments).
4. Each aggregation's `finish` gives its value; then `null_fill`, and a
   global sort with `sort_by_time`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from wid.aggregates.spark import Inputs, SparkAgg, spark_agg
from wid.errors import ConfigError
from wid.kernels import join_merge, pane_merge
from wid.semantics import reasons
from wid.spark.arrow_merge import output_type, partial_fields
from wid.spark.columns import CORRUPT, PREFIX, TS, field, getter, ident
from wid.spark.panes import by_key
from wid.spark.prepare import NOW_US, Check, event_time_us, good_rows, malformed, marked
from wid.spark.shipping import ship
from wid.spec.aggregation import Aggregation
from wid.spec.inputs import join_columns
from wid.spec.join import SYSTEM_TIME, ColumnMetric, WindowJoin, metric_alias

SIDE = "_wid_side"
RAW = "_wid_c"  # + j: the raw right values med/percentile and non-aggregate metrics read
FORM = "sort-based window join: one shuffle by key, vectorised Arrow range merge"
WHY = ("each left row's window is a contiguous time range of its key's right rows, found by binary search "
       "after one sort; merged in O(1) per window, so the cost is O((N + M) log(N + M))")


def batch_join(left: DataFrame, right: DataFrame, join: WindowJoin, columns: list[str]) -> tuple[DataFrame, tuple[str, ...]]:
    """The joined rows of the good rows of two prepared batch sides
    (`prepare_side`; `columns` the left input columns in order), `null_fill`
    and `sort_by_time` applied, and notes for `wid explain`. Output columns:
    see `wid.spark.compile.window_join`."""
    out, notes = _plan(good_rows(left), good_rows(right), join, columns)
    out = null_fill(out, join)
    if join.sort_by_time:
        out = out.orderBy(join.output_time, *join.left_keys)
    return out, notes


def prepare_side(df: DataFrame, join: WindowJoin, side: str) -> DataFrame:
    """`df` plus `TS` (epoch microseconds) and `REASON`: the first of a
    malformed record, a NULL time, an unparseable time, a time out of
    Spark's range, a NULL matching column (in declared order). Raises
    ConfigError for missing columns."""
    keys, time = (join.left_keys, join.left_time) if side == "left" else (join.right_keys, join.right_time)
    _check_columns(df, join, side)
    checks: list[Check] = []
    bad_record = malformed(df)
    if bad_record is not None:
        checks.append((bad_record, reasons.MALFORMED))
    if time is None:
        us = NOW_US
    else:
        ts = event_time_us(df, time, join.time_unit, field="time_unit")
        us = ts.us
        checks += [(f"{ident(time)} IS NULL", reasons.NULL_EVENT_TIME), *ts.checks]
    checks += [(f"{ident(k)} IS NULL", reasons.null_key(k)) for k in keys]
    return marked(df, us, checks)


def _check_columns(df: DataFrame, join: WindowJoin, side: str) -> None:
    reserved = [c for c in df.columns if c.startswith(PREFIX) and c != CORRUPT]
    if reserved:
        raise ConfigError(side, f"column '{reserved[0]}' uses the reserved prefix {PREFIX}", "rename it")
    for role, col in join_columns(join, side):
        if col not in df.columns:
            listing = ", ".join(c for c in df.columns if not c.startswith(PREFIX))
            raise ConfigError(role, f"column '{col}' is not in the {side} input (columns: {listing})",
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


def check_aliases(join: WindowJoin, columns: list[str]) -> None:
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
    # co-partitioned: from Spark 4.1 the union keeps its sides' partitioning and the outer
    # by_key shuffles nothing; Spark 4.0 shuffles the union once more (same rows, more work)
    union = by_key(by_key(rows, keys).unionByName(partials, allowMissingColumns=True), keys)
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
    ship()
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


def null_fill(df: DataFrame, join: WindowJoin) -> DataFrame:
    """DolphinDB's nullFill: every NULL of a named output column replaced."""
    if not join.null_fill:
        return df
    types = {f.name: f.dataType for f in df.schema.fields}
    for column, value in join.null_fill.items():
        if column not in types:
            listing = ", ".join(c for c in df.columns if not c.startswith(PREFIX))
            raise ConfigError(f"null_fill.{column}", f"is not an output column (columns: {listing})")
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


__all__ = ["FORM", "WHY", "batch_join", "check_aliases", "prepare_side"]
