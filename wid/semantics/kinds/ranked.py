"""Count and rolling windows in the oracles: the two kinds that rank rows
(Li et al. 2005, section 3.2's tuple-based windows and slide-by-tuple;
docs/semantics.md). In batch the input is one arrival, every rank final;
on a stream these are the streaming oracle's rules for them.

Both run per *closing key* K (`Window.closing_columns`: `partition_by` for
count windows, `group_by` for rolling) with the closing point ``C(K)`` of
`wid.semantics.stream_oracle` (global watermark or keyed punctuation).

**Ranks.** ``rank_by = "order"``: a row's rank is its position among K's
accepted rows in `order_by` order (which on a stream must be the event time,
see `wid.spec.kinds.ranked.Ranked.stream_problem`), then `tie_breaker`,
else every other input column.
A row with ``ts < C`` has a final rank: every row before it in that order
has ``ts' <= ts < C`` and was either accepted already or is late. So the
rows behind C form a final prefix of the ranks. ``rank_by = "arrival"``:
rows of an earlier micro-batch rank first, then the order above within a
micro-batch; a rank is final on arrival and no row is ever late.

**Count windows.** Window w holds ranks ``[max(0, (w+1)*hop - size),
(w+1)*hop)`` (`wid.semantics.ranks`), split by `group_by`; its bounds are
the least and greatest event time of the whole extent. With n_b the number
of final ranks after batch b:

- a row is late when ``ts < C`` before its batch (order ranks only);
  ``reopen`` is refused at load time (`wid.spec.window`): a late row would
  shift every later rank;
- window w closes in the batch where ``(w+1)*hop <= n_b`` first holds; a
  batch touches the windows holding ranks that became final in it; they
  fire as the trigger policy says (`wid.semantics.trigger`): a window once,
  final, when it closes, and on update, a touched window not yet complete
  with the partial value over its final ranks, for every group in them
  (its bounds changed for all of them). Rows behind no closing point have
  no rank yet and update nothing.

**Rolling windows.** Row t's extent is K's accepted rows u with ``t.ts - d
< u.ts <= t.ts``. With ``every_rows = n`` only rows of 1-based rank a
multiple of n open an extent (every row otherwise).

- t's window closes at ``t.ts + 1``, in the first batch after which ``t.ts
  < C``: every row that can be in its extent has arrived, including rows
  that arrived earlier with a later ts (they are not in it) and rows tied
  with t (they are);
- a row is late when ``ts + A < C`` before its batch (A the
  `allowed_lateness_ms` under ``reopen``, else 0): its own window has
  closed. As for sessions, `late_mode` has no say: a rolling window belongs
  to its row, and a row is never counted without its own output;
- a batch touches the windows its rows land in (a row's own included); the
  trigger policy fires them: t once, final, when it closes; under
  ``reopen`` again, corrected, when a row lands in its emitted extent (a
  keyed sink overwrites it by its natural key, every input column); on
  update, a touched open window with its partial value.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from wid.semantics.kinds.base import KindSemantics
from wid.semantics.ranks import count_complete, count_extent, rank_order, sql_sort_key
from wid.semantics.rolling import rolling_extent
from wid.semantics.rows import TS, Group, key_of, order_columns, window_row
from wid.semantics.stream_types import Accepted, Admitted, Emission
from wid.semantics.timeunits import ms_to_us
from wid.semantics.trigger import NEVER, TriggerPolicy
from wid.spec.kinds import CountWindows, RollingWindows, shape_as
from wid.spec.window import Window


def by_key(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> dict[Group, list[dict[str, Any]]]:
    """`rows` by the values of `columns`, in order."""
    groups: dict[Group, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[key_of(r, columns)].append(r)
    return groups


def in_rank_order(w: Window, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One arrival's `rows` in rank order (`order_columns`)."""
    return [rows[i] for i in rank_order(rows, order_columns(w, list(rows[0])))] if rows else []


