"""The `global` test kind in the WID operator (`tests.kinds.global_spec`):
one window per group that never closes, its partials in the shard's
partials store (`wid.kernels.operator.partials`: a micro-batch writes its
groups' partials as an increment); each micro-batch the groups it touched
fire as the trigger policy says (on update: their running value, never
final)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from wid.kernels.extents import joint_ids, key_columns, merge_rows, row_partials, with_keys
from wid.kernels.fields import END, FINAL, START, finish_all
from wid.kernels.operator.layout import OperatorSpec
from wid.kernels.operator.partials import Key, Partials
from wid.kernels.operator.shard import Closing, Store
from wid.semantics.trigger import NEVER

GROUPS = "groups"  # the one entry: every group's partials


@dataclass(frozen=True)
class GlobalShape:
    """The `global` kind in the operator: where its windows start."""

    landmark_us: int


class GlobalEngine:
    """The `wid.kernels.operator.shard.Engine` of the `global` kind."""

    def __init__(self, spec: OperatorSpec, store: Store) -> None:
        self.spec, self.shape = spec, spec.shape
        self.keys = key_columns(spec.group_by)
        self.parts = Partials(store, "global_index", "global_", self._merge, keys=(GROUPS,))
        self.touched: pa.Table | None = None

    def _merge(self, key: Key, table: pa.Table) -> pa.Table:
        return merge_rows(self.spec.aggs, table, self.keys)

    def late(self, rows: pa.Table, before: np.ndarray) -> np.ndarray:
        never = np.full(rows.num_rows, NEVER, dtype=np.int64)  # its window never closes
        return np.asarray(self.spec.policy.late(never, never, before))

    def add(self, rows: pa.Table, before: np.ndarray) -> None:
        if rows.num_rows:
            rows = with_keys(rows, self.keys)
            partial = self._merge(GROUPS, row_partials(self.spec.aggs, rows, rows.select(self.keys)))
            self.parts.add(GROUPS, partial)
            self.touched = partial.select(self.keys)

    def emit(self, before: Closing, after: Closing) -> tuple[pa.Table | None, pa.Table | None]:
        table = self.parts.read(GROUPS) if self.touched is not None else None
        if table is None or self.touched is None:
            return None, None
        held, batch, _ = joint_ids(table, self.touched, self.keys)
        fires, final = self.spec.policy.fire(False, False, np.isin(held, batch))
        out = table.filter(pa.array(fires))
        if out.num_rows == 0:
            return None, None
        start = np.full(out.num_rows, self.shape.landmark_us, dtype=np.int64)
        cols: dict[str, pa.Array] = {START: pa.array(start), END: pa.nulls(out.num_rows, pa.int64()),
                                     FINAL: pa.array(np.full(out.num_rows, final))}
        cols.update({k: out.column(k) for k in self.spec.group_by})
        cols.update(finish_all(self.spec, out, start, None))
        return pa.table(cols), None

    def evict(self, after: Closing) -> None:
        self.parts.flush()

    def held(self) -> tuple[int, int]:
        rows = self.parts.held(GROUPS) if GROUPS in self.parts else 0
        return rows, rows
