"""Combining before the shuffle: the rows of one (group, pane) inside one
input partition become one partial aggregate before they reach the shard of
their group, so that a hot key costs its shard the partitions it came from,
not its rows (Spark's partial aggregation before the shuffle of its own
streaming aggregation; Flink SQL's local-global aggregation).

Only tumbling and hopping windows (calendar ones included: the operator's
`TimeEngine`) combine, and only under the ``drop`` and ``reopen`` late
policies (`combines`):

- a partial holds what the shard's `TimeEngine.add` makes of the same rows
  (`wid.kernels.operator.time_engine.pane_partials`, one function for both),
  the group columns, the event time of its first row (`TS`) and the number
  of rows it stands for (`ROWS`), which the shard counts as aggregated or
  late rows, so that the accounting identity holds row for row;
- lateness needs no row: the trigger policy judges a row by the closing
  times of its first and last windows against its group's closing point
  before the micro-batch (the global watermark, or a keyed punctuation of
  a scope within the group columns), and every row of one (group, pane)
  has the same first and last window, so all its rows get one verdict,
  the partial's;
- rows that must stay rows ship as they are: rows rejected as bad input
  (`REASON` set, for the dead letter), punctuation rows (`PUNCT`);
- under ``dlq`` nothing combines: a late row goes to the dead letter with its
  source bytes, and a partial cannot give them back (carrying each row's
  columns beside its partial would ship the rows anyway).

The watermark summary is taken from the rows before they combine
(`wid.kernels.operator.packing.pack`). Runs on executors: numpy and pyarrow.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wid.kernels.operator.layout import OperatorSpec
from wid.kernels.operator.time_engine import TimeShape, pane_partials
from wid.kernels.tables import PANE, PTIME, PUNCT, REASON, ROWS, TS, concat, ints, where


def combines(spec: OperatorSpec) -> bool:
    """Do `spec`'s rows combine before the shuffle? Tumbling and hopping
    windows (`TimeShape`) outside the ``dlq`` late policy (module docstring)."""
    return isinstance(spec.shape, TimeShape) and spec.late_data != "dlq"


def stays_row(rows: pa.Table) -> np.ndarray:
    """Which of `rows` ship as rows: rejected as bad input (`REASON` set) or
    punctuations (`PUNCT` true)."""
    keep = np.zeros(rows.num_rows, dtype=bool)
    if REASON in rows.column_names:
        keep |= pc.is_valid(rows.column(REASON)).to_numpy(zero_copy_only=False)
    if PUNCT in rows.column_names:
        keep |= rows.column(PUNCT).fill_null(False).to_numpy(zero_copy_only=False).astype(bool)
    return keep


def combined(spec: OperatorSpec, rows: pa.Table, carried: tuple[str, ...] = ()) -> pa.Table:
    """`rows` (one input partition's, with `TS`) with their data rows
    combined: one partial per (group, pane) holding the group columns, the
    `carried` columns (of its first row: the same on every row of a group,
    such as its shard), `TS` (its first row's event time, in its pane),
    `PUNCT` false and `PTIME` NULL when `rows` have those columns, the aggregations' partial
    fields and `ROWS` (the rows it stands for); then the rows that stay rows
    (`stays_row`), as they are. Raises nothing of its own."""
    stay = stays_row(rows)
    data = where(rows, ~stay)
    if data.num_rows == 0:
        return rows
    q = np.asarray(spec.shape.geometry.pane(ints(data, TS)))
    partial, ids, n, first = pane_partials(spec, data, q)
    partial = partial.drop_columns([PANE])
    taken = pa.array(first)
    extra = {c: data.column(c).take(taken) for c in dict.fromkeys([*carried, TS]) if c not in partial.column_names}
    if PUNCT in rows.column_names:  # a data row's punctuation columns: not one, no time
        extra[PUNCT] = pa.array(np.zeros(n, dtype=bool))
    if PTIME in rows.column_names:
        extra[PTIME] = pa.nulls(n, pa.int64())
    extra[ROWS] = pa.array(np.bincount(ids, minlength=n).astype(np.int64))
    for name, column in extra.items():
        partial = partial.append_column(name, column)
    return concat([partial, where(rows, stay)]) if stay.any() else partial


__all__ = ["combined", "combines", "stays_row"]
