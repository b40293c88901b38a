"""Planning the vectorised merges: which fields can merge in NumPy, the
`mapInArrow` call and its output schema (the Spark side of
`wid.kernels.pane_merge` and `wid.kernels.pane_reduce`).

Two forms, both one Python call per partition of key-partitioned input:

- `vectorised`: pane partials computed by Spark's ``groupBy`` in,
  windows out (`pane_merge.merge`);
- `fused`: rows in, windows out (`pane_reduce.merge_rows`): the pane
  aggregate runs in NumPy too, so no Spark aggregate runs at all. Measured
  on `benchmarks.batch_windows` it is faster than Spark's hash aggregate followed
  by `vectorised` when a pane holds few rows (about one to four), and
  slower when it holds many, where Spark's partial aggregation shrinks the
  rows before its shuffle (see `wid.spark.panes` for which plan uses which).

Both return None, and the caller falls back to Spark, when a field or a key
cannot merge or group in NumPy (HLL sketches, holistic aggregations,
decimals, collated strings) or the session sets ``spark.wid.paneMerge = spark``. Executors
need numpy and pyarrow, not wid: `wid.kernels` is shipped by value.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from wid.aggregates.spark import SparkAgg
from wid.kernels import pane_merge, pane_reduce
from wid.spark.columns import PANE, WINDOW_ID, field
from wid.spark.shipping import ship

CONF = "spark.wid.paneMerge"  # "auto" (default: wid.spark.pane_plan), "arrow", "fused" or "spark" (JVM only)
SUMMABLE = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType)
ORDERABLE = (*SUMMABLE, T.StringType, T.BooleanType, T.DateType, T.TimestampType, T.TimestampNTZType)  # atomic
_ORDERABLE = (*ORDERABLE, T.BinaryType, T.StructType)  # pane partials: first/last keys are structs
_KEYS = (T.IntegralType, T.FloatType, T.DoubleType, T.StringType, T.BinaryType, T.BooleanType, T.DateType,
         T.TimestampType, T.TimestampNTZType, T.DecimalType)
Merge = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def enabled(df: DataFrame) -> bool:
    """False when the session asks for the JVM-only merge."""
    return df.sparkSession.conf.get(CONF, "auto") != "spark"


def rows_merge(aggs: Sequence[SparkAgg]) -> bool:
    """Whether every aggregation has a NumPy merge over rows, which `fused`
    needs (HLL sketches and holistic aggregations have none)."""
    return all(a.row_ops(functools.partial(field, i)) is not None for i, a in enumerate(aggs))


def _binary_order(t: T.DataType) -> bool:
    """NumPy orders and groups strings by their bytes: collated ones cannot."""
    return not isinstance(t, T.StringType) or t.collation == "UTF8_BINARY"


def _keys_fit(types: dict[str, T.DataType], keys: Sequence[str]) -> bool:
    """NumPy can group these keys exactly as Spark does."""
    return all(isinstance(types[k], _KEYS) and _binary_order(types[k]) for k in keys)


def _mergeable(op: pane_merge.FieldOp, types: dict[str, T.DataType]) -> bool:
    if op.op in ("moments", "count"):
        return True
    t = types[op.inputs[0]]
    return isinstance(t, SUMMABLE if op.op == "sum" else _ORDERABLE) and _binary_order(t)


def output_type(op: pane_merge.FieldOp, name: str, types: dict[str, T.DataType]) -> T.DataType:
    if op.op == "count" or (op.op == "moments" and name == op.outputs[0]):
        return T.LongType()
    if op.op == "moments":
        return T.DoubleType()
    source = types[op.inputs[0]]
    if op.op == "sum":
        return T.LongType() if isinstance(source, T.IntegralType) else T.DoubleType()
    return source


def _canonical(texts: dict[str, str]) -> dict[str, str]:
    """{column: the first column with the same expression text}."""
    first: dict[str, str] = {}
    return {name: first.setdefault(text, name) for name, text in texts.items()}


def _rename(ops: Sequence[list[pane_merge.FieldOp] | None], canonical: dict[str, str]) -> list[pane_merge.FieldOp]:
    """All ops, reading canonical columns."""
    return [dataclasses.replace(op, inputs=tuple(canonical[c] for c in op.inputs)) for o in ops for op in o or []]


def _dedupe(ops: list[pane_merge.FieldOp]) -> tuple[list[pane_merge.FieldOp], dict[str, str]]:
    """Merge each distinct (op, inputs) once: aggregations often share one
    (``avg`` and ``sum`` both need ``sum(v)``). Returns the distinct ops and
    {duplicate output: canonical output}."""
    unique: dict[tuple[str, tuple[str, ...]], pane_merge.FieldOp] = {}
    copies: dict[str, str] = {}
    for op in ops:
        first = unique.setdefault((op.op, op.inputs), op)
        if first is not op:
            copies.update(zip(op.outputs, first.outputs, strict=True))
    return list(unique.values()), copies


def _map(df: DataFrame, keys: Sequence[str], merge: Merge, ops: list[pane_merge.FieldOp],
         copies: dict[str, str]) -> DataFrame:
    """`df` through `merge` (per partition), then the duplicate outputs."""
    types = {f.name: f.dataType for f in df.schema.fields}
    out = [T.StructField(k, types[k]) for k in keys] + [T.StructField(WINDOW_ID, T.LongType())]
    out += [T.StructField(n, output_type(op, n, types)) for op in ops for n in op.outputs]
    ship()
    merged = df.mapInArrow(merge, T.StructType(out))
    if not copies:
        return merged  # no step for nothing: each costs the driver a round of analysis
    return merged.select("*", *[F.col(src).alias(dst) for dst, src in copies.items()])


def partial_fields(partials: DataFrame, aggs: Sequence[SparkAgg]) -> tuple[list[pane_merge.FieldOp],
                                                                          dict[str, str]] | None:
    """The merge ops over partial columns ``field(i, k)`` of `partials`, each
    distinct partial merged once, and {duplicate output: canonical output};
    None when a field cannot merge in NumPy (sketches, holistic aggregates,
    unsupported types)."""
    ops = [a.vector_ops(functools.partial(field, i)) for i, a in enumerate(aggs)]
    types = {f.name: f.dataType for f in partials.schema.fields}
    if any(o is None for o in ops) or not all(_mergeable(op, types) for o in ops for op in o or []):
        return None
    canonical = _canonical({field(i, k): str(e) for i, a in enumerate(aggs) for k, e in a.partial().items()})
    return _dedupe(_rename(ops, canonical))


def vectorised(panes: DataFrame, keys: Sequence[str], spec: pane_merge.MergeSpec,
               aggs: Sequence[SparkAgg]) -> DataFrame | None:
    """Windows over pane partials (keys, PANE, ``field(i, k)``) by
    `pane_merge.merge`, or None (see the module docstring). `panes` must
    hold all panes of a key in one partition. Returns keys, WINDOW_ID and the
    merged fields ``field(i, k, "m")``."""
    types = {f.name: f.dataType for f in panes.schema.fields}
    fields = partial_fields(panes, aggs) if enabled(panes) and _keys_fit(types, keys) else None
    if fields is None:
        return None
    unique, copies = fields
    inputs = sorted({c for op in unique for c in op.inputs} | set(keys) | {PANE} | ({spec.last} if spec.last else set()))
    full = dataclasses.replace(spec, keys=tuple(keys), pane=PANE, fields=tuple(unique))
    return _map(panes.select(*inputs), keys, functools.partial(pane_merge.merge, spec=full), unique, copies)


def fused(rows: DataFrame, keys: Sequence[str], pane: Column, spec: pane_merge.MergeSpec,
          aggs: Sequence[SparkAgg], pane_ops: Sequence[pane_merge.FieldOp] = ()) -> DataFrame | None:
    """Windows straight from rows by `pane_reduce.merge_rows`, or None (see
    the module docstring). `rows` must hold all rows of a key in one
    partition; `pane` is each row's pane index (long); `spec.last` (if set)
    a column of `rows`. Sends keys, the pane and each distinct row value once;
    ``count(x)`` of a non-nullable x becomes ``count(*)``. `pane_ops` merge
    the pane column itself (a session's last event time). Returns keys, WINDOW_ID,
    the merged fields ``field(i, k, "m")`` and the outputs of `pane_ops`."""
    ops = [a.row_ops(functools.partial(field, i)) for i, a in enumerate(aggs)]
    if not enabled(rows) or any(o is None for o in ops):
        return None
    values = {field(i, k, "r"): e for i, a in enumerate(aggs) for k, e in a.row_values().items()}
    canonical = _canonical({name: str(e) for name, e in values.items()})
    sent = [values[n].alias(n) for n in dict.fromkeys(canonical.values())]
    extra = [F.col(spec.last)] if spec.last else []
    df = rows.select(*keys, pane.cast("long").alias(PANE), *extra, *sent)
    schema = {f.name: f for f in df.schema.fields}
    types = {name: f.dataType for name, f in schema.items()}
    if not _keys_fit(types, keys):
        return None
    flat = _rename(ops, canonical)
    if not all(_mergeable(op, types) for op in flat):
        return None
    counted = [dataclasses.replace(op, inputs=()) if op.op == "count" and op.inputs
               and not schema[op.inputs[0]].nullable else op for op in flat]
    unique, copies = _dedupe(counted)
    unique += pane_ops
    full = dataclasses.replace(spec, keys=tuple(keys), pane=PANE, fields=tuple(unique))
    return _map(df, keys, functools.partial(pane_reduce.merge_rows, spec=full), unique, copies)
