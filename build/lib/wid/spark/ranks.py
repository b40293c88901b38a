"""Ranks: the total order that count windows and `every_rows` count in.

Order by `order_by` (default: the event time), then the `tie_breaker`, else
every other input column in input order (those Spark can sort), so ranks are
deterministic: rows equal on all of them are interchangeable. Matches
`wid.semantics.ranks`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, WindowSpec
from pyspark.sql import Window as W
from pyspark.sql import functions as F
from pyspark.sql import types as T

from wid.spark.columns import PREFIX, RANK, TS
from wid.spec.window import Window


def sortable(t: T.DataType) -> bool:
    """Can Spark order by a column of type `t`? (Not maps, variants, or
    arrays and structs holding them.)"""
    if isinstance(t, T.MapType | T.VariantType):
        return False
    if isinstance(t, T.ArrayType):
        return sortable(t.elementType)
    if isinstance(t, T.StructType):
        return all(sortable(f.dataType) for f in t.fields)
    return True


def order_columns(df: DataFrame, window: Window, then: Sequence[str] = ()) -> list[Column]:
    """The rank order, ascending with NULLs first (Spark's default). With a
    `tie_breaker`, the columns `then` refine it: they order only rows that
    tie on the time and the tie-breaker, which the rank order leaves
    interchangeable."""
    first = F.col(window.order_by or TS)
    if window.tie_breaker:
        return [first, *[F.col(c) for c in dict.fromkeys((window.tie_breaker, *then))]]
    rest = [f.name for f in df.schema.fields if not f.name.startswith(PREFIX) and sortable(f.dataType)]
    return [first, *[F.col(c) for c in rest]]


def rank_order(df: DataFrame, window: Window, partition: Sequence[str], then: Sequence[str] = ()) -> WindowSpec:
    """Each `partition`'s rows in rank order (`order_columns`)."""
    return W.partitionBy(*partition).orderBy(*order_columns(df, window, then))


def with_rank(df: DataFrame, window: Window, partition: Sequence[str], name: str = RANK,
              order: WindowSpec | None = None) -> DataFrame:
    """`df` plus the 0-based rank within each `partition` as `name`, in
    `order` (default: `rank_order`)."""
    order = order or rank_order(df, window, partition)
    return df.select("*", (F.row_number().over(order) - 1).alias(name))