def count_rows(w: Window, key: Group, window_id: int, extent: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Count window `window_id` of partition `key` over the rows of its
    `extent`: one output row per group, its bounds the least and greatest
    event time of the whole extent."""
    start, end = min(r[TS] for r in extent), max(r[TS] for r in extent)
    return [window_row(w, {w.window_start_column: start, w.window_end_column: end, w.window_id_column: window_id,
                           **dict(zip(w.partition_by, key, strict=True)), **dict(zip(w.group_by, gkeys, strict=True))},
                       rows)
            for gkeys, rows in by_key(extent, w.group_by).items()]


class CountSemantics(KindSemantics):
    shape = CountWindows

    def evaluate(self, good: list[dict[str, Any]], w: Window) -> list[dict[str, Any]]:
        size, hop = w.size_rows or 0, shape_as(w, CountWindows).hop_rows_or_size
        out = []
        for key, members in by_key(good, w.partition_by).items():
            ranked_rows = in_rank_order(w, members)
            window_id = 0
            while count_complete(window_id, len(ranked_rows), hop):
                out += count_rows(w, key, window_id, [ranked_rows[r] for r in count_extent(window_id, size, hop)])
                window_id += 1
        return out

    def rules(self, w: Window, policy: TriggerPolicy) -> CountRules:
        return CountRules(w, policy)


class RollingSemantics(KindSemantics):
    shape = RollingWindows

    def evaluate(self, good: list[dict[str, Any]], w: Window) -> list[dict[str, Any]]:
        d, n = ms_to_us(w.duration_ms or 0), w.every_rows or 1
        out = []
        for members in by_key(good, w.group_by).values():
            by_time = sorted(members, key=lambda r: r[TS])
            times = [r[TS] for r in by_time]
            for t in in_rank_order(w, members)[n - 1::n]:
                extent = [by_time[j] for j in rolling_extent(times, t[TS], d)]
                out.append(window_row(w, {k: v for k, v in t.items() if k != TS}, extent))
        return out

    def rules(self, w: Window, policy: TriggerPolicy) -> RollingRules:
        return RollingRules(w, policy)


def ranked(w: Window, members: Sequence[Accepted]) -> list[Accepted]:
    """`members` in rank order (see the module docstring)."""
    if not members:
        return []
    columns = order_columns(w, list(members[0].row))

    def key(a: Accepted) -> tuple[Any, ...]:
        order = tuple(sql_sort_key(a.row[c]) for c in columns)
        return (a.batch, *order) if w.rank_by == "arrival" else order
    return sorted(members, key=key)


def _final(w: Window, members: Sequence[Accepted], closed: int, upto: int) -> int:
    """How many of the members that arrived by batch `upto` have a final rank."""
    if w.rank_by == "arrival":
        return sum(a.batch <= upto for a in members)
    return sum(a.batch <= upto and a.row[TS] < closed for a in members)


def rank_closes_at(w: Window, ts: int) -> int:
    """The closing time the late rule judges a ranked row by: its rank
    position closes once the closing point passes its event time (``ts +
    1``, ranks by order); a rank given on arrival is never behind a
    closing point (`NEVER`, ranks by arrival)."""
    return ts + 1 if w.rank_by == "order" else NEVER


class CountRules:
    """`wid.semantics.stream_types.StreamRules` of count windows: a window
    closes once its last rank is final; a micro-batch touches the windows
    holding a rank that became final in it."""

    def __init__(self, w: Window, policy: TriggerPolicy) -> None:
        self.w, self.policy = w, policy
        self.size, self.hop = w.size_rows or 0, shape_as(w, CountWindows).hop_rows_or_size

    def admit(self, ts: int, closed: int) -> Admitted | None:
        closes = rank_closes_at(self.w, ts)
        return None if self.policy.late(closes, closes, closed) else Admitted()

    def emit(self, key: Group, members: Sequence[Accepted], index: int, prev: int, now: int) -> list[Emission]:
        n_prev, n_now = _final(self.w, members, prev, index - 1), _final(self.w, members, now, index)
        if n_now == n_prev:
            return []
        rows = ranked(self.w, members)
        out = []
        for window_id in range(n_prev // self.hop, (n_now - 1 + self.size) // self.hop):  # windows holding a new rank
            last = (window_id + 1) * self.hop  # ranks it needs
            fires, final = self.policy.fire(last <= n_prev, last <= n_now, True)
            if fires:
                extent = [rows[r].row for r in count_extent(window_id, self.size, self.hop) if r < n_now]
                out += [Emission(row, final=final) for row in count_rows(self.w, key, window_id, extent)]
        return out


class RollingRules:
    """`wid.semantics.stream_types.StreamRules` of rolling windows: row t's
    window closes at ``t.ts + 1`` (once the closing point passes t); a
    micro-batch touches the windows its rows land in (a row's own included)."""

    def __init__(self, w: Window, policy: TriggerPolicy) -> None:
        self.w, self.policy, self.d = w, policy, ms_to_us(w.duration_ms or 0)

    def admit(self, ts: int, closed: int) -> Admitted | None:
        return None if self.policy.late(ts + 1, ts + 1, closed) else Admitted()

    def emit(self, key: Group, members: Sequence[Accepted], index: int, prev: int, now: int) -> list[Emission]:
        n = self.w.every_rows or 1
        opening = ranked(self.w, members)[n - 1::n]
        by_time = sorted(members, key=lambda a: a.row[TS])
        times = [a.row[TS] for a in by_time]
        out = []
        for t in opening:
            ts = t.row[TS]
            extent = [by_time[j] for j in rolling_extent(times, ts, self.d)]
            fires, final = self.policy.fire(ts + 1 <= prev, ts + 1 <= now, any(a.batch == index for a in extent))
            if fires:
                head = {k: v for k, v in t.row.items() if k != TS}
                out.append(Emission(window_row(self.w, head, [a.row for a in extent]), final=final))
        return out


__all__ = ["CountRules", "CountSemantics", "RollingRules", "RollingSemantics", "count_rows", "rank_closes_at",
           "ranked"]
