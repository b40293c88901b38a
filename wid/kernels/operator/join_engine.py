"""The window join in the WID operator: one shard's micro-batch of left and
right rows in, the left rows it fires out, vectorised (semantics, and every
decision: `wid.semantics.window_join_stream`, the oracle it is tested
against). Runs on executors: numpy, pyarrow and the standard library only.

Rows are sharded by matching key, so a key's rows and state live in one
shard; the largest right time of *every* key (``Rg``, for
`max_delayed_time`) comes from the per-source summaries every shard receives
(`wid.kernels.operator.packing`): it is the right source's watermark with no
lateness, kept in the shard's ``meta``. State, as Arrow tables in the
shard's store:

- ``rights``: held right rows: key columns, `TS`, the raw columns the
  metrics read, and every aggregation's one-row partial fields
  (`wid.kernels.extents.row_partials`), computed once on arrival;
- ``pending``: left rows not fired yet: the pass-through columns, keys,
  `TS` and their window ``[FIRST, LAST]`` (epoch microseconds; `FAR` for a
  (0, 0) window unbounded below);
- ``times``: per key, R (largest right time), L (largest left time), F
  (largest fired left time) and G (release horizon), NULL until known.

Per micro-batch, with every per-row step a NumPy expression over columns:

1. judge each row against the key's times before the batch (late rows are
   counted, or returned for the dead letter with a reason);
2. store accepted right rows; give accepted left rows their windows ((0, 0):
   t_prev chained in SQL order within the key, after L);
3. fire pending rows with ``LAST < C(k) = max(R(k), Rg - max_delayed_time)``:
   a binary search gives each window's range of the key's held right rows,
   merged in O(1) per window (prefix sums, sparse tables, shifted moments:
   `wid.kernels.extents.merge_over`); non-aggregate metrics gather
   the range's raw values (`wid.kernels.join_merge.raw_values`);
4. keys holding more than `garbage_size` right rows release those before
   their sweep horizon.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wid.kernels.extents import (
    FAR,
    append,
    merge_over,
    ranges,
    row_partials,
    sql_order,
)
from wid.kernels.fields import fields_of
from wid.kernels.join_merge import JoinMergeSpec, raw_values, spread
from wid.kernels.operator.partials import Partials
from wid.kernels.operator.shard import ShardOutput, Store, late_rows, load_meta, split_rejected
from wid.kernels.tables import SRC, TS, concat, group_ids, ints
from wid.kernels.vector_aggregates import VectorAgg
from wid.semantics import reasons
from wid.semantics.watermark import SourceBatch

FIRST, LAST = "_wid_first", "_wid_last"  # a pending left row's window [FIRST, LAST], epoch us
FIRED = "_wid_fired_us"  # output: the firing micro-batch's timestamp, epoch us
NO_TIME = np.iinfo(np.int64).min  # a per-key time not known (no such row yet), or nothing closed, in vectorised code
TIMES = ("right", "left", "fired", "released")


@dataclass(frozen=True)
class JoinShape:
    """A window join as the operator's shards see it (plain values).

    - `sides`: the source names of the left and right rows (`SRC`).
    - `keys`: the internal matching-key columns both sides carry.
    - `payload`: left columns carried to the output; `ties`: those that
      order tied left rows of the window (0, 0).
    - `aggs`, `aliases`: the aggregate metrics over raw right columns.
    - `raw`: the raw right columns held; `values`: (raw column, alias) of
      non-aggregate metrics; `ordered`: raw columns ordering tied right rows.
    - `bounds_us`: the window (a, b) in microseconds; None for (0, 0).
    - `delay_us`: `max_delayed_time` in microseconds, or None.
    """

    sides: tuple[str, str]
    keys: tuple[str, ...]
    payload: tuple[str, ...]
    ties: tuple[str, ...]
    aggs: tuple[VectorAgg, ...]
    aliases: tuple[str, ...]
    raw: tuple[str, ...]
    values: tuple[tuple[str, str], ...]
    ordered: tuple[str, ...]
    bounds_us: tuple[int, int] | None
    delay_us: int | None
    garbage_size: int
    late_data: str = "drop"
    shards: int = 1

    @property
    def span_us(self) -> int:
        """b - a: how far a window reaches back from its end."""
        return 0 if self.bounds_us is None else self.bounds_us[1] - self.bounds_us[0]


class KeyTimes:
    """The per-key times, as int64 arrays (`NO_TIME` where unknown) over a key
    table that grows with the keys seen."""

    def __init__(self, table: pa.Table | None, keys: tuple[str, ...]) -> None:
        self.keys = keys
        self.table = table
        self.times = {t: np.full(0 if table is None else table.num_rows, NO_TIME, dtype=np.int64) for t in TIMES}
        if table is not None:
            for t in TIMES:
                self.times[t] = np.asarray(table.column(t).fill_null(NO_TIME).to_numpy(), dtype=np.int64)

    def ids(self, rows: pa.Table) -> np.ndarray:
        """The key id of each of `rows`, adding keys not seen yet."""
        old = 0 if self.table is None else self.table.num_rows
        both = rows.select(list(self.keys)) if self.table is None else concat(
            [self.table.select(list(self.keys)), rows.select(list(self.keys))])
        ids, n, first = group_ids(both, self.keys)
        grown = {t: np.full(n, NO_TIME, dtype=np.int64) for t in TIMES}
        for t in TIMES:
            grown[t][ids[:old]] = self.times[t]
        self.table, self.times = both.select(list(self.keys)).take(pa.array(first)), grown
        return ids[old:]

    def raise_to(self, name: str, ids: np.ndarray, values: np.ndarray) -> None:
        """times[name][k] = max(itself, values of key k)."""
        np.maximum.at(self.times[name], ids, values)

    def saved(self) -> pa.Table | None:
        if self.table is None:
            return None
        out = self.table.select(list(self.keys))
        for t in TIMES:
            v = self.times[t]
            out = out.append_column(t, pa.array(v, pa.int64(), mask=v == NO_TIME))
        return out


def closing(shape: JoinShape, right: np.ndarray, right_max: int | None) -> np.ndarray:
    """C(k) = max(R(k), Rg - max_delayed_time), `NO_TIME` where nothing is closed."""
    if shape.delay_us is None or right_max is None:
        return right
    return np.asarray(np.maximum(right, right_max - shape.delay_us))


def horizon(shape: JoinShape, kt: KeyTimes, right_max: int | None) -> np.ndarray:
    """Per key, the earliest right time a window not fired can hold."""
    if shape.bounds_us is None:
        return kt.times["fired"]
    c = closing(shape, kt.times["right"], right_max)
    return np.where(c != NO_TIME, c - shape.span_us, NO_TIME)


def _late(shape: JoinShape, rows: pa.Table, is_right: np.ndarray, kid: np.ndarray, kt: KeyTimes,
          right_max: int | None) -> pa.Array:
    """Each row's late reason (NULL when on time), judged before the batch."""
    t = ints(rows, TS)
    h = horizon(shape, kt, right_max)[kid]
    right_late = is_right & (h != NO_TIME) & (t < h)
    if shape.bounds_us is None:
        last_left = kt.times["left"][kid]
        left_late, why = ~is_right & (last_left != NO_TIME) & (t < last_left), reasons.JOIN_LATE_LEFT_ORDER
    else:
        g = kt.times["released"][kid]
        left_late, why = ~is_right & (g != NO_TIME) & (t + shape.bounds_us[0] < g), reasons.JOIN_LATE_LEFT
    code = np.where(right_late, 0, np.where(left_late, 1, -1))
    texts = pa.array([reasons.JOIN_LATE_RIGHT, why], pa.string())
    return pc.cast(pa.DictionaryArray.from_arrays(pa.array(code, pa.int8(), mask=code < 0), texts), pa.string())


