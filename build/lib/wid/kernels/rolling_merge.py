"""Rolling windows in batch by sorted prefix sums: each input row's extent
``(t.ts - d, t.ts]`` merged from its key's rows in O(1), vectorised over a
whole partition (the `mapInArrow` function of `wid.spark.rolling`).

Per partition (holding every row of its keys): one-row partials of every
aggregation (`wid.kernels.vector_aggregates`), sorted by (key, event time); each
row's extent is the index range from the first row after ``t.ts - d`` to the
last row at ``t.ts`` (ties included), merged by prefix sums, sparse tables
and shifted moments (`wid.kernels.pane_merge.merge_fields`, through
`wid.kernels.extents.merge_over`). Spark's range frame instead
re-aggregates the frame's rows whenever its lower bound moves, O(rows x
rows per extent) for min and max. Runs on executors: numpy, pyarrow and the
standard library only.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from wid.kernels.extents import (
    by_key_and_time,
    key_columns,
    merge_over,
    row_partials,
    with_keys,
)
from wid.kernels.fields import fields_of
from wid.kernels.tables import TS, ints
from wid.kernels.vector_aggregates import VectorAgg


def rolling_rows(batches: Iterator[pa.RecordBatch], aggs: Sequence[VectorAgg], aliases: Sequence[str],
                 keys: Sequence[str], duration_us: int, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The rows of a partition (with `TS`, epoch microseconds), each with
    its rolling aggregates, as `schema` (its input columns, then `aliases`)."""
    received = [b for b in batches if b.num_rows]
    if not received:
        return
    rows = pa.Table.from_batches(received)
    key = key_columns(keys)
    rows = by_key_and_time(with_keys(rows, key), key)
    ts = ints(rows, TS)
    held = row_partials(aggs, rows, rows.select([*key, TS]))
    merged, _ = merge_over(aggs, held, key, TS, rows, ts - duration_us + 1, ts)
    values = {alias: agg.finish(fields_of(merged, i)) for i, (agg, alias) in enumerate(zip(aggs, aliases, strict=True))}
    arrays = [pc.cast(values[f.name] if f.name in values else rows.column(f.name).combine_chunks(), f.type)
              for f in schema]
    out = pa.RecordBatch.from_arrays(arrays, schema=schema)
    for start in range(0, out.num_rows, 1 << 16):
        yield out.slice(start, 1 << 16)


__all__ = ["rolling_rows"]
