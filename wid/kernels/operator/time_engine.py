"""Tumbling and hopping windows in the WID operator: panes in, windows out.

State is one entry per pane (``gcd(duration, hop)`` long; a tumbling window
is one pane): the partial fields of every group of the shard that has rows
in it, as an Arrow table. Rows are never kept.

- **late** (Li et al., section 5): window w closes at its end; the window's
  trigger policy (`wid.semantics.trigger`) judges a row by the ends of its
  first and last windows (``generous``: late when its last window no longer
  takes rows; ``consistent``: when its first one does not).
- **add**: rows become partials per (group, pane), merged into the pane's
  entry. A generous row added to a pane whose early windows have emitted
  only reaches the windows emitted later (emitted windows are not
  recomputed unless reopened), which is exactly the generous mode.
- **emit**: the windows the trigger policy fires, from whether each was
  closed before and after the micro-batch and whether a row touched it
  (closing: final; reopened: final, corrected; open on update: partial),
  each merged from its panes (``length/hop`` pane partials per window). The
  windows are made a run of groups at a time, as the output is read
  (`EMIT_WINDOWS` a chunk): a micro-batch that closes a day of 1-minute
  hopping windows for 100,000 keys emits 144M windows, and made at once
  they took more than 11 GB in one shard's worker, where a chunk takes
  about 100 MB.
- **evict**: a pane goes once its last window no longer takes rows.

Pane tables reach the state store once, at the end of the micro-batch
(`evict`): each put or delete is a round trip to Spark's state server, and
a micro-batch spanning many panes (a day of 1-minute panes in one
available-now batch) would otherwise put every pane it fills and then
delete most of them again; a pane that opens and closes within the
micro-batch never reaches the store. A pane that already holds a table
takes a micro-batch's rows as an increment (`wid.kernels.operator.increments`),
read back merged with its table only when a window over it emits (or a
reopened or updated window it holds is touched): so a micro-batch that
touches a few of a pane's groups writes those, not the pane.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from wid.kernels.fields import END, FINAL, START, cap_message, field, fields_of, finish_all
from wid.kernels.operator.held import SCHEMA as NONE_HELD
from wid.kernels.operator.held import windows_held
from wid.kernels.operator.layout import OperatorSpec
from wid.kernels.operator.partials import Partials
from wid.kernels.operator.shard import Closing, Emitted, Store
from wid.kernels.pane_merge import WINDOW_ID as MERGED_WINDOW_ID
from wid.kernels.pane_merge import FieldOp, MergeSpec, merge_sorted, new_windows, sort_panes
from wid.kernels.tables import (
    PANE,
    ROWS,
    TS,
    concat,
    group_ids,
    ints,
)
from wid.kernels.vector_aggregates import CapError
from wid.semantics.calendar_windows import CalendarHopping
from wid.semantics.trigger import NOTHING_CLOSED
from wid.semantics.windowing import Hopping

WMIN = "_wid_wmin"
INCREMENT = "pane"  # a pane's increments are named pane<id>.<seq> (`increments.increment_name`)
EMIT_WINDOWS = 1 << 20  # windows one chunk of a micro-batch's emission makes (about 100 MB with five aggregates)


def key_runs(kid: np.ndarray, weight: np.ndarray, limit: int) -> Iterator[tuple[int, int]]:
    """Row ranges ``[lo, hi)`` covering `kid` (group ids, sorted) that cut
    only where the group changes: each as many whole groups as `limit`
    holds of their rows' `weight` (non-negative), or one group when it
    alone weighs more."""
    starts = np.flatnonzero(np.diff(kid)) + 1
    before = np.concatenate([[0], np.cumsum(weight)])  # weight of rows [0, i)
    at_starts = before[starts]
    lo, n = 0, len(kid)
    while lo < n:
        hi = n
        if before[n] - before[lo] > limit:
            i = int(np.searchsorted(at_starts, before[lo] + limit, "right")) - 1  # the last cut within `limit`
            if i < 0 or starts[i] <= lo:
                i = int(np.searchsorted(starts, lo, "right"))  # the group alone weighs more: its end
            hi = int(starts[i]) if i < len(starts) else n
        yield lo, hi
        lo = hi


def _joint_ids(a: pa.Table, b: pa.Table, keys: list[str]) -> tuple[np.ndarray, int]:
    """Group ids of `a`'s rows then `b`'s, over both (`group_ids`), and how
    many groups; without keys every row is in group 0 (a table of no
    columns has no rows to count)."""
    if not keys:
        return np.zeros(a.num_rows + b.num_rows, dtype=np.int64), 1
    gid, groups, _ = group_ids(concat([a.select(keys), b.select(keys)]), keys)
    return gid, groups


def pane_partials(spec: OperatorSpec, rows: pa.Table, q: np.ndarray) -> tuple[pa.Table, np.ndarray, int, np.ndarray]:
    """`rows` merged per (group, pane): one row per distinct (`spec.group_by`,
    pane `q`) with the group columns, `PANE` and each aggregation's partial
    fields (``field(i, name)``: `agg.rows`, then `agg.merge`, the fields
    every pane table holds); and each input row's partial (ids in ``[0,
    n)``), n, and the first input row of each partial. Rows that are already
    partials (a `ROWS` column: combined before the shuffle) are merged by
    their fields. The shard's `TimeEngine.add` and the executor's combining
    step before the shuffle (`wid.kernels.operator.combine`) both make their
    partials here."""
    keys = list(spec.group_by)
    head = rows.select(keys).append_column(PANE, pa.array(q, pa.int64()))
    ids, n, first = group_ids(head, [*keys, PANE])
    combined = ROWS in rows.column_names
    ts = rows.column(TS).combine_chunks()
    cols = {c: v.take(pa.array(first)) for c, v in zip(head.column_names, head.columns, strict=True)}
    for i, agg in enumerate(spec.aggs):
        parts = fields_of(rows, i) if combined else agg.rows(rows, ts)
        cols.update({field(i, k): v for k, v in agg.merge(parts, ids, n).items()})
    return pa.table(cols), ids, n, first


@dataclass(frozen=True)
class TimeShape:
    """Tumbling and hopping windows in the operator: their geometry, built on
    the driver (`wid.semantics.windowing.Hopping`, or on a calendar
    `wid.semantics.calendar_windows.CalendarHopping`)."""

    geometry: Hopping | CalendarHopping


class TimeEngine:
    """The `wid.kernels.operator.shard.Engine` of tumbling and hopping windows."""

    def __init__(self, spec: OperatorSpec, store: Store) -> None:
        self.spec, self.g, self.policy = spec, spec.shape.geometry, spec.policy
        # one entry per pane: its base in the pane's slot, its increments pane<id>.<seq>, the index "panes"
        self.parts = Partials(store, "panes", "", self._merge, increment_prefix=INCREMENT, numbered=True)
        self.touched: pa.Table | None = None

    # -- geometry, vectorised (`wid.semantics.windowing.Hopping`, or on a calendar
    # `wid.semantics.calendar_windows.CalendarHopping`: panes are calendar units) ------------------
    def _panes(self, rows: pa.Table) -> np.ndarray:
        return np.asarray(self.g.pane(ints(rows, TS)))

    def _windows(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(first, last) window of each pane."""
        return self.g.first_window(q), self.g.last_window(q)

    # -- late ------------------------------------------------------------------
    def late(self, rows: pa.Table, before: np.ndarray) -> np.ndarray:
        if len(before) and before.min() == before.max():  # one closing point (no keyed punctuation)
            return np.asarray(ints(rows, TS) < self._late_below(int(before[0])))
        first, last = self._windows(self._panes(rows))
        return np.asarray(self.policy.late(self.g.end(first), self.g.end(last), before))

    def _late_below(self, closing_us: int) -> int:
        """The event time below which a row is late when its group's closing
        point is `closing_us`: `late`'s rule solved for the pane (the first
        window still taking rows is w0; a row is late when the window the
        policy judges it by, its last or its first, is before w0: before
        w0's start, or w0 - 1's end), which spares a division per row."""
        if closing_us == NOTHING_CLOSED:
            return NOTHING_CLOSED
        w0 = self.g.first_window_ending_after(self.policy.takes_after(closing_us))
        return int(self.policy.judged(first=self.g.end(w0 - 1), last=self.g.start(w0)))

    def _first_counted(self, q: np.ndarray, before: np.ndarray) -> np.ndarray:
        """The earliest window each accepted row counts in: the first that
        still takes rows (a consistent row's first window takes them all)."""
        first, _ = self._windows(q)
        closed = before != NOTHING_CLOSED
        open_from = self.g.first_window_ending_after(self.policy.takes_after(np.where(closed, before, 0)))
        return np.where(closed, np.maximum(first, open_from), first)

    # -- add ---------------------------------------------------------------------
    def add(self, rows: pa.Table, before: np.ndarray) -> None:
        """Add accepted `rows` (data rows, or partials combined before the
        shuffle: `ROWS` set, `wid.kernels.operator.combine`) to their panes;
        `before`: each row's closing point before the micro-batch."""
        if rows.num_rows == 0:
            return
        keys = list(self.spec.group_by)
        q = self._panes(rows)
        partial, ids, n, _ = pane_partials(self.spec, rows, q)
        if self.policy.fires_touched:  # only then may a window a row touched fire
            wmin = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
            np.minimum.at(wmin, ids, self._first_counted(q, before))
            self.touched = partial.select([*keys, PANE]).append_column(WMIN, pa.array(wmin))
        panes = ints(partial, PANE)
        if np.any(panes[1:] < panes[:-1]):  # in pane order already (one pane, or rows in time order): no copy
            partial = partial.sort_by(PANE)
            panes = ints(partial, PANE)
        cuts = np.flatnonzero(np.diff(panes)) + 1
        for lo, hi in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [len(panes)]]), strict=True):
            self._merge_pane(int(panes[lo]), partial.slice(lo, hi - lo).drop_columns([PANE]))

    def _merge_pane(self, pane: int, new: pa.Table) -> None:
        """Add `new` (partials of this micro-batch's rows in `pane`) to the
        pane's entry of the partials store (an increment, unless compaction
        is due); the group cap is checked on the merged table when the rows
        the pane holds could pass it."""
        self.parts.add(pane, new)
        cap = self.spec.max_groups
        if cap is not None and self.parts.held(pane) > cap:
            table = self.parts.read(pane)
            if table is not None and table.num_rows > cap:
                g = self.g
                first, last = g.first_window(pane), g.last_window(pane)
                raise CapError(cap_message(self.spec, g.start(first), g.end(last if g.panes.hop > 1 else first)))

    def _merge(self, pane: object, table: pa.Table) -> pa.Table:
        """Rows of equal group merged into one."""
        keys = list(self.spec.group_by)
        ids, n, first = group_ids(table, keys)
        head = table.select(keys).take(pa.array(first))
        cols = {k: head.column(k) for k in keys}  # a table of no columns keeps no row count: build it whole
        for i, agg in enumerate(self.spec.aggs):
            cols.update({field(i, k): v for k, v in agg.merge(fields_of(table, i), ids, n).items()})
        return pa.table(cols)

    # -- emit --------------------------------------------------------------------
    def _pane_range(self, before: Closing, after: Closing) -> tuple[int, int] | None:
        """Panes the emitted windows can cover, or None when nothing emits.
        Closing points only rise above the global one, so windows closing
        now end after the global watermark before the batch."""
        g, panes = self.g, self.g.panes
        lo, hi = [], []
        top, held = after.highest, self.parts.held_keys()
        if top is not None and held:
            last = g.first_window_ending_after(top) - 1
            low = before.global_us
            first = g.first_window(min(held)) if low is None else g.first_window_ending_after(low)
            if first <= last:
                lo.append(panes.first_pane(first))
                hi.append(panes.last_pane(last))
        if self.touched is not None:
            q = ints(self.touched, PANE)
            lo.append(int(panes.first_pane(ints(self.touched, WMIN)).min()))
            hi.append(int(panes.last_pane(g.last_window(q)).max()))
        return (min(lo), max(hi)) if lo else None

    def emit(self, before: Closing, after: Closing) -> tuple[Emitted, pa.Table | None]:
        span = self._pane_range(before, after)
        if span is None:
            return None, None
        panes = sorted(p for p in self.parts.held_keys() if span[0] <= int(p) <= span[1])
        tables = [t.append_column(PANE, pa.array(np.full(t.num_rows, p, dtype=np.int64)))
                  for p in panes if (t := self.parts.read(p)) is not None and t.num_rows]
        if not tables:
            return None, None
        return self._chunks(concat(tables), before, after), None

    def _chunks(self, table: pa.Table, before: Closing, after: Closing) -> Iterator[pa.Table]:
        """The windows to emit over `table`'s panes, made a run of groups at
        a time as they are read: at most `EMIT_WINDOWS` windows each (one
        group's alone may be more; `pane_merge.new_windows` counts them),
        whatever the micro-batch closes. `table` is taken now, so that eviction cannot change it."""
        table, kid = sort_panes(table, self.spec.group_by, PANE)
        touched = self._touched_groups(table, kid)
        counts: dict[int, int] = {}
        for lo, hi in key_runs(kid, new_windows(self._merge_spec(), kid, ints(table, PANE)), EMIT_WINDOWS):
            mine = None
            if touched is not None:  # the touched rows of this chunk's groups
                a = int(np.searchsorted(touched[1], kid[lo], "left"))
                mine = touched[0].slice(a, int(np.searchsorted(touched[1], kid[hi - 1], "right")) - a)
            merged = self._merged(table.slice(lo, hi - lo), kid[lo:hi] - kid[lo])
            out = self._windows_of(merged, before, after, counts, mine)
            if out is not None:
                yield out

    def _touched_groups(self, table: pa.Table, kid: np.ndarray) -> tuple[pa.Table, np.ndarray] | None:
        """This batch's touched (group, pane) rows (`add`), ordered by the
        ids `kid` of their groups in `table` (panes sorted by group), and
        those ids; rows of groups without panes in `table` are left out
        (nothing of theirs emits). None when touched windows need no
        emission."""
        if self.touched is None:
            return None
        keys, n = list(self.spec.group_by), table.num_rows
        gid, groups = _joint_ids(table, self.touched, keys)
        to_kid = np.full(groups, -1, dtype=np.int64)
        to_kid[gid[:n]] = kid
        tkid = to_kid[gid[n:]]
        order = np.argsort(tkid, kind="stable")
        order = order[tkid[order] >= 0]
        return self.touched.take(pa.array(order)), tkid[order]

    def _windows_of(self, merged: pa.Table, before: Closing, after: Closing, counts: dict[int, int],
                    touched_rows: pa.Table | None) -> pa.Table | None:
        """Keep the `merged` windows to emit: closing now, or touched by this
        batch (`touched_rows`: its groups' rows of `self.touched`, None when
        touched windows need no emission) and reopened or (on_update) open;
        `counts` (groups per window id so far) checks the cap."""
        w = ints(merged, PANE)
        end = self.g.end(w)
        bef, aft = before.of(merged, self.spec.scope), after.of(merged, self.spec.scope)
        touched = np.zeros(len(w), bool) if touched_rows is None else self._touched(merged, w, touched_rows)
        keep, final = self.policy.fire(end <= bef, end <= aft, touched)
        if self.g.has_gaps:  # a calendar window whose first hop holds no instant is never output
            keep &= self.g.exists(w)
        if not keep.any():
            return None
        merged, w, end = merged.filter(pa.array(keep)), w[keep], end[keep]
        self._check_cap(w, counts)
        start = self.g.start(w)
        cols: dict[str, pa.Array] = {START: pa.array(start), END: pa.array(end), FINAL: pa.array(final[keep])}
        cols.update({k: merged.column(k) for k in self.spec.group_by})
        cols.update(finish_all(self.spec, merged, start, end))
        return pa.table(cols)

    def _merged(self, table: pa.Table, kid: np.ndarray) -> pa.Table:
        """Every non-empty window over `table`'s panes (sorted by group and
        pane; `kid` the 0-based group ids): group columns, the window id in
        `PANE`, merged fields. By the vectorised sliding merge
        (`wid.kernels.pane_merge`, O(1) per window) when every aggregation has
        a pane form, else by merging each window's panes (holistic states)."""
        ops = [agg.pane_ops() for agg in self.spec.aggs]
        if all(o is not None for o in ops):
            return self._slide(table, kid, ops)  # type: ignore[arg-type]
        keys = list(self.spec.group_by)
        q = ints(table, PANE)
        first, last = self._windows(q)
        count = last - first + 1
        row = np.repeat(np.arange(len(q)), count)
        w = first[row] + (np.arange(len(row)) - np.repeat(np.cumsum(count) - count, count))
        pairs = pa.table({**{k: table.column(k).take(pa.array(row)) for k in keys}, PANE: pa.array(w, pa.int64())})
        ids, n, head = group_ids(pairs, [*keys, PANE])
        cols = {k: v.take(pa.array(head)) for k, v in zip(pairs.column_names, pairs.columns, strict=True)}
        for i, agg in enumerate(self.spec.aggs):
            parts = {k: v.take(pa.array(row)) for k, v in fields_of(table, i).items()}
            cols.update({field(i, k): v for k, v in agg.merge(parts, ids, n).items()})
        return pa.table(cols)

    def _slide(self, table: pa.Table, kid: np.ndarray, ops: list[dict[str, str]]) -> pa.Table:
        fields = []
        for i, agg_ops in enumerate(ops):
            for name, op in agg_ops.items():
                if op == "moments":
                    ins = [c for c in table.column_names if c.startswith(f"_{i}_")]
                    outs = ("n", "qx", "qy", "cxy") if len(ins) == 6 else ("n", "qx")
                    fields.append(FieldOp("moments", tuple(ins), tuple(field(i, o) for o in outs)))
                else:
                    fields.append(FieldOp(op, (field(i, name),), (field(i, name),)))
        out = pa.Table.from_batches([merge_sorted(table, kid, self._merge_spec(tuple(fields)), None)])
        return out.rename_columns([PANE if c == MERGED_WINDOW_ID else c for c in out.column_names])

    def _merge_spec(self, fields: tuple[FieldOp, ...] = ()) -> MergeSpec:
        """`wid.kernels.pane_merge`'s sliding windows over this geometry's panes."""
        panes = self.g.panes
        return MergeSpec(keys=self.spec.group_by, pane=PANE, shape="sliding", fields=fields, length=panes.length,
                         hop=panes.hop)

    def _touched(self, merged: pa.Table, w: np.ndarray, touched: pa.Table) -> np.ndarray:
        """For each merged window (group, w): did a row of this batch count
        in it? `touched`: (group, pane, `WMIN`) rows of this batch."""
        keys = list(self.spec.group_by)
        gid, _ = _joint_ids(merged, touched, keys)
        q = ints(touched, PANE)
        lo, hi = ints(touched, WMIN), self.g.last_window(q)
        count = np.maximum(hi - lo + 1, 0)
        trow = np.repeat(np.arange(len(q)), count)
        tw = lo[trow] + (np.arange(len(trow)) - np.repeat(np.cumsum(count) - count, count))
        base = int(min(w.min(initial=0), tw.min(initial=0)))
        span = int(max(w.max(initial=0), tw.max(initial=0))) - base + 1
        mine = gid[: merged.num_rows] * span + (w - base)
        theirs = gid[merged.num_rows:][trow] * span + (tw - base)
        return np.isin(mine, theirs)

    def _check_cap(self, window_id: np.ndarray, counts: dict[int, int]) -> None:
        """Add `wid`'s windows to `counts` (groups per window id); raise
        CapError naming the first window past `max_groups_per_window`
        (first in the order the chunks are made: the groups' sort order,
        then the window ids)."""
        cap = self.spec.max_groups
        if cap is None or len(window_id) == 0:
            return
        values, n = np.unique(window_id, return_counts=True)
        for w, c in zip(values.tolist(), n.tolist(), strict=True):
            counts[w] = counts.get(w, 0) + c
            if counts[w] > cap:
                raise CapError(cap_message(self.spec, self.g.start(w), self.g.end(w)))

    # -- evict ---------------------------------------------------------------------
    def evict(self, after: Closing) -> None:
        top = after.highest
        if top is not None:
            done = [int(p) for p in self.parts.held_keys() if not self.policy.takes(self.g.end(self.g.last_window(p)), top)]
            for p in done:
                self._evict_pane(p, after)
        self.parts.flush()

    def _evict_pane(self, pane: int, after: Closing) -> None:
        """Drop pane `pane`, whose last window takes no more rows, but for
        the groups a keyed punctuation has not closed yet."""
        closes = self.g.end(self.g.last_window(pane))
        keep = None
        if after.keyed is not None and after.keyed.num_rows and (
                after.global_us is None or self.policy.takes(closes, after.global_us)):
            table = self.parts.read(pane)
            if table is not None:
                keep = table.filter(pa.array(self.policy.takes(closes, after.of(table, self.spec.scope))))
        if keep is not None and keep.num_rows:
            self.parts.replace(pane, keep)
        else:
            self.parts.drop(pane)

    def held(self) -> tuple[int, int]:
        """(panes held, rows held: a group's partials in a pane's base or increments)."""
        panes = self.parts.held_keys()
        return len(panes), sum(self.parts.held(p) for p in panes)

    def open_windows(self, closing_us: int | None) -> pa.Table:
        """The windows over the panes held that still take rows at
        `closing_us` (a pane stays while its last window does), with their
        groups (`wid.kernels.operator.held`)."""
        starts, ends, groups = [], [], []
        closing = NOTHING_CLOSED if closing_us is None else closing_us
        for pane in self.parts.held_keys():
            table = self.parts.read(pane)
            if table is None or table.num_rows == 0:
                continue
            first, last = (np.ravel(x) for x in self._windows(np.array([pane], dtype=np.int64)))
            w = np.arange(first[0], last[0] + 1, dtype=np.int64)
            start, end = np.ravel(self.g.start(w)), np.ravel(self.g.end(w))
            for s, e in zip(start.tolist(), end.tolist(), strict=True):
                if self.policy.takes(e, closing):
                    starts.append(np.full(table.num_rows, s, np.int64))
                    ends.append(np.full(table.num_rows, e, np.int64))
                    groups.append(table.select(list(self.spec.group_by)))
        if not starts:
            return NONE_HELD.empty_table()
        return windows_held(np.concatenate(starts), np.concatenate(ends), concat(groups))


__all__ = ["TimeEngine", "TimeShape", "key_runs", "pane_partials"]