def _windows(shape: JoinShape, left: pa.Table, kid: np.ndarray, kt: KeyTimes) -> pa.Table:
    """`left` (accepted left rows) with their windows `FIRST`, `LAST`; for
    (0, 0) t_prev chains in SQL order of (time, ties) within each key,
    starting after L(k), and a tied row gets the empty ``[t, t - 1]``."""
    t = ints(left, TS)
    if shape.bounds_us is not None:
        a, b = shape.bounds_us
        first, last = t + a, t + b
    else:
        order = sql_order(left, [TS, *shape.ties], lead=kid)
        left, kid, t = left.take(pa.array(order)), kid[order], t[order]
        same = np.zeros(len(t), dtype=bool)
        same[1:] = kid[1:] == kid[:-1]
        prev = np.where(same, np.concatenate([[NO_TIME], t[:-1]]), kt.times["left"][kid])
        first = np.where(prev == t, t, np.where(prev == NO_TIME, FAR, prev))
        last = t - 1
    return left.append_column(FIRST, pa.array(first, pa.int64())).append_column(LAST, pa.array(last, pa.int64()))


def _metrics(shape: JoinShape, fired: pa.Table, rights: pa.Table | None) -> dict[str, pa.Array]:
    """The output columns of `fired` left rows: payload, aggregates, values."""
    first, last = ints(fired, FIRST), ints(fired, LAST)
    held = rights if rights is not None else pa.table({**{k: fired.column(k).slice(0, 0) for k in shape.keys},
                                                       TS: pa.array([], pa.int64()),
                                                       **{c: pa.nulls(0) for c in shape.raw}})
    merged, ok = merge_over(shape.aggs, held, shape.keys, TS, fired, first, last)
    cols: dict[str, pa.Array] = {c: fired.column(c).combine_chunks() for c in shape.payload}
    for i, (agg, alias) in enumerate(zip(shape.aggs, shape.aliases, strict=True)):
        values = agg.finish(fields_of(merged, i)) if ok.any() else pa.nulls(0)
        values = spread(values, ok) if ok.any() else pa.nulls(fired.num_rows)
        cols[alias] = pc.cast(values, pa.int64()).fill_null(0) if agg.name == "count" else values
    if not shape.values:
        return cols
    span = ranges(held, shape.keys, TS, fired, first, last)
    i0, i1 = (span[2], span[3]) if span is not None else (np.zeros(fired.num_rows, np.int64),) * 2
    table = span[0] if span is not None else held
    spec = JoinMergeSpec(keys=shape.keys, ts=TS, side=SRC, bounds_us=shape.bounds_us, payload=(), values=shape.values)
    per_left, per_row, row = raw_values(table, spec, i0, i1, fired.num_rows)
    cols.update(per_left)
    if row is not None:
        take = pa.array(row)
        cols = {name: col.take(take) for name, col in cols.items()}
    cols.update(per_row)
    return cols


