"""Session windows in the WID operator (semantics: `wid.semantics.stream_oracle`).

State is one Arrow table per shard: every session the shard holds, as its
group columns, ``[start, end]`` (end = the running ``max(ts + gap)``, as in
Spark's `session_window`), whether it was emitted under its current start,
and the partial fields of its rows. Rows are never kept.

- **late**: a session closes at ``end + 1`` µs (a row exactly at its end
  still joins it); a row, at ``ts + 1``: the window's trigger policy
  (`wid.semantics.trigger`) makes it late when ``ts + A < C`` (C the
  group's closing point before the batch, A = `allowed_lateness_ms` under
  reopen, else 0).
- **add**: the batch's rows, as one-row sessions ``[ts, ts + gap]``, and the
  held sessions of the same groups are sorted by start and merged where a
  start is at or before the running end of the group; partials merge by
  session. A merged session whose members were emitted under another start
  retracts those keys.
- **emit**: what the trigger policy fires: a session when it closes, again
  when a reopened session takes a row, and on update a touched open
  session (its partial value).
- **evict**: a session goes once it no longer takes rows (``C > end + A``).

A micro-batch in which no session can close or go (every session held,
and every new one, ends at or after the highest closing point after it),
where no touched session fires (on close, no reopen), has nothing to emit: it writes its
rows as an increment (`wid.kernels.operator.partials`: its sessions among
themselves), read back and merged with the shard's sessions when one can
close. Each increment keeps its least session end; a session's end is at
least that of every part merged into it, so the least end over the base
and the increments tells whether any session can close.
"""

from __future__ import annotations

from dataclasses import dataclass

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
from wid.kernels.operator.held import SCHEMA as NONE_HELD
from wid.kernels.operator.held import windows_held
from wid.kernels.operator.layout import OperatorSpec
from wid.kernels.operator.partials import Partials
from wid.kernels.operator.shard import Closing, Store
from wid.kernels.tables import TS, concat, group_ids, ints
from wid.kernels.vector_aggregates import CapError

SHOWN, TOUCHED = "_wid_shown", "_wid_touched"
BASE, INDEX, INCREMENT = "sessions", "sessions_index", "sessions."  # the sessions' base, the index, its increments
KEY = ""  # the one entry of the partials store: every session of the shard


@dataclass(frozen=True)
class SessionShape:
    """Session windows in the operator: a fixed gap, or the column holding
    each row's gap in milliseconds."""

    gap_us: int | None = None
    gap_column: str | None = None


class SessionEngine:
    """The `wid.kernels.operator.shard.Engine` of session windows."""

    def __init__(self, spec: OperatorSpec, store: Store) -> None:
        self.spec = spec
        self.parts = Partials(store, INDEX, BASE, lambda _, t: self._sessionize(self._flag(t, touched=False)),
                              increment_prefix=INCREMENT, keys=(KEY,), least_end=lambda t: int(ints(t, END).min()))
        self.table: pa.Table | None = None  # every session, merged, once read
        self.new: pa.Table | None = None  # this micro-batch's sessions among its own rows
        self.retracted: pa.Table | None = None
        self.appended = False  # the micro-batch wrote its sessions as an increment

    def _gaps(self, rows: pa.Table) -> np.ndarray:
        shape = self.spec.shape
        if shape.gap_column is not None:
            return ints(rows, shape.gap_column) * 1000
        return np.full(rows.num_rows, shape.gap_us or 0, dtype=np.int64)

    def late(self, rows: pa.Table, before: np.ndarray) -> np.ndarray:
        closes = ints(rows, TS) + 1
        return np.asarray(self.spec.policy.late(closes, closes, before))

    # -- add -------------------------------------------------------------------
    def add(self, rows: pa.Table, before: np.ndarray) -> None:
        """Keep this micro-batch's rows as sessions among themselves (merged
        with the held ones by `_held`, when they are read)."""
        if rows.num_rows == 0:
            return
        keys = list(self.spec.group_by)
        ts = ints(rows, TS)
        new = rows.select(keys).append_column(START, pa.array(ts)).append_column(END, pa.array(ts + self._gaps(rows)))
        new = new.append_column(SHOWN, pa.array(np.zeros(rows.num_rows, bool)))
        for i, agg in enumerate(self.spec.aggs):
            for k, v in agg.rows(rows, rows.column(TS).combine_chunks()).items():
                new = new.append_column(field(i, k), v)
        self.new = self._sessionize(self._flag(new, touched=True))

    def _held(self) -> pa.Table | None:
        """Every session: the stored base and increments (untouched) and this
        micro-batch's (touched), merged; read once."""
        if self.table is None:
            stored = self.parts.read(KEY)  # base and increments, merged (this micro-batch's are not added yet)
            parts = ([] if stored is None else [self._flag(stored, touched=False)]) + (
                [] if self.new is None else [self.new])
            joined = concat(parts) if parts else None
            self.table = self._sessionize(joined) if joined is not None and joined.num_rows else joined
        return self.table

    def _quiet(self, after: Closing) -> bool:
        """Whether no session can close or go after this micro-batch, and
        none needs emitting: on close, no reopen, every part (held, and new)
        ending at or after the highest closing point, the rows held within
        the cap. A base without its least end (written before increments)
        is not known to be quiet."""
        ends = self.parts.least_ends(KEY)
        if self.spec.policy.fires_touched or self.table is not None or ends is None:
            return False
        adding = 0 if self.new is None else self.new.num_rows
        cap = self.spec.max_groups
        if adding and ((cap is not None and self.parts.held(KEY) + adding > cap) or self.parts.compacts(KEY, adding)):
            return False
        ends += [] if self.new is None else [int(ints(self.new, END).min())]
        top = after.highest
        return top is None or not ends or min(ends) >= top

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
        if self._quiet(after):
            self.appended = True
            return None, None
        held = self._held()
        if held is None or held.num_rows == 0:
            return None, self.retracted
        closes = ints(held, END) + 1
        touched = held.column(TOUCHED).to_numpy(zero_copy_only=False).astype(bool)
        emit, closed = self.spec.policy.fire(closes <= before.of(held, self.spec.scope),
                                             closes <= after.of(held, self.spec.scope), touched)
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
        if self.appended:  # nothing closes: this micro-batch's sessions (if any) are an increment
            if self.new is not None:
                self.parts.add(KEY, self.new)
        elif self.table is not None:
            keep = self.spec.policy.takes(ints(self.table, END) + 1, after.of(self.table, self.spec.scope))
            self.table = self.table.filter(pa.array(keep))
            cap = self.spec.max_groups
            if cap is not None and self.table.num_rows > cap:
                raise CapError(cap_message(self.spec, int(ints(self.table, START).min()),
                                           int(ints(self.table, END).max())))
            self.parts.replace(KEY, self.table)
        self.parts.flush()

    def held(self) -> tuple[int, int]:
        """(sessions held, rows held: sessions in the base and increments)."""
        rows = self.table.num_rows if self.table is not None else self.parts.held(KEY)
        return rows, rows

    def open_windows(self, closing_us: int | None = None) -> pa.Table:
        """The sessions held, each a window of its group (`wid.kernels.operator.held`)."""
        table = self.table if self.table is not None else self.parts.read(KEY)
        if table is None or table.num_rows == 0:
            return NONE_HELD.empty_table()
        return windows_held(ints(table, START), ints(table, END), table.select(list(self.spec.group_by)))


__all__ = ["SessionEngine", "SessionShape"]
