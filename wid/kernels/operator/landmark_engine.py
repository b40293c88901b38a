"""Landmark windows in the WID operator (semantics: `wid.semantics.kinds.landmark`).

Window w of a period is ``[period start, L + (w+1)*h)``; it is the merge of
the period's hop-sized panes up to w. State per shard is one Arrow table of
partial aggregates per (group, pane), where an accepted row sits in the
first window it counts in (its pane, or under ``generous`` the first window
still taking rows). Rows are never kept, and an unbounded landmark keeps
bounded state: a *running prefix* per group and period. Once every window
before pane p is final and past the reopen budget (``end(p - 1) + A <=
C``), panes up to p are folded into one row that stands for all of them (it
keeps the largest pane id: windows from there on include it whole). So a
group holds one prefix plus the panes of the last ``A + lateness``, about
``(A + lateness)/h + 1`` rows per period.

- **late**: a window closes at its end (never, for an unbounded period's
  last); the trigger policy judges a row by its first window
  (``consistent``: late once ``C >= end(q) + A``) or its period's last
  (``generous``: never late without `max_duration_ms`).
- **add**: per-row partials merge into their (group, first-window) pane.
- **emit**: per (group, period), the candidates: the windows whose end
  passes into ``(C, C']`` from the group's first pane on, and the windows
  a row of this batch touched, from its first window to the later of the
  last closed one and the group's frontier (its largest pane); the trigger
  policy fires them (closing: final; touched and closed under reopen:
  corrected; touched and open on update: partial), each merged from the
  period's panes in O(1).
- **evict**: periods whose last window is past the budget; folding.

The panes are an entry of the shard's partials store
(`wid.kernels.operator.partials`): a micro-batch adds its rows' partials as
an increment (what it changed); done periods and folding are applied to
what the engine reads each micro-batch, and to the entry when it is
compacted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from wid.kernels.extents import (
    FAR,
    joint_ids,
    key_columns,
    merge_over,
    merge_rows,
    row_partials,
    with_keys,
)
from wid.kernels.fields import END, FINAL, START, cap_message, finish_all
from wid.kernels.operator.held import SCHEMA as NONE_HELD
from wid.kernels.operator.held import windows_held
from wid.kernels.operator.layout import OperatorSpec
from wid.kernels.operator.partials import Partials
from wid.kernels.operator.shard import Closing, Store
from wid.kernels.tables import PANE, TS, group_ids, ints
from wid.kernels.vector_aggregates import CapError
from wid.semantics.calendar_windows import CalendarLandmark
from wid.semantics.trigger import NEVER, NOTHING_CLOSED
from wid.semantics.windowing import Landmark

PERIOD, W, TOUCHED = "_wid_period", "_wid_window_id", "_wid_touched"
PANES = "panes"  # the engine's one entry in the partials store
UNBOUNDED = np.iinfo(np.int64).max  # the last window of an unbounded landmark's period: none


@dataclass(frozen=True)
class LandmarkShape:
    """Landmark windows in the operator: their geometry, built on the driver
    (`wid.semantics.windowing.Landmark`, from the landmark growing by the
    hop, restarting every maximum duration if set: Flink's CUMULATE; or on a
    calendar, `wid.semantics.calendar_windows.CalendarLandmark`)."""

    geometry: Landmark | CalendarLandmark


class LandmarkEngine:
    """The `wid.kernels.operator.shard.Engine` of landmark windows."""

    def __init__(self, spec: OperatorSpec, store: Store) -> None:
        self.spec, self.geo = spec, spec.shape.geometry
        self.keys = key_columns(spec.group_by)
        self.parts = Partials(store, "landmark_index", "landmark_", lambda _, t: self._merge(t), keys=(PANES,))
        self.panes = self.parts.read(PANES)
        self.touched: pa.Table | None = None
        self.per = self.geo.slots  # windows per period (on a calendar, the most a period holds)

    # -- window arithmetic (vectorised; `wid.semantics.windowing.Landmark`, on a calendar
    # `wid.semantics.calendar_windows.CalendarLandmark`) ------------------
    def _pane(self, ts: np.ndarray) -> np.ndarray:
        return np.asarray(self.geo.pane(ts))

    def _end(self, w: np.ndarray) -> np.ndarray:
        return np.asarray(self.geo.end(w))

    def _period(self, w: np.ndarray) -> np.ndarray:
        return np.asarray(self.geo.period_of(w))

    def _last(self, w: np.ndarray) -> np.ndarray:
        """The last window of w's period (`UNBOUNDED` without max_duration)."""
        return np.full_like(w, UNBOUNDED) if self.per is None else np.asarray(self.geo.period_last(w))

    def _closes_at(self, w: np.ndarray) -> np.ndarray:
        """When window w closes: its end (`NEVER` for an `UNBOUNDED` one)."""
        bounded = w != UNBOUNDED
        return np.where(bounded, self._end(np.where(bounded, w, 0)), NEVER)

    def _closed_upto(self, c: np.ndarray) -> np.ndarray:
        """The last window ending at or before closing point c (`FAR` where nothing is closed)."""
        closed = c != NOTHING_CLOSED
        return np.where(closed, self.geo.closed_upto(np.where(closed, c, 0)), FAR)

    # -- late and add ----------------------------------------------------------------------------
    def late(self, rows: pa.Table, before: np.ndarray) -> np.ndarray:
        q = self._pane(ints(rows, TS))
        return np.asarray(self.spec.policy.late(self._end(q), self._closes_at(self._last(q)), before))

    def add(self, rows: pa.Table, before: np.ndarray) -> None:
        self.touched = None
        if rows.num_rows == 0:
            return
        rows = with_keys(rows, self.keys)
        q = self._pane(ints(rows, TS))
        closed = before != NOTHING_CLOSED
        opened = self._pane(self.spec.policy.takes_after(np.where(closed, before, 0)))  # the first window taking rows
        first = np.where(closed, np.maximum(q, opened), q)
        head = rows.select(self.keys).append_column(PANE, pa.array(first))
        self.touched = head
        self.parts.add(PANES, self._merge(row_partials(self.spec.aggs, rows, head)))
        self.panes = self.parts.read(PANES)

    def _merge(self, panes: pa.Table) -> pa.Table:
        """Partials of one (group, pane) merged into one row."""
        return merge_rows(self.spec.aggs, panes, [*self.keys, PANE])

    # -- emit ---------------------------------------------------------------------------------------
    def emit(self, before: Closing, after: Closing) -> tuple[pa.Table | None, pa.Table | None]:
        if self.panes is None or self.panes.num_rows == 0:
            return None, None
        wins = self._to_emit(before, after)
        if wins is None:
            return None, None
        w, scope = ints(wins, W), self.spec.scope
        closes = self._end(w)
        touched = wins.column(TOUCHED).to_numpy(zero_copy_only=False).astype(bool)
        fires, final = self.spec.policy.fire(closes <= before.of(wins, scope), closes <= after.of(wins, scope), touched)
        if not fires.any():
            return None, None
        wins, w, final = wins.filter(pa.array(fires)), w[fires], final[fires]
        first = np.full_like(w, FAR) if self.per is None else np.asarray(self.geo.period_first(w))
        merged, ok = merge_over(self.spec.aggs, self.panes, self.keys, PANE, wins, first, w)
        if self.geo.has_gaps:  # a calendar window whose last hop holds no instant is never output
            there = np.asarray(self.geo.exists(w), dtype=bool)
            merged, ok = merged.filter(pa.array(there[ok])), ok & there
        wins, w, final = wins.filter(pa.array(ok)), w[ok], final[ok]
        end = self._end(w)
        start = np.asarray(self.geo.start(w))
        self._check_cap(w, start, end)
        cols: dict[str, pa.Array] = {START: pa.array(start), END: pa.array(end), FINAL: pa.array(final)}
        cols.update({k: wins.column(k) for k in self.spec.group_by})
        cols.update(finish_all(self.spec, merged, start, end))
        return pa.table(cols), None

    def _to_emit(self, before: Closing, after: Closing) -> pa.Table | None:
        """(keys, `W`, `TOUCHED`) of every window that may fire, each once:
        those closing now from the group's first pane on, and those a row of
        this batch touched (where a touched window may fire)."""
        assert self.panes is not None
        p = ints(self.panes, PANE)
        span = self.panes.select(self.keys).append_column(PERIOD, pa.array(self._period(p)))
        gid, n, head = group_ids(span, [*self.keys, PERIOD])
        lowest = np.full(n, UNBOUNDED)
        np.minimum.at(lowest, gid, p)
        groups = span.take(pa.array(head))
        hi_prev = self._closed_upto(before.of(groups, self.spec.scope))
        hi_now = self._closed_upto(after.of(groups, self.spec.scope))
        parts = [(groups, np.maximum(lowest, hi_prev + 1), np.minimum(self._last(lowest), hi_now), False)]  # closing
        if self.touched is not None and self.spec.policy.fires_touched:
            parts.append(self._touched_range(after))
        tables, ws, flags = [], [], []
        for table, lo, hi, by_row in parts:
            count = np.maximum(hi - lo + 1, 0)
            row = np.repeat(np.arange(len(lo)), count)
            tables.append(table.select(self.keys).take(pa.array(row)))
            ws.append(lo[row] + np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count))
            flags.append(np.full(len(row), by_row))
        out = pa.concat_tables(tables).append_column(W, pa.array(np.concatenate(ws)))
        if out.num_rows == 0:
            return None
        ids, m, unique = group_ids(out, [*self.keys, W])
        touched = np.zeros(m, dtype=bool)
        np.logical_or.at(touched, ids, np.concatenate(flags))
        return out.take(pa.array(unique)).append_column(TOUCHED, pa.array(touched))

    def _touched_range(self, after: Closing) -> tuple[pa.Table, np.ndarray, np.ndarray, bool]:
        """The windows the batch's rows touched: from each row's first window
        to the later of the last closed one and the group's frontier (its
        largest pane), within the row's period."""
        assert self.touched is not None and self.panes is not None
        t = self.touched
        w0, last = ints(t, PANE), self._last(ints(t, PANE))
        hi_now = self._closed_upto(after.of(t, self.spec.scope))
        tid, pid, n = joint_ids(t, self.panes, self.keys)
        frontier = np.full(n, np.iinfo(np.int64).min)
        np.maximum.at(frontier, pid, ints(self.panes, PANE))
        return t, w0, np.minimum(last, np.maximum(hi_now, frontier[tid])), True

    def _check_cap(self, w: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
        cap = self.spec.max_groups
        if cap is None or len(w) == 0:
            return
        values, counts = np.unique(w, return_counts=True)
        if counts.max() > cap:
            at = int(np.argmax(w == values[np.argmax(counts > cap)]))
            raise CapError(cap_message(self.spec, int(start[at]), int(end[at])))

    # -- evict -----------------------------------------------------------------------------------
    def evict(self, after: Closing) -> None:
        self.panes = self._folded(self.panes, after)
        self.parts.flush(tidy=lambda _, table: self._folded(table, after))

    def _folded(self, panes: pa.Table | None, after: Closing) -> pa.Table | None:
        """`panes` without the periods whose last window takes no more rows,
        and with the panes of the windows that take no more rows folded into
        the running prefix."""
        if panes is None or not panes.num_rows:
            return panes
        p = ints(panes, PANE)
        c = after.of(panes, self.spec.scope)
        policy = self.spec.policy
        done = ~policy.takes(self._closes_at(self._last(p)), c)  # the period's last window takes no more rows
        table, p, c = panes.filter(pa.array(~done)), p[~done], c[~done]
        fold = ~policy.takes(np.asarray(self.geo.pane_start(p)), c)  # window p - 1 takes no more rows
        return self._fold(table, p, fold) if fold.sum() > 1 else table

    def _fold(self, table: pa.Table, p: np.ndarray, fold: np.ndarray) -> pa.Table:
        """Panes marked `fold` merged per (group, period) into one row under
        their largest pane id (the running prefix)."""
        marked = table.append_column(PERIOD, pa.array(self._period(p))).append_column(W, pa.array(fold))
        ids, n, _ = group_ids(marked, [*self.keys, PERIOD, W])
        top = np.full(n, np.iinfo(np.int64).min)
        np.maximum.at(top, ids, p)
        return self._merge(table.set_column(table.column_names.index(PANE), PANE, pa.array(np.where(fold, top[ids], p))))

    def held(self) -> tuple[int, int]:
        rows = 0 if self.panes is None else self.panes.num_rows
        return rows, rows

    def open_windows(self, closing_us: int | None = None) -> pa.Table:
        """The windows over the panes held that still take rows at
        `closing_us`: a (group, pane p) row counts in every window of its
        period from p on, up to the period's last (an unbounded period: up
        to the first window still open) (`wid.kernels.operator.held`)."""
        if self.panes is None or self.panes.num_rows == 0:
            return NONE_HELD.empty_table()
        p = ints(self.panes, PANE)
        w0 = p if closing_us is None else np.maximum(
            p, np.asarray(self.geo.closed_upto(self.spec.policy.takes_after(closing_us))) + 1)
        last = self._last(p)
        hi = np.where(last != UNBOUNDED, last, w0)
        count = np.maximum(hi - w0 + 1, 0)
        row = np.repeat(np.arange(len(p)), count)
        w = w0[row] + (np.arange(len(row)) - np.repeat(np.cumsum(count) - count, count))
        return windows_held(np.asarray(self.geo.start(w)), self._end(w), self.panes.select(self.keys).take(row))


__all__ = ["LandmarkEngine", "LandmarkShape"]
