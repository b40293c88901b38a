"""A window join of two streaming DataFrames on the WID operator (driver
side). Semantics and every streaming decision: `wid.semantics.window_join_stream`.

    left rows (prepared) ─┐
    right rows (prepared) ┴─ union ─ shard by matching key ─ pack
        ─ transformWithStateInPandas(WidProcessor(JoinCall)) ─ fired rows, late rows, counts

Each side is prepared as in batch (`wid.spark.join.prepare_side`: time in
epoch microseconds, the arrival instant with `use_system_time`, rejected
rows with a reason); the good rows of both sides are laid out as
`wid.spark.operator.join_layout` says, tagged with their side's source name,
and go through the operator's shards (`wid.spark.operator.query.through_shards`),
whose state lives in Spark's state store and is checkpointed with the query.
The output is an append-only stream: each left row once, when its window
fires.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from wid.aggregates.spark import result_type
from wid.errors import ConfigError
from wid.kernels.operator.join_call import JoinCall
from wid.kernels.operator.join_engine import FIRED
from wid.kernels.operator.output import KIND, LATE_ROW, STATS, WINDOW_ROW
from wid.kernels.tables import FILE, PTIME, PUNCT, ROW_JSON, SRC
from wid.spark.columns import PREFIX, REASON, TS
from wid.spark.join import null_fill
from wid.spark.operator.join_layout import (
    LEFT_ORIGINAL,
    RIGHT_ORIGINAL,
    join_shape,
    key_names,
    raw_columns,
)
from wid.spark.operator.query import (
    REASON_COLUMN,
    operator_layout,
    rejected_rows_of,
    through_shards,
)
from wid.spark.prepare import row_json
from wid.spark.source_files import source_file
from wid.spec.aggregation import Aggregation
from wid.spec.join import SYSTEM_TIME, WindowJoin
from wid.spec.time_text import ROW_JSON_OPTIONS

FORM = "WID operator: window join sharded by matching key, vectorised state in Spark's state store"
WHY = ("a streaming window fires when a right row of its key past its end arrives (or max_delayed_time): "
       "both sides' rows are held per shard as Arrow tables and merged by binary search and O(1) range merges")
NO_PUNCTUATION = {PUNCT: False, PTIME: None}  # a join's rows are never punctuations: not sent, set on arrival


def check_stream_join(left: DataFrame, right: DataFrame, join: WindowJoin) -> None:
    """Raise ConfigError when `join` cannot run on these inputs as a stream:
    one side a stream and the other not, or `sort_by_time`."""
    if left.isStreaming != right.isStreaming:
        side = "right" if left.isStreaming else "left"
        raise ConfigError(side, "a streaming window join needs both sides to be streams (this side is a batch "
                          "DataFrame)", "read both sides with readStream, or both with read")
    if join.sort_by_time:
        raise ConfigError("sort_by_time", "a stream's output has no global time order (rows are appended as "
                          "their windows fire)", "remove sort_by_time and order the sink's table when reading it")


def _side_rows(prepared: DataFrame, join: WindowJoin, side: str, source: str) -> DataFrame:
    """One side's rows in the operator's layout, read in one scan: its good
    rows, and its rows rejected as bad input (`REASON_COLUMN`, `ROW_JSON`
    and the file set), which the shards pass to the dead letter."""
    originals = [c for c in prepared.columns if not c.startswith(PREFIX)]
    names = join.left_keys if side == "left" else join.right_keys
    cols: list[Column] = [F.col(c).alias(k) for c, k in zip(names, key_names(join), strict=True)]
    if side == "left":
        cols = [F.col(c) for c in originals] + cols
    else:
        cols += [F.col(c).alias(r) for c, r in raw_columns(join).items()]
    cols += [F.col(TS), F.lit(source).alias(SRC)]  # no punctuation: its columns are constants (`NO_PUNCTUATION`)
    rejected = F.col(REASON).isNotNull()
    cols += [F.col(REASON).alias(REASON_COLUMN), F.when(rejected, row_json(prepared)).alias(ROW_JSON)]
    file = source_file(prepared)
    if join.late_data == "dlq":
        prefix = LEFT_ORIGINAL if side == "left" else RIGHT_ORIGINAL
        cols += [F.col(c).alias(prefix + c) for c in originals]
        cols.append(file.alias(FILE))
    else:
        cols.append(F.when(rejected, file).alias(FILE))
    return prepared.select(*cols)


def _output_schema(left: DataFrame, right: DataFrame, join: WindowJoin) -> T.StructType:
    """The operator's output columns, from the join and the inputs' schemas:
    the row kind, the left columns, each metric typed as the batch join
    types it, the firing instant, the dead-letter columns and the shards'
    counts."""
    lefts = [f for f in left.schema.fields if not f.name.startswith(PREFIX)]
    rights = {f.name: f.dataType for f in right.schema.fields}
    fields = [T.StructField(KIND, T.StringType()), *[T.StructField(f.name, f.dataType) for f in lefts]]
    for m in join.metrics:
        if isinstance(m, Aggregation):
            fields.append(T.StructField(m.as_, result_type(m, rights)))
        else:
            value = rights[m.column]
            fields.append(T.StructField(m.alias, T.ArrayType(value) if join.special else value))
    fields.append(T.StructField(FIRED, T.LongType()))
    if join.late_data == "dlq":
        for prefix, df in ((LEFT_ORIGINAL, left), (RIGHT_ORIGINAL, right)):
            fields += [T.StructField(prefix + f.name, f.dataType) for f in df.schema.fields
                       if not f.name.startswith(PREFIX)]
    fields += [T.StructField(c, T.StringType()) for c in (SRC, FILE, REASON_COLUMN, ROW_JSON)]
    return T.StructType([*fields, T.StructField(STATS, T.StringType())])


def operator_rows(left: DataFrame, right: DataFrame, join: WindowJoin, *, left_source: str = "left",
                  right_source: str = "right", cache_id: str | None = None) -> DataFrame:
    """The operator's output over two prepared streaming sides
    (`wid.spark.join.prepare_side`): every kind of row (`KIND`: ``w`` a
    fired left row, ``l`` a late row, ``s`` a shard's counts); `cache_id`
    as in `wid.spark.operator.query.through_shards`."""
    from wid.spark.ranks import sortable

    _, shards = operator_layout(left.sparkSession)
    unordered = [f.name for df in (left, right) for f in df.schema.fields if not sortable(f.dataType)]
    columns = [c for c in left.columns if not c.startswith(PREFIX)]
    shape = join_shape(join, columns, sides=(left_source, right_source), shards=shards, unordered=unordered)
    rows = _side_rows(left, join, "left", left_source).unionByName(
        _side_rows(right, join, "right", right_source), allowMissingColumns=True)
    schema = _output_schema(left, right, join)
    return through_shards(rows, list(key_names(join)), JoinCall(shape), schema,
                          constants=NO_PUNCTUATION, cache_id=cache_id)


def fired_rows(rows: DataFrame, join: WindowJoin, columns: list[str]) -> DataFrame:
    """The fired left rows among the operator's output, in the batch join's
    columns (the left time column, or `system_time`: the firing
    micro-batch's timestamp; the matching columns; the other left columns;
    the metrics), before `null_fill`."""
    fired = rows.where(F.col(KIND) == WINDOW_ROW)
    if join.use_system_time:
        head = [F.timestamp_micros(F.col(FIRED)).alias(SYSTEM_TIME)]
    else:
        head = [F.col(join.output_time)]
    first = (join.output_time, *join.left_keys)
    head += [F.col(k) for k in join.left_keys] + [F.col(c) for c in columns if c not in first]
    return fired.select(*head, *[F.col(a) for a in join.aliases])


def fired_output(rows: DataFrame, join: WindowJoin, columns: list[str]) -> DataFrame:
    """The joined rows among the operator's output `rows` (a stream, or one
    micro-batch of it), in the window join's output columns, `null_fill`
    applied. `columns` are the left columns in input order."""
    return null_fill(fired_rows(rows, join, columns), join)


def late_rows_of(rows: DataFrame, left_source: str) -> DataFrame:
    """The late rows the operator sent to the dead letter (``dlq``), in the
    dead-letter shape (reason, source, source_file, row_json): each row's
    own side's columns (the left side's rows have `left_source` as source)."""
    def as_json(prefix: str) -> Column:
        cols = [F.col(c).alias(c[len(prefix):]) for c in rows.columns if c.startswith(prefix)]
        return F.to_json(F.struct(*cols), ROW_JSON_OPTIONS)

    row_json = F.when(F.col(SRC) == left_source, as_json(LEFT_ORIGINAL)).otherwise(as_json(RIGHT_ORIGINAL))
    return rows.where(F.col(KIND) == LATE_ROW).select(F.col(REASON_COLUMN).alias("reason"), F.col(SRC).alias("source"),
                                                 F.col(FILE).alias("source_file"), row_json.alias("row_json"))


def dead_letters_of(rows: DataFrame, join: WindowJoin, left_source: str) -> DataFrame:
    """Every dead letter among the operator's output: both sides' rejected
    rows, and the late rows under ``late_data = "dlq"``."""
    rejected = rejected_rows_of(rows)
    return rejected.unionByName(late_rows_of(rows, left_source)) if join.late_data == "dlq" else rejected


__all__ = ["FORM", "WHY", "check_stream_join", "dead_letters_of", "fired_output", "fired_rows", "late_rows_of",
           "operator_rows"]
