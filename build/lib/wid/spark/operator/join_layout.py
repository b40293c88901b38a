"""Driver-side layout of a streaming window join on the WID operator: the
`JoinShape` its shards run (`wid.kernels.operator.join_engine`) and the
internal column names both sides' rows carry. No pyspark here, so tests can
run the shards without Spark (``tests/spark/operator/join_harness.py``).

Columns of the operator's rows: the left columns as they are (left rows
only), the matching keys as ``_wid_k<j>`` (both sides; Spark's union
coerces the two sides' key types to one, so equal keys hash to one shard),
the right columns the metrics read as ``_wid_c<j>`` (right rows only; a
right column may share a left column's name), `TS`, `SRC` (the side's
source name) and, for ``late_data = "dlq"``, each side's original columns
as ``_wid_o_l_<name>`` / ``_wid_o_r_<name>``.
"""

from __future__ import annotations

from collections.abc import Sequence

from wid.kernels.operator.join_engine import JoinShape
from wid.kernels.vector_aggregates import vector_agg
from wid.spec.aggregation import Aggregation
from wid.spec.join import ColumnMetric, WindowJoin

US = 1000
KEY, RAW = "_wid_k", "_wid_c"
LEFT_ORIGINAL, RIGHT_ORIGINAL = "_wid_o_l_", "_wid_o_r_"


def key_names(join: WindowJoin) -> tuple[str, ...]:
    """The internal matching-key columns, ``_wid_k0``, ``_wid_k1``, ..."""
    return tuple(f"{KEY}{j}" for j in range(len(join.left_keys)))


def raw_columns(join: WindowJoin) -> dict[str, str]:
    """{right column the metrics read: its internal name ``_wid_c<j>``}, in
    metric order."""
    used = [c for m in join.metrics for c in ((m.column,) if isinstance(m, ColumnMetric) else m.columns)]
    return {c: f"{RAW}{j}" for j, c in enumerate(dict.fromkeys(used))}


def join_shape(join: WindowJoin, left_columns: Sequence[str], *, sides: tuple[str, str] = ("left", "right"),
               shards: int = 1, unordered: Sequence[str] = ()) -> JoinShape:
    """The shape of `join` with left columns `left_columns` (in order);
    columns in `unordered` (left or right columns of types the shards
    cannot sort) never order ties."""
    raw = raw_columns(join)
    aggs = tuple(vector_agg(m.agg, raw.get(m.column or ""), raw.get(m.column2 or ""), None, m.percent, None, m.as_)
                 for m in join.metrics if isinstance(m, Aggregation))
    values = tuple((raw[m.column], m.alias) for m in join.metrics if isinstance(m, ColumnMetric))
    a, b = join.window
    return JoinShape(
        sides=sides, keys=key_names(join), payload=tuple(left_columns),
        ties=tuple(c for c in left_columns if c not in unordered),
        aggs=aggs, aliases=tuple(m.as_ for m in join.metrics if isinstance(m, Aggregation)),
        raw=tuple(raw.values()), values=values,
        ordered=tuple(dict.fromkeys(raw[m.column] for m in join.metrics
                                    if isinstance(m, ColumnMetric) and m.column not in unordered)),
        bounds_us=None if join.special else (a * US, b * US),
        delay_us=None if join.max_delayed_time is None else join.max_delayed_time * US,
        garbage_size=join.garbage_size, late_data=join.late_data, shards=shards)


__all__ = ["KEY", "LEFT_ORIGINAL", "RAW", "RIGHT_ORIGINAL", "join_shape", "key_names", "raw_columns"]
