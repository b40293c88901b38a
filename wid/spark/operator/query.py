"""Compiling a window to the WID operator's Spark plan (driver side).

    prepared rows (per source, data and punctuation rows in one scan) ─ union
        ─ mapInArrow(pack) ─ groupBy(shard).transformWithStateInPandas(WidProcessor(ShardCall)) ─ rows of every kind

Rows are sharded by ``pmod(xxhash64(keys), shards)`` where keys are the
punctuation scope if there is one (a keyed punctuation must reach the shard
of its groups), else the group columns. Shard s is grouped under a key value
that Spark's hash partitioning sends to partition ``s mod P``, so shards
spread evenly over the tasks. The shard count is
``spark.wid.operator.shards`` (default: ``spark.sql.shuffle.partitions``);
it is part of the state's layout, and a restart with another value is
refused by the shards (see `wid.kernels.operator.shard.run_batch`).
``spark.wid.operator.combine`` (default on) has `pack` combine a tumbling or
hopping window's rows per (group, pane) inside each input partition before
the shuffle (`wid.kernels.operator.combine`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from wid.aggregates.spark import result_type
from wid.kernels.fields import END, FINAL, START
from wid.kernels.operator.layout import OperatorSpec
from wid.kernels.operator.output import (
    KIND,
    LATE_ROW,
    REJECTED_ROW,
    RETRACTION_ROW,
    SEQUENCE,
    STATS,
    WINDOW_ROW,
)
from wid.kernels.operator.packing import BATCH_MS, KEY, PACKED, SHARD, pack
from wid.kernels.operator.shard_call import ShardCall
from wid.kernels.tables import CLOCK, FILE, ORIGINAL, PTIME, PUNCT, ROW_JSON, SRC, TS
from wid.kernels.tables import REASON as REASON_COLUMN
from wid.kernels.vector_aggregates import vector_agg
from wid.semantics.trigger import policy_of
from wid.semantics.watermark import PARTITION_BITS
from wid.spark.columns import PREFIX, REASON, as_wall_clock, exact, sql, timestamp_us
from wid.spark.compat import arrow_schema
from wid.spark.kinds import plan_of
from wid.spark.operator import processor as processor_module
from wid.spark.operator.extent_plan import check_stream, unordered
from wid.spark.operator.processor import WidProcessor
from wid.spark.output import assemble
from wid.spark.prepare import (
    event_time,
    numeric_casts,
    numeric_window,
    originals,
    prepare,
    punctuation_mark,
    row_json,
)
from wid.spark.shipping import ship
from wid.spark.source_files import source_file
from wid.spec.pipeline import KAFKA_PARTITION, KAFKA_TOPIC
from wid.spec.time_text import ROW_JSON_OPTIONS
from wid.spec.window import FINAL_COLUMN, Window

US = 1000
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
SHARDS_CONF = "spark.wid.operator.shards"
STATE_CACHE_CONF = "spark.wid.operator.stateCache"  # "true" (default) or "false": `wid.kernels.operator.state_cache`
COMBINE_CONF = "spark.wid.operator.combine"  # "true" (default) or "false": `wid.kernels.operator.combine`
PROVIDER = "spark.sql.streaming.stateStore.providerClass"
CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"


def operator_spec(window: Window, *, pipeline: str, shards: int, dead_letter_columns: tuple[str, ...] = (),
                  input_columns: tuple[str, ...] = (), unordered: tuple[str, ...] = ()) -> OperatorSpec:
    """What the operator's shards need to know of `window`; `input_columns`
    (in order, `unordered` those Spark cannot sort) shape count and rolling
    windows (the kind's fields: `wid.spark.kinds`)."""
    w = window
    aggs = tuple(vector_agg(a.agg, a.column, a.column2, w.shape.tie_breaker, a.percent, a.max_distinct_values_per_group,
                            a.as_) for a in w.aggregations)
    return OperatorSpec(
        kind=w.kind, shape=plan_of(w).engine_shape(w, input_columns, unordered), group_by=w.group_by, aggs=aggs, aliases=tuple(a.as_ for a in w.aggregations),
        scope=w.punctuation.scope if w.punctuation is not None else (),
        lateness_us=w.lateness_ms * US, policy=policy_of(w), late_data=w.late_data, idleness_ms=w.source_idleness_ms,
        max_groups=w.max_groups_per_window, pipeline=pipeline, shards=shards,
        dead_letter_columns=dead_letter_columns)


@dataclass(frozen=True)
class OperatorPlan:
    """The operator's output rows (every kind, see `wid.kernels.operator.output`),
    what was compiled, and the rows' `columns` (known without asking Spark
    to analyse the plan)."""

    rows: DataFrame
    spec: OperatorSpec
    columns: tuple[str, ...]


def shard_keys(spark: SparkSession, shards: int, partitions: int) -> list[int]:
    """For each shard, a key value Spark's hash partitioning over
    `partitions` sends to partition ``shard mod partitions``."""
    per = -(-shards // partitions)
    found: dict[int, list[int]] = {}
    probe = spark.range(0, 64 * per * partitions).select("id", F.pmod(F.hash("id"), F.lit(partitions)).alias("p"))
    for row in probe.collect():
        found.setdefault(int(row["p"]), []).append(int(row["id"]))
    keys = [found[s % partitions][s // partitions] for s in range(shards)]
    if len(set(keys)) != shards:
        raise RuntimeError("could not find a distinct key per shard")  # a hash this skewed is impossible in practice
    return keys


def _needed(window: Window, originals: list[str]) -> list[str]:
    cols = [*window.key_columns, *(c for _, c in window.shape.columns())]
    cols += [c for a in window.aggregations for c in a.columns] + plan_of(window).operator_columns(window, originals)
    return list(dict.fromkeys(c for c in cols if c))


def _source_rows(frame: DataFrame, window: Window, source: str, dead_letter: bool,
                 constants: Mapping[str, object]) -> DataFrame:
    """The operator's input rows of one source, read in one scan: its data
    rows, its rows rejected as bad input (`REASON`, `ROW_JSON` and the file
    set: the shards pass them to the dead letter, so the window stage and
    the dead letter see the same rows of the same scan) and, under a
    punctuation predicate, its punctuation rows (`PUNCT`; their time in
    `PTIME`, their scope columns, the rest NULL). Splitting the source into
    branches would read each micro-batch's files once per branch (a second
    wave of scan tasks, 0.15-0.25 s per micro-batch on the rolling
    benchmark, `benchmarks.stream_rolling`), and a file reader that prunes
    columns may find a record malformed in one branch and not in another.
    Columns named in `constants` are left out (`wid.kernels.operator.packing`)."""
    prepared = prepare(frame, window)
    p = window.punctuation
    marked: Column = F.lit(False)
    ptime: Column = F.lit(None).cast("long")
    if p is not None:
        marked = punctuation_mark(p.predicate)
        timed = replace(window, event_time_column=p.time_column) if p.time_column else window
        ptime = F.when(marked, sql(event_time(frame, timed).valid_us))
    scope = p.scope if p is not None else ()
    rejected = ~marked & F.col(REASON).isNotNull()
    numeric = numeric_window(frame, window)

    def data(col: Column, name: str) -> Column:
        return col.alias(name) if p is None else F.when(~marked, col).alias(name)

    cols = [F.col(c) if c in scope else data(F.col(c), c) for c in dict.fromkeys([*_needed(numeric, originals(frame)),
                                                                                 *scope])]
    cols.append(data(F.col(TS), TS))
    cols += [c.alias(n) for c, n in ((F.lit(source), SRC), (marked, PUNCT), (ptime.cast("long"), PTIME))
             if n not in constants]
    if KAFKA_TOPIC in frame.columns and KAFKA_PARTITION in frame.columns:  # one watermark per partition
        topic = F.shiftleft(F.crc32(F.col(KAFKA_TOPIC).cast("binary")), PARTITION_BITS)
        cols.append(topic.bitwiseOR(F.col(KAFKA_PARTITION).cast("long")).alias(CLOCK))  # watermark.partition_id
    cols += [F.when(rejected, F.col(REASON)).alias(REASON_COLUMN), F.when(rejected, row_json(prepared)).alias(ROW_JSON)]
    file = source_file(prepared)
    if dead_letter:
        cols += [data(F.col(c), ORIGINAL + c) for c in originals(frame)]
        cols.append(data(file, FILE))
    else:
        cols.append(F.when(rejected, file).alias(FILE))
    return prepared.select(*cols)


def _output_schema(source: DataFrame, window: Window, dead_letter: bool) -> T.StructType:
    """The operator's output columns, from the window and the input's
    schema: the row kind, bounds and final flag, (count: the window id,)
    the group columns (rolling: every input column), each aggregation typed
    as the batch plans type it (`wid.aggregates.spark.result_type`), the
    dead-letter columns, the shard's micro-batch number when a window may
    be emitted more than once (`Window.reemits`) and the shards' counts.
    Nullable: each kind of row leaves the others' columns NULL."""
    inputs = [f for f in source.schema.fields if not f.name.startswith(PREFIX)]
    types = {f.name: f.dataType for f in inputs} | {name: T.DoubleType() for name in numeric_casts(source, window)}
    fields = [T.StructField(KIND, T.StringType()), T.StructField(START, T.LongType()),
              T.StructField(END, T.LongType()), T.StructField(FINAL, T.BooleanType())]
    if window.shape.numbered:
        fields.append(T.StructField(window.window_id_column, T.LongType()))
    carried = [f.name for f in inputs] if window.shape.row_windows else list(window.key_columns)
    fields += [T.StructField(c, types[c]) for c in carried]
    fields += [T.StructField(a.as_, result_type(a, types)) for a in numeric_window(source, window).aggregations]
    if dead_letter:
        fields += [T.StructField(ORIGINAL + f.name, f.dataType) for f in inputs]
    fields += [T.StructField(c, T.StringType()) for c in (SRC, FILE, REASON_COLUMN, ROW_JSON)]
    if window.reemits:  # orders a window's emissions (`changes_of`)
        fields.append(T.StructField(SEQUENCE, T.LongType()))
    return T.StructType([*fields, T.StructField(STATS, T.StringType())])


def store_settings(spark: SparkSession) -> dict[str, str]:
    """The settings the operator needs that `spark` lacks: Spark's RocksDB
    state store, which transformWithState needs, and its changelog
    checkpointing unless the session says otherwise.

    Changelog checkpointing (Spark's documented switch; a checkpoint moves
    between the two mechanisms in both directions) makes a commit write only
    the batch's changes and leaves the snapshot upload to the state store's
    background maintenance. The operator rewrites a few large values per
    shard every batch, so without it each commit zips and syncs a snapshot:
    on the rolling benchmark (`benchmarks.stream_rolling`) the commits of 4
    shards took 460-590 ms a batch, with it 260-300 ms."""
    out = {} if spark.conf.get(PROVIDER, "") == ROCKSDB else {PROVIDER: ROCKSDB}
    return out | ({CHANGELOG: "true"} if spark.conf.get(CHANGELOG, None) is None else {})


def operator_layout(spark: SparkSession, configure: bool = True) -> tuple[int, int]:
    """(shuffle partitions, shards) of an operator plan; with `configure`,
    sets the `store_settings` the session lacks (without, whoever starts
    the query sets them on it, as a declarative pipeline's flow does)."""
    for key, value in (store_settings(spark) if configure else {}).items():
        spark.conf.set(key, value)
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or 1)
    return partitions, int(spark.conf.get(SHARDS_CONF, str(partitions)) or partitions)


def compile_operator(sources: Mapping[str, DataFrame], window: Window, pipeline: str,
                     cache_id: str | None = None, configure: bool = True) -> OperatorPlan:
    """The WID operator over several named sources (their rows as read: the
    operator prepares them, and marks the punctuation predicate's rows);
    with a `cache_id`, its shards keep a host-local copy of their state
    (see `through_shards`); `configure`: see `operator_layout`."""
    first = next(iter(sources.values()))
    spark = first.sparkSession
    _, shards = operator_layout(spark, configure)
    dead_letter = window.late_data == "dlq"
    inputs = T.StructType([f for f in first.schema.fields if not f.name.startswith(PREFIX)])
    check_stream(window, inputs)
    spec = operator_spec(numeric_window(first, window), pipeline=pipeline, shards=shards,
                         dead_letter_columns=tuple(originals(first)) if dead_letter else (),
                         input_columns=tuple(inputs.fieldNames()), unordered=tuple(unordered(inputs)))
    constants = unsent(window, sources)
    parts = [_source_rows(frame, window, name, dead_letter, constants) for name, frame in sources.items()]
    rows = functools.reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), parts)
    keys = window.punctuation.scope if window.punctuation is not None and window.punctuation.scope else \
        window.closing_columns
    scoped = bool(window.punctuation is not None and window.punctuation.scope)
    schema = _output_schema(first, window, dead_letter)
    combine = spec if combining(spark) else None
    return OperatorPlan(through_shards(rows, list(keys), ShardCall(spec), schema, scoped=scoped, constants=constants,
                                       cache_id=cache_id, configure=configure, combine=combine),
                        spec, tuple(schema.fieldNames()))


def switched_on(value: str | None) -> bool:
    """A ``spark.wid.operator.*`` switch's value read as on (the default) unless it is ``false``."""
    return (value or "true").strip().lower() != "false"


def combining(spark: SparkSession) -> bool:
    """Do the operator's rows combine before the shuffle, where the window
    allows it (`wid.kernels.operator.combine`)? Unless the session sets
    ``spark.wid.operator.combine`` to ``false``."""
    return switched_on(spark.conf.get(COMBINE_CONF, None))


def unsent(window: Window, sources: Mapping[str, DataFrame]) -> dict[str, object]:
    """The operator's input columns that hold one value on every row, and
    that value: the source name of a single source; no punctuation's columns."""
    constants: dict[str, object] = {SRC: next(iter(sources))} if len(sources) == 1 else {}
    if window.punctuation is None:
        constants.update({PUNCT: False, PTIME: None})
    return constants


def through_shards(rows: DataFrame, keys: list[str], call: ShardCall, schema: T.StructType, *,
                   scoped: bool = False, constants: Mapping[str, object] | None = None,
                   cache_id: str | None = None, configure: bool = True,
                   combine: OperatorSpec | None = None) -> DataFrame:
    """`rows` (the operator's input columns but those named in `constants`)
    sharded by ``pmod(xxhash64(keys), shards)``, packed per shard, through
    `call` (once per shard and micro-batch, inside `WidProcessor`), which
    sees the `constants` columns again and returns rows in `schema`
    (`wid.kernels.operator.output`).

    With a `cache_id` (fresh for the plan; and unless
    ``spark.wid.operator.stateCache`` is ``false``) the shards keep a
    host-local copy of their state (`wid.kernels.operator.state_cache`) in
    a directory of that name, which whoever runs the query removes when it
    ends (`wid.spark.operator.cache_files.drop_cache_dirs`): wid's pipeline
    runner does; a stream started by hand runs without the copy unless it
    asks for it. `configure`: see `operator_layout`. Given the window's
    `combine` spec, `pack` combines rows before the shuffle where the window
    allows it (`wid.kernels.operator.combine`)."""
    spark = rows.sparkSession
    partitions, shards = operator_layout(spark, configure)
    shard_of = F.pmod(F.xxhash64(*[F.col(k) for k in keys]), F.lit(shards)) if keys else F.lit(0)
    # the shard as a 4-byte int: 4 bytes a row less through the Arrow conversion into `pack`
    rows = rows.withColumn(SHARD, shard_of.cast("int")).withColumn(BATCH_MS, F.unix_millis(F.current_timestamp()))
    ship(processor_module)
    packed = rows.mapInArrow(functools.partial(pack, keys=shard_keys(spark, shards, partitions), scoped=scoped,
                                               constants=dict(constants or {}), combine=combine),
                             T.StructType.fromJson(_packed_json()))
    arrow = arrow_schema(schema, spark.conf.get("spark.sql.session.timeZone") or "UTC")
    cache_state = cache_id is not None and switched_on(spark.conf.get(STATE_CACHE_CONF, None))
    processor = WidProcessor(call.emitting(arrow, cache_id if cache_state else None))  # pickles the call: after `ship`
    return packed.groupBy(KEY).transformWithStateInPandas(processor, schema, "Append", "None")


def _packed_json() -> dict[str, object]:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(PACKED).jsonValue()


def windows_of(rows: DataFrame, window: Window, wall_clock: bool = False, columns: Sequence[str] | None = None, *,
               then: tuple[Column, ...] = ()) -> DataFrame:
    """The window rows among the operator's output, in docs/semantics.md#window-kinds's
    columns (timestamps, or wall-clock ``TIMESTAMP_NTZ`` with `wall_clock`;
    a rolling row is its input columns and the aliases), plus ``is_final``
    with ``emit = "on_update"``, then the columns `then` (of the operator's
    rows). `columns`: the operator rows' (`OperatorPlan.columns`), which
    spares Spark an analysis of `rows`; a declarative pipeline's query
    function may not ask for one."""
    extra = (F.col(FINAL).alias(FINAL_COLUMN),) if window.emit == "on_update" else ()
    windows = rows.where(F.col(KIND) == WINDOW_ROW)
    if window.shape.row_windows:
        present = rows.columns if columns is None else columns
        return windows.select(*[c for c in present if not c.startswith(PREFIX)], *extra, *then)
    window_id = F.col(window.window_id_column) if window.shape.numbered else None
    out = assemble(windows, window, F.col(START), F.col(END), window_id=window_id, extra=extra + then,
                   label=plan_of(window).label(window, exact(START), exact(END)))
    bounds = window.output_prefix[:2]
    return as_wall_clock(out, bounds, window.shape.time_zone, columns=bounds) if wall_clock else out


def retractions_of(rows: DataFrame, window: Window, wall_clock: bool = False, *,
                   then: tuple[Column, ...] = ()) -> DataFrame:
    """The natural keys (window start, group columns) of session windows the
    operator retracted, then the columns `then`: the sink must delete them
    (they merged into another session, or took an earlier start)."""
    start = window.window_start_column
    out = rows.where(F.col(KIND) == RETRACTION_ROW).select(timestamp_us(F.col(START)).alias(start), *window.group_by,
                                                           *then)
    return as_wall_clock(out, (start,), window.shape.time_zone, columns=(start,)) if wall_clock else out


def late_rows_of(rows: DataFrame, columns: Sequence[str] | None = None) -> DataFrame:
    """The late rows the operator sent to the dead letter, in the dead-letter
    shape (reason, source, source_file, row_json); `columns`: as for
    `windows_of`."""
    present = rows.columns if columns is None else columns
    originals = [F.col(c).alias(c[len(ORIGINAL):]) for c in present if c.startswith(ORIGINAL)]
    late = rows.where(F.col(KIND) == LATE_ROW)
    return late.select(F.col(REASON_COLUMN).alias("reason"), F.col(SRC).alias("source"),
                       F.col(FILE).alias("source_file"),
                       F.to_json(F.struct(*originals), ROW_JSON_OPTIONS).alias("row_json"))


def rejected_rows_of(rows: DataFrame) -> DataFrame:
    """The rows rejected as bad input, as the shards passed them on, in the
    dead-letter shape (reason, source, source_file, row_json)."""
    return rows.where(F.col(KIND) == REJECTED_ROW).select(F.col(REASON_COLUMN).alias("reason"), F.col(SRC).alias("source"),
                                                 F.col(FILE).alias("source_file"), F.col(ROW_JSON).alias("row_json"))


def dead_letters_of(rows: DataFrame, window: Window, columns: Sequence[str] | None = None) -> DataFrame:
    """Every dead letter among the operator's output: rejected rows, and the
    late rows under ``late_data = "dlq"``; `columns`: as for `windows_of`."""
    rejected = rejected_rows_of(rows)
    return rejected.unionByName(late_rows_of(rows, columns)) if window.late_data == "dlq" else rejected


__all__ = ["CHANGELOG", "COMBINE_CONF", "OperatorPlan", "PROVIDER", "REASON_COLUMN", "ROCKSDB", "SHARDS_CONF", "STATE_CACHE_CONF", "switched_on",
           "combining", "compile_operator", "dead_letters_of", "late_rows_of", "operator_layout", "operator_spec",
           "rejected_rows_of", "retractions_of", "shard_keys", "store_settings", "through_shards", "windows_of"]