def _sweep(shape: JoinShape, rights: pa.Table, kt: KeyTimes, right_max: int | None) -> pa.Table:
    """Release the right rows before their key's sweep horizon, for keys
    holding more than `garbage_size`; raise G(k) to that horizon."""
    rid = kt.ids(rights)
    n = len(kt.times["right"])
    over = np.bincount(rid, minlength=n) > shape.garbage_size
    if not over.any():
        return rights
    h = horizon(shape, kt, right_max)
    if shape.bounds_us is None:
        no_left = (h == NO_TIME) & (kt.times["left"] == NO_TIME)
        h = np.where(no_left, kt.times["right"], h)
    h = np.where(over, h, NO_TIME)
    kt.raise_to("released", np.arange(n), h)
    return rights.filter(pa.array(ints(rights, TS) >= h[rid]))


def run_join_batch(shape: JoinShape, store: Store, rows: pa.Table, sources: Mapping[str, SourceBatch],
                   batch_ms: int) -> ShardOutput:
    """Steps 1-4 of the module docstring for one shard and micro-batch.
    `rows` holds both sides (`SRC` names the side; `TS` in epoch
    microseconds) and their rows rejected as bad input (`REASON` set).
    Returns the fired rows (payload, metrics, `FIRED`), the rejected rows,
    the late rows for the dead letter (``dlq``) and the shard's counts."""
    rejected, rows = split_rejected(rows, shape.late_data == "dlq")
    meta = load_meta(store, shape.shards)
    tables = Partials(store, "join_index", "join_", keys=("rights", "pending", "times"))  # each rewritten whole
    rights, pending = tables.read("rights"), tables.read("pending")
    kt = KeyTimes(tables.read("times"), shape.keys)
    right_name = shape.sides[1]
    clock = meta.marks.sources.get(right_name)
    before = None if clock is None else clock.watermark_us
    is_right = pc.equal(rows.column(SRC), right_name).to_numpy(zero_copy_only=False).astype(bool)
    kid = kt.ids(rows)
    why = _late(shape, rows, is_right, kid, kt, before)
    late = why.is_valid().to_numpy(zero_copy_only=False).astype(bool)
    out = ShardOutput(late=late_rows(shape.late_data, rows.filter(pa.array(late)), why.filter(pa.array(late))),
                      rejected=rejected)
    rights, pending = _admit(shape, rows, ~late & is_right, ~late & ~is_right, kid, kt, rights, pending)
    meta.marks = meta.marks.advance(sources, batch_ms, 0)
    clock = meta.marks.sources.get(right_name)
    right_max = None if clock is None else clock.watermark_us
    pending = _fire(shape, out, pending, rights, kt, right_max, batch_ms)
    if rights is not None:
        rights = _sweep(shape, rights, kt, right_max)
    for name, table in (("rights", rights), ("pending", pending), ("times", kt.saved())):
        if table is not None:
            tables.replace(name, table)
    tables.flush()
    meta.shards = shape.shards
    store.put("meta", meta.dumps())
    n_late = int(late.sum())
    held = sum(0 if x is None else x.num_rows for x in (rights, pending))
    out.stats = {"rows": rows.num_rows, "aggregated": rows.num_rows - n_late, "punctuations": 0,
                 "rejected": 0 if rejected is None else rejected.num_rows,
                 "late_dlq": n_late if shape.late_data == "dlq" else 0,
                 "late_dropped": 0 if shape.late_data == "dlq" else n_late,
                 "windows_active": 0 if pending is None else pending.num_rows, "state_groups": held,
                 "watermark_us": right_max, "batch_ms": batch_ms,
                 "sources": {k: c.watermark_us for k, c in meta.marks.sources.items()}}
    return out


