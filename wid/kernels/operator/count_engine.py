"""Count windows in the WID operator (semantics: `wid.semantics.kinds.ranked`).

Window w of a partition holds its ranks ``[max(0, (w+1)*hop - size),
(w+1)*hop)``, split by `group_by`, and emits once rank ``(w+1)*hop - 1`` is
final. State per shard, as Arrow tables (never a whole window's rows):

- ``n``: per partition, how many ranks are final (the paper's counters);
- ``panes``: partial aggregates per (partition, group, pane of ``g =
  gcd(size, hop)`` ranks), with the least and greatest event time, for the
  panes of the windows not yet emitted (at most ``size/g`` per group);
- ``pending`` (``rank_by = "order"`` only): the accepted rows whose rank is
  not final yet, those at or after the closing point: their key, event
  time, rank-order and aggregation input columns. Their number is the
  disorder the lateness admits (about `lateness_ms` times the row rate);
  no rank can be given before the closing point passes them.

Per micro-batch:

- **late**: a rank position closes once the closing point passes its row,
  so the trigger policy makes a row late when ``ts < C`` before the batch
  (ranks by order); nothing is late under ``rank_by = "arrival"``.
- **add**: accepted rows join ``pending``.
- **emit**: the pending rows behind the new closing point (all of them,
  under arrival ranks) are sorted in rank order per partition and take
  ranks from the partition's counter; their per-row partials merge into
  panes. A window closes once its last rank is final, and the micro-batch
  touched the windows holding new ranks: the trigger policy fires the
  windows that close (final) and, on update, the touched incomplete ones
  (their partial value). A window's value is its panes merged in O(1)
  (`wid.kernels.extents.merge_over`); its bounds are the least and
  greatest event time over all its groups.
- **evict**: panes before the first rank of the next window to emit.

The three tables are entries of the shard's partials store
(`wid.kernels.operator.partials`): a micro-batch adds its new counters and
pane partials as increments (what it changed), and rewrites ``pending``,
which holds only the rows in flight; panes evicted are left out when the
entry is compacted.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

import numpy as np
import pyarrow as pa

from wid.kernels.extents import (
    BEFORE,
    COUNT,
    append,
    joint_ids,
    key_columns,
    latest_counts,
    merge_over,
    merge_rows,
    rank_after,
    row_partials,
    with_keys,
)
from wid.kernels.fields import END, FINAL, START, cap_message, finish_all
from wid.kernels.operator.held import first_per_group
from wid.kernels.operator.layout import OperatorSpec, Ranking
from wid.kernels.operator.partials import Key, Partials
from wid.kernels.operator.shard import Closing, Store
from wid.kernels.pane_merge import FieldOp
from wid.kernels.tables import PANE, TS, group_ids, ints
from wid.kernels.vector_aggregates import CapError
from wid.semantics.trigger import NEVER

LO, HI, W = "_wid_lo", "_wid_hi", "_wid_window_id"
TABLES = ("n", "panes", "pending")  # the engine's entries in the partials store
BOUNDS = (FieldOp("min", (LO,), (LO,)), FieldOp("max", (HI,), (HI,)))


@dataclass(frozen=True)
class CountShape:
    """Count windows in the operator: `size` and `hop` rows, ranks per
    `partition_by`, the window id written to `id_column`."""

    size: int
    hop: int
    partition_by: tuple[str, ...]
    ranking: Ranking
    id_column: str = "window_id"


class CountEngine:
    """The `wid.kernels.operator.shard.Engine` of count windows."""

    def __init__(self, spec: OperatorSpec, store: Store) -> None:
        self.spec = spec
        self.shape: CountShape = spec.shape
        self.part = key_columns(self.shape.partition_by)
        self.keys = [*self.part, *spec.group_by]
        self.g = gcd(self.shape.size, self.shape.hop)
        self.parts = Partials(store, "count_index", "count_", self._merge, keys=TABLES)
        self.n, self.panes, self.pending = (self.parts.read(x) for x in TABLES)
        self.moved = False  # did `pending` change?

    def _merge(self, key: Key, table: pa.Table) -> pa.Table:
        """An entry's parts merged: counters by their largest count, pane
        partials by (keys, pane), pending rows as they are."""
        if key == "n":
            return latest_counts(table, self.part)
        if key == "panes":
            return merge_rows(self.spec.aggs, table, [*self.keys, PANE], {LO: "min", HI: "max"})
        return table

    @property
    def arrival(self) -> bool:
        return self.shape.ranking.by == "arrival"

    def late(self, rows: pa.Table, before: np.ndarray) -> np.ndarray:
        # a rank position closes once the closing point passes the row (ranks by order); given on arrival, never
        closes = np.full(rows.num_rows, NEVER, dtype=np.int64) if self.arrival else ints(rows, TS) + 1
        return np.asarray(self.spec.policy.late(closes, closes, before))

    def add(self, rows: pa.Table, before: np.ndarray) -> None:
        if rows.num_rows:
            rows = with_keys(rows, self.part)
            self.pending = append(self.pending, rows.select(_columns(self.spec, self.shape, self.keys)))
            self.moved = True

    # -- emit ---------------------------------------------------------------------------
    def emit(self, before: Closing, after: Closing) -> tuple[pa.Table | None, pa.Table | None]:
        if self.pending is None or self.pending.num_rows == 0:
            return None, None
        held = self.pending
        final = np.ones(held.num_rows, dtype=bool)
        if not self.arrival:
            final = ints(held, TS) < after.of(held, self.spec.scope)
        if not final.any():
            return None, None
        self.pending, self.moved = held.filter(pa.array(~final)), True
        return self._windows(self._rank(held.filter(pa.array(final)))), None

    def _rank(self, rows: pa.Table) -> pa.Table:
        """Rank `rows` after each partition's final ranks and merge them into
        panes; returns the touched partitions with their count before
        (`BEFORE`) and after (`COUNT`)."""
        rows, rank, self.n, touched = rank_after(rows, self.n, self.part, self.shape.ranking.order)
        self.parts.add("n", touched.select([*self.part, COUNT]))
        head = rows.select(self.keys).append_column(PANE, pa.array(rank // self.g))
        head = head.append_column(LO, rows.column(TS)).append_column(HI, rows.column(TS))
        self.parts.add("panes", self._merge("panes", row_partials(self.spec.aggs, rows, head)))
        self.panes = self.parts.read("panes")
        return touched

    def _windows(self, parts: pa.Table) -> pa.Table | None:
        """The windows of the touched partitions `parts` (ranks counted
        `BEFORE` and `COUNT` after) to emit, merged from the panes."""
        size, hop = self.shape.size, self.shape.hop
        old, new = ints(parts, BEFORE), ints(parts, COUNT)
        lo = old // hop
        hi = (new - 1 + size) // hop  # exclusive: the windows holding a rank in [old, new): touched
        count = np.maximum(hi - lo, 0)
        row = np.repeat(np.arange(len(lo)), count)
        w = lo[row] + np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        fires, _ = self.spec.policy.fire((w + 1) * hop <= old[row], (w + 1) * hop <= new[row], True)
        if not fires.any():
            return None
        row, w = row[fires], w[fires]
        wins = parts.take(pa.array(row)).append_column(W, pa.array(w))
        assert self.panes is not None
        groups = self.panes.select(self.keys)
        _, _, first = group_ids(groups, self.keys)
        groups = groups.take(pa.array(first))
        pid, wpid, _ = joint_ids(groups, wins, self.part)
        pairs_g, pairs_w = _pairs(pid, wpid)
        cand = groups.take(pa.array(pairs_g)).append_column(W, pa.array(w[pairs_w]))
        cw = w[pairs_w]
        first_pane = np.maximum(0, (cw + 1) * hop - size) // self.g
        last_pane = ((cw + 1) * hop) // self.g - 1
        merged, ok = merge_over(self.spec.aggs, self.panes, self.keys, PANE, cand, first_pane, last_pane, BOUNDS)
        if not ok.any():
            return None
        cand, cw = cand.filter(pa.array(ok)), cw[ok]
        complete = (cw + 1) * hop <= new[row][pairs_w][ok]
        return self._finish(cand, cw, complete, merged)

    def _finish(self, cand: pa.Table, w: np.ndarray, complete: np.ndarray, merged: pa.Table) -> pa.Table:
        """Output rows: bounds over each (partition, window), cap check."""
        key = cand.select(self.part).append_column(W, pa.array(w))
        kid, nk, _ = group_ids(key, [*self.part, W])
        lo = np.full(nk, np.iinfo(np.int64).max)
        hi = np.full(nk, np.iinfo(np.int64).min)
        np.minimum.at(lo, kid, ints(merged, LO))
        np.maximum.at(hi, kid, ints(merged, HI))
        start, end = lo[kid], hi[kid]
        cap = self.spec.max_groups
        if cap is not None:
            per = np.bincount(kid, minlength=nk)
            if (per > cap).any():
                at = int(np.argmax(per > cap))
                raise CapError(cap_message(self.spec, int(lo[at]), int(hi[at])))
        cols: dict[str, pa.Array] = {START: pa.array(start), END: pa.array(end), FINAL: pa.array(complete),
                                     self.shape.id_column: pa.array(w)}
        cols.update({k: cand.column(k) for k in (*self.shape.partition_by, *self.spec.group_by)})
        cols.update(finish_all(self.spec, merged, start, end))
        return pa.table(cols)

    # -- evict ----------------------------------------------------------------------------
    def evict(self, after: Closing) -> None:
        self.panes = self._needed(self.panes)
        if self.moved and self.pending is not None:
            self.parts.replace("pending", self.pending)
        self.parts.flush(tidy=lambda key, table: self._needed(table) if key == "panes" else table)

    def _needed(self, panes: pa.Table | None) -> pa.Table | None:
        """`panes` without those before the first rank of their partition's
        next window to emit."""
        if panes is None or self.n is None or not panes.num_rows:
            return panes
        pid, cid, n = joint_ids(panes, self.n, self.part)
        counted = np.zeros(n, dtype=np.int64)
        counted[cid] = ints(self.n, COUNT)
        next_w = counted[pid] // self.shape.hop
        keep_from = np.maximum(0, (next_w + 1) * self.shape.hop - self.shape.size) // self.g
        return panes.filter(pa.array(ints(panes, PANE) >= keep_from))

    def held(self) -> tuple[int, int]:
        panes = 0 if self.panes is None else self.panes.num_rows
        pending = 0 if self.pending is None else self.pending.num_rows
        return (0 if self.n is None else self.n.num_rows), panes + pending
    def open_windows(self, closing_us: int | None = None) -> pa.Table:
        """Each group's extent in progress: its rows waiting for their rank (`wid.kernels.operator.held`)."""
        return first_per_group(self.pending, self.keys, TS)



def _pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (i, j) with ``a[i] == b[j]``, by sorting (for large inputs)."""
    order = np.argsort(a, kind="stable")
    lo, hi = np.searchsorted(a[order], b, "left"), np.searchsorted(a[order], b, "right")
    count = hi - lo
    j = np.repeat(np.arange(len(b)), count)
    i = order[np.repeat(lo, count) + np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)]
    return i, j


def _columns(spec: OperatorSpec, shape: CountShape, keys: list[str]) -> list[str]:
    """The columns a pending row keeps: keys, event time, rank order and
    the aggregations' inputs."""
    cols = [*keys, TS, *shape.ranking.order]
    for agg in spec.aggs:
        cols += [c for c in (agg.column, agg.column2, agg.tie_breaker) if c]
    return list(dict.fromkeys(cols))


__all__ = ["CountEngine", "CountShape"]
