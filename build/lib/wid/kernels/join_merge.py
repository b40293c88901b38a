"""Vectorised window-join merge: a partition's left rows and right partials
in, joined rows out, computed with NumPy and pyarrow (`mapInArrow`).

Python runs once per partition, never per row or per key. Like
`wid.kernels.pane_merge` (whose range search and field merges it reuses), this
module imports only numpy, pyarrow and the standard library, so PySpark ships
it by value and executors need no wid install.

Input rows (all of a key's rows in one partition): left rows (`side` 0,
with the pass-through columns) and right rows (`side` 1, with every
aggregation's partial fields of the row alone and the raw values that
med/percentile and non-aggregate metrics read). Algorithm:

1. sort by (key, time, side, tie columns) and number the keys;
2. each left row's window is a time range ``[first, last]`` of its key:
   ``[t + a, t + b]``, or for the special window ``[t_prev, t - 1]``
   (``t_prev``: the previous left time of the key, minus infinity for the
   first, and an empty range for a tied row);
3. binary search gives the right rows ``[i0, i1)`` of each window; fields
   merge over the ranges in O(1) each (prefix sums, sparse tables, shifted
   moments); med/percentile gather the window's raw values and sort them;
4. non-aggregate metrics emit one row per raw right value of the window
   (window (a, b)), or a list of them (the special window).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wid.kernels.pane_merge import FieldOp, key_ids, merge_fields, ranges

NO_PREVIOUS = np.iinfo(np.int64).min // 4  # t_prev of a key's first left row: before any time


@dataclass(frozen=True)
class Percentile:
    """med/percentile of raw column `column` at `fraction` (0..1), into `output`."""

    column: str
    fraction: float
    output: str


@dataclass(frozen=True)
class JoinMergeSpec:
    """What to merge.

    - `keys`, `ts` (epoch microseconds), `side` (0 left, 1 right): columns.
    - `bounds_us`: the window (a, b) in microseconds; None for the special
      window (0, 0).
    - `payload`: left columns passed through; `ties`: the left columns that
      order tied left rows of the special window, `ordered` the raw columns
      that order tied right rows there (so its value lists are in order).
    - `fields`: partial fields merged over each window (``FieldOp``).
    - `percentiles` and `values` (raw column, output column) read the raw
      right values.
    """

    keys: tuple[str, ...]
    ts: str
    side: str
    bounds_us: tuple[int, int] | None
    payload: tuple[str, ...]
    ties: tuple[str, ...] = ()
    fields: tuple[FieldOp, ...] = ()
    ordered: tuple[str, ...] = ()
    percentiles: tuple[Percentile, ...] = ()
    values: tuple[tuple[str, str], ...] = ()
    batch_rows: int = 1 << 16


def _order(tbl: pa.Table, spec: JoinMergeSpec) -> np.ndarray:
    names = [*spec.keys, spec.ts, spec.side, *(spec.ties + spec.ordered if spec.bounds_us is None else ())]
    keys = [(name, "ascending", "at_start") for name in names]  # NULL first, as Spark and the oracle
    return np.asarray(pc.sort_indices(tbl, sort_keys=keys).to_numpy())


def _bounds(spec: JoinMergeSpec, kid: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each left row's window ``[first, last]`` in microseconds."""
    if spec.bounds_us is not None:
        a, b = spec.bounds_us
        return t + a, t + b
    same_key = np.zeros(len(t), dtype=bool)
    same_key[1:] = kid[1:] == kid[:-1]
    prev = np.concatenate([[NO_PREVIOUS], t[:-1]])
    first = np.where(same_key, prev, NO_PREVIOUS)
    first = np.where(same_key & (prev == t), t, first)  # a tied left row: [t, t) is empty
    return first, t - 1


def spread(values: pa.Array, where: np.ndarray) -> pa.Array:
    """`values` (one per True of `where`) at those positions, NULL elsewhere."""
    if where.all():
        return values
    idx = np.cumsum(where) - 1
    return values.take(pa.array(idx, mask=~where))


def _merged(right: pa.Table, spec: JoinMergeSpec, rkid: np.ndarray, i0: np.ndarray,
            i1: np.ndarray) -> dict[str, pa.Array]:
    """Merged fields per left row; NULL for an empty window."""
    if not spec.fields:
        return {}
    if right.num_rows == 0:
        return _nulls(right, spec.fields, len(i0))
    full = i1 > i0
    local = np.cumsum(np.concatenate([[True], rkid[1:] != rkid[:-1]])) - 1
    some = full.any()  # merge at least one range so every field has its type
    lo, hi = (i0[full], i1[full]) if some else (np.zeros(1, dtype=np.int64), np.ones(1, dtype=np.int64))
    return {name: spread(arr, full) for name, arr in merge_fields(right, spec.fields, local, lo, hi).items()}


