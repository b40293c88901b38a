"""Session windows in the WID operator (semantics: `wid.semantics.stream_oracle`).

State is one Arrow table per shard: every session the shard holds, as its
group columns, ``[start, end]`` (end = the running ``max(ts + gap)``, as in
Spark's `session_window`), whether it was emitted under its current start,
and the partial fields of its rows. Rows are never kept.

- **late**: a row is late when ``ts + A < C`` (C the group's closing point
  before the batch, A = `allowed_lateness_ms` under reopen, else 0).
- **add**: the batch's rows, as one-row sessions ``[ts, ts + gap]``, and the
  held sessions of the same groups are sorted by start and merged where a
  start is at or before the running end of the group; partials merge by
  session. A merged session whose members were emitted under another start
  retracts those keys.
- **emit**: a session is final once ``end < C``; it emits when it closes,
  and again when a reopened session takes a row; with ``emit =
  "on_update"`` a touched open session emits its partial value.
- **evict**: a session goes once ``C > end + A``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from wid.kernels.fields import (
    END,
    FINAL,
    START,
    cap_message,
    field,
    fields_of,
    finish_all,
)
from wid.kernels.operator.layout import OperatorSpec
from wid.kernels.operator.shard import Closing, Store
from wid.kernels.tables import NONE, TS, concat, from_bytes, group_ids, ints, state_bytes
from wid.kernels.vector_aggregates import CapError

SHOWN, TOUCHED = "_wid_shown", "_wid_touched"


class SessionEngine:
    """The `wid.kernels.operator.shard.Engine` of session windows."""

    def __init__(self, spec: OperatorSpec, store: Store) -> None:
        self.spec, self.store = spec, store
        blob = store.get("sessions")
        self.table: pa.Table | None = None if blob is None else from_bytes(blob)
        self.retracted: pa.Table | None = None

    def _gaps(self, rows: pa.Table) -> np.ndarray:
        if self.spec.gap_column is not None:
            return ints(rows, self.spec.gap_column) * 1000
        return np.full(rows.num_rows, self.spec.gap_us or 0, dtype=np.int64)

    def late(self, rows: pa.Table, before: np.ndarray) -> np.ndarray:
        return np.asarray((before != NONE) & (ints(rows, TS) + self.spec.allowed_us < before))

    # -- add -------------------------------------------------------------------
    def add(self, rows: pa.Table, before: np.ndarray) -> None:
        if rows.num_rows == 0:
            if self.table is not None:
                self.table = self._flag(self.table, touched=False)
            return
        keys = list(self.spec.group_by)
        ts = ints(rows, TS)
        new = rows.select(keys).append_column(START, pa.array(ts)).append_column(END, pa.array(ts + self._gaps(rows)))
        new = new.append_column(SHOWN, pa.array(np.zeros(rows.num_rows, bool)))
        for i, agg in enumerate(self.spec.aggs):
            for k, v in agg.rows(rows, rows.column(TS).combine_chunks()).items():
                new = new.append_column(field(i, k), v)
        new = self._flag(new, touched=True)
        held = None if self.table is None else self._flag(self.table, touched=False)
        self.table = self._sessionize(new if held is None else concat([held, new]))

    @staticmethod
    def _flag(table: pa.Table, touched: bool) -> pa.Table:
        flags = pa.array(np.full(table.num_rows, touched))
        if TOUCHED in table.column_names:
            return table.set_column(table.column_names.index(TOUCHED), TOUCHED, flags)
        return table.append_column(TOUCHED, flags)

    def _sessionize(self, table: pa.Table) -> pa.Table:
        """Merge overlapping intervals per group (a start at or before the
        group's running end joins), merging their partials."""
        keys = list(self.spec.group_by)
        gid, _, _ = group_ids(table, keys)
        start, end = ints(table, START), ints(table, END)
        order = np.lexsort((start, gid))
        table, gid, start, end = table.take(pa.array(order)), gid[order], start[order], end[order]
        running = pd.Series(end).groupby(gid).cummax().to_numpy()
        opens = np.ones(len(gid), dtype=bool)
        opens[1:] = (gid[1:] != gid[:-1]) | (start[1:] > running[:-1])
        sid = np.cumsum(opens) - 1
        n = int(sid[-1]) + 1
        heads = np.flatnonzero(opens)
        first_start = start[heads]
        shown = table.column(SHOWN).to_numpy(zero_copy_only=False).astype(bool)
        moved = shown & (start != first_start[sid])
        if moved.any():
            gone = table.filter(pa.array(moved)).select([*keys, START])
            self.retracted = gone if self.retracted is None else concat([self.retracted, gone])
        out = table.select(keys).take(pa.array(heads))
        out = out.append_column(START, pa.array(first_start))
        out = out.append_column(END, pa.array(np.maximum.reduceat(end, heads)))
        kept = np.zeros(n, dtype=bool)
        np.logical_or.at(kept, sid, shown & ~moved)
        out = out.append_column(SHOWN, pa.array(kept))
        for i, agg in enumerate(self.spec.aggs):
            for k, v in agg.merge(fields_of(table, i), sid, n).items():
                out = out.append_column(field(i, k), v)
        touched = np.zeros(n, dtype=bool)
        np.logical_or.at(touched, sid, table.column(TOUCHED).to_numpy(zero_copy_only=False).astype(bool))
        return out.append_column(TOUCHED, pa.array(touched))

    # -- emit and evict ------------------------------------------------------------
    def emit(self, before: Closing, after: Closing) -> tuple[pa.Table | None, pa.Table | None]:
        if self.table is None or self.table.num_rows == 0:
            return None, self.retracted
        held = self.table
        end = ints(held, END)
        closed = end < after.of(held, self.spec.scope)
        was_closed = end < before.of(held, self.spec.scope)
        touched = held.column(TOUCHED).to_numpy(zero_copy_only=False).astype(bool)
        emit = (closed & (touched | ~was_closed)) | (touched & ~closed & self.spec.on_update)
        shown = held.column(SHOWN).to_numpy(zero_copy_only=False).astype(bool) | emit
        self.table = held.set_column(held.column_names.index(SHOWN), SHOWN, pa.array(shown))
        if not emit.any():
            return None, self.retracted
        out = held.filter(pa.array(emit))
        cols: dict[str, pa.Array] = {START: out.column(START), END: out.column(END), FINAL: pa.array(closed[emit])}
        cols.update({k: out.column(k) for k in self.spec.group_by})
        cols.update(finish_all(self.spec, out, ints(out, START), ints(out, END)))
        return pa.table(cols), self.retracted

    def evict(self, after: Closing) -> None:
        if self.table is not None:
            keep = after.of(self.table, self.spec.scope) <= ints(self.table, END) + self.spec.allowed_us
            self.table = self.table.filter(pa.array(keep))
            cap = self.spec.max_groups
            if cap is not None and self.table.num_rows > cap:
                raise CapError(cap_message(self.spec, int(ints(self.table, START).min()),
                                           int(ints(self.table, END).max())))
            self.store.put("sessions", state_bytes(self.table))

    def held(self) -> tuple[int, int]:
        rows = 0 if self.table is None else self.table.num_rows
        return rows, rows


__all__ = ["SessionEngine"]
