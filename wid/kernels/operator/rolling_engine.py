"""Rolling windows in the WID operator (semantics: `wid.semantics.kinds.ranked`).

Row t's output aggregates its group's rows in ``(t.ts - d, t.ts]`` and waits
until the closing point passes t.ts. State per shard, as Arrow tables:

- ``bins``: the paper's bins for forward-context-aware windows: one partial
  aggregate per (group, distinct event time), merging every row of the
  group at that time (ties included); a row's extent is the merge of the
  bins in its range, from its *start bin* (the first after ``t.ts - d``) to
  its *end bin* (t.ts), in O(1) per row by the vectorised range merge
  (`wid.kernels.extents.merge_over`). Only bins that a future output
  can reach are held, those after ``C - A - d``: per group at most the
  distinct event times of ``d + A`` plus the disorder, never the rows.
- ``rows``: the rows whose output is still due (event time at or after the
  closing point) or may still be corrected (``reopen``: within A behind
  it), with the input columns their output row carries and whether they
  were emitted. A row must be kept until its extent is complete, since the
  output is the row itself.
- ``n`` (``every_rows`` > 1): each group's rank counter.

Per micro-batch:

- **late**: ``ts + A < C`` before the batch (A = `allowed_lateness_ms`
  under reopen, else 0).
- **add**: the batch's rows are sorted by (group, event time); their
  per-row partials join the bins unmerged (the range merge needs them
  sorted, not merged: ties are neighbours in a range); the rows join
  ``rows`` (ranks by arrival are given now: only every n-th row is kept).
  Bins and rows so stay in a few sorted runs, which the range merge's
  stable sort merges in near-linear time.
- **emit** (in order of group and event time, as the bins are): rows
  behind the new closing point are final (ranks by order
  are given now, in rank order after the group's counter: only every n-th
  row stays); a final row emits once, and again when a row of this batch
  lands in its extent (reopen); with ``emit = "on_update"`` an open row
  whose extent took a row emits its partial value.
- **evict**: rows with ``ts + A < C``, and bins at or before ``C - A - d``;
  the bins left merge their ties, one per (group, event time), before they
  are saved. (Merging every row of the batch into its bin in **add** was a
  fifth of a 1.25M-row micro-batch's engine time; most of those bins fall
  behind the horizon in the same micro-batch.)

The three tables are entries of the shard's partials store
(`wid.kernels.operator.partials`): a micro-batch adds its rows' bins and
its counters as increments (what it changed), and rewrites ``rows``, which
holds only the rows whose output is due or may be corrected; bins behind
the horizon are left out, and ties merged, when the entry is compacted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from wid.kernels.extents import (
    COUNT,
    append,
    by_key_and_time,
    cast_like,
    key_columns,
    latest_counts,
    merge_over,
    merge_rows,
    ranges,
    rank_after,
    row_partials,
    with_keys,
)
from wid.kernels.fields import FINAL, finish_all
from wid.kernels.operator.held import first_per_group
from wid.kernels.operator.layout import OperatorSpec, Ranking
from wid.kernels.operator.partials import Key, Partials
from wid.kernels.operator.shard import Closing, Store
from wid.kernels.tables import TS, concat, ints

SHOWN, RANKED = "_wid_shown", "_wid_ranked"
TABLES = ("bins", "rows", "n")  # the engine's entries in the partials store


@dataclass(frozen=True)
class RollingShape:
    """Rolling windows in the operator: over ``(ts - duration, ts]``; with
    `every_rows` n only every n-th row (by `ranking`) opens an extent;
    `columns` are the input columns every output row carries, in input
    order."""

    duration_us: int
    every_rows: int
    ranking: Ranking
    columns: tuple[str, ...]


class RollingEngine:
    """The `wid.kernels.operator.shard.Engine` of rolling windows."""

    def __init__(self, spec: OperatorSpec, store: Store) -> None:
        self.spec = spec
        self.shape: RollingShape = spec.shape
        self.keys = key_columns(spec.group_by)
        self.parts = Partials(store, "rolling_index", "rolling_", self._merge, keys=TABLES)
        self.bins, self.rows, self.n = (self.parts.read(x) for x in TABLES)
        self.arrived: pa.Table | None = None

    def _merge(self, key: Key, table: pa.Table) -> pa.Table:
        """An entry's parts merged: counters by their largest count; bins
        and rows as they are (ties of bins merge when they are tidied)."""
        return latest_counts(table, self.keys) if key == "n" else table

    @property
    def by_order(self) -> bool:
        """Do ranks (every_rows > 1) wait for the closing point?"""
        return self.shape.every_rows > 1 and self.shape.ranking.by == "order"

    def late(self, rows: pa.Table, before: np.ndarray) -> np.ndarray:
        closes = ints(rows, TS) + 1  # row t's window closes once the closing point passes t
        return np.asarray(self.spec.policy.late(closes, closes, before))

    # -- add --------------------------------------------------------------------------------
    def add(self, rows: pa.Table, before: np.ndarray) -> None:
        # `before` (per row) is not needed: `late` has judged the rows already.
        if rows.num_rows == 0:
            self.arrived = None
            return
        rows = by_key_and_time(with_keys(rows, self.keys), self.keys)  # so bins and rows stay in runs of this order
        self.arrived = rows.select([*self.keys, TS])
        partial = row_partials(self.spec.aggs, rows, rows.select([*self.keys, TS]))
        self.parts.add("bins", partial)
        self.bins = partial if self.bins is None else concat([self.bins, cast_like(partial, self.bins.schema)])
        kept = rows.select(list(dict.fromkeys([*self.keys, TS, *self.shape.columns, *self.shape.ranking.order])))
        kept = kept.append_column(SHOWN, pa.array(np.zeros(rows.num_rows, dtype=bool)))
        kept = kept.append_column(RANKED, pa.array(np.full(rows.num_rows, not self.by_order)))
        if self.shape.every_rows > 1 and not self.by_order:
            kept = self._every_nth(kept)
        self.rows = append(self.rows, kept)

    def _every_nth(self, rows: pa.Table) -> pa.Table:
        """`rows` ranked after their group's counter in rank order; only the
        rows whose 1-based rank is a multiple of every_rows."""
        rows, rank, self.n, touched = rank_after(rows, self.n, self.keys, self.shape.ranking.order)
        self.parts.add("n", touched.select([*self.keys, COUNT]))
        return rows.filter(pa.array((rank + 1) % self.shape.every_rows == 0))

    # -- emit --------------------------------------------------------------------------------
    def emit(self, before: Closing, after: Closing) -> tuple[pa.Table | None, pa.Table | None]:
        if self.rows is None or self.rows.num_rows == 0:
            return None, None
        if self.by_order:
            self._rank_closed(self._closed(after))
        rows = self.rows
        assert rows is not None
        shown = rows.column(SHOWN).to_numpy(zero_copy_only=False).astype(bool)
        # a row emitted final is one whose window closed before this micro-batch (or arrived after it closed)
        emit, closed = self.spec.policy.fire(shown, self._closed(after), self._touched(rows))
        self.rows = rows.set_column(rows.column_names.index(SHOWN), SHOWN, pa.array(shown | (emit & closed)))
        if not emit.any():
            return None, None
        out = by_key_and_time(rows.filter(pa.array(emit)).append_column(FINAL, pa.array(closed[emit])), self.keys)
        ts = ints(out, TS)
        assert self.bins is not None
        merged, _ = merge_over(self.spec.aggs, self.bins, self.keys, TS, out, ts - self.shape.duration_us + 1, ts)
        cols: dict[str, pa.Array] = {c: out.column(c) for c in self.shape.columns}
        cols.update(finish_all(self.spec, merged, ts - self.shape.duration_us, ts))
        cols[FINAL] = out.column(FINAL)
        return pa.table(cols), None

    def _closed(self, after: Closing) -> np.ndarray:
        """Is each held row's window closed (the closing point passed the row)?"""
        assert self.rows is not None
        return np.asarray(ints(self.rows, TS) < after.of(self.rows, self.spec.scope))

    def _rank_closed(self, closed: np.ndarray) -> None:
        """Rank the rows whose rank just became final; keep every n-th."""
        assert self.rows is not None
        ranked = self.rows.column(RANKED).to_numpy(zero_copy_only=False).astype(bool)
        fresh = closed & ~ranked
        if not fresh.any():
            return
        now = self._every_nth(self.rows.filter(pa.array(fresh)))
        now = now.set_column(now.column_names.index(RANKED), RANKED, pa.array(np.ones(now.num_rows, dtype=bool)))
        self.rows = concat([self.rows.filter(pa.array(~fresh)), now])

    def _touched(self, rows: pa.Table) -> np.ndarray:
        """Did a row of this batch land in each held row's extent? (Asked
        only where a touched window may fire: otherwise a row emits once,
        when closed.)"""
        if not self.spec.policy.fires_touched or self.arrived is None or self.arrived.num_rows == 0:
            return np.zeros(rows.num_rows, dtype=bool)
        ts = ints(rows, TS)
        span = ranges(self.arrived, self.keys, TS, rows, ts - self.shape.duration_us + 1, ts)
        if span is None:
            return np.zeros(rows.num_rows, dtype=bool)
        _, _, i0, i1 = span
        return np.asarray(i1 > i0)

    # -- evict ---------------------------------------------------------------------------------
    def evict(self, after: Closing) -> None:
        if self.rows is not None:
            cp = after.of(self.rows, self.spec.scope)
            self.rows = self.rows.filter(pa.array(self.spec.policy.takes(ints(self.rows, TS) + 1, cp)))
            self.parts.replace("rows", self.rows)
        self.bins = self._reachable(self.bins, after)
        self.parts.flush(tidy=lambda key, table: self._reachable(table, after) if key == "bins" else table)

    def _reachable(self, bins: pa.Table | None, after: Closing) -> pa.Table | None:
        """`bins` without those no window still taking rows reaches (at or
        before ``C - A - d``), ties merged."""
        if bins is None:
            return None
        horizon = self.spec.policy.takes_after(after.of(bins, self.spec.scope)) - self.shape.duration_us
        return merge_rows(self.spec.aggs, bins.filter(pa.array(ints(bins, TS) > horizon)), [*self.keys, TS])

    def held(self) -> tuple[int, int]:
        bins = 0 if self.bins is None else self.bins.num_rows
        rows = 0 if self.rows is None else self.rows.num_rows
        return rows, bins + rows

    def open_windows(self, closing_us: int | None = None) -> pa.Table:
        """Each group's extents in progress: its rows not yet final (`wid.kernels.operator.held`)."""
        return first_per_group(self.rows, self.keys, TS)


__all__ = ["RollingEngine", "RollingShape"]