def _nulls(right: pa.Table, fields: tuple[FieldOp, ...], n: int) -> dict[str, pa.Array]:
    """All-NULL merged fields, typed as `merge_fields` types them."""
    out = {}
    for f in fields:
        for i, name in enumerate(f.outputs):
            source = right.schema.field(f.inputs[0]).type
            if f.op == "moments":
                source = pa.int64() if i == 0 else pa.float64()
            elif f.op == "sum" and pa.types.is_integer(source):
                source = pa.int64()
            out[name] = pa.nulls(n, type=source)
    return out


def _gather(start: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(segment, index) of every element of the ranges ``[start, start + count)``."""
    seg = np.repeat(np.arange(len(start)), count)
    within = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    return seg, start[seg] + within


def _percentile(values: pa.Array, seg: np.ndarray, idx: np.ndarray, n_rows: int, fraction: float) -> pa.Array:
    """Linear-interpolation percentile of each segment's non-null values
    (position ``(n - 1) * fraction`` in sorted order, as Spark's `percentile`)."""
    raw = pc.cast(values, pa.float64())
    nulls = raw.is_null().to_numpy(zero_copy_only=False)[idx]
    v = raw.fill_null(0.0).to_numpy(zero_copy_only=False)[idx][~nulls]
    s = seg[~nulls]
    order = np.lexsort((v, s))
    v, s = v[order], s[order]
    n = np.bincount(s, minlength=n_rows)
    start = np.cumsum(n) - n
    pos = (n - 1) * fraction
    lo, hi = np.floor(pos).astype(np.int64), np.ceil(pos).astype(np.int64)
    has = n > 0
    low = np.where(has, v[np.where(has, start + lo, 0)] if len(v) else 0.0, 0.0)
    high = np.where(has, v[np.where(has, start + hi, 0)] if len(v) else 0.0, 0.0)
    return pa.array(low + (pos - lo) * (high - low), type=pa.float64(), mask=~has)


def raw_values(right: pa.Table, spec: JoinMergeSpec, i0: np.ndarray, i1: np.ndarray,
         n_left: int) -> tuple[dict[str, pa.Array], dict[str, pa.Array], np.ndarray | None]:
    """(per-left-row columns: percentiles and, for the special window, value
    lists; per-output-row value columns; the left row of each output row, or
    None when there is one output row per left row)."""
    if not spec.percentiles and not spec.values:
        return {}, {}, None
    count = i1 - i0
    seg, idx = _gather(i0, count)
    per_left = {p.output: _percentile(right.column(p.column).combine_chunks(), seg, idx, n_left, p.fraction)
                for p in spec.percentiles}
    if not spec.values:
        return per_left, {}, None
    if spec.bounds_us is None:
        offsets = pa.array(np.concatenate([[0], np.cumsum(count)]).astype(np.int32))
        for column, output in spec.values:
            per_left[output] = pa.ListArray.from_arrays(offsets, right.column(column).combine_chunks().take(pa.array(idx)))
        return per_left, {}, None
    reps = np.maximum(count, 1)  # an empty window still gives its left row one output row
    row, within = _gather(np.zeros(n_left, dtype=np.int64), reps)
    pick = pa.array(i0[row] + within, mask=count[row] == 0)
    return per_left, {out: right.column(column).combine_chunks().take(pick) for column, out in spec.values}, row


def join(batches: Iterator[pa.RecordBatch], spec: JoinMergeSpec) -> Iterator[pa.RecordBatch]:
    """The `mapInArrow` function: a partition's left rows and right partials
    in, batches of joined rows out (the payload, merged fields, percentiles
    and values; see `JoinMergeSpec`)."""
    received = list(batches)
    tbl = pa.Table.from_batches(received) if received else None
    if tbl is None or tbl.num_rows == 0:
        return
    order = _order(tbl, spec)
    is_right = tbl.column(spec.side).to_numpy()[order] == 1
    if is_right.all():
        return
    kid = key_ids(tbl.select(list(spec.keys)).take(order), spec.keys)
    ts = tbl.column(spec.ts).to_numpy().astype(np.int64)[order]
    right_columns = list(dict.fromkeys([*(c for f in spec.fields for c in f.inputs), *(p.column for p in spec.percentiles),
                                        *(c for c, _ in spec.values)]))
    left = tbl.select(list(spec.payload)).take(order[~is_right])  # each side takes only the columns it uses
    right = tbl.select(right_columns).take(order[is_right])
    lkid, rkid = kid[~is_right], kid[is_right]
    first, last = _bounds(spec, lkid, ts[~is_right])
    i0, i1 = ranges(rkid, ts[is_right], lkid, first, last)
    per_left: dict[str, pa.Array] = {c: left.column(c).combine_chunks() for c in spec.payload}
    per_left.update(_merged(right, spec, rkid, i0, i1))
    more, per_row, row = raw_values(right, spec, i0, i1, left.num_rows)
    per_left.update(more)
    if row is not None:
        take = pa.array(row)
        per_left = {name: col.take(take) for name, col in per_left.items()}
    out = pa.table({**per_left, **per_row})
    yield from out.to_batches(max_chunksize=spec.batch_rows)