def _admit(shape: JoinShape, rows: pa.Table, right: np.ndarray, left: np.ndarray, kid: np.ndarray, kt: KeyTimes,
           rights: pa.Table | None, pending: pa.Table | None) -> tuple[pa.Table | None, pa.Table | None]:
    """Store the accepted `right` rows (with their one-row partials, in tie
    order) and `left` rows (with their windows); raise R(k) and L(k).
    Returns (rights, pending)."""
    t = ints(rows, TS)
    kt.raise_to("right", kid[right], t[right])
    if left.any():
        kept = list(dict.fromkeys([*shape.payload, *shape.keys, TS]))
        pending = append(pending, _windows(shape, rows.filter(pa.array(left)).select(kept), kid[left], kt))
        kt.raise_to("left", kid[left], t[left])
    if right.any():
        new = rows.filter(pa.array(right))
        head = new.select(list(dict.fromkeys([*shape.keys, TS, *shape.raw])))
        rights = append(rights, row_partials(shape.aggs, new, head))
        rights = rights.take(pa.array(sql_order(rights, [TS, *shape.ordered])))  # tie order of value lists
    return rights, pending


def _fire(shape: JoinShape, out: ShardOutput, pending: pa.Table | None, rights: pa.Table | None, kt: KeyTimes,
          right_max: int | None, batch_ms: int) -> pa.Table | None:
    """Fire the pending rows whose window ends before their key's closing
    point (into ``out.windows``); F(k) rises for (0, 0). Returns the rest."""
    if pending is None or pending.num_rows == 0:
        return pending
    pid = kt.ids(pending)
    c = closing(shape, kt.times["right"], right_max)[pid]
    fire = (c != NO_TIME) & (ints(pending, LAST) < c)
    if not fire.any():
        return pending
    fired = pending.filter(pa.array(fire))
    cols = _metrics(shape, fired, rights)
    n = len(next(iter(cols.values())))
    cols[FIRED] = pa.array(np.full(n, batch_ms * 1000, dtype=np.int64))
    out.windows = pa.table(cols)
    if shape.bounds_us is None:
        kt.raise_to("fired", pid[fire], ints(fired, TS))
    return pending.filter(pa.array(~fire))


__all__ = ["FIRED", "FIRST", "LAST", "JoinShape", "KeyTimes", "closing", "horizon", "run_join_batch"]
