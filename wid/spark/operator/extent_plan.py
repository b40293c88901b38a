"""Driver-side ranks of count and rolling windows on the WID operator: the
rank order its shards sort by (their shapes are the kinds', `wid.spark.kinds`),
and the checks a stream needs.

Ranks order as in batch (`wid.spark.ranks`, `wid.semantics.ranks`):
`order_by` (the event time on a stream under ``rank_by = "order"``), then
the `tie_breaker`, else every other input column Spark can sort, in input
order. The shards sort with Arrow, which orders numbers, strings, binaries,
booleans, decimals and times as Spark does (NULL first, NaN last) but not
arrays or structs: a window whose tie order needs those is refused, naming
`tie_breaker`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import types as T

from wid.errors import ConfigError
from wid.kernels.operator.layout import Ranking
from wid.kernels.tables import TS
from wid.spec.window import Window


def ranking(window: Window, columns: Sequence[str], unordered: Sequence[str] = ()) -> Ranking:
    """The rank order over the input `columns` (those in `unordered` cannot
    be sorted and are left out of the default tie order)."""
    w = window
    first = TS if w.rank_by == "order" or w.order_by is None else w.order_by
    rest = [w.tie_breaker] if w.tie_breaker else [c for c in columns if c not in unordered]
    return Ranking(w.rank_by, (first, *rest))


def _arrow_sortable(t: T.DataType) -> bool:
    return not isinstance(t, T.ArrayType | T.StructType | T.MapType | T.VariantType)


def check_stream(window: Window, schema: T.StructType) -> None:
    """Raise ConfigError when `window` ranks rows on a stream by a tie order
    holding a type the shards cannot sort (what the window's trigger policy
    refuses on a stream, `wid.spark.compile.check_streamable` refuses first)."""
    if not window.shape.ranks_rows():
        return
    names = [f.name for f in schema.fields]
    order = ranking(window, names, unordered(schema)).order
    for f in schema.fields:
        if f.name in order and not _arrow_sortable(f.dataType):
            raise ConfigError("tie_breaker", f"ranks on a stream order ties by column '{f.name}' "
                              f"({f.dataType.simpleString()}), which the operator cannot sort",
                              "set tie_breaker to a column of numbers, strings or times")


def unordered(schema: T.StructType) -> list[str]:
    """Input columns Spark cannot sort (maps, variants): never in a tie order."""
    from wid.spark.ranks import sortable

    return [f.name for f in schema.fields if not sortable(f.dataType)]


__all__ = ["check_stream", "ranking", "unordered"]
