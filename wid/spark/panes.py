"""Merging panes into windows in O(n): the pane stage of DESIGN.md section 6.

A *pane* is a tumbling partial aggregate. A window that is the union of
`length` consecutive panes, starting every `hop` panes, is computed without
copying panes into windows, by van Herk and Gil-Werman's block decomposition:

- cut the pane axis into blocks of `length` panes; any window spans at most
  two consecutive blocks, block b and b+1;
- per block, a running *prefix* merge (ascending) and a running *suffix*
  merge (descending): window ``[s, e]`` = suffix of block b from s, merged
  with prefix of block b+1 up to e;
- each pane row q contributes its suffix merge to the windows whose start
  falls after the previous non-empty pane of its block, up to q, and its
  prefix merge to the windows whose end falls from q up to before the next
  non-empty pane (windows that start in the previous block only);
- a ``groupBy(keys, window)`` merges the at most two contributions.

Every non-empty window gets exactly one suffix and/or one prefix
contribution, so sums are never double counted, and the number of rows after
the explode is at most twice the number of output windows. Sorting, running
frames and the final aggregate are all O(panes); nothing grows with
``length / hop``. With the input partitioned by the keys, no stage after the
pane aggregate shuffles.

Landmark (cumulative) windows are prefixes of their period and need only the
prefix pass (`cumulative`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark import cloudpickle
from pyspark.sql import Column, DataFrame
from pyspark.sql import Window as W
from pyspark.sql import functions as F
from pyspark.sql import types as T

from wid.aggregates.spark import Getter, SparkAgg, value
from wid.spark import pane_merge
from wid.spark.columns import PANE, WID, ceil_div, floor_div, lit_long, long_range

BLK = "_wid_blk"
PREV = "_wid_prev"
NEXT = "_wid_next"
ROLE = "_wid_suffix"


@dataclass(frozen=True)
class Geometry:
    """Windows in pane units: window w covers panes
    ``[w*hop + offset, w*hop + offset + length)``."""

    length: int
    hop: int
    offset: int = 0


def field(i: int, name: str, stage: str = "p") -> str:
    """The column of field `name` of aggregation i at `stage`."""
    return f"_wid_{stage}{i}_{name}"


def partials(df: DataFrame, keys: Sequence[str], bucket: Column, aggs: Sequence[SparkAgg],
             name: str = PANE) -> DataFrame:
    """``groupBy(keys, bucket)`` computing every aggregation's partial fields;
    the bucket column is named `name`."""
    exprs = [e.alias(field(i, k)) for i, a in enumerate(aggs) for k, e in a.partial().items()]
    return df.groupBy(*keys, bucket.alias(name)).agg(*exprs)


def getter(i: int, stage: str = "p") -> Getter:
    """Field `name` of aggregation i at `stage`, as a column."""
    return lambda name: F.col(field(i, name, stage))


def _running(panes: DataFrame, keys: Sequence[str], block: Column, aggs: Sequence[SparkAgg],
             descending: bool) -> tuple[DataFrame, dict[int, list[str]]]:
    """Add per-block shift constants, lag/lead and running prefix merges
    (and suffix merges when `descending`)."""
    asc = W.partitionBy(*keys, BLK).orderBy(PANE)
    run_asc = asc.rowsBetween(W.unboundedPreceding, W.currentRow)
    df = panes.withColumn(BLK, block)
    whole = asc.rowsBetween(W.unboundedPreceding, W.unboundedFollowing)  # shifts are constant per block
    shifts = [e.over(whole).alias(field(i, k)) for i, a in enumerate(aggs)
              for k, e in a.shift(getter(i, "p")).items()]
    if shifts:
        df = df.select("*", *shifts)
    names: dict[int, list[str]] = {}
    pre = []
    for i, a in enumerate(aggs):
        running = a.running(getter(i, "p"))
        names[i] = list(running)
        pre += [e.over(run_asc).alias(field(i, k, "pre")) for k, e in running.items()]
    df = df.select("*", F.lag(PANE).over(asc).alias(PREV), F.lead(PANE).over(asc).alias(NEXT), *pre)
    if descending:
        run_desc = W.partitionBy(*keys, BLK).orderBy(F.desc(PANE)).rowsBetween(W.unboundedPreceding, W.currentRow)
        suf = [e.over(run_desc).alias(field(i, k, "suf")) for i, a in enumerate(aggs)
               for k, e in a.running(getter(i, "p")).items()]
        df = df.select("*", *suf)
    return df, names


def _settled(aggs: Sequence[SparkAgg], names: dict[int, list[str]], role: Column | None,
             stage: str = "c") -> list[Column]:
    """Each aggregation's contribution fields, reading the suffix or the
    prefix running merge by `role` (prefix only when `role` is None)."""
    cols = []
    for i, a in enumerate(aggs):
        running = set(names[i])

        def get(name: str, i: int = i, running: set[str] = running) -> Column:
            if name not in running:
                return F.col(field(i, name))  # a shift constant
            pre = F.col(field(i, name, "pre"))
            return pre if role is None else F.when(role, F.col(field(i, name, "suf"))).otherwise(pre)

        cols += [e.alias(field(i, k, stage)) for k, e in a.settle(get).items()]
    return cols


VECTOR = "vectorised Arrow merge (prefix sums + sparse tables)"
BLOCKS = "block prefix/suffix merge in Spark"


def sliding(panes: DataFrame, keys: Sequence[str], geo: Geometry, aggs: Sequence[SparkAgg]) -> tuple[DataFrame, str]:
    """Windows of `geo` over pane partials (columns: keys, PANE, partial
    fields). Returns (keys, WID and each aggregation's combined fields
    ``field(i, name, "m")``, how they were merged); finish with `finished`."""
    length, hop, off = geo.length, geo.hop, geo.offset
    spec = pane_merge.MergeSpec(keys=tuple(keys), pane=PANE, kind="sliding", fields=(), length=length, hop=hop,
                                offset=off)
    fast = vectorised(panes, keys, spec, aggs)
    if fast is not None:
        return fast, VECTOR
    block = floor_div(F.col(PANE), length)
    df, names = _running(panes, keys, block, aggs, descending=True)
    q = F.col(PANE)
    bstart = F.col(BLK) * lit_long(length)
    prev = F.coalesce(F.col(PREV), bstart - 1)
    nxt = F.least(F.coalesce(F.col(NEXT), bstart + length), bstart + length - 1)
    # suffix role: window starts s = w*hop + off with prev < s <= q
    suf = long_range(floor_div(prev - off, hop) + 1, floor_div(q - off, hop))
    # prefix role: window ends e = s + length - 1 with q <= e <= min(next, block end) - 1
    pre = long_range(ceil_div(q - off - length + 1, hop), floor_div(nxt - 1 - off - length + 1, hop))
    df = df.select("*", F.explode(F.concat(suf, pre)).alias(WID))
    role = (F.col(WID) * hop + off) >= bstart
    df = df.select(*keys, F.col(WID), role.alias(ROLE), *_settled(aggs, names, role))
    combined = [e.alias(field(i, k, "m")) for i, a in enumerate(aggs)
                for k, e in a.combine(getter(i, "c"), F.col(ROLE)).items()]
    return df.groupBy(*keys, WID).agg(*combined), BLOCKS


def cumulative(panes: DataFrame, keys: Sequence[str], period: int | None, last: str,
               aggs: Sequence[SparkAgg]) -> tuple[DataFrame, str]:
    """Landmark windows over pane partials: window w covers the panes of its
    period up to w. `period` is the period length in panes (None: one
    unbounded period); windows run up to the pane in column `last`. Returns
    keys, WID and the combined fields (``field(i, name, "m")``)."""
    spec = pane_merge.MergeSpec(keys=tuple(keys), pane=PANE, kind="cumulative", fields=(), period=period, last=last)
    fast = vectorised(panes, keys, spec, aggs)
    if fast is not None:
        return fast, VECTOR
    last_col = F.col(last)
    block = F.lit(0).cast("long") if period is None else floor_div(F.col(PANE), period)
    df, names = _running(panes, keys, block, aggs, descending=False)
    stop = F.coalesce(F.col(NEXT), last_col + 1)
    if period is not None:
        stop = F.least(stop, (F.col(BLK) + 1) * lit_long(period))
    df = df.select("*", F.explode(long_range(F.col(PANE), F.least(stop, last_col + 1) - 1)).alias(WID))
    return df.select(*keys, WID, *_settled(aggs, names, None, stage="m")), "running prefix merge in Spark"


def finished(df: DataFrame, aggs: Sequence[SparkAgg], stage: str = "m", keep: Sequence[str] = ()) -> DataFrame:
    """Select the `keep` columns and each aggregation's output value, named
    by its alias. Stage ``"p"`` reads partial fields (direct evaluation),
    stage ``"m"`` combined ones."""
    def out(i: int, a: SparkAgg) -> Column:
        return value(a, getter(i, stage)) if stage == "p" else a.finish(getter(i, stage))
    return df.select(*keep, *[out(i, a).alias(a.agg.as_) for i, a in enumerate(aggs)])


# -- the vectorised merge ---------------------------------------------------

CONF = "spark.wid.paneMerge"  # "arrow" (default) or "spark" (JVM only)
_SUMMABLE = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType)
_ORDERABLE = (*_SUMMABLE, T.StringType, T.BooleanType, T.DateType, T.TimestampType, T.TimestampNTZType,
              T.BinaryType, T.StructType)


def _field_of(i: int, name: str, stage: str) -> str:
    return field(i, name, stage)


def vector_fields(panes: DataFrame, aggs: Sequence[SparkAgg]) -> list[pane_merge.FieldOp] | None:
    fields: list[pane_merge.FieldOp] = []
    types = {f.name: f.dataType for f in panes.schema.fields}
    for i, a in enumerate(aggs):
        ops = a.vector_ops(functools.partial(_field_of, i))
        if ops is None:
            return None
        for op in ops:
            allowed = _SUMMABLE if op.op == "sum" else _ORDERABLE
            if op.op != "moments" and not isinstance(types[op.inputs[0]], allowed):
                return None
        fields += ops
    return fields


def output_type(op: pane_merge.FieldOp, name: str, types: dict[str, T.DataType]) -> T.DataType:
    if op.op == "moments":
        return T.LongType() if name == op.outputs[0] else T.DoubleType()
    source = types[op.inputs[0]]
    return T.LongType() if op.op == "sum" and isinstance(source, T.IntegralType) else source


def vectorised(panes: DataFrame, keys: Sequence[str], spec: pane_merge.MergeSpec,
               aggs: Sequence[SparkAgg]) -> DataFrame | None:
    """Windows over pane partials by the vectorised merge (one `mapInArrow`
    call per partition), or None when a field cannot merge there or the
    session sets ``spark.wid.paneMerge = spark``. `panes` must hold all
    panes of a key in one partition. Returns keys, WID and merged fields."""
    session = panes.sparkSession
    if session.conf.get(CONF, "arrow") != "arrow":
        return None
    fields = vector_fields(panes, aggs)
    if fields is None:
        return None
    unique, copies = shared_fields(fields, aggs)
    inputs = sorted({c for op in unique for c in op.inputs} | set(keys) | {PANE} | ({spec.last} if spec.last else set()))
    types = {f.name: f.dataType for f in panes.schema.fields}
    out = [T.StructField(k, types[k]) for k in keys] + [T.StructField(WID, T.LongType())]
    out += [T.StructField(n, output_type(op, n, types)) for op in unique for n in op.outputs]
    cloudpickle.register_pickle_by_value(pane_merge)  # type: ignore[no-untyped-call]  # executors need numpy and pyarrow, not wid
    full = pane_merge.MergeSpec(keys=tuple(keys), pane=PANE, fields=tuple(unique), kind=spec.kind,
                                length=spec.length, hop=spec.hop, offset=spec.offset, period=spec.period,
                                last=spec.last)
    merged = panes.select(*inputs).mapInArrow(functools.partial(pane_merge.merge, spec=full), T.StructType(out))
    return merged.select("*", *[F.col(src).alias(dst) for dst, src in copies.items()])


def shared_fields(fields: list[pane_merge.FieldOp], aggs: Sequence[SparkAgg]) -> tuple[
        list[pane_merge.FieldOp], dict[str, str]]:
    """Merge each distinct partial column once: aggregations often share one
    (``avg`` and ``sum`` both need ``sum(v)``). Returns the distinct ops
    (reading canonical columns) and {duplicate output: canonical output}."""
    text = {field(i, k): str(e) for i, a in enumerate(aggs) for k, e in a.partial().items()}
    canonical: dict[str, str] = {}
    first_by_text: dict[str, str] = {}
    for name, t in text.items():
        canonical[name] = first_by_text.setdefault(t, name)
    unique: dict[tuple[str, tuple[str, ...]], pane_merge.FieldOp] = {}
    copies: dict[str, str] = {}
    for op in fields:
        key = (op.op, tuple(canonical[c] for c in op.inputs))
        if key in unique:
            copies.update(zip(op.outputs, unique[key].outputs, strict=True))
        else:
            unique[key] = pane_merge.FieldOp(op.op, key[1], op.outputs)
    return list(unique.values()), copies


def by_key(rows: DataFrame, keys: Sequence[str]) -> DataFrame:
    """`rows` hash-partitioned by the keys (all of a key's rows in one
    partition), with an explicit partition count so adaptive execution does
    not merge partitions into uneven tasks; one partition without keys."""
    if not keys:
        return rows.repartition(1)
    session = rows.sparkSession
    n = max(int(session.conf.get("spark.sql.shuffle.partitions") or "8"),
            4 * session.sparkContext.defaultParallelism)
    return rows.repartition(n, *keys)
