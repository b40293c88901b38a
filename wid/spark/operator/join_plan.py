"""A window join of two streaming DataFrames on the WID operator (driver
side). Semantics and every streaming decision: `wid.semantics.window_join_stream`.

    left rows (prepared) ─┐
    right rows (prepared) ┴─ union ─ shard by matching key ─ pack
        ─ transformWithStateInPandas(WidProcessor(JoinCall)) ─ fired rows, late rows, counts

Each side is prepared as in batch (`wid.spark.join.prepare_side`: time in
epoch microseconds, the arrival instant with `use_system_time`, rejected
rows with a reason); the good rows of both sides are laid out as
`wid.spark.operator.join_layout` says, tagged with their side's source name,
and go through the operator's shards (`wid.spark.operator.plan.through_shards`),
whose state lives in Spark's state store and is checkpointed with the query.
The output is an append-only stream: each left row once, when its window
fires.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import wid.semantics.reasons
import wid.spark.join_merge
from wid.errors import ConfigError
from wid.spark.columns import PREFIX, REASON, TS
from wid.spark.operator import join_call, join_engine
from wid.spark.operator.join_call import JoinCall
from wid.spark.operator.join_engine import FIRED
from wid.spark.operator.join_layout import (
    LEFT_ORIGINAL,
    RIGHT_ORIGINAL,
    join_shape,
    key_names,
    raw_columns,
)
from wid.spark.operator.output import KIND, STATS
from wid.spark.operator.plan import REASON_COLUMN, operator_layout, through_shards
from wid.spark.operator.tables import FILE, PTIME, PUNCT, SRC
from wid.spec.join import SYSTEM_TIME, WindowJoin

FORM = "WID operator: window join sharded by matching key, vectorised state in Spark's state store"
WHY = ("a streaming window fires when a right row of its key past its end arrives (or max_delayed_time): "
       "both sides' rows are held per shard as Arrow tables and merged by binary search and O(1) range merges")
SHIPPED = (join_engine, join_call, wid.spark.join_merge, wid.semantics.reasons)
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
    """The good rows of one side in the operator's layout."""
    originals = [c for c in prepared.columns if not c.startswith(PREFIX)]
    names = join.left_keys if side == "left" else join.right_keys
    cols: list[Column] = [F.col(c).alias(k) for c, k in zip(names, key_names(join), strict=True)]
    if side == "left":
        cols = [F.col(c) for c in originals] + cols
    else:
        cols += [F.col(c).alias(r) for c, r in raw_columns(join).items()]
    cols += [F.col(TS), F.lit(source).alias(SRC)]  # no punctuation: its columns are constants (`NO_PUNCTUATION`)
    if join.late_data == "dlq":
        prefix = LEFT_ORIGINAL if side == "left" else RIGHT_ORIGINAL
        cols += [F.col(c).alias(prefix + c) for c in originals]
        cols.append(F.nullif(F.input_file_name(), F.lit("")).alias(FILE))
    return prepared.where(F.col(REASON).isNull()).select(*cols)


def _output_schema(spark: SparkSession, left: DataFrame, right: DataFrame, join: WindowJoin) -> T.StructType:
    """The operator's output columns: left columns, metrics (typed as the batch
    join types them), the firing instant, late-row columns and counts."""
    from wid.spark.join import join_result

    def empty(df: DataFrame) -> DataFrame:
        return spark.createDataFrame([], T.StructType([f for f in df.schema.fields if not f.name.startswith(PREFIX)]))

    probe = join_result(empty(left), empty(right), join).output.schema
    lefts = [f for f in left.schema.fields if not f.name.startswith(PREFIX)]
    fields = [T.StructField(KIND, T.StringType()), *[T.StructField(f.name, f.dataType) for f in lefts]]
    fields += [T.StructField(a, probe[a].dataType) for a in join.aliases]
    fields.append(T.StructField(FIRED, T.LongType()))
    if join.late_data == "dlq":
        for prefix, df in ((LEFT_ORIGINAL, left), (RIGHT_ORIGINAL, right)):
            fields += [T.StructField(prefix + f.name, f.dataType) for f in df.schema.fields
                       if not f.name.startswith(PREFIX)]
        fields += [T.StructField(c, T.StringType()) for c in (SRC, FILE, REASON_COLUMN)]
    return T.StructType([*fields, T.StructField(STATS, T.StringType())])


def operator_rows(left: DataFrame, right: DataFrame, join: WindowJoin, *, left_source: str = "left",
                  right_source: str = "right") -> DataFrame:
    """The operator's output over two prepared streaming sides
    (`wid.spark.join.prepare_side`): every kind of row (`KIND`: ``w`` a
    fired left row, ``l`` a late row, ``s`` a shard's counts)."""
    from wid.spark.ranks import sortable

    spark = left.sparkSession
    _, shards = operator_layout(spark)
    unordered = [f.name for df in (left, right) for f in df.schema.fields if not sortable(f.dataType)]
    columns = [c for c in left.columns if not c.startswith(PREFIX)]
    shape = join_shape(join, columns, sides=(left_source, right_source), shards=shards, unordered=unordered)
    rows = _side_rows(left, join, "left", left_source).unionByName(
        _side_rows(right, join, "right", right_source), allowMissingColumns=True)
    schema = _output_schema(spark, left, right, join)
    return through_shards(rows, list(key_names(join)), JoinCall(shape), schema, shipped=SHIPPED,
                          constants=NO_PUNCTUATION)


def fired_rows(rows: DataFrame, join: WindowJoin, columns: list[str]) -> DataFrame:
    """The fired left rows among the operator's output, in the batch join's
    columns (the left time column, or `system_time`: the firing
    micro-batch's timestamp; the matching columns; the other left columns;
    the metrics), before `null_fill`."""
    fired = rows.where(F.col(KIND) == "w")
    if join.use_system_time:
        head = [F.timestamp_micros(F.col(FIRED)).alias(SYSTEM_TIME)]
    else:
        head = [F.col(join.output_time)]
    first = (join.output_time, *join.left_keys)
    head += [F.col(k) for k in join.left_keys] + [F.col(c) for c in columns if c not in first]
    return fired.select(*head, *[F.col(a) for a in join.aliases])


def late_rows_of(rows: DataFrame, left_source: str) -> DataFrame:
    """The late rows the operator sent to the dead letter (``dlq``), in the
    dead-letter shape (reason, source, source_file, row_json): each row's
    own side's columns (the left side's rows have `left_source` as source)."""
    def as_json(prefix: str) -> Column:
        cols = [F.col(c).alias(c[len(prefix):]) for c in rows.columns if c.startswith(prefix)]
        return F.to_json(F.struct(*cols), {"ignoreNullFields": "false"})

    row_json = F.when(F.col(SRC) == left_source, as_json(LEFT_ORIGINAL)).otherwise(as_json(RIGHT_ORIGINAL))
    return rows.where(F.col(KIND) == "l").select(F.col(REASON_COLUMN).alias("reason"), F.col(SRC).alias("source"),
                                                 F.col(FILE).alias("source_file"), row_json.alias("row_json"))


__all__ = ["FORM", "SHIPPED", "WHY", "check_stream_join", "fired_rows", "late_rows_of", "operator_rows"]
