"""The streaming window-join oracle: micro-batches of left and right rows in,
the joined rows each micro-batch fires out (docs/semantics.md#window-join, DolphinDB's
`createWindowJoinEngine` trigger rules). It keeps every held row in Python
lists and recomputes each fired window from them, favouring clarity; the WID
operator's join engine (`wid.kernels.operator.join_engine`) is tested against
it. A fired left row's output is exactly the batch oracle's
(`wid.semantics.window_join.joined_rows`) over the right rows held when it
fired.

Times are epoch microseconds (``TS``); `window` = (a, b) is in
milliseconds. Each row of a `MicroBatch` is ``(side, row)`` with side
``left`` or ``right``. Per matching key k:

- ``R(k)``: the largest right time of k so far; ``Rg``: the largest right
  time of any key.
- ``C(k) = max(R(k), Rg - max_delayed_time)`` (just ``R(k)`` without
  `max_delayed_time`): the key's *closing point*.
- A left row at t holds the window ``[first, last]``: ``[t + a, t + b]``,
  or for the special window (0, 0) ``[t_prev, t - 1]`` (t_prev: the key's
  previous left time; none for its first left row; a tied left row gets
  the empty ``[t, t - 1]``, as in batch).

Decisions (where DolphinDB describes a row-at-a-time engine, or is silent):

1. **A micro-batch is one arrival.** Spark gives no order inside a
   micro-batch, so all its rows are judged against the state before it,
   then all are stored, then windows fire. Outputs do not depend on the
   order of rows inside a batch.
2. **Firing**: a window fires once ``last < C(k)`` after the batch, i.e. a
   right row of the key *past* its end arrived (DolphinDB: that row is not
   part of the window), or, with `max_delayed_time` m, any right row past
   ``last + m``. For (0, 0) that is a right row at or after t. A left row
   whose window is already closed when it arrives fires in its own batch.
   Each left row is output once, when it fires, with the micro-batch's
   timestamp as `system_time` under `use_system_time` (DolphinDB outputs
   the time of the computation; rows are then stamped with the
   timestamp of the micro-batch they arrive in).
3. **End of stream fires nothing** (DolphinDB): windows wait for a right
   row past their end; a stream is flushed by such a row per key, or by
   `max_delayed_time`. (Batch fires every window: `wid.semantics.window_join`.)
4. **Late rows** (a late row is never joined; `late_data`: ``drop`` counts
   it, ``dlq`` returns it with a reason; ``reopen`` is refused by the spec,
   since a fired row is never corrected):

   - a right row is late when no window that has not fired can hold it:
     time before ``C(k) + a - b`` (every window ending before C(k) has
     fired), for (0, 0) before the key's last fired left time;
   - a left row (a, b) is late when its window starts before the key's
     release horizon (rows it needs were released: `garbage_size`); a left
     row (0, 0) is late when it is before the key's last left time (its
     t_prev would be wrong).

   Right rows that are on time but behind a fired window's end still join
   the windows not fired yet ("generous"); fired windows are not re-emitted.
5. **Memory release (`garbage_size`)**: after a batch, a key holding more
   than `garbage_size` right rows releases those before its *sweep
   horizon*: ``C(k) + a - b`` (no window that has not fired, and no left
   row on time, can reach them), for (0, 0) the key's last fired left time,
   or ``R(k)`` for a key that has no left row yet (a stream has no
   beginning: a key's first left row then sees the right rows since its
   last release, not every earlier one). So after a batch a window (a, b)
   key holds at most the larger of `garbage_size` rows and the rows within
   ``b - a`` of its closing point (plus rows at it); a (0, 0) key holds the
   rows since its last fired left row, which the next left row's window
   covers (they grow while its left side is quiet, as in DolphinDB).

Pending left rows are held until they fire: a key whose right side stops
holds them (as DolphinDB) unless `max_delayed_time` fires them.

Accounting per batch: ``rows_in = rows_rejected + rows_late_dropped +
rows_late_dlq + rows_aggregated`` (rows of both sides; a held row counts
as aggregated when it arrives).

Property (tested): when right rows arrive in time order (each at or after
the closing point of its key before its batch) and left rows are on time,
the fired rows, after a flush, equal the batch oracle over the same rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from wid.semantics import reasons
from wid.semantics.ranks import sql_sort_key
from wid.semantics.stream_types import BatchResult, Emission, Group, LateRow, MicroBatch
from wid.semantics.timeunits import ms_to_us
from wid.semantics.watermark import later
from wid.semantics.window_join import TS, joined_rows, right_order, split_side
from wid.spec.join import WindowJoin

LEFT, RIGHT = "left", "right"
Row = dict[str, Any]


@dataclass
class KeyState:
    """One matching key: held right rows, pending left rows with their
    window ``[first, last]`` (first None: unbounded below), and the key's
    times (None: not yet): ``right`` R(k), ``left`` the largest left time,
    ``fired`` the largest fired left time, ``released`` the release horizon."""

    rights: list[Row] = field(default_factory=list)
    pending: list[tuple[Row, int | None, int]] = field(default_factory=list)
    right: int | None = None
    left: int | None = None
    fired: int | None = None
    released: int | None = None


def run_join_stream(batches: Iterable[MicroBatch], join: WindowJoin,
                    left_columns: Sequence[str] | None = None) -> list[BatchResult]:
    """Run `join` over `batches`; one `BatchResult` per micro-batch (its
    `emitted` rows are the batch oracle's output rows, `late` rows name
    their side as source). `left_columns` orders the pass-through columns
    (default: the first left row's keys). Raises ValueError for
    `sort_by_time` (a stream has no global order) and for a side other
    than ``left``/``right``."""
    if join.sort_by_time:
        raise ValueError("sort_by_time: a stream's output cannot be in global time order")
    stream = JoinStream(join, left_columns)
    return [stream.step(b) for b in batches]


class JoinStream:
    """The state of one streaming window join (see the module docstring)."""

    def __init__(self, join: WindowJoin, left_columns: Sequence[str] | None = None) -> None:
        self.j = join
        self.columns = None if left_columns is None else list(left_columns)
        self.keys: dict[Group, KeyState] = defaultdict(KeyState)
        self.right_max: int | None = None
        self.a_us, self.b_us = ms_to_us(join.window[0]), ms_to_us(join.window[1])
        self.delay_us = None if join.max_delayed_time is None else ms_to_us(join.max_delayed_time)

    def key_of(self, row: Row, side: str) -> Group:
        return tuple(row[c] for c in (self.j.left_keys if side == LEFT else self.j.right_keys))

    def closing(self, k: KeyState) -> int | None:
        """C(k): windows ending before it have fired."""
        delayed = None if self.delay_us is None or self.right_max is None else self.right_max - self.delay_us
        return later(k.right, delayed)

    def horizon(self, k: KeyState) -> int | None:
        """The earliest right time a window that has not fired can hold."""
        if self.j.special:
            return k.fired
        c = self.closing(k)
        return None if c is None else c + self.a_us - self.b_us

    def sweep_horizon(self, k: KeyState) -> int | None:
        """Right rows before it are released when the key holds too many."""
        if self.j.special and k.fired is None:
            return k.right if k.left is None else None
        return self.horizon(k)

    # -- one micro-batch -------------------------------------------------------
    def step(self, batch: MicroBatch) -> BatchResult:
        out = BatchResult(rows_in=len(batch.rows))
        now_us = ms_to_us(batch.batch_ms)
        by_side: dict[str, list[Any]] = {LEFT: [], RIGHT: []}
        for side, row in batch.rows:
            if side not in by_side:
                raise ValueError(f"a join row's side is 'left' or 'right', not {side!r}")
            by_side[side].append(row)
        if self.columns is None and by_side[LEFT]:
            self.columns = list(by_side[LEFT][0])
        left, dead = split_side(by_side[LEFT], self.j, LEFT, now_us)
        right, dead_right = split_side(by_side[RIGHT], self.j, RIGHT, now_us)
        out.rejected = dead + dead_right
        left = [r for r in left if not self._late(LEFT, r, self._left_late(r), out)]
        right = [r for r in right if not self._late(RIGHT, r, self._right_late(r), out)]
        self._add_left(left)
        for r in right:
            k = self.keys[self.key_of(r, RIGHT)]
            k.rights.append(r)
            k.right = later(k.right, r[TS])
            self.right_max = later(self.right_max, r[TS])
        out.emitted = self._fire(now_us)
        self._sweep()
        out.watermark_us = self.right_max
        return out

    def _left_late(self, row: Row) -> str | None:
        k = self.keys[self.key_of(row, LEFT)]
        t = row[TS]
        if self.j.special:
            return reasons.JOIN_LATE_LEFT_ORDER if k.left is not None and t < k.left else None
        return reasons.JOIN_LATE_LEFT if k.released is not None and t + self.a_us < k.released else None

    def _right_late(self, row: Row) -> str | None:
        h = self.horizon(self.keys[self.key_of(row, RIGHT)])
        return reasons.JOIN_LATE_RIGHT if h is not None and row[TS] < h else None

    def _late(self, side: str, row: Row, reason: str | None, out: BatchResult) -> bool:
        if reason is None:
            return False
        if self.j.late_data == "dlq":
            out.late.append(LateRow(side, {c: v for c, v in row.items() if c != TS}, reason))
        else:
            out.rows_late_dropped += 1
        return True

    def _add_left(self, rows: list[Row]) -> None:
        """Pending left rows with their windows; (0, 0) chains t_prev in
        time order, ties ordered by the left columns, as in batch."""
        by_key: dict[Group, list[Row]] = defaultdict(list)
        for r in rows:
            by_key[self.key_of(r, LEFT)].append(r)
        for key, group in by_key.items():
            k = self.keys[key]
            if self.j.special:
                group.sort(key=lambda r: (r[TS], *(sql_sort_key(r[c]) for c in self.columns or ())))
            for r in group:
                t = r[TS]
                if not self.j.special:
                    k.pending.append((r, t + self.a_us, t + self.b_us))
                else:
                    k.pending.append((r, t if k.left == t else k.left, t - 1))
                k.left = later(k.left, t)

    def _fire(self, now_us: int) -> list[Emission]:
        out: list[Emission] = []
        for k in self.keys.values():
            c = self.closing(k)
            if c is None or not k.pending:
                continue
            fired = [p for p in k.pending if p[2] < c]
            k.pending = [p for p in k.pending if p[2] >= c]
            order = sorted(k.rights, key=right_order(self.j))
            for row, first, last in fired:
                extent = [r for r in order if (first is None or first <= r[TS]) and r[TS] <= last]
                out += [Emission(e) for e in joined_rows(row, extent, self.j, self.columns or [], now_us)]
                if self.j.special:
                    k.fired = later(k.fired, row[TS])
        return out

    def _sweep(self) -> None:
        for k in self.keys.values():
            if len(k.rights) <= self.j.garbage_size:
                continue
            h = self.sweep_horizon(k)
            if h is not None:
                k.rights = [r for r in k.rights if r[TS] >= h]
                k.released = later(k.released, h)

    def held(self) -> int:
        """Rows held over every key: right rows and pending left rows."""
        return sum(len(k.rights) + len(k.pending) for k in self.keys.values())


__all__ = ["JoinStream", "KeyState", "LEFT", "RIGHT", "run_join_stream"]
